"""A round of rail tests: when each test moves data, and the counters read around that.

perftest's client connects, sleeps a second (write_bw.c: `sleep(1)` after
`establish_connection`), exchanges its QP data, prints its results header (` #bytes
#iterations ...`, the line just before the data moves; the client runs under `stdbuf -oL` so
the line comes as it is printed) and writes for `-D` seconds; the bandwidth it reports is what
moved between its margins (duration/4 at each end). The counters that prove a cause (the
sender's `tx_packets_phy` and ACK timeouts, the receiver's `rx_packets_phy`, the switch legs,
the switch CPU) are read for the whole round at once inside that data phase: once every test of
the round has printed its header and every client of the round before has returned, and again
before the next round's clients connect. A round's window holds its own data and nothing else: no
handshake, no other round's tail, and no frame of a test that ended before it opened.

Rounds follow each other at the test's duration (`Round(prev=...)`): the next round's servers
start while this round moves data, and its clients connect so that perftest's second of sleep
ends as this round's data does (the time from a client's launch to its header, measured on this
round). A round whose data phase is too short for that (its window would be under a quarter of
it) is read after its tests end instead, and the next round waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from wizard.counters import (
    deltas,
    node_seconds,
    parse_rails,
    rails_command,
    switch_deltas,
    switch_ports,
)
from wizard.model import Measurement, Rail

if TYPE_CHECKING:
    from wizard.sweep import Sweeper

__all__ = [
    "CPU_SAMPLE_S",
    "MIN_WALL_SAMPLE_S",
    "Round",
    "Slot",
    "counters_of",
    "current_round",
    "rail_round",
    "sample_cpu",
    "sampled_extra",
    "switch_port_counters",
]

CPU_SAMPLE_S = 0.25  # the switch CPU is sampled this often during a transfer (targets' time)
MIN_WALL_SAMPLE_S = 0.002  # and never more often than this (wall time: one API round trip)
# the after-read starts this many before-reads' lengths ahead of the next round's launch
READ_MARGIN = 1.5
# below this share of the data phase, a window is not worth the overlap: read after the end
MIN_WINDOW_SHARE = 0.25
# the round the rail tests of a task belong to (`rail_round` sets it for its jobs)
_ROUND: contextvars.ContextVar[Round | None] = contextvars.ContextVar("fabwiz_round", default=None)


@dataclass(eq=False, slots=True)
class Slot:
    """One rail test of a round: its two rails, and when its client went and its data began."""

    client: Rail
    server: Rail
    duration_wall: float
    launched: float | None = None  # the start of the client's last attempt
    data: float | None = None  # when its results header came: its data began
    ended: bool = False  # its client has returned: its data moves no more
    in_window: bool = False  # moving data when the round's window opened
    # still moving data when the window closed: the window is inside its data phase (else
    # the after-read came after its end, and the window holds some idle time as well)
    inside: bool = False


@dataclass(slots=True)
class _Window:
    before: dict[str, dict[str, int] | None] = field(default_factory=dict)
    after: dict[str, dict[str, int] | None] = field(default_factory=dict)
    seconds: float = 0.0  # targets' seconds between the two reads


class Round:
    """The rail tests run at once, their counter window, and when the next round may connect."""

    def __init__(self, sw: Sweeper, *, prev: Round | None = None) -> None:
        self.sw = sw
        self.prev = prev
        self.clock = sw.clock_rate or 1.0
        self.slots: list[Slot] = []
        self.opened = asyncio.Event()  # the window is open (or there is nothing to read)
        self.closed = asyncio.Event()  # its after-read is in and `launch_at` is known
        self.still = asyncio.Event()  # every client of the round has ended: no data moves
        self.launch_at = 0.0  # when the next round's clients connect (time.monotonic)
        self.read_s = 0.0  # how long its after-read took (wall seconds)
        self.extra: dict[str, object] = {}  # switch_cpu, switch_ports: for every job's result
        self._window = _Window()
        self._change = asyncio.Event()
        self._jobs_done = False
        self._all_joined = False

    # --- what the tests say -------------------------------------------------------------------

    def join(self, client: Rail, server: Rail, duration_s: float) -> Slot:
        """A test of this round (before its first await: the round waits for what joined)."""
        slot = Slot(client, server, duration_s / self.clock)
        self.slots.append(slot)
        return slot

    async def may_launch(self) -> None:
        """Until the round before says its data is about to end (at once for the first)."""
        if self.prev is None:
            return
        prev = self.prev
        await prev.closed.wait()
        wait = prev.launch_at - time.monotonic()
        if wait > 0 and not prev.still.is_set():
            # or as soon as every client of that round has ended (a stalled round ends early)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(prev.still.wait(), wait)

    def launched(self, slot: Slot) -> None:
        slot.launched = time.monotonic()

    def data(self, slot: Slot) -> None:
        if slot.data is None:
            slot.data = time.monotonic()
            self._change.set()

    def end(self, slot: Slot) -> None:
        slot.ended = True
        self._change.set()
        self._if_still()

    def _if_still(self) -> None:
        """`still` once every test has ended, known only once all have joined (arrived)."""
        if self._all_joined and all(s.ended for s in self.slots):
            self.still.set()

    async def counters(self, slot: Slot) -> tuple[dict[str, dict[str, int]], float | None]:
        """The test's counter deltas per end over the round's window, and the window's length
        in targets' seconds ({}, None: it moved no data while the window was open); whether
        the window closed while its data still moved is `slot.inside`."""
        await self.closed.wait()
        if not slot.in_window:
            return {}, None
        w = self._window
        out = {}
        for side, rail in (("client", slot.client), ("server", slot.server)):
            a, b = w.before.get(rail.key), w.after.get(rail.key)
            if a is not None and b is not None:
                out[side] = deltas(a, b)
        # the span on the sender's own clock between its two reads; else the estimate from
        # when the reads were sent and answered (as long as a round trip off, either way)
        key = slot.client.key
        on_node = node_seconds(w.before.get(key), w.after.get(key))
        return out, on_node if on_node is not None else w.seconds

    # --- the round ----------------------------------------------------------------------------

    async def run(self, jobs: Sequence[Awaitable[Measurement]]) -> list[Measurement]:
        """The jobs run (each test in them joins this round); their results, each with the
        switch CPU and the switch ports of the round's window."""
        token = _ROUND.set(self)
        try:
            gathered = asyncio.gather(*jobs)  # the jobs' tasks take this round in their context
        finally:
            _ROUND.reset(token)
        window = asyncio.ensure_future(self._coordinate())
        try:
            results = await gathered
            self._jobs_done = True
            self._change.set()
            await window
        finally:
            self.still.set()
            self.opened.set()
            self.closed.set()
            window.cancel()
        # the round's tests go with each result: its switch CPU samples are theirs together
        tests = [
            [s.client.node, s.client.netdev, s.server.node, s.server.netdev] for s in self.slots
        ]
        extra = {**self.extra, "round_tests": tests}
        return [replace(m, extra={**m.extra, **extra}) for m in results]

    def _arrived(self) -> bool:
        if not self.slots:
            return self._jobs_done
        return all(s.data is not None or s.ended for s in self.slots)

    async def _until(self, *, at: float | None = None) -> None:
        """Until something changes (or `at`, time.monotonic)."""
        self._change.clear()
        timeout = None if at is None else max(0.0, at - time.monotonic())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._change.wait(), timeout)

    async def _coordinate(self) -> None:
        try:
            await self._window_of_the_round()
        finally:
            self.opened.set()
            if not self.closed.is_set():
                self.launch_at = time.monotonic()
                self.closed.set()

    async def _window_of_the_round(self) -> None:
        while not self._arrived():
            await self._until()
        self._all_joined = True  # whatever joins has joined before its first answer
        self._if_still()
        if self.prev is not None:
            # every client of the round before has returned: none of its data moves any more
            # (a server sends no data of its own once its client is done)
            await self.prev.still.wait()
        live = [s for s in self.slots if s.data is not None and not s.ended]
        if not live:
            return
        rails = {r.key: r for s in live for r in (s.client, s.server)}
        t0 = time.monotonic()
        self._window.before, ports_before = await self._read(rails)
        opened = time.monotonic()
        # a test that ended while it was read may have stopped before it: its deltas would
        # say it sent nothing, so it has none ("not read"), not zeros
        live = [s for s in live if not s.ended]
        if not live:
            return
        for s in live:
            s.in_window = True
        self.opened.set()
        # when this round's data ends, and when the next round's clients connect to follow it
        ends = max(s.data + s.duration_wall for s in live if s.data is not None)
        first_end = min(s.data + s.duration_wall for s in live if s.data is not None)
        setup = max(
            (s.data - s.launched for s in live if s.data is not None and s.launched is not None),
            default=0.0,
        )
        launch_at = ends - setup
        # the after-read takes about what the last one took (the before-read runs as the
        # clients start, the node and switch CPUs at their busiest)
        read_s = self.prev.read_s if self.prev is not None and self.prev.read_s else opened - t0
        close_at = min(first_end, launch_at) - READ_MARGIN * read_s
        shortest = min(s.duration_wall for s in live)
        pipelined = close_at - opened >= MIN_WINDOW_SHARE * shortest
        done = asyncio.Event()
        sampler = asyncio.ensure_future(sample_cpu(self.sw, done)) if self.sw.switches else None
        try:
            if pipelined:  # until just before the next round connects (or a test ends early)
                while time.monotonic() < close_at and not any(s.ended for s in live):
                    await self._until(at=close_at)
            else:
                while not all(s.ended for s in live):
                    await self._until()
            closing = time.monotonic()
        finally:
            done.set()
            samples = await sampler if sampler is not None else []
        self._window.after, ports_after = await self._read(rails)
        self.read_s = time.monotonic() - closing
        for s in live:
            s.inside = not s.ended
        # each read took its counters somewhere between its start and its answer: the
        # window runs from the middle of the one to the middle of the other
        self._window.seconds = ((closing + self.read_s / 2) - (t0 + opened) / 2) * self.clock
        self.launch_at = launch_at if pipelined else time.monotonic()
        self.extra = sampled_extra(
            samples, opened, closing, ports_before, ports_after, margin_s=0.0
        )
        self.closed.set()

    async def _read(
        self, rails: dict[str, Rail]
    ) -> tuple[dict[str, dict[str, int] | None], dict[str, dict[str, dict[str, int]]]]:
        """Every rail's counters and every switch's ports, read at once."""
        got, ports = await asyncio.gather(
            counters_of(self.sw, list(rails.values())), switch_port_counters(self.sw)
        )
        return got, ports


def current_round() -> Round | None:
    """The round the running rail test belongs to (None: it runs on its own)."""
    return _ROUND.get()


async def rail_round(
    sw: Sweeper, jobs: Sequence[Awaitable[Measurement]], *, prev: Round | None = None
) -> list[Measurement]:
    """Rail-test jobs run as one round (see the module): their results, each with the
    counters, switch CPU and switch ports of the round's window."""
    if not jobs:
        return []
    return await Round(sw, prev=prev).run(jobs)


def sampled_extra(
    samples: list[tuple[float, float, str, float]],
    start: float,
    end: float,
    ports_before: dict[str, dict[str, dict[str, int]]],
    ports_after: dict[str, dict[str, dict[str, int]]],
    *,
    margin_s: float,
) -> dict[str, object]:
    """What a transfer's measurements carry of the switches: each switch's highest cpu-load
    among the samples sent at least `margin_s` after `start` and answered at least `margin_s`
    before `end` (`switch_cpu`), and per switch the ports whose counters moved
    (`switch_ports`)."""
    peaks: dict[str, float] = {}
    for sent, answered, name, load in samples:
        if sent >= start + margin_s and answered <= end - margin_s:
            peaks[name] = max(peaks.get(name, 0.0), load)
    moved = {
        name: switch_deltas(ports_before[name], after)
        for name, after in ports_after.items()
        if name in ports_before
    }
    extra: dict[str, object] = {}
    if peaks:
        extra["switch_cpu"] = peaks
    if moved:
        extra["switch_ports"] = moved
    return extra


async def sample_cpu(
    sw: Sweeper, done: asyncio.Event, interval_s: float | None = None
) -> list[tuple[float, float, str, float]]:
    """Every switch's `/system/resource` cpu-load, all switches at once, every `interval_s`
    until `done`: (sent, answered, switch, load) per sample."""
    if interval_s is None:
        interval_s = max(MIN_WALL_SAMPLE_S, CPU_SAMPLE_S / (sw.clock_rate or 1.0))
    samples: list[tuple[float, float, str, float]] = []

    async def one(name: str) -> None:
        sent = time.monotonic()
        res = await sw.switches[name].call("/system/resource", "print", timeout=5.0)
        for row in res.rows if res.error is None else ():
            load = row.get("cpu-load", "")
            if load.strip().isdigit():
                samples.append((sent, time.monotonic(), name, float(load)))

    while not done.is_set():
        await asyncio.gather(*(one(name) for name in sw.switches))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), interval_s)
    return samples


async def switch_port_counters(sw: Sweeper) -> dict[str, dict[str, dict[str, int]]]:
    """Every switch's per-port packet and byte counters (`/interface print`), the switches read
    at once (one connection each)."""
    names = list(sw.switches)
    answers = await asyncio.gather(
        *(sw.switches[n].call("/interface", "print", timeout=10.0) for n in names)
    )
    return {
        n: switch_ports(res.rows)
        for n, res in zip(names, answers, strict=True)
        if res.error is None
    }


async def counters_of(sw: Sweeper, rails: Sequence[Rail]) -> dict[str, dict[str, int] | None]:
    """The counters of these rails by rail key (None: not read), one command per node."""
    by_node: dict[str, list[Rail]] = {}
    for r in rails:
        by_node.setdefault(r.node, []).append(r)

    async def node(name: str, mine: list[Rail]) -> list[tuple[str, dict[str, int] | None]]:
        res = await sw.ssh.run(name, rails_command(mine), timeout=10.0)
        got = parse_rails(res.stdout, len(mine)) if res.error is None else [None] * len(mine)
        return [(r.key, c) for r, c in zip(mine, got, strict=True)]

    answers = await asyncio.gather(*(node(n, rs) for n, rs in by_node.items()))
    return dict(pair for answer in answers for pair in answer)
