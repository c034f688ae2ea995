"""Host PFC: is priority flow control off on every rail, matching the lossy fabric?

A host NIC with PFC on while the fabric is lossy is hygiene, not a stall (`host.pfc-enabled`):
with no lossless switch port no pause frame comes back, and the "RDMA connects but moves no
data" stall of seed 000 was switch QoS on the offloaded path (`switch.qos-pfc-stall`). It is
turned off so that the host matches the fabric and a later lossless switch change cannot stall
it. `mlnx_qos -i <rail>` shows the PFC line per priority. Good: all zero, kept
across reboots by a systemd oneshot.
"""

from __future__ import annotations

from dataclasses import dataclass

from flows import plans
from flows.base import Check, Context, Observations, PastedRule
from flows.checks._common import (
    MLNX_QOS,
    Finding,
    Unreadable,
    listing,
    node_rails,
    once_per_text,
    pasted_host,
    read,
    sudo_command,
)
from wizard.errors import ParseError
from wizard.model import Evidence, FixPlan, Status, Verdict
from wizard.parsers.mlnx_qos import parse_mlnx_qos


@dataclass(frozen=True, slots=True)
class RailPfc:
    node: str
    netdev: str
    pfc: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class HostPfc:
    rails: tuple[RailPfc, ...]
    unreadable: tuple[Unreadable, ...]


def parse(obs: Observations, ctx: Context) -> HostPfc:
    out: list[RailPfc] = []
    bad: list[Unreadable] = []
    parse_qos = once_per_text(parse_mlnx_qos)  # one QoS profile on most rails of a fabric
    for node in ctx.nodes:
        for rail in node_rails(ctx, node):
            value, why, _ = read(obs, node, MLNX_QOS, parse_qos, rail.netdev)
            if why is not None:
                bad.append(why)
            if value is not None:
                out.append(RailPfc(node, rail.netdev, value.pfc))
    return HostPfc(tuple(out), tuple(bad))


def judge(h: HostPfc, ctx: Context) -> list[Verdict]:
    f = Finding("host.pfc-enabled")
    for w in h.unreadable:
        f.cannot_tell(w, "PFC 0,0,0,0,0,0,0,0")
    for r in h.rails:
        cmd = sudo_command(MLNX_QOS).replace("{netdev}", r.netdev)
        target = f"{r.node}/{r.netdev}"
        if r.pfc is None:
            f.unknown.append(
                Evidence(target, cmd, "no PFC line in the output", "PFC all 0", Status.UNKNOWN)
            )
            continue
        ev = Evidence(target, cmd, "PFC " + ",".join(map(str, r.pfc)), "PFC 0,0,0,0,0,0,0,0")
        if any(r.pfc):
            f.fail(ev, target=r.node)
        else:
            f.ok(ev)
    return [
        f.verdict(
            ok="PFC is off on every rail",
            bad=f"PFC is enabled on host NICs while the fabric is lossy (hygiene: match the fabric; not what stalls RDMA): {listing(f.targets)}",
        )
    ]


def judge_pasted(text: str, ctx: Context) -> list[Verdict]:
    """A pasted `mlnx_qos -i <netdev>` output, as the one rail it names."""
    try:
        netdev = parse_mlnx_qos(text).interface or "unnamed"
    except ParseError:
        netdev = "unnamed"
    obs, one = pasted_host(text, ctx, MLNX_QOS, netdev)
    return CHECK.run(obs, one)


def fix(h: HostPfc, verdict: Verdict, ctx: Context) -> FixPlan | None:
    return plans.host_pfc_plan(verdict, ctx)


CHECK = Check(
    id="host.pfc-enabled",
    title="Host NIC PFC",
    description=__doc__ or "",
    faults=("host.pfc-enabled",),
    step="qos",
    probes=(MLNX_QOS,),
    parse=parse,
    judge=judge,
    fix=fix,
    pasted=(PastedRule(("mlnx_qos",), judge_pasted),),
)
