"""`fabwiz report`, `fabwiz replay`, `fabwiz resume` on a recorded session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from session_helpers import EXPORT_TEXT, RAIL, fix_session

from screens.cli import cli
from wizard.events import ProbeAnswered, SessionStarted, VerdictReached
from wizard.model import ProbeResult, Status, Verdict
from wizard.session import LOG_VERSION, SessionLog


@pytest.fixture
def session(tmp_path: Path) -> Path:
    log = SessionLog.create(tmp_path / "s")
    for ev in fix_session():
        log.write(ev)
    log.close()
    return log.folder


def test_report_markdown_to_stdout(session: Path) -> None:
    res = CliRunner().invoke(cli, ["report", str(session)])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("# fabwiz session report: 20261130T000000Z-abcdef12")
    assert (
        f"| {RAIL} | rail | 9.42 Gb/s | 109.20 Gb/s (in offload, before the last fix) |"
        in res.stdout
    )


def test_report_html_redacted_to_a_file(session: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    res = CliRunner().invoke(
        cli,
        ["report", str(session / "events.jsonl"), "--format", "html", "--redact", "-o", str(out)],
    )
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "spark1" not in page and "node-1" in page


def test_report_json(session: Path) -> None:
    res = CliRunner().invoke(cli, ["report", str(session), "--format", "json"])
    data = json.loads(res.stdout)
    assert data["fixes"][0]["export"]["contents"] == EXPORT_TEXT


def test_report_on_a_missing_session_exits_2_with_a_message(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "nope")])
    assert res.exit_code == 2
    assert "no session log at" in res.stderr and "Traceback" not in res.output


def test_report_on_a_future_log_exits_2_and_says_upgrade(tmp_path: Path) -> None:
    p = tmp_path / "events.jsonl"
    p.write_text(
        json.dumps(
            {
                "seq": 1,
                "type": "session_started",
                "at": 1.0,
                "log_version": LOG_VERSION + 5,
                "fabwiz_version": "3.0",
            }
        )
        + "\n"
    )
    res = CliRunner().invoke(cli, ["report", str(p)])
    assert res.exit_code == 2 and "upgrade fabwiz" in res.stderr


@pytest.fixture
def arp_check(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The real host.arp-sysctls check as the only registered one (whatever the registry has)."""
    import flows.replay

    try:
        from flows.checks.host_arp import CHECK
    except ImportError as exc:
        pytest.skip(f"flows.checks.host_arp not available yet: {exc}")
    monkeypatch.setattr(flows.replay, "registered_checks", lambda: (CHECK,))
    return CHECK


def _replayable(tmp_path: Path, status: Status, check: Any) -> Path:
    log = SessionLog.create(tmp_path / "r")
    log.write(
        SessionStarted(
            session_id="r",
            fabwiz_version="0.1.0",
            log_version=LOG_VERSION,
            command="check",
            nodes=("spark1",),
        )
    )
    log.write(
        ProbeAnswered(
            step="addressing",
            probe="sysctl_arp",
            result=ProbeResult(
                target="spark1",
                kind="ssh",
                command="sysctl",
                stdout="net.ipv4.conf.all.arp_ignore = 1\nnet.ipv4.conf.all.arp_announce = 2\n"
                "net.ipv4.conf.all.rp_filter = 2\n",
                exit_status=0,
            ),
        )
    )
    log.write(
        VerdictReached(
            step="addressing",
            verdict=Verdict(fault="host.arp-sysctls", status=status, summary="", check=check.id),
        )
    )
    log.close()
    return log.folder


def test_replay_exit_codes(tmp_path: Path, arp_check: Any) -> None:
    agree = CliRunner().invoke(
        cli, ["replay", str(_replayable(tmp_path / "a", Status.PASS, arp_check))]
    )
    assert agree.exit_code == 0, agree.output
    assert "agree" in agree.stdout
    differ = CliRunner().invoke(
        cli, ["replay", "--json", str(_replayable(tmp_path / "b", Status.FAIL, arp_check))]
    )
    assert differ.exit_code == 1, differ.output
    data = json.loads(differ.stdout)
    assert data["differences"] == 1 and data["rows"][0]["difference"] == "status fail -> pass"


def test_replay_without_checks_exits_2(session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import flows.replay
    from wizard.errors import FabwizError

    def unavailable(*_a: Any, **_k: Any) -> Any:
        raise flows.replay.ReplayUnavailable("this build has no check registry")

    monkeypatch.setattr(flows.replay, "replay_session", unavailable)
    res = CliRunner().invoke(cli, ["replay", str(session)])
    assert res.exit_code == 2 and "no check registry" in res.stderr
    assert issubclass(flows.replay.ReplayUnavailable, FabwizError)


def test_resume_hands_the_session_folder_to_the_composition_root(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import screens.compose

    seen: dict[str, Any] = {}

    def fake(folder: Path, **kw: Any) -> int:
        seen.update(folder=folder, **kw)
        return 1

    monkeypatch.setattr(screens.compose, "resume_fix", fake)
    res = CliRunner().invoke(cli, ["resume", str(session / "events.jsonl"), "--yes", "--json"])
    assert res.exit_code == 1
    assert seen == {"folder": session, "yes": True, "as_json": True, "break_stale_lock": False}


def test_replay_shows_target_names_as_plain_text(tmp_path: Path, arp_check: Any) -> None:
    """A target named with markup and an escape sequence (from the log) is shown as written,
    without the escape; `[/x]` crashed the replay table."""
    log = SessionLog.create(tmp_path / "h")
    log.write(
        SessionStarted(
            session_id="h", fabwiz_version="0.1.0", log_version=LOG_VERSION, command="check"
        )
    )
    evil = "spark1[/x][bold]\x1b[2J"
    log.write(
        VerdictReached(
            step="addressing",
            verdict=Verdict(
                fault="host.arp-sysctls",
                status=Status.FAIL,
                summary="",
                targets=(evil,),
                check=arp_check.id,
            ),
        )
    )
    log.close()
    res = CliRunner().invoke(cli, ["replay", str(log.folder)])
    assert res.exit_code == 1, res.exception  # the recorded fail replays as a pass
    assert "[/x]" in res.stdout and "\x1b" not in res.stdout  # the narrow column folds it
