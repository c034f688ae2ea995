"""The ethtool family: `ethtool IFACE`, `ethtool -i`, `ethtool -S`, `--show-fec`, `-m`.

Sample lines they match (real/ethtool*/):

    Settings for enp1s0f0np0:
        Speed: 200000Mb/s
    firmware-version: 14.28.2006 (MT_2420110034)
         tx_packets_phy: 5588396729
    Active FEC encoding: RS
    Identifier                                : 0x11 (QSFP28)

`Speed` is the cage speed (200000Mb/s on a GB10 rail), not what a PCIe half can carry. Users
often paste `ethtool IF | grep Speed` for several interfaces: each pasted command starts a new
interface. `ethtool -S` pastes are often grepped or non-zero only: counters are a plain mapping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wizard.errors import ParseError
from wizard.parsers.common import is_prompt_line, lines, strip_prompt

TOOL = "ethtool"

_SETTINGS = re.compile(r"^Settings for (\S+?):\s*$")
_CMD_IF = re.compile(r"\bethtool\s+(?:-\w\s+|--[\w-]+\s+)*([A-Za-z][\w.@-]*)")
_KV = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 /().,-]*?)\s*:\s*(.*?)\s*$")
_STAT = re.compile(r"^\s*([A-Za-z0-9_.\[\]-]+):\s+(-?\d+)\s*$")
_SPEED = re.compile(r"(\d+)\s*Mb/s")
_DRIVER_KV = re.compile(r"^([a-z][a-z-]*):\s?(.*?)\s*$")
_RATE = re.compile(r"^(\d+(?:\.\d+)?) Gb/sec \(([^)]*)\)\s*$")


@dataclass(frozen=True, slots=True)
class EthtoolLink:
    """`ethtool IFACE` settings of one interface (fields absent from a grep paste are None)."""

    interface: str | None
    speed_mbps: int | None = None  # None for `Unknown!` (no link)
    duplex: str | None = None
    autoneg: bool | None = None
    link_detected: bool | None = None
    port: str | None = None
    supported_modes: tuple[str, ...] = ()
    advertised_modes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EthtoolResult:
    links: tuple[EthtoolLink, ...]
    ib_rates_gbps: tuple[float, ...] = ()  # `cat /sys/class/infiniband/*/ports/1/rate` lines

    @property
    def speed_mbps(self) -> int | None:
        return self.links[0].speed_mbps if self.links else None


@dataclass(frozen=True, slots=True)
class EthtoolDriver:
    """`ethtool -i`: on inbox mlx5 `version` is the kernel release, not a driver version."""

    driver: str
    version: str | None = None
    firmware_version: str | None = None  # 14.28.2006
    psid: str | None = None  # MT_2420110034
    bus_info: str | None = None  # 0000:01:00.0
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EthtoolStats:
    interface: str | None
    counters: dict[str, int]

    def get(self, name: str) -> int | None:
        return self.counters.get(name)


@dataclass(frozen=True, slots=True)
class EthtoolFec:
    interface: str | None
    configured: tuple[str, ...] = ()
    active: str | None = None  # RS, BaseR, None, Off
    error: str | None = None  # `netlink error: Operation not supported`


@dataclass(frozen=True, slots=True)
class EthtoolModule:
    """`ethtool -m` EEPROM decode as printed (legacy-decoded on GB10 DACs: not a verdict)."""

    fields: dict[str, str]
    identifier: str | None = None
    length_m: float | None = None


def _yes(value: str) -> bool | None:
    v = value.strip().lower()
    return True if v in ("yes", "on") else False if v in ("no", "off") else None


def parse_ethtool(text: str) -> EthtoolResult:
    """`ethtool IFACE` (full or grepped), possibly several interfaces in one paste."""
    links: list[dict[str, object]] = []
    rates: list[float] = []
    cur: dict[str, object] | None = None
    modes_key: str | None = None
    pending_if: str | None = None
    for raw in lines(text):
        if is_prompt_line(raw) or raw.lstrip().startswith("ethtool "):
            cmd = strip_prompt(raw)
            m = _CMD_IF.search(cmd)
            pending_if = m.group(1) if m and "ethtool" in cmd else None
            cur = None
            continue
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        # each pattern is tried only where its fixed words are: most lines are `Key: value`
        # or a continuation of the link modes
        if stripped.startswith("Settings for ") and (s := _SETTINGS.match(stripped)):
            cur = {"interface": s.group(1)}
            links.append(cur)
            modes_key = None
            continue
        if " Gb/sec (" in stripped and (r := _RATE.match(stripped)):
            rates.append(float(r.group(1)))
            continue
        kv = _KV.match(line) if ":" in line else None
        if kv is None:
            if modes_key and cur is not None and line.startswith((" ", "\t")):
                cur[modes_key] = (*cur.get(modes_key, ()), *line.split())  # type: ignore[misc]
            continue
        key, value = kv.group(1), kv.group(2)
        if cur is None:
            if key not in ("Speed", "Duplex", "Link detected", "Auto-negotiation", "Port"):
                continue
            cur = {"interface": pending_if}
            links.append(cur)
        modes_key = _setting(cur, key, value)
    if not links:
        raise ParseError("no `Settings for <if>:` block or `Speed:` line", tool=TOOL, raw=text)
    return EthtoolResult(tuple(_link(d) for d in links), tuple(rates))


def _setting(cur: dict[str, object], key: str, value: str) -> str | None:
    """One `Key: value` line of a link into `cur`; returns the link-modes key whose
    continuation lines follow, if it was one."""
    if key == "Speed":
        sm = _SPEED.search(value)
        cur["speed_mbps"] = int(sm.group(1)) if sm else None
    elif key == "Duplex":
        cur["duplex"] = value
    elif key == "Auto-negotiation":
        cur["autoneg"] = _yes(value)
    elif key == "Link detected":
        cur["link_detected"] = _yes(value)
    elif key == "Port":
        cur["port"] = value
    elif key in ("Supported link modes", "Advertised link modes"):
        modes_key = "supported_modes" if key.startswith("Supported") else "advertised_modes"
        cur[modes_key] = tuple(v for v in value.split() if v not in ("Not", "reported"))
        return modes_key
    return None


def _link(d: dict[str, object]) -> EthtoolLink:
    iface = d.get("interface")
    speed = d.get("speed_mbps")
    duplex = d.get("duplex")
    autoneg = d.get("autoneg")
    link = d.get("link_detected")
    port = d.get("port")
    sup = d.get("supported_modes", ())
    adv = d.get("advertised_modes", ())
    return EthtoolLink(
        interface=iface if isinstance(iface, str) else None,
        speed_mbps=speed if isinstance(speed, int) else None,
        duplex=duplex if isinstance(duplex, str) else None,
        autoneg=autoneg if isinstance(autoneg, bool) else None,
        link_detected=link if isinstance(link, bool) else None,
        port=port if isinstance(port, str) else None,
        supported_modes=tuple(str(x) for x in sup) if isinstance(sup, tuple) else (),
        advertised_modes=tuple(str(x) for x in adv) if isinstance(adv, tuple) else (),
    )


def parse_ethtool_driver(text: str) -> EthtoolDriver:
    """`ethtool -i IFACE`: `driver: mlx5_core` ... `firmware-version: 14.28.2006 (MT_...)`."""
    fields: dict[str, str] = {}
    for raw in lines(text):
        if is_prompt_line(raw):
            continue
        m = _DRIVER_KV.match(raw) if ":" in raw else None
        if m:
            fields[m.group(1)] = m.group(2)
    if "driver" not in fields:
        raise ParseError("no `driver:` line of `ethtool -i`", tool=TOOL, raw=text)
    fw = fields.get("firmware-version", "")
    fm = re.match(r"^(\S+)(?:\s+\((\S+)\))?", fw)
    return EthtoolDriver(
        driver=fields["driver"],
        version=fields.get("version") or None,
        firmware_version=fm.group(1) if fm else None,
        psid=fm.group(2) if fm else None,
        bus_info=fields.get("bus-info") or None,
        fields=fields,
    )


def parse_ethtool_stats(text: str) -> EthtoolStats:
    """`ethtool -S IFACE` (full, grepped or non-zero only): `     name: value` lines."""
    counters: dict[str, int] = {}
    iface: str | None = None
    for raw in lines(text):
        if is_prompt_line(raw):
            m = _CMD_IF.search(strip_prompt(raw).replace("-S ", "", 1))
            iface = m.group(1) if m else iface
            continue
        m2 = _STAT.match(raw)
        if m2:
            counters[m2.group(1)] = int(m2.group(2))
    if not counters:
        raise ParseError("no `name: value` counter line", tool=TOOL, raw=text)
    return EthtoolStats(iface, counters)


def parse_ethtool_fec(text: str) -> EthtoolFec:
    """`ethtool --show-fec IFACE`: `Active FEC encoding: RS` (older: `Configured FEC encodings:`)."""
    iface: str | None = None
    configured: tuple[str, ...] = ()
    active: str | None = None
    error: str | None = None
    for raw in lines(text):
        line = raw.strip()
        if m := re.match(r"FEC parameters for (\S+?):", line):
            iface = m.group(1)
        elif m := re.match(r"(?:Supported/)?Configured FEC encodings:\s*(.*)$", line):
            configured = tuple(m.group(1).split())
        elif m := re.match(r"Active FEC encodings?:\s*(.*)$", line):
            active = m.group(1).strip() or None
        elif "error" in line.lower() and ("netlink" in line or "Cannot" in line):
            error = line
    if iface is None and active is None and error is None:
        raise ParseError("no `FEC parameters for` block", tool=TOOL, raw=text)
    return EthtoolFec(iface, configured, active, error)


def parse_ethtool_module(text: str) -> EthtoolModule:
    """`ethtool -m IFACE`: `Key      : value` lines of the module EEPROM decode."""
    fields: dict[str, str] = {}
    for raw in lines(text):
        m = re.match(r"^\s*(\S[^:]*?)\s+:\s(.*?)\s*$", raw)
        if m:
            fields[m.group(1)] = m.group(2)
    if "Identifier" not in fields:
        raise ParseError("no `Identifier :` line of `ethtool -m`", tool=TOOL, raw=text)
    length = fields.get("Length (Copper or Active cable)", "")
    lm = re.match(r"([\d.]+)\s*m", length)
    return EthtoolModule(fields, fields.get("Identifier"), float(lm.group(1)) if lm else None)
