"""The session log on disk: one fsynced line per event, torn tails, versions, modes, secrets."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from session_helpers import ROOT, SECRET, T0, one_of_each

from wizard.errors import SessionLogError
from wizard.events import EVENT_TYPES, ExportTaken, Note, ProbeAnswered, RailSampled
from wizard.model import ProbeResult
from wizard.session import (
    LAB_STATE_NAME,
    LOG_NAME,
    LOG_VERSION,
    SessionLog,
    load_session,
)


def _write(tmp_path: Path, events: list, **kw: object) -> SessionLog:
    log = SessionLog.create(tmp_path / "s", **kw)  # type: ignore[arg-type]
    for ev in events:
        log.write(ev)
    log.close()
    return log


def test_every_event_type_round_trips_through_the_log(tmp_path: Path) -> None:
    events = one_of_each()
    assert {type(e) for e in events} == set(EVENT_TYPES.values())  # one of each, really
    log = _write(tmp_path, events)
    persisted = [e for e in events if type(e).persist]
    loaded = load_session(log.folder)
    assert list(loaded.events) == persisted
    assert loaded.seqs == tuple(range(1, len(persisted) + 1))
    assert not loaded.torn_tail and loaded.warnings == ()
    lines = log.path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(persisted)
    assert {json.loads(x)["type"] for x in lines} == set(EVENT_TYPES) - {
        "rail_sampled",
        "traffic_planned",
    }
    first = json.loads(lines[0])
    assert first["seq"] == 1 and first["type"] == "session_started"
    assert first["log_version"] == LOG_VERSION and first["at"] == T0
    # The raw output survives byte for byte, newlines included, on one line.
    probe = next(e for e in loaded.events if isinstance(e, ProbeAnswered))
    assert probe.result.stderr == "warning: x\n"
    assert probe.result.duration_s == 0.125


def test_each_line_is_the_json_text_of_its_record_as_earlier_logs_were_written(
    tmp_path: Path,
) -> None:
    events = [e for e in one_of_each() if type(e).persist]
    log = _write(tmp_path, events)
    lines = log.path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == len(events) + 1
    for seq, (event, line) in enumerate(zip(events, lines, strict=False), start=1):
        record = {"seq": seq, **event.to_json()}
        # byte for byte what `json.dumps(..., ensure_ascii=False, default=str)` wrote
        assert line == json.dumps(record, ensure_ascii=False, default=str).encode(), event.type


def test_non_persisted_events_are_skipped_and_get_no_seq(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path / "s")
    assert log.write(RailSampled(node="spark1", netdev="enp1s0f0np0", gbps=97.5)) is None
    log.start("check", nodes=["spark1"])
    assert log.write(Note(level="info", text="x")) == 2
    log.close()
    assert [json.loads(x)["type"] for x in log.path.read_text().splitlines()] == [
        "session_started",
        "note",
    ]


def test_each_write_is_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = SessionLog.create(tmp_path / "s")
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    log.start("fix")
    log.write(Note(level="info", text="one"))
    log.write(RailSampled(node="a", netdev="b", gbps=1.0))
    assert len(calls) == 2
    log.close()


_KILLED_WRITER = """
import os, signal, sys
from wizard.session import SessionLog
from wizard.events import Note
log = SessionLog.create(sys.argv[1])
log.start("fix", nodes=["spark1"])
for i in range(25):
    log.write(Note(level="info", text=f"line {i}"))
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_lines_written_before_a_sigkill_all_survive(tmp_path: Path) -> None:
    folder = tmp_path / "killed"
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, str(folder)],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr
    loaded = load_session(folder)
    assert loaded.seqs == tuple(range(1, 27))
    assert [e.text for e in loaded.events[1:]] == [f"line {i}" for i in range(25)]  # type: ignore[attr-defined]
    assert not loaded.torn_tail


def test_a_torn_last_line_loads_the_rest_and_says_so(tmp_path: Path) -> None:
    log = _write(tmp_path, one_of_each()[:5])
    with log.path.open("ab") as fh:
        fh.write(b'{"seq": 6, "type": "note", "at": 1795996800.0, "level": "in')
    loaded = load_session(log.folder)
    assert loaded.torn_tail is True
    assert len(loaded.events) == 5 and loaded.last_seq == 5
    assert loaded.torn_text.startswith('{"seq": 6')
    assert any("cut mid-write" in w for w in loaded.warnings)


def test_a_tail_of_nul_bytes_after_power_loss_is_a_torn_tail(tmp_path: Path) -> None:
    log = _write(tmp_path, one_of_each()[:3])
    with log.path.open("ab") as fh:
        fh.write(b"\x00" * 40 + b"\n" + b'{"seq":4,"ty')
    loaded = load_session(log.path)  # the events.jsonl path works as well as the folder
    assert loaded.torn_tail and len(loaded.events) == 3


def test_reopen_after_a_torn_line_cuts_it_aside_and_continues_numbering(tmp_path: Path) -> None:
    log = _write(tmp_path, one_of_each()[:4])
    with log.path.open("ab") as fh:
        fh.write(b'{"seq": 5, "type": "no')
    log2, loaded = SessionLog.reopen(log.folder)
    assert loaded.torn_tail and loaded.last_seq == 4
    assert log2.write(Note(level="info", text="resumed")) == 5
    log2.close()
    again = load_session(log.folder)
    assert not again.torn_tail and again.seqs == (1, 2, 3, 4, 5)
    assert again.events[-1] == Note(at=again.events[-1].at, level="info", text="resumed")
    assert (log.folder / (LOG_NAME + ".torn")).read_text() == '{"seq": 5, "type": "no\n'


def test_a_damaged_line_in_the_middle_is_refused(tmp_path: Path) -> None:
    log = _write(tmp_path, one_of_each()[:4])
    lines = log.path.read_text().splitlines()
    lines[1] = lines[1][:20]
    log.path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SessionLogError, match="line 2 is damaged"):
        load_session(log.folder)


def test_a_log_from_a_future_version_is_refused_with_what_to_do(tmp_path: Path) -> None:
    log = _write(tmp_path, one_of_each()[:3])
    lines = log.path.read_text().splitlines()
    first = json.loads(lines[0])
    first["log_version"] = LOG_VERSION + 1
    first["fabwiz_version"] = "9.0.0"
    lines[0] = json.dumps(first)
    lines.append(json.dumps({"seq": 4, "type": "quantum_entangled", "at": 1.0}))
    log.path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SessionLogError) as err:
        load_session(log.folder)
    text = str(err.value)
    assert f"session log version {LOG_VERSION + 1}" in text
    assert "fabwiz 9.0.0" in text and f"up to {LOG_VERSION}" in text
    assert "upgrade fabwiz" in text


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "empty"),
        (b"hello world\nthis is a shopping list\n", "no line is a fabwiz event record"),
        (b'{"seq": 1, "type": "note", "at": 1.0, "level": "info", "text": "x"}\n', "starts with"),
        (b'{"seq": 1, "type": "session_started", "at": 1.0}\n', "no log_version"),
        (b"[1, 2, 3]\n", "no line is a fabwiz event record"),
    ],
)
def test_a_file_that_is_not_a_fabwiz_log_gets_a_clear_error(
    tmp_path: Path, content: bytes, why: str
) -> None:
    p = tmp_path / "events.jsonl"
    p.write_bytes(content)
    with pytest.raises(SessionLogError, match="not a fabwiz session log") as err:
        load_session(p)
    assert why in str(err.value)


def test_a_missing_session_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(
        SessionLogError, match="no session log at " + re.escape(str(tmp_path / "nope"))
    ):
        load_session(tmp_path / "nope")


def test_doubled_seq_numbers_are_reported(tmp_path: Path) -> None:
    log = _write(tmp_path, one_of_each()[:3])
    lines = log.path.read_text().splitlines()
    log.path.write_text("\n".join([*lines, lines[-1]]) + "\n")
    loaded = load_session(log.folder)
    assert any("seq 3 does not follow 3" in w for w in loaded.warnings)


def test_folder_and_files_are_private_to_the_owner(tmp_path: Path) -> None:
    log = SessionLog.create(root=tmp_path / "sessions")
    log.start("demo")
    log.save_lab_state({"nodes": {"spark1": {"boot_id": "b1"}}})
    log.close()
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}", log.folder.name)
    assert stat.S_IMODE(log.folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(log.path.stat().st_mode) == 0o600
    lab = log.folder / LAB_STATE_NAME
    assert stat.S_IMODE(lab.stat().st_mode) == 0o600
    assert json.loads(lab.read_text()) == {"nodes": {"spark1": {"boot_id": "b1"}}}
    assert sorted(p.name for p in log.folder.iterdir()) == [LOG_NAME, LAB_STATE_NAME]
    assert load_session(log.folder).lab_state() == {"nodes": {"spark1": {"boot_id": "b1"}}}


def test_an_existing_permissive_session_dir_is_tightened(tmp_path: Path) -> None:
    d = tmp_path / "given"
    d.mkdir(mode=0o755)
    d.chmod(0o755)
    SessionLog.create(d).close()
    assert stat.S_IMODE(d.stat().st_mode) == 0o700


def test_default_folder_is_under_the_user_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import platformdirs

    monkeypatch.setattr(platformdirs, "user_state_path", lambda app: tmp_path / "state" / app)
    log = SessionLog.create()
    log.close()
    assert log.folder.parent == tmp_path / "state" / "fabwiz" / "sessions"


def test_create_refuses_a_folder_that_already_holds_a_session(tmp_path: Path) -> None:
    log = _write(tmp_path, one_of_each()[:1])
    with pytest.raises(SessionLogError, match="already holds a session log") as err:
        SessionLog.create(log.folder)
    assert "fabwiz resume" in str(err.value)


def test_lab_state_replacement_is_atomic_and_leaves_no_temp_file(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path / "s")
    log.save_lab_state({"v": 1})
    log.save_lab_state({"v": 2})
    log.close()
    assert json.loads((log.folder / LAB_STATE_NAME).read_text()) == {"v": 2}
    assert not [p for p in log.folder.iterdir() if p.name.endswith(".tmp")]


def test_a_registered_secret_never_reaches_the_disk(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path / "s", secrets=["other-secret"])
    log.add_secret(SECRET + "\n")  # as read from a password file
    log.start("fix", options={"password": SECRET, SECRET: "as a key"})
    log.write(Note(level="error", text=f"login failed for admin/{SECRET}"))
    log.write(
        ProbeAnswered(
            step="preflight",
            probe="x",
            result=ProbeResult(
                target="crs804",
                kind="api",
                command="/user print",
                rows=({"name": "admin", "password": SECRET},),
                error=f"trap: {SECRET}",
            ),
        )
    )
    log.write(
        ExportTaken(
            step="offload",
            switch="crs804",
            file="x.rsc",
            contents=f"/user add name=fabwiz password={SECRET}\n",
            sha256="0" * 64,
        )
    )
    log.save_lab_state({"users": {"admin": SECRET}})
    log.close()
    for p in log.folder.iterdir():
        data = p.read_bytes()
        assert SECRET.encode() not in data, p.name
        assert b"other-secret" not in data
    text = log.path.read_text()
    assert text.count("«secret»") == 6
    loaded = load_session(log.folder)
    note = loaded.events[1]
    assert isinstance(note, Note) and note.text == "login failed for admin/«secret»"


def test_a_session_in_use_cannot_be_reopened_by_a_second_writer(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path / "s")
    log.start("fix")
    with pytest.raises(SessionLogError, match="in use by another fabwiz process"):
        SessionLog.reopen(log.folder)
    log.close()
    log2, loaded = SessionLog.reopen(log.folder)
    assert loaded.last_seq == 1 and log2.next_seq == 2
    log2.close()


def test_a_failed_write_leaves_no_half_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = SessionLog.create(tmp_path / "s")
    log.start("fix")
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        if len(data) > 10:
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(SessionLogError, match="No space left on device"):
        log.write(Note(level="info", text="this will not fit"))
    monkeypatch.undo()
    assert log.write(Note(level="info", text="fits")) == 2
    log.close()
    loaded = load_session(log.folder)
    assert loaded.seqs == (1, 2) and not loaded.torn_tail and loaded.warnings == ()


def test_secrets_are_scrubbed_in_their_escaped_forms_too(tmp_path: Path) -> None:
    secret = 'pa"ss$w?rd\\x y'
    log = SessionLog.create(tmp_path / "s", secrets=[secret])
    log.start("fix")
    log.write(
        ExportTaken(
            step="persist",
            switch="crs804",
            file="golden.rsc",
            contents='/user add name=x password="pa\\"ss\\$w\\?rd\\\\x y"\n',
            sha256="0" * 64,
        )
    )
    log.write(Note(level="info", text=json.dumps({"password": secret})))
    log.write(Note(level="info", text="https://api/?p=pa%22ss%24w%3Frd%5Cx%20y"))
    log.close()
    text = log.path.read_text()
    assert "ss$w" not in text and "ss\\\\$w" not in text and "ss%24w" not in text
    assert text.count("«secret»") == 3


_ENDLESS_WRITER = """
import sys
from wizard.session import SessionLog
from wizard.events import Note
log = SessionLog.create(sys.argv[1]) if sys.argv[2] == "new" else SessionLog.reopen(sys.argv[1])[0]
if sys.argv[2] == "new":
    log.start("fix")
i = 0
while True:
    log.write(Note(level="info", text=f"{sys.argv[2]} {i} " + "x" * 300))
    if i == int(sys.argv[3]):
        print("ready", flush=True)
    i += 1
"""


def test_killed_at_several_points_and_reopened_no_event_lost_or_doubled(tmp_path: Path) -> None:
    folder = tmp_path / "k"
    for round_, mode in enumerate(["new", "resume", "resume"]):
        proc = subprocess.Popen(
            [sys.executable, "-c", _ENDLESS_WRITER, str(folder), mode, str(20 + 15 * round_)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        proc.kill()  # SIGKILL mid-stream: possibly in the middle of a line
        proc.wait()
        loaded = load_session(folder)
        assert loaded.seqs == tuple(range(1, len(loaded.seqs) + 1))
        assert not [w for w in loaded.warnings if "seq" in w]
    texts = [e.text.split(" ")[0] for e in loaded.events[1:]]  # type: ignore[attr-defined]
    assert texts.count("new") >= 21 and texts.count("resume") >= 36 + 51


def test_session_dir_holding_other_files_gets_a_fresh_session_folder_inside(
    tmp_path: Path,
) -> None:
    d = tmp_path / "tickets"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    mode = stat.S_IMODE(d.stat().st_mode)
    log = SessionLog.create(d)
    log.close()
    assert log.folder.parent == d and log.folder.name == log.session_id
    assert stat.S_IMODE(d.stat().st_mode) == mode  # the user's folder is left as it was
    assert stat.S_IMODE(log.folder.stat().st_mode) == 0o700
    assert (d / "notes.txt").read_text() == "mine"
    empty = tmp_path / "empty"
    empty.mkdir()
    log2 = SessionLog.create(empty)
    log2.close()
    assert log2.folder == empty and re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}", log2.session_id)


def test_resumed_record_counts_what_was_loaded(tmp_path: Path) -> None:
    log = _write(tmp_path, one_of_each()[:4])
    with log.path.open("ab") as fh:
        fh.write(b'{"seq": 5, "ty')
    log2, loaded = SessionLog.reopen(log.folder)
    ev = log2.resumed(loaded, "offload")
    log2.close()
    assert (ev.from_step, ev.events_loaded, ev.torn_tail) == ("offload", 4, True)
    last = load_session(log.folder).events[-1]
    assert last == ev


def test_a_log_cut_during_its_first_write_says_so(tmp_path: Path) -> None:
    p = tmp_path / "events.jsonl"
    p.write_bytes(b'{"seq": 1, "type": "session_started", "at": 179')
    with pytest.raises(SessionLogError, match="only a torn first line"):
        load_session(p)


def test_a_common_word_password_is_scrubbed_where_a_password_is_written_only(
    tmp_path: Path,
) -> None:
    # "bridge" is also a word of every export: it is replaced under a password key or after
    # `password=`, and left alone elsewhere (the record still takes the scrubbing path)
    log = SessionLog.create(tmp_path / "s", secrets=["bridge"])
    log.start("fix", options={"password": "bridge"})
    log.write(Note(level="info", text="/user add name=x password=bridge; /interface bridge print"))
    log.write(Note(level="info", text="no secret here"))
    log.close()
    lines = log.path.read_text().splitlines()
    assert '"password": "«secret»"' in lines[0]
    assert "password=«secret»; /interface bridge print" in lines[1]
    assert json.loads(lines[2])["text"] == "no secret here"
