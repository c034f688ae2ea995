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

from screens.app import FabwizApp
from screens.modals import FixConfirmModal, PhysicalActionModal
from screens.ports import PendingChoice
from wizard.events import (
    Event,
    FixApplied,
    FixPreviewed,
    FixVerified,
    MeasurementTaken,
    Note,
    OperatorAnswered,
    ProbeSent,
    RailSampled,
    SessionEnded,
    SessionStarted,
    StepChanged,
    VerdictReached,
)
from wizard.model import Evidence, FixPlan, Measurement, PhysicalAction, Status, Verdict


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


# --- small and large terminals: every verdict reachable, long previews, the end ---------------

SIZES = {"80x24": (80, 24), "120x40": (120, 40)}
LONG_PLAN = FixPlan(
    fault="switch.offload-split-cage",
    target="crs804",
    summary="remove the unused QSFP56-DD sub-ports from the other bridge",
    preview="\n".join(
        f"/interface/bridge/port remove [find interface=qsfp56-dd-{cage}-{leg}]"
        for cage in (1, 2, 3, 4)
        for leg in (2, 3, 4, 6, 7, 8)
    ),
    switch_changes=OFFLOAD_PLAN.switch_changes,
    bounces_links=True,
)


async def _several_verdicts(pilot: Any) -> None:
    await _feed(pilot)
    app: FabwizApp = pilot.app
    extra = [
        Verdict("switch.offload-second-bridge", Status.PASS, "all fabric ports sit in one bridge"),
        Verdict("switch.offload-disabled", Status.PASS, "every fabric bridge port has hw=yes"),
        Verdict(
            "switch.mtu",
            Status.UNKNOWN,
            "not checked on crs804 (login refused for user 'fabwiz')",
            targets=("crs804",),
        ),
        Verdict("host.pfc-enabled", Status.WARN, "PFC on priority 3 of spark2/enp1s0f0np0"),
    ]
    for i, v in enumerate(extra):
        app.ports.emit(VerdictReached(step="offload", verdict=v, at=T0 + 16 + i))
    await pilot.pause()
    app.session.update_view({"detail", "steps"})
    await pilot.pause()


def test_step_with_several_verdicts_80x24(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=SIZES["80x24"], run_before=_several_verdicts)


def test_step_with_several_verdicts_120x40(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=SIZES["120x40"], run_before=_several_verdicts)


async def _long_fix_modal(pilot: Any) -> None:
    await _feed(pilot)
    pilot.app.push_screen(
        FixConfirmModal(LONG_PLAN, export_of("offload", 1), rollback_window_s=300)
    )
    await pilot.pause()
    await pilot.pause()


def test_fix_modal_long_preview_80x24(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=SIZES["80x24"], run_before=_long_fix_modal)


def test_fix_modal_long_preview_120x40(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=SIZES["120x40"], run_before=_long_fix_modal)


def test_drain_modal_120x40(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=SIZES["120x40"], run_before=_drain_modal)


async def _end_of_session(pilot: Any) -> None:
    await _feed(pilot)
    app: FabwizApp = pilot.app
    app.offer_choice(None)
    later = [
        FixApplied(
            step="offload",
            fix_id="offload:switch.offload-split-cage:crs804",
            fault="switch.offload-split-cage",
            target="crs804",
            export="fabwiz-s1-offload-1.rsc",
            at=T0 + 30,
        ),
        FixVerified(
            step="offload",
            fix_id="offload:switch.offload-split-cage:crs804",
            fault="switch.offload-split-cage",
            ok=True,
            at=T0 + 31,
        ),
        VerdictReached(
            step="offload",
            verdict=Verdict("switch.offload-split-cage", Status.PASS, "no cage is split"),
            at=T0 + 32,
        ),
        VerdictReached(
            step="qos",
            verdict=Verdict(
                "switch.qos-pfc-stall",
                Status.UNKNOWN,
                "not checked on crs804 (login refused for user 'fabwiz')",
                targets=("crs804",),
            ),
            at=T0 + 33,
        ),
        StepChanged(step="addressing", phase="skipped", at=T0 + 34),
        SessionEnded(healthy=False, reason="still open: switch.qos-pfc-stall", at=T0 + 40),
    ]
    for i, node in enumerate(NODES):
        for j, rail in enumerate(RAILS[:2]):
            m = Measurement("rail", f"{node}/{rail}->x", 9.4 - i * 0.1 - j * 0.01, "Gb/s")
            later.insert(0, MeasurementTaken(step="direct_connect", measurement=m, at=T0 + 20))
            after = Measurement("rail", f"{node}/{rail}->x", 109.0 + i * 0.2 + j * 0.1, "Gb/s")
            later.insert(-1, MeasurementTaken(step="persist", measurement=after, at=T0 + 39))
    for e in later:
        app.ports.emit(e)
    await pilot.pause()
    await pilot.pause()


def test_end_of_session_80x24(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=SIZES["80x24"], run_before=_end_of_session)


def test_end_of_session_120x40(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=SIZES["120x40"], run_before=_end_of_session)
