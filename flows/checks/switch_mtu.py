"""Switch MTU: can a 9000-byte RoCE frame cross every fabric port?

The offloaded path uses each port's own `l2mtu`, not the bridge's: a fabric port or ISL below
`l2mtu=9216`/`mtu=9000` drops jumbo frames (`switch.mtu`). Good: every fabric port in a bridge at
`l2mtu >= 9216` and `mtu >= 9000`.
"""

from __future__ import annotations

from dataclasses import dataclass

from flows import plans
from flows.base import Check, Context, Observations
from flows.checks._common import (
    SW_BRIDGE_PORT,
    SW_ETHERNET,
    Finding,
    Unreadable,
    is_cpu_port,
    listing,
    rows,
)
from wizard.model import Evidence, FixPlan, Verdict

CMD = "/interface/ethernet print"


@dataclass(frozen=True, slots=True)
class PortMtu:
    switch: str
    name: str
    l2mtu: int | None
    mtu: int | None


@dataclass(frozen=True, slots=True)
class SwitchMtu:
    ports: tuple[PortMtu, ...]
    unreadable: tuple[Unreadable, ...]


def _int(text: str | None) -> int | None:
    try:
        return int(text or "")
    except ValueError:
        return None


def parse(obs: Observations, ctx: Context) -> SwitchMtu:
    ports: list[PortMtu] = []
    bad: list[Unreadable] = []
    for sw in ctx.switches:
        eth, why, _ = rows(obs, sw, SW_ETHERNET)
        bp, _w, _ = rows(obs, sw, SW_BRIDGE_PORT)
        if eth is None:
            if why is not None:
                bad.append(why)
            continue
        bridged = {r.get("interface", "") for r in (bp or ())}
        for r in eth:
            name = r.get("name", "")
            dname = r.get("default-name") or name
            if is_cpu_port(dname) or (bp is not None and name not in bridged):
                continue
            ports.append(PortMtu(sw, name, _int(r.get("l2mtu")), _int(r.get("mtu"))))
    return SwitchMtu(tuple(ports), tuple(bad))


def judge(m: SwitchMtu, ctx: Context) -> list[Verdict]:
    e = ctx.expectations
    f = Finding("switch.mtu")
    for w in m.unreadable:
        f.cannot_tell(w, f"l2mtu>={e.fabric_l2mtu} mtu>={e.fabric_mtu}")
    for p in m.ports:
        ev = Evidence(
            f"{p.switch}/{p.name}",
            CMD,
            f"l2mtu={p.l2mtu} mtu={p.mtu}",
            f"l2mtu>={e.fabric_l2mtu} mtu>={e.fabric_mtu}",
        )
        if p.l2mtu is None or p.mtu is None:
            f.unknown.append(Evidence(ev.target, CMD, "no l2mtu/mtu in the reply", ev.expected))
        elif p.l2mtu < e.fabric_l2mtu or p.mtu < e.fabric_mtu:
            f.fail(ev)
        else:
            f.ok(ev)
    return [
        f.verdict(
            ok="every fabric port carries jumbo frames",
            bad=f"fabric ports below jumbo MTU: {listing(f.targets)}",
        )
    ]


def fix(m: SwitchMtu, verdict: Verdict, ctx: Context) -> FixPlan | None:
    return plans.switch_mtu_plan(m, verdict, ctx)


CHECK = Check(
    id="switch.mtu",
    title="Switch port MTU",
    description=__doc__ or "",
    faults=("switch.mtu",),
    step="addressing",
    probes=(SW_ETHERNET, SW_BRIDGE_PORT),
    parse=parse,
    judge=judge,
    fix=fix,
)
