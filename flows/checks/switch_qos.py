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
accepted end state); with no test yet the verdict says it is not yet proven by traffic.
"""

from __future__ import annotations

from dataclasses import dataclass

from flows import plans
from flows.base import Check, Context, Observations, PastedRule
from flows.checks import traffic_counters
from flows.checks._common import (
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
    rows,
)
from wizard.model import Evidence, FixPlan, Measurement, Status, Verdict

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
    return SwitchQos(tuple(ports), tuple(bad), runs)


def judge(q: SwitchQos, ctx: Context) -> list[Verdict]:
    f = Finding("switch.qos-pfc-stall")
    for w in q.unreadable:
        f.cannot_tell(w, "QoS of the fabric ports")
    lossless = [p for p in q.ports if p.trust_l3 != "ignore" or p.pfc != "disabled"]
    through, stalled, flowed = _through(q.runs, {(p.switch, p.name) for p in lossless}, ctx)
    for p in q.ports:
        ev = Evidence(
            f"{p.switch}/{p.name}",
            CMD,
            f"trust-l3={p.trust_l3} pfc={p.pfc}",
            "trust-l3=ignore pfc=disabled",
        )
        if p in lossless:
            # tests ran through these ports at line rate, none stalled: configured, not biting
            f.fail(ev, target=p.switch, warn=bool(flowed) and not stalled)
        else:
            f.ok(ev)
    ports = listing(f"{p.switch}/{p.name}" for p in lossless)
    if stalled:
        f.bad[:0] = stalled[:4]  # what the fabric did first, then what the ports say
        bad = (
            f"lossless QoS on fabric ports ({ports}): RoCE connects but data stalls (proven: "
            f"{len(stalled)} rail test(s) through them connected, then the sender's ACKs timed "
            "out while the receiver counted nothing)"
        )
    elif flowed:
        f.bad[:0] = flowed[:4]
        bad = (
            f"lossless QoS configured on fabric ports ({ports}), yet {len(flowed)} rail test(s) "
            "through them ran at line rate: not what slows this fabric (lossy RoCE is still the "
            "accepted end state)"
        )
    else:
        seen = (
            f"the {through} rail test(s) through them show neither a stall with its counters "
            "nor line rate"
            if through
            else "no rail test through them yet"
        )
        bad = (
            f"lossless QoS configured on fabric ports ({ports}): it makes RoCE connect, then "
            f"stall; not yet proven by traffic ({seen})"
        )
    return [f.verdict(ok="the fabric ports are lossy (trust-l3=ignore, pfc=disabled)", bad=bad)]


def _through(
    runs: tuple[Measurement, ...], lossless: set[tuple[str, str]], ctx: Context
) -> tuple[int, list[Evidence], list[Evidence]]:
    """The rail tests whose legs cross a lossless port (a leg whose port is not known may):
    (how many, those that stalled with the QoS signature, those that ran at line rate)."""
    through = 0
    stalled: list[Evidence] = []
    flowed: list[Evidence] = []
    if not lossless:
        return through, stalled, flowed
    gate = ctx.expectations.rail_pass_gate_gbps
    for m in runs:
        legs = [
            ctx.cabling.get(f"{m.extra.get(end, '')}/{m.extra.get(end + '_netdev', '')}")
            for end in ("client", "server")
        ]
        if not any(leg is None or leg in lossless for leg in legs):
            continue
        through += 1
        sig = traffic_counters.signature(m, ctx)
        stall = m.value < ctx.expectations.stall_max_gbps
        if sig is not None and stall and sig.stalled_with_timeouts:
            stalled.append(traffic_counters.evidence(m, sig, ctx, Status.FAIL))
        elif m.value >= gate and not m.reason:
            flowed.append(
                Evidence(
                    m.target,
                    str(m.extra.get("command", "ib_write_bw")),
                    f"{m.value:.2f} Gb/s through a lossless port",
                    "a stall (connects, then ACK timeouts, receiver flat) where QoS bites",
                    Status.WARN,
                )
            )
    return through, stalled, flowed


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
    probes=(SW_QOS_PORT, SW_ETHERNET),
    parse=parse,
    judge=judge,
    fix=fix,
    pasted=(PastedRule(("routeros",), judge_pasted),),
)
