"""An in-process lab's saved world (`fabwiz resume`) keeps the boot history, the renderer and
the facts (containers, processes): a drain judged after a resume sees the same journal, and the
job's container still runs with the environment it had."""

from __future__ import annotations

import asyncio
import dataclasses
import json

from wizard import boots
from wizard.lab import scenarios
from wizard.lab import state as lab_state
from wizard.lab.boots import list_boots
from wizard.lab.facts import ContainerFacts
from wizard.lab.hands import Hands
from wizard.lab.hostcmds import Host
from wizard.lab.perftest import Registry

TEXT = """
name: resume-facts
topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}
faults: []
facts:
  nodes:
    spark2: {netplan_renderer: NetworkManager, boot_gap_s: 20}
  containers:
    spark1: {name: vllm, env: {NCCL_IB_HCA: rocep1s0f}}
  processes:
    spark2: {name: python3, env: {NCCL_IB_HCA: rocep1s0f}}
"""


def _run(host: Host, script: str) -> str:
    out: list[str] = []
    asyncio.run(host.run(script, out.append, out.append, root=True))
    return "".join(out)


def test_boot_history_renderer_and_facts_survive_a_saved_world() -> None:
    world = scenarios.build_world(scenarios.load_text(TEXT, path="r.yaml"))
    hands = Hands(world)
    hands.ac_drain("spark1")
    hands.reboot("spark1")
    # the technician recreated the container with another environment before the interruption
    changed = ContainerFacts(name="vllm", env={"NCCL_IB_HCA": "=rocep1s0f0"})
    world.facts = dataclasses.replace(world.facts, containers={"spark1": changed})
    before = {n: (list(node.boots), node.renderer, node.down_at) for n, node in world.nodes.items()}
    journal = list_boots(world, world.nodes["spark1"], ["-o", "json"])

    back = lab_state.world_from_state(json.loads(json.dumps(lab_state.world_to_state(world))))

    after = {n: (list(node.boots), node.renderer, node.down_at) for n, node in back.nodes.items()}
    assert after == before
    assert back.nodes["spark2"].renderer == "NetworkManager"
    assert len(back.nodes["spark1"].boots) == len(world.nodes["spark1"].boots) >= 3
    rows = boots.parse_list_boots(list_boots(back, back.nodes["spark1"], ["-o", "json"]))
    saved = boots.parse_list_boots(journal)
    assert rows[:-1] == saved[:-1]  # the earlier boots, exactly (the current one is still running)
    assert rows[-1].boot_id == saved[-1].boot_id
    gap = boots.off_gap(rows, back.nodes["spark1"].boot_id)
    was = boots.off_gap(saved, world.nodes["spark1"].boot_id)
    assert gap is not None and was is not None and abs(gap - was) < 0.1  # uptime, to the ms
    assert gap < 60  # the last one was a reboot, not a drain, before and after the resume
    assert back.facts == world.facts
    host = Host(back, back.nodes["spark1"], Registry())
    out = _run(
        host, "docker ps -q | xargs -r docker inspect --format '{{.Name}} {{json .Config.Env}}'"
    )
    assert '"NCCL_IB_HCA==rocep1s0f0"' in out and out.startswith("/vllm ")
    host2 = Host(back, back.nodes["spark2"], Registry())
    comm = _run(host2, "grep -H . /proc/[0-9]*/comm")
    assert "/comm:python3" in comm


def test_a_state_saved_before_these_fields_still_loads() -> None:
    world = scenarios.build_world(scenarios.load_text(TEXT, path="r.yaml"))
    data = lab_state.world_to_state(world)
    data.pop("facts")
    for nd in data["nodes"]:
        for key in ("boots", "off_s", "down_at", "renderer"):
            nd.pop(key)
    back = lab_state.world_from_state(data)
    assert back.nodes["spark1"].boots == [] and back.facts.containers == {}
