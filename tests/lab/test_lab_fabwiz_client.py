"""The lab is fabwiz's first strict client check: nothing fabwiz sends in a walk is refused.

A full walk of the flagship scenario (every probe, every fix, every measurement) runs against
the lab's servers; every command line a node's tools refused (unknown command, unknown option,
bad value) is in `World.refused`, and must stay empty.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard.events import Event, MeasurementTaken
from wizard.lab import Lab

pytestmark = pytest.mark.lab


@pytest.mark.slow
async def test_every_command_of_a_full_walk_is_accepted(tmp_path: Path) -> None:
    events: list[Event] = []
    operator = TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False)
    async with Lab("crs804-three-bugs", time_scale=100.0) as lab:
        wiring = await open_wizard(
            operator=operator,
            sinks=[events.append],
            lab=None,
            lab_object=lab,
            session_dir=tmp_path / "session",
            time_scale=100.0,
            fsync=False,
        )
        try:
            result = await wiring.engine.run()
        finally:
            await wiring.close()
        assert result.fixes, "the walk fixed nothing: it did not exercise the lab"
        assert any(isinstance(e, MeasurementTaken) for e in events)
        assert lab.world.refused == []


async def test_a_refused_command_is_recorded() -> None:
    async with Lab("healthy-2node-direct", time_scale=100.0) as lab:
        from wizard.lab.hostcmds import Host
        from wizard.lab.perftest import Registry

        host = Host(lab.world, lab.world.nodes["spark1"], Registry())
        sink: list[str] = []
        assert await host.run("ib_write_bw --gid_index 3", sink.append, sink.append) == 1
        assert await host.run("nosuchtool -x", sink.append, sink.append) == 127
        assert lab.world.refused == [
            ("spark1", "ib_write_bw --gid_index 3"),
            ("spark1", "nosuchtool -x"),
        ]
