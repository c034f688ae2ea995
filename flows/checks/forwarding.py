"""Switch-side proof of forwarding: what the switch itself says about who moves the frames.

Configuration says a bridge should be offloaded; these say whether it is (seed 000, "confirmed
three ways"): the `H` flag (`hw-offload`) of every in-use fabric port, the most recent "hardware
offloading activated/deactivated on bridge X" log line, the bridge host table's `external` flag
for the nodes' MACs (`E`: learned by the switch chip; `D` alone: learned by the CPU), and
`/system/resource` `cpu-load` sampled during a transfer (~0 % at line rate; busy when the CPU
forwards). CPU-attached ports come from the switch model, not from a name pattern.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from flows import loghistory
from flows.base import Context, Observations
from flows.checks._common import (
    SW_BRIDGE,
    SW_BRIDGE_HOST,
    SW_CLOCK,
    SW_LOG,
    SW_RESOURCE,
    is_true,
    rows,
)
from wizard.mgmt import MANAGEMENT_PROBES, ManagementPath, management_ports, paths_from_rows
from wizard.model import Evidence, Measurement, Status

# CPU-attached ports per switch model (FAULTS.md, "The hardware in one paragraph"): they never
# carry the switch-chip datapath.
MODEL_CPU_PORTS: dict[str, tuple[str, ...]] = {
    "CRS804-4DDQ": ("ether1", "ether2"),
    "CRS812-8DS-2DQ-2DDQ": ("ether1",),
}
_OFFLOAD_LINE = re.compile(r'hardware offloading (activated|deactivated) on bridge "?([^"\s]+)"?')


@dataclass(frozen=True, slots=True)
class OffloadLine:
    """The most recent offload log line of one bridge."""

    bridge: str
    activated: bool
    time: str
    message: str
    ports: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HostEntry:
    """A node MAC in the switch's bridge host table."""

    mac: str
    rail: str  # node/netdev
    interface: str
    bridge: str
    external: bool  # learned by the switch chip (E), not the CPU


def switch_model(obs: Observations, switch: str) -> str | None:
    got, _why, _res = rows(obs, switch, SW_RESOURCE)
    for r in got or ():
        if r.get("board-name"):
            return r["board-name"]
    return None


def cpu_ports(obs: Observations, switch: str) -> tuple[str, ...] | None:
    """The CPU-attached ports of `switch` from its model (/system/resource board-name), or None
    when the model is not one fabwiz knows."""
    model = switch_model(obs, switch)
    return MODEL_CPU_PORTS.get(model) if model else None


def is_cpu_attached(obs: Observations, switch: str, default_name: str) -> bool:
    known = cpu_ports(obs, switch)
    if known is not None:
        return default_name in known
    return default_name.startswith("ether")  # unknown model: the RouterOS copper naming


def offload_lines(log: Iterable[Mapping[str, str]]) -> dict[str, OffloadLine]:
    """bridge -> its most recent "hardware offloading activated/deactivated" line (the log is
    in order, oldest first, so the last match wins)."""
    out: dict[str, OffloadLine] = {}
    for r in log:
        msg = r.get("message", "")
        m = _OFFLOAD_LINE.search(msg)
        if m is None:
            continue
        _, _, tail = msg.partition("ports:")
        ports = tuple(p.strip() for p in tail.split(",") if p.strip())
        out[m.group(2)] = OffloadLine(
            m.group(2), m.group(1) == "activated", r.get("time", ""), msg, ports
        )
    return out


def node_macs(ctx: Context) -> dict[str, str]:
    """MAC (upper case) -> node/netdev of every discovered rail."""
    return {r.mac.upper(): r.key for rails in ctx.rails.values() for r in rails if r.mac}


def host_entries(obs: Observations, switch: str, ctx: Context) -> list[HostEntry] | None:
    """The nodes' MACs in the switch's bridge host table (None: the table could not be read)."""
    got, _why, _res = rows(obs, switch, SW_BRIDGE_HOST)
    if got is None:
        return None
    macs = node_macs(ctx)
    out = []
    for r in got:
        mac = r.get("mac-address", "").upper()
        if mac in macs and not is_true(r.get("local")):
            out.append(
                HostEntry(
                    mac,
                    macs[mac],
                    r.get("on-interface") or r.get("interface", ""),
                    r.get("bridge", ""),
                    is_true(r.get("external")),
                )
            )
    return out


def cpu_during_transfer(
    obs: Observations, switch: str, keep: Callable[[Measurement], bool] | None = None
) -> float | None:
    """The highest `cpu-load` of `switch` sampled while a bandwidth test ran (None: none);
    `keep`: only the tests it keeps count."""
    loads = [
        float(v)
        for m in obs.measurements
        if keep is None or keep(m)
        for k, v in dict(m.extra.get("switch_cpu") or {}).items()
        if k == switch and isinstance(v, int | float)
    ]
    return max(loads) if loads else None


def cpu_at_rest(obs: Observations, switch: str) -> float | None:
    got, _why, _res = rows(obs, switch, SW_RESOURCE)
    for r in got or ():
        v = r.get("cpu-load", "")
        if v.strip().isdigit():
            return float(v)
    return None


def log_evidence(
    obs: Observations,
    switch: str,
    bridge: str,
    ports: Iterable[str] = (),
    since: float | None = None,
) -> Evidence:
    """The latest offload line of `bridge`: a pass when it is an activation that names every
    one of `ports` (when the line lists ports at all). With `since` (this session's last
    change of the switch, on its clock), only a line newer than the change counts: older
    lines are history."""
    got, why, _res = rows(obs, switch, SW_LOG)
    expected = f'latest line: hardware offloading activated on bridge "{bridge}"'
    if got is None:
        return Evidence(
            f"{switch}/{bridge}",
            "/log print",
            why.reason if why else "not read",
            expected,
            Status.UNKNOWN,
        )
    line = offload_lines(got).get(bridge)
    if line is not None and since is not None:
        clock, _why_clock, _ = rows(obs, switch, SW_CLOCK)  # dates a time-of-day stamp
        at = loghistory.dated(line.time, since, loghistory.clock_now(clock))
        if at is None or at < since:
            changed = _dt.datetime.fromtimestamp(since, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
            return Evidence(
                f"{switch}/{bridge}",
                "/log print",
                f"latest line {line.time or '(no time)'} predates this session's change at "
                f"{changed} (switch clock): history, not current evidence",
                expected + " newer than the change",
                Status.UNKNOWN,
            )
    if line is None:
        observed = f"no hardware offloading line for bridge {bridge} in the log"
        status = Status.FAIL
    else:
        text = line.message if len(line.message) <= 160 else line.message[:157] + "..."
        observed = f"{line.time} {text}".strip()
        missing = [p for p in ports if line.ports and p not in line.ports]
        status = Status.PASS if line.activated and not missing else Status.FAIL
        if line.activated and missing:
            observed += f" (does not name {', '.join(missing[:4])})"
            expected += f" naming {', '.join(missing[:4])}"
    return Evidence(f"{switch}/{bridge}", "/log print", observed, expected, status)


def host_evidence(
    obs: Observations, switch: str, ctx: Context, ports: Iterable[str] | None = None
) -> list[Evidence]:
    """One row per node MAC learned on `ports` (all ports when None): E or D."""
    entries = host_entries(obs, switch, ctx)
    want = set(ports) if ports is not None else None
    if entries is None:
        return [
            Evidence(
                switch,
                "/interface/bridge/host print",
                "host table not read",
                "node MACs learned by the switch chip (external, E)",
                Status.UNKNOWN,
            )
        ]
    out = []
    for h in entries:
        if want is not None and h.interface not in want:
            continue
        out.append(
            Evidence(
                f"{switch}/{h.interface}",
                "/interface/bridge/host print",
                f"{h.mac} ({h.rail}) learned "
                + ("E (external: switch chip)" if h.external else "D (software: switch CPU)"),
                "external=true (E)",
                Status.PASS if h.external else Status.FAIL,
            )
        )
    return out


def cpu_evidence(
    obs: Observations,
    switch: str,
    max_pct: float,
    keep: Callable[[Measurement], bool] | None = None,
) -> Evidence:
    during = cpu_during_transfer(obs, switch, keep)
    expected = f"<= {max_pct:g} % during a transfer (~0 % at line rate)"
    if during is None:
        rest = cpu_at_rest(obs, switch)
        return Evidence(
            switch,
            "/system/resource print (cpu-load)",
            "no cpu-load sample fell inside a transfer (needs --perf and a test longer than the sampling interval)"
            + (f"; {rest:g} % at rest" if rest is not None else ""),
            expected,
            Status.UNKNOWN,
        )
    return Evidence(
        switch,
        "/system/resource print (cpu-load)",
        f"{during:g} % during a transfer",
        expected,
        Status.PASS if during <= max_pct else Status.FAIL,
    )


def management(obs: Observations, switch: str) -> list[ManagementPath] | None:
    """The management paths `switch` shows (None: a probe it needs was not read)."""
    got: dict[str, tuple[dict[str, str], ...] | None] = {}
    for probe in (*MANAGEMENT_PROBES, SW_BRIDGE_HOST, SW_BRIDGE):
        value, _why, _res = rows(obs, switch, probe)
        got[probe.name] = value
    return paths_from_rows(got)


def management_evidence(obs: Observations, switch: str, listed: Iterable[str]) -> Evidence:
    """The management path read from the switch, cross-checked with the inventory's list."""
    listed = tuple(listed)
    command = "/user/active, /ip/arp, /interface/bridge/host, /ip/address print"
    expected = f"the API session on a port the inventory lists ({', '.join(listed) or 'none'})"
    paths = management(obs, switch)
    if not paths:
        return Evidence(
            switch,
            command,
            "management path not read" if paths is None else "no API session listed",
            expected,
            Status.UNKNOWN,
        )
    ports = sorted(management_ports(paths))
    text = "; ".join(p.describe() for p in paths)
    extra = [p for p in ports if p not in listed]
    if extra:
        return Evidence(
            switch,
            command,
            f"{text}: the inventory's management_ports ({', '.join(listed) or 'none'}) miss "
            f"{', '.join(extra)}; fixes keep off the ports the switch shows",
            expected,
            Status.WARN,
        )
    return Evidence(switch, command, text, expected, Status.PASS)
