"""NCCL ground truth (`--perf`): one `all_reduce_perf` across the cluster with NCCL_DEBUG=INFO.

The log says which transport NCCL chose (`Using network IB` vs `Socket`: `nccl.socket-fallback`,
~2-3 GB/s), which RDMA devices it uses (fewer than are up: one PCIe half idle, from
`nccl.hca-filter` or `host.half-unused`), and whether GPU Direct RDMA is on ("GPU Direct RDMA
Disabled" is normal on GB10 unified memory: `benign.gdr-disabled`). Good: IB over every active
device, busbw near 23-26 GB/s.
"""

from __future__ import annotations

from dataclasses import dataclass

from flows.base import Check, Context, Observations
from flows.checks import host_links, nccl_config
from flows.checks._common import Finding
from wizard.errors import ParseError
from wizard.model import Evidence, Measurement, Status, Verdict
from wizard.parsers.nccl import NcclResult, parse_nccl

FAULTS = ("nccl.socket-fallback", "nccl.hca-filter", "host.half-unused", "benign.gdr-disabled")


@dataclass(frozen=True, slots=True)
class NcclRun:
    run: Measurement | None
    parsed: NcclResult | None
    error: str | None
    active: int  # RDMA devices up with an address, cluster-wide maximum per node
    hca_config_bad: bool
    half_config_bad: bool
    socket_config_bad: bool


def _failing(verdicts: list[Verdict], fault: str) -> bool:
    return any(v.fault == fault and v.status in (Status.FAIL, Status.WARN) for v in verdicts)


def parse(obs: Observations, ctx: Context) -> NcclRun:
    run = next((m for m in obs.measurements if m.kind == "nccl"), None)
    parsed = None
    error = None
    if run is not None:
        try:
            parsed = parse_nccl(str(run.extra.get("raw", "")))
        except ParseError as exc:
            error = str(exc)
    # the node with the fewest usable rails bounds what NCCL can use
    active = min(
        (sum(1 for r in rails if r.up and r.addresses) for rails in ctx.rails.values()), default=0
    )
    config = nccl_config.judge(nccl_config.parse(obs, ctx), ctx)
    hca = _failing(config, "nccl.hca-filter")
    sock_config = _failing(config, "nccl.socket-fallback")
    half = _failing(host_links.judge(host_links.parse(obs, ctx), ctx), "host.half-unused")
    return NcclRun(run, parsed, error, active, hca, half, sock_config)


def judge(n: NcclRun, ctx: Context) -> list[Verdict]:
    if n.run is None:
        return []
    e = ctx.expectations
    cmd = str(n.run.extra.get("command", "all_reduce_perf"))
    raw = str(n.run.extra.get("raw", ""))
    sock = Finding("nccl.socket-fallback")
    hca = Finding("nccl.hca-filter")
    half = Finding("host.half-unused")
    expected_bw = e.nccl_expected(len(ctx.nodes))
    if n.parsed is None:
        sock.unknown.append(
            Evidence(
                "cluster",
                cmd,
                n.error or n.run.reason or "no output",
                "an nccl-tests table",
                Status.UNKNOWN,
                raw,
            )
        )
        return [sock.verdict(ok="", bad="", unknown="the NCCL run could not be read")]
    p = n.parsed
    bw = f"busbw {p.avg_busbw if p.avg_busbw is not None else '?'} GB/s"
    ev = Evidence(
        "cluster",
        cmd,
        f"transport {p.transport or '?'}, {bw}",
        f"IB, ~{expected_bw:g} GB/s",
        raw=raw,
    )
    if p.transport == "Socket" and (n.socket_config_bad or n.active > 0):
        # with no usable RDMA rail at all NCCL falls back by necessity: the link checks say why
        sock.fail(ev, target="cluster")
    elif p.transport is not None:
        sock.ok(ev)
    devices = len(p.net_ib_devices) or (p.net_ib_device_count or 0)
    if p.transport == "IB" and n.active and devices and devices < n.active:
        dev_ev = Evidence(
            "cluster",
            cmd,
            f"NCCL uses {devices} device(s): {', '.join(d.name for d in p.net_ib_devices)}",
            f"{n.active} active RDMA devices per node",
            raw=raw,
        )
        if n.half_config_bad and not n.hca_config_bad:
            half.fail(dev_ev, target="cluster")
        else:
            hca.fail(dev_ev, target="cluster")
    out = [
        sock.verdict(ok="NCCL runs over IB verbs", bad="NCCL runs over TCP sockets (~2-3 GB/s)"),
    ]
    if hca.bad:
        out.append(
            hca.verdict(ok="", bad="NCCL uses fewer RDMA devices than are up: one PCIe half idles")
        )
    if half.bad:
        out.append(
            half.verdict(ok="", bad="NCCL drives one PCIe half only: half B is not configured")
        )
    if p.gdr is False:
        out.append(
            Verdict(
                "benign.gdr-disabled",
                Status.BENIGN,
                "NCCL reports GPU Direct RDMA disabled: normal on GB10 unified memory, not a "
                "bottleneck",
                targets=("cluster",),
                evidence=(
                    Evidence(
                        "cluster",
                        cmd,
                        "GPU Direct RDMA Disabled",
                        "harmless on GB10",
                        Status.BENIGN,
                    ),
                ),
            )
        )
    return out


CHECK = Check(
    id="nccl.socket-fallback",
    title="NCCL all_reduce_perf across the cluster",
    description=__doc__ or "",
    faults=FAULTS,
    step="halves",
    probes=(),
    parse=parse,
    judge=judge,
    needs_traffic=True,
)
