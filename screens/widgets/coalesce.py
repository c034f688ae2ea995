"""Coalesced repaints: the detail and log panes follow the engine a few times a second at most.

A sweep emits thousands of events (a probe sent and answered per command per node); rebuilding
the step detail for each one would keep the UI busy long after the data arrived. `Coalescer`
collects the parts of the view that changed and hands them to the screen's render at most once
per `interval_s`: the first change after a quiet spell renders at once, later ones wait for the
next tick. A rare event (a step's phase, a fix) renders as soon as the events queued with it are
in (`soon`): a step's verdict, its next phase and the question after them are one repaint. A
decision (a question, the end of the session) flushes at once: what the operator answers is
always what the engine has said so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from typing import Protocol

UI_FLUSH_S = 0.25  # like the gauges: at most four repaints a second


class _Timers(Protocol):
    def set_timer(self, delay: float, callback: Callable[[], object]) -> object: ...

    def call_later(self, callback: Callable[[], object]) -> bool: ...


class Coalescer:
    def __init__(
        self,
        host: _Timers,
        render: Callable[[Collection[str]], None],
        *,
        interval_s: float = UI_FLUSH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._host = host
        self._render = render
        self.interval_s = interval_s
        self._clock = clock
        self._pending: set[str] = set()
        self._armed = False
        self._soon = False  # a render queued behind the messages already posted
        self._last = -1e18
        self.renders = 0  # how many times the view was rendered (tests, the bench)

    def add(self, parts: Collection[str]) -> None:
        """Some parts changed: render now if the last render is old enough, else soon."""
        if not parts:
            return
        self._pending.update(parts)
        if self._armed or self._soon:  # a render is on its way: it takes these too
            return
        wait = self._last + self.interval_s - self._clock()
        if wait <= 0:
            self.flush()
        else:
            self._armed = True
            self._host.set_timer(wait, self._tick)

    def soon(self, parts: Collection[str]) -> None:
        """Render `parts` once the messages already queued (the events posted with this one,
        a question) are handled: one repaint for the burst, before anything else happens."""
        self._pending.update(parts)
        if self._pending and not self._soon:
            # not queued when the app is closing: the next flush takes what is pending
            self._soon = self._host.call_later(self._soon_tick)

    def flush(self, parts: Collection[str] = ()) -> None:
        """Render now what is pending, with `parts` (a decision shows the latest state)."""
        self._pending.update(parts)
        if not self._pending:
            return
        todo, self._pending = self._pending, set()
        self._last = self._clock()
        self.renders += 1
        self._render(todo)

    @property
    def pending(self) -> frozenset[str]:
        return frozenset(self._pending)

    def _tick(self) -> None:
        self._armed = False
        self.flush()

    def _soon_tick(self) -> None:
        self._soon = False
        self.flush()
