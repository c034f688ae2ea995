"""Live gauges over the lab: one long-lived sampling channel per node, not a command per tick;
the node really runs the loop, and the gauges see the traffic of a rail test."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import pytest

from flows.expectations import DEFAULT
from wizard.events import Event, RailSampled
from wizard.fabric import InventoryFabric
from wizard.inventory import load_inventory
from wizard.lab.lab import Lab
from wizard.model import ProbeResult
from wizard.transports.ssh import SshTarget, SshTransport

pytestmark = pytest.mark.lab


async def test_gauges_stream_through_one_channel_per_node_during_a_rail_test() -> None:
    async with Lab("healthy-4node-crs804", time_scale=10.0) as lab:
        inv = load_inventory(lab.inventory_path)
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        streams: list[tuple[str, str]] = []
        runs: list[str] = []
        real_stream, real_run = ssh.stream_lines, ssh.run

        def stream(name: str, command: str) -> AsyncGenerator[str, None]:
            streams.append((name, command))
            return real_stream(name, command)

        async def run(name: str, command: str, **kw: Any) -> ProbeResult:
            runs.append(command)
            return await real_run(name, command, **kw)

        ssh.stream_lines = stream  # type: ignore[method-assign]
        ssh.run = run  # type: ignore[method-assign]
        events: list[Event] = []
        fabric = InventoryFabric(inv, ssh, {}, sink=events.append, perf_duration_s=10)
        fabric.sweeper.limits = DEFAULT  # as the composition root gives it
        try:
            measured = await fabric.measure("rails")
        finally:
            await fabric.close()
    samples = [e for e in events if isinstance(e, RailSampled)]
    # no counter command per tick: the probes run are the sweep's and the tests' own
    assert not any("port_xmit_data" in c for c in runs)
    # one sampling loop per node (a second one once, after the node clock was calibrated)
    per_node = {n: sum(1 for s, _c in streams if s == n) for n in fabric.nodes}
    assert set(per_node) == {"spark1", "spark2", "spark3", "spark4"}
    assert all(1 <= k <= 2 for k in per_node.values()), per_node
    assert all(c.startswith("while :; do cat /proc/uptime;") for _s, c in streams)
    # the gauges saw the traffic the rail test measured, on the rails it drove
    assert measured and all(m.valid for m in measured)
    busy = {(e.node, e.netdev) for e in samples if e.gbps > 50}
    tested = {(m.extra["client"], m.extra["client_netdev"]) for m in measured}
    assert tested & busy, (tested, sorted(busy)[:8])
    top = max(e.gbps for e in samples)
    assert 50 < top < 125  # a single-QP 200G rail through a CRS804, in Gb/s


def test_a_sample_is_timed_between_its_two_clock_readings() -> None:
    from wizard.fabric import _parse_counters

    counters = "/sys/class/infiniband/rocep1s0f0/ports/1/counters/port_xmit_data:4000\n"
    # the shell was held up between the clock and the counters: the midpoint, not the first
    assert _parse_counters(f"100.00 90.00\n{counters}100.20 90.10\n") == (
        pytest.approx(100.10),
        {"rocep1s0f0": 4000},
    )
    assert _parse_counters(f"100.00 90.00\n{counters}") == (100.0, {"rocep1s0f0": 4000})
    assert _parse_counters(counters) is None  # no clock: no sample
    assert _parse_counters(f"100.00 90.00\n{counters}99.00 90.00\n") is None  # went back
