"""Rich output of the headless commands (`fabwiz check`): readable at a glance over SSH.

A summary line, then the findings grouped by step of the bisection order, each with its
evidence table (target, command, observed, expected), then the benign items apart as
"seen, harmless", then the bandwidth measurements when `--perf` ran. Data in, text out: the
report object is built in screens/commands/check.py. Every text that came from a target (names,
comments, outputs, error texts) is shown as plain text (`_plain`): never read as rich markup,
its terminal escapes removed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from flows.bisection import FLOW
from wizard.model import Status, Verdict
from wizard.safetext import clean

if TYPE_CHECKING:
    from screens.commands.check import CheckReport

STYLE = {
    Status.FAIL: "bold red",
    Status.WARN: "yellow",
    Status.UNKNOWN: "magenta",
    Status.BENIGN: "cyan",
    Status.PASS: "green",
}


def make_console(*, stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def step_of(fault: str) -> tuple[int, str]:
    for i, s in enumerate(FLOW):
        if fault in s.faults:
            return i, s.title
    return 0, FLOW[0].title if FLOW else "Preflight"


def _plain(text: object, style: str = "") -> Text:
    """Target text as a literal: no markup, no escape sequences (`wizard.safetext.clean`)."""
    return Text(clean(text), style=style)


def _evidence_table(v: Verdict, limit: int = 6) -> Table:
    t = Table(show_edge=False, pad_edge=False, box=None, header_style="dim")
    t.add_column("target", overflow="fold")
    t.add_column("command", overflow="fold", style="dim")
    t.add_column("observed", overflow="fold")
    t.add_column("expected", overflow="fold", style="dim")
    for e in v.evidence[:limit]:
        t.add_row(
            _plain(e.target),
            _plain(e.command),
            _plain(e.observed, STYLE.get(e.status, "")),
            _plain(e.expected),
        )
    if len(v.evidence) > limit:
        t.add_row("", "", f"... and {len(v.evidence) - limit} more", "")
    return t


def print_report(console: Console, report: CheckReport) -> None:
    findings = [v for v in report.verdicts if v.is_finding]
    benign = [v for v in report.verdicts if v.status == Status.BENIGN]
    reachable_nodes = sum(1 for n in report.nodes if n["reachable"])
    reachable_sw = sum(1 for s in report.switches if s["reachable"])
    for w in report.warnings:
        console.print(_plain(f"warning: {w}", "yellow"))
    if report.healthy and not report.measured:
        head = Text("configuration healthy; bandwidth not measured (run with --perf)")
        head.stylize("bold green", 0, len("configuration healthy"))
    elif report.healthy:
        head = Text("HEALTHY", style="bold green")
    elif not report.checked:
        head = Text("NOTHING CHECKED", style="bold red")
    else:
        fails = sum(1 for v in findings if v.status == Status.FAIL)
        head = Text(f"{len(findings)} finding(s), {fails} failing", style="bold red")
    head.append(
        f"  {reachable_nodes}/{len(report.nodes)} nodes, {reachable_sw}/{len(report.switches)} "
        f"switches checked in {report.seconds:.1f} s",
        style="default",
    )
    console.print(head)
    by_step: dict[tuple[int, str], list[Verdict]] = {}
    for v in findings:
        by_step.setdefault(step_of(v.fault), []).append(v)
    for (i, title), vs in sorted(by_step.items()):
        console.rule(Text(f"step {i + 1}: {title}", style="bold"), align="left")
        for v in vs:
            line = Text(f"{v.status.value.upper():8}", style=STYLE[v.status])
            line.append(f"{v.fault}  ", style="bold")
            line.append(clean(v.summary))
            console.print(line)
            console.print(_evidence_table(v))
    if benign:
        console.rule(Text("seen, harmless", style="cyan"), align="left")
        for v in benign:
            console.print(
                Text(f"{v.fault}  ", style="cyan").append(clean(v.summary), style="default")
            )
    if report.measurements:
        console.rule(Text("measurements", style="bold"), align="left")
        t = Table(box=None, show_edge=False, header_style="dim")
        t.add_column("kind")
        t.add_column("target", overflow="fold")
        t.add_column("value", justify="right")
        t.add_column("note", overflow="fold")
        for m in report.measurements:
            t.add_row(m.kind, _plain(m.target), f"{m.value:.2f} {m.unit}", _plain(m.reason))
        console.print(t)
