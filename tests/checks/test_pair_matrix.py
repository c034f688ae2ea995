"""The all-pairs rail matrix read as an engineer reads it: the node common to the low pairs is
the culprit (and only it), a low pair whose ends reach line rate elsewhere is the switch path,
and a pair nothing splits keeps both ends as suspects. Judged on matrices, no lab."""

from __future__ import annotations

from itertools import combinations

from flows.base import Context
from flows.checks import perf_rails
from flows.checks.perf_rails import RailRuns
from flows.expectations import DEFAULT
from wizard import bisect, pairs
from wizard.model import Measurement, Status, Verdict

NODES = ("spark1", "spark2", "spark3", "spark4")
NETDEVS = (("rocep1s0f0", 0, "A"), ("roceP2p1s0f0", 0, "B"))
CTX = Context(
    expectations=DEFAULT,
    nodes=NODES,
    switches=("crs804",),
    cabling={
        f"{n}/{d}": ("crs804", f"qsfp56-dd-{i}-1")
        for i, n in enumerate(NODES, 1)
        for d, _p, _h in NETDEVS
    },
)


def _rail(
    a: str, b: str, gbps: float, netdev: str = "rocep1s0f0", port: int = 0, half: str = "A"
) -> Measurement:
    return Measurement(
        "rail",
        f"{a}/{netdev}->{b}/{netdev}",
        gbps,
        "Gb/s",
        extra={
            "client": a,
            "server": b,
            "client_netdev": netdev,
            "server_netdev": netdev,
            "port": port,
            "half": half,
            "command": f"ib_write_bw -d {netdev}",
        },
    )


def _matrix(slow: set[str], *, path: set[frozenset[str]] | None = None) -> list[Measurement]:
    """Every pair on both planes: 12.8 Gb/s when a pair holds a slow node or is a slow path."""
    out = []
    for netdev, port, half in NETDEVS:
        for a, b in combinations(NODES, 2):
            low = a in slow or b in slow or frozenset((a, b)) in (path or set())
            out.append(_rail(a, b, 12.8 if low else 109.2, netdev, port, half))
    return out


def _judge(ms: list[Measurement], nccl: float | None = 6.0) -> Verdict:
    r = RailRuns(tuple(ms), (), False, False, frozenset(), frozenset(), {}, frozenset(), nccl)
    return next(v for v in perf_rails.judge(r, CTX) if v.fault == "host.cx7-degraded")


def test_one_degraded_node_is_named_alone_with_its_pairs() -> None:
    ms = _matrix({"spark2"})
    v = _judge(ms)
    assert v.status == Status.FAIL
    assert v.targets == ("spark2",)
    rows = [e for e in v.evidence if e.command == "ib_write_bw (every pair)"]
    assert [e.target for e in rows] == ["spark2"]
    assert (
        "low with every partner (spark1-spark2, spark2-spark3, spark2-spark4)" in rows[0].observed
    )
    assert "spark1-spark3 109.20 Gb/s" in rows[0].observed
    low_rows = [e for e in v.evidence if e.observed.startswith("12.80 Gb/s")]
    assert len(low_rows) == 6  # three pairs on each of two planes
    none = RailRuns((), (), False, False, frozenset(), frozenset(), {}, frozenset())
    plan = perf_rails.fix(none, v, CTX)
    assert plan is not None
    assert plan.physical is not None and plan.physical.nodes == ("spark2",)


def test_two_degraded_nodes_are_both_named_and_no_partner() -> None:
    v = _judge(_matrix({"spark2", "spark3"}))
    assert v.status == Status.FAIL
    assert set(v.targets) == {"spark2", "spark3"}


def test_low_pairs_sharing_no_node_are_the_switch_path() -> None:
    ms = _matrix(set(), path={frozenset(("spark1", "spark2")), frozenset(("spark3", "spark4"))})
    v = _judge(ms)
    assert v.status == Status.WARN
    assert all("->" in t for t in v.targets) and len(v.targets) == 4
    assert "switch-path cause" in v.summary and "no node to AC-drain" in v.summary
    assert any("spark1 and spark2 each reach line rate" in e.observed for e in v.evidence)
    none = RailRuns((), (), False, False, frozenset(), frozenset(), {}, frozenset())
    assert perf_rails.fix(none, v, CTX) is None  # nothing to drain


def test_disjoint_pairs_alone_cannot_split_a_pair() -> None:
    ms = [_rail("spark1", "spark2", 12.8), _rail("spark3", "spark4", 109.2)]
    v = _judge(ms)
    assert v.status == Status.FAIL
    assert set(v.targets) == {"spark1", "spark2"}  # one pair cannot say which end


def test_healthy_matrix_passes() -> None:
    v = _judge(_matrix(set()))
    assert v.status == Status.PASS


def test_reading_per_plane() -> None:
    # spark3's second half is slow only: culprit on that plane, clear on the other
    ms = [
        m
        for m in _matrix(set())
        if not (m.extra["half"] == "B" and "spark3" in (m.extra["client"], m.extra["server"]))
    ]
    ms += [
        _rail(a, b, 12.8, "roceP2p1s0f0", 0, "B")
        for a, b in (("spark1", "spark3"), ("spark2", "spark3"), ("spark3", "spark4"))
    ]
    low = [m for m in ms if m.value < 80]
    good = [m for m in ms if m.value >= 80]
    got = pairs.read(low, good)
    assert [c.node for c in got.culprits] == ["spark3"]
    assert {pairs.plane(m) for m in got.culprits[0].low} == {"port0B"}
    assert not got.path and not got.unsplit


def test_bisect_drains_only_the_common_node() -> None:
    ms = _matrix({"spark4"})
    low = bisect.low(ms, 100.0)
    drain = bisect.drain_nodes(ms, low, 100.0)
    assert list(drain) == ["spark4"]
    assert "low with every partner" in drain["spark4"]
    # a switch-path pattern drains nobody
    path = _matrix(set(), path={frozenset(("spark1", "spark2")), frozenset(("spark3", "spark4"))})
    assert bisect.drain_nodes(path, bisect.low(path, 100.0), 100.0) == {}
    # the disjoint pairs alone: both ends of the low pair, as before
    quick = [_rail("spark1", "spark2", 12.8), _rail("spark3", "spark4", 109.2)]
    assert sorted(bisect.drain_nodes(quick, bisect.low(quick, 100.0), 100.0)) == [
        "spark1",
        "spark2",
    ]


def test_unsplit_pair_next_to_a_culprit_is_the_culprits() -> None:
    # spark1..3: spark2 low with everyone; spark3 never met anyone but spark2 and spark1 on
    # this plane, and spark1-spark3 is at line rate: spark2 is the culprit, alone
    ms = [
        _rail("spark1", "spark2", 12.8),
        _rail("spark2", "spark3", 12.8),
        _rail("spark1", "spark3", 109.2),
    ]
    got = pairs.read([m for m in ms if m.value < 80], [ms[2]])
    assert [c.node for c in got.culprits] == ["spark2"]
    assert got.nodes == ("spark2",)
    # only two pairs, both through spark2, nobody clear yet spark2 is common
    two = [_rail("spark1", "spark2", 12.8), _rail("spark2", "spark3", 12.8)]
    assert set(pairs.read(two, []).nodes) == {"spark1", "spark2", "spark3"}


def test_recorded_degraded_case_names_the_common_node_only() -> None:
    from pathlib import Path

    from flows.registry import by_fault
    from tests.checks.test_checks_fixtures import load_case, run

    case = Path(__file__).resolve().parents[1] / "fixtures" / "checks" / "host.cx7-degraded"
    obs, settings = load_case(case / "fault-host-cx7-degraded")
    rails = [m for m in obs.measurements if m.kind == "rail" and not m.extra.get("bidir")]
    assert len({frozenset((m.extra["client"], m.extra["server"])) for m in rails}) == 6
    got = run(by_fault("host.cx7-degraded"), obs, settings)["host.cx7-degraded"]
    assert got.status == Status.FAIL and got.targets == ("spark2",)
    row = next(e for e in got.evidence if e.command == "ib_write_bw (every pair)")
    assert "spark2 is the common node" in row.observed
    assert "spark1-spark2, spark2-spark3, spark2-spark4" in row.observed


def test_band_numbers_of_another_signature_mask_the_cx7s() -> None:
    """~9.5 Gb/s on every rail with the switch CPU busy is software forwarding: the CX7s' own
    rate does not show through it, so their verdicts are unknown, masked by it (never a pass,
    never "no rail in the band"), each rail with its number."""
    from dataclasses import replace

    busy = [
        replace(m, value=9.5, extra={**m.extra, "switch_cpu": {"crs804": 100.0}})
        for m in _matrix(set())
    ]
    r = RailRuns(tuple(busy), (), False, False, frozenset(), frozenset(), {}, frozenset(), 0.46)
    got = {v.fault: v for v in perf_rails.judge(r, CTX)}
    assert got["switch.offload-lost"].status == Status.FAIL
    for fault in ("host.cx7-degraded", "host.cx7-throttled"):
        assert got[fault].status == Status.UNKNOWN
        assert got[fault].summary == (
            "the CX7s' own rate on 12 rail test(s) is masked by switch.offload-lost: judged once "
            "that is fixed and the rails measured again"
        )
        assert len(got[fault].evidence) == 12
        assert all(e.observed.startswith("9.50 Gb/s") for e in got[fault].evidence)
