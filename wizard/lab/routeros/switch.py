"""SwitchState: the stateful model of one MikroTik CRS804/CRS812 in the lab.

The world (wizard/lab/world.py) asks a switch about links, forwarding paths, RSTP and traffic
through the interface of wizard/lab/switchport.py; the RouterOS API server and the scheduler
scripts read and change the same configuration through `menus.py`. Configuration is kept as
RouterOS-shaped items (string values, booleans `true`/`false`, `*HEX` ids); what RouterOS
derives (`hw-offload`, link status, cpu-load, RSTP role) is computed from it on demand.

Derived hardware-offload rules (98DX7335, routeros-api.md 4.1/4.2):
- one offloaded bridge per switch chip: bridges are considered in creation order and the first
  one with an enabled `hw=yes` port on the chip takes it;
- a bridge whose QSFP56-DD cages have sub-ports in the bridge holding the chip (a "split cage")
  is refused offload: the chip stays with the other bridge, as seed 000's log shows;
- CPU-attached `ether1`/`ether2` are never offloaded; a port with `hw=no` is never offloaded.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from wizard.lab.switchport import cpu_forwarding

__all__ = [
    "MODELS",
    "Forwarding",
    "Item",
    "LinkStatus",
    "SwitchState",
    "is_cpu_port",
]

Item = dict[str, str]
Listener = Callable[[str, str], None]

MODELS = ("CRS804-4DDQ", "CRS812-8DS-2DQ-2DDQ")
ROUTEROS_VERSION = "7.23.1"
_DD_RE = re.compile(r"^qsfp56-dd-(\d+)-(\d+)$")
_QSFP_RE = re.compile(r"^qsfp56-(\d+)-(\d+)$")
_SPEED_RE = re.compile(r"^(\d+(?:\.\d+)?)(M|G)-base")
_CPU_LOAD_IDLE = 1
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
    m = _DD_RE.match(name)
    return int(m.group(1)) if m else None


def is_lane_master(name: str) -> bool:
    m = _DD_RE.match(name)
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
    if _DD_RE.match(name) and not is_lane_master(name):
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


def _mac(seed: int, index: int) -> str:
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
class _Counters:
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


def _negotiated(item: dict[str, str], dname: str, cap: float) -> float | str:
    """The rate a cabled, enabled ether port links at, or why it does not link."""
    autoneg = item.get("auto-negotiation") == "true"
    if _DD_RE.match(dname):
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


@dataclass(repr=False, eq=False)
class SwitchState:
    """One emulated switch: configuration tables plus the physical facts the world feeds in."""

    name: str
    model: str
    clock: Callable[[], float] = time.time
    tables: dict[str, list[Item]] = field(default_factory=dict)
    cables: dict[str, str] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    counters: dict[str, _Counters] = field(default_factory=dict)
    software_gbps: float = 0.0
    boot_time: float = 0.0
    boot_count: int = 0
    serial: str = "HJ10ABC1234"
    old_dates: bool = False  # /system/clock prints `dec/01/2026` (RouterOS before 7.10)
    routeros_version: str = ROUTEROS_VERSION  # what /system/resource and the export report
    listeners: list[Listener] = field(default_factory=list)
    _next_id: dict[str, int] = field(default_factory=dict)
    _offload_seen: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _link_seen: dict[str, bool] = field(default_factory=dict)
    _coming_up: dict[str, float] = field(default_factory=dict)  # port -> when its link is up
    _runs: list[ScriptRun] = field(default_factory=list)
    _mac_seed: int = 0x2A10
    # ports (default names) whose hardware offload is lost for a reason the lab does not model
    # (the scenario fact `ports: {sw/port: {hw-offload: false}}`)
    offload_lost: set[str] = field(default_factory=set)
    # where the wizard's API session arrives; "" for a switch outside a world (no management
    # network modelled: /ip/address, /ip/arp and /user/active are empty)
    management_port: str = ""
    link_up_delay_s: float = 0.0  # a forced or bounced leg comes up this long after (lab clock)

    def lose_offload(self, port: str) -> None:
        """The chip stops offloading `port` with no configuration cause (the switch logs the
        deactivation and forwards its frames in software)."""
        self.offload_lost.add(self._default_name(self.resolve_port(port)))
        self.recompute(notify=False)

    def __repr__(self) -> str:
        return f"SwitchState(name={self.name!r}, model={self.model!r}, boot={self.boot_count})"

    # ----------------------------------------------------------------- construction

    @classmethod
    def new(cls, name: str, model: str, *, clock: Callable[[], float] = time.time) -> SwitchState:
        """A fabric switch as a technician left it: healthy, one offloaded bridge."""
        if model not in MODELS:
            raise ValueError(f"unknown switch model {model!r}; expected one of {', '.join(MODELS)}")
        sw = cls(name=name, model=model, clock=clock)
        sw._mac_seed = sum(name.encode()) * 131 % 0xFFFF
        sw.boot_time = clock()
        sw.serial = f"HJ10{sw._mac_seed:04X}{len(name):03d}"
        sw._factory()
        sw.recompute(notify=False)
        return sw

    def _factory(self) -> None:
        for t in (
            "interface",
            "bridge-port",
            "bridge-host",
            "qos-port",
            "pfc",
            "switch",
            "log",
            "file",
            "scheduler",
            "identity",
        ):
            self.tables[t] = []
        self.tables["identity"].append({"name": self.name})
        self.tables["switch"].append(
            {
                ".id": "*1",
                "name": "switch1",
                "type": "Marvell-98DX7335",
                "l3-hw-offloading": "false",
                "qos-hw-offloading": "true",
                "cpu-flow-control": "true",
                "mirror-source": "none",
                "mirror-target": "none",
            }
        )
        self.add_item(
            "pfc",
            {
                "name": "disabled",
                "traffic-class": "",
                "rx": "false",
                "tx": "false",
                "default": "true",
            },
        )
        ports = port_names(self.model)
        for index, port in enumerate(ports):
            data = not is_cpu_port(port)
            item: Item = {
                "name": port,
                "default-name": port,
                "type": "ether",
                "mtu": DATA_MTU if data else "1500",
                "l2mtu": DATA_L2MTU if data else "1592",
                "mac-address": _mac(self._mac_seed, index + 1),
                "auto-negotiation": "true",
                "disabled": "false",
                "fec-mode": "auto",
                "tx-flow-control": "off",
                "rx-flow-control": "off",
            }
            if _DD_RE.match(port) and is_lane_master(port):
                item.update(
                    {"auto-negotiation": "false", "speed": "200G-baseCR4", "fec-mode": "fec91"}
                )
            self.add_item("interface", item)
            self.counters[port] = _Counters()
        self.add_item(
            "interface",
            {
                "name": BRIDGE,
                "type": "bridge",
                "mtu": "auto",
                "l2mtu": "65535",
                "mac-address": _mac(self._mac_seed, 0),
                "admin-mac": _mac(self._mac_seed, 0),
                "auto-mac": "false",
                "protocol-mode": "rstp",
                "vlan-filtering": "false",
                "priority": "0x8000",
                "ageing-time": "5m",
                "disabled": "false",
                "comment": "defconf",
                "port-cost-mode": "long",
            },
        )
        for port in ports:
            if port == "ether2":
                continue
            self.add_item(
                "bridge-port",
                {
                    "bridge": BRIDGE,
                    "interface": port,
                    "hw": "true",
                    "disabled": "false",
                    "comment": "defconf",
                },
            )
        for port in ports:
            if is_cpu_port(port):
                continue
            self.add_item(
                "qos-port",
                {
                    "name": port,
                    "switch": "switch1",
                    "profile": "default",
                    "map": "default",
                    "trust-l2": "ignore",
                    "trust-l3": "ignore",
                    "tx-manager": "default",
                    "pfc": "disabled",
                },
            )
        self.add_item("qos-port", {"name": "switch1-cpu", "switch": "switch1"})
        self.log("system,info", "router rebooted")

    # ----------------------------------------------------------------- tables and ids

    def new_id(self, table: str) -> str:
        base = self.boot_count * 0x100
        n = self._next_id.get(table, base + 1)
        self._next_id[table] = n + 1
        return f"*{n:X}"

    def add_item(self, table: str, item: Item) -> str:
        new = {".id": self.new_id(table), **item}
        self.tables[table].append(new)
        return new[".id"]

    def find(self, table: str, **match: str) -> list[Item]:
        return [i for i in self.tables[table] if all(i.get(k) == v for k, v in match.items())]

    def ether(self, port: str) -> Item | None:
        """The ethernet item of a port, by default-name first, then by name (or alias)."""
        port = self.resolve_port(port)
        for item in self.tables["interface"]:
            if item.get("type") == "ether" and item.get("default-name") == port:
                return item
        for item in self.tables["interface"]:
            if item.get("type") == "ether" and item.get("name") == port:
                return item
        return None

    def resolve_port(self, port: str) -> str:
        """Accept the short CRS812 names (`qsfp56-1`) for the lane master `qsfp56-1-1`."""
        if re.fullmatch(r"qsfp56-\d+", port):
            return f"{port}-1"
        return port

    def _default_name(self, name: str) -> str:
        item = self.ether(name)
        return item["default-name"] if item else name

    def bridge_port(self, port: str) -> Item | None:
        item = self.ether(port)
        name = item["name"] if item else port
        for bp in self.tables["bridge-port"]:
            if bp.get("interface") == name:
                return bp
        return None

    def bridges(self) -> list[Item]:
        return [i for i in self.tables["interface"] if i.get("type") == "bridge"]

    # ----------------------------------------------------------------- the switch-port interface

    def fabric_ports(self) -> list[str]:
        return [p for p in port_names(self.model) if not is_cpu_port(p) and is_lane_master(p)]

    def set_cable(self, port: str, peer: str | None) -> None:
        port = self._default_name(self.resolve_port(port))
        if self.ether(port) is None:
            raise KeyError(f"{self.name} has no port {port}")
        if peer is None:
            self.cables.pop(port, None)
        else:
            self.cables[port] = peer
        self.recompute(notify=False)

    def link(self, port: str) -> LinkStatus:
        item = self.ether(port)
        if item is None:
            return LinkStatus(False, 0.0, "", f"no such port {port}")
        dname = item["default-name"]
        if item.get("disabled") == "true":
            return LinkStatus(False, 0.0, "", "port disabled")
        if dname not in self.cables:
            return LinkStatus(False, 0.0, "", "no cable")
        if self._coming_up.get(dname, 0.0) > self.clock():
            return LinkStatus(False, 0.0, "", "link coming up")
        cap = max_rate_gbps(dname)
        rate = _negotiated(item, dname, cap)
        if isinstance(rate, str):
            return LinkStatus(False, 0.0, "", rate)
        fec_mode = item.get("fec-mode", "auto")
        if is_cpu_port(dname):
            fec = "off"
        elif fec_mode == "auto":
            fec = "fec91" if rate >= 100 or dname.startswith("sfp56") else "off"
        else:
            fec = fec_mode
        if fec != "fec91" and not is_cpu_port(dname):
            reason = f"link up without RS-FEC (fec={fec})"
        elif rate < cap:
            reason = f"link up at {rate_text(rate)}, below {rate_text(cap)}"
        else:
            reason = "ok"
        return LinkStatus(True, rate, fec, reason)

    def hw_offloaded_bridge(self) -> str | None:
        """The bridge that holds the switch chip, if any (first qualifying bridge in order)."""
        for bridge in self.bridges():
            name = bridge["name"]
            if bridge.get("disabled") == "true" or not self._chip_ports(name):
                continue
            # The first bridge with chip ports takes the chip, split cage or not: seed 000's
            # log showed offload activated on the management bridge that held the unused legs,
            # never on the RoCE bridge that shared their cages.
            return name
        return None

    def _chip_ports(self, bridge: str) -> list[str]:
        out = []
        for bp in self.tables["bridge-port"]:
            if bp.get("bridge") != bridge or bp.get("disabled") == "true" or bp.get("hw") != "true":
                continue
            if not is_cpu_port(self._default_name(bp["interface"])):
                out.append(bp["interface"])
        return out

    def _split_cages(self, bridge: str) -> list[int]:
        """Cages used by `bridge` that have a sub-port in another bridge."""
        by_cage: dict[int, set[str]] = {}
        for bp in self.tables["bridge-port"]:
            cage = cage_of(self._default_name(bp["interface"]))
            if cage is not None:
                by_cage.setdefault(cage, set()).add(bp["bridge"])
        return sorted(c for c, bs in by_cage.items() if bridge in bs and len(bs) > 1)

    def hw_offload(self, port: str) -> bool:
        bp = self.bridge_port(port)
        if bp is None or bp.get("hw") != "true" or bp.get("disabled") == "true":
            return False
        if is_cpu_port(self._default_name(bp["interface"])):
            return False
        if self._default_name(bp["interface"]) in self.offload_lost:
            return False
        return bp["bridge"] == self.hw_offloaded_bridge()

    def offload_refusal(self, bridge: str) -> str:
        """Why `bridge` is not offloaded, in words ("" when it is)."""
        holder = self.hw_offloaded_bridge()
        if holder == bridge:
            return ""
        split = self._split_cages(bridge)
        if split:
            cages = ",".join(str(c) for c in split)
            return f"bridge {bridge} splits QSFP56-DD cage(s) {cages} with another bridge"
        if not self._chip_ports(bridge):
            return f"bridge {bridge} has no hw=yes switch-chip port"
        return f"switch chip already offloads bridge {holder} (one bridge per chip)"

    def lossless(self, port: str) -> bool:
        item = self.ether(port)
        name = item["name"] if item else port
        for q in self.tables["qos-port"]:
            if q.get("name") == name:
                return (
                    q.get("trust-l3", "ignore") != "ignore"
                    or q.get("pfc", "disabled") != "disabled"
                )
        return False

    def forwarding(self, a: str, b: str) -> Forwarding:
        ea, eb = self.ether(a), self.ether(b)
        if ea is None or eb is None:
            missing = a if ea is None else b
            return Forwarding(False, False, False, 0, 0, True, f"no such port {missing}")
        bpa, bpb = self.bridge_port(a), self.bridge_port(b)
        same = (
            bpa is not None
            and bpb is not None
            and bpa["bridge"] == bpb["bridge"]
            and bpa.get("disabled") != "true"
            and bpb.get("disabled") != "true"
        )
        offloaded = same and self.hw_offload(a) and self.hw_offload(b)
        lossless = self.lossless(a) or self.lossless(b)
        l2 = min(int(ea.get("l2mtu", "1592")), int(eb.get("l2mtu", "1592")))
        mtu = min(int(ea.get("mtu", "1500")), int(eb.get("mtu", "1500")))
        reasons: list[str] = []
        blocked = False
        if not same:
            blocked = True
            reasons.append(f"{a} and {b} are not in one bridge")
        for p in (a, b):
            link = self.link(p)
            if not link.up:
                blocked = True
                reasons.append(f"{p}: {link.reason}")
            role = self.port_role(p)
            if role in BLOCKING_ROLES and link.up:
                blocked = True
                reasons.append(f"{p} is {role}")
        if same and not offloaded:
            bridge = bpa["bridge"] if bpa else ""
            why = self.offload_refusal(bridge)
            for p in (a, b):
                bp = self.bridge_port(p)
                if bp is not None and bp.get("hw") != "true":
                    why = f"{p} has hw=no"
            reasons.append(f"software forwarding: {why or 'port not offloaded'}")
        if lossless:
            reasons.append("lossless QoS (trust-l3/pfc) on the path")
        return Forwarding(
            same, offloaded, lossless, l2, mtu, blocked, "; ".join(reasons) or "offloaded"
        )

    def port_role(self, port: str) -> str:
        bp = self.bridge_port(port)
        if bp is None or bp.get("disabled") == "true":
            return "disabled-port"
        if not self.link(port).up:
            return "disabled-port"
        return self.roles.get(self._default_name(port), "designated-port")

    def set_port_role(self, port: str, role: str) -> None:
        self.roles[self._default_name(self.resolve_port(port))] = role

    def path_cost(self, port: str) -> int:
        bp = self.bridge_port(port)
        if bp is not None and bp.get("path-cost"):
            return int(bp["path-cost"])
        link = self.link(port)
        gbps = link.rate_gbps if link.up else max_rate_gbps(self._default_name(port))
        return max(1, int(20_000_000 / (gbps * 1000)))

    def set_software_forwarded_gbps(self, gbps: float) -> None:
        self.software_gbps = max(0.0, gbps)

    def cpu_load(self) -> int:
        capacity = cpu_forwarding(self.model).total_gbps
        extra = round(self.software_gbps / capacity * 100)
        return min(100, _CPU_LOAD_IDLE + extra)

    def learn(self, mac: str, port: str) -> None:
        bp = self.bridge_port(port)
        item = self.ether(port)
        if bp is None or item is None:
            return
        mac = mac.upper()
        for host in self.tables["bridge-host"]:
            if host["mac-address"] == mac:
                self.tables["bridge-host"].remove(host)
                break
        external = "true" if self.hw_offload(port) else "false"
        self.add_item(
            "bridge-host",
            {
                "mac-address": mac,
                "on-interface": item["name"],
                "interface": item["name"],
                "bridge": bp["bridge"],
                "external": external,
                "dynamic": "true",
                "local": "false",
                "invalid": "false",
                "disabled": "false",
                "_learned": repr(self.clock()),
            },
        )

    def add_port_traffic(
        self, port: str, tx_bytes: int, rx_bytes: int, tx_packets: int, rx_packets: int
    ) -> None:
        c = self.counters.setdefault(self._default_name(port), _Counters())
        c.tx_bytes += tx_bytes
        c.rx_bytes += rx_bytes
        c.tx_packets += tx_packets
        c.rx_packets += rx_packets

    def add_port_pause(self, port: str, rx: float = 0.0, tx: float = 0.0) -> None:
        c = self.counters.setdefault(self._default_name(port), _Counters())
        c.rx_pause += int(rx)
        c.tx_pause += int(tx)

    def log(self, topics: str, message: str) -> None:
        self.add_item(
            "log", {"time": _clock_text(self.clock()), "topics": topics, "message": message}
        )
        if len(self.tables["log"]) > 1000:
            del self.tables["log"][0]

    def notify(self, event: str, port: str = "") -> None:
        for listener in list(self.listeners):
            listener(event, port)

    def reboot(self) -> None:
        """Reboot: fresh ids in every menu, every cabled link bounces, learned hosts vanish."""
        self.boot_count += 1
        self._next_id.clear()
        for table, items in self.tables.items():
            if table in ("identity", "switch"):
                continue
            if table in ("bridge-host", "log"):
                items.clear()
                continue
            for item in items:
                item[".id"] = self.new_id(table)
        self.boot_time = self.clock()
        self.software_gbps = 0.0
        self._runs.clear()
        self._offload_seen.clear()
        self._link_seen.clear()
        self.log("system,info", "router rebooted")
        self.recompute(notify=False)
        for sched in self.tables["scheduler"]:
            if sched.get("start-time") == "startup" and sched.get("disabled") != "true":
                sched["_next"] = repr(self.clock())
        self.notify("rebooted", "")
        for port in sorted(self.cables):
            self.notify("link-bounced", port)

    def uptime(self) -> str:
        return _duration_text(self.clock() - self.boot_time)

    # ----------------------------------------------------------------- change tracking

    def recompute(self, *, notify: bool = True, bounced: Iterable[str] = ()) -> None:
        """Re-derive offload and link state after a change, logging what RouterOS would log."""
        bounced = [self._default_name(p) for p in bounced]
        for port in bounced:
            self._bounce(port)
        self._track_links(bounced)
        self._track_offload()
        for host in self.tables["bridge-host"]:
            host["external"] = "true" if self.hw_offload(host["on-interface"]) else "false"
        if notify:
            for port in bounced:
                self.notify("link-bounced", port)
            self.notify("config-changed", "")

    def _bounce(self, port: str) -> None:
        """A leg a change bounced goes down (logged and counted if it was up) and, unless it is
        the CPU port, retrains for `link_up_delay_s`."""
        if self._link_seen.get(port):
            self._log_link(port, False)
            self.counters.setdefault(port, _Counters()).link_downs += 1
        self._link_seen[port] = False
        if self.link_up_delay_s > 0 and not is_cpu_port(port):
            # the PHY retrains: the leg comes up link_up_delay_s later (see tick)
            self._coming_up[port] = self.clock() + self.link_up_delay_s

    def _track_links(self, bounced: list[str]) -> None:
        """Log and count each ether port's link going up or down since last seen."""
        for item in self.tables["interface"]:
            if item.get("type") != "ether":
                continue
            dname = item["default-name"]
            status = self.link(dname)
            before = self._link_seen.get(dname)
            if before is None and not status.up and dname not in self.cables:
                self._link_seen[dname] = False
                continue
            if status.up != before or dname in bounced:
                if status.up != before and (status.up or before):
                    self._log_link(dname, status.up)
                if before and not status.up:
                    self.counters.setdefault(dname, _Counters()).link_downs += 1
                if (
                    not status.up
                    and dname in self.cables
                    and _DD_RE.match(dname)
                    and item.get("auto-negotiation") == "true"
                ):
                    self.log(
                        "interface,warning",
                        f"{item['name']} module auto-initialization failed, try forced-mode",
                    )
                self._link_seen[dname] = status.up

    def _track_offload(self) -> None:
        """Log hardware offloading deactivated or activated on a bridge, as RouterOS does."""
        holder = self.hw_offloaded_bridge()
        now: dict[str, tuple[str, ...]] = {}
        if holder is not None:
            kept = tuple(p for p in self._chip_ports(holder) if self.hw_offload(p))
            if kept:
                now[holder] = kept
        for bridge, ports in self._offload_seen.items():
            # a port leaving the bridge only re-activates it with the new list (seed 000's log);
            # a member port the chip stops offloading deactivates the bridge first
            members = set(self._chip_ports(bridge))
            if bridge not in now or (set(ports) & members) - set(now[bridge]):
                self.log(
                    "bridge,info",
                    f'hardware offloading deactivated on bridge "{bridge}" ports: '
                    + ",".join(ports),
                )
        for bridge, ports in now.items():
            if self._offload_seen.get(bridge) != ports:
                self.log(
                    "bridge,info",
                    f'hardware offloading activated on bridge "{bridge}" ports: ' + ",".join(ports),
                )
        self._offload_seen = now

    def _log_link(self, port: str, up: bool) -> None:
        item = self.ether(port)
        name = item["name"] if item else port
        if up:
            rate = self.link(port).rate_gbps
            self.log(
                "interface,info", f"{name} link up (speed {rate_text(rate)[:-3]}, full duplex)"
            )
        else:
            self.log("interface,info", f"{name} link down")

    # ----------------------------------------------------------------- scheduler

    def tick(self, now: float | None = None) -> None:
        """Run scheduler entries and resume scripts that are due at `now` (the switch clock)."""
        # Imported here: the interpreter works through menus.py, which imports this module.
        from wizard.lab.routeros import script

        now = self.clock() if now is None else now
        ready = [p for p, t in self._coming_up.items() if t <= now]
        if ready:
            for port in ready:
                del self._coming_up[port]
            self.recompute()  # logs "link up" and tells the world
        for run in [r for r in self._runs if r.resume_at <= now]:
            self._runs.remove(run)
            script.resume(self, run, now)
        for sched in list(self.tables["scheduler"]):
            if sched.get("disabled") == "true" or "_next" not in sched:
                continue
            due = float(sched["_next"])
            if due > now:
                continue
            interval = parse_duration(sched.get("interval", "0s"))
            if interval > 0:
                while due <= now:
                    due += interval
                sched["_next"] = repr(due)
            else:
                del sched["_next"]
            sched["run-count"] = str(int(sched.get("run-count", "0")) + 1)
            script.run(self, sched.get("on-event", ""), owner=sched.get("name", ""), now=now)

    def suspend(self, run: ScriptRun) -> None:
        self._runs.append(run)

    # ----------------------------------------------------------------- persistence

    def to_state(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.model,
            "tables": {k: [dict(i) for i in v] for k, v in self.tables.items()},
            "cables": self.cables,
            "roles": self.roles,
            "counters": {
                k: [
                    c.tx_bytes,
                    c.rx_bytes,
                    c.tx_packets,
                    c.rx_packets,
                    c.link_downs,
                    c.rx_pause,
                    c.tx_pause,
                ]
                for k, c in self.counters.items()
            },
            "software_gbps": self.software_gbps,
            "boot_time": self.boot_time,
            "boot_count": self.boot_count,
            "serial": self.serial,
            "next_id": self._next_id,
            "mac_seed": self._mac_seed,
            "runs": [[r.owner, r.commands, r.resume_at] for r in self._runs],
            "offload_lost": sorted(self.offload_lost),
            "routeros_version": self.routeros_version,
            "link_up_delay_s": self.link_up_delay_s,
            "management_port": self.management_port,
        }

    @classmethod
    def from_state(
        cls, state: dict[str, Any], *, clock: Callable[[], float] = time.time
    ) -> SwitchState:
        sw = cls(name=state["name"], model=state["model"], clock=clock)
        sw.tables = {k: [dict(i) for i in v] for k, v in state["tables"].items()}
        sw.cables = dict(state["cables"])
        sw.roles = dict(state["roles"])
        sw.counters = {k: _Counters(*v) for k, v in state["counters"].items()}
        sw.software_gbps = float(state["software_gbps"])
        sw.boot_time = float(state["boot_time"])
        sw.boot_count = int(state["boot_count"])
        sw.serial = str(state["serial"])
        sw._next_id = {k: int(v) for k, v in state["next_id"].items()}
        sw._mac_seed = int(state["mac_seed"])
        sw._runs = [ScriptRun(o, list(c), float(t)) for o, c, t in state.get("runs", [])]
        sw.offload_lost = set(state.get("offload_lost", ()))
        sw.routeros_version = str(state.get("routeros_version", ROUTEROS_VERSION))
        sw.link_up_delay_s = float(state.get("link_up_delay_s", 0.0))
        sw.management_port = str(state.get("management_port", ""))
        sw._offload_seen = {}
        holder = sw.hw_offloaded_bridge()
        if holder is not None:
            kept = tuple(p for p in sw._chip_ports(holder) if sw.hw_offload(p))
            if kept:
                sw._offload_seen[holder] = kept
        sw._link_seen = {p: sw.link(p).up for p in sw.counters}
        return sw

    def counter(self, port: str) -> _Counters:
        return self.counters.setdefault(self._default_name(port), _Counters())


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
