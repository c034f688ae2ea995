"""`/ip/address`, `/ip/arp` and the local entries of `/interface/bridge/host`.

The switch's own addresses live in the `ip-address` table (the defconf 192.168.88.1/24 on the
bridge, as a CRS ships); `/ip/arp` lists the neighbours the switch itself talks IP with, which
the lab's fabric nodes (on 10.9.x, with no switch address there) never are. A bridge lists one
local host entry per member port (the port's own MAC) besides the learned ones.
"""

from __future__ import annotations

import ipaddress
from typing import ClassVar

from wizard.lab.routeros.menus_base import Kind, Menu, MenuError
from wizard.lab.routeros.menus_interface import BridgeHostMenu
from wizard.lab.routeros.switch import Item, SwitchState

DEFCONF_ADDRESS = "192.168.88.1/24"


def _table(sw: SwitchState) -> list[Item]:
    if "ip-address" not in sw.tables:
        sw.tables["ip-address"] = []
        sw.add_item(
            "ip-address",
            {
                "address": DEFCONF_ADDRESS,
                "network": "192.168.88.0",
                "interface": "bridge",
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
