"""When is a re-cable done? Not when carrier is up: a node cabled to the switch has carrier on
every port before anyone touches a cable, so "Done" pressed early would pass.

A re-cable (or a reseat) is seen on a node when one of its fabric netdevs moved since the wizard
asked (its `carrier_down_count` rose against the reading taken with the request, or it had no
carrier then and has now) and every netdev that moved is back with carrier at 200000 Mb/s. A kernel without
`carrier_down_count` cannot show the cable move: then carrier up is taken, and said so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CARRIER = re.compile(
    r"^/sys/class/net/([^/]+)/(carrier|speed|carrier_down_count):(-?\d+)\s*$", re.M
)
NOT_FABRIC = ("lo", "eth", "wl", "docker", "veth", "virbr", "br-")
RATE_MBPS = 200000


@dataclass(frozen=True, slots=True)
class Port:
    carrier: int
    speed: int
    downs: int | None  # None: the kernel has no carrier_down_count


def ports(stdout: str) -> dict[str, Port]:
    """The fabric netdevs of a `grep -H . /sys/class/net/*/{carrier,speed,carrier_down_count}`."""
    values: dict[str, dict[str, int]] = {}
    for m in CARRIER.finditer(stdout):
        values.setdefault(m.group(1), {})[m.group(2)] = int(m.group(3))
    return {
        n: Port(v.get("carrier", 0), v.get("speed", 0), v.get("carrier_down_count"))
        for n, v in values.items()
        if "carrier" in v and not n.startswith(NOT_FABRIC)
    }


def _up(p: Port) -> bool:
    return p.carrier == 1 and p.speed >= RATE_MBPS


def _moved(was: Port, now: Port) -> bool:
    """Unplugged since the request (a down event counted), or without carrier then and up now."""
    went_down = was.downs is not None and now.downs is not None and now.downs > was.downs
    return went_down or (not _up(was) and _up(now))


def recabled(before: dict[str, Port], now: dict[str, Port]) -> tuple[bool, str]:
    """Whether the cable move shows, and what was seen (for the log)."""
    up = sorted(n for n, p in now.items() if _up(p))
    # a port that went down since the request (unplugged), or had no carrier then and has now
    moved = sorted(n for n, p in now.items() if n in before and _moved(before[n], p))
    if not moved:
        if up and all(before.get(n, p).downs is None for n, p in now.items()):
            # nothing tells a moved cable from an untouched one on this kernel
            return True, f"carrier up at {RATE_MBPS}Mb/s on {', '.join(up)} (no carrier_down_count)"
        return False, "no fabric port went down or came up since the request: no cable moved yet"
    waiting = [n for n in moved if n not in up]
    if waiting:
        return False, f"{', '.join(waiting)} went down and has no carrier at {RATE_MBPS}Mb/s yet"
    return True, f"{', '.join(moved)} re-cabled: carrier up at {RATE_MBPS}Mb/s since the request"


__all__ = ["Port", "ports", "recabled"]
