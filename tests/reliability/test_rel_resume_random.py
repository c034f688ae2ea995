"""`fabwiz fix` SIGKILLed at a seeded random point, then `fabwiz resume`: it finishes healthy, with
nothing lost or doubled (tests/engine/test_engine_resume.py covers four chosen points).

A full `fix --lab crs804-three-bugs` run writes ~1,600 events at time scale 100; the kill lands
after a random number of them, so over the seeds it falls mid-probe, mid-export, mid-fix,
mid-measurement or mid-physical action. Set FABWIZ_REL_SEEDS=1,2,3,... for more cases.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

pytestmark = [pytest.mark.lab, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "screens.cli"]
SEEDS = [int(s) for s in os.environ.get("FABWIZ_REL_SEEDS", "8,2026").split(",") if s]


def _lines(path: Path) -> int:
    try:
        with path.open("rb") as fh:
            return sum(1 for _ in fh)
    except OSError:
        return 0


def _events(folder: Path) -> list[dict[str, object]]:
    out = []
    for line in (folder / "events.jsonl").read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a torn last line: resume copes with it
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_killed_at_a_random_point_resume_finishes(tmp_path: Path, seed: int) -> None:
    at = random.Random(seed).randrange(20, 1500)
    session = tmp_path / "session"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [*CLI, "fix", "--lab", "crs804-three-bugs", "--yes", "--json", "--time-scale", "100",
         "--session-dir", str(session)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if _lines(session / "events.jsonl") >= at:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, f"the run ended before event {at}"
    before = _events(session)
    killed_in = str(before[-1]["type"])
    done = subprocess.run(
        [*CLI, "resume", str(session), "--yes", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, f"killed after {killed_in} (#{at}): " + done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["healthy_after"] is True
    verified = {f["fault"] for f in result["fixes"] if f["verified"]}
    assert {"switch.offload-split-cage", "switch.qos-pfc-stall", "host.duplicate-ip"} <= verified
    after = _events(session)
    assert after[: len(before)] == before, "an event recorded before the kill was lost"
    seqs = [int(e["seq"]) for e in after]  # type: ignore[call-overload]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "a gap or a double in the log"
    assert after[-1]["type"] == "session_ended"
    applied = Counter(str(e["fix_id"]) for e in after if e["type"] == "fix_applied")
    rolled = {str(e["fix_id"]) for e in after if e["type"] == "fix_rolled_back"}
    for fix_id, count in applied.items():
        assert count == 1 or fix_id in rolled, f"{fix_id} applied {count} times"
