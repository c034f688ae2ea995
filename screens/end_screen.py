"""The end of the session, on one screen: found, fixed (with the export taken before), skipped
or never checked, the numbers before and after, and the two commands to use next.

Shown when the engine ends the session; Esc closes it to look at the steps again, `u` on the
session screen brings it back, `q` quits.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Static

from screens.modals import Dialog
from screens.widgets.summary import SessionSummary
from wizard.safetext import clean


def summary_text(s: SessionSummary) -> Text:
    """The summary as text. Names, summaries and reasons come from the targets through the log
    (and a log can be edited): each is shown without its escapes and controls
    (`wizard.safetext.clean`)."""
    out = Text()
    if s.healthy:
        out.append("✔ Healthy", style="bold")
        out.append(": every check passed and the bandwidth was proven at the end.\n")
    elif s.healthy is None:
        out.append("… Not finished.\n", style="bold")
    else:
        out.append("✘ Not healthy", style="bold")
        out.append(f": {clean(s.reason)}.\n" if s.reason else ": findings remain (below).\n")

    out.append("\nFound\n", style="bold underline")
    if not s.found:
        out.append("  nothing failing\n")
    for f in s.found:
        mark = "✔ fixed" if f.fixed else "✘ open "
        out.append(f"  {mark}  ", style="bold")
        out.append(clean(f.fault))
        if f.targets:
            out.append(
                f" on {clean(', '.join(f.targets[:4]))}" + (" …" if len(f.targets) > 4 else "")
            )
        out.append(f"  (found at {clean(f.step)})", style="dim")
        if f.export:
            out.append(f"\n           export before the change: {clean(f.export)}", style="dim")
        out.append("\n")

    if s.skipped or s.never_checked or s.not_proven:
        out.append("\nSkipped or not checked\n", style="bold underline")
        for title in s.skipped:
            out.append(f"  » {clean(title)}: skipped by the operator\n")
        for what in s.not_proven:
            out.append(f"  » {clean(what)}\n")
        for fault, targets, why in s.never_checked:
            out.append(f"  ? {clean(fault)}", style="bold")
            said = f" on {', '.join(targets)}: {why}\n" if targets else f": {why}\n"
            out.append(clean(said))

    if s.numbers:
        out.append("\nBefore and after\n", style="bold underline")
        for n in s.numbers:
            out.append(f"  {n.what} ({n.unit})\n")
            out.append(f"    before the first fix: {n.before_text}\n")
            out.append(f"    at the end:           {n.after_text}\n")

    out.append("\nNext\n", style="bold underline")
    out.append(f"  {clean(s.report_command)}", style="bold")
    out.append("   the ticket report (add --format html, --redact)\n")
    out.append(f"  {clean(s.resume_command)}", style="bold")
    out.append("   continue this session later\n")
    return out


class SessionEndModal(Dialog[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back to the steps"),
        Binding("q", "app.request_quit", "Quit"),
    ]

    def __init__(self, summary: SessionSummary) -> None:
        super().__init__(classes="dialog")
        self.summary = summary

    def compose(self) -> ComposeResult:
        s = self.summary
        with Vertical(id="dialog", classes="end"):
            title = f"Session {clean(s.session_id)} ended" if s.session_id else "Session ended"
            yield Static(Text(title, style="bold"), id="dialog-title")
            with VerticalScroll(id="end-body"):
                yield Static(summary_text(s), id="end-text")
            with Horizontal(classes="buttons"):
                yield Button("Steps (esc)", id="close", compact=True)
                yield Button("Quit (q)", id="quit", variant="primary", compact=True)

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#end-body").focus()

    @on(Button.Pressed, "#close")
    def action_close(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#quit")
    def _quit(self) -> None:
        self.app.action_request_quit()  # type: ignore[attr-defined]
