"""The switch's own management network: `/ip/address`, `/ip/arp`, `/user/active`.

The lab models one management subnet per switch: the switch's address sits on the bridge that
holds its management port (or on the port itself when it is in no bridge), and the wizard
(`WIZARD_IP`, `WIZARD_MAC`) reaches it through that port. So the management path can be read
from the switch as on hardware: which interface holds the switch's address, which address the
API session comes from (`/user/active`), what MAC that address resolves to (`/ip/arp`) and on
which port the bridge learned that MAC (`/interface/bridge/host`).
"""

from __future__ import annotations

from wizard.lab.routeros.menus_base import Menu
from wizard.lab.routeros.switch import Item, SwitchState

WIZARD_IP = "192.168.88.250"
WIZARD_MAC = "02:FA:B0:00:00:FA"
SUBNET = "192.168.88"


def management_interface(sw: SwitchState) -> str:
    """The interface that holds the switch's address: the management port's bridge, or the
    port itself when it is in no bridge."""
    port = sw.management_port
    bp = sw.bridge_port(port)
    if bp is not None and bp.get("disabled") != "true":
        return bp["bridge"]
    item = sw.ether(port)
    return item["name"] if item else port


def switch_address(sw: SwitchState) -> str:
    return f"{SUBNET}.{1 + sw._mac_seed % 200}"


def wizard_host(sw: SwitchState) -> Item | None:
    """The wizard's MAC as the bridge learned it on the management port (None: not bridged)."""
    port = sw.management_port
    if not port:
        return None
    bp = sw.bridge_port(port)
    item = sw.ether(port)
    if bp is None or item is None:
        return None
    return {
        ".id": "*FA00",
        "mac-address": WIZARD_MAC,
        "on-interface": item["name"],
        "interface": item["name"],
        "bridge": bp["bridge"],
        "external": "false",  # a CPU port: learned in software
        "dynamic": "true",
        "local": "false",
        "invalid": "false",
        "disabled": "false",
        "age": "1s",
    }


class IpAddressMenu(Menu):
    def rows(self, sw: SwitchState) -> list[Item]:
        if not sw.management_port:
            return []
        return [
            {
                ".id": "*1",
                "address": f"{switch_address(sw)}/24",
                "network": f"{SUBNET}.0",
                "interface": management_interface(sw),
                "actual-interface": management_interface(sw),
                "invalid": "false",
                "dynamic": "false",
                "disabled": "false",
            }
        ]


class IpArpMenu(Menu):
    def rows(self, sw: SwitchState) -> list[Item]:
        if not sw.management_port:
            return []
        return [
            {
                ".id": "*1",
                "address": WIZARD_IP,
                "mac-address": WIZARD_MAC,
                "interface": management_interface(sw),
                "published": "false",
                "invalid": "false",
                "DHCP": "false",
                "dynamic": "true",
                "complete": "true",
                "disabled": "false",
            }
        ]


class UserActiveMenu(Menu):
    def rows(self, sw: SwitchState) -> list[Item]:
        if not sw.management_port:
            return []
        return [
            {
                ".id": "*1",
                "when": "2026-12-01 09:00:00",
                "name": "fabwiz",
                "address": WIZARD_IP,
                "via": "api",
                "group": "full",
                "radius": "false",
            }
        ]
