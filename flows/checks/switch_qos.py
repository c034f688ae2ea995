"""Switch QoS: is the fabric lossy, as the accepted RoCE end state wants?

Lossless QoS on the offloaded path (`trust-l3=keep`, a PFC profile on the fabric ports) makes
RoCE connect but never move data: the sender's `tx_packets_phy` and `local_ack_timeout_err`
climb, the receiver sees nothing, ping still passes (`switch.qos-pfc-stall`). Good: every fabric
port at `trust-l3=ignore pfc=disabled`. A pasted QoS print or export is judged the same way, its
ports as those of one switch (a paste names no switch and may not list every port).

The configuration says what should happen; the proof is what the rail tests through those ports
did (`obs.measurements`, the counters read while each moved data): a test that connected and stalled with
the sender's ACK timeouts climbing and the receiver flat proves the stall; tests that ran at line
rate through lossless ports say it is not what slows this fabric (a warning: lossy is still the
accepted end state); with no test yet the verdict says it is not yet proven by traffic. ARP flux
stalls a test the same way (no ACK comes back for frames sent to a wrong MAC), so a stalled test
proves QoS only when neither end's address is shared or in a subnet another rail of its node is
in (every node's addresses read); a stall between such ends is lossless QoS or ARP flux, and the
verdict says the traffic cannot yet tell them apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flows import plans
from flows.base import Check, Context, Observations, PastedRule
from flows.checks import traffic_counters
from flows.checks._common import (
    IBDEV,
    IP_ADDR,
    PASTED,
    SW_ETHERNET,
    SW_QOS_PORT,
    Finding,
    Unreadable,
    default_names,
    is_cpu_port,
    listing,
    pasted_judge,
    pasted_routeros,
    rails_judged_from,
    rows,
)
from wizard.model import Evidence, FixPlan, Measurement, Status, Verdict
from wizard.schedule import arp_flux_netdevs

CMD = "/interface/ethernet/switch/qos/port print"


@dataclass(frozen=True, slots=True)
class QosPort:
    switch: str
    name: str
    trust_l3: str
    pfc: str


@dataclass(frozen=True, slots=True)
class SwitchQos:
    ports: tuple[QosPort, ...]
    unreadable: tuple[Unreadable, ...]
    runs: tuple[Measurement, ...] = ()  # the rail tests of this fabric state (the proof)
    # the ends (`node/netdev`) a stall could be ARP flux on, and the nodes whose addresses were
    # not read (with one unread, any address may be shared: no stall is QoS alone)
    flux: frozenset[str] = frozenset()
    unaddressed: frozenset[str] = frozenset()


def lossless(p: QosPort) -> bool:
    return p.trust_l3 != "ignore" or p.pfc != "disabled"


def lossless_ports(q: SwitchQos) -> frozenset[tuple[str, str]]:
    """The (switch, port) pairs whose QoS is lossless."""
    return frozenset((p.switch, p.name) for p in q.ports if lossless(p))


def parse(obs: Observations, ctx: Context) -> SwitchQos:
    ports: list[QosPort] = []
    bad: list[Unreadable] = []
    for sw in ctx.switches:
        qos, why, _ = rows(obs, sw, SW_QOS_PORT)
        eth, _w, _ = rows(obs, sw, SW_ETHERNET)
        if qos is None:
            if why is not None:
                bad.append(why)
            continue
        names = default_names(eth or ())
        for r in qos:
            name = r.get("name", "")
            dname = names.get(name, name)
            if is_cpu_port(dname) or "cpu" in dname or (names and name not in names):
                continue
            ports.append(QosPort(sw, name, r.get("trust-l3", "ignore"), r.get("pfc", "disabled")))
    runs = tuple(m for m in obs.measurements if m.kind == "rail" and m.valid)
    if not runs:
        return SwitchQos(tuple(ports), tuple(bad))
    rails, unread = rails_judged_from(obs, ctx, IP_ADDR)
    return SwitchQos(
        tuple(ports),
        tuple(bad),
        runs,
        frozenset(arp_flux_netdevs(rails)),
        frozenset(w.target for w in unread),
    )


def judge(q: SwitchQos, ctx: Context) -> list[Verdict]:
    f = Finding("switch.qos-pfc-stall")
    for w in q.unreadable:
        f.cannot_tell(w, "QoS of the fabric ports")
    bad_ports = lossless_ports(q)
    t = _through(q, bad_ports, ctx)
    for p in q.ports:
        ev = Evidence(
            f"{p.switch}/{p.name}",
            CMD,
            f"trust-l3={p.trust_l3} pfc={p.pfc}",
            "trust-l3=ignore pfc=disabled",
        )
        if (p.switch, p.name) in bad_ports:
            # tests ran through these ports at line rate, none stalled: configured, not biting
            f.fail(ev, target=p.switch, warn=bool(t.flowed) and not (t.stalled or t.flux_too))
        else:
            f.ok(ev)
    ports = listing(f"{p.switch}/{p.name}" for p in q.ports if (p.switch, p.name) in bad_ports)
    if t.stalled:
        f.bad[:0] = t.stalled[:4]  # what the fabric did first, then what the ports say
        bad = (
            f"lossless QoS on fabric ports ({ports}): RoCE connects but data stalls (proven: "
            f"{len(t.stalled)} rail test(s) through them connected, then the sender's ACKs timed "
            "out while the receiver counted nothing, between ends with unique addresses)"
        )
    elif t.flux_too:
        f.bad[:0] = t.flux_too[:4]
        bad = (
            f"lossless QoS on fabric ports ({ports}): RoCE connects, then stalls; "
            f"{len(t.flux_too)} rail test(s) through them stalled (ACK timeouts, receiver flat), "
            f"but {_flux_why(q)}, and ARP flux stalls a test the same way: not yet proven by "
            "traffic apart from ARP flux (QoS comes first in the bisection order: make the "
            "fabric lossy, then the addressing step tests again)"
        )
    elif t.flowed:
        f.bad[:0] = t.flowed[:4]
        bad = (
            f"lossless QoS configured on fabric ports ({ports}), yet {len(t.flowed)} rail test(s) "
            "through them ran at line rate: not what slows this fabric (lossy RoCE is still the "
            "accepted end state)"
        )
    else:
        seen = (
            f"the {t.count} rail test(s) through them show neither a stall with its counters "
            "nor line rate"
            if t.count
            else "no rail test through them yet"
        )
        bad = (
            f"lossless QoS configured on fabric ports ({ports}): it makes RoCE connect, then "
            f"stall; not yet proven by traffic ({seen})"
        )
    return [f.verdict(ok="the fabric ports are lossy (trust-l3=ignore, pfc=disabled)", bad=bad)]


def _flux_why(q: SwitchQos) -> str:
    """Why the stalls of `_Through.flux_too` may be ARP flux, in words."""
    if q.unaddressed:
        return f"the fabric addresses of {listing(sorted(q.unaddressed))} were not read"
    return "an end of each shares its address or subnet with another rail"


@dataclass
class _Through:
    """The rail tests whose legs cross a lossless port (a leg whose port is not known may)."""

    count: int = 0
    stalled: list[Evidence] = field(default_factory=list)  # the QoS signature, unique ends
    flux_too: list[Evidence] = field(default_factory=list)  # the same, an end ARP flux may hit
    flowed: list[Evidence] = field(default_factory=list)  # line rate


def _through(q: SwitchQos, bad_ports: frozenset[tuple[str, str]], ctx: Context) -> _Through:
    out = _Through()
    if not bad_ports:
        return out
    gate = ctx.expectations.rail_pass_gate_gbps
    for m in q.runs:
        ends = [f"{m.extra.get(end, '')}/{m.extra.get(end + '_netdev', '')}" for end in _ENDS]
        legs = [ctx.cabling.get(key) for key in ends]
        if not any(leg is None or leg in bad_ports for leg in legs):
            continue
        out.count += 1
        sig = traffic_counters.signature(m, ctx)
        stall = m.value < ctx.expectations.stall_max_gbps
        if sig is not None and stall and sig.stalled_with_timeouts:
            flux = bool(q.unaddressed) or any(key in q.flux for key in ends)
            ev = traffic_counters.evidence(m, sig, ctx, Status.FAIL)
            (out.flux_too if flux else out.stalled).append(ev)
        elif m.value >= gate and not m.reason:
            out.flowed.append(
                Evidence(
                    m.target,
                    str(m.extra.get("command", "ib_write_bw")),
                    f"{m.value:.2f} Gb/s through a lossless port",
                    "a stall (connects, then ACK timeouts, receiver flat) where QoS bites",
                    Status.WARN,
                )
            )
    return out


_ENDS = ("client", "server")


def fix(q: SwitchQos, verdict: Verdict, ctx: Context) -> FixPlan | None:
    return plans.qos_plan(q, verdict, ctx)


def _setting(value: object, default: str) -> str:
    return default if value in (None, "", False) else str(value)


def judge_pasted(text: str, ctx: Context) -> list[Verdict]:
    """A pasted `/interface/ethernet/switch/qos/port` print, API reply or export: its ports as
    one switch's, `PASTED`, judged by `judge`."""
    r = pasted_routeros(text)
    if r is None:
        return []
    ports = [
        QosPort(
            PASTED,
            str(name),
            _setting(row.get("trust-l3"), "ignore"),
            _setting(row.get("pfc"), "disabled"),
        )
        for row in r.rows
        if "trust-l3" in row or "pfc" in row
        if (name := row.get("name") or row.get("interface"))
    ]
    for item in r.items("/interface/ethernet/switch/qos/port"):
        name = item.target or item.args.get("interface")
        if name and ("trust-l3" in item.args or "pfc" in item.args):
            trust, pfc = item.args.get("trust-l3"), item.args.get("pfc")
            ports.append(
                QosPort(PASTED, name, _setting(trust, "ignore"), _setting(pfc, "disabled"))
            )
    fabric = [p for p in ports if not (is_cpu_port(p.name) or "cpu" in p.name)]
    if not fabric:
        return []
    return pasted_judge(CHECK, SwitchQos(tuple(fabric), ()), ctx)


CHECK = Check(
    id="switch.qos-pfc-stall",
    title="Switch QoS (lossy RoCE)",
    description=__doc__ or "",
    faults=("switch.qos-pfc-stall",),
    step="qos",
    # the nodes' addresses tell a QoS stall from one ARP flux gives (both stall a test alike)
    probes=(SW_QOS_PORT, SW_ETHERNET, IBDEV, IP_ADDR),
    parse=parse,
    judge=judge,
    fix=fix,
    pasted=(PastedRule(("routeros",), judge_pasted),),
)
