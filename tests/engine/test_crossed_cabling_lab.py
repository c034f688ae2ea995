"""Crossed cabling (seed 002: one node's port 1 cabled to the other's port 0): the rail test
pairs the rails the cable joins (same subnet), not the same port index."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard.lab import scenarios
from wizard.lab.lab import Lab
from wizard.lab.world import NETPLAN_PATH, End, World

pytestmark = pytest.mark.lab

DIRECT = """
name: crossed
topology: {nodes: 2, switches: [], cables_per_node: 1}
faults: []
"""


def _cross(world: World) -> None:
    world.plug(End("node", "spark1", "port1"), End("node", "spark2", "port0"))
    # spark2's port 0 rails carry the subnets of spark1's port 1 rails, as the cable joins them
    n2 = world.nodes["spark2"]
    doc = yaml.safe_load(n2.files[NETPLAN_PATH])
    eths = doc["network"]["ethernets"]
    eths["enp1s0f0np0"]["addresses"] = ["10.9.3.2/24"]
    eths["enP2p1s0f0np0"]["addresses"] = ["10.9.4.2/24"]
    for netdev in ("enp1s0f1np1", "enP2p1s0f1np1"):
        eths.pop(netdev)
    n2.files[NETPLAN_PATH] = yaml.safe_dump(doc, sort_keys=False)
    world.apply_netplan(n2)


async def test_crossed_ports_are_measured_on_the_rails_the_cable_joins(tmp_path: Path) -> None:
    lab = Lab(scenarios.load_text(DIRECT, path="crossed.yaml"), time_scale=200.0)
    _cross(lab.world)
    await lab.start()
    wiring = await open_wizard(
        operator=TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False),
        lab=None,
        lab_object=lab,
        session_dir=tmp_path / "session",
        time_scale=200.0,
        fsync=False,
    )
    try:
        await wiring.fabric.sweep([])
        ms = await wiring.fabric.measure("rails")
    finally:
        await wiring.close()
        await lab.stop()
    got = {m.target: m.value for m in ms if m.valid and not m.extra.get("bidir")}
    bidir = [m.value for m in ms if m.valid and m.extra.get("bidir")]
    assert all(200.0 <= v <= 212.0 for v in bidir), bidir  # -b: ~206 aggregate on one rail
    assert set(got) == {
        "spark1/enp1s0f1np1->spark2/enp1s0f0np0",
        "spark2/enP2p1s0f0np0->spark1/enP2p1s0f1np1",  # a half-B rail's test runs the other way
    }
    assert all(105.0 <= v <= 115.0 for v in got.values()), got  # ~111.9 on a direct cable
