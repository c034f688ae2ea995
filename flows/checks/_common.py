"""What the checks share: the probe specs (one object per command, so the sweep runs each once),
reading a probe result through a parser with `unknown` as the answer to anything unreadable, and
a small builder that turns evidence into one verdict per fault id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

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
from wizard.model import Evidence, Measurement, ProbeResult, Rail, Status, Verdict

if TYPE_CHECKING:
    from flows.base import Check
    from wizard.parsers.ethtool import EthtoolLink
    from wizard.parsers.iproute2 import IpResult
    from wizard.parsers.routeros import RouterOsResult

__all__ = [
    "BOOT_ID",
    "CARRIER_DOWN",
    "DISCOVERY_HOST_PROBES",
    "DMESG",
    "ETHTOOL",
    "ETHTOOL_I",
    "FABRIC_NETDEV",
    "HW_COUNTERS",
    "IBDEV",
    "IP_ADDR",
    "IP_LINK",
    "LSPCI",
    "MLNX_QOS",
    "NCCL_CONF",
    "NCCL_ENV",
    "PASTED",
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
    "fabric_port",
    "is_cpu_port",
    "is_true",
    "listing",
    "node_rails",
    "pasted_context",
    "pasted_ethtool",
    "pasted_host",
    "pasted_ip",
    "pasted_judge",
    "pasted_rails",
    "pasted_routeros",
    "pasted_verdicts",
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


def once_per_text(parser: Callable[[str], T]) -> Callable[[str], T]:
    """`parser`, remembering what it made of each text for as long as the caller keeps it: the
    same output on every rail of every node (one firmware, one QoS profile) is parsed once
    within one check's parse. Only for a caller that reads the values and keeps none of them
    as they are (a parsed value is then shared); a text that does not parse raises each time."""
    seen: dict[str, T] = {}

    def parse(text: str) -> T:
        value = seen.get(text)
        if value is None:
            value = seen[text] = parser(text)
        return value

    return parse


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


# --- one pasted output (`fabwiz analyze`) ------------------------------------------------------

PASTED = "this host"  # the node (or switch) a pasted output is judged as: the text names none


def pasted_host(
    text: str, ctx: Context, probe: HostProbe, netdev: str | None = None
) -> tuple[Observations, Context]:
    """A pasted host output as the one observation of one node, `PASTED`: the output of `probe`
    (on `netdev`, its one rail, for a per-rail probe). The node's rails are otherwise not known:
    `ctx.rails` has no entry for it unless `netdev` is given."""
    key = probe.name if netdev is None else f"{probe.name}:{netdev}"
    command = sudo_command(probe).replace("{netdev}", netdev or "")
    result = ProbeResult(target=PASTED, kind="ssh", command=command, stdout=text, exit_status=0)
    rails = {PASTED: (Rail(PASTED, netdev, rdma="", port=0, half="A"),)} if netdev else {}
    obs = Observations(nodes={PASTED: {key: result}})
    return obs, replace(ctx, nodes=(PASTED,), switches=(), rails=rails)


def pasted_context(ctx: Context, rails: tuple[Rail, ...] = ()) -> Context:
    """`ctx` for one pasted host output: one node, `PASTED`, with `rails` when the text shows
    them (no entry at all when it does not: its rails are then not known)."""
    return replace(ctx, nodes=(PASTED,), switches=(), rails={PASTED: rails} if rails else {})


def pasted_judge(check: Check, parsed: Any, ctx: Context) -> list[Verdict]:
    """`check`'s own judge on a value built from a pasted output, stamped with the check id."""
    return [v if v.check else replace(v, check=check.id) for v in check.judge(parsed, ctx)]


# GB10 fabric netdevs: enp1s0f0np0 (half A), enP2p1s0f1np1 (half B); mlx5-style names too
FABRIC_NETDEV = re.compile(r"^en(?:p\d+|P\d+p\d+)s\d+f\d+np\d+$")
_HALF_PORT = re.compile(r"^en(?:P(\d+))?p\d+s\d+f(\d+)")


def pasted_ip(text: str) -> IpResult | None:
    """A pasted `ip -j addr`, `ip -br addr` or `ip addr` output, parsed; None if it is not one."""
    from wizard.parsers.detect import detect, parse
    from wizard.parsers.iproute2 import IpResult

    try:
        value = parse(detect(text), text)
    except ParseError:
        return None
    return value if isinstance(value, IpResult) else None


def pasted_ethtool(text: str) -> tuple[EthtoolLink, ...]:
    """The links of a pasted `ethtool <netdev>` output (none for `-i`, `--show-fec`, `-m`)."""
    from wizard.parsers.detect import parse
    from wizard.parsers.ethtool import EthtoolResult

    try:
        value = parse("ethtool", text)
    except ParseError:
        return ()
    return value.links if isinstance(value, EthtoolResult) else ()


def pasted_routeros(text: str) -> RouterOsResult | None:
    """A pasted RouterOS print, API reply or export, parsed; None if it is not one."""
    from wizard.parsers.routeros import parse_routeros

    try:
        return parse_routeros(text)
    except ParseError:
        return None


def pasted_rails(ip: IpResult) -> tuple[Rail, ...]:
    """The fabric netdevs of a pasted `ip` output as rails of `PASTED`, half and port read from
    the GB10 names (enp1s0f1np1: half A, port 1; enP2p1s0f0np0: half B, port 0)."""
    rails = []
    for i in ip.interfaces:
        m = _HALF_PORT.match(i.name)
        if not FABRIC_NETDEV.match(i.name) or m is None:
            continue
        rails.append(
            Rail(
                node=PASTED,
                netdev=i.name,
                rdma="",
                port=int(m.group(2)),
                half="A" if int(m.group(1) or 0) == 0 else "B",
                mac=(i.mac or "").lower(),
                addresses=tuple(
                    f"{a.address}/{a.prefixlen}" for a in i.addresses if a.family == "inet"
                ),
                ipv6=tuple(
                    f"{a.address}/{a.prefixlen}" for a in i.addresses if a.family == "inet6"
                ),
                mtu=i.mtu or 0,
                up=i.carrier and (i.state or "UP").upper() == "UP",
            )
        )
    return tuple(rails)


def pasted_verdicts(verdicts: Iterable[Verdict], faults: Iterable[str]) -> list[Verdict]:
    """The verdicts on `faults`: the ones a pasted output can speak to."""
    wanted = set(faults)
    return [v for v in verdicts if v.fault in wanted]


def fabric_port(name: object) -> bool:
    """A switch port name of the fabric's cages (QSFP/OSFP/SFP56/SFP28), by its default name."""
    return isinstance(name, str) and name.startswith(("qsfp", "sfp56", "sfp28", "osfp"))


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


def rail_switch(node: str, netdev: str, ctx: Context) -> str | None:
    """The switch a node's rail is cabled to: the inventory's cabling, else the switch
    discovery learned for that rail (None: not known)."""
    hit = ctx.cabling.get(f"{node}/{netdev}")
    if hit:
        return str(hit[0])
    return next(
        (r.switch for r in ctx.rails.get(node, ()) if r.netdev == netdev and r.switch), None
    )


def crosses(client: tuple[str, str], server: tuple[str, str], ctx: Context) -> bool:
    """Whether two rails ((node, netdev) each) are cabled to different switches: a test
    between them crossed an ISL, or detoured around a blocked one."""
    a, b = rail_switch(*client, ctx), rail_switch(*server, ctx)
    return a is not None and b is not None and a != b


def across_switches(m: Measurement, ctx: Context) -> bool:
    """Whether a rail test's two ends are cabled to different switches."""
    client = (str(m.extra.get("client", "")), str(m.extra.get("client_netdev", "")))
    server = (str(m.extra.get("server", "")), str(m.extra.get("server_netdev", "")))
    return crosses(client, server, ctx)


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
