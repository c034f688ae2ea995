"""The RouterOS API query stack machine (`?name`, `?-name`, `?=`, `?<`, `?>`, `?#ops`).

Evaluated per item on a stack of booleans that starts as infinitely many `true`; an item is
kept when no `false` remains (routeros-api.md 1.4). Booleans compare loosely (yes/no/true/false)
because librouteros sends Python booleans as yes/no while items carry true/false.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["QueryError", "matches", "normalise", "values_equal"]

_BOOL = {"yes": "true", "true": "true", "no": "false", "false": "false"}


class QueryError(ValueError):
    """A query word the router would not accept."""


def normalise(value: str) -> str:
    return _BOOL.get(value, value)


def values_equal(a: str, b: str) -> bool:
    return normalise(a) == normalise(b)


def _less(a: str, b: str) -> bool:
    try:
        return int(a) < int(b)
    except ValueError:
        return a < b


def _pop(stack: list[bool]) -> bool:
    return stack.pop() if stack else True


def _ops(stack: list[bool], ops: str) -> list[bool]:
    i = 0
    while i < len(ops):
        ch = ops[i]
        if ch.isdigit():
            j = i
            while j < len(ops) and ops[j].isdigit():
                j += 1
            index = int(ops[i:j])
            value = stack[-1 - index] if index < len(stack) else True
            if j == len(ops):
                return [value]
            stack.append(value)
            if ops[j] == ".":
                j += 1
            i = j
            continue
        if ch == "!":
            stack.append(not _pop(stack))
        elif ch in "&|":
            right, left = _pop(stack), _pop(stack)
            stack.append(left and right if ch == "&" else left or right)
        elif ch == ".":
            stack.append(stack[-1] if stack else True)
        else:
            raise QueryError(f"unknown query operation {ch!r}")
        i += 1
    return stack


def matches(item: Mapping[str, str], words: list[str]) -> bool:
    """Whether `item` passes the query words (each word without its leading `?`)."""
    stack: list[bool] = []
    for word in words:
        if word.startswith("#"):
            stack = _ops(stack, word[1:])
            continue
        op = "="
        body = word
        if body[:1] in ("<", ">", "="):
            op, body = body[0], body[1:]
            if "=" not in body:
                raise QueryError(f"bad query word ?{word}")
            name, value = body.split("=", 1)
        elif body.startswith("-"):
            stack.append(body[1:] not in item)
            continue
        elif "=" in body:
            name, value = body.split("=", 1)
        else:
            stack.append(body in item)
            continue
        have = item.get(name)
        if have is None:
            stack.append(False)
        elif op == "=":
            stack.append(values_equal(have, value))
        elif op == "<":
            stack.append(_less(have, value))
        else:
            stack.append(_less(value, have))
    return all(stack)
