"""Control characters and non-ASCII in switch comments: the lab's export writes them as RouterOS
does (7-bit text, `\\1B` / `\\C3\\A9` hex escapes), fabwiz's export parser reads them back exactly,
and a real dead-man rollback leaves the switch equal to its pre-fix export, escapes and all."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from tests.reliability.rel_support import walk
from wizard import fixes
from wizard.lab import Lab
from wizard.lab.routeros import script as ros_script
from wizard.lab.routeros.export import quote, render_export
from wizard.parsers.routeros import parse_export
from wizard.rosquote import unquote

pytestmark = pytest.mark.lab

ESCAPE_COMMENTS = (
    "\x1b[2J\x1b]0;owned\x07[bold red]APPLIED OK[/]",
    "bell\x07 del\x7f nul-free \x01\x1f and a \\ backslash",
    "café \u202e ünï\tcødé\r\nnext line \U0001f600",
)
WINDOW_PAST = 3000.0 + 60.0  # the lab's dead-man window at time scale 100, and a minute


class Killed(BaseException):
    """fabwiz dying right after the change landed."""


def _comments_of(export: str, only: Any = None) -> dict[str, str]:
    return {
        it.args["interface"]: it.args["comment"]
        for it in parse_export(export).export
        if it.menu == "/interface bridge port"
        and "comment" in it.args
        and (only is None or it.args["interface"] in only)
    }


def test_export_quoting_is_7_bit_and_reads_back_exactly() -> None:
    assert quote("a\x1bb") == '"a\\1Bb"'
    assert quote("é") == '"\\C3\\A9"'
    assert quote("\x7f\x01") == '"\\7F\\01"'
    assert quote('tab\there "q" $x') == '"tab\\there \\"q\\" \\$x"'
    for value in ESCAPE_COMMENTS:
        word = quote(value)
        assert all(0x20 <= ord(c) < 0x7F for c in word), word  # printable ASCII only
        assert unquote(word) == value
        assert ros_script.tokenize(f"comment={word}") == [f"comment={value}"]


async def test_hostile_comments_round_trip_through_a_real_rollback(tmp_path: Path) -> None:
    async with Lab("fault-switch-offload-split-cage", time_scale=100.0) as lab:
        sw: Any = lab.world.switches["crs804"]
        moved = [
            p
            for p in sw.tables["bridge-port"]
            if p.get("bridge") == "bridge" and p["interface"].startswith("qsfp56-dd-")
        ]
        assert len(moved) >= len(ESCAPE_COMMENTS)
        comments = {}
        for port, comment in zip(moved, ESCAPE_COMMENTS, strict=False):
            port["comment"] = comment
            comments[port["interface"]] = comment
        sw.recompute()
        before_ports = sorted(
            (p["interface"], p["bridge"], p.get("comment", "")) for p in sw.tables["bridge-port"]
        )

        exported = render_export(sw)
        assert "\\1B[2J\\1B]0;owned\\07" in exported and "caf\\C3\\A9" in exported
        assert not [c for c in exported if (ord(c) < 0x20 and c != "\n") or ord(c) >= 0x7F]
        on_switch = {
            p["interface"]: p["comment"] for p in sw.tables["bridge-port"] if "comment" in p
        }
        assert _comments_of(exported) == on_switch

        def die_after_change(wiring: Any) -> None:
            async def killed(_plan: Any) -> tuple[bool, str]:
                raise Killed

            wiring.engine._verify = killed

        with pytest.raises(Killed):
            await walk(lab, tmp_path, ["preflight", "offload"], tweak=die_after_change)
        assert not [p for p in sw.tables["bridge-port"] if p["interface"] in comments]
        pre = next(
            f
            for f in sw.tables["file"]
            if f["name"].startswith("fabwiz-") and "-offload-" in f["name"]
        )
        # the export fabwiz took before the change holds every comment exactly
        assert _comments_of(pre["contents"], comments) == comments

        lab.world.set_clock(lab.world.now() + WINDOW_PAST)
        sw.tick()  # nobody disarmed: the switch's own scheduler runs the rollback
        after_ports = sorted(
            (p["interface"], p["bridge"], p.get("comment", "")) for p in sw.tables["bridge-port"]
        )
        assert after_ports == before_ports
        assert not [e["message"] for e in sw.tables["log"] if "error" in e["topics"]]

        # what resume compares: the switch now equals its pre-fix export, read back via the API
        wiring = await open_wizard(
            operator=TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False),
            sinks=[],
            lab_object=lab,
            session_dir=tmp_path / "check",
            fsync=False,
        )
        try:
            api = wiring.fabric.api("crs804")
            after = await fixes.take_export(api, "crs804", "fabwiz-after")
            assert after.verified, after.error
            assert _comments_of(after.contents, comments) == comments
            assert fixes.same_config(pre["contents"], after.contents)
            # and a restore that got one control character wrong is told apart
            port = next(p for p in sw.tables["bridge-port"] if p["interface"] in comments)
            port["comment"] = port["comment"].replace("\x1b", "\x1c")
            wrong = await fixes.take_export(api, "crs804", "fabwiz-after2")
            assert wrong.verified and not fixes.same_config(pre["contents"], wrong.contents)
        finally:
            await wiring.fabric.close()
            wiring.log.close()
