"""Port names, rates, RouterOS duration and clock text, and the small records of a lab switch.

The pure facts `SwitchState` (switch.py) is built on: which ports a CRS804/CRS812 has, which are
lane masters or CPU-attached, the rate a leg can carry and negotiates at, and the text RouterOS
prints for rates, durations and timestamps.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = [
    "BLOCKING_ROLES",
    "BRIDGE",
    "CPU_LOAD_IDLE",
    "DATA_L2MTU",
    "DATA_MTU",
    "DD_RE",
    "MODELS",
    "ROUTEROS_VERSION",
    "Counters",
    "Forwarding",
    "Item",
    "LinkStatus",
    "Listener",
    "ScriptRun",
    "cage_of",
    "clock_text",
    "duration_text",
    "is_cpu_port",
    "is_lane_master",
    "mac_address",
    "max_rate_gbps",
    "negotiated",
    "parse_duration",
    "port_names",
    "rate_text",
    "speed_gbps",
]

Item = dict[str, str]
Listener = Callable[[str, str], None]

MODELS = ("CRS804-4DDQ", "CRS812-8DS-2DQ-2DDQ")
ROUTEROS_VERSION = "7.23.1"
DD_RE = re.compile(r"^qsfp56-dd-(\d+)-(\d+)$")
_QSFP_RE = re.compile(r"^qsfp56-(\d+)-(\d+)$")
_SPEED_RE = re.compile(r"^(\d+(?:\.\d+)?)(M|G)-base")
CPU_LOAD_IDLE = 1
DATA_L2MTU = "9216"
DATA_MTU = "9000"
BRIDGE = "bridge"
BLOCKING_ROLES = frozenset({"alternate-port", "backup-port", "disabled-port"})


@dataclass(frozen=True, slots=True)
class LinkStatus:
    """What the switch side of one port sees on the wire."""

    up: bool
    rate_gbps: float
    fec: str
    reason: str


@dataclass(frozen=True, slots=True)
class Forwarding:
    """How this switch forwards frames between two of its ports."""

    same_bridge: bool
    offloaded: bool
    lossless: bool
    min_l2mtu: int
    min_mtu: int
    blocked: bool
    reason: str


def is_cpu_port(name: str) -> bool:
    """ether1/ether2 hang off the CPU, not the switch chip."""
    return name.startswith("ether")


def cage_of(name: str) -> int | None:
    m = DD_RE.match(name)
    return int(m.group(1)) if m else None


def is_lane_master(name: str) -> bool:
    m = DD_RE.match(name)
    if m:
        return m.group(2) in ("1", "5")
    q = _QSFP_RE.match(name)
    if q:
        return q.group(2) == "1"
    return name.startswith("sfp56-")


def port_names(model: str) -> list[str]:
    if model == "CRS804-4DDQ":
        dd = [f"qsfp56-dd-{c}-{lane}" for c in range(1, 5) for lane in range(1, 9)]
        return ["ether1", "ether2", *dd]
    if model == "CRS812-8DS-2DQ-2DDQ":
        dd = [f"qsfp56-dd-{c}-{lane}" for c in range(1, 3) for lane in range(1, 9)]
        q = [f"qsfp56-{c}-{lane}" for c in range(1, 3) for lane in range(1, 5)]
        sfp = [f"sfp56-{i}" for i in range(1, 9)]
        return ["ether1", *dd, *q, *sfp]
    raise ValueError(f"unknown switch model {model!r}; expected one of {', '.join(MODELS)}")


def max_rate_gbps(name: str) -> float:
    if is_cpu_port(name):
        return 10.0
    if name.startswith("sfp56-"):
        return 50.0
    if DD_RE.match(name) and not is_lane_master(name):
        return 50.0
    return 200.0


def speed_gbps(speed: str) -> float | None:
    m = _SPEED_RE.match(speed)
    if not m:
        return None
    value = float(m.group(1))
    return value / 1000 if m.group(2) == "M" else value


def rate_text(gbps: float) -> str:
    if gbps < 1:
        return f"{int(gbps * 1000)}Mbps"
    if gbps == int(gbps):
        return f"{int(gbps)}Gbps"
    return f"{gbps}Gbps"


def mac_address(seed: int, index: int) -> str:
    raw = [0x78, 0x9A, 0x18, (seed >> 8) & 0xFF, seed & 0xFF, index & 0xFF]
    return ":".join(f"{b:02X}" for b in raw)


def _clock_text(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _duration_text(seconds: float) -> str:
    s = int(seconds)
    parts = []
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            parts.append(f"{s // size}{unit}")
            s %= size
    if s or not parts:
        parts.append(f"{s}s")
    return "".join(parts)


@dataclass(slots=True)
class Counters:
    tx_bytes: int = 0
    rx_bytes: int = 0
    tx_packets: int = 0
    rx_packets: int = 0
    link_downs: int = 0
    rx_pause: int = 0  # PFC pause frames received / sent on the port (wizard.lab.pause)
    tx_pause: int = 0


@dataclass(slots=True)
class ScriptRun:
    """A running script, suspended at a `:delay` until `resume_at`."""

    owner: str
    commands: list[str]
    resume_at: float


def negotiated(item: dict[str, str], dname: str, cap: float) -> float | str:
    """The rate a cabled, enabled ether port links at, or why it does not link."""
    autoneg = item.get("auto-negotiation") == "true"
    if DD_RE.match(dname):
        if not is_lane_master(dname):
            return "not a lane master of a 2x200G breakout"
        if autoneg:
            return "auto-negotiation failed: QSFP56-DD breakout legs need forced mode"
    if autoneg or is_cpu_port(dname):
        return cap
    wanted = speed_gbps(item.get("speed", ""))
    if wanted is None:
        return "no speed set with auto-negotiation=no"
    if wanted > cap:
        return f"speed {item.get('speed')} exceeds the leg"
    return wanted


_DUR_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|w|d|h|m|s)")


def parse_duration(text: str) -> float:
    """RouterOS durations: `2w3d4h5m6s`, `90s`, `00:02:00`, a bare number of seconds."""
    text = text.strip()
    if not text:
        return 0.0
    if ":" in text:
        parts = [float(p) for p in text.split(":")]
        total = 0.0
        for p in parts:
            total = total * 60 + p
        return total
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    sizes = {"w": 604800.0, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    pos = 0
    total = 0.0
    for m in _DUR_RE.finditer(text):
        if m.start() != pos:
            raise ValueError(f"bad duration {text!r}")
        total += float(m.group(1)) * sizes[m.group(2)]
        pos = m.end()
    if pos != len(text):
        raise ValueError(f"bad duration {text!r}")
    return total


def duration_text(seconds: float) -> str:
    return _duration_text(seconds)


def clock_text(ts: float) -> str:
    return _clock_text(ts)
