"""What a single raw tool output implies, judged against the expectations table.

`fabwiz analyze` has no cluster context (no inventory, no cabling, no history): it sees one
pasted output at a time. So the rules here are the *signatures* of FAULTS.md ("~9.5-10 Gb/s on
every transport", "Using network Socket", "PFC enabled on a priority"...), each worded with the
alternatives a single file cannot tell apart. Findings are `wizard.model.Verdict` values whose
`fault` ids are the public ids of FAULTS.md; benign red herrings come back with status `benign`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from flows.expectations import DEFAULT, Expectations
from wizard.errors import ParseError
from wizard.model import Status, Verdict
from wizard.parsers.detect import detect, parse
from wizard.parsers.ethtool import EthtoolResult
from wizard.parsers.iperf3 import Iperf3Result
from wizard.parsers.iproute2 import IpResult
from wizard.parsers.kernel_log import KernelLogResult
from wizard.parsers.lspci import LspciResult
from wizard.parsers.mlnx_qos import MlnxQosResult
from wizard.parsers.nccl import NcclResult
from wizard.parsers.perftest import PerftestResult
from wizard.parsers.ping import PingResult
from wizard.parsers.routeros import RouterOsResult
from wizard.parsers.sysctl import SysctlResult

CHECK = "analyze"
# GB10 fabric netdevs: enp1s0f0np0 (half A), enP2p1s0f1np1 (half B); mlx5-style names too.
FABRIC_NETDEV = re.compile(r"^en(?:p\d+|P\d+p\d+)s\d+f\d+np\d+$")


@dataclass(frozen=True, slots=True)
class FileAnalysis:
    """One analysed text: its kind, the parsed value (or the parse error), the findings."""

    kind: str
    parsed: Any
    findings: tuple[Verdict, ...]
    error: str | None = None


def _v(fault: str, status: Status, summary: str, *targets: str) -> Verdict:
    return Verdict(
        fault=fault,
        status=status,
        summary=summary,
        targets=tuple(t for t in targets if t),
        check=CHECK,
    )


def analyze_perftest(r: PerftestResult, exp: Expectations = DEFAULT) -> list[Verdict]:
    out: list[Verdict] = []
    dev = r.device or ""
    if r.error_kind == "retry-exceeded":
        why = (
            f"{r.test} ended in transport retry exceeded (status 12): the RoCE connection "
            "formed but data never arrived"
        )
        out.append(
            _v(
                "switch.qos-pfc-stall",
                Status.FAIL,
                f"{why}: lossless QoS/PFC stalling the offloaded path, or host.duplicate-ip "
                "(frames vanish to a duplicated address)",
                dev,
            )
        )
        out.append(
            _v(
                "host.duplicate-ip",
                Status.FAIL,
                f"{why}: a duplicated fabric IPv4 (ARP flux), or switch.qos-pfc-stall",
                dev,
            )
        )
        return out
    bw = r.bw_avg_gbps
    if bw is None or r.latency or not r.rows:
        return out
    lo, hi = exp.degraded_band_gbps
    if 9.0 <= bw <= exp.software_forwarding_max_gbps:
        out.append(
            _v(
                "switch.offload-split-cage",
                Status.FAIL,
                f"{bw:.2f} Gb/s is the ~9.5-10 Gb/s software-forwarding signature: the "
                "switch CPU forwards the fabric bridge (switch.offload-split-cage, "
                "switch.offload-second-bridge or switch.offload-disabled); on a direct "
                "cable it would be host.cx7-degraded instead",
                dev,
            )
        )
    elif lo <= bw <= hi:
        out.append(
            _v(
                "host.cx7-degraded",
                Status.FAIL,
                f"{bw:.2f} Gb/s is in the {lo:g}-{hi:g} Gb/s stale-initialisation band of "
                "a CX7 on a 200G link: host.cx7-degraded (AC drain clears it) or "
                "host.cx7-throttled (firmware power throttle)",
                dev,
            )
        )
    elif bw < lo and bw <= exp.rstp_detour_max_gbps:
        out.append(
            _v(
                "switch.rstp-isl-blocked",
                Status.WARN,
                f"{bw:.2f} Gb/s single flow: an RSTP detour through the campus network "
                "(switch.rstp-isl-blocked), or software forwarding plus stalls "
                "(switch.offload-split-cage)",
                dev,
            )
        )
    return out


def analyze_nccl(r: NcclResult, exp: Expectations = DEFAULT) -> list[Verdict]:
    out: list[Verdict] = []
    if r.transport == "Socket":
        extra = (
            f" (busbw {r.largest_size_busbw:.2f} GB/s at the largest size)"
            if r.largest_size_busbw is not None
            else ""
        )
        out.append(
            _v(
                "nccl.socket-fallback",
                Status.FAIL,
                "NCCL runs over TCP sockets (`Using network Socket` / `via NET/Socket`)"
                f"{extra}: remove NCCL_NET=Socket / NCCL_IB_DISABLE=1 and fix the HCA list",
            )
        )
    if r.ib_hca is not None and (r.ib_no_device or r.net_plugin_failed):
        out.append(
            _v(
                "nccl.hca-filter",
                Status.FAIL,
                f"NCCL_IB_HCA={r.ib_hca} matches no RDMA device (`NET/IB : No device "
                "found`): it is a case-sensitive prefix match; list the active devices, "
                "e.g. NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0",
                r.ib_hca,
            )
        )
    elif (
        r.ib_hca is not None
        and re.search(r"\brocep", r.ib_hca)
        and "roceP" not in r.ib_hca
        and not r.ib_hca.startswith("^")
    ):
        out.append(
            _v(
                "nccl.hca-filter",
                Status.WARN,
                f"NCCL_IB_HCA={r.ib_hca} only matches half-A devices (rocep...): the "
                "roceP2... half is never used, so a node tops out near 100 Gb/s",
                r.ib_hca,
            )
        )
    if r.transport != "Socket" and r.largest_size_busbw is not None:
        lo, hi = exp.nccl_socket_band
        if lo <= r.largest_size_busbw <= hi:
            out.append(
                _v(
                    "nccl.socket-fallback",
                    Status.WARN,
                    f"busbw {r.largest_size_busbw:.2f} GB/s is in the {lo:g}-{hi:g} GB/s "
                    "socket band although the log does not show the transport: NCCL over "
                    "sockets, or a degraded CX7 (host.cx7-degraded)",
                )
            )
    if r.gdr is False:
        out.append(
            _v(
                "benign.gdr-disabled",
                Status.BENIGN,
                "GPU Direct RDMA disabled / GDR 0: normal on GB10 unified memory, not a bottleneck",
            )
        )
    return out


def _fabric_ifaces(r: IpResult) -> list[Any]:
    return [i for i in r.interfaces if FABRIC_NETDEV.match(i.name)]


def analyze_ip(r: IpResult, exp: Expectations = DEFAULT) -> list[Verdict]:
    out: list[Verdict] = []
    for addr, names in sorted(r.duplicate_ipv4().items()):
        out.append(
            _v(
                "host.duplicate-ip",
                Status.FAIL,
                f"{addr} is on {', '.join(names)}: ARP flux, RDMA frames vanish; use one "
                "subnet per rail (10.9.<rail>.<host>/24)",
                *names,
            )
        )
    fabric = _fabric_ifaces(r)
    v6 = [i.name for i in fabric if i.ipv6]
    if v6:
        out.append(
            _v(
                "host.ipv6-on-fabric",
                Status.WARN,
                f"IPv6 addresses on fabric netdevs {', '.join(v6)}: RoCE GID indexes "
                "shift; disable link-local in netplan and use NCCL_IB_ROCE_VERSION_NUM=2",
                *v6,
            )
        )
    bad_mtu = [f"{i.name}={i.mtu}" for i in fabric if i.mtu is not None and i.mtu != exp.fabric_mtu]
    if bad_mtu:
        out.append(
            _v(
                "host.mtu",
                Status.FAIL,
                f"fabric MTU is not {exp.fabric_mtu}: {', '.join(bad_mtu)}",
                *[m.split("=")[0] for m in bad_mtu],
            )
        )
    subnets: dict[str, list[str]] = {}
    for i in fabric:
        for a in i.addresses:
            if a.family == "inet" and not a.link_local and a.prefixlen <= 30:
                net = ".".join(a.address.split(".")[:3]) if a.prefixlen >= 24 else a.address
                subnets.setdefault(f"{net}/{a.prefixlen}", []).append(i.name)
    dup_sets = [set(n) for n in r.duplicate_ipv4().values()]
    for net, holders in sorted(subnets.items()):
        rails = sorted(set(holders))
        if len(rails) > 1 and not any(set(rails) <= d for d in dup_sets):
            out.append(
                _v(
                    "host.same-subnet-rails",
                    Status.WARN,
                    f"rails {', '.join(rails)} share {net}",
                    *rails,
                )
            )
    unaddressed = [
        i.name
        for i in fabric
        if (i.state or "").upper() == "UP"
        and not [a for a in i.addresses if a.family == "inet" and not a.link_local]
    ]
    has_addresses = any(i.addresses for i in r.interfaces)
    if unaddressed and has_addresses and r.format != "text":
        out.append(
            _v(
                "host.half-unused",
                Status.WARN,
                f"fabric netdevs up without a routable IPv4: {', '.join(unaddressed)} "
                "(that half or rail is not driven)",
                *unaddressed,
            )
        )
    return out


def analyze_sysctl(r: SysctlResult, exp: Expectations = DEFAULT) -> list[Verdict]:
    want = {
        "arp_ignore": exp.arp_ignore,
        "arp_announce": exp.arp_announce,
        "rp_filter": exp.rp_filter,
    }
    wrong = [f"{k}={v} (want {want[k]})" for k, v in r.arp.items() if v != want[k]]
    if not wrong:
        return []
    return [
        _v(
            "host.arp-sysctls",
            Status.FAIL,
            "multi-rail host without the RoCE ARP settings: " + ", ".join(wrong),
        )
    ]


def analyze_mlnx_qos(r: MlnxQosResult, exp: Expectations = DEFAULT) -> list[Verdict]:
    if not r.pfc_enabled:
        return []
    prios = ",".join(str(p) for p in r.pfc_enabled)
    return [
        _v(
            "host.pfc-enabled",
            Status.FAIL,
            f"PFC enabled on priority {prios} while the fabric is lossy: "
            "mlnx_qos --pfc 0,0,0,0,0,0,0,0",
            r.interface or "",
        )
    ]


def analyze_lspci(r: LspciResult, exp: Expectations = DEFAULT) -> list[Verdict]:
    want = float(exp.pcie_speed.removesuffix("GT/s"))
    bad = [
        d
        for d in r.devices
        if d.lnksta is not None
        and (d.mellanox or d.description is None)
        and (d.lnksta.speed_gts < want or d.lnksta.width < exp.pcie_width)
    ]
    if not bad:
        return []
    return [
        _v(
            "host.pcie-width",
            Status.FAIL,
            "CX7 PCIe link below Gen5 x4: "
            + ", ".join(
                f"{d.address or '?'} LnkSta {d.lnksta.speed} x{d.lnksta.width}"
                for d in bad
                if d.lnksta
            ),
            *[d.address or "" for d in bad],
        )
    ]


def analyze_kernel_log(r: KernelLogResult, exp: Expectations = DEFAULT) -> list[Verdict]:
    out: list[Verdict] = []
    if r.insufficient_power_27w:
        devs = sorted({e.device or "" for e in r.of("pcie-27w")})
        out.append(
            _v(
                "benign.pcie-27w",
                Status.BENIGN,
                "mlx5 'insufficient power on the PCIe slot (27W)' is logged on every boot "
                "of healthy GB10 units (a SlotPowerLimit reporting artifact)",
                *devs,
            )
        )
    want = float(exp.pcie_speed.removesuffix("GT/s"))
    for e in r.of("pcie-bandwidth"):
        if not e.text.startswith("mlx5_core") or e.value is None:
            continue
        m = re.search(r"([\d.]+) GT/s x(\d+)", e.value)
        if m and (float(m.group(1)) < want or int(m.group(2)) < exp.pcie_width):
            out.append(
                _v(
                    "host.pcie-width",
                    Status.FAIL,
                    f"{e.device}: {e.value} available PCIe bandwidth, below Gen5 x4",
                    e.device or "",
                )
            )
    transitions = [*r.of("link"), *r.of("cable")] + [
        e for e in r.of("hotplug") if "Cable" in (e.value or "")
    ]
    if transitions:
        out.append(
            _v(
                "process.undrained-measurement",
                Status.WARN,
                f"{len(transitions)} link transition(s) logged (cable plug, link up/down): "
                "bandwidth measured after them is not evidence until the node is AC-drained",
                *sorted({e.netdev or e.device or "" for e in transitions}),
            )
        )
    return out


def analyze_ping(r: PingResult, exp: Expectations = DEFAULT) -> list[Verdict]:
    if r.mtu_errors:
        return [
            _v(
                "host.mtu",
                Status.FAIL,
                f"ping -M do -s {r.payload}: local error 'message too long, mtu="
                f"{r.reported_mtu}': the sending netdev MTU is below the packet size",
                r.interface or "",
            )
        ]
    if r.payload is not None and r.payload >= 8000 and r.transmitted and not r.received:
        return [
            _v(
                "switch.mtu",
                Status.WARN,
                f"jumbo ping ({r.payload} bytes) to {r.address} lost 100%: a switch port or "
                "ISL below l2mtu 9216 / mtu 9000 (switch.mtu), or the peer's host.mtu",
                r.interface or "",
                r.address or "",
            )
        ]
    return []


def analyze_iperf3(r: Iperf3Result, exp: Expectations = DEFAULT) -> list[Verdict]:
    bw = r.received_gbps or r.sent_gbps
    if r.streams == 1 and bw is not None and 8.0 <= bw <= 16.0:
        return [
            _v(
                "benign.iperf-single-stream",
                Status.BENIGN,
                f"one TCP stream at {bw:.1f} Gb/s measures the ARM core, not the link: use "
                "-P 4+ on both halves (expect ~93 Gb/s per half)",
            )
        ]
    return []


def analyze_ethtool(r: EthtoolResult, exp: Expectations = DEFAULT) -> list[Verdict]:
    out: list[Verdict] = []
    for link in r.links:
        name = link.interface or ""
        if not FABRIC_NETDEV.match(name):
            continue
        if link.link_detected is False:
            out.append(_v("host.rail-down", Status.FAIL, f"{name}: no carrier", name))
        elif link.speed_mbps is not None and link.speed_mbps < exp.link_speed_mbps:
            out.append(
                _v(
                    "switch.link-degraded",
                    Status.WARN,
                    f"{name}: {link.speed_mbps}Mb/s, below {exp.link_speed_mbps}Mb/s",
                    name,
                )
            )
    return out


def _fabric_port(name: object) -> bool:
    return isinstance(name, str) and bool(re.match(r"^(qsfp|sfp56|sfp28|osfp)", name))


def analyze_routeros(r: RouterOsResult, exp: Expectations = DEFAULT) -> list[Verdict]:
    out: list[Verdict] = []
    stall: list[str] = []
    mtu: list[str] = []
    no_hw: list[str] = []
    no_offload: list[str] = []
    for i, row in enumerate(r.rows):
        name = row.get("name") or row.get("interface")
        trust, pfc = row.get("trust-l3"), row.get("pfc")
        if _fabric_port(name) and (
            (isinstance(trust, str) and trust not in ("ignore",))
            or (pfc not in (None, "disabled", False))
        ):
            stall.append(str(name))
        if _fabric_port(name):
            l2 = row.get("l2mtu")
            if isinstance(l2, int) and l2 < exp.fabric_l2mtu:
                mtu.append(f"{name} l2mtu={l2}")
            if row.get("hw") is False:
                no_hw.append(str(name))
            elif row.get("hw-offload") is False or (
                "hw" in row and r.format == "cli-table" and r.flags and "H" not in r.flags[i]
            ):
                no_offload.append(str(name))
    for item in r.export:
        menu = re.sub(r"\s+", " ", item.menu)
        port = item.target or item.args.get("interface")
        if menu == "/interface ethernet switch qos port" and _fabric_port(port):
            trust, pfc = item.args.get("trust-l3"), item.args.get("pfc")
            if (trust and trust != "ignore") or (pfc and pfc != "disabled"):
                stall.append(str(port))
        if menu == "/interface ethernet" and item.target:
            m = re.search(r"default-name=(\S+?)\s*\]", item.target)
            port = m.group(1) if m else item.target
            l2 = item.args.get("l2mtu")
            if _fabric_port(port) and l2 and l2.isdigit() and int(l2) < exp.fabric_l2mtu:
                mtu.append(f"{port} l2mtu={l2}")
        if (
            menu == "/interface bridge port"
            and _fabric_port(item.args.get("interface"))
            and item.args.get("hw") == "no"
        ):
            no_hw.append(item.args["interface"])
    if stall:
        out.append(
            _v(
                "switch.qos-pfc-stall",
                Status.FAIL,
                "lossless QoS on fabric ports (trust-l3 != ignore or a PFC profile): RoCE "
                "connects but data stalls; set trust-l3=ignore pfc=disabled",
                *dict.fromkeys(stall),
            )
        )
    if mtu:
        out.append(
            _v(
                "switch.mtu",
                Status.FAIL,
                f"fabric ports below l2mtu {exp.fabric_l2mtu}: " + ", ".join(mtu),
                *[m.split()[0] for m in mtu],
            )
        )
    if no_hw:
        out.append(
            _v(
                "switch.offload-disabled",
                Status.FAIL,
                "fabric bridge ports with hw=no: " + ", ".join(no_hw),
                *no_hw,
            )
        )
    if no_offload:
        out.append(
            _v(
                "switch.offload-split-cage",
                Status.FAIL,
                "fabric bridge ports without hardware offload (no H flag / "
                "hw-offload=false): the switch CPU forwards them (~10 Gb/s); split cage "
                "or a second bridge (switch.offload-second-bridge)",
                *no_offload,
            )
        )
    return out


RULES: dict[str, Any] = {
    "perftest": analyze_perftest,
    "nccl-tests": analyze_nccl,
    "ip-json": analyze_ip,
    "ip-brief": analyze_ip,
    "ip-text": analyze_ip,
    "sysctl": analyze_sysctl,
    "mlnx_qos": analyze_mlnx_qos,
    "lspci": analyze_lspci,
    "kernel-log": analyze_kernel_log,
    "ping": analyze_ping,
    "iperf3": analyze_iperf3,
    "routeros": analyze_routeros,
}


def findings_for(kind: str, parsed: Any, exp: Expectations = DEFAULT) -> tuple[Verdict, ...]:
    """The findings a parsed value implies (none for kinds without rules)."""
    if kind == "ethtool" and isinstance(parsed, EthtoolResult):
        return tuple(analyze_ethtool(parsed, exp))
    rule = RULES.get(kind)
    if rule is None:
        return ()
    result: list[Verdict] = rule(parsed, exp)
    return tuple(result)


def headline(kind: str, parsed: Any) -> str:
    """A one-line plain-text summary of the key parsed values (for tables and logs)."""
    if isinstance(parsed, PerftestResult):
        bw = f"{parsed.bw_avg_gbps:.2f} Gb/s avg" if parsed.bw_avg_gbps is not None else "no BW"
        parts = [parsed.test, parsed.device or "?", bw]
        if parsed.qps:
            parts.append(f"{parsed.qps} QP")
        if parsed.error:
            parts.append(f"error: {parsed.error}")
        return ", ".join(parts)
    if isinstance(parsed, NcclResult):
        avg = (
            f"avg busbw {parsed.avg_busbw:g} GB/s"
            if parsed.avg_busbw is not None
            else "no avg busbw"
        )
        parts = [parsed.op or "NCCL log", avg, f"transport {parsed.transport or '?'}"]
        if parsed.largest_size_busbw is not None:
            parts.append(f"{parsed.largest_size_busbw:g} GB/s at the largest size")
        if parsed.error:
            parts.append(f"error: {parsed.error}")
        return ", ".join(parts)
    if isinstance(parsed, IpResult):
        return ", ".join(
            f"{i.name} {i.state or ''} {' '.join(i.ipv4)}".strip() for i in parsed.interfaces
        )
    if isinstance(parsed, MlnxQosResult):
        return f"trust {parsed.trust}, PFC {parsed.pfc}"
    if isinstance(parsed, SysctlResult):
        return ", ".join(f"{k}={v}" for k, v in parsed.arp.items()) or f"{len(parsed.values)} keys"
    if isinstance(parsed, PingResult):
        return (
            f"{parsed.payload} B to {parsed.address}: {parsed.received}/{parsed.transmitted} "
            f"received, {parsed.mtu_errors} MTU errors"
        )
    if isinstance(parsed, RouterOsResult):
        what = f"{len(parsed.export)} export items" if parsed.export else f"{len(parsed.rows)} rows"
        return f"{parsed.format} {parsed.path or ''} {what}".replace("  ", " ")
    return kind


def analyze_text(text: str, exp: Expectations = DEFAULT) -> FileAnalysis:
    """Detect, parse and judge one text. Unrecognised or unparseable text is an `unknown`
    result carrying the parser's message, never an exception."""
    kind = detect(text)
    if kind == "unknown":
        return FileAnalysis("unknown", None, (), "output not recognised")
    try:
        parsed = parse(kind, text)
    except ParseError as exc:
        return FileAnalysis(kind, None, (), exc.message)
    return FileAnalysis(kind, parsed, findings_for(kind, parsed, exp))
