"""Modals for the decisions the engine awaits, and for nothing else.

- `FixConfirmModal` (bool): the preview, the export's state and the rollback window. "Apply"
  stays disabled until the switch export is verified (host-only fixes need no export).
- `PhysicalActionModal`: instructions, a checklist, the AC-drain countdown, then a waiting state
  ("waiting for spark3 to come back") fed by engine events until the action is seen done. The
  operator's answer ("done", "perform", "skip") resolves a future as soon as it is given; the
  modal stays up while the engine watches, and closes when the engine reports the result.
- `ChoiceModal` (str), `ErrorModal` (None), `QuitModal` (bool), `RawOutputModal` (None).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, ProgressBar, SelectionList, Static, TextArea

from wizard.events import Event, NodeDrained, Note, PhysicalActionDone
from wizard.fixes import ExportStatus
from wizard.model import FixPlan, PhysicalAction
from wizard.safetext import clean

DRAIN_SECONDS = 60  # AC off long enough to clear the CX7 degraded state (FAULTS.md)

KIND_TITLES = {
    "recable": "Re-cable",
    "ac_drain": "AC drain",
    "reboot": "Reboot",
    "reseat": "Reseat",
    "firmware_update": "Firmware update",
    "power_cycle": "Power cycle",
    "manual": "Change by hand",
}
_COMES_BACK = ("ac_drain", "reboot", "power_cycle", "firmware_update")
_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+")
_STEP_SPLIT = re.compile(r";\s+|,\s+(?![^()]*\))")  # commas outside parentheses
_NOTES = ("Reason", "The wizard", "Why")  # explanations in the text, not things to do


def checklist_items(instructions: str) -> list[str]:
    """Checklist entries from the engine's instructions: numbered/bulleted lines, else lines,
    else sentences. Presentation only; the wording is the engine's."""
    lines = [ln.strip() for ln in instructions.splitlines() if ln.strip()]
    bullets = [_ITEM.sub("", ln) for ln in lines if _ITEM.match(ln)]
    if bullets:
        return bullets
    if len(lines) > 1:
        return lines
    sentences = [s.strip() for s in re.split(r"(?<=\.)\s+", instructions) if s.strip()]
    if not sentences:
        return []
    # "AC-drain spark3: shut down, unplug the cord, wait 60 s, power on." -> one item per action
    head, sep, rest = sentences[0].partition(": ")
    first = [i.strip() for i in _STEP_SPLIT.split(rest) if i.strip()] if sep else [head]
    first = [i.removeprefix("and ").removeprefix("then ") for i in first]
    items = first + [s for s in sentences[1:] if not s.startswith(tuple(_NOTES))]
    return [i[:1].upper() + i[1:] for i in items]


ResultT = TypeVar("ResultT")


class Dialog(ModalScreen[ResultT]):
    """A centred box with its own footer; shrinks on short terminals (`-short`)."""

    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]  # noqa: RUF012 - Textual's name
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "app.request_quit", "Quit", priority=True),
    ]

    def on_mount(self) -> None:
        # The session screen's footer would show keys that do nothing here.
        self.mount(Footer())


class FixConfirmModal(Dialog[bool | None]):
    """Apply (True) or decline (False, the fix stays on offer); Esc hides the question, which
    stays open: the session screen re-opens it (`o`). The answer resolves `answer`."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "apply", "Apply"),
        Binding("c", "cancel", "Decline"),
        Binding("escape", "hide", "Hide"),
    ]

    def __init__(
        self,
        plan: FixPlan,
        export: ExportStatus | None,
        *,
        rollback_window_s: float | None = None,
        answer: asyncio.Future[bool] | None = None,
    ) -> None:
        super().__init__(classes="dialog")
        self.plan = plan
        self.export = export
        self.rollback_window_s = rollback_window_s
        self.answer: asyncio.Future[bool] = answer or asyncio.get_running_loop().create_future()

    @property
    def needs_export(self) -> bool:
        return bool(self.plan.switch_changes)

    @property
    def can_apply(self) -> bool:
        return not self.needs_export or bool(self.export is not None and self.export.verified)

    def compose(self) -> ComposeResult:
        plan = self.plan
        with Vertical(id="dialog", classes="fix"):
            yield Static(Text(f"Apply fix: {clean(plan.summary)}", style="bold"), id="dialog-title")
            yield Static(Text(clean(f"{plan.fault} on {plan.target}")), classes="dim")
            with VerticalScroll(id="preview"):
                yield Static(Text(clean(plan.preview) or "(no preview)"), id="preview-text")
            yield Static("", id="preview-more", classes="dim")
            yield Static(self._export_text(), id="export", classes=self._export_class())
            yield Static(self._rollback_text(), id="rollback")
            with Horizontal(classes="buttons"):
                yield Button(
                    "Apply (a)",
                    id="apply",
                    variant="warning",
                    disabled=not self.can_apply,
                    compact=True,
                )
                yield Button("Decline (c)", id="cancel", compact=True)
                yield Button("Hide (esc)", id="hide", compact=True)

    def on_mount(self) -> None:
        super().on_mount()
        scroll = self.query_one("#preview", VerticalScroll)
        scroll.watch(scroll, "scroll_y", lambda _y: self._more_lines(), init=False)
        scroll.focus()  # ↑/↓ and page keys scroll the preview; a, c and Esc still answer
        self.call_after_refresh(self._more_lines)

    def on_resize(self) -> None:
        self.call_after_refresh(self._more_lines)

    def _more_lines(self) -> None:
        """The "N more lines" cue under a preview taller than its box."""
        scroll = self.query_one("#preview", VerticalScroll)
        total = len((self.plan.preview or "").splitlines())
        shown_to = int(scroll.scroll_y) + max(1, scroll.scrollable_content_region.height)
        left = max(0, total - shown_to)
        more = self.query_one("#preview-more", Static)
        more.display = left > 0
        more.update(f"↓ {left} more line(s): scroll with ↑/↓ or the mouse" if left else "")

    def _export_class(self) -> str:
        if not self.needs_export:
            return "-none"
        return "-pass" if self.can_apply else "-fail"

    def _export_text(self) -> Text:
        out = Text("Export: ", style="bold")
        if not self.needs_export:
            out.append("no switch change, no export needed")
            return out
        ex = self.export
        if ex is None:
            out.append("not taken yet: Apply stays disabled until the export is verified")
            return out
        out.append(f"{ex.switch}:{ex.file} ")
        if ex.verified:
            out.append(f"✔ verified, {ex.size} bytes, sha256 {ex.sha256[:16]}…, kept in session")
        elif ex.error:
            out.append(f"✘ failed: {ex.error}. Apply stays disabled.")
        else:
            out.append("… not verified yet. Apply stays disabled.")
        return out

    def _rollback_text(self) -> Text:
        plan = self.plan
        out = Text("Rollback: ", style="bold")
        parts: list[str] = []
        window = f" in {self.rollback_window_s:.0f} s" if self.rollback_window_s else ""
        for change in plan.switch_changes:
            parts.append(
                f"a dead-man scheduler entry on {change.switch} undoes the change{window} "
                "unless verification passes"
            )
        for host in plan.host_changes:
            parts.append(f"{host.node}: files backed up, timed revert{window} unless confirmed")
        out.append("; ".join(parts) or "nothing to roll back")
        if plan.bounces_links:
            out.append("\nLinks will bounce: the affected nodes need a drain before measuring.")
        return out

    @on(Button.Pressed, "#apply")
    def action_apply(self) -> None:
        if self.can_apply:
            if not self.answer.done():
                self.answer.set_result(True)
            self.dismiss(True)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        if not self.answer.done():
            self.answer.set_result(False)
        self.dismiss(False)

    @on(Button.Pressed, "#hide")
    def action_hide(self) -> None:
        self.dismiss(None)


class PhysicalActionModal(Dialog[str | None]):
    """Esc hides the modal and leaves its question open (the session screen re-opens it with
    `o`); only Skip skips, after a confirmation when `skip_warning` says what is lost. While the
    engine watches for the result, `c` stops waiting (`on_cancel_wait`) and the engine asks
    again."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "answer('done')", "Done"),
        Binding("p", "answer('perform')", "Perform in lab"),
        Binding("s", "answer('skip')", "Skip"),
        Binding("t", "start_timer", "Start timer", show=False),
        Binding("c", "cancel_wait", "Stop waiting"),
        Binding("escape", "hide", "Hide"),
    ]

    def __init__(
        self,
        action: PhysicalAction,
        *,
        can_perform_in_lab: bool,
        answer: asyncio.Future[str] | None = None,
        drain_s: int = DRAIN_SECONDS,
        skip_warning: str | None = None,
        on_cancel_wait: Callable[[], None] | None = None,
        waiting_since: float | None = None,
    ) -> None:
        super().__init__(classes="dialog")
        self.action = action
        self.can_perform_in_lab = can_perform_in_lab
        self.answer: asyncio.Future[str] = answer or asyncio.get_running_loop().create_future()
        self.skip_warning = skip_warning
        self.on_cancel_wait = on_cancel_wait
        self.drain_s = drain_s
        self.remaining: float | None = None
        self.state = "ask"  # then "waiting", then dismissed
        self.back: set[str] = set()
        self._started: float | None = None
        self._waiting_since: float | None = waiting_since
        self._close_pending = False

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "answer" and parameters == ("perform",) and not self.can_perform_in_lab:
            return False  # hidden from the footer: this build has no lab hands
        if action == "answer" and self.state != "ask":
            return False
        if action == "cancel_wait":
            return self.state == "waiting" and self.on_cancel_wait is not None
        return not (action == "start_timer" and not self.is_drain)

    @property
    def is_drain(self) -> bool:
        return self.action.kind == "ac_drain"

    def compose(self) -> ComposeResult:
        a = self.action
        title = f"Hands needed: {KIND_TITLES.get(a.kind, a.kind)} on {', '.join(a.nodes)}"
        with Vertical(id="dialog", classes="physical"):
            yield Static(Text(clean(title), style="bold"), id="dialog-title")
            yield Static(Text(clean(a.instructions)), id="instructions")
            items = checklist_items(a.instructions)
            if len(items) > 1:
                # the items name nodes, ports and cables: plain text (never markup), cleaned
                entries = [(Text(clean(t)), i) for i, t in enumerate(items)]
                yield SelectionList[int](*entries, id="checklist")
            if self.is_drain:
                yield Static(self._countdown_text(), id="countdown")
                yield ProgressBar(
                    total=self.drain_s, show_eta=False, show_percentage=False, id="drain-bar"
                )
            yield Static("", id="waiting")
            with Horizontal(classes="buttons", id="wait-buttons"):
                yield Button("Stop waiting (c)", id="cancel-wait", compact=True)
                yield Button("Hide (esc)", id="hide-wait", compact=True)
            with Horizontal(classes="buttons", id="ask-buttons"):
                done = "I changed it, re-check (d)" if a.kind == "manual" else "Done (d)"
                yield Button(done, id="done", variant="primary", compact=True)
                if self.can_perform_in_lab:
                    yield Button("Perform (p)", id="perform", variant="success", compact=True)
                if self.is_drain:
                    yield Button(f"{self.drain_s} s timer (t)", id="timer", compact=True)
                yield Button("Skip (s)", id="skip", compact=True)
                yield Button("Hide (esc)", id="hide", compact=True)

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#waiting").display = False
        self.query_one("#wait-buttons").display = False
        if self.answer.done() and self.answer.result() != "skip":
            self._enter_waiting()  # re-opened while the engine watches

    def _countdown_text(self) -> Text:
        if self.remaining is None:
            return Text(f"Keep AC unplugged {self.drain_s} s: press t when the cord is out.")
        if self.remaining <= 0:
            return Text("AC off long enough: plug back in and power on.", style="bold")
        return Text(f"AC off: {self.remaining:.0f} s left")

    def update_countdown(self, remaining: float) -> None:
        self.remaining = max(0.0, remaining)
        if not self.is_drain or not self.is_mounted:
            return
        self.query_one("#countdown", Static).update(self._countdown_text())
        self.query_one("#drain-bar", ProgressBar).update(progress=self.drain_s - self.remaining)

    def action_start_timer(self) -> None:
        if not self.is_drain or self._started is not None:
            return
        self._started = time.monotonic()
        self.update_countdown(self.drain_s)
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        if self._started is not None and self.state == "ask":
            self.update_countdown(self.drain_s - (time.monotonic() - self._started))
        if self._waiting_since is not None:
            self._show_waiting()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "timer":
            self.action_start_timer()
        elif event.button.id in ("done", "perform", "skip"):
            self.action_answer(event.button.id)
        elif event.button.id in ("hide", "hide-wait"):
            self.action_hide()
        elif event.button.id == "cancel-wait":
            self.action_cancel_wait()

    def action_answer(self, answer: str) -> None:
        if self.state != "ask" or (answer == "perform" and not self.can_perform_in_lab):
            return
        if answer == "skip" and self.skip_warning:

            def decided(sure: bool | None) -> None:
                if sure:
                    self._give("skip")

            self.app.push_screen(
                ConfirmModal("Skip this?", self.skip_warning, yes="Skip anyway", no="Go back"),
                callback=decided,
            )
            return
        self._give(answer)

    def _give(self, answer: str) -> None:
        if self.state != "ask":
            return
        if not self.answer.done():
            self.answer.set_result(answer)
        if answer == "skip" or self.action.kind not in (*_COMES_BACK, "recable"):
            self.dismiss(answer)
            return
        self._enter_waiting()

    def _enter_waiting(self) -> None:
        self.state = "waiting"
        if self._waiting_since is None:
            self._waiting_since = time.monotonic()
        self.query_one("#ask-buttons").display = False
        self.query_one("#wait-buttons").display = True
        self.query_one("#cancel-wait").display = self.on_cancel_wait is not None
        self._show_waiting()
        if self._started is None:
            self.set_interval(1.0, self._tick)
        self.refresh_bindings()

    def action_cancel_wait(self) -> None:
        """Stop waiting: the engine stops watching and asks the question again."""
        if self.state != "waiting" or self.on_cancel_wait is None:
            return
        self.state = "cancelling"
        self.on_cancel_wait()
        self._show_waiting("stopping the wait: the question comes back")
        self.refresh_bindings()

    def _show_waiting(self, line: str = "") -> None:
        a = self.action
        pending = [n for n in a.nodes if n not in self.back]
        if a.kind in _COMES_BACK:
            text = f"Waiting for {', '.join(pending) or 'the nodes'} to come back"
        else:
            who = ", ".join(pending) or "the nodes"  # a moved cable: its port down, then up
            text = f"Waiting for the moved cable(s) of {who}: port down, then carrier up"
        if self._waiting_since is not None:
            text += f" ({time.monotonic() - self._waiting_since:.0f} s)"
        if self.state == "waiting" and self.on_cancel_wait is not None:
            text += "  · c: stop waiting, the question comes back"
        out = Text(f"… {clean(text)}", style="bold")
        if self.back:
            out.append(f"\nback: {clean(', '.join(sorted(self.back)))}")
        if line:
            out.append(f"\n{line}")
        widget = self.query_one("#waiting", Static)
        widget.display = True
        widget.update(out)

    def close(self) -> None:
        """Dismiss when on top; else as soon as whatever covers it (an error) goes away."""
        result = self.answer.result() if self.answer.done() else "skip"
        if self.app.screen is self:
            self.dismiss(result)
        else:
            self._close_pending = True

    def on_screen_resume(self) -> None:
        if self._close_pending:
            self._close_pending = False
            self.dismiss(self.answer.result() if self.answer.done() else "skip")

    def on_engine_event(self, event: Event) -> None:
        """Fed by the app while this modal is up: the engine's view of the action's progress."""
        if isinstance(event, PhysicalActionDone) and event.kind == self.action.kind:
            self.close()
            return
        if isinstance(event, NodeDrained):
            self.back.add(event.node)
        remaining = getattr(event, "remaining_s", None)
        if isinstance(remaining, int | float):
            self.update_countdown(float(remaining))
        if self.state == "waiting":
            self._show_waiting(event.text if isinstance(event, Note) else "")

    def action_hide(self) -> None:
        """Hide the modal: its question stays open (or the wait goes on); `o` brings it back."""
        self.dismiss(None)


class ConfirmModal(Dialog[bool]):
    """Are you sure? y / n (Esc is no)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "yes", "Yes"),
        Binding("escape,n", "no", "No"),
    ]

    def __init__(self, title: str, body: str, *, yes: str = "Yes", no: str = "No") -> None:
        super().__init__(classes="dialog")
        self.title_text = title
        self.body = body
        self.yes_label = yes
        self.no_label = no

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="quit"):
            yield Static(Text(clean(self.title_text), style="bold"), id="dialog-title")
            yield Static(Text(clean(self.body)))
            with Horizontal(classes="buttons"):
                yield Button(f"{self.yes_label} (y)", id="yes", variant="error", compact=True)
                yield Button(f"{self.no_label} (n)", id="no", variant="primary", compact=True)

    @on(Button.Pressed, "#yes")
    def action_yes(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#no")
    def action_no(self) -> None:
        self.dismiss(False)


class ChoiceModal(Dialog[str]):
    """A question with free options (anything the action bar cannot express)."""

    def __init__(self, step: str, question: str, options: Sequence[str]) -> None:
        super().__init__(classes="dialog")
        self.step = step
        self.question = question
        self.options = list(options)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="choice"):
            yield Static(Text(clean(self.question), style="bold"), id="dialog-title")
            with Horizontal(classes="buttons"):
                for i, opt in enumerate(self.options, start=1):
                    yield Button(
                        f"{opt} ({i})",
                        id=f"opt-{i}",
                        variant="primary" if i == 1 else "default",
                        compact=True,
                    )

    def on_key(self, event: Any) -> None:
        key = getattr(event, "key", "")
        if key.isdigit() and 1 <= int(key) <= len(self.options):
            event.stop()
            self.dismiss(self.options[int(key) - 1])

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        index = int((event.button.id or "opt-1").removeprefix("opt-")) - 1
        self.dismiss(self.options[index])


class ErrorModal(Dialog[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,enter", "close", "Close")]

    def __init__(self, title: str, message: str, hint: str | None) -> None:
        super().__init__(classes="dialog")
        self.title_text = title
        self.message = message
        self.hint = hint

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="error"):
            yield Static(Text(f"✘ {clean(self.title_text)}", style="bold"), id="dialog-title")
            with VerticalScroll(id="error-body"):
                yield Static(Text(clean(self.message)))
            hint = self.hint or "Check the log pane for details, then re-run the step [r]."
            yield Static(Text.assemble(("What to do: ", "bold"), clean(hint)), id="hint")
            with Horizontal(classes="buttons"):
                yield Button("OK (enter)", id="ok", variant="primary", compact=True)

    @on(Button.Pressed, "#ok")
    def action_close(self) -> None:
        self.dismiss(None)


class QuitModal(Dialog[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,ctrl+q", "quit", "Quit anyway", priority=True),
        Binding("escape,n", "stay", "Stay"),
    ]

    def __init__(self, unapplied: Sequence[str]) -> None:
        super().__init__(classes="dialog")
        self.unapplied = list(unapplied)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="quit"):
            yield Static(Text("Quit with unapplied work?", style="bold"), id="dialog-title")
            yield Static(Text(clean("\n".join(f"• {u}" for u in self.unapplied))))
            yield Static(
                Text("The session log keeps everything: `fabwiz resume` continues it later."),
                classes="dim",
            )
            with Horizontal(classes="buttons"):
                yield Button("Quit (y)", id="quit", variant="error", compact=True)
                yield Button("Stay (n)", id="stay", variant="primary", compact=True)

    @on(Button.Pressed, "#quit")
    def action_quit(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#stay")
    def action_stay(self) -> None:
        self.dismiss(False)


class RawOutputModal(Dialog[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,x", "close", "Close")]

    def __init__(self, title: str, text: str) -> None:
        super().__init__(classes="dialog")
        self.title_text = title
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="raw"):
            yield Static(Text(clean(self.title_text), style="bold"), id="dialog-title")
            yield TextArea(clean(self.text), read_only=True, soft_wrap=False, id="raw-text")
            with Horizontal(classes="buttons"):
                yield Button("Close (esc)", id="close", compact=True)

    @on(Button.Pressed, "#close")
    def action_close(self) -> None:
        self.dismiss(None)
