"""Probe specs and the observations of a sweep: shared by the sweep (wizard) and the checks (flows).

A check (flows/) declares which probes it needs; the sweep (wizard/sweep.py) runs each probe once
per target and returns `Observations`, which the checks parse and judge. These types live in the
engine package so that the sweep and the state machine can use them without importing flows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wizard.model import Measurement, ProbeResult, Rail


@dataclass(frozen=True, slots=True)
class HostProbe:
    """A read-only shell command run on every node (or on every rail: `{netdev}`, `{rdma}` are
    filled from discovery and shell-quoted by the sweep). `sudo` runs it with `sudo -n`."""

    name: str
    command: str
    per_rail: bool = False
    sudo: bool = False
    timeout_s: float = 10.0


@dataclass(frozen=True, slots=True)
class SwitchProbe:
    """A read-only RouterOS API call on every switch: `path` + `verb` (print, monitor...)."""

    name: str
    path: str
    verb: str = "print"
    args: tuple[tuple[str, str], ...] = ()
    per_fabric_port: bool = False  # e.g. /interface/ethernet/monitor once, numbers=<port>
    timeout_s: float = 10.0


Probe = HostProbe | SwitchProbe


@dataclass(frozen=True, slots=True)
class Transition:
    """A link transition the engine knows of (caused, prompted, or seen in counters/logs)."""

    node: str
    at: float
    cause: str


@dataclass(frozen=True, slots=True)
class Observations:
    """Probe results of one sweep, by target and probe name (`name` or `name:netdev`)."""

    nodes: Mapping[str, Mapping[str, ProbeResult]] = field(default_factory=dict)
    switches: Mapping[str, Mapping[str, ProbeResult]] = field(default_factory=dict)
    unreachable: Mapping[str, str] = field(default_factory=dict)  # target -> error text
    # the rails the sweep worked out from these outputs, by node (none in observations rebuilt
    # from a recording: discovery then works them out from the outputs)
    rails: Mapping[str, tuple[Rail, ...]] = field(default_factory=dict)
    measurements: tuple[Measurement, ...] = ()
    traffic: Mapping[str, Any] = field(default_factory=dict)  # counters sampled during tests

    def node(self, node: str, probe: str, rail: str | None = None) -> ProbeResult | None:
        key = probe if rail is None else f"{probe}:{rail}"
        return self.nodes.get(node, {}).get(key)

    def switch(self, switch: str, probe: str, port: str | None = None) -> ProbeResult | None:
        key = probe if port is None else f"{probe}:{port}"
        return self.switches.get(switch, {}).get(key)
