"""The parts of a lab world: a node and its four rails (netdevs, RDMA devices, addresses,
counters, PFC), the ends of a cable and the cable itself, and the path a frame takes between
two rails (`Hop`, `L2Path`). Plain data; `wizard.lab.world.World` ties them together.

Names and addresses follow the inventory's conventions: rails per node in the order port0/A, port0/B, port1/A,
port1/B; healthy rail r (1..4) of spark<i> has 10.9.r.<i>/24, MTU 9000, no IPv6.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Literal

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


def mac_address(seed: str) -> str:
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


def parse_pfc(text: str) -> tuple[int, ...]:
    vals = [int(v) for v in text.split(",") if v.strip()]
    return tuple((vals + [0] * 8)[:8])


def rail_address(rail_index: int, host: int) -> str:
    return f"10.9.{rail_index}.{host}/24"
