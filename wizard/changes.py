"""When this session last changed a target, on that target's own clock.

A switch log line ("hardware offloading activated on bridge ...", a link going down) is evidence
of the state it describes only when it is newer than the last change fabwiz made: an older line
is history. Log times are on the switch's clock, so the time of a change is read from the same
clock (`/system/clock`) right after the change lands; a node's from `date +%s`.

Switch times are the switch's local wall-clock reading expressed as epoch seconds as if it were
UTC: the log prints local time with no offset, the clock menu prints the same local time, and
the two compare on one scale whatever `gmt-offset` says.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping

from wizard.fixes import RouterOsApi, parse_switch_clock
from wizard.model import ProbeResult

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})")
_OLD_FULL = re.compile(r"([a-z]{3})/(\d{1,2})/(\d{4}) (\d{2}):(\d{2}):(\d{2})")
_OLD_DAY = re.compile(r"([a-z]{3})/(\d{1,2}) (\d{2}):(\d{2}):(\d{2})")
_MD = re.compile(r"(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})")  # 7.x before 7.10, an earlier day
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})")


def _epoch(when: dt.datetime) -> float:
    return when.replace(tzinfo=dt.UTC).timestamp()


async def switch_time(api: RouterOsApi) -> float | None:
    """The switch's clock now (None: it could not be read or has a format fabwiz does not
    know; the caller then has no time to compare log lines with)."""
    try:
        rows = await api.call("/system/clock", "print")
    except Exception:  # transport errors arrive as many types
        return None
    row = rows[0] if rows else {}
    parsed = parse_switch_clock(row.get("date", ""), row.get("time", ""))
    return _epoch(parsed[0]) if parsed is not None else None


async def node_time(run: Callable[[str, str], Awaitable[ProbeResult]], node: str) -> float | None:
    """The node's clock now (`date +%s`), None when it did not answer with a number."""
    res = await run(node, "date +%s")
    text = res.stdout.strip()
    return float(text) if res.error is None and text.isdigit() else None


def log_time(text: str, reference: float) -> float | None:
    """A RouterOS `/log` `time` on the scale of `switch_time`: `2026-12-01 13:45:56` (7.10+),
    `12-01 13:45:56` (7.x before 7.10, this year), `dec/01/2026 13:45:56`, `dec/01 13:45:56`
    (6.x, this year) or `13:45:56` (today), the missing
    parts taken from `reference` (the switch's clock). None when unreadable."""
    t = text.strip().lower()
    ref = dt.datetime.fromtimestamp(reference, dt.UTC).replace(tzinfo=None)
    try:
        if m := _ISO.fullmatch(t):
            y, mo, d, hh, mm, ss = (int(g) for g in m.groups())
        elif m := _MD.fullmatch(t):
            (mo, d, hh, mm, ss), y = (int(g) for g in m.groups()), ref.year
        elif (m := _OLD_FULL.fullmatch(t)) and m.group(1) in _MONTHS:
            mo, y = _MONTHS.index(m.group(1)) + 1, int(m.group(3))
            d, hh, mm, ss = (int(g) for g in (m.group(2), *m.groups()[3:]))
        elif (m := _OLD_DAY.fullmatch(t)) and m.group(1) in _MONTHS:
            mo, y = _MONTHS.index(m.group(1)) + 1, ref.year
            d, hh, mm, ss = (int(g) for g in (m.group(2), *m.groups()[2:]))
        elif m := _TIME.fullmatch(t):
            y, mo, d = ref.year, ref.month, ref.day
            hh, mm, ss = (int(g) for g in m.groups())
        else:
            return None
        return _epoch(dt.datetime(y, mo, d, hh, mm, ss))
    except ValueError:
        return None


async def stamp(
    changed_at: dict[str, float],
    plan: object,
    api: Callable[[str], RouterOsApi],
    run: Callable[[str, str], Awaitable[ProbeResult]],
) -> dict[str, float | None]:
    """Record, on each target's own clock, that `plan` (a FixPlan) just changed it: its
    switches' `/system/clock` and its nodes' `date +%s`. A target whose clock cannot be read
    keeps no time (its log lines are then judged without one, as before any change). Returns
    what it recorded (None: unreadable), for the session log (`FixApplied.changed_at`)."""
    out: dict[str, float | None] = {}
    for switch in dict.fromkeys(c.switch for c in getattr(plan, "switch_changes", ())):
        out[switch] = await switch_time(api(switch))
    for node in dict.fromkeys(c.node for c in getattr(plan, "host_changes", ())):
        out[node] = await node_time(run, node)
    replay(changed_at, out)
    return out


def replay(changed_at: dict[str, float], stamped: Mapping[str, object]) -> None:
    """Apply one recorded stamp (target -> time on its clock, None: unreadable) to
    `changed_at`, as `stamp` did when it was taken; a resumed session replays the log's
    `FixApplied`/`FixRolledBack` stamps in order. Anything but a finite number is no time."""
    for target, at in stamped.items():
        if isinstance(at, int | float) and not isinstance(at, bool) and math.isfinite(at):
            changed_at[str(target)] = float(at)
        else:
            changed_at.pop(str(target), None)


def fixed_by_node(verified: Iterable[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """node -> the fault ids of the verified fixes on it, from (target, fault) pairs (a fix's
    target names its nodes, comma or space separated): what the persistence checks ask the
    next boot to bring back. The engine and replay read it alike."""
    fixed: dict[str, tuple[str, ...]] = {}
    for target, fault in verified:
        for node in target.replace(",", " ").split():
            fixed[node] = (*fixed.get(node, ()), fault)
    return fixed
