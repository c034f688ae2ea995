"""The RouterOS menus of the emulated switch, by path.

Shared by the API server (`server.py`) and the CLI script interpreter (`script.py`), so an
`/interface/bridge/port/set` over the API and `/interface bridge port set ...` in a scheduler
script change the switch the same way and fail with the same texts (routeros-api.md 1.7).
"""

from __future__ import annotations

from collections.abc import Callable

from wizard.lab.routeros.menus_base import Menu, MenuError
from wizard.lab.routeros.menus_bridge import BridgeMenu, BridgePortMenu
from wizard.lab.routeros.menus_ether import EthernetMenu, InterfaceMenu, monitor_row
from wizard.lab.routeros.menus_ip import (
    BridgeHostWithLocalMenu,
    IpAddressMenu,
    IpArpMenu,
    UserActiveMenu,
)
from wizard.lab.routeros.menus_qos import PfcMenu, QosPortMenu, SwitchMenu
from wizard.lab.routeros.menus_system import (
    ClockMenu,
    FileMenu,
    IdentityMenu,
    LogMenu,
    ResourceCpuMenu,
    ResourceMenu,
    RouterboardMenu,
    SchedulerMenu,
    next_run,
    write_file,
)

__all__ = [
    "MENUS",
    "PREFIXES",
    "BridgeMenu",
    "BridgePortMenu",
    "EthernetMenu",
    "FileMenu",
    "Menu",
    "MenuError",
    "PfcMenu",
    "QosPortMenu",
    "SchedulerMenu",
    "find_menu",
    "monitor_row",
    "next_run",
    "write_file",
]

MENUS: dict[tuple[str, ...], Callable[[], Menu]] = {
    ("interface",): InterfaceMenu,
    ("interface", "ethernet"): EthernetMenu,
    ("interface", "ethernet", "switch"): SwitchMenu,
    ("interface", "ethernet", "switch", "qos", "port"): QosPortMenu,
    ("interface", "ethernet", "switch", "qos", "priority-flow-control"): PfcMenu,
    ("interface", "bridge"): BridgeMenu,
    ("interface", "bridge", "port"): BridgePortMenu,
    ("interface", "bridge", "host"): BridgeHostWithLocalMenu,
    ("ip", "address"): IpAddressMenu,
    ("ip", "arp"): IpArpMenu,
    ("system", "identity"): IdentityMenu,
    ("system", "resource"): ResourceMenu,
    ("system", "resource", "cpu"): ResourceCpuMenu,
    ("system", "routerboard"): RouterboardMenu,
    ("system", "clock"): ClockMenu,
    ("system", "scheduler"): SchedulerMenu,
    ("log",): LogMenu,
    ("file",): FileMenu,
    ("user", "active"): UserActiveMenu,
}

# Directories that exist but hold no items of their own (so `/interface/ethernet/switch/qos`
# is a known prefix, not "no such command").
PREFIXES = {p[:n] for p in MENUS for n in range(1, len(p) + 1)} | {("system",)}


def find_menu(path: tuple[str, ...]) -> Menu | None:
    factory = MENUS.get(path)
    return factory() if factory else None
