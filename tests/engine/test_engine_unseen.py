"""Nothing unobserved is green: the walk on a lab where some targets cannot be seen.

Each case breaks the inventory the lab wrote the way a technician would (a wrong switch
password, one node's SSH port closed, nothing reachable) and walks the real engine. The
fault the lab injected on the unseen target must never come back as a pass: not in the
verdicts the engine emitted, not in the session log, not in replay, not in the report.
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from flows.replay import replay_session
from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard.engine import RunResult
from wizard.events import Event, VerdictReached
from wizard.model import Status
from wizard.report import build_report, render_html, render_markdown
from wizard.session import load_session

pytestmark = pytest.mark.lab

SWITCH_FAULTS = ("switch.offload-split-cage", "switch.qos-pfc-stall")


@contextlib.contextmanager
def closed_ports() -> Iterator[Callable[[], int]]:
    """Hands out 127.0.0.1 ports nothing listens on, held until the block ends: each is bound
    and never listened on, so a connection is refused, and no other test's server (a lab of
    another worker) can take it meanwhile (a port released at once could be)."""
    held: list[socket.socket] = []

    def port() -> int:
        s = socket.socket()
        held.append(s)
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

    try:
        yield port
    finally:
        for s in held:
            s.close()


async def walk_broken(tmp_path: Path, breakage: str) -> tuple[RunResult, list[Event], Path]:
    events: list[Event] = []
    with closed_ports() as closed_port:
        return await _walk_broken(tmp_path, breakage, events, closed_port)


async def _walk_broken(
    tmp_path: Path, breakage: str, events: list[Event], closed_port: Callable[[], int]
) -> tuple[RunResult, list[Event], Path]:
    from wizard.lab import Lab

    async with Lab("crs804-three-bugs", time_scale=100.0) as lab:
        inv = yaml.safe_load(lab.inventory_path.read_text())
        if breakage == "password":
            for f in lab.directory.glob("switch-*.password"):
                f.write_text("not-the-password\n")
        for node in inv["nodes"]:
            if breakage == "nothing" or (breakage == "spark3" and node["name"] == "spark3"):
                node["port"] = closed_port()
        if breakage == "nothing":
            for sw in inv["switches"]:
                sw["port"] = closed_port()
        lab.inventory_path.write_text(yaml.safe_dump(inv))
        operator = TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False)
        wiring = await open_wizard(
            operator=operator,
            sinks=[events.append],
            lab_object=lab,
            session_dir=tmp_path / "session",
            time_scale=100.0,
            fsync=False,
        )
        try:
            result = await wiring.engine.run()
        finally:
            await wiring.close()
    return result, events, tmp_path / "session"


def verdicts(events: list[Event]) -> list[tuple[str, Any]]:
    return [(e.step, e.verdict) for e in events if isinstance(e, VerdictReached)]


def logged_verdicts(folder: Path) -> list[dict[str, Any]]:
    lines = (folder / "events.jsonl").read_text().splitlines()
    return [
        json.loads(line)["verdict"]
        for line in lines
        if json.loads(line)["type"] == "verdict_reached"
    ]


async def test_wrong_switch_password_leaves_every_switch_fault_not_checked(
    tmp_path: Path,
) -> None:
    result, events, folder = await walk_broken(tmp_path, "password")
    seen = verdicts(events)
    switch_side = [(s, v) for s, v in seen if v.fault in SWITCH_FAULTS]
    assert {s for s, _ in switch_side} >= {"preflight", "offload", "qos", "persist"}
    for step, v in switch_side:
        assert v.status is Status.UNKNOWN, (step, v)
        assert v.targets == ("crs804",)
        assert v.summary.startswith("not checked on crs804 (login refused")
        assert v.evidence[0].status is Status.UNKNOWN
        assert "invalid user name or password" in v.evidence[0].observed
    # The step that checks offload, as the engine reported it, is not a pass.
    offload = {v.fault: v.status for s, v in seen if s == "offload"}
    assert offload["switch.offload-split-cage"] is Status.UNKNOWN
    assert Status.PASS not in offload.values()
    unreachable = [v for _s, v in seen if v.fault == "preflight.unreachable"]
    assert [v.targets for v in unreachable] == [("crs804",)]
    # The host-side fault the lab injected is still found: the nodes were seen.
    assert any(v.fault == "host.duplicate-ip" and v.status is Status.FAIL for _s, v in seen)
    assert result.healthy_after is False
    # The session log says the same, and replay re-derives `unknown` from the recorded answers.
    logged = [v for v in logged_verdicts(folder) if v["fault"] == "switch.offload-split-cage"]
    assert logged and {v["status"] for v in logged} == {"unknown"}
    loaded = load_session(folder)
    rows = [r for r in replay_session(loaded).rows if r.fault in SWITCH_FAULTS]
    assert rows and all(r.replayed is Status.UNKNOWN and r.agree for r in rows), rows
    # The report lists them as not checked, never among the passes.
    data = build_report(loaded)
    not_checked = {n["fault"]: n for n in data["summary"]["not_checked"]}
    assert set(SWITCH_FAULTS) <= set(not_checked)
    assert not_checked["switch.qos-pfc-stall"]["targets"] == ["crs804"]
    md = render_markdown(loaded)
    section = md.split("## Not checked", 1)[1].split("\n## ", 1)[0]
    assert "`switch.offload-split-cage` | crs804 | not checked on crs804 (login refused" in section
    assert '<h2 id="not-checked">Not checked</h2>' in render_html(loaded)


async def test_one_node_unreachable_never_passes_the_duplicate_ip(tmp_path: Path) -> None:
    result, events, folder = await walk_broken(tmp_path, "spark3")
    dup = [(s, v) for s, v in verdicts(events) if v.fault == "host.duplicate-ip"]
    assert {s for s, _ in dup} >= {"preflight", "addressing", "persist"}
    for step, v in dup:
        # spark2 and spark3 each carry all four rails on one address (seed 000, scope: node).
        # spark3 unseen is never a pass: it is unknown for spark3, with the reason, and only
        # spark2, which was seen, is named as the holder.
        assert v.status is not Status.PASS, (step, v)
        assert "not checked on spark3 (cannot reach 127.0.0.1:" in v.summary
        assert "spark3" not in {
            e.target.split("/")[0] for e in v.evidence if e.status is Status.FAIL
        }
        assert all(e.status is Status.UNKNOWN for e in v.evidence if e.target == "spark3")
        assert v.status is not Status.FAIL or v.targets == ("spark2",), (step, v)
    # spark2's duplicate, which the wizard could see, is found in every step that looks.
    assert {s for s, v in dup if v.status is Status.FAIL} >= {"preflight", "addressing", "persist"}
    # The switch was seen: its faults are found as usual.
    assert any(
        v.fault == "switch.offload-split-cage" and v.status is Status.FAIL
        for _s, v in verdicts(events)
    )
    # Every host check has spark3 as unknown; nothing host-side passed.
    for step, v in verdicts(events):
        if v.fault.startswith("host.") and step != "direct_connect":
            assert v.status is not Status.PASS, (step, v)
    assert result.healthy_after is False
    loaded = load_session(folder)
    summary = build_report(loaded)["summary"]
    faults = {n["fault"] for n in summary["not_checked"]}
    assert "preflight.unreachable" in faults and "host.mtu" in faults
    # spark2's duplicate is a finding, with spark3 named as not checked in its summary.
    dup_final = [n for n in summary["findings"] if n["fault"] == "host.duplicate-ip"]
    assert dup_final and dup_final[0]["status"] == "fail"
    assert "not checked on spark3" in dup_final[0]["summary"]


async def test_nothing_reachable_gives_no_pass_at_all(tmp_path: Path) -> None:
    result, events, folder = await walk_broken(tmp_path, "nothing")
    seen = verdicts(events)
    assert len(seen) >= 20
    assert [v for _s, v in seen if v.status is Status.PASS] == []
    statuses = {v.status for _s, v in seen}
    assert statuses == {Status.UNKNOWN}, statuses
    assert sorted(t for _s, v in seen if v.fault == "preflight.unreachable" for t in v.targets) == [
        "crs804",
        "spark1",
        "spark2",
        "spark3",
        "spark4",
    ]
    assert result.aborted.startswith("no node and no switch answered")
    data = build_report(load_session(folder))
    assert data["summary"]["verdicts"].get("pass", 0) == 0
    assert data["summary"]["verdicts"]["unknown"] == len(data["summary"]["not_checked"])
