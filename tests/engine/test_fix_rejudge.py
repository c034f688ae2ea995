"""After a verified fix, what the verification's sweep shows about the step's other faults
replaces what was judged before the change: no pre-fix verdict stays on the step as if current."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.lab


def test_the_offload_step_is_judged_again_after_its_fix(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "screens.cli",
            "fix",
            "--lab",
            "fault-switch-offload-split-cage",
            "--yes",
            "--json",
            "--time-scale",
            "200",
            "--session-dir",
            str(tmp_path / "s"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["healthy_after"] is True
    (log,) = (tmp_path / "s").rglob("events.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    applied = next(
        e["seq"]
        for e in events
        if e["type"] == "fix_applied" and e["fault"] == "switch.offload-split-cage"
    )
    lost = [
        e
        for e in events
        if e["type"] == "verdict_reached"
        and e["step"] == "offload"
        and e["verdict"]["fault"] == "switch.offload-lost"
    ]
    before = [e for e in lost if e["seq"] < applied]
    after = [e for e in lost if e["seq"] > applied]
    # before the change the loss was explained by the split cage; after it, the sweep that
    # verified the fix shows every fabric port with the H flag
    assert "explained by switch.offload-split-cage" in before[-1]["verdict"]["summary"]
    assert after, [e["seq"] for e in lost]
    assert after[-1]["verdict"]["status"] == "pass"
    assert "hardware-offloaded (H flag)" in after[-1]["verdict"]["summary"]
