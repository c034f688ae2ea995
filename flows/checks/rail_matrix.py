"""Reading the rail bandwidth matrix (`perf_rails`): which node of the low pairs is the culprit,
whether a several-QP re-run confirms a single-QP number, and whether NCCL agrees before a drain.
"""

from __future__ import annotations

from dataclasses import replace

from flows.base import Context
from flows.checks import traffic_counters
from flows.checks._common import Finding
from wizard import pairs
from wizard.model import Evidence, Measurement, Status


def read_matrix(
    f: Finding,
    band: list[tuple[Measurement, Evidence, traffic_counters.Signature | None]],
    runs: tuple[Measurement, ...],
    ctx: Context,
) -> str:
    """Judge the pairs in the degraded band on the whole matrix (wizard/pairs.py): the node
    common to the low pairs is the culprit, and only it; a low pair whose two ends reach line
    rate with other partners is the switch path; a pair nothing splits keeps both ends as
    suspects. Returns the verdict summary."""
    e = ctx.expectations
    good = [
        m
        for m in runs
        if m.valid
        and not m.reason
        and (m.value / 2 if m.extra.get("bidir") else m.value) >= e.rail_pass_gate_gbps
    ]
    reading = pairs.read([m for m, _, _ in band], good)
    by_target = {id(m): (ev, sig) for m, ev, sig in band}
    gate = f">= {e.rail_pass_gate_gbps:g} Gb/s"

    def support(m: Measurement, status: Status) -> None:
        qp = qp_evidence(m)
        if qp is not None:
            f.bad.append(replace(qp, status=status))
        sig = by_target[id(m)][1]
        if sig is not None:
            f.bad.append(traffic_counters.evidence(m, sig, ctx, status))

    for c in reading.culprits:
        for m in c.low:
            f.fail(by_target[id(m)][0], target=c.node)
            support(m, Status.FAIL)
        f.bad.append(
            Evidence(
                c.node,
                "ib_write_bw (every pair)",
                f"{c.node} is low with every partner ({pairs.pair_names(c.low)}), while its "
                f"partners reach line rate without it ("
                + ", ".join(
                    f"{name} {m.value:.2f} Gb/s"
                    for name, m in sorted({pairs.pair_names([m]): m for m in c.clear}.items())
                )
                + f"): {c.node} is the common node",
                f"every pair {gate}",
                Status.FAIL,
            )
        )
    for m in reading.unsplit:
        a, b = pairs.ends(m) or ("", "")
        # no other pair splits this one: both ends are suspects, each its own target
        f.fail(by_target[id(m)][0], target=a)
        if b not in f.targets:
            f.targets.append(b)
        support(m, Status.FAIL)
    for m in reading.path:
        a, b = pairs.ends(m) or ("", "")
        ev = by_target[id(m)][0]
        f.fail(
            Evidence(
                ev.target,
                ev.command,
                f"{ev.observed}; {a} and {b} each reach line rate with other partners: the "
                "low pair shares no node with a culprit, a switch-path cause (the switch "
                "ports, cables or ISL between them), not a CX7",
                ev.expected,
                raw=ev.raw,
            ),
            target=m.target,
            warn=True,
        )
        support(m, Status.WARN)
    lo, hi = e.degraded_band_gbps
    head = f"RDMA in the {lo:g}-{hi:g} Gb/s band on clean 200G links"
    if reading.nodes and reading.path:
        return (
            f"{head}: the CX7 low-throughput state (AC-drain the node) and, on pairs whose "
            "ends reach line rate elsewhere, the switch path"
        )
    if reading.path:
        return (
            f"{head} between nodes that each reach line rate with other partners: the low "
            "pairs share no node, a switch-path cause (switch ports, cables, ISL), no node "
            "to AC-drain"
        )
    if reading.culprits and not reading.unsplit:
        return f"{head}, every pair of one node low and its partners clear: the CX7 " + (
            "low-throughput state (AC-drain the node)"
        )
    return f"{head}: the CX7 low-throughput state (AC-drain the node)"


def qp_invariant(m: Measurement) -> bool | None:
    """Whether the re-run with several QPs landed within 15 % of the single-QP number (None:
    not re-run)."""
    again = m.extra.get("rerun_gbps")
    base = m.extra.get("rerun_single_gbps", m.value)
    if not isinstance(again, int | float) or not isinstance(base, int | float) or base <= 0:
        return None
    return abs(float(again) - float(base)) / float(base) < 0.15


def qp_evidence(m: Measurement) -> Evidence | None:
    same = qp_invariant(m)
    if same is None:
        return None
    qps = m.extra.get("rerun_qps", 8)
    again = float(m.extra.get("rerun_gbps") or 0.0)
    single = float(m.extra.get("rerun_single_gbps") or m.value)
    return Evidence(
        m.target,
        str(m.extra.get("rerun_command") or f"ib_write_bw -q {qps}"),
        f"re-run alone: {single:.2f} Gb/s with one QP, {again:.2f} Gb/s with -q {qps}"
        + (
            ": the number does not move with the QP count, a fixed structure in the path "
            "(seed 000: the switch forwarding in software)"
            if same
            else ": it moves with the QP count, not a fixed cap in the path"
        ),
        "a healthy rail: >= the pass gate with one QP",
    )


def corroborate(f: Finding, busbw: float | None, ctx: Context) -> str:
    """Before an AC drain or a firmware update on a perftest number alone: does NCCL agree?
    perftest has a GB10 false-negative mode (linux-rdma/perftest#394). Returns a note for the
    summary; a healthy NCCL turns the finding into a warning."""
    e = ctx.expectations
    gate = e.nccl_gate(len(ctx.nodes), len(ctx.switches))
    if busbw is None:
        f.unknown.append(
            Evidence(
                "cluster",
                "all_reduce_perf",
                "NCCL not run: perftest alone is not enough for a host verdict",
                f"NCCL busbw below {gate:g} GB/s agreeing (perftest#394 false negatives)",
                Status.UNKNOWN,
            )
        )
        return "; NCCL has not corroborated it yet"
    agrees = busbw < gate
    f.bad.append(
        Evidence(
            "cluster",
            "all_reduce_perf",
            f"NCCL busbw {busbw:g} GB/s: " + ("agrees" if agrees else "healthy, disagrees"),
            f"below {gate:g} GB/s if the CX7 is really slow (perftest#394 false negatives)",
            Status.FAIL if agrees else Status.WARN,
        )
    )
    if agrees:
        return f"; NCCL agrees ({busbw:g} GB/s)"
    f.bad[:] = [replace(ev, status=Status.WARN) for ev in f.bad]
    return (
        f"; but NCCL is healthy ({busbw:g} GB/s): likely perftest's GB10 false-negative mode "
        "(linux-rdma/perftest#394), re-run before draining or updating firmware"
    )
