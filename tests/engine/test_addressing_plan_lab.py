"""The addressing fix on the lab: the renderer found is kept, the fabric file that exists is
edited in place (backed up), and an addressing plan that would duplicate an octet is refused."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard.engine import RunResult
from wizard.events import Event, FixApplied, FixPreviewed, LinkTransitionSeen, Note
from wizard.fixes import BACKUP_SUFFIX
from wizard.lab import scenarios
from wizard.lab.lab import Lab
from wizard.lab.renderer import NM_DEFAULT_PATH
from wizard.lab.world import NETPLAN_PATH

pytestmark = pytest.mark.lab

SEED_000_PATH = "/etc/netplan/98-roce-4rail.yaml"  # where seed 000 keeps its fabric netplan

NM = """
name: nm-duplicate
topology: {nodes: 4, switches: [{model: CRS804-4DDQ}], cables_per_node: 2}
faults:
  - {id: host.duplicate-ip, nodes: [spark2, spark3]}
facts:
  nodes:
    spark2: {netplan_renderer: NetworkManager}
    spark3: {netplan_renderer: NetworkManager}
"""


async def _walk(lab: Lab, tmp_path: Path) -> tuple[RunResult, list[Event]]:
    await lab.start()
    events: list[Event] = []
    wiring = await open_wizard(
        operator=TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False),
        sinks=[events.append],
        lab=None,
        lab_object=lab,
        session_dir=tmp_path / "session",
        time_scale=200.0,
        fsync=False,
    )
    try:
        result = await wiring.engine.run()
    finally:
        await wiring.close()
        await lab.stop()
    return result, events


async def test_networkmanager_host_keeps_its_renderer_and_its_file(tmp_path: Path) -> None:
    lab = Lab(scenarios.load_text(NM, path="nm.yaml"), time_scale=200.0)
    spark3 = lab.world.nodes["spark3"]
    original = spark3.files.pop(NETPLAN_PATH)  # the fabric file under seed 000's name
    spark3.files[SEED_000_PATH] = original
    result, events = await _walk(lab, tmp_path)
    fix = [e for e in events if isinstance(e, FixPreviewed) and e.fault == "host.duplicate-ip"]
    assert len(fix) == 1 and "renderer kept: NetworkManager" in fix[0].summary
    assert f"# spark3: {SEED_000_PATH}" in fix[0].preview
    assert f"# spark2: {NETPLAN_PATH}" in fix[0].preview
    assert not fix[0].bounces_links  # the renderer does not change: no link goes down
    written = yaml.safe_load(spark3.files[SEED_000_PATH])
    assert written["network"]["renderer"] == "NetworkManager"
    assert written["network"]["ethernets"]["enp1s0f0np0"]["addresses"] == ["10.9.1.3/24"]
    assert NETPLAN_PATH not in spark3.files  # edited in place, no second file to fight it
    assert spark3.files[SEED_000_PATH + BACKUP_SUFFIX] == original
    assert NM_DEFAULT_PATH in spark3.files and spark3.renderer == "NetworkManager"
    bounced = [e for e in events if isinstance(e, LinkTransitionSeen) and "duplicate-ip" in e.cause]
    assert not bounced
    assert result.healthy_after is True


COLLIDE = """
name: colliding-digits
topology: {nodes: 4, switches: [{model: CRS804-4DDQ}], cables_per_node: 2}
faults:
  - {id: host.duplicate-ip, nodes: [spark2, spark3]}
"""


async def test_names_whose_trailing_digits_collide_are_refused_before_writing(
    tmp_path: Path,
) -> None:
    lab = Lab(scenarios.load_text(COLLIDE, path="collide.yaml"), time_scale=200.0)
    before = {n: dict(node.files) for n, node in lab.world.nodes.items()}
    await lab.start()
    try:
        # the rack calls spark3 "rack-b-spark2": its trailing digits collide with spark2's
        inv = lab.inventory()
        for node in inv["nodes"]:
            if node["name"] == "spark3":
                node["name"] = "rack-b-spark2"
        inv["cabling"] = {
            k.replace("spark3/", "rack-b-spark2/"): v for k, v in inv["cabling"].items()
        }
        path = lab.directory / "renamed.yaml"
        path.write_text(yaml.safe_dump(inv, sort_keys=False))
        events: list[Event] = []
        wiring = await open_wizard(
            operator=TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False),
            sinks=[events.append],
            inventory=path,
            session_dir=tmp_path / "session",
            fsync=False,
        )
        try:
            result = await wiring.engine.run()
        finally:
            await wiring.close()
    finally:
        await lab.stop()
    refused = [e.text for e in events if isinstance(e, Note) and "same host octet" in e.text]
    assert refused
    assert "spark2 and rack-b-spark2 the same host octet 2" in refused[0]
    assert "nothing was written" in refused[0] and "addressing: {hosts:" in refused[0]
    assert not [e for e in events if isinstance(e, FixApplied) and e.fault == "host.duplicate-ip"]
    for name, node in lab.world.nodes.items():
        assert node.files.get(NETPLAN_PATH) == before[name].get(NETPLAN_PATH)
    assert result.healthy_after is False
