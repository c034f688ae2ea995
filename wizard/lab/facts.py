"""Scenario facts: what is true of the lab's world without being a fault (`facts:` in a scenario).

Firmware versions, the order addresses were added in, how long a node was off before its last
boot, how long a switch leg takes to come up, a port whose offload was lost for a reason the lab
does not model, a running container's environment. Names are checked against the topology by
`wizard.lab.scenarios`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class NodeFacts(BaseModel):
    """Facts about one node that are not faults (its firmware, how its addresses were added...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    firmware: str | None = None  # CX7 firmware version, e.g. 28.45.4028
    ipv6_first: bool = False  # global IPv6 added before IPv4 on the fabric netdevs (GIDs shift)
    boot_gap_s: float | None = Field(default=None, ge=0)  # power-off gap before the last boot
    netplan_renderer: Literal["NetworkManager", "networkd"] | None = None
    rdma_naming: Literal["rocep", "mlx5"] | None = None  # RDMA device naming style
    netdev_naming: Literal["predictable", "eth"] | None = None  # enp1s0f0np0..., or eth0..eth3
    missing_tools: tuple[str, ...] = ()  # tools/packages not installed (lab.nodetools.LAYOUT)
    sudo: Literal["nopasswd", "password"] = "nopasswd"  # `sudo -n` allowed, or asks a password
    peer_ssh: Literal["ok", "no-key", "host-key"] = "ok"  # how it answers SSH from its peers
    platform: Literal["dgx-spark", "asus-gx10", "msi-edgexpert", "dell-gb10", "gigabyte-atom"] = (
        "dgx-spark"  # the GB10 vendor's DMI sys_vendor / product_name (lab.nodetools.PLATFORMS)
    )
    nm_profile: str | None = None  # a NetworkManager profile of its own (DHCP) on this netdev


class SwitchFacts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    routeros_version: str | None = None
    link_up_delay_s: float | None = Field(default=None, ge=0)  # a forced/bounced leg comes up
    management_port: str | None = None  # the port the wizard's API session arrives on


class PortFacts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    hw_offload: bool | None = Field(default=None, alias="hw-offload")  # offload lost, no cause


class ContainerFacts(BaseModel):
    """A running container on a node, whose environment `docker inspect` reports."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    env: dict[str, str] = Field(default_factory=dict)


class Facts(BaseModel):
    """What a scenario says about the world beyond its faults (`facts:`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    nodes: dict[str, NodeFacts] = Field(default_factory=dict)
    switches: dict[str, SwitchFacts] = Field(default_factory=dict)
    ports: dict[str, PortFacts] = Field(default_factory=dict)  # "switch/port"
    containers: dict[str, ContainerFacts] = Field(default_factory=dict)  # by node
    processes: dict[str, ContainerFacts] = Field(default_factory=dict)  # by node: name = comm
