"""Switch-chip menus: /interface/ethernet/switch, its QoS ports (trust-l3, pfc) and PFC profiles."""

from __future__ import annotations

import re
from typing import ClassVar

from wizard.lab.routeros.menus_base import Kind, Menu, MenuError
from wizard.lab.routeros.switch import Item, SwitchState

__all__ = ["PfcMenu", "QosPortMenu", "SwitchMenu"]


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
