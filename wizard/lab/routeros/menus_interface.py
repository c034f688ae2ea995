"""Interface menus: /interface, ethernet (+ monitor), bridge, bridge port/host, switch, QoS.

What the checks read (`hw` vs the derived `hw-offload`, link status, `trust-l3`/`pfc`) and what
the fixes set (speed, auto-negotiation, fec-mode, l2mtu/mtu, bridge membership, path-cost).
"""

from __future__ import annotations

import re
from typing import ClassVar

from wizard.lab.routeros.menus_base import Kind, Menu, MenuError
from wizard.lab.routeros.switch import (
    Item,
    SwitchState,
    duration_text,
    is_cpu_port,
    rate_text,
)

__all__ = [
    "BridgeHostMenu",
    "BridgeMenu",
    "BridgePortMenu",
    "EthernetMenu",
    "InterfaceMenu",
    "PfcMenu",
    "QosPortMenu",
    "SwitchMenu",
    "monitor_row",
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
                    "l2mtu": _bridge_l2mtu(sw, item["name"]),
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
            _rename(sw, targets, attrs["name"])
        bounced = [
            t["default-name"]
            for t in targets
            if t.get("type") == "ether" and "l2mtu" in attrs and t.get("l2mtu") != attrs["l2mtu"]
        ]
        for item in targets:
            item.update({k: v for k, v in attrs.items() if k != "name"})
        sw.recompute(bounced=bounced)


def _bridge_l2mtu(sw: SwitchState, bridge: str) -> str:
    values = [
        int(e["l2mtu"])
        for p in sw.tables["bridge-port"]
        if p["bridge"] == bridge and (e := sw.ether(p["interface"]))
    ]
    return str(min(values)) if values else "65535"


def _rename(sw: SwitchState, targets: list[Item], new: str) -> None:
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
            _rename(sw, targets, attrs["name"])
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


class BridgeMenu(Menu):
    table = "interface"
    can_add = True
    can_remove = True
    schema: ClassVar[dict[str, Kind]] = {
        "name": "str",
        "mtu": "str",
        "protocol-mode": ("none", "stp", "rstp", "mstp"),
        "vlan-filtering": "bool",
        "priority": "str",
        "ageing-time": "duration",
        "auto-mac": "bool",
        "admin-mac": "str",
        "comment": "str",
        "disabled": "bool",
        "igmp-snooping": "bool",
        "dhcp-snooping": "bool",
        "pvid": "int",
        "frame-types": "str",
        "ingress-filtering": "bool",
        "port-cost-mode": "str",
        "arp": "str",
        "fast-forward": "bool",
    }

    def items(self, sw: SwitchState) -> list[Item]:
        return sw.bridges()

    def row(self, sw: SwitchState, item: Item) -> Item:
        out: Item = {".id": item[".id"], "name": item["name"], "mtu": item.get("mtu", "auto")}
        out.update(
            {
                "actual-mtu": InterfaceMenu().row(sw, item)["actual-mtu"],
                "l2mtu": _bridge_l2mtu(sw, item["name"]),
                "arp": item.get("arp", "enabled"),
                "arp-timeout": "auto",
                "mac-address": item["mac-address"],
                "protocol-mode": item.get("protocol-mode", "rstp"),
                "fast-forward": item.get("fast-forward", "true"),
                "igmp-snooping": item.get("igmp-snooping", "false"),
                "dhcp-snooping": item.get("dhcp-snooping", "false"),
                "auto-mac": item.get("auto-mac", "true"),
                "ageing-time": item.get("ageing-time", "5m"),
                "priority": item.get("priority", "0x8000"),
                "max-message-age": "20s",
                "forward-delay": "15s",
                "transmit-hold-count": "6",
                "vlan-filtering": item.get("vlan-filtering", "false"),
                "port-cost-mode": item.get("port-cost-mode", "long"),
                "pvid": item.get("pvid", "1"),
                "frame-types": item.get("frame-types", "admit-all"),
                "ingress-filtering": item.get("ingress-filtering", "true"),
                "running": "true",
                "disabled": item.get("disabled", "false"),
                "dynamic": "false",
            }
        )
        if "admin-mac" in item:
            out["admin-mac"] = item["admin-mac"]
        if item.get("comment"):
            out["comment"] = item["comment"]
        return out

    def do_add(self, sw: SwitchState, attrs: dict[str, str]) -> str:
        name = attrs.get("name")
        if not name:
            n = 1
            while any(i["name"] == f"bridge{n}" for i in sw.tables["interface"]):
                n += 1
            name = f"bridge{n}"
        if any(i["name"] == name for i in sw.tables["interface"]):
            raise MenuError("failure: already have interface with such name")
        mac = "02:" + ":".join(
            f"{(sw.boot_count * 7 + len(sw.tables['interface']) * 13 + k) % 256:02X}"
            for k in range(5)
        )
        item = {
            "type": "bridge",
            "mtu": "auto",
            "l2mtu": "65535",
            "mac-address": mac,
            "protocol-mode": "rstp",
            "disabled": "false",
            **attrs,
            "name": name,
        }
        item_id = sw.add_item("interface", item)
        sw.recompute()
        return item_id

    def do_set(self, sw: SwitchState, targets: list[Item], attrs: dict[str, str]) -> None:
        if "name" in attrs:
            _rename(sw, targets, attrs["name"])
        for item in targets:
            item.update({k: v for k, v in attrs.items() if k != "name"})
        sw.recompute()

    def remove(self, sw: SwitchState, refs: str) -> None:
        targets = self.resolve(sw, refs)
        names = {t["name"] for t in targets}
        sw.tables["interface"][:] = [i for i in sw.tables["interface"] if i not in targets]
        sw.tables["bridge-port"][:] = [
            p for p in sw.tables["bridge-port"] if p["bridge"] not in names
        ]
        sw.tables["bridge-host"][:] = [
            h for h in sw.tables["bridge-host"] if h["bridge"] not in names
        ]
        sw.recompute()


class BridgePortMenu(Menu):
    table = "bridge-port"
    named = False
    can_add = True
    can_remove = True
    schema: ClassVar[dict[str, Kind]] = {
        "interface": "str",
        "bridge": "str",
        "hw": "bool",
        "pvid": "int",
        "priority": "str",
        "path-cost": "int",
        "internal-path-cost": "int",
        "edge": ("auto", "yes", "no", "no-discover", "yes-discover"),
        "point-to-point": ("auto", "yes", "no"),
        "learn": ("auto", "yes", "no"),
        "horizon": "str",
        "trusted": "bool",
        "bpdu-guard": "bool",
        "comment": "str",
        "disabled": "bool",
        "frame-types": "str",
        "ingress-filtering": "bool",
        "restricted-role": "bool",
        "restricted-tcn": "bool",
        "fast-leave": "bool",
    }

    def check_ref(self, sw: SwitchState, prop: str, value: str) -> str:
        if prop == "interface" and not any(
            i["name"] == value for i in sw.tables["interface"] if i.get("type") == "ether"
        ):
            raise MenuError("input does not match any value of interface", 1)
        if prop == "bridge" and not any(b["name"] == value for b in sw.bridges()):
            raise MenuError("input does not match any value of bridge", 1)
        return value

    def resolve(self, sw: SwitchState, refs: str) -> list[Item]:
        out: list[Item] = []
        for ref in (r.strip() for r in refs.split(",") if r.strip()):
            found = [i for i in self.items(sw) if ref in (i[".id"], i["interface"])]
            if not found:
                raise MenuError("no such item (4)")
            out.extend(found)
        return out

    def row(self, sw: SwitchState, item: Item) -> Item:
        port = item["interface"]
        number = self.items(sw).index(item) + 1
        link = sw.link(port)
        role = sw.port_role(port)
        disabled = item.get("disabled", "false") == "true"
        forwarding = link.up and not disabled and role in ("designated-port", "root-port")
        hw_offload = sw.hw_offload(port)
        cost = str(sw.path_cost(port))
        out: Item = {
            ".id": item[".id"],
            "interface": port,
            "bridge": item["bridge"],
            "priority": item.get("priority", "0x80"),
            "path-cost": item.get("path-cost", cost),
            "internal-path-cost": item.get("internal-path-cost", cost),
            "edge": item.get("edge", "auto"),
            "point-to-point": item.get("point-to-point", "auto"),
            "learn": item.get("learn", "auto"),
            "horizon": item.get("horizon", "none"),
            "hw": item.get("hw", "true"),
            "hw-offload": "true" if hw_offload else "false",
            "auto-isolate": "false",
            "restricted-role": item.get("restricted-role", "false"),
            "restricted-tcn": item.get("restricted-tcn", "false"),
            "pvid": item.get("pvid", "1"),
            "frame-types": item.get("frame-types", "admit-all"),
            "ingress-filtering": item.get("ingress-filtering", "true"),
            "unknown-unicast-flood": "true",
            "unknown-multicast-flood": "true",
            "broadcast-flood": "true",
            "tag-stacking": "false",
            "bpdu-guard": item.get("bpdu-guard", "false"),
            "trusted": item.get("trusted", "false"),
            "multicast-router": "temporary-query",
            "fast-leave": item.get("fast-leave", "false"),
            "inactive": "false" if link.up and not disabled else "true",
            "dynamic": "false",
            "disabled": "true" if disabled else "false",
            "status": "in-bridge" if link.up and not disabled else "inactive",
            "role": role,
            "port-number": str(number),
            "port-id": f"0x80.{number}",
            "edge-port": "false",
            "edge-port-discovery": "true",
            "point-to-point-port": "true",
            "external-fdb-status": "true" if hw_offload else "false",
            "sending-rstp": "true" if link.up else "false",
            "learning": "true" if forwarding else "false",
            "forwarding": "true" if forwarding else "false",
            "actual-path-cost": item.get("path-cost", cost),
            "root-path-cost": "0",
            "designated-bridge": "0x8000." + _bridge_mac(sw, item["bridge"]),
            "designated-cost": "0",
            "designated-port-number": str(number),
        }
        if not is_cpu_port(sw._default_name(port)):
            out["hw-offload-group"] = "switch1"
        if item.get("comment"):
            out["comment"] = item["comment"]
        return out

    def do_add(self, sw: SwitchState, attrs: dict[str, str]) -> str:
        for need in ("interface", "bridge"):
            if need not in attrs:
                raise MenuError(f"failure: {need} not specified")
        if sw.bridge_port(attrs["interface"]) is not None:
            raise MenuError("failure: device already added as bridge port")
        item = {"hw": "true", "disabled": "false", **attrs}
        item_id = sw.add_item("bridge-port", item)
        sw.recompute()
        return item_id

    def remove(self, sw: SwitchState, refs: str) -> None:
        targets = self.resolve(sw, refs)
        gone = {t["interface"] for t in targets}
        sw.tables["bridge-port"][:] = [p for p in sw.tables["bridge-port"] if p not in targets]
        sw.tables["bridge-host"][:] = [
            h for h in sw.tables["bridge-host"] if h["on-interface"] not in gone
        ]
        sw.recompute()


def _bridge_mac(sw: SwitchState, bridge: str) -> str:
    for b in sw.bridges():
        if b["name"] == bridge:
            return b["mac-address"]
    return "00:00:00:00:00:00"


class BridgeHostMenu(Menu):
    table = "bridge-host"
    named = False

    def row(self, sw: SwitchState, item: Item) -> Item:
        out = super().row(sw, item)
        if "_learned" in item and out.get("local") != "true":
            out["age"] = duration_text(max(0.0, sw.clock() - float(item["_learned"])))
        return out

    def rows(self, sw: SwitchState) -> list[Item]:
        from wizard.lab.routeros.menus_ip import wizard_host

        wizard = wizard_host(sw)  # the wizard's own MAC, learned on the management port
        return super().rows(sw) + ([wizard] if wizard else [])


class QosPortMenu(Menu):
    table = "qos-port"
    schema: ClassVar[dict[str, Kind]] = {
        "profile": "str",
        "map": "str",
        "trust-l2": ("ignore", "trust", "keep"),
        "trust-l3": ("ignore", "trust", "keep"),
        "tx-manager": "str",
        "pfc": "str",
        **{f"egress-rate-queue{i}": "str" for i in range(8)},
    }

    def check_ref(self, sw: SwitchState, prop: str, value: str) -> str:
        if prop == "pfc" and not any(p["name"] == value for p in sw.tables["pfc"]):
            raise MenuError("input does not match any value of pfc", 1)
        if prop.startswith("egress-rate-queue"):
            rate = _parse_rate(value)
            if rate is None:
                raise MenuError(f"input does not match any value of {prop}", 1)
            if rate > 100e9:
                raise MenuError("failure: max bit rate is 100G")
            return _format_rate(rate)
        return value

    def row(self, sw: SwitchState, item: Item) -> Item:
        out = super().row(sw, item)
        if item["name"] != "switch1-cpu":
            out["running"] = "true" if sw.link(item["name"]).up else "false"
        out["invalid"] = "false"
        return out


def _parse_rate(text: str) -> float | None:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kMG]?)(?:bps)?", text)
    if not m:
        return None
    return float(m.group(1)) * {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]


def _format_rate(bps: float) -> str:
    if bps >= 1e9:
        return f"{bps / 1e9:.1f}Gbps"
    if bps >= 1e6:
        return f"{bps / 1e6:.1f}Mbps"
    return f"{int(bps)}bps"


class PfcMenu(Menu):
    table = "pfc"
    can_add = True
    can_remove = True
    schema: ClassVar[dict[str, Kind]] = {
        "name": "str",
        "traffic-class": "str",
        "rx": "bool",
        "tx": "bool",
        "pause-threshold": "str",
        "resume-threshold": "str",
        "comment": "str",
        "disabled": "bool",
    }

    def do_add(self, sw: SwitchState, attrs: dict[str, str]) -> str:
        if any(p["name"] == attrs.get("name") for p in sw.tables["pfc"]):
            raise MenuError("failure: item with such name already exists")
        return super().do_add(
            sw, {"rx": "false", "tx": "false", "disabled": "false", "default": "false", **attrs}
        )

    def row(self, sw: SwitchState, item: Item) -> Item:
        out = super().row(sw, item)
        out.update({"inactive": "false", "hw-offloaded": "true"})
        return out


class SwitchMenu(Menu):
    table = "switch"
    schema: ClassVar[dict[str, Kind]] = {
        "l3-hw-offloading": "bool",
        "qos-hw-offloading": "bool",
        "cpu-flow-control": "bool",
        "mirror-source": "str",
        "mirror-target": "str",
        "mirror-egress-target": "str",
    }

    def do_set(self, sw: SwitchState, targets: list[Item], attrs: dict[str, str]) -> None:
        # New-generation Prestera chips keep QoS offload on whatever is asked (4.7).
        attrs = {k: v for k, v in attrs.items() if k != "qos-hw-offloading"}
        super().do_set(sw, targets, attrs)

    def row(self, sw: SwitchState, item: Item) -> Item:
        out = super().row(sw, item)
        out["invalid"] = "false"
        return out
