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

import calendar
import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$")
_MD = re.compile(r"^(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$")
_OLD = re.compile(r"^([a-z]{3})/(\d{2}) (\d{2}):(\d{2}):(\d{2})$")
_TOD = re.compile(r"^(\d{2}):(\d{2}):(\d{2})$")


def stamp(text: str, reference: float) -> float | None:
    """Epoch seconds (on the switch's clock, UTC) of a `/log` time; `reference` (epoch) gives
    the year and, for a time of day alone, the day. None when the stamp is not one of these."""
    t = text.strip().lower()
    ref = dt.datetime.fromtimestamp(reference, dt.UTC)
    try:
        if m := _ISO.match(t):
            y, mo, d, hh, mi, ss = (int(g) for g in m.groups())
        elif m := _MD.match(t):
            (mo, d, hh, mi, ss), y = (int(g) for g in m.groups()), ref.year
        elif (m := _OLD.match(t)) and m.group(1) in _MONTHS:
            mo = _MONTHS.index(m.group(1)) + 1
            (d, hh, mi, ss), y = (int(g) for g in m.groups()[1:]), ref.year
        elif m := _TOD.match(t):
            (hh, mi, ss), (y, mo, d) = (int(g) for g in m.groups()), (ref.year, ref.month, ref.day)
        else:
            return None
        when = dt.datetime(y, mo, d, hh, mi, ss)
    except ValueError:
        return None
    return float(calendar.timegm(when.timetuple()))


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
