"""Snapshots of the screens that matter: the session screen, the gauges during a test, the fix
modal and the drain modal. Fixed data and fixed event timestamps (no clock in the header, log
times from the events), so the SVGs only change when the layout does.
Update with `pytest tests/tui --snapshot-update` after a deliberate change, and look at them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tui_fakes import (
    NODES,
    OFFLOAD_PLAN,
    RAILS,
    SPLIT_CAGE,
    T0,
    export_of,
)

from screens.app import FabwizApp, PendingChoice
from screens.modals import FixConfirmModal, PhysicalActionModal
from wizard.events import (
    Event,
    FixPreviewed,
    MeasurementTaken,
    Note,
    OperatorAnswered,
    ProbeSent,
    RailSampled,
    SessionStarted,
    StepChanged,
    VerdictReached,
)
from wizard.model import Evidence, Measurement, PhysicalAction, Status, Verdict


def _events() -> list[Event]:
    t = T0
    out: list[Event] = [
        SessionStarted(
            session_id="s1",
            fabwiz_version="0.1.0",
            log_version=1,
            command="demo",
            scenario="crs804-three-bugs",
            nodes=NODES,
            switches=("crs804",),
            at=t,
        ),
        StepChanged(step="preflight", phase="probing", at=t + 1),
        VerdictReached(
            step="preflight",
            at=t + 2,
            verdict=Verdict(
                "switch.breakout-autoneg",
                Status.PASS,
                "every leg at 200G, fec91",
                evidence=(
                    Evidence(
                        "crs804", "/interface/ethernet/monitor", "200Gbps fec91 x8", "200Gbps fec91"
                    ),
                ),
            ),
        ),
        StepChanged(step="preflight", phase="done", at=t + 3),
        StepChanged(step="direct_connect", phase="done", at=t + 4),
        VerdictReached(
            step="direct_connect",
            at=t + 5,
            verdict=Verdict("host.cx7-degraded", Status.PASS, "111.9 Gb/s on a direct cable"),
        ),
        StepChanged(step="drain", phase="done", at=t + 6),
        VerdictReached(
            step="drain",
            at=t + 7,
            verdict=Verdict("process.undrained-measurement", Status.PASS, "spark1, spark2 drained"),
        ),
        StepChanged(step="offload", phase="probing", at=t + 8),
        ProbeSent(
            step="offload", target="crs804", command="/interface/bridge/port print", at=t + 9
        ),
        VerdictReached(step="offload", verdict=SPLIT_CAGE, at=t + 10),
        Note(
            level="warn", step="offload", text="switch cpu-load 98% while spark1 sends", at=t + 11
        ),
        StepChanged(step="offload", phase="fix_offered", at=t + 12),
        FixPreviewed(
            step="offload",
            fix_id="offload:switch.offload-split-cage:crs804",
            fault=OFFLOAD_PLAN.fault,
            target="crs804",
            summary=OFFLOAD_PLAN.summary,
            preview=OFFLOAD_PLAN.preview,
            at=t + 13,
        ),
        OperatorAnswered(
            step="offload",
            question="apply fix offload:switch.offload-split-cage:crs804",
            answer="no",
            at=t + 14,
        ),
        StepChanged(step="offload", phase="done", reason="finish", at=t + 15),
    ]
    return out


def _app() -> FabwizApp:
    app = FabwizApp(None, sub_title="demo · crs804-three-bugs")
    app.ports.flush_s = 0.001
    return app


async def _feed(pilot: Any) -> None:
    app: FabwizApp = pilot.app
    await pilot.pause()
    for e in _events():
        app.ports.emit(e)
    app.session.engine_ready = True
    future = asyncio.get_running_loop().create_future()
    answers = {"next": "next", "run": "rerun", "back": "back"}
    app.offer_choice(
        PendingChoice(
            "offload", "Switch offload: done.", ("next", "rerun", "back"), answers, future
        )
    )
    await pilot.pause()
    app.session.update_view({"detail"})
    await pilot.pause()


def test_session_screen(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=(100, 30), run_before=_feed)


def test_session_screen_80x24(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=(80, 24), run_before=_feed)


async def _gauges_during_a_test(pilot: Any) -> None:
    await _feed(pilot)
    app: FabwizApp = pilot.app
    app.session.gauges.stale_s = 1e9  # a slow machine must not see the test "end"
    app.ports.emit(StepChanged(step="offload", phase="measuring", at=T0 + 20))
    for tick in range(12):
        for i, node in enumerate(NODES):
            for j, rail in enumerate(RAILS):
                # spark4's half B is still at the software-forwarding ceiling.
                top = 9.4 if (node == "spark4" and j % 2) else 98.0 - i - j
                value = top * min(1.0, (tick + 1) / 6)
                app.ports.emit(RailSampled(node=node, netdev=rail, gbps=value, at=T0 + 21 + tick))
        app.ports.flush_gauges()
        await pilot.pause()
    m = Measurement("rail", f"spark4/{RAILS[1]}->spark1/{RAILS[1]}", 9.4, "Gb/s")
    app.ports.emit(MeasurementTaken(step="offload", measurement=m, at=T0 + 40))
    await pilot.pause()
    await pilot.press("g")
    await pilot.pause()


def test_gauges_during_a_test(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=(120, 36), run_before=_gauges_during_a_test)


async def _fix_modal(pilot: Any) -> None:
    await _feed(pilot)
    pilot.app.push_screen(
        FixConfirmModal(OFFLOAD_PLAN, export_of("offload", 1), rollback_window_s=300)
    )
    await pilot.pause()


def test_fix_modal(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=(100, 30), run_before=_fix_modal)


async def _drain_modal(pilot: Any) -> None:
    await _feed(pilot)
    action = PhysicalAction(
        kind="ac_drain",
        nodes=("spark1", "spark2", "spark3", "spark4"),
        instructions=(
            "AC-drain spark1, spark2, spark3, spark4: shut down, unplug the power cord, wait at "
            "least 60 s, plug it back and power on. Reason: fix switch.offload-split-cage bounced "
            "links. The wizard waits for each node to come back with a new boot_id."
        ),
    )
    pilot.app.push_screen(PhysicalActionModal(action, can_perform_in_lab=True))
    await pilot.pause()


def test_drain_modal(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=(100, 30), run_before=_drain_modal)


def test_drain_modal_80x24(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=(80, 24), run_before=_drain_modal)


def test_fix_modal_80x24(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=(80, 24), run_before=_fix_modal)
