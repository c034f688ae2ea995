"""A resumed session knows when it last changed each target: the times `stamp` read from the
targets' own clocks travel in the session log (`FixApplied`/`FixRolledBack.changed_at`) and are
replayed on resume, so a switch log line older than the last change stays history."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from flows.bisection import FLOW
from flows.checks import forwarding
from wizard import changes
from wizard.drain import DrainGuard
from wizard.engine.resume import resume_from
from wizard.events import (
    Event,
    FixApplied,
    FixRolledBack,
    SessionStarted,
    StepChanged,
    event_from_json,
)
from wizard.model import ProbeResult, Status
from wizard.probes import Observations
from wizard.session import LoadedSession

T_FIX = 1796132700.0  # crs804's clock when the offload fix landed
T_BACK = 1796132760.0  # ... and when its rollback did
N_FIX = 1796132705.0  # spark1's clock after a host change


def _recorded() -> list[Event]:
    """A session log as written: started, a switch+host fix, its rollback, a host fix whose
    node clock could not be read, then a fix from a log written before change times existed."""
    events: list[Event] = [
        SessionStarted(session_id="s1", fabwiz_version="0.1.0", log_version=1, command="fix"),
        StepChanged(step="offload", phase="entered"),
        FixApplied(
            step="offload",
            fix_id="offload:switch.offload-split-cage:crs804",
            fault="switch.offload-split-cage",
            target="crs804",
            changed_at={"crs804": T_FIX, "spark1": N_FIX},
        ),
        FixRolledBack(
            step="offload",
            fix_id="offload:switch.offload-split-cage:crs804",
            fault="switch.offload-split-cage",
            reason="verification failed: 9.5 Gb/s",
            restored=True,
            changed_at={"crs804": T_BACK},
        ),
        FixApplied(
            step="qos",
            fix_id="qos:host.pfc-enabled:spark2",
            fault="host.pfc-enabled",
            target="spark2",
            changed_at={"spark2": None},
        ),
    ]
    old = FixApplied(step="mtu", fix_id="mtu:host.mtu:spark3", fault="host.mtu", target="spark3")
    line = old.to_json()
    del line["changed_at"]  # an older fabwiz wrote no such field
    # through JSON and back, as the session log stores them
    return [event_from_json(json.loads(json.dumps(e.to_json()))) for e in events] + [
        event_from_json(line)
    ]


def test_change_times_are_rebuilt_from_the_recorded_events() -> None:
    guard = DrainGuard.from_events(_recorded())
    # the rollback is the last change of crs804; spark2's clock was unreadable: no time
    assert guard.changed_at == {"crs804": T_BACK, "spark1": N_FIX}


def test_resume_hands_the_change_times_to_the_checks(tmp_path: Path) -> None:
    events = _recorded()
    loaded = LoadedSession(
        path=tmp_path / "events.jsonl", events=tuple(events), seqs=tuple(range(len(events)))
    )
    resume = resume_from(loaded, [s.id for s in FLOW])
    assert resume.guard is not None
    assert resume.guard.changed_at == {"crs804": T_BACK, "spark1": N_FIX}
    # the offload activation line logged between the fix and its rollback is history now
    line = {
        "time": "2026-12-01 13:45:30",  # T_FIX + 30 s on the switch's clock scale
        "topics": "bridge,info",
        "message": 'hardware offloading activated on bridge "bridge" ports: qsfp56-dd-1-1',
    }
    obs = Observations(
        switches={
            "crs804": {
                "log": ProbeResult(target="crs804", kind="api", command="/log print", rows=(line,))
            }
        }
    )
    since = resume.guard.changed_at["crs804"]
    ev = forwarding.log_evidence(obs, "crs804", "bridge", ("qsfp56-dd-1-1",), since=since)
    assert ev.status == Status.UNKNOWN and "predates this session's change" in ev.observed
    fresh = forwarding.log_evidence(obs, "crs804", "bridge", ("qsfp56-dd-1-1",), since=T_FIX)
    assert fresh.status == Status.PASS


def test_hostile_recorded_times_are_no_time() -> None:
    got: dict[str, float] = {"crs804": T_FIX}
    changes.replay(
        got, {"crs804": "13:45", "spark1": float("nan"), "spark2": True, "spark3": 1796132800}
    )
    assert got == {"spark3": 1796132800.0}


async def test_stamp_returns_what_it_recorded() -> None:
    class Api:
        async def call(self, path: str, verb: str, **args: str) -> list[dict[str, str]]:
            raise ConnectionError("switch gone")

    async def run(node: str, command: str) -> ProbeResult:
        return ProbeResult(target=node, kind="ssh", command=command, stdout="1796132705\n")

    plan = SimpleNamespace(
        switch_changes=[SimpleNamespace(switch="crs804")],
        host_changes=[SimpleNamespace(node="spark1")],
    )
    live: dict[str, float] = {"crs804": T_FIX}
    stamped = await changes.stamp(live, plan, lambda _s: Api(), run)
    assert stamped == {"crs804": None, "spark1": N_FIX}
    assert live == {"spark1": N_FIX}
    # the log replays to the same times the live session held
    replayed: dict[str, float] = {"crs804": T_FIX}
    changes.replay(replayed, stamped)
    assert replayed == live
