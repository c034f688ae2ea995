"""The gauges' node-clock calibration: a lab clock running 1000x the wall gets a node-time sleep
1000x the sample interval, even when its first samples arrive several to a read."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from types import SimpleNamespace

import pytest

import wizard.fabric as fabric_mod
from wizard.fabric import InventoryFabric
from wizard.transports.ssh import SshTransport


class _Restarted(Exception):
    pass


class _FastNode:
    """A node whose clock runs 1000x the wall: each sample is one node second and 1 ms of wall
    time apart, except the first five, which arrive in one read (no wall time between them)."""

    def __init__(self) -> None:
        self.wall = 100.0
        self.commands: list[str] = []

    async def stream_lines(self, name: str, command: str) -> AsyncGenerator[str, None]:
        self.commands.append(command)
        if len(self.commands) > 1:
            raise _Restarted  # the loop restarted with its calibrated sleep: enough seen
        for i in range(100_000):
            if i >= 5:
                self.wall += 0.001
            yield f"{5000.0 + i:.2f} 0.00\n"
            yield f"/sys/class/infiniband/r0/ports/1/counters/port_xmit_data:{i * 1000}\n"
            yield "@@fabwiz-sample@@\n"


async def test_a_fast_node_clock_is_measured_over_enough_wall_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    node = _FastNode()
    monkeypatch.setattr(fabric_mod, "time", SimpleNamespace(monotonic=lambda: node.wall))
    inv = SimpleNamespace(nodes=[SimpleNamespace(name="n1", tools={})])
    fabric = InventoryFabric(inv, SshTransport([], ssh_config=None), {}, sink=lambda _e: None)
    fabric.ssh = node  # type: ignore[assignment]
    with pytest.raises(_Restarted):
        await fabric._sample_node("n1")
    first, second = node.commands
    assert "sleep 0.25;" in first
    sleep = float(second.split("sleep ")[1].split(";")[0])
    assert sleep == pytest.approx(250.0, rel=0.05)  # 0.25 s of wall time at 1000x
    assert fabric._sample_sleep["n1"] == sleep  # kept for the next tests
