"""The session channels fabwiz holds on one node's SSH connection, kept below its sshd's
MaxSessions.

OpenSSH's sshd carries at most `MaxSessions` session channels on one connection (10 by default;
hardening guides set 4) and refuses one more at its open ("administratively prohibited: open
failed"), leaving the connection and its other sessions up. fabwiz runs everything of a node over
one connection: a rail test's server and client, the counters read during it, the next round's
servers, the gauges' sampling loop, the peers mpirun's SSH is tried against. So each channel
takes a slot first and gives it back when it is closed. The limit starts at OpenSSH's default; a
refusal while fabwiz held other sessions there says the daemon allows fewer: the limit comes down
to what it held, and the refused command waits for a slot and is opened again. A refusal with
nothing else open is the daemon refusing sessions at all, and is reported.
"""

from __future__ import annotations

import asyncio

__all__ = ["DEFAULT_MAX_SESSIONS", "SessionSlots"]

DEFAULT_MAX_SESSIONS = 10  # sshd_config(5) MaxSessions default


class SessionSlots:
    """The session slots of one node's connection."""

    def __init__(self, limit: int = DEFAULT_MAX_SESSIONS) -> None:
        self.limit = limit
        self.open = 0
        self.peak = 0  # the most held at once, for tests and the bench
        self.learned: int | None = None  # the lower limit a refusal taught, if any
        self._freed: asyncio.Event | None = None

    async def take(self) -> None:
        """Wait for a free slot and hold it."""
        while self.open >= self.limit:
            if self._freed is None:
                self._freed = asyncio.Event()
            await self._freed.wait()
        self.open += 1
        self.peak = max(self.peak, self.open)

    def give(self) -> None:
        """Give a slot back (its channel is closed): whoever waits looks again."""
        self.open -= 1
        freed, self._freed = self._freed, None
        if freed is not None:
            freed.set()

    def refused(self) -> bool:
        """The daemon refused the session of a slot just taken. True when others were open: its
        MaxSessions is what they hold, the limit comes down to it, and the open may be tried
        again once a slot is free. False: nothing else was open, so no slot will help."""
        others = self.open - 1
        if others < 1:
            return False
        self.limit = min(self.limit, others)
        self.learned = self.limit
        return True
