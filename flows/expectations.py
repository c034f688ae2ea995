"""The expectations table of FAULTS.md, as data: what a healthy GB10 fabric measures.

Verdicts compare measurements with these values as "% of expected" with pass/warn/fail bands.
One table, overridable per cluster from the inventory's `expectations:` mapping (same keys).
Sources: seeds 000 (CRS804 three bugs), 001 (breakout FAQ), 003 (six-node CRS812 guide) and
NVIDIA's own preflight gates (reference/anchors.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class Expectations:
    # ib_write_bw, one QP, one half (Gb/s)
    rail_direct_gbps: float = 111.86  # direct cable (003)
    rail_switched_gbps: float = 109.2  # through one switch, 109.1-109.3 (000, 003)
    rail_cross_switch_gbps: float = 109.08  # over a 200G ISL (003)
    halves_concurrent_gbps: float = 98.04  # each half when both run (003): 196.08 per port
    bidir_rail_gbps: float = 206.0  # -b aggregate, one rail (000)
    bidir_rails: int = 1  # rails measured with -b per rail sweep (0: none)
    qp_rerun_qps: int = 8  # QPs of the re-run of a low rail (the QP-invariance test, 000)
    qp_rerun_max_rails: int = 4  # low rails re-run per sweep (each re-run is two more tests)
    rail_pass_gate_gbps: float = 80.0  # NVIDIA's per-rail preflight gate (anchors)
    rail_fix_target_gbps: float = 100.0  # "single-QP rail >= 100 Gb/s" verifications (FAULTS.md)
    node_both_halves_min_gbps: float = 180.0  # "both halves concurrently >= 180 Gb/s per node"
    isl_shared_flow_gbps: float = 81.9  # two flows sharing one ISL direction (003)
    isl_shared_total_gbps: float = 163.82  # 81.92 + 81.90: what one 200G ISL direction carries
    node_both_halves_gbps: float = 196.08  # 98.04 + 98.04 per node (003)
    # NCCL all_reduce_perf busbw (GB/s)
    nccl_busbw_2node: float = 26.58  # (000)
    nccl_busbw_4node: float = 23.33  # (000, 001: other builds 23.8, peak 24.63)
    nccl_pass_gate: float = 21.875  # NVIDIA's setup script gate (anchors)
    # Signature bands (Gb/s unless noted)
    software_forwarding_max_gbps: float = 10.5  # ~9.5-10 on every transport: switch.offload-*
    degraded_band_gbps: tuple[float, float] = (8.0, 25.0)  # host.cx7-degraded / -throttled
    ac_drain_min_off_s: float = 60.0  # journal gap that tells an AC drain from a reboot
    link_settle_timeout_s: float = 30.0  # links bounced by a fix: wait this long, then verify
    rstp_detour_max_gbps: float = 5.5  # ~4.5-5 single flow
    single_half_node_max_gbps: float = 115.0  # ~92-110 per node where ~196 expected
    nccl_socket_band: tuple[float, float] = (1.5, 3.5)  # GB/s: nccl.socket-fallback
    iperf_single_stream_gbps: float = 12.0  # benign: measures the ARM CPU
    iperf_parallel_half_gbps: float = 93.1  # iperf3 TCP, both halves in parallel (003)
    switch_cpu_idle_max_pct: float = 10.0  # ~0 % during line-rate RDMA (000)
    # a rail that carried less than this share of the busiest rail's bytes during an NCCL run
    # took no part in it (NCCL spreads a collective over every device it uses)
    nccl_rail_idle_share: float = 0.05
    # Verdict bands, as fraction of expected
    pass_ratio: float = 0.90
    warn_ratio: float = 0.75
    # Configuration expectations
    fabric_mtu: int = 9000
    fabric_l2mtu: int = 9216
    link_rate: str = "200Gbps"
    link_fec: str = "fec91"
    link_speed_mbps: int = 200000
    pcie_speed: str = "32GT/s"
    pcie_width: int = 4
    arp_ignore: int = 1
    arp_announce: int = 2
    rp_filter: int = 2
    rail_subnet_pattern: str = "10.9.{rail}.{host}/24"  # rail N -> 10.9.N.<host octet>/24
    known_good_firmware: str | None = None  # the cluster's known-good CX7 firmware, if set
    routeros_rdma_regressions: tuple[str, ...] = ("7.20", "7.21")  # on Marvell CRS (seed 000)

    def band(self, observed: float, expected: float) -> str:
        """'pass', 'warn' or 'fail' for an observed value against an expected one."""
        if expected <= 0:
            return "pass"
        ratio = observed / expected
        if ratio >= self.pass_ratio:
            return "pass"
        if ratio >= self.warn_ratio:
            return "warn"
        return "fail"

    def nccl_expected(self, nodes: int) -> float:
        """Expected all_reduce busbw for a cluster of `nodes` GB10s (one GPU each)."""
        return self.nccl_busbw_2node if nodes <= 2 else self.nccl_busbw_4node

    def nccl_gate(self, nodes: int, switches: int) -> float:
        """The busbw a healthy cluster must reach: NVIDIA's gate on one switch; across switches
        the ring crosses one 200G ISL carrying both halves' flows, which caps it at
        163.82 / 196.08 of that (003's shared-ISL measurement)."""
        if switches <= 1 or nodes <= 2:
            return self.nccl_pass_gate
        return self.nccl_pass_gate * min(
            1.0, self.isl_shared_total_gbps / self.node_both_halves_gbps
        )

    def with_overrides(self, overrides: Mapping[str, Any]) -> Expectations:
        """A copy with the inventory's overrides applied; unknown keys raise KeyError."""
        names = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise KeyError(", ".join(unknown))
        coerced: dict[str, Any] = {}
        for key, value in overrides.items():
            current = getattr(self, key)
            coerced[key] = tuple(value) if isinstance(current, tuple) else value
        return replace(self, **coerced)


DEFAULT = Expectations()
