"""Host addressing: one unique IPv4 address per rail, one subnet per rail, MTU 9000, no IPv6.

The same IPv4 address on two fabric netdevs (one node or across nodes) gives ARP flux: RDMA
frames leave the NIC and vanish (`host.duplicate-ip`). Several rails of one node in one subnet
confuse the kernel's source selection (`host.same-subnet-rails`). A fabric netdev below MTU 9000
drops RoCE jumbo frames (`host.mtu`). IPv6 addresses on fabric netdevs shift the RoCE GID
indices (`host.ipv6-on-fabric`). Good: rail N -> 10.9.N.<host>/24, MTU 9000, no inet6.
A pasted `ip` output is judged as one node whose rails are its fabric netdevs; a pasted
`ping -M do` that fails locally with "message too long" is the sender's `host.mtu`.

The addresses say what should happen; the proof of ARP flux is what the rail tests to and from
the netdevs that share an address did (`obs.measurements`, the counters read while each moved
data): frames left the sender and neither its switch leg nor the receiver counted them (seed
000). No ACK comes back for such frames, so the sender's ACKs time out, exactly as in a
lossless-QoS stall: a test proves ARP flux only where no lossless QoS port can be on its path
(every switch's QoS read, its legs lossy). A stall on a path that crosses lossless ports is
lossless QoS or ARP flux, and the traffic cannot tell which: the QoS step comes first in the
bisection order, and the verdict says so. With no such test it is not yet proven by traffic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flows import netplan, plans
from flows.base import Check, Context, Observations, PastedRule
from flows.checks import switch_qos, traffic_counters
from flows.checks._common import (
    IBDEV,
    IP_ADDR,
    IP_LINK,
    SW_ETHERNET,
    SW_QOS_PORT,
    Finding,
    Unreadable,
    configured,
    listing,
    pasted_context,
    pasted_ip,
    pasted_judge,
    pasted_rails,
    rails_judged_from,
)
from wizard.errors import ParseError
from wizard.model import Evidence, FixPlan, Measurement, Rail, Status, Verdict
from wizard.parsers.ping import parse_ping
from wizard.schedule import address_owners, subnet_members

ADDR_CMD = IP_ADDR.command
LINK_CMD = IP_LINK.command
FAULTS = ("host.duplicate-ip", "host.same-subnet-rails", "host.mtu", "host.ipv6-on-fabric")


@dataclass(frozen=True, slots=True)
class Addressing:
    rails: tuple[Rail, ...]
    unreadable: tuple[Unreadable, ...]
    runs: tuple[Measurement, ...] = ()  # the rail tests of this fabric state (the proof)
    # the switch ports that are lossless (a stall through one may be QoS), and the switches
    # whose QoS could not be read (any of their ports may be)
    lossless: frozenset[tuple[str, str]] = frozenset()
    qos_unread: frozenset[str] = frozenset()


def parse(obs: Observations, ctx: Context) -> Addressing:
    # Rails come from ibdev2netdev; what this check judges comes from `ip -j`: a node whose
    # output cannot be read is unknown, never a silent pass.
    rails, bad = rails_judged_from(obs, ctx, IP_ADDR)
    runs = tuple(m for m in obs.measurements if m.kind == "rail" and m.valid)
    if not runs:
        return Addressing(tuple(rails), tuple(bad))
    qos = switch_qos.parse(obs, ctx)
    return Addressing(
        tuple(rails),
        tuple(bad),
        runs,
        switch_qos.lossless_ports(qos),
        frozenset(w.target for w in qos.unreadable),
    )


@dataclass
class _Vanishing:
    """The rail tests to or from a netdev whose address another netdev holds too."""

    through: int = 0
    proven: list[Evidence] = field(default_factory=list)  # vanished where QoS cannot stall
    qos_too: list[Evidence] = field(default_factory=list)  # vanished across a lossless port


def _vanishing(a: Addressing, shared: set[str], ctx: Context) -> _Vanishing:
    """Those tests, and which of them sent frames that no switch leg and no receiver counted:
    proof of ARP flux where neither leg can be a lossless port, else a stall that lossless QoS
    explains as well."""
    out = _Vanishing()
    for m in a.runs:
        ends = {
            f"{m.extra.get(end, '')}/{m.extra.get(end + '_netdev', '')}"
            for end in ("client", "server")
        }
        if not ends & shared:
            continue
        out.through += 1
        sig = traffic_counters.signature(m, ctx)
        moved_nothing = m.value < ctx.expectations.stall_max_gbps
        if sig is None or not moved_nothing or not sig.vanished:
            continue
        ev = traffic_counters.evidence(m, sig, ctx, Status.FAIL)
        (out.qos_too if _may_be_lossless(m, a, ctx) else out.proven).append(ev)
    return out


def _may_be_lossless(m: Measurement, a: Addressing, ctx: Context) -> bool:
    """Whether a leg of the test can be a lossless QoS port: one is, a leg's port is not known
    while some port is lossless, or its switch's QoS was not read."""
    for end in ("client", "server"):
        leg = ctx.cabling.get(f"{m.extra.get(end, '')}/{m.extra.get(end + '_netdev', '')}")
        if leg is None:
            if a.lossless or a.qos_unread:
                return True
        elif leg in a.lossless or leg[0] in a.qos_unread:
            return True
    return False


def _duplicates_said(a: Addressing, f: Finding, ctx: Context) -> str:
    """The duplicate-address verdict's words: proven by the frames that vanished where no
    lossless port could stall them, or not yet proven by traffic (the proof's rows go first)."""
    shared = {e.target for e in f.bad if e.command == ADDR_CMD}
    keys = {k.strip() for t in shared for k in t.split(",")}
    v = _vanishing(a, keys, ctx)
    head = f"the same IPv4 address sits on several fabric netdevs ({listing(f.targets)}): ARP flux"
    if v.proven:
        f.bad[:0] = v.proven[:4]  # what the fabric did first, then what the addresses say
        return (
            f"{head} (proven: {len(v.proven)} rail test(s) to or from them sent frames that no "
            "switch leg and no receiver counted, on lossy switch ports)"
        )
    if v.qos_too:
        f.bad[:0] = v.qos_too[:4]
        return (
            f"{head}, RDMA frames vanish; {len(v.qos_too)} rail test(s) to or from them stalled "
            "(frames counted by no switch leg and no receiver), but across lossless QoS ports, "
            "which stall the same way: not yet proven by traffic apart from QoS (make the "
            "fabric lossy first, as the bisection order does, then test again)"
        )
    seen = (
        f"the {v.through} rail test(s) to or from them show no frame vanishing"
        if v.through
        else "no rail test to or from them yet"
    )
    return f"{head}, RDMA frames vanish; not yet proven by traffic ({seen})"


def _judge_duplicates(rails: tuple[Rail, ...], f: Finding) -> None:
    """Each fabric address on exactly one netdev (of any node)."""
    for ip, holders in sorted(address_owners(rails).items()):
        ev = Evidence(
            ", ".join(h.key for h in holders),
            ADDR_CMD,
            f"{ip} on {len(holders)} netdevs",
            "each address on exactly one fabric netdev",
        )
        if len(holders) > 1:
            for h in holders:
                if h.node not in f.targets:
                    f.targets.append(h.node)
            f.fail(ev, target=holders[0].node)
        else:
            f.ok(ev)


def _judge_subnets(node: str, rails: list[Rail], f: Finding) -> None:
    """One subnet per rail of a node (the same address twice is host.duplicate-ip instead)."""
    for (_node, net), members in subnet_members(rails).items():
        distinct = {ip for _r, ip in members}
        netdevs = sorted({r.netdev for r, _ip in members})
        ev = Evidence(node, ADDR_CMD, f"{net} on {', '.join(netdevs)}", "one subnet per rail")
        if len(netdevs) > 1 and len(distinct) > 1:
            f.fail(ev)
        else:
            f.ok(ev)


def _judge_netdevs(node: str, rails: list[Rail], ctx: Context, f: dict[str, Finding]) -> None:
    """The MTU of each configured rail, and no inet6 on any."""
    e = ctx.expectations
    for r in rails:
        if configured(r):
            ev = Evidence(r.key, LINK_CMD, f"mtu {r.mtu}", f"mtu {e.fabric_mtu}")
            if r.mtu and r.mtu != e.fabric_mtu:
                f["host.mtu"].fail(ev, target=node)
            else:
                f["host.mtu"].ok(ev)
        ev6 = Evidence(
            r.key,
            ADDR_CMD,
            "inet6 " + (", ".join(r.ipv6) or "none"),
            "no inet6 on fabric netdevs",
        )
        if r.ipv6:
            f["host.ipv6-on-fabric"].fail(ev6, target=node)
        else:
            f["host.ipv6-on-fabric"].ok(ev6)


def judge(a: Addressing, ctx: Context) -> list[Verdict]:
    e = ctx.expectations
    f = {k: Finding(k) for k in FAULTS}
    for w in a.unreadable:
        for k in FAULTS:
            f[k].cannot_tell(w, "rails discovered")
    _judge_duplicates(a.rails, f["host.duplicate-ip"])
    by_node: dict[str, list[Rail]] = {}
    for r in a.rails:
        by_node.setdefault(r.node, []).append(r)
    for node, rails in by_node.items():
        _judge_subnets(node, rails, f["host.same-subnet-rails"])
        _judge_netdevs(node, rails, ctx, f)
    return [
        f["host.duplicate-ip"].verdict(
            ok="every fabric address is unique",
            bad=_duplicates_said(a, f["host.duplicate-ip"], ctx)
            if f["host.duplicate-ip"].bad
            else "",
        ),
        f["host.same-subnet-rails"].verdict(
            ok="each rail of a node is in its own subnet",
            bad=f"rails of one node share a subnet: {listing(f['host.same-subnet-rails'].targets)}",
        ),
        f["host.mtu"].verdict(
            ok=f"every configured fabric netdev has MTU {e.fabric_mtu}",
            bad=f"fabric netdevs below MTU {e.fabric_mtu}: {listing(f['host.mtu'].targets)}",
        ),
        f["host.ipv6-on-fabric"].verdict(
            ok="no IPv6 on the fabric netdevs",
            bad=f"IPv6 addresses on fabric netdevs (RoCE GID indices shift): {listing(f['host.ipv6-on-fabric'].targets)}",
        ),
    ]


def fix(a: Addressing, verdict: Verdict, ctx: Context) -> FixPlan | None:
    return plans.netplan_plan(verdict, ctx)


def judge_pasted_ip(text: str, ctx: Context) -> list[Verdict]:
    """A pasted `ip -j addr` / `ip -br addr` / `ip addr`: its fabric netdevs as one node's rails."""
    ip = pasted_ip(text)
    if ip is None:
        return []
    rails = pasted_rails(ip)
    return pasted_judge(CHECK, Addressing(rails, ()), pasted_context(ctx, rails))


def judge_pasted_ping(text: str, ctx: Context) -> list[Verdict]:
    """A pasted `ping -M do -s <size>` refused locally: the sending netdev's MTU is too small."""
    try:
        r = parse_ping(text)
    except ParseError:
        return []
    if not r.mtu_errors:
        return []
    return [
        Verdict(
            "host.mtu",
            Status.FAIL,
            f"ping -M do -s {r.payload}: local error 'message too long, mtu="
            f"{r.reported_mtu}': the sending netdev MTU is below the packet size",
            targets=tuple(t for t in (r.interface,) if t),
            check=CHECK.id,
        )
    ]


CHECK = Check(
    id="host.duplicate-ip",
    title="Host addressing (unique, one subnet per rail, MTU, no IPv6)",
    description=__doc__ or "",
    faults=FAULTS,
    step="addressing",
    # the switches' QoS tells a stall from ARP flux apart from one lossless QoS gives
    probes=(IBDEV, IP_ADDR, IP_LINK, netplan.PROBE, SW_QOS_PORT, SW_ETHERNET),
    parse=parse,
    judge=judge,
    fix=fix,
    pasted=(
        PastedRule(("ip-json", "ip-brief", "ip-text"), judge_pasted_ip),
        PastedRule(("ping",), judge_pasted_ping),
    ),
)
