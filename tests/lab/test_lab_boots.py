"""The lab's evidence of how long a node was off (`journalctl --list-boots`), and a switch leg
that trains for a while after a change (`facts.switches.<s>.link_up_delay_s`)."""

from __future__ import annotations

import asyncio

from wizard import boots
from wizard.lab import scenarios
from wizard.lab.boots import DRAIN_OFF_S, REBOOT_OFF_S, list_boots
from wizard.lab.hands import Hands
from wizard.lab.hostcmds import Host
from wizard.lab.perftest import Registry

TEXT = """
name: boots
topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}
faults: []
facts:
  nodes:
    spark2: {boot_gap_s: 20}
  switches:
    crs804: {link_up_delay_s: 8}
"""


def _run(host: Host, script: str) -> str:
    out: list[str] = []
    err: list[str] = []
    asyncio.run(host.run(script, out.append, err.append))
    assert not err, err
    return "".join(out)


def test_list_boots_shows_the_gap_the_hands_left() -> None:
    world = scenarios.build_world(scenarios.load_text(TEXT, path="boots.yaml"))
    hands = Hands(world)
    n1, n2 = world.nodes["spark1"], world.nodes["spark2"]
    # the scenario's fact: spark2 came up 20 s after its previous boot's last entry
    parsed = boots.parse_list_boots(list_boots(world, n2, []))
    assert boots.off_gap(parsed, n2.boot_id) == 20.0
    first_boot = n1.boot_id
    hands.reboot("spark1")
    text = list_boots(world, n1, [])
    assert text.splitlines()[0].split() == ["IDX", "BOOT", "ID", "FIRST", "ENTRY", "LAST", "ENTRY"]
    rows = boots.parse_list_boots(text)
    assert [r.index for r in rows] == [-2, -1, 0]
    assert rows[-2].boot_id == first_boot.replace("-", "")
    assert rows[-1].boot_id == n1.boot_id.replace("-", "")
    gap = boots.off_gap(rows, n1.boot_id)
    assert gap is not None and abs(gap - REBOOT_OFF_S) <= 1.0  # second-resolution stamps
    hands.ac_drain("spark1")
    as_json = boots.parse_list_boots(list_boots(world, n1, ["-o", "json"]))
    gap = boots.off_gap(as_json, n1.boot_id)
    assert gap is not None and abs(gap - DRAIN_OFF_S) < 0.01
    drained, why = boots.judge_drain(
        "spark1", list_boots(world, n1, ["-o", "json"]), True, n1.boot_id, 60.0
    )
    assert drained is True and why == "spark1 was off 75 s (journal): AC-drained"


def test_journalctl_list_boots_over_the_lab_shell() -> None:
    world = scenarios.build_world(scenarios.load_text(TEXT, path="boots.yaml"))
    host = Host(world, world.nodes["spark1"], Registry())
    out = _run(host, "sudo -n journalctl --list-boots --no-pager --utc -o json")
    rows = boots.parse_list_boots(out)
    assert rows[-1].index == 0 and rows[-1].boot_id == world.nodes["spark1"].boot_id.replace(
        "-", ""
    )


def test_a_forced_leg_trains_for_the_delay_then_comes_up() -> None:
    world = scenarios.build_world(scenarios.load_text(TEXT, path="boots.yaml"))
    sw = world.switches["crs804"]
    now = [world.now()]
    sw.clock = lambda: now[0]  # type: ignore[attr-defined]
    port = "qsfp56-dd-1-1"
    assert sw.link(port).up
    sw.recompute(bounced=[port])  # type: ignore[attr-defined]
    status = sw.link(port)
    assert not status.up and status.reason == "link coming up"
    assert not world.port_link("spark1", 0)  # the node sees no carrier either
    now[0] += 7.9
    sw.tick()  # type: ignore[attr-defined]
    assert not sw.link(port).up
    now[0] += 0.2
    sw.tick()  # type: ignore[attr-defined]
    assert sw.link(port).up and sw.link(port).rate_gbps == 200.0
    assert world.port_link("spark1", 0)
