"""A world that outlives the process: save to and restore from a JSON file (`fabwiz lab --state`).

The file holds what a real cluster keeps when the wizard's laptop dies: switch configuration,
host files and runtime configuration, firmware and CX7 state, boot ids and uptimes, cabling,
counters. It is written atomically (temp file + rename) after every change.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from wizard.errors import FabwizError
from wizard.lab.facts import Facts
from wizard.lab.switchport import switch_from_state
from wizard.lab.traffic import Traffic
from wizard.lab.world import Cable, End, World
from wizard.schema import parse

VERSION = 1


def snapshot(world: World, scenario: dict[str, Any] | None = None) -> dict[str, Any]:
    data = world.to_state()
    data["version"] = VERSION
    if scenario is not None:
        data["scenario"] = scenario
    return data


def world_to_state(world: World) -> dict[str, Any]:
    """The JSON-able state of a world (what a session log keeps for an in-process lab)."""
    return snapshot(world)


def world_from_state(data: dict[str, Any], *, time_scale: float | None = None) -> World:
    """A world rebuilt from `world_to_state` output."""
    return restore(data, time_scale=time_scale)


def save(world: World, path: Path, scenario: dict[str, Any] | None = None) -> None:
    text = json.dumps(snapshot(world, scenario), indent=1, sort_keys=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".lab-state-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(path: Path, *, time_scale: float | None = None) -> tuple[World, dict[str, Any] | None]:
    """The saved world (and the scenario it came from, if recorded)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FabwizError(f"{path}: cannot read the lab state: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise FabwizError(f"{path}: not a fabwiz lab state (version {VERSION})")
    return restore(data, time_scale=time_scale), data.get("scenario")


def restore(data: dict[str, Any], *, time_scale: float | None = None) -> World:
    world = World(
        seed=int(data.get("seed", 0)),
        time_scale=float(time_scale or data.get("time_scale", 1.0)),
        name=str(data.get("name", "lab")),
    )
    world.set_clock(float(data["now"]))
    # the facts (containers, processes, renderers, firmware...) as they were, changes included
    world.facts = parse(Facts, data.get("facts") or {})
    Traffic(world)
    for nd in data["nodes"]:
        node = world.add_node(nd["name"], int(nd["index"]))
        node.firmware = nd["firmware"]
        node.staged_firmware = nd.get("staged_firmware")
        node.throttled = bool(nd["throttled"])
        node.degraded = bool(nd["degraded"])
        node.susceptible = bool(nd["susceptible"])
        node.pcie_width = int(nd["pcie_width"])
        node.powered = bool(nd["powered"])
        node.boot_id = nd["boot_id"]
        node.boot_time = world.now() - float(nd["uptime"])
        node.pfc_boot = tuple(nd["pfc_boot"])
        node.sysctls = dict(nd["sysctls"])
        node.files = dict(nd["files"])
        node.dirs = {str(d) for d in nd.get("dirs", [])}
        node.enabled_units = set(nd["enabled_units"])
        node.dmesg = [(float(t), str(m)) for t, m in nd.get("dmesg", [])]
        node.boots = [(str(b), float(first), float(last)) for b, first, last in nd.get("boots", [])]
        node.off_s = None if nd.get("off_s") is None else float(nd["off_s"])
        node.down_at = float(nd.get("down_at", 0.0))
        node.renderer = str(nd.get("renderer", node.renderer))
        for rd, rail in zip(nd["rails"], node.rails, strict=True):
            rail.addresses = list(rd["addresses"])
            rail.ipv6 = list(rd["ipv6"])
            rail.mtu = int(rd["mtu"])
            rail.pfc = tuple(rd["pfc"])
            rail.counters.update({k: int(v) for k, v in rd["counters"].items()})
    for sd in data["switches"]:
        sw = switch_from_state(sd["state"], clock=world.now)
        world.add_switch(sd["name"], sd["model"], sw)
    for cd in data["cables"]:
        cable = Cable(End.parse(cd["a"]), End.parse(cd["b"]), bool(cd.get("seated", True)))
        world.cables.append(cable)
        world.sync_switch_side(cable)
    world.planned_cabling = dict(data.get("planned_cabling") or world.current_cabling())
    world.learn_macs()
    world.compute_rstp()
    world.traffic.recompute()
    return world
