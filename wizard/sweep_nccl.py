"""The sweep's NCCL run: one `all_reduce_perf` (seed 000's canonical launch, or the job's own
environment) from the first node, with every rail's counters, the switch CPU and the switch
ports read around it; a run that cannot start or never answers is no busbw."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from wizard import ncclrun, readiness
from wizard.counters import deltas
from wizard.errors import ParseError
from wizard.events import MeasurementTaken, ProbeAnswered, ProbeSent
from wizard.model import Measurement, ProbeResult
from wizard.schedule import home_switches, ring_order
from wizard.sweep_rounds import counters_of
from wizard.sweep_traffic import with_switch_cpu

if TYPE_CHECKING:
    from wizard.sweep import Sweeper

__all__ = ["nccl_test"]


async def nccl_test(
    sw: Sweeper,
    *,
    timeout_s: float = 300.0,
    op: str = "all_reduce_perf",
    mode: ncclrun.Mode = "canonical",
    nodes: Sequence[str] | None = None,
) -> tuple[Measurement, ProbeResult]:
    """One NCCL test (seed 000's canonical launch, or the job's own environment) across
    `nodes` (every node), launched from the first one, the ranks grouped by switch along the
    ISLs (`ring_order`: NCCL's ring follows the rank order)."""
    nodes = list(nodes or sw.nodes)
    if any(n not in sw.tools or n not in sw.mgmt for n in nodes):
        await sw.sweep([readiness.TOOLS_PROBE])  # a resumed session has not looked yet
    nodes = ring_order(nodes, home_switches(nodes, sw.rails), sw.switch_map)
    target = "cluster" if op == "all_reduce_perf" else f"{'+'.join(nodes)}/{op}"
    if mode == "job":
        target += "/job-env"
    launch = ncclrun.build(
        nodes,
        tools=sw.tools,
        mgmt=sw.mgmt,
        rails=sw.rails,
        op=op,
        mode=mode,
        time_limit_s=int(timeout_s),
    )
    info: dict[str, object] = {"op": op, "mode": mode, "launch": nodes[0]}
    if launch.cannot:
        m = Measurement(
            kind="nccl",
            target=target,
            value=0.0,
            unit="GB/s",
            valid=False,
            reason=f"not run: {launch.cannot}",
            extra={**info, "command": op},
        )
        sw._emit(MeasurementTaken(step=sw.step, measurement=m))
        return m, ProbeResult(target=nodes[0], kind="ssh", command=op, error=launch.cannot)
    info["hostfile"] = launch.hostfile
    info["rerun"] = launch.readable
    # the run's own `timeout` fires first
    res, extra = await _nccl_run(sw, nodes, launch.command, timeout_s + 30.0, info)
    value, reason = _busbw(res, op, extra)
    if sw.versions.update_nccl(nodes, extra):
        sw._emit(sw.versions.event(sw.step))
    lost = res.error is not None and res.exit_status is None and not value
    m = Measurement(
        kind="nccl",
        target=target,
        value=value,
        unit="GB/s",
        valid=not lost,  # a broken session or a hung run is no busbw
        reason=f"no result: {res.error}" if lost else reason,
        extra=extra,
    )
    sw._emit(MeasurementTaken(step=sw.step, measurement=m))
    return m, res


async def _nccl_run(
    sw: Sweeper, nodes: list[str], cmd: str, timeout_s: float, info: dict[str, object]
) -> tuple[ProbeResult, dict[str, object]]:
    """The NCCL command run from the first node, with every rail's counters, the switch CPU
    and the switch ports read around it; its answer and the measurement's `extra`."""
    rails = [r for n in nodes for r in sw.rails.get(n, ()) if r.up and r.addresses]
    before = await counters_of(sw, rails)
    sw._emit(ProbeSent(step=sw.step, target=nodes[0], command=cmd))
    t0 = time.monotonic()
    got: list[ProbeResult] = []

    async def launch_run() -> Measurement:
        got.append(await sw.ssh.run(nodes[0], cmd, timeout=timeout_s))
        return Measurement(kind="nccl", target="cluster", value=0.0, unit="GB/s")

    # the switch CPU sampled and the switch ports read around the run, like ib_write_bw
    [around] = await with_switch_cpu(sw, [launch_run()], delay=0.0)
    res = got[0]
    after = await counters_of(sw, rails)
    sw._emit(ProbeAnswered(step=sw.step, probe="nccl", result=res))
    extra: dict[str, object] = {
        **info,
        "command": cmd,
        **ncclrun.versions_in(res.stdout),
        "raw": res.stdout,
        "seconds": time.monotonic() - t0,
        # per rail, the RDMA/PHY counter deltas around the run (None: not read)
        "rail_counters": {
            r.key: deltas(b, a) if a is not None and b is not None else None
            for r in rails
            for b, a in [(before.get(r.key), after.get(r.key))]
        },
        **{k: around.extra[k] for k in ("switch_cpu", "switch_ports") if k in around.extra},
    }
    return res, extra


def _busbw(res: ProbeResult, op: str, extra: dict[str, object]) -> tuple[float, str]:
    """(GB/s, reason) of one NCCL run; its transport and devices go into `extra`."""
    from wizard.parsers.nccl import parse_nccl

    value = 0.0
    reason = res.error or ""
    try:
        parsed = parse_nccl(res.stdout)
        value = parsed.avg_busbw or 0.0
        extra.update(transport=parsed.transport, devices=[d.name for d in parsed.net_ib_devices])
        reason = reason or (parsed.error or "")
    except ParseError as exc:
        reason = reason or f"unreadable {op} output: {exc}"
    return value, reason
