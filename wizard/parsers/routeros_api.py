"""RouterOS API replies: librouteros rows (as objects or JSON), raw API sentences, and a Python
client's printed rows."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping

from wizard.errors import ParseError
from wizard.parsers.common import lines
from wizard.parsers.routeros_values import (
    TOOL,
    RosValue,
    RouterOsResult,
    RouterOsTrap,
    typed_row,
)

__all__ = ["parse_api_json", "parse_api_python_repr", "parse_api_rows", "parse_api_sentences"]


def parse_api_rows(rows: Iterable[Mapping[str, object]]) -> tuple[dict[str, RosValue], ...]:
    return tuple(typed_row(r) for r in rows)


def parse_api_json(text: str) -> RouterOsResult:
    """librouteros rows dumped as JSON: `{"data": [...]}` or a bare list of objects."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise ParseError("not valid JSON", tool=TOOL, raw=text) from None
    rows = data.get("data") if isinstance(data, dict) else data
    if isinstance(rows, dict):
        rows = [rows]
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ParseError('expected a list of row objects (or {"data": [...]})', tool=TOOL, raw=text)
    return RouterOsResult("api", rows=parse_api_rows(rows), done=True)


def parse_api_sentences(text: str) -> RouterOsResult:
    """Raw API sentences (`!re`, `=k=v`, `.tag=`, `!done`, `!trap`, `!fatal`), as printed by
    API clients (`>>> ` prefixes of replies are removed, `<<< ` request lines skipped); also a
    bare `key=value` word dump of one reply (continuation lines start with a space)."""
    rows: list[dict[str, RosValue]] = []
    traps: list[RouterOsTrap] = []
    done = False
    fatal: str | None = None
    cur: dict[str, str] | None = None
    kind: str | None = None
    tag: str | None = None
    last_key: str | None = None
    bare: dict[str, str] = {}

    def close() -> None:
        nonlocal cur, kind, tag
        if cur is not None and kind == "!re":
            rows.append(typed_row(cur))
        elif cur is not None and kind == "!trap":
            cat = cur.get("category")
            traps.append(
                RouterOsTrap(
                    cur.get("message", ""), int(cat) if cat and cat.isdigit() else None, tag
                )
            )
        cur, kind, tag = None, None, None

    for raw in lines(text):
        if raw.startswith("<<<"):
            continue
        line = re.sub(r"^>>>\s?", "", raw)  # \s also eats the NBSP some clients print
        if line in ("!re", "!done", "!trap", "!fatal", "!empty"):
            close()
            if line in {"!done", "!empty"}:
                done = True
            elif line == "!fatal":
                fatal = ""
            else:
                cur, kind = {}, line
            continue
        if cur is not None and line.startswith("="):
            k, _, v = line[1:].partition("=")
            cur[k] = v
            continue
        if line.startswith(".tag="):
            tag = line[5:]
            continue
        if fatal == "" and line.strip():
            fatal = line.strip()
            continue
        if cur is None and kind is None:
            last_key = _bare_word(line, bare, last_key)
    close()
    if bare and not rows:
        rows.append(typed_row(bare))
    if not rows and not traps and not done and fatal is None:
        raise ParseError("no API sentence (!re/!done/!trap) or key=value word", tool=TOOL, raw=text)
    return RouterOsResult(
        "api-sentences", rows=tuple(rows), traps=tuple(traps), done=done, fatal=fatal
    )


def _bare_word(line: str, bare: dict[str, str], last_key: str | None) -> str | None:
    """One line of a bare `key=value` dump into `bare` (a line starting with a space continues
    the last value); returns the key the next continuation belongs to."""
    m = re.match(r"^([a-z][a-z0-9.-]*)=(.*)$", line)
    if m and not line.startswith(" "):
        bare[m.group(1)] = m.group(2)
        return m.group(1)
    if last_key and line.startswith(" "):
        bare[last_key] += "\n" + line
    return last_key


def parse_api_python_repr(text: str) -> RouterOsResult:
    """A Python client's printed rows (`[{'id': '*27C', 'dynamic': 'true', ...}]`) and any
    `failure: ...` / `Error "..."` lines after them."""
    rows: list[dict[str, RosValue]] = []
    traps: list[RouterOsTrap] = []
    for raw in lines(text):
        line = raw.strip()
        if line.startswith("[{") or line.startswith("{"):
            try:
                value = ast.literal_eval(line)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            items = value if isinstance(value, list) else [value]
            rows.extend(typed_row(i) for i in items if isinstance(i, dict))
        elif m := re.search(r"(failure: [^'\"]+|Error \"[^\"]+\")", line):
            msg = m.group(1)
            if not any(t.message == msg for t in traps):
                traps.append(RouterOsTrap(msg))
    if not rows and not traps:
        raise ParseError("no printed row dict or failure line", tool=TOOL, raw=text)
    return RouterOsResult("api", rows=tuple(rows), traps=tuple(traps))
