"""`fabwiz fix` killed with SIGKILL at several points, then `fabwiz resume`: the same end state as an
uninterrupted run, no event lost or doubled, no fix repeated once it was applied and verified."""

from __future__ import annotations

import json
import os
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


def _events(folder: Path) -> list[dict[str, object]]:
    path = folder / "events.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a torn last line: the resume must cope with it
    return out


def _kill_when(folder: Path, proc: subprocess.Popen[bytes], event_type: str, nth: int) -> bool:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if sum(1 for e in _events(folder) if e["type"] == event_type) >= nth:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize(
    ("event_type", "nth"),
    [
        ("export_taken", 1),  # after the first export, before the change
        ("fix_applied", 1),  # after the first switch change, before its verification ends
        ("bisection_concluded", 1),  # the direct-connect test skipped: preflight explains it
        ("fix_verified", 2),  # after the QoS fix verified, maybe before its disarm
    ],
)
def test_killed_fix_resumes_to_the_same_end(tmp_path: Path, event_type: str, nth: int) -> None:
    session = tmp_path / "session"
    # A dead-man window far longer than any stall of a loaded machine between the kill and the
    # resume: what is tested is what resume does with an armed entry, not how fast it gets there.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FABWIZ_ROLLBACK_WINDOW_S": "3600"}
    proc = subprocess.Popen(
        [
            *CLI,
            "fix",
            "--lab",
            "crs804-three-bugs",
            "--yes",
            "--json",
            "--time-scale",
            "100",
            "--session-dir",
            str(session),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    killed = _kill_when(session, proc, event_type, nth)
    assert killed, f"the run ended before its {nth}th {event_type}"
    before = _events(session)
    done = subprocess.run(
        [*CLI, "resume", str(session), "--yes", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1500:]
    result = json.loads(done.stdout)
    assert result["healthy_after"] is True
    assert result["not_proven"] == []  # the resumed walk did the reboot proof
    verified = {f["fault"] for f in result["fixes"] if f["verified"]}
    assert {"switch.offload-split-cage", "switch.qos-pfc-stall", "host.duplicate-ip"} <= verified
    assert min(result["measurements"]["rails_gbps"].values()) >= 100.0
    assert result["measurements"]["nccl_busbw"] >= 21.875

    after = _events(session)
    # Nothing recorded before the kill is lost, and numbering goes on without a gap or a double.
    assert after[: len(before)] == before
    seqs = [int(e["seq"]) for e in after]  # type: ignore[call-overload]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert any(e["type"] == "session_resumed" for e in after)
    # A fix applied and verified is never applied again.
    applied = Counter(str(e["fix_id"]) for e in after if e["type"] == "fix_applied")
    verified_ids = {str(e["fix_id"]) for e in after if e["type"] == "fix_verified" and e["ok"]}
    rolled = {str(e["fix_id"]) for e in after if e["type"] == "fix_rolled_back"}
    for fix_id, count in applied.items():
        if count > 1:
            assert fix_id in rolled, f"{fix_id} applied {count} times without a rollback between"
    assert verified_ids


def test_killed_fix_against_a_running_lab_resumes_there(tmp_path: Path) -> None:
    """The lab lives apart from fabwiz, as a real cluster does. `fabwiz fix -i` on the
    inventory a running `fabwiz lab` wrote, killed mid-way, then `fabwiz resume` against the same
    lab: the fabric kept the changes already made, and the session ends healthy without repeating
    a verified fix."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    inventory = tmp_path / "lab" / "inventory.yaml"
    # the three bugs, and a degraded CX7 the lab's hands must drain once they are fixed
    scenario = tmp_path / "three-bugs-and-a-degraded-cx7.yaml"
    scenario.write_text(
        "name: three-bugs-and-a-degraded-cx7\n"
        "topology: {nodes: 4, switches: [{model: CRS804-4DDQ}], cables_per_node: 2}\n"
        "faults:\n"
        "  - id: switch.offload-split-cage\n"
        "  - id: switch.qos-pfc-stall\n"
        "  - {id: host.duplicate-ip, nodes: [spark2, spark3]}\n"
        "  - {id: host.cx7-degraded, nodes: [spark3]}\n"
    )
    lab = subprocess.Popen(
        [
            *CLI,
            "lab",
            "--scenario",
            str(scenario),
            "--time-scale",
            "100",
            "--inventory-out",
            str(inventory),
            "--state",
            str(tmp_path / "lab" / "world.json"),
        ],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not inventory.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert inventory.exists(), "the lab wrote no inventory"
        assert "control:" in inventory.read_text()
        session = tmp_path / "session"
        fix = subprocess.Popen(
            [*CLI, "fix", "-i", str(inventory), "--yes", "--json", "--session-dir", str(session)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert _kill_when(session, fix, "fix_verified", 1)
        done = subprocess.run(
            [*CLI, "resume", str(session), "--yes", "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-1500:]
        result = json.loads(done.stdout)
        assert result["healthy_after"] is True
        after = _events(session)
        # The lab performed the physical action (the drain of the degraded CX7) itself.
        assert any(
            e["type"] == "physical_action_done" and e["performed_by"] == "lab" for e in after
        )
        applied = Counter(str(e["fix_id"]) for e in after if e["type"] == "fix_applied")
        first_verified = next(str(e["fix_id"]) for e in after if e["type"] == "fix_verified")
        assert applied[first_verified] == 1, "a fix verified before the kill was applied again"
    finally:
        lab.terminate()
        lab.wait(timeout=20)
