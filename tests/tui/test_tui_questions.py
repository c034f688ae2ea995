"""Modals never lose work: the real lab and engine, driven by keys.

Esc only hides a question (`o` brings it back); "Done" pressed before the nodes are back shows
a live wait that `c` stops, and the engine asks again; Skip on the direct-connect test asks
first; a declined fix stays on offer and `a` at the end of the step offers it again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from screens.app import FabwizApp
from screens.modals import (
    ChoiceModal,
    ConfirmModal,
    ErrorModal,
    FixConfirmModal,
    PhysicalActionModal,
)
from wizard.events import OperatorAnswered

pytestmark = [pytest.mark.lab, pytest.mark.slow]


def text_of(widget: Any) -> str:
    return str(getattr(widget, "renderable", "") or widget.render())


def footer_keys(app: FabwizApp) -> set[str]:
    return {k for k, b in app.screen.active_bindings.items() if b.binding.show and b.enabled}


async def until(pilot: Any, cond: Callable[[], object], what: str, limit: float = 300) -> None:
    deadline = time.monotonic() + limit  # a loaded machine is slow, never stuck
    while not cond():
        assert time.monotonic() < deadline, f"never: {what} ({pilot.app.screen})"
        await pilot.pause(0.05)


async def test_hidden_questions_reopen_waits_cancel_and_declined_fixes_stay(
    tmp_path: Path,
) -> None:
    from screens.commands.run import wizard_factory

    answers: list[tuple[str, str, str]] = []
    app = FabwizApp(
        wizard_factory(lab="crs804-three-bugs", time_scale=100.0, session_dir=tmp_path),
        sub_title="demo",
    )
    async with app.run_test(size=(120, 40)) as pilot:
        original = app.ports.emit

        def spy(event: Any) -> None:
            if isinstance(event, OperatorAnswered):
                answers.append((event.step, event.question, event.answer))
            original(event)

        app.ports.emit = spy  # type: ignore[method-assign]
        await until(pilot, lambda: app.pending_choice is not None, "preflight asks")
        await pilot.press("n")
        # Direct-connect: preflight's findings explain the low rails, so the engine offers to
        # skip the cabling; do the physical test, to reach the re-cable modal.
        await until(pilot, lambda: isinstance(app.screen, ChoiceModal), "skip the cabling?")
        assert "preflight already found" in app.screen.question
        assert app.screen.options == ["skip the physical test", "do the physical test"]
        await pilot.press("2")
        # The test AC-drains the nodes that measured low first (perform it), then re-cables.
        await until(pilot, lambda: isinstance(app.screen, PhysicalActionModal), "first drain")
        if app.screen.action.kind == "ac_drain":
            await pilot.press("p")
            await until(
                pilot,
                lambda: (
                    isinstance(app.screen, PhysicalActionModal)
                    and app.screen.action.kind == "recable"
                ),
                "recable",
            )
        # The re-cable modal. Skip asks first; "Go back" keeps the question.
        recable = app.screen
        assert recable.action.kind == "recable"
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), "skip asks first")
        assert "direct-connect test" in app.screen.body
        await pilot.press("n")
        await pilot.pause(0.1)
        assert app.screen is recable and recable.state == "ask"
        assert not recable.answer.done()
        # Esc hides it; the question stays open, the footer offers `o`, the detail says so.
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.session, "hidden")
        assert app.question is not None and app.question.hidden
        assert "o" in footer_keys(app)
        assert "Still open: hands: recable" in text_of(app.session.query_one("#prompt"))
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, PhysicalActionModal), "re-opened")
        assert app.screen.action == recable.action and app.screen.answer is recable.answer
        await pilot.press("p")
        # The drain: "Done" before the nodes are back waits live, and `c` stops the wait.
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, PhysicalActionModal)
                and app.screen.action.kind == "ac_drain"
                and app.screen.state == "ask"
            ),
            "drain asks",
        )
        drain = app.screen
        earlier = len(answers)  # the direct-connect test's own drain is answered above
        await pilot.press("d")
        await until(pilot, lambda: drain.state == "waiting", "waiting")
        await pilot.pause(1.2)  # one tick of the seconds counter
        waiting = text_of(drain.query_one("#waiting"))
        nodes = ", ".join(drain.action.nodes)
        assert f"Waiting for {nodes} to come back (" in waiting and " s)" in waiting
        assert "c" in footer_keys(app) and "d" not in footer_keys(app)
        await pilot.press("c")
        # The engine stops watching and asks again: a new modal, asking.
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, PhysicalActionModal)
                and app.screen is not drain
                and app.screen.state == "ask"
            ),
            "asked again",
        )
        assert app.requests[-1][0] == "cancel_wait"
        assert [a for a in answers[earlier:] if a[1] == "physical:ac_drain"] == [
            (app.view.current, "physical:ac_drain", "done")
        ]
        await pilot.press("p")
        # Offload: decline the fix; it stays on offer and `a` offers it again.
        while not isinstance(app.screen, FixConfirmModal):
            await pilot.pause(0.05)
            top = app.screen
            if isinstance(top, ErrorModal):
                pytest.fail(f"{top.title_text}: {top.message}")
            if isinstance(top, PhysicalActionModal) and top.state == "ask":
                await pilot.press("p")
            elif app.pending_choice is not None and not app.pending_choice.future.done():
                await pilot.press("n")
        first = app.screen
        assert first.plan.fault == "switch.offload-split-cage"
        await pilot.press("c")
        await until(
            pilot,
            lambda: app.pending_choice is not None and "apply" in app.pending_choice.answers,
            "the step offers the declined fix",
        )
        assert "1 fix(es) declined, still on offer" in app.pending_choice.question
        assert app.view.steps["offload"].fixes  # shown as declined in the step
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, FixConfirmModal), "offered again")
        again = app.screen
        assert again is not first and again.plan.fault == first.plan.fault
        assert again.export is not None and again.export.file != first.export.file  # fresh
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.session, "fix hidden")
        assert "Still open: fix:" in text_of(app.session.query_one("#prompt"))
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, FixConfirmModal), "fix re-opened")
        await pilot.press("a")
        await until(
            pilot,
            lambda: app.view.steps["offload"].status == "fixed",
            "the re-offered fix applied and verified",
        )
        fixes = [a for a in answers if a[1].startswith("apply fix offload:")]
        assert [a[2] for a in fixes] == ["no", "yes"]


class Recorder:
    """An engine that only records the intents it is sent."""

    def __init__(self) -> None:
        self.got: list[tuple[str, str | None]] = []

    async def run(self) -> None:
        return None

    def request(self, intent: str, step: str | None = None) -> None:
        self.got.append((intent, step))


@pytest.mark.parametrize("answer", ["n", "y"])
async def test_skipping_the_direct_connect_step_asks_first(answer: str) -> None:
    app = FabwizApp(None)
    engine = Recorder()
    async with app.run_test(size=(80, 24)) as pilot:
        app.engine = engine
        screen = app.session
        screen.engine_ready = screen.engine_takes_requests = True
        screen.viewed = "direct_connect"
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), "asks")
        assert "cannot tell a host-side fault" in app.screen.body
        await pilot.press(answer)
        await pilot.pause(0.1)
        assert app.screen is screen
        assert engine.got == ([("skip", "direct_connect")] if answer == "y" else [])
        # Other steps skip at once.
        screen.viewed = "qos"
        await pilot.press("s")
        await pilot.pause(0.1)
        assert engine.got[-1] == ("skip", "qos")
