"""The query stack machine with the words librouteros really emits (routeros-api.md 1.4)."""

from __future__ import annotations

import pytest

from wizard.lab.routeros.query import QueryError, matches

ITEMS = [
    {".id": "*1", "interface": "ether1", "bridge": "b1", "hw-offload": "false", "mtu": "1500"},
    {
        ".id": "*2",
        "interface": "qsfp56-dd-1-1",
        "bridge": "b2",
        "hw-offload": "false",
        "mtu": "9000",
    },
    {
        ".id": "*3",
        "interface": "qsfp56-dd-1-5",
        "bridge": "b3",
        "hw-offload": "true",
        "mtu": "9000",
        "comment": "x",
    },
]


def ids(words: list[str]) -> list[str]:
    return [i[".id"] for i in ITEMS if matches(i, words)]


def test_librouteros_where_hw_false_in_and_not() -> None:
    # librouteros: .where(hw == False, Key('bridge').In('b1','b2'), Key('interface') != 'ether1')
    words = ["=hw-offload=no", "=bridge=b1", "=bridge=b2", "#|", "=interface=ether1", "#!"]
    assert ids(words) == ["*2"]


def test_or_and_negation_and_presence() -> None:
    assert ids(["bridge=b1", "bridge=b3", "#|"]) == ["*1", "*3"]
    assert ids(["comment"]) == ["*3"]
    assert ids(["-comment"]) == ["*1", "*2"]
    assert ids(["<mtu=2000"]) == ["*1"]
    assert ids([">mtu=2000"]) == ["*2", "*3"]
    assert ids(["=hw-offload=yes"]) == ["*3"]


def test_index_ops() -> None:
    # push three, then "0" at end of the word replaces the stack with the top value
    assert ids(["bridge=b1", "bridge=b2", "bridge=b3", "#0"]) == ["*3"]
    # "2." pushes a copy of index 2 (the first push), then & with top
    assert ids(["bridge=b1", "mtu=1500", "#1.&"]) == ["*1"]


def test_bad_op() -> None:
    with pytest.raises(QueryError):
        matches(ITEMS[0], ["#x"])
