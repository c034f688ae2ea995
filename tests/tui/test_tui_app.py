"""Pilot tests of the TUI against a scripted engine: state, not pixels.

The scripted engine (tui_fakes.ThreeBugEngine) emits real events and awaits the real Operator
calls, so these tests cover the bridge (one worker, one message type, coalesced gauges), the
step list, the evidence table, the modals and quitting.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import Any

import pytest
from textual.widgets import Button, Log
from tui_fakes import (
    DUP_PLAN,
    NODES,
    OFFLOAD_PLAN,
    RAILS,
    SPLIT_CAGE,
    T0,
    ThreeBugEngine,
    drawn_as,
    export_of,
    factory_for,
)

from screens.app import FabwizApp
from screens.modals import (
    ChoiceModal,
    ErrorModal,
    FixConfirmModal,
    PhysicalActionModal,
    QuitModal,
    RawOutputModal,
    checklist_items,
)
from screens.ports import match_intents
from screens.session_screen import SessionScreen
from screens.widgets.detail import ActionBar, EvidenceTable
from screens.widgets.gauges import HISTORY, RailGauges, rail_tag, sparkline
from screens.widgets.steps import StepList
from wizard.events import (
    FixPreviewed,
    MeasurementTaken,
    OperatorAnswered,
    ProbeAnswered,
    RailSampled,
    SessionEnded,
    StepChanged,
    VerdictReached,
)
from wizard.model import Measurement, PhysicalAction, ProbeResult, Status

SIZE = (120, 40)


async def until(pilot: Any, predicate: Any, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "timed out waiting"
        await pilot.pause(0.02)


def text_of(widget: Any) -> str:
    """The plain text a Static shows."""
    content = widget.content
    return content.plain if hasattr(content, "plain") else str(content)


def statuses(app: FabwizApp) -> dict[str, str]:
    return {row.step_id: row.status for row in app.session.query_one(StepList).rows()}


async def test_first_screen_shows_the_flow_before_any_engine() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)
        assert list(statuses(app)) == [
            "preflight",
            "direct_connect",
            "drain",
            "offload",
            "qos",
            "addressing",
            "halves",
            "persist",
        ]
        assert set(statuses(app).values()) == {"pending"}
        explain = text_of(app.screen.query_one("#explain-text"))
        assert "What:" in explain and "ibdev2netdev" in explain
        # Without an engine, only nothing is actionable.
        bar = app.screen.query_one(ActionBar)
        assert not any(bar.enabled(i) for i in ("run", "apply", "skip", "back", "next"))
        # 80x24: one bottom panel at a time, the log first.
        assert app.screen.has_class("-narrow") and app.screen.has_class("-short")
        assert app.screen.query_one("#log").display and not app.screen.query_one("#gauges").display
        await pilot.press("g")
        assert app.screen.query_one("#gauges").display and not app.screen.query_one("#log").display


async def test_scripted_walk_updates_steps_evidence_gauges_and_answers() -> None:
    holder: dict[str, Any] = {}
    app = FabwizApp(factory_for(holder))
    app.ports.flush_s = 0.005  # the scripted test traffic lasts ~60 ms
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.pending_choice is not None)
        engine: ThreeBugEngine = holder["engine"]
        assert app.pending_choice.step == "preflight"
        assert statuses(app)["preflight"] == "pass"
        bar = app.screen.query_one(ActionBar)
        assert bar.offered("next") and bar.offered("run")
        assert not bar.offered("apply")
        await pilot.press("n")  # preflight -> direct connect
        await until(
            pilot, lambda: app.pending_choice and app.pending_choice.step == "direct_connect"
        )
        # Gauges: 4 nodes x 2 rails sampled; 0 Gb/s after the test, measured rails coloured.
        gauges = app.session.gauges
        assert len(gauges.gauges) == 8
        g = gauges.gauge("spark1", "enp1s0f0np0")
        assert g is not None and g.half == "A" and g.port == 0
        assert g.measured is not None and g.measured[0] == pytest.approx(9.4)
        assert g.verdict == "fail" and drawn_as(gauges, g, "fail")
        assert 0 < max(g.history) <= 9.4 and g.value == 0.0 and len(g.history) >= 2
        await pilot.press("n")
        # The drain: the modal offers the lab's hands; answering "perform" reaches the engine.
        await until(pilot, lambda: isinstance(app.screen, PhysicalActionModal))
        modal = app.screen
        assert modal.action.kind == "ac_drain" and modal.action.nodes == ("spark1", "spark2")
        assert modal.query_one("#perform", Button)
        assert checklist_items(modal.action.instructions)[:2] == [
            "Shut down",
            "Unplug the power cord",
        ]
        await pilot.press("p")
        await until(pilot, lambda: app.pending_choice and app.pending_choice.step == "drain")
        assert ("physical:drain", "perform") in engine.answers
        assert not isinstance(app.screen, PhysicalActionModal)
        await pilot.press("n")
        # Offload: the fix modal with the verified export, then Apply.
        await until(pilot, lambda: isinstance(app.screen, FixConfirmModal))
        fix = app.screen
        assert fix.plan.fault == "switch.offload-split-cage"
        assert fix.export is not None and fix.export.file == "fabwiz-s1-offload-1.rsc"
        assert not fix.query_one("#apply", Button).disabled
        assert "300 s" in text_of(fix.query_one("#rollback"))
        # Under the modal, the evidence table shows the failing rows first.
        table = app.session.query_one(EvidenceTable)
        assert [e.observed for _, e in table.rows_shown][:1] == [SPLIT_CAGE.evidence[0].observed]
        assert table.row_count == 3
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, PhysicalActionModal))
        assert app.screen.action.nodes == NODES
        await pilot.press("d")  # done by hand this time
        await until(pilot, lambda: app.pending_choice and app.pending_choice.step == "offload")
        assert ("confirm:switch.offload-split-cage", True) in engine.answers
        assert ("physical:offload", "done") in engine.answers
        assert statuses(app)["offload"] == "fixed"
        assert app.view.steps["offload"].fixes[
            "offload:switch.offload-split-cage:crs804"
        ].state == ("verified")
        # Back is an answer too: the engine hears "back".
        await pilot.press("b")
        assert engine.answers[-1] == ("choose:offload", "back")


async def test_walk_to_the_end_leaves_nothing_unapplied_and_quits_healthy() -> None:
    holder: dict[str, Any] = {}
    app = FabwizApp(factory_for(holder))
    async with app.run_test(size=SIZE) as pilot:
        while app.view.ended is None:
            await pilot.pause(0.02)
            top = app.screen
            if isinstance(top, FixConfirmModal):
                await pilot.press("a")
            elif isinstance(top, PhysicalActionModal) and top.state == "ask":
                await pilot.press("p")
            elif app.pending_choice and not app.pending_choice.future.done():
                await pilot.press("n")
        assert app.view.ended.healthy
        assert set(statuses(app).values()) <= {"pass", "fixed"}
        assert [s for s, v in statuses(app).items() if v == "fixed"] == [
            "offload",
            "qos",
            "addressing",
        ]
        assert app.view.unapplied_work() == []
        ending = app.session.prompt.question
        assert "Healthy." in ending and "3 fix(es) verified, 3 switch export(s) kept" in ending
        log = app.session.query_one("#log", Log)
        assert any("session ended: healthy" in line for line in log.lines)
        await pilot.press("q")
        await pilot.pause(0.2)
    assert app.return_value == 0
    assert holder.get("closed") is True  # the factory's exit stack ran


async def test_quit_asks_when_a_fix_is_offered_but_not_applied() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=SIZE) as pilot:
        app.ports.emit(StepChanged(step="offload", phase="verdict", at=T0))
        app.ports.emit(VerdictReached(step="offload", verdict=SPLIT_CAGE, at=T0))
        app.ports.emit(
            FixPreviewed(
                step="offload",
                fix_id="f1",
                fault=OFFLOAD_PLAN.fault,
                target="crs804",
                summary=OFFLOAD_PLAN.summary,
                preview=OFFLOAD_PLAN.preview,
                at=T0,
            )
        )
        await pilot.pause()
        assert statuses(app)["offload"] == "fail"
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, QuitModal))
        assert "fix offered, not applied" in app.screen.unapplied[0]
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, QuitModal))
        await pilot.press("y")
        await pilot.pause(0.2)
    assert app.return_value == 1


async def test_fix_modal_keeps_apply_disabled_until_the_export_is_verified() -> None:
    app = FabwizApp(None)
    results: list[bool | None] = []
    async with app.run_test(size=SIZE) as pilot:
        unverified = export_of("offload", 1, verified=False)
        app.push_screen(FixConfirmModal(OFFLOAD_PLAN, unverified), callback=results.append)
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, FixConfirmModal)
        assert modal.query_one("#apply", Button).disabled
        assert modal.query_one("#export").has_class("-fail")
        assert "export not on the switch yet" in text_of(modal.query_one("#export"))
        await pilot.press("a")
        await pilot.pause()
        assert app.screen is modal and results == []  # "a" does nothing while unverified
        await pilot.press("c")  # decline
        await pilot.pause()
        assert results == [False] and modal.answer.result() is False
        # No export at all for a switch change: disabled too. Esc only hides: no answer.
        app.push_screen(FixConfirmModal(OFFLOAD_PLAN, None), callback=results.append)
        await pilot.pause()
        hidden = app.screen
        assert isinstance(hidden, FixConfirmModal)
        assert hidden.query_one("#apply", Button).disabled
        await pilot.press("escape")
        await pilot.pause()
        assert results == [False, None] and not hidden.answer.done()
        # Verified: enabled, and "a" applies.
        app.push_screen(
            FixConfirmModal(OFFLOAD_PLAN, export_of("offload", 1)), callback=results.append
        )
        await pilot.pause()
        assert not app.screen.query_one("#apply", Button).disabled
        await pilot.press("a")
        await pilot.pause()
        # A host-only fix needs no export.
        app.push_screen(FixConfirmModal(DUP_PLAN, None), callback=results.append)
        await pilot.pause()
        assert not app.screen.query_one("#apply", Button).disabled
        assert "no export needed" in text_of(app.screen.query_one("#export"))
        await pilot.click("#apply")
        await pilot.pause()
    assert results == [False, None, True, True]


async def test_rail_samples_are_coalesced_bounded_and_coloured() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=SIZE) as pilot:
        ports = app.ports
        nodes = [f"spark{i}" for i in range(1, 33)]
        posted: list[Any] = []
        original = app.post_message

        def spy(message: Any) -> bool:
            posted.append(message)
            return original(message)

        app.post_message = spy  # type: ignore[method-assign]
        for tick in range(HISTORY + 8):
            for n in nodes:
                for r in RAILS:
                    gbps = 109.0 if n != "spark7" else 12.5
                    ports.emit(RailSampled(node=n, netdev=r, gbps=gbps + tick * 0.01, at=T0 + tick))
            ports.flush_gauges()
            await pilot.pause()
        gauges = app.session.gauges
        assert len(gauges.gauges) == 32 * 4
        fast = gauges.gauge("spark3", "enP2p1s0f1np1")
        slow = gauges.gauge("spark7", "enp1s0f0np0")
        assert fast is not None and slow is not None
        assert (fast.half, fast.port) == ("B", 1)
        assert fast.value == pytest.approx(109.0 + (HISTORY + 7) * 0.01)
        assert len(fast.history) == HISTORY  # bounded deque
        # Live traffic is shown, not judged; a measurement judges.
        assert drawn_as(gauges, fast, "live") and drawn_as(gauges, slow, "live")
        assert "128 live" in text_of(gauges.query_one("#gauge-summary"))
        m = Measurement("rail", "spark7/enp1s0f0np0->spark8/enp1s0f0np0", 12.5, "Gb/s")
        ports.emit(MeasurementTaken(step="offload", measurement=m, at=T0))
        await pilot.pause()
        assert (
            drawn_as(gauges, slow, "fail")
            and gauges.gauge("spark8", "enp1s0f0np0").verdict == "fail"
        )
        assert "tested ✔0 ▲0 ✘2" in text_of(gauges.query_one("#gauge-summary"))
        # When the samples stop, the rails drop back to rest (the measured colour stays).
        import time

        gauges.expire(now=time.monotonic() + 60)
        assert fast.value == 0.0 and fast.verdict == "idle" and slow.verdict == "fail"
        assert "0 live" in text_of(gauges.query_one("#gauge-summary"))
        # One snapshot message per flush, not one per sample.
        snapshots = [m for m in posted if type(m).__name__ == "RailsSampled"]
        assert len(snapshots) == HISTORY + 8
        # Rows are in node order (spark2 before spark10) and the panel scrolls.
        names = [g.node for g in gauges.rows.rows]
        assert names.index("spark2") < names.index("spark10")
        rows = gauges.query_one("#gauge-rows")
        assert rows.max_scroll_y > 0


async def test_measurement_colours_both_ends_and_an_unknown_rail_appears() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=SIZE) as pilot:
        m = Measurement("rail", "spark1/enp1s0f0np0->spark2/enp1s0f0np0", 109.1, "Gb/s")
        app.ports.emit(MeasurementTaken(step="offload", measurement=m, at=T0))
        await pilot.pause()
        gauges: RailGauges = app.session.gauges
        for node in ("spark1", "spark2"):
            g = gauges.gauge(node, "enp1s0f0np0")
            assert g is not None and g.verdict == "pass" and drawn_as(gauges, g, "pass")
        stale = Measurement(
            "rail",
            "spark3/enp1s0f0np0->spark4/enp1s0f0np0",
            9.5,
            "Gb/s",
            valid=False,
            reason="not evidence: spark3 undrained",
        )
        app.ports.emit(MeasurementTaken(step="offload", measurement=stale, at=T0))
        await pilot.pause()
        assert gauges.gauge("spark3", "enp1s0f0np0").verdict == "warn"


async def test_raw_output_shows_the_probe_behind_the_selected_row() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=SIZE) as pilot:
        res = ProbeResult(
            target="crs804",
            kind="api",
            command="/interface/bridge/port print",
            rows=({"interface": "qsfp56-dd-2-5", "bridge": "bridge2"},),
        )
        app.ports.emit(StepChanged(step="offload", phase="verdict", at=T0))
        app.ports.emit(ProbeAnswered(step="offload", probe="bridge_ports", result=res, at=T0))
        app.ports.emit(VerdictReached(step="offload", verdict=SPLIT_CAGE, at=T0))
        await pilot.pause()
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, RawOutputModal))
        assert "interface=qsfp56-dd-2-5 bridge=bridge2" in app.screen.text
        assert "switch.offload-split-cage" in app.screen.title_text
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)


class _AskingEngine:
    """Asks a free question, reports an error, then crashes: the other Operator paths."""

    def __init__(self, ports: Any) -> None:
        self.ports = ports
        self.got: list[str] = []

    async def run(self) -> None:
        self.got.append(await self.ports.choose("qos", "Which profile?", ["lossy", "lossless"]))
        await self.ports.error("Switch unreachable", "crs804: timeout", "check the cable")
        self.got.append("after-error")
        raise RuntimeError("boom")


async def test_free_choice_error_modal_and_engine_crash() -> None:
    holder: dict[str, Any] = {}

    async def make(ports: Any, stack: AsyncExitStack) -> _AskingEngine:
        holder["engine"] = _AskingEngine(ports)
        return holder["engine"]

    assert match_intents(["lossy", "lossless"]) is None
    assert match_intents(["next", "rerun", "back"]) == {
        "next": "next",
        "run": "rerun",
        "back": "back",
    }
    app = FabwizApp(make)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ChoiceModal))
        await pilot.press("2")
        await until(pilot, lambda: isinstance(app.screen, ErrorModal))
        assert app.screen.hint == "check the cable"
        assert holder["engine"].got == ["lossless"]
        await pilot.press("enter")
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, ErrorModal) and app.screen.title_text == "The engine stopped"
            ),
        )
        assert "RuntimeError: boom" in app.screen.message
        assert holder["engine"].got == ["lossless", "after-error"]


async def test_physical_modal_waits_for_the_engine_and_hides_perform_without_hands() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=SIZE) as pilot:
        action = PhysicalAction("reboot", ("spark3",), "Reboot spark3 from its power button.")

        async def ask() -> str:
            return await app.ports.physical_action(action, False)

        task = asyncio.ensure_future(ask())
        await until(pilot, lambda: isinstance(app.screen, PhysicalActionModal))
        modal = app.screen
        assert not modal.query("#perform")
        await pilot.press("p")  # not offered: ignored
        assert modal.state == "ask"
        await pilot.press("d")
        assert await asyncio.wait_for(task, 2) == "done"
        assert modal.state == "waiting" and app.screen is modal
        assert "Waiting for spark3 to come back" in text_of(modal.query_one("#waiting"))
        from wizard.events import NodeDrained, PhysicalActionDone

        app.ports.emit(NodeDrained(node="spark3", boot_id="b2", at=T0))
        await pilot.pause()
        assert modal.back == {"spark3"}
        app.ports.emit(
            PhysicalActionDone(
                step="halves", kind="reboot", nodes=("spark3",), performed_by="operator", at=T0
            )
        )
        await until(pilot, lambda: isinstance(app.screen, SessionScreen))
        assert app.physical_modal is None


async def test_command_palette_offers_the_step_actions() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for t in (
            "Run step",
            "Show raw output",
            "Apply fix",
            "Skip step",
            "Back",
            "Next step",
            "Show gauges",
            "Show log",
        ):
            assert t in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert type(app.screen).__name__ == "CommandPalette"


def test_rail_tags_and_sparkline() -> None:
    assert rail_tag("enp1s0f0np0") == ("A", 0)
    assert rail_tag("enP2p1s0f1np1") == ("B", 1)
    assert sparkline([0, 54.6, 109.2], 109.2, 3) == " ▄█"
    assert len(sparkline(range(50), 100, 12)) == 12


def test_step_list_numbering_follows_the_flow() -> None:
    app = FabwizApp(None)
    assert next(iter(app.view.steps)) == "preflight"
    assert isinstance(StepList, type)


async def test_first_screen_paints_before_a_slow_start() -> None:
    """The factory (the lab, the transports) runs in the worker after the first paint."""
    entered = asyncio.Event()
    release = asyncio.Event()  # never set: a lab that takes forever to start
    started: list[bool] = []

    async def slow(ports: Any, stack: AsyncExitStack) -> Any:
        entered.set()
        await asyncio.wait_for(release.wait(), 30)
        started.append(True)
        raise AssertionError("never reached")

    app = FabwizApp(slow)
    async with app.run_test(size=(80, 24)) as pilot:
        # The screen is up and painted while the factory is still starting (not after it).
        assert app.screen is app.session and not started
        await pilot.pause()
        labels = [row.label.plain for row in app.session.query_one(StepList).rows()]
        assert len(labels) == 8 and all(label.strip() for label in labels)
        await until(pilot, entered.is_set)
        assert app.engine_worker is not None and app.engine_worker.name == "engine"
        assert app.sub_title == "starting…"
        assert len(app.workers) == 1 and not app.engine_worker._thread_worker  # async
        assert not app.engine_worker.is_finished and not started


def test_raw_output_lookup_prefers_the_evidence_probe_then_the_measurement() -> None:
    from screens.widgets.view_model import StepInfo, StepView, raw_for
    from wizard.model import Evidence

    view = StepView(StepInfo("qos", "QoS", "", "", ""))
    view.probes.append(
        ProbeResult(
            target="spark1",
            kind="ssh",
            command="sudo -n mlnx_qos -i enp1s0f0np0",
            stdout="PFC configuration:\n\tenabled 0 0 0 1 0 0 0 0",
            exit_status=0,
        )
    )
    view.probes.append(
        ProbeResult(
            target="spark2", kind="ssh", command="ip -j addr show", stdout="[]", exit_status=0
        )
    )
    m = Measurement(
        "rail",
        "spark1/enp1s0f0np0->spark2/enp1s0f0np0",
        0.0,
        "Gb/s",
        reason="transport retry counter exceeded",
        extra={
            "command": "ib_write_bw -d rocep1s0f0 -x 3 -q 1 10.9.1.2",
            "raw": "Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81",
            "server_raw": "waiting for client",
        },
    )
    view.measurements.append(m)
    pfc = Evidence(
        "spark1/enp1s0f0np0", "mlnx_qos -i enp1s0f0np0", "pfc 0,0,0,1,0,0,0,0", "all 0", Status.FAIL
    )
    assert "enabled 0 0 0 1" in raw_for(view, pfc)
    assert "spark2" not in raw_for(view, pfc)
    bw = Evidence(m.target, "ib_write_bw", "0.00 Gb/s", ">= 100 Gb/s", Status.FAIL)
    text = raw_for(view, bw)
    assert "Failed status 12" in text and "waiting for client" in text
    own = Evidence("crs804", "/log print", "x", "y", Status.UNKNOWN, raw="unparsed text")
    assert raw_for(view, own) == "unparsed text"
    assert raw_for(view, None).count("# spark") == 2


async def test_both_halves_result_colours_each_half_against_the_concurrent_rate() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=SIZE) as pilot:
        m = Measurement(
            "pair",
            "spark2",
            196.1,
            "Gb/s",
            extra={
                "nodes": ("spark2", "spark3"),
                "halves": {"enp1s0f0np0": 98.05, "enP2p1s0f0np0": 61.0},
            },
        )
        app.ports.emit(MeasurementTaken(step="halves", measurement=m, at=T0))
        await pilot.pause()
        gauges = app.session.gauges
        a = gauges.gauge("spark2", "enp1s0f0np0")
        b = gauges.gauge("spark2", "enP2p1s0f0np0")
        assert a is not None and b is not None
        assert a.measured == (98.05, pytest.approx(98.04), True) and a.verdict == "pass"
        assert b.verdict == "fail" and drawn_as(gauges, b, "fail")  # 61 / 98 < 75 %
        # A live sample (NCCL, a shared test) is shown, never judged.
        app.ports.emit(RailSampled(node="spark4", netdev="enp1s0f0np0", gbps=47.0, at=T0))
        app.ports.flush_gauges()
        await pilot.pause()
        assert gauges.gauge("spark4", "enp1s0f0np0").verdict == "live"


async def test_a_session_that_cannot_start_says_why_and_exits_2() -> None:
    from screens.commands.run import wizard_factory

    app = FabwizApp(wizard_factory(lab="no-such-scenario"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ErrorModal))
        assert app.screen.title_text == "Could not start the session"
        assert "no-such-scenario" in app.screen.message
        assert app.screen.hint and "fabwiz lab scenarios" in app.screen.hint
        await pilot.press("enter")
        await pilot.pause()
        assert app.sub_title == "not started"
        await pilot.press("q")
        await pilot.pause(0.2)
    assert app.return_value == 2


async def test_action_bar_buttons_go_through_the_same_intents_as_keys() -> None:
    holder: dict[str, Any] = {}
    app = FabwizApp(factory_for(holder))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.pending_choice is not None)
        bar = app.screen.query_one(ActionBar)
        assert not bar.enabled("skip")  # not an answer to "Preflight: done."
        await pilot.click(ActionBar, offset=bar.offset_of("skip"))  # disabled: nothing
        await pilot.pause()
        assert holder["engine"].answers == [] and app.screen is app.session
        await pilot.click(ActionBar, offset=bar.offset_of("raw"))
        await until(pilot, lambda: isinstance(app.screen, RawOutputModal))
        assert "crs804" in app.screen.title_text  # the selected evidence row's target
        await pilot.press("escape")
        await pilot.pause()
        # the enabled button under the mouse is lit; a disabled one is not
        unlit = {seg.style.bgcolor for seg in bar.render_line(0) if seg.style is not None}
        await pilot.hover(ActionBar, offset=bar.offset_of("next"))
        await pilot.pause()
        lit = [s for s in bar.render_line(0) if "Next" in s.text]
        assert lit and lit[0].style is not None and lit[0].style.bgcolor not in unlit
        await pilot.hover(ActionBar, offset=bar.offset_of("skip"))
        await pilot.pause()
        assert {s.style.bgcolor for s in bar.render_line(0) if s.style is not None} == unlit
        await pilot.click(ActionBar, offset=bar.offset_of("next"))
        await until(pilot, lambda: holder["engine"].answers[:1] == [("choose:preflight", "next")])


async def test_the_screen_says_when_the_engine_waits_for_hands() -> None:
    from wizard.events import PhysicalActionDone, PhysicalActionRequested

    app = FabwizApp(None)
    async with app.run_test(size=SIZE) as pilot:
        app.ports.emit(StepChanged(step="drain", phase="waiting_physical", at=T0))
        app.ports.emit(
            PhysicalActionRequested(
                step="drain",
                kind="ac_drain",
                nodes=("spark3",),
                instructions="AC-drain spark3.",
                at=T0,
            )
        )
        await pilot.pause()
        prompt = app.session.query_one("#prompt")
        assert prompt.display and "Hands needed: ac drain on spark3" in text_of(prompt)
        assert statuses(app)["drain"] == "running"
        assert any("physical action in progress" in u.lower() for u in app.view.unapplied_work())
        app.ports.emit(
            PhysicalActionDone(
                step="drain", kind="ac_drain", nodes=("spark3",), performed_by="lab", at=T0
            )
        )
        await pilot.pause()
        assert not app.session.query_one("#prompt").display


async def test_a_question_arriving_while_the_detail_is_torn_down_is_not_shown() -> None:
    # As the app closes, the step detail's parts are removed before the detail itself; an
    # engine question that lands then (offer_choice -> repaint) finds nothing to show it in.
    from screens.ports import PendingChoice
    from screens.widgets.detail import StepDetail

    app = FabwizApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        detail = app.session.query_one(StepDetail)
        assert detail.showable
        await detail.query_one("#conclusion").remove()
        assert detail.is_attached and not detail.showable
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        app.offer_choice(
            PendingChoice("preflight", "Preflight: done.", ("next",), {"next": "next"}, future)
        )
        await pilot.pause()
        assert app.session.prompt is not None and app.session.prompt.question == "Preflight: done."
        # nothing was shown: the question is not on the detail (it would have raised NoMatches)
        assert "Preflight: done." not in str(detail.query_one("#prompt").render())


async def test_a_walk_the_engine_gave_up_on_exits_2_as_fix_does() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=SIZE) as pilot:
        app.ports.emit(StepChanged(step="preflight", phase="probing", at=T0))
        app.ports.emit(
            SessionEnded(healthy=False, reason="no node and no switch answered", at=T0 + 1)
        )
        await pilot.pause()
        app.exit_session()
        await pilot.pause(0.2)
    assert app.return_value == 2


async def test_a_reboot_proof_not_done_is_said_at_the_end() -> None:
    """The persist step's reboot proof declined: healthy, but the end line, the summary and its
    ticket say the fixes' persistence was not shown by a reboot."""
    from screens.end_screen import summary_text

    app = FabwizApp(None)
    async with app.run_test(size=SIZE) as pilot:
        app.ports.emit(StepChanged(step="persist", phase="verdict", at=T0))
        app.ports.emit(
            OperatorAnswered(
                step="persist", question="reboot proof", answer="skip the proof", at=T0 + 1
            )
        )
        app.ports.emit(SessionEnded(healthy=True, at=T0 + 2))
        await pilot.pause()
        assert app.session.prompt is not None
        assert "Healthy." in app.session.prompt.question
        assert "Reboot proof not done." in app.session.prompt.question
        text = summary_text(app.summary()).plain
        assert "Skipped or not checked" in text
        assert "reboot proof not done (the operator chose to skip the proof)" in text
        app.exit_session()
        await pilot.pause(0.2)
