"""How the world talks to a switch: the interface, and where the switch comes from.

The switch model itself (`wizard.lab.routeros.switch.SwitchState`) belongs to the RouterOS side of
the lab. The world only needs the few questions below (is this port up, how does a frame get from
port a to port b, who forwards it), so they are written down here as a `Protocol`, and
`new_switch`/`switch_from_state`/`apply_switch_fault` import the real model lazily. When the
RouterOS package is absent (a partial checkout), a small stand-in with the same answers for a
healthy switch keeps the hosts side of the lab usable; the lab refuses switch faults then.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from wizard.errors import FabwizError
from wizard.lab.catalog import CRS804, CRS812

MODELS = (CRS804, CRS812)


@dataclass(frozen=True, slots=True)
class CpuForwarding:
    """What a switch's CPU forwards when its chip does not offload a bridge (Gb/s of RoCE).

    One forwarding thread handles a flow (frames of one MAC pair, so the QP count does not
    matter) at `per_flow_gbps`; all software-forwarded flows of the switch share `total_gbps`.
    Calibrated on the field: CRS804 9.5 Gb/s whatever the QP count and 0.46 GB/s NCCL on four
    nodes (seed 000); CRS812 4.9 Gb/s for one half, 4.85 for both (seed 003).
    """

    per_flow_gbps: float
    total_gbps: float


CPU_FORWARDING = {CRS804: CpuForwarding(9.5, 15.5), CRS812: CpuForwarding(4.9, 4.9)}


def cpu_forwarding(model: str) -> CpuForwarding:
    return CPU_FORWARDING.get(model, CPU_FORWARDING[CRS804])


class LinkLike(Protocol):
    @property
    def up(self) -> bool: ...
    @property
    def rate_gbps(self) -> float: ...
    @property
    def fec(self) -> str: ...
    @property
    def reason(self) -> str: ...


class ForwardingLike(Protocol):
    @property
    def same_bridge(self) -> bool: ...
    @property
    def offloaded(self) -> bool: ...
    @property
    def lossless(self) -> bool: ...
    @property
    def min_l2mtu(self) -> int: ...
    @property
    def min_mtu(self) -> int: ...
    @property
    def blocked(self) -> bool: ...
    @property
    def reason(self) -> str: ...


class SwitchLike(Protocol):
    """The questions the world asks a switch."""

    listeners: list[Callable[[str, str], None]]

    def fabric_ports(self) -> list[str]: ...
    def set_cable(self, port: str, peer: str | None) -> None: ...
    def link(self, port: str) -> LinkLike: ...
    def forwarding(self, a: str, b: str) -> ForwardingLike: ...
    def port_role(self, port: str) -> str: ...
    def set_port_role(self, port: str, role: str) -> None: ...
    def path_cost(self, port: str) -> int: ...
    def set_software_forwarded_gbps(self, gbps: float) -> None: ...
    def learn(self, mac: str, port: str) -> None: ...
    def add_port_traffic(
        self, port: str, tx_bytes: int, rx_bytes: int, tx_packets: int, rx_packets: int
    ) -> None: ...
    def add_port_pause(self, port: str, rx: float = 0.0, tx: float = 0.0) -> None: ...
    def log(self, topics: str, message: str) -> None: ...
    def reading(self) -> AbstractContextManager[None]: ...
    def reboot(self) -> None: ...
    def to_state(self) -> dict[str, Any]: ...


def _routeros(module: str) -> Any | None:
    try:
        return importlib.import_module(f"wizard.lab.routeros.{module}")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("wizard.lab.routeros"):
            return None
        raise


def have_routeros() -> bool:
    """True when the RouterOS switch model is installed (the normal case)."""
    return _routeros("switch") is not None


def new_switch(name: str, model: str, clock: Callable[[], float] = time.time) -> SwitchLike:
    mod = _routeros("switch")
    if mod is None:
        return StandInSwitch(name=name, model=model, clock=clock)
    return cast(SwitchLike, mod.SwitchState.new(name, model, clock=clock))


def switch_from_state(data: dict[str, Any], clock: Callable[[], float]) -> SwitchLike:
    mod = _routeros("switch")
    if mod is None:
        return StandInSwitch(
            name=str(data.get("name", "switch")), model=str(data.get("model", CRS804)), clock=clock
        )
    return cast(SwitchLike, mod.SwitchState.from_state(data, clock=clock))


def apply_switch_fault(
    sw: SwitchLike, fault_id: str, *, ports: list[str] | None = None, **params: Any
) -> None:
    mod = _routeros("faults")
    if mod is None:
        raise FabwizError(
            f"switch fault {fault_id} needs the RouterOS switch model (wizard.lab.routeros)",
            hint="this build has no switch model; use a host or nccl fault",
        )
    mod.apply_switch_fault(sw, fault_id, ports=ports, **params)


# --- stand-in ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Link:
    up: bool
    rate_gbps: float
    fec: str
    reason: str


@dataclass(frozen=True, slots=True)
class _Forwarding:
    same_bridge: bool
    offloaded: bool
    lossless: bool
    min_l2mtu: int
    min_mtu: int
    blocked: bool
    reason: str


def _ports_for(model: str) -> list[str]:
    if model == CRS812:
        legs = [f"qsfp56-dd-{c}-{lane}" for c in (1, 2) for lane in range(1, 9)]
        return [*legs, "qsfp56-1", "qsfp56-2", *(f"sfp56-{i}" for i in range(1, 9))]
    return [f"qsfp56-dd-{c}-{lane}" for c in range(1, 5) for lane in range(1, 9)]


@dataclass
class StandInSwitch:
    """A healthy, always-offloaded switch: enough for host-only labs without the RouterOS model."""

    name: str
    model: str
    clock: Callable[[], float] = time.time
    listeners: list[Callable[[str, str], None]] = field(default_factory=list)
    cables: dict[str, str] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    costs: dict[str, int] = field(default_factory=dict)
    sw_gbps: float = 0.0
    hosts: dict[str, str] = field(default_factory=dict)
    traffic: dict[str, list[int]] = field(default_factory=dict)
    logs: list[tuple[float, str, str]] = field(default_factory=list)

    def fabric_ports(self) -> list[str]:
        return _ports_for(self.model)

    def set_cable(self, port: str, peer: str | None) -> None:
        if peer is None:
            self.cables.pop(port, None)
        else:
            self.cables[port] = peer

    def link(self, port: str) -> _Link:
        if port in self.cables:
            return _Link(True, 200.0, "fec91", "")
        return _Link(False, 0.0, "", "no cable")

    def forwarding(self, a: str, b: str) -> _Forwarding:
        return _Forwarding(True, True, False, 9216, 9000, False, "")

    def port_role(self, port: str) -> str:
        return self.roles.get(port, "designated-port")

    def set_port_role(self, port: str, role: str) -> None:
        self.roles[port] = role

    def path_cost(self, port: str) -> int:
        return self.costs.get(port, 10 if port.startswith("ether") else 1)

    def set_software_forwarded_gbps(self, gbps: float) -> None:
        self.sw_gbps = gbps

    def learn(self, mac: str, port: str) -> None:
        self.hosts[mac] = port

    def add_port_traffic(
        self, port: str, tx_bytes: int, rx_bytes: int, tx_packets: int, rx_packets: int
    ) -> None:
        row = self.traffic.setdefault(port, [0, 0, 0, 0])
        for i, v in enumerate((tx_bytes, rx_bytes, tx_packets, rx_packets)):
            row[i] += v

    def add_port_pause(self, port: str, rx: float = 0.0, tx: float = 0.0) -> None:
        pass  # a stand-in keeps no pause counters

    def log(self, topics: str, message: str) -> None:
        self.logs.append((self.clock(), topics, message))

    def reading(self) -> AbstractContextManager[None]:
        return contextlib.nullcontext()  # nothing is looked up that a memo would spare

    def reboot(self) -> None:
        for port in list(self.cables):
            for f in list(self.listeners):
                f("link-bounced", port)
        for f in list(self.listeners):
            f("rebooted", "")

    def to_state(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model}
