"""The engine's side of the TUI: `TuiPorts` (the event sink and the `Operator` the engine awaits
decisions from), the questions it has pending, and how a flood of events reaches the app.

The sink posts every engine fact to the app as one `EngineEvent` message, except the sweep's
flood (probes sent and answered, the verdicts of a judging): that comes as `EngineEvents`
messages (what gathered in `FLOOD_FLUSH_S`), each posted before the next other event so the
order is kept. `RailSampled` gauge data is coalesced into `RailsSampled` snapshots.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from textual.screen import Screen

from screens.session_screen import DIRECT_SKIP
from screens.widgets.messages import EngineEvent, EngineEvents, RailsSampled
from wizard.events import (
    Event,
    FixRolledBack,
    MeasurementTaken,
    Note,
    ProbeAnswered,
    ProbeSent,
    RailSampled,
    RollbackArmed,
    RollbackDisarmed,
    SessionEnded,
    VerdictReached,
)
from wizard.model import FixPlan, PhysicalAction

if TYPE_CHECKING:
    from screens.app import FabwizApp
    from screens.modals import FixConfirmModal, PhysicalActionModal
    from wizard.fixes import ExportStatus

GAUGE_FLUSH_S = 0.25  # at most four gauge repaints a second, whatever the sample rate
# Events that come by the hundred or thousand (a sweep's probes, the verdicts of its judging):
# the ports post what gathers in a short window as one message (`EngineEvents`).
FLOOD_EVENTS = (ProbeSent, ProbeAnswered, VerdictReached)
# How long a flood gathers before it is posted: far below a repaint's interval, long enough
# that the probes of every node's batch travel together (0: to the end of the loop turn).
FLOOD_FLUSH_S = 0.02
# Events whose repaints are coalesced (the flood, and what a sweep or a test gives per target).
COALESCED_EVENTS = (ProbeSent, ProbeAnswered, VerdictReached, MeasurementTaken, Note)
# What the dead-man countdown follows (looking it up for every probe of a sweep costs more than
# the repaint)
DEADMAN_EVENTS = (RollbackArmed, RollbackDisarmed, FixRolledBack, SessionEnded)

# Which answers of `Operator.choose` an action-bar intent stands for.
INTENT_ANSWERS: dict[str, tuple[str, ...]] = {
    "run": ("run", "rerun", "re-run", "retry", "again", "measure"),
    "apply": ("apply", "fix", "apply fix", "apply_fix", "yes"),
    "skip": ("skip",),
    "back": ("back", "previous", "prev"),
    "next": ("next", "continue", "proceed", "done", "ok"),
}


class EngineLike(Protocol):
    """What the app needs of the engine (wizard/engine.py `Engine`). Decisions reach it as
    answers to its own questions (`Operator.choose`); an engine that also takes unsolicited
    intents has `request(intent, step)`, which the app then calls."""

    async def run(self) -> Any: ...


# Builds the engine in the app's worker, once the first screen is painted (what it starts goes
# on the exit stack). A factory may also have `begin(stack)`, called as the app mounts: what it
# can start without loading anything (a cluster's handshakes, `screens.commands.run`).
EngineFactory = Callable[["TuiPorts", AsyncExitStack], Awaitable[EngineLike]]


@dataclass(slots=True)
class PendingChoice:
    step: str
    question: str
    options: tuple[str, ...]
    answers: dict[str, str]  # intent -> the option it answers with
    future: asyncio.Future[str]


def match_intents(options: Sequence[str]) -> dict[str, str] | None:
    """Map every option to an action-bar intent, or None when one has no button."""
    out: dict[str, str] = {}
    for opt in options:
        norm = opt.strip().lower()
        intent = next((i for i, names in INTENT_ANSWERS.items() if norm in names), None)
        if intent is None or intent in out:
            return None
        out[intent] = opt
    return out


class TuiPorts:
    """The engine's event sink and `Operator`, implemented on the app.

    Called from the engine's worker (same event loop), so it posts messages and pushes modals
    directly; decisions are awaited there and never block the UI.
    """

    def __init__(
        self, app: FabwizApp, *, flush_s: float = GAUGE_FLUSH_S, flood_s: float = FLOOD_FLUSH_S
    ) -> None:
        self.app = app
        self.flush_s = flush_s
        self._latest: dict[tuple[str, str], float] = {}
        self._flush_armed = False
        self._dirty = False
        self._last_at = 0.0
        self.flood_s = flood_s
        self._flood: list[Event] = []
        self._flood_timer: asyncio.Handle | None = None

    # --- event sink --------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        if isinstance(event, RailSampled):
            self._latest[(event.node, event.netdev)] = event.gbps
            self._last_at = event.at
            self._dirty = True
            if not self._flush_armed:
                self._flush_armed = True
                self.app.set_timer(self.flush_s, self._timer_flush)
            return
        if isinstance(event, FLOOD_EVENTS):
            self._flood.append(event)
            if self._flood_timer is None:
                loop = asyncio.get_running_loop()
                self._flood_timer = (
                    loop.call_later(self.flood_s, self.flush_flood)
                    if self.flood_s > 0
                    else loop.call_soon(self.flush_flood)
                )
            return
        # Samples and probes emitted before this event are shown before it (a verdict).
        self.flush_gauges()
        self.flush_flood()
        self.app.post_message(EngineEvent(event))

    def flush_flood(self) -> None:
        """Post the flood gathered so far as one message (`flood_s` after its first event, or
        before the next event that is not part of it: the order is kept)."""
        if self._flood_timer is not None:
            self._flood_timer.cancel()
            self._flood_timer = None
        if self._flood:
            events, self._flood = self._flood, []
            self.app.post_message(EngineEvents(events))

    def _timer_flush(self) -> None:
        self._flush_armed = False
        self.flush_gauges()

    def flush_gauges(self) -> None:
        if self._dirty:
            self._dirty = False
            self.app.post_message(RailsSampled(self._latest, self._last_at))

    # --- Operator ------------------------------------------------------------------------------

    async def confirm_fix(self, plan: FixPlan, export: ExportStatus | None) -> bool:
        self.flush_flood()
        self.app.repaints.flush()  # what is under the modal is what the engine said so far
        window = getattr(self.app.engine, "rollback_window_s", None)
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def make() -> FixConfirmModal:
            from screens.modals import FixConfirmModal

            return FixConfirmModal(plan, export, rollback_window_s=window, answer=answer)

        self.app.open_question(HiddenQuestion(f"fix: {plan.summary}", "fix", make, answer))
        try:
            return await answer
        finally:
            self.app.question_closed(answer)

    async def physical_action(self, action: PhysicalAction, can_perform_in_lab: bool) -> str:
        self.flush_flood()
        app = self.app
        app.repaints.flush()
        previous = app.physical_modal
        app.question = None  # asked again: the previous question is answered
        if previous is not None and previous.is_attached:
            # Asked again (e.g. "not done yet") or the next action: one prompt at a time.
            if app.screen is previous:
                await previous.dismiss(None)
            else:
                previous.close()
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        direct = any(dest.startswith("node:") for _n, _p, dest in action.cables)
        warning = DIRECT_SKIP_WARNING if direct or app.view.current == "direct_connect" else None
        since: list[float] = []

        def make() -> PhysicalActionModal:
            from screens.modals import PhysicalActionModal

            modal = PhysicalActionModal(
                action,
                can_perform_in_lab=can_perform_in_lab,
                answer=answer,
                skip_warning=warning,
                on_cancel_wait=app.cancel_wait if app.engine_takes_requests else None,
                waiting_since=since[0] if since else None,
            )
            app.physical_modal = modal
            return modal

        def track(_answer: asyncio.Future[str]) -> None:
            since.append(time.monotonic())  # the wait starts once answered

        answer.add_done_callback(track)
        what = f"{action.kind.replace('_', ' ')} on {', '.join(action.nodes)}"
        app.open_question(HiddenQuestion(f"hands: {what}", "physical", make, answer))
        try:
            return await answer
        finally:
            if answer.done() and answer.result() == "skip":
                app.question_closed(answer)

    async def choose(self, step: str, question: str, options: list[str]) -> str:
        answers = match_intents(options)
        self.flush_flood()
        if answers is None:
            from screens.modals import ChoiceModal

            self.app.repaints.flush()
            picked: str = await self.app.push_screen(
                ChoiceModal(step, question, options), wait_for_dismiss=True
            )
            return picked
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        # Through the app's queue, so the question shows after the events emitted before it.
        self.app.call_later(
            self.app.offer_choice, PendingChoice(step, question, tuple(options), answers, future)
        )
        try:
            return await future
        finally:
            self.app.offer_choice(None)

    async def error(self, title: str, message: str, hint: str | None) -> None:
        self.flush_flood()
        from screens.modals import ErrorModal

        self.app.repaints.flush()
        await self.app.push_screen_wait(ErrorModal(title, message, hint))


DIRECT_SKIP_WARNING = DIRECT_SKIP + " Skip it anyway?"


@dataclass(slots=True)
class HiddenQuestion:
    """A modal question the engine awaits. Hiding its modal (Esc) leaves it open; `o` makes
    the modal again from `make` (same answer future)."""

    label: str
    kind: str  # "fix" or "physical"
    make: Callable[[], Screen[Any]]
    answer: asyncio.Future[Any]
    hidden: bool = False
