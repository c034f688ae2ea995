"""The lab's world: GB10 nodes, cables, switches, a simulated clock.

Everything the emulated tools print and everything the physics computes is read from here, and
everything a fix or a pair of hands changes is written here. Host configuration follows the real
life cycle (see `hostconfig`); faults are injected by writing those files (see `faults.py`). The
parts of the world are in `elements`, the path of a frame across switches in `l2path`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

from wizard.lab import hostconfig, l2path
from wizard.lab.clock import Clock, as_clock
from wizard.lab.elements import (
    DEFAULT_SYSCTLS,
    GOOD_FIRMWARE,
    HW_COUNTERS,
    NETPLAN_PATH,
    OLD_FIRMWARE,
    PFC_OFF,
    PHY_COUNTERS,
    PORT_COUNTERS,
    PSID,
    RAIL_LAYOUT,
    Cable,
    End,
    Hop,
    L2Path,
    NodeState,
    RailState,
    mac_address,
    parse_pfc,
    rail_address,
)
from wizard.lab.facts import Facts
from wizard.lab.hostconfig import healthy_netplan
from wizard.lab.switchport import SwitchLike
from wizard.schema import dump

__all__ = [
    "DEFAULT_SYSCTLS",
    "GOOD_FIRMWARE",
    "HW_COUNTERS",
    "NETPLAN_PATH",
    "OLD_FIRMWARE",
    "PFC_OFF",
    "PHY_COUNTERS",
    "PORT_COUNTERS",
    "PSID",
    "RAIL_LAYOUT",
    "Cable",
    "End",
    "Hop",
    "L2Path",
    "NodeState",
    "RailState",
    "World",
    "healthy_netplan",
    "parse_pfc",
    "rail_address",
]


class World:
    """Nodes, cables and switches, with a clock that runs `time_scale` times faster than life."""

    def __init__(
        self,
        *,
        seed: int = 0,
        time_scale: float = 1.0,
        name: str = "lab",
        clock: Clock | Callable[[], float] | None = None,
    ) -> None:
        self.name = name
        # lab time: real time `time_scale` times faster, unless a clock is injected (a test
        # passes a `ManualClock` and advances it instead of sleeping)
        self.clock = as_clock(clock, time_scale)
        self.seed = seed
        self.rng = random.Random(seed)
        self.nodes: dict[str, NodeState] = {}
        self.switches: dict[str, SwitchLike] = {}
        self.switch_models: dict[str, str] = {}
        self.cables: list[Cable] = []
        self.on_change: list[Callable[[str], None]] = []
        # the fabric as built ("node/netdev" -> "switch/port"): the inventory's cabling plan,
        # which stays what it was while hands move cables around (direct-connect test)
        self.planned_cabling: dict[str, str] = {}
        self.traffic: Any = None  # wizard.lab.traffic.Traffic, attached by it
        self.facts = Facts()  # what the scenario that built it says beyond its faults
        # every command line a node's tools refused (unknown command, usage error): what a
        # real node would have refused too, so a client of the lab sees its own mistakes
        self.refused: list[tuple[str, str]] = []

    # --- clock --------------------------------------------------------------------------------

    @property
    def time_scale(self) -> float:
        """How much faster than life lab time runs."""
        return self.clock.time_scale

    def now(self) -> float:
        """Simulated wall clock (seconds since the epoch)."""
        return self.clock.now()

    def set_clock(self, sim_now: float) -> None:
        self.clock.set(sim_now)

    def wall_seconds(self, sim_seconds: float) -> float:
        return self.clock.wall_seconds(sim_seconds)

    async def sleep(self, sim_seconds: float) -> None:
        """Wait until `sim_seconds` of lab time have passed."""
        await self.clock.sleep(sim_seconds)

    def changed(self, what: str) -> None:
        for f in list(self.on_change):
            f(what)

    # --- building -----------------------------------------------------------------------------

    def add_node(self, name: str, index: int) -> NodeState:
        rails = [
            RailState(
                netdev=netdev,
                rdma=rdma,
                port=port,
                half=half,
                pci=pci,
                mac=mac_address(f"{self.seed}/{name}/{netdev}"),
            )
            for netdev, rdma, port, half, pci in RAIL_LAYOUT
        ]
        node = NodeState(name=name, index=index, rails=rails, pid=3000 + 97 * index)
        node.files[NETPLAN_PATH] = healthy_netplan(index)
        node.files["/etc/sysctl.d/98-roce.conf"] = (
            "net.ipv4.conf.all.arp_ignore = 1\n"
            "net.ipv4.conf.all.arp_announce = 2\n"
            "net.ipv4.conf.all.rp_filter = 2\n"
        )
        node.files["/etc/hostname"] = name + "\n"
        self.nodes[name] = node
        return node

    def add_switch(self, name: str, model: str, sw: SwitchLike) -> None:
        self.switches[name] = sw
        self.switch_models[name] = model

        def listener(event: str, port: str) -> None:
            self._switch_event(name, event, port)

        sw.listeners.append(listener)

    def connect(self, a: End, b: End) -> Cable:
        cable = Cable(a, b)
        self.cables.append(cable)
        self._cable_changed(cable, plugged=True)
        return cable

    # --- cabling ------------------------------------------------------------------------------

    def cable_at(self, end: End) -> Cable | None:
        for c in self.cables:
            if end in (c.a, c.b):
                return c
        return None

    def peer(self, end: End) -> End | None:
        c = self.cable_at(end)
        if c is None or not c.seated:
            return None
        return c.other(end)

    def _end_alive(self, end: End) -> bool:
        if end.kind == "node":
            return self.nodes[end.name].powered
        return True

    def port_link(self, node: str, port: int) -> bool:
        """Carrier on a node QSFP port."""
        n = self.nodes[node]
        if not n.powered:
            return False
        me = End("node", node, f"port{port}")
        other = self.peer(me)
        if other is None or not self._end_alive(other):
            return False
        if other.kind == "switch":
            return bool(self.switches[other.name].link(other.port).up)
        return other.kind == "node"

    def rail_up(self, node: str, rail: RailState) -> bool:
        return self.port_link(node, rail.port)

    def sync_switch_side(self, cable: Cable) -> None:
        for me, other in ((cable.a, cable.b), (cable.b, cable.a)):
            if me.kind != "switch":
                continue
            alive = cable.seated and self._end_alive(other) and other.kind != "campus"
            peer = other.label if alive else None
            if other.kind == "campus" and cable.seated:
                peer = "campus:lan"
            self.switches[me.name].set_cable(me.port, peer)

    def _cable_changed(self, cable: Cable, *, plugged: bool) -> None:
        self.sync_switch_side(cable)
        for end in (cable.a, cable.b):
            if end.kind == "node":
                self.link_transition(end.name, int(end.port[-1]), up=plugged and cable.seated)
        self.learn_macs()
        self.compute_rstp()

    def plug(self, a: End, b: End) -> None:
        for end in (a, b):
            if self.cable_at(end) is not None:
                self.unplug(end)
        self.connect(a, b)
        self.changed("cabling")

    def unplug(self, end: End) -> None:
        cable = self.cable_at(end)
        if cable is None:
            return
        self.cables.remove(cable)
        for e in (cable.a, cable.b):
            if e.kind == "switch":
                self.switches[e.name].set_cable(e.port, None)
            if e.kind == "node":
                self.link_transition(e.name, int(e.port[-1]), up=False)
        self.compute_rstp()
        self.changed("cabling")

    def unplug_effects(self, cable: Cable) -> None:
        """A cable came loose (still in the cage, no signal)."""
        self._cable_changed(cable, plugged=False)
        self.changed("cabling")

    def reseat(self, end: End) -> None:
        cable = self.cable_at(end)
        if cable is None:
            return
        was = cable.seated
        cable.seated = False
        if was:
            self._cable_changed(cable, plugged=False)
        cable.seated = True
        self._cable_changed(cable, plugged=True)
        self.changed("cabling")

    # --- link transitions, the CX7 degraded state, dmesg --------------------------------------

    def kmsg(self, node: NodeState, message: str, at: float | None = None) -> None:
        node.dmesg.append((self.now() - node.boot_time if at is None else at, message))

    def boot_log(self, node: NodeState) -> None:
        """The kernel lines of a GB10 boot (timestamps as on a real unit), replacing old ones."""
        hostconfig.boot_log(self, node)

    def link_transition(self, node_name: str, port: int, *, up: bool) -> None:
        node = self.nodes[node_name]
        if not node.powered:
            return
        for rail in node.rails_of_port(port):
            if not up:
                rail.bump("link_down_events_phy", 1)
                rail.bump("link_downed", 1)
                self.kmsg(node, f"mlx5_core {rail.pci} {rail.netdev}: Link down")
            else:
                self.kmsg(node, f"mlx5_core {rail.pci} {rail.netdev}: Link up")
        if up:
            self.kmsg(node, "cx7-pcie-hotplug MTKP0001:00: Cable plugin")
        if node.susceptible:
            node.degraded = True

    def _switch_event(self, switch: str, event: str, port: str) -> None:
        if event == "link-bounced" and port:
            other = self.peer(End("switch", switch, port))
            if other is not None and other.kind == "node":
                p = int(other.port[-1])
                self.link_transition(other.name, p, up=False)
                self.link_transition(other.name, p, up=True)
        if event in ("config-changed", "rebooted"):
            self.compute_rstp()
            self.learn_macs()  # legs that came up (or a rebooted switch) learn the nodes' MACs
        if self.traffic is not None:
            self.traffic.recompute()
        self.changed(f"switch:{switch}:{event}")

    def learn_macs(self) -> None:
        for node in self.nodes.values():
            if not node.powered:
                continue
            for rail in node.rails:
                other = self.peer(End("node", node.name, f"port{rail.port}"))
                if other is not None and other.kind == "switch":
                    sw = self.switches[other.name]
                    if sw.link(other.port).up:
                        sw.learn(rail.mac, other.port)
                        # its broadcasts (ARP, neighbour discovery) flood the bridged fabric:
                        # every other switch learns the MAC on the port they arrive by
                        for name, port in l2path.arrival_ports(self, other.name):
                            self.switches[name].learn(rail.mac, port)

    # --- RSTP across switches -----------------------------------------------------------------

    def isl(self, a: str, b: str) -> tuple[str, str] | None:
        """The ports of the inter-switch link between switches a and b, if cabled."""
        return l2path.isl(self, a, b)

    def uplink(self, switch: str) -> str | None:
        return l2path.uplink(self, switch)

    def compute_rstp(self) -> None:
        """Roles of ISL and campus uplink ports. The campus LAN holds the root bridge."""
        l2path.compute_rstp(self)

    # --- the path of a frame ------------------------------------------------------------------

    def path(self, src: str, src_port: int, dst: str, dst_port: int) -> L2Path:
        return l2path.path(self, src, src_port, dst, dst_port)

    # --- addresses ----------------------------------------------------------------------------

    def owners(self, ip: str) -> list[tuple[NodeState, RailState]]:
        return [(n, r) for n in self.nodes.values() if n.powered for r in n.rails if ip in r.ipv4]

    def all_rails(self) -> Iterator[tuple[NodeState, RailState]]:
        for n in self.nodes.values():
            for r in n.rails:
                yield n, r

    # --- boot and persistent configuration ----------------------------------------------------

    def boot(self, node: NodeState) -> None:
        """Power-on: new boot_id, uptime from zero, config re-applied from the files."""
        hostconfig.boot(self, node)

    def power_off(self, node: NodeState) -> None:
        hostconfig.power_off(self, node)

    def apply_sysctl_files(self, node: NodeState) -> None:
        hostconfig.apply_sysctl_files(self, node)

    def netplan_config(self, node: NodeState) -> tuple[dict[str, dict[str, Any]], str | None]:
        """Merged `network.ethernets` of every netplan file, or an error text."""
        return hostconfig.netplan_config(self, node)

    def apply_netplan(self, node: NodeState) -> str | None:
        return hostconfig.apply_netplan(self, node)

    def run_unit(self, node: NodeState, unit: str) -> None:
        """Run a oneshot unit's ExecStart lines (only `mlnx_qos ... --pfc` has an effect)."""
        hostconfig.run_unit(self, node, unit)

    def current_cabling(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for cable in self.cables:
            for me, other in ((cable.a, cable.b), (cable.b, cable.a)):
                if me.kind == "node" and other.kind == "switch":
                    for rail in self.nodes[me.name].rails_of_port(int(me.port[-1])):
                        out[f"{me.name}/{rail.netdev}"] = f"{other.name}/{other.port}"
        return out

    def to_state(self) -> dict[str, Any]:
        """A JSON-able snapshot (for `fabwiz lab --state`)."""
        nodes = []
        for n in self.nodes.values():
            nodes.append(
                {
                    "name": n.name,
                    "index": n.index,
                    "firmware": n.firmware,
                    "staged_firmware": n.staged_firmware,
                    "throttled": n.throttled,
                    "degraded": n.degraded,
                    "susceptible": n.susceptible,
                    "pcie_width": n.pcie_width,
                    "powered": n.powered,
                    "boot_id": n.boot_id,
                    "uptime": self.now() - n.boot_time,
                    "pfc_boot": list(n.pfc_boot),
                    "sysctls": n.sysctls,
                    "files": n.files,
                    "dirs": sorted(n.dirs),
                    "enabled_units": sorted(n.enabled_units),
                    "dmesg": [[t, m] for t, m in n.dmesg[-400:]],
                    # the journal's earlier boots and the renderer: what a drain/reboot and
                    # `netplan apply` are judged against after a resume
                    "boots": [list(b) for b in n.boots],
                    "off_s": n.off_s,
                    "down_at": n.down_at,
                    "renderer": n.renderer,
                    "rails": [
                        {
                            "netdev": r.netdev,
                            "addresses": r.addresses,
                            "ipv6": r.ipv6,
                            "mtu": r.mtu,
                            "pfc": list(r.pfc),
                            "counters": r.counters,
                        }
                        for r in n.rails
                    ],
                }
            )
        return {
            "name": self.name,
            "seed": self.seed,
            "time_scale": self.time_scale,
            "now": self.now(),
            "nodes": nodes,
            "switches": [
                {"name": k, "model": self.switch_models[k], "state": s.to_state()}
                for k, s in self.switches.items()
            ],
            "planned_cabling": dict(self.planned_cabling),
            "cables": [{"a": c.a.label, "b": c.b.label, "seated": c.seated} for c in self.cables],
            "facts": dump(self.facts, exclude_defaults=True),
        }
