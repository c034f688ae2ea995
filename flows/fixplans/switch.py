"""Switch fix plans: RouterOS API commands selected by stable keys, each with its inverse in
`rollback` and the exact CLI text in `preview` (the same text goes into the dead-man
scheduler)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from flows.base import Context
from flows.fixplans.common import RSTP_UPLINK_COST
from wizard.model import ApiCommand, FixPlan, SwitchChange, Verdict
from wizard.rosquote import Unrepresentable, cli_command

if TYPE_CHECKING:
    from flows.checks.switch_link import SwitchLinks
    from flows.checks.switch_mtu import SwitchMtu
    from flows.checks.switch_offload import Offload, SwitchBridges
    from flows.checks.switch_qos import SwitchQos
    from flows.checks.switch_rstp import Rstp

__all__ = [
    "api",
    "offload_plan",
    "offload_target",
    "qos_plan",
    "rstp_plan",
    "switch_link_plan",
    "switch_mtu_plan",
]


def _cli(
    path: str, verb: str, args: Iterable[tuple[str, str]], select: tuple[str, str] | None
) -> str:
    """RouterOS CLI text with every value quoted; "" when a value cannot be written (the engine
    then refuses the change with the reason)."""
    try:
        return cli_command(path, verb, args, select)
    except Unrepresentable:
        return ""


def api(
    path: str,
    verb: str,
    args: Sequence[tuple[str, str]] = (),
    select: tuple[str, str] | None = None,
) -> ApiCommand:
    return ApiCommand(
        path=path, verb=verb, args=tuple(args), select=select, cli=_cli(path, verb, args, select)
    )


_UNWRITABLE = "# (a value here cannot be written in RouterOS script: the fix is refused)"


def _preview(changes: Iterable[SwitchChange]) -> str:
    lines: list[str] = []
    for c in changes:
        lines.append(f"# {c.switch}")
        lines.extend(cmd.cli or _UNWRITABLE for cmd in c.commands)
        lines.append(f"# rollback on {c.switch}")
        lines.extend(f"#   {cmd.cli or _UNWRITABLE}" for cmd in c.rollback)
    return "\n".join(lines)


def _switch_plan(
    verdict: Verdict,
    summary: str,
    changes: list[SwitchChange],
    *,
    bounces: bool = False,
) -> FixPlan | None:
    changes = [c for c in changes if c.commands]
    if not changes:
        return None
    return FixPlan(
        fault=verdict.fault,
        target=", ".join(c.switch for c in changes),
        summary=summary,
        preview=_preview(changes),
        switch_changes=tuple(changes),
        bounces_links=bounces,
        verify_checks=(verdict.fault,),
    )


def switch_link_plan(links: SwitchLinks, verdict: Verdict, ctx: Context) -> FixPlan | None:
    from flows.checks.switch_link import autoneg_failed

    bad = set(verdict.targets)
    per_switch: dict[str, tuple[list[ApiCommand], list[ApiCommand]]] = {}
    done: set[tuple[str, str]] = set()
    for p in links.ports:
        if f"{p.switch}/{p.name}" not in bad:
            continue
        targets: list[str] = [p.default_name]
        if verdict.fault == "switch.breakout-autoneg" and autoneg_failed(p):
            m = re.match(r"^(qsfp56-dd-\d+)-\d+$", p.default_name)
            if m:
                targets = [f"{m.group(1)}-1", f"{m.group(1)}-5"]
        cmds, back = per_switch.setdefault(p.switch, ([], []))
        for port in targets:
            if (p.switch, port) in done:
                continue
            done.add((p.switch, port))
            sel = ("default-name", port)
            cmds.append(
                api(
                    "/interface/ethernet",
                    "set",
                    (("auto-negotiation", "no"), ("speed", "200G-baseCR4"), ("fec-mode", "fec91")),
                    sel,
                )
            )
            back.append(
                api(
                    "/interface/ethernet",
                    "set",
                    (
                        ("auto-negotiation", "yes" if p.autoneg_config else "no"),
                        ("fec-mode", "auto"),
                    ),
                    sel,
                )
            )
    changes = [SwitchChange(sw, tuple(c), tuple(b)) for sw, (c, b) in per_switch.items()]
    return _switch_plan(
        verdict,
        "force 200G-baseCR4 with RS-FEC on the breakout lane masters (links bounce)",
        changes,
        bounces=True,
    )


def offload_target(sw: SwitchBridges) -> str:
    """The bridge the fabric belongs in: the one the chip offloads; when it offloads none, the
    bridge of the management ports (the switch's own bridge); else the fabric's bridge."""
    chip = sw.offloaded_bridges()
    if len(chip) == 1:
        return chip[0]
    mgmt = {p.bridge for p in sw.ports if p.interface in sw.management_ports}
    if len(mgmt) == 1:
        return next(iter(mgmt))
    return sw.fabric_bridge() or "bridge"


def offload_plan(off: Offload, verdict: Verdict, ctx: Context) -> FixPlan | None:
    from flows.checks.switch_offload import classify

    changes: list[SwitchChange] = []
    for sw in off.switches:
        ports = classify(sw).get(verdict.fault, [])
        main = sw.fabric_bridge() or "bridge"
        if verdict.fault == "switch.offload-second-bridge" and ports:
            # every fabric port into the one bridge the chip offloads (or, when it offloads
            # none, the management ports' bridge), then the emptied extra bridge is deleted
            # (seed 003: one hardware-offloaded bridge per switch)
            main = offload_target(sw)
            ports = [p for p in sw.fabric if p.bridge != main]
        cmds: list[ApiCommand] = []
        back: list[ApiCommand] = []
        for p in ports:
            # A port carrying the API session stays in the plan: the engine's management-path
            # guard refuses the whole change with the reason and the manual way, rather than a
            # partial fix that cannot pass its verification.
            sel = ("interface", p.interface)
            if verdict.fault == "switch.offload-disabled":
                cmds.append(api("/interface/bridge/port", "set", (("hw", "yes"),), sel))
                back.append(api("/interface/bridge/port", "set", (("hw", "no"),), sel))
            elif verdict.fault == "switch.offload-second-bridge":
                cmds.append(api("/interface/bridge/port", "set", (("bridge", main),), sel))
                back.append(api("/interface/bridge/port", "set", (("bridge", p.bridge),), sel))
            else:
                cmds.append(api("/interface/bridge/port", "remove", (), sel))
                back.append(
                    api(
                        "/interface/bridge/port",
                        "add",
                        (
                            ("bridge", p.bridge),
                            ("interface", p.interface),
                            ("hw", "yes" if p.hw else "no"),
                            *((("comment", p.comment),) if p.comment else ()),
                        ),
                    )
                )
        if verdict.fault == "switch.offload-second-bridge":
            extra = {p.bridge for p in ports}
            for bridge in sorted(extra):
                left = [q for q in sw.ports if q.bridge == bridge and q not in ports]
                if not left:
                    cmds.append(api("/interface/bridge", "remove", (), ("name", bridge)))
                    back.insert(0, api("/interface/bridge", "add", (("name", bridge),)))
        changes.append(SwitchChange(sw.switch, tuple(cmds), tuple(back)))
    summary = {
        "switch.offload-split-cage": "remove the unused QSFP56-DD sub-ports from the other bridge "
        "so the fabric bridge is offloaded again",
        "switch.offload-second-bridge": "move the fabric ports into the single offloaded bridge and "
        "delete the emptied bridge",
        "switch.offload-disabled": "set hw=yes on the fabric bridge ports",
    }.get(verdict.fault, "restore bridge hardware offload")
    return _switch_plan(verdict, summary, changes)


def qos_plan(q: SwitchQos, verdict: Verdict, ctx: Context) -> FixPlan | None:
    per: dict[str, tuple[list[ApiCommand], list[ApiCommand]]] = {}
    for p in q.ports:
        if p.trust_l3 == "ignore" and p.pfc == "disabled":
            continue
        cmds, back = per.setdefault(p.switch, ([], []))
        sel = ("name", p.name)
        path = "/interface/ethernet/switch/qos/port"
        cmds.append(api(path, "set", (("trust-l3", "ignore"), ("pfc", "disabled")), sel))
        back.append(api(path, "set", (("trust-l3", p.trust_l3), ("pfc", p.pfc)), sel))
    changes = [SwitchChange(sw, tuple(c), tuple(b)) for sw, (c, b) in per.items()]
    plan = _switch_plan(
        verdict,
        "make the fabric ports lossy (trust-l3=ignore pfc=disabled); turn host PFC off too",
        changes,
    )
    return plan


def switch_mtu_plan(m: SwitchMtu, verdict: Verdict, ctx: Context) -> FixPlan | None:
    e = ctx.expectations
    per: dict[str, tuple[list[ApiCommand], list[ApiCommand]]] = {}
    for p in m.ports:
        if p.l2mtu is None or p.mtu is None:
            continue
        if p.l2mtu >= e.fabric_l2mtu and p.mtu >= e.fabric_mtu:
            continue
        cmds, back = per.setdefault(p.switch, ([], []))
        sel = ("name", p.name)
        cmds.append(
            api(
                "/interface/ethernet",
                "set",
                (("l2mtu", str(e.fabric_l2mtu)), ("mtu", str(e.fabric_mtu))),
                sel,
            )
        )
        back.append(
            api("/interface/ethernet", "set", (("l2mtu", str(p.l2mtu)), ("mtu", str(p.mtu))), sel)
        )
    changes = [SwitchChange(sw, tuple(c), tuple(b)) for sw, (c, b) in per.items()]
    return _switch_plan(
        verdict,
        f"set l2mtu={e.fabric_l2mtu} mtu={e.fabric_mtu} on the fabric ports (may reset the "
        "switch chip: links bounce)",
        changes,
        bounces=True,
    )


def rstp_plan(r: Rstp, verdict: Verdict, ctx: Context) -> FixPlan | None:
    changes: list[SwitchChange] = []
    blocked = {p.switch for p in r.ports if p.role in ("alternate-port", "backup-port")}
    for sw in sorted(blocked):
        cmds: list[ApiCommand] = []
        back: list[ApiCommand] = []
        for up in r.uplinks.get(sw, ()):
            sel = ("interface", up)
            cmds.append(
                api("/interface/bridge/port", "set", (("path-cost", RSTP_UPLINK_COST),), sel)
            )
            back.append(api("/interface/bridge/port", "unset", (("value-name", "path-cost"),), sel))
        changes.append(SwitchChange(sw, tuple(cmds), tuple(back)))
    return _switch_plan(
        verdict,
        f"raise the path-cost of the campus uplink to {RSTP_UPLINK_COST} so RSTP re-roots "
        "through the inter-switch link",
        changes,
    )
