"""Trust on first use is said and kept; the lab keeps its secrets to itself."""

from __future__ import annotations

import io
import stat
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard.events import Note
from wizard.lab import Lab
from wizard.lab.lab import MARKER

pytestmark = pytest.mark.lab


async def test_newly_accepted_host_keys_are_shown_and_recorded(tmp_path: Path) -> None:
    async with Lab("healthy-2node-direct", time_scale=100.0) as lab:
        lab.known_hosts_path.write_text("")  # nothing known yet: first use
        events: list[Any] = []
        wiring = await open_wizard(
            operator=TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False),
            sinks=[events.append],
            lab_object=lab,
            session_dir=tmp_path / "session",
            accept_new_host_keys=True,
            fsync=False,
        )
        try:
            for node in lab.world.nodes:
                assert (await wiring.fabric.run(node, "hostname")).ok
        finally:
            await wiring.close()
        notes = [e.text for e in events if isinstance(e, Note) and "SSH host key" in e.text]
        assert sorted(n.split(":")[0] for n in notes) == sorted(lab.world.nodes)
        assert all("SHA256:" in n and "recorded" in n for n in notes)
        logged = (tmp_path / "session" / "events.jsonl").read_text()
        assert all(n.split(": ")[-1] in logged for n in notes)  # the fingerprint is in the log


async def test_the_lab_never_chmods_a_folder_it_did_not_create(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like the system temp folder
    planted = shared / "id_ed25519"
    planted.write_text("not a key of the lab's")
    async with Lab("healthy-2node-direct", directory=shared, time_scale=100.0) as lab:
        assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
        assert lab.directory.parent == shared and lab.directory != shared
        assert stat.S_IMODE(lab.directory.stat().st_mode) == 0o700
        assert lab.key_path.parent == lab.directory and planted.read_text().startswith("not")
        assert (lab.directory / MARKER).is_file()
        # the inventory sits where it was asked for and points into the private folder
        assert lab.inventory_path.parent == shared
        assert lab.directory.name in lab.inventory_path.read_text()
    own = tmp_path / "own"
    async with Lab("healthy-2node-direct", directory=own, time_scale=100.0) as lab:
        assert lab.directory == own and stat.S_IMODE(own.stat().st_mode) == 0o700
        first_key = (lab.directory / "id_ed25519.pub").read_text()
    async with Lab("healthy-2node-direct", directory=own, time_scale=100.0) as lab:
        assert lab.directory == own  # restarted in its own folder: the same keys
        assert (lab.directory / "id_ed25519.pub").read_text() == first_key
