"""Node readiness: is every tool the walk runs on every node, and which versions are there?

fabwiz runs `ibdev2netdev`, `show_gids`, `mlnx_qos`, `ib_write_bw`, `mpirun` and the nccl-tests
binaries (`all_reduce_perf`, `sendrecv_perf`). Each is looked up with `command -v`, in NVIDIA's
playbook locations (`~/nccl-tests/build/`, NCCL in `~/nccl/build/lib`) and at the inventory's
`tools:` paths. A missing one is `preflight.tool-missing` with the exact command that installs or
builds it; the steps that need it are `unknown` (never pass). The versions (kernel, DGX OS, CX7
firmware, driver, perftest, Open MPI, NCCL) are recorded as evidence so a result can be
compared with another cluster's. Good: every tool found on every node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flows.base import Check, Context, Observations
from flows.checks._common import Finding, Unreadable, listing, read
from wizard import readiness
from wizard.model import Evidence, Status, Verdict
from wizard.readiness import TOOLS, TOOLS_PROBE, VERSION_PROBES, NodeTools, parse_tools


@dataclass(frozen=True, slots=True)
class NodeReadiness:
    node: str
    tools: NodeTools
    versions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Readiness:
    nodes: tuple[NodeReadiness, ...]
    unreadable: tuple[Unreadable, ...]


def parse(obs: Observations, ctx: Context) -> Readiness:
    out: list[NodeReadiness] = []
    bad: list[Unreadable] = []
    for node in ctx.nodes:
        # `command -v` exits 1 and `ls` 2 when something is missing: the paths still tell
        tools, why, _ = read(obs, node, TOOLS_PROBE, parse_tools, ok_exit=range(256))
        if why is not None:
            bad.append(why)
        if tools is None:
            continue
        texts: dict[str, str | None] = {}
        for p in VERSION_PROBES:
            res = obs.node(node, p.name)
            texts[p.name] = res.stdout if res is not None and res.error is None else None
        versions = readiness.parse_versions(texts)
        if tools.nccl_version and "nccl" not in versions:
            versions["nccl"] = f"{tools.nccl_version} ({tools.nccl_lib})"
        out.append(NodeReadiness(node, tools, versions))
    return Readiness(tuple(out), tuple(bad))


def _versions_text(v: dict[str, str]) -> str:
    order = (
        "platform",
        "os",
        "kernel",
        "driver",
        "cx7_firmware",
        "perftest",
        "openmpi",
        "mlnx-tools",
        "nccl",
    )
    return "; ".join(f"{k} {v[k]}" for k in order if k in v) or "no version answered"


def judge(r: Readiness, ctx: Context) -> list[Verdict]:
    f = Finding("preflight.tool-missing")
    for w in r.unreadable:
        f.cannot_tell(w, "the path of every tool the walk runs")
    recorded: list[Evidence] = []
    for n in r.nodes:
        recorded.append(
            Evidence(
                n.node,
                "uname -r; cat /etc/dgx-release /etc/os-release; fw_ver; dpkg-query -W ...",
                _versions_text(n.versions),
                "versions recorded",
                Status.PASS,
            )
        )
        for t in TOOLS:
            path = n.tools.paths.get(t.name)
            where = "command -v" + (f", ~/{t.playbook[0]}" if t.playbook else "")
            if path is None:
                f.fail(
                    Evidence(
                        n.node,
                        TOOLS_PROBE.command,
                        f"{t.name} not found ({where})",
                        f"{t.name} ({t.package}) for {t.needed_for}; fix: {t.fix}",
                    )
                )
            else:
                f.ok(Evidence(n.node, TOOLS_PROBE.command, f"{t.name} at {path}", "installed"))
    missing = sorted({e.observed.split()[0] for e in f.bad})
    fixes = sorted({readiness.tool(m).fix for m in missing})
    v = f.verdict(
        ok="every tool the walk runs is on every node",
        bad=f"{', '.join(missing)} missing on {listing(f.targets)}: the steps that need "
        f"{'them' if len(missing) > 1 else 'it'} cannot run. Fix: {' ; '.join(fixes)}",
        unknown="could not list the tools on " + listing(sorted({w.target for w in r.unreadable})),
    )
    evidence = (*recorded, *f.good[:50]) if v.status is Status.PASS else (*v.evidence, *recorded)
    return [Verdict(v.fault, v.status, v.summary, v.targets, evidence)]


CHECK = Check(
    id="preflight.tool-missing",
    title="Tools and versions on every node",
    description=__doc__ or "",
    faults=("preflight.tool-missing",),
    step="preflight",
    probes=(TOOLS_PROBE, *VERSION_PROBES),
    parse=parse,
    judge=judge,
)
