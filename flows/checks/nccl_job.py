"""The job's own NCCL environment against fabwiz's canonical run (`--perf`, the halves step).

fabwiz proves the fabric with seed 000's canonical launch: `NCCL_IB_HCA==<every active device>`
passed with `-x`, so nothing the nodes carry can narrow it. The workload does not run that
launch: it gets the job's environment (the shell profile, `/etc/nccl.conf`, `~/.nccl.conf`, the
container's env). A second run with that environment (`cluster/job-env`) shows what the job
really gets. When it drives fewer RDMA devices than the canonical run, the job runs on one PCIe
half (`nccl.hca-filter`); when it falls back to TCP sockets while the canonical run used IB,
`nccl.socket-fallback`. Both figures (devices and busbw) are the evidence. Where the job runs
in a container (the inventory's `job:`), its env is the one NCCL reads: the devices its
`NCCL_IB_HCA` selects from `ibdev2netdev`'s active devices are compared too.

Nothing is said when the canonical run itself failed or is short (perf_nccl reports it); an
unreadable or lost job run is `unknown`.
"""

from __future__ import annotations

from dataclasses import dataclass

from flows.base import Check, Context, Observations
from flows.checks import nccl_config
from flows.checks._common import Finding
from wizard.errors import ParseError
from wizard.model import Evidence, Measurement, Status, Verdict
from wizard.parsers.nccl import NcclResult, parse_nccl

CANONICAL = "cluster"
JOB = "cluster/job-env"
WHERE = "the shell profile, /etc/nccl.conf, ~/.nccl.conf or the container's env"


@dataclass(frozen=True, slots=True)
class Run:
    measurement: Measurement
    parsed: NcclResult | None
    error: str | None

    @property
    def command(self) -> str:
        return str(self.measurement.extra.get("command", "all_reduce_perf"))

    @property
    def devices(self) -> tuple[str, ...]:
        p = self.parsed
        return tuple(d.name for d in p.net_ib_devices) if p is not None else ()

    @property
    def transport(self) -> str | None:
        from flows.checks.perf_nccl import channel_transport

        return channel_transport(self.parsed) if self.parsed is not None else None

    def figures(self) -> str:
        p = self.parsed
        bw = f"{p.avg_busbw:.2f} GB/s" if p is not None and p.avg_busbw is not None else "? GB/s"
        if self.transport == "Socket":
            return f"TCP sockets, busbw {bw}"
        n = len(self.devices)
        return f"{n} device(s) ({', '.join(self.devices) or 'none listed'}), busbw {bw}"


@dataclass(frozen=True, slots=True)
class JobEnv:
    canonical: Run | None
    job: Run | None
    containers: dict[str, tuple[str, dict[str, str], tuple[str, ...]]]  # node -> name, env, up
    active: int = 0  # RDMA devices up with an address, the fewest of any node


def _run(m: Measurement | None) -> Run | None:
    if m is None:
        return None
    if not m.valid:
        return Run(m, None, m.reason or "no result")
    try:
        return Run(m, parse_nccl(str(m.extra.get("raw", ""))), None)
    except ParseError as exc:
        return Run(m, None, str(exc))


def parse(obs: Observations, ctx: Context) -> JobEnv:
    by_target = {m.target: m for m in obs.measurements if m.kind == "nccl"}
    containers: dict[str, tuple[str, dict[str, str], tuple[str, ...]]] = {}
    if ctx.jobs:
        for node in nccl_config.parse(obs, ctx).nodes:
            for name, env in node.containers.items():
                containers[node.node] = (name, env, node.active)
    active = min(
        (sum(1 for r in rails if r.up and r.addresses) for rails in ctx.rails.values()), default=0
    )
    return JobEnv(_run(by_target.get(CANONICAL)), _run(by_target.get(JOB)), containers, active)


def judge(n: JobEnv, ctx: Context) -> list[Verdict]:
    if n.job is None:
        return []
    hca = Finding("nccl.hca-filter")
    sock = Finding("nccl.socket-fallback")
    c, j = n.canonical, n.job
    if c is None or c.parsed is None or c.parsed.avg_busbw is None:
        return []  # no canonical figure to compare with: perf_nccl says why
    if j.parsed is None or j.parsed.avg_busbw is None:
        hca.unknown.append(
            Evidence(
                JOB,
                j.command,
                j.error or "no busbw",
                f"the job's own environment measured ({c.figures()} canonical)",
                Status.UNKNOWN,
                str(j.measurement.extra.get("raw", "")),
            )
        )
        return [
            hca.verdict(ok="", bad="", unknown="the job's own NCCL environment was not measured")
        ]
    if c.transport != "IB" or not c.devices or len(c.devices) < n.active:
        return []  # the canonical run is short itself: perf_nccl reports it
    expected = f"as fabwiz's canonical run: {c.figures()}"
    filt = f"; NCCL_IB_HCA set to {j.parsed.ib_hca}" if j.parsed.ib_hca else ""
    ev = Evidence(JOB, j.command, f"the job's own environment: {j.figures()}{filt}", expected)
    out: list[Verdict] = []
    if j.transport == "Socket":
        sock.fail(ev, target=JOB)
        out.append(
            sock.verdict(
                ok="",
                bad=f"The job's own NCCL environment falls back to TCP sockets ({j.figures()}) "
                f"where fabwiz's run uses IB ({c.figures()}): remove NCCL_NET=Socket / "
                f"NCCL_IB_DISABLE from {WHERE}",
            )
        )
        return out
    if len(j.devices) < len(c.devices):
        hca.fail(ev, target=JOB)
    else:
        hca.ok(ev)
    for node, (name, env, active) in sorted(n.containers.items()):
        spec = env.get("NCCL_IB_HCA")
        chosen = nccl_config.hca_selects(spec, list(active)) if spec is not None else list(active)
        cev = Evidence(
            node,
            nccl_config.CONTAINERS.command,
            f"container {name}: NCCL_IB_HCA={spec} selects {len(chosen)} device(s) "
            f"({', '.join(chosen) or 'none'})"
            if spec is not None
            else f"container {name}: no NCCL_IB_HCA (every device)",
            f"{len(c.devices)} device(s), {expected}",
        )
        if len(chosen) < len(c.devices):
            hca.fail(cev, target=node)
        else:
            hca.ok(cev)
    want = ",".join(c.devices)
    out.append(
        hca.verdict(
            ok=f"The job's own NCCL environment drives the same devices as fabwiz's run "
            f"({j.figures()}; canonical {c.figures()})",
            bad=f"The job's own NCCL environment drives fewer devices than fabwiz's run "
            f"({j.figures()} against {c.figures()}): set NCCL_IB_HCA=={want} where the job "
            f"reads it ({WHERE})",
        )
    )
    return out


CHECK = Check(
    id="nccl.job-env",
    title="NCCL with the job's own environment against the canonical run",
    description=__doc__ or "",
    faults=("nccl.hca-filter", "nccl.socket-fallback"),
    step="halves",
    probes=(),
    parse=parse,
    judge=judge,
    needs_traffic=True,
)
