"""Telling an AC drain from a reboot by what survives on the host: the journal's boot list.

`journalctl --list-boots` gives each boot's first and last journal entry. The gap between the
previous boot's last entry and the current boot's first is how long the node was down: a warm
reboot is back within seconds, an AC drain keeps the cord out for at least a minute. A new
`boot_id` alone proves only that the node booted.

Both outputs are parsed: JSON (`-o json`, systemd >= 251) and the table (older systemd prints it
whatever `-o` says):

    IDX BOOT ID                          FIRST ENTRY                 LAST ENTRY
     -1 5a1d9c4e3b2a41f0a1b2c3d4e5f60718 Mon 2026-11-30 09:00:01 UTC Mon 2026-11-30 17:12:44 UTC
      0 9b2c...                          Tue 2026-12-01 08:01:02 UTC Tue 2026-12-01 10:00:00 UTC

(systemd <= 249 joins the two stamps with an em dash and has no header).
"""

from __future__ import annotations

import calendar
import json
import re
import time
from dataclasses import dataclass

COMMAND = "sudo -n journalctl --list-boots --no-pager --utc -o json"

_ROW = re.compile(
    r"^\s*(-?\d+)\s+([0-9a-f]{32})\s+"
    r"\w{3} (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC\s*[—\-]?\s*"
    r"\w{3} (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC\s*$",
    re.M,
)


@dataclass(frozen=True, slots=True)
class Boot:
    index: int
    boot_id: str  # 32 hex digits, no dashes
    first: float  # epoch seconds
    last: float


def _epoch(stamp: str) -> float:
    return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")))


def parse_list_boots(text: str) -> list[Boot]:
    """The boots listed, oldest first; [] when the text is neither form."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            rows = json.loads(stripped)
            return sorted(
                (
                    Boot(
                        int(r["index"]),
                        str(r["boot_id"]).replace("-", "").lower(),
                        int(r["first_entry"]) / 1e6,
                        int(r["last_entry"]) / 1e6,
                    )
                    for r in rows
                ),
                key=lambda b: b.index,
            )
        except (ValueError, KeyError, TypeError):
            return []
    return sorted(
        (
            Boot(int(m.group(1)), m.group(2), _epoch(m.group(3)), _epoch(m.group(4)))
            for m in _ROW.finditer(text)
        ),
        key=lambda b: b.index,
    )


def off_gap(boots: list[Boot], boot_id: str) -> float | None:
    """Seconds between the previous boot's last entry and the first entry of boot `boot_id`
    (the current one), or None when the journal does not hold both."""
    want = boot_id.replace("-", "").lower()
    for i, b in enumerate(boots):
        if b.boot_id == want and i > 0:
            return max(0.0, b.first - boots[i - 1].last)
    return None


def judge_drain(
    node: str, text: str, ok: bool, boot_id: str, min_off_s: float
) -> tuple[bool | None, str]:
    """(True: drained, False: rebooted not drained, None: the journal cannot tell), and why."""
    boots = parse_list_boots(text) if ok else []
    gap = off_gap(boots, boot_id) if boots else None
    if gap is None:
        return None, (
            f"{node}: the journal does not show the boot before {boot_id[:8]} "
            "(journalctl --list-boots), so the time it was off is not known"
        )
    if gap < min_off_s:
        return False, (
            f"{node} rebooted, not drained: {gap:.0f} s between the previous boot's last journal "
            f"entry and this boot's first; an AC drain keeps it unplugged >= {min_off_s:.0f} s"
        )
    return True, f"{node} was off {gap:.0f} s (journal): AC-drained"
