"""Field checks for records read from YAML (the inventory's, a lab scenario's): plain
dataclasses, validated from the loaded data.

A check takes a value and its location (a tuple of keys and indexes from the file's root) and
returns the value to store, or records a problem and returns `BAD`. `build` fills a record from a
mapping: every field in declaration order, then every unknown key, so one pass reports every
problem. A problem is a dict with `type`, `loc`, `msg` and `input`, the shape `inventory_yaml`
words for a technician; `SchemaError` carries them.

Strings are stripped of surrounding whitespace unless a check says otherwise. Numbers may be
written as numbers or as numeric strings; a boolean is never a number. Records refuse unknown
keys. A record may name the key a field is written under (`ALIASES`, e.g. `hw-offload`); either
spelling is read, and `dump` writes the alias. `dump` turns a record back into JSON-native data.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields
from typing import Any, TypeVar

__all__ = [
    "BAD",
    "Check",
    "Loc",
    "Problem",
    "SchemaError",
    "build",
    "choice",
    "dump",
    "fail",
    "flag",
    "mapping",
    "number",
    "optional",
    "parse",
    "record",
    "sequence",
    "text",
    "validated",
    "whole",
]

Loc = tuple[str | int, ...]
Problem = dict[str, Any]
Check = Callable[[Any, Loc, list[Problem]], Any]


class _Bad:
    def __repr__(self) -> str:
        return "BAD"


BAD: Any = _Bad()


R = TypeVar("R")


class SchemaError(ValueError):
    """The problems found in one value, in the order they were found."""

    def __init__(self, title: str, problems: list[Problem]) -> None:
        shown = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or title}: {e['msg']}" for e in problems
        )
        super().__init__(f"{len(problems)} problem(s) in {title}: {shown}")
        self.problems = problems

    def errors(self) -> list[Problem]:
        return list(self.problems)


def fail(errors: list[Problem], kind: str, loc: Loc, msg: str, value: Any) -> Any:
    errors.append({"type": kind, "loc": loc, "msg": msg, "input": value})
    return BAD


def text(
    *, min_length: int = 0, pattern: str | None = None, means: str = "", strip: bool = True
) -> Check:
    """A string, stripped (unless `strip` is false); at least `min_length` characters; matching
    `pattern` when given, which `means` says in words for the message ("letters, digits...")."""
    regex = None if pattern is None else re.compile(pattern)

    def check(value: Any, loc: Loc, errors: list[Problem]) -> Any:
        if not isinstance(value, str):
            return fail(errors, "string_type", loc, "Input should be a valid string", value)
        v = value.strip() if strip else value
        if len(v) < min_length:
            s = "" if min_length == 1 else "s"
            return fail(
                errors,
                "string_too_short",
                loc,
                f"String should have at least {min_length} character{s}",
                value,
            )
        if regex is not None and regex.search(v) is None:
            said = f"should be {means}" if means else f"String should match pattern {pattern!r}"
            return fail(errors, "string_pattern_mismatch", loc, said, value)
        return v

    return check


_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(
    r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|infinity|nan)", re.I
)


def whole(*, ge: int | None = None, le: int | None = None) -> Check:
    """A whole number (an integral float and a numeric string are accepted), within bounds."""

    def check(value: Any, loc: Loc, errors: list[Problem]) -> Any:
        v: int
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return fail(errors, "int_type", loc, "Input should be a valid integer", value)
        if isinstance(value, str):
            if _INT.fullmatch(value.strip()) is None:
                return fail(
                    errors,
                    "int_parsing",
                    loc,
                    "Input should be a valid integer, unable to parse string as an integer",
                    value,
                )
            v = int(value.strip())
        elif isinstance(value, float):
            if not math.isfinite(value):
                return fail(errors, "finite_number", loc, "Input should be a finite number", value)
            if not value.is_integer():
                return fail(
                    errors,
                    "int_from_float",
                    loc,
                    "Input should be a valid integer, got a number with a fractional part",
                    value,
                )
            v = int(value)
        else:
            v = value
        return _bounded(v, value, loc, errors, ge=ge, le=le)

    return check


def number(*, gt: float | None = None, ge: float | None = None) -> Check:
    """A number (a numeric string is accepted), above `gt` and at least `ge` when given."""

    def check(value: Any, loc: Loc, errors: list[Problem]) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return fail(errors, "float_type", loc, "Input should be a valid number", value)
        if isinstance(value, str) and _FLOAT.fullmatch(value.strip()) is None:
            return fail(
                errors,
                "float_parsing",
                loc,
                "Input should be a valid number, unable to parse string as a number",
                value,
            )
        v = float(value.strip() if isinstance(value, str) else value)
        if gt is not None and not v > gt:
            return fail(errors, "greater_than", loc, f"Input should be greater than {gt:g}", value)
        if ge is not None and not v >= ge:
            return fail(
                errors,
                "greater_than_equal",
                loc,
                f"Input should be greater than or equal to {ge:g}",
                value,
            )
        return v

    return check


def _bounded(
    v: int, value: Any, loc: Loc, errors: list[Problem], *, ge: int | None, le: int | None
) -> Any:
    if ge is not None and v < ge:
        return fail(
            errors,
            "greater_than_equal",
            loc,
            f"Input should be greater than or equal to {ge}",
            value,
        )
    if le is not None and v > le:
        return fail(
            errors, "less_than_equal", loc, f"Input should be less than or equal to {le}", value
        )
    return v


_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def flag(value: Any, loc: Loc, errors: list[Problem]) -> Any:
    """A boolean: true/false, or one of the usual words (yes/no, on/off, 1/0)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and not value.is_integer():
        return fail(errors, "bool_type", loc, "Input should be a valid boolean", value)
    if isinstance(value, int | float | str):
        word = value.strip().lower() if isinstance(value, str) else value
        if word in _TRUE or word == 1:
            return True
        if word in _FALSE or word == 0:
            return False
        return fail(
            errors,
            "bool_parsing",
            loc,
            "Input should be a valid boolean, unable to interpret input",
            value,
        )
    return fail(errors, "bool_type", loc, "Input should be a valid boolean", value)


def choice(*values: Any) -> Check:
    """One of `values`, exactly (of the same type: `true` is not `1`)."""
    words = repr(values[-1])
    if len(values) > 1:
        words = ", ".join(repr(v) for v in values[:-1]) + f" or {words}"

    def check(value: Any, loc: Loc, errors: list[Problem]) -> Any:
        if any(type(value) is type(v) and value == v for v in values):
            return value
        return fail(errors, "literal_error", loc, f"Input should be {words}", value)

    return check


def optional(inner: Check) -> Check:
    """None, or what `inner` accepts."""

    def check(value: Any, loc: Loc, errors: list[Problem]) -> Any:
        return None if value is None else inner(value, loc, errors)

    return check


def mapping(value_check: Check | None, key_check: Check | None = None) -> Check:
    """A mapping with string keys (stripped) and values passing `value_check` (any, if None)."""
    keys = key_check or text()

    def check(value: Any, loc: Loc, errors: list[Problem]) -> Any:
        if not isinstance(value, dict):
            return fail(errors, "dict_type", loc, "Input should be a valid dictionary", value)
        n = len(errors)
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = keys(k, (*loc, k, "[key]"), errors)
            item = v if value_check is None else value_check(v, (*loc, k), errors)
            out[key] = item
        return BAD if len(errors) > n else out

    return check


def sequence(
    item: Check, *, min_length: int = 0, max_length: int | None = None, as_list: bool = False
) -> Check:
    """A list of items passing `item`, kept as a tuple (a list with `as_list`); at least
    `min_length` of them and at most `max_length`."""
    kind = "list" if as_list else "tuple"

    def check(value: Any, loc: Loc, errors: list[Problem]) -> Any:
        if not isinstance(value, list | tuple):
            return fail(
                errors,
                f"{kind.lower()}_type",
                loc,
                f"Input should be a valid {kind.lower()}",
                value,
            )
        n = len(errors)
        out = [item(v, (*loc, i), errors) for i, v in enumerate(value)]
        if len(errors) > n:
            return BAD
        if len(out) < min_length:
            s = "y" if min_length == 1 else "ies"
            return fail(errors, "too_short", loc, f"give at least {min_length} entr{s}", value)
        if max_length is not None and len(out) > max_length:
            return fail(
                errors, "too_long", loc, f"give at most {max_length} entries, not {len(out)}", value
            )
        return out if as_list else tuple(out)

    return check


def validated(inner: Check, rule: Callable[[Any], Any]) -> Check:
    """`inner`, then `rule` on its result: a ValueError from `rule` is the field's problem."""

    def check(value: Any, loc: Loc, errors: list[Problem]) -> Any:
        v = inner(value, loc, errors)
        if v is BAD:
            return BAD
        try:
            return rule(v)
        except ValueError as exc:
            return fail(errors, "value_error", loc, f"Value error, {exc}", value)

    return check


def record(cls: type[R]) -> Check:
    """A nested record: a mapping built into `cls`."""

    def check(value: Any, loc: Loc, errors: list[Problem]) -> Any:
        return build(cls, value, loc, errors)

    return check


def build(cls: type[R], data: Any, loc: Loc, errors: list[Problem]) -> Any:
    """`data` as a `cls` (a dataclass with `SCHEMA`), or BAD with its problems recorded. After the
    fields, the record's own `check_record()` (when it has one) may raise ValueError."""
    if isinstance(data, cls):
        return data
    if not isinstance(data, dict):
        return fail(
            errors,
            "model_type",
            loc,
            f"Input should be a valid dictionary or instance of {cls.__name__}",
            data,
        )
    schema: Mapping[str, Check] = cls.SCHEMA  # type: ignore[attr-defined]
    aliases: Mapping[str, str] = getattr(cls, "ALIASES", {})
    required = _required(cls)
    n = len(errors)
    values: dict[str, Any] = {}
    for name, check in schema.items():
        key = aliases.get(name, name)
        key = key if key in data else name
        if key in data:
            values[name] = check(data[key], (*loc, key), errors)
        elif name in required:
            fail(errors, "missing", (*loc, aliases.get(name, name)), "Field required", data)
    known = set(schema) | set(aliases.values())
    for k, v in data.items():
        if k not in known:
            fail(errors, "extra_forbidden", (*loc, k), "Extra inputs are not permitted", v)
    if len(errors) > n:
        return BAD
    made = cls(**values)
    rule = getattr(made, "check_record", None)
    if rule is not None:
        try:
            rule()
        except ValueError as exc:
            return fail(errors, "value_error", loc, f"Value error, {exc}", data)
    return made


_REQUIRED: dict[type[Any], frozenset[str]] = {}


def _required(cls: type[Any]) -> frozenset[str]:
    names = _REQUIRED.get(cls)
    if names is None:
        names = _REQUIRED[cls] = frozenset(
            f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
        )
    return names


def dump(value: Any, *, exclude_defaults: bool = False) -> Any:
    """A record (and what it holds) as JSON-native data: fields by their alias, tuples as lists;
    with `exclude_defaults`, a record's fields that still have their default are left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        aliases: Mapping[str, str] = getattr(value, "ALIASES", {})
        out: dict[str, Any] = {}
        for f in fields(value):
            v = getattr(value, f.name)
            if exclude_defaults and _is_default(f, v):
                continue
            out[aliases.get(f.name, f.name)] = dump(v, exclude_defaults=exclude_defaults)
        return out
    if isinstance(value, dict):
        return {k: dump(v, exclude_defaults=exclude_defaults) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [dump(v, exclude_defaults=exclude_defaults) for v in value]
    return value


def _is_default(f: dataclasses.Field[Any], v: Any) -> bool:
    if f.default is not MISSING:
        return bool(v == f.default)
    if f.default_factory is not MISSING:
        return bool(v == f.default_factory())
    return False


def parse(cls: type[R], data: Any) -> R:
    """`data` as a `cls`; raises SchemaError with every problem."""
    errors: list[Problem] = []
    made = build(cls, data, (), errors)
    if errors:
        raise SchemaError(cls.__name__, errors)
    return made  # type: ignore[no-any-return]
