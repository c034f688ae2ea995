"""RouterOS reply values and results: librouteros' typing of words, RouterOS string escapes,
and the result records every RouterOS parser returns (rows, traps, export items, log entries)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "TOOL",
    "ExportItem",
    "LogEntry",
    "RosValue",
    "RouterOsResult",
    "RouterOsTrap",
    "norm_menu",
    "typed_row",
    "typed_value",
    "unquote",
]

TOOL = "routeros"

RosValue = bool | int | str | None

_BOOLS = {"true": True, "yes": True, "false": False, "no": False}
_INT = re.compile(r"-?\d+$")
_SPACED_INT = re.compile(r"\d{1,3}(?: \d{3})+$")


def typed_value(value: object) -> RosValue:
    """librouteros' typing of one API word value: bools, ints, everything else a string."""
    if value is None or isinstance(value, bool | int):
        return value
    text = str(value)
    if text in _BOOLS:
        return _BOOLS[text]
    if _INT.match(text) and len(text) < 30:
        return int(text)
    if _SPACED_INT.match(text):
        return int(text.replace(" ", ""))
    return text


def typed_row(row: Mapping[str, object]) -> dict[str, RosValue]:
    """An API reply row (strings from the wire, or librouteros' already typed values)."""
    return {str(k): typed_value(v) for k, v in row.items()}


@dataclass(frozen=True, slots=True)
class RouterOsTrap:
    message: str
    category: int | None = None
    tag: str | None = None


@dataclass(frozen=True, slots=True)
class ExportItem:
    """One command of an export: `menu` like `/interface bridge port`, `command` like `add`."""

    menu: str
    command: str | None
    target: str | None = None  # `[ find default-name=qsfp28-1-1 ]` or a name (`set switch1 ...`)
    args: dict[str, str] = field(default_factory=dict)
    line: int = 0


@dataclass(frozen=True, slots=True)
class LogEntry:
    time: str
    topics: tuple[str, ...]
    message: str


@dataclass(frozen=True, slots=True)
class RouterOsResult:
    """`format`: api, api-sentences, cli-table, cli-detail, cli-monitor, log, export."""

    format: str
    path: str | None = None  # the menu the paste shows (`/interface/bridge/port`), if any
    rows: tuple[dict[str, RosValue], ...] = ()
    flags: tuple[tuple[str, ...], ...] = ()  # per row, CLI flag letters (H, D, X, R...)
    traps: tuple[RouterOsTrap, ...] = ()
    done: bool = False
    fatal: str | None = None
    log: tuple[LogEntry, ...] = ()
    export: tuple[ExportItem, ...] = ()
    header: dict[str, str] = field(default_factory=dict)  # export: version, model, ...

    def items(self, menu: str) -> tuple[ExportItem, ...]:
        """Export items of one menu, `/interface/bridge/port` or `/interface bridge port`."""
        want = norm_menu(menu)
        return tuple(i for i in self.export if norm_menu(i.menu) == want)


def norm_menu(menu: str) -> str:
    return "/" + "/".join(p for p in re.split(r"[/ ]+", menu) if p)


_ESCAPED = {"n": "\n", "r": "\r", "t": "\t", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "_": " "}


def unquote(value: str) -> str:
    """A RouterOS string's value: `\\n`-style escapes, and `\\XX` hex escapes read as bytes
    (RouterOS text is 7-bit: `\\1B` is ESC, `\\C3\\A9` is the UTF-8 of `é`)."""
    if not (len(value) >= 2 and value[0] == value[-1] == '"'):
        return value
    body = value[1:-1]
    if "\\" not in body:
        return body
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            hexa = body[i + 1 : i + 3]
            if re.fullmatch(r"[0-9A-F]{2}", hexa):  # RouterOS: capital hex digits only
                out.append(int(hexa, 16))
                i += 3
                continue
            out += _ESCAPED.get(body[i + 1], body[i + 1]).encode()
            i += 2
            continue
        out += ch.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "replace")
