"""Ethernet menus: /interface, /interface/ethernet (+ monitor) and the helpers bridges share.

What the checks read of a port (link status, rate, FEC, counters) and what the fixes set (speed,
auto-negotiation, fec-mode, l2mtu/mtu, name); a bridge's l2mtu is the least of its ports', and
renaming an interface follows it into every table that names it.
"""

from __future__ import annotations

from typing import ClassVar

from wizard.lab.routeros.menus_base import Kind, Menu, MenuError
from wizard.lab.routeros.switch import (
    Item,
    SwitchState,
    is_cpu_port,
    rate_text,
)

__all__ = [
    "BOUNCING",
    "LINK_MODES",
    "EthernetMenu",
    "InterfaceMenu",
    "bridge_l2mtu",
    "monitor_row",
    "rename_interface",
]

LINK_MODES = (
    "10M-baseT-half",
    "10M-baseT-full",
    "100M-baseT-half",
    "100M-baseT-full",
    "100M-baseFX-half",
    "100M-baseFX-full",
    "1G-baseT-half",
    "1G-baseT-full",
    "1G-baseX",
    "2.5G-baseT",
    "2.5G-baseX",
    "5G-baseT",
    "10G-baseT",
    "10G-baseCR",
    "10G-baseSR-LR",
    "25G-baseCR",
    "25G-baseSR-LR",
    "40G-baseCR4",
    "40G-baseSR4-LR4",
    "50G-baseCR2",
    "50G-baseSR2-LR2",
    "50G-baseCR",
    "50G-baseSR-LR",
    "100G-baseCR4",
    "100G-baseSR4-LR4",
    "100G-baseCR2",
    "100G-baseSR2-LR2",
    "200G-baseCR4",
    "200G-baseSR4-LR4",
    "400G-baseCR8",
    "400G-baseSR8-LR8",
)
BOUNCING = ("auto-negotiation", "speed", "fec-mode", "l2mtu", "advertise")


def _counters(sw: SwitchState, port: str) -> Item:
    c = sw.counter(port)
    return {
        "rx-byte": str(c.rx_bytes),
        "tx-byte": str(c.tx_bytes),
        "rx-packet": str(c.rx_packets),
        "tx-packet": str(c.tx_packets),
        "link-downs": str(c.link_downs),
        "rx-drop": "0",
        "tx-drop": "0",
        "tx-queue-drop": "0",
        "rx-error": "0",
        "tx-error": "0",
        "fp-rx-byte": "0",
        "fp-tx-byte": "0",
        "fp-rx-packet": "0",
        "fp-tx-packet": "0",
    }


def _max_l2mtu(port: str) -> str:
    return "9586" if is_cpu_port(port) else "10218"


class InterfaceMenu(Menu):
    table = "interface"
    schema: ClassVar[dict[str, Kind]] = {
        "name": "str",
        "mtu": "int",
        "l2mtu": "int",
        "disabled": "bool",
        "comment": "str",
    }

    def row(self, sw: SwitchState, item: Item) -> Item:
        out: Item = {".id": item[".id"], "name": item["name"]}
        if item.get("type") == "ether":
            port = item["default-name"]
            up = sw.link(port).up
            out.update(
                {
                    "default-name": port,
                    "type": "ether",
                    "mtu": item["mtu"],
                    "actual-mtu": item["mtu"],
                    "l2mtu": item["l2mtu"],
                    "max-l2mtu": _max_l2mtu(port),
                    "mac-address": item["mac-address"],
                    "running": "true" if up else "false",
                    "slave": "true" if sw.bridge_port(port) else "false",
                }
            )
            out.update(_counters(sw, port))
        else:
            members = [p for p in sw.tables["bridge-port"] if p["bridge"] == item["name"]]
            mtus = [int(e["mtu"]) for p in members if (e := sw.ether(p["interface"]))]
            out.update(
                {
                    "type": "bridge",
                    "mtu": item.get("mtu", "auto"),
                    "actual-mtu": str(min(mtus)) if mtus else "1500",
                    "l2mtu": bridge_l2mtu(sw, item["name"]),
                    "max-l2mtu": "65535",
                    "mac-address": item["mac-address"],
                    "running": "true",
                    "slave": "false",
                    "link-downs": "0",
                }
            )
        out.update({"disabled": item.get("disabled", "false"), "dynamic": "false"})
        if item.get("comment"):
            out["comment"] = item["comment"]
        return out

    def do_set(self, sw: SwitchState, targets: list[Item], attrs: dict[str, str]) -> None:
        if "name" in attrs:
            rename_interface(sw, targets, attrs["name"])
        bounced = [
            t["default-name"]
            for t in targets
            if t.get("type") == "ether" and "l2mtu" in attrs and t.get("l2mtu") != attrs["l2mtu"]
        ]
        for item in targets:
            item.update({k: v for k, v in attrs.items() if k != "name"})
        sw.recompute(bounced=bounced)


def bridge_l2mtu(sw: SwitchState, bridge: str) -> str:
    values = [
        int(e["l2mtu"])
        for p in sw.tables["bridge-port"]
        if p["bridge"] == bridge and (e := sw.ether(p["interface"]))
    ]
    return str(min(values)) if values else "65535"


def rename_interface(sw: SwitchState, targets: list[Item], new: str) -> None:
    if len(targets) != 1:
        raise MenuError("failure: cannot set name of multiple items")
    item = targets[0]
    old = item["name"]
    if old == new:
        return
    if any(i["name"] == new for i in sw.tables["interface"]):
        raise MenuError("failure: already have interface with such name")
    item["name"] = new
    for bp in sw.tables["bridge-port"]:
        if bp["interface"] == old:
            bp["interface"] = new
        if bp["bridge"] == old:
            bp["bridge"] = new
    for q in sw.tables["qos-port"]:
        if q["name"] == old:
            q["name"] = new
    for h in sw.tables["bridge-host"]:
        for key in ("on-interface", "interface", "bridge"):
            if h.get(key) == old:
                h[key] = new


class EthernetMenu(InterfaceMenu):
    schema: ClassVar[dict[str, Kind]] = {
        "name": "str",
        "mtu": "int",
        "l2mtu": "int",
        "disabled": "bool",
        "comment": "str",
        "auto-negotiation": "bool",
        "speed": LINK_MODES,
        "advertise": "str",
        "fec-mode": ("off", "auto", "fec74", "fec91"),
        "tx-flow-control": ("off", "on", "auto"),
        "rx-flow-control": ("off", "on", "auto"),
        "mac-address": "str",
        "arp": "str",
    }

    def items(self, sw: SwitchState) -> list[Item]:
        return [i for i in sw.tables["interface"] if i.get("type") == "ether"]

    def row(self, sw: SwitchState, item: Item) -> Item:
        port = item["default-name"]
        out: Item = {
            ".id": item[".id"],
            "name": item["name"],
            "default-name": port,
            "mtu": item["mtu"],
            "l2mtu": item["l2mtu"],
            "mac-address": item["mac-address"],
            "orig-mac-address": item["mac-address"],
            "arp": item.get("arp", "enabled"),
            "arp-timeout": "auto",
            "loop-protect": "default",
            "loop-protect-status": "off",
            "loop-protect-send-interval": "5s",
            "loop-protect-disable-time": "5m",
            "auto-negotiation": item["auto-negotiation"],
            "advertise": item.get("advertise", _advertise(port)),
            "tx-flow-control": item["tx-flow-control"],
            "rx-flow-control": item["rx-flow-control"],
            "fec-mode": item["fec-mode"],
        }
        if "speed" in item:
            out["speed"] = item["speed"]
        if not is_cpu_port(port):
            out.update(
                {
                    "switch": "switch1",
                    "sfp-rate-select": "high",
                    "sfp-shutdown-temperature": "80C",
                    "sfp-ignore-rx-los": "false",
                }
            )
        up = sw.link(port).up
        out.update(
            {
                "running": "true" if up else "false",
                "slave": "true" if sw.bridge_port(port) else "false",
                "disabled": item.get("disabled", "false"),
            }
        )
        c = sw.counter(port)
        out.update(
            {
                "rx-bytes": str(c.rx_bytes),
                "tx-bytes": str(c.tx_bytes),
                "rx-packet": str(c.rx_packets),
                "tx-packet": str(c.tx_packets),
                "rx-fcs-error": "0",
                "rx-pause": str(c.rx_pause),
                "tx-pause": str(c.tx_pause),
                "rx-drop": "0",
                "tx-drop": "0",
                "link-downs": str(c.link_downs),
            }
        )
        if item.get("comment"):
            out["comment"] = item["comment"]
        return out

    def do_set(self, sw: SwitchState, targets: list[Item], attrs: dict[str, str]) -> None:
        if "name" in attrs:
            rename_interface(sw, targets, attrs["name"])
        bounced = [
            t["default-name"]
            for t in targets
            if any(k in attrs and t.get(k) != attrs[k] for k in BOUNCING)
        ]
        if any("l2mtu" in attrs and t.get("l2mtu") != attrs["l2mtu"] for t in targets):
            # a new l2mtu resets the switch chip: every cabled chip port retrains
            bounced += [p for p in sw.cables if not is_cpu_port(p) and p not in bounced]
        for item in targets:
            item.update({k: v for k, v in attrs.items() if k != "name"})
        sw.recompute(bounced=bounced)

    def monitor(self, sw: SwitchState, refs: str) -> list[Item]:
        return [monitor_row(sw, i) for i in self.resolve(sw, refs)]


def _advertise(port: str) -> str:
    if is_cpu_port(port):
        return (
            "10M-baseT-half,10M-baseT-full,100M-baseT-half,100M-baseT-full,1G-baseT-half,"
            "1G-baseT-full,2.5G-baseT,5G-baseT,10G-baseT"
        )
    if port.startswith("sfp56"):
        return "10G-baseCR,25G-baseCR,50G-baseCR"
    return "40G-baseCR4,100G-baseCR4,200G-baseCR4,400G-baseCR8"


def monitor_row(sw: SwitchState, item: Item) -> Item:
    port = item["default-name"]
    link = sw.link(port)
    cabled = port in sw.cables
    autoneg = item.get("auto-negotiation") == "true"
    if not autoneg:
        an = "disabled"
    elif link.up:
        an = "done"
    elif cabled:
        an = "failed"
    else:
        an = "incomplete"
    out: Item = {
        "name": item["name"],
        "status": "link-ok" if link.up else "no-link",
        "auto-negotiation": an,
    }
    if link.up:
        out.update(
            {
                "rate": rate_text(link.rate_gbps),
                "full-duplex": "true",
                "tx-flow-control": "false",
                "rx-flow-control": "false",
            }
        )
        if not is_cpu_port(port):
            out["fec"] = link.fec
    out["supported"] = _advertise(port)
    out["advertising"] = "" if not autoneg else item.get("advertise", _advertise(port))
    if link.up and autoneg:
        out["link-partner-advertising"] = out["advertising"]
    if not is_cpu_port(port):
        out["sfp-module-present"] = "true" if cabled else "false"
        if cabled:
            dd = port.startswith("qsfp56-dd")
            out.update(
                {
                    "sfp-rx-loss": "false" if link.up else "true",
                    "sfp-tx-fault": "false",
                    "sfp-type": "QSFPDD"
                    if dd
                    else ("QSFP56" if port.startswith("qsfp") else "SFP56"),
                    "sfp-connector-type": "no-separable-connector",
                    "sfp-link-length-cable-assembly": "0.5m",
                    "sfp-vendor-name": "NADDOD" if dd else "NVIDIA",
                    "sfp-vendor-part-number": "Q2Q56-400G-CU1" if dd else "MCP1650-V00AE30",
                    "sfp-encoding": "pam4",
                    "eeprom-checksum": "good",
                }
            )
            if dd:
                out["sfp-cmis-module-state"] = "ready"
    return out
