"""What the checks share: the probe specs (one object per command, so the sweep runs each once),
reading a probe result through a parser with `unknown` as the answer to anything unreadable, and
a small builder that turns evidence into one verdict per fault id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from flows.base import Context, HostProbe, Observations, SwitchProbe
from flows.jobproc import ENVIRON as PROC_ENVIRON  # noqa: F401  (a sudo probe: in the sudoers rules)
from flows.netplan import PROBE as NETPLAN_FILES  # noqa: F401  (a sudo probe: in the sudoers rules)
from wizard.discovery import (
    DISCOVERY_HOST_PROBES,
    ETHTOOL,
    ETHTOOL_I,
    IBDEV,
    IP_ADDR,
    IP_LINK,
    SW_BRIDGE_HOST,
)
from wizard.errors import ParseError
from wizard.model import Evidence, ProbeResult, Rail, Status, Verdict

__all__ = [
    "BOOT_ID",
    "CARRIER_DOWN",
    "DISCOVERY_HOST_PROBES",
    "DMESG",
    "ETHTOOL",
    "ETHTOOL_I",
    "HW_COUNTERS",
    "IBDEV",
    "IP_ADDR",
    "IP_LINK",
    "LSPCI",
    "MLNX_QOS",
    "NCCL_CONF",
    "NCCL_ENV",
    "SW_BRIDGE",
    "SW_BRIDGE_HOST",
    "SW_BRIDGE_PORT",
    "SW_CLOCK",
    "SW_ETHERNET",
    "SW_IDENTITY",
    "SW_LOG",
    "SW_MONITOR",
    "SW_QOS_PORT",
    "SW_RESOURCE",
    "SYSCTL_ARP",
    "UPTIME",
    "Finding",
    "Unreadable",
    "carrier_downs",
    "configured",
    "default_names",
    "is_cpu_port",
    "is_true",
    "listing",
    "node_rails",
    "rails_or_unknown",
    "read",
    "rows",
    "sudo_command",
    "undrained",
]

T = TypeVar("T")

# --- host probes (read-only) -------------------------------------
MLNX_QOS = HostProbe("mlnx_qos", "mlnx_qos -i {netdev}", per_rail=True, sudo=True)
SYSCTL_ARP = HostProbe(
    "sysctl_arp",
    "sysctl net.ipv4.conf.all.arp_ignore net.ipv4.conf.all.arp_announce "
    "net.ipv4.conf.all.rp_filter",
)
LSPCI = HostProbe("lspci", "lspci -vv -d 15b3:", sudo=True)
DMESG = HostProbe("dmesg", "dmesg", sudo=True)
BOOT_ID = HostProbe("boot_id", "cat /proc/sys/kernel/random/boot_id")
UPTIME = HostProbe("uptime", "cat /proc/uptime")
NCCL_CONF = HostProbe("nccl_conf", "cat /etc/nccl.conf")
# the login user's own file: NCCL reads it before /etc/nccl.conf (the environment wins over both)
NCCL_USER_CONF = HostProbe("nccl_user_conf", "cat ~/.nccl.conf")
NCCL_ENV = HostProbe("nccl_env", "bash -lc 'env | grep ^NCCL_'")
HW_COUNTERS = HostProbe(
    "hw_counters",
    "grep -H . /sys/class/infiniband/{rdma}/ports/1/hw_counters/* "
    "/sys/class/infiniband/{rdma}/ports/1/counters/*",
    per_rail=True,
)


# --- switch probes ----------------------------------------------------------------------------
SW_RESOURCE = SwitchProbe("resource", "/system/resource")
SW_IDENTITY = SwitchProbe("identity", "/system/identity")
SW_ETHERNET = SwitchProbe("ethernet", "/interface/ethernet")
# one call with numbers=<comma list of fabric ports> once
SW_MONITOR = SwitchProbe("monitor", "/interface/ethernet", verb="monitor", per_fabric_port=True)
SW_BRIDGE = SwitchProbe("bridge", "/interface/bridge")
SW_BRIDGE_PORT = SwitchProbe("bridge_port", "/interface/bridge/port")
SW_QOS_PORT = SwitchProbe("qos_port", "/interface/ethernet/switch/qos/port")
SW_LOG = SwitchProbe("log", "/log")
SW_CLOCK = SwitchProbe("clock", "/system/clock")  # read with the log: dates time-only stamps


def sudo_command(probe: HostProbe) -> str:
    return f"sudo -n {probe.command}" if probe.sudo else probe.command


# --- reading observations ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A probe whose output could not be judged: becomes `unknown` evidence with the raw text."""

    target: str
    command: str
    reason: str
    raw: str

    def evidence(self, expected: str) -> Evidence:
        return Evidence(
            target=self.target,
            command=self.command,
            observed=self.reason,
            expected=expected,
            status=Status.UNKNOWN,
            raw=self.raw,
        )


def read(
    obs: Observations,
    node: str,
    probe: HostProbe,
    parser: Callable[[str], T],
    rail: str | None = None,
    *,
    ok_exit: Iterable[int] = (0,),
) -> tuple[T | None, Unreadable | None, ProbeResult | None]:
    """Parse one host probe result. (value, None, result) or (None, why, result); a node the
    sweep could not reach gives (None, None, None): the unreachable finding already covers it."""
    target = node if rail is None else f"{node}/{rail}"
    if node in obs.unreachable:
        return None, None, None
    result = obs.node(node, probe.name, rail)
    command = probe.command.replace("{netdev}", rail or "")
    if result is None:
        return None, Unreadable(target, command, "not probed", ""), None
    if result.error is not None:
        return None, Unreadable(target, result.command, result.error, result.text), result
    if result.exit_status not in tuple(ok_exit):
        return (
            None,
            Unreadable(
                target,
                result.command,
                f"exit status {result.exit_status}: {result.stderr.strip()[:200]}",
                result.text,
            ),
            result,
        )
    try:
        return parser(result.stdout), None, result
    except ParseError as exc:
        return (
            None,
            Unreadable(target, result.command, f"unrecognised output: {exc}", result.text),
            result,
        )


def rows(
    obs: Observations, switch: str, probe: SwitchProbe
) -> tuple[tuple[dict[str, str], ...] | None, Unreadable | None, ProbeResult | None]:
    """The API rows of a switch probe, or why they are missing."""
    if switch in obs.unreachable:
        return None, None, None
    result = obs.switch(switch, probe.name)
    command = f"{probe.path} {probe.verb}"
    if result is None:
        return None, Unreadable(switch, command, "not probed", ""), None
    if result.error is not None:
        return None, Unreadable(switch, result.command, result.error, result.text), result
    return result.rows, None, result


def is_true(value: str | None) -> bool:
    return (value or "").lower() in ("true", "yes")


def is_cpu_port(default_name: str) -> bool:
    """ether1/ether2 are CPU-attached management ports, never part of the fabric datapath."""
    return default_name.startswith("ether")


def default_names(ethernet: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """Current interface name -> default-name (checks key on default-name: ports get renamed)."""
    return {r.get("name", ""): r.get("default-name") or r.get("name", "") for r in ethernet}


def node_rails(ctx: Context, node: str) -> tuple[Rail, ...]:
    return tuple(ctx.rails.get(node, ()))


def configured(rail: Rail) -> bool:
    """A rail the operator set up for the fabric: it carries an IPv4 address."""
    return bool(rail.addresses)


# --- verdict building -------------------------------------------------------------------------


@dataclass
class Finding:
    """Evidence for one fault id, accumulated by a judge."""

    fault: str
    bad: list[Evidence] = field(default_factory=list)
    good: list[Evidence] = field(default_factory=list)
    unknown: list[Evidence] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)

    def fail(self, ev: Evidence, target: str | None = None, *, warn: bool = False) -> None:
        status = Status.WARN if warn else Status.FAIL
        self.bad.append(_with_status(ev, status))
        t = target or ev.target
        if t not in self.targets:
            self.targets.append(t)

    def ok(self, ev: Evidence) -> None:
        self.good.append(_with_status(ev, Status.PASS))

    def cannot_tell(self, why: Unreadable | None, expected: str) -> None:
        if why is not None:
            self.unknown.append(why.evidence(expected))

    def verdict(self, *, ok: str, bad: str, unknown: str | None = None) -> Verdict:
        if self.bad:
            status = Status.worst([e.status for e in self.bad])
            return Verdict(
                fault=self.fault,
                status=status,
                summary=bad,
                targets=tuple(self.targets),
                evidence=tuple(self.bad + self.unknown),
            )
        if self.unknown:
            return Verdict(
                fault=self.fault,
                status=Status.UNKNOWN,
                summary=unknown
                or f"could not judge on {', '.join(sorted({e.target for e in self.unknown}))}",
                targets=tuple(sorted({e.target for e in self.unknown})),
                evidence=tuple(self.unknown),
            )
        return Verdict(
            fault=self.fault, status=Status.PASS, summary=ok, evidence=tuple(self.good[:50])
        )


def _with_status(ev: Evidence, status: Status) -> Evidence:
    return Evidence(ev.target, ev.command, ev.observed, ev.expected, status, ev.raw)


def listing(items: Iterable[str], limit: int = 6) -> str:
    seq = list(dict.fromkeys(items))
    if len(seq) <= limit:
        return ", ".join(seq)
    return ", ".join(seq[:limit]) + f" and {len(seq) - limit} more"


def rails_or_unknown(obs: Observations, ctx: Context, node: str) -> tuple[Rail, ...] | Unreadable:
    """The node's discovered rails, or why there are none (None-like for unreachable nodes)."""
    rails = node_rails(ctx, node)
    if rails or node in obs.unreachable:
        return rails
    res = obs.node(node, IBDEV.name)
    return Unreadable(
        node,
        IBDEV.command,
        "no RDMA rails discovered" + (f": {res.error}" if res is not None and res.error else ""),
        "" if res is None else res.text,
    )


def rails_judged_from(
    obs: Observations, ctx: Context, probe: HostProbe
) -> tuple[list[Rail], list[Unreadable]]:
    """Every node's rails, keeping only nodes whose `ip -j` output (`probe`) reads and names
    at least one of their rails; the others come back as Unreadable (an `unknown` verdict)."""
    from wizard.parsers.iproute2 import parse_ip_json

    rails: list[Rail] = []
    bad: list[Unreadable] = []
    for node in ctx.nodes:
        got = rails_or_unknown(obs, ctx, node)
        if isinstance(got, Unreadable):
            bad.append(got)
            continue
        value, why, res = read(obs, node, probe, parse_ip_json)
        if why is not None:
            bad.append(why)
            continue
        listed = {i.name for i in value.interfaces} if value is not None else set()
        if value is not None and got and not any(r.netdev in listed for r in got):
            # output that names none of this node's rails is not this node's (or is garbage)
            missing = ", ".join(r.netdev for r in got)
            text = res.text if res is not None else ""
            bad.append(
                Unreadable(node, probe.command, f"{probe.command} lists none of {missing}", text)
            )
            continue
        rails.extend(got)
    return rails, bad


CARRIER_DOWN = HostProbe("carrier_down", "grep -H . /sys/class/net/*/carrier_down_count")


def carrier_downs(obs: Observations, node: str) -> dict[str, int]:
    """netdev -> link-down events since boot (`/sys/class/net/<netdev>/carrier_down_count`)."""
    res = obs.node(node, CARRIER_DOWN.name)
    out: dict[str, int] = {}
    if res is None or res.error is not None:
        return out
    for line in res.stdout.splitlines():
        path, _, value = line.partition(":")
        parts = path.split("/")
        if len(parts) >= 5 and parts[-1] == "carrier_down_count" and value.strip().isdigit():
            out[parts[-2]] = int(value.strip())
    return out


def undrained(obs: Observations, node: str, netdev: str) -> int:
    """Link-down events of a rail since the node booted: > 0 means a link transition with no AC
    drain since (a drain reboots and resets the counter), so its bandwidth is not evidence."""
    return carrier_downs(obs, node).get(netdev, 0)
