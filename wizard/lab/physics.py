"""Throughput of RDMA flows and NCCL runs, computed from the world (never scripted per scenario).

Every number comes from a mechanism with a parameter (DESIGN.md "Physics", FAULTS.md's table):

- a PCIe half (Gen5 x4: 32 GT/s x 4 lanes, 128b/130b, less TLP overhead) moves 111.86 Gb/s of
  RDMA per direction; a half running both directions loses the other direction's DLLPs and
  completions (~103 each way, ~206 aggregate); a narrower link scales it;
- the CX7 multi-host behind the GB10 SoC moves 196.08 Gb/s per direction per node, whether one
  or two cables are used (98.04 per half when both are busy);
- a cable carries its negotiated rate less the per-frame overhead of RoCE at the active MTU
  (Ethernet, IP, UDP, BTH, ICRC, FCS, preamble, inter-frame gap): 196.07 of 200 Gb/s at MTU 4096;
  a link without RS-FEC at 100G and up loses the frames its raw bit errors hit;
- a switched path costs a single QP ~2.4% (109.2), each further switch ~0.1% (109.08);
- an ISL direction is a cable; two or more flows that oversubscribe it run DCQCN, which keeps the
  link ~84% busy (163.8 shared, 81.9 each for two flows, whatever their count);
- a bridge the switch chip does not offload is forwarded by the switch CPU (`CpuForwarding` per
  model): one forwarding thread per flow, all threads sharing the CPU;
- a CX7 throttled or degraded moves ~12.8 Gb/s; the campus detour (RSTP blocked ISL) ~4.47 Gb/s
  at MTU 1500.

What stalls a flow (the connection forms, no data moves, retry exceeded):
- lossless QoS (trust-l3/PFC) on a hop the switch chip forwards: the ASIC enforces it and the
  data path stalls; the switch CPU does not apply chip QoS, so a software-forwarded path runs
  (seed 000, "once the ASIC actually enforced port config"). Host PFC alone never stalls: a
  lossy fabric ignores the pause frames;
- ARP flux: the destination address is answered by more than one netdev (the same IPv4 on
  several rails of one node or on several nodes, or several rails of one subnet on a node whose
  `arp_ignore` is 0). The address handle resolves to a MAC that is not the QP's and the frames
  vanish: no switch leg and no receiver counts them (seed 000), and with no ACK coming back
  the QP times out and retries as in a QoS stall. A CPU-forwarded bridge
  floods them to every leg of the node, so the right function still gets them at the CPU's rate
  (seed 000 measured 9.5 Gb/s and 0.46 GB/s with its duplicates in place);
- RoCE frames larger than the path's l2mtu, no L2 path at all, no IPv4 address.

A stalled RC QP (the InfiniBand transport, as the CX7 runs it) waits 4.096 us x 2^timeout for an
ACK, sends its whole window again (go-back-N), and after `retry_cnt` retries completes with
`IBV_WC_RETRY_EXC_ERR` (perftest's "Failed status 12"): at perftest's `-u 14` and retry count 7,
8 ACK timeouts of 67 ms, 0.54 s from the first frame to the error (`retry_exceeded_s`).

Rates are shared by max-min fair progressive filling over these resources. A little seeded
noise (+-0.15%) keeps repeated runs from printing identical numbers.
"""

from __future__ import annotations

import ipaddress
import math
from collections import defaultdict
from dataclasses import dataclass

from wizard.lab.perftest_args import DEF_QP_TIME
from wizard.lab.switchport import cpu_forwarding
from wizard.lab.world import End, L2Path, NodeState, RailState, World

PCIE_GT_PER_LANE = 32.0  # Gen5
PCIE_ENCODING = 128 / 130
PCIE_TLP_EFFICIENCY = 0.88757  # 256 B payloads with TLP/DLLP overhead: 111.86 of 126.03 Gb/s
PCIE_DUPLEX_FACTOR = 0.92079  # both directions on one half: ~103 each way
NODE_NIC_GBPS = 196.08  # the CX7 multi-host through the GB10 SoC, per direction per node
ROCE_OVERHEAD = 58  # Eth + IP + UDP + BTH + RETH + ICRC around the RoCE payload (in the frame)
WIRE_OVERHEAD = 82  # per frame on the wire: Eth 14 + IP 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4 + 20
SWITCH_PATH_EFFICIENCY = 0.97622  # one switch: 109.2 of 111.86 for a single QP
EXTRA_SWITCH_EFFICIENCY = 0.99890  # each further switch (cross-switch 109.08)
DCQCN_LINK_EFFICIENCY = 0.8355  # an oversubscribed ISL direction under DCQCN: 163.8 of 196.07
NO_FEC_BER = 1e-6  # raw bit error rate of a 100G+ DAC leg without RS-FEC
DEGRADED = 12.8
DETOUR = 4.47  # the campus LAN path of an RSTP-blocked ISL
NCCL_RAIL = 98.04  # what NCCL's ring moves per half
SOCKET_NODE_GBPS = 20.0  # NCCL over TCP sockets: the ARM cores, not the wire
ACK_TIMEOUT_UNIT_S = 4.096e-6  # a QP's local ACK timeout is this x 2^timeout (IB spec)
QP_RETRY_CNT = 7  # perftest's attr.retry_cnt, NCCL's NCCL_IB_RETRY_CNT default
PERFTEST_QP_TIMEOUT = DEF_QP_TIME  # perftest's `-u` default
NCCL_QP_TIMEOUT = 20  # NCCL's NCCL_IB_TIMEOUT default
PERFTEST_TX_DEPTH = 128  # perftest's DEF_TX_BW: the writes each QP keeps in flight (`-t`)
PERFTEST_WINDOW_BYTES = PERFTEST_TX_DEPTH * 65536  # in flight per QP at the default 64 KiB
NCCL_WINDOW_BYTES = 4 * 1024 * 1024  # NCCL in flight per channel: NCCL_BUFFSIZE


def pcie_half_gbps(width: int) -> float:
    """RDMA payload one PCIe Gen5 half of `width` lanes moves per direction."""
    return PCIE_GT_PER_LANE * width * PCIE_ENCODING * PCIE_TLP_EFFICIENCY


def ack_timeout_s(timeout: int) -> float | None:
    """How long a QP with this `timeout` field waits for an ACK before it sends its window
    again (None: 0, it waits forever). The QP context keeps the field's low 5 bits."""
    exponent = timeout & 0x1F
    return None if exponent == 0 else ACK_TIMEOUT_UNIT_S * 2**exponent


def retry_exceeded_s(timeout: int, retry_cnt: int = QP_RETRY_CNT) -> float | None:
    """From a stalled QP's first frame to its retry-exceeded completion error: the first ACK
    timeout, then one per retry (None: it never gives up)."""
    period = ack_timeout_s(timeout)
    return None if period is None else period * (retry_cnt + 1)


def wire_goodput(rate_gbps: float, mtu: int = 4096, fec: str = "fec91") -> float:
    """RoCE payload a cable of `rate_gbps` carries per direction at RoCE MTU `mtu`."""
    frame = mtu + WIRE_OVERHEAD
    good = rate_gbps * mtu / frame
    if fec != "fec91" and rate_gbps >= 100:
        good *= (1.0 - NO_FEC_BER) ** (8 * frame)
    return good


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
    qp_timeout: int = PERFTEST_QP_TIMEOUT  # each QP's ACK timeout field (`ack_timeout_s`)
    window_bytes: int = PERFTEST_WINDOW_BYTES  # in flight per QP: what a retry sends again
    retry_cnt: int = QP_RETRY_CNT  # retries before the QP completes in error


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


def _subnet(cidr: str) -> ipaddress.IPv4Network | None:
    try:
        return ipaddress.IPv4Interface(cidr).network
    except ValueError:
        return None


def arp_answerers(world: World, ip: str) -> list[tuple[NodeState, RailState]]:
    """Every netdev that answers an ARP request for `ip` on the fabric.

    The rails that own the address, plus, on a node whose `arp_ignore` is 0 (Linux answers for
    any local address on any interface), its other rails in the same subnet.
    """
    out: list[tuple[NodeState, RailState]] = []
    for node, rail in world.owners(ip):
        if (node, rail) not in out:
            out.append((node, rail))
        if node.sysctls.get("net.ipv4.conf.all.arp_ignore", "0") != "0":
            continue
        net = next((_subnet(a) for a in rail.addresses if a.split("/")[0] == ip), None)
        for other in node.rails:
            if other is rail or (node, other) in out:
                continue
            if net is not None and any(_subnet(a) == net for a in other.addresses):
                out.append((node, other))
    return out


def _stall_reason(
    world: World, *, sn: NodeState, sr: RailState, dn: NodeState, dr: RailState, path: L2Path
) -> str:
    if not path.ok:
        return f"no path: {path.reason}"
    chip_forwarded = all(h.offloaded for h in path.hops)
    for ip in (*sr.ipv4, *dr.ipv4):
        answer = arp_answerers(world, ip)
        if not path.switched:
            # a direct cable is its own L2 domain: only the two hosts' own copies answer ARP
            answer = [o for o in answer if o[0].name in (sn.name, dn.name)]
        if len(answer) > 1 and chip_forwarded:
            owners = world.owners(ip)
            what = "duplicate IP" if len(owners) > 1 else "rails of one subnet answer ARP for"
            return f"{what} {ip}: ARP flux, frames vanish"
    if not sr.ipv4 or not dr.ipv4:
        return "no IPv4 address (no RoCEv2 GID)"
    if any(h.lossless and h.offloaded for h in path.hops):
        return "lossless QoS (PFC) on the switch path"
    # host PFC on a lossy fabric is hygiene, not a stall: without lossless switch ports no
    # pause frame comes back, and the stall of seed 000 was switch QoS on the offloaded path
    frame = min(active_mtu(sr.mtu), active_mtu(dr.mtu)) + ROCE_OVERHEAD - 14
    # the campus detour carries RoCE-sized frames but not 9000-byte ones (003: 4.47 Gb/s)
    if frame > path.l2mtu and not path.detour:
        return f"RoCE frames of {frame} B exceed the path l2mtu {path.l2mtu}"
    return ""


def _path_cap(world: World, sn: NodeState, path: L2Path) -> float:
    """The ceiling of one QP on `path` (PCIe half, switch hops, detour, CX7 state)."""
    cap = pcie_half_gbps(sn.pcie_width)
    if path.hops:
        cap *= SWITCH_PATH_EFFICIENCY * EXTRA_SWITCH_EFFICIENCY ** (len(path.hops) - 1)
    if path.detour:
        cap = min(cap, DETOUR)
    for hop in path.hops:
        if not hop.offloaded:
            model = world.switch_models.get(hop.switch, "")
            cap = min(cap, cpu_forwarding(model).per_flow_gbps)
    return cap


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
        cap = _path_cap(world, sn, path)
        for node in (sn, dn):
            if node.throttled or node.degraded:
                cap = min(cap, DEGRADED)
        caps[i] = cap
        uses[i] = _uses(sn, sr, dn, dr, software, path)
    capacity: dict[tuple[str, ...], float] = {}
    for i in live:
        for res in uses[i]:
            if res not in capacity:
                capacity[res] = _capacity(world, res, live, caps, uses, info, half_dirs)
    rates = _fill(live, caps, uses, capacity)
    out: list[FlowResult] = []
    for i, base in enumerate(info):
        rate = rates.get(i, 0.0)
        if noise and rate > 0:
            rate *= 1.0 + world.rng.uniform(-0.0015, 0.0015)
        out.append(FlowResult(rate, base.stalled, base.reason, base.path, base.mtu, base.software))
    return out


def _uses(
    sn: NodeState,
    sr: RailState,
    dn: NodeState,
    dr: RailState,
    software: tuple[str, ...],
    path: L2Path,
) -> list[tuple[str, ...]]:
    """The shared resources a flow uses: a PCIe half and the NIC at each end, the CPU of each
    switch that forwards it in software, the cable at each end, and every ISL it crosses."""
    uses: list[tuple[str, ...]] = [
        ("half", sn.name, sr.half, "tx"),
        ("half", dn.name, dr.half, "rx"),
        ("nic", sn.name, "tx"),
        ("nic", dn.name, "rx"),
    ]
    uses += [("cpu", sw) for sw in dict.fromkeys(software)]
    uses.append(("wire", sn.name, str(sr.port), "tx"))
    uses.append(("wire", dn.name, str(dr.port), "rx"))
    uses += [("isl", a, b) for a, b in path.isl]
    return uses


def _capacity(
    world: World,
    res: tuple[str, ...],
    live: list[int],
    caps: list[float],
    uses: list[list[tuple[str, ...]]],
    info: list[FlowResult],
    half_dirs: dict[tuple[str, str], set[str]],
) -> float:
    """What one shared resource carries, given the live flows on it."""
    if res[0] == "half":
        node = world.nodes[res[1]]
        both_dirs = half_dirs[(node.name, res[2])] == {"tx", "rx"}
        c = pcie_half_gbps(node.pcie_width)
        return c * PCIE_DUPLEX_FACTOR if both_dirs else c
    if res[0] == "nic":
        return NODE_NIC_GBPS
    if res[0] == "cpu":
        return cpu_forwarding(world.switch_models.get(res[1], "")).total_gbps
    if res[0] == "wire":
        mtu = min(info[j].mtu for j in live if res in uses[j])
        return _wire_gbps(world, res[1], int(res[2]), mtu)
    good = wire_goodput(200.0)
    on_it = [j for j in live if res in uses[j]]
    demand = sum(caps[j] for j in on_it)
    oversubscribed = len(on_it) > 1 and demand > good
    return good * DCQCN_LINK_EFFICIENCY if oversubscribed else good


def _wire_gbps(world: World, node: str, port: int, mtu: int = 4096) -> float:
    """What the cable of a node port carries per direction (the switch side's negotiated rate)."""
    other = world.peer(End("node", node, f"port{port}"))
    if other is None or other.kind != "switch":
        return wire_goodput(200.0, mtu)
    link = world.switches[other.name].link(other.port)
    return wire_goodput(float(link.rate_gbps), mtu, link.fec)


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
    """busbw per GB/s of per-node NIC bandwidth (26.58 at 2 nodes, 23.33 at 4, both halves).
    A ring's busbw at large sizes does not depend on its length: each rank sends and receives
    2(n-1)/n of the buffer whatever n is, and busbw is normalised by that same factor. What
    a longer ring costs is its 2(n-1) steps of latency, which `nccl_ring.timing` adds to
    every collective; so from 4 nodes on, the efficiency is the one measured at 4."""
    if nodes <= 2:
        return 26.58 / (2 * NCCL_RAIL / 8)
    four = 23.33 / (2 * NCCL_RAIL / 8)
    if nodes == 3:
        return (four + 26.58 / (2 * NCCL_RAIL / 8)) / 2
    return four


def nccl_plan(world: World, nodes: list[str], env: dict[str, str]) -> NcclPlan:
    """The transport and busbw of `all_reduce_perf` over `nodes`, every rank reading `env`."""
    from wizard.lab.nccl_ring import ring  # the per-rank ring builds on this module

    r = ring(world, nodes, [env] * len(nodes))
    hcas = r.hcas[0] if r.hcas else ()
    transport = r.transport
    return NcclPlan(transport, hcas, r.busbw, r.error, env.get("NCCL_IB_HCA"), r.channel_gbps)
