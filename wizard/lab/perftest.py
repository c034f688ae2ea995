"""Emulated `ib_write_bw` (perftest): a server that waits for its client, a client that runs
for `-D` simulated seconds, both printing the real perftest text (layout of
`fixtures/real/perftest/gb10-ib_write_bw-D10-cpu_util-gbits-roceP2p1s0f0.txt`).

The rate comes from the physics through the traffic engine (so concurrent runs share the
halves and the switch CPU); a stalled path prints the real retry-exceeded completion error.

Its stdout is a C program's (`StdioOut`): written to a pipe (an SSH exec), the server's
"Waiting for client to connect" line stays in the C library's buffer until the run ends, as
on a real node; `stdbuf -oL` makes it come as it is printed. perftest prints that line just
before it listens, and a client that connects before it does gets "Couldn't connect to".
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from wizard.lab import gids, perftest_args
from wizard.lab.perftest_args import Options, Parsed
from wizard.lab.physics import PERFTEST_TX_DEPTH, FlowSpec, retry_exceeded_s
from wizard.lab.world import NodeState, RailState, World

RULE = "-" * 87
DEFAULT_PORT = 18515
# perftest sleeps a second once its client and server are connected, before they exchange
# versions and run the test (write_bw.c: `sleep(1)` after establish_connection)
CONNECTED_SLEEP_S = 1.0
QP_MSG_RATE = 9.0e6  # RDMA writes per second one CX7 QP posts and completes (small messages)
CPU_PER_GBPS = 0.05  # % of the node's cores a busy-polling perftest burns per Gb/s
SAMPLE_POINTS = 5  # the flows' rate is read this often across a timed run's sampled span

Write = Callable[[str], None]


def parse_args(args: list[str]) -> Parsed:
    """The command line as perftest parses it (see `wizard.lab.perftest_args`)."""
    return perftest_args.parse(args)


def link_local(mac: str) -> str:
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 2
    return f"fe80::{b[0]:02x}{b[1]:02x}:{b[2]:02x}ff:fe{b[3]:02x}:{b[4]:02x}{b[5]:02x}/64"


def header(o: Options, device: str, mtu: int, bidir: bool, gid_index: int) -> str:
    title = "RDMA_Write Bidirectional BW Test" if bidir else "RDMA_Write BW Test"
    timed = o.duration is not None or o.run_infinitely
    warn = "  WARNING: BW peak won't be measured in this run.\n" if timed else ""
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
        f" GID index       : {gid_index}",
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


def results_header(o: Options) -> str:
    """The line perftest prints once the QPs are connected, before any data moves."""
    unit = "Gb/sec" if o.gbits else "MiB/sec"
    cols = f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]"
    return RULE + "\n" + cols + ("    CPU_Util[%]\n" if o.cpu_util and o.duration else "\n")


def result_row(o: Options, size: int, gbps: float, seconds: float, cpu: float) -> str:
    """One line of results (REPORT_FMT of perftest_parameters.h)."""
    value = gbps if o.gbits else gbps * 1e9 / 8 / 2**20
    msg_rate = gbps * 1e9 / 8 / size / 1e6
    timed = o.duration is not None or o.run_infinitely
    iters = int(gbps * 1e9 / 8 * seconds / size) if timed else o.iters
    peak = 0.0 if timed else value * 1.003
    row = f" {size:<7}    {iters:<10}       {peak:<7.2f}            {value:<7.2f}\t\t     {msg_rate:<7.6f}"
    if o.cpu_util and o.duration:
        return row + f"\t    {cpu:<3.2f}\n"
    return row + "\n"


def size_gbps(link_gbps: float, size: int, qps: int) -> float:
    """What `size`-byte writes reach: small messages are bound by the QPs' message rate."""
    return min(link_gbps, qps * QP_MSG_RATE * size * 8 / 1e9)


def sizes(o: Options) -> list[int]:
    return [2**k for k in range(1, 24)] if o.all_sizes else [o.size]


PIPE_BUFFER = 4096  # glibc's stdout buffer on a pipe (its st_blksize)


class StdioOut:
    """A C program's stdout as the C library buffers it (`Ctx.stdout_mode`, from `stdbuf
    -o`): on a pipe, blocks of PIPE_BUFFER bytes written when full and at exit (`flush`);
    "L" each line as it ends; "0" every write; a number, blocks of that size. What is still
    buffered when the program is killed is lost (`flush` is not called)."""

    def __init__(self, write: Write, mode: str) -> None:
        self._write = write
        self._line = mode == "L"
        self._size = 0 if self._line else (int(mode) if mode.isdigit() else PIPE_BUFFER)
        self._held = ""

    def __call__(self, text: str) -> None:
        held = self._held + text
        if self._line:
            cut = held.rfind("\n") + 1
        elif len(held) >= self._size:
            cut = len(held) - len(held) % self._size if self._size else len(held)
        else:
            cut = 0
        if cut:
            self._write(held[:cut])
        self._held = held[cut:]

    def flush(self) -> None:
        if self._held:
            self._write(self._held)
            self._held = ""


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
    client_text: str = ""  # what the server prints once the client connected
    result: str = ""
    failed: str = ""  # the server's error text when the run fails
    gid_index: int = 0


class Registry:
    """Listening perftest servers of the whole lab, keyed by (node, TCP port)."""

    def __init__(self) -> None:
        self.servers: dict[tuple[str, int], Session] = {}
        self.iperf: dict[tuple[str, int], asyncio.Event] = {}  # iperf3 -s, per (node, port)


EXCHANGE_FAILED = " Failed to exchange data between server and clients\n"
INCOMPATIBLE = (
    "\n Found Incompatibility issue with GID types.\n Please Try to use a different IP version.\n\n"
)
NO_DEVICE = " Unable to find the Infiniband/RoCE device\n"


def _device(node: NodeState, o: Options, err: Write) -> RailState | None:
    rail = node.rail(o.device) if o.device else node.rails[0]
    if rail is None or rail.rdma != (o.device or rail.rdma):
        err(f"IB device {o.device} not found\n{NO_DEVICE}")
        return None
    if o.ib_port != 1:
        err(" Couldn't get context for the device\n")  # the CX7 has one port per device
        return None
    return rail


def _gid(world: World, node: NodeState, rail: RailState, o: Options) -> gids.Gid | None:
    index = gids.best_index(world, node, rail) if o.gid is None else o.gid
    return gids.entry(world, node, rail, index)


async def run_server(
    world: World, reg: Registry, node: NodeState, o: Options, *, out: Write, err: Write
) -> int:
    rail = _device(node, o, err)
    if rail is None:
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
    if sess.failed and not sess.client_text:
        err(sess.failed)
        return 1
    await sess.done.wait()
    if sess.failed:
        err(sess.failed)
        return 1
    out(sess.result)
    return 0


def _gid_failure(
    world: World, node: NodeState, rail: RailState, o: Options, sess: Session, server: NodeState
) -> tuple[str, str, str, gids.Gid | None, gids.Gid | None]:
    """(client error, server error, kind) of a GID choice perftest cannot run with."""
    mine = _gid(world, node, rail, o)
    theirs = _gid(world, server, sess.rail, sess.opts)
    if mine is None:
        return " Unable to set up socket connection\n", EXCHANGE_FAILED, "setup", mine, theirs
    if theirs is None:
        return EXCHANGE_FAILED, " Unable to set up socket connection\n", "setup", mine, theirs
    if bool(mine.ipv4) != bool(theirs.ipv4):
        return INCOMPATIBLE, INCOMPATIBLE, "setup", mine, theirs
    if mine.type != gids.V2 or theirs.type != gids.V2:
        return "", "", "stall", mine, theirs  # RoCE v1 frames: no IP header, nothing routes them
    if not mine.ipv4:
        # an IPv6 RoCE v2 GID: RTR needs an IPv6 route on the netdev to resolve the peer's MAC
        no_v6 = not rail.ipv6 or not sess.rail.ipv6
        if no_v6:
            qpn = world.rng.randrange(0x100, 0xFF00)
            text = (
                f"Failed to modify QP {qpn} to RTR\n Unable to Connect the HCA's through the link\n"
            )
            return text, text, "setup", mine, theirs
        return "", "", "stall", mine, theirs
    return "", "", "", mine, theirs


async def run_client(
    world: World, reg: Registry, node: NodeState, o: Options, *, out: Write, err: Write
) -> int:
    rail = _device(node, o, err)
    if rail is None:
        return 1
    ip = o.server_ip or ""
    sess = _connect(world, reg, ip, o.port, err)
    if sess is None:
        return 1
    await world.sleep(CONNECTED_SLEEP_S)  # both ends, before they exchange anything
    server = world.nodes[sess.node]
    srail = sess.rail
    bidir = o.bidir or sess.opts.bidir
    client_err, server_err, kind, mine, theirs = _gid_failure(world, node, rail, o, sess, server)
    if kind == "setup" or mine is None or theirs is None:
        sess.failed = server_err
        sess.connected.set()
        sess.done.set()
        err(client_err)
        return 1
    window = PERFTEST_TX_DEPTH * o.size  # in flight per QP: sent again on each timeout
    specs = [
        FlowSpec(
            node.name,
            rail.netdev,
            server.name,
            srail.netdev,
            ip,
            o.qps,
            qp_timeout=o.qp_timeout,
            window_bytes=window,
        )
    ]
    if bidir:
        s_opts = sess.opts
        specs.append(
            FlowSpec(
                server.name,
                srail.netdev,
                node.name,
                rail.netdev,
                "",
                o.qps,
                qp_timeout=s_opts.qp_timeout,
                window_bytes=PERFTEST_TX_DEPTH * s_opts.size,
            )
        )
    traffic = world.traffic
    ids = traffic.start(specs) if kind != "stall" else []
    first = traffic.result(ids[0]) if ids else None
    mtu = first.mtu if first is not None else 1024
    stalled = kind == "stall" or (first is not None and first.stalled)
    sess.client_text = (
        header(sess.opts, srail.rdma, mtu, bidir, theirs.index)
        + addresses(world, o.qps, theirs.perftest(), mine.perftest())
        + results_header(sess.opts)
    )
    sess.connected.set()
    out(header(o, rail.rdma, mtu, bidir, mine.index))
    out(addresses(world, o.qps, mine.perftest(), theirs.perftest()))
    out(results_header(o))
    try:
        if stalled:
            await _stall(world, sess, o, err)
            return 1
        rows = await _rows(world, ids, o, out)
    except asyncio.CancelledError:
        # the client went away mid-run: the server's next handshake read fails
        sess.failed = sess.failed or EXCHANGE_FAILED
        sess.done.set()
        raise
    finally:
        traffic.stop(ids)
    block = "".join(rows) + RULE + "\n"
    sess.result = block
    sess.done.set()
    out(RULE + "\n")
    return 0


def _connect(world: World, reg: Registry, ip: str, port: int, err: Write) -> Session | None:
    """The server session listening on `ip`'s node and `port`, taken off the registry (a
    server serves one client), or None when nothing listens there (perftest's error written)."""
    for owner, _r in world.owners(ip):
        sess = reg.servers.get((owner.name, port))
        if sess is not None:
            del reg.servers[(sess.node, port)]
            return sess
    err(f"Couldn't connect to {ip}:{port}\n")
    err("Unable to open file descriptor for socket connection")
    err(" Unable to init the socket connection\n")
    return None


async def _stall(world: World, sess: Session, o: Options, err: Write) -> None:
    """A run whose QP never completes: perftest gives up once its QPs' retries are exceeded
    (`physics.retry_exceeded_s`: 0.54 s at `-u 14`), and so does the server's handshake; a QP
    without an ACK timeout (`-u 0`) waits for ever, and so does the run."""
    limit = retry_exceeded_s(o.qp_timeout)
    while limit is None:
        await world.sleep(3600.0)  # until the session goes away
    await world.sleep(min(o.duration or limit, limit))
    sess.failed = EXCHANGE_FAILED
    sess.done.set()
    err(" Completion with error at client\n")
    err(" Failed status 12: wr_id 0 syndrom 0x81\n")
    err(f"scnt={PERFTEST_TX_DEPTH * o.qps}, ccnt=0\n")
    err(" Failed to complete run_iter_bw function successfully\n")


async def _rows(world: World, ids: list[int], o: Options, out: Write) -> list[str]:
    """One result row per message size, written as each finishes (`--run_infinitely`: the first
    size again and again, until the session goes away)."""
    rows = []
    for size in sizes(o):
        rate, seconds = await _measure(world, ids, o, size)
        cpu = min(100.0, rate * CPU_PER_GBPS)
        rows.append(result_row(o, size, rate, seconds, cpu))
        out(rows[-1])
        if o.run_infinitely:
            while True:  # until the session goes away (SIGHUP/SIGINT cancel the task)
                rate, seconds = await _measure(world, ids, o, size)
                out(result_row(o, size, rate, seconds, cpu))
    return rows


async def _measure(world: World, ids: list[int], o: Options, size: int) -> tuple[float, float]:
    """Run one size for its duration (or iterations); the rate it reports. A timed run counts
    only what moved between its margins (perftest's duration/4 in whole seconds at each end:
    `catch_alarm` samples from the first alarm to the second), so the rate is the flows' mean
    over that span, read in the middle of each fifth of it; an iterations run (or each report of an endless
    one), the rate half-way."""
    traffic = world.traffic
    first = traffic.result(ids[0])
    link = first.gbps if first is not None else 0.0
    rate = size_gbps(link, size, o.qps)

    def now_gbps() -> float:
        return float(sum(r.gbps for r in (traffic.result(i) for i in ids) if r is not None))

    if o.duration is None or o.run_infinitely:
        if o.run_infinitely:
            seconds = o.duration if o.duration is not None else 5.0
        else:
            seconds = o.iters * size * 8 / max(rate, 0.01) / 1e9
        await world.sleep(seconds / 2)
        total = now_gbps()
        await world.sleep(seconds / 2)
        return size_gbps(total, size, o.qps * len(ids)), seconds
    seconds = o.duration
    margin = float(int(seconds) // 4)
    span = seconds - 2 * margin
    step = span / SAMPLE_POINTS  # each point at the middle of its fifth of the span
    await world.sleep(margin + step / 2)
    points = [now_gbps()]
    for _ in range(SAMPLE_POINTS - 1):
        await world.sleep(step)
        points.append(now_gbps())
    await world.sleep(step / 2 + margin)
    return size_gbps(sum(points) / len(points), size, o.qps * len(ids)), seconds
