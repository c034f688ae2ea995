"""Switch log lines before the last change are history, never current evidence.

A RouterOS log keeps "module auto-initialization failed" from before a fix forced the legs; read
as current, it would make a fixed port look broken (or a broken one look explained). The
session records when it last changed each target (`Context.changed_at`, epoch seconds on that
target's clock); a line stamped before that is set aside, and the evidence says which.

RouterOS stamps `/log` rows in several ways (`time`):

    2026-12-01 13:42:05     7.10+ for every line
    12-01 13:42:05          7.x before 7.10, a line of an earlier day
    dec/01 13:42:05         6.x, a line of an earlier day
    13:42:05                a line of today (both)

A line with only a time of day is dated on the day of the change (the session's change is
recent); a line whose stamp cannot be read stays current: it is never dropped on a guess.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from wizard.changes import log_time


def stamp(text: str, reference: float) -> float | None:
    """Epoch seconds (on the switch's clock) of a `/log` time; `reference` (epoch) gives the
    year and, for a time of day alone, the day. None when the stamp is not one RouterOS prints.
    One parser for every check that reads log times: `wizard.changes.log_time`."""
    return log_time(text, reference)


@dataclass(frozen=True, slots=True)
class Split:
    current: tuple[Mapping[str, str], ...]
    history: tuple[Mapping[str, str], ...]  # stamped before the change
    since: float | None  # the change, when there was one


def split(log: Iterable[Mapping[str, str]], target: str, changed_at: Mapping[str, float]) -> Split:
    """The log rows of `target` as current evidence and as history (older than its change)."""
    rows = tuple(log)
    since = changed_at.get(target)
    if since is None:
        return Split(rows, (), None)
    current: list[Mapping[str, str]] = []
    history: list[Mapping[str, str]] = []
    for r in rows:
        at = stamp(r.get("time", ""), since)
        (history if at is not None and at < since else current).append(r)
    return Split(tuple(current), tuple(history), since)


def since_text(since: float) -> str:
    return dt.datetime.fromtimestamp(since, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
