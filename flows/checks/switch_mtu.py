"""Switch MTU: can a 9000-byte RoCE frame cross every fabric port?

The offloaded path uses each port's own `l2mtu`, not the bridge's: a fabric port or ISL below
`l2mtu=9216`/`mtu=9000` drops jumbo frames (`switch.mtu`). Good: every fabric port in a bridge at
`l2mtu >= 9216` and `mtu >= 9000`. A pasted `/interface/ethernet` print or export is judged the
same way on its fabric cages (it does not say which ports are bridged: the cage names do); a
pasted jumbo `ping -M do` that loses everything is a warning naming both possible ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flows import plans
from flows.base import Check, Context, Observations, PastedRule
from flows.checks._common import (
    PASTED,
    SW_BRIDGE_PORT,
    SW_ETHERNET,
    Finding,
    Unreadable,
    fabric_port,
    is_cpu_port,
    listing,
    pasted_judge,
    pasted_routeros,
    rows,
)
from wizard.errors import ParseError
from wizard.model import Evidence, FixPlan, Status, Verdict
from wizard.parsers.ping import parse_ping

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
    pings: tuple[dict[str, object], ...] = ()  # the jumbo ping matrix of a --perf run
    rstp_blocked: bool = False  # cross-switch failures are then the detour's


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
    pings = tuple(p for p in obs.traffic.get("ping", ()) if isinstance(p, dict))
    blocked = False
    if any(p.get("cross_switch") and not p.get("ok") for p in pings):
        from flows.checks import switch_rstp

        blocked = switch_rstp.isl_blocked(obs, ctx)
    return SwitchMtu(tuple(ports), tuple(bad), pings, blocked)


def _judge_pings(m: SwitchMtu, ctx: Context, f: Finding) -> None:
    """The jumbo ping matrix: a pair whose both ends run MTU 9000 and still cannot pass
    `ping -M do -s 8972` loses jumbo frames on the switch path."""
    if not m.pings:
        return
    e = ctx.expectations
    mtu = {r.key: r.mtu for rails in ctx.rails.values() for r in rails}
    passed = 0
    for p in m.pings:
        src, dst = str(p.get("src", "")), str(p.get("dst", ""))
        if p.get("ok"):
            passed += 1
            continue
        if min(mtu.get(src, 0), mtu.get(dst, 0)) < e.fabric_mtu:
            continue  # a host netdev below MTU 9000: host.mtu says so
        if p.get("cross_switch") and m.rstp_blocked:
            continue  # the RSTP detour (MTU 1500): switch.rstp-isl-blocked says so
        if p.get("small_ok") is not True and not p.get("mtu_errors"):
            # no reply at any size (or the small ping not read): the pair cannot reach each
            # other at all, which says nothing about jumbo frames on the switch path
            f.unknown.append(
                Evidence(
                    f"{src}->{dst}",
                    str(p.get("command", "ping -M do -s 8972")),
                    f"no reply to {p.get('ip', '?')} at any size: reachability, not MTU "
                    "(an address or a link; see the addressing checks)",
                    "replies to ping -M do -s 8972 (9000-byte frames end to end)",
                    Status.UNKNOWN,
                    raw=str(p.get("raw", "")) or None,
                )
            )
            continue
        f.fail(
            Evidence(
                f"{src}->{dst}",
                str(p.get("command", "ping -M do -s 8972")),
                f"jumbo ping to {p.get('ip', '?')} failed ({p.get('received', 0)} replies)",
                "replies to ping -M do -s 8972 (9000-byte frames end to end)",
                raw=str(p.get("raw", "")) or None,
            )
        )
    f.ok(
        Evidence(
            "fabric",
            "ping -M do -s 8972 (every pair, every plane)",
            f"{passed} of {len(m.pings)} jumbo pings passed",
            "every pair on every plane passes",
        )
    )


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
        if (p.l2mtu is not None and p.l2mtu < e.fabric_l2mtu) or (
            p.mtu is not None and p.mtu < e.fabric_mtu
        ):
            f.fail(ev)
        elif p.l2mtu is None or p.mtu is None:
            f.unknown.append(
                Evidence(ev.target, CMD, "no l2mtu/mtu in the reply", ev.expected, Status.UNKNOWN)
            )
        else:
            f.ok(ev)
    _judge_pings(m, ctx, f)
    return [
        f.verdict(
            ok="every fabric port carries jumbo frames",
            bad=f"fabric ports below jumbo MTU: {listing(f.targets)}",
        )
    ]


def fix(m: SwitchMtu, verdict: Verdict, ctx: Context) -> FixPlan | None:
    return plans.switch_mtu_plan(m, verdict, ctx)


def _value(value: object) -> int | None:
    return None if value is None else _int(str(value))


def _pasted_ports(text: str) -> list[PortMtu]:
    r = pasted_routeros(text)
    if r is None:
        return []
    ports = [
        PortMtu(PASTED, str(name), _value(row.get("l2mtu")), _value(row.get("mtu")))
        for row in r.rows
        if "l2mtu" in row or "mtu" in row
        if fabric_port(name := row.get("default-name") or row.get("name"))
    ]
    for item in r.items("/interface/ethernet"):
        m = re.search(r"default-name=(\S+?)\s*\]", item.target or "")
        name = m.group(1) if m else item.target
        if fabric_port(name) and ("l2mtu" in item.args or "mtu" in item.args):
            l2, mtu = _value(item.args.get("l2mtu")), _value(item.args.get("mtu"))
            ports.append(PortMtu(PASTED, str(name), l2, mtu))
    return ports


def judge_pasted(text: str, ctx: Context) -> list[Verdict]:
    """A pasted `/interface/ethernet` print, API reply or export: its fabric cages as one
    switch's, `PASTED`, judged by `judge`."""
    ports = _pasted_ports(text)
    if not ports:
        return []
    return pasted_judge(CHECK, SwitchMtu(tuple(ports), ()), ctx)


def judge_pasted_ping(text: str, ctx: Context) -> list[Verdict]:
    """A pasted jumbo `ping -M do -s <size>` that lost every packet."""
    try:
        r = parse_ping(text)
    except ParseError:
        return []
    if r.mtu_errors or r.payload is None or r.payload < 8000:
        return []
    if not r.transmitted or r.received:
        return []
    return [
        Verdict(
            "switch.mtu",
            Status.WARN,
            f"jumbo ping ({r.payload} bytes) to {r.address} lost 100%: a switch port or "
            f"ISL below l2mtu 9216 / mtu 9000 (switch.mtu), or the peer's host.mtu",
            targets=tuple(t for t in (r.interface, r.address) if t),
            check=CHECK.id,
        )
    ]


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
    pasted=(
        PastedRule(("routeros",), judge_pasted),
        PastedRule(("ping",), judge_pasted_ping),
    ),
)
