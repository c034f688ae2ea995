"""Bridge hardware offload: is the fabric bridge forwarded by the switch chip?

The 98DX7335 offloads one bridge per chip, and refuses a bridge whose QSFP56-DD cage is split
with another bridge. If unused breakout sub-ports of a cage sit in another bridge (e.g. the
management bridge: `switch.offload-split-cage`), or the fabric ports are spread over a second
bridge (`switch.offload-second-bridge`), or a fabric port has `hw=no`
(`switch.offload-disabled`), the switch CPU forwards every frame: ~10 Gb/s whatever the QP count.
An in-use fabric port without the `H` flag is a failure on its own: when none of those causes
explains it, it is `switch.offload-lost` (not offloaded, cause not recognised), shown with what
the switch says: the latest "hardware offloading activated/deactivated" log line, the nodes'
MACs learned `D` (CPU) instead of `E` (chip), and `cpu-load` during a transfer (`--perf`).
Good: every fabric port in one bridge with `hw=yes` and the `H` flag (`hw-offload=true`), the
activation line for that bridge, the nodes' MACs external, the switch CPU ~0 % under traffic.
A pasted bridge-port print or export shows `hw=no` and the missing `H` flag, not which ports are
in use nor the other bridges: a port without offload is reported with the causes it may have.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from flows import plans
from flows.base import Check, Context, Observations, PastedRule
from flows.checks import forwarding, switch_rstp
from flows.checks._common import (
    SW_BRIDGE,
    SW_BRIDGE_HOST,
    SW_BRIDGE_PORT,
    SW_CLOCK,
    SW_ETHERNET,
    SW_LOG,
    SW_MONITOR,
    SW_RESOURCE,
    Finding,
    Unreadable,
    crosses,
    default_names,
    fabric_port,
    is_cpu_port,
    is_true,
    listing,
    pasted_routeros,
    rows,
)
from wizard.mgmt import MANAGEMENT_PROBES
from wizard.model import Evidence, FixPlan, Measurement, Status, Verdict

CMD = "/interface/bridge/port print"
_CAGE = re.compile(r"^qsfp56-dd-(\d+)-(\d+)$")


@dataclass(frozen=True, slots=True)
class BridgePort:
    switch: str
    interface: str
    default_name: str
    bridge: str
    hw: bool
    hw_offload: bool
    in_use: bool  # a node or ISL cable is plugged there
    comment: str = ""  # kept so that a rollback re-adds the port exactly as it was


@dataclass(frozen=True, slots=True)
class SwitchBridges:
    switch: str
    ports: tuple[BridgePort, ...]
    management_ports: tuple[str, ...]
    cpu_ports: tuple[str, ...] | None = None  # from the switch model; None: model unknown

    def is_cpu(self, default_name: str) -> bool:
        if self.cpu_ports is not None:
            return default_name in self.cpu_ports
        return is_cpu_port(default_name)

    @property
    def fabric(self) -> tuple[BridgePort, ...]:
        return tuple(p for p in self.ports if not self.is_cpu(p.default_name))

    def offloaded_bridges(self) -> tuple[str, ...]:
        """The bridges whose switch-chip ports show the H flag (the chip offloads one)."""
        return tuple(sorted({p.bridge for p in self.fabric if p.hw_offload}))

    def fabric_bridge(self) -> str | None:
        """The bridge holding the most in-use fabric ports (ties: the most fabric ports)."""
        counts: dict[str, tuple[int, int]] = {}
        for p in self.fabric:
            used, total = counts.get(p.bridge, (0, 0))
            counts[p.bridge] = (used + p.in_use, total + 1)
        if not counts:
            return None
        return max(counts, key=lambda b: counts[b])


@dataclass(frozen=True, slots=True)
class Offload:
    switches: tuple[SwitchBridges, ...]
    unreadable: tuple[Unreadable, ...]
    obs: Observations | None = None  # for the runtime evidence (log, host table, cpu-load)


def cage(default_name: str) -> int | None:
    m = _CAGE.match(default_name)
    return int(m.group(1)) if m else None


def parse(obs: Observations, ctx: Context) -> Offload:
    out: list[SwitchBridges] = []
    bad: list[Unreadable] = []
    for sw in ctx.switches:
        bp, why, _ = rows(obs, sw, SW_BRIDGE_PORT)
        eth, _w2, _ = rows(obs, sw, SW_ETHERNET)
        mon, _w3, _ = rows(obs, sw, SW_MONITOR)
        if bp is None:
            if why is not None:
                bad.append(why)
            continue
        names = default_names(eth or ())
        used = {r.get("name", "") for r in (mon or ()) if is_true(r.get("sfp-module-present"))}
        used |= {r.get("name", "") for r in (mon or ()) if r.get("status") == "link-ok"}
        used |= {p for (s, p) in ctx.cabling.values() if s == sw}
        ports = tuple(
            BridgePort(
                switch=sw,
                interface=r.get("interface", ""),
                default_name=names.get(r.get("interface", ""), r.get("interface", "")),
                bridge=r.get("bridge", ""),
                hw=is_true(r.get("hw", "true")),
                hw_offload=is_true(r.get("hw-offload")),
                in_use=r.get("interface", "") in used,
                comment=r.get("comment", ""),
            )
            for r in bp
            if not is_true(r.get("disabled")) and not is_true(r.get("dynamic"))
        )
        out.append(
            SwitchBridges(
                sw,
                ports,
                _management_ports(obs, sw, ctx),
                forwarding.cpu_ports(obs, sw),
            )
        )
    return Offload(tuple(out), tuple(bad), obs)


def _management_ports(obs: Observations, sw: str, ctx: Context) -> tuple[str, ...]:
    """The ports the switch shows the API session on, then the inventory's."""
    from wizard.mgmt import management_ports

    found = sorted(management_ports(forwarding.management(obs, sw) or []))
    listed = ctx.management.get(sw, () if found else ("ether1",))
    return tuple(dict.fromkeys((*found, *listed)))


def _ev(p: BridgePort, expected: str) -> Evidence:
    return Evidence(
        f"{p.switch}/{p.interface}",
        CMD,
        f"bridge={p.bridge} hw={'yes' if p.hw else 'no'} hw-offload={str(p.hw_offload).lower()}",
        expected,
    )


def _short_list(names: list[str]) -> str:
    """qsfp56-dd-1-2, qsfp56-dd-1-3 -> "qsfp56-dd-1-2,-3" (one common prefix, then the legs)."""
    if not names:
        return ""
    head, _, _ = names[0].rpartition("-")
    if all(n.rpartition("-")[0] == head for n in names):
        return names[0] + "".join(f",-{n.rpartition('-')[2]}" for n in names[1:])
    return ", ".join(names)


def classify(sw: SwitchBridges) -> dict[str, list[BridgePort]]:
    """fault id -> the bridge ports that show it, for one switch.

    second-bridge: in-use fabric ports sit in two bridges, or the fabric bridge is not offloaded
    while the chip offloads another bridge (one bridge per chip). split-cage: unused sub-ports of
    a QSFP56-DD cage the fabric bridge uses sit in another bridge. disabled: `hw=no`."""
    out: dict[str, list[BridgePort]] = {}
    main = sw.fabric_bridge()
    if main is None:
        return out
    for p in sw.fabric:
        if not p.hw:
            out.setdefault("switch.offload-disabled", []).append(p)
    others = [p for p in sw.fabric if p.bridge != main]
    used_elsewhere = [p for p in others if p.in_use]
    main_ports = [p for p in sw.fabric if p.bridge == main]
    main_offloaded = any(p.hw_offload for p in main_ports)
    chip_elsewhere = {p.bridge for p in others if p.hw_offload}
    if used_elsewhere:
        out["switch.offload-second-bridge"] = used_elsewhere
        return out
    # a split cage first: the bridge holding the unused legs keeps the chip (seed 000's log)
    main_cages = {cage(p.default_name) for p in main_ports} - {None}
    split = [p for p in others if cage(p.default_name) in main_cages]
    if split:
        out["switch.offload-split-cage"] = split
        return out
    if not main_offloaded and chip_elsewhere:
        stuck = [p for p in main_ports if p.in_use and p.hw]
        out["switch.offload-second-bridge"] = stuck or main_ports[:1]
    return out


FAULTS = (
    "switch.offload-split-cage",
    "switch.offload-second-bridge",
    "switch.offload-disabled",
    "switch.offload-lost",
)


def runtime_evidence(
    obs: Observations | None,
    sw: SwitchBridges,
    bridge: str,
    ports: list[str] | None,
    ctx: Context,
) -> list[Evidence]:
    """What the switch says about who forwards `ports` of `bridge` (None: every port): the
    latest offload log line, the nodes' MACs learned there (E or D), cpu-load during a
    transfer (`cpu_row`)."""
    if obs is None:
        return []
    return [
        forwarding.log_evidence(
            obs, sw.switch, bridge, ports or (), since=ctx.changed_at.get(sw.switch)
        ),
        *forwarding.host_evidence(obs, sw.switch, ctx, ports)[:8],
        forwarding.management_evidence(obs, sw.switch, ctx.management.get(sw.switch, ())),
        cpu_row(obs, sw.switch, ctx),
    ]


def cpu_row(obs: Observations, switch: str, ctx: Context) -> Evidence:
    """The switch's cpu-load during the transfers that say something of its fabric bridge.
    While RSTP blocks an ISL (switch.rstp-isl-blocked failing), cross-switch traffic detours
    through the uplinks and the CPU may carry it there: only tests between two nodes of one
    switch count then."""
    max_cpu = ctx.expectations.switch_cpu_idle_max_pct
    if not switch_rstp.isl_blocked(obs, ctx):
        return forwarding.cpu_evidence(obs, switch, max_cpu)

    row = forwarding.cpu_evidence(obs, switch, max_cpu, lambda m: round_on_one_switch(m, ctx))
    left_out = (
        "; rounds with a test across switches left out: the blocked ISL sends that traffic "
        "through the uplinks (switch.rstp-isl-blocked)"
    )
    return replace(row, observed=row.observed + left_out)


def _split_cage(sw: SwitchBridges, main: str | None, ports: list[BridgePort], f: Finding) -> None:
    """One row per cage and bridge: "qsfp56-dd-1-2,-3,-4 in bridge", not 24 rows."""
    groups: dict[tuple[int | None, str], list[BridgePort]] = {}
    for p in ports:
        groups.setdefault((cage(p.default_name), p.bridge), []).append(p)
    for (n, bridge), members in sorted(groups.items(), key=lambda kv: str(kv[0])):
        names = [q.interface for q in members]
        f.fail(
            Evidence(
                f"{sw.switch}/cage {n}",
                CMD,
                f"{_short_list(names)} in bridge={bridge} "
                f"(hw-offload={str(any(q.hw_offload for q in members)).lower()})",
                f"every sub-port of cage {n} in {main}, or in no bridge",
            ),
            target=f"{sw.switch}/{bridge}",
        )


def _cause_ports(
    sw: SwitchBridges, main: str | None, fault: str, ports: list[BridgePort], f: Finding
) -> None:
    """The ports that show one modelled cause, each with what it should be."""
    if fault == "switch.offload-split-cage":
        _split_cage(sw, main, ports, f)
        return
    for p in ports:
        if fault == "switch.offload-disabled":
            f.fail(_ev(p, "hw=yes hw-offload=true"))
        elif fault == "switch.offload-second-bridge":
            chip = sorted({q.bridge for q in sw.fabric if q.hw_offload and q.bridge != main})
            f.fail(
                _ev(
                    p,
                    "hw-offload=true in the one offloaded bridge"
                    + (f" (the chip offloads {', '.join(chip)} instead)" if chip else ""),
                ),
                target=f"{sw.switch}/{p.bridge}",
            )
        else:
            f.fail(
                _ev(p, f"not in another bridge than {main}: it splits cage {cage(p.default_name)}"),
                target=f"{sw.switch}/{p.bridge}",
            )


def _judge_lost(
    off: Offload,
    sw: SwitchBridges,
    main: str,
    not_offloaded: list[BridgePort],
    ctx: Context,
    lost: Finding,
) -> None:
    """No modelled cause: ports without the H flag, or a busy CPU under traffic, are
    `switch.offload-lost`; otherwise the runtime rows are shown with the pass."""
    if not_offloaded:
        # no H flag and none of the modelled causes: a failure on its own
        for p in not_offloaded[:8]:
            lost.fail(
                _ev(p, "hw-offload=true (H flag); bridge, hw=yes and cages look right"),
                target=f"{sw.switch}/{main}",
            )
        lost.bad.extend(
            runtime_evidence(off.obs, sw, main, [p.interface for p in not_offloaded], ctx)
        )
    elif off.obs is not None:
        cpu = cpu_row(off.obs, sw.switch, ctx)
        if cpu.status == Status.FAIL:
            # every port shows H, yet the CPU works while traffic runs: not proven offloaded
            lost.fail(cpu, target=f"{sw.switch}/{main}", warn=True)
            lost.bad.extend(runtime_evidence(off.obs, sw, main, None, ctx)[:-1])
        else:
            # shown with the pass; a row that could not confirm is unknown, not a failure
            lost.good.extend(
                e if e.status == Status.PASS else replace(e, status=Status.UNKNOWN)
                for e in runtime_evidence(off.obs, sw, main, None, ctx)
            )


def round_on_one_switch(m: Measurement, ctx: Context) -> bool:
    """A rail test whose round (every test that ran with it: the switch CPU samples are the
    round's) stayed on one switch each."""
    tests = m.extra.get("round_tests")
    if m.kind != "rail" or not isinstance(tests, list):
        return False
    return not any(crosses((t[0], t[1]), (t[2], t[3]), ctx) for t in tests)


def judge(off: Offload, ctx: Context) -> list[Verdict]:
    findings = {f: Finding(f) for f in FAULTS}
    explained: set[str] = set()  # the modelled causes found: offload-lost does not apply there
    for w in off.unreadable:
        for f in findings.values():
            f.cannot_tell(w, "bridge ports of the fabric")
    for sw in off.switches:
        main = sw.fabric_bridge()
        bad = classify(sw)
        not_offloaded = [p for p in sw.fabric if p.in_use and not p.hw_offload and p.bridge == main]
        explained.update(bad)
        for fault, found in bad.items():
            f = findings[fault]
            _cause_ports(sw, main, fault, found, f)
            for p in not_offloaded[:8]:
                f.fail(_ev(p, "hw-offload=true (H flag)"), target=f"{sw.switch}/{main}")
            f.bad.extend(
                runtime_evidence(off.obs, sw, main or "", [p.interface for p in not_offloaded], ctx)
            )
        if not bad and main is not None:
            _judge_lost(off, sw, main, not_offloaded, ctx, findings["switch.offload-lost"])
        for p in sw.fabric:
            if p.in_use and p.hw_offload:
                for f in findings.values():
                    f.ok(_ev(p, "hw-offload=true"))
    return [
        findings["switch.offload-split-cage"].verdict(
            ok="no QSFP56-DD cage is split across bridges",
            bad="a QSFP56-DD cage is split across two bridges: the fabric bridge is not "
            "offloaded and the switch CPU forwards everything (~10 Gb/s)",
        ),
        findings["switch.offload-second-bridge"].verdict(
            ok="all fabric ports sit in one bridge",
            bad="fabric ports are spread over a second bridge: only one bridge per chip is "
            "offloaded, the other is forwarded by the CPU (~10 Gb/s)",
        ),
        findings["switch.offload-disabled"].verdict(
            ok="every fabric bridge port has hw=yes",
            bad=f"fabric bridge ports with hw=no: {listing(findings['switch.offload-disabled'].targets)}",
        ),
        _lost_verdict(findings["switch.offload-lost"], sorted(explained)),
    ]


def _lost_verdict(f: Finding, explained: Sequence[str] = ()) -> Verdict:
    """`switch.offload-lost` is a loss no modelled cause explains; where a cause was found, its
    pass says so instead of claiming every port is offloaded."""
    warn_only = f.bad and all(e.status != Status.FAIL for e in f.bad[:1])
    return f.verdict(
        ok=(
            f"fabric ports without hardware offload are explained by {', '.join(explained)}, "
            "not lost for an unknown reason"
            if explained
            else "every in-use fabric port is hardware-offloaded (H flag)"
        ),
        bad=(
            "the switch CPU is busy during a transfer although every fabric port shows the H "
            "flag: forwarding is not proven offloaded; look at the bridge settings, VLAN "
            f"filtering and the RouterOS release notes ({listing(f.targets)})"
            if warn_only
            else "fabric ports are not hardware-offloaded and no known cause (split cage, "
            "second bridge, hw=no) explains it: the switch CPU forwards (~10 Gb/s); look at the "
            "bridge settings, VLAN filtering, the offload log lines and the RouterOS release "
            f"notes ({listing(f.targets)})"
        ),
    )


def fix(off: Offload, verdict: Verdict, ctx: Context) -> FixPlan | None:
    return plans.offload_plan(off, verdict, ctx)


def _pasted_ports(text: str) -> tuple[list[str], list[str]]:
    """(fabric ports with hw=no, fabric ports without hardware offload) of a pasted output."""
    r = pasted_routeros(text)
    if r is None:
        return [], []
    no_hw: list[str] = []
    no_offload: list[str] = []
    for i, row in enumerate(r.rows):
        name = row.get("name") or row.get("interface")
        if not fabric_port(name):
            continue
        unflagged = "hw" in row and r.format == "cli-table" and r.flags and "H" not in r.flags[i]
        if row.get("hw") is False:
            no_hw.append(str(name))
        elif row.get("hw-offload") is False or unflagged:
            no_offload.append(str(name))
    for item in r.items("/interface/bridge/port"):
        port = item.args.get("interface")
        if fabric_port(port) and item.args.get("hw") == "no":
            no_hw.append(str(port))
    return no_hw, no_offload


def judge_pasted(text: str, ctx: Context) -> list[Verdict]:
    """A pasted `/interface/bridge/port` print, API reply or export."""
    no_hw, no_offload = _pasted_ports(text)
    out = []
    if no_hw:
        out.append(
            Verdict(
                "switch.offload-disabled",
                Status.FAIL,
                "fabric bridge ports with hw=no: " + ", ".join(no_hw),
                targets=tuple(no_hw),
                check=CHECK.id,
            )
        )
    if no_offload:
        out.append(
            Verdict(
                "switch.offload-split-cage",
                Status.FAIL,
                "fabric bridge ports without hardware offload (no H flag / "
                "hw-offload=false): the switch CPU forwards them (~10 Gb/s); split cage "
                "or a second bridge (switch.offload-second-bridge)",
                targets=tuple(no_offload),
                check=CHECK.id,
            )
        )
    return out


CHECK = Check(
    id="switch.offload-split-cage",
    title="Bridge hardware offload",
    description=__doc__ or "",
    faults=FAULTS,
    step="offload",
    probes=(
        SW_BRIDGE_PORT,
        SW_ETHERNET,
        SW_MONITOR,
        SW_LOG,
        SW_CLOCK,
        SW_BRIDGE_HOST,
        SW_RESOURCE,
        SW_BRIDGE,
        *MANAGEMENT_PROBES,
    ),
    parse=parse,
    judge=judge,
    fix=fix,
    pasted=(PastedRule(("routeros",), judge_pasted),),
)
