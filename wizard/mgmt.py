"""The management path of a switch, read from the switch itself.

Which port carries the wizard's own RouterOS API session is a fact of the switch, not of the
inventory: the session's source address (`/user/active`, `via=api`), what that address
resolves to (`/ip/arp`: MAC and interface), and, when that interface is a bridge, where the
bridge learned the MAC (`/interface/bridge/host` `on-interface`). The interface holding the
switch's own address (`/ip/address`) is shown alongside. The inventory's `management_ports`
is then a cross-check: a fix must never remove, disable or move the port found here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from wizard.probes import SwitchProbe

SW_IP_ADDRESS = SwitchProbe("ip_address", "/ip/address")
SW_IP_ARP = SwitchProbe("ip_arp", "/ip/arp")
SW_USER_ACTIVE = SwitchProbe("user_active", "/user/active")
MANAGEMENT_PROBES = (SW_IP_ADDRESS, SW_IP_ARP, SW_USER_ACTIVE)

Rows = Iterable[Mapping[str, str]]


@dataclass(frozen=True, slots=True)
class ManagementPath:
    """Where the wizard's API session reaches the switch."""

    session_ip: str  # the wizard's address as the switch sees it
    mac: str  # what that address resolves to in /ip/arp ("" when not resolved)
    interface: str  # the interface of the ARP entry (a bridge or a port)
    ports: tuple[str, ...]  # the physical ports the session arrives on
    switch_address: str  # the switch's own address on that interface ("" when none)

    def describe(self) -> str:
        via = ", ".join(self.ports) or "an unknown port"
        own = f"; switch address {self.switch_address}" if self.switch_address else ""
        bridge = f" via {self.interface}" if self.interface not in self.ports else ""
        return f"API session from {self.session_ip} ({self.mac or 'MAC unresolved'}) on {via}{bridge}{own}"


def _true(v: str | None) -> bool:
    return (v or "").lower() in ("true", "yes")


def paths_from_rows(
    results: Mapping[str, tuple[Mapping[str, str], ...] | None],
) -> list[ManagementPath] | None:
    """The paths from one switch's probe rows by probe name (`ip_address`, `ip_arp`,
    `bridge_host`, `user_active`, `bridge`); None when one of them is missing."""
    need = ("ip_address", "ip_arp", "bridge_host", "user_active")
    if any(results.get(k) is None for k in need):
        return None
    return management_paths(
        ip_address=results["ip_address"] or (),
        ip_arp=results["ip_arp"] or (),
        bridge_host=results["bridge_host"] or (),
        user_active=results["user_active"] or (),
        bridges=[r.get("name", "") for r in results.get("bridge") or ()],
    )


def management_paths(
    *, ip_address: Rows, ip_arp: Rows, bridge_host: Rows, user_active: Rows, bridges: Iterable[str]
) -> list[ManagementPath]:
    """One path per API session address the switch lists (pure)."""
    bridge_names = set(bridges)
    arp = {r.get("address", ""): r for r in ip_arp if not _true(r.get("invalid"))}
    hosts: dict[str, str] = {}
    for r in bridge_host:
        if not _true(r.get("local")):
            hosts[r.get("mac-address", "").upper()] = r.get("on-interface") or r.get(
                "interface", ""
            )
    own: dict[str, str] = {}
    for r in ip_address:
        if not _true(r.get("disabled")) and not _true(r.get("invalid")):
            own.setdefault(
                r.get("actual-interface") or r.get("interface", ""), r.get("address", "")
            )
    out: list[ManagementPath] = []
    seen: set[str] = set()
    for r in user_active:
        ip = r.get("address", "")
        if r.get("via", "api") != "api" or not ip or ip in seen:
            continue
        seen.add(ip)
        entry = arp.get(ip, {})
        mac = entry.get("mac-address", "").upper()
        iface = entry.get("interface", "")
        if iface in bridge_names:
            port = hosts.get(mac, "")
            ports: tuple[str, ...] = (port,) if port else ()
        else:
            ports = (iface,) if iface else ()
        out.append(ManagementPath(ip, mac, iface, ports, own.get(iface, "")))
    return out


def management_ports(paths: Iterable[ManagementPath]) -> set[str]:
    """Every port the API session arrives on (and, when a path ends at a bridge whose learned
    port is unknown, that bridge's name: so the guard refuses to remove it)."""
    out: set[str] = set()
    for p in paths:
        out.update(p.ports)
        if not p.ports and p.interface:
            out.add(p.interface)
    return out
