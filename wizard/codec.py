"""Typed codecs: a dataclass value to JSON data and back, through pydantic `TypeAdapter`s.

An event (with the verdicts, evidence, probe results and measurements inside it) is encoded by
its type's adapter to JSON-native data (tuples as lists, enums as their values) and decoded by the
same adapter into an equal value: tuples come back as tuples, a `Status` as a `Status`, a nested
`ProbeResult` as a `ProbeResult`. A value of the wrong type is a `ValueError` naming the field.

Adapters are built on first use, one per type (pydantic is loaded only then).
"""

from __future__ import annotations

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
    """`value` (a dataclass instance) as JSON-native data. A value pydantic cannot encode
    (something odd in a free-form `extra` mapping) is written as its `str`."""
    return adapter(type(value)).dump_python(value, mode="json", fallback=str)


def decode(cls: type[T], data: Any) -> T:
    """JSON data back into a `cls`; raises ValueError (pydantic's ValidationError) when it does
    not fit the type."""
    return adapter(cls).validate_python(data)
