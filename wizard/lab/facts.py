"""Scenario facts: what is true of the lab's world without being a fault (`facts:` in a scenario).

Firmware versions, the order addresses were added in, how long a node was off before its last
boot, how long a switch leg takes to come up, a port whose offload was lost for a reason the lab
does not model, a running container's environment. Names are checked against the topology by
`wizard.lab.scenarios`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from wizard.schema import Check, choice, flag, mapping, number, optional, record, sequence, text

_TEXT = text(strip=False)
_SECONDS = optional(number(ge=0))


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeFacts:
    """Facts about one node that are not faults (its firmware, how its addresses were added...)."""

    firmware: str | None = None  # CX7 firmware version, e.g. 28.45.4028
    ipv6_first: bool = False  # global IPv6 added before IPv4 on the fabric netdevs (GIDs shift)
    boot_gap_s: float | None = None  # power-off gap before the last boot
    netplan_renderer: Literal["NetworkManager", "networkd"] | None = None
    rdma_naming: Literal["rocep", "mlx5"] | None = None  # RDMA device naming style
    netdev_naming: Literal["predictable", "eth"] | None = None  # enp1s0f0np0..., or eth0..eth3
    missing_tools: tuple[str, ...] = ()  # tools/packages not installed (lab.nodetools.LAYOUT)
    sudo: Literal["nopasswd", "password"] = "nopasswd"  # `sudo -n` allowed, or asks a password
    peer_ssh: Literal["ok", "no-key", "host-key"] = "ok"  # how it answers SSH from its peers
    # the GB10 vendor's DMI sys_vendor / product_name (lab.nodetools.PLATFORMS)
    platform: Literal["dgx-spark", "asus-gx10", "msi-edgexpert", "dell-gb10", "gigabyte-atom"] = (
        "dgx-spark"
    )
    nm_profile: str | None = None  # a NetworkManager profile of its own (DHCP) on this netdev

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "firmware": optional(_TEXT),
        "ipv6_first": flag,
        "boot_gap_s": _SECONDS,
        "netplan_renderer": optional(choice("NetworkManager", "networkd")),
        "rdma_naming": optional(choice("rocep", "mlx5")),
        "netdev_naming": optional(choice("predictable", "eth")),
        "missing_tools": sequence(_TEXT),
        "sudo": choice("nopasswd", "password"),
        "peer_ssh": choice("ok", "no-key", "host-key"),
        "platform": choice("dgx-spark", "asus-gx10", "msi-edgexpert", "dell-gb10", "gigabyte-atom"),
        "nm_profile": optional(_TEXT),
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchFacts:
    routeros_version: str | None = None
    link_up_delay_s: float | None = None  # a forced/bounced leg comes up after this long
    management_port: str | None = None  # the port the wizard's API session arrives on

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "routeros_version": optional(_TEXT),
        "link_up_delay_s": _SECONDS,
        "management_port": optional(_TEXT),
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class PortFacts:
    hw_offload: bool | None = None  # offload lost, for a reason the lab does not model

    SCHEMA: ClassVar[Mapping[str, Check]] = {"hw_offload": optional(flag)}
    ALIASES: ClassVar[Mapping[str, str]] = {"hw_offload": "hw-offload"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerFacts:
    """A running container on a node, whose environment `docker inspect` reports."""

    name: str
    env: dict[str, str] = field(default_factory=dict)

    SCHEMA: ClassVar[Mapping[str, Check]] = {"name": _TEXT, "env": mapping(_TEXT, _TEXT)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    """What a scenario says about the world beyond its faults (`facts:`)."""

    nodes: dict[str, NodeFacts] = field(default_factory=dict)
    switches: dict[str, SwitchFacts] = field(default_factory=dict)
    ports: dict[str, PortFacts] = field(default_factory=dict)  # "switch/port"
    containers: dict[str, ContainerFacts] = field(default_factory=dict)  # by node
    processes: dict[str, ContainerFacts] = field(default_factory=dict)  # by node: name = comm

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "nodes": mapping(record(NodeFacts), _TEXT),
        "switches": mapping(record(SwitchFacts), _TEXT),
        "ports": mapping(record(PortFacts), _TEXT),
        "containers": mapping(record(ContainerFacts), _TEXT),
        "processes": mapping(record(ContainerFacts), _TEXT),
    }
