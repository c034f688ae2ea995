"""Emulated `mpirun ... all_reduce_perf` (nccl-tests 2.18 + NCCL 2.28 INFO lines).

The NCCL environment of the job is what a real launch gives it: `/etc/nccl.conf` of the node,
then the login environment, then `mpirun -x` (highest). The HCAs come from `NCCL_IB_HCA`
filtering of the active RDMA devices; the busbw from `physics.nccl_plan`. While the run lasts,
the ring's flows run in the traffic engine so the counters and the gauges move.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from wizard.lab.physics import FlowSpec, NcclPlan, hca_matches, nccl_plan
from wizard.lab.world import NodeState, World

Write = Callable[[str], None]
SIZES = {"K": 2**10, "M": 2**20, "G": 2**30}


def parse_size(text: str) -> int:
    t = text.strip().upper()
    if t and t[-1] in SIZES:
        return int(float(t[:-1]) * SIZES[t[-1]])
    return int(t)


@dataclass
class MpiArgs:
    np: int = 1
    hosts: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    env_pass: list[str] = field(default_factory=list)
    program: str = ""
    prog_args: list[str] = field(default_factory=list)
    error: str = ""


def parse_mpirun(args: list[str]) -> MpiArgs:
    m = MpiArgs()
    i = 0
    one = {
        "-np",
        "-n",
        "-H",
        "--host",
        "-host",
        "-x",
        "--map-by",
        "--bind-to",
        "-hostfile",
        "--hostfile",
        "-npernode",
        "--npernode",
        "-wdir",
    }
    while i < len(args):
        a = args[i]
        if a in {"--mca", "-mca"}:
            i += 3
            continue
        if a in one:
            v = args[i + 1] if i + 1 < len(args) else ""
            if a in ("-np", "-n"):
                m.np = int(v) if v.isdigit() else 1
            elif a in ("-H", "--host", "-host"):
                m.hosts += [h.split(":")[0] for h in v.split(",") if h]
            elif a == "-x":
                if "=" in v:
                    k, _, val = v.partition("=")
                    m.env[k] = val
                else:
                    m.env_pass.append(v)
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        m.program = a
        m.prog_args = args[i + 1 :]
        break
    return m


def job_env(node: NodeState, login_env: dict[str, str], mpi: MpiArgs) -> dict[str, str]:
    """NCCL's view: /etc/nccl.conf, then ~/.nccl.conf, then the environment, then `-x`."""
    env: dict[str, str] = {}
    home = login_env.get("HOME", "/home/fabwiz")
    for path in ("/etc/nccl.conf", f"{home}/.nccl.conf"):
        for raw in node.files.get(path, "").splitlines():
            line = raw.strip()
            if line and not line.startswith("#") and "=" in line:
                k, _, v = line.partition("=")
                env[k.strip()] = v.strip()
    env.update({k: v for k, v in login_env.items() if k.startswith("NCCL_")})
    env.update(mpi.env)
    return env


def own_devices(world: World, node: NodeState, plan: NcclPlan) -> list[str]:
    """The devices this rank opens: NCCL_IB_HCA applied to its own up devices (names differ
    across vendors), as many as the plan has."""
    up = [r.rdma for r in node.rails if world.rail_up(node.name, r)]
    mine = hca_matches(plan.hca_filter, up) if plan.hcas else []
    return mine[: len(plan.hcas)] if mine else list(plan.hcas)


def _info_lines(
    world: World, nodes: list[NodeState], pids: list[int], env: dict[str, str], plan: NcclPlan
) -> list[str]:
    out: list[str] = []
    for rank, (node, pid) in enumerate(zip(nodes, pids, strict=True)):
        p = f"{node.name}:{pid}:{pid} [0] NCCL INFO "
        mgmt = f"192.168.1.{100 + node.index}"
        oob_if = env.get("NCCL_SOCKET_IFNAME", "enP7s7")
        oob_ip = mgmt
        r = node.rail(oob_if)
        if r is not None and r.ipv4:
            oob_ip = r.ipv4[0]
        out.append(p + "ENV/Plugin: Could not find: libnccl-env.so")
        out.append(p + f"Bootstrap: Using {oob_if}:{oob_ip}<0>")
        if "NCCL_SOCKET_IFNAME" in env:
            out.append(p + f"NCCL_SOCKET_IFNAME set to {env['NCCL_SOCKET_IFNAME']}")
        out.append(p + "cudaDriverVersion 13000")
        out.append(p + "NCCL version 2.28.9+cuda13.0")
        out.append(p + "NET/Plugin: Could not find: libnccl-net.so")
        if env.get("NCCL_IB_DISABLE") == "1":
            out.append(p + "NCCL_IB_DISABLE set by environment to 1.")
        if plan.hca_filter:
            out.append(p + f"NCCL_IB_HCA set to {plan.hca_filter}")
        if plan.transport == "IB":
            for k, dev in enumerate(own_devices(world, node, plan)):
                rail = node.rail(dev)
                pci = rail.pci if rail else "0000:01:00.0"
                dom = pci[:4]
                out.append(
                    p + f"NET/IB: [{k}] {dev}:uverbs{k}:1/RoCE provider=Mlx5 speed=200000 "
                    f"context=0x{0xC53B90DB27F0 + 0x1000 * k + rank:x} pciPath=/sys/devices/"
                    f"pci{dom}:00/{dom}:00:00.0/{pci} ar=0"
                )
                out.append(
                    p + f"NET/IB : Made virtual device [{k}] name={dev} speed=200000 ndevs=1"
                )
            using = " ".join(
                f"[{k}]{d}:1/RoCE" for k, d in enumerate(own_devices(world, node, plan))
            )
            out.append(p + f"NET/IB : Using {using} [RO]; OOB {oob_if}:{oob_ip}<0>")
            out.append(p + "Initialized NET plugin IB")
            out.append(p + "Assigned NET plugin IB to comm")
            out.append(p + "Using network IB")
        else:
            if env.get("NCCL_IB_DISABLE") != "1" and env.get("NCCL_NET", "").lower() != "socket":
                out.append(p + "NET/IB : No device found.")
                out.append(p + f"NET/IB : Using [RO]; OOB {oob_if}:{oob_ip}<0>")
                out.append(p + "Failed to initialize NET plugin IB")
            out.append(p + f"NET/Socket : Using [0]{oob_if}:{oob_ip}<0>")
            out.append(p + "Initialized NET plugin Socket")
            out.append(p + "Assigned NET plugin Socket to comm")
            out.append(p + "Using network Socket")
        out.append(
            p + f"ncclCommInitRankConfig comm 0x{0xBCA552DD2650 + rank:x} rank {rank} nranks "
            f"{len(nodes)} cudaDev 0 nvmlDev 0 busId f01000 commId 0x3470ca318760efc8 - Init START"
        )
        if plan.transport == "IB":
            for k, dev in enumerate(own_devices(world, node, plan)):
                out.append(p + f"NET/IB : GPU Direct RDMA Disabled for HCA {k} '{dev}'")
    for rank, (node, pid) in enumerate(zip(nodes, pids, strict=True)):
        p = f"{node.name}:{pid}:{pid} [0] NCCL INFO "
        nxt = (rank + 1) % len(nodes)
        nch = max(2, 2 * len(plan.hcas))
        for ch in range(nch):
            via = (
                f"NET/IB/{ch % max(1, len(plan.hcas))}"
                if plan.transport == "IB"
                else f"NET/Socket/{ch % 2}"
            )
            out.append(p + f"Channel {ch:02d}/0 : {rank}[0] -> {nxt}[0] [send] via {via}")
        out.append(p + "Connected all rings, use ring PXN 0 GDR 0")
    return out


def _row(size: int, n: int, busbw: float) -> tuple[str, float]:
    count = size // 4
    algbw = busbw * n / (2 * (n - 1)) if n > 1 else busbw
    t_us = size / (algbw * 1e9) * 1e6 if algbw > 0 else 0.0

    def cell(t: float, a: float, b: float) -> str:
        ts = f"{t:7.1f}" if t >= 10000 else f"{t:7.2f}"
        if t >= 100000:
            ts = f"{t:7.0f}"
        return f"{ts} {a:7.2f} {b:7.2f} {0:6d}"

    line = (
        f"{size:12d}  {count:12d}     float     sum      -1  "
        f"{cell(t_us, algbw, busbw)}  {cell(t_us * 1.01, algbw / 1.01, busbw / 1.01)}"
    )
    return line, t_us


async def run(
    world: World,
    first: NodeState,
    *,
    mpi: MpiArgs,
    login_env: Callable[[NodeState], dict[str, str]],
    out: Write,
    err: Write,
) -> int:
    hosts = mpi.hosts or [first.name]
    nodes: list[NodeState] = []
    for h in hosts:
        node = world.nodes.get(h)
        if node is None:
            owners = world.owners(h)
            node = owners[0][0] if owners else None
            if node is None and h.startswith("192.168.1."):
                node = next(
                    (n for n in world.nodes.values() if f"192.168.1.{100 + n.index}" == h), None
                )
        if node is None:
            err(f"ssh: Could not resolve hostname {h}: Name or service not known\n")
            err(_ORTE_DIED)
            return 1
        if not node.powered:
            err(f"ssh: connect to host {h} port 22: No route to host\n")
            err(_ORTE_DIED)
            return 1
        nodes.append(node)
    nodes = nodes[: max(1, mpi.np)] if len(nodes) >= mpi.np else nodes
    op = mpi.program.rsplit("/", 1)[-1]
    if op not in ("all_reduce_perf", "sendrecv_perf"):
        err(
            "--------------------------------------------------------------------------\n"
            f"mpirun was unable to find the specified executable file: {mpi.program}\n"
            "--------------------------------------------------------------------------\n"
        )
        return 1
    a = mpi.prog_args
    opts = {a[i]: a[i + 1] for i in range(len(a) - 1) if a[i].startswith("-")}
    try:
        min_b = parse_size(opts.get("-b", "1G"))
        max_b = parse_size(opts.get("-e", "4G"))
        factor = int(opts.get("-f", "2"))
        iters = int(opts.get("-n", "20"))
        warmup = int(opts.get("-w", "1"))
    except ValueError:
        err("Invalid size or option\n")
        return 1
    env = job_env(nodes[0], login_env(nodes[0]), mpi)
    plan = nccl_plan(world, [n.name for n in nodes], env)
    pids = [n.next_pid() for n in nodes]
    n = len(nodes)
    w = out
    w("# nccl-tests version 2.18.3 nccl-headers=22809 nccl-library=22809\n")
    w(f"# Collective test starting: {op}\n")
    w(
        f"# nThread 1 nGpus 1 minBytes {min_b} maxBytes {max_b} step: {factor}(factor) "
        f"warmup iters: {warmup} iters: {iters} agg iters: 1 validation: 1 graph: 0 unalign: 0\n"
    )
    w("#\n# Using devices\n")
    for rank, (node, pid) in enumerate(zip(nodes, pids, strict=True)):
        w(
            f"#  Rank {rank:2d} Group  0 Pid {pid:6d} on {node.name:>10} device  0 [000f:01:00] "
            "NVIDIA GB10\n"
        )
    debug = env.get("NCCL_DEBUG", "").upper() in ("INFO", "TRACE")
    if debug:
        w("\n".join(_info_lines(world, nodes, pids, env, plan)) + "\n")
    specs: list[FlowSpec] = []
    if plan.transport == "IB" and n > 1:
        for k, node in enumerate(nodes):
            nxt = nodes[(k + 1) % n]
            for src, dst in zip(
                own_devices(world, node, plan), own_devices(world, nxt, plan), strict=False
            ):
                specs.append(FlowSpec(node.name, src, nxt.name, dst, kind="nccl"))
    ids = world.traffic.start(specs) if specs else []
    try:
        if plan.error:
            await asyncio.sleep(world.wall_seconds(5.0))
            pid = pids[0]
            peer = nodes[1 % n]
            err(
                f"\n[{_stamp(world)}] {nodes[0].name}:{pid}:{pid + 11} [0] transport/net_ib.cc:2470 "
                f"NCCL WARN NET/IB : Got completion from peer {peer.name}<53488> with status=12 "
                "opcode=0 len=0 vendor err 129 (Send)\n"
            )
            err(
                f"{nodes[0].name}: Test NCCL failure common.cu:401 "
                f"'{plan.error} / '\n .. {nodes[0].name} pid {pid}: Test failure common.cu:1620\n"
            )
            err(
                "--------------------------------------------------------------------------\n"
                "Primary job  terminated normally, but 1 process returned\n"
                "a non-zero exit code. Per user-direction, the job has been aborted.\n"
                "--------------------------------------------------------------------------\n"
            )
            return 1
        w("#\n")
        w(
            "#                                                              out-of-place"
            "                       in-place          \n"
        )
        w(
            "#       size         count      type   redop    root     time   algbw   busbw"
            "  #wrong     time   algbw   busbw  #wrong \n"
        )
        w(
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
            "             (us)  (GB/s)  (GB/s)         \n"
        )
        size = min_b
        cells: list[float] = []
        while size <= max_b:
            ramp = 1.0 - 0.004 * max(0, (max_b // size).bit_length() - 1)
            busbw = plan.busbw * ramp
            line, t_us = _row(size, n if op == "all_reduce_perf" else 1, busbw)
            await asyncio.sleep(world.wall_seconds(t_us * 2 * (iters + warmup) / 1e6))
            w(line + "\n")
            cells += [busbw, busbw / 1.01]
            if factor <= 1:
                break
            size *= factor
        avg = sum(cells) / len(cells) if cells else 0.0
        w("# Out of bounds values : 0 OK\n")
        w(f"# Avg bus bandwidth    : {avg:g} \n")
        w(f"#\n# Collective test concluded: {op}\n#\n")
        return 0
    finally:
        if ids:
            world.traffic.stop(ids)


def _stamp(world: World) -> str:
    import time as _t

    return _t.strftime("%Y-%m-%d %H:%M:%S", _t.gmtime(world.now()))


_ORTE_DIED = (
    "--------------------------------------------------------------------------\n"
    "ORTE was unable to reliably start one or more daemons.\n"
    "--------------------------------------------------------------------------\n"
)
