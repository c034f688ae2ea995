"""The inventory's explicit host octets (`addressing.hosts`) and the plan that uses them."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows import plans
from flows.base import Context
from flows.expectations import Expectations
from wizard.errors import FixRefused, InventoryError
from wizard.inventory import parse_inventory

BASE = """\
nodes:
  - {name: rack-a-spark1, host: 127.0.0.1}
  - {name: rack-b-spark1, host: 127.0.0.2}
"""


def test_an_explicit_map_is_read_and_checked() -> None:
    inv = parse_inventory(
        BASE + "addressing: {hosts: {rack-a-spark1: 11, rack-b-spark1: 21}}\n", path=Path("i.yaml")
    )
    assert dict(inv.addressing_hosts) == {"rack-a-spark1": 11, "rack-b-spark1": 21}
    with pytest.raises(InventoryError) as dup:
        parse_inventory(
            BASE + "addressing: {hosts: {rack-a-spark1: 5, rack-b-spark1: 5}}\n",
            path=Path("i.yaml"),
        )
    assert "rack-a-spark1 and rack-b-spark1 both have host octet 5" in str(dup.value)
    with pytest.raises(InventoryError) as unknown:
        parse_inventory(BASE + "addressing: {hosts: {spark9: 9}}\n", path=Path("i.yaml"))
    assert unknown.value.field == "addressing.hosts.spark9"


def test_octets_come_from_the_map_else_unique_digits_else_a_collision_is_refused() -> None:
    ctx = Context(expectations=Expectations(), nodes=("rack-a-spark1", "rack-b-spark1"))
    with pytest.raises(FixRefused) as err:
        plans.host_octets(ctx)
    assert "rack-a-spark1 and rack-b-spark1 the same host octet 1" in err.value.message
    assert err.value.hint is not None and "rack-a-spark1: 1, rack-b-spark1: 2" in err.value.hint
    mapped = Context(
        expectations=Expectations(),
        nodes=("rack-a-spark1", "rack-b-spark1"),
        addressing={"hosts": {"rack-b-spark1": 2}},
    )
    assert plans.host_octets(mapped) == {"rack-a-spark1": 1, "rack-b-spark1": 2}
    plain = Context(expectations=Expectations(), nodes=("spark3", "gpu", "spark1"))
    assert plans.host_octets(plain) == {"spark3": 3, "gpu": 2, "spark1": 1}
