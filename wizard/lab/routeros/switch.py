"""SwitchState: the stateful model of one MikroTik CRS804/CRS812 in the lab.

The world (wizard/lab/world.py) asks a switch about links, forwarding paths, RSTP and traffic
through the interface of wizard/lab/switchport.py; the RouterOS API server and the scheduler
scripts read and change the same configuration through `menus.py`. Configuration is kept as
RouterOS-shaped items (string values, booleans `true`/`false`, `*HEX` ids); what RouterOS
derives (`hw-offload`, link status, cpu-load, RSTP role) is computed from it on demand, by
`SwitchFabric` (fabric.py); port facts are in ports.py, the factory tables in factory.py.

Derived hardware-offload rules (98DX7335, routeros-api.md 4.1/4.2):
- one offloaded bridge per switch chip: bridges are considered in creation order and the first
  one with an enabled `hw=yes` port on the chip takes it;
- a bridge whose QSFP56-DD cages have sub-ports in the bridge holding the chip (a "split cage")
  is refused offload: the chip stays with the other bridge, as seed 000's log shows;
- CPU-attached `ether1`/`ether2` are never offloaded; a port with `hw=no` is never offloaded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from wizard.lab.routeros.fabric import SwitchFabric
from wizard.lab.routeros.factory import install_factory
from wizard.lab.routeros.ports import (
    BLOCKING_ROLES,
    BRIDGE,
    DATA_L2MTU,
    DATA_MTU,
    DD_RE,
    MODELS,
    ROUTEROS_VERSION,
    Counters,
    Forwarding,
    Item,
    LinkStatus,
    Listener,
    ScriptRun,
    cage_of,
    clock_text,
    duration_text,
    is_cpu_port,
    is_lane_master,
    max_rate_gbps,
    parse_duration,
    port_names,
    rate_text,
    speed_gbps,
)

__all__ = [
    "BLOCKING_ROLES",
    "BRIDGE",
    "DATA_L2MTU",
    "DATA_MTU",
    "MODELS",
    "ROUTEROS_VERSION",
    "Forwarding",
    "Item",
    "LinkStatus",
    "Listener",
    "ScriptRun",
    "SwitchState",
    "cage_of",
    "clock_text",
    "duration_text",
    "is_cpu_port",
    "is_lane_master",
    "max_rate_gbps",
    "parse_duration",
    "port_names",
    "rate_text",
    "speed_gbps",
]


@dataclass(repr=False, eq=False)
class SwitchState(SwitchFabric):
    """One emulated switch: configuration tables plus the physical facts the world feeds in."""

    name: str
    model: str
    clock: Callable[[], float] = time.time
    tables: dict[str, list[Item]] = field(default_factory=dict)
    cables: dict[str, str] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    counters: dict[str, Counters] = field(default_factory=dict)
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
        install_factory(sw, sw._mac_seed)
        sw.recompute(notify=False)
        return sw

    def set_cable(self, port: str, peer: str | None) -> None:
        port = self._default_name(self.resolve_port(port))
        if self.ether(port) is None:
            raise KeyError(f"{self.name} has no port {port}")
        if peer is None:
            self.cables.pop(port, None)
        else:
            self.cables[port] = peer
        self.recompute(notify=False)

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
        return duration_text(self.clock() - self.boot_time)

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
            self.counters.setdefault(port, Counters()).link_downs += 1
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
                    self.counters.setdefault(dname, Counters()).link_downs += 1
                if (
                    not status.up
                    and dname in self.cables
                    and DD_RE.match(dname)
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
        sw.counters = {k: Counters(*v) for k, v in state["counters"].items()}
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
