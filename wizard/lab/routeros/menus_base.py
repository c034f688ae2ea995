"""The base of the emulated RouterOS menus: items, validation and the error replies.

A `Menu` answers print/add/set/remove for one path; subclasses in `menus_ether.py`,
`menus_bridge.py`, `menus_qos.py`, `menus_ip.py` and `menus_system.py` describe what can be set
and what RouterOS derives on print. Errors are
`MenuError`s carrying the exact RouterOS texts (routeros-api.md 1.7).
"""

from __future__ import annotations

import re
from typing import ClassVar

from wizard.lab.routeros.switch import Item, SwitchState, parse_duration

__all__ = ["Kind", "Menu", "MenuError"]

_BOOL_IN = {"yes": "true", "true": "true", "no": "false", "false": "false"}
Kind = str | tuple[str, ...]


class MenuError(Exception):
    """A RouterOS error reply: `!trap =message=... [=category=N]`."""

    def __init__(self, message: str, category: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.category = category


def _check(prop: str, kind: Kind, value: str) -> str:
    if kind == "bool":
        if value not in _BOOL_IN:
            raise MenuError(f"input does not match any value of {prop}", 1)
        return _BOOL_IN[value]
    if kind == "int":
        if not re.fullmatch(r"\d+", value):
            raise MenuError(f"input does not match any value of {prop}", 1)
        return value
    if kind == "duration":
        try:
            parse_duration(value)
        except ValueError:
            raise MenuError(f"input does not match any value of {prop}", 1) from None
        return value
    if isinstance(kind, tuple) and value not in kind:
        raise MenuError(f"input does not match any value of {prop}", 1)
    return value


class Menu:
    """One menu path. Subclasses set the table, the settable schema and the derived rows."""

    table = ""
    schema: ClassVar[dict[str, Kind]] = {}
    named = True
    can_add = False
    can_remove = False

    def items(self, sw: SwitchState) -> list[Item]:
        return sw.tables[self.table]

    def row(self, sw: SwitchState, item: Item) -> Item:
        return {k: v for k, v in item.items() if not k.startswith("_")}

    def rows(self, sw: SwitchState) -> list[Item]:
        return [self.row(sw, i) for i in self.items(sw)]

    def resolve(self, sw: SwitchState, refs: str) -> list[Item]:
        out: list[Item] = []
        for ref in (r.strip() for r in refs.split(",")):
            if not ref:
                continue
            found = [i for i in self.items(sw) if i.get(".id") == ref]
            if not found and self.named:
                found = [i for i in self.items(sw) if i.get("name") == ref]
            if not found:
                raise MenuError("no such item (4)")
            out.extend(found)
        return out

    def validate(self, sw: SwitchState, attrs: dict[str, str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for prop, value in attrs.items():
            if prop not in self.schema:
                raise MenuError(f"unknown parameter {prop}")
            out[prop] = self.check_ref(sw, prop, _check(prop, self.schema[prop], value))
        return out

    def check_ref(self, sw: SwitchState, prop: str, value: str) -> str:
        return value

    def add(self, sw: SwitchState, attrs: dict[str, str]) -> str:
        if not self.can_add:
            raise MenuError("no such command or directory (add)", 0)
        return self.do_add(sw, self.validate(sw, attrs))

    def do_add(self, sw: SwitchState, attrs: dict[str, str]) -> str:
        item_id = sw.add_item(self.table, attrs)
        sw.recompute()
        return item_id

    def set(self, sw: SwitchState, refs: str, attrs: dict[str, str]) -> None:
        targets = self.resolve(sw, refs)
        clean = self.validate(sw, attrs)
        self.do_set(sw, targets, clean)

    def do_set(self, sw: SwitchState, targets: list[Item], attrs: dict[str, str]) -> None:
        for item in targets:
            item.update(attrs)
        sw.recompute()

    def remove(self, sw: SwitchState, refs: str) -> None:
        if not self.can_remove:
            raise MenuError("no such command or directory (remove)", 0)
        targets = self.resolve(sw, refs)
        for item in targets:
            self.items(sw).remove(item)
        sw.recompute()

    def unset(self, sw: SwitchState, refs: str, props: list[str]) -> None:
        """`unset`: the named properties go back to their defaults (dropped from the item)."""
        targets = self.resolve(sw, refs)
        for prop in props:
            if prop not in self.schema:
                raise MenuError(f"unknown parameter {prop}")
        for item in targets:
            for prop in props:
                item.pop(prop, None)
        sw.recompute()
