"""Host fix plans that write files: the one-subnet-per-rail netplan, the ARP sysctls, the
systemd oneshot that keeps PFC off at boot, each with the commands that apply it."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

import yaml

from flows import netplan
from flows.base import Context
from flows.fixplans.common import (
    NETPLAN_PATH,
    PFC_OFF,
    PFC_UNIT,
    PFC_UNIT_PATH,
    SYSCTL_PATH,
    host_plan,
    nodes_of,
)
from wizard import hostvalues
from wizard.errors import FixRefused
from wizard.model import FixPlan, HostChange, HostFile, Rail, Verdict

__all__ = [
    "host_index",
    "host_octets",
    "host_pfc_plan",
    "netplan_plan",
    "netplan_target",
    "netplan_text",
    "pfc_unit_text",
    "rail_index",
    "safe_netdevs",
    "sysctl_plan",
    "sysctl_text",
]


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


def netplan_plan(verdict: Verdict, ctx: Context) -> FixPlan | None:
    """host.duplicate-ip, host.same-subnet-rails, host.mtu, host.ipv6-on-fabric,
    host.half-unused: the one-subnet-per-rail netplan."""
    changes = []
    bounces = False
    renderers: set[str] = set()
    for node in nodes_of(verdict, ctx):
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
    return host_plan(
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
        for node in nodes_of(verdict, ctx)
    ]
    return host_plan(verdict, f"persist the ARP sysctls in {SYSCTL_PATH} and load them", changes)


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
    for node in nodes_of(verdict, ctx):
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
    return host_plan(
        verdict, f"turn PFC off on every rail now and at boot ({PFC_UNIT})", changes, bounces=True
    )
