"""Live progress of headless long work on a terminal (`fabwiz check --perf`, `fabwiz fix`).

An event sink: the sweep's and the engine's own events drive it, nothing is polled. It shows the
probes answered, the traffic plan's rounds ("round 3 of 7", the last number), the NCCL run
(elapsed against the time its sizes take at the expected busbw) and a physical action being
waited for (the drain, counting down). The state is `screens.progress_lines.ProgressModel`. It
is transient (gone when the work ends, so the report that follows stands alone) and only on a
terminal: `progress_for` gives plain phase lines on stderr for `--json` or when the output is
not a terminal, never the live display.
"""

from __future__ import annotations

import functools
import sys
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TimeElapsedColumn,
)
from rich.text import Text

from screens.progress_lines import PlainProgress, ProgressModel
from wizard import safetext
from wizard.events import Event, MeasurementTaken, ProbeAnswered, ProbeSent, TrafficPlanned


class _Described(ProgressColumn):
    """The task's line, then its text computed at each refresh (elapsed against expected, a
    countdown), in one column so a narrow terminal cuts neither."""

    def render(self, task: Task) -> Text:
        text = Text.from_markup(task.description)
        live = task.fields.get("live")
        if callable(live):
            text.append(f" {live()}", style="progress.elapsed")
        return text


class HeadlessProgress:
    """A rich Progress fed by events; use as a context manager around the work."""

    def __init__(self, console: Console, model: ProgressModel | None = None) -> None:
        self.model = model or ProgressModel()
        self.progress = Progress(
            SpinnerColumn(),
            _Described(),
            BarColumn(bar_width=16),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._probes: TaskID | None = None
        self._rails: TaskID | None = None
        self._nccl: dict[int, TaskID] = {}  # id of the model's run -> its line
        self._waiting: TaskID | None = None
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
        p, model = self.progress, self.model
        if not self.started:
            self.started = True
            p.start()
        had_wait = model.waiting is not None
        model.feed(ev)
        if isinstance(ev, ProbeSent):
            if self._probes is None:
                self._probes = p.add_task("probes answered", total=None)
            p.update(self._probes, total=model.sent)
        elif isinstance(ev, ProbeAnswered):
            model.answered += 1
            if self._probes is not None:
                p.update(self._probes, completed=model.answered)
        elif isinstance(ev, TrafficPlanned) or (
            isinstance(ev, MeasurementTaken) and ev.measurement.kind == "rail"
        ):
            self._show_rails()
        running = {id(r): r for r in model.nccl}
        for key in [k for k in self._nccl if k not in running]:
            p.remove_task(self._nccl.pop(key))  # done: its line goes
        for key, run in running.items():
            if key not in self._nccl:
                what = safetext.markup(f"NCCL {run.tool} running")
                live = functools.partial(model.nccl_left, run)
                self._nccl[key] = p.add_task(what, total=None, live=live)
        if model.waiting is not None and not had_wait:
            what = safetext.markup(model.waiting.what)
            self._waiting = p.add_task(what, total=None, live=model.wait_left)
        elif model.waiting is None and had_wait and self._waiting is not None:
            p.remove_task(self._waiting)
            self._waiting = None

    def _show_rails(self) -> None:
        p, model = self.progress, self.model
        planned = sum(len(r) for r in model.rounds) or None
        if self._rails is None:
            self._rails = p.add_task("rail tests", total=planned)
        line = model.round_short + (f", last {model.last}" if model.last else "")
        p.update(
            self._rails,
            total=planned if planned is None else max(planned, model.rails),
            completed=model.rails,
            description=safetext.markup(line),
        )

    @property
    def shown(self) -> str:
        """The task lines as they read now, with their live text (for tests and logs)."""
        lines = []
        for t in self.progress.tasks:
            live = t.fields.get("live")
            lines.append(t.description + (f" {live()}" if callable(live) else ""))
        return "\n".join(lines)


def progress_for(
    *,
    as_json: bool,
    stream: TextIO | None = None,
    stdout: TextIO | None = None,
    model: ProgressModel | None = None,
) -> HeadlessProgress | PlainProgress:
    """The live display on stderr when stdout and stderr are terminals and the output is not
    JSON; else plain phase lines on stderr (stdout stays the report's alone)."""
    out = sys.stderr if stream is None else stream
    report = sys.stdout if stdout is None else stdout
    if as_json or not out.isatty() or not report.isatty():
        return PlainProgress(out, model)
    return HeadlessProgress(Console(file=out, highlight=False), model)


__all__ = ["HeadlessProgress", "PlainProgress", "progress_for"]
