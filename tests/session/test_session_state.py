"""SessionState is a pure fold of the events: fixes, drains, measurements, probes, answers."""

from __future__ import annotations

from pathlib import Path

from session_helpers import FIX_OFFLOAD, FIX_QOS, RAIL, RAIL_B, T0, fix_session

from wizard.events import (
    FixApplied,
    FixPreviewed,
    LinkTransitionSeen,
    NodeDrained,
    RailSampled,
    StepChanged,
)
from wizard.model import Status
from wizard.session import SessionLog, SessionState, load_session


def _state() -> SessionState:
    return SessionState.from_events(fix_session())


def test_fold_from_the_log_equals_fold_from_the_events(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path / "s")
    for ev in fix_session():
        log.write(ev)
    log.close()
    from_disk = load_session(log.folder).state()
    direct = _state()
    assert from_disk.fixes == direct.fixes
    assert from_disk.measurements == direct.measurements
    assert from_disk.step_phases == direct.step_phases
    assert from_disk.events == direct.events == len(fix_session())


def test_current_step_phase_and_done_steps() -> None:
    s = _state()
    assert (s.step, s.phase) == ("halves", "done")
    assert s.step_order == ["preflight", "offload", "qos", "halves"]
    assert s.step_phases["qos"] == "verdict"
    assert s.done_steps == ["preflight", "offload", "halves"]
    assert s.ended is not None and s.ended.healthy is False


def test_fixes_by_id_with_their_status() -> None:
    s = _state()
    off = s.fixes[FIX_OFFLOAD]
    assert off.status == "verified" and off.verified_ok is True
    assert off.export == "fabwiz-pre-offload.rsc"
    assert off.rollback_armed == "fabwiz-deadman-1"
    assert off.bounces_links is True
    assert off.applied_at == T0 + 8 and off.finished_at == T0 + 13
    qos = s.fixes[FIX_QOS]
    assert qos.status == "rolled_back" and qos.restored is True
    assert qos.rollback_reason == "API session lost during the change"
    assert s.applied_fix_ids == {FIX_OFFLOAD, FIX_QOS}
    assert s.unfinished_fixes == []
    assert [f.fix_id for f in s.fixes_with_status("verified")] == [FIX_OFFLOAD]


def test_a_fix_applied_but_not_verified_is_unfinished_and_never_resent() -> None:
    events = fix_session()
    cut = next(i for i, e in enumerate(events) if isinstance(e, FixApplied)) + 1
    s = SessionState.from_events(events[:cut])
    assert [f.fix_id for f in s.unfinished_fixes] == [FIX_OFFLOAD]
    assert FIX_OFFLOAD in s.applied_fix_ids
    assert s.pending_rollbacks() == [(FIX_OFFLOAD, "crs804", "fabwiz-deadman-1", False)]


def test_rollbacks_armed_and_disarmed() -> None:
    s = _state()
    assert s.rollbacks["fabwiz-deadman-1"].armed is False
    assert [r.name for r in s.armed_rollbacks] == ["fabwiz-deadman-2"]
    assert s.pending_rollbacks() == [(FIX_QOS, "crs804", "fabwiz-deadman-2", False)]


def test_a_rolled_back_fix_previewed_again_starts_over() -> None:
    s = _state()
    s.apply(
        FixPreviewed(
            step="qos",
            fix_id=FIX_QOS,
            fault="switch.qos-pfc-stall",
            target="crs804",
            summary="again",
            preview="p",
        )
    )
    assert s.fixes[FIX_QOS].status == "previewed" and s.fixes[FIX_QOS].applied_at is None


def test_drains_and_transitions_feed_the_drain_guard() -> None:
    s = _state()
    assert [t.cause for t in s.transitions["spark1"]] == ["fix bounced qsfp56-dd-1-1"]
    assert s.drained_at == {"spark1": T0 + 11.5}
    assert s.needs_drain("spark1") is False  # drained after its transition
    assert s.needs_drain("spark2") is True  # bounced, never drained
    assert s.undrained_nodes() == ["spark2"]
    assert [t.node for t in s.all_transitions] == ["spark1", "spark2"]
    s.apply(LinkTransitionSeen(at=T0 + 30, node="spark1", cause="switch rebooted"))
    assert s.undrained_nodes() == ["spark1", "spark2"]
    s.apply(NodeDrained(at=T0 + 40, node="spark1"))
    s.apply(NodeDrained(at=T0 + 41, node="spark2"))
    assert s.undrained_nodes() == []


def test_measurements_before_and_after_per_rail_and_nccl() -> None:
    s = _state()
    table = {ba.target: ba for ba in s.before_after()}
    assert list(table) == [RAIL, "cluster", RAIL_B]
    rail = table[RAIL]
    assert rail.before.measurement.value == 9.42 and rail.after is not None
    assert rail.after.measurement.value == 109.2  # the undrained 12.5 is not evidence
    assert rail.delta is not None and round(rail.delta, 2) == 99.78
    nccl = table["cluster"]
    assert (nccl.kind, nccl.unit, nccl.before.measurement.value) == ("nccl", "GB/s", 1.12)
    assert nccl.after is not None and nccl.after.measurement.value == 23.31
    assert table[RAIL_B].after is None
    [invalid] = s.invalid_measurements
    assert invalid.measurement.value == 12.5
    assert invalid.measurement.reason == "process.undrained-measurement"


def test_verdicts_probes_answers_and_physical_actions() -> None:
    s = _state()
    assert [v.status for v in s.verdicts["offload"]] == [Status.FAIL, Status.PASS]
    latest = s.latest_verdicts()
    assert latest["switch.offload-split-cage"].status == Status.PASS
    assert latest["switch.qos-pfc-stall"].status == Status.FAIL
    assert list(s.latest_verdicts("preflight")) == ["host.duplicate-ip"]
    bridge = s.probe("offload", "crs804", "bridge_port")
    assert bridge is not None and bridge.rows[1]["bridge"] == "mgmt"
    assert s.probe("preflight", "spark1", "ip_addr") is not None
    # spark2's probe was sent and never answered: the session stopped or it timed out.
    assert list(s.pending_probes) == [("preflight", "spark2")]
    assert s.answer("offload", "apply fix?") == "yes"
    assert s.answer("qos", "apply fix?") is None
    assert s.pending_physical == []
    assert s.physical_done[0].observed == "spark1 back with a new boot_id"
    assert [n.level for n in s.notes] == ["error", "info"]


def test_pending_physical_action_survives_until_done() -> None:
    events = fix_session()
    cut = next(i for i, e in enumerate(events) if e.type == "physical_action_requested") + 1
    s = SessionState.from_events(events[:cut])
    [pending] = s.pending_physical
    assert pending.kind == "ac_drain" and pending.nodes == ("spark1",)


def test_unpersisted_events_do_not_change_the_state() -> None:
    s = SessionState.from_events([StepChanged(step="preflight", phase="probing")])
    s.apply(RailSampled(node="spark1", netdev="enp1s0f0np0", gbps=1.0))
    assert s.events == 1
