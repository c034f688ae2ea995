"""Fixtures for the RouterOS emulator tests: a fixed-clock switch and a server on port 0."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ros_helpers import FakeClock, ThreadedServer

from wizard.lab.routeros.switch import SwitchState


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def crs804(clock: FakeClock) -> SwitchState:
    sw = SwitchState.new("crs804", "CRS804-4DDQ", clock=clock)
    for i in range(1, 5):
        sw.set_cable(f"qsfp56-dd-{i}-1", f"spark{i}:port0")
        sw.set_cable(f"qsfp56-dd-{i}-5", f"spark{i}:port1")
    return sw


@pytest.fixture
def threaded(crs804: SwitchState) -> Iterator[ThreadedServer]:
    srv = ThreadedServer(crs804, tick_interval=None)
    try:
        yield srv
    finally:
        srv.close()
