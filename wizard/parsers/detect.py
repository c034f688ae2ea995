"""Recognise what a raw text is, so `fabwiz analyze` and replays pick the right parser.

`detect(text)` returns one `kind` of the public list: `perftest`, `nccl-tests`,
`ibdev2netdev`, `ip-json`, `ip-brief`, `ethtool`, `ethtool-stats`, `mlnx_qos`, `sysctl`, `lspci`,
`kernel-log`, `ping`, `iperf3`, `routeros`, or `unknown`; plus two kinds this module adds for
formats fabwiz parses that the list does not name: `ip-text` (`ip addr`, `ip -s link`) and
`sysfs` (RDMA port counters: `grep -H .` of hw_counters, `show_counters`, port rate/state),
`rdma-link`, `show-gids` and `ibstat`.
Decisions are by content (signature lines), never by file name. `parse(kind, text)` runs the
matching parser.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from wizard.errors import ParseError
from wizard.parsers import (
    ethtool,
    ibdev2netdev,
    iperf3,
    iproute2,
    kernel_log,
    lspci,
    mlnx_qos,
    nccl,
    perftest,
    ping,
    rdma,
    routeros,
    sysctl,
    sysfs,
)

KINDS = (
    "perftest",
    "nccl-tests",
    "ibdev2netdev",
    "ip-json",
    "ip-brief",
    "ethtool",
    "ethtool-stats",
    "mlnx_qos",
    "sysctl",
    "lspci",
    "kernel-log",
    "ping",
    "iperf3",
    "routeros",
    "ip-text",
    "sysfs",
    "unknown",
)


def _json_kind(text: str) -> str | None:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(data, dict):
        if isinstance(data.get("test_info"), dict):
            return "perftest"
        if isinstance(data.get("results"), list) and (
            "average_bus_bandwidth" in data or "nccl_version" in data
        ):
            return "nccl-tests"
        if {"start", "end", "intervals"} & set(data) or (
            "error" in data and {"start", "end"} & set(data)
        ):
            return "iperf3"
        if isinstance(data.get("data"), list):
            return "routeros"
        return None
    if isinstance(data, list) and data and all(isinstance(i, dict) for i in data):
        if all("ifname" in i for i in data):
            return "ip-json"
        if any(".id" in i for i in data):
            return "routeros"
    return None


def _m(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.MULTILINE) is not None


_ROS_KEYS = (
    r"^\s*(board-name|cpu-load|routerboard|hw-offload|hw-offload-group|total-packet-cap|"
    r"auto-negotiation|link-partner-advertising|sfp-supported|driver-rx-byte|"
    r"designated-bridge-id|pfc3-use|factory-firmware|architecture-name):"
)


def _has(pattern: str) -> Callable[[str], bool]:
    return lambda text: _m(pattern, text)


def _routeros_words(text: str) -> bool:
    """A bare `key=value` dump of bridge/interface rows (`print as-value`, `:put`)."""
    return _m(r"^nextid=\*|^\.id=\*|^[a-z-]+=\S", text) and _m(
        r"^(hw|hw-offload|bridge|interface)=", text
    )


def _routeros_keys(text: str) -> bool:
    """A RouterOS detail print (`board-name:`, `hw-offload:`...), not an ethtool listing."""
    return _m(_ROS_KEYS, text) and not _m(r"^\s*(driver|bus-info|Settings for)", text)


def _ethtool_stats(text: str) -> bool:
    return _m(r"^NIC statistics:", text) or (
        _m(r"^ {5}[A-Za-z0-9_]+: -?\d+\s*$", text) and not _m(r"^\S", _noprompt(text))
    )


def _sysctl(text: str) -> bool:
    return _m(r"^[a-z0-9_]+(\.[a-z0-9_-]+)+ = \S", text) or bool(
        re.fullmatch(r"-?\d+", text.strip())
    )


# In order: the first signature that matches decides.
_SIGNATURES: tuple[tuple[Callable[[str], bool], str], ...] = (
    (
        _has(
            r"NCCL (INFO|WARN)|^\S*#\s*nccl-tests version|Collective test (starting|concluded)|"
            r"Avg bus bandwidth|^\S*#\s+size\s+count\s+type"
        ),
        "nccl-tests",
    ),
    (
        _has(
            r"BW peak\[|t_min\[usec\]|^\s*(RDMA_Write|RDMA_Read|Send|Atomic)\w* (Bidirectional )?"
            r"(BW|Latency) Test|Failed status[ -]\S*.*wr_id|Couldn't connect to \S+:\d+|"
            r"Waiting for client to connect|\bib_(write|read|send)_(bw|lat)\b"
        ),
        "perftest",
    ),
    (_has(r"^link \S+/\d+\s+state \w+"), "rdma-link"),
    (_has(r"^DEV\s+PORT\s+INDEX\s+GID|^n_gids_found=\d+"), "show-gids"),
    (_has(r"^CA '[^']+'\s*$"), "ibstat"),
    (_has(r"^\s*\S+ port \d+ ==> \S+ \((Up|Down)\)"), "ibdev2netdev"),
    (_has(r"^\s*(DCBX mode:|Priority trust state:|PFC configuration:)"), "mlnx_qos"),
    (
        _has(
            r"by RouterOS \d|^\[[^\]\s]+@[^\]]+\]\s+[/>]|^(>>>\s?)?!(re|done|trap|fatal)\s*$|"
            r"^Flags: [A-Z] - |^Columns?: [A-Z]|^/(interface|ip|system|tool|routing)( [a-z-]+)*\s*$"
        ),
        "routeros",
    ),
    (_routeros_words, "routeros"),
    (_routeros_keys, "routeros"),
    (_ethtool_stats, "ethtool-stats"),
    (
        _has(
            r"^Settings for \S+:|^\s+Speed: (\d+Mb/s|Unknown)|^FEC parameters for|"
            r"^Active FEC encoding|^Identifier\s+: 0x|^netlink error: |^driver: \S+"
        ),
        "ethtool",
    ),
    (
        _has(
            r"/sys/class/infiniband/\S+/ports/\d+/(hw_)?counters|^Port \d+ (hw )?counters:|"
            r"^\S+\s+\d+ Gb/sec \(\d+X \w+\)\s+\d+: [A-Z]+"
        ),
        "sysfs",
    ),
    (_has(r"^(0000|[0-9a-f]{4}):[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] [^:]+: |^\s*LnkSta:"), "lspci"),
    (
        _has(r"^\s*\[\s*\d+\.\d+\]|^mlx5_core |^cx7-pcie-hotplug |^Internal error: Oops"),
        "kernel-log",
    ),
    (_has(r"^PING |^\d+ packets transmitted|^ping: "), "ping"),
    (_has(r"^\d+: \S+: <[A-Z_,-]*>"), "ip-text"),
    (
        _has(r"^\S+\s+(UP|DOWN|UNKNOWN|LOWERLAYERDOWN)\s+(\S+/\d+|[0-9a-f:]{17}\s+<|\s*$)"),
        "ip-brief",
    ),
    (_sysctl, "sysctl"),
)


def detect(text: str) -> str:
    """The kind of `text` (see the module docstring)."""
    stripped = text.strip()
    if not stripped:
        return "unknown"
    if stripped[0] in "{[" and not stripped.startswith("[admin@"):
        kind = _json_kind(stripped)
        if kind:
            return kind
        if stripped.startswith("[{'") or stripped.startswith('[{"'):
            return "routeros"
    return next((kind for matches, kind in _SIGNATURES if matches(text)), "unknown")


def _noprompt(text: str) -> str:
    return "\n".join(
        line
        for line in text.splitlines()
        if line.strip() and not re.match(r"^\s*(\S+@\S+[$#]|[$#]) ", line)
    )


def _ethtool_any(text: str) -> Any:
    if re.search(r"^driver: ", text, re.MULTILINE):
        return ethtool.parse_ethtool_driver(text)
    if re.search(r"FEC parameters for|FEC encoding|^netlink error", text, re.MULTILINE):
        return ethtool.parse_ethtool_fec(text)
    if re.search(r"^Identifier\s+:", text, re.MULTILINE):
        return ethtool.parse_ethtool_module(text)
    return ethtool.parse_ethtool(text)


PARSERS: dict[str, Callable[[str], Any]] = {
    "perftest": perftest.parse_perftest,
    "nccl-tests": nccl.parse_nccl,
    "ibdev2netdev": ibdev2netdev.parse_ibdev2netdev,
    "ip-json": iproute2.parse_ip_json,
    "ip-brief": iproute2.parse_ip_brief,
    "ip-text": iproute2.parse_ip_text,
    "ethtool": _ethtool_any,
    "ethtool-stats": ethtool.parse_ethtool_stats,
    "mlnx_qos": mlnx_qos.parse_mlnx_qos,
    "sysctl": sysctl.parse_sysctl,
    "sysfs": sysfs.parse_sysfs_counters,
    "lspci": lspci.parse_lspci,
    "kernel-log": kernel_log.parse_kernel_log,
    "ping": ping.parse_ping,
    "iperf3": iperf3.parse_iperf3,
    "routeros": routeros.parse_routeros,
    "rdma-link": rdma.parse_rdma_link,
    "show-gids": rdma.parse_show_gids,
    "ibstat": rdma.parse_ibstat,
}


def parse(kind: str, text: str) -> Any:
    """Run the parser of `kind`; ParseError for `unknown` or unparseable text."""
    parser = PARSERS.get(kind)
    if parser is None:
        raise ParseError("output not recognised", tool=kind, raw=text)
    return parser(text)
