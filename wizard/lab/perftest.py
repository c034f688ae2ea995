"""Emulated `ib_write_bw` (perftest): a server that waits for its client, a client that runs
for `-D` simulated seconds, both printing the real perftest text (layout of
`fixtures/real/perftest/gb10-ib_write_bw-D10-cpu_util-gbits-roceP2p1s0f0.txt`).

The rate comes from the physics through the traffic engine (so concurrent runs share the
halves and the switch CPU); a stalled path prints the real retry-exceeded completion error.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field

from wizard.lab.physics import FlowSpec
from wizard.lab.world import NodeState, RailState, World

RULE = "-" * 87
DEFAULT_PORT = 18515
STALL_SECONDS = 3.0  # simulated time a stalled QP retries before the retry counter runs out

Write = Callable[[str], None]


@dataclass
class Options:
    device: str = ""
    gid: int = 0
    qps: int = 1
    duration: float | None = None
    iters: int = 5000
    size: int = 65536
    bidir: bool = False
    gbits: bool = False
    port: int = DEFAULT_PORT
    rdma_cm: bool = False
    server_ip: str | None = None
    error: str = ""


def parse_args(args: list[str]) -> Options:
    o = Options()
    it = iter(args)
    takes = {"-d", "-x", "-q", "-D", "-n", "-s", "-p", "-i", "-m", "-t", "-I", "-u", "-c"}
    for a in it:
        if a in takes or a in ("--ib-dev", "--gid-index", "--qp", "--duration", "--port"):
            v = next(it, None)
            if v is None:
                o.error = f"option requires an argument -- '{a.lstrip('-')}'"
                break
            try:
                if a in ("-d", "--ib-dev"):
                    o.device = v
                elif a in ("-x", "--gid-index"):
                    o.gid = int(v)
                elif a in ("-q", "--qp"):
                    o.qps = max(1, int(v))
                elif a in ("-D", "--duration"):
                    o.duration = float(v)
                elif a == "-n":
                    o.iters = int(v)
                elif a == "-s":
                    o.size = int(v)
                elif a in ("-p", "--port"):
                    o.port = int(v)
            except ValueError:
                o.error = f"invalid argument {v!r} for {a}"
        elif a in ("-b", "--bidirectional"):
            o.bidir = True
        elif a == "--report_gbits":
            o.gbits = True
        elif a == "-R":
            o.rdma_cm = True
        elif a.startswith("-"):
            continue  # -F, --cpu_util, -a ... accepted and ignored
        else:
            o.server_ip = a
    return o


def gid_table(rail: RailState) -> list[str]:
    """RoCE GIDs as perftest prints them (decimal bytes): link-local v1/v2, IPv6, IPv4."""
    gids: list[str] = []
    lls = [a for a in rail.ipv6 if a.startswith("fe80")] or [link_local(rail.mac)]
    for a in lls[:1]:
        gids += [_v6_gid(a)] * 2
    for a in rail.ipv6:
        if not a.startswith("fe80"):
            gids += [_v6_gid(a)] * 2
    for a in rail.ipv4:
        g = "00:00:00:00:00:00:00:00:00:00:255:255:" + ":".join(
            f"{int(x):02d}" for x in a.split(".")
        )
        gids += [g, g]
    return gids


def link_local(mac: str) -> str:
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 2
    return f"fe80::{b[0]:02x}{b[1]:02x}:{b[2]:02x}ff:fe{b[3]:02x}:{b[4]:02x}{b[5]:02x}/64"


def _v6_gid(cidr: str) -> str:
    packed = ipaddress.IPv6Address(cidr.split("/", maxsplit=1)[0]).packed
    return ":".join(f"{x:02d}" for x in packed)


def header(o: Options, device: str, mtu: int, bidir: bool) -> str:
    title = "RDMA_Write Bidirectional BW Test" if bidir else "RDMA_Write BW Test"
    warn = "  WARNING: BW peak won't be measured in this run.\n" if o.duration else ""
    lines = [
        RULE,
        f"                    {title}",
        f" Dual-port       : OFF          Device         : {device}",
        f" Number of qps   : {o.qps:<13}Transport type : IB",
        " Connection type : RC           Using SRQ      : OFF",
        " PCIe relax order: ON",
        " ibv_wr* API     : ON",
        " TX depth        : 128",
        " CQ Moderation   : 1",
        f" Mtu             : {mtu}[B]",
        " Link type       : Ethernet",
        f" GID index       : {o.gid}",
        " Max inline data : 0[B]",
        f" rdma_cm QPs     : {'ON' if o.rdma_cm else 'OFF'}",
        f" Data ex. method : {'rdma_cm' if o.rdma_cm else 'Ethernet'}",
        RULE,
    ]
    return warn + "\n".join(lines) + "\n"


def addresses(world: World, qps: int, local_gid: str, remote_gid: str) -> str:
    """All local QPs, then all remote ones (as perftest prints them), each with its GID line."""
    out = []
    for which, gid in (("local address", local_gid), ("remote address", remote_gid)):
        qpn = world.rng.randrange(0x100, 0xFF00)
        for q in range(qps):
            psn = world.rng.randrange(0, 0xFFFFFF)
            va = world.rng.randrange(0xAA00000000, 0xFFFF000000) << 12
            out.append(
                f" {which}: LID 0000 QPN {qpn + q:#06x} PSN {psn:#08x} RKey 0x184300 "
                f"VAddr {va:#016x}"
            )
            out.append(f" GID: {gid}")
    return "\n".join(out) + "\n" + RULE + "\n"


def result_block(o: Options, gbps: float, seconds: float) -> str:
    unit = "Gb/sec" if o.gbits else "MiB/sec"
    value = gbps if o.gbits else gbps * 1e9 / 8 / 2**20
    msg_rate = gbps * 1e9 / 8 / o.size / 1e6
    iters = int(gbps * 1e9 / 8 * seconds / o.size) if o.duration else o.iters
    peak = 0.0 if o.duration else value * 1.003
    return (
        f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]\n"
        f" {o.size:<7}    {iters:<7}          {peak:<7.2f}            {value:<7.2f}"
        f"\t\t   {msg_rate:<7.6f}\n{RULE}\n"
    )


BANNER = (
    "\n************************************\n"
    "* Waiting for client to connect... *\n"
    "************************************\n"
)


@dataclass
class Session:
    """A server waiting on (node, port) and the outcome the client hands it."""

    node: str
    rail: RailState
    opts: Options
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    client_text: str = ""  # the header + addresses block from the server's point of view
    result: str = ""
    failed: bool = False


class Registry:
    """Listening perftest servers of the whole lab, keyed by (node, TCP port)."""

    def __init__(self) -> None:
        self.servers: dict[tuple[str, int], Session] = {}
        self.iperf: dict[tuple[str, int], asyncio.Event] = {}  # iperf3 -s, per (node, port)


async def run_server(
    world: World, reg: Registry, node: NodeState, o: Options, *, out: Write, err: Write
) -> int:
    rail = node.rail(o.device)
    if rail is None:
        err(f" Couldn't get context for the device {o.device}\n")
        return 1
    key = (node.name, o.port)
    if key in reg.servers:
        err(f" Couldn't bind to port {o.port}: Address already in use\n")
        err(" Couldn't listen to port\n Unable to open file descriptor for socket connection\n")
        return 1
    sess = Session(node.name, rail, o)
    reg.servers[key] = sess
    out(BANNER)
    try:
        await sess.connected.wait()
    finally:
        if reg.servers.get(key) is sess:
            del reg.servers[key]
    out(sess.client_text)
    await sess.done.wait()
    if sess.failed:
        err(" ethernet_read_keys: Couldn't read remote address\n")
        err(" Unable to read to socket/rdma_cm\n")
        err(" Failed to exchange data between server and clients\n")
        return 1
    out(sess.result)
    return 0


async def run_client(
    world: World, reg: Registry, node: NodeState, o: Options, *, out: Write, err: Write
) -> int:
    rail = node.rail(o.device)
    if rail is None:
        err(f" Couldn't get context for the device {o.device}\n")
        return 1
    ip = o.server_ip or ""
    sess: Session | None = None
    for owner, _r in world.owners(ip):
        sess = reg.servers.get((owner.name, o.port))
        if sess is not None:
            break
    if sess is None:
        err(f"Couldn't connect to {ip}:{o.port}\n")
        err("Unable to open file descriptor for socket connection")
        err(" Unable to init the socket connection\n")
        return 1
    del reg.servers[(sess.node, o.port)]
    server = world.nodes[sess.node]
    srail = sess.rail
    bidir = o.bidir or sess.opts.bidir
    lg, rg = gid_table(rail), gid_table(srail)
    if o.gid >= len(lg) or sess.opts.gid >= len(rg):
        sess.failed = True
        sess.connected.set()
        sess.done.set()
        err(f" Failed to query GID index {o.gid}\n Unable to Connect the HCA's through the link\n")
        return 1
    specs = [FlowSpec(node.name, rail.netdev, server.name, srail.netdev, ip, o.qps)]
    if bidir:
        specs.append(FlowSpec(server.name, srail.netdev, node.name, rail.netdev, "", o.qps))
    traffic = world.traffic
    ids = traffic.start(specs)
    first = traffic.result(ids[0])
    mtu = first.mtu if first is not None else 1024
    sess.client_text = header(sess.opts, srail.rdma, mtu, bidir) + addresses(
        world, o.qps, rg[sess.opts.gid], lg[o.gid]
    )
    sess.connected.set()
    out(header(o, rail.rdma, mtu, bidir) + addresses(world, o.qps, lg[o.gid], rg[sess.opts.gid]))
    try:
        if first is not None and first.stalled:
            await asyncio.sleep(world.wall_seconds(min(o.duration or STALL_SECONDS, STALL_SECONDS)))
            sess.failed = True
            sess.done.set()
            err(" Completion with error at client\n")
            err(" Failed status 12: wr_id 0 syndrom 0x81\n")
            err(f"scnt={128 * o.qps}, ccnt=0\n")
            err(" Failed to complete run_iter_bw function successfully\n")
            return 1
        rate = first.gbps if first is not None else 0.0
        if o.duration:
            seconds = o.duration
            await asyncio.sleep(world.wall_seconds(seconds / 2))
            mid = [traffic.result(i) for i in ids]
            rate = sum(r.gbps for r in mid if r is not None)
            await asyncio.sleep(world.wall_seconds(seconds / 2))
        else:
            seconds = o.iters * o.size * 8 / max(rate, 0.01) / 1e9
            await asyncio.sleep(world.wall_seconds(seconds))
            mid = [traffic.result(i) for i in ids]
            rate = sum(r.gbps for r in mid if r is not None)
    finally:
        traffic.stop(ids)
    block = result_block(o, rate, seconds)
    sess.result = block
    sess.done.set()
    out(block)
    return 0
