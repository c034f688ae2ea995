"""The drain rule (`--perf`): is every bandwidth result taken on a rail that has not bounced?

A link transition (cable move, port bounce, switch reboot, a fix that bounced links) re-arms the
CX7 low-throughput state on susceptible units, and only a full AC drain clears it. A result taken
after a transition on a node not drained since is not evidence (`process.undrained-measurement`).
The sweep reads `/sys/class/net/<rail>/carrier_down_count`: a drain reboots the node and resets
it, so any count above zero means "bounced, not drained since". A pasted kernel log that records
link transitions (cable plug, link up/down) warns the same way: what was measured after them is
not evidence until the node is AC-drained.
"""

from __future__ import annotations

from dataclasses import dataclass

from flows import plans
from flows.base import Check, Context, Observations, PastedRule
from flows.checks._common import CARRIER_DOWN, Finding, listing, undrained
from wizard.errors import ParseError
from wizard.model import Evidence, FixPlan, Measurement, Status, Verdict
from wizard.parsers.kernel_log import parse_kernel_log


@dataclass(frozen=True, slots=True)
class Bounced:
    runs: tuple[tuple[Measurement, tuple[tuple[str, str, int], ...]], ...]  # run, bounced rails


def parse(obs: Observations, ctx: Context) -> Bounced:
    out = []
    for m in obs.measurements:
        if m.kind != "rail":
            continue
        ends = (
            (str(m.extra.get("client", "")), str(m.extra.get("client_netdev", ""))),
            (str(m.extra.get("server", "")), str(m.extra.get("server_netdev", ""))),
        )
        bounced = tuple((n, d, c) for n, d in ends if (c := undrained(obs, n, d)) > 0)
        out.append((m, bounced))
    return Bounced(tuple(out))


def judge(b: Bounced, ctx: Context) -> list[Verdict]:
    f = Finding("process.undrained-measurement")
    for m, bounced in b.runs:
        for node, netdev, count in bounced:
            f.fail(
                Evidence(
                    m.target,
                    CARRIER_DOWN.command,
                    f"{node}/{netdev} carrier_down_count={count}: {m.value:.2f} Gb/s is not evidence",
                    "carrier_down_count=0 (no link transition since the last AC drain)",
                ),
                target=node,
                warn=True,
            )
    return [
        f.verdict(
            ok="every bandwidth result was taken on rails without a link transition",
            bad=f"bandwidth measured after a link transition without an AC drain on "
            f"{listing(f.targets)}: those results are not evidence; AC-drain, then re-measure",
        )
    ]


def judge_pasted(text: str, ctx: Context) -> list[Verdict]:
    """A pasted kernel log: the link transitions it records."""
    try:
        log = parse_kernel_log(text)
    except ParseError:
        return []
    transitions = [*log.of("link"), *log.of("cable")] + [
        e for e in log.of("hotplug") if "Cable" in (e.value or "")
    ]
    if not transitions:
        return []
    return [
        Verdict(
            "process.undrained-measurement",
            Status.WARN,
            f"{len(transitions)} link transition(s) logged (cable plug, link up/down): "
            "bandwidth measured after them is not evidence until the node is AC-drained",
            targets=tuple(
                t for t in sorted({e.netdev or e.device or "" for e in transitions}) if t
            ),
            check=CHECK.id,
        )
    ]


def fix(b: Bounced, verdict: Verdict, ctx: Context) -> FixPlan | None:
    v = Verdict("host.cx7-degraded", verdict.status, verdict.summary, verdict.targets)
    plan = plans.firmware_plan(v, ctx, None)
    if plan is None:
        return None
    return FixPlan(
        fault=verdict.fault,
        target=plan.target,
        summary=plan.summary,
        preview=plan.preview,
        physical=plan.physical,
        bounces_links=False,
        verify_checks=(verdict.fault,),
    )


CHECK = Check(
    id="process.undrained-measurement",
    title="Drain rule: no bandwidth result after an undrained link transition",
    description=__doc__ or "",
    faults=("process.undrained-measurement",),
    step="drain",
    probes=(CARRIER_DOWN,),
    parse=parse,
    judge=judge,
    fix=fix,
    needs_traffic=True,
    pasted=(PastedRule(("kernel-log",), judge_pasted),),
)
