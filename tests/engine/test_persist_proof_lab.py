"""Persist and prove: the last step reboots one node and runs everything again; a fix that only
changed the running state comes back as its fault."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard.engine import RunResult
from wizard.events import BisectionConcluded, Event, PhysicalActionDone
from wizard.lab.lab import Lab

pytestmark = pytest.mark.lab

PFC_UNIT = "fabwiz-pfc-off.service"


class ForgetsTheUnit(TerminalOperator):
    """Before the reboot, the oneshot unit that keeps PFC off is lost (a fix that never got
    persisted): the reboot must bring the fault back."""

    def __init__(self, lab: Lab) -> None:
        super().__init__(Console(file=io.StringIO()), yes=True, interactive=False)
        self.lab = lab

    async def choose(self, step: str, question: str, options: list[str]) -> str:
        if step == "persist" and question.startswith("Reboot "):
            for node in self.lab.world.nodes.values():
                node.enabled_units.discard(PFC_UNIT)
                node.files.pop(f"/etc/systemd/system/{PFC_UNIT}", None)
        return await super().choose(step, question, options)


async def _walk(
    tmp_path: Path, operator: TerminalOperator | None = None, lab: Lab | None = None
) -> tuple[RunResult, list[Event]]:
    lab = lab or Lab("fault-host-pfc-enabled", time_scale=200.0)
    await lab.start()
    events: list[Event] = []
    wiring = await open_wizard(
        operator=operator
        or TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False),
        sinks=[events.append],
        lab=None,
        lab_object=lab,
        session_dir=tmp_path / "session",
        time_scale=200.0,
        fsync=False,
    )
    try:
        result = await wiring.engine.run()
    finally:
        await wiring.close()
        await lab.stop()
    return result, events


async def test_a_reboot_brings_everything_back_with_zero_manual_steps(tmp_path: Path) -> None:
    result, events = await _walk(tmp_path)
    proof = [e for e in events if isinstance(e, BisectionConcluded) and e.step == "persist"]
    assert [p.conclusion for p in proof] == ["persisted"]
    assert proof[0].nodes == ("spark1",)
    assert proof[0].switched_gbps is not None and proof[0].switched_gbps >= 100.0
    assert "spark1 rebooted and came back by itself" in proof[0].sentence
    assert "zero manual steps" in proof[0].sentence
    rebooted = [e for e in events if isinstance(e, PhysicalActionDone) and e.kind == "reboot"]
    assert rebooted and rebooted[-1].nodes == ("spark1",) and rebooted[-1].performed_by == "lab"
    assert result.healthy_after is True


async def test_a_fix_that_was_not_persisted_comes_back_after_the_reboot(tmp_path: Path) -> None:
    lab = Lab("fault-host-pfc-enabled", time_scale=200.0)
    result, events = await _walk(tmp_path, ForgetsTheUnit(lab), lab)
    proof = [e for e in events if isinstance(e, BisectionConcluded) and e.step == "persist"]
    assert [p.conclusion for p in proof] == ["not-persisted"]
    assert proof[0].sentence.startswith(
        "after a reboot of spark1 the fabric did not come back by itself: host.pfc-enabled"
    )
    assert result.healthy_after is False
