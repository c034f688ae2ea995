"""Report files are private, sessions are named by id, and a headless check says what it did
not measure."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from session_helpers import fix_session

from screens.cli import cli
from wizard.session import SessionLog, resolve_session_path


def test_report_file_is_written_0600_even_over_a_world_readable_one(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path / "s")
    for ev in fix_session():
        log.write(ev)
    log.close()
    out = tmp_path / "ticket.md"
    out.write_text("old")
    out.chmod(0o644)
    old = os.umask(0o022)
    try:
        res = CliRunner().invoke(cli, ["report", str(log.folder), "-o", str(out)])
    finally:
        os.umask(old)
    assert res.exit_code == 0, res.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert out.read_text().startswith("# fabwiz session report: ")


def test_a_bare_session_id_names_a_folder_of_the_default_sessions_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import wizard.session.files as session_mod

    monkeypatch.setattr(session_mod, "default_sessions_root", lambda: tmp_path)
    folder = tmp_path / "20261201T000000Z-abcdef12"
    folder.mkdir()
    (folder / "events.jsonl").write_text("")
    assert resolve_session_path("20261201T000000Z-abcdef12") == folder / "events.jsonl"


@pytest.mark.lab
def test_check_without_perf_says_bandwidth_was_not_measured() -> None:
    args = ["check", "--lab", "healthy-4node-crs804", "--time-scale", "1000"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[0].startswith(
        "configuration healthy; bandwidth not measured (run with --perf)"
    )
    res = CliRunner().invoke(cli, [*args, "--json"])
    data = json.loads(res.stdout)
    assert data["healthy"] is True and data["measured"] is False
