"""Host ARP sysctls: does a multi-rail host answer ARP only on the rail that owns the address?

With several rails, Linux by default answers ARP for any local address on any interface (ARP
flux) and may drop asymmetric replies. Multi-rail RoCE hosts want `arp_ignore=1`,
`arp_announce=2`, `rp_filter=2` (`host.arp-sysctls`), persisted in /etc/sysctl.d/98-roce.conf.
A pasted `sysctl` output names no host, so whether its host has several addressed rails is not
known: other values are `unknown` there, never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from flows import plans
from flows.base import Check, Context, Observations, PastedRule
from flows.checks._common import (
    SYSCTL_ARP,
    Finding,
    Unreadable,
    configured,
    listing,
    node_rails,
    pasted_host,
    read,
)
from wizard.model import Evidence, FixPlan, Status, Verdict
from wizard.parsers.sysctl import parse_sysctl

KEYS = ("arp_ignore", "arp_announce", "rp_filter")


@dataclass(frozen=True, slots=True)
class NodeArp:
    node: str
    values: dict[str, str]
    multi_rail: bool | None  # None: the node's rails are not known


@dataclass(frozen=True, slots=True)
class HostArp:
    nodes: tuple[NodeArp, ...]
    unreadable: tuple[Unreadable, ...]


def parse(obs: Observations, ctx: Context) -> HostArp:
    out: list[NodeArp] = []
    bad: list[Unreadable] = []
    for node in ctx.nodes:
        value, why, _ = read(obs, node, SYSCTL_ARP, parse_sysctl)
        if why is not None:
            bad.append(why)
        if value is None:
            continue
        vals = {k.rsplit(".", 1)[1]: v for k, v in value.values.items() if k}
        multi = (
            sum(1 for r in node_rails(ctx, node) if configured(r)) > 1
            if node in ctx.rails
            else None
        )
        out.append(NodeArp(node, vals, multi))
    return HostArp(tuple(out), tuple(bad))


def judge(h: HostArp, ctx: Context) -> list[Verdict]:
    e = ctx.expectations
    want = {
        "arp_ignore": str(e.arp_ignore),
        "arp_announce": str(e.arp_announce),
        "rp_filter": str(e.rp_filter),
    }
    expected = " ".join(f"{k}={v}" for k, v in want.items())
    f = Finding("host.arp-sysctls")
    for w in h.unreadable:
        f.cannot_tell(w, expected)
    for n in h.nodes:
        observed = " ".join(f"{k}={n.values.get(k, '?')}" for k in KEYS)
        ev = Evidence(n.node, SYSCTL_ARP.command, observed, expected)
        wrong = any(n.values.get(k) != v for k, v in want.items())
        if wrong and n.multi_rail is None:
            f.unknown.append(
                Evidence(
                    n.node,
                    SYSCTL_ARP.command,
                    f"{observed} (rails not known)",
                    expected,
                    Status.UNKNOWN,
                )
            )
        elif wrong and n.multi_rail:
            f.fail(ev)
        else:
            f.ok(ev)
    return [
        f.verdict(
            ok="multi-rail hosts have arp_ignore=1 arp_announce=2 rp_filter=2",
            bad=f"multi-rail hosts without the ARP sysctls: {listing(f.targets)}",
            unknown=(
                f"the ARP sysctls are not the multi-rail values ({expected}) on "
                f"{listing(sorted({e.target for e in f.unknown}))}, whose rails are not known: "
                "a fault only on a host with several addressed rails"
            )
            if f.unknown and all(e.observed.endswith("(rails not known)") for e in f.unknown)
            else None,
        )
    ]


def judge_pasted(text: str, ctx: Context) -> list[Verdict]:
    """A pasted `sysctl` output, judged by this check as one node of unknown rails."""
    obs, one = pasted_host(text, ctx, SYSCTL_ARP)
    return CHECK.run(obs, one)


def fix(h: HostArp, verdict: Verdict, ctx: Context) -> FixPlan | None:
    return plans.sysctl_plan(verdict, ctx)


CHECK = Check(
    id="host.arp-sysctls",
    title="Host ARP sysctls for multi-rail",
    description=__doc__ or "",
    faults=("host.arp-sysctls",),
    step="addressing",
    probes=(SYSCTL_ARP,),
    parse=parse,
    judge=judge,
    fix=fix,
    pasted=(PastedRule(("sysctl",), judge_pasted),),
)
