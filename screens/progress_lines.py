"""What headless long work is doing, from the sweep's and the engine's own events.

`ProgressModel` is the state (no output, no rich): the traffic plan's rounds ("round 3 of 7"),
the NCCL run's elapsed time against the time its message sizes take at the expected busbw, the
physical action being waited for with the time left before the engine gives up. Each event that
starts a phase gives one plain line; `PlainProgress` writes those lines to stderr, for output
that is not a terminal or is JSON (stdout is never touched). `screens.progress` draws the same
state live on a terminal.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from flows.expectations import DEFAULT, Expectations
from wizard import safetext
from wizard.model import Measurement

if TYPE_CHECKING:
    from wizard.events import (
        Event,
        MeasurementTaken,
        PhysicalActionDone,
        PhysicalActionRequested,
        ProbeSent,
        StepChanged,
        TrafficPlanned,
    )

_LIMIT = re.compile(r"\btimeout\s+(?:-k\s+\S+\s+)?(\d+)")
_NCCL_TOOL = re.compile(r"\b(\w+_perf)\b")
_NP = re.compile(r"(?:^|\s)-np\s+(\d+)\b")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMG]?)$", re.I)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# busbw = algbw * factor (nccl-tests' PERFORMANCE.md), n ranks
_BUS_FACTOR: dict[str, Callable[[int], float]] = {
    "all_reduce_perf": lambda n: 2 * (n - 1) / n,
    "all_gather_perf": lambda n: (n - 1) / n,
    "reduce_scatter_perf": lambda n: (n - 1) / n,
    "alltoall_perf": lambda n: (n - 1) / n,
    "sendrecv_perf": lambda n: 1.0,
    "broadcast_perf": lambda n: 1.0,
    "reduce_perf": lambda n: 1.0,
}
WAIT_S = 900.0  # the engine's default physical_timeout_s


def _flag(args: str, name: str) -> str | None:
    m = re.search(rf"(?:^|\s)-{name}\s+['\"]?(\d+(?:\.\d+)?[KMGkmg]?)\b", args)
    return m.group(1) if m else None


def _bytes(text: str | None) -> int | None:
    m = _SIZE.match(text or "")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()]) if m else None


def nccl_expected_s(command: str, limits: Expectations) -> float | None:
    """The seconds an nccl-tests run's transfers take at the expected busbw: warm-up at the
    largest and the smallest size, then each size out of place and in place, `-n` times each.
    None when the command does not say (no tool, ranks or sizes, an unknown operation). Launch
    and NCCL setup time are not in it."""
    tool = _NCCL_TOOL.search(command)
    ranks = _NP.search(command)
    if tool is None or ranks is None or tool.group(1) not in _BUS_FACTOR:
        return None
    n = int(ranks.group(1))
    args = command[tool.end() :]  # nccl-tests' defaults where a flag is not given
    lo, hi = _bytes(_flag(args, "b") or "32M"), _bytes(_flag(args, "e") or "32M")
    factor = float(_flag(args, "f") or 2)
    iters, warmup = int(float(_flag(args, "n") or 20)), int(float(_flag(args, "w") or 5))
    if lo is None or hi is None or n < 2 or factor <= 1 or lo > hi:
        return None
    busbw = limits.nccl_expected(n) * 1e9  # GB/s: bytes per second
    per_byte = _BUS_FACTOR[tool.group(1)](n) / busbw  # seconds per byte of message
    sizes: list[int] = []
    s = float(lo)
    while s <= hi:
        sizes.append(int(s))
        s *= factor
    return per_byte * (warmup * (hi + lo) + sum(2 * iters * size for size in sizes))


def _pairs(pairs: tuple[str, ...], shown: int = 2) -> str:
    more = f" +{len(pairs) - shown} more" if len(pairs) > shown else ""
    return ", ".join(pairs[:shown]) + more


def _value(m: Measurement) -> str:
    if m.extra.get("bidir"):
        return f"{m.value / 2:.1f} {m.unit} each way"
    return f"{m.value:.1f} {m.unit}"


@dataclass
class Nccl:
    tool: str
    started: float
    expected_s: float | None
    limit_s: int | None


@dataclass
class Waiting:
    what: str
    started: float
    wait_s: float


_EVENT_TYPES = (
    "MeasurementTaken",
    "PhysicalActionDone",
    "PhysicalActionRequested",
    "ProbeSent",
    "StepChanged",
    "TrafficPlanned",
)


def _load_event_types() -> None:
    """Bind the event types `feed` tells apart, once. They load with whoever makes the events
    (the sweep, the engine): a progress printer is made before them, on the path to the first
    handshake, and an import statement per probe event costs more than the event's line."""
    from wizard import events

    globals().update({name: getattr(events, name) for name in _EVENT_TYPES})


class ProgressModel:
    """The state of headless long work, fed one event at a time; `feed` gives the lines of the
    phases that event started or ended (target text cleaned of escapes and controls)."""

    def __init__(
        self,
        limits: Expectations = DEFAULT,
        *,
        wait_s: float = WAIT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits, self.wait_s, self.clock = limits, wait_s, clock
        self.step = ""
        self.sent = 0
        self.answered = 0
        self.rails = 0  # rail measurements seen
        self.last = ""  # the last rail result, "109.2 Gb/s on a->b"
        self.rounds: tuple[tuple[str, ...], ...] = ()
        self.round = 0  # rounds of the plan done
        self._in_round = 0  # measurements of the current round seen
        self.nccl: list[Nccl] = []  # the runs going on (the walk runs some at once)
        self.waiting: Waiting | None = None

    @property
    def round_line(self) -> str:
        """The rails line, as "rail tests: round 3 of 7 (a->b, c->d)", or the count once the
        plan is done."""
        total = len(self.rounds)
        if total and self.round < total:
            pairs = _pairs(self.rounds[self.round])
            return f"rail tests: round {self.round + 1} of {total} ({pairs})"
        return f"rail tests: {self.rails} measured"

    @property
    def round_short(self) -> str:
        """The rails line for a live display: "rail tests: round 3 of 7 (2 pairs at once)"."""
        total = len(self.rounds)
        if total and self.round < total:
            n = len(self.rounds[self.round])
            return f"rail tests: round {self.round + 1} of {total} ({n} pair(s) at once)"
        return f"rail tests: {self.rails} measured"

    def nccl_left(self, run: Nccl) -> str:
        """Elapsed against expected, as "12 s of ~40 s expected" (or against its time limit
        when the sizes do not say)."""
        elapsed = self.clock() - run.started
        if run.expected_s is not None:
            return f"{elapsed:.0f} s of ~{max(run.expected_s, 1):.0f} s expected"
        bound = f", stops by {run.limit_s} s" if run.limit_s else ""
        return f"{elapsed:.0f} s{bound}"

    def wait_left(self) -> str:
        """The time left before the engine stops waiting, as "14:32 left"."""
        if self.waiting is None:
            return ""
        left = max(0.0, self.waiting.wait_s - (self.clock() - self.waiting.started))
        return f"{int(left) // 60}:{int(left) % 60:02d} left"

    def feed(self, ev: Event) -> list[str]:
        if "ProbeSent" not in globals():
            _load_event_types()
        if isinstance(ev, StepChanged):
            self.step = ev.step
        elif isinstance(ev, ProbeSent):
            self.sent += 1
            tool = _NCCL_TOOL.search(ev.command)
            if tool is not None and "ib_write_bw" not in ev.command:
                return self._nccl_started(tool.group(1), ev.command)
        elif isinstance(ev, TrafficPlanned):
            self.rounds, self.round, self._in_round = ev.rounds, 0, 0
            if not ev.rounds:
                return ["rail tests: nothing to test (no rail up with an address on both ends)"]
            pairs = sum(len(r) for r in ev.rounds)
            return [
                safetext.clean(
                    f"rail tests: {len(ev.rounds)} round(s), {pairs} pair(s), "
                    f"{ev.duration_s:g} s each"
                ),
                safetext.clean(self.round_line),
            ]
        elif isinstance(ev, MeasurementTaken):
            return self._measured(ev.measurement)
        elif isinstance(ev, PhysicalActionRequested):
            what = f"waiting for {', '.join(ev.nodes)} ({ev.kind.replace('_', ' ')})"
            self.waiting = Waiting(what, self.clock(), self.wait_s)
            return [safetext.clean(f"{what}: up to {self.wait_s:.0f} s")]
        elif isinstance(ev, PhysicalActionDone) and self.waiting is not None:
            took = self.clock() - self.waiting.started
            line = f"{self.waiting.what}: done after {took:.0f} s"
            self.waiting = None
            return [safetext.clean(line)]
        return []

    def _nccl_started(self, tool: str, command: str) -> list[str]:
        limit = _LIMIT.search(command)
        expected = nccl_expected_s(command, self.limits)
        self.nccl.append(Nccl(tool, self.clock(), expected, int(limit.group(1)) if limit else None))
        if expected is not None:
            ranks = _NP.search(command)
            n = int(ranks.group(1)) if ranks else 0
            why = f"~{max(expected, 1):.0f} s expected at {self.limits.nccl_expected(n):g} GB/s"
        else:
            why = f"stops by {limit.group(1)} s" if limit else "no expected duration"
        return [safetext.clean(f"NCCL {tool} started ({why})")]

    def _measured(self, m: Measurement) -> list[str]:
        if m.kind == "nccl":
            # its target names the operation unless it is the all-reduce ("cluster")
            op = next((t for t in _BUS_FACTOR if t in m.target), "all_reduce_perf")
            run = next((r for r in self.nccl if r.tool == op), None)
            if run is None:
                return []
            self.nccl.remove(run)
            took, tool = self.clock() - run.started, run.tool
            result = f"{m.value:.2f} {m.unit}" if m.valid else f"no result ({m.reason})"
            return [safetext.clean(f"NCCL {tool} done after {took:.0f} s: {result}")]
        if m.kind != "rail":
            return []
        self.rails += 1
        self.last = f"{_value(m)} on {m.target}"
        total = len(self.rounds)
        if total and self.round < total:
            self._in_round += 1
            if self._in_round < len(self.rounds[self.round]):
                return []
            self.round, self._in_round = self.round + 1, 0
            done = f"rail tests: round {self.round} of {total} done, last {self.last}"
            if self.round < total:
                return [safetext.clean(done), safetext.clean(self.round_line)]
            return [safetext.clean(done)]
        return [safetext.clean(f"rail test: {self.last}")]  # a re-run or a -b test


class PlainProgress:
    """Phase lines on a stream (stderr): one per round, NCCL run and physical action; an
    event sink, also a context manager like the live display."""

    def __init__(self, stream: TextIO, model: ProgressModel | None = None) -> None:
        self.stream = stream
        self.model = model or ProgressModel()

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stream.flush()

    def __call__(self, ev: Event) -> None:
        for line in self.model.feed(ev):
            self.stream.write(f"fabwiz: {line}\n")
            self.stream.flush()


__all__ = ["PlainProgress", "ProgressModel", "nccl_expected_s"]
