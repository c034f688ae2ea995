"""The proof run's rounds: rail tests packed as tightly as they run without sharing a
bottleneck (a node's send or receive side, a PCIe half, an ISL direction)."""

from __future__ import annotations

from wizard.model import Rail
from wizard.schedule import flow_uses, pack_rounds, round_robin


def _rails(node: str, switch: str = "sw1") -> list[Rail]:
    """A GB10's four rails, sorted as the sweep orders them: port 0 A, 0 B, 1 A, 1 B."""
    return [
        Rail(node, f"p{port}{half}", f"r{port}{half}", port, half, up=True, switch=switch)
        for port in (0, 1)
        for half in ("A", "B")
    ]


def _keys(rounds: list[list[tuple[Rail, Rail]]]) -> list[list[str]]:
    return [[f"{c.key}->{s.key}" for c, s in r] for r in rounds]


def test_opposite_ways_on_different_halves_share_a_round() -> None:
    a, b = _rails("a"), _rails("b")
    # plane 0 (half A) a->b, plane 1 (half B) b->a: a sends on A and receives on B
    assert _keys(pack_rounds([(a[0], b[0]), (b[1], a[1])])) == [["a/p0A->b/p0A", "b/p0B->a/p0B"]]


def test_two_sends_from_one_node_or_one_half_do_not() -> None:
    a, b, c = _rails("a"), _rails("b"), _rails("c")
    # the same way twice: a's NIC would send two rails' worth (more than its ~196 Gb/s)
    assert len(pack_rounds([(a[0], b[0]), (a[1], b[1])])) == 2
    # opposite ways on one half (port 0 A, port 1 A): both directions cost each ~8%
    assert len(pack_rounds([(a[0], b[0]), (b[2], a[2])])) == 2
    # a node receiving from two others at once
    assert len(pack_rounds([(a[0], c[0]), (b[1], c[1])])) == 2


def test_one_flow_per_isl_direction() -> None:
    a, b = _rails("a", "sw1"), _rails("b", "sw1")
    c, d = _rails("c", "sw2"), _rails("d", "sw2")
    assert flow_uses(a[0], c[0]) >= {("isl", "sw1", "sw2")}
    assert ("isl", "sw1", "sw1") not in flow_uses(a[0], b[0])
    # two flows sw1 -> sw2 at once would share the ISL's direction
    assert len(pack_rounds([(a[0], c[0]), (b[0], d[0])])) == 2
    # one each way is two directions: together
    assert len(pack_rounds([(a[0], c[0]), (d[1], b[1])])) == 1


def test_every_pair_every_plane_of_eight_nodes_in_fewer_rounds() -> None:
    nodes = [f"n{i}" for i in range(8)]
    rails = {n: _rails(n) for n in nodes}
    flows = [
        (rails[x][i], rails[y][i])
        for i in range(4)
        for pairs in round_robin(nodes)
        for x, y in pairs
    ]
    rounds = pack_rounds(flows)
    assert sorted(k for r in _keys(rounds) for k in r) == sorted(_keys([flows])[0])  # each once
    assert len(rounds) == 18  # 4 planes x 7 rounds of pairs were 28
    for r in rounds:
        uses = [flow_uses(c, s) for c, s in r]
        assert sum(len(u) for u in uses) == len(frozenset().union(*uses))  # nothing shared
