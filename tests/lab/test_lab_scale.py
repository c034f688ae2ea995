"""The lab at scale: up to 64 nodes on a chain of switches, frames crossing every ISL between."""

from __future__ import annotations

import pytest

from wizard.errors import ScenarioError
from wizard.lab import scenarios
from wizard.lab.physics import (
    EXTRA_SWITCH_EFFICIENCY,
    SWITCH_PATH_EFFICIENCY,
    FlowSpec,
    pcie_half_gbps,
    solve,
)
from wizard.lab.world import End

CHAIN = """
name: chain-{n}
description: {n} nodes on {k} CRS804 in a chain
topology: {{nodes: {n}, switches: [{switches}], cables_per_node: 1}}
faults: []
"""


def _chain(n: int, k: int) -> scenarios.Scenario:
    text = CHAIN.format(n=n, k=k, switches=", ".join(["{model: CRS804-4DDQ}"] * k))
    return scenarios.load_text(text, path="chain.yaml")


def test_sixty_four_nodes_on_eleven_switches_build() -> None:
    # the two ends of the chain keep one ISL port (7 nodes each), the nine inside two (6 each)
    world = scenarios.build_world(_chain(64, 11))
    assert len(world.nodes) == 64 and len(world.switches) == 11
    last = world.peer(End("node", "spark64", "port0"))
    assert last is not None and last.name == "crs804-k"


def test_more_nodes_than_the_cap_or_the_ports_are_refused() -> None:
    with pytest.raises(ScenarioError) as exc:
        _chain(65, 12)
    assert "topology" in str(exc.value)
    with pytest.raises(ScenarioError) as ports:
        _chain(64, 10)
    assert "need more than the 62 200G ports" in str(ports.value)


def test_a_frame_crosses_every_isl_between_the_ends_of_a_chain() -> None:
    world = scenarios.build_world(_chain(20, 3))
    a = world.peer(End("node", "spark1", "port0"))
    b = world.peer(End("node", "spark20", "port0"))
    assert a is not None and b is not None and (a.name, b.name) == ("crs804-a", "crs804-c")
    path = world.path("spark1", 0, "spark20", 0)
    assert path.ok, path.reason
    assert [h.switch for h in path.hops] == ["crs804-a", "crs804-b", "crs804-c"]
    assert path.isl == (("crs804-a", "crs804-b"), ("crs804-b", "crs804-c"))
    assert all(h.offloaded for h in path.hops)
    # the middle switch forwards from one ISL port to the other
    mid = path.hops[1]
    assert (mid.ingress, mid.egress) == ("qsfp56-dd-4-5", "qsfp56-dd-4-1")


def test_a_flow_across_the_chain_is_capped_as_a_switched_path() -> None:
    world = scenarios.build_world(_chain(20, 3))
    flows = [FlowSpec("spark1", "enp1s0f0np0", "spark20", "enp1s0f0np0")]
    (res,) = solve(world, flows, noise=False)
    assert not res.stalled, res.reason
    # one QP through three switches: the PCIe half, one switched path, two further switches
    three_hops = pcie_half_gbps(4) * SWITCH_PATH_EFFICIENCY * EXTRA_SWITCH_EFFICIENCY**2
    assert res.gbps == pytest.approx(three_hops, abs=0.01)
    assert res.gbps < 109.08  # seed 000's cross-switch number is for two switches
    assert res.path is not None and len(res.path.isl) == 2


def test_an_unplugged_isl_cuts_the_chain() -> None:
    world = scenarios.build_world(_chain(20, 3))
    for c in world.cables:
        if {c.a.name, c.b.name} == {"crs804-b", "crs804-c"}:
            c.seated = False
    path = world.path("spark1", 0, "spark20", 0)
    assert not path.ok and path.reason == "no path between switches"
