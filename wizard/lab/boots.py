"""The journal's boot list in the lab: what `journalctl --list-boots` shows on a node.

Each node keeps its earlier boots (boot id, first and last journal entry). When a node boots,
the boot that ended is added with its last entry `off_s` before the new boot's first: the time
the power was off. A pair of hands sets that time from what it did (an AC drain leaves the node
unplugged for `DRAIN_OFF_S`, a warm reboot is back after `REBOOT_OFF_S`); a power-off followed by
a power-on takes the simulated time in between. The lab compresses the unplugged minute (the
hands return at once), so the previous boot's last entry is dated back by the off time. A
scenario sets the gap before the current boot with `facts.nodes.<n>.boot_gap_s`.
"""

from __future__ import annotations

import json
import time
import uuid

from wizard.lab.world import NodeState, World

DRAIN_OFF_S = 75.0  # power off, cord out for at least 60 s, cord in, power on
REBOOT_OFF_S = 9.0  # shutdown to the first kernel line of the next boot
DEFAULT_GAP_S = 25.0  # the boot before the lab started was a plain reboot


def seed_history(world: World) -> None:
    """Give every node the boot before its current one (after `build_world` booted them)."""
    for name, node in world.nodes.items():
        fact = world.facts.nodes.get(name)
        gap = fact.boot_gap_s if fact is not None and fact.boot_gap_s is not None else None
        last = node.boot_time - (DEFAULT_GAP_S if gap is None else gap)
        node.boots = [(str(uuid.uuid4()), last - 86400.0, last)]


def _stamp(t: float) -> str:
    return time.strftime("%a %Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def list_boots(world: World, node: NodeState, args: list[str]) -> str:
    """`journalctl --list-boots [-o json]` as systemd 255 prints it (oldest first, index 0 is
    the current boot; boot ids without dashes)."""
    rows: list[tuple[int, str, float, float]] = []
    earlier = node.boots[-20:]
    for i, (boot, first, last) in enumerate(earlier):
        rows.append((i - len(earlier), boot, first, last))
    rows.append((0, node.boot_id, node.boot_time, max(node.boot_time, world.now())))
    as_json = "json" in args or "--output=json" in args or "-ojson" in args
    if as_json:
        return (
            json.dumps(
                [
                    {
                        "index": idx,
                        "boot_id": boot.replace("-", ""),
                        "first_entry": int(first * 1e6),
                        "last_entry": int(last * 1e6),
                    }
                    for idx, boot, first, last in rows
                ]
            )
            + "\n"
        )
    lines = [f"{'IDX':>3} {'BOOT ID':<32} {'FIRST ENTRY':<27} {'LAST ENTRY':<27}"]
    for idx, boot, first, last in rows:
        lines.append(f"{idx:>3} {boot.replace('-', ''):<32} {_stamp(first):<27} {_stamp(last)}")
    return "\n".join(lines) + "\n"
