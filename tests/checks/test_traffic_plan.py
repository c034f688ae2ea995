"""The traffic plan covers the fabric: every node pair per plane over a round-robin schedule
(`--quick`: the disjoint pairs only), a QP-count re-run of a low rail, one bidirectional rail,
the two-flows-one-ISL-direction test across switches, and a jumbo ping matrix."""

from __future__ import annotations

import pytest

from flows.base import Context
from flows.checks import rail_matrix, switch_mtu
from flows.checks.switch_mtu import SwitchMtu
from flows.expectations import DEFAULT
from tests.checks.lab_sweeper import lab_sweeper
from wizard.events import Event, TrafficPlanned
from wizard.model import Measurement, Rail, Status
from wizard.schedule import flux_last
from wizard.sweep import rail_pairs, round_robin


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 8])
def test_round_robin_covers_every_pair_once_in_disjoint_rounds(n: int) -> None:
    nodes = [f"n{i}" for i in range(1, n + 1)]
    rounds = round_robin(nodes)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    pairs = [frozenset(p) for r in rounds for p in r]
    assert len(pairs) == len(set(pairs)) == n * (n - 1) // 2
    for r in rounds:
        used = [x for p in r for x in p]
        assert len(used) == len(set(used))  # a node is in one pair per round
    assert rail_pairs(nodes)[0] == [(nodes[i], nodes[i + 1]) for i in range(0, n - 1, 2)]


def test_quick_pairs_put_nodes_with_unique_addresses_together() -> None:
    # lossless QoS and ARP flux stall a test alike: a pair of two nodes whose addresses are
    # unique is a stall QoS alone explains, so the nodes ARP flux may hit go last
    def rails(node: str, *cidrs: str) -> tuple[Rail, ...]:
        return tuple(
            Rail(node, f"p{i}", f"r{i}", 0, "A", addresses=(c,)) for i, c in enumerate(cidrs)
        )

    nodes = ["s1", "s2", "s3", "s4"]
    shared = {
        "s1": rails("s1", "10.9.0.1/24", "10.9.1.1/24"),
        "s2": rails("s2", "10.9.0.2/24", "10.9.1.2/24"),
        "s3": rails("s3", "10.9.0.2/24", "10.9.1.3/24"),  # s2's address
        "s4": rails("s4", "10.9.0.4/24", "10.9.1.4/24"),
    }
    assert flux_last(nodes, shared) == ["s1", "s4", "s2", "s3"]
    assert rail_pairs(flux_last(nodes, shared)) == [[("s1", "s4"), ("s2", "s3")]]
    # two rails of one node in one subnet: the node's own ARP flux
    subnet = {**shared, "s3": rails("s3", "10.9.0.3/24", "10.9.1.3/24")}
    subnet["s1"] = rails("s1", "10.9.0.1/24", "10.9.0.11/24")
    assert flux_last(nodes, subnet) == ["s2", "s3", "s4", "s1"]
    # nothing shared: the inventory's order, as before
    clean = {**shared, "s3": rails("s3", "10.9.0.3/24", "10.9.1.3/24")}
    assert flux_last(nodes, clean) == nodes


def test_qp_invariance_is_said_so() -> None:
    m = Measurement(
        "rail",
        "a/p0->b/p0",
        4.75,
        "Gb/s",
        extra={
            "client": "a",
            "server": "b",
            "client_netdev": "p0",
            "server_netdev": "p0",
            "rerun_qps": 8,
            "rerun_single_gbps": 9.51,
            "rerun_gbps": 9.49,
        },
    )
    assert rail_matrix.qp_invariant(m) is True
    moved = Measurement(
        "rail", "x", 12.8, "Gb/s", extra={"rerun_single_gbps": 12.8, "rerun_gbps": 40.0}
    )
    assert rail_matrix.qp_invariant(moved) is False
    assert rail_matrix.qp_invariant(Measurement("rail", "x", 9.5, "Gb/s")) is None


def _rail(node: str, mtu: int = 9000) -> Rail:
    return Rail(node, "p0", "r0", 0, "A", addresses=("10.9.0.1/24",), mtu=mtu, up=True)


def test_ping_matrix_failure_is_switch_mtu_unless_a_host_or_rstp_explains_it() -> None:
    ctx = Context(
        expectations=DEFAULT,
        nodes=("a", "b", "c"),
        rails={"a": (_rail("a"),), "b": (_rail("b"),), "c": (_rail("c", 1500),)},
    )
    pings = (
        {
            "src": "a/p0",
            "dst": "b/p0",
            "ip": "10.9.0.2",
            "ok": False,
            "received": 0,
            "small_ok": True,  # a small ping gets through: the jumbo frame is what is lost
            "command": "ping -M do -s 8972 x",
        },
        {"src": "a/p0", "dst": "c/p0", "ip": "10.9.0.3", "ok": False, "received": 0},
        {"src": "b/p0", "dst": "a/p0", "ip": "10.9.0.1", "ok": True, "received": 3},
    )
    [v] = switch_mtu.judge(SwitchMtu((), (), pings), ctx)
    assert v.status == Status.FAIL
    assert v.targets == ("a/p0->b/p0",)  # the c pair is host.mtu's (c runs MTU 1500)
    cross = ({**pings[0], "cross_switch": True},)
    [quiet] = switch_mtu.judge(SwitchMtu((), (), cross, rstp_blocked=True), ctx)
    assert quiet.status == Status.PASS  # the RSTP detour explains it
    [ok] = switch_mtu.judge(SwitchMtu((), (), pings[2:]), ctx)
    assert ok.status == Status.PASS and ok.evidence[-1].observed == "1 of 1 jumbo pings passed"
    # no reply at any size: reachability (a duplicate address, a link), never an MTU finding
    dark = ({**pings[0], "small_ok": False},)
    [unseen] = switch_mtu.judge(SwitchMtu((), (), dark), ctx)
    assert unseen.status == Status.UNKNOWN and unseen.targets == ("a/p0->b/p0",)
    assert "at any size: reachability, not MTU" in unseen.evidence[0].observed


@pytest.mark.lab
async def test_the_quick_plan_tests_the_nodes_with_unique_addresses_together() -> None:
    # the flagship: spark2 and spark3 share an address; (spark1, spark2), (spark3, spark4)
    # would put one of them in every test, and no stall would prove QoS apart from ARP flux
    async with lab_sweeper("crs804-three-bugs") as sweeper:
        seen: list[Event] = []
        sweeper.sink = seen.append
        quick = await sweeper.rail_tests(duration_s=1, quick=True, bidirectional=False)
    [plan] = [e for e in seen if isinstance(e, TrafficPlanned)]
    tests = [t for r in plan.rounds for t in r]
    pairs = {frozenset(n.split("/")[0] for n in t.split("->")) for t in tests}
    assert pairs == {frozenset({"spark1", "spark4"}), frozenset({"spark2", "spark3"})}
    assert {frozenset((m.extra["client"], m.extra["server"])) for m in quick} == pairs


@pytest.mark.lab
async def test_full_plan_on_four_nodes_every_pair_every_plane_plus_bidir() -> None:
    async with lab_sweeper("healthy-4node-crs804") as sweeper:
        seen: list[Event] = []
        sweeper.sink = seen.append
        full = await sweeper.rail_tests(duration_s=1)
        quick = await sweeper.rail_tests(duration_s=1, quick=True, bidirectional=False)
        pings = await sweeper.ping_matrix()
    uni = [m for m in full if not m.extra.get("bidir")]
    # 4 planes (rail indexes) x 6 pairs; quick: 4 planes x 2 disjoint pairs
    assert len(uni) == 24 and len(quick) == 8
    pairs = {frozenset((m.extra["client"], m.extra["server"])) for m in uni}
    assert len(pairs) == 6
    [bi] = [m for m in full if m.extra.get("bidir")]
    assert " -b" in bi.extra["command"] and bi.value == pytest.approx(206.0, rel=0.02)
    assert all(m.value > 100 for m in uni)
    assert all("rerun_gbps" not in m.extra for m in uni)  # nothing low: no re-run
    assert len(pings) == 24 and all(p["ok"] for p in pings)
    assert all(str(p["command"]).startswith("ping -M do -s 8972 ") for p in pings)
    # each sweep announced its plan before running it: the rounds, in the order measured
    plans = [e for e in seen if isinstance(e, TrafficPlanned)]
    # 4 planes x 3 rounds of pairs (quick: x 1): a pair's half-B tests run the other way, so
    # each node sends on one half and receives on the other and a round of pairs takes two
    # rounds, one per QSFP port: 6 (quick: 2), the fewest (a node is in 12 tests, 2 a round)
    assert [len(p.rounds) for p in plans] == [6, 2]
    assert sum(len(r) for r in plans[0].rounds) == 24
    assert all(p.duration_s == 1.0 for p in plans)
    assert all(len(r) == 4 for r in plans[1].rounds)
    for r in plans[0].rounds:  # in a round, a node sends once and receives once
        ends = [t.split("->") for t in r]
        senders = {c.split("/")[0] for c, _ in ends}
        assert len(senders) == len({s.split("/")[0] for _, s in ends}) == len(r) > 1
    # run together, each rail still measures what it does alone (one switch: ~109.2 Gb/s)
    assert all(m.value == pytest.approx(109.2, rel=0.01) for m in uni)
    assert [t for r in plans[0].rounds for t in r] == [m.target for m in uni]
    assert [t for r in plans[1].rounds for t in r] == [m.target for m in quick]


@pytest.mark.lab
async def test_two_switches_isl_shared_flows_and_cross_switch_pings() -> None:
    async with lab_sweeper("crs812-six-node") as sweeper:
        isl = await sweeper.isl_shared_test(duration_s=1, delay=0.05, timeout_s=30)
        pings = await sweeper.ping_matrix()
    assert len(isl) == 2 and all(m.extra["isl_shared"] for m in isl)
    clients = {m.extra["client"] for m in isl}
    servers = {m.extra["server"] for m in isl}
    assert not clients & servers  # both flows one way over the ISL
    assert any(p["cross_switch"] for p in pings)
    assert any(not p["ok"] for p in pings if p["cross_switch"])  # the RSTP detour, MTU 1500
