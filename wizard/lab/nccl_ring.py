"""NCCL's ring over the lab's fabric, rank by rank.

Every rank selects its own devices from its own node's environment (`NCCL_IB_HCA`,
`NCCL_IB_DISABLE`, `NCCL_NET`, read from that node's `/etc/nccl.conf`, its environment and the
launcher's `-x`), among its own node's active RDMA devices. The ranks agree on the smallest
channel count; channel c of rank k sends from rank k's c-th device to rank k+1's c-th device. A
channel moves what its slowest hop moves, and NCCL splits every buffer evenly over the channels,
so the slowest channel sets the pace of the whole collective (one software-forwarded port drags
the whole ring down, it is not averaged away). The collectives differ in the latency of their steps:

    time(S) = NCCL_LAUNCH_US + steps * NCCL_STEP_US + S * bus_factor / bandwidth

with steps = 2(n-1) for all_reduce, n-1 for all_gather/reduce_scatter and 1 for sendrecv, so
small messages are latency bound and large ones reach the ring's bandwidth.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from wizard.lab.physics import (
    NCCL_QP_TIMEOUT,
    NCCL_RAIL,
    NCCL_WINDOW_BYTES,
    SOCKET_NODE_GBPS,
    FlowSpec,
    hca_matches,
    nccl_efficiency,
    solve,
)
from wizard.lab.world import World

NCCL_LAUNCH_US = 10.0  # kernel launch and proxy wake-up of one collective
NCCL_STEP_US = 3.0  # one ring step: a RoCE round trip through the NIC and the switch
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "sendrecv")
STALL = "remote process exited or there was a network error"


@dataclass(frozen=True, slots=True)
class Ring:
    """What NCCL does on a set of ranks: per-rank devices, the transport, the bandwidth."""

    transport: str  # "IB" or "Socket"
    hcas: tuple[tuple[str, ...], ...]  # per rank
    hca_filters: tuple[str | None, ...]  # per rank
    busbw: float  # GB/s at large sizes (the ring's bandwidth)
    error: str = ""
    channel_gbps: tuple[float, ...] = ()
    flows: tuple[FlowSpec, ...] = ()


def _ib_timeout(env: dict[str, str]) -> int:
    """The QP timeout NCCL gives its connections: NCCL_IB_TIMEOUT, else its default."""
    try:
        return int(env.get("NCCL_IB_TIMEOUT", NCCL_QP_TIMEOUT))
    except ValueError:
        return NCCL_QP_TIMEOUT  # NCCL warns of an invalid value and keeps its default


def _wants_socket(env: dict[str, str]) -> bool:
    return env.get("NCCL_NET", "").lower() == "socket" or env.get("NCCL_IB_DISABLE") == "1"


def ring(world: World, nodes: list[str], envs: list[dict[str, str]]) -> Ring:
    """The ring NCCL builds over `nodes` (one rank each), rank k reading `envs[k]`."""
    n = len(nodes)
    sels: list[list[str]] = []
    for name, env in zip(nodes, envs, strict=True):
        node = world.nodes[name]
        # an RDMA port is ACTIVE when its netdev has carrier and is configured (netplan brings
        # up only the netdevs it configures)
        up = [r.rdma for r in node.rails if world.rail_up(name, r) and (r.addresses or r.ipv6)]
        sels.append([] if _wants_socket(env) else hca_matches(env.get("NCCL_IB_HCA"), up))
    filters = tuple(env.get("NCCL_IB_HCA") for env in envs)
    eff = nccl_efficiency(n)
    hcas = tuple(tuple(s) for s in sels)
    if all(not s for s in sels):
        return Ring("Socket", hcas, filters, SOCKET_NODE_GBPS / 8 * eff)
    if any(not s for s in sels):
        # some ranks on IB, some on sockets: the connections between them never form
        return Ring("IB", hcas, filters, 0.0, STALL)
    if n < 2:
        return Ring("IB", hcas, filters, 0.0)
    nch = min(len(s) for s in sels)
    flows = [
        FlowSpec(
            nodes[k],
            sels[k][c],
            nodes[(k + 1) % n],
            sels[(k + 1) % n][c],
            kind="nccl",
            qp_timeout=_ib_timeout(envs[k]),
            window_bytes=NCCL_WINDOW_BYTES,
        )
        for c in range(nch)
        for k in range(n)
    ]
    results = solve(world, flows, noise=False)
    channel: list[float] = []
    for c in range(nch):
        hops = results[c * n : (c + 1) * n]
        # a device without an IPv4 address has no RoCE v2 GID: NCCL leaves its channel idle
        if any(r.stalled and "IPv4" not in r.reason for r in hops):
            return Ring("IB", hcas, filters, 0.0, STALL, (), tuple(flows))
        channel.append(min(r.gbps for r in hops))
    # NCCL splits every buffer evenly over the channels: the slowest one sets the pace of all
    pace = min(channel)
    first = world.nodes[nodes[0]]
    halves: dict[str, float] = defaultdict(float)
    for c in range(nch):
        rail = first.rail(sels[0][c])
        halves[rail.half if rail else sels[0][c]] += pace
    node_gbps = sum(min(g, NCCL_RAIL) for g in halves.values())
    busbw = node_gbps / 8 * eff * (1.0 + world.rng.uniform(-0.002, 0.002))
    return Ring("IB", hcas, filters, busbw, "", tuple(channel), tuple(flows))


def bus_factor(collective: str, n: int) -> float:
    if n < 2:
        return 0.0
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective in ("all_gather", "reduce_scatter"):
        return (n - 1) / n
    return 1.0


def steps(collective: str, n: int) -> int:
    if collective == "all_reduce":
        return 2 * (n - 1)
    if collective in ("all_gather", "reduce_scatter"):
        return n - 1
    return 1


def timing(collective: str, n: int, size: int, busbw: float) -> tuple[float, float, float]:
    """(time us, algbw GB/s, busbw GB/s) of one `size`-byte collective on a ring of `busbw`."""
    factor = bus_factor(collective, n)
    latency = NCCL_LAUNCH_US + steps(collective, n) * NCCL_STEP_US
    if busbw <= 0 or factor == 0:
        return latency, 0.0, 0.0
    t_us = latency + size * factor / (busbw * 1e9) * 1e6
    algbw = size / (t_us * 1e-6) / 1e9
    return t_us, algbw, algbw * factor
