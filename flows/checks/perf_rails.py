"""Rail bandwidth (`--perf`): what single-QP `ib_write_bw` says about each rail.

One half of a GB10 carries ~109 Gb/s through a switch (>= 80 Gb/s is NVIDIA's gate). The number's
signature points at the cause (FAULTS.md): ~9.5-10 Gb/s on a path whose bridge is not offloaded
is the switch CPU forwarding (`switch.offload-*`, named by the switch's config); ~4.5 Gb/s across
switches is the RSTP detour (`switch.rstp-isl-blocked`); a connection that moves no data is
lossless QoS (`switch.qos-pfc-stall`) or a duplicate address (`host.duplicate-ip`); 8-25 Gb/s on
a clean 200G link is the CX7 state: `host.cx7-throttled` when the firmware is old, else
`host.cx7-degraded` (cleared only by an AC drain). A rail whose number another fault caps (a
CPU-forwarding switch, a stall, a narrow PCIe link) shows nothing of its CX7s' own rate: for them
it is `unknown`, "masked by" that fault, until it is fixed and the rail measured again, never a
pass.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from flows import plans
from flows.base import Check, Context, Observations, PastedRule
from flows.checks import (
    host_addressing,
    host_pcie,
    rail_matrix,
    switch_mtu,
    switch_offload,
    switch_qos,
    switch_rstp,
    traffic_counters,
)
from flows.checks._common import Finding, across_switches, listing, undrained
from wizard.errors import ParseError
from wizard.model import Evidence, FixPlan, Measurement, Status, Verdict
from wizard.parsers.perftest import parse_perftest

FAULTS = (
    "host.cx7-degraded",
    "host.cx7-throttled",
    "switch.offload-split-cage",
    "switch.offload-second-bridge",
    "switch.offload-disabled",
    "switch.offload-lost",
    "switch.rstp-isl-blocked",
    "switch.qos-pfc-stall",
    "host.duplicate-ip",
    "switch.mtu",
    "host.mtu",
    "host.pcie-width",
)

CX7 = ("host.cx7-degraded", "host.cx7-throttled")
MASKED = "masked by "  # how a masked rail's CX7 evidence begins its `expected`


@dataclass(frozen=True, slots=True)
class RailRuns:
    runs: tuple[Measurement, ...]
    offload_faults: tuple[str, ...]  # failing switch.offload-* ids from the config
    rstp_blocked: bool
    lossless: bool
    duplicate_nodes: frozenset[str]
    old_firmware: frozenset[str]
    stall_causes: dict[str, frozenset[str]]  # failing config fault -> nodes/targets it names
    narrow_pcie: frozenset[str]
    nccl_busbw: float | None = None  # the same run's NCCL busbw (GB/s), None: not run or unread


def _failing(verdicts: list[Verdict]) -> list[Verdict]:
    return [v for v in verdicts if v.status in (Status.FAIL, Status.WARN)]


def parse(obs: Observations, ctx: Context) -> RailRuns:
    # results on a rail that bounced without an AC drain are not evidence (process_drain says so)
    runs = tuple(
        m
        for m in obs.measurements
        if m.kind == "rail"
        and not undrained(
            obs, str(m.extra.get("client", "")), str(m.extra.get("client_netdev", ""))
        )
        and not undrained(
            obs, str(m.extra.get("server", "")), str(m.extra.get("server_netdev", ""))
        )
    )
    off = [v.fault for v in _failing(switch_offload.judge(switch_offload.parse(obs, ctx), ctx))]
    rstp = switch_rstp.isl_blocked(obs, ctx)
    qos = bool(_failing(switch_qos.judge(switch_qos.parse(obs, ctx), ctx)))
    dup: set[str] = set()
    for v in _failing(host_addressing.judge(host_addressing.parse(obs, ctx), ctx)):
        if v.fault == "host.duplicate-ip":
            dup.update(v.targets)
    pcie = host_pcie.parse(obs, ctx)
    old = host_pcie.old_firmware_nodes(pcie, ctx)
    narrow = {
        v.targets for v in _failing(host_pcie.judge(pcie, ctx)) if v.fault == "host.pcie-width"
    }
    causes: dict[str, frozenset[str]] = {}
    # host PFC on a lossy fabric is hygiene, never the cause of a stall
    for check in (switch_mtu, host_addressing):
        for v in _failing(check.judge(check.parse(obs, ctx), ctx)):
            if v.fault in ("switch.mtu", "host.mtu"):
                causes[v.fault] = frozenset(t.split("/")[0] for t in v.targets)
    return RailRuns(
        runs,
        tuple(off),
        rstp,
        qos,
        frozenset(dup),
        frozenset(old),
        causes,
        frozenset(t for ts in narrow for t in ts),
        _nccl_busbw(obs),
    )


Band = list[tuple[Measurement, Evidence, "traffic_counters.Signature | None"]]


def _rail_evidence(m: Measurement, ctx: Context) -> Evidence:
    e = ctx.expectations
    return Evidence(
        m.target,
        str(m.extra.get("command", "ib_write_bw")),
        f"{m.value:.2f} Gb/s" + (f" ({m.reason})" if m.reason else ""),
        f">= {e.rail_pass_gate_gbps:g} Gb/s ("
        + (
            f"~{e.isl_shared_flow_gbps:g} with two flows on one ISL direction)"
            if m.extra.get("isl_shared")
            else f"~{e.rail_switched_gbps:g} through a switch)"
        ),
        raw=str(m.extra.get("raw", "")) or None,
    )


def _stall_cause(
    m: Measurement,
    r: RailRuns,
    ev: Evidence,
    sig: traffic_counters.Signature | None,
    f: dict[str, Finding],
) -> bool:
    """A rail that connects but moves no data: what the config or the counters say stalls it.
    False when nothing does (the rate is then judged like any low one)."""
    client, server = str(m.extra.get("client", "")), str(m.extra.get("server", ""))
    dup_pair = client in r.duplicate_nodes or server in r.duplicate_nodes
    # lossless QoS and ARP flux stall a test alike (frames vanish, the ACKs time out): with
    # both configured the traffic cannot tell which, and each is named
    configured = [
        k for k, on in (("switch.qos-pfc-stall", r.lossless), ("host.duplicate-ip", dup_pair)) if on
    ]
    if configured:
        for k in configured:
            f[k].fail(ev, target=m.target)
    elif r.stall_causes:
        for k in r.stall_causes:
            f[k].fail(ev, target=m.target)
    elif sig is not None and sig.vanished:
        # the stall signature with neither cause found in the config: either may hide there
        f["switch.qos-pfc-stall"].fail(ev, target=m.target, warn=True)
        f["host.duplicate-ip"].fail(ev, target=m.target, warn=True)
    elif sig is not None and sig.stalled_with_timeouts:
        # a switch leg counted the frames, the receiver did not: the switch held them
        f["switch.qos-pfc-stall"].fail(ev, target=m.target, warn=True)
    elif sig is None and m.extra.get("error_kind") == "retry-exceeded":
        # no counters read, but the test's own end: it connected and no ACK came back until
        # its retries ran out, a stall (never a forwarding rate, however low the number)
        f["switch.qos-pfc-stall"].fail(ev, target=m.target, warn=True)
        f["host.duplicate-ip"].fail(ev, target=m.target, warn=True)
    else:
        return False
    return True


def _soft_cause(
    m: Measurement, r: RailRuns, ctx: Context, ev: Evidence, f: dict[str, Finding]
) -> bool:
    """A switched rail at the software-forwarding rate: the offload fault the config shows, else
    the switch CPU's word. False when the CPU was read and idle."""
    max_cpu = ctx.expectations.switch_cpu_idle_max_pct
    cpu = _cpu(m)
    if r.offload_faults:
        for k in r.offload_faults:
            f[k].fail(ev, target=m.target)
    elif cpu is not None and cpu > max_cpu:
        # the switch CPU worked while the rail crawled: software forwarding, cause unknown
        f["switch.offload-lost"].fail(_with_cpu(ev, cpu, max_cpu))
    elif cpu is None:
        # the software-forwarding signature with nothing to clear the switch: look there
        # first (CPU, H flags), never straight at the nodes
        f["switch.offload-lost"].fail(_with_cpu(ev, None, max_cpu), target=m.target, warn=True)
    else:
        return False
    return True


def _judge_low(
    m: Measurement,
    r: RailRuns,
    ctx: Context,
    ev: Evidence,
    sig: traffic_counters.Signature | None,
    f: dict[str, Finding],
) -> bool:
    """A rail below the gate, by its signature. False: it is in the CX7 band with no old
    firmware, and which end is degraded is read off the whole matrix later."""
    e = ctx.expectations
    lo, hi = e.degraded_band_gbps
    client, server = str(m.extra.get("client", "")), str(m.extra.get("server", ""))
    # below the gate a -b number is judged per direction: both directions of one rail share
    # what caps it (a switch CPU's forwarding, the CX7 state), the bands are one-way rates
    rate = m.value / 2 if m.extra.get("bidir") else m.value
    if rate < e.stall_max_gbps and _stall_cause(m, r, ev, sig, f):
        return True
    if r.rstp_blocked and rate <= e.rstp_detour_max_gbps and across_switches(m, ctx):
        # across switches while RSTP blocks the ISL: the detour through the uplinks, whose
        # number does not move with the QP count either (not the switch CPU's forwarding)
        f["switch.rstp-isl-blocked"].fail(ev, target=m.target)
        return True
    if (
        _switched(m, ctx)
        and rate <= e.software_forwarding_max_gbps
        and _soft_cause(m, r, ctx, ev, f)
    ):
        return True
    if rate <= e.rstp_detour_max_gbps and r.rstp_blocked:
        f["switch.rstp-isl-blocked"].fail(ev, target=m.target)
    elif client in r.narrow_pcie or server in r.narrow_pcie:
        f["host.pcie-width"].fail(ev, target=m.target)
    elif lo <= rate <= hi:
        nodes = [n for n in (client, server) if n in r.old_firmware]
        if not nodes:
            return False
        f["host.cx7-throttled"].fail(ev, target=nodes[0])
    else:
        f["host.cx7-degraded"].unknown.append(
            Evidence(ev.target, ev.command, ev.observed, ev.expected, Status.UNKNOWN, ev.raw)
        )
    return True


def _supporting(
    m: Measurement,
    sig: traffic_counters.Signature | None,
    ctx: Context,
    f: dict[str, Finding],
    before: dict[str, int],
) -> None:
    """The QP count and the counters of a run, beside each finding it just added."""
    qp = rail_matrix.qp_evidence(m)
    if qp is not None:
        for k in FAULTS:
            if len(f[k].bad) > before[k]:
                f[k].bad.append(replace(qp, status=f[k].bad[-1].status))
    if sig is not None:
        for k in FAULTS:
            if len(f[k].bad) > before[k]:
                status = f[k].bad[-1].status  # as severe as the finding it supports
                f[k].bad.append(traffic_counters.evidence(m, sig, ctx, status))


def _judge_passing(
    m: Measurement,
    ev: Evidence,
    sig: traffic_counters.Signature | None,
    ctx: Context,
    f: dict[str, Finding],
) -> bool:
    """A run that is no evidence, or that passes: recorded as such. False for a low run."""
    e = ctx.expectations
    if sig is not None and sig.link_downs:
        # the link bounced while it ran: the number says nothing about the rail
        f["host.cx7-degraded"].unknown.append(
            traffic_counters.evidence(m, sig, ctx, Status.UNKNOWN)
        )
    elif m.extra.get("bidir") and m.value >= e.rail_pass_gate_gbps and not m.reason:
        # -b: both directions of one rail at once, ~206 Gb/s aggregate (seed 000)
        bi = Evidence(
            m.target,
            ev.command,
            f"{m.value:.2f} Gb/s both directions",
            f"~{e.bidir_rail_gbps:g} Gb/s aggregate (-b)",
            raw=ev.raw,
        )
        if e.band(m.value, e.bidir_rail_gbps) == "pass":
            f["host.cx7-degraded"].ok(bi)
        else:
            f["host.cx7-degraded"].unknown.append(replace(bi, status=Status.UNKNOWN))
    elif m.value >= e.rail_pass_gate_gbps and not m.reason:
        for k in FAULTS:
            f[k].ok(ev)
            if sig is not None and sig.seq_err:
                f[k].ok(traffic_counters.evidence(m, sig, ctx, Status.PASS))
    else:
        return False
    return True


def _judge_run(
    m: Measurement, r: RailRuns, ctx: Context, f: dict[str, Finding], band: Band
) -> None:
    ev = _rail_evidence(m, ctx)
    if not m.valid:
        # no number was taken (no GID for the address, a lost session, not yet drained):
        # nothing is known of that pair
        f["host.cx7-degraded"].unknown.append(
            Evidence(
                ev.target, ev.command, m.reason or ev.observed, ev.expected, Status.UNKNOWN, ev.raw
            )
        )
        return
    sig = traffic_counters.signature(m, ctx)
    if _judge_passing(m, ev, sig, ctx, f):
        return
    before = {k: len(f[k].bad) for k in FAULTS}
    if not _judge_low(m, r, ctx, ev, sig, f):
        band.append((m, ev, sig))
        return
    _supporting(m, sig, ctx, f, before)
    _masked(ev, [k for k in FAULTS if k not in CX7 and len(f[k].bad) > before[k]], f)


def _masked(ev: Evidence, causes: list[str], f: dict[str, Finding]) -> None:
    """A rail that `causes` cap says nothing of its CX7s' own rate: unknown for them (not a
    pass) until the cause is fixed and the rail measured again."""
    if not causes:
        return
    for k in CX7:
        f[k].unknown.append(
            Evidence(
                ev.target,
                ev.command,
                ev.observed,
                f"{MASKED}{listing(causes, 3)}: the CX7s' own rate shows once it is fixed",
                Status.UNKNOWN,
                ev.raw,
            )
        )


def judge(r: RailRuns, ctx: Context) -> list[Verdict]:
    f = {k: Finding(k) for k in FAULTS}
    band: Band = []
    for m in r.runs:
        _judge_run(m, r, ctx, f, band)
    return _verdicts(r, f, band, ctx)


def _verdicts(r: RailRuns, f: dict[str, Finding], band: Band, ctx: Context) -> list[Verdict]:
    e = ctx.expectations
    lo, hi = e.degraded_band_gbps
    degraded = rail_matrix.read_matrix(f["host.cx7-degraded"], band, r.runs, ctx)
    summaries = {
        "host.cx7-degraded": degraded,
        "host.cx7-throttled": "RDMA in the 8-25 Gb/s band with old CX7 firmware: the firmware "
        "power throttle",
        "switch.offload-split-cage": "~10 Gb/s through the switch: the CPU forwards (split cage)",
        "switch.offload-second-bridge": "~10 Gb/s through the switch: the CPU forwards "
        "(second bridge)",
        "switch.offload-disabled": "~10 Gb/s through the switch: the CPU forwards (hw=no)",
        "switch.offload-lost": "~10 Gb/s through the switch, the switch software-forwarding "
        "signature (look at the switch CPU and H flags before the nodes)",
        "switch.rstp-isl-blocked": "~4.5 Gb/s across switches: the ISL is blocked, traffic detours",
        "switch.qos-pfc-stall": "RDMA connects but moves no data: lossless QoS stalls",
        "host.duplicate-ip": "RDMA connects but moves no data: duplicate addresses",
        "switch.mtu": "RDMA connects but moves no data: jumbo frames dropped by a switch port",
        "host.mtu": "RDMA stalls: a fabric netdev below MTU 9000",
        "host.pcie-width": "rail bandwidth capped by a narrow PCIe link",
    }
    notes = {
        k: rail_matrix.corroborate(f[k], r.nccl_busbw, ctx)
        for k in ("host.cx7-degraded", "host.cx7-throttled")
        if any("->" not in t for t in f[k].targets)  # a node verdict, not a switch path
    }
    others = [
        k for k in FAULTS if f[k].bad and k not in ("host.cx7-degraded", "host.cx7-throttled")
    ]
    ok = f"no rail in the {lo:g}-{hi:g} Gb/s band of a degraded or throttled CX7"
    if band and others:  # the band's other numbers: another fault's, the CX7s are masked
        for _m, ev, _sig in band:
            _masked(ev, others, f)
    out = []
    for k in FAULTS:
        if (
            not f[k].bad
            and not f[k].unknown
            and k not in ("host.cx7-degraded", "host.cx7-throttled")
        ):
            continue  # config-side checks own the pass verdicts of these ids
        out.append(
            f[k].verdict(
                ok=ok if r.runs else "no rail measurement",
                bad=f"{summaries[k]}: {listing(f[k].targets, 4)}{notes.get(k, '')}",
                unknown=_unknown_summary(f[k]),
            )
        )
    return out


def _unknown_summary(f: Finding) -> str:
    """Why a rail fault could not be judged: rails another fault masks, rails outside every
    signature (or not measured)."""
    masked = [e for e in f.unknown if e.expected.startswith(MASKED)]
    other = [e for e in f.unknown if not e.expected.startswith(MASKED)]
    said = []
    if masked:
        causes = sorted({e.expected[len(MASKED) :].split(":", 1)[0] for e in masked})
        said.append(
            f"the CX7s' own rate on {len(masked)} rail test(s) is masked by {', '.join(causes)}: "
            "judged once that is fixed and the rails measured again"
        )
    if other:
        said.append(
            "rail bandwidth outside every known signature: " + listing(e.target for e in other)
        )
    return "; ".join(said)


def _nccl_busbw(obs: Observations) -> float | None:
    from wizard.errors import ParseError
    from wizard.parsers.nccl import parse_nccl

    run = next((m for m in obs.measurements if m.kind == "nccl" and m.valid), None)
    if run is None:
        return None
    try:
        return parse_nccl(str(run.extra.get("raw", ""))).avg_busbw
    except ParseError:
        return run.value or None


def _switched(m: Measurement, ctx: Context) -> bool:
    """Whether the rail test crossed a switch (its client rail is cabled to one)."""
    key = f"{m.extra.get('client', '')}/{m.extra.get('client_netdev', '')}"
    if key in ctx.cabling:
        return True
    node = str(m.extra.get("client", ""))
    return any(
        r.switch for r in ctx.rails.get(node, ()) if r.netdev == m.extra.get("client_netdev")
    ) or (bool(ctx.switches) and not ctx.cabling)


def _cpu(m: Measurement) -> float | None:
    """The highest switch cpu-load sampled during this test (None: not sampled)."""
    loads = [float(v) for v in dict(m.extra.get("switch_cpu") or {}).values()]
    return max(loads) if loads else None


def _with_cpu(ev: Evidence, cpu: float | None, max_pct: float) -> Evidence:
    seen = "switch CPU not sampled" if cpu is None else f"switch cpu-load {cpu:g} % during it"
    return Evidence(
        ev.target,
        ev.command,
        f"{ev.observed}; {seen}",
        f"{ev.expected}; switch cpu-load <= {max_pct:g} % during a transfer",
        ev.status,
        ev.raw,
    )


def fix(r: RailRuns, verdict: Verdict, ctx: Context) -> FixPlan | None:
    if verdict.fault in ("host.cx7-degraded", "host.cx7-throttled"):
        # a low pair named by its rails (both ends at line rate elsewhere) is a switch-path
        # cause: nothing on a node to drain or update
        nodes = sorted(
            {n.strip() for t in verdict.targets if "->" not in t for n in t.split(",") if n.strip()}
        )
        if not nodes:
            return None
        v = Verdict(verdict.fault, verdict.status, verdict.summary, tuple(nodes))
        return plans.firmware_plan(v, ctx, ctx.known_good_firmware)
    return None


def _pasted(fault: str, status: Status, summary: str, *targets: str) -> Verdict:
    return Verdict(fault, status, summary, tuple(t for t in targets if t), check=CHECK.id)


def judge_pasted(text: str, ctx: Context) -> list[Verdict]:
    """A pasted ib_write_bw (perftest) output: its bandwidth band or its error, with the faults
    a single run cannot tell apart (it does not show the switch's config)."""
    try:
        r = parse_perftest(text)
    except ParseError:
        return []
    exp = ctx.expectations
    out: list[Verdict] = []
    dev = r.device or ""
    if r.error_kind == "retry-exceeded":
        why = (
            f"{r.test} ended in transport retry exceeded (status 12): the RoCE connection "
            "formed but data never arrived"
        )
        out.append(
            _pasted(
                "switch.qos-pfc-stall",
                Status.FAIL,
                f"{why}: lossless QoS/PFC stalling the offloaded path, or host.duplicate-ip "
                "(frames vanish to a duplicated address)",
                dev,
            )
        )
        out.append(
            _pasted(
                "host.duplicate-ip",
                Status.FAIL,
                f"{why}: a duplicated fabric IPv4 (ARP flux), or switch.qos-pfc-stall",
                dev,
            )
        )
        return out
    bw = r.bw_avg_gbps
    if bw is None or r.latency or not r.rows:
        return out
    lo, hi = exp.degraded_band_gbps
    if 9.0 <= bw <= exp.software_forwarding_max_gbps:
        out.append(
            _pasted(
                "switch.offload-split-cage",
                Status.FAIL,
                f"{bw:.2f} Gb/s is the ~9.5-10 Gb/s software-forwarding signature: the "
                "switch CPU forwards the fabric bridge (switch.offload-split-cage, "
                "switch.offload-second-bridge or switch.offload-disabled); on a direct "
                "cable it would be host.cx7-degraded instead",
                dev,
            )
        )
    elif lo <= bw <= hi:
        out.append(
            _pasted(
                "host.cx7-degraded",
                Status.FAIL,
                f"{bw:.2f} Gb/s is in the {lo:g}-{hi:g} Gb/s stale-initialisation band of "
                "a CX7 on a 200G link: host.cx7-degraded (AC drain clears it) or "
                "host.cx7-throttled (firmware power throttle)",
                dev,
            )
        )
    elif bw < lo and bw <= exp.rstp_detour_max_gbps:
        out.append(
            _pasted(
                "switch.rstp-isl-blocked",
                Status.WARN,
                f"{bw:.2f} Gb/s single flow: an RSTP detour through the campus network "
                "(switch.rstp-isl-blocked), or software forwarding plus stalls "
                "(switch.offload-split-cage)",
                dev,
            )
        )
    return out


CHECK = Check(
    id="host.cx7-degraded",
    title="Rail bandwidth (ib_write_bw, single QP)",
    description=__doc__ or "",
    faults=FAULTS,
    step="direct_connect",
    # what explains a low or stalled rail is read just before the tests run (the offload, RSTP,
    # QoS, the addresses, the PCIe link and firmware, the switch MTU)
    probes=tuple(
        dict.fromkeys(
            p
            for check in (
                switch_offload,
                switch_rstp,
                switch_qos,
                host_addressing,
                host_pcie,
                switch_mtu,
            )
            for p in check.CHECK.probes
        )
    ),
    parse=parse,
    judge=judge,
    fix=fix,
    needs_traffic=True,
    pasted=(PastedRule(("perftest",), judge_pasted),),
)
