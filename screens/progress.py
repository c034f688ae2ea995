"""Live progress of headless long work on a terminal (`fabwiz check --perf`, `fabwiz fix`).

An event sink: the sweep's and the engine's own events drive it, nothing is polled. It shows the
probes answered, the rail tests of the traffic plan (how many measured, the last number), the
NCCL run (elapsed against its time limit) and a physical action being waited for (the drain).
It is transient (gone when the work ends, so the report that follows stands alone) and only on a
terminal: `progress_for` gives None for `--json` or when stderr is not a terminal, and then
nothing at all is printed.
"""

from __future__ import annotations

import re
import sys
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from wizard import safetext
from wizard.events import (
    Event,
    MeasurementTaken,
    PhysicalActionDone,
    PhysicalActionRequested,
    ProbeAnswered,
    ProbeSent,
    StepChanged,
)

_LIMIT = re.compile(r"\btimeout\s+(?:-k\s+\S+\s+)?(\d+)")
_NCCL_TOOL = re.compile(r"\b(\w+_perf)\b")


class HeadlessProgress:
    """A rich Progress fed by events; use as a context manager around the work."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._probes: TaskID | None = None
        self._rails: TaskID | None = None
        self._nccl: TaskID | None = None
        self._waiting: TaskID | None = None
        self.sent = 0
        self.answered = 0
        self.rails = 0
        self.step = ""
        self.started = False

    def __enter__(self) -> HeadlessProgress:
        return self  # the display starts with the first event: a password prompt comes first

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.started:
            self.progress.stop()

    def __call__(self, ev: Event) -> None:
        p = self.progress
        if not self.started:
            self.started = True
            p.start()
        if isinstance(ev, StepChanged):
            self.step = ev.step
        elif isinstance(ev, ProbeSent):
            self.sent += 1
            if self._probes is None:
                self._probes = p.add_task("probes answered", total=None)
            p.update(self._probes, total=self.sent)
            tool = _NCCL_TOOL.search(ev.command)
            if tool is not None and "ib_write_bw" not in ev.command:
                self._start_nccl(tool.group(1), ev.command)
        elif isinstance(ev, ProbeAnswered):
            self.answered += 1
            if self._probes is not None:
                p.update(self._probes, completed=self.answered)
        elif isinstance(ev, MeasurementTaken):
            m = ev.measurement
            if m.kind == "rail":
                self.rails += 1
                if self._rails is None:
                    self._rails = p.add_task("rail tests", total=None)
                last = (
                    f"{m.value / 2:.1f} {m.unit} each way"
                    if m.extra.get("bidir")
                    else f"{m.value:.1f} {m.unit}"
                )
                p.update(
                    self._rails,
                    completed=self.rails,
                    description=safetext.markup(
                        f"rail tests: {self.rails} measured, last {last} on {m.target}"
                    ),
                )
            elif m.kind == "nccl" and self._nccl is not None:
                p.update(self._nccl, completed=1, total=1)
                p.remove_task(self._nccl)
                self._nccl = None
        elif isinstance(ev, PhysicalActionRequested):
            what = f"waiting for {', '.join(ev.nodes)} ({ev.kind.replace('_', ' ')})"
            self._waiting = p.add_task(safetext.markup(what), total=None)
        elif isinstance(ev, PhysicalActionDone) and self._waiting is not None:
            p.remove_task(self._waiting)
            self._waiting = None

    def _start_nccl(self, tool: str, command: str) -> None:
        limit = _LIMIT.search(command)
        bound = f", stops by {limit.group(1)} s" if limit else ""
        if self._nccl is not None:
            self.progress.remove_task(self._nccl)
        self._nccl = self.progress.add_task(
            safetext.markup(f"NCCL {tool} running{bound}"), total=None
        )

    @property
    def shown(self) -> str:
        """The task lines as they read now (for tests and logs)."""
        return "\n".join(t.description for t in self.progress.tasks)


def progress_for(*, as_json: bool, stream: TextIO | None = None) -> HeadlessProgress | None:
    """Progress on stderr when it is a terminal and the output is not JSON; else None."""
    out = sys.stderr if stream is None else stream
    if as_json or not out.isatty():
        return None
    return HeadlessProgress(Console(file=out, highlight=False))


__all__ = ["HeadlessProgress", "progress_for"]
