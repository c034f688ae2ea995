"""The direct-connect reasoning as pure functions: who is drained, who is cabled, what it means."""

from __future__ import annotations

from wizard import bisect
from wizard.model import Measurement, Status, Verdict


def rail(a: str, b: str, gbps: float, port: int = 0, valid: bool = True) -> Measurement:
    return Measurement(
        kind="rail",
        target=f"{a}/enp1s0f{port}np{port}->{b}/enp1s0f{port}np{port}",
        value=gbps,
        unit="Gb/s",
        valid=valid,
        extra={"client": a, "server": b, "port": port},
    )


RUNS = [
    rail("spark1", "spark2", 109.2),
    rail("spark3", "spark4", 12.8),
    rail("spark3", "spark4", 12.6, port=1),
    rail("spark5", "spark6", 109.1),
]


def test_the_worst_rail_and_a_partner_that_measured_well() -> None:
    bad = bisect.low(RUNS, 100.0)
    assert [m.value for m in bad] == [12.6, 12.8]
    assert bisect.port_of(bad[0]) == 1
    assert bisect.suspects(bad, []) == ["spark3", "spark4"]
    nodes = [f"spark{i}" for i in range(1, 7)]
    assert bisect.partner("spark3", RUNS, 100.0, nodes) == ("spark1", True)
    # nobody measured well: any other node, and the caller is told so
    only_bad = [rail("spark1", "spark2", 12.0)]
    assert bisect.partner("spark1", only_bad, 100.0, ["spark1", "spark2"]) == ("spark2", False)


def test_a_host_finding_names_the_first_suspect() -> None:
    bad = bisect.low(RUNS, 100.0)
    finding = Verdict("host.pcie-width", Status.FAIL, "x2", targets=("spark4",))
    assert bisect.suspects(bad, [finding]) == ["spark4", "spark3"]


def test_findings_explain_the_numbers_only_when_they_cover_every_low_rail() -> None:
    bad = [rail("spark1", "spark2", 9.6), rail("spark3", "spark4", 9.5)]
    faults = {"switch.offload-split-cage", "host.pcie-width"}
    cage = Verdict("switch.offload-split-cage", Status.FAIL, "split", targets=("crs804",))
    assert bisect.explaining([cage], bad, ["crs804"], faults) == [cage]
    narrow = Verdict("host.pcie-width", Status.FAIL, "x2", targets=("spark2",))
    assert bisect.explaining([narrow], bad, ["crs804"], faults) == []  # spark3/4 unexplained
    passed = Verdict("switch.offload-split-cage", Status.PASS, "ok")
    assert bisect.explaining([passed], bad, ["crs804"], faults) == []
    other = Verdict("host.ipv6-on-fabric", Status.FAIL, "v6", targets=("spark1",))
    assert bisect.explaining([other], bad, ["crs804"], faults) == []


def test_cleared_by_drain_needs_low_before_and_line_rate_after_on_drained_nodes() -> None:
    before = [rail("spark1", "spark2", 109.0), rail("spark3", "spark4", 12.8)]
    after = [rail("spark1", "spark2", 109.1), rail("spark3", "spark4", 109.3)]
    cleared = bisect.cleared_by_drain(before, after, ["spark3", "spark4"], 100.0)
    assert [(c.target, c.before, c.after, c.nodes) for c in cleared] == [
        ("spark3/enp1s0f0np0->spark4/enp1s0f0np0", 12.8, 109.3, ("spark3", "spark4"))
    ]
    sentence = bisect.drained_sentence(cleared)
    assert sentence.startswith("host.cx7-degraded on spark3, spark4, cleared by AC drain")
    assert "12.80 Gb/s before, 109.30 Gb/s after" in sentence
    # not drained, or still low: nothing is cleared
    assert bisect.cleared_by_drain(before, after, ["spark1"], 100.0) == []
    still = [rail("spark3", "spark4", 12.9)]
    assert bisect.cleared_by_drain(before, still, ["spark3", "spark4"], 100.0) == []


def test_direct_numbers_decide_the_branch_with_both_numbers_in_the_sentence() -> None:
    switched = rail("spark3", "spark4", 12.8)
    good = Measurement("rail", "spark3/port0->spark1/port0", 111.9, "Gb/s")
    ok, sentence = bisect.direct_sentence("spark3", "spark1", 0, good, switched, 100.0)
    assert ok
    assert "111.90 Gb/s, against 12.80 Gb/s through the switch" in sentence
    assert "spark3's NIC and host stack are clear" in sentence
    low = Measurement("rail", "spark3/port0->spark1/port0", 12.7, "Gb/s")
    ok, sentence = bisect.direct_sentence("spark3", "spark1", 0, low, switched, 100.0)
    assert not ok and "the fault is on the host side" in sentence
    both = bisect.switch_path_sentence([("spark3", good), ("spark4", good)], switched)
    assert both.startswith("spark3 111.90 Gb/s on a direct cable; spark4 111.90 Gb/s")
    assert both.endswith("the fault is on the switch path")
    invalid = Measurement("rail", "t", 111.9, "Gb/s", valid=False, reason="not evidence: x")
    ok, sentence = bisect.direct_sentence("spark3", "spark1", 0, invalid, switched, 100.0)
    assert not ok and "not evidence" in sentence


def test_the_skip_sentence_counts_rails_not_measurements() -> None:
    # spark3's port 0 measured three times (a rail re-measured per round), port 1 once
    bad = bisect.low(
        [
            rail("spark3", "spark4", 9.6),
            rail("spark3", "spark4", 9.4),
            rail("spark3", "spark4", 9.8),
            rail("spark3", "spark4", 9.5, port=1),
        ],
        100.0,
    )
    found = [Verdict("switch.offload-split-cage", Status.FAIL, "split", targets=("crs804",))]
    sentence = bisect.skipped_sentence(found, bad)
    assert "(9.40 Gb/s on spark3/enp1s0f0np0->spark4/enp1s0f0np0, 2 rail test(s) low)" in sentence
    assert "switch.offload-split-cage" in sentence
