"""`fabwiz fix --lab SCENARIO --yes --json` run as a user runs it (its own process, the lab's
servers on 127.0.0.1), for the tests that read what the walk recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.own_process import python


def fix_walk(scenario: str, session_dir: Path, *, time_scale: float = 200) -> list[dict[str, Any]]:
    """The walk's session log, every event in order; the walk must end healthy. At
    `time_scale` (lab seconds per wall second): a walk that reads counters during a short
    event (a stalled test gives up after 0.54 lab seconds) needs it lower than the default."""
    proc = python(
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
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["healthy_after"] is True
    assert result["not_proven"] == []  # the lab's hands rebooted a node for the proof
    (log,) = session_dir.rglob("events.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]
