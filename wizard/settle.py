"""Settle, then verify: which links a change that bounces them must see back up.

After a fix that bounces links (switch speed, auto-negotiation, FEC or l2mtu; a host's PFC or
netplan), a real leg takes seconds to train. Verifying at once reads a link still coming up and
rolls back a correct fix. The engine polls the switch (`/interface/ethernet/monitor once`) and
the hosts (carrier and speed) until every link that was up before the change is up again, and
every port the change touched that has a cable is up too, or until the settle timeout.

Pure functions here; the engine does the polling and shows the countdown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from wizard.model import SwitchChange

_CARRIER = re.compile(r"^/sys/class/net/([^/]+)/(carrier|speed):(-?\d+)\s*$", re.M)
_NOT_FABRIC = ("lo", "eth", "wl", "docker", "br-", "veth", "virbr", "enx")
LINE_RATE_MBPS = 200000


def touched_ports(changes: Iterable[SwitchChange]) -> dict[str, set[str]]:
    """Switch -> the ethernet ports its commands select (`/interface/ethernet set ...`)."""
    out: dict[str, set[str]] = {}
    for change in changes:
        for cmd in change.commands:
            if cmd.path.rstrip("/") == "/interface/ethernet" and cmd.select is not None:
                out.setdefault(change.switch, set()).update(cmd.select[1].split(","))
    return out


def switch_links(rows: Sequence[Mapping[str, str]]) -> dict[str, tuple[bool, bool]]:
    """Port -> (link-ok, a module/cable present) from monitor rows; CPU ports left out."""
    out: dict[str, tuple[bool, bool]] = {}
    for r in rows:
        name = r.get("name", "")
        if not name or name.startswith("ether"):
            continue
        cabled = r.get("sfp-module-present", "") in ("true", "yes") or r.get("status") == "link-ok"
        out[name] = (r.get("status") == "link-ok", cabled)
    return out


def host_links(stdout: str) -> dict[str, bool]:
    """Fabric netdev -> carrier at line rate, from `grep -H . /sys/class/net/*/{carrier,speed}`."""
    carrier: dict[str, int] = {}
    speed: dict[str, int] = {}
    for m in _CARRIER.finditer(stdout):
        name, key, value = m.group(1), m.group(2), int(m.group(3))
        if name.startswith(_NOT_FABRIC):
            continue
        (carrier if key == "carrier" else speed)[name] = value
    return {n: c == 1 and speed.get(n, 0) >= LINE_RATE_MBPS for n, c in carrier.items()}


def pending(
    before: Mapping[str, bool],
    now: Mapping[str, bool],
    must: Iterable[str] = (),
) -> list[str]:
    """Links up before (or listed in `must`) that are not up now."""
    wanted = {k for k, up in before.items() if up} | set(must)
    return sorted(k for k in wanted if not now.get(k, False))
