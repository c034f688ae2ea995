"""NCCL fix plans: /etc/nccl.conf and a profile script on the hosts, or, where the wrong
setting lives in the login user's ~/.nccl.conf or the job's own environment, the change by hand
and a re-check."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from flows.base import Context
from flows.fixplans.common import (
    NCCL_CONF_PATH,
    NCCL_PROFILE_PATH,
    host_plan,
    nodes_of,
    physical_plan,
)
from flows.fixplans.host import safe_netdevs
from wizard import hostvalues
from wizard.model import FixPlan, HostChange, HostFile, PhysicalAction, Status, Verdict

if TYPE_CHECKING:
    from flows.checks.nccl_config import NcclConfig, NodeNccl

__all__ = ["job_env_plan", "nccl_plan", "user_conf_plan"]


def nccl_plan(n: NcclConfig, verdict: Verdict, ctx: Context) -> FixPlan | None:
    jobs = tuple(t for t in verdict.targets if "(container " in t or "(process " in t)
    if jobs and len(jobs) < len(verdict.targets):
        return _host_then_job(n, verdict, ctx, jobs)
    changes: list[HostChange] = []
    # a container's environment is changed where it is defined (the verdict shows how), never
    # in host files the container does not read
    on_host = [t for t in verdict.targets if "(container " not in t and "(process " not in t]
    if not on_host:
        return job_env_plan(verdict, ctx)
    host_verdict = Verdict(verdict.fault, verdict.status, verdict.summary, tuple(on_host))
    user = user_conf_plan(n, verdict, host_verdict, ctx)
    if user is not None:
        return user
    for node in n.nodes:
        if node.node in nodes_of(host_verdict, ctx):
            changes.append(_nccl_files(node, verdict.fault, ctx))
    summary = (
        "list every active RDMA device exactly in NCCL_IB_HCA, NCCL_IB_ROCE_VERSION_NUM=2 "
        "instead of a pinned GID index, NCCL_SOCKET_IFNAME on the management interface"
        if verdict.fault == "nccl.hca-filter"
        else "remove the NCCL_NET=Socket / NCCL_IB_DISABLE=1 overrides"
    )
    return host_plan(verdict, summary, changes)


def _nccl_files(node: NodeNccl, fault: str, ctx: Context) -> HostChange:
    """/etc/nccl.conf and the profile script of one node, for `fault`."""
    conf = {
        k: v
        for k, v in node.conf.items()
        if not (fault == "nccl.socket-fallback" and k in ("NCCL_NET", "NCCL_IB_DISABLE"))
    }
    profile_lines = ["# written by fabwiz: the NCCL settings every job should inherit"]
    if fault == "nccl.hca-filter":
        rails = [r for r in ctx.rails.get(node.node, ()) if r.up and r.addresses]
        where = f"{NCCL_PROFILE_PATH} and {NCCL_CONF_PATH}"
        hcas = [hostvalues.rdma_device(r.rdma, node=node.node, where=where) for r in rails]
        conf["NCCL_IB_HCA"] = "=" + ",".join(hcas)
        # bootstrap over the management interface (seed 000's canonical launch); GIDs
        # picked by RoCE version, never a pinned index
        conf.pop("NCCL_IB_GID_INDEX", None)
        conf["NCCL_IB_ROCE_VERSION_NUM"] = "2"
        profile_lines += [
            hostvalues.export_line("NCCL_IB_HCA", conf["NCCL_IB_HCA"]),
            hostvalues.export_line("NCCL_IB_ROCE_VERSION_NUM", "2"),
            "unset NCCL_IB_GID_INDEX",
        ]
        if node.management is not None and safe_netdevs([node.management]):
            conf["NCCL_SOCKET_IFNAME"] = "=" + node.management
            profile_lines.append(
                hostvalues.export_line("NCCL_SOCKET_IFNAME", conf["NCCL_SOCKET_IFNAME"])
            )
        else:
            conf.pop("NCCL_SOCKET_IFNAME", None)
            profile_lines.append("unset NCCL_SOCKET_IFNAME")
    else:
        profile_lines.append("unset NCCL_NET NCCL_IB_DISABLE")
    conf_text = "".join(hostvalues.conf_line(k, v) + "\n" for k, v in conf.items())
    return HostChange(
        node=node.node,
        files=(
            HostFile(node.node, NCCL_CONF_PATH, conf_text),
            HostFile(node.node, NCCL_PROFILE_PATH, "\n".join(profile_lines) + "\n"),
        ),
    )


_NCCL_KEYS = {
    "nccl.hca-filter": ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_SOCKET_IFNAME"),
    "nccl.socket-fallback": ("NCCL_NET", "NCCL_IB_DISABLE"),
}


def user_conf_plan(
    n: NcclConfig, verdict: Verdict, host_verdict: Verdict, ctx: Context
) -> FixPlan | None:
    """Where the wrong setting sits in the login user's ~/.nccl.conf: NCCL reads it before
    /etc/nccl.conf, and so does every rank mpirun starts over ssh, so rewriting the system files
    would leave the job as it was. A change by hand (the user's own file), then a re-check."""
    keys = _NCCL_KEYS.get(verdict.fault, ())
    changes: list[str] = []
    nodes: list[str] = []
    for node in n.nodes:
        if node.node not in nodes_of(host_verdict, ctx):
            continue
        held = [k for k in keys if k in node.user_conf and k not in node.env]
        if held:
            nodes.append(node.node)
            changes.append(
                f"{node.node}: remove {', '.join(f'{k}={node.user_conf[k]}' for k in held)} "
                "from ~/.nccl.conf"
            )
    if not nodes:
        return None
    action = PhysicalAction(
        kind="manual",
        nodes=tuple(nodes),
        instructions="Edit the login user's ~/.nccl.conf (NCCL reads it before /etc/nccl.conf, "
        "on every rank), then re-check: " + "; ".join(changes),
    )
    return physical_plan(verdict, action, "change ~/.nccl.conf by hand", bounces=False)


def _host_then_job(
    n: NcclConfig, verdict: Verdict, ctx: Context, jobs: tuple[str, ...]
) -> FixPlan | None:
    """The host's own setting wrong and the job's too: the host's change (its files, or
    ~/.nccl.conf by hand) for the host targets, then the job's change by hand for its targets,
    each verified on its own targets."""
    hosts = tuple(t for t in verdict.targets if t not in jobs)
    host_verdict = dataclasses.replace(
        verdict,
        targets=hosts,
        evidence=tuple(e for e in verdict.evidence if e.target not in jobs),
    )
    host = nccl_plan(n, host_verdict, ctx)
    job = job_env_plan(verdict, ctx)
    job = None if job is None else dataclasses.replace(job, verify_targets=jobs)
    if host is None:
        return job
    return dataclasses.replace(host, verify_targets=hosts, then=() if job is None else (job,))


def job_env_plan(verdict: Verdict, ctx: Context) -> FixPlan | None:
    """Where the job's own environment (its container, its process) holds the wrong setting:
    a manual step with the exact change (the evidence's expected value), then a re-check of the
    step's probes. fabwiz never edits a container or a running process."""
    jobs = [t for t in verdict.targets if "(container " in t or "(process " in t]
    changes = [
        f"{e.target}: {e.expected}"
        for e in verdict.evidence
        if e.target in jobs and e.status in (Status.FAIL, Status.WARN)
    ]
    nodes = tuple(dict.fromkeys(t.split(" ")[0] for t in jobs if t.split(" ")[0] in ctx.nodes))
    if not changes or not nodes:
        return None
    action = PhysicalAction(
        kind="manual",
        nodes=nodes,
        instructions="Change the job's environment by hand, then re-check: " + "; ".join(changes),
    )
    return physical_plan(verdict, action, "change the job's environment by hand", bounces=False)
