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

A line with only a time of day is a line of the day the log was read: it is dated on the day of
the switch's clock read with the log (`/system/clock`, the check's probe), so a session that
crosses midnight dates yesterday's lines and today's correctly. Without that clock it is dated on
the day of the change. A line whose stamp cannot be read stays current: it is never dropped on
a guess.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from wizard.changes import log_time
from wizard.fixes import parse_switch_clock

_TIME_ONLY = re.compile(r"\d{2}:\d{2}:\d{2}")


def _epoch(when: dt.datetime) -> float:
    return when.replace(tzinfo=dt.UTC).timestamp()


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


CLOCK_SKEW_S = 300.0  # a line stamped after the clock was read by more than this is yesterday's


def time_only(text: str) -> bool:
    """A stamp with a time of day and no date (`13:42:05`): a line of the day it was read."""
    return _TIME_ONLY.fullmatch(text.strip()) is not None


def clock_now(rows: Iterable[Mapping[str, str]] | None) -> float | None:
    """The switch's `/system/clock print` row as epoch seconds on its clock (the scale of
    `stamp`), None when it is missing or in a format RouterOS does not print."""
    row = next(iter(rows or ()), None)
    if row is None:
        return None
    parsed = parse_switch_clock(row.get("date", ""), row.get("time", ""))
    return _epoch(parsed[0]) if parsed is not None else None


def dated(text: str, since: float, now: float | None) -> float | None:
    """When a `/log` line was written: a time of day alone on the day of `now` (the switch's
    clock read with the log; the day before when that would put it in the future), else on the
    day of the change; dated stamps as they are."""
    if now is None or not time_only(text):
        return stamp(text, since)
    at = stamp(text, now)
    if at is not None and at > now + CLOCK_SKEW_S:
        at -= 86400.0  # written before midnight, read after it
    return at


def split(
    log: Iterable[Mapping[str, str]],
    target: str,
    changed_at: Mapping[str, float],
    now: float | None = None,
) -> Split:
    """The log rows of `target` as current evidence and as history (older than its change);
    `now` is the switch's clock read with the log (see `dated`)."""
    rows = tuple(log)
    since = changed_at.get(target)
    if since is None:
        return Split(rows, (), None)
    current: list[Mapping[str, str]] = []
    history: list[Mapping[str, str]] = []
    for r in rows:
        at = dated(r.get("time", ""), since, now)
        (history if at is not None and at < since else current).append(r)
    return Split(tuple(current), tuple(history), since)


def since_text(since: float) -> str:
    return dt.datetime.fromtimestamp(since, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
