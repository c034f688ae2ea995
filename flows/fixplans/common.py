"""What every fix plan shares: where host fixes write, which nodes a verdict names, and the
`FixPlan` of host changes and of a physical action (preview text included)."""

from __future__ import annotations

from flows.base import Context
from wizard.model import FixPlan, HostChange, PhysicalAction, Verdict

__all__ = [
    "NCCL_CONF_PATH",
    "NCCL_PROFILE_PATH",
    "NETPLAN_PATH",
    "PFC_OFF",
    "PFC_UNIT",
    "PFC_UNIT_PATH",
    "RSTP_UPLINK_COST",
    "SYSCTL_PATH",
    "host_plan",
    "nodes_of",
    "physical_plan",
]

NETPLAN_PATH = "/etc/netplan/40-cx7.yaml"
SYSCTL_PATH = "/etc/sysctl.d/98-roce.conf"
PFC_UNIT = "fabwiz-pfc-off.service"
PFC_UNIT_PATH = f"/etc/systemd/system/{PFC_UNIT}"
NCCL_CONF_PATH = "/etc/nccl.conf"
NCCL_PROFILE_PATH = "/etc/profile.d/zz-fabwiz-nccl.sh"
PFC_OFF = "0,0,0,0,0,0,0,0"
RSTP_UPLINK_COST = "200000000"


def nodes_of(verdict: Verdict, ctx: Context) -> list[str]:
    out = []
    for t in verdict.targets:
        node = t.split("/")[0].split(" ")[0]
        if node in ctx.nodes and node not in out:
            out.append(node)
    return out


def host_plan(
    verdict: Verdict, summary: str, changes: list[HostChange], *, bounces: bool = False
) -> FixPlan | None:
    if not changes:
        return None
    preview: list[str] = []
    for c in changes:
        for f in c.files:
            preview.append(f"# {c.node}: {f.path}")
            preview.append(f.content.rstrip("\n"))
        preview.extend(f"{c.node}$ {cmd}" for cmd in c.commands)
    return FixPlan(
        fault=verdict.fault,
        target=", ".join(c.node for c in changes),
        summary=summary,
        preview="\n".join(preview),
        host_changes=tuple(changes),
        bounces_links=bounces,
        verify_checks=(verdict.fault,),
    )


def physical_plan(
    verdict: Verdict, action: PhysicalAction, summary: str, *, bounces: bool
) -> FixPlan:
    return FixPlan(
        fault=verdict.fault,
        target=", ".join(action.nodes),
        summary=summary,
        preview=action.instructions,
        physical=action,
        bounces_links=bounces,
        verify_checks=(verdict.fault,),
    )
