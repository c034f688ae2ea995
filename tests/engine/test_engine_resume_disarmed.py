"""A verified fix's rollback never runs on resume: the in-process lab's world is saved before the
log records a change (as a switch holds a change before fabwiz writes it down), and an entry the
log records as disarmed yet still found on the switch is removed, not run. The dead-man window
can be set (`FABWIZ_ROLLBACK_WINDOW_S`), with a clear message for a bad value."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from flows.bisection import FLOW
from screens.compose import _rollback_window, open_wizard
from screens.terminal import TerminalOperator
from wizard.errors import FabwizError
from wizard.events import Event, Note, RollbackArmed, RollbackDisarmed
from wizard.lab import Lab
from wizard.lab.routeros.menus_system import SchedulerMenu
from wizard.session import load_session

pytestmark = pytest.mark.lab

SCENARIO = "fault-switch-offload-split-cage"
STEPS = ["preflight", "offload"]
WINDOW_PAST = 3000.0 + 60.0


class Killed(BaseException):
    """fabwiz dying right after the disarm was recorded."""


def _operator() -> TerminalOperator:
    return TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False)


async def test_a_disarmed_entry_found_again_on_resume_is_removed_not_run(tmp_path: Path) -> None:
    async with Lab(SCENARIO, time_scale=100.0) as lab:
        sw: Any = lab.world.switches["crs804"]
        armed: list[RollbackArmed] = []
        in_lab_state: list[list[str]] = []

        def die_after_disarm(event: Event) -> None:
            if isinstance(event, RollbackArmed):
                armed.append(event)
            if isinstance(event, RollbackDisarmed):
                raise Killed

        def lab_state_at_disarm(event: Event) -> None:
            if isinstance(event, RollbackDisarmed):
                state = json.loads((tmp_path / "session" / "lab-state.json").read_text())
                sched = state["switches"][0]["state"]["tables"]["scheduler"]
                in_lab_state.append([r["name"] for r in sched])

        wiring = await open_wizard(
            operator=_operator(),
            sinks=[lab_state_at_disarm, die_after_disarm],
            lab_object=lab,
            session_dir=tmp_path / "session",
            fsync=False,
        )
        wiring.engine.flow = [s for s in FLOW if s.id in STEPS]
        try:
            with pytest.raises(Killed):
                await wiring.engine.run()
        finally:
            await wiring.close()
        assert armed and sw.hw_offloaded_bridge() == "roce-br"
        # the saved world already had the entry removed when the log recorded the disarm
        assert in_lab_state and armed[0].name not in in_lab_state[0]
        # the switch shows the entry again (restored from an older copy, say): resume must not
        # let it undo the verified fix
        SchedulerMenu().add(
            sw,
            {
                "name": armed[0].name,
                "start-time": "startup",
                "interval": "0s",
                "on-event": armed[0].script,
                "comment": "fabwiz dead-man rollback",
            },
        )
        events: list[Event] = []
        wiring = await open_wizard(
            operator=_operator(),
            sinks=[events.append],
            lab_object=lab,
            resume=load_session(tmp_path / "session"),
            command="resume",
            fsync=False,
        )
        wiring.engine.flow = [s for s in FLOW if s.id in STEPS]
        try:
            result = await wiring.engine.run()
        finally:
            await wiring.close()
        said = [e.text for e in events if isinstance(e, Note) and armed[0].name in e.text]
        assert any("was disarmed before the session stopped" in t for t in said), said
        assert not [r for r in sw.tables["scheduler"] if r["name"] == armed[0].name]
        lab.world.set_clock(lab.world.now() + WINDOW_PAST)
        sw.tick()
        assert sw.hw_offloaded_bridge() == "roce-br"  # the fix stays
        states = [f["state"] for f in result.to_json()["fixes"]]
        assert "undone-by-rollback" not in states, states


def test_the_rollback_window_can_be_set_and_a_bad_value_is_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class FastLab:
        time_scale = 100.0

    assert _rollback_window(None) == 300.0
    assert _rollback_window(FastLab()) == 3000.0  # 30 wall seconds at time scale 100
    monkeypatch.setenv("FABWIZ_ROLLBACK_WINDOW_S", "600")
    assert _rollback_window(None) == 600.0
    assert _rollback_window(FastLab()) == 60000.0
    for bad in ("5", "ten", "-1", "1e9"):
        monkeypatch.setenv("FABWIZ_ROLLBACK_WINDOW_S", bad)
        with pytest.raises(FabwizError) as err:
            _rollback_window(None)
        assert f"FABWIZ_ROLLBACK_WINDOW_S={bad!r}" in err.value.message
        assert "between 30 and 86400" in err.value.message
