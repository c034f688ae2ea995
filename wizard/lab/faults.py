"""Fault injection by the ids of FAULTS.md.

Host faults are written the way they happen in life: into the persistent files (netplan,
sysctl.d, `/etc/nccl.conf`, `/etc/profile.d`), the NIC's boot defaults or its firmware state,
then applied, so fixes and reboots behave as on a real node. Switch faults are delegated to the
RouterOS model (`apply_switch_fault`). Benign ids are accepted and only show as the log lines
every GB10 prints anyway (the 27 W line in dmesg, "GPU Direct RDMA Disabled" in NCCL logs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from wizard.errors import FabwizError
from wizard.lab.catalog import (
    BENIGN,
    INJECTABLE,
)
from wizard.lab.switchport import apply_switch_fault
from wizard.lab.world import (
    NETPLAN_PATH,
    OLD_FIRMWARE,
    RAIL_LAYOUT,
    End,
    NodeState,
    World,
)

PFC_PRIO3 = (0, 0, 0, 1, 0, 0, 0, 0)


def _netplan_edit(node: NodeState, edit: dict[str, dict[str, Any] | None]) -> None:
    data = yaml.safe_load(node.files.get(NETPLAN_PATH, "")) or {}
    eths = data.setdefault("network", {}).setdefault("ethernets", {})
    for netdev, cfg in edit.items():
        if cfg is None:
            eths.pop(netdev, None)
        else:
            eths.setdefault(netdev, {}).update(cfg)
    node.files[NETPLAN_PATH] = yaml.safe_dump(data, sort_keys=False, default_flow_style=None)


def _default_nodes(world: World, fault: str) -> list[str]:
    names = list(world.nodes)
    if fault == "host.duplicate-ip":
        return names[1:3] if len(names) >= 3 else names[:2]
    if fault in ("host.mtu", "host.pcie-width", "host.cx7-throttled", "host.cx7-degraded"):
        return names[1:2] if len(names) > 1 else names[:1]
    if fault in ("host.rail-down", "process.undrained-measurement"):
        return names[:1]
    return names


def inject(
    world: World,
    fault_id: str,
    *,
    nodes: list[str] | None = None,
    switches: list[str] | None = None,
    ports: list[str] | None = None,
    params: dict[str, Any] | None = None,
) -> None:
    """Inject one fault (FAULTS.md id) with optional targets."""
    params = dict(params or {})
    if fault_id in BENIGN:
        return
    if fault_id not in INJECTABLE:
        raise FabwizError(f"unknown fault id {fault_id!r}", hint="see FAULTS.md for the ids")
    if fault_id.startswith("switch."):
        _switch_fault(world, fault_id, switches, ports, params)
        return
    targets = nodes or _default_nodes(world, fault_id)
    for name in targets:
        if name not in world.nodes:
            raise FabwizError(f"{fault_id}: no node named {name!r}")
    if fault_id == "host.duplicate-ip" and params.get("scope", "cluster") not in (
        "node",
        "cluster",
    ):
        raise FabwizError(
            f"host.duplicate-ip: scope {params['scope']!r} is not one of node, cluster",
            hint="scope: node puts all rails of each node on one address; cluster (default) "
            "gives the later nodes the first node's addresses",
        )
    if fault_id == "host.duplicate-ip" and params.get("scope") == "node":
        # seed 000: "two nodes had all four rails on a single address"
        for name in targets:
            node = world.nodes[name]
            one = f"10.9.1.{node.index}/24"
            _netplan_edit(node, {netdev: {"addresses": [one]} for netdev, *_x in RAIL_LAYOUT})
            world.apply_netplan(node)
        return
    if fault_id == "host.duplicate-ip":
        first = world.nodes[targets[0]]
        for name in targets[1:]:
            node = world.nodes[name]
            _netplan_edit(
                node,
                {
                    netdev: {"addresses": [f"10.9.{r}.{first.index}/24"]}
                    for r, (netdev, *_x) in enumerate(RAIL_LAYOUT, start=1)
                },
            )
            world.apply_netplan(node)
        return
    for name in targets:
        node = world.nodes[name]
        inject = _HOST_INJECTORS.get(fault_id)
        if inject is not None:
            inject(world, node, params)


def _inject_pfc_enabled(world: World, node: NodeState, params: dict[str, Any]) -> None:
    node.pfc_boot = tuple(params.get("pfc", PFC_PRIO3))
    for rail in node.rails:
        rail.pfc = node.pfc_boot


def _inject_mtu(world: World, node: NodeState, params: dict[str, Any]) -> None:
    mtu = int(params.get("mtu", 1500))
    _netplan_edit(node, {netdev: {"mtu": mtu} for netdev, *_x in RAIL_LAYOUT})
    world.apply_netplan(node)


def _inject_same_subnet_rails(world: World, node: NodeState, params: dict[str, Any]) -> None:
    _netplan_edit(
        node,
        {
            netdev: {"addresses": [f"10.9.1.{node.index + 10 * (r - 1)}/24"]}
            for r, (netdev, *_x) in enumerate(RAIL_LAYOUT, start=1)
        },
    )
    world.apply_netplan(node)


def _inject_arp_sysctls(world: World, node: NodeState, params: dict[str, Any]) -> None:
    node.files.pop("/etc/sysctl.d/98-roce.conf", None)
    node.sysctls.update(
        {
            "net.ipv4.conf.all.arp_ignore": "0",
            "net.ipv4.conf.all.arp_announce": "0",
            "net.ipv4.conf.all.rp_filter": "2",
        }
    )


def _inject_ipv6_on_fabric(world: World, node: NodeState, params: dict[str, Any]) -> None:
    _netplan_edit(
        node,
        {
            netdev: {
                "link-local": ["ipv6"],
                "dhcp6": True,
                # the IPv6 address first: its GIDs come before the IPv4 ones
                "addresses": [f"fd00:9:{r}::{node.index}/64", f"10.9.{r}.{node.index}/24"],
            }
            for r, (netdev, *_x) in enumerate(RAIL_LAYOUT, start=1)
        },
    )
    world.apply_netplan(node)


def _inject_half_unused(world: World, node: NodeState, params: dict[str, Any]) -> None:
    _netplan_edit(node, {r.netdev: None for r in node.rails if r.half == "B"})
    world.apply_netplan(node)


def _inject_rail_down(world: World, node: NodeState, params: dict[str, Any]) -> None:
    port = params.get("port")
    if port is None:
        cabled = [p for p in (1, 0) if world.cable_at(End("node", node.name, f"port{p}"))]
        port = cabled[0] if cabled else 0
    cable = world.cable_at(End("node", node.name, f"port{int(port)}"))
    if cable is not None:
        cable.seated = False
        world.unplug_effects(cable)


def _inject_pcie_width(world: World, node: NodeState, params: dict[str, Any]) -> None:
    node.pcie_width = int(params.get("width", 2))
    world.boot_log(node)


def _inject_cx7_throttled(world: World, node: NodeState, params: dict[str, Any]) -> None:
    node.firmware = str(params.get("firmware", OLD_FIRMWARE))
    node.throttled = True
    world.boot_log(node)


def _inject_cx7_degraded(world: World, node: NodeState, params: dict[str, Any]) -> None:
    node.susceptible = True
    node.degraded = True


def _inject_hca_filter(world: World, node: NodeState, params: dict[str, Any]) -> None:
    value = str(params.get("value", "rocep1s0f"))
    # where the job's environment carries it: the shell profile (default), or a NCCL config
    # file (`/etc/nccl.conf`, the lab login's `~/.nccl.conf`), which NCCL itself reads
    where = str(params.get("file", "/etc/profile.d/nccl.sh"))
    if where == "/etc/profile.d/nccl.sh":
        node.files[where] = f"export NCCL_IB_HCA={value}\n"
    elif where in ("/etc/nccl.conf", "~/.nccl.conf"):
        node.files[where.replace("~", "/home/fabwiz", 1)] = f"NCCL_IB_HCA={value}\n"
    else:
        raise FabwizError(
            f"nccl.hca-filter: file {where!r} is not one NCCL reads "
            "(/etc/profile.d/nccl.sh, /etc/nccl.conf, ~/.nccl.conf)"
        )


def _inject_socket_fallback(world: World, node: NodeState, params: dict[str, Any]) -> None:
    line = str(params.get("line", "NCCL_IB_DISABLE=1"))
    node.files["/etc/nccl.conf"] = f"{line}\n"


def _inject_undrained_measurement(world: World, node: NodeState, params: dict[str, Any]) -> None:
    for port in (0, 1):
        if world.port_link(node.name, port):
            world.link_transition(node.name, port, up=False)
            world.link_transition(node.name, port, up=True)


_HOST_INJECTORS: dict[str, Callable[[World, NodeState, dict[str, Any]], None]] = {
    "host.pfc-enabled": _inject_pfc_enabled,
    "host.mtu": _inject_mtu,
    "host.same-subnet-rails": _inject_same_subnet_rails,
    "host.arp-sysctls": _inject_arp_sysctls,
    "host.ipv6-on-fabric": _inject_ipv6_on_fabric,
    "host.half-unused": _inject_half_unused,
    "host.rail-down": _inject_rail_down,
    "host.pcie-width": _inject_pcie_width,
    "host.cx7-throttled": _inject_cx7_throttled,
    "host.cx7-degraded": _inject_cx7_degraded,
    "nccl.hca-filter": _inject_hca_filter,
    "nccl.socket-fallback": _inject_socket_fallback,
    "process.undrained-measurement": _inject_undrained_measurement,
}


def _switch_fault(
    world: World,
    fault_id: str,
    switches: list[str] | None,
    ports: list[str] | None,
    params: dict[str, Any],
) -> None:
    if not world.switches:
        raise FabwizError(f"{fault_id} needs a switch in the topology")
    names = switches or (
        list(world.switches) if fault_id == "switch.rstp-isl-blocked" else list(world.switches)[:1]
    )
    if fault_id == "switch.rstp-isl-blocked":
        for name in world.switches:
            if world.uplink(name) is None:
                world.connect(End("switch", name, "ether1"), End("campus", "campus", "lan"))
    for name in names:
        if name not in world.switches:
            raise FabwizError(f"{fault_id}: no switch named {name!r}")
        apply_switch_fault(world.switches[name], fault_id, ports=ports, **params)
    world.compute_rstp()
    world.learn_macs()
