"""Emulated `iperf3` (server and client, `-P`, `-t`, `-B`, `-J`): TCP over a GB10 rail.

TCP on GB10 is bound by the ARM cores, not the wire: one stream moves ~12 Gb/s whatever the
link (`benign.iperf-single-stream`), parallel streams reach ~93 Gb/s on a half (003: 93.1 +
92.6 with both halves). The wire side comes from the physics (a CPU-forwarding switch or a
detour caps it); a path that stalls RDMA is not a TCP problem unless there is no path at all.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import Callable

from wizard.lab.physics import FlowSpec, solve
from wizard.lab.world import NodeState, RailState, World

Write = Callable[[str], None]
STREAM_GBPS = 12.0  # one TCP stream: what one ARM core pushes
TCP_EFFICIENCY = 0.8325  # TCP/IP over RoCE-capable wire: 111.86 -> 93.1
DEFAULT_PORT = 5201


def _rail_for(node: NodeState, target: str, bind: str | None) -> RailState | None:
    for rail in node.rails:
        if bind and bind in rail.ipv4:
            return rail
    for rail in node.rails:
        for cidr in rail.addresses:
            try:
                if ipaddress.ip_address(target) in ipaddress.ip_network(cidr, strict=False):
                    return rail
            except ValueError:
                continue
    return None


async def _serve(
    servers: dict[tuple[str, int], asyncio.Event],
    node: NodeState,
    port: int,
    *,
    out: Write,
    err: Write,
) -> int:
    """`iperf3 -s`: listens until a client's test is over (one test, like `-1`)."""
    key = (node.name, port)
    if key in servers:
        err("iperf3: error - unable to start listener for connections: Address already in use\n")
        return 1
    out(
        "-----------------------------------------------------------\n"
        f"Server listening on {port} (test #1)\n"
        "-----------------------------------------------------------\n"
    )
    done = asyncio.Event()
    servers[key] = done
    try:
        await done.wait()
    finally:
        servers.pop(key, None)
    return 0


async def run(
    world: World,
    servers: dict[tuple[str, int], asyncio.Event],
    node: NodeState,
    args: list[str],
    *,
    out: Write,
    err: Write,
) -> int:
    server = "-s" in args
    port, streams, seconds = DEFAULT_PORT, 1, 10.0
    target = bind = None
    as_json = "-J" in args or "--json" in args
    it = iter(args)
    for a in it:
        if a == "-p":
            port = int(next(it, str(DEFAULT_PORT)))
        elif a == "-P":
            streams = max(1, int(next(it, "1")))
        elif a == "-t":
            seconds = float(next(it, "10"))
        elif a == "-B":
            bind = next(it, None)
        elif a == "-c":
            target = next(it, None)
    if server:
        return await _serve(servers, node, port, out=out, err=err)
    if target is None:
        err("iperf3: parameter error - must either be a client (-c) or server (-s)\n")
        return 1
    owners = [o for o, _r in world.owners(target) if (o.name, port) in servers]
    src = _rail_for(node, target, bind)
    if not owners or src is None:
        return _fail(out, err, as_json, "unable to connect to server: Connection refused")
    dst_node = owners[0]
    dst = next(r for r in dst_node.rails if target in r.ipv4)
    flows = solve(world, [FlowSpec(node.name, src.netdev, dst_node.name, dst.netdev, target)])
    f = flows[0]
    if f.path is None or not f.path.ok:
        return _fail(out, err, as_json, "unable to connect to server: No route to host")
    wire = f.gbps if not f.stalled else 109.2  # TCP rides the lossy class
    gbps = min(STREAM_GBPS * streams, TCP_EFFICIENCY * wire) * (1 + world.rng.uniform(-0.01, 0.01))
    await world.sleep(seconds)
    servers[(dst_node.name, port)].set()
    nbytes = int(gbps * 1e9 / 8 * seconds)
    if as_json:
        out(
            json.dumps(
                _json(
                    src=src,
                    dst=dst,
                    target=target,
                    port=port,
                    streams=streams,
                    seconds=seconds,
                    gbps=gbps,
                    nbytes=nbytes,
                ),
                indent="\t",
            )
        )
        out("\n")
        return 0
    out(f"Connecting to host {target}, port {port}\n")
    for k in range(streams):
        out(
            f"[{5 + 2 * k:3d}] local {src.ipv4[0]} port {46776 + k} connected to {target} port {port}\n"
        )
    out("[ ID] Interval           Transfer     Bitrate         Retr\n")
    gb = nbytes / 2**30
    out(
        f"[SUM]   0.00-{seconds:.2f}  sec  {gb:.1f} GBytes  {gbps:.1f} Gbits/sec    0             sender\n"
    )
    out(
        f"[SUM]   0.00-{seconds:.2f}  sec  {gb:.1f} GBytes  {gbps:.1f} Gbits/sec                  receiver\n"
    )
    out("\niperf Done.\n")
    return 0


def _fail(out: Write, err: Write, as_json: bool, message: str) -> int:
    if as_json:
        doc = {"start": {"connected": [], "version": "iperf 3.16"}, "intervals": [], "end": {}}
        doc["error"] = message
        out(json.dumps(doc, indent="\t") + "\n")
    else:
        err(f"iperf3: error - {message}\n")
    return 1


def _json(
    *,
    src: RailState,
    dst: RailState,
    target: str,
    port: int,
    streams: int,
    seconds: float,
    gbps: float,
    nbytes: int,
) -> dict[str, object]:
    summary = {
        "start": 0,
        "end": seconds,
        "seconds": seconds,
        "bytes": nbytes,
        "bits_per_second": gbps * 1e9,
    }
    return {
        "start": {
            "connected": [
                {
                    "socket": 5 + 2 * k,
                    "local_host": src.ipv4[0] if src.ipv4 else "",
                    "local_port": 46776 + k,
                    "remote_host": target,
                    "remote_port": port,
                }
                for k in range(streams)
            ],
            "version": "iperf 3.16",
            "system_info": "Linux spark 6.11.0-1016-nvidia #16-Ubuntu SMP aarch64",
            "connecting_to": {"host": target, "port": port},
            "tcp_mss_default": max(536, min(src.mtu, dst.mtu) - 52),
            "test_start": {
                "protocol": "TCP",
                "num_streams": streams,
                "blksize": 131072,
                "omit": 0,
                "duration": int(seconds),
                "bytes": 0,
                "blocks": 0,
                "reverse": 0,
                "tos": 0,
                "target_bitrate": 0,
            },
        },
        "intervals": [],
        "end": {
            "sum_sent": {**summary, "retransmits": 0, "sender": True},
            "sum_received": {**summary, "sender": True},
        },
    }
