"""The report reads like a ticket: a fixed order, each number under the column of when it was
taken, the versions and the bisection's conclusion shown, raw outputs only in the appendix, and
the HTML's pictures drawn inline from the recorded numbers."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from report_session import (
    BIDIR,
    NCCL_REAL,
    SENTENCE,
    rack_events,
    write_rack_session,
    write_session,
)
from session_helpers import EXPORT_TEXT, RAIL, RAIL_B

from flows.expectations import Expectations
from screens.commands.session import report_ceilings
from wizard.events import MeasurementTaken, VerdictReached
from wizard.report import build_report, render
from wizard.session import load_session

CEILINGS = report_ceilings(2)


def test_sections_come_in_ticket_order_and_raw_outputs_come_last(tmp_path: Path) -> None:
    md = render(load_session(write_session(tmp_path / "s")), "md", ceilings=CEILINGS)
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert heads == [
        "## Faults found",
        "## Before and after",
        "## Not checked",
        "## What the bisection concluded",
        "## Step by step",
        "## Fixes",
        "## Errors",
        "## Appendix: details",
        "## Appendix: raw outputs and exports",
    ]
    details = [line for line in md.splitlines() if line.startswith("### ")]
    assert details.index("### Session") < details.index("### Steps") < details.index("### Fixes")
    assert md.splitlines()[2].startswith("**Not healthy; 3 fault(s) found, 1 fixed")
    body, appendix = md.split("## Appendix: details", 1)
    # the export is verbatim in the appendix only; the body names it and points at it
    assert EXPORT_TEXT.splitlines()[-1] in appendix and EXPORT_TEXT.splitlines()[-1] not in body
    assert re.search(
        r"- `switch.offload-split-cage` on crs804: verified; Export taken before the change: "
        r"crs804 fabwiz-pre-offload.rsc \(sha256 5555555555555555\): raw-\d+\n",
        body,
    )
    # one compact line a step, its findings under it, its numbers as a range
    assert (
        "- **offload** (done): 1 fail, 1 pass; measured 3 rail: 9.42-109.20 Gb/s; "
        "1 NCCL busbw: 1.12 GB/s; 1 not counted as evidence\n" in body
    )
    assert "  - FAIL `switch.offload-split-cage` on crs804:" in body
    assert "- **halves**" in body and "1 rail -b: 206.10 Gb/s" in body
    assert "- spark2 unreachable for 12 s" in body  # errors stay in the body
    assert "| Status | Fault | Targets | Summary | Evidence |" not in body  # tables: appendix
    assert "mpirun" not in body  # the NCCL re-run block is in the appendix
    assert len(body.splitlines()) < 100


def test_a_rack_sized_session_reads_on_a_few_screens_and_loses_nothing(tmp_path: Path) -> None:
    loaded = load_session(write_rack_session(tmp_path / "s"))
    md = render(loaded, "md", ceilings=CEILINGS)
    body, appendix = md.split("## Appendix: details", 1)
    assert len(body.splitlines()) < 150
    assert len(md.splitlines()) > 1500  # the rest is all there, in the appendix
    # every fault judged, every number taken, every evidence row is somewhere in the report
    events = rack_events()
    for ev in events:
        if isinstance(ev, VerdictReached):
            assert ev.verdict.fault in md
            for e in ev.verdict.evidence:
                assert e.observed in appendix
        elif isinstance(ev, MeasurementTaken):
            assert f"{ev.measurement.value:.2f} Gb/s" in appendix
    # the body sums each step up: its passes counted, its numbers as one range per kind
    assert "- **qos**" in body and "measured 8 rail: 110.00-110.07 Gb/s" in body
    assert "25 pass" in body and "rack.check-" not in body  # passes are counted, not listed
    for fault in ("switch.offload-split-cage", "switch.qos-pfc-stall", "host.duplicate-ip"):
        assert fault in body


def test_each_number_sits_under_the_column_of_when_it_was_taken(tmp_path: Path) -> None:
    loaded = load_session(write_session(tmp_path / "s"))
    md = render(loaded, "md", ceilings=CEILINGS)
    # measured before the first fix and after it
    # measured after the first fix but before the QoS fix: shown, marked, not compared
    assert (
        f"| {RAIL} | rail | 9.42 Gb/s | 109.20 Gb/s (in offload, before the last fix) | — |" in md
    )
    # measured only after the first fix: under After, nothing under Before
    assert f"| {RAIL_B} | rail | — | 98.04 Gb/s | — |" in md
    rows = {(m["target"], m["bidir"]): m for m in build_report(loaded)["measurements"]}
    assert rows[RAIL_B, False]["before"] is None and rows[RAIL_B, False]["after"] == 98.04
    # a -b run is never compared with a one-way run of the same rail: two rows
    assert (rows[BIDIR, False]["before"], rows[BIDIR, False]["after"]) == (9.5, None)
    assert (rows[BIDIR, True]["before"], rows[BIDIR, True]["after"]) == (None, 206.1)
    assert f"| {BIDIR} | rail | 9.50 Gb/s | — | — |" in md
    assert f"| {BIDIR} | rail -b (both directions) | — | 206.10 Gb/s | — |" in md


def test_versions_and_the_bisection_conclusion_are_shown_by_field(tmp_path: Path) -> None:
    loaded = load_session(write_session(tmp_path / "s"))
    data = build_report(loaded)
    got = {(v["target"], v["component"]): v["version"] for v in data["versions"]}
    assert got[("spark1", "kernel")] == "6.11.0-1016-nvidia"
    assert got[("spark1", "cx7_firmware")] == "28.45.1020"
    assert got[("spark1", "platform")] == "ASUSTeK COMPUTER INC. GX10"
    assert got[("fabwiz", "fabwiz")] == "0.1.0"
    md = render(loaded, "md")
    assert "| spark1 | kernel | 6.11.0-1016-nvidia | preflight |" in md
    assert f"- direct\\_connect (switch-path): {SENTENCE}" in md or (
        f"- direct_connect (switch-path): {SENTENCE}" in md
    )
    [c] = data["conclusions"]
    assert (c["switched_gbps"], c["direct_gbps"]) == (0.0, 111.97)
    page = render(loaded, "html")
    assert "<td>spark1</td><td>kernel</td><td>6.11.0-1016-nvidia</td>" in page
    assert "direct_connect (switch-path): spark1 111.97 Gb/s on a direct cable" in page


def test_the_html_draws_the_rails_and_the_nccl_sweep_inline(tmp_path: Path) -> None:
    if not NCCL_REAL.is_file():
        pytest.skip(f"{NCCL_REAL} is absent: the NCCL sweep is a real all_reduce_perf output")
    loaded = load_session(write_session(tmp_path / "s"))
    page = render(loaded, "html", ceilings=CEILINGS)
    svgs = re.findall(r"<svg .*?</svg>", page, re.S)
    assert len(svgs) == 2
    rails, nccl = svgs
    e = Expectations()
    # one row per rail, before grey and after coloured by its band, the ceiling of its kind
    assert f"{html.escape(RAIL)}</text>" in rails and f"{html.escape(BIDIR)}</text>" in rails
    assert "9.4 → 109.2 / 109" in rails and "206.1 / 206" in rails
    assert f"expected {e.rail_switched_gbps:.2f} Gb/s" in rails
    assert f"expected {e.bidir_rail_gbps:.2f} Gb/s" in rails
    assert 'fill="#3a9d4a"><title>after: 109.20 Gb/s' in rails  # pass band
    # the sweep: 11 sizes of the real run, against the expected busbw for two nodes
    [points] = re.findall(r'<polyline points="([^"]+)"', nccl)
    assert len(points.split()) == 11
    assert f"expected {e.nccl_expected(2):.2f} GB/s" in nccl
    # the fabric map: one row per measured lane end, coloured by its verdict
    assert '<table class="map">' in page
    # spark1 is coloured by the duplicate-address warn that names it; the lane by its band
    assert (
        '<tr><td class="st-warn">spark1</td><td class="st-none">A</td><td class="st-none">'
        'enp1s0f0np0</td><td class="st-none">spark2/enp1s0f0np0</td><td class="st-pass">109.2'
        in page
    )
    assert '<td class="st-pass">103.0 each way</td>' in page  # the -b rail, per direction
    # nothing external: no script, no link, no remote URL
    assert "<script" not in page and "<link" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "url(" not in page


def test_redacted_html_charts_carry_no_original_value(tmp_path: Path) -> None:
    loaded = load_session(write_session(tmp_path / "s"))
    page = render(loaded, "html", redact=True, ceilings=CEILINGS)
    assert "<svg " in page
    for value in ("spark1", "spark2", "crs804", "10.9.1.1"):
        assert value not in page, value


def test_a_number_taken_before_the_last_fix_is_marked_and_not_compared() -> None:
    """A number taken between two fixes is not what the fabric gives now: a pairing that only
    existed while an address was duplicated must not read as a rail that fell to 0 Gb/s."""
    from wizard.model import Measurement
    from wizard.report_data import before_after
    from wizard.session import FixRecord, MeasurementRecord, SessionState

    def rail(target: str, at: float, value: float, step: str) -> MeasurementRecord:
        return MeasurementRecord(step, at, Measurement("rail", target, value, "Gb/s"))

    state = SessionState()
    state.fixes["f1"] = FixRecord(
        "f1", "offload", "switch.offload-split-cage", "crs804", applied_at=10.0
    )
    state.fixes["f2"] = FixRecord(
        "f2", "addressing", "host.duplicate-ip", "spark3", applied_at=20.0
    )
    state.measurements += [
        rail("a->b", 1.0, 7.75, "direct_connect"),
        rail("a->x", 1.0, 7.75, "direct_connect"),  # the duplicate address paired a with x
        rail("a->x", 15.0, 0.0, "qos"),  # between the fixes
        rail("a->b", 15.0, 50.0, "qos"),
        rail("a->b", 25.0, 109.2, "halves"),
    ]
    rows = {r["target"]: r for r in before_after(state)}
    ab, ax = rows["a->b"], rows["a->x"]
    assert (ab["before"], ab["after"], ab["after_step"], ab["stale"]) == (
        7.75,
        109.2,
        "halves",
        False,
    )
    assert ab["change"] == pytest.approx(101.45)
    assert (ax["before"], ax["after"], ax["after_step"], ax["stale"], ax["change"]) == (
        7.75,
        0.0,
        "qos",
        True,
        None,
    )


def test_versions_shared_by_every_node_take_one_row() -> None:
    from wizard.report_doc import _version_rows

    rows = [
        {"target": n, "component": "kernel", "version": "6.11.0-1016-nvidia", "source": "preflight"}
        for n in ("spark1", "spark2", "spark3")
    ] + [
        {
            "target": "spark1",
            "component": "cx7_firmware",
            "version": "28.45.1020",
            "source": "preflight",
        },
        {
            "target": "spark2",
            "component": "cx7_firmware",
            "version": "28.47.1088",
            "source": "preflight",
        },
    ]
    got = [
        (r.target, r.component, r.version)
        for r in _version_rows(rows, ["spark1", "spark2", "spark3"])
    ]
    assert got == [
        ("all 3 nodes", "kernel", "6.11.0-1016-nvidia"),
        ("spark1", "cx7_firmware", "28.45.1020"),  # the odd one out stands out
        ("spark2", "cx7_firmware", "28.47.1088"),
    ]
