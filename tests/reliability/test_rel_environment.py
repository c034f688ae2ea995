"""The environment misbehaves: a password that is an ordinary word must not corrupt the
evidence it is scrubbed from."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from rel_support import walk

from wizard import fixes
from wizard.events import ExportTaken
from wizard.lab import Lab
from wizard.lab.lab import MARKER
from wizard.lab.routeros.export import render_export
from wizard.session import SecretScrubber

pytestmark = pytest.mark.lab


def test_a_common_word_password_is_scrubbed_where_a_password_is_written_only() -> None:
    s = SecretScrubber(["bridge"])
    text = "/interface bridge\nadd name=bridge\n=password=bridge\n"
    assert s.scrub(text) == "/interface bridge\nadd name=bridge\n=password=«secret»\n"
    assert s.scrub_json({"password": "bridge", "name": "bridge"}) == {
        "password": "«secret»",
        "name": "bridge",
    }
    strong = SecretScrubber(["Xk2!pw-long"])
    assert strong.scrub("said Xk2!pw-long twice: Xk2!pw-long") == "said «secret» twice: «secret»"


async def test_a_lab_session_with_a_common_word_password_keeps_its_evidence(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "lab"
    folder.mkdir(mode=0o700)
    (folder / MARKER).write_text("fabwiz lab folder\n")
    (folder / "switch-crs804.password").write_text("bridge\n")
    async with Lab("fault-switch-offload-split-cage", directory=folder, time_scale=100.0) as lab:
        assert lab.switch_passwords["crs804"] == "bridge"
        w = await walk(lab, tmp_path, ["preflight", "offload"], traffic=False)
        sw: Any = lab.world.switches["crs804"]
        exports = [e for e in w.of(ExportTaken) if e.purpose == "pre-fix"]
        assert exports
        logged = [
            json.loads(line)
            for line in (tmp_path / "session" / "events.jsonl").read_text().splitlines()
        ]
        kept = next(r for r in logged if r["type"] == "export_taken")["contents"]
        assert "«secret»" not in kept and "/interface bridge" in kept
        assert fixes.same_config(kept, exports[0].contents)
        assert "add bridge=bridge" in render_export(sw)
        assert "password=bridge" not in (tmp_path / "session" / "events.jsonl").read_text()


def test_a_keyring_without_backend_is_a_clear_inventory_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import keyring
    from click.testing import CliRunner
    from keyring.backends import fail

    from screens.cli import cli

    inv = tmp_path / "fabric.yaml"
    inv.write_text(
        "nodes: [{name: spark1, host: 127.0.0.1, port: 1}]\n"
        "switches:\n  - {name: crs804, host: 127.0.0.1, port: 1, password: {keyring: fabwiz}}\n"
    )
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        res = CliRunner().invoke(cli, ["fix", "-i", str(inv), "--session-dir", str(tmp_path / "s")])
    finally:
        keyring.set_keyring(previous)
    out = res.output + (res.stderr if res.stderr_bytes is not None else "")
    assert res.exit_code == 2, out
    assert "Traceback" not in out and "password.keyring" in out and "no usable keyring" in out


def test_disk_full_mid_fix_is_a_clear_message_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    import wizard.session
    from screens.compose import run_fix_command

    real = wizard.session.writer._write_all
    state = {"armed": False}

    def write(fd: int, data: bytes) -> None:
        if b'"type":"rollback_armed"' in data.replace(b" ", b""):
            state["armed"] = True  # the disk fills right after the rollback is armed
        elif state["armed"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data)

    monkeypatch.setattr(wizard.session.writer, "_write_all", write)
    code = run_fix_command(
        inventory=None,
        lab="fault-switch-offload-split-cage",
        yes=True,
        as_json=False,
        session_dir=tmp_path / "s",
        accept_new_host_keys=False,
        time_scale=100.0,
    )
    out = capsys.readouterr()
    text = out.out + out.err
    flat = " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())  # the panel's wrapping undone
    assert state["armed"]
    assert code == 2, text[-2000:]
    assert "Traceback" not in text
    assert "No space left on device" in flat and "--session-dir" in flat
    assert "dead-man rollback" in flat  # what happens to the switch now


def test_a_read_only_session_folder_on_resume_is_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    import wizard.session
    from screens.compose import resume_fix
    from wizard.session import SessionLog

    log = SessionLog.create(tmp_path / "s", fsync=False)
    log.start("fix", inventory_digest="", inventory_path="", scenario="healthy-2node-direct",
              nodes=["spark1", "spark2"], switches=[], options={"lab": True})  # fmt: skip
    log.close()
    real_open = wizard.session.files.os.open

    def read_only(path: Any, flags: int, *a: Any, **kw: Any) -> int:
        if flags & wizard.session.files.os.O_WRONLY and str(path).endswith("events.jsonl"):
            raise OSError(errno.EROFS, "Read-only file system")  # as a read-only mount says
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(wizard.session.files.os, "open", read_only)
    code = resume_fix(tmp_path / "s", yes=True, as_json=False)
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 2, text
    assert "Traceback" not in text and "Read-only file system" in text and "writable" in text
