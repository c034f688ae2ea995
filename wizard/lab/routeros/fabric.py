"""SwitchFabric: the configuration tables of a lab switch and what the chip derives from them.

`SwitchState` (switch.py) is a `SwitchFabric`: this half answers table look-ups and ids, and
the switch-port interface the world asks (links, hardware offload, forwarding paths, RSTP roles,
path costs, cpu-load, learned hosts, traffic and pause counters); switch.py adds construction,
reboot, change tracking, the scheduler and persistence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from wizard.lab.routeros.ports import (
    BLOCKING_ROLES,
    CPU_LOAD_IDLE,
    Counters,
    Forwarding,
    Item,
    LinkStatus,
    cage_of,
    clock_text,
    is_cpu_port,
    is_lane_master,
    max_rate_gbps,
    negotiated,
    port_names,
    rate_text,
)
from wizard.lab.switchport import cpu_forwarding

__all__ = ["SwitchFabric"]


class SwitchFabric:
    """Table look-ups and the chip's derived state, over the fields `SwitchState` declares."""

    name: str
    model: str
    clock: Callable[[], float]
    tables: dict[str, list[Item]]
    cables: dict[str, str]
    roles: dict[str, str]
    counters: dict[str, Counters]
    software_gbps: float
    boot_count: int
    offload_lost: set[str]
    _next_id: dict[str, int]
    _coming_up: dict[str, float]
    # look-ups remembered while one listing is built (`reading`): nothing changes meanwhile
    _memo: dict[tuple[str, str], Any] | None = None

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One read-only listing (a `print`, an export): each port's item and the offloaded
        bridge are looked up once for it instead of once per row (a bridge-port print asked
        for them rows x ports times). Nested listings share the outer one's memo."""
        if self._memo is not None:
            yield
            return
        self._memo = {}
        try:
            yield
        finally:
            self._memo = None

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
        memo = self._memo
        if memo is None:
            return self._ether(port)
        key = ("ether", port)
        if key not in memo:
            memo[key] = self._ether(port)
        return memo[key]  # type: ignore[no-any-return]

    def _ether(self, port: str) -> Item | None:
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
        if name in self._default_names() and self.resolve_port(name) == name:
            return name  # a port's own hardware name: `ether` would find it by it first
        item = self.ether(name)
        return item["default-name"] if item else name

    def _default_names(self) -> frozenset[str]:
        """The ethernet ports' hardware names (RouterOS never changes a default-name; the set
        is made again when an interface comes or goes)."""
        table = self.tables["interface"]
        cached: tuple[int, frozenset[str]] | None = self.__dict__.get("_defaults")
        if cached is None or cached[0] != len(table):
            names = frozenset(
                i["default-name"] for i in table if i.get("type") == "ether" and "default-name" in i
            )
            cached = (len(table), names)
            self.__dict__["_defaults"] = cached
        return cached[1]

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
        rate = negotiated(item, dname, cap)
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
        memo = self._memo
        if memo is None:
            return self._hw_offloaded_bridge()
        key = ("offloaded-bridge", "")
        if key not in memo:
            memo[key] = self._hw_offloaded_bridge()
        return memo[key]  # type: ignore[no-any-return]

    def _hw_offloaded_bridge(self) -> str | None:
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
        return min(100, CPU_LOAD_IDLE + extra)

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
        c = self.counters.setdefault(self._default_name(port), Counters())
        c.tx_bytes += tx_bytes
        c.rx_bytes += rx_bytes
        c.tx_packets += tx_packets
        c.rx_packets += rx_packets

    def add_port_pause(self, port: str, rx: float = 0.0, tx: float = 0.0) -> None:
        c = self.counters.setdefault(self._default_name(port), Counters())
        c.rx_pause += int(rx)
        c.tx_pause += int(tx)

    def log(self, topics: str, message: str) -> None:
        self.add_item(
            "log", {"time": clock_text(self.clock()), "topics": topics, "message": message}
        )
        if len(self.tables["log"]) > 1000:
            del self.tables["log"][0]

    def counter(self, port: str) -> Counters:
        return self.counters.setdefault(self._default_name(port), Counters())
