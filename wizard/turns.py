"""Time slices of an event loop for synchronous work that comes in many pieces."""

from __future__ import annotations

import asyncio
import time
from collections import deque

__all__ = ["Turns"]


class Turns:
    """Keeps a piece of synchronous work from holding the event loop past a time slice.

    A task awaits `take()`, then runs its synchronous piece (no await in it). Pieces run at once
    while the loop's current turn has spent less than `slice_s` on them; after that, each waits
    for a later turn of the loop, first come first served, and the loop polls its sockets and
    runs what else is ready (a TUI's keys, its repaints) in between. When 64 nodes are ready in
    the same turn, each would otherwise run its piece in that one turn, one after the other. An
    `asyncio.Lock` does not do this: a holder that never awaits releases it before the next task
    asks, and that one walks in."""

    def __init__(self, slice_s: float = 0.015) -> None:
        self.slice_s = slice_s
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._calling = False
        self._began: float | None = None  # when this turn's first piece began

    async def take(self) -> None:
        loop = asyncio.get_running_loop()
        now = time.perf_counter()
        if not self._waiting and (self._began is None or now - self._began < self.slice_s):
            self._start(loop, now)
            return
        turn: asyncio.Future[None] = loop.create_future()
        self._waiting.append(turn)
        if not self._calling:
            self._calling = True
            loop.call_soon(self._call_next)
        await turn
        self._start(loop, time.perf_counter())

    def _start(self, loop: asyncio.AbstractEventLoop, now: float) -> None:
        if self._began is None:
            self._began = now
            loop.call_soon(self._end_turn)  # runs once the loop has come round

    def _end_turn(self) -> None:
        self._began = None

    def _call_next(self) -> None:
        # one waiter woken a turn (its task runs in the next one), then the next one
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():  # a waiter cancelled meanwhile gives its turn away
                turn.set_result(None)
                break
        if self._waiting:
            asyncio.get_running_loop().call_soon(self._call_next)
        else:
            self._calling = False
