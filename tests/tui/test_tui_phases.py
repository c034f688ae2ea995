"""The phase a step shows comes from the engine's own lifecycle (wizard.engine.machine): a fix declined
after its export leaves "exporting" for the verdict, and the measuring that follows shows as
measuring, never as a stale "exporting"."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tui_fakes import OFFLOAD_PLAN, RAILS, SPLIT_CAGE, export_of

from screens.app import FabwizApp
from screens.modals import FixConfirmModal
from wizard.engine.machine import StepLifecycle
from wizard.events import (
    Event,
    ExportTaken,
    FixPreviewed,
    MeasurementTaken,
    StepChanged,
    VerdictReached,
)
from wizard.model import Measurement

SIZE = (120, 40)


@dataclass
class LifecycleEngine:
    """Offers the offload fix through the real step lifecycle, firing a trigger only when the
    lifecycle allows it (as the engine's `_fire` does), then measures after the answer."""

    operator: Any
    emit_: Any
    answers: list[object] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)

    def emit(self, event: Event) -> None:
        if isinstance(event, StepChanged):
            self.phases.append(event.phase)
        self.emit_(event)

    async def run(self) -> str:
        step = "offload"
        lc = StepLifecycle(
            lambda _a, b, t: self.emit(StepChanged(step=step, phase=b.value, reason=t))
        )

        def fire(trigger: str) -> None:
            if lc.can(trigger):
                lc.fire(trigger)

        fire("probe")
        fire("judged")
        self.emit(VerdictReached(step=step, verdict=SPLIT_CAGE))
        fire("offer_fix")
        self.emit(
            FixPreviewed(
                step=step,
                fix_id=f"{step}:{OFFLOAD_PLAN.fault}:crs804",
                fault=OFFLOAD_PLAN.fault,
                target="crs804",
                summary=OFFLOAD_PLAN.summary,
                preview=OFFLOAD_PLAN.preview,
            )
        )
        fire("export")
        export = export_of(step, 1)
        self.emit(
            ExportTaken(
                step=step,
                switch="crs804",
                file=export.file,
                contents=export.contents,
                sha256=export.sha256,
            )
        )
        ok = await self.operator.confirm_fix(OFFLOAD_PLAN, export)
        self.answers.append(ok)
        if not ok:
            fire("declined")
        fire("measure")  # the engine measures again after a declined fix
        m = Measurement("rail", f"spark1/{RAILS[0]}->spark2/{RAILS[0]}", 9.4, "Gb/s")
        self.emit(MeasurementTaken(step=step, measurement=m))
        answer = await self.operator.choose(step, "Offload: measured.", ["next", "rerun"])
        self.answers.append(answer)
        return "stopped"

    async def request(self, what: str) -> None:  # the app's requests (cancel_wait): none here
        self.answers.append(what)


async def test_a_declined_fix_leaves_exporting_and_the_next_phase_shows() -> None:
    holder: dict[str, LifecycleEngine] = {}

    async def make(ports: Any, stack: Any) -> LifecycleEngine:
        holder["engine"] = LifecycleEngine(operator=ports, emit_=ports.emit)
        return holder["engine"]

    app = FabwizApp(make)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(250):
            if isinstance(app.screen, FixConfirmModal):
                break
            await pilot.pause(0.02)
        assert isinstance(app.screen, FixConfirmModal)
        for _ in range(50):
            if app.view.steps["offload"].phase == "exporting":
                break
            await pilot.pause(0.02)
        assert app.view.steps["offload"].phase == "exporting"  # the export is on screen
        await pilot.press("c")  # decline
        for _ in range(250):
            if app.pending_choice is not None:
                break
            await pilot.pause(0.02)
        engine = holder["engine"]
        assert engine.answers[0] is False
        assert engine.phases[-3:] == ["exporting", "verdict", "measuring"]
        assert app.view.steps["offload"].phase == "measuring"  # not a stale "exporting"
        await pilot.press("n")
        await pilot.pause(0.1)
