"""The bisection order, as data (FAULTS.md, "The bisection order"; seed 000, "the order that works").

Each step says in plain words what it checks, why, and what good looks like: junior staff learn
the runbook from these texts, and the TUI and the headless wizard show them verbatim. The engine
walks this list; which fault ids each step judges is data here, the logic lives in the checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

StepKind = Literal["preflight", "direct_connect", "drain", "config", "halves", "persist"]


@dataclass(frozen=True, slots=True)
class StepSpec:
    id: str
    title: str
    kind: StepKind
    what: str
    why: str
    good: str
    faults: tuple[str, ...]  # fault ids judged (and fixed) at this step
    traffic: bool = False  # the step confirms its verdict with a bandwidth test
    # open preflight findings that explain low numbers, so the physical test may be skipped
    explained_by: tuple[str, ...] = ()
    fabric_tests: bool = False  # after its rail tests: the jumbo ping matrix and the ISL test
    # persistence faults that would undo this step's fix at the next boot: fixed first, with it
    persisted_with: tuple[str, ...] = ()


FLOW: tuple[StepSpec, ...] = (
    StepSpec(
        id="preflight",
        title="Preflight",
        kind="preflight",
        what=(
            "Reach every node over SSH and every switch over the RouterOS API, discover the rails "
            "(ibdev2netdev, PCI addresses) and the cabling (switch host table), note the known red "
            "herrings, and run every read-only check once so you see the whole picture first."
        ),
        why=(
            "Nothing can be judged while a link is down, a breakout leg has not negotiated, or "
            "cross-switch traffic detours through the campus network: those are fixed first."
        ),
        good=(
            "All nodes and switches answer; every cabled rail has carrier at 200000Mb/s; the switch "
            "shows link-ok, rate=200Gbps, fec=fec91 on every leg; the ISL is forwarding."
        ),
        faults=(
            "preflight.tool-missing",
            "preflight.sudo",
            "preflight.mpirun-ssh",
            "switch.routeros-rdma-regression",
            "switch.breakout-autoneg",
            "switch.link-degraded",
            "host.rail-down",
            "switch.rstp-isl-blocked",
            "host.pcie-width",
            "benign.pcie-27w",
            "benign.gdr-disabled",
        ),
    ),
    StepSpec(
        id="direct_connect",
        title="Direct-connect test",
        kind="direct_connect",
        what=(
            "Measure every rail through the switch (single-QP ib_write_bw). If some are below line "
            "rate, AC-drain the nodes that measured low and measure through the switch again; only "
            "what stays low is bisected: a node of the worst rail is cabled port to port to a node "
            "that measured well (a QSFP112 DAC: a breakout DAC's far end does not fit a Spark), "
            "and measured again."
        ),
        why=(
            "A degraded CX7 clears only with an AC drain: low before the drain and at line rate "
            "after it is host.cx7-degraded on the drained nodes, found and fixed. What survives "
            "the drain is split in two by the direct cable: good numbers clear that node's NIC "
            "and host stack and pin the fault on the switch path; bad ones open the host branch "
            "(a throttled CX7, PCIe width, host MTU or PFC). When preflight already found a "
            "configuration fault that explains the low numbers, the physical test can be skipped."
        ),
        good=(
            "About 109.2 Gb/s per rail through one switch (111.9 Gb/s on a direct cable), one QP, "
            "one half; the conclusion is shown with the numbers on both sides."
        ),
        faults=(
            "host.cx7-degraded",
            "host.cx7-throttled",
            "host.pcie-width",
            "host.mtu",
            "host.pfc-enabled",
        ),
        traffic=True,
        explained_by=(
            "switch.offload-split-cage",
            "switch.offload-second-bridge",
            "switch.offload-disabled",
            "switch.qos-pfc-stall",
            "switch.rstp-isl-blocked",
            "switch.mtu",
            "switch.link-degraded",
            "switch.breakout-autoneg",
            "host.duplicate-ip",
            "host.same-subnet-rails",
            "host.arp-sysctls",
            "host.mtu",
            "host.pfc-enabled",
            "host.pcie-width",
            "host.cx7-throttled",
            "host.rail-down",
        ),
    ),
    StepSpec(
        id="drain",
        title="Drain",
        kind="drain",
        what=(
            "Every node whose links went down and up since its last full AC drain (a cable move, a "
            "port bounce, a switch reboot, a fix that declares it bounces links, the NIC's "
            "link_down_events_phy) is AC-drained: power off, unplug for at least 60 s, power on. "
            "The journal (journalctl --list-boots) tells a drain from a reboot."
        ),
        why=(
            "A link transition can re-arm a low-throughput CX7 state that survives reboots; only a "
            "full AC drain clears it. A bandwidth number from an undrained node is not evidence, "
            "and a reboot back within seconds is not a drain."
        ),
        good=(
            "Every node with a link transition came back with a new boot_id, and its journal "
            "shows at least 60 s between the previous boot's last entry and this boot's first."
        ),
        faults=("process.undrained-measurement",),
    ),
    StepSpec(
        id="offload",
        title="Switch offload",
        kind="config",
        what=(
            "Check that the fabric bridge is forwarded by the switch chip: every fabric port shows "
            "hw-offload (the H flag), the log says hardware offloading activated, host MACs are "
            "learned as external, and the switch CPU stays idle during a transfer."
        ),
        why=(
            "The 98DX7335 offloads one bridge per chip, and refuses a bridge that splits a "
            "QSFP56-DD cage across two bridges: then the switch CPU forwards every frame and every "
            "transport tops out near 10 Gb/s whatever the QP count."
        ),
        good="hw-offload=true on every fabric port, cpu-load ~0% under load, a rail >= 100 Gb/s.",
        faults=(
            "switch.offload-split-cage",
            "switch.offload-second-bridge",
            "switch.offload-disabled",
            "switch.offload-lost",
        ),
        traffic=True,
    ),
    StepSpec(
        id="qos",
        title="QoS and PFC",
        kind="config",
        what=(
            "Check the switch QoS ports (trust-l3, pfc) and the host NICs' PFC (mlnx_qos) for "
            "lossless settings on a path that is meant to be lossy."
        ),
        why=(
            "Half-configured lossless QoS lets RoCE connections form but no data flows: ib_write_bw "
            "ends in a transport retry error while ping works. Lossy RoCE is the accepted end state."
        ),
        good="trust-l3=ignore and pfc=disabled on fabric ports; mlnx_qos PFC all zero on every rail.",
        faults=("switch.qos-pfc-stall", "host.pfc-enabled"),
        traffic=True,
    ),
    StepSpec(
        id="addressing",
        title="Addressing and MTU",
        kind="config",
        what=(
            "Compare every fabric address cluster-wide, the subnets per rail, the ARP sysctls, IPv6 "
            "on fabric netdevs, and the MTU on hosts and switch ports, then a jumbo ping matrix. "
            "A NetworkManager profile of a node's own that would take a rail back at the next "
            "boot (nmcli -t) is fixed first, with this step, where it would undo the fix."
        ),
        why=(
            "A duplicated address makes RDMA frames leave the NIC and vanish (ARP flux); rails "
            "sharing a subnet and default ARP sysctls do the same on multi-rail hosts; a short MTU "
            "drops jumbo frames; IPv6 shifts the RoCE GID indices."
        ),
        good=(
            "One subnet per rail, unique addresses (10.9.<rail>.<host>/24), arp_ignore=1 "
            "arp_announce=2 rp_filter=2, no IPv6 on fabric netdevs, MTU 9000 / l2mtu 9216, "
            "ping -M do -s 8972 passes between all nodes."
        ),
        faults=(
            "host.duplicate-ip",
            "host.same-subnet-rails",
            "host.arp-sysctls",
            "host.ipv6-on-fabric",
            "host.mtu",
            "switch.mtu",
        ),
        traffic=True,
        fabric_tests=True,
        persisted_with=("persist.nm-profile",),
    ),
    StepSpec(
        id="halves",
        title="Both PCIe halves and NCCL",
        kind="halves",
        what=(
            "Drive both PCIe halves of every node at once, check which RDMA devices NCCL selects "
            "(NCCL_IB_HCA in /etc/nccl.conf, the login environment and the environment of the "
            "job's running container, docker inspect), then run NCCL all_reduce_perf across the "
            "cluster as the ground truth."
        ),
        why=(
            "A GB10's CX7 reaches the SoC over two PCIe x4 halves: one half carries ~100 Gb/s, the "
            "node ~200 Gb/s only when both are addressed and driven. NCCL_IB_HCA is a prefix match "
            "(rocep1s0f never matches roceP2p1s0f0), and a fallback to sockets costs 10x."
        ),
        good=(
            "Both halves together >= 180 Gb/s per node (98 + 98), NCCL using IB on every active "
            "device, all_reduce busbw >= 21.875 GB/s (26.6 for 2 nodes, 23.3 for 4)."
        ),
        faults=("host.half-unused", "nccl.hca-filter", "nccl.socket-fallback", "nccl.busbw-low"),
        traffic=True,
    ),
    StepSpec(
        id="persist",
        title="Persist and prove",
        kind="persist",
        what=(
            "Take a golden export of every switch and list it (/file print, size as read back); "
            "read what the next boot applies on every node: each fabric address in netplan, no "
            "NetworkManager profile of its own on a rail (nmcli -t), the ARP sysctls in "
            "/etc/sysctl.d, the PFC oneshot unit enabled (systemctl is-enabled); then reboot one "
            "node and run the checks and the rail tests once more: every host change must come "
            "back by itself. Last, each golden export is read back and compared with the "
            "switch's running configuration (a fresh /export): a switch changed since is stale."
        ),
        why=(
            "A fix that does not survive a reboot comes back as the same ticket next month; the "
            "golden export is the known-good switch configuration to compare against."
        ),
        good=(
            "Golden exports recorded in the session; all checks pass; the rebooted node came back "
            "with every check passing and its rails at line rate, with zero manual steps."
        ),
        faults=(
            "persist.netplan-addresses",
            "persist.nm-profile",
            "persist.sysctl",
            "persist.pfc-unit",
            "persist.golden-export",
        ),
    ),
)


def step(step_id: str) -> StepSpec:
    for s in FLOW:
        if s.id == step_id:
            return s
    raise KeyError(step_id)
