"""The lab's notion of time: one clock object per world.

Lab time is a simulated wall clock (seconds since the epoch). Everything in the lab that waits
for lab time to pass (`sleep 5`, `ping -c 3`, a perftest run, a reboot, a `netplan try`
timeout, a systemd-run timer) waits on the world's clock, and everything that reads the time
(uptimes, counters, a switch's link training, log stamps) reads it.

- `ScaledClock` runs `time_scale` times faster than life (`fabwiz lab`, `fabwiz demo`).
- `ManualClock` stands still until a test advances it: a test passes one in and moves lab time
  forward without sleeping; whatever was waiting on it wakes, in deadline order.
- `CallableClock` reads lab time from a function (an older way to inject time) and waits like a
  scaled clock.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class Clock:
    """What the lab asks of a clock. Subclasses say what `now` is and how a wait ends."""

    time_scale: float = 1.0

    def now(self) -> float:
        """Lab time: a simulated wall clock, in seconds since the epoch."""
        raise NotImplementedError

    def set(self, sim_now: float) -> None:
        """Make it `sim_now` (a world restored from its state file carries on from its time)."""
        raise NotImplementedError

    async def sleep(self, sim_seconds: float) -> None:
        """Wait until `sim_seconds` of lab time have passed."""
        raise NotImplementedError

    def wall_seconds(self, sim_seconds: float) -> float:
        """How long `sim_seconds` of lab time take in real life at this clock's pace."""
        return sim_seconds / self.time_scale

    async def wait_for(self, aw: Awaitable[T], sim_seconds: float) -> T:
        """`aw`, unless `sim_seconds` of lab time pass first (then `TimeoutError`)."""
        task = asyncio.ensure_future(aw)
        timer = asyncio.ensure_future(self.sleep(sim_seconds))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            timer.cancel()
        if task.done():
            return task.result()
        task.cancel()
        raise TimeoutError


class ScaledClock(Clock):
    """Real time, `time_scale` times faster, starting now."""

    def __init__(self, time_scale: float = 1.0) -> None:
        self.time_scale = time_scale
        self._mono0 = time.monotonic()
        self._sim0 = time.time()

    def now(self) -> float:
        return self._sim0 + (time.monotonic() - self._mono0) * self.time_scale

    def set(self, sim_now: float) -> None:
        self._mono0 = time.monotonic()
        self._sim0 = sim_now

    async def sleep(self, sim_seconds: float) -> None:
        await asyncio.sleep(self.wall_seconds(sim_seconds))

    async def wait_for(self, aw: Awaitable[T], sim_seconds: float) -> T:
        return await asyncio.wait_for(aw, self.wall_seconds(sim_seconds))


class CallableClock(ScaledClock):
    """Lab time read from `read()` (plus the offset `set` adds); waits in scaled real time."""

    def __init__(self, read: Callable[[], float], time_scale: float = 1.0) -> None:
        super().__init__(time_scale)
        self._read = read
        self._offset = 0.0

    def now(self) -> float:
        return self._read() + self._offset

    def set(self, sim_now: float) -> None:
        self._offset = sim_now - self._read()


class ManualClock(Clock):
    """Lab time that moves only when `advance` moves it.

    `await clock.advance(30)` wakes, in deadline order, every sleeper due within the 30
    seconds, letting each run until it waits again (so a loop of `sleep 1` runs 30 times), and
    leaves lab time 30 seconds on. `time_scale` is what `wall_seconds` reports; nothing here
    waits in real time.
    """

    def __init__(self, start: float = 1_790_000_000.0, *, time_scale: float = 1.0) -> None:
        self.t = start
        self.time_scale = time_scale
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return self.t

    def set(self, sim_now: float) -> None:
        self.t = sim_now

    async def sleep(self, sim_seconds: float) -> None:
        if sim_seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.t + sim_seconds, next(self._order), fut))
        await fut

    @property
    def waiting(self) -> int:
        """How many waits on this clock have not ended yet."""
        return sum(1 for _d, _n, fut in self._sleepers if not fut.done())

    async def advance(self, sim_seconds: float) -> None:
        """Move lab time `sim_seconds` on, waking every sleeper due on the way (what was
        ready to run runs first, so a task just started is already waiting)."""
        await self._advance_to(self.t + sim_seconds)

    async def _advance_to(self, target: float) -> None:
        await _settle()
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _n, fut = heapq.heappop(self._sleepers)
            if fut.done():  # its waiter was cancelled
                continue
            self.t = max(self.t, deadline)
            fut.set_result(None)
            await _settle()
        self.t = max(self.t, target)
        await _settle()

    async def run(self, aw: Awaitable[T], *, limit: float = 86_400.0) -> T:
        """`aw` to its end, moving lab time on to the next deadline whenever all it does is
        wait on this clock (at most `limit` seconds of lab time, then `TimeoutError`)."""
        task = asyncio.ensure_future(aw)
        until = self.t + limit
        idle = 0
        while not task.done():
            await _settle(1)
            if task.done():
                break
            due = [d for d, _n, fut in self._sleepers if not fut.done()]
            if not due:
                idle += 1
                if idle > _IDLE_TURNS:  # waiting on something no lab time will bring
                    task.cancel()
                    raise TimeoutError("waiting on something other than the lab clock")
                continue
            idle = 0
            if min(due) > until:
                task.cancel()
                raise TimeoutError(f"still waiting after {limit:g} s of lab time")
            await self._advance_to(min(due))
        return task.result()


_IDLE_TURNS = 10_000  # event-loop turns `ManualClock.run` waits with nobody on the clock


async def _settle(rounds: int = 8) -> None:
    """Let the coroutines just woken run until they wait again (a few event-loop turns)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


def as_clock(clock: Clock | Callable[[], float] | None, time_scale: float) -> Clock:
    """The clock a world runs on: the one given, one reading lab time from a function, or real
    time `time_scale` times faster."""
    if isinstance(clock, Clock):
        return clock
    if clock is not None:
        return CallableClock(clock, time_scale)
    return ScaledClock(time_scale)
