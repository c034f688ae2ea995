"""The one session screen: step list, step detail (explanation, verdict, evidence, actions),
per-rail gauges and the log pane.

The screen renders what the app hands down (the `SessionView`, the pending question, whether
the engine is up) and turns keys into `...Requested` intents; it never calls the engine. On small
terminals (`-narrow`, `-short` breakpoint classes) the bottom panel shows either the gauges or
the log (`g`/`l` switch), and the explanation shrinks to a scrolling strip.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen

from screens.deadman import DeadmanCountdown
from screens.widgets.conclusion import conclusion
from screens.widgets.detail import ActionBar, EvidenceTable, StepDetail
from screens.widgets.footer import KeysFooter
from screens.widgets.gauges import RailGauges
from screens.widgets.logpane import LogPane
from screens.widgets.messages import (
    ApplyFixRequested,
    BackRequested,
    NextRequested,
    RunStepRequested,
    ShowRawRequested,
    SkipStepRequested,
    StepViewRequested,
)
from screens.widgets.steps import StepList
from screens.widgets.titlebar import TitleBar
from screens.widgets.view_model import SessionView, StepView
from wizard.model import Status
from wizard.safetext import clean

DIRECT_SKIP = (
    "Without the direct-connect test the wizard cannot tell a host-side fault (NIC, PCIe, "
    "CX7 state) from a switch-path one: every later verdict rests on the bisection it gives."
)
_LEVEL = {"debug": " ", "info": "·", "warn": "!", "error": "✘"}


@dataclass(slots=True)
class Prompt:
    """What the screen needs to show of a pending engine question."""

    step: str
    question: str
    offered: frozenset[str] = field(default_factory=frozenset)  # intents the options map to
    options: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)  # intent -> the engine's word for it


class SessionScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = [  # noqa: RUF012 - Textual's name
        (0, "-narrow"),
        (110, "-wide"),
    ]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]  # noqa: RUF012 - Textual's name
    BINDINGS: ClassVar[list[BindingType]] = [
        # The action bar shows r/x/a/s/b/n with their keys: the footer keeps room for the rest.
        Binding("r", "intent('run')", "Run", show=False),
        Binding("x", "intent('raw')", "Raw", show=False),
        Binding("a", "intent('apply')", "Apply fix", show=False),
        Binding("s", "intent('skip')", "Skip", show=False),
        Binding("b", "intent('back')", "Back", show=False),
        Binding("n", "intent('next')", "Next", show=False),
        Binding("q", "app.request_quit", "Quit"),
        Binding("o", "reopen", "Open question"),
        Binding("u", "show_summary", "Summary"),
        Binding("m", "fabric_map", "Map"),
        Binding("e", "toggle_explain", "Explain"),
        Binding("g", "show_bottom('gauges')", "Gauges"),
        Binding("l", "show_bottom('log')", "Log"),
        Binding("v", "focus_verdicts", "Verdicts", show=False),
        Binding("question_mark", "toggle_explain", "Explain", show=False),
    ]

    def __init__(
        self,
        view: SessionView,
        *,
        gauges: RailGauges | None = None,
        size: tuple[int, int] | None = None,
    ) -> None:
        # The log shows until traffic starts, and the breakpoint classes of the terminal's
        # `size` (Textual sets them again on each resize): given now, they cost no restyle of
        # every widget at the first paint.
        classes = ["-show-log"]
        if size is not None:
            classes += breakpoint_classes(
                size, self.HORIZONTAL_BREAKPOINTS, self.VERTICAL_BREAKPOINTS
            )
        super().__init__(classes=" ".join(classes))
        self.view = view
        self.viewed: str | None = next(iter(view.steps), None)
        self.prompt: Prompt | None = None
        self.engine_ready = False
        self.engine_takes_requests = False  # an engine with `request(intent, step)`
        self.hidden_question: str | None = None  # a modal question hidden with Esc, still open
        self._gauges = gauges or RailGauges(id="gauges")
        self._log_shown = 0
        self._bottom_chosen = False
        self._composed = False
        # the panes every repaint writes to, kept rather than looked up in the DOM each time
        self._steps = StepList(view, id="steps")
        self._detail = StepDetail(id="detail")
        self._log = LogPane(id="log", max_lines=5000, auto_scroll=True)

    # --- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield TitleBar(icon="≋")
        with Horizontal(id="main"):
            yield self._steps
            yield self._detail
        yield DeadmanCountdown()
        with Horizontal(id="bottom"):
            yield self._gauges
            yield self._log
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#gauges").border_title = "Rails · Gb/s against the expected ceiling"
        self._log.border_title = "Log"
        self._steps.focus()
        self._first_show()
        # Nested widgets may finish composing after this handler: render again once they have.
        self.call_after_refresh(self._first_show)

    def _first_show(self) -> None:
        self._composed = True
        self.update_view({"steps", "detail", "log"})

    @property
    def gauges(self) -> RailGauges:
        return self._gauges

    @property
    def evidence(self) -> EvidenceTable:
        return self._detail.query_one(EvidenceTable)

    # --- rendering (attributes down) -------------------------------------------------------

    def follow(self, step: str) -> None:
        """Look at the step the engine is on."""
        self.viewed = step
        steps = self._steps
        if not steps.is_attached:
            return  # the screen is being torn down as the app closes
        ids = list(self.view.steps)
        if step in ids and steps.index != ids.index(step):
            steps.index = ids.index(step)

    def update_view(self, changed: Collection[str]) -> None:
        if not self._composed:
            return
        parts = set(changed)
        if "steps" in parts and self._steps.is_attached:
            self._steps.refresh_steps()
        if parts & {"detail", "steps", "prompt", "ended"}:
            self._show_detail()
        if "log" in changed:
            self._append_log()

    def _show_detail(self) -> None:
        if self.viewed is None or self.viewed not in self.view.steps:
            return
        step = self.view.steps[self.viewed]
        prompt = self.prompt
        question = None
        offered: frozenset[str] = frozenset()
        if prompt is not None:
            offered = prompt.offered
            keys = " · ".join(
                f"{prompt.labels.get(o, o)} [{_KEYS.get(o, '?')}]" for o in _ORDER if o in offered
            )
            where = "" if prompt.step == self.viewed else f"({prompt.step}) "
            question = f"{where}{prompt.question}" + (f"  — {keys}" if keys else "")
        elif self.hidden_question is not None:
            question = f"Still open: {self.hidden_question} — press o to open it again"
        elif self.view.waiting is not None:
            w = self.view.waiting
            question = (
                f"Hands needed: {w.kind.replace('_', ' ')} on {', '.join(w.nodes)}; "
                "the wizard watches for the result"
            )
        detail = self._detail
        if not detail.showable:  # the app is closing
            return
        detail.show(
            step,
            is_current=self.view.current == step.id,
            question=question,
            enabled=self.enabled_intents(),
            offered=offered,
            conclusion=conclusion(step, self._gauges.expectations, self._open_elsewhere(step)),
        )

    def _open_elsewhere(self, step: StepView) -> list[str]:
        """The faults whose latest verdict fails or warns, judged by another step, that can
        hold a rail test down (not NCCL's configuration, not what persists at boot)."""
        return [
            fault
            for fault, (at, v) in self.view.latest.items()
            if at != step.id
            and fault not in step.verdicts
            and v.status in (Status.FAIL, Status.WARN)
            and not fault.startswith(("nccl.", "persist."))
        ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "reopen":
            return self.hidden_question is not None  # in the footer only when there is one
        if action == "show_summary":
            return self.view.ended is not None
        return True

    def enabled_intents(self) -> set[str]:
        step = self.view.steps.get(self.viewed or "")
        enabled: set[str] = set()
        if step is not None and (step.probes or any(v.evidence for v in step.verdicts.values())):
            enabled.add("raw")
        if not self.engine_ready or self.view.ended is not None:
            return enabled
        if self.prompt is not None:
            enabled |= self.prompt.offered  # the answers the engine waits for
        if self.engine_takes_requests:
            enabled |= {"run", "skip", "back", "next"}
            if step is not None and step.open_fix is not None:
                enabled.add("apply")
        return enabled

    def _append_log(self) -> None:
        log = self._log
        if not log.is_attached:  # the screen is being torn down as the app closes
            return
        lines = []
        stamps: dict[int, str] = {}  # a sweep's lines share a few seconds
        for at, level, text in self.view.log[self._log_shown :]:
            second = int(at)
            stamp = stamps.get(second)
            if stamp is None:
                stamp = stamps[second] = time.strftime("%H:%M:%S", time.gmtime(second))
            # the engine's words around names and outputs from the targets: no escapes reach
            # the terminal (wizard.safetext)
            lines.append(f"{stamp} {_LEVEL.get(level, '·')} {clean(text)}")
        self._log_shown = len(self.view.log)
        if lines:
            log.write_lines(lines)

    def samples_arrived(self) -> None:
        """On small terminals, show the gauges once traffic starts (unless the operator chose)."""
        if not self._bottom_chosen and self.has_class("-show-log"):
            self.remove_class("-show-log")
            self.add_class("-show-gauges")

    # --- intents (messages up) ---------------------------------------------------------------

    def action_intent(self, intent: str) -> None:
        if intent not in self.enabled_intents():
            prompt = self.prompt
            if prompt is not None and prompt.offered:
                answers = ", ".join(f"{o} [{_KEYS.get(o, '?')}]" for o in sorted(prompt.offered))
                hint = f"the engine asks “{clean(prompt.question)}”: {answers}"
            else:
                hint = "the engine is working; it asks when it needs you"
            # plain text: the key hints are in brackets, and the question can name targets
            self.notify(f"{intent}: not now — {hint}", severity="warning", timeout=3, markup=False)
            return
        step = self.viewed
        if intent == "skip" and step == "direct_connect":
            from screens.modals import ConfirmModal

            def decided(sure: bool | None) -> None:
                if sure:
                    self.post_message(SkipStepRequested(step))

            self.app.push_screen(
                ConfirmModal("Skip the direct-connect test?", DIRECT_SKIP, yes="Skip anyway"),
                callback=decided,
            )
            return
        if intent == "raw":
            self.post_message(ShowRawRequested(step, self.evidence.selected_row))
            return
        cls = {
            "run": RunStepRequested,
            "apply": ApplyFixRequested,
            "skip": SkipStepRequested,
            "back": BackRequested,
            "next": NextRequested,
        }[intent]
        self.post_message(cls(step))

    def action_show_bottom(self, which: str) -> None:
        self._bottom_chosen = True
        self.set_class(which == "log", "-show-log")
        self.set_class(which == "gauges", "-show-gauges")

    def action_toggle_explain(self) -> None:
        """e: hide the explanation when it shows, show it (in full, scrolling) when it does
        not, at any size and while a question is open."""
        shown = self.query_one("#explain").display
        self.set_class(not shown, "-explain-on")
        self.set_class(shown, "-no-explain")

    def action_fabric_map(self) -> None:
        """m: host and switch per lane, side by side."""
        from screens.fabric_map import FabricMapModal, lanes

        source = getattr(self.app, "rails_source", None)
        rails = [r for group in source().values() for r in group] if callable(source) else []
        cabling = getattr(self.app, "cabling", None) or {}
        rows = lanes(self.view, rails, self._gauges.gauges, cabling)
        self.app.push_screen(FabricMapModal(rows))

    def action_show_summary(self) -> None:
        """u: the end-of-session screen again."""
        show = getattr(self.app, "action_show_summary", None)
        if callable(show):
            show()

    def action_reopen(self) -> None:
        """o: the question hidden with Esc, back on screen."""
        reopen = getattr(self.app, "action_reopen", None)
        if callable(reopen):
            reopen()

    def action_focus_verdicts(self) -> None:
        """v: the verdict list takes the keys (↑/↓ scroll it); v again goes back."""
        verdicts = self.query_one("#verdict")
        if verdicts.has_focus:
            self.query_one(StepList).focus()
        else:
            verdicts.focus()

    def on_action_bar_pressed(self, message: ActionBar.Pressed) -> None:
        message.stop()
        self.action_intent(message.intent)

    def on_step_view_requested(self, message: StepViewRequested) -> None:
        if message.step != self.viewed:
            self.viewed = message.step
            self._show_detail()


def breakpoint_classes(
    size: tuple[int, int],
    horizontal: Sequence[tuple[int, str]],
    vertical: Sequence[tuple[int, str]],
) -> list[str]:
    """The breakpoint classes Textual gives a screen of `size` (the widest that fits, per axis)."""
    out = []
    for dimension, points in zip(size, (horizontal, vertical), strict=True):
        fits = [name for at, name in sorted(points, reverse=True) if dimension >= at]
        out += fits[:1]
    return out


_ORDER = ("next", "run", "apply", "skip", "back", "raw")
_KEYS = {"run": "r", "apply": "a", "skip": "s", "back": "b", "next": "n", "raw": "x"}
