"""The NCCL run a field engineer would type (seed 000's canonical launch), built from discovery.

    mpirun --hostfile H -np 4 \\
      -x NCCL_IB_HCA==rocep1s0f0,rocep1s0f1,roceP2p1s0f0,roceP2p1s0f1 \\
      -x NCCL_IB_ROCE_VERSION_NUM=2 -x NCCL_SOCKET_IFNAME=enP7s7 \\
      --mca btl_tcp_if_include enP7s7 \\
      ~/nccl-tests/build/all_reduce_perf -b 256M -e 4G -f 2 -g 1 -n 30 -w 5

The hostfile has one slot per node on its management address (the default route's interface,
discovered on each node); `NCCL_IB_HCA` names the active RDMA devices exactly (`=`: no prefix
surprises such as `rocep1s0f` missing `roceP2p1s0f0`); no `NCCL_IB_TC` (QoS is off); the binary is
where readiness found it (NVIDIA's playbook builds it in `~/nccl-tests/build/`, not on PATH);
`timeout` bounds the run. Never the 16 GB all_gather that froze nodes through unified-memory OOM.
The `job` mode drops fabwiz's NCCL settings and launches from a login shell, so the job's own
environment decides (/etc/nccl.conf and ~/.nccl.conf on every rank, the login environment on the
launch node's rank only, as mpirun forwards no variable it is not told to), and a mismatch with
what fabwiz proved shows.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from wizard.model import Rail
from wizard.readiness import NodeTools

SIZES = ("-b", "256M", "-e", "4G", "-f", "2", "-g", "1", "-n", "30", "-w", "5")
TIME_LIMIT_S = 600
HOSTFILE = ".fabwiz-hostfile"
Mode = Literal["canonical", "job"]


@dataclass(frozen=True, slots=True)
class Launch:
    """One NCCL launch: the command as sent to `launch`, or why it cannot be sent."""

    op: str  # all_reduce_perf, sendrecv_perf
    mode: Mode
    nodes: tuple[str, ...]
    launch: str
    command: str = ""
    hostfile: str = ""
    cannot: str = ""
    readable: str = ""  # the same run as a technician types it (hostfile heredoc, then mpirun)  # why not (a missing tool, an unknown management address)


def active_devices(rails: Mapping[str, Sequence[Rail]], nodes: Sequence[str]) -> list[str]:
    """The RDMA devices up with an address, across the nodes, in a stable order."""
    seen: dict[str, None] = {}
    for n in nodes:
        for r in sorted(rails.get(n, ()), key=lambda r: (r.half, r.port, r.rdma)):
            if r.up and r.addresses:
                seen.setdefault(r.rdma, None)
    return list(seen)


def build(
    nodes: Sequence[str],
    *,
    tools: Mapping[str, NodeTools],
    mgmt: Mapping[str, tuple[str, str]],
    rails: Mapping[str, Sequence[Rail]],
    op: str = "all_reduce_perf",
    mode: Mode = "canonical",
    time_limit_s: int = TIME_LIMIT_S,
) -> Launch:
    nodes = tuple(nodes)
    launch = nodes[0]
    base = Launch(op, mode, nodes, launch)
    for n in nodes:
        where = tools.get(n)
        if where is None:
            return _cannot(base, f"{n}: the tools were not listed (preflight.tool-missing)")
        for need in ("mpirun", op):  # Open MPI's daemon (orted) runs on every node
            if need not in where.paths:
                return _cannot(base, f"{need} is not installed on {n} (preflight.tool-missing)")
        if n not in mgmt:
            return _cannot(base, f"{n}: no management address found (ip route show default)")
    binary = tools[launch].paths[op]
    for n in nodes[1:]:
        if tools[n].paths[op] != binary:
            return _cannot(
                base,
                f"{op} is at {tools[n].paths[op]} on {n} but {binary} on {launch}: mpirun runs "
                "the same path on every node",
            )
    # one name, or each node's own (vendors name the management port differently): both
    # NCCL_SOCKET_IFNAME and btl_tcp_if_include take a comma list
    netdev = ",".join(dict.fromkeys(mgmt[n][0] for n in nodes))
    hostfile = "".join(f"{mgmt[n][1]} slots=1\n" for n in nodes)
    path = HOSTFILE  # in the login directory, overwritten by each run
    mpirun = [
        "timeout",
        "-k",
        "10",
        str(int(time_limit_s)),
        tools[launch].paths["mpirun"],
        "--allow-run-as-root",  # harmless as a user; Open MPI refuses root without it
        "--hostfile",
        path,
        "-np",
        str(len(nodes)),
        "-x",
        "NCCL_DEBUG=INFO",
    ]
    if mode == "canonical":
        devices = active_devices(rails, nodes)
        if not devices:
            return _cannot(base, "no RDMA device is up with an address")
        mpirun += [
            "-x",
            f"NCCL_IB_HCA=={','.join(devices)}",
            "-x",
            "NCCL_IB_ROCE_VERSION_NUM=2",
            "-x",
            f"NCCL_SOCKET_IFNAME={netdev}",
        ]
    lib = tools[launch].nccl_lib
    if lib:
        mpirun += ["-x", f"LD_LIBRARY_PATH={lib}"]
    mpirun += ["--mca", "btl_tcp_if_include", netdev, binary, *SIZES]
    lines = " ".join(shlex.quote(f"{mgmt[n][1]} slots=1") for n in nodes)
    script = f"printf '%s\\n' {lines} > {shlex.quote(path)} && " + " ".join(
        shlex.quote(w) for w in mpirun
    )
    readable = f"cat > {path} <<'EOF'\n{hostfile}EOF\n" + " \\\n  ".join(
        _grouped([shlex.quote(w) for w in mpirun])
    )
    # The job mode starts where a workload starts: the operator's login shell on the launch node
    # (its rank inherits /etc/profile.d and ~/.profile; mpirun's ssh-started ranks do not).
    shell = "bash -lc " if mode == "job" else "sh -c "
    return Launch(op, mode, nodes, launch, shell + shlex.quote(script), hostfile, "", readable)


def _grouped(words: list[str]) -> list[str]:
    """Option and value on one line: `-x NCCL_IB_HCA==...`, `--mca k v`."""
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        n = 2 if w == "--mca" else 1 if w in ("-x", "--hostfile", "-np") else 0
        if w == "--allow-run-as-root":
            out[-1] += " " + w
            i += 1
            continue
        if w == "timeout":
            n = 3
        if w.endswith(("_perf", "_perf'")):
            out.append(" ".join(words[i:]))
            break
        out.append(" ".join(words[i : i + 1 + n]))
        i += 1 + n
    return out


def _cannot(base: Launch, why: str) -> Launch:
    return Launch(base.op, base.mode, base.nodes, base.launch, cannot=why)


def mpirun_argv(command: str) -> list[str]:
    """The mpirun words of a launch command (after `timeout -k N S`), for validating them."""
    words = shlex.split(command)
    if words[:2] in (["sh", "-c"], ["bash", "-lc"]):
        inner = shlex.split(words[2])
        words = inner[inner.index("&&") + 1 :] if "&&" in inner else inner
    if words and words[0] == "timeout":
        words = words[4:]
    return words


_TESTS_VERSION = re.compile(r"^#?\s*nccl-tests version (\S+)", re.M)
_NCCL_VERSION = re.compile(r"NCCL INFO NCCL version (\S+)")


def versions_in(output: str) -> dict[str, str]:
    """The nccl-tests and NCCL versions a run printed (its header and its INFO lines)."""
    out: dict[str, str] = {}
    m = _TESTS_VERSION.search(output)
    if m:
        out["nccl_tests_version"] = m.group(1)
    n = _NCCL_VERSION.search(output)
    if n:
        out["nccl_version"] = n.group(1)
    return out
