"""The one fold of the event stream: cabling, fix states, the drain guard and resume read it."""

from __future__ import annotations

from pathlib import Path

from flows.bisection import FLOW
from wizard.drain import DrainGuard
from wizard.engine.resume import resume_from
from wizard.events import (
    BisectionConcluded,
    Event,
    FixApplied,
    FixPreviewed,
    FixRefusedEvent,
    FixRolledBack,
    FixVerified,
    LinkTransitionSeen,
    NodeDrained,
    OperatorAnswered,
    PhysicalActionDone,
    PhysicalActionRequested,
    SessionStarted,
    StepChanged,
)
from wizard.model import FixState
from wizard.session import LoadedSession, SessionState

TO_DIRECT = (("spark1", "enp1s0f0np0", "node:spark2:enp1s0f0np0"),)
BACK = (
    ("spark1", "enp1s0f0np0", "crs804:qsfp56-dd-1-1"),
    ("spark2", "enp1s0f0np0", "crs804:qsfp56-dd-1-2"),
)


def _recable(step: str, cables: tuple[tuple[str, str, str], ...], undo: tuple = ()) -> list[Event]:
    nodes = tuple(dict.fromkeys(c[0] for c in cables))
    return [
        PhysicalActionRequested(
            step=step, kind="recable", nodes=nodes, instructions="move", cables=cables, undo=undo
        ),
        PhysicalActionDone(step=step, kind="recable", nodes=nodes, performed_by="lab"),
    ]


def _start() -> list[Event]:
    return [
        SessionStarted(session_id="s", fabwiz_version="0", log_version=1, command="fix"),
        StepChanged(step="direct_connect", phase="waiting_physical"),
    ]


def test_the_cabling_is_the_last_recable_done_not_a_count_of_recables() -> None:
    direct = SessionState.from_events(_start() + _recable("direct_connect", TO_DIRECT, BACK))
    assert (direct.direct_cabled, direct.direct_undo) == (True, BACK)
    # put back on the switch by a resumed session, at another step: switch cabling again
    back = SessionState.from_events(
        _start() + _recable("direct_connect", TO_DIRECT, BACK) + _recable("offload", BACK)
    )
    assert (back.direct_cabled, back.direct_undo) == (False, ())
    # asked for, never confirmed done: the cables are where they were
    asked = SessionState.from_events(_start() + _recable("direct_connect", TO_DIRECT, BACK)[:1])
    assert asked.direct_cabled is False


def test_resume_restores_the_cabling_the_log_leaves(tmp_path: Path) -> None:
    events = (*_start(), *_recable("direct_connect", TO_DIRECT, BACK))
    loaded = LoadedSession(path=tmp_path / "e", events=events, seqs=tuple(range(len(events))))
    resume = resume_from(loaded, [s.id for s in FLOW])
    assert (resume.step, resume.direct_cabled, resume.direct_undo) == ("direct_connect", True, BACK)


def _fix(fix_id: str, fault: str = "switch.qos-lossless") -> FixPreviewed:
    return FixPreviewed(
        step="qos", fix_id=fix_id, fault=fault, target="crs804", summary="lossy", preview="set"
    )


def test_every_fix_state_comes_from_the_events() -> None:
    events: list[Event] = [
        _fix("a"),
        OperatorAnswered(step="qos", question="apply fix a", answer="no"),
        _fix("b", "host.pfc"),
        FixRefusedEvent(step="qos", fault="host.pfc", target="crs804", reason="mgmt path"),
        _fix("c", "x"),
        FixApplied(step="qos", fix_id="c", fault="x", target="crs804"),
        FixVerified(step="qos", fix_id="c", fault="x", ok=True),
        _fix("d", "y"),
        FixApplied(step="qos", fix_id="d", fault="y", target="crs804"),
        FixVerified(step="qos", fix_id="d", fault="y", ok=False),
        _fix("e", "z"),
        FixApplied(step="qos", fix_id="e", fault="z", target="crs804"),
        FixRolledBack(step="qos", fix_id="e", fault="z", reason="no carrier", restored=True),
        _fix("f", "w"),
        FixApplied(step="qos", fix_id="f", fault="w", target="crs804"),
    ]
    state = SessionState.from_events(events)
    got = {k: f.state for k, f in state.fixes.items()}
    assert got == {
        "a": FixState.DECLINED,
        "b": FixState.REFUSED,
        "c": FixState.VERIFIED,
        "d": FixState.VERIFY_FAILED,
        "e": FixState.ROLLED_BACK,
        "f": FixState.APPLIED,
    }
    # the report's count reads a declined or refused fix as previewed only
    assert (state.fixes["a"].status, state.fixes["b"].status) == ("previewed", "previewed")
    assert [f.fix_id for f in state.unfinished_fixes] == ["f"]
    # offered again: previewed again; a rolled-back one starts over as a new attempt
    again = SessionState.from_events([*events, _fix("a"), _fix("e", "z")])
    assert again.fixes["a"].state is FixState.PREVIEWED
    assert again.fixes["e"].state is FixState.PREVIEWED and again.fixes["e"].applied_at is None


def test_the_drain_guard_is_the_one_the_fold_leaves() -> None:
    events: list[Event] = [
        LinkTransitionSeen(node="spark1", cause="recabled", at=10.0),
        NodeDrained(node="spark1", boot_id="b1", at=20.0),
        LinkTransitionSeen(node="spark2", cause="fix bounced links", at=30.0),
        LinkTransitionSeen(node="spark1", cause="port bounce", at=40.0),
        FixApplied(step="qos", fix_id="c", fault="x", target="crs804", changed_at={"crs804": 5.0}),
    ]
    guard = SessionState.from_events(events).drain_guard()
    assert guard == DrainGuard.from_events(events)
    assert guard.undrained(["spark1", "spark2", "spark3"]) == {
        "spark1": "port bounce",
        "spark2": "fix bounced links",
    }
    assert (guard.drains, guard.boot_ids, guard.changed_at) == (
        {"spark1": 20.0},
        {"spark1": "b1"},
        {"crs804": 5.0},
    )


def test_resume_reads_deferred_findings_and_the_first_picture(tmp_path: Path) -> None:
    skipped = BisectionConcluded(
        step="direct_connect", conclusion="skipped", sentence="s", faults=("host.mtu",)
    )
    events = (*_start(), skipped)
    state = SessionState.from_events(events)
    assert (state.deferred, state.healthy_before) == (("host.mtu",), None)
    ran = BisectionConcluded(step="direct_connect", conclusion="switch-path", sentence="s")
    assert SessionState.from_events([*events, ran]).deferred == ()


def _fold(events: list[Event]) -> SessionState:
    state = SessionState()
    for ev in events:
        state.apply(ev)
    return state


def test_a_reboot_proof_declined_or_skipped_is_said_until_one_is_done() -> None:
    declined = OperatorAnswered(
        at=10.0, step="persist", question="reboot proof", answer="skip the proof"
    )
    (said,) = _fold([declined]).proofs_not_done()
    assert said.startswith("reboot proof not done (the operator chose to skip the proof)")
    asked = OperatorAnswered(
        at=20.0, step="persist", question="reboot proof", answer="reboot and re-run the sweep"
    )
    skipped = OperatorAnswered(at=21.0, step="persist", question="physical:reboot", answer="skip")
    (said,) = _fold([declined, asked, skipped]).proofs_not_done()
    assert "its reboot was skipped" in said
    done = PhysicalActionDone(
        at=30.0, step="persist", kind="reboot", nodes=("spark1",), performed_by="operator"
    )
    assert _fold([declined, asked, skipped, asked, done]).proofs_not_done() == []
    # a reboot done elsewhere in the walk (a drain's) proves nothing about persistence
    other = PhysicalActionDone(
        at=40.0, step="drain", kind="reboot", nodes=("spark1",), performed_by="operator"
    )
    assert len(_fold([declined, other]).proofs_not_done()) == 1
    assert _fold([asked]).proofs_not_done() == []  # asked and under way: nothing said yet
