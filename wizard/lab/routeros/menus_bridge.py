"""Bridge menus: /interface/bridge, bridge port (hw vs the derived hw-offload, RSTP) and host."""

from __future__ import annotations

from typing import ClassVar

from wizard.lab.routeros.menus_base import Kind, Menu, MenuError
from wizard.lab.routeros.menus_ether import InterfaceMenu, bridge_l2mtu, rename_interface
from wizard.lab.routeros.switch import (
    Item,
    SwitchState,
    duration_text,
    is_cpu_port,
)

__all__ = [
    "BridgeHostMenu",
    "BridgeMenu",
    "BridgePortMenu",
]


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
                "l2mtu": bridge_l2mtu(sw, item["name"]),
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
            rename_interface(sw, targets, attrs["name"])
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
