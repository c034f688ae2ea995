"""Helpers shared by the parsers: number coercion, prompt stripping, JSON conversion.

Kept tiny and pure so every parser stays a function of its text alone.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from wizard.errors import ParseError

T = TypeVar("T")

# texts longer than this are parsed each time and never kept (a real output of the parsers
# that remember is a few KiB; a hostile one may be megabytes)
REMEMBERED_TEXT = 65536


def remembered(parser: Callable[[str], T]) -> Callable[[str], T]:
    """`parser` remembering its last few hundred answers by text: for a parser whose result
    is immutable all the way down (frozen dataclasses, tuples, strings, numbers), so that the
    sweep's discovery and every check that reads the same output share one parse. A text that
    does not parse raises each time."""
    cached = functools.lru_cache(maxsize=512)(parser)

    @functools.wraps(parser)
    def parse(text: str) -> T:
        return cached(text) if len(text) <= REMEMBERED_TEXT else parser(text)

    return parse


# Shell prompts users paste in front of commands: `user@host:~$ `, `$ `, `# `.
_PROMPT = re.compile(r"^\s*(?:\[[\w.-]+@[^\]]*\][$#]|[\w.-]+@[\w.-]+(?::[^$#]*)?[$#]|[$#])\s+")


def to_jsonable(value: Any) -> Any:
    """Plain JSON data (dicts, lists, str, numbers, None) for any parser result."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | frozenset | set):
        items = sorted(value) if isinstance(value, frozenset | set) else value
        return [to_jsonable(v) for v in items]
    return value


def strip_prompt(line: str) -> str:
    """The command part of a pasted shell prompt line (`user@host:~$ cmd` -> `cmd`)."""
    # every prompt ends in `$` or `#`: a line with neither is not one (most lines of an output)
    if "$" not in line and "#" not in line:
        return line
    return _PROMPT.sub("", line, count=1)


def is_prompt_line(line: str) -> bool:
    if "$" not in line and "#" not in line:
        return False
    return bool(_PROMPT.match(line))


def to_int(text: str) -> int | None:
    """An int from decimal text (thousand separators ` `/`,` allowed), or None."""
    cleaned = text.strip().replace(" ", "").replace(",", "")
    if re.fullmatch(r"[+-]?\d+", cleaned):
        return int(cleaned)
    return None


def to_float(text: str) -> float | None:
    cleaned = text.strip()
    try:
        value = float(cleaned)
    except ValueError:
        return None
    if math.isnan(value) or math.isinf(value):
        return None
    return value


def lines(text: str) -> Iterator[str]:
    """Lines without their end, CR removed (pastes from Windows terminals)."""
    for line in text.splitlines():
        yield line.rstrip("\r")


def load_json(text: str, *, tool: str) -> Any:
    """`json.loads` that raises ParseError (never ValueError/RecursionError)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"not valid JSON: {exc}", tool=tool, raw=text) from None
