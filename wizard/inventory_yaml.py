"""Where an inventory problem is: the YAML line of a field, and a validation error in words.

`Loader` is PyYAML's SafeLoader refusing duplicate keys; `line_of` finds the line of a dotted
field in the composed YAML; `explain` words a
validation problem for a technician.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import yaml

from wizard.inventory_models import (
    Addressing,
    Defaults,
    InventoryFile,
    LabLink,
    NcclPolicy,
    NodeSpec,
    PasswordSource,
    SwitchSpec,
    TlsSpec,
)
from wizard.yamlload import SAFE_LOADER

__all__ = ["DuplicateKey", "Loader", "dotted", "explain", "line_of", "root_causes"]


def root_causes(errors: list[Any]) -> list[Any]:
    """Drop errors that only follow from a deeper one (an invalid item making its list short)."""
    locs = [tuple(e["loc"]) for e in errors]
    return [
        e
        for e, loc in zip(errors, locs, strict=True)
        if not any(len(o) > len(loc) and o[: len(loc)] == loc for o in locs)
    ] or errors


def explain(err: Mapping[str, Any]) -> str:
    kind = str(err.get("type", ""))
    loc = tuple(err.get("loc", ()))
    if kind == "extra_forbidden":
        known = _known_keys(loc[:-1])
        tail = f"; expected one of: {', '.join(known)}" if known else ""
        return f"unknown key {loc[-1]!r}{tail}"
    if kind == "missing":
        if loc and loc[0] == "nodes" and loc[-1] == "host":
            return (
                "this field is required: give the node's address or its ~/.ssh/config alias "
                "(fabwiz never looks a bare node name up in DNS)"
            )
        return "this field is required"
    got = err.get("input")
    msg = str(err.get("msg", "invalid"))
    msg = msg.removeprefix("Value error, ")
    shown = repr(got) if not isinstance(got, dict | list) or not got else type(got).__name__
    return f"{msg} (got {shown})"


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys the record at `loc` accepts: the path is followed through the nested records
    (a list's index stays on the list's record)."""
    model: type[Any] = InventoryFile
    for part in loc:
        model = _NESTED.get((model, part), model)
    return sorted(f.name for f in dataclasses.fields(model))


_NESTED: dict[tuple[type[Any], Any], type[Any]] = {
    (InventoryFile, "nodes"): NodeSpec,
    (InventoryFile, "switches"): SwitchSpec,
    (InventoryFile, "defaults"): Defaults,
    (InventoryFile, "lab"): LabLink,
    (InventoryFile, "addressing"): Addressing,
    (InventoryFile, "nccl"): NcclPolicy,
    (SwitchSpec, "tls"): TlsSpec,
    (SwitchSpec, "password"): PasswordSource,
}


def dotted(loc: tuple[Any, ...]) -> str:
    """A problem's location as the message names it: `nodes.0.port`."""
    return ".".join(str(p) for p in loc)


def line_of(root: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML node at `loc` (or its deepest existing parent)."""
    node = root
    line = None if node is None else node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                    nxt = v
                    line = k.start_mark.line + 1
                    break
            if nxt is None:
                return line
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


class DuplicateKey(Exception):
    def __init__(self, key: str, line: int) -> None:
        super().__init__(key)
        self.key = key
        self.line = line


class Loader(SAFE_LOADER):  # type: ignore[misc,valid-type]
    """SafeLoader that refuses duplicate keys (PyYAML silently keeps the last one)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for k, _v in node.value:
            key = self.construct_object(k, deep=deep)
            if key in seen:
                raise DuplicateKey(str(key), k.start_mark.line + 1)
            seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping
