"""The detail and log panes are repainted a few times a second at most, however many events a
sweep emits; a decision shows the latest state at once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import Any

from textual.widgets import Log, Static

from screens.app import FabwizApp
from screens.session_screen import SessionScreen
from screens.widgets.coalesce import UI_FLUSH_S, Coalescer
from screens.widgets.messages import EngineEvents
from wizard.events import (
    PhysicalActionRequested,
    ProbeAnswered,
    ProbeSent,
    StepChanged,
    VerdictReached,
)
from wizard.model import Evidence, ProbeResult, Status, Verdict

T0 = 1_780_000_000.0


class FakeTimers:
    def __init__(self) -> None:
        self.armed: list[tuple[float, Callable[[], object]]] = []
        self.queued: list[Callable[[], object]] = []  # call_later: after the queued messages

    def set_timer(self, delay: float, callback: Callable[[], object]) -> object:
        self.armed.append((delay, callback))
        return None

    def call_later(self, callback: Callable[[], object]) -> bool:
        self.queued.append(callback)
        return True

    def drain(self) -> None:
        queued, self.queued = self.queued, []
        for cb in queued:
            cb()

    def fire(self) -> None:
        armed, self.armed = self.armed, []
        for _delay, cb in armed:
            cb()


def test_a_burst_renders_once_now_and_once_on_the_tick() -> None:
    now = [100.0]
    timers = FakeTimers()
    rendered: list[set[str]] = []

    def render(parts: Collection[str]) -> None:
        rendered.append(set(parts))

    c = Coalescer(timers, render, interval_s=0.25, clock=lambda: now[0])
    c.add({"log"})  # quiet before: at once
    assert rendered == [{"log"}] and timers.armed == []
    for i in range(500):
        now[0] += 0.0001
        c.add({"log", "detail"} if i % 2 else {"log"})
    assert len(rendered) == 1  # 500 changes later, still one repaint
    assert len(timers.armed) == 1  # one tick armed for the rest
    delay, _cb = timers.armed[0]
    assert 0.19 < delay <= 0.25
    now[0] += delay
    timers.fire()
    assert rendered == [{"log"}, {"log", "detail"}]
    assert c.renders == 2 and c.pending == frozenset()


def test_a_decision_flushes_what_is_pending_at_once() -> None:
    now = [0.0]
    timers = FakeTimers()
    rendered: list[set[str]] = []
    c = Coalescer(timers, lambda p: rendered.append(set(p)), clock=lambda: now[0])
    c.add({"log"})
    c.add({"steps"})
    assert rendered == [{"log"}]
    c.flush({"prompt"})
    assert rendered == [{"log"}, {"steps", "prompt"}]
    timers.fire()  # the armed tick finds nothing left
    assert len(rendered) == 2
    assert UI_FLUSH_S <= 0.5  # "a few times a second"


def test_rare_events_queued_together_are_one_repaint_and_a_decision_does_not_wait() -> None:
    timers = FakeTimers()
    rendered: list[set[str]] = []
    c = Coalescer(timers, lambda p: rendered.append(set(p)), clock=lambda: 0.0)
    c.soon({"steps", "detail"})  # a step's verdict
    c.soon({"log"})  # its next phase, handled before the repaint
    assert rendered == [] and len(timers.queued) == 1  # one render queued for both
    timers.drain()
    assert rendered == [{"steps", "detail", "log"}]
    # a question right behind the events: it renders at once, with them
    c.soon({"steps"})
    c.flush({"prompt"})
    assert rendered[-1] == {"steps", "prompt"}
    timers.drain()  # the queued render finds nothing left
    assert len(rendered) == 2 and c.renders == 2
    c.soon(set())  # nothing changed: nothing queued
    assert timers.queued == []


async def test_a_steps_verdict_phase_and_question_show_in_one_repaint() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        before = app.repaints.renders
        verdict = Verdict(
            fault="host.mtu", status=Status.FAIL, summary="spark1 at 1500", targets=("spark1",)
        )
        # what the engine emits as a step's judging ends, in one loop turn
        app.ports.emit(StepChanged(step="preflight", phase="probing", at=T0))
        app.ports.emit(VerdictReached(step="preflight", verdict=verdict, at=T0))
        app.ports.emit(StepChanged(step="preflight", phase="verdict", at=T0))
        app.ports.emit(StepChanged(step="preflight", phase="fix_offered", at=T0))
        await _settle(pilot, lambda: app.view.steps["preflight"].phase == "fix_offered")
        await pilot.pause()
        assert app.repaints.renders - before == 1
        detail = screen.query_one("#step-title", Static)
        assert "fix offered" in str(detail.render())
        assert screen.evidence.rows_shown == [] and app.view.steps["preflight"].verdicts
        assert "host.mtu" in str(screen.query_one("#verdict-text", Static).render())


def _probe(i: int) -> list[Any]:
    res = ProbeResult(
        target=f"spark{i % 32 + 1}", kind="ssh", command=f"ethtool e{i}", error="boom"
    )
    return [
        ProbeSent(step="preflight", target=res.target, command=res.command, at=T0),
        ProbeAnswered(step="preflight", probe=f"ethtool:e{i}", result=res, at=T0),
    ]


async def _settle(pilot: Any, predicate: Callable[[], bool]) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + 10
    while not predicate():
        assert loop.time() < end, "timed out"
        await pilot.pause(0.02)


async def test_a_sweeps_events_repaint_the_panes_a_few_times_not_per_event() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        shown: list[int] = []
        real = screen._show_detail

        def counting() -> None:
            shown.append(1)
            real()

        screen._show_detail = counting  # type: ignore[method-assign]
        app.repaints.interval_s = 3600.0  # only the leading repaint inside this test
        app.ports.emit(StepChanged(step="preflight", phase="probing", at=T0))  # shown at once
        before = app.repaints.renders
        for i in range(300):
            for ev in _probe(i):
                app.ports.emit(ev)
        await _settle(pilot, lambda: len(app.view.steps["preflight"].probes) == 300)
        # 600 events applied to the view; the panes were repainted at most once for them
        assert app.repaints.renders - before <= 1
        assert app.repaints.pending  # the rest waits for the next tick
        log = screen.query_one("#log", Log)
        lines_before = log.line_count
        # a decision shows everything at once
        app.ports.emit(
            PhysicalActionRequested(
                step="preflight", kind="ac_drain", nodes=("spark3",), instructions="x", at=T0
            )
        )
        await _settle(pilot, lambda: not app.repaints.pending)
        assert log.line_count >= lines_before + 300  # every failed probe is a log line
        assert "boom" in log.lines[-2] or "boom" in "".join(log.lines[-5:])
        assert len(shown) <= 4


async def test_a_loop_turns_flood_reaches_the_app_as_one_message_in_order() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        posted: list[Any] = []
        real_post = app.post_message

        def post(message: Any) -> bool:
            posted.append(message)
            return real_post(message)

        app.post_message = post  # type: ignore[method-assign]
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        seen_at_step_change: list[int] = []  # probes folded in when the step change was
        real_follow = screen.follow

        def follow(step: str) -> None:
            seen_at_step_change.append(len(app.view.steps["preflight"].sent))
            real_follow(step)

        screen.follow = follow  # type: ignore[method-assign]
        # one loop turn: 400 flood events, a step change, 20 more
        for i in range(200):
            for ev in _probe(i):
                app.ports.emit(ev)
        app.ports.emit(StepChanged(step="preflight", phase="judging", at=T0))
        for i in range(200, 210):
            for ev in _probe(i):
                app.ports.emit(ev)
        await _settle(pilot, lambda: len(app.view.steps["preflight"].probes) == 210)
        kinds = [type(m).__name__ for m in posted if type(m).__name__.startswith("EngineEvent")]
        assert kinds == ["EngineEvents", "EngineEvent", "EngineEvents"]
        batches = [m for m in posted if isinstance(m, EngineEvents)]
        assert [len(b.events) for b in batches] == [400, 20]
        assert [type(e).__name__ for e in batches[0].events[:2]] == ["ProbeSent", "ProbeAnswered"]
        assert batches[0].events[-1].result.command == "ethtool e199"  # as emitted
        # the step change was folded after the 400 events before it and before the 20 after
        assert seen_at_step_change == [200]
        assert app.view.steps["preflight"].phase == "judging"
        assert [r.command for r in app.view.steps["preflight"].probes][-1] == "ethtool e209"


async def test_the_evidence_table_is_not_rebuilt_per_probe_answer() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        app.ports.emit(StepChanged(step="preflight", phase="probing", at=T0))
        verdict = Verdict(
            fault="host.mtu",
            status=Status.FAIL,
            summary="spark1 at 1500",
            targets=("spark1",),
            evidence=(
                Evidence(
                    target="spark1/enp1s0f0np0",
                    command="ip link",
                    observed="mtu 1500",
                    expected="mtu 9000",
                    status=Status.FAIL,
                ),
            ),
        )
        app.ports.emit(VerdictReached(step="preflight", verdict=verdict, at=T0))
        table = screen.evidence
        await _settle(pilot, lambda: len(table.rows_shown) == 1)
        cleared: list[int] = []
        real_clear = table.clear

        def clear(*args: Any, **kwargs: Any) -> Any:
            cleared.append(1)
            return real_clear(*args, **kwargs)

        table.clear = clear  # type: ignore[method-assign]
        app.repaints.interval_s = 0.0  # a repaint whenever one is due: the worst case
        batches: list[EngineEvents] = []
        real_post = app.post_message

        def post(message: Any) -> bool:
            if isinstance(message, EngineEvents):
                batches.append(message)
            return real_post(message)

        app.post_message = post  # type: ignore[method-assign]
        app.ports.flood_s = 0.0  # the flood is posted at the end of each loop turn
        await _emit_in_turns(app, 0, 30)
        await _settle(pilot, lambda: len(app.view.steps["preflight"].probes) == 300)
        await _settle(pilot, lambda: not app.repaints.pending)
        assert cleared == []  # 300 answers, the same evidence: the table was left as it was
        assert table.row_count == 1 and table.rows_shown[0][0].fault == "host.mtu"
        assert [len(b.events) for b in batches] == [20] * 30  # one message per loop turn
        # with the gathering window, 30 loop turns' worth travel in fewer messages
        batches.clear()
        app.ports.flood_s = 3600.0
        await _emit_in_turns(app, 30, 30)
        assert batches == []  # still gathering
        app.ports.emit(StepChanged(step="preflight", phase="judging", at=T0))  # flushes first
        assert [len(b.events) for b in batches] == [600]
        await _settle(pilot, lambda: len(app.view.steps["preflight"].probes) == 600)
        assert cleared == []


async def _emit_in_turns(app: FabwizApp, first: int, turns: int) -> None:
    """Ten probes (twenty events) a loop turn."""
    for turn in range(first, first + turns):
        for i in range(10):
            for ev in _probe(turn * 10 + i):
                app.ports.emit(ev)
        await asyncio.sleep(0)
