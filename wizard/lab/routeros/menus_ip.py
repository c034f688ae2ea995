"""The switch's own IP side: `/ip/address`, `/ip/arp`, `/user/active`, and the local entries of
`/interface/bridge/host`.

The lab models one management subnet per switch: the switch's address sits on the bridge that
holds its management port (or on the port itself when it is in no bridge), and the wizard
(`WIZARD_IP`, `WIZARD_MAC`) reaches it through that port. So the management path can be read
from the switch as on hardware: which interface holds the switch's address, which address the
API session comes from (`/user/active`), what MAC that address resolves to (`/ip/arp`) and on
which port the bridge learned that MAC (`/interface/bridge/host`). Addresses can be added and
removed as on RouterOS; `/ip/arp` never lists the fabric nodes (on 10.9.x, with no switch
address there). A bridge lists one local host entry per member port (the port's own MAC)
besides the learned ones.
"""

from __future__ import annotations

import ipaddress
from typing import ClassVar

from wizard.lab.routeros.menus_base import Kind, Menu, MenuError
from wizard.lab.routeros.menus_bridge import BridgeHostMenu
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


def _table(sw: SwitchState) -> list[Item]:
    """The address table, seeded on first use with the switch's management address on the
    interface that holds its management port (a switch with no management port has none)."""
    if "ip-address" not in sw.tables:
        sw.tables["ip-address"] = []
        if sw.management_port:
            sw.add_item(
                "ip-address",
                {
                    "address": f"{switch_address(sw)}/24",
                    "network": f"{SUBNET}.0",
                    "interface": management_interface(sw),
                    "comment": "defconf",
                    "disabled": "false",
                },
            )
    return sw.tables["ip-address"]


class IpAddressMenu(Menu):
    table = "ip-address"
    named = False
    can_add = True
    can_remove = True
    schema: ClassVar[dict[str, Kind]] = {
        "address": "str",
        "network": "str",
        "interface": "str",
        "comment": "str",
        "disabled": "bool",
    }

    def items(self, sw: SwitchState) -> list[Item]:
        return _table(sw)

    def row(self, sw: SwitchState, item: Item) -> Item:
        out = super().row(sw, item)
        iface = item.get("interface", "")
        known = sw.ether(iface) is not None or any(b["name"] == iface for b in sw.bridges())
        out.update(
            {
                "actual-interface": iface,
                "invalid": "false" if known else "true",
                "dynamic": "false",
                "disabled": item.get("disabled", "false"),
            }
        )
        return out

    def do_add(self, sw: SwitchState, attrs: dict[str, str]) -> str:
        try:
            net = ipaddress.ip_interface(attrs.get("address", "")).network
        except ValueError:
            raise MenuError("invalid value for argument address", 1) from None
        if "interface" not in attrs:
            raise MenuError("failure: interface not specified", 1)
        attrs.setdefault("network", str(net.network_address))
        _table(sw)
        return super().do_add(sw, attrs)


class IpArpMenu(Menu):
    """Neighbours the switch resolved for its own IP traffic (none on a fabric of RoCE legs)."""

    table = "ip-arp"
    named = False

    def items(self, sw: SwitchState) -> list[Item]:
        return sw.tables.setdefault("ip-arp", [])

    def rows(self, sw: SwitchState) -> list[Item]:
        """Static entries, then the wizard's own address, resolved on the management path."""
        rows = super().rows(sw)
        if sw.management_port:
            rows.append(
                {
                    ".id": "*FA",
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
            )
        return rows


class BridgeHostWithLocalMenu(BridgeHostMenu):
    """Learned entries plus one `local` entry per bridge member port (its own MAC)."""

    def rows(self, sw: SwitchState) -> list[Item]:
        learned = super().rows(sw)
        local: list[Item] = []
        for k, bp in enumerate(sw.tables["bridge-port"]):
            if bp.get("disabled") == "true":
                continue
            eth = sw.ether(bp["interface"])
            if eth is None:
                continue
            local.append(
                {
                    ".id": f"*L{k + 1:X}",
                    "mac-address": eth["mac-address"].upper(),
                    "on-interface": eth["name"],
                    "interface": eth["name"],
                    "bridge": bp["bridge"],
                    "external": "false",
                    "dynamic": "false",
                    "local": "true",
                    "invalid": "false",
                    "disabled": "false",
                }
            )
        return learned + local


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
