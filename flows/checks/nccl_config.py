"""NCCL configuration: does every NCCL job see every active RDMA device, over IB verbs?

`NCCL_IB_HCA` is a prefix match: `rocep1s0f` matches `rocep1s0f0`/`rocep1s0f1` but never
`roceP2p1s0f0` (capital P), so the cluster runs on one PCIe half (`nccl.hca-filter`); a leading
`=` means exact names, `^` excludes. A leftover `NCCL_NET=Socket` or `NCCL_IB_DISABLE=1` sends
NCCL over TCP at ~2-3 GB/s (`nccl.socket-fallback`). Read from the login environment jobs
inherit and /etc/nccl.conf, against `ibdev2netdev`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from flows import plans
from flows.base import Check, Context, Observations
from flows.checks._common import (
    IBDEV,
    NCCL_CONF,
    NCCL_ENV,
    Finding,
    Unreadable,
    configured,
    listing,
    node_rails,
    read,
)
from wizard.model import Evidence, FixPlan, Verdict
from wizard.probes import HostProbe


def parse_env(text: str) -> dict[str, str]:
    """`KEY=value` lines (env output, /etc/nccl.conf); comments and blanks ignored."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        line = line.removeprefix("export ").strip()
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip().strip("'\"")
    return out


def hca_selects(spec: str, devices: list[str]) -> list[str]:
    """The devices NCCL_IB_HCA=`spec` selects (prefix match; `=` exact; `^` excludes)."""
    spec = spec.strip()
    exclude = spec.startswith("^")
    spec = spec.lstrip("^")
    exact = spec.startswith("=")
    spec = spec.lstrip("=")
    names = [s.split(":")[0].strip() for s in spec.split(",") if s.strip()]

    def hit(dev: str) -> bool:
        return any(dev == n if exact else dev.startswith(n) for n in names)

    return [d for d in devices if hit(d) != exclude]


# the environment of every running container (the real job often runs in one: seed 002)
CONTAINERS = HostProbe(
    name="nccl.containers",
    command="docker ps -q | xargs -r docker inspect --format '{{.Name}} {{json .Config.Env}}'",
)


def parse_containers(text: str) -> dict[str, dict[str, str]]:
    """`docker inspect --format '{{.Name}} {{json .Config.Env}}'` lines -> name -> env."""
    out: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        name, _, env = line.strip().partition(" ")
        if not name or not env:
            continue
        try:
            items = json.loads(env)
        except ValueError:
            continue
        if isinstance(items, list):
            out[name.lstrip("/")] = parse_env("\n".join(str(i) for i in items))
    return out


@dataclass(frozen=True, slots=True)
class NodeNccl:
    node: str
    env: dict[str, str]  # login env
    conf: dict[str, str]  # /etc/nccl.conf
    active: tuple[str, ...]  # RDMA devices up with an address
    containers: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> env

    @property
    def effective(self) -> dict[str, str]:
        return {**self.conf, **self.env}  # the environment wins over nccl.conf


@dataclass(frozen=True, slots=True)
class NcclConfig:
    nodes: tuple[NodeNccl, ...]
    unreadable: tuple[Unreadable, ...]


def parse(obs: Observations, ctx: Context) -> NcclConfig:
    out: list[NodeNccl] = []
    bad: list[Unreadable] = []
    for node in ctx.nodes:
        env, why, _ = read(obs, node, NCCL_ENV, parse_env, ok_exit=(0, 1))
        conf, why2, _ = read(obs, node, NCCL_CONF, parse_env, ok_exit=(0, 1))
        for w in (why, why2):
            if w is not None:
                bad.append(w)
        if env is None and conf is None:
            continue
        active = tuple(r.rdma for r in node_rails(ctx, node) if r.up and configured(r))
        found, why3, _ = read(obs, node, CONTAINERS, parse_containers, ok_exit=(0, 1, 127))
        containers = found or {}
        job = ctx.jobs.get(node)
        if job is not None:
            if why3 is not None:
                bad.append(why3)
            elif job not in containers:
                bad.append(
                    Unreadable(
                        node, CONTAINERS.command, f"the job's container {job} is not running", ""
                    )
                )
            containers = {job: containers[job]} if job in containers else {}
        out.append(NodeNccl(node, env or {}, conf or {}, active, containers))
    return NcclConfig(tuple(out), tuple(bad))


def container_change(name: str, values: dict[str, str]) -> str:
    """The exact change for a container's environment: compose, or docker run -e."""
    env = " ".join(f"{k}={v}" for k, v in values.items())
    compose = "; ".join(f"- {k}={v}" for k, v in values.items())
    flags = " ".join(f"-e {k}={v}" for k, v in values.items())
    return (
        f"in the container {name}'s environment ({env}): its compose file's `environment:` "
        f"({compose}) or `docker run {flags} ...`, then recreate {name} (host files do not reach it)"
    )


def judge(n: NcclConfig, ctx: Context) -> list[Verdict]:
    hca = Finding("nccl.hca-filter")
    sock = Finding("nccl.socket-fallback")
    for w in n.unreadable:
        hca.cannot_tell(w, "NCCL settings")
        sock.cannot_tell(w, "NCCL settings")
    for node in n.nodes:
        eff = node.effective
        src = "login env" if "NCCL_IB_HCA" in node.env else "/etc/nccl.conf"
        spec = eff.get("NCCL_IB_HCA")
        if spec is not None:
            chosen = hca_selects(spec, list(node.active))
            missing = [d for d in node.active if d not in chosen]
            ev = Evidence(
                node.node,
                f"{NCCL_ENV.command}; {NCCL_CONF.command}; {IBDEV.command}",
                f"NCCL_IB_HCA={spec} ({src}) selects {', '.join(chosen) or 'nothing'}",
                f"every active device: {', '.join(node.active)}",
            )
            if missing:
                hca.fail(ev)
            else:
                hca.ok(ev)
        for name, cenv in node.containers.items():
            cspec = cenv.get("NCCL_IB_HCA")
            if cspec is None:
                continue
            chosen = hca_selects(cspec, list(node.active))
            missing = [d for d in node.active if d not in chosen]
            want = {"NCCL_IB_HCA": "=" + ",".join(node.active)}
            ev = Evidence(
                f"{node.node} (container {name})",
                f"{CONTAINERS.command}; {IBDEV.command}",
                f"NCCL_IB_HCA={cspec} (container {name}) selects {', '.join(chosen) or 'nothing'}",
                container_change(name, want)
                if missing
                else f"every active device: {', '.join(node.active)}",
            )
            if missing:
                hca.fail(ev)
            else:
                hca.ok(ev)
        for key, bad_value in (("NCCL_NET", "socket"), ("NCCL_IB_DISABLE", "1")):
            value = eff.get(key)
            if value is None:
                continue
            where = "login env" if key in node.env else "/etc/nccl.conf"
            ev = Evidence(
                node.node,
                NCCL_CONF.command if where == "/etc/nccl.conf" else NCCL_ENV.command,
                f"{key}={value} ({where})",
                f"no {key} override",
            )
            if value.strip().lower() == bad_value:
                sock.fail(ev)
            else:
                sock.ok(ev)
    return [
        hca.verdict(
            ok="NCCL_IB_HCA is unset or covers every active RDMA device",
            bad=f"NCCL_IB_HCA leaves active RDMA devices out on {listing(hca.targets)}: NCCL "
            "runs on one PCIe half",
        ),
        sock.verdict(
            ok="no NCCL override forces TCP sockets",
            bad=f"NCCL is forced onto TCP sockets on {listing(sock.targets)} (~2-3 GB/s)",
        ),
    ]


def fix(n: NcclConfig, verdict: Verdict, ctx: Context) -> FixPlan | None:
    return plans.nccl_plan(n, verdict, ctx)


CHECK = Check(
    id="nccl.hca-filter",
    title="NCCL device filter and transport",
    description=__doc__ or "",
    faults=("nccl.hca-filter", "nccl.socket-fallback"),
    step="halves",
    probes=(NCCL_ENV, NCCL_CONF, IBDEV, CONTAINERS),
    parse=parse,
    judge=judge,
    fix=fix,
)
