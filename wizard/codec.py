"""Typed codecs: a dataclass value to JSON data and back.

An event (with the verdicts, evidence, probe results and measurements inside it) is encoded to
JSON-native data (tuples as lists, enums as their values, as pydantic writes them) by walking its fields, and decoded by its type's pydantic `TypeAdapter` into an equal
value: tuples come back as tuples, a `Status` as a `Status`, a nested `ProbeResult` as a
`ProbeResult`. A value of the wrong type is a `ValueError` naming the field.

Encoding is on the session log's path, once per event, so it needs neither pydantic nor a
schema: building an adapter costs ~5 ms a type (26 event types), loading pydantic ~60 ms. Only
reading a log back (replay, resume, reports) builds adapters, on first use, one per type.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import TypeAdapter

T = TypeVar("T")


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def adapter(cls: type[T]) -> TypeAdapter[T]:
    """The adapter of one type, built once."""
    built = _ADAPTERS.get(cls)
    if built is None:
        from pydantic import TypeAdapter

        built = _ADAPTERS[cls] = TypeAdapter(cls)
    return built


def encode(value: Any) -> Any:
    """`value` (a dataclass instance) as JSON-native data, field by field in declaration order,
    as pydantic's JSON mode writes it: tuples, lists and sets as lists, enums as their values,
    mapping keys as strings, paths as strings, date-times in ISO 8601, a NaN or an infinity in a
    free-form mapping as null. A value of no JSON shape (something odd in a free-form `extra` mapping) is written as
    its `str`."""
    return _encode(value)


def _encode(v: Any, free: bool = False) -> Any:
    """`v` as JSON data; `free`: inside a field typed `Any` (a free-form mapping), where pydantic
    writes a NaN or an infinity as null (a field typed float keeps it)."""
    t = type(v)
    if t is str or t is int or t is bool or v is None:
        return v
    if t is float:
        return v if not free or math.isfinite(v) else None
    if t is tuple or t is list:
        return [x if type(x) is str else _encode(x, free) for x in v]
    if t is dict:
        return {
            (k if type(k) is str else _key(k)): (x if type(x) is str else _encode(x, free))
            for k, x in v.items()
        }
    fields = _FIELDS.get(t)
    if fields is None and dataclasses.is_dataclass(v) and not isinstance(v, type):
        fields = _FIELDS[t] = tuple((f.name, "Any" in str(f.type)) for f in dataclasses.fields(v))
    if fields is not None:
        out = {}
        for n, any_ in fields:
            x = getattr(v, n)
            tx = type(x)
            out[n] = x if tx is str or tx is int or tx is bool or x is None else _encode(x, any_)
        return out
    if isinstance(v, enum.Enum):
        return _encode(v.value, free)
    if isinstance(v, list | tuple | set | frozenset):
        return [_encode(x, free) for x in v]
    if isinstance(v, dict):
        return {_key(k): _encode(x, free) for k, x in v.items()}
    return _other(v, free)


def _key(k: Any) -> str:
    if isinstance(k, str):
        return k if type(k) is str or not isinstance(k, enum.Enum) else str(k.value)
    encoded = _encode(k)
    return encoded if isinstance(encoded, str) else json.dumps(encoded)


def _other(v: Any, free: bool) -> Any:
    if isinstance(v, bool | int):
        return int(v) if not isinstance(v, bool) else bool(v)
    if isinstance(v, float):
        return float(v) if not free or math.isfinite(v) else None
    if isinstance(v, str):
        return str(v)
    if isinstance(v, PurePath):
        return str(v)
    if isinstance(v, datetime.datetime | datetime.date | datetime.time):
        return v.isoformat()
    if isinstance(v, bytes | bytearray):
        return bytes(v).decode("utf-8", "replace")
    return str(v)


# a dataclass type -> its fields (name, typed `Any`), worked out once
_FIELDS: dict[type[Any], tuple[tuple[str, bool], ...]] = {}


def decode(cls: type[T], data: Any) -> T:
    """JSON data back into a `cls`; raises ValueError (pydantic's ValidationError) when it does
    not fit the type."""
    return adapter(cls).validate_python(data)
