"""Emulated `mpirun ... <collective>_perf` (nccl-tests 2.18 + NCCL 2.28 INFO lines).

`all_reduce_perf`, `all_gather_perf`, `reduce_scatter_perf` and `sendrecv_perf`. Every rank's
NCCL environment is what a real launch gives it: `/etc/nccl.conf` of *its* node, then that
node's environment, then `mpirun -x` (highest; `-x VAR` forwards the launcher's value). Hosts
come from `-H` or a hostfile. Each rank picks its own devices and the ring is computed by
`wizard.lab.nccl_ring` (slowest hop, latency term). While the run lasts, the ring's flows run in
the traffic engine so the counters and the gauges move. A program that is not one of the
collectives, an unknown mpirun option or an unreachable host fails as Open MPI 4.1 does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from wizard.lab.nccl_ring import Ring, ring, timing
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
    hostfile: str = ""
    program: str = ""
    prog_args: list[str] = field(default_factory=list)
    error: str = ""


# Open MPI 4.1 options that take a value, and flags (the ones a technician or a tool uses)
_ONE = {
    "-np",
    "-n",
    "-c",
    "-H",
    "--host",
    "-host",
    "-x",
    "--map-by",
    "-map-by",
    "--bind-to",
    "-bind-to",
    "--rank-by",
    "-rank-by",
    "-hostfile",
    "--hostfile",
    "-machinefile",
    "--machinefile",
    "--default-hostfile",
    "-npernode",
    "--npernode",
    "-N",
    "-npersocket",
    "--npersocket",
    "-wdir",
    "--wdir",
    "-wd",
    "--prefix",
    "--output-filename",
    "--cpus-per-proc",
    "--cpus-per-rank",
    "--launch-agent",
    "-am",
    "--am",
    "--app",
    "--timeout",
    "--report-uri",
    "--path",
    "--preload-files",
    "-s",
    "--stdin",
}
_TWO = {"--mca", "-mca", "--gmca", "-gmca"}
_FLAGS = {
    "--allow-run-as-root", "--oversubscribe", "--nooversubscribe", "--tag-output",
    "-tag-output", "--timestamp-output", "--report-bindings", "-report-bindings", "-v",
    "--verbose", "-q", "--quiet", "--display-map", "--display-allocation",
    "--merge-stderr-to-stdout", "--noprefix", "--use-hwthread-cpus", "--hetero-nodes",
    "--debug-daemons", "--leave-session-attached", "--show-progress", "--xml", "-d",
    "--debug-devel", "--no-daemonize", "--enable-recovery", "--disable-recovery",
}  # fmt: skip
_PROGRAMS = ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "sendrecv_perf")


def parse_mpirun(args: list[str]) -> MpiArgs:
    m = MpiArgs()
    i = 0
    while i < len(args):
        a = args[i]
        if a in _TWO:
            if i + 2 >= len(args):
                m.error = f'mpirun: Error: option "{a}" did not have enough parameters (2)'
                return m
            i += 3
            continue
        if a in _ONE:
            if i + 1 >= len(args):
                m.error = f'mpirun: Error: option "{a}" did not have enough parameters (1)'
                return m
            v = args[i + 1]
            if a in ("-np", "-n", "-c"):
                m.np = int(v) if v.isdigit() else 1
            elif a in ("-H", "--host", "-host"):
                m.hosts += [h.split(":")[0] for h in v.split(",") if h]
            elif a in ("-hostfile", "--hostfile", "-machinefile", "--machinefile"):
                m.hostfile = v
            elif a == "-x":
                if "=" in v:
                    k, _, val = v.partition("=")
                    m.env[k] = val
                else:
                    m.env_pass.append(v)
            i += 2
            continue
        if a in _FLAGS:
            i += 1
            continue
        if a.startswith("-"):
            m.error = f'mpirun: Error: unknown option "{a}"'
            return m
        m.program = a
        m.prog_args = args[i + 1 :]
        break
    return m


def hostfile_hosts(text: str) -> list[str]:
    """Host names of an Open MPI hostfile (`name slots=N`, comments and blank lines skipped)."""
    hosts: list[str] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, *rest = line.split()
        slots = 1
        for word in rest:
            if word.startswith(("slots=", "max_slots=")) and word.split("=", 1)[1].isdigit():
                slots = int(word.split("=", 1)[1])
                break
        hosts += [name] * max(1, slots)
    return hosts


def job_env(
    node: NodeState,
    login_env: dict[str, str],
    mpi: MpiArgs,
    launcher_env: dict[str, str] | None = None,
) -> dict[str, str]:
    """One rank's NCCL view: its node's /etc/nccl.conf, ~/.nccl.conf, environment, then `-x`."""
    env: dict[str, str] = {}
    home = login_env.get("HOME", "/home/fabwiz")
    for path in ("/etc/nccl.conf", f"{home}/.nccl.conf"):
        for raw in node.files.get(path, "").splitlines():
            line = raw.strip()
            if line and not line.startswith("#") and "=" in line:
                k, _, v = line.partition("=")
                env[k.strip()] = v.strip()
    env.update({k: v for k, v in login_env.items() if k.startswith("NCCL_")})
    source = login_env if launcher_env is None else launcher_env
    env.update({k: source[k] for k in mpi.env_pass if k in source})
    env.update(mpi.env)
    return env


def _info_lines(
    world: World, nodes: list[NodeState], pids: list[int], envs: list[dict[str, str]], plan: Ring
) -> list[str]:
    out: list[str] = []
    for rank, (node, pid) in enumerate(zip(nodes, pids, strict=True)):
        env, hcas, hca_filter = envs[rank], plan.hcas[rank], plan.hca_filters[rank]
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
        if hca_filter:
            out.append(p + f"NCCL_IB_HCA set to {hca_filter}")
        if hcas:
            for k, dev in enumerate(hcas):
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
            using = " ".join(f"[{k}]{d}:1/RoCE" for k, d in enumerate(hcas))
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
        for k, dev in enumerate(hcas):
            out.append(p + f"NET/IB : GPU Direct RDMA Disabled for HCA {k} '{dev}'")
    nhca = min((len(h) for h in plan.hcas), default=0)
    for rank, (node, pid) in enumerate(zip(nodes, pids, strict=True)):
        p = f"{node.name}:{pid}:{pid} [0] NCCL INFO "
        nxt = (rank + 1) % len(nodes)
        nch = max(2, 2 * nhca)
        for ch in range(nch):
            via = f"NET/IB/{ch % max(1, nhca)}" if plan.hcas[rank] else f"NET/Socket/{ch % 2}"
            out.append(p + f"Channel {ch:02d}/0 : {rank}[0] -> {nxt}[0] [send] via {via}")
        out.append(p + "Connected all rings, use ring PXN 0 GDR 0")
    return out


def _row(collective: str, size: int, n: int, busbw: float) -> tuple[str, float]:
    """One row of the nccl-tests table: out-of-place then in-place."""
    per_rank = collective in ("all_gather", "reduce_scatter")
    count = size // 4 // (n if per_rank and n else 1)
    redop = "none" if collective == "all_gather" else "sum"
    t_us, algbw, bus = timing(collective, n, size, busbw)

    def cell(t: float, a: float, b: float, wrong: str) -> str:
        ts = f"{t:7.1f}" if t >= 10000 else f"{t:7.2f}"
        if t >= 100000:
            ts = f"{t:7.0f}"
        return f"{ts} {a:7.2f} {b:7.2f} {wrong:>6}"

    in_wrong = "N/A" if collective == "sendrecv" else "0"
    line = (
        f"{size:12d}  {count:12d}     float {redop:>7}      -1  "
        f"{cell(t_us, algbw, bus, '0')}  {cell(t_us * 1.01, algbw / 1.01, bus / 1.01, in_wrong)}"
    )
    return line, t_us


def _resolve(world: World, h: str) -> NodeState | None:
    node = world.nodes.get(h)
    if node is None:
        owners = world.owners(h)
        node = owners[0][0] if owners else None
        if node is None and h.startswith("192.168.1."):
            node = next(
                (n for n in world.nodes.values() if f"192.168.1.{100 + n.index}" == h), None
            )
    return node


_RULE = "--------------------------------------------------------------------------\n"


@dataclass
class _Sweep:
    """The sizes and iterations of an nccl-tests run (`-b`, `-e`, `-f`, `-n`, `-w`)."""

    min_b: int
    max_b: int
    factor: int
    iters: int
    warmup: int


def _sweep(prog_args: list[str]) -> _Sweep | None:
    a = prog_args
    opts = {a[i]: a[i + 1] for i in range(len(a) - 1) if a[i].startswith("-")}
    try:
        return _Sweep(
            min_b=parse_size(opts.get("-b", "1G")),
            max_b=parse_size(opts.get("-e", "4G")),
            factor=int(opts.get("-f", "2")),
            iters=int(opts.get("-n", "20")),
            warmup=int(opts.get("-w", "1")),
        )
    except ValueError:
        return None


def _job_nodes(world: World, first: NodeState, mpi: MpiArgs, err: Write) -> list[NodeState] | int:
    """The nodes the job's ranks run on (from `-H` and the hostfile), or the exit status of
    mpirun when it cannot reach one (its message written)."""
    hosts = list(mpi.hosts)
    if mpi.hostfile:
        text = first.files.get(mpi.hostfile)
        if text is None:
            err(
                f"{_RULE}Open RTE was unable to open the hostfile:\n    {mpi.hostfile}\n"
                f"Check to make sure the path and filename are correct.\n{_RULE}"
            )
            return 1
        hosts += hostfile_hosts(text)
    hosts = hosts or [first.name]
    nodes: list[NodeState] = []
    for h in dict.fromkeys(hosts):
        node = _resolve(world, h)
        if node is None:
            err(f"ssh: Could not resolve hostname {h}: Name or service not known\n")
            err(_ORTE_DIED)
            return 255
        if not node.powered:
            err(f"ssh: connect to host {h} port 22: No route to host\n")
            err(_ORTE_DIED)
            return 255
        nodes.append(node)
    return nodes[: max(1, mpi.np)] if len(nodes) >= mpi.np else nodes


async def run(
    world: World,
    first: NodeState,
    *,
    mpi: MpiArgs,
    login_env: Callable[[NodeState], dict[str, str]],
    out: Write,
    err: Write,
) -> int:
    if mpi.error:
        err(f"{mpi.error}\nType 'mpirun --help' for usage.\n")
        return 1
    nodes = _job_nodes(world, first, mpi, err)
    if isinstance(nodes, int):
        return nodes
    base = mpi.program.rsplit("/", 1)[-1].removesuffix("_mpi")
    if base not in _PROGRAMS:
        err(
            f"{_RULE}mpirun was unable to launch the specified application as it could not "
            f"access\nor execute an executable:\n\nExecutable: {mpi.program}\nNode: "
            f"{first.name}\n\nwhile attempting to start process rank 0.\n{_RULE}"
        )
        if max(mpi.np, len(nodes)) > 1:
            err(f"{max(mpi.np, len(nodes))} total processes failed to start\n")
        return 132
    sweep = _sweep(mpi.prog_args)
    if sweep is None:
        err("Invalid size or option\n")
        return 1
    launcher = login_env(first)
    envs = [job_env(node, login_env(node), mpi, launcher) for node in nodes]
    plan = ring(world, [n.name for n in nodes], envs)
    pids = [n.next_pid() for n in nodes]
    _header(out, base, sweep, nodes, pids)
    if any(e.get("NCCL_DEBUG", "").upper() in ("INFO", "TRACE") for e in envs):
        out("\n".join(_info_lines(world, nodes, pids, envs, plan)) + "\n")
    ids = world.traffic.start(list(plan.flows)) if plan.flows and not plan.error else []
    try:
        if plan.error:
            await _fail(world, nodes, pids, plan.error, err)
            return 1
        await _table(world, out, base, sweep, len(nodes), plan)
        return 0
    finally:
        if ids:
            world.traffic.stop(ids)


def _header(w: Write, base: str, sweep: _Sweep, nodes: list[NodeState], pids: list[int]) -> None:
    w("# nccl-tests version 2.18.3 nccl-headers=22809 nccl-library=22809\n")
    w(f"# Collective test starting: {base}\n")
    w(
        f"# nThread 1 nGpus 1 minBytes {sweep.min_b} maxBytes {sweep.max_b} "
        f"step: {sweep.factor}(factor) warmup iters: {sweep.warmup} iters: {sweep.iters} "
        "agg iters: 1 validation: 1 graph: 0 unalign: 0\n"
    )
    w("#\n# Using devices\n")
    for rank, (node, pid) in enumerate(zip(nodes, pids, strict=True)):
        w(
            f"#  Rank {rank:2d} Group  0 Pid {pid:6d} on {node.name:>10} device  0 [000f:01:00] "
            "NVIDIA GB10\n"
        )


async def _fail(
    world: World, nodes: list[NodeState], pids: list[int], error: str, err: Write
) -> None:
    """The ring's first QP fails: NCCL's warning and the job aborted, a few seconds in."""
    await world.sleep(5.0)
    pid = pids[0]
    peer = nodes[1 % len(nodes)]
    err(
        f"\n[{_stamp(world)}] {nodes[0].name}:{pid}:{pid + 11} [0] transport/net_ib.cc:2470 "
        f"NCCL WARN NET/IB : Got completion from peer {peer.name}<53488> with status=12 "
        "opcode=0 len=0 vendor err 129 (Send)\n"
    )
    err(
        f"{nodes[0].name}: Test NCCL failure common.cu:401 "
        f"'{error} / '\n .. {nodes[0].name} pid {pid}: Test failure common.cu:1620\n"
    )
    err(
        f"{_RULE}Primary job  terminated normally, but 1 process returned\n"
        f"a non-zero exit code. Per user-direction, the job has been aborted.\n{_RULE}"
    )


async def _table(world: World, w: Write, base: str, sweep: _Sweep, n: int, plan: Ring) -> None:
    """The result table, one row per size as its iterations finish, and the average."""
    collective = base.removesuffix("_perf")
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
    size = sweep.min_b
    cells: list[float] = []
    while size <= sweep.max_b:
        line, t_us = _row(collective, size, n, plan.busbw)
        await world.sleep(t_us * 2 * (sweep.iters + sweep.warmup) / 1e6)
        w(line + "\n")
        _t, _alg, bus = timing(collective, n, size, plan.busbw)
        cells += [bus, bus / 1.01]
        if sweep.factor <= 1:
            break
        size *= sweep.factor
    avg = sum(cells) / len(cells) if cells else 0.0
    w("# Out of bounds values : 0 OK\n")
    w(f"# Avg bus bandwidth    : {avg:g} \n")
    w(f"#\n# Collective test concluded: {base}\n#\n")


def _stamp(world: World) -> str:
    import time as _t

    return _t.strftime("%Y-%m-%d %H:%M:%S", _t.gmtime(world.now()))


_ORTE_DIED = (
    "--------------------------------------------------------------------------\n"
    "ORTE was unable to reliably start one or more daemons.\n"
    "--------------------------------------------------------------------------\n"
)
