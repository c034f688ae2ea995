"""The session log's durability rule: what precedes or records a change is fsynced before the
next action; observations are fsynced in batches (on a short timer, and at close)."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard import fixes, session
from wizard.events import (
    FixApplied,
    MeasurementTaken,
    Note,
    OperatorAnswered,
    ProbeAnswered,
    ProbeSent,
    VerdictReached,
)
from wizard.model import Measurement, ProbeResult, Status, Verdict
from wizard.session import SessionLog


class SyncRecorder:
    """Counts fsyncs of one file and remembers how many bytes the last one covered."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
        self.path = path
        self.calls = 0
        self.synced = 0
        real = os.fsync

        def fsync(fd: int) -> None:
            real(fd)
            if os.path.samestat(os.fstat(fd), self.path.stat()):
                self.calls += 1
                self.synced = os.fstat(fd).st_size

        monkeypatch.setattr(os, "fsync", fsync)

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    def durable(self) -> bool:
        return self.synced == self.size


def _probe(i: int) -> list[Any]:
    res = ProbeResult(target="spark1", kind="ssh", command=f"ethtool e{i}", stdout="ok\n")
    return [
        ProbeSent(step="preflight", target="spark1", command=f"ethtool e{i}"),
        ProbeAnswered(step="preflight", probe=f"ethtool:e{i}", result=res),
    ]


def test_observations_are_batched_and_a_change_event_syncs_them_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session.writer, "BATCH_FSYNC_S", 3600.0)  # no timer inside this test
    log = SessionLog.create(tmp_path / "s")
    rec = SyncRecorder(monkeypatch, log.path)
    log.start("fix", nodes=["spark1"])
    assert (rec.calls, rec.durable()) == (1, True)
    for i in range(50):
        for ev in _probe(i):
            log.write(ev)
    verdict = Verdict(fault="host.mtu", status=Status.FAIL, summary="mtu 1500", targets=("a",))
    log.write(VerdictReached(step="preflight", verdict=verdict))
    m = Measurement(kind="rail", target="a->b", value=98.1, unit="Gb/s")
    log.write(MeasurementTaken(step="preflight", measurement=m))
    # 102 observations written (each in full: a crash of fabwiz loses none), no fsync yet
    lines = log.path.read_text().splitlines()
    assert len(lines) == 103 and json.loads(lines[-1])["type"] == "measurement_taken"
    assert rec.calls == 1 and not rec.durable()
    # the consent before a change: fsynced at once, and every observation before it with it
    log.write(OperatorAnswered(step="mtu", question="apply fix host.mtu@a", answer="yes"))
    assert (rec.calls, rec.durable()) == (2, True)
    log.write(FixApplied(step="mtu", fix_id="f1", fault="host.mtu", target="a"))
    assert (rec.calls, rec.durable()) == (3, True)
    log.write(Note(level="warn", text="configuration differs"))
    assert rec.calls == 4
    for ev in _probe(99):
        log.write(ev)
    assert rec.calls == 4 and not rec.durable()
    log.close()  # close syncs the batch
    assert rec.calls == 5 and rec.synced == len(log.path.read_bytes())


def test_a_long_burst_of_observations_is_fsynced_every_batch_of_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session.writer, "BATCH_FSYNC_S", 3600.0)  # no timer inside this test
    monkeypatch.setattr(session.writer, "BATCH_FSYNC_EVENTS", 10)
    log = SessionLog.create(tmp_path / "s")
    rec = SyncRecorder(monkeypatch, log.path)
    log.start("check")
    assert rec.calls == 1
    for i in range(12):  # 24 batched lines: the 10th and the 20th sync
        for ev in _probe(i):
            log.write(ev)
    assert rec.calls == 3
    lines = log.path.read_text().splitlines()
    synced = log.path.read_bytes()[: rec.synced].decode().splitlines()
    assert (len(lines), len(synced)) == (25, 21)  # the start and 20 observations are on disk
    log.close()
    assert (rec.calls, rec.durable()) == (4, True)


def test_a_batch_is_fsynced_on_a_timer_without_a_further_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session.writer, "BATCH_FSYNC_S", 0.01)
    log = SessionLog.create(tmp_path / "s")
    rec = SyncRecorder(monkeypatch, log.path)
    log.start("check")
    for ev in _probe(1):
        log.write(ev)
    done = threading.Event()
    for _ in range(500):  # the timer thread syncs: wait for it (bounded), then check
        if rec.durable():
            done.set()
            break
        threading.Event().wait(0.01)
    assert done.is_set(), "the batch was never fsynced"
    assert rec.calls == 2
    log.close()
    assert rec.calls == 2  # nothing left to sync at close


def test_without_fsync_nothing_is_synced_and_no_timer_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = SessionLog.create(tmp_path / "s", fsync=False)
    rec = SyncRecorder(monkeypatch, log.path)
    log.start("fix")
    for ev in _probe(1):
        log.write(ev)
    assert log._timer is None
    log.close()
    assert rec.calls == 0 and len(log.path.read_text().splitlines()) == 3


@pytest.mark.lab
async def test_a_switch_change_is_sent_only_once_its_log_is_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session.writer, "BATCH_FSYNC_S", 3600.0)  # only the rule syncs here
    seen: list[tuple[str, bool, str]] = []
    holder: dict[str, SyncRecorder] = {}
    real_fsync = os.fsync
    real_apply = fixes.apply_switch_change

    def last_type(path: Path) -> str:
        return str(json.loads(path.read_text().splitlines()[-1])["type"])

    async def apply(api: Any, change: Any) -> None:
        rec = holder["rec"]
        seen.append(("change sent", rec.durable(), last_type(rec.path)))
        await real_apply(api, change)

    monkeypatch.setattr(fixes, "apply_switch_change", apply)
    operator = TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False)
    wiring = await open_wizard(
        operator=operator,
        sinks=[],
        lab="fault-switch-offload-disabled",
        session_dir=tmp_path / "session",
        time_scale=100.0,
        fsync=True,
    )
    log_path = wiring.log.path
    holder["rec"] = SyncRecorder(monkeypatch, log_path)
    real_verify = wiring.engine._verify

    async def verify(plan: Any) -> tuple[bool, str]:
        rec = holder["rec"]
        synced = rec.path.read_bytes()[: rec.synced].decode().splitlines()
        types = [json.loads(x)["type"] for x in synced]
        seen.append(("verify", rec.durable(), "fix_applied" if "fix_applied" in types else "-"))
        return await real_verify(plan)

    monkeypatch.setattr(wiring.engine, "_verify", verify)
    try:
        result = await wiring.engine.run()
    finally:
        await wiring.close()
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert any(f.fault == "switch.offload-disabled" and f.verified for f in result.fixes)
    # the change went out after its armed rollback was on disk, with everything before it
    assert ("change sent", True, "rollback_armed") in seen
    # the change's outcome was on disk before the verification's first probe went out
    assert ("verify", True, "fix_applied") in seen
    assert all(durable for _what, durable, _t in seen), seen
    events = [json.loads(x)["type"] for x in log_path.read_text().splitlines()]
    assert events.count("probe_answered") > 20  # the batched kind was written too
    assert holder["rec"].calls < len(events) / 2  # far fewer fsyncs than events
