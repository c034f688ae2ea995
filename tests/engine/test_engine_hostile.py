"""Hostile values from the switch through a real dead-man rollback: fabwiz dies after the change,
the switch's own scheduler entry fires, and the switch is back exactly as it was (comments with
`;`, quotes, spaces, `$`, tabs and non-ASCII, a bridge name with `;`), nothing injected runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.reliability.rel_support import walk
from wizard import fixes
from wizard.lab import Lab
from wizard.lab.routeros.script import split_commands, tokenize

pytestmark = pytest.mark.lab

HOSTILE_COMMENTS = (
    "x;/system identity set name=PWNED",
    'a "quoted" comment with spaces, $HOME and a \\ backslash',
    "café ünïcødé\ttab\nsecond line ]}[{",
)
HOSTILE_BRIDGE = "br;/system identity set name=PWNED2"
WINDOW_PAST = 3000.0 + 60.0  # the lab's dead-man window at time scale 100, and a minute


class Killed(BaseException):
    """fabwiz dying right after the change landed (nothing of it catches this)."""


def _make_hostile(lab: Lab) -> dict[str, str]:
    sw: Any = lab.world.switches["crs804"]
    for bridge in sw.tables["interface"]:
        if bridge.get("type") == "bridge" and bridge["name"] == "bridge":
            bridge["name"] = HOSTILE_BRIDGE
    for port in sw.tables["bridge-port"]:
        if port.get("bridge") == "bridge":
            port["bridge"] = HOSTILE_BRIDGE
    unused = [
        p
        for p in sw.tables["bridge-port"]
        if p.get("bridge") == HOSTILE_BRIDGE and p["interface"].startswith("qsfp56-dd-")
    ]
    assert len(unused) >= len(HOSTILE_COMMENTS)
    comments = {}
    for port, comment in zip(unused, HOSTILE_COMMENTS, strict=False):
        port["comment"] = comment
        comments[port["interface"]] = comment
    sw.recompute()
    return comments


async def test_hostile_comments_and_bridge_survive_the_switchs_own_rollback(
    tmp_path: Path,
) -> None:
    async with Lab("fault-switch-offload-split-cage", time_scale=100.0) as lab:
        comments = _make_hostile(lab)
        sw: Any = lab.world.switches["crs804"]
        identity = sw.tables["identity"][0]["name"]
        before_ports = sorted(
            (p["interface"], p["bridge"], p.get("comment", "")) for p in sw.tables["bridge-port"]
        )

        def die_after_change(wiring: Any) -> None:
            async def killed(_plan: Any) -> tuple[bool, str]:
                raise Killed

            wiring.engine._verify = killed

        with pytest.raises(Killed):
            await walk(lab, tmp_path, ["preflight", "offload"], tweak=die_after_change)
        # the change landed: the commented sub-ports are out of the bridge
        assert not [p for p in sw.tables["bridge-port"] if p["interface"] in comments]
        armed = [r for r in sw.tables["scheduler"] if r["name"].startswith("fabwiz-rb-")]
        assert len(armed) == 1
        # the armed script carries each hostile value as one quoted word: splitting it as
        # RouterOS does yields only the rollback's own commands
        commands = split_commands(armed[0]["on-event"])
        assert commands[0].startswith(":log warning")
        assert all(c.startswith(":do ") for c in commands[1:]), commands
        assert not any("identity" in tokenize(c)[0] for c in commands)
        # nobody disarms it: the switch's clock passes the window and its scheduler fires
        lab.world.set_clock(lab.world.now() + WINDOW_PAST)
        sw.tick()
        assert sw.tables["identity"][0]["name"] == identity
        after_ports = sorted(
            (p["interface"], p["bridge"], p.get("comment", "")) for p in sw.tables["bridge-port"]
        )
        assert after_ports == before_ports
        assert not [r for r in sw.tables["scheduler"] if r["name"].startswith("fabwiz-rb-")]
        errors = [e["message"] for e in sw.tables["log"] if "error" in e["topics"]]
        assert not errors, errors
        assert not [
            e for e in sw.tables["log"] if "step" in e["message"] and "failed" in e["message"]
        ]


async def test_rollback_script_is_idempotent_and_always_removes_its_entry(
    tmp_path: Path,
) -> None:
    async with Lab("fault-switch-offload-split-cage", time_scale=100.0) as lab:
        comments = _make_hostile(lab)
        sw: Any = lab.world.switches["crs804"]
        before = sorted(
            (p["interface"], p["bridge"], p.get("comment", "")) for p in sw.tables["bridge-port"]
        )

        def die_after_change(wiring: Any) -> None:
            async def killed(_plan: Any) -> tuple[bool, str]:
                raise Killed

            wiring.engine._verify = killed

        with pytest.raises(Killed):
            await walk(lab, tmp_path, ["preflight", "offload"], tweak=die_after_change)
        entry = next(r for r in sw.tables["scheduler"] if r["name"].startswith("fabwiz-rb-"))
        script = entry["on-event"]
        # one port is put back by hand before the rollback runs: its `add` meets a port that is
        # already there, is logged, and every later line still runs
        from wizard.lab.routeros.menus import BridgePortMenu

        first = sorted(comments)[0]
        BridgePortMenu().add(
            sw, {"bridge": HOSTILE_BRIDGE, "interface": first, "comment": comments[first]}
        )
        lab.world.set_clock(lab.world.now() + WINDOW_PAST)
        sw.tick()
        assert not [r for r in sw.tables["scheduler"] if r["name"] == entry["name"]]
        assert any("step" in e["message"] and "failed" in e["message"] for e in sw.tables["log"])
        # the same script run again changes nothing
        from wizard.lab.routeros import script as ros_script

        ros_script.run(sw, script, owner="again", now=lab.world.now())
        after = sorted(
            (p["interface"], p["bridge"], p.get("comment", "")) for p in sw.tables["bridge-port"]
        )
        assert sorted(after) == sorted(before)
        assert not [e for e in sw.tables["log"] if "error" in e["topics"]]


def test_unwritable_value_refuses_the_change() -> None:
    from wizard.model import ApiCommand, SwitchChange

    change = SwitchChange(
        "crs804",
        (ApiCommand("/interface/bridge/port", "remove", select=("interface", "p1")),),
        (
            ApiCommand(
                "/interface/bridge/port",
                "add",
                (("interface", "p1"), ("comment", "nul\x00byte")),
            ),
        ),
    )
    why = fixes.unwritable(change)
    assert why is not None and "NUL" in why and "nothing was changed" in why
