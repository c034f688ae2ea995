"""Host kernel-log lines before the last change are history, never current evidence.

`dmesg` stamps a line with seconds since boot (`[    1.533198] mlx5_core ...`). The session
records when it last changed a node on that node's clock (`Context.changed_at`, from
`date +%s`); the kernel's boot time, `btime` in /proc/stat (epoch seconds, the same clock),
puts both on one scale: the line was written at `btime + stamp`. A line written before the
change is set aside and the evidence says which; a line without a stamp, or on a node whose
boot time could not be read, stays current: nothing is dropped on a guess.

The stamp is the kernel's local clock, which stops while a machine is suspended; a GB10 in a
cluster does not suspend, and a line is only ever set aside when it is older than the change.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from wizard.errors import ParseError
from wizard.parsers.kernel_log import KernelEvent
from wizard.probes import HostProbe

BTIME = HostProbe("btime", "grep ^btime /proc/stat")

_BTIME = re.compile(r"^btime\s+(\d+)\s*$", re.MULTILINE)


def parse_btime(text: str) -> float:
    """`btime 1764576000` (the line of /proc/stat) as epoch seconds."""
    m = _BTIME.search(text)
    if m is None:
        raise ParseError("no `btime <epoch seconds>` line", tool="proc-stat", raw=text)
    return float(m.group(1))


def written_at(event: KernelEvent, btime: float | None) -> float | None:
    """When the line was written, on the node's clock (None: no stamp or no boot time)."""
    if event.time is None or btime is None:
        return None
    return btime + event.time


@dataclass(frozen=True, slots=True)
class Split:
    current: tuple[KernelEvent, ...]
    history: tuple[KernelEvent, ...]  # written before the change
    since: float | None  # the change, when there was one


def split(
    events: Iterable[KernelEvent],
    node: str,
    changed_at: Mapping[str, float],
    btime: float | None,
) -> Split:
    """The kernel-log events of `node` as current evidence and as history."""
    rows = tuple(events)
    since = changed_at.get(node)
    if since is None:
        return Split(rows, (), None)
    current: list[KernelEvent] = []
    history: list[KernelEvent] = []
    for e in rows:
        at = written_at(e, btime)
        (history if at is not None and at < since else current).append(e)
    return Split(tuple(current), tuple(history), since)


def _clock(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def history_text(s: Split, btime: float | None) -> str:
    """What was set aside, for the evidence ("" when nothing was)."""
    if not s.history or s.since is None:
        return ""
    stamps = ", ".join(
        f"[{e.time:.6f}] = {_clock(at)}"
        for e in s.history[-3:]
        if e.time is not None and (at := written_at(e, btime)) is not None
    )
    return (
        f"set aside as history: {len(s.history)} kernel line(s) from before the change at "
        f"{_clock(s.since)} ({stamps})"
    )
