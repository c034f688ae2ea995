"""NCCL ground truth (`--perf`): one `all_reduce_perf` across the cluster with NCCL_DEBUG=INFO.

The log says which transport NCCL chose (`Using network IB` vs `Socket`: `nccl.socket-fallback`,
~2-3 GB/s), which RDMA devices it uses (fewer than are up: one PCIe half idle, from
`nccl.hca-filter` or `host.half-unused`), and whether GPU Direct RDMA is on ("GPU Direct RDMA
Disabled" is normal on GB10 unified memory: `benign.gdr-disabled`). The transport is read from
the per-channel connection lines (`via NET/IB/N`, `via NET/Socket/N`, `via P2P/...`): a
single-host run whose network plugin is Socket but whose channels are P2P is no socket
fallback. The ground truth can fail: busbw is judged in bands against `nccl_expected` /
`nccl_gate` (~0.5 GB/s: a software-forwarded path; ~2-3 GB/s: sockets; ~half: one PCIe half
idle) and reported under the fault that explains it, or as `nccl.busbw-low` when none does.
The run is bracketed like every ib_write_bw (`nccl_traffic`): rails whose counters did not move
took no part (`nccl.hca-filter`), and a switch CPU busy during a slow or cut-short run is
software forwarding (`switch.offload-lost`); every busbw verdict cites those rows.
Good: IB over every active device, busbw near 23-26 GB/s. A pasted log is judged on its
signatures alone: the transport, an HCA filter matching nothing or half A only, the socket band.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from flows.base import Check, Context, Observations, PastedRule
from flows.checks import (
    host_links,
    nccl_config,
    nccl_traffic,
    switch_offload,
    switch_qos,
    switch_rstp,
)
from flows.checks._common import Finding
from wizard.errors import ParseError
from wizard.model import Evidence, Measurement, Status, Verdict
from wizard.parsers.nccl import NcclResult, parse_nccl

FAULTS = (
    "nccl.socket-fallback",
    "nccl.hca-filter",
    "host.half-unused",
    "nccl.busbw-low",
    "benign.gdr-disabled",
)
# faults whose failing verdict explains a low busbw (the per-rail tests and config say where)
# Host faults that leave NCCL fewer rails: they explain a low busbw and idle rails alike.
RAIL_LEVEL = ("host.rail-down", "host.half-unused")

EXPLAINERS = (
    "switch.offload-split-cage",
    "switch.offload-second-bridge",
    "switch.offload-disabled",
    "switch.offload-lost",
    "switch.qos-pfc-stall",
    "switch.mtu",
    "switch.rstp-isl-blocked",
    "host.duplicate-ip",
    "host.mtu",
    "host.cx7-degraded",
    "host.cx7-throttled",
    "host.pcie-width",
)


@dataclass(frozen=True, slots=True)
class NcclRun:
    run: Measurement | None
    parsed: NcclResult | None
    error: str | None
    active: int  # RDMA devices up with an address, cluster-wide maximum per node
    hca_config_bad: bool
    half_config_bad: bool
    socket_config_bad: bool
    explained: tuple[str, ...] = ()  # failing faults elsewhere that explain a low busbw
    switch_read: bool = True  # the switch side was read with this run (else: not ruled out)
    traffic: nccl_traffic.RunTraffic | None = None  # counters and switch CPU around the run


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
    links = host_links.judge(host_links.parse(obs, ctx), ctx)
    half = _failing(links, "host.half-unused")
    explained = _explainers(obs, ctx) if run is not None else ()
    # rails down or a half unconfigured: NCCL has fewer devices to use, and the rails it
    # cannot pair up idle for that reason (not a filter)
    explained += tuple(f for f in RAIL_LEVEL if run is not None and _failing(links, f))
    switch_read = all(
        obs.switch(sw, "bridge_port") is not None or sw in obs.unreachable for sw in ctx.switches
    )
    traffic = nccl_traffic.read(run, ctx) if run is not None else None
    return NcclRun(
        run, parsed, error, active, hca, half, sock_config, explained, switch_read, traffic
    )


def _explainers(obs: Observations, ctx: Context) -> tuple[str, ...]:
    """Failing verdicts of the config and rail checks that explain a low busbw."""
    from flows.checks import perf_rails

    out: list[str] = []
    for check in (switch_offload, switch_qos, switch_rstp):
        verdicts = check.judge(check.parse(obs, ctx), ctx)
        out += [v.fault for v in verdicts if v.status in (Status.FAIL, Status.WARN)]
    rails = perf_rails.judge(perf_rails.parse(obs, ctx), ctx)
    out += [v.fault for v in rails if v.status in (Status.FAIL, Status.WARN)]
    return tuple(f for f in dict.fromkeys(out) if f in EXPLAINERS)


def channel_transport(p: NcclResult) -> str | None:
    """The transport the channels used (`via NET/IB/N`, `NET/Socket/N`, `P2P/...`); the
    `Using network` line only when no channel line was logged."""
    nets = {v.split("/")[1] for v in p.channel_nets if v.startswith("NET/")}
    if "Socket" in nets:
        return "Socket"
    if nets:
        return "IB"
    if p.channel_nets:
        return "P2P"  # every channel stays inside the node (NVLink, shared memory)
    return p.transport


def busbw_band(busbw: float, ctx: Context) -> str:
    """Which band of FAULTS.md a busbw (GB/s) sits in."""
    e = ctx.expectations
    expected = e.nccl_expected(len(ctx.nodes))
    lo, hi = e.nccl_socket_band
    if busbw >= e.nccl_gate(len(ctx.nodes), len(ctx.switches)):
        return "healthy"
    if busbw <= e.software_forwarding_max_gbps / 8:
        return "software"  # ~0.5 GB/s: the switch CPU forwards (seed 000: 0.46)
    if lo <= busbw <= hi:
        return "socket"
    if 0.35 * expected <= busbw <= 0.65 * expected:
        return "half"
    return "low"


BAND_TEXT = {
    "software": "~0.5 GB/s, the software-forwarding band: look at the switch offload (CPU, H "
    "flags) and the rail tests",
    "socket": "~2-3 GB/s, the TCP-socket band, although the channels run over IB",
    "half": "about half the expected busbw: one PCIe half idle or one rail slow",
    "low": "below the gate",
}


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
        f"transport {channel_transport(p) or '?'}"
        + (f" (channels: {', '.join(p.channel_nets[:4])})" if p.channel_nets else "")
        + f", {bw}",
        f"IB, ~{expected_bw:g} GB/s",
        raw=raw,
    )
    transport = channel_transport(p)
    if transport == "Socket" and (n.socket_config_bad or n.active > 0):
        # with no usable RDMA rail at all NCCL falls back by necessity: the link checks say why
        sock.fail(ev, target="cluster")
    elif transport is not None:
        sock.ok(ev)
    devices = len(p.net_ib_devices) or (p.net_ib_device_count or 0)
    used = ", ".join(d.name for d in p.net_ib_devices)
    fewest = min(p.net_ib_devices_per_host, key=lambda hc: hc[1], default=None)
    if fewest is not None and 0 < fewest[1] < devices:  # one rank sees fewer: it sets the pace
        devices, used = fewest[1], f"{fewest[1]} on {fewest[0]}, {used} elsewhere"
    if transport == "IB" and n.active and devices and devices < n.active:
        dev_ev = Evidence(
            "cluster",
            cmd,
            f"NCCL uses {devices} device(s): {used}",
            f"{n.active} active RDMA devices per node",
            raw=raw,
        )
        if n.half_config_bad and not n.hca_config_bad:
            half.fail(dev_ev, target="cluster")
        else:
            hca.fail(dev_ev, target="cluster")
    t = n.traffic
    rail_level = any(f in RAIL_LEVEL for f in n.explained)
    if (
        transport == "IB"
        and t is not None
        and t.idle
        and ctx.nccl_devices != "one"
        and not rail_level
    ):
        # the counters say which rails NCCL left idle, whatever its log claims
        idle_rows = [r for r in nccl_traffic.evidence(t, ctx, cmd) if r.target in t.idle]
        into = half if n.half_config_bad and not n.hca_config_bad else hca
        if not (hca.bad or half.bad):
            into.fail(idle_rows[0], target="cluster")
            idle_rows = idle_rows[1:]
        (hca if hca.bad else half).bad.extend(idle_rows)
    out = [
        sock.verdict(
            ok=f"NCCL runs over {transport or 'IB'} verbs"
            if transport != "P2P"
            else "NCCL stays inside the node (P2P/SHM channels): no network transport used",
            bad="NCCL runs over TCP sockets (~2-3 GB/s)",
        ),
    ]
    out += _judge_busbw(n, p, ev, transport, ctx, hca_or_half=bool(hca.bad or half.bad))
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


def _judge_busbw(
    n: NcclRun,
    p: NcclResult,
    ev: Evidence,
    transport: str | None,
    ctx: Context,
    *,
    hca_or_half: bool,
) -> list[Verdict]:
    """The ground truth judged: busbw against the gate, a low one under what explains it."""
    e = ctx.expectations
    if p.avg_busbw is None:
        return _no_busbw(n, ev, ctx)
    gate = e.nccl_gate(len(ctx.nodes), len(ctx.switches))
    expected = e.nccl_expected(len(ctx.nodes))
    band = busbw_band(p.avg_busbw, ctx)
    row = Evidence(
        "cluster",
        ev.command,
        f"busbw {p.avg_busbw:g} GB/s over {transport or '?'}: {band}",
        f">= {gate:g} GB/s (~{expected:g} for {len(ctx.nodes)} nodes)",
        raw=ev.raw,
    )
    low = Finding("nccl.busbw-low")
    t = n.traffic
    proof = nccl_traffic.evidence(t, ctx, ev.command) if t is not None else []
    if band == "healthy":
        low.ok(row)
        low.good.extend(proof)  # the ground truth passed; the rows say what carried it
        return [low.verdict(ok=f"NCCL busbw {p.avg_busbw:g} GB/s, at or above the gate", bad="")]
    if transport == "Socket" or (band == "half" and hca_or_half):
        return []  # the socket / HCA verdicts above carry it
    explained = n.explained
    busy = nccl_traffic.cpu_busy(t, ctx) if t is not None else None
    if busy is not None and not any(f.startswith("switch.offload-") for f in explained):
        # the switch CPU forwarded while NCCL crawled: software forwarding, cause unknown
        explained = (*explained, "switch.offload-lost")
    if (
        t is not None
        and t.idle
        and transport == "IB"
        and not hca_or_half
        and ctx.nccl_devices != "one"
        and not any(f in RAIL_LEVEL for f in explained)
    ):
        explained = (*explained, "nccl.hca-filter")
    if explained:
        # reported under the faults that explain it (one verdict each; merged with theirs)
        return [
            Verdict(
                fault,
                Status.FAIL,
                f"NCCL busbw {p.avg_busbw:g} GB/s ({BAND_TEXT[band]}) agrees"
                + (
                    f"; {busy} cpu-load {t.cpu[busy]:g} % during the run"
                    if busy is not None and t is not None and fault == "switch.offload-lost"
                    else ""
                )
                + (
                    f"; rails idle during the run: {', '.join(t.idle)}"
                    if t is not None and t.idle and fault == "nccl.hca-filter"
                    else ""
                ),
                targets=("cluster",),
                evidence=(row, *proof),
            )
            for fault in explained
        ]
    low.fail(row, target="cluster")
    low.bad.extend(r for r in proof if r.status != Status.UNKNOWN)
    low.unknown.extend(r for r in proof if r.status == Status.UNKNOWN)
    nothing = (
        "and no other finding explains it"
        if n.switch_read
        else "and the switch side was not read with this run (see the offload and QoS steps)"
    )
    return [
        low.verdict(
            ok="",
            bad=f"NCCL busbw {p.avg_busbw:g} GB/s: {BAND_TEXT[band]}, {nothing}; the per-rail "
            "tests and counters of the same run say where to look",
        )
    ]


def _no_busbw(n: NcclRun, ev: Evidence, ctx: Context) -> list[Verdict]:
    """A run that ended without its average busbw (cut short by its time limit, killed): what
    the fabric did meanwhile still counts. A switch CPU that worked during it is software
    forwarding; otherwise the busbw is not known."""
    t = n.traffic
    if t is None or n.run is None:
        return []
    why = n.run.reason or "no '# Avg bus bandwidth' line"
    proof = nccl_traffic.evidence(t, ctx, ev.command)
    row = Evidence(
        "cluster", ev.command, f"no busbw: {why}", "an average busbw", Status.UNKNOWN, ev.raw
    )
    busy = nccl_traffic.cpu_busy(t, ctx)
    if n.explained:
        # the findings that explain a slow fabric explain a run that could not finish
        cpu = f"; {busy} cpu-load {t.cpu[busy]:g} % during the run" if busy is not None else ""
        return [
            Verdict(
                fault,
                Status.FAIL,
                f"NCCL ended without a busbw ({why}), as {fault} explains{cpu}",
                targets=("cluster",),
                evidence=(replace(row, status=Status.FAIL), *proof),
            )
            for fault in n.explained
        ]
    if busy is not None:
        return [
            Verdict(
                "switch.offload-lost",
                Status.FAIL,
                f"NCCL ended without a busbw ({why}) while {busy} cpu-load was "
                f"{t.cpu[busy]:g} % during the run: the switch CPU forwards the fabric",
                targets=("cluster",),
                evidence=(replace(row, status=Status.FAIL), *proof),
            )
        ]
    low = Finding("nccl.busbw-low")
    low.unknown.extend([row, *proof])
    return [low.verdict(ok="", bad="", unknown=f"NCCL ended without a busbw: {why}")]


def _pasted(fault: str, status: Status, summary: str, *targets: str) -> Verdict:
    return Verdict(fault, status, summary, tuple(t for t in targets if t), check=CHECK.id)


def judge_pasted(text: str, ctx: Context) -> list[Verdict]:
    """A pasted NCCL log or nccl-tests output: its signatures (transport, HCA filter, GDR)."""
    try:
        r = parse_nccl(text)
    except ParseError:
        return []
    exp = ctx.expectations
    out: list[Verdict] = []
    if r.transport == "Socket":
        extra = (
            f" (busbw {r.largest_size_busbw:.2f} GB/s at the largest size)"
            if r.largest_size_busbw is not None
            else ""
        )
        out.append(
            _pasted(
                "nccl.socket-fallback",
                Status.FAIL,
                "NCCL runs over TCP sockets (`Using network Socket` / `via NET/Socket`)"
                f"{extra}: remove NCCL_NET=Socket / NCCL_IB_DISABLE=1 and fix the HCA list",
            )
        )
    if r.ib_hca is not None and (r.ib_no_device or r.net_plugin_failed):
        out.append(
            _pasted(
                "nccl.hca-filter",
                Status.FAIL,
                f"NCCL_IB_HCA={r.ib_hca} matches no RDMA device (`NET/IB : No device "
                "found`): it is a case-sensitive prefix match; list the active devices, "
                "e.g. NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0",
                r.ib_hca,
            )
        )
    elif (
        r.ib_hca is not None
        and re.search(r"\brocep", r.ib_hca)
        and "roceP" not in r.ib_hca
        and not r.ib_hca.startswith("^")
    ):
        out.append(
            _pasted(
                "nccl.hca-filter",
                Status.WARN,
                f"NCCL_IB_HCA={r.ib_hca} only matches half-A devices (rocep...): the "
                "roceP2... half is never used, so a node tops out near 100 Gb/s",
                r.ib_hca,
            )
        )
    if r.transport != "Socket" and r.largest_size_busbw is not None:
        lo, hi = exp.nccl_socket_band
        if lo <= r.largest_size_busbw <= hi:
            out.append(
                _pasted(
                    "nccl.socket-fallback",
                    Status.WARN,
                    f"busbw {r.largest_size_busbw:.2f} GB/s is in the {lo:g}-{hi:g} GB/s "
                    "socket band although the log does not show the transport: NCCL over "
                    "sockets, or a degraded CX7 (host.cx7-degraded)",
                )
            )
    if r.gdr is False:
        out.append(
            _pasted(
                "benign.gdr-disabled",
                Status.BENIGN,
                "GPU Direct RDMA disabled / GDR 0: normal on GB10 unified memory, not a bottleneck",
            )
        )
    return out


CHECK = Check(
    id="nccl.socket-fallback",
    title="NCCL all_reduce_perf across the cluster",
    description=__doc__ or "",
    faults=FAULTS,
    step="halves",
    # what explains a low busbw is read in the same sweep (offload, QoS, RSTP)
    probes=tuple(
        dict.fromkeys(
            (*switch_offload.CHECK.probes, *switch_qos.CHECK.probes, *switch_rstp.CHECK.probes)
        )
    ),
    parse=parse,
    judge=judge,
    needs_traffic=True,
    pasted=(PastedRule(("nccl-tests",), judge_pasted),),
)
