"""The environment misbehaves: a password that is an ordinary word must not corrupt the
evidence it is scrubbed from."""

from __future__ import annotations

import json
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
