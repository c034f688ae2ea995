"""NCCL configuration: does every NCCL job see every active RDMA device, over IB verbs?

`NCCL_IB_HCA` is a prefix match: `rocep1s0f` matches `rocep1s0f0`/`rocep1s0f1` but never
`roceP2p1s0f0` (capital P), so the cluster runs on one PCIe half (`nccl.hca-filter`); a leading
`=` means exact names, `^` excludes. A leftover `NCCL_NET=Socket` or `NCCL_IB_DISABLE=1` sends
NCCL over TCP at ~2-3 GB/s (`nccl.socket-fallback`). Read from the login environment jobs
inherit and /etc/nccl.conf, against `ibdev2netdev`. A pinned `NCCL_IB_GID_INDEX` is flagged:
GID order differs per device and shifts with IPv6 or the order addresses were added, so the
pinned index is compared with each active device's RoCE v2 GID of its IPv4 address
(`show_gids`); `NCCL_IB_ROCE_VERSION_NUM=2` is what lets NCCL pick the right one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from flows import jobproc, plans
from flows.base import Check, Context, HostProbe, Observations
from flows.checks._common import (
    IBDEV,
    IP_ADDR,
    NCCL_CONF,
    NCCL_ENV,
    NCCL_USER_CONF,
    Finding,
    Unreadable,
    configured,
    listing,
    node_rails,
    read,
)
from wizard.gids import gids_from_show_gids, roce_v2_index
from wizard.model import Evidence, FixPlan, Verdict

SHOW_GIDS = HostProbe("show_gids", "show_gids")


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
    gid_index: dict[str, int | None] | None = None  # device -> RoCE v2 IPv4 index (None: unread)
    interfaces: tuple[str, ...] = ()  # every netdev `ip -j addr` lists
    management: str | None = None  # the one non-fabric interface with an IPv4 address
    containers: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> env
    processes: dict[str, tuple[list[int], dict[str, str]]] = field(default_factory=dict)

    user_conf: dict[str, str] = field(default_factory=dict)  # ~/.nccl.conf

    @property
    def effective(self) -> dict[str, str]:
        # NCCL's order: the environment, then ~/.nccl.conf, then /etc/nccl.conf
        return {**self.conf, **self.user_conf, **self.env}

    def source(self, key: str) -> str:
        """Where the effective value of `key` comes from."""
        if key in self.env:
            return "login env"
        return "~/.nccl.conf" if key in self.user_conf else "/etc/nccl.conf"


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
        user_conf, why3, _ = read(obs, node, NCCL_USER_CONF, parse_env, ok_exit=(0, 1))
        for w in (why, why2, why3):
            if w is not None:
                bad.append(w)
        if env is None and conf is None:
            continue
        rails = [r for r in node_rails(ctx, node) if r.up and configured(r)]
        active = tuple(r.rdma for r in rails)
        gids, _w, _ = read(obs, node, SHOW_GIDS, gids_from_show_gids)
        index = (
            {r.rdma: roce_v2_index(gids, r.rdma, r.addresses[0]) for r in rails}
            if gids is not None
            else None
        )
        ifaces, mgmt = _interfaces(obs, node, {r.netdev for r in node_rails(ctx, node)})
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
        procs, why4 = _job_process(obs, node, ctx)
        if why4 is not None:
            bad.append(why4)
        out.append(
            NodeNccl(
                node,
                env or {},
                conf or {},
                active,
                index,
                ifaces,
                mgmt,
                containers=containers,
                processes=procs,
                user_conf=user_conf or {},
            )
        )
    return NcclConfig(tuple(out), tuple(bad))


def _job_process(
    obs: Observations, node: str, ctx: Context
) -> tuple[dict[str, tuple[list[int], dict[str, str]]], Unreadable | None]:
    """The NCCL environment of the job's process the inventory names (`/proc/<pid>/environ`):
    name -> (pids, env); why it cannot be seen when the process is not there or unreadable."""
    name = ctx.job_processes.get(node)
    if name is None:
        return {}, None
    comm, why, _ = read(obs, node, jobproc.COMM, jobproc.parse_comm, ok_exit=(0, 2))
    if comm is None:
        return {}, why
    pids = sorted(p for p, c in comm.items() if c == name)
    if not pids:
        return {}, Unreadable(
            node, jobproc.COMM.command, f"the job's process {name} is not running", ""
        )
    envs, why, _ = read(obs, node, jobproc.ENVIRON, jobproc.parse_environ, ok_exit=(0, 1, 2))
    if envs is None:
        return {}, why
    return {name: (pids, envs.get(pids[0], {}))}, None


def _interfaces(
    obs: Observations, node: str, fabric: set[str]
) -> tuple[tuple[str, ...], str | None]:
    """Every netdev of the node, and its management interface: the only non-loopback,
    non-fabric netdev with an IPv4 address (None when there is not exactly one)."""
    from wizard.parsers.iproute2 import parse_ip_json

    got, _why, _ = read(obs, node, IP_ADDR, parse_ip_json)
    if got is None:
        return (), None
    names = tuple(i.name for i in got.interfaces)
    mgmt = [
        i.name
        for i in got.interfaces
        if i.ipv4 and i.name != "lo" and i.name not in fabric and not i.name.startswith("docker")
    ]
    return names, mgmt[0] if len(mgmt) == 1 else None


def single_device(spec: str, chosen: list[str]) -> bool:
    """NCCL_IB_HCA names one device exactly (`=dev` or the full name): a deliberate choice, not
    a prefix that happens to miss a half."""
    names = [s.split(":")[0].strip() for s in spec.lstrip("^").lstrip("=").split(",") if s.strip()]
    return not spec.startswith("^") and len(names) == 1 and chosen == names


def container_change(name: str, values: dict[str, str]) -> str:
    """The exact change for a container's environment: compose, or docker run -e."""
    env = " ".join(f"{k}={v}" for k, v in values.items())
    compose = "; ".join(f"- {k}={v}" for k, v in values.items())
    flags = " ".join(f"-e {k}={v}" for k, v in values.items())
    return (
        f"in the container {name}'s environment ({env}): its compose file's `environment:` "
        f"({compose}) or `docker run {flags} ...`, then recreate {name} (host files do not reach it)"
    )


def _judge_login_hca(node: NodeNccl, ctx: Context, hca: Finding) -> None:
    """The login environment's / config files' NCCL_IB_HCA against the active devices."""
    spec = node.effective.get("NCCL_IB_HCA")
    if spec is None:
        return
    src = node.source("NCCL_IB_HCA")
    chosen = hca_selects(spec, list(node.active))
    missing = [d for d in node.active if d not in chosen]
    ev = Evidence(
        node.node,
        f"{NCCL_ENV.command}; {NCCL_USER_CONF.command}; {NCCL_CONF.command}; {IBDEV.command}",
        f"NCCL_IB_HCA={spec} ({src}) selects {', '.join(chosen) or 'nothing'}",
        f"every active device: {', '.join(node.active)}",
    )
    if missing and single_device(spec, chosen) and ctx.nccl_devices != "all":
        # seed 003: one device per node measured faster for latency-bound decode
        # (both devices: +9 % prefill, -5..9 % decode): a choice to confirm, not a fault
        trade = (
            "; one device by the inventory (nccl: {devices: one})"
            if ctx.nccl_devices == "one"
            else "; one device is faster for latency-bound decode, all devices for "
            "bandwidth (prefill, training): set `nccl: {devices: one}` in the "
            "inventory if this is deliberate"
        )
        ev = Evidence(ev.target, ev.command, ev.observed + trade, ev.expected)
        if ctx.nccl_devices == "one":
            hca.ok(ev)
        else:
            hca.fail(ev, warn=True)
    elif missing:
        hca.fail(ev)
    else:
        hca.ok(ev)


def _judge_job_hca(node: NodeNccl, hca: Finding) -> None:
    """NCCL_IB_HCA in each job container's and job process's own environment."""
    want = {"NCCL_IB_HCA": "=" + ",".join(node.active)}
    every = f"every active device: {', '.join(node.active)}"
    for name, cenv in node.containers.items():
        cspec = cenv.get("NCCL_IB_HCA")
        if cspec is None:
            continue
        chosen = hca_selects(cspec, list(node.active))
        missing = [d for d in node.active if d not in chosen]
        ev = Evidence(
            f"{node.node} (container {name})",
            f"{CONTAINERS.command}; {IBDEV.command}",
            f"NCCL_IB_HCA={cspec} (container {name}) selects {', '.join(chosen) or 'nothing'}",
            container_change(name, want) if missing else every,
        )
        if missing:
            hca.fail(ev)
        else:
            hca.ok(ev)
    for name, (pids, penv) in node.processes.items():
        pspec = penv.get("NCCL_IB_HCA")
        if pspec is None:
            continue
        chosen = hca_selects(pspec, list(node.active))
        missing = [d for d in node.active if d not in chosen]
        ev = Evidence(
            f"{node.node} (process {name})",
            f"{jobproc.ENVIRON.command}; {IBDEV.command}",
            f"NCCL_IB_HCA={pspec} (process {name}, pid {pids[0]}) selects "
            f"{', '.join(chosen) or 'nothing'}",
            jobproc.process_change(name, pids, want) if missing else every,
        )
        if missing:
            hca.fail(ev)
        else:
            hca.ok(ev)


def _judge_socket_overrides(node: NodeNccl, sock: Finding) -> None:
    """NCCL_NET=Socket or NCCL_IB_DISABLE=1, wherever NCCL reads it from."""
    for key, bad_value in (("NCCL_NET", "socket"), ("NCCL_IB_DISABLE", "1")):
        value = node.effective.get(key)
        if value is None:
            continue
        where = node.source(key)
        ev = Evidence(
            node.node,
            {"/etc/nccl.conf": NCCL_CONF, "~/.nccl.conf": NCCL_USER_CONF}.get(
                where, NCCL_ENV
            ).command,
            f"{key}={value} ({where})",
            f"no {key} override",
        )
        if value.strip().lower() == bad_value:
            sock.fail(ev)
        else:
            sock.ok(ev)


def judge(n: NcclConfig, ctx: Context) -> list[Verdict]:
    hca = Finding("nccl.hca-filter")
    sock = Finding("nccl.socket-fallback")
    for w in n.unreadable:
        hca.cannot_tell(w, "NCCL settings")
        sock.cannot_tell(w, "NCCL settings")
    for node in n.nodes:
        _judge_login_hca(node, ctx, hca)
        _judge_job_hca(node, hca)
        _judge_socket_overrides(node, sock)
    gid = Finding("nccl.hca-filter")
    ifname = Finding("nccl.hca-filter")
    for node in n.nodes:
        _judge_gid_index(node, gid)
        _judge_socket_ifname(node, ifname)
    extra = []
    if ifname.bad:
        extra.append(
            ifname.verdict(
                ok="",
                bad=f"NCCL_SOCKET_IFNAME does not select the management interface on "
                f"{listing(ifname.targets)} (a prefix match, like NCCL_IB_HCA)",
            )
        )
    if gid.bad:
        extra.append(
            gid.verdict(
                ok="",
                bad=f"NCCL_IB_GID_INDEX is pinned on {listing(gid.targets)}: GID order differs "
                "per device and shifts with IPv6; unset it and set NCCL_IB_ROCE_VERSION_NUM=2",
            )
        )
    return [
        *extra,
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


def _judge_gid_index(node: NodeNccl, f: Finding) -> None:
    """A pinned NCCL_IB_GID_INDEX: a failure where it is not the RoCE v2 GID of a device's IPv4
    address, a warning where it happens to match (the next address change shifts it)."""
    eff = node.effective
    pinned = eff.get("NCCL_IB_GID_INDEX")
    if pinned is None:
        return
    where = node.source("NCCL_IB_GID_INDEX")
    rv = eff.get("NCCL_IB_ROCE_VERSION_NUM")
    table = node.gid_index or {}
    wrong = [d for d, i in table.items() if i is None or str(i) != pinned.strip()]
    seen = ", ".join(f"{d} {i if i is not None else 'none'}" for d, i in table.items())
    ev = Evidence(
        node.node,
        f"{NCCL_ENV.command}; {NCCL_USER_CONF.command}; {NCCL_CONF.command}; {SHOW_GIDS.command}",
        f"NCCL_IB_GID_INDEX={pinned} ({where})"
        + (f"; RoCE v2 GID of each device's IPv4: {seen}" if table else "; show_gids not read")
        + (f"; NCCL_IB_ROCE_VERSION_NUM={rv}" if rv else ""),
        "NCCL_IB_GID_INDEX unset, NCCL_IB_ROCE_VERSION_NUM=2 (the v2 GID of each device's IPv4)",
    )
    f.fail(ev, warn=not wrong and node.gid_index is not None)


def _judge_socket_ifname(node: NodeNccl, f: Finding) -> None:
    """NCCL_SOCKET_IFNAME uses NCCL_IB_HCA's prefix semantics (`=` exact, `^` excludes): one
    that selects nothing leaves NCCL no bootstrap interface; one that selects fabric netdevs
    instead of the management interface is not the canonical launch (seed 000)."""
    spec = node.effective.get("NCCL_SOCKET_IFNAME")
    if spec is None or not node.interfaces:
        return
    where = node.source("NCCL_SOCKET_IFNAME")
    chosen = hca_selects(spec, [i for i in node.interfaces if i != "lo"])
    want = node.management
    ev = Evidence(
        node.node,
        f"{NCCL_ENV.command}; {NCCL_USER_CONF.command}; {NCCL_CONF.command}; {IP_ADDR.command}",
        f"NCCL_SOCKET_IFNAME={spec} ({where}) selects {', '.join(chosen) or 'nothing'}",
        f"NCCL_SOCKET_IFNAME={want or '<the management interface>'}",
    )
    if not chosen:
        f.fail(ev)
    elif want is not None and want not in chosen:
        f.fail(ev, warn=True)


def fix(n: NcclConfig, verdict: Verdict, ctx: Context) -> FixPlan | None:
    return plans.nccl_plan(n, verdict, ctx)


CHECK = Check(
    id="nccl.hca-filter",
    title="NCCL device filter and transport",
    description=__doc__ or "",
    faults=("nccl.hca-filter", "nccl.socket-fallback"),
    step="halves",
    probes=(
        NCCL_ENV,
        NCCL_CONF,
        NCCL_USER_CONF,
        IBDEV,
        SHOW_GIDS,
        IP_ADDR,
        CONTAINERS,
        jobproc.COMM,
        jobproc.ENVIRON,
    ),
    parse=parse,
    judge=judge,
    fix=fix,
)
