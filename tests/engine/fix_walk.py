"""`fabwiz fix --lab SCENARIO --yes --json` run as a user runs it (its own process, the lab's
servers on 127.0.0.1), for the tests that read what the walk recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def fix_walk(scenario: str, session_dir: Path, *, time_scale: float = 200) -> list[dict[str, Any]]:
    """The walk's session log, every event in order; the walk must end healthy. At
    `time_scale` (lab seconds per wall second): a walk that reads counters during a short
    event (a stalled test gives up after 3 lab seconds) needs it lower than the default."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "screens.cli",
            "fix",
            "--lab",
            scenario,
            "--yes",
            "--json",
            "--time-scale",
            f"{time_scale:g}",
            "--session-dir",
            str(session_dir),
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
    (log,) = session_dir.rglob("events.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]
