"""What the lab knows by name before it builds anything: the switch models it emulates and the
fault ids it can inject (FAULTS.md's). A scenario is checked against these without loading the
world, so that `fabwiz demo` can refuse a bad scenario before its first screen."""

from __future__ import annotations

__all__ = [
    "ALL_IDS",
    "BENIGN",
    "CRS804",
    "CRS812",
    "HOST_FAULTS",
    "INJECTABLE",
    "NCCL_FAULTS",
    "PROCESS_FAULTS",
    "SWITCH_FAULTS",
]

CRS804 = "CRS804-4DDQ"
CRS812 = "CRS812-8DS-2DQ-2DDQ"

SWITCH_FAULTS = (
    "switch.breakout-autoneg",
    "switch.link-degraded",
    "switch.offload-split-cage",
    "switch.offload-second-bridge",
    "switch.offload-disabled",
    "switch.qos-pfc-stall",
    "switch.mtu",
    "switch.rstp-isl-blocked",
)
HOST_FAULTS = (
    "host.pfc-enabled",
    "host.mtu",
    "host.duplicate-ip",
    "host.same-subnet-rails",
    "host.arp-sysctls",
    "host.ipv6-on-fabric",
    "host.half-unused",
    "host.rail-down",
    "host.pcie-width",
    "host.cx7-throttled",
    "host.cx7-degraded",
)
NCCL_FAULTS = ("nccl.hca-filter", "nccl.socket-fallback")
PROCESS_FAULTS = ("process.undrained-measurement",)
BENIGN = ("benign.pcie-27w", "benign.gdr-disabled", "benign.iperf-single-stream")
INJECTABLE = (*SWITCH_FAULTS, *HOST_FAULTS, *NCCL_FAULTS, *PROCESS_FAULTS)
ALL_IDS = (*INJECTABLE, *BENIGN)
