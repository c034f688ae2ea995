"""Switch links: is every cabled breakout leg up at 200G with RS-FEC?

The QSFP56-DD cages do not auto-negotiate a 2x200G breakout: the lane masters `-1` and `-5` stay
at `no-link` with `auto-negotiation: failed` (log: "module auto-initialization failed, try
forced-mode") until they are forced to `auto-negotiation=no speed=200G-baseCR4`
(`switch.breakout-autoneg`). A leg that is up below 200G or without `fec91` is
`switch.link-degraded`. Good: every cabled leg `link-ok`, `rate=200Gbps`, `fec=fec91`.
A pasted `ethtool <netdev>` of a fabric netdev linked below 200000Mb/s is a warning on its leg.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from flows import loghistory, plans
from flows.base import Check, Context, Observations, PastedRule
from flows.checks._common import (
    FABRIC_NETDEV,
    SW_CLOCK,
    SW_ETHERNET,
    SW_LOG,
    SW_MONITOR,
    Finding,
    Unreadable,
    default_names,
    is_cpu_port,
    is_true,
    listing,
    pasted_ethtool,
    rows,
)
from wizard.model import Evidence, FixPlan, Status, Verdict

MONITOR_CMD = "/interface/ethernet/monitor once"


@dataclass(frozen=True, slots=True)
class PortLink:
    switch: str
    name: str
    default_name: str
    cabled: bool
    status: str
    autoneg: str  # monitor's auto-negotiation: done, failed, disabled...
    rate: str
    fec: str
    autoneg_config: bool  # /interface/ethernet auto-negotiation
    log_autoinit_failed: bool
    history: str = ""  # the port's log lines set aside as older than the last change


@dataclass(frozen=True, slots=True)
class SwitchLinks:
    ports: tuple[PortLink, ...]
    unreadable: tuple[Unreadable, ...]


def expected_rate(default_name: str, ctx: Context) -> str | None:
    if default_name.startswith("sfp56"):
        return "50Gbps"
    if default_name.startswith("qsfp"):
        return ctx.expectations.link_rate
    return None


def parse(obs: Observations, ctx: Context) -> SwitchLinks:
    ports: list[PortLink] = []
    bad: list[Unreadable] = []
    for sw in ctx.switches:
        eth, why, _ = rows(obs, sw, SW_ETHERNET)
        mon, why2, _ = rows(obs, sw, SW_MONITOR)
        log, _why3, _ = rows(obs, sw, SW_LOG)
        clock, _why4, _ = rows(obs, sw, SW_CLOCK)
        for w in (why, why2):
            if w is not None:
                bad.append(w)
        if eth is None or mon is None:
            continue
        names = default_names(eth)
        config = {r.get("name", ""): r for r in eth}
        cabled_ports = {p for (s, p) in ctx.cabling.values() if s == sw}
        lines = loghistory.split(log or (), sw, ctx.changed_at, loghistory.clock_now(clock))
        failed_log = _autoinit_text(lines.current)
        old_log = _autoinit_text(lines.history)
        for r in mon:
            name = r.get("name", "")
            dname = names.get(name, name)
            if is_cpu_port(dname):
                continue
            ports.append(
                PortLink(
                    switch=sw,
                    name=name,
                    default_name=dname,
                    cabled=is_true(r.get("sfp-module-present")) or name in cabled_ports,
                    status=r.get("status", ""),
                    autoneg=r.get("auto-negotiation", ""),
                    rate=r.get("rate", ""),
                    fec=r.get("fec", ""),
                    autoneg_config=is_true(config.get(name, {}).get("auto-negotiation")),
                    log_autoinit_failed=_names(name, failed_log),
                    history=_history(name, lines.history, lines.since) if old_log else "",
                )
            )
    return SwitchLinks(tuple(ports), tuple(bad))


def _autoinit_text(log: Iterable[Mapping[str, str]]) -> str:
    return " ".join(
        r.get("message", "") for r in log if "auto-initialization failed" in r.get("message", "")
    )


def _names(name: str, text: str) -> bool:
    return name in text.split() or f"{name} " in text


def _history(name: str, old: Iterable[Mapping[str, str]], since: float | None) -> str:
    mine = [r for r in old if _names(name, _autoinit_text([r]))]
    if not mine or since is None:
        return ""
    stamps = ", ".join(r.get("time", "?") for r in mine[-3:])
    return (
        f"; set aside as history: {len(mine)} log line(s) 'module auto-initialization failed' "
        f"from before the change at {loghistory.since_text(since)} ({stamps})"
    )


def autoneg_failed(p: PortLink) -> bool:
    return (
        p.cabled
        and p.status != "link-ok"
        and (p.autoneg == "failed" or p.log_autoinit_failed or p.status == "auto-init-failed")
    )


def judge(links: SwitchLinks, ctx: Context) -> list[Verdict]:
    an = Finding("switch.breakout-autoneg")
    deg = Finding("switch.link-degraded")
    for w in links.unreadable:
        an.cannot_tell(w, "monitor of the fabric ports")
        deg.cannot_tell(w, "monitor of the fabric ports")
    for p in links.ports:
        target = f"{p.switch}/{p.name}"
        if not p.cabled:
            continue
        if autoneg_failed(p):
            an.fail(
                Evidence(
                    target,
                    MONITOR_CMD,
                    f"status={p.status} auto-negotiation={p.autoneg}"
                    + (" (log: module auto-initialization failed)" if p.log_autoinit_failed else "")
                    + p.history,
                    "status=link-ok with auto-negotiation=no speed=200G-baseCR4 on lane masters",
                )
            )
            continue
        if p.status != "link-ok":
            continue  # no link without an autoneg failure: judged as host.rail-down
        want = expected_rate(p.default_name, ctx)
        problems = []
        if want and p.rate != want:
            problems.append(f"rate={p.rate}")
        if p.fec != ctx.expectations.link_fec:
            problems.append(f"fec={p.fec or 'off'}")
        ev = Evidence(
            target,
            MONITOR_CMD,
            f"status=link-ok rate={p.rate} fec={p.fec}" + p.history,
            f"rate={want or 'any'} fec={ctx.expectations.link_fec}",
        )
        if problems:
            deg.fail(ev)
        else:
            deg.ok(ev)
            an.ok(ev)
    return [
        an.verdict(
            ok="every cabled breakout leg is up",
            bad=f"breakout legs without link, auto-negotiation failed: {listing(an.targets)}",
        ),
        deg.verdict(
            ok="every cabled leg is up at full rate with RS-FEC",
            bad=f"links up but degraded (rate or FEC): {listing(deg.targets)}",
        ),
    ]


def fix(links: SwitchLinks, verdict: Verdict, ctx: Context) -> FixPlan | None:
    return plans.switch_link_plan(links, verdict, ctx)


def judge_pasted(text: str, ctx: Context) -> list[Verdict]:
    """A pasted `ethtool <netdev>`: a fabric netdev linked below the expected speed."""
    want = ctx.expectations.link_speed_mbps
    return [
        Verdict(
            "switch.link-degraded",
            Status.WARN,
            f"{name}: {link.speed_mbps}Mb/s, below {want}Mb/s",
            targets=(name,),
            check=CHECK.id,
        )
        for link in pasted_ethtool(text)
        if FABRIC_NETDEV.match(name := link.interface or "")
        and link.link_detected is not False
        and link.speed_mbps is not None
        and link.speed_mbps < want
    ]


CHECK = Check(
    id="switch.breakout-autoneg",
    title="Switch links (breakout legs, rate, FEC)",
    description=__doc__ or "",
    faults=("switch.breakout-autoneg", "switch.link-degraded"),
    step="preflight",
    probes=(SW_ETHERNET, SW_MONITOR, SW_LOG, SW_CLOCK),
    parse=parse,
    judge=judge,
    fix=fix,
    pasted=(PastedRule(("ethtool",), judge_pasted),),
)
