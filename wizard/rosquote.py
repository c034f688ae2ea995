"""RouterOS script quoting: values from a switch made safe inside RouterOS CLI text.

Fix previews and the dead-man scheduler script are RouterOS CLI text, and much of what goes into
them comes from the switch itself (bridge names, comments, port names). RouterOS splits commands
at an unquoted `;` or newline, ends a word at an unquoted space and substitutes `$name` even
inside double quotes. So every value is written as a double-quoted string with `\\"`, `\\\\`,
`\\$`, `\\?`, `\\n`, `\\r`, `\\t` and other control characters as `\\XX` (RouterOS' hex escape),
unless it is a plain word that needs no quoting. A value RouterOS cannot hold (a NUL byte, bytes
that were not text) raises `Unrepresentable`: the change is then refused, never sent mangled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from wizard.errors import FixRefused

__all__ = ["Unrepresentable", "cli_command", "quote", "unquote"]

# A word RouterOS reads the same quoted or not: letters, digits and `_ . - :` inside, starting
# with a letter or digit. Everything else is quoted.
_BARE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
_NAMED = {'"': '\\"', "\\": "\\\\", "$": "\\$", "?": "\\?", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNNAMED = {v[1]: k for k, v in _NAMED.items()}
_KEY = re.compile(r"[a-z][a-z0-9-]*|\.id")


class Unrepresentable(FixRefused):
    """A value that RouterOS script text cannot carry exactly."""


def quote(value: str, *, what: str = "value") -> str:
    """`value` as one RouterOS script word: bare when that is safe, else double-quoted."""
    if _BARE.fullmatch(value):
        return value
    out: list[str] = []
    for ch in value:
        code = ord(ch)
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif code == 0 or 0xD800 <= code <= 0xDFFF or code == 0xFFFD:
            raise Unrepresentable(
                f"{what} {value!r} holds a character RouterOS script text cannot carry "
                f"({'NUL' if code == 0 else 'undecodable byte'})",
                hint="rename or clear it on the switch by hand, then re-run the step",
            )
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\{code:02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def unquote(word: str) -> str:
    """The value of one RouterOS word written by `quote` or by an export (the inverse, for
    tests and checks): `\\XX` (capital hex) is a byte, so `\\C3\\A9` reads back as `é`."""
    if not (word.startswith('"') and word.endswith('"') and len(word) >= 2):
        return word
    body, out, i = word[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _UNNAMED:
                out += _UNNAMED[nxt].encode()
                i += 2
                continue
            hexa = body[i + 1 : i + 3]
            if re.fullmatch(r"[0-9A-F]{2}", hexa):
                out.append(int(hexa, 16))
                i += 3
                continue
        out += ch.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "replace")


def _key(key: str) -> str:
    if not _KEY.fullmatch(key):
        raise Unrepresentable(f"attribute name {key!r} is not a RouterOS property name")
    return key


def cli_command(
    path: str,
    verb: str,
    args: Iterable[tuple[str, str]] = (),
    select: tuple[str, str] | None = None,
) -> str:
    """One RouterOS CLI command, every value quoted: `/interface/bridge/port set [find
    interface="a b"] comment="x;y"`. `unset` names its properties (`unset [find ...] path-cost`)."""
    if not re.fullmatch(r"/[a-z0-9/-]*", path) or not re.fullmatch(r"[a-z-]+", verb):
        raise Unrepresentable(f"{path} {verb} is not a RouterOS menu and command")
    parts = [path, verb]
    if select is not None:
        parts.append(f"[find {_key(select[0])}={quote(select[1], what=select[0])}]")
    if verb == "unset":
        parts.extend(_key(v) for _k, v in args)
    else:
        parts.extend(f"{_key(k)}={quote(v, what=k)}" for k, v in args)
    return " ".join(parts)
