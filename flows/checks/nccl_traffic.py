"""What the fabric did during the NCCL run: per-rail counters on the nodes, the switch ports
and the switch CPU, read around the run the way they are around every ib_write_bw.

A busbw is a number; these say where its bytes went. NCCL spreads a collective over every RDMA
device it uses, so a rail that is up and addressed but carried (almost) nothing took no part
(an `NCCL_IB_HCA` filter, an unconfigured half). A switch CPU that worked while NCCL ran is
the software-forwarding tell of seed 000 (0.46 GB/s with cpu-load near 100 %), whatever the
bridge configuration says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from flows.base import Context
from wizard.model import Evidence, Measurement, Status


@dataclass(frozen=True, slots=True)
class RunTraffic:
    moved: dict[str, int]  # rail key -> bytes sent + received during the run
    idle: tuple[str, ...]  # rails up and addressed that carried (almost) nothing
    unread: tuple[str, ...]  # rails whose counters could not be read before and after
    cpu: dict[str, float]  # switch -> peak cpu-load sampled during the run
    ports: dict[str, dict[str, dict[str, int]]]  # switch -> port -> counters that moved
    sampled: bool  # at least one switch CPU sample fell inside the run (or no switch)
    nothing_moved: bool = False  # no rail carried the run's data: none is singled out as idle


def read(run: Measurement, ctx: Context) -> RunTraffic | None:
    """The counters and CPU recorded around `run` (None: the run predates this evidence)."""
    counters = run.extra.get("rail_counters")
    if not isinstance(counters, Mapping):
        return None
    moved: dict[str, int] = {}
    unread: list[str] = []
    for key, d in counters.items():
        if not isinstance(d, Mapping):
            unread.append(str(key))
            continue
        moved[str(key)] = int(d.get("tx_bytes_phy", 0)) + int(d.get("rx_bytes_phy", 0))
    busiest = max(moved.values(), default=0)
    share = ctx.expectations.nccl_rail_idle_share
    background = ctx.expectations.nccl_rail_background_bytes
    # a run that stalled everywhere (lossless QoS, a dead path) cannot say which devices NCCL
    # used; otherwise idle is background frames only and a sliver of the busiest rail's bytes:
    # a rail that moved gigabytes took part, however much more another carried (a ring held
    # back by a detour or a CPU-forwarding switch beside one at line rate)
    nothing = bool(moved) and busiest < background
    idle = (
        ()
        if nothing
        else tuple(k for k, b in moved.items() if b < background and b < share * busiest)
    )
    cpu = {
        str(k): float(v)
        for k, v in dict(run.extra.get("switch_cpu") or {}).items()
        if isinstance(v, int | float)
    }
    ports = {
        str(sw): {str(p): dict(v) for p, v in dict(got).items()}
        for sw, got in dict(run.extra.get("switch_ports") or {}).items()
    }
    sampled = bool(cpu) or not ctx.switches
    return RunTraffic(moved, idle, tuple(unread), cpu, ports, sampled, nothing)


def cpu_busy(t: RunTraffic, ctx: Context) -> str | None:
    """The first switch whose CPU worked during the run, if any."""
    limit = ctx.expectations.switch_cpu_idle_max_pct
    return next((sw for sw, load in sorted(t.cpu.items()) if load > limit), None)


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e7 else f"{n} B"


def evidence(t: RunTraffic, ctx: Context, command: str) -> list[Evidence]:
    """The rows every NCCL busbw verdict cites: rails that moved bytes, idle and unread rails,
    the switch CPU and the switch ports during the run."""
    e = ctx.expectations
    rows: list[Evidence] = []
    busy = [k for k in t.moved if k not in t.idle]
    if t.nothing_moved:
        rows.append(
            Evidence(
                "cluster",
                f"{command} (rail counters before/after)",
                f"no rail moved data during the run (the busiest {_gb(max(t.moved.values()))}): "
                "which devices NCCL used cannot be read from the counters",
                "every active rail carries its share of the collective",
                Status.UNKNOWN,
            )
        )
    elif t.moved:
        rows.append(
            Evidence(
                "cluster",
                f"{command} (rail counters before/after)",
                "rails that moved bytes: "
                + (", ".join(f"{k} {_gb(t.moved[k])}" for k in busy) or "none"),
                "every active rail carries its share of the collective",
                Status.FAIL if t.idle else Status.PASS,
            )
        )
    for k in t.idle:
        rows.append(
            Evidence(
                k,
                "tx_bytes_phy + rx_bytes_phy during the NCCL run",
                f"{_gb(t.moved[k])}: this rail took no part in the run",
                f">= {e.nccl_rail_idle_share:.0%} of the busiest rail's bytes",
                Status.FAIL,
            )
        )
    for k in t.unread:
        rows.append(
            Evidence(
                k,
                "rail counters before/after the NCCL run",
                "not read",
                "sysfs and ethtool -S counters",
                Status.UNKNOWN,
            )
        )
    for sw in ctx.switches:
        load = t.cpu.get(sw)
        seen = (
            "not sampled during the run (a run shorter than the sampling interval)"
            if load is None
            else f"{load:g} % during the run"
        )
        status = (
            Status.UNKNOWN
            if load is None
            else (Status.FAIL if load > e.switch_cpu_idle_max_pct else Status.PASS)
        )
        moved = t.ports.get(sw, {})
        carried = ", ".join(
            f"{p} {_gb(v.get('rx-byte', 0) + v.get('tx-byte', 0))}"
            for p, v in sorted(moved.items())
        )
        rows.append(
            Evidence(
                sw,
                "/system/resource cpu-load, /interface print (around the NCCL run)",
                f"cpu-load {seen}; ports that moved: {carried or 'none read'}",
                f"cpu-load <= {e.switch_cpu_idle_max_pct:g} % (hardware forwarding)",
                status,
            )
        )
    return rows
