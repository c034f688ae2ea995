"""Host rails: is every cabled rail up, and are both PCIe halves of a cabled port in use?

A cabled rail without carrier (`NO-CARRIER`, ibdev2netdev `Down`) needs its cable reseated
(`host.rail-down`). Each QSFP port carries both PCIe halves; a node that configures only half A
tops out near 100 Gb/s: half B without an address or down while half A of the same port carries
the fabric is `host.half-unused`. Good: every cabled rail up at 200000Mb/s, both halves addressed.
A pasted `ip` output is judged as one node whose rails are its fabric netdevs; a pasted `ethtool`
of a fabric netdev with `Link detected: no` is that rail without carrier.
"""

from __future__ import annotations

from dataclasses import dataclass

from flows import netplan, plans
from flows.base import Check, Context, Observations, PastedRule
from flows.checks._common import (
    ETHTOOL,
    FABRIC_NETDEV,
    IBDEV,
    IP_ADDR,
    IP_LINK,
    SW_MONITOR,
    Finding,
    Unreadable,
    configured,
    listing,
    pasted_context,
    pasted_ethtool,
    pasted_ip,
    pasted_judge,
    pasted_rails,
    rails_judged_from,
    rows,
)
from wizard.model import Evidence, FixPlan, Rail, Status, Verdict


@dataclass(frozen=True, slots=True)
class HostLinks:
    rails: tuple[Rail, ...]
    cabled_ports: frozenset[tuple[str, int]]  # (node, port) believed cabled
    autoneg_failed: frozenset[tuple[str, str]]  # (switch, port): explained on the switch side
    unreadable: tuple[Unreadable, ...]


def parse(obs: Observations, ctx: Context) -> HostLinks:
    # Rails come from ibdev2netdev; what this check judges comes from `ip -j`: a node whose
    # output cannot be read is unknown, never a silent pass.
    rails, bad = rails_judged_from(obs, ctx, IP_LINK)
    return _links(rails, bad, obs, ctx)


def _links(rails: list[Rail], bad: list[Unreadable], obs: Observations, ctx: Context) -> HostLinks:
    # a port is cabled if the inventory or the host table says so, or if it is up on this node,
    # or if most other nodes have that port up (a cluster is cabled uniformly)
    ports_up: dict[int, int] = {}
    nodes_seen: set[str] = set()
    for r in rails:
        nodes_seen.add(r.node)
    for port in {r.port for r in rails}:
        ports_up[port] = len({r.node for r in rails if r.port == port and r.up})
    cabled: set[tuple[str, int]] = set()
    for r in rails:
        if (
            r.switch_port
            or r.up
            or f"{r.node}/{r.netdev}" in ctx.cabling
            or ports_up.get(r.port, 0) * 2 > len(nodes_seen)
        ):
            cabled.add((r.node, r.port))
    failed: set[tuple[str, str]] = set()
    for sw in ctx.switches:
        mon, _why, _ = rows(obs, sw, SW_MONITOR)
        for m in mon or ():
            if m.get("status") != "link-ok" and m.get("auto-negotiation") == "failed":
                failed.add((sw, m.get("name", "")))
    return HostLinks(tuple(rails), frozenset(cabled), frozenset(failed), tuple(bad))


def judge(h: HostLinks, ctx: Context) -> list[Verdict]:
    down = Finding("host.rail-down")
    half = Finding("host.half-unused")
    for w in h.unreadable:
        down.cannot_tell(w, "rails discovered")
        half.cannot_tell(w, "rails discovered")
    switch_side = {
        (r.node, r.port) for r in h.rails if (r.switch, r.switch_port) in h.autoneg_failed
    }
    if h.autoneg_failed and not switch_side:
        # cabling unknown for down rails: if every down port could be the switch's, do not guess
        switch_side = {(r.node, r.port) for r in h.rails if not r.up}
    for r in h.rails:
        if (r.node, r.port) not in h.cabled_ports:
            continue
        ev = Evidence(
            r.key,
            f"{IBDEV.command}; {IP_LINK.command}",
            "Up" if r.up else "Down (no carrier)",
            "Up at 200000Mb/s",
        )
        if not r.up and (r.node, r.port) not in switch_side:
            down.fail(ev, target=r.node)
        elif r.up:
            down.ok(ev)
    by_port: dict[tuple[str, int], dict[str, Rail]] = {}
    for r in h.rails:
        by_port.setdefault((r.node, r.port), {})[r.half] = r
    for (node, port), halves in sorted(by_port.items()):
        a, b = halves.get("A"), halves.get("B")
        if a is None or b is None:
            continue
        used_a = configured(a) and a.up
        used_b = configured(b) and b.up
        ev = Evidence(
            f"{node}/port{port}",
            IP_ADDR.command,
            f"half A {a.netdev}: {', '.join(a.addresses) or 'no address'}"
            f"{'' if a.up else ' (down)'}; half B {b.netdev}: "
            f"{', '.join(b.addresses) or 'no address'}{'' if b.up else ' (down)'}",
            "both halves addressed and up",
        )
        if used_a != used_b and (node, port) in h.cabled_ports and (a.up or b.up):
            # a half that is down because the whole port is down is host.rail-down, not this
            idle = b if used_a else a
            if configured(idle):
                continue  # addressed but down: host.rail-down says it
            half.fail(ev, target=node)
        elif used_a and used_b:
            half.ok(ev)
    return [
        down.verdict(
            ok="every cabled rail has carrier",
            bad=f"cabled rails without carrier: {listing(down.targets)} (reseat the cable)",
        ),
        half.verdict(
            ok="both PCIe halves of every cabled port are configured",
            bad=f"only one PCIe half is configured on {listing(half.targets)}: the node tops out "
            "near 100 Gb/s",
        ),
    ]


def fix(h: HostLinks, verdict: Verdict, ctx: Context) -> FixPlan | None:
    if verdict.fault == "host.rail-down":
        return plans.reseat_plan(verdict, ctx)
    return plans.netplan_plan(verdict, ctx)


def judge_pasted_ip(text: str, ctx: Context) -> list[Verdict]:
    """A pasted `ip -j addr` / `ip -br addr` / `ip addr`: its fabric netdevs as one node's rails."""
    ip = pasted_ip(text)
    if ip is None:
        return []
    rails = pasted_rails(ip)
    one = pasted_context(ctx, rails)
    return pasted_judge(CHECK, _links(list(rails), [], Observations(), one), one)


def judge_pasted_ethtool(text: str, ctx: Context) -> list[Verdict]:
    """A pasted `ethtool <netdev>`: a fabric netdev without carrier."""
    links = pasted_ethtool(text)
    down = [
        name
        for link in links
        if FABRIC_NETDEV.match(name := link.interface or "") and link.link_detected is False
    ]
    return [
        Verdict("host.rail-down", Status.FAIL, f"{name}: no carrier", (name,), check=CHECK.id)
        for name in down
    ]


CHECK = Check(
    id="host.rail-down",
    title="Host rails: carrier and both PCIe halves",
    description=__doc__ or "",
    faults=("host.rail-down", "host.half-unused"),
    step="preflight",
    probes=(IBDEV, IP_ADDR, IP_LINK, ETHTOOL, SW_MONITOR, netplan.PROBE),
    parse=parse,
    judge=judge,
    fix=fix,
    pasted=(
        PastedRule(("ip-json", "ip-brief", "ip-text"), judge_pasted_ip),
        PastedRule(("ethtool",), judge_pasted_ethtool),
    ),
)
