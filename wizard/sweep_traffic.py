"""The sweep's traffic (`--perf`): ib_write_bw between two rails, the jumbo ping matrix, the
shared-ISL test, one NCCL run, and the switch CPU and port counters sampled with each (a rail
test's while its data moves, in its round: wizard.sweep_rounds).

Functions of the `Sweeper` (its SSH runner, switches, rails, tools and event sink); the
sweeper's methods of the same names call them. What a test cannot measure (a tool missing, no
RoCE v2 GID, a broken session) is an invalid measurement saying why, never a number.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ipaddress
import shlex
import time
from collections.abc import Awaitable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from wizard.errors import ParseError
from wizard.events import MeasurementTaken, ProbeAnswered, ProbeSent
from wizard.model import Measurement, ProbeResult, Rail
from wizard.sweep_rounds import (
    CPU_SAMPLE_S,
    MIN_WALL_SAMPLE_S,
    Round,
    Slot,
    current_round,
    rail_round,
    sample_cpu,
    sampled_extra,
    switch_port_counters,
)
from wizard.transports.capped import OutputWatch

if TYPE_CHECKING:
    from wizard.sweep import Sweeper

__all__ = [
    "CPU_SAMPLE_S",
    "LISTEN_WAIT_S",
    "MIN_WALL_SAMPLE_S",
    "RailRun",
    "gid_index",
    "isl_shared_test",
    "one_rail_test",
    "peer_rail",
    "ping_matrix",
    "rail_at",
    "rail_round",
    "shared_readings",
    "switch_port_counters",
    "with_switch_cpu",
]


# the matrix's echo requests go this far apart (s): 3 in 0.4 s, not 2 s (iputils lets a user go
# down to 2 ms)
PING_INTERVAL_S = 0.2
# perftest prints this line just before it listens (on stdout, so its server runs under
# `stdbuf -oL`: on a pipe the C library would keep the line until the run ends)
LISTENING = "Waiting for client to connect"
# and its client this one just before its data moves (the results header; under `stdbuf -oL`
# too, so the round knows when each test's data began)
DATA_BEGINS = "#bytes"
LINE_BUFFERED = "stdbuf -oL "
# how long a client waits for its server to say it listens, by default; then it goes anyway
LISTEN_WAIT_S = 10.0
# a client refused ("Couldn't connect to", its server not listening yet) tries again after
# these pauses, while its server runs
CONNECT_RETRY_S = (0.25, 0.5, 1.0, 2.0)
# the GID tables read in a `shared_readings` span, by (node, command)
_GID_READS: contextvars.ContextVar[dict[tuple[str, str], asyncio.Future[ProbeResult]] | None] = (
    contextvars.ContextVar("fabwiz_gid_reads", default=None)
)


async def ping_matrix(sw: Sweeper, *, payload: int = 8972) -> list[dict[str, object]]:
    """`ping -M do -s 8972` between every node pair on every plane (rail index), both
    ends addressed; the pairs of a round at once."""
    from wizard.parsers.ping import parse_ping
    from wizard.schedule import round_robin

    by_node = {n: sw.rails.get(n, ()) for n in sw.nodes}
    count = max((len(r) for r in by_node.values()), default=0)

    async def one(a: Rail, b: Rail) -> dict[str, object]:
        ip = b.addresses[0].split("/")[0]
        cmd = (
            f"ping -M do -s {payload} -c 3 -i {PING_INTERVAL_S} -W 1 "
            f"-I {shlex.quote(a.netdev)} {shlex.quote(ip)}"
        )
        sw._emit(ProbeSent(step=sw.step, target=a.node, command=cmd))
        res = await sw.ssh.run(a.node, cmd, timeout=15.0)
        sw._emit(ProbeAnswered(step=sw.step, probe=f"ping:{a.netdev}", result=res))
        try:
            p = parse_ping(res.stdout + res.stderr)
            ok, received, mtu_err = p.ok, p.received or 0, p.mtu_errors
        except ParseError:
            ok, received, mtu_err = False, 0, 0
        small_ok: bool | None = None
        if not (ok and res.error is None) and res.error is None:
            # a lost jumbo frame is MTU evidence only if a small one gets through
            small = (
                f"ping -c 3 -i {PING_INTERVAL_S} -W 1 -I {shlex.quote(a.netdev)} {shlex.quote(ip)}"
            )
            sw._emit(ProbeSent(step=sw.step, target=a.node, command=small))
            sres = await sw.ssh.run(a.node, small, timeout=15.0)
            sw._emit(ProbeAnswered(step=sw.step, probe=f"ping:{a.netdev}", result=sres))
            try:
                small_ok = parse_ping(sres.stdout + sres.stderr).ok and sres.error is None
            except ParseError:
                small_ok = None
        return {
            "src": a.key,
            "dst": b.key,
            "ip": ip,
            "ok": ok and res.error is None,
            "received": received,
            "mtu_errors": mtu_err,
            "small_ok": small_ok,
            "cross_switch": bool(a.switch and b.switch and a.switch != b.switch),
            "command": cmd,
            "raw": (res.stdout + res.stderr)[-600:],
            "error": res.error or "",
        }

    # a round's pairs on every plane at once (a few jumbo frames share no bottleneck);
    # the results in plane order
    by_plane: list[list[dict[str, object]]] = [[] for _ in range(count)]
    for pairs in round_robin(list(sw.nodes)):
        jobs, planes = [], []
        for idx in range(count):
            for a, b in pairs:
                ra, rb = rail_at(by_node[a], idx), rail_at(by_node[b], idx)
                if ra and rb and ra.addresses and rb.addresses and ra.up and rb.up:
                    jobs.append(one(ra, rb))
                    planes.append(idx)
        for idx, got in zip(planes, await asyncio.gather(*jobs), strict=True):
            by_plane[idx].append(got)
    return [p for plane in by_plane for p in plane]


async def isl_shared_test(
    sw: Sweeper, *, duration_s: int, delay: float, timeout_s: float, base_port: int = 18600
) -> list[Measurement]:
    """Two flows from one switch's nodes to the other's at once: they share one ISL
    direction (~81.9 Gb/s each, DCQCN splitting, some packet_seq_err normal)."""
    by_switch: dict[str, list[Rail]] = {}
    for n in sw.nodes:
        first = rail_at(sw.rails.get(n, ()), 0)
        if first is not None and first.switch and first.addresses and first.up:
            by_switch.setdefault(first.switch, []).append(first)
    sides = [rs for _, rs in sorted(by_switch.items()) if len(rs) >= 2]
    if len(sides) < 2:
        return []
    (a1, a2), (b1, b2) = sides[0][:2], sides[1][:2]
    jobs = [
        one_rail_test(sw, c, s, RailRun(base_port + i, duration_s, delay, timeout_s))
        for i, (c, s) in enumerate(((a1, b1), (a2, b2)))
    ]
    out = []
    for got in await rail_round(sw, jobs):
        m = replace(got, extra={**got.extra, "isl_shared": True})
        out.append(m)
        sw._emit(MeasurementTaken(step=sw.step, measurement=m))
    return out


@contextlib.contextmanager
def shared_readings() -> Iterator[None]:
    """The tests of one proof run, nothing changing the addresses between them: each node's GID
    table is read once, by the first test that needs it (a read that failed is not kept)."""
    gids = _GID_READS.set({})
    try:
        yield
    finally:
        _GID_READS.reset(gids)


async def _gid_read(sw: Sweeper, node: str, command: str) -> ProbeResult:
    reads = _GID_READS.get()
    if reads is None:
        return await sw.ssh.run(node, command, timeout=10.0)
    key = (node, command)
    read = reads.get(key)
    if read is None or (read.done() and (read.cancelled() or not read.result().ok)):
        read = reads[key] = asyncio.ensure_future(sw.ssh.run(node, command, timeout=10.0))
    return await asyncio.shield(read)


async def gid_index(sw: Sweeper, rail: Rail) -> tuple[int | None, str]:
    """The RoCE v2 GID index of the rail's IPv4 address on its RDMA device, read now (an
    address change shifts it): `show_gids`, else sysfs `gids`/`gid_attrs/types`."""
    from wizard.gids import (
        SHOW_GIDS,
        gids_from_show_gids,
        parse_sysfs_gids,
        roce_v2_index,
        sysfs_command,
    )

    if not rail.addresses:
        return None, f"{rail.key} has no IPv4 address"
    ip = rail.addresses[0].split("/")[0]
    why = ""
    for command, parse in (
        (SHOW_GIDS, gids_from_show_gids),
        (sysfs_command(rail.rdma), parse_sysfs_gids),
    ):
        res = await _gid_read(sw, rail.node, command)
        if not res.ok:
            why = f"`{command.split()[0]}` on {rail.node}: {res.error or res.stderr.strip()[:120]}"
            continue
        try:
            gids = parse(res.stdout)
        except ParseError as exc:
            why = f"`{command.split()[0]}` on {rail.node}: {exc}"
            continue
        index = roce_v2_index(gids, rail.rdma, ip)
        if index is not None:
            return index, ""
        why = f"no RoCE v2 GID of {ip} on {rail.rdma} ({rail.node}, `{command.split()[0]}`)"
    return None, why


async def with_switch_cpu(
    sw: Sweeper,
    jobs: Sequence[Awaitable[Measurement]],
    *,
    delay: float,
    interval_s: float | None = None,
) -> list[Measurement]:
    """Run jobs that say nothing of when their data moves (an NCCL launch) while sampling
    every switch's `/system/resource` cpu-load; each measurement carries the highest load seen
    during it (`extra["switch_cpu"]`) and the switch ports that moved around it. Only samples
    sent at least `interval_s` after `delay` past the launch and answered at least `interval_s`
    before the last job ended count: a sample that may have missed the transfer is no evidence
    of an idle CPU. (Rail tests run in a `rail_round`, which knows when their data moves.)"""
    if not jobs:
        return []
    if interval_s is None:
        interval_s = max(MIN_WALL_SAMPLE_S, CPU_SAMPLE_S / (sw.clock_rate or 1.0))
    done = asyncio.Event()
    ports_before = await switch_port_counters(sw)
    sampler = asyncio.ensure_future(sample_cpu(sw, done, interval_s)) if sw.switches else None
    launched = time.monotonic()
    try:
        results = await asyncio.gather(*jobs)
    finally:
        ended = time.monotonic()
        done.set()
        samples = []
        if sampler is not None:
            with contextlib.suppress(Exception):
                samples = await sampler
    ports_after = await switch_port_counters(sw)
    extra = sampled_extra(
        samples, launched + delay, ended, ports_before, ports_after, margin_s=interval_s
    )
    return [replace(m, extra={**m.extra, **extra}) if extra else m for m in results]


@dataclass(frozen=True, slots=True)
class RailRun:
    """How one ib_write_bw test runs: its port, length, QPs, direction, and timing."""

    port: int
    duration_s: int
    # the client starts when its server says it listens, or after this long if it has not
    # (LISTEN_WAIT_S by default); a refused client tries again (CONNECT_RETRY_S)
    delay: float
    timeout: float
    qps: int = 1
    bidir: bool = False


async def one_rail_test(sw: Sweeper, client: Rail, server: Rail, run: RailRun) -> Measurement:
    """ib_write_bw from `client` to `server` with each end's counters read around its data
    (in the round it belongs to, or in a round of its own)."""
    rnd = current_round()
    if rnd is None:
        [m] = await rail_round(sw, [one_rail_test(sw, client, server, run)])
        return m
    target = f"{client.key}->{server.key}"
    absent = [
        n
        for n in (client.node, server.node)
        if n not in sw.tools or "ib_write_bw" not in sw.tools[n].paths
    ]
    if absent:
        return _tool_missing(sw, client, server, target, absent)
    slot = rnd.join(client, server, run.duration_s)  # before any await: the round counts it
    try:
        (cgid, cwhy), (sgid, swhy) = await asyncio.gather(
            gid_index(sw, client), gid_index(sw, server)
        )
        if cgid is None or sgid is None:
            # no RoCE v2 GID for the rail's address: nothing to measure, and no number
            return _no_gid(client, server, target, cwhy if cgid is None else swhy)
        base = (
            f"ib_write_bw -d {{rdma}} -x {{gid}} -q {run.qps} -D {int(run.duration_s)} "
            f"-F --report_gbits -p {run.port}"
        )
        if run.bidir:
            base += " -b"
        server_cmd = base.replace("{rdma}", shlex.quote(server.rdma)).replace("{gid}", str(sgid))
        client_ip = server.addresses[0].split("/")[0]
        client_cmd = (
            base.replace("{rdma}", shlex.quote(client.rdma)).replace("{gid}", str(cgid))
            + f" {shlex.quote(client_ip)}"
        )
        cli, srv_res, counters, window_s = await _client_and_server(
            sw, rnd, slot, (client_cmd, server_cmd), run
        )
    finally:
        rnd.end(slot)
    value, reason, lost, error_kind = _bandwidth(cli, srv_res)
    extra: dict[str, object] = {
        "client": client.node,
        "server": server.node,
        "client_netdev": client.netdev,
        "server_netdev": server.netdev,
        "half": client.half,
        "port": client.port,
        "command": client_cmd,
        "gid_index": {"client": cgid, "server": sgid},
        # RDMA/PHY counter deltas per end, read while the test's data moved
        "counters": counters,
        "qps": run.qps,
        "bidir": run.bidir,
        "raw": cli.stdout,
        "exit_status": cli.exit_status,
        "server_raw": srv_res.stdout,
    }
    if error_kind:
        # how perftest's run ended (`retry-exceeded`: connected, then no ACK came back)
        extra["error_kind"] = error_kind
    if window_s is not None:
        extra["counter_window_s"] = round(window_s, 2)  # targets' seconds the deltas span
        # False: the second read came after the data ended (a window longer than the data)
        extra["counter_window_in_data"] = slot.inside
    return Measurement(
        kind="rail",
        target=target,
        value=value,
        unit="Gb/s",
        valid=lost is None,
        reason=reason,
        extra=extra,
    )


def _no_gid(client: Rail, server: Rail, target: str, why: str) -> Measurement:
    return Measurement(
        kind="rail",
        target=target,
        value=0.0,
        unit="Gb/s",
        valid=False,
        reason=f"no RoCE v2 GID index: {why}",
        extra={
            "client": client.node,
            "server": server.node,
            "client_netdev": client.netdev,
            "server_netdev": server.netdev,
        },
    )


def _tool_missing(
    sw: Sweeper, client: Rail, server: Rail, target: str, absent: list[str]
) -> Measurement:
    return Measurement(
        kind="rail",
        target=target,
        value=0.0,
        unit="Gb/s",
        valid=False,
        reason=(
            f"not run: ib_write_bw is not installed on {', '.join(absent)} (preflight.tool-missing)"
            if all(n in sw.tools for n in absent)
            else f"not run: the tools were not listed on {', '.join(absent)} "
            "(preflight.tool-missing)"
        ),
        extra={"client": client.node, "server": server.node, "command": "ib_write_bw"},
    )


async def _client_and_server(
    sw: Sweeper, rnd: Round, slot: Slot, commands: tuple[str, str], run: RailRun
) -> tuple[ProbeResult, ProbeResult, dict[str, dict[str, int]], float | None]:
    """The server started, then the client once the server says it listens (after
    `run.delay` if it says nothing; a refused client tries again while the server runs) and
    the round before lets it (`Round.may_launch`); both answers, each end's counter deltas
    over the round's window, and the window's length (targets' seconds)."""
    crail, srail = slot.client, slot.server
    client_cmd, server_cmd = commands
    launch = LINE_BUFFERED + server_cmd
    sw._emit(ProbeSent(step=sw.step, target=srail.node, command=launch))
    watch = OutputWatch(LISTENING)
    srv = asyncio.ensure_future(sw.ssh.run(srail.node, launch, timeout=run.timeout, watch=watch))
    try:
        not_run = await _when_listening(srv, watch, run, crail.node, client_cmd)
        if not_run is None:
            await rnd.may_launch()
        cli = not_run or await _client(sw, rnd, slot, client_cmd, srv, run)
        rnd.end(slot)  # its data moves no more: no window opens on it now
        try:
            srv_res = await asyncio.wait_for(srv, run.timeout)
        except TimeoutError:
            srv_res = ProbeResult(target=srail.node, kind="ssh", command=launch, error="timeout")
    finally:
        srv.cancel()
    counters, window_s = await rnd.counters(slot)
    if not_run is None:  # a client that never ran was never sent: nothing to log of it
        sw._emit(ProbeAnswered(step=sw.step, probe=f"ib_write_bw:{crail.netdev}", result=cli))
    sw._emit(ProbeAnswered(step=sw.step, probe=f"ib_write_bw:{srail.netdev}", result=srv_res))
    return cli, srv_res, counters, window_s


async def _when_listening(
    srv: asyncio.Future[ProbeResult],
    watch: OutputWatch,
    run: RailRun,
    node: str,
    client_cmd: str,
) -> ProbeResult | None:
    """Wait for the server to say it listens, at most `run.delay` (None: the client may go).
    A server that ended first failed to start (a device, a port in use): the client is not
    run, and its result says why (no number)."""
    heard: asyncio.Future[Any] = asyncio.ensure_future(watch.seen.wait())
    either: set[asyncio.Future[Any]] = {srv, heard}
    try:
        await asyncio.wait(either, timeout=run.delay, return_when=asyncio.FIRST_COMPLETED)
    finally:
        heard.cancel()
    if watch.seen.is_set() or not srv.done():
        return None
    res = srv.result()
    said = [line[:200] for line in (res.error or res.stderr or res.stdout).strip().splitlines()]
    return ProbeResult(
        target=node,
        kind="ssh",
        command=client_cmd,
        error=f"not run: the ib_write_bw server on {res.target} ended before it listened"
        + (f" ({said[-1].strip()})" if said else ""),
    )


async def _client(
    sw: Sweeper,
    rnd: Round,
    slot: Slot,
    client_cmd: str,
    srv: asyncio.Future[ProbeResult],
    run: RailRun,
) -> ProbeResult:
    """The client (line-buffered: its results header says when its data begins), run again
    while it is refused and its server still runs (perftest's client does not retry: a
    connect before the server listens is "Couldn't connect to")."""
    launch = LINE_BUFFERED + client_cmd
    watch = OutputWatch(DATA_BEGINS)
    heard = asyncio.ensure_future(watch.seen.wait())
    heard.add_done_callback(lambda f: None if f.cancelled() else rnd.data(slot))

    async def attempt() -> ProbeResult:
        sw._emit(ProbeSent(step=sw.step, target=slot.client.node, command=launch))
        rnd.launched(slot)
        return await sw.ssh.run(slot.client.node, launch, timeout=run.timeout, watch=watch)

    try:
        for pause in CONNECT_RETRY_S:
            cli = await attempt()
            refused = cli.exit_status not in (0, None) and "Couldn't connect to" in cli.stderr
            if not refused or srv.done():
                return cli
            sw._emit(
                ProbeAnswered(step=sw.step, probe=f"ib_write_bw:{slot.client.netdev}", result=cli)
            )
            await asyncio.sleep(pause)
        return await attempt()
    finally:
        if watch.seen.is_set():
            rnd.data(slot)  # the header came with the end (the callback had not run yet)
        heard.cancel()


def _bandwidth(cli: ProbeResult, srv_res: ProbeResult) -> tuple[float, str, str | None, str | None]:
    """(Gb/s, reason, the lost session's error, perftest's error kind) of one ib_write_bw
    test."""
    from wizard.parsers.perftest import parse_perftest

    value = 0.0
    reason = ""
    kind: str | None = None
    try:
        parsed = parse_perftest(cli.stdout + ("\n" + cli.stderr if cli.stderr else ""))
        value = parsed.bw_avg_gbps or 0.0
        reason = parsed.error or ""
        kind = parsed.error_kind
    except ParseError as exc:
        reason = f"unreadable ib_write_bw output: {exc}"
    # A broken SSH session or a command that never answered says nothing about the rail:
    # no number, and the measurement is not evidence (it is re-taken on the next test).
    lost = next(
        (r.error for r in (cli, srv_res) if r.error and r.exit_status is None and not value),
        None,
    )
    if cli.error:
        reason = cli.error
    if lost is not None:
        reason = f"no result: {lost}"
    return value, reason, lost, kind


def peer_rail(mine: Rail | None, theirs: Sequence[Rail], idx: int) -> Rail | None:
    """The rail of the other node that `mine` is cabled to: the one up in the same IPv4 subnet
    (crossed cabling: one node's port 1 on the other's port 0, seed 002), else the same index."""
    if mine is not None and mine.addresses:
        nets = {n for n in map(_network, mine.addresses) if n is not None}
        same = [
            r
            for r in sorted(theirs, key=lambda r: (r.port, r.half, r.netdev))
            if r.up and any(_network(a) in nets for a in r.addresses)
        ]
        if same:
            return same[0]
    return rail_at(theirs, idx)


def _network(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_interface(cidr).network
    except ValueError:
        return None


def rail_at(rails: Sequence[Rail], idx: int) -> Rail | None:
    ordered = sorted(rails, key=lambda r: (r.port, r.half, r.netdev))
    return ordered[idx] if idx < len(ordered) else None
