"""The dead-man countdown: while a rollback is armed, a line ticking down the seconds left to
verify and disarm the fix, and what happens when they run out.

Fed with the engine's events (`RollbackArmed`, `RollbackDisarmed`, `FixRolledBack`,
`SessionEnded`); hidden while nothing is armed. The deadline is the event's time plus the
window in this machine's seconds (`wall_window_s`: a lab's clock runs faster than life), so the
line is right even when the engine is busy verifying. The clock is injectable for tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual.timer import Timer
from textual.widgets import Static

from wizard.events import Event, FixRolledBack, RollbackArmed, RollbackDisarmed, SessionEnded
from wizard.safetext import clean

__all__ = ["Armed", "DeadmanCountdown", "countdown_text"]


@dataclass(frozen=True, slots=True)
class Armed:
    fix_id: str
    target: str
    name: str
    deadline: float  # wall clock, seconds since the epoch
    host: bool  # a node's timed revert rather than a switch's scheduler entry


def _left(seconds: float) -> str:
    s = max(0, int(seconds + 0.999))  # 0.2 s left is still "1 s"
    return f"{s // 60}:{s % 60:02d}" if s >= 60 else f"{s} s"


def countdown_text(armed: list[Armed], now: float) -> Text:
    """One line per armed rollback: seconds left, and what the target does when they are up."""
    out = Text()
    for i, a in enumerate(sorted(armed, key=lambda a: a.deadline)):
        if i:
            out.append("\n")
        where = clean(a.target)
        left = a.deadline - now
        if a.host:
            then = f"{where} restores its files from the backup by itself (timer {clean(a.name)})"
        else:
            then = f"{where} restores its pre-fix configuration by itself ({clean(a.name)})"
        if left > 0:
            style = "bold red" if left <= 10 else ("bold yellow" if left <= 60 else "bold")
            out.append("⏱ dead-man ", style="bold")
            out.append(_left(left), style=style)
            out.append(f" left to verify and disarm; if it runs out, {then}")
        else:
            out.append("⏱ dead-man window over: ", style="bold red")
            out.append(f"{then} now; fabwiz checks what it finds there")
    return out


class DeadmanCountdown(Static):
    """The armed rollbacks and their ticking windows (hidden when none is armed)."""

    DEFAULT_CSS = """
    DeadmanCountdown {
        height: auto;
        max-height: 3;
        padding: 0 1;
        background: $warning 15%;
        display: none;
    }
    """

    def __init__(
        self, *, clock: Callable[[], float] = time.time, id: str | None = "deadman"
    ) -> None:
        super().__init__("", id=id)
        self.clock = clock
        self.armed: dict[str, Armed] = {}
        self._timer: Timer | None = None

    def feed(self, event: Event) -> None:
        """Follow one engine event."""
        if isinstance(event, RollbackArmed):
            wall = event.wall_window_s if event.wall_window_s is not None else event.window_s
            deadline = event.at + wall
            if deadline <= self.clock():
                return  # a replayed, long-gone window (a resumed session) is not counted down
            self.armed[event.name] = Armed(
                event.fix_id,
                event.target,
                event.name,
                deadline,
                host=event.name.startswith("fabwiz-revert-"),
            )
        elif isinstance(event, RollbackDisarmed):
            self.armed.pop(event.name, None)
        elif isinstance(event, FixRolledBack):
            for name in [n for n, a in self.armed.items() if a.fix_id == event.fix_id]:
                del self.armed[name]
        elif isinstance(event, SessionEnded):
            # what is still armed stays on screen: it will fire
            pass
        else:
            return
        self.tick()

    def tick(self) -> None:
        """Redraw with the seconds left now (called every second while armed)."""
        self.display = bool(self.armed)
        if not self.armed:
            if self._timer is not None:
                self._timer.stop()
                self._timer = None
            self.update("")
            return
        self.update(countdown_text(list(self.armed.values()), self.clock()))
        if self._timer is None and self.is_attached:
            self._timer = self.set_interval(1.0, self.tick)

    def text(self) -> str:
        """What the line says now (for the terminal, reports and tests)."""
        return countdown_text(list(self.armed.values()), self.clock()).plain
