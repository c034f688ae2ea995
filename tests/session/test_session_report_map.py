"""The HTML report's fabric map, rebuilt from a real lab session's log: per node and lane the
host side (cage, half, netdev, RDMA device, addresses) beside the switch side (sub-port, bridge,
H flag, rate/FEC) and the last Gb/s, each cell coloured by its verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from screens.commands.session import report_ceilings
from screens.report_map import fabric_map_data
from wizard.events import VerdictReached
from wizard.report import render
from wizard.session import load_session

pytestmark = [pytest.mark.lab, pytest.mark.slow]


async def test_the_fabric_map_joins_host_and_switch_per_lane(tmp_path: Path) -> None:
    from tests.reliability.rel_support import walk
    from wizard.lab import Lab

    async with Lab("fault-switch-offload-split-cage", time_scale=100.0) as lab:
        await walk(lab, tmp_path, ["preflight", "offload"], traffic=False)
    loaded = load_session(tmp_path / "session")
    fmap = fabric_map_data(loaded)
    assert fmap is not None
    assert fmap["headers"][:4] == ["Node", "Cage", "Half", "Netdev"]
    rows = {(r[0]["text"], r[3]["text"]): [c["text"] for c in r] for r in fmap["rows"]}
    assert len(rows) == 16  # 4 nodes x 4 rails
    lane = rows[("spark1", "enp1s0f0np0")]
    assert lane[:6] == ["spark1", "0", "A", "enp1s0f0np0", "rocep1s0f0", "10.9.1.1/24"]
    assert lane[6].startswith("crs804:qsfp56-dd-") and lane[8] in ("H", "no")
    assert lane[10] == "not tested"  # no traffic in this walk: never a made-up number
    page = render(loaded, "html", ceilings=report_ceilings(4), fabric_map=fmap)
    assert '<table class="map">' in page and "<th>Switch port</th>" in page
    # coloured by the latest verdicts: the walk fixed the split cage, and the step was judged
    # again from the sweep that verified it. That sweep shows every fabric port with the H flag,
    # but this walk ran no transfer, so the switch CPU under load (the proof that forwarding is
    # offloaded) was never seen: the switch cells say unknown, not pass. The nodes carry the
    # benign 27 W line that names them.
    assert {c["status"] for r in fmap["rows"] for c in r[6:10]} == {"unknown"}
    lost = [
        e.verdict
        for e in loaded.events
        if isinstance(e, VerdictReached) and e.verdict.fault == "switch.offload-lost"
    ][-1]
    assert str(lost.status) == "pass"  # the H flag on every port: no unexplained loss
    assert any(
        str(ev.status) == "unknown" and "inside a transfer" in ev.observed for ev in lost.evidence
    )
    assert {r[0]["status"] for r in fmap["rows"]} == {"benign"}
    assert '<td class="st-unknown">crs804:qsfp56-dd-1-1</td>' in page
    # redacted with the rest of the report
    red = render(loaded, "html", redact=True, fabric_map=fmap)
    assert "spark1" not in red and "10.9.1.1" not in red and "<th>Switch port</th>" in red
