"""The TUI knows the session it records from its first event: the log pane says it started, and
the terminal is told the session and its two commands (the ticket's report, the resume) when the
TUI exits, the same as the session log's own first line says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_tui_early_connect import _until

from screens.app import FabwizApp
from screens.commands.run import WizardFactory
from wizard.lab import Lab

pytestmark = pytest.mark.lab


async def test_the_session_started_is_shown_and_named_at_exit(tmp_path: Path) -> None:
    async with Lab("healthy-2node-direct", time_scale=100.0) as lab:
        folder = tmp_path / "s"
        app = FabwizApp(WizardFactory(inventory=lab.inventory_path, session_dir=folder))
        assert app.exit_message() == ""  # nothing recorded yet: nothing to name
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(pilot, lambda: app.pending_choice is not None)
            first = json.loads((folder / "events.jsonl").open().readline())
            assert first["type"] == "session_started"
            started = app.view.started
            assert started is not None and started.session_id == first["session_id"]
            assert started.inventory_path == str(lab.inventory_path)
            said = [text for _at, _level, text in app.view.log]
            assert f"session {first['session_id']} started on {lab.inventory_path}" in said
            app.exit_session()
            await pilot.pause(0.2)
    assert app.exit_message().splitlines() == [
        f"fabwiz: session {first['session_id']}",
        f"  fabwiz report {folder}",
        f"  fabwiz resume {folder}",
    ]
