"""The lab's world: GB10 nodes, cables, switches, a simulated clock.

Everything the emulated tools print and everything the physics computes is read from here, and
everything a fix or a pair of hands changes is written here. Host configuration follows the real
life cycle: the *persistent* files (`/etc/netplan/*.yaml`, `/etc/sysctl.d/*.conf`, systemd units,
`/etc/nccl.conf`, `/etc/profile.d/*.sh`) are applied at boot and by `netplan apply`/`sysctl
--system`/`systemctl`, so a fix that only changes the runtime state is undone by a reboot, as on
a real node. Faults are injected by writing those files (see `faults.py`).

Names and addresses follow the inventory's conventions: rails per node in the order port0/A, port0/B, port1/A,
port1/B; healthy rail r (1..4) of spark<i> has 10.9.r.<i>/24, MTU 9000, no IPv6.
"""

from __future__ import annotations

import hashlib
import random
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

import yaml

from wizard.lab.facts import Facts
from wizard.lab.switchport import SwitchLike

RAIL_LAYOUT: tuple[tuple[str, str, int, Literal["A", "B"], str], ...] = (
    # netdev, rdma, port, half, pci
    ("enp1s0f0np0", "rocep1s0f0", 0, "A", "0000:01:00.0"),
    ("enP2p1s0f0np0", "roceP2p1s0f0", 0, "B", "0002:01:00.0"),
    ("enp1s0f1np1", "rocep1s0f1", 1, "A", "0000:01:00.1"),
    ("enP2p1s0f1np1", "roceP2p1s0f1", 1, "B", "0002:01:00.1"),
)
GOOD_FIRMWARE = "28.45.1020"
OLD_FIRMWARE = "28.39.2048"
PSID = "NVD0000000087"
NETPLAN_PATH = "/etc/netplan/40-cx7.yaml"
PFC_OFF = (0, 0, 0, 0, 0, 0, 0, 0)
DEFAULT_SYSCTLS = {
    "net.ipv4.conf.all.arp_ignore": "0",
    "net.ipv4.conf.all.arp_announce": "0",
    "net.ipv4.conf.all.rp_filter": "2",
}
HW_COUNTERS = (
    "duplicate_request",
    "implied_nak_seq_err",
    "lifespan",
    "local_ack_timeout_err",
    "np_cnp_sent",
    "np_ecn_marked_roce_packets",
    "out_of_buffer",
    "out_of_sequence",
    "packet_seq_err",
    "req_cqe_error",
    "req_cqe_flush_error",
    "req_remote_access_errors",
    "resp_cqe_error",
    "resp_local_length_error",
    "rnr_nak_retry_err",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "rp_cnp_handled",
    "rp_cnp_ignored",
    "rx_read_requests",
    "rx_write_requests",
)
PORT_COUNTERS = (
    "port_rcv_data",
    "port_rcv_packets",
    "port_xmit_data",
    "port_xmit_packets",
    "port_rcv_errors",
    "port_xmit_discards",
    "link_downed",
)
PHY_COUNTERS = (
    "rx_packets",
    "rx_bytes",
    "tx_packets",
    "tx_bytes",
    "rx_packets_phy",
    "tx_packets_phy",
    "rx_bytes_phy",
    "tx_bytes_phy",
    "rx_discards_phy",
    "tx_discards_phy",
    "tx_errors_phy",
    "rx_pause_ctrl_phy",
    "tx_pause_ctrl_phy",
    "link_down_events_phy",
    "rx_prio3_packets",
    "tx_prio3_packets",
    "rx_prio3_pause",
    "tx_prio3_pause",
)


def _mac(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    first = (digest[0] & 0xFC) | 0x02  # locally administered, unicast
    return ":".join(f"{b:02x}" for b in (first, *digest[1:6]))


@dataclass
class RailState:
    """One netdev/RDMA-device pair and its runtime configuration and counters."""

    netdev: str
    rdma: str
    port: int
    half: Literal["A", "B"]
    pci: str
    mac: str
    addresses: list[str] = field(default_factory=list)  # IPv4 CIDR
    ipv6: list[str] = field(default_factory=list)  # CIDR, link-local included when enabled
    mtu: int = 1500
    pfc: tuple[int, ...] = PFC_OFF
    counters: dict[str, int] = field(default_factory=dict)
    v6_first: bool = False  # a global IPv6 address was added before the IPv4 ones (GIDs shift)

    def __post_init__(self) -> None:
        for name in (*HW_COUNTERS, *PORT_COUNTERS, *PHY_COUNTERS):
            self.counters.setdefault(name, 0)
        self.counters["lifespan"] = 10

    @property
    def ipv4(self) -> list[str]:
        return [a.split("/")[0] for a in self.addresses]

    @property
    def pfc_on(self) -> bool:
        return any(self.pfc)

    def bump(self, name: str, amount: float) -> None:
        self.counters[name] = self.counters.get(name, 0) + int(amount)


@dataclass
class NodeState:
    """A GB10 node: its ConnectX-7 rails, boot state and the files that matter."""

    name: str
    index: int
    rails: list[RailState]
    firmware: str = GOOD_FIRMWARE
    staged_firmware: str | None = None  # installed, active after the next reboot
    throttled: bool = False
    degraded: bool = False
    susceptible: bool = False  # the CX7 re-arms the degraded state on link transitions
    pcie_width: int = 4
    powered: bool = True
    boot_id: str = ""
    boot_time: float = 0.0
    pfc_boot: tuple[int, ...] = PFC_OFF  # what the NIC comes up with (firmware DCBX default)
    sysctls: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_SYSCTLS))
    files: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)  # directories made by `mkdir` (empty or not)
    enabled_units: set[str] = field(default_factory=set)
    dmesg: list[tuple[float, str]] = field(default_factory=list)
    pid: int = 4000
    # earlier boots as the journal lists them (boot_id, first entry, last entry), and how long
    # the power stays off before the next boot when hands say so (wizard/lab/boots.py)
    boots: list[tuple[str, float, float]] = field(default_factory=list)
    off_s: float | None = None
    down_at: float = 0.0
    renderer: str = "networkd"  # the netplan renderer its fabric netdevs were last applied with

    def rail(self, key: str) -> RailState | None:
        for r in self.rails:
            if key in (r.netdev, r.rdma):
                return r
        return None

    def rails_of_port(self, port: int) -> list[RailState]:
        return [r for r in self.rails if r.port == port]

    def next_pid(self) -> int:
        self.pid += 7
        return self.pid


@dataclass(frozen=True, slots=True)
class End:
    """One end of a cable: a node QSFP port, a switch port, or the campus LAN."""

    kind: Literal["node", "switch", "campus"]
    name: str
    port: str  # "port0"/"port1" on nodes, the interface name on switches

    @property
    def label(self) -> str:
        return f"{self.name}:{self.port}"

    @staticmethod
    def parse(text: str) -> End:
        name, _, port = text.partition(":")
        if name == "campus":
            return End("campus", "campus", port or "lan")
        if re.fullmatch(r"port[01]", port):
            return End("node", name, port)
        return End("switch", name, port)


@dataclass
class Cable:
    a: End
    b: End
    seated: bool = True

    def other(self, end: End) -> End | None:
        if end == self.a:
            return self.b
        if end == self.b:
            return self.a
        return None


@dataclass(frozen=True, slots=True)
class Hop:
    switch: str
    ingress: str
    egress: str
    offloaded: bool
    lossless: bool = False  # the switch's QoS on these ports is lossless (trust-l3/pfc)


@dataclass(frozen=True, slots=True)
class L2Path:
    """How a frame gets from one node port to another, as the fabric stands now."""

    ok: bool
    reason: str = ""
    hops: tuple[Hop, ...] = ()
    lossless: bool = False
    l2mtu: int = 65535
    mtu: int = 65535
    detour: bool = False  # through the campus LAN (RSTP blocked the ISL)
    isl: tuple[tuple[str, str], ...] = ()  # (from switch, to switch) per ISL crossing

    @property
    def switched(self) -> bool:
        return bool(self.hops)


class World:
    """Nodes, cables and switches, with a clock that runs `time_scale` times faster than life."""

    def __init__(
        self,
        *,
        seed: int = 0,
        time_scale: float = 1.0,
        name: str = "lab",
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.name = name
        self._clock = clock  # an injected simulated clock (tests advance it instead of sleeping)
        self.seed = seed
        self.rng = random.Random(seed)
        self.time_scale = time_scale
        self.nodes: dict[str, NodeState] = {}
        self.switches: dict[str, SwitchLike] = {}
        self.switch_models: dict[str, str] = {}
        self.cables: list[Cable] = []
        self._mono0 = time.monotonic()
        self._sim0 = time.time()
        self._offset = 0.0
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

    def now(self) -> float:
        """Simulated wall clock (seconds since the epoch)."""
        if self._clock is not None:
            return self._clock() + self._offset
        return self._sim0 + (time.monotonic() - self._mono0) * self.time_scale

    def set_clock(self, sim_now: float) -> None:
        if self._clock is not None:
            self._offset = sim_now - self._clock()
            return
        self._mono0 = time.monotonic()
        self._sim0 = sim_now

    def wall_seconds(self, sim_seconds: float) -> float:
        return sim_seconds / self.time_scale

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
                mac=_mac(f"{self.seed}/{name}/{netdev}"),
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
        node.dmesg = [(t, m) for t, m in node.dmesg if t >= 9.0]
        lines: list[tuple[float, str]] = [
            (0.0, "Booting Linux on physical CPU 0x0000000000 [0x411fd870]"),
            (
                0.103426,
                "pci 000f:01:00.0: 0.000 Gb/s available PCIe bandwidth, limited by Unknown x0 "
                "link at 000f:00:00.0 (capable of 32.000 Gb/s with 2.5 GT/s PCIe x16 link)",
            ),
        ]
        t = 1.1
        for rail in node.rails:
            if not rail.pci.endswith(".0"):
                continue
            gbps = 126.028 * node.pcie_width / 4
            lines += [
                (t, f"mlx5_core {rail.pci}: firmware version: {node.firmware}"),
                (
                    t + 0.050104,
                    f"mlx5_core {rail.pci}: {gbps:.3f} Gb/s available PCIe bandwidth "
                    f"(32.0 GT/s PCIe x{node.pcie_width} link)",
                ),
                (
                    t + 0.433198,
                    f"mlx5_core {rail.pci}: mlx5_pcie_event:326:(pid 12): Detected insufficient "
                    "power on the PCIe slot (27W).",
                ),
            ]
            t += 0.61
        lines += [
            (
                5.309621,
                "cx7-pcie-hotplug MTKP0001:00: PCIe hotplug driver initialized successfully",
            ),
            (5.406738, "cx7-pcie-hotplug MTKP0001:00: Hotplug enabled"),
        ]
        t = 8.2
        for port in (0, 1):
            if self.port_link(node.name, port):
                for rail in node.rails_of_port(port):
                    lines.append((t, f"mlx5_core {rail.pci} {rail.netdev}: Link up"))
                    t += 0.0131
        # every boot of every node takes its own time: no two kernels print the same stamps
        pace = random.Random(f"{self.seed}/{node.name}/{node.boot_id}").uniform(0.97, 1.03)
        lines = [(round(ts * pace, 6), m) for ts, m in lines]
        node.dmesg = sorted(lines + node.dmesg, key=lambda x: x[0])

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

    # --- RSTP across switches -----------------------------------------------------------------

    def isl(self, a: str, b: str) -> tuple[str, str] | None:
        """The ports of the inter-switch link between switches a and b, if cabled."""
        for c in self.cables:
            if c.a.kind == c.b.kind == "switch" and {c.a.name, c.b.name} == {a, b} and c.seated:
                mine, theirs = (c.a, c.b) if c.a.name == a else (c.b, c.a)
                return mine.port, theirs.port
        return None

    def uplink(self, switch: str) -> str | None:
        for c in self.cables:
            for me, other in ((c.a, c.b), (c.b, c.a)):
                if me.kind == "switch" and me.name == switch and other.kind == "campus":
                    return me.port
        return None

    def compute_rstp(self) -> None:
        """Roles of ISL and campus uplink ports. The campus LAN holds the root bridge."""
        names = sorted(self.switches)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                ports = self.isl(a, b)
                if ports is None:
                    continue
                up_a, up_b = self.uplink(a), self.uplink(b)
                sa, sb = self.switches[a], self.switches[b]
                if up_a is None or up_b is None:
                    # one way out (or none): the ISL is a plain tree edge
                    root_a = up_a is not None or (up_b is None and a < b)
                    sa.set_port_role(ports[0], "designated-port" if root_a else "root-port")
                    sb.set_port_role(ports[1], "root-port" if root_a else "designated-port")
                    continue
                cost_a, cost_b = sa.path_cost(up_a), sb.path_cost(up_b)
                via_isl_a = sa.path_cost(ports[0]) + cost_b
                via_isl_b = sb.path_cost(ports[1]) + cost_a
                if via_isl_b < cost_b:  # b re-roots through the ISL
                    sa.set_port_role(up_a, "root-port")
                    sa.set_port_role(ports[0], "designated-port")
                    sb.set_port_role(ports[1], "root-port")
                    sb.set_port_role(up_b, "alternate-port")
                elif via_isl_a < cost_a:
                    sb.set_port_role(up_b, "root-port")
                    sb.set_port_role(ports[1], "designated-port")
                    sa.set_port_role(ports[0], "root-port")
                    sa.set_port_role(up_a, "alternate-port")
                else:  # both root through campus: the ISL closes a loop and one end blocks
                    sa.set_port_role(up_a, "root-port")
                    sb.set_port_role(up_b, "root-port")
                    sa.set_port_role(ports[0], "designated-port")
                    sb.set_port_role(ports[1], "alternate-port")

    # --- the path of a frame ------------------------------------------------------------------

    def path(self, src: str, src_port: int, dst: str, dst_port: int) -> L2Path:
        if not (self.port_link(src, src_port) and self.port_link(dst, dst_port)):
            return L2Path(False, "no carrier")
        a = self.peer(End("node", src, f"port{src_port}"))
        b = self.peer(End("node", dst, f"port{dst_port}"))
        if a is None or b is None:
            return L2Path(False, "no cable")
        if a.kind == "node":
            if a == End("node", dst, f"port{dst_port}"):
                return L2Path(True)
            return L2Path(False, "direct cable goes elsewhere")
        if a.kind != "switch" or b.kind != "switch":
            return L2Path(False, "not cabled to the fabric")
        if a.name == b.name:
            fwd = self.switches[a.name].forwarding(a.port, b.port)
            if fwd.blocked or not fwd.same_bridge:
                return L2Path(False, fwd.reason or "not bridged")
            return L2Path(
                True,
                hops=(Hop(a.name, a.port, b.port, fwd.offloaded, fwd.lossless),),
                lossless=fwd.lossless,
                l2mtu=fwd.min_l2mtu,
                mtu=fwd.min_mtu,
            )
        isl = self.isl(a.name, b.name)
        sa, sb = self.switches[a.name], self.switches[b.name]
        blocked_roles = ("alternate-port", "backup-port", "disabled-port")
        if isl is not None and not (
            sa.port_role(isl[0]) in blocked_roles or sb.port_role(isl[1]) in blocked_roles
        ):
            f1 = sa.forwarding(a.port, isl[0])
            f2 = sb.forwarding(isl[1], b.port)
            for f in (f1, f2):
                if f.blocked or not f.same_bridge:
                    return L2Path(False, f.reason or "not bridged")
            return L2Path(
                True,
                hops=(
                    Hop(a.name, a.port, isl[0], f1.offloaded, f1.lossless),
                    Hop(b.name, isl[1], b.port, f2.offloaded, f2.lossless),
                ),
                lossless=f1.lossless or f2.lossless,
                l2mtu=min(f1.min_l2mtu, f2.min_l2mtu),
                mtu=min(f1.min_mtu, f2.min_mtu),
                isl=((a.name, b.name),),
            )
        route = self._isl_route(a.name, b.name) if isl is None else None
        if route is not None:
            return self._chain_path(route, a.port, b.port)
        up_a, up_b = self.uplink(a.name), self.uplink(b.name)
        if up_a is not None and up_b is not None:
            f1 = sa.forwarding(a.port, up_a)
            f2 = sb.forwarding(up_b, b.port)
            return L2Path(
                True,
                hops=(
                    Hop(a.name, a.port, up_a, f1.offloaded, f1.lossless),
                    Hop(b.name, up_b, b.port, f2.offloaded, f2.lossless),
                ),
                lossless=f1.lossless or f2.lossless,
                l2mtu=1500,
                mtu=1500,
                detour=True,
            )
        return L2Path(False, "no path between switches")

    def _isl_route(self, a: str, b: str) -> list[str] | None:
        """The switches from a to b across forwarding ISLs (a chain of more than two switches),
        shortest first; None when the ISLs do not join them."""
        blocked = ("alternate-port", "backup-port", "disabled-port")
        prev: dict[str, str] = {a: a}
        todo = [a]
        while todo:
            here = todo.pop(0)
            for there in sorted(self.switches):
                if there in prev:
                    continue
                ports = self.isl(here, there)
                if ports is None or (
                    self.switches[here].port_role(ports[0]) in blocked
                    or self.switches[there].port_role(ports[1]) in blocked
                ):
                    continue
                prev[there] = here
                todo.append(there)
        if b not in prev:
            return None
        route = [b]
        while route[-1] != a:
            route.append(prev[route[-1]])
        return route[::-1]

    def _chain_path(self, route: list[str], first_port: str, last_port: str) -> L2Path:
        """A frame's path through every switch of `route`, entering at first_port."""
        hops: list[Hop] = []
        fwds = []
        ingress = first_port
        for i, name in enumerate(route):
            if i + 1 < len(route):
                ports = self.isl(name, route[i + 1])
                assert ports is not None
                egress, next_in = ports
            else:
                egress, next_in = last_port, ""
            f = self.switches[name].forwarding(ingress, egress)
            if f.blocked or not f.same_bridge:
                return L2Path(False, f.reason or "not bridged")
            hops.append(Hop(name, ingress, egress, f.offloaded))
            fwds.append(f)
            ingress = next_in
        return L2Path(
            True,
            hops=tuple(hops),
            lossless=any(f.lossless for f in fwds),
            l2mtu=min(f.min_l2mtu for f in fwds),
            mtu=min(f.min_mtu for f in fwds),
            isl=tuple(pairwise(route)),
        )

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
        now = self.now()
        if node.boot_id:  # the boot that ended goes to the journal's list, off_s before this one
            gap = node.off_s if node.off_s is not None else max(0.0, now - node.down_at)
            last = now - gap
            node.boots.append((node.boot_id, min(node.boot_time, last), last))
            node.off_s = None
        node.powered = True
        node.boot_id = str(uuid.uuid4())  # never repeats, even across labs of one scenario
        node.boot_time = now
        node.dmesg = []
        node.dirs = {d for d in node.dirs if not d.startswith("/run/")}  # /run is a tmpfs
        node.files = {p: t for p, t in node.files.items() if not p.startswith("/run/")}
        # the driver loads afresh: every port and RDMA counter starts from zero again
        for rail in node.rails:
            for name in rail.counters:
                if name != "lifespan":
                    rail.counters[name] = 0
        if node.staged_firmware:
            node.firmware = node.staged_firmware
            node.staged_firmware = None
            if node.firmware == GOOD_FIRMWARE:
                node.throttled = False
                # the update package carries the BIOS fix too: the CX7 retrains at Gen5 x4
                node.pcie_width = 4
        for rail in node.rails:
            rail.pfc = node.pfc_boot
        node.sysctls = dict(DEFAULT_SYSCTLS)
        self.apply_sysctl_files(node)
        self.apply_netplan(node)
        from wizard.lab import nmprofiles  # NetworkManager's own profiles win at boot

        nmprofiles.apply_at_boot(self, node)
        for unit in sorted(node.enabled_units):
            self.run_unit(node, unit)
        for c in self.cables:
            if End("node", node.name, "port0") in (c.a, c.b) or End("node", node.name, "port1") in (
                c.a,
                c.b,
            ):
                self.sync_switch_side(c)
        self.boot_log(node)
        self.learn_macs()

    def power_off(self, node: NodeState) -> None:
        if not node.powered:
            return
        if self.traffic is not None:
            self.traffic.node_lost(node.name)
        node.powered = False
        node.down_at = self.now()
        for c in self.cables:
            if node.name in (c.a.name, c.b.name):
                self.sync_switch_side(c)

    def apply_sysctl_files(self, node: NodeState) -> None:
        for path in sorted(p for p in node.files if re.match(r"/etc/sysctl\.d/.+\.conf$", p)):
            for raw in node.files[path].splitlines():
                line = raw.strip()
                if not line or line.startswith(("#", ";")) or "=" not in line:
                    continue
                key, _, value = line.partition("=")
                node.sysctls[key.strip()] = value.strip()

    def netplan_config(self, node: NodeState) -> tuple[dict[str, dict[str, Any]], str | None]:
        """Merged `network.ethernets` of every netplan file, or an error text."""
        merged: dict[str, dict[str, Any]] = {}
        for path in sorted(p for p in node.files if re.match(r"/etc/netplan/.+\.ya?ml$", p)):
            try:
                data = yaml.safe_load(node.files[path]) or {}
            except yaml.YAMLError as exc:
                return {}, f"{path}: {exc}"
            if not isinstance(data, dict):
                return {}, f"{path}: not a mapping"
            eths = (data.get("network") or {}).get("ethernets") or {}
            if not isinstance(eths, dict):
                return {}, f"{path}: network.ethernets is not a mapping"
            for name, cfg in eths.items():
                merged.setdefault(str(name), {}).update(cfg or {})
        return merged, None

    def apply_netplan(self, node: NodeState) -> str | None:
        cfg, err = self.netplan_config(node)
        if err:
            return err
        for rail in node.rails:
            c = cfg.get(rail.netdev)
            if c is None:
                rail.addresses, rail.ipv6, rail.mtu = [], [], 1500
                continue
            addrs = [str(a) for a in c.get("addresses") or []]
            rail.addresses = [a for a in addrs if ":" not in a]
            v6 = [a for a in addrs if ":" in a]
            rail.v6_first = bool(addrs) and ":" in addrs[0]  # netplan adds them in list order
            link_local = c.get("link-local", ["ipv6"])
            if link_local is None or "ipv6" in (link_local or []):
                v6.append(_link_local(rail.mac))
            rail.ipv6 = v6
            rail.mtu = int(c.get("mtu", 1500))
        if self.traffic is not None:
            self.traffic.recompute()
        self.changed(f"netplan:{node.name}")
        return None

    def run_unit(self, node: NodeState, unit: str) -> None:
        """Run a oneshot unit's ExecStart lines (only `mlnx_qos ... --pfc` has an effect)."""
        text = node.files.get(f"/etc/systemd/system/{unit}", "")
        for line in text.splitlines():
            if not line.strip().startswith("ExecStart="):
                continue
            cmd = line.split("=", 1)[1].strip().lstrip("-@+!")
            m = re.search(r"mlnx_qos\s+-i\s+(\S+)\s+--pfc\s+([0-9,]+)", cmd)
            if m:
                rail = node.rail(m.group(1))
                if rail is not None:
                    rail.pfc = parse_pfc(m.group(2))

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
            "facts": self.facts.model_dump(mode="json", by_alias=True, exclude_defaults=True),
        }


def _link_local(mac: str) -> str:
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 0x02
    words = [(b[0] << 8) | b[1], (b[2] << 8) | 0xFF, 0xFE00 | b[3], (b[4] << 8) | b[5]]
    return "fe80::" + ":".join(f"{w:x}" for w in words) + "/64"


def parse_pfc(text: str) -> tuple[int, ...]:
    vals = [int(v) for v in text.split(",") if v.strip()]
    return tuple((vals + [0] * 8)[:8])


def rail_address(rail_index: int, host: int) -> str:
    return f"10.9.{rail_index}.{host}/24"


def healthy_netplan(host: int, *, overrides: dict[str, dict[str, Any]] | None = None) -> str:
    """The netplan file of a healthy node (the default addressing plan), with per-netdev overrides."""
    eths: dict[str, dict[str, Any]] = {}
    for r, (netdev, *_rest) in enumerate(RAIL_LAYOUT, start=1):
        eths[netdev] = {
            "addresses": [rail_address(r, host)],
            "mtu": 9000,
            "dhcp4": False,
            "dhcp6": False,
            "link-local": [],
        }
    for netdev, cfg in (overrides or {}).items():
        eths.setdefault(netdev, {}).update(cfg)
    doc = {"network": {"version": 2, "renderer": "networkd", "ethernets": eths}}
    text: str = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None)
    return text
