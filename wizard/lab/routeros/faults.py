"""Injecting the `switch.*` faults of FAULTS.md into a SwitchState.

Each fault is made the way a person would make it on a real switch: by changing the
configuration through the same menus the API and scripts use, so the evidence the checks look
for (flags, log lines, monitor output) follows from the switch model and the wizard's fixes
really undo it. `ports` narrows a fault to some ports; `params` tune it (documented per fault).
"""

from __future__ import annotations

from collections.abc import Callable

from wizard.lab.routeros.menus import (
    BridgeMenu,
    BridgePortMenu,
    EthernetMenu,
    PfcMenu,
    QosPortMenu,
)
from wizard.lab.routeros.switch import (
    SwitchState,
    cage_of,
    is_cpu_port,
    is_lane_master,
    port_names,
)

__all__ = ["SWITCH_FAULTS", "UnknownSwitchFault", "apply_switch_fault"]


class UnknownSwitchFault(ValueError):
    """The fault id is not a switch fault of FAULTS.md."""


def _cabled_fabric(sw: SwitchState) -> list[str]:
    cabled = [p for p in sw.fabric_ports() if p in sw.cables]
    return cabled or sw.fabric_ports()


def _in_use(sw: SwitchState) -> list[str]:
    """Switch-chip ports with a cable (node legs and ISLs), else every fabric port."""
    cabled = [p for p in sw.cables if not is_cpu_port(p)]
    return sorted(cabled, key=port_names(sw.model).index) or sw.fabric_ports()


def _names(sw: SwitchState, ports: list[str]) -> list[str]:
    out = []
    for port in ports:
        item = sw.ether(port)
        if item is None:
            raise UnknownSwitchFault(f"{sw.name} has no port {port}")
        out.append(item["name"])
    return out


def _dd_masters(sw: SwitchState, ports: list[str] | None) -> list[str]:
    chosen = ports or [p for p in sw.fabric_ports() if cage_of(p) is not None]
    return _names(sw, chosen)


def _breakout_autoneg(sw: SwitchState, ports: list[str] | None, **_: object) -> None:
    """Lane masters back to auto-negotiation (no forced speed): DD legs get no link."""
    eth = EthernetMenu()
    for name in _dd_masters(sw, ports):
        item = eth.resolve(sw, name)[0]
        item.pop("speed", None)
        eth.set(sw, name, {"auto-negotiation": "yes", "fec-mode": "auto"})


def _link_degraded(
    sw: SwitchState,
    ports: list[str] | None,
    *,
    speed: object = "100G-baseCR4",
    fec_mode: object = None,
    **_: object,
) -> None:
    """params: speed (default 100G-baseCR4), fec_mode (e.g. `off`, `fec74`)."""
    attrs = {"auto-negotiation": "no", "speed": str(speed)}
    if fec_mode is not None:
        attrs["fec-mode"] = str(fec_mode)
    for name in _names(sw, ports or _cabled_fabric(sw)[:1]):
        EthernetMenu().set(sw, name, attrs)


def _move(sw: SwitchState, names: list[str], bridge: str) -> None:
    bp = BridgePortMenu()
    for name in names:
        if sw.bridge_port(name) is None:
            bp.add(sw, {"bridge": bridge, "interface": name})
        else:
            bp.set(sw, name, {"bridge": bridge})


def _ensure_bridge(sw: SwitchState, name: str) -> None:
    if not any(b["name"] == name for b in sw.bridges()):
        BridgeMenu().add(sw, {"name": name})


def _split_cage(
    sw: SwitchState, ports: list[str] | None, *, bridge: object = "roce-br", **_: object
) -> None:
    """The node legs and ISLs (ports, default: the cabled ones) in a RoCE bridge; the unused
    sub-ports of their cages stay in the defconf bridge (seed 000)."""
    _ensure_bridge(sw, str(bridge))
    _move(sw, _names(sw, ports or _in_use(sw)), str(bridge))


def _second_bridge(
    sw: SwitchState, ports: list[str] | None, *, bridge: object = "fabric", **_: object
) -> None:
    """Fabric ports (default: the cabled ones, with their whole DD cages) in a second bridge
    named `fabric` (seed 003); the chip stays with the first bridge.

    When the first bridge would be left without switch-chip ports (CRS804: only ether1), the
    unused sub-ports stay behind, as they did on the CRS804 build, so offload is refused.
    """
    name = str(bridge)
    _ensure_bridge(sw, name)
    chosen = [sw.resolve_port(p) for p in ports or _in_use(sw)]
    cages = {cage_of(p) for p in chosen} - {None}
    whole = [
        p for p in (i["default-name"] for i in EthernetMenu().items(sw)) if cage_of(p) in cages
    ]
    extra = [p for p in chosen if cage_of(p) is None]
    _move(sw, _names(sw, whole + extra), name)
    if sw.hw_offloaded_bridge() == name:
        leave = [p for p in whole if not is_lane_master(p)]
        first = sw.bridges()[0]["name"]
        _move(sw, _names(sw, leave), first)


def _offload_disabled(sw: SwitchState, ports: list[str] | None, **_: object) -> None:
    for name in _names(sw, ports or _cabled_fabric(sw)[:1]):
        BridgePortMenu().set(sw, name, {"hw": "no"})


def _qos_pfc(
    sw: SwitchState,
    ports: list[str] | None,
    *,
    profile: object = "pfc-tc3",
    trust_l3: object = "keep",
    **_: object,
) -> None:
    """MikroTik's lossless RoCE recipe on the fabric ports (params: profile, trust_l3)."""
    pfc = PfcMenu()
    if not any(p["name"] == str(profile) for p in sw.tables["pfc"]):
        pfc.add(
            sw,
            {
                "name": str(profile),
                "traffic-class": "3",
                "rx": "yes",
                "tx": "yes",
                "pause-threshold": "90%",
                "resume-threshold": "70%",
            },
        )
    names = _names(sw, ports or sw.fabric_ports())
    QosPortMenu().set(sw, ",".join(names), {"trust-l3": str(trust_l3), "pfc": str(profile)})


def _mtu(
    sw: SwitchState,
    ports: list[str] | None,
    *,
    l2mtu: object = 1584,
    mtu: object = 1500,
    **_: object,
) -> None:
    for name in _names(sw, ports or _cabled_fabric(sw)[:1]):
        EthernetMenu().set(sw, name, {"l2mtu": str(l2mtu), "mtu": str(mtu)})


def _rstp_isl_blocked(
    sw: SwitchState,
    ports: list[str] | None,
    *,
    uplink: object = "ether1",
    campus: object = "campus:uplink",
    **_: object,
) -> None:
    """A campus uplink closes an L2 loop; RSTP blocks the ISL (ports, default: ports cabled to
    another switch). The world's RSTP may recompute roles from `path_cost`."""
    if str(uplink) not in sw.cables:
        sw.set_cable(str(uplink), str(campus))
    isl = ports or [
        p for p, peer in sw.cables.items() if not peer.startswith("spark") and p != str(uplink)
    ]
    for port in isl:
        sw.set_port_role(port, "alternate-port")
    sw.recompute()


SWITCH_FAULTS: dict[str, Callable[..., None]] = {
    "switch.breakout-autoneg": _breakout_autoneg,
    "switch.link-degraded": _link_degraded,
    "switch.offload-split-cage": _split_cage,
    "switch.offload-second-bridge": _second_bridge,
    "switch.offload-disabled": _offload_disabled,
    "switch.qos-pfc-stall": _qos_pfc,
    "switch.mtu": _mtu,
    "switch.rstp-isl-blocked": _rstp_isl_blocked,
}


def apply_switch_fault(
    sw: SwitchState, fault_id: str, *, ports: list[str] | None = None, **params: object
) -> None:
    """Inject `fault_id` (a `switch.*` id of FAULTS.md) into `sw`."""
    try:
        fault = SWITCH_FAULTS[fault_id]
    except KeyError:
        known = ", ".join(sorted(SWITCH_FAULTS))
        raise UnknownSwitchFault(f"unknown switch fault {fault_id!r}; known: {known}") from None
    fault(sw, ports, **params)
