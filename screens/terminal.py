"""The headless wizard's operator and event printer: the engine's ports on a plain terminal.

`TerminalOperator` asks on the terminal before each fix and physical action (or answers for the
operator with `--yes`; against a lab, `--yes` also performs physical actions with the lab's
hands). `EventPrinter` shows the walk as it happens with rich: steps, evidence, verdicts, fixes.
With `--json` everything human goes to stderr so stdout carries only the final object.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import click
from rich.console import Console
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from wizard.events import (
    Event,
    ExportTaken,
    FixApplied,
    FixRefusedEvent,
    FixRolledBack,
    FixVerified,
    MeasurementTaken,
    Note,
    PhysicalActionDone,
    RollbackArmed,
    StepChanged,
    VerdictReached,
)
from wizard.fixes import ExportStatus
from wizard.model import Evidence, FixPlan, PhysicalAction, Status
from wizard.safetext import clean
from wizard.safetext import markup as esc

STATUS_STYLE = {
    Status.PASS: "green",
    Status.BENIGN: "cyan",
    Status.UNKNOWN: "magenta",
    Status.WARN: "yellow",
    Status.FAIL: "bold red",
}


class TerminalOperator:
    def __init__(self, console: Console, *, yes: bool, interactive: bool | None = None) -> None:
        self.console = console
        self.yes = yes
        self.interactive = sys.stdin.isatty() if interactive is None else interactive

    def _ask(self, question: str, default: bool) -> bool:
        if self.yes:
            self.console.print(f"[dim]{esc(question)} yes (--yes)[/]")
            return True
        if not self.interactive:
            self.console.print(f"[yellow]{esc(question)} no (no terminal to ask on; use --yes)[/]")
            return False
        return click.confirm(question, default=default, err=True)

    async def confirm_fix(self, plan: FixPlan, export: ExportStatus | None) -> bool:
        body = (
            Syntax(clean(plan.preview), "bash", word_wrap=True)
            if plan.preview
            else esc(plan.summary)
        )
        self.console.print(
            Panel(body, title=f"fix {plan.fault} on {esc(plan.target)}", subtitle=esc(plan.summary))
        )
        if export is not None:
            state = "verified" if export.verified else f"NOT verified ({esc(export.error)})"
            self.console.print(
                f"  export {export.file} on {export.switch}: {state}, {export.size} bytes, "
                f"sha256 {export.sha256[:12]}"
            )
            if not export.verified:
                return False
        if plan.bounces_links:
            self.console.print("  [yellow]this change bounces links: a drain follows[/]")
        return self._ask("Apply this fix?", default=False)

    async def physical_action(self, action: PhysicalAction, can_perform_in_lab: bool) -> str:
        self.console.print(
            Panel(esc(action.instructions), title=f"physical action: {action.kind}", style="yellow")
        )
        if can_perform_in_lab and self._ask("Perform it with the lab's hands?", default=True):
            return "perform"
        if self.yes or not self.interactive:
            self.console.print("[dim]waiting for the result at the rack...[/]")
            return "done"
        if click.confirm("Done? (no = skip this action)", default=True, err=True):
            return "done"
        return "skip"

    async def choose(self, step: str, question: str, options: list[str]) -> str:
        if self.yes or not self.interactive:
            return options[0]
        return str(click.prompt(question, type=click.Choice(options), default=options[0], err=True))

    async def error(self, title: str, message: str, hint: str | None) -> None:
        text = esc(message) if not hint else f"{esc(message)}\n[dim]what to do:[/] {esc(hint)}"
        self.console.print(Panel(text, title=esc(title), style="red"))


class EventPrinter:
    """Prints the events a human needs to follow the walk (not every probe)."""

    def __init__(self, console: Console, *, verbose: bool = False) -> None:
        self.console = console
        self.verbose = verbose

    def __call__(self, event: Event) -> None:
        handler = _PRINTERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def _step(self, event: StepChanged) -> None:
        if event.phase == "entered":
            self.console.rule(f"[bold]{esc(event.step)}[/]")
        elif self.verbose:
            self.console.print(f"[dim]{esc(event.step)}: {esc(event.phase)}[/]")

    def _verdict(self, event: VerdictReached) -> None:
        v = event.verdict
        if v.status is Status.PASS and not self.verbose:
            return
        style = STATUS_STYLE[v.status]
        self.console.print(
            f"[{style}]{v.status.value.upper():7}[/] {esc(v.fault)}: {esc(v.summary)}"
        )
        if v.status is not Status.PASS and v.evidence:
            self.console.print(_evidence_table(v.evidence))

    def _measurement(self, event: MeasurementTaken) -> None:
        m = event.measurement
        flag = "" if m.valid else f" [yellow](not judged: {esc(m.reason)})[/]"
        if m.valid and m.reason:
            flag = f" [red]({esc(m.reason)})[/]"
        self.console.print(f"  measured {esc(m.target)}: {m.value:.2f} {esc(m.unit)}{flag}")

    def _export(self, event: ExportTaken) -> None:
        self.console.print(
            f"  [cyan]export[/] {esc(event.file)} on {esc(event.switch)} ({esc(event.purpose)}): "
            f"{len(event.contents)} bytes, sha256 {event.sha256[:12]}"
        )

    def _armed(self, event: RollbackArmed) -> None:
        self.console.print(
            f"  [cyan]rollback armed[/] {esc(event.name)} on {esc(event.target)} "
            f"(fires in {event.window_s:.0f} s unless the fix is verified)"
        )

    def _applied(self, event: FixApplied) -> None:
        self.console.print(f"  [bold]applied[/] {esc(event.fault)} on {esc(event.target)}")

    def _verified(self, event: FixVerified) -> None:
        if event.ok:
            self.console.print(f"  [green]verified[/] {esc(event.fault)}: {esc(event.detail)}")
        else:
            self.console.print(
                f"  [red]verification failed[/] {esc(event.fault)}: {esc(event.detail)}"
            )

    def _rolled_back(self, event: FixRolledBack) -> None:
        self.console.print(
            f"  [red]rolled back[/] {event.fault}: {esc(event.reason)}"
            + (" (switch back at the exported state)" if event.restored else "")
        )

    def _refused(self, event: FixRefusedEvent) -> None:
        self.console.print(
            f"  [red]refused[/] {event.fault} on {esc(event.target)}: {esc(event.reason)}"
        )

    def _physical(self, event: PhysicalActionDone) -> None:
        self.console.print(
            f"  [green]done[/] {esc(event.kind)} ({esc(event.performed_by)}): {esc(event.observed)}"
        )

    def _note(self, event: Note) -> None:
        style = {"info": "dim", "warn": "yellow", "error": "red"}.get(event.level, "dim")
        self.console.print(f"  [{style}]{esc(event.text)}[/]")


def _evidence_table(evidence: Sequence[Evidence]) -> Table:
    """The first eight rows of a verdict's evidence; values from targets are plain text."""
    table = Table(show_header=True, header_style="dim", box=None, padding=(0, 1))
    for col in ("target", "command", "observed", "expected"):
        table.add_column(col, overflow="fold")
    for e in evidence[:8]:
        table.add_row(*(Text(clean(x)) for x in (e.target, e.command, e.observed, e.expected)))
    if len(evidence) > 8:
        table.add_row("...", f"{len(evidence) - 8} more", "", "")
    return table


_PRINTERS: dict[type[Any], Callable[[EventPrinter, Any], None]] = {
    StepChanged: EventPrinter._step,
    VerdictReached: EventPrinter._verdict,
    MeasurementTaken: EventPrinter._measurement,
    ExportTaken: EventPrinter._export,
    RollbackArmed: EventPrinter._armed,
    FixApplied: EventPrinter._applied,
    FixVerified: EventPrinter._verified,
    FixRolledBack: EventPrinter._rolled_back,
    FixRefusedEvent: EventPrinter._refused,
    PhysicalActionDone: EventPrinter._physical,
    Note: EventPrinter._note,
}
