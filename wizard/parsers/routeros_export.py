"""RouterOS `/export` text (compact or `terse`) into (menu, command, target, args) items."""

from __future__ import annotations

import re

from wizard.errors import ParseError
from wizard.parsers.common import lines
from wizard.parsers.routeros_values import TOOL, ExportItem, RouterOsResult, unquote

__all__ = ["parse_export"]


_VERBS = {
    "add",
    "set",
    "remove",
    "enable",
    "disable",
    "print",
    "export",
    "move",
    "unset",
    "edit",
    "reset",
    "comment",
}
_EXPORT_HEADER = re.compile(
    r"^#\s*(?:(?P<date>\S+ \S+) by RouterOS (?P<version>\S+)|"
    r"(?P<key>software id|model|serial number)\s*=\s*(?P<val>.*))\s*$"
)


def _split_args(text: str) -> list[str]:
    return re.findall(
        r'\[[^\]]*\]|[^\s"=]+="(?:[^"\\]|\\.)*"|[^\s=]+=\S*|"(?:[^"\\]|\\.)*"|\S+', text
    )


def _joined(text: str) -> list[tuple[int, str]]:
    """(first line number, logical line): continuation lines (`\\` at the end) joined."""
    joined: list[tuple[int, str]] = []
    buf = ""
    start = 0
    for n, raw in enumerate(lines(text), start=1):
        if not buf:
            start = n
            buf = raw.rstrip()
        else:
            buf += raw.strip()
        if buf.endswith("\\"):
            buf = buf[:-1]
            continue
        joined.append((start, buf))
        buf = ""
    if buf:
        joined.append((start, buf))
    return joined


def _header_line(s: str, header: dict[str, str]) -> None:
    """A `# ... by RouterOS <version>` or `# model = ...` comment into `header`."""
    m = _EXPORT_HEADER.match(s)
    if m and m.group("version"):
        header["date"], header["version"] = m.group("date"), m.group("version")
    elif m and m.group("key"):
        header[m.group("key").replace(" ", "_")] = m.group("val").strip()


def _menu_line(s: str) -> tuple[str, list[str]]:
    """`/interface bridge port add ...`: the menu, and the command words after it."""
    words = _split_args(s)
    path: list[str] = []
    rest: list[str] = []
    for i, w in enumerate(words):
        if w in _VERBS or "=" in w or w.startswith(("[", '"')):
            rest = words[i:]
            break
        path.append(w.lstrip("/"))
    return "/" + " ".join(p for p in path if p), rest


def _item(menu: str, words: list[str], n: int) -> ExportItem:
    command = words[0] if words and words[0] in _VERBS else None
    args_words = words[1:] if command else words
    target: str | None = None
    args: dict[str, str] = {}
    for w in args_words:
        if "=" in w and not w.startswith(("[", '"')):
            k, _, v = w.partition("=")
            args[k] = unquote(v)
        elif target is None:
            target = w
    return ExportItem(menu, command, target, args, n)


def parse_export(text: str) -> RouterOsResult:
    """`/export` (compact or `terse`) into (menu, command, target, args) items.

    Continuation lines (`\\` at the end of a line) are joined; comments, including the ones
    RouterOS inserts inside a group, are skipped without leaving the current menu."""
    header: dict[str, str] = {}
    items: list[ExportItem] = []
    menu: str | None = None
    for n, line in _joined(text):
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            _header_line(s, header)
            continue
        if s.startswith("/"):
            menu, words = _menu_line(s)
            if not words:
                continue
        elif menu is None:
            raise ParseError(f"line {n}: command before any /menu line", tool=TOOL, raw=text)
        else:
            words = _split_args(s)
        items.append(_item(menu, words, n))
    if not items and "version" not in header:
        raise ParseError("no /menu command or `by RouterOS` header", tool=TOOL, raw=text)
    return RouterOsResult("export", rows=(), export=tuple(items), header=header)
