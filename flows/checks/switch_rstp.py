"""RSTP between switches: does cross-switch traffic take the inter-switch link?

With two switches each holding a management uplink into the campus network, RSTP may block the
ISL and cross-switch RoCE detours through the campus (2.5 Gb/s, MTU 1500): ~4.5 Gb/s per flow
(`switch.rstp-isl-blocked`). Good: no fabric port in `alternate-port`/`backup-port` role.
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
    default_names,
    is_cpu_port,
    is_true,
    rows,
)
from wizard.model import Evidence, FixPlan, Status, Verdict

CMD = "/interface/bridge/port print"
BLOCKING = ("alternate-port", "backup-port")


@dataclass(frozen=True, slots=True)
class PortRole:
    switch: str
    interface: str
    bridge: str
    role: str
    forwarding: bool | None


@dataclass(frozen=True, slots=True)
class Rstp:
    ports: tuple[PortRole, ...]
    uplinks: dict[str, tuple[str, ...]]  # switch -> CPU/management ports in a bridge
    unreadable: tuple[Unreadable, ...]


def parse(obs: Observations, ctx: Context) -> Rstp:
    ports: list[PortRole] = []
    uplinks: dict[str, tuple[str, ...]] = {}
    bad: list[Unreadable] = []
    for sw in ctx.switches:
        bp, why, _ = rows(obs, sw, SW_BRIDGE_PORT)
        eth, _w, _ = rows(obs, sw, SW_ETHERNET)
        if bp is None:
            if why is not None:
                bad.append(why)
            continue
        names = default_names(eth or ())
        ups: list[str] = []
        for r in bp:
            iface = r.get("interface", "")
            if is_cpu_port(names.get(iface, iface)):
                ups.append(iface)
                continue
            fwd = r.get("forwarding")
            ports.append(
                PortRole(
                    sw,
                    iface,
                    r.get("bridge", ""),
                    r.get("role", ""),
                    None if fwd is None else is_true(fwd),
                )
            )
        uplinks[sw] = tuple(ups)
    return Rstp(tuple(ports), uplinks, tuple(bad))


def judge(r: Rstp, ctx: Context) -> list[Verdict]:
    f = Finding("switch.rstp-isl-blocked")
    for w in r.unreadable:
        f.cannot_tell(w, "RSTP roles")
    for p in r.ports:
        ev = Evidence(
            f"{p.switch}/{p.interface}",
            CMD,
            f"role={p.role or '?'}"
            + ("" if p.forwarding is None else f" forwarding={str(p.forwarding).lower()}"),
            "designated-port or root-port, forwarding",
        )
        if p.role in BLOCKING:
            f.fail(ev, target=p.switch)
        elif p.role in ("root-port",) and len(ctx.switches) > 1:
            f.ok(ev)
    return [
        f.verdict(
            ok="no fabric port is blocked by RSTP",
            bad="RSTP blocks the inter-switch link: cross-switch traffic detours through the "
            "management uplinks (~4.5 Gb/s, MTU 1500)",
        )
    ]


def isl_blocked(obs: Observations, ctx: Context) -> bool:
    """Whether RSTP blocks an inter-switch link (this check fails or warns): cross-switch
    traffic then detours, and the checks that read it say so rather than blame the fabric."""
    return any(v.status in (Status.FAIL, Status.WARN) for v in judge(parse(obs, ctx), ctx))


def fix(r: Rstp, verdict: Verdict, ctx: Context) -> FixPlan | None:
    return plans.rstp_plan(r, verdict, ctx)


CHECK = Check(
    id="switch.rstp-isl-blocked",
    title="RSTP and the inter-switch link",
    description=__doc__ or "",
    faults=("switch.rstp-isl-blocked",),
    step="preflight",
    probes=(SW_BRIDGE_PORT, SW_ETHERNET),
    parse=parse,
    judge=judge,
    fix=fix,
)
