"""Throughput of RDMA flows and NCCL runs, computed from the world (never scripted per scenario).

The model (DESIGN.md "Physics", numbers from FAULTS.md):

- a PCIe half (Gen5 x4) carries 111.86 Gb/s per direction alone, 98.04 each when both halves of
  the node are busy, ~103 each way when one half runs both directions (`-b`, ~206 aggregate);
- one switch costs ~2.4% of a single flow (109.2), two switches over an ISL 109.08;
- two or more flows into one ISL direction split ~163.8 Gb/s (DCQCN, 81.9 each);
- a bridge the switch chip does not offload is forwarded by the CPU: ~9.5 Gb/s shared by every
  software-forwarded flow of that switch, whatever the QP count;
- a CX7 throttled or degraded moves ~12.8 Gb/s; a PCIe link narrower than x4 scales the half;
- RSTP detour through the campus LAN: ~4.47 Gb/s and MTU 1500;
- stalls (connection forms, no data, retry exceeded): lossless QoS on the path or a host PFC
  mismatch, an IPv4 address owned by more than one netdev (ARP flux), RoCE frames larger than
  the path's l2mtu, no L2 path at all.

Rates are shared by max-min fair progressive filling over these resources. A little seeded
noise (±0.15%) keeps repeated runs from printing identical numbers.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from wizard.lab.world import End, L2Path, NodeState, RailState, World

HALF_ALONE = 111.86
HALF_SHARED = 98.04
HALF_BIDIR = 103.0
SWITCH_ONE = 109.2
SWITCH_TWO = 109.08
ISL_SHARED_TOTAL = 163.82
SOFTWARE_CAP = 9.5
DEGRADED = 12.8
DETOUR = 4.47
ROCE_OVERHEAD = 58  # Eth + IP + UDP + BTH + RETH + ICRC around the RoCE payload
NCCL_RAIL = 98.04  # what NCCL's ring moves per half
SOCKET_NODE_GBPS = 20.0  # NCCL over TCP sockets: the ARM cores, not the wire


@dataclass(frozen=True, slots=True)
class FlowSpec:
    """One direction of one RDMA connection: source rail -> destination rail."""

    src: str
    src_rail: str  # netdev or rdma name
    dst: str
    dst_rail: str
    dst_ip: str = ""
    qps: int = 1
    kind: str = "rdma"


@dataclass(frozen=True, slots=True)
class FlowResult:
    gbps: float
    stalled: bool = False
    reason: str = ""
    path: L2Path | None = None
    mtu: int = 4096  # RoCE active MTU
    software: tuple[str, ...] = ()  # switches forwarding this flow in software


def active_mtu(netdev_mtu: int) -> int:
    """RoCE active MTU: the largest IB MTU that fits the netdev MTU."""
    for ib in (4096, 2048, 1024, 512, 256):
        if netdev_mtu >= ib + ROCE_OVERHEAD:
            return ib
    return 256


def _rails(world: World, f: FlowSpec) -> tuple[NodeState, RailState, NodeState, RailState]:
    sn, dn = world.nodes[f.src], world.nodes[f.dst]
    sr, dr = sn.rail(f.src_rail), dn.rail(f.dst_rail)
    if sr is None or dr is None:
        raise KeyError(f"unknown rail in {f}")
    return sn, sr, dn, dr


def _stall_reason(
    world: World, *, sn: NodeState, sr: RailState, dn: NodeState, dr: RailState, path: L2Path
) -> str:
    if not path.ok:
        return f"no path: {path.reason}"
    for ip in (*sr.ipv4, *dr.ipv4):
        owners = world.owners(ip)
        if not path.switched:
            # a direct cable is its own L2 domain: only the two hosts' own copies answer ARP
            owners = [o for o in owners if o[0].name in (sn.name, dn.name)]
        if len(owners) > 1:
            return f"duplicate IP {ip}: ARP flux, frames vanish"
    if not sr.ipv4 or not dr.ipv4:
        return "no IPv4 address (no RoCEv2 GID)"
    if path.lossless:
        return "lossless QoS (PFC) on the switch path"
    # host PFC on a lossy fabric is hygiene, not a stall: without lossless switch ports no
    # pause frame comes back, and the stall of seed 000 was switch QoS on the offloaded path
    frame = min(active_mtu(sr.mtu), active_mtu(dr.mtu)) + ROCE_OVERHEAD - 14
    # the campus detour carries RoCE-sized frames but not 9000-byte ones (003: 4.47 Gb/s)
    if frame > path.l2mtu and not path.detour:
        return f"RoCE frames of {frame} B exceed the path l2mtu {path.l2mtu}"
    return ""


def solve(world: World, flows: list[FlowSpec], *, noise: bool = True) -> list[FlowResult]:
    """Rates of flows running together (max-min fair over the shared resources)."""
    n = len(flows)
    caps: list[float] = [0.0] * n
    uses: list[list[tuple[str, ...]]] = [[] for _ in range(n)]
    info: list[FlowResult] = []
    half_dirs: dict[tuple[str, str], set[str]] = defaultdict(set)
    live: list[int] = []
    for i, f in enumerate(flows):
        sn, sr, dn, dr = _rails(world, f)
        path = world.path(sn.name, sr.port, dn.name, dr.port)
        reason = _stall_reason(world, sn=sn, sr=sr, dn=dn, dr=dr, path=path)
        mtu = min(active_mtu(sr.mtu), active_mtu(dr.mtu))
        software = tuple(h.switch for h in path.hops if not h.offloaded)
        info.append(FlowResult(0.0, bool(reason), reason, path, mtu, software))
        if reason:
            continue
        live.append(i)
        half_dirs[(sn.name, sr.half)].add("tx")
        half_dirs[(dn.name, dr.half)].add("rx")
        cap = math.inf
        if len(path.hops) == 1:
            cap = SWITCH_ONE
        elif len(path.hops) >= 2:
            cap = SWITCH_TWO
        if path.detour:
            cap = min(cap, DETOUR)
        for node in (sn, dn):
            if node.throttled or node.degraded:
                cap = min(cap, DEGRADED)
        caps[i] = cap
        uses[i].append(("half", sn.name, sr.half, "tx"))
        uses[i].append(("half", dn.name, dr.half, "rx"))
        for sw in software:
            uses[i].append(("cpu", sw))
        uses[i].append(("wire", sn.name, str(sr.port), "tx"))
        uses[i].append(("wire", dn.name, str(dr.port), "rx"))
        for a, b in path.isl:
            uses[i].append(("isl", a, b))
    capacity: dict[tuple[str, ...], float] = {}
    for i in live:
        for res in uses[i]:
            if res in capacity:
                continue
            if res[0] == "half":
                node = world.nodes[res[1]]
                busy = {h for (nm, h) in half_dirs if nm == node.name}
                both_dirs = half_dirs[(node.name, res[2])] == {"tx", "rx"}
                c = HALF_SHARED if len(busy) > 1 else (HALF_BIDIR if both_dirs else HALF_ALONE)
                capacity[res] = c * node.pcie_width / 4
            elif res[0] == "cpu":
                capacity[res] = SOFTWARE_CAP
            elif res[0] == "wire":
                capacity[res] = _wire_gbps(world, res[1], int(res[2]))
            else:
                sharing = sum(1 for j in live if res in uses[j])
                capacity[res] = ISL_SHARED_TOTAL if sharing > 1 else 200.0
    rates = _fill(live, caps, uses, capacity)
    out: list[FlowResult] = []
    for i, base in enumerate(info):
        rate = rates.get(i, 0.0)
        if noise and rate > 0:
            rate *= 1.0 + world.rng.uniform(-0.0015, 0.0015)
        out.append(FlowResult(rate, base.stalled, base.reason, base.path, base.mtu, base.software))
    return out


def _wire_gbps(world: World, node: str, port: int) -> float:
    """What the cable of a node port carries per direction (the switch side's negotiated rate)."""
    other = world.peer(End("node", node, f"port{port}"))
    if other is None or other.kind != "switch":
        return 200.0
    rate = float(world.switches[other.name].link(other.port).rate_gbps)
    return 200.0 if rate >= 200 else rate * 0.97


def _fill(
    live: list[int],
    caps: list[float],
    uses: list[list[tuple[str, ...]]],
    capacity: dict[tuple[str, ...], float],
) -> dict[int, float]:
    rates = dict.fromkeys(live, 0.0)
    active = set(live)
    used = dict.fromkeys(capacity, 0.0)
    level = 0.0
    while active:
        inc = math.inf
        for res, cap in capacity.items():
            k = sum(1 for i in active if res in uses[i])
            if k:
                inc = min(inc, (cap - used[res]) / k)
        for i in active:
            inc = min(inc, caps[i] - level)
        if not math.isfinite(inc):
            break
        inc = max(inc, 0.0)
        level += inc
        for res in capacity:
            used[res] += inc * sum(1 for i in active if res in uses[i])
        for i in active:
            rates[i] = level
        saturated = {res for res, cap in capacity.items() if cap - used[res] < 1e-9}
        done = {i for i in active if caps[i] - level < 1e-9 or any(r in saturated for r in uses[i])}
        if not done:
            break
        active -= done
    return rates


def flow(world: World, spec: FlowSpec) -> FlowResult:
    """A single flow alone on the fabric."""
    return solve(world, [spec])[0]


# --- NCCL ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NcclPlan:
    """What NCCL does on a set of nodes: the transport, the HCAs it drives, the busbw."""

    transport: str  # "IB" or "Socket"
    hcas: tuple[str, ...]  # RDMA devices selected (same names on every node)
    busbw: float  # GB/s at large sizes
    error: str = ""  # a failure NCCL reports instead of results
    hca_filter: str | None = None
    per_rail_gbps: tuple[float, ...] = ()


def hca_matches(spec: str | None, devices: list[str]) -> list[str]:
    """NCCL_IB_HCA semantics: comma list, prefix match, `=` exact, `^` exclude, `:port` ignored."""
    if not spec:
        return list(devices)
    text = spec.strip()
    exclude = text.startswith("^")
    if exclude:
        text = text[1:]
    exact = text.startswith("=")
    if exact:
        text = text[1:]
    names = [e.split(":")[0] for e in text.split(",") if e]

    def hit(dev: str) -> bool:
        return any(dev == n if exact else dev.startswith(n) for n in names)

    return [d for d in devices if (not hit(d)) == exclude]


def nccl_efficiency(nodes: int) -> float:
    """busbw per GB/s of per-node NIC bandwidth (26.58 at 2 nodes, 23.33 at 4, both halves)."""
    if nodes <= 2:
        return 26.58 / (2 * NCCL_RAIL / 8)
    four = 23.33 / (2 * NCCL_RAIL / 8)
    if nodes == 3:
        return (four + 26.58 / (2 * NCCL_RAIL / 8)) / 2
    return four * (1.0 - 0.01 * (nodes - 4))


def nccl_plan(world: World, nodes: list[str], env: dict[str, str]) -> NcclPlan:
    """The transport and busbw of `all_reduce_perf` over `nodes` with NCCL env `env`."""
    first = world.nodes[nodes[0]]
    up = [r.rdma for r in first.rails if world.rail_up(first.name, r)]
    selected = hca_matches(env.get("NCCL_IB_HCA"), up)
    eff = nccl_efficiency(len(nodes))
    want_socket = env.get("NCCL_NET", "").lower() == "socket" or env.get("NCCL_IB_DISABLE") == "1"
    if want_socket or not selected:
        return NcclPlan("Socket", (), SOCKET_NODE_GBPS / 8 * eff, "", env.get("NCCL_IB_HCA"))
    flows: list[FlowSpec] = []
    for k, name in enumerate(nodes):
        nxt = nodes[(k + 1) % len(nodes)]
        if nxt == name:
            continue
        for dev in selected:
            flows.append(FlowSpec(name, dev, nxt, dev, kind="nccl"))
    results = solve(world, flows, noise=False) if flows else []
    per_rail: list[float] = []
    stalled = False
    for j in range(len(selected)):
        rs = results[j :: len(selected)] if results else []
        if any(r.stalled and "IPv4" not in r.reason for r in rs):
            stalled = True
        per_rail.append(min((r.gbps for r in rs), default=0.0))
    if stalled:
        return NcclPlan(
            "IB",
            tuple(selected),
            0.0,
            "remote process exited or there was a network error",
            env.get("NCCL_IB_HCA"),
            tuple(per_rail),
        )
    halves: dict[str, float] = defaultdict(float)
    for dev, g in zip(selected, per_rail, strict=True):
        rail = first.rail(dev)
        halves[rail.half if rail else dev] += g
    node_gbps = sum(min(g, NCCL_RAIL) for g in halves.values())
    busbw = node_gbps / 8 * eff * (1.0 + world.rng.uniform(-0.002, 0.002))
    return NcclPlan("IB", tuple(selected), busbw, "", env.get("NCCL_IB_HCA"), tuple(per_rail))
