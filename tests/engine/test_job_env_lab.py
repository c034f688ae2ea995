"""NCCL settings read where the job runs: a container's environment (seed 002), shown as the
change to make there, never written into host files the container does not read."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest
from rich.console import Console

from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard.events import Event, FixPreviewed, FixVerified, Note, VerdictReached
from wizard.lab import scenarios
from wizard.lab.facts import ContainerFacts
from wizard.lab.lab import Lab
from wizard.model import PhysicalAction, Status

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
    # offered as a change by hand in the container (then a re-check), nothing for host files
    offered = [e for e in events if isinstance(e, FixPreviewed) and e.fault == "nccl.hca-filter"]
    assert offered and offered[0].target == "spark1"
    assert offered[0].preview.startswith("Change the job's environment by hand, then re-check: ")
    assert "spark1 (container vllm): in the container vllm's environment" in offered[0].preview
    assert "/etc/nccl.conf" not in offered[0].preview
    for name, node in lab.world.nodes.items():
        for path in ("/etc/nccl.conf", "/etc/profile.d/nccl.sh"):
            assert node.files.get(path) == host_files[name].get(path)
    still = [e.text for e in events if isinstance(e, Note) and e.text.startswith("still open")]
    assert still and "nccl.hca-filter" in still[-1]
    assert result.healthy_after is False  # the job still runs on one half until vllm changes


class ChangesTheContainer(TerminalOperator):
    """The technician: answers "done" once without changing anything, then recreates the
    container with the change the wizard showed, and answers again."""

    def __init__(self, lab: Lab) -> None:
        super().__init__(Console(file=io.StringIO()), yes=True, interactive=False)
        self.lab = lab
        self.asked: list[str] = []

    async def physical_action(self, action: PhysicalAction, can_perform_in_lab: bool) -> str:
        if action.kind != "manual":
            return await super().physical_action(action, can_perform_in_lab)
        self.asked.append(action.instructions)
        if len(self.asked) == 2:
            facts = self.lab.world.facts
            fixed = ContainerFacts(
                name="vllm", env={"NCCL_IB_HCA": "=rocep1s0f0,roceP2p1s0f0,rocep1s0f1,roceP2p1s0f1"}
            )
            self.lab.world.facts = dataclasses.replace(facts, containers={"spark1": fixed})
        return "done"


# the container's filter, and the same filter in the hosts' own login environment
BOTH = SCENARIO.replace("faults: []", "faults:\n  - id: nccl.hca-filter")


async def test_i_changed_it_re_check_runs_the_probes_again_until_the_container_is_right(
    tmp_path: Path,
) -> None:
    lab = Lab(scenarios.load_text(BOTH, path="c.yaml"), time_scale=200.0)
    operator = ChangesTheContainer(lab)
    await lab.start()
    events: list[Event] = []
    wiring = await open_wizard(
        operator=operator,
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
    assert len(operator.asked) == 2  # asked again after the first re-check still saw the filter
    notes = [e.text for e in events if isinstance(e, Note) and e.text.startswith("re-check: ")]
    assert len(notes) == 1 and "spark1 (container vllm)" in notes[0]
    verified = [e for e in events if isinstance(e, FixVerified) and e.fault == "nccl.hca-filter"]
    assert [v.ok for v in verified] == [True, True]
    # two plans, each for its own targets: the hosts' files, then the container by hand
    fix = [f for f in result.fixes if f.fault == "nccl.hca-filter"]
    assert [(f.fix_id, f.target, f.verified) for f in fix] == [
        ("halves:nccl.hca-filter:spark1,spark2", "spark1, spark2", True),
        ("halves:nccl.hca-filter:spark1 (container vllm)", "spark1", True),
    ]
    offered = [e for e in events if isinstance(e, FixPreviewed) and e.fault == "nccl.hca-filter"]
    host, job = offered
    assert host.preview.startswith("# spark1: /etc/nccl.conf\nNCCL_IB_HCA==rocep1s0f0,")
    assert "(container" not in host.preview
    assert job.preview.startswith(
        "Change the job's environment by hand, then re-check: spark1 (container vllm): "
    )
    assert "`docker run -e NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0,rocep1s0f1,roceP2p1s0f1 ...`" in (
        job.preview
    )
    for name in ("spark1", "spark2"):
        assert "NCCL_IB_HCA==rocep1s0f0," in lab.world.nodes[name].files["/etc/nccl.conf"]
    last = [
        e.verdict
        for e in events
        if isinstance(e, VerdictReached) and e.verdict.fault == "nccl.hca-filter"
    ][-1]
    assert last.status is Status.PASS
