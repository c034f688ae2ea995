"""The drain guard (`process.undrained-measurement`).

A bandwidth result taken after a link transition (cable move, port bounce, switch reboot, a fix
that bounced links) on a node that has not been AC-drained since is not evidence: a transition can
re-arm a low-throughput CX7 state that survives reboots and only a full AC drain clears.

The guard knows the transitions the engine caused or prompted (`record_transition`), and those it
sees: a node whose carrier counters (`link_down_events_phy`, per boot) went up since the engine
last looked, or that shows link-down events since boot while the engine has no drain on record
after them. On resume it is the one the session fold leaves (`from_events`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from wizard.events import Event
from wizard.probes import HostProbe

FAULT_ID = "process.undrained-measurement"

# what the engine reads of a node's fabric ports: carrier, speed and down events, and the boot
CARRIER_PROBE = HostProbe(
    name="fabwiz.carrier",
    command=(
        "grep -H . /sys/class/net/*/carrier /sys/class/net/*/speed "
        "/sys/class/net/*/carrier_down_count 2>/dev/null; cat /proc/sys/kernel/random/boot_id"
    ),
)


# the NIC's own link-down counter per rail (a physical bounce; an MTU change does not count)
PHY_PROBE = HostProbe(
    name="fabwiz.link_down_phy",
    command="ethtool -S {netdev} | grep link_down_events_phy",
    per_rail=True,
)

# what every sweep of the engine reads besides its checks' probes
ENGINE_PROBES = (CARRIER_PROBE, PHY_PROBE)

_CARRIER_DOWN = re.compile(r"^/sys/class/net/([^/]+)/carrier_down_count:(\d+)\s*$", re.M)
_PHY_DOWN = re.compile(r"^\s*link_down_events_phy:\s*(\d+)\s*$", re.M)


def link_downs(carrier_text: str, phy_texts: Iterable[str]) -> int:
    """A node's link-down events of this boot: the NIC's `link_down_events_phy` (ethtool -S,
    per rail) where it was read, else the kernel's `carrier_down_count`, which an MTU change
    bumps without any physical bounce."""
    phy = [int(m.group(1)) for t in phy_texts for m in _PHY_DOWN.finditer(t)]
    if phy:
        return sum(phy)
    return sum(int(m.group(2)) for m in _CARRIER_DOWN.finditer(carrier_text))


@dataclass(slots=True)
class DrainGuard:
    transitions: dict[str, list[tuple[float, str]]] = field(default_factory=dict)
    drains: dict[str, float] = field(default_factory=dict)
    boot_ids: dict[str, str] = field(default_factory=dict)
    link_down_counts: dict[str, int] = field(default_factory=dict)
    # target -> when this session last changed it, on its own clock (flows.base.Context)
    changed_at: dict[str, float] = field(default_factory=dict)

    def record_transition(self, node: str, at: float, cause: str) -> None:
        self.transitions.setdefault(node, []).append((at, cause))

    def record_drain(self, node: str, at: float, boot_id: str = "") -> None:
        self.drains[node] = at
        if boot_id:
            self.boot_ids[node] = boot_id
        self.link_down_counts.pop(node, None)

    def observe_counters(
        self, node: str, link_down_events: int, at: float, boot_id: str = ""
    ) -> str | None:
        """Feed the node's summed `link_down_events_phy` of this boot. Returns the cause text of
        a newly seen transition (for a `LinkTransitionSeen` event), or None."""
        if boot_id and self.boot_ids.get(node) not in (None, boot_id):
            # A new boot (reboot or drain): counters restart from zero.
            self.link_down_counts.pop(node, None)
        if boot_id:
            self.boot_ids[node] = boot_id
        previous = self.link_down_counts.get(node)
        self.link_down_counts[node] = link_down_events
        if previous is None:
            if link_down_events > 0 and not self._undrained(node):
                cause = f"{link_down_events} link-down event(s) since boot (carrier counters)"
                self.record_transition(node, at, cause)
                return cause
            return None
        if link_down_events > previous:
            cause = f"link went down {link_down_events - previous} time(s) (carrier counters)"
            self.record_transition(node, at, cause)
            return cause
        return None

    def _undrained(self, node: str) -> list[tuple[float, str]]:
        since = self.drains.get(node, float("-inf"))
        return [t for t in self.transitions.get(node, []) if t[0] > since]

    def undrained(self, nodes: Iterable[str]) -> dict[str, str]:
        """Nodes whose latest transition is newer than their latest drain, with the cause."""
        out: dict[str, str] = {}
        for node in nodes:
            pending = self._undrained(node)
            if pending:
                causes = list(dict.fromkeys(cause for _at, cause in pending))
                out[node] = ", then ".join(causes)
        return out

    def reason(self, pending: Mapping[str, str]) -> str:
        parts = [f"{node}: {cause}" for node, cause in sorted(pending.items())]
        return (
            "not evidence: link transition without an AC drain since ("
            + "; ".join(parts)
            + "). A transition can re-arm the CX7's low-throughput state; drain first."
        )

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> DrainGuard:
        """The guard the session fold leaves (`SessionState.drain_guard`)."""
        from wizard.session.fold import SessionState

        return SessionState.from_events(events).drain_guard()
