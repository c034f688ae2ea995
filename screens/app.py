"""The Textual app: one session screen, the engine in one async worker, modals for decisions.

`FabwizApp` is given an engine factory (the composition root in `screens/commands/demo.py` or
`run.py` decides what the engine talks to). After the first paint it starts ONE async worker that
builds the engine with `TuiPorts` (`screens/ports.py`: the event sink and the `Operator` the
engine awaits decisions from) and runs it. Engine facts arrive as `EngineEvent` messages, the
sweep's flood as `EngineEvents` batches, gauge data as `RailsSampled` snapshots. Widgets post
`...Requested` intents; only this module turns them into engine calls
(`engine.request(intent, step)`) or answers to a pending question.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker, WorkerCancelled, WorkerFailed, WorkerState

from flows.expectations import Expectations
from screens import codecache
from screens.deadman import DeadmanCountdown
from screens.ports import (
    COALESCED_EVENTS,
    DEADMAN_EVENTS,
    EngineFactory,
    EngineLike,
    HiddenQuestion,
    PendingChoice,
    TuiPorts,
)
from screens.session_screen import Prompt, SessionScreen
from screens.widgets.coalesce import Coalescer
from screens.widgets.gauges import RailGauges
from screens.widgets.messages import (
    ApplyFixRequested,
    BackRequested,
    EngineEvent,
    EngineEvents,
    NextRequested,
    RailsSampled,
    RunStepRequested,
    ShowRawRequested,
    SkipStepRequested,
    StepRequested,
)
from screens.widgets.view_model import SessionView, StepInfo, load_steps, raw_for
from wizard.errors import FabwizError
from wizard.events import (
    FixVerified,
    MeasurementTaken,
    PhysicalActionDone,
    SessionEnded,
    StepChanged,
)
from wizard.model import Rail
from wizard.safetext import clean

# Textual parses the app's and every widget's stylesheet on each start: kept in the start-up
# cache (when `fabwiz` runs it) like the dataclasses' code
codecache.cache_stylesheets()

if TYPE_CHECKING:
    from screens.modals import PhysicalActionModal
    from screens.widgets.summary import SessionSummary

# The dialogs (screens.modals, screens.end_screen) and the session summary are imported when one
# is first needed: the first screen shows none of them.
# Allocations (less deallocations) of container objects that start a young collection while the
# wizard runs.
YOUNG_GC_THRESHOLD = 10_000


class FabwizApp(App[int]):
    """The wizard. Returns an exit code: 0 healthy, 1 findings left, 2 error."""

    CSS_PATH = "app.tcss"
    TITLE = "fabwiz"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "request_quit", "Quit", show=False, priority=True),
        Binding("f1", "toggle_explain", "Explain", show=False),
    ]

    def __init__(
        self,
        engine_factory: EngineFactory | None,
        *,
        steps: Sequence[StepInfo] | None = None,
        rails: Iterable[Rail] = (),
        expectations: Expectations | None = None,
        sub_title: str = "",
        start_engine: bool = True,
    ) -> None:
        super().__init__()
        self.engine_factory = engine_factory
        self.view = SessionView.new(steps if steps is not None else load_steps())
        self.expectations = expectations or Expectations()
        self.ports = TuiPorts(self)
        self.engine: EngineLike | None = None
        self.pending_choice: PendingChoice | None = None
        self.physical_modal: PhysicalActionModal | None = None
        self.question: HiddenQuestion | None = None  # the open modal question, shown or hidden
        self.engine_worker: Worker[None] | None = None
        self.requests: list[tuple[str, str | None]] = []  # every intent sent to the engine
        # Set by the engine factory: the rails discovery found (node -> rails), for the gauges.
        self.rails_source: Callable[[], Mapping[str, Sequence[Rail]]] | None = None
        self.session_folder = ""
        self.cabling: dict[str, tuple[str, str]] = {}  # "node/netdev" -> (switch, port)
        self._rails = tuple(rails)
        self._start_engine = start_engine
        self._quit_event = asyncio.Event()
        self._on_screen = asyncio.Event()  # the first screen is on the terminal
        self._engine_done = False
        self._failed = False
        self._pending_request: asyncio.Future[Any] | None = None
        # the detail and log panes repaint a few times a second at most, like the gauges
        self.repaints = Coalescer(self, self._repaint)
        if sub_title:
            self.sub_title = sub_title

    @property
    def session(self) -> SessionScreen:
        for screen in self.screen_stack:
            if isinstance(screen, SessionScreen):
                return screen
        raise LookupError("no session screen")

    def get_default_screen(self) -> Screen[Any]:
        gauges = RailGauges(expectations=self.expectations, id="gauges")
        return SessionScreen(self.view, gauges=gauges, size=(self.size.width, self.size.height))

    def on_mount(self) -> None:
        if self._rails:
            self.session.gauges.set_rails(self._rails)
        if self._start_engine and self.engine_factory is not None:
            # The engine is built after the first paint: the operator sees the screen before
            # anything slow starts. Its worker starts now, for a factory that can begin its
            # cluster's connections meanwhile (`begin`, loading nothing).
            self.call_after_refresh(self._first_paint)
            self.start_engine()

    # --- the engine worker ---------------------------------------------------------------------

    def _first_paint(self) -> None:
        # What is alive now (the modules, Textual, this screen) lives as long as the session:
        # kept out of the collector's full passes, those scan only what the session adds
        # (a 32-node preflight's two full collections took ~0.25 s of it). Once per process.
        if not gc.get_freeze_count():
            gc.freeze()
        # Textual makes and drops container objects by the ten thousand a second (strips,
        # segments, messages): ~190 young collections in a 32-node preflight at Python's 700.
        young, middle, old = gc.get_threshold()
        if young < YOUNG_GC_THRESHOLD:
            gc.set_threshold(YOUNG_GC_THRESHOLD, middle, old)
        self._on_screen.set()

    def start_engine(self) -> None:
        """Start the engine's worker: it builds the engine once the first screen is painted."""
        self.engine_worker = self.run_worker(
            self._run_engine(), name="engine", group="engine", exclusive=True, exit_on_error=False
        )

    async def _run_engine(self) -> None:
        assert self.engine_factory is not None
        async with AsyncExitStack() as stack:
            begin = getattr(self.engine_factory, "begin", None)
            if begin is not None:
                begin(stack)  # the cluster's handshakes, under way while the screen composes
            await self._on_screen.wait()
            sub_title = self.sub_title
            self.sub_title = "starting…"
            try:
                self.engine = await self.engine_factory(self.ports, stack)
            except FabwizError as exc:
                self._failed = True
                self.sub_title = "not started"
                await self.ports.error("Could not start the session", exc.message, exc.hint)
                return
            self.sub_title = sub_title
            self.session.engine_ready = True
            self.session.engine_takes_requests = callable(getattr(self.engine, "request", None))
            self.repaints.flush({"detail"})
            await self.engine.run()
            self._engine_done = True
            # Keep what the factory started (the demo's lab) until the operator quits.
            await self._quit_event.wait()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self.engine_worker:
            return
        if event.state == WorkerState.ERROR:
            self._failed = True
            from screens.modals import ErrorModal

            error = event.worker.error
            self.session.engine_ready = False
            self.repaints.flush({"detail"})
            self.push_screen(
                ErrorModal(
                    "The engine stopped",
                    f"{type(error).__name__}: {error}",
                    "The session log has everything up to here: `fabwiz resume` continues it.",
                )
            )

    # --- engine events -------------------------------------------------------------------------

    def on_engine_event(self, message: EngineEvent) -> None:
        event = message.event
        if not any(isinstance(s, SessionScreen) for s in self.screen_stack):
            return  # the app is closing: the session log has the event
        screen = self.session
        changed = self.view.apply(event)
        # Gauges keep each rail's last measurement across steps: it is the latest evidence.
        if isinstance(event, StepChanged):
            screen.follow(event.step)
            self._discovered_rails()
        if isinstance(event, MeasurementTaken):
            screen.gauges.add_measurement(event.measurement, direct=self.view.direct_cabled)
        if isinstance(event, FixVerified) and event.ok:
            screen.gauges.mark_stale()  # the numbers so far are from before the fix
        if isinstance(event, DEADMAN_EVENTS):  # the armed rollbacks' windows
            for countdown in screen.query(DeadmanCountdown):
                countdown.feed(event)
        if isinstance(event, SessionEnded):
            self.sub_title = "healthy" if event.healthy else "findings left"
            screen.prompt = Prompt(step=self.view.current or "", question=self._ending(event))
            self.repaints.flush(changed)
            self.call_later(self.action_show_summary)
        elif isinstance(event, COALESCED_EVENTS):
            self.repaints.add(changed)  # the sweep's flood: a few repaints a second
        else:
            # rare and meaningful: shown once the events queued with it are in (a step's
            # verdict, its next phase and the question after them are one repaint)
            self.repaints.soon(changed)
        if self.physical_modal is not None:
            self.physical_modal.on_engine_event(event)
        question = self.question
        if isinstance(event, PhysicalActionDone) and question and question.kind == "physical":
            self.question = None  # done: nothing left to re-open
            self._question_changed()

    def on_engine_events(self, message: EngineEvents) -> None:
        """A flood of events: folded into the view in order, one coalesced repaint."""
        if self.session_gone or not message.events:
            return  # the app is closing: the session log has the events
        changed: set[str] = set()
        for event in message.events:
            changed |= self.view.apply(event)
        self.repaints.add(changed)
        if self.physical_modal is not None:
            self.physical_modal.on_engine_event(message.events[-1])

    def summary(self) -> SessionSummary:
        from screens.widgets.summary import summarise

        return summarise(self.view, self.session_folder)

    def action_show_summary(self) -> None:
        """The end-of-session screen (found, fixed, not checked, numbers, what next)."""
        from screens.end_screen import SessionEndModal

        if self.view.ended is None or isinstance(self.screen, SessionEndModal):
            return
        self.push_screen(SessionEndModal(self.summary()))

    def exit_message(self) -> str:
        """What the terminal shows once the TUI is gone: the session and how to use it."""
        if self.view.started is None:
            return ""
        s = self.summary()
        return f"fabwiz: session {s.session_id}\n  {s.report_command}\n  {s.resume_command}"

    def _repaint(self, parts: Collection[str]) -> None:
        if self.session_gone:
            return  # a coalesced repaint's timer fired after the screen went
        self.session.update_view(parts)

    def _ending(self, event: SessionEnded) -> str:
        fixes = [f for v in self.view.steps.values() for f in v.fixes.values()]
        verified = sum(f.state == "verified" for f in fixes)
        exports = sum(len(v.exports) for v in self.view.steps.values())
        reason = event.reason or "see the steps marked ✘"
        head = "Healthy." if event.healthy else f"Findings left: {reason}."
        unseen = self.view.never_checked()
        never = ""
        if unseen:
            targets = sorted({t for _s, v in unseen for t in v.targets})
            never = (
                f" Never checked: {len(unseen)} fault(s) on {', '.join(targets)} "
                f"({', '.join(v.fault for _s, v in unseen[:4])}"
                + (" …" if len(unseen) > 4 else "")
                + ")."
            )
        unproven = " Reboot proof not done." if self.view.state.proofs_not_done() else ""
        return (
            f"Session ended. {head} {verified} fix(es) verified, {exports} switch export(s) "
            f"kept.{never}{unproven} Ticket: {self.summary().report_command} (u: the summary)"
        )

    def _discovered_rails(self) -> None:
        if self.rails_source is None:
            return
        rails = [r for group in self.rails_source().values() for r in group]
        if len(rails) > len(self.session.gauges.gauges):
            self.session.gauges.set_rails(rails)

    @property
    def session_gone(self) -> bool:
        """The session screen is gone: the app is closing and late messages are dropped (the
        session log has every event)."""
        return not any(isinstance(s, SessionScreen) for s in self.screen_stack)

    def on_rails_sampled(self, message: RailsSampled) -> None:
        if self.session_gone:
            return
        self.session.gauges.update_samples(message.samples)
        self.session.samples_arrived()

    # --- decisions -----------------------------------------------------------------------------

    def offer_choice(self, choice: PendingChoice | None) -> None:
        self.pending_choice = choice
        if self.session_gone:
            return
        screen = self.session
        if choice is None:
            if screen.prompt is not None and screen.prompt.options:
                screen.prompt = None
        else:
            screen.prompt = Prompt(
                choice.step,
                choice.question,
                frozenset(choice.answers),
                choice.options,
                dict(choice.answers),
            )
            screen.follow(choice.step)
        self.repaints.flush({"prompt"})

    def physical_modal_closed(self, modal: PhysicalActionModal) -> None:
        if self.physical_modal is modal:
            self.physical_modal = None

    @property
    def engine_takes_requests(self) -> bool:
        return callable(getattr(self.engine, "request", None))

    def open_question(self, question: HiddenQuestion) -> None:
        """Show a modal question; when its modal goes away unanswered, it is only hidden."""
        self.question = question
        question.hidden = False
        modal = question.make()

        def closed(_result: Any) -> None:
            from screens.modals import PhysicalActionModal

            if isinstance(modal, PhysicalActionModal):
                self.physical_modal_closed(modal)
            if self.question is question and self._still_open(question):
                question.hidden = True
                self.notify(
                    f"Hidden, still open: {clean(question.label)}. Press o to open it again.",
                    markup=False,
                )
            elif self.question is question:
                self.question = None
            self._question_changed()

        self.push_screen(modal, callback=closed)
        self._question_changed()

    def _still_open(self, question: HiddenQuestion) -> bool:
        if not question.answer.done():
            return True
        # a physical action answered "done": the engine is still watching for its result
        return question.kind == "physical" and question.answer.result() != "skip"

    def question_closed(self, answer: asyncio.Future[Any]) -> None:
        if self.question is not None and self.question.answer is answer:
            self.question = None
            self._question_changed()

    def action_reopen(self) -> None:
        question = self.question
        if question is None or not question.hidden:
            self.notify(
                "No hidden question: the engine asks when it needs you.", timeout=3, markup=False
            )
            return
        self.open_question(question)

    def cancel_wait(self) -> None:
        request = getattr(self.engine, "request", None)
        if request is not None:
            self.requests.append(("cancel_wait", self.view.current))
            request("cancel_wait", self.view.current)

    def _question_changed(self) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, SessionScreen):
                screen.hidden_question = (
                    self.question.label if self.question and self.question.hidden else None
                )
                screen.refresh_bindings()
                screen.update_view({"prompt"})

    # --- intents -------------------------------------------------------------------------------

    def _intent(self, message: StepRequested) -> None:
        message.stop()
        intent, step = message.intent, message.step
        choice = self.pending_choice
        if choice is not None and intent in choice.answers and not choice.future.done():
            choice.future.set_result(choice.answers[intent])
            return
        request = getattr(self.engine, "request", None)
        if request is None and intent == "apply" and choice is not None and "run" in choice.answers:
            self.notify(
                "Re-run the step [r]: the engine offers its fix again.", timeout=4, markup=False
            )
            return
        if request is None:
            waiting = (
                "the engine is not running yet"
                if self.engine is None
                else ("the engine is busy with this step; it asks when it needs you")
            )
            self.notify(f"{intent}: {waiting}.", severity="warning", timeout=3, markup=False)
            return
        self.requests.append((intent, step))
        result = request(intent, step)
        if inspect.isawaitable(result):
            self._pending_request = asyncio.ensure_future(result)

    def on_run_step_requested(self, message: RunStepRequested) -> None:
        self._intent(message)

    def on_skip_step_requested(self, message: SkipStepRequested) -> None:
        self._intent(message)

    def on_back_requested(self, message: BackRequested) -> None:
        self._intent(message)

    def on_next_requested(self, message: NextRequested) -> None:
        self._intent(message)

    def on_apply_fix_requested(self, message: ApplyFixRequested) -> None:
        self._intent(message)

    def on_show_raw_requested(self, message: ShowRawRequested) -> None:
        message.stop()
        step = self.view.steps.get(message.step or "")
        if step is None:
            return
        rows = self.session.evidence.rows_shown
        if message.row is not None and message.row < len(rows):
            verdict, ev = rows[message.row]
            title = f"{ev.target}: {ev.command}  ({verdict.fault})"
            text = raw_for(step, ev)
        else:
            title = f"{step.info.title}: raw output"
            text = raw_for(step, None)
        from screens.modals import RawOutputModal

        self.push_screen(RawOutputModal(title, text or "(no raw output recorded for this step)"))

    # --- commands, quitting --------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if isinstance(screen, SessionScreen):
            for intent, title, help_ in (
                ("run", "Run step", "Run (or re-run) the step shown"),
                ("raw", "Show raw output", "The raw tool output behind the selected evidence"),
                ("apply", "Apply fix", "Apply the fix offered for this step"),
                ("skip", "Skip step", "Skip the step shown"),
                ("back", "Back", "Go back one step"),
                ("next", "Next step", "Go on to the next step"),
            ):
                yield SystemCommand(title, help_, lambda i=intent: screen.action_intent(i))
            yield SystemCommand(
                "Show gauges",
                "Per-rail gauges in the bottom panel",
                lambda: screen.action_show_bottom("gauges"),
            )
            yield SystemCommand(
                "Show log",
                "The engine's log in the bottom panel",
                lambda: screen.action_show_bottom("log"),
            )
            yield SystemCommand(
                "Toggle explanation", "Hide or show what/why/good", screen.action_toggle_explain
            )

    def action_toggle_explain(self) -> None:
        self.session.action_toggle_explain()

    def action_request_quit(self) -> None:
        unapplied = [] if self.view.ended is not None else self.view.unapplied_work()
        if not unapplied:
            self.exit_session()
            return

        def decided(quit_: bool | None) -> None:
            if quit_:
                self.exit_session()

        from screens.modals import QuitModal

        self.push_screen(QuitModal(unapplied), callback=decided)

    def exit_session(self) -> None:
        self._quit_event.set()
        ended = self.view.ended
        healthy = ended is not None and ended.healthy
        # 2: could not start, or the engine stopped (an error, or the walk given up on: no
        # target answered, the log could not be written), as `fabwiz fix` says it; 1: not
        # proven healthy
        stopped = self._failed or (ended is not None and bool(ended.reason))
        code = 2 if stopped else (0 if healthy else 1)
        self.call_later(self._exit_after_cleanup, code)

    async def _exit_after_cleanup(self, code: int) -> None:
        worker = self.engine_worker
        if worker is not None and not worker.is_finished:
            if not self._engine_done:
                worker.cancel()  # the factory's exit stack still closes what it started
            try:
                await asyncio.wait_for(worker.wait(), timeout=5)
            except (TimeoutError, WorkerCancelled, WorkerFailed):
                pass  # leaving anyway; the session log has everything
        self.exit(code)
