"""The expectations table of FAULTS.md, as data: what a healthy GB10 fabric measures.

Verdicts compare measurements with these values as "% of expected" with pass/warn/fail bands.
One table, overridable per cluster from the inventory's `expectations:` mapping (same keys).
Each field's type says what an override must be (a positive rate, an MTU the kernel accepts, a
sysctl value the kernel defines, ...): `validate_overrides` checks a mapping against it, so a bad
override is refused when the inventory loads, naming the key, never in the middle of a walk.
Sources: seeds 000 (CRS804 three bugs), 001 (breakout FAQ), 003 (six-node CRS812 guide) and
NVIDIA's own preflight gates (reference/anchors.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ["DEFAULT", "Expectations", "validate_overrides"]


class _Rule:
    """What a field's value must be, as pydantic core-schema keys (`strict`, `gt`, `ge`, `le`,
    `pattern`, `min_length`): read only when the overrides are validated, so importing the
    table does not import pydantic."""

    def __init__(self, **keys: Any) -> None:
        self.keys = {"strict": True, **keys}

    def __get_pydantic_core_schema__(self, source: Any, handler: Callable[[Any], Any]) -> Any:
        schema = handler(source)
        schema.update(self.keys)
        return schema


class _Check:
    """A check of a whole value after its type (an ordered band, a pattern's placeholders)."""

    def __init__(self, check: Callable[[Any], Any]) -> None:
        self.check = check

    def __get_pydantic_core_schema__(self, source: Any, handler: Callable[[Any], Any]) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(self.check, handler(source))


def _ordered(band: tuple[float, float]) -> tuple[float, float]:
    if band[0] >= band[1]:
        raise ValueError(f"expected [low, high] with low below high, got {list(band)}")
    return band


def _subnet_pattern(pattern: str) -> str:
    if "{rail}" not in pattern or "{host}" not in pattern:
        raise ValueError("must contain {rail} and {host}, e.g. '10.9.{rail}.{host}/24'")
    return pattern


# Strict scalars: `9000` is an MTU, `"9000"`, `9000.0` and `true` are not (YAML gives real types)
_Positive = Annotated[float, _Rule(gt=0)]
_Share = Annotated[float, _Rule(gt=0, le=1)]
_Count = Annotated[int, _Rule(ge=0)]
_Band = Annotated[tuple[_Positive, _Positive], _Check(_ordered)]
_Mtu = Annotated[int, _Rule(ge=68, le=65535)]  # the kernel's ETH_MIN_MTU..ETH_MAX_MTU
_Text = Annotated[str, _Rule(min_length=1)]
_Release = Annotated[str, _Rule(pattern=r"^\d+(\.\d+)*$")]  # a RouterOS release: 7.20
_SubnetPattern = Annotated[str, _Rule(), _Check(_subnet_pattern)]


@dataclass(frozen=True, slots=True)
class Expectations:
    __pydantic_config__: ClassVar[dict[str, str]] = {"extra": "forbid"}

    # ib_write_bw, one QP, one half (Gb/s)
    rail_direct_gbps: _Positive = 111.86  # direct cable (003)
    rail_switched_gbps: _Positive = 109.2  # through one switch, 109.1-109.3 (000, 003)
    halves_concurrent_gbps: _Positive = 98.04  # each half when both run (003): 196.08 per port
    bidir_rail_gbps: _Positive = 206.0  # -b aggregate, one rail (000)
    bidir_rails: _Count = 1  # rails measured with -b per rail sweep (0: none)
    # QPs of the re-run of a low rail (the QP-invariance test, 000)
    qp_rerun_qps: Annotated[int, _Rule(ge=1)] = 8
    qp_rerun_max_rails: _Count = 4  # low rails re-run per sweep (each re-run is two more tests)
    rail_pass_gate_gbps: _Positive = 80.0  # NVIDIA's per-rail preflight gate (anchors)
    rail_fix_target_gbps: _Positive = 100.0  # "single-QP rail >= 100 Gb/s" verifications
    node_both_halves_min_gbps: _Positive = 180.0  # "both halves concurrently >= 180 Gb/s/node"
    isl_shared_flow_gbps: _Positive = 81.9  # two flows sharing one ISL direction (003)
    isl_shared_total_gbps: _Positive = 163.82  # 81.92 + 81.90: one 200G ISL direction carries
    node_both_halves_gbps: _Positive = 196.08  # 98.04 + 98.04 per node (003)
    # NCCL all_reduce_perf busbw (GB/s)
    nccl_busbw_2node: _Positive = 26.58  # (000)
    nccl_busbw_4node: _Positive = 23.33  # (000, 001: other builds 23.8, peak 24.63)
    nccl_pass_gate: _Positive = 21.875  # NVIDIA's setup script gate (anchors)
    # Signature bands (Gb/s unless noted)
    software_forwarding_max_gbps: _Positive = 10.5  # ~9.5-10 on every transport: offload-*
    degraded_band_gbps: _Band = (8.0, 25.0)  # host.cx7-degraded / -throttled
    ac_drain_min_off_s: _Positive = 60.0  # journal gap that tells an AC drain from a reboot
    link_settle_timeout_s: _Positive = 30.0  # links bounced by a fix: wait this long, verify
    rstp_detour_max_gbps: _Positive = 5.5  # ~4.5-5 single flow
    nccl_socket_band: _Band = (1.5, 3.5)  # GB/s: nccl.socket-fallback
    # ~0 % during line-rate RDMA (000)
    switch_cpu_idle_max_pct: Annotated[float, _Rule(ge=0, le=100)] = 10.0
    # a rail that carried less than this share of the busiest rail's bytes during an NCCL run
    # took no part in it: a device NCCL never opened carries background frames only, while the
    # devices it uses can carry very unequal shares when something else sets the pace (behind
    # a CPU-forwarding switch one rail moved 4 % of the busiest: it took part)
    nccl_rail_idle_share: _Share = 0.01
    # what a rail NCCL never opened carries during a run: background frames (ARP, LLDP); a rail
    # under this (and under the share above) took no part, and a run whose busiest rail moved
    # less moved nothing at all (no rail is singled out then: a stall everywhere)
    nccl_rail_background_bytes: _Positive = 10_000_000
    # during a rail test, a receiver or switch leg that counted under this share of the frames
    # the sender sent saw none of its data (what it did count is background: LLDP, ARP)
    counter_flat_share: _Share = 0.01
    stall_max_gbps: _Positive = 1.0  # a rail test below this moved no data: stalled, not slow
    # Verdict bands, as fraction of expected (warn_ratio may not exceed pass_ratio)
    pass_ratio: _Share = 0.90
    warn_ratio: _Share = 0.75
    # Configuration expectations
    fabric_mtu: _Mtu = 9000
    fabric_l2mtu: _Mtu = 9216
    link_rate: Annotated[str, _Rule(pattern=r"^\d+(\.\d+)?[GM]bps$")] = "200Gbps"
    link_fec: _Text = "fec91"
    link_speed_mbps: Annotated[int, _Rule(gt=0)] = 200000
    pcie_speed: Annotated[str, _Rule(pattern=r"^\d+(\.\d+)?GT/s$")] = "32GT/s"
    pcie_width: Annotated[int, _Rule(ge=1, le=32)] = 4
    arp_ignore: Annotated[int, _Rule(ge=0, le=8)] = 1  # the kernel's 0-3 and 8
    arp_announce: Annotated[int, _Rule(ge=0, le=2)] = 2
    rp_filter: Annotated[int, _Rule(ge=0, le=2)] = 2
    rail_subnet_pattern: _SubnetPattern = "10.9.{rail}.{host}/24"  # rail N -> 10.9.N.<host>/24
    known_good_firmware: _Text | None = None  # the cluster's known-good CX7 firmware, if set
    # on Marvell CRS (seed 000)
    routeros_rdma_regressions: tuple[_Release, ...] = ("7.20", "7.21")

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
        return self.nccl_pass_gate * self._isl_share()

    def halves_gate(self, across_isl: bool = False) -> float:
        """The both-halves total a healthy node must reach: `node_both_halves_min_gbps`; where
        its test had to cross an ISL (a node alone on its switch), the ISL direction carries
        both flows and caps them at 163.82 / 196.08 of that (003), as `nccl_gate` has it."""
        if not across_isl:
            return self.node_both_halves_min_gbps
        return self.node_both_halves_min_gbps * self._isl_share()

    def _isl_share(self) -> float:
        """What one ISL direction carrying a node's two flows leaves of the node's both-halves
        rate: 163.82 / 196.08 (003)."""
        return min(1.0, self.isl_shared_total_gbps / self.node_both_halves_gbps)

    def with_overrides(self, overrides: Mapping[str, Any]) -> Expectations:
        """A copy with `overrides` applied, each checked against its field's type. Unknown keys
        raise KeyError; a value of the wrong type or out of range raises ValidationError (a
        ValueError) naming the key."""
        unknown = sorted(set(overrides) - _NAMES)
        if unknown:
            raise KeyError(", ".join(map(str, unknown)))
        if not overrides:
            return self  # nothing to check: the table is frozen and was checked when built
        merged = {f.name: getattr(self, f.name) for f in fields(self)}
        merged.update(overrides)
        return _validate(merged)


_NAMES = frozenset(f.name for f in fields(Expectations))


@cache
def _adapter() -> TypeAdapter[Expectations]:
    from pydantic import TypeAdapter

    return TypeAdapter(Expectations)


def _validate(values: Mapping[str, Any]) -> Expectations:
    from pydantic import ValidationError
    from pydantic_core import PydanticCustomError

    unknown = sorted((k for k in values if k not in _NAMES), key=str)
    if unknown:
        known = ", ".join(sorted(_NAMES))
        raise ValidationError.from_exception_data(
            "Expectations",
            [
                {
                    "type": PydanticCustomError(
                        "extra_forbidden",
                        f"unknown expectation {str(key)!r}; expected one of: {known}",
                    ),
                    "loc": (key,),
                    "input": values[key],
                }
                for key in unknown
            ],
        )
    exp = _adapter().validate_python(dict(values))
    if exp.warn_ratio > exp.pass_ratio:
        raise ValidationError.from_exception_data(
            "Expectations",
            [
                {
                    "type": "less_than_equal",
                    "loc": ("warn_ratio",),
                    "input": exp.warn_ratio,
                    "ctx": {"le": f"pass_ratio ({exp.pass_ratio:g})"},
                }
            ],
        )
    return exp


def validate_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The inventory's `expectations:` overrides with each value checked against its field's
    type (a tuple field gets a tuple). Raises pydantic's ValidationError naming every unknown
    key and every value of the wrong type or out of range (the error's `loc` is the key)."""
    if not overrides:
        return {}  # nothing to check (and no validator to build before the first handshake)
    exp = _validate(overrides)
    return {str(key): getattr(exp, str(key)) for key in overrides}


DEFAULT = Expectations()
