"""Fix plans of every fault (FAULTS.md, "fix" column) as data the engine executes.

Switch fixes are `ApiCommand`s selected by stable keys (`default-name`, `interface`, `name`),
each with its inverse in `rollback` and the exact RouterOS CLI text in `preview` (the same text
goes into the dead-man scheduler). Host fixes are files (netplan with one subnet per rail,
/etc/sysctl.d/98-roce.conf, a systemd oneshot that turns PFC off at boot, /etc/nccl.conf) plus the
commands that apply them. What only hands can do is a `PhysicalAction`. Nothing here does I/O.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import yaml

from flows import netplan
from flows.base import Context
from wizard import hostvalues
from wizard.errors import FixRefused
from wizard.model import (
    ApiCommand,
    FixPlan,
    HostChange,
    HostFile,
    PhysicalAction,
    Rail,
    Status,
    SwitchChange,
    Verdict,
)
from wizard.rosquote import Unrepresentable, cli_command

if TYPE_CHECKING:
    from flows.checks.nccl_config import NcclConfig
    from flows.checks.switch_link import SwitchLinks
    from flows.checks.switch_mtu import SwitchMtu
    from flows.checks.switch_offload import Offload, SwitchBridges
    from flows.checks.switch_qos import SwitchQos
    from flows.checks.switch_rstp import Rstp

NETPLAN_PATH = "/etc/netplan/40-cx7.yaml"
SYSCTL_PATH = "/etc/sysctl.d/98-roce.conf"
PFC_UNIT = "fabwiz-pfc-off.service"
PFC_UNIT_PATH = f"/etc/systemd/system/{PFC_UNIT}"
NCCL_CONF_PATH = "/etc/nccl.conf"
NCCL_PROFILE_PATH = "/etc/profile.d/zz-fabwiz-nccl.sh"
PFC_OFF = "0,0,0,0,0,0,0,0"
RSTP_UPLINK_COST = "200000000"


def _cli(
    path: str, verb: str, args: Iterable[tuple[str, str]], select: tuple[str, str] | None
) -> str:
    """RouterOS CLI text with every value quoted; "" when a value cannot be written (the engine
    then refuses the change with the reason)."""
    try:
        return cli_command(path, verb, args, select)
    except Unrepresentable:
        return ""


def api(
    path: str,
    verb: str,
    args: Sequence[tuple[str, str]] = (),
    select: tuple[str, str] | None = None,
) -> ApiCommand:
    return ApiCommand(
        path=path, verb=verb, args=tuple(args), select=select, cli=_cli(path, verb, args, select)
    )


_UNWRITABLE = "# (a value here cannot be written in RouterOS script: the fix is refused)"


def _preview(changes: Iterable[SwitchChange]) -> str:
    lines: list[str] = []
    for c in changes:
        lines.append(f"# {c.switch}")
        lines.extend(cmd.cli or _UNWRITABLE for cmd in c.commands)
        lines.append(f"# rollback on {c.switch}")
        lines.extend(f"#   {cmd.cli or _UNWRITABLE}" for cmd in c.rollback)
    return "\n".join(lines)


def _switch_plan(
    verdict: Verdict,
    summary: str,
    changes: list[SwitchChange],
    *,
    bounces: bool = False,
) -> FixPlan | None:
    changes = [c for c in changes if c.commands]
    if not changes:
        return None
    return FixPlan(
        fault=verdict.fault,
        target=", ".join(c.switch for c in changes),
        summary=summary,
        preview=_preview(changes),
        switch_changes=tuple(changes),
        bounces_links=bounces,
        verify_checks=(verdict.fault,),
    )


# --- switch fixes -----------------------------------------------------------------------------


def switch_link_plan(links: SwitchLinks, verdict: Verdict, ctx: Context) -> FixPlan | None:
    from flows.checks.switch_link import autoneg_failed

    bad = set(verdict.targets)
    per_switch: dict[str, tuple[list[ApiCommand], list[ApiCommand]]] = {}
    done: set[tuple[str, str]] = set()
    for p in links.ports:
        if f"{p.switch}/{p.name}" not in bad:
            continue
        targets: list[str] = [p.default_name]
        if verdict.fault == "switch.breakout-autoneg" and autoneg_failed(p):
            m = re.match(r"^(qsfp56-dd-\d+)-\d+$", p.default_name)
            if m:
                targets = [f"{m.group(1)}-1", f"{m.group(1)}-5"]
        cmds, back = per_switch.setdefault(p.switch, ([], []))
        for port in targets:
            if (p.switch, port) in done:
                continue
            done.add((p.switch, port))
            sel = ("default-name", port)
            cmds.append(
                api(
                    "/interface/ethernet",
                    "set",
                    (("auto-negotiation", "no"), ("speed", "200G-baseCR4"), ("fec-mode", "fec91")),
                    sel,
                )
            )
            back.append(
                api(
                    "/interface/ethernet",
                    "set",
                    (
                        ("auto-negotiation", "yes" if p.autoneg_config else "no"),
                        ("fec-mode", "auto"),
                    ),
                    sel,
                )
            )
    changes = [SwitchChange(sw, tuple(c), tuple(b)) for sw, (c, b) in per_switch.items()]
    return _switch_plan(
        verdict,
        "force 200G-baseCR4 with RS-FEC on the breakout lane masters (links bounce)",
        changes,
        bounces=True,
    )


def offload_target(sw: SwitchBridges) -> str:
    """The bridge the fabric belongs in: the one the chip offloads; when it offloads none, the
    bridge of the management ports (the switch's own bridge); else the fabric's bridge."""
    chip = sw.offloaded_bridges()
    if len(chip) == 1:
        return chip[0]
    mgmt = {p.bridge for p in sw.ports if p.interface in sw.management_ports}
    if len(mgmt) == 1:
        return next(iter(mgmt))
    return sw.fabric_bridge() or "bridge"


def offload_plan(off: Offload, verdict: Verdict, ctx: Context) -> FixPlan | None:
    from flows.checks.switch_offload import classify

    changes: list[SwitchChange] = []
    for sw in off.switches:
        ports = classify(sw).get(verdict.fault, [])
        main = sw.fabric_bridge() or "bridge"
        if verdict.fault == "switch.offload-second-bridge" and ports:
            # every fabric port into the one bridge the chip offloads (or, when it offloads
            # none, the management ports' bridge), then the emptied extra bridge is deleted
            # (seed 003: one hardware-offloaded bridge per switch)
            main = offload_target(sw)
            ports = [p for p in sw.fabric if p.bridge != main]
        cmds: list[ApiCommand] = []
        back: list[ApiCommand] = []
        for p in ports:
            # A port carrying the API session stays in the plan: the engine's management-path
            # guard refuses the whole change with the reason and the manual way, rather than a
            # partial fix that cannot pass its verification.
            sel = ("interface", p.interface)
            if verdict.fault == "switch.offload-disabled":
                cmds.append(api("/interface/bridge/port", "set", (("hw", "yes"),), sel))
                back.append(api("/interface/bridge/port", "set", (("hw", "no"),), sel))
            elif verdict.fault == "switch.offload-second-bridge":
                cmds.append(api("/interface/bridge/port", "set", (("bridge", main),), sel))
                back.append(api("/interface/bridge/port", "set", (("bridge", p.bridge),), sel))
            else:
                cmds.append(api("/interface/bridge/port", "remove", (), sel))
                back.append(
                    api(
                        "/interface/bridge/port",
                        "add",
                        (
                            ("bridge", p.bridge),
                            ("interface", p.interface),
                            ("hw", "yes" if p.hw else "no"),
                            *((("comment", p.comment),) if p.comment else ()),
                        ),
                    )
                )
        if verdict.fault == "switch.offload-second-bridge":
            extra = {p.bridge for p in ports}
            for bridge in sorted(extra):
                left = [q for q in sw.ports if q.bridge == bridge and q not in ports]
                if not left:
                    cmds.append(api("/interface/bridge", "remove", (), ("name", bridge)))
                    back.insert(0, api("/interface/bridge", "add", (("name", bridge),)))
        changes.append(SwitchChange(sw.switch, tuple(cmds), tuple(back)))
    summary = {
        "switch.offload-split-cage": "remove the unused QSFP56-DD sub-ports from the other bridge "
        "so the fabric bridge is offloaded again",
        "switch.offload-second-bridge": "move the fabric ports into the single offloaded bridge and "
        "delete the emptied bridge",
        "switch.offload-disabled": "set hw=yes on the fabric bridge ports",
    }.get(verdict.fault, "restore bridge hardware offload")
    return _switch_plan(verdict, summary, changes)


def qos_plan(q: SwitchQos, verdict: Verdict, ctx: Context) -> FixPlan | None:
    per: dict[str, tuple[list[ApiCommand], list[ApiCommand]]] = {}
    for p in q.ports:
        if p.trust_l3 == "ignore" and p.pfc == "disabled":
            continue
        cmds, back = per.setdefault(p.switch, ([], []))
        sel = ("name", p.name)
        path = "/interface/ethernet/switch/qos/port"
        cmds.append(api(path, "set", (("trust-l3", "ignore"), ("pfc", "disabled")), sel))
        back.append(api(path, "set", (("trust-l3", p.trust_l3), ("pfc", p.pfc)), sel))
    changes = [SwitchChange(sw, tuple(c), tuple(b)) for sw, (c, b) in per.items()]
    plan = _switch_plan(
        verdict,
        "make the fabric ports lossy (trust-l3=ignore pfc=disabled); turn host PFC off too",
        changes,
    )
    return plan


def switch_mtu_plan(m: SwitchMtu, verdict: Verdict, ctx: Context) -> FixPlan | None:
    e = ctx.expectations
    per: dict[str, tuple[list[ApiCommand], list[ApiCommand]]] = {}
    for p in m.ports:
        if p.l2mtu is None or p.mtu is None:
            continue
        if p.l2mtu >= e.fabric_l2mtu and p.mtu >= e.fabric_mtu:
            continue
        cmds, back = per.setdefault(p.switch, ([], []))
        sel = ("name", p.name)
        cmds.append(
            api(
                "/interface/ethernet",
                "set",
                (("l2mtu", str(e.fabric_l2mtu)), ("mtu", str(e.fabric_mtu))),
                sel,
            )
        )
        back.append(
            api("/interface/ethernet", "set", (("l2mtu", str(p.l2mtu)), ("mtu", str(p.mtu))), sel)
        )
    changes = [SwitchChange(sw, tuple(c), tuple(b)) for sw, (c, b) in per.items()]
    return _switch_plan(
        verdict,
        f"set l2mtu={e.fabric_l2mtu} mtu={e.fabric_mtu} on the fabric ports (may reset the "
        "switch chip: links bounce)",
        changes,
        bounces=True,
    )


def rstp_plan(r: Rstp, verdict: Verdict, ctx: Context) -> FixPlan | None:
    changes: list[SwitchChange] = []
    blocked = {p.switch for p in r.ports if p.role in ("alternate-port", "backup-port")}
    for sw in sorted(blocked):
        cmds: list[ApiCommand] = []
        back: list[ApiCommand] = []
        for up in r.uplinks.get(sw, ()):
            sel = ("interface", up)
            cmds.append(
                api("/interface/bridge/port", "set", (("path-cost", RSTP_UPLINK_COST),), sel)
            )
            back.append(api("/interface/bridge/port", "unset", (("value-name", "path-cost"),), sel))
        changes.append(SwitchChange(sw, tuple(cmds), tuple(back)))
    return _switch_plan(
        verdict,
        f"raise the path-cost of the campus uplink to {RSTP_UPLINK_COST} so RSTP re-roots "
        "through the inter-switch link",
        changes,
    )


# --- host fixes -------------------------------------------------------------------------------


def host_octets(ctx: Context) -> dict[str, int]:
    """Every node's host octet: the inventory's `addressing.hosts`, else the trailing digits of
    the name (spark3 -> 3), else the inventory position. Raises FixRefused when two nodes would
    get the same octet: the plan must never create the duplicates it fixes."""
    explicit = ctx.addressing.get("hosts") or {}
    out: dict[str, int] = {}
    for i, node in enumerate(ctx.nodes, start=1):
        m = re.search(r"(\d+)$", node)
        if node in explicit:
            out[node] = int(explicit[node])
        elif m and 0 < int(m.group(1)) < 255:
            out[node] = int(m.group(1))
        else:
            out[node] = i
    by_octet: dict[int, list[str]] = {}
    for node, octet in out.items():
        by_octet.setdefault(octet, []).append(node)
    clash = {o: ns for o, ns in by_octet.items() if len(ns) > 1}
    if clash:
        octet, names = min(clash.items())
        raise FixRefused(
            f"the addressing plan would give {' and '.join(names)} the same host octet {octet} "
            "(from their names' trailing digits): nothing was written",
            hint="give each node its own octet in the inventory, e.g. addressing: {hosts: {"
            + ", ".join(f"{n}: {k}" for k, n in enumerate(sorted(out), start=1))
            + "}}",
        )
    return out


def host_index(node: str, ctx: Context) -> int:
    """The host octet of `node` (see `host_octets`)."""
    octets = host_octets(ctx)
    return octets.get(node, 1)


def rail_index(rail: Rail, rails: Sequence[Rail]) -> int:
    """Rail N = 1..4 in the order port0 A, port0 B, port1 A, port1 B."""
    ordered = sorted(rails, key=lambda r: (r.port, r.half, r.netdev))
    return ordered.index(rail) + 1


def netplan_target(node: str, ctx: Context) -> tuple[str, str, str, str]:
    """(path, text, renderer before, renderer written) of the fabric netplan of `node`: the file
    that already defines its fabric netdevs, edited in place with the renderer it has, or a new
    file with the renderer in force on the host (flows/netplan.py)."""
    rails = tuple(ctx.rails.get(node, ()))
    pattern = str(ctx.addressing.get("pattern") or ctx.expectations.rail_subnet_pattern)
    host = host_index(node, ctx)
    eths: dict[str, dict[str, object]] = {}
    for rail in sorted(rails, key=lambda r: (r.port, r.half, r.netdev)):
        hostvalues.netdev(rail.netdev, node=node, where=NETPLAN_PATH)
        eths[rail.netdev] = {
            "addresses": [pattern.format(rail=rail_index(rail, rails), host=host)],
            "mtu": ctx.expectations.fabric_mtu,
            "dhcp4": False,
            "dhcp6": False,
            "link-local": [],
        }
    files = (ctx.addressing.get("netplan") or {}).get(node) or {}
    now = netplan.found(files, eths)
    doc = netplan.edited(now.doc, eths, now.renderer)
    header = "# written by fabwiz: one subnet per rail, MTU 9000, no IPv6 on the fabric\n"
    text = header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None)
    return now.path or NETPLAN_PATH, text, now.renderer, now.renderer


def netplan_text(node: str, ctx: Context) -> str:
    return netplan_target(node, ctx)[1]


def _nodes_of(verdict: Verdict, ctx: Context) -> list[str]:
    out = []
    for t in verdict.targets:
        node = t.split("/")[0].split(" ")[0]
        if node in ctx.nodes and node not in out:
            out.append(node)
    return out


def _host_plan(
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


def netplan_plan(verdict: Verdict, ctx: Context) -> FixPlan | None:
    """host.duplicate-ip, host.same-subnet-rails, host.mtu, host.ipv6-on-fabric,
    host.half-unused: the one-subnet-per-rail netplan."""
    changes = []
    bounces = False
    renderers: set[str] = set()
    for node in _nodes_of(verdict, ctx):
        if not ctx.rails.get(node):
            continue
        path, text, before, after = netplan_target(node, ctx)
        bounces = bounces or before != after  # a renderer change takes the links down
        renderers.add(after)
        changes.append(
            HostChange(
                node=node,
                files=(HostFile(node, path, text, 0o600),),
                commands=("sudo -n netplan apply",),
                rollback_commands=("sudo -n netplan apply",),
            )
        )
    return _host_plan(
        verdict,
        "write netplan: rail N -> "
        + str(ctx.addressing.get("pattern") or ctx.expectations.rail_subnet_pattern)
        + ", MTU 9000, link-local: [], dhcp6: no (renderer kept: "
        + ", ".join(sorted(renderers))
        + ")",
        changes,
        bounces=bounces,
    )


def sysctl_text(ctx: Context) -> str:
    e = ctx.expectations
    return (
        "# written by fabwiz: multi-rail RoCE hosts answer ARP only on the owning rail\n"
        f"net.ipv4.conf.all.arp_ignore = {e.arp_ignore}\n"
        f"net.ipv4.conf.all.arp_announce = {e.arp_announce}\n"
        f"net.ipv4.conf.all.rp_filter = {e.rp_filter}\n"
    )


def sysctl_plan(verdict: Verdict, ctx: Context) -> FixPlan | None:
    changes = [
        HostChange(
            node=node,
            files=(HostFile(node, SYSCTL_PATH, sysctl_text(ctx)),),
            commands=("sudo -n sysctl --system",),
            rollback_commands=("sudo -n sysctl --system",),
        )
        for node in _nodes_of(verdict, ctx)
    ]
    return _host_plan(verdict, f"persist the ARP sysctls in {SYSCTL_PATH} and load them", changes)


def safe_netdevs(netdevs: Sequence[str]) -> list[str]:
    """Interface names as the kernel allows them (no spaces, quotes or slashes, at most 15
    characters): a name read from a node's output that is anything else never reaches a
    command line or a unit file."""
    out = []
    for n in netdevs:
        try:
            out.append(hostvalues.netdev(n))
        except hostvalues.HostValueError:
            continue
    return out


def pfc_unit_text(netdevs: Sequence[str]) -> str:
    execs = "\n".join(f"ExecStart=/usr/bin/mlnx_qos -i {n} --pfc {PFC_OFF}" for n in netdevs)
    # ordered after the rails' devices exist (mlnx_qos on a missing netdev fails at boot)
    devices = " ".join(f"sys-subsystem-net-devices-{n}.device" for n in netdevs)
    return (
        "# written by fabwiz: the fabric is lossy, so host PFC stays off across reboots\n"
        "[Unit]\n"
        "Description=fabwiz: turn PFC off on the ConnectX-7 fabric rails\n"
        f"Wants={devices} network-online.target\n"
        f"After={devices} network-online.target\n\n"
        "[Service]\n"
        "Type=oneshot\n"
        "RemainAfterExit=yes\n"
        f"{execs}\n"
        "# seed 000's oneshot also keeps the deep C-states off (harmless where cpupower is absent)\n"
        "ExecStart=-/usr/bin/cpupower idle-set -D 0\n\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


def host_pfc_plan(verdict: Verdict, ctx: Context) -> FixPlan | None:
    changes = []
    for node in _nodes_of(verdict, ctx):
        netdevs = safe_netdevs([r.netdev for r in ctx.rails.get(node, ())])
        if not netdevs:
            continue
        changes.append(
            HostChange(
                node=node,
                files=(HostFile(node, PFC_UNIT_PATH, pfc_unit_text(netdevs)),),
                commands=(
                    *(f"sudo -n mlnx_qos -i {shlex.quote(n)} --pfc {PFC_OFF}" for n in netdevs),
                    "sudo -n systemctl daemon-reload",
                    f"sudo -n systemctl enable --now {PFC_UNIT}",
                ),
                rollback_commands=(
                    f"sudo -n systemctl disable {PFC_UNIT}",
                    "sudo -n systemctl daemon-reload",
                ),
            )
        )
    # mlnx_qos --pfc reconfigures the port on mlx5: the link goes down and up (drain rule)
    return _host_plan(
        verdict, f"turn PFC off on every rail now and at boot ({PFC_UNIT})", changes, bounces=True
    )


def nccl_plan(n: NcclConfig, verdict: Verdict, ctx: Context) -> FixPlan | None:
    jobs = tuple(t for t in verdict.targets if "(container " in t or "(process " in t)
    if jobs and len(jobs) < len(verdict.targets):
        return _host_then_job(n, verdict, ctx, jobs)
    changes = []
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
        if node.node not in _nodes_of(host_verdict, ctx):
            continue
        conf = {
            k: v
            for k, v in node.conf.items()
            if not (
                verdict.fault == "nccl.socket-fallback" and k in ("NCCL_NET", "NCCL_IB_DISABLE")
            )
        }
        profile_lines = ["# written by fabwiz: the NCCL settings every job should inherit"]
        if verdict.fault == "nccl.hca-filter":
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
        changes.append(
            HostChange(
                node=node.node,
                files=(
                    HostFile(node.node, NCCL_CONF_PATH, conf_text),
                    HostFile(node.node, NCCL_PROFILE_PATH, "\n".join(profile_lines) + "\n"),
                ),
            )
        )
    summary = (
        "list every active RDMA device exactly in NCCL_IB_HCA, NCCL_IB_ROCE_VERSION_NUM=2 "
        "instead of a pinned GID index, NCCL_SOCKET_IFNAME on the management interface"
        if verdict.fault == "nccl.hca-filter"
        else "remove the NCCL_NET=Socket / NCCL_IB_DISABLE=1 overrides"
    )
    return _host_plan(verdict, summary, changes)


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
        if node.node not in _nodes_of(host_verdict, ctx):
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
    return _physical(verdict, action, "change ~/.nccl.conf by hand", bounces=False)


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
    return _physical(verdict, action, "change the job's environment by hand", bounces=False)


# --- physical actions -------------------------------------------------------------------------


def _physical(verdict: Verdict, action: PhysicalAction, summary: str, *, bounces: bool) -> FixPlan:
    return FixPlan(
        fault=verdict.fault,
        target=", ".join(action.nodes),
        summary=summary,
        preview=action.instructions,
        physical=action,
        bounces_links=bounces,
        verify_checks=(verdict.fault,),
    )


def reseat_plan(verdict: Verdict, ctx: Context) -> FixPlan | None:
    nodes = _nodes_of(verdict, ctx)
    if not nodes:
        return None
    cables: list[tuple[str, str, str]] = []
    for node in nodes:
        seen: set[int] = set()
        for r in ctx.rails.get(node, ()):
            if r.up or r.port in seen:
                continue
            seen.add(r.port)
            dest = f"switch:{r.switch}:{r.switch_port}" if r.switch else "unknown"
            cables.append((node, f"port{r.port}", dest))
    where = "; ".join(f"{n} {p} -> {d.removeprefix('switch:')}" for n, p, d in cables)
    action = PhysicalAction(
        kind="reseat",
        nodes=tuple(nodes),
        instructions=f"Reseat the QSFP cable(s) without carrier ({where}): pull, check the "
        "latch and the cage, push until it clicks. Then AC-drain the node before measuring.",
        cables=tuple(cables),
    )
    return _physical(verdict, action, "reseat the cable of the rail without carrier", bounces=True)


def firmware_plan(verdict: Verdict, ctx: Context, reference: str | None) -> FixPlan | None:
    nodes = _nodes_of(verdict, ctx)
    if not nodes:
        return None
    if verdict.fault == "host.pcie-width":
        text = (
            "Update the BIOS/firmware of the node (vendor's latest GB10 release) so the CX7 "
            "halves train at PCIe Gen5 x4, then reboot."
        )
    elif verdict.fault == "host.cx7-degraded":
        action = PhysicalAction(
            kind="ac_drain",
            nodes=tuple(nodes),
            instructions="AC-drain each node: shut it down, unplug the power cord for at least "
            "60 s, plug back and boot. A reboot is not enough.",
        )
        return _physical(verdict, action, "AC-drain the affected nodes", bounces=True)
    else:
        text = (
            f"Update the OS and the ConnectX-7 firmware to {reference or 'the known-good version'}"
            " (vendor's GB10 update), then reboot the node."
        )
    action = PhysicalAction(kind="firmware_update", nodes=tuple(nodes), instructions=text)
    return _physical(verdict, action, text.split(",")[0], bounces=True)
