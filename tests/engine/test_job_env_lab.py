"""NCCL settings read where the job runs: a container's environment (seed 002), shown as the
change to make there, never written into host files the container does not read."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard.events import Event, FixPreviewed, Note, VerdictReached
from wizard.lab import scenarios
from wizard.lab.lab import Lab

pytestmark = pytest.mark.lab

SCENARIO = """
name: container-hca
topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 2}
faults: []
facts:
  containers:
    spark1: {name: vllm, env: {NCCL_IB_HCA: rocep1s0f, NCCL_CROSS_NIC: "1"}}
"""


async def test_the_containers_hca_filter_is_found_and_shown_as_a_container_change(
    tmp_path: Path,
) -> None:
    lab = Lab(scenarios.load_text(SCENARIO, path="c.yaml"), time_scale=200.0)
    host_files = {n: dict(node.files) for n, node in lab.world.nodes.items()}
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
        assert wiring.inventory.node("spark1").job_container == "vllm"  # named in the inventory
        result = await wiring.engine.run()
    finally:
        await wiring.close()
        await lab.stop()
    found = [
        e.verdict
        for e in events
        if isinstance(e, VerdictReached)
        and e.verdict.fault == "nccl.hca-filter"
        and e.verdict.is_finding
    ]
    assert found and found[-1].targets == ("spark1 (container vllm)",)
    ev = found[-1].evidence[0]
    assert ev.observed == "NCCL_IB_HCA=rocep1s0f (container vllm) selects rocep1s0f0, rocep1s0f1"
    assert (
        "docker run -e NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0,rocep1s0f1,roceP2p1s0f1" in ev.expected
    )
    assert "compose file's `environment:`" in ev.expected
    # nothing offered for host files, nothing written there
    assert not [e for e in events if isinstance(e, FixPreviewed) and e.fault == "nccl.hca-filter"]
    for name, node in lab.world.nodes.items():
        for path in ("/etc/nccl.conf", "/etc/profile.d/nccl.sh"):
            assert node.files.get(path) == host_files[name].get(path)
    still = [e.text for e in events if isinstance(e, Note) and e.text.startswith("still open")]
    assert still and "nccl.hca-filter" in still[-1]
    assert result.healthy_after is False  # the job still runs on one half until vllm changes
