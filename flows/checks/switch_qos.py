"""Switch QoS: is the fabric lossy, as the accepted RoCE end state wants?

Lossless QoS on the offloaded path (`trust-l3=keep`, a PFC profile on the fabric ports) makes
RoCE connect but never move data: the sender's `tx_packets_phy` and `local_ack_timeout_err`
climb, the receiver sees nothing, ping still passes (`switch.qos-pfc-stall`). Good: every fabric
port at `trust-l3=ignore pfc=disabled`. A pasted QoS print or export is judged the same way, its
ports as those of one switch (a paste names no switch and may not list every port).
"""

from __future__ import annotations

from dataclasses import dataclass

from flows import plans
from flows.base import Check, Context, Observations, PastedRule
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
from wizard.model import Evidence, FixPlan, Verdict

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
    return SwitchQos(tuple(ports), tuple(bad))


def judge(q: SwitchQos, ctx: Context) -> list[Verdict]:
    f = Finding("switch.qos-pfc-stall")
    for w in q.unreadable:
        f.cannot_tell(w, "QoS of the fabric ports")
    for p in q.ports:
        ev = Evidence(
            f"{p.switch}/{p.name}",
            CMD,
            f"trust-l3={p.trust_l3} pfc={p.pfc}",
            "trust-l3=ignore pfc=disabled",
        )
        if p.trust_l3 != "ignore" or p.pfc != "disabled":
            f.fail(ev, target=p.switch)
        else:
            f.ok(ev)
    lossless = [e.target for e in f.bad]
    return [
        f.verdict(
            ok="the fabric ports are lossy (trust-l3=ignore, pfc=disabled)",
            bad=f"lossless QoS on fabric ports ({listing(lossless)}): RoCE connects but data "
            "stalls",
        )
    ]


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
