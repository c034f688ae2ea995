"""Several switches: where each rail's cable lands when every switch has learned every node's
MAC (on a leg at its own switch, on the port toward that switch at the others), which port of
each switch leads toward each other one, and a rail matrix that crosses no ISL direction twice
at once on a chain of three switches; the both-halves test kept on one switch, where the ISL
would cap it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.lab_sweeper import lab_sweeper
from wizard.discovery import cabling_from_host_tables, switch_map
from wizard.events import Event, TrafficPlanned
from wizard.lab import scenarios
from wizard.lab.lab import Lab
from wizard.model import Rail, SwitchMap
from wizard.schedule import (
    flow_uses,
    halves_rounds,
    home_switches,
    pack_rounds,
    ring_order,
    rounds_bound,
)


def _rail(node: str, i: int, half: str = "A", switch: str | None = None) -> Rail:
    mac = f"aa:00:00:00:{i:02x}:{0 if half == 'A' else 1:02x}"
    return Rail(node, f"en{half}", f"r{half}", 0, half, mac=mac, switch=switch)  # type: ignore[arg-type]


def _row(mac: str, port: str) -> dict[str, str]:
    return {"mac-address": mac.upper(), "on-interface": port, "local": "false"}


def _tables(legs: dict[str, list[tuple[Rail, str]]], toward: dict[tuple[str, str], str]):
    """Every switch learns its own rails on their legs, the others' on its port toward them."""
    out: dict[str, list[dict[str, str]]] = {sw: [] for sw in legs}
    for home, rails in legs.items():
        for r, leg in rails:
            out[home].append(_row(r.mac, leg))
            for sw in legs:
                if sw != home:
                    out[sw].append(_row(r.mac, toward[(sw, home)]))
    return out


CHAIN = {  # a - b - c: a's ISL is x1, b's are y1 (toward a) and y2 (toward c), c's is z1
    ("a", "b"): "x1",
    ("a", "c"): "x1",
    ("b", "a"): "y1",
    ("b", "c"): "y2",
    ("c", "a"): "z1",
    ("c", "b"): "z1",
}


def test_a_rail_lands_on_its_leg_not_on_the_ports_toward_its_switch() -> None:
    rails = {n: [_rail(n, i, h) for h in "AB"] for i, n in enumerate(["n1", "n2", "n3", "n4"])}
    legs = {
        "a": [(r, "leg1") for r in rails["n1"]] + [(r, "leg2") for r in rails["n2"]],
        "b": [(r, "leg1") for r in rails["n3"]],  # one node port: its ISL ports carry one too
        "c": [(r, "leg7") for r in rails["n4"]],
    }
    every = [r for rs in rails.values() for r in rs]
    tables = _tables(legs, CHAIN)
    got = cabling_from_host_tables(every, tables)
    assert got == {
        "n1/enA": ("a", "leg1"),
        "n1/enB": ("a", "leg1"),
        "n2/enA": ("a", "leg2"),
        "n2/enB": ("a", "leg2"),
        "n3/enA": ("b", "leg1"),
        "n3/enB": ("b", "leg1"),
        "n4/enA": ("c", "leg7"),
        "n4/enB": ("c", "leg7"),
    }
    # the tables in the other order place the same
    assert cabling_from_host_tables(every, dict(reversed(tables.items()))) == got
    placed = [Rail(**{**_asdict(r), "switch": got[r.key][0]}) for r in every]
    assert switch_map(placed, tables).toward == CHAIN


def _asdict(r: Rail) -> dict[str, object]:
    return {f: getattr(r, f) for f in Rail.__slots__}  # type: ignore[attr-defined]


def test_two_switches_with_one_node_port_each_are_left_unplaced() -> None:
    """Each switch's leg and ISL port carry the same single node port: no table tells which
    of the two is the cable, and neither is guessed."""
    n1, n2 = _rail("n1", 1), _rail("n2", 2)
    tables = _tables({"a": [(n1, "leg1")], "b": [(n2, "leg1")]}, {("a", "b"): "x", ("b", "a"): "y"})
    assert cabling_from_host_tables([n1, n2], tables) == {}


def test_a_chain_flow_uses_every_isl_direction_on_its_way() -> None:
    m = SwitchMap(CHAIN)
    assert m.egress("a", "c") == (("a", "x1"), ("b", "y2"))
    assert m.egress("c", "a") == (("c", "z1"), ("b", "y1"))
    assert m.egress("a", "b") == (("a", "x1"),)
    assert SwitchMap().egress("a", "c") == ()
    n1 = _rail("n1", 1, "A", "a")
    n2 = _rail("n2", 2, "A", "a")
    n5 = _rail("n5", 5, "A", "b")
    n6 = _rail("n6", 6, "A", "b")
    n9 = _rail("n9", 9, "A", "c")
    # a->c and b->c share b's port toward c; a->c and c->a go opposite ways
    assert flow_uses(n1, n9, m) & flow_uses(n5, n9, m) >= {("isl", "b", "y2")}
    assert len(pack_rounds([(n1, n9), (n6, _rail("n8", 8, "A", "c"))], m)) == 2
    assert len(pack_rounds([(n1, n9), (_rail("n7", 7, "A", "c"), n2)], m)) == 1
    # without the map only the pair of switches is known: a->c and b->c look apart
    assert len(pack_rounds([(n1, n9), (n6, _rail("n8", 8, "A", "c"))])) == 1
    assert rounds_bound([(n1, n9), (n2, n5), (n6, n9)], m) == 2


CHAIN9 = """
name: chain-9
description: nine nodes on a chain of three CRS812s
topology:
  nodes: 9
  switches: [{model: CRS812-8DS-2DQ-2DDQ}, {model: CRS812-8DS-2DQ-2DDQ}, {model: CRS812-8DS-2DQ-2DDQ}]
  cables_per_node: 1
faults: []
"""


@pytest.mark.lab
async def test_rail_matrix_on_a_chain_of_three_switches_shares_no_isl_direction() -> None:
    """4 + 4 + 1 nodes: every switch learns every MAC, the lone node on the far switch is
    placed on its leg, and no test of the matrix shares an ISL direction: each measures its
    rail (~109 Gb/s), in as few rounds as the busiest ISL direction needs."""
    scen = scenarios.load_text(CHAIN9, path="chain-9.yaml")
    async with lab_sweeper(scen) as sweeper:
        seen: list[Event] = []
        sweeper.sink = seen.append
        switches = {r.switch for rs in sweeper.rails.values() for r in rs if r.up}
        ms = await sweeper.rail_tests(duration_s=1, bidirectional=False)
    homes = {n: {r.switch for r in rs if r.up} for n, rs in sweeper.rails.items()}
    assert homes["spark9"] == {"crs812-c"} and homes["spark1"] == {"crs812-a"}
    assert switches == {"crs812-a", "crs812-b", "crs812-c"}
    toward = sweeper.switch_map.toward
    assert toward[("crs812-a", "crs812-c")] == toward[("crs812-a", "crs812-b")] == "qsfp56-1-1"
    assert toward[("crs812-b", "crs812-c")] == "qsfp56-2-1"
    assert len(ms) == 72  # 36 pairs x 2 planes
    assert all(m.valid and m.value > 105 for m in ms), sorted(m.value for m in ms)[:4]
    [plan] = [e for e in seen if isinstance(e, TrafficPlanned)]
    by_key = {r.key: r for rs in sweeper.rails.values() for r in rs}
    flows = [(by_key[c], by_key[s]) for r in plan.rounds for c, s in (f.split("->") for f in r)]
    # a's ISL toward b carries 4 x 5 pairs' tests one way: 20 rounds at the least
    assert rounds_bound(flows, sweeper.switch_map) == 20
    assert len(plan.rounds) == 20


def test_halves_pairs_stay_on_their_switch() -> None:
    """7 + 6 + 3 nodes on a chain (the rank order straddles two ISLs: (7,8) and (13,14)): every
    pair of the both-halves test is on one switch, every node a client once, no node twice in
    a round; a node alone on its switch is paired across, in a round of its own."""
    nodes = [f"s{i}" for i in range(1, 17)]
    home = {n: "a" if i < 7 else "b" if i < 13 else "c" for i, n in enumerate(nodes)}
    rounds = halves_rounds(nodes, home)
    pairs = [p for r in rounds for p in r]
    assert all(home[a] == home[b] for a, b in pairs), pairs
    assert sorted(a for a, _ in pairs) == sorted(nodes)
    for r in rounds:
        ends = [x for p in r for x in p]
        assert len(ends) == len(set(ends)), r
    assert ("s7", "s1") in pairs and ("s16", "s14") in pairs  # the odd ones out, at home
    five = halves_rounds(
        ["s1", "s2", "s3", "s4", "s5"], {"s5": "b"} | dict.fromkeys(["s1", "s2", "s3", "s4"], "a")
    )
    assert five == [[("s1", "s2"), ("s3", "s4")], [("s5", "s1")], [("s2", "s1"), ("s4", "s3")]]
    # no switch known (a direct cable, an unplaced rail): the node order, as before
    assert halves_rounds(["x", "y", "z"], {}) == [[("x", "y")], [("z", "x")], [("y", "x")]]


@pytest.mark.lab
async def test_a_healthy_chain_walk_ends_healthy_with_a_node_alone_on_a_switch(
    tmp_path: Path,
) -> None:
    """The whole walk on 4 + 4 + 1 nodes: each node with a partner on its switch reads its
    ~196 Gb/s; the node alone on the far switch can only be measured across the ISLs, reads
    their share (~163.8) and is held to it (>= 150), and the walk ends healthy (it ended "not
    healthy" with no finding named, the node held to 180)."""
    from tests.engine.test_engine_lab import walk

    scen = scenarios.load_text(CHAIN9, path="chain-9.yaml")
    async with Lab(scen, time_scale=200.0) as lab:
        result, _events = await walk("chain-9", tmp_path, lab=lab, time_scale=200.0)
    assert result.halves_across_isl == {"spark9"}
    at_home = {n: v for n, v in result.halves_gbps.items() if n != "spark9"}
    assert len(at_home) == 8 and min(at_home.values()) > 190.0, result.halves_gbps
    assert 160.0 < result.halves_gbps["spark9"] < 168.0
    assert result.healthy_after is True


def test_ring_order_groups_the_ranks_along_the_chain() -> None:
    """NCCL's ring joins rank k to k+1: nodes interleaved across a - b - c are grouped by
    switch in chain order (each ISL direction crossed once), the first node kept as rank 0;
    without a switch map, grouped in the order the switches first appear; one switch or none
    known: the order given."""
    nodes = ["n1", "n2", "n3", "n4", "n5", "n6"]
    home = {"n1": "b", "n2": "a", "n3": "c", "n4": "b", "n5": "a", "n6": "c"}
    assert ring_order(nodes, home, SwitchMap(CHAIN)) == ["n1", "n4", "n3", "n6", "n2", "n5"]
    assert ring_order(nodes, home, SwitchMap()) == ["n1", "n4", "n2", "n5", "n3", "n6"]
    assert ring_order(nodes, {}, SwitchMap(CHAIN)) == nodes
    assert ring_order(nodes, dict.fromkeys(nodes, "a"), SwitchMap(CHAIN)) == nodes


@pytest.mark.lab
async def test_nccl_ranks_follow_the_switches_whatever_the_inventory_order() -> None:
    """The inventory lists the 4 + 4 + 1 nodes interleaved across the three switches: in that
    rank order the ring would cross each ISL direction several times (a healthy fabric read
    ~3 GB/s, the socket band); fabwiz launches the ranks grouped along the chain, and NCCL
    reads the ISL's share of the 4-node busbw, above the cross-switch gate (4.9 GB/s in the
    inventory's order)."""
    from flows.expectations import DEFAULT

    scen = scenarios.load_text(CHAIN9, path="chain-9.yaml")
    async with lab_sweeper(scen) as sweeper:
        interleaved = ["spark1", "spark5", "spark9", "spark2", "spark6", "spark3", "spark7"]
        sweeper.nodes = [*interleaved, "spark4", "spark8"]
        m, _res = await sweeper.nccl_test()
    assert m.valid and m.value >= DEFAULT.nccl_gate(9, 3), m.value
    hosts = [line.split()[0] for line in str(m.extra["hostfile"]).splitlines() if line.strip()]
    by_address = {sweeper.mgmt[n][1]: n for n in sweeper.nodes}  # (netdev, address)
    ranks = [by_address[h] for h in hosts]
    assert ranks == [f"spark{i}" for i in range(1, 10)], ranks


def test_a_nodes_home_switch_is_its_port_0_legs() -> None:
    """The switch of port 0's half A, else of its half B; None where port 0 is not placed."""
    rails = {
        "n1": [_rail("n1", 1, "B", "b"), _rail("n1", 1, "A", "a")],
        "n2": [_rail("n2", 2, "B", "c")],
        "n3": [_rail("n3", 3, "A", None)],
    }
    assert home_switches(["n1", "n2", "n3", "n4"], rails) == {
        "n1": "a",
        "n2": "c",
        "n3": None,
        "n4": None,
    }
