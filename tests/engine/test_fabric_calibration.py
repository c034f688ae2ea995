"""The gauges' node-clock calibration: a lab clock running 1000x the wall gets a node-time sleep
1000x the sample interval, even when its first samples arrive several to a read."""

from __future__ import annotations

import asyncio
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


class _SwallowingNode:
    """A node whose stream turns a cancel into a broken stream (what a cancel lost in
    `asyncio.wait_for` on 3.11 amounts to: the task is cancelling, no CancelledError came)."""

    def __init__(self) -> None:
        self.opened = 0

    async def stream_lines(self, name: str, command: str) -> AsyncGenerator[str, None]:
        from wizard.transports.ssh import StreamFailed

        self.opened += 1
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise StreamFailed(f"{name}: the stream broke") from None
        yield ""


async def test_a_cancelled_sampler_stops_even_when_its_stream_swallowed_the_cancel() -> None:
    node = _SwallowingNode()
    inv = SimpleNamespace(nodes=[SimpleNamespace(name="n1", tools={})])
    fabric = InventoryFabric(inv, SshTransport([], ssh_config=None), {}, sink=lambda _e: None)
    fabric.ssh = node  # type: ignore[assignment]
    task = asyncio.ensure_future(fabric._sample_node("n1"))
    while not node.opened:
        await asyncio.sleep(0)
    task.cancel()
    # it stops instead of pausing and opening its stream again forever (the walk that ended
    # waited on it: a TUI walk hung there)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 30)
    assert node.opened == 1
