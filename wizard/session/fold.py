"""The fold: `SessionState` rebuilt purely from a session's events."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from wizard.drain import DrainGuard
from wizard.events import (
    REBOOT_PROOF_QUESTION,
    BisectionConcluded,
    Event,
    ExportTaken,
    FixApplied,
    FixPreviewed,
    FixRefusedEvent,
    FixRolledBack,
    FixVerified,
    LinkTransitionSeen,
    MeasurementTaken,
    NodeDrained,
    Note,
    OperatorAnswered,
    PhysicalActionDone,
    PhysicalActionRequested,
    ProbeAnswered,
    ProbeSent,
    RollbackArmed,
    RollbackDisarmed,
    SessionEnded,
    SessionResumed,
    SessionStarted,
    StepChanged,
    VerdictReached,
    physical_question,
)
from wizard.model import FixState, ProbeResult, Verdict
from wizard.probes import Transition
from wizard.session.records import (
    BeforeAfter,
    FixRecord,
    FixStatus,
    MeasurementRecord,
    RollbackRecord,
)

_REOFFERED = frozenset({FixState.VERIFY_FAILED, FixState.DECLINED, FixState.REFUSED})
"""States after which a new preview of the same fix id offers it again (a rolled-back fix
starts over as a new record)."""


@dataclass(slots=True)
class SessionState:
    """Everything a session knows, rebuilt from its events in order (`from_events`, `apply`).

    The one fold of the event stream: the engine resumes from it (`wizard.engine.resume`), the TUI's
    view model, the drain guard (`drain_guard`), replay and reports read it. `step`/`phase` say
    where it stopped, `fixes` which changes went out (never resend an `applied` one) and each
    fix's `FixState`, `answers` what the operator already said, `pending_physical` what the hands
    were asked to do, `direct_cabled` whether two nodes are cabled port to port right now,
    `transitions`/`drains`/`changed_at` feed the drain guard (`undrained_nodes`).
    """

    started: SessionStarted | None = None
    ended: SessionEnded | None = None
    resumes: list[SessionResumed] = field(default_factory=list)
    events: int = 0
    step: str | None = None
    phase: str | None = None
    step_order: list[str] = field(default_factory=list)  # steps in the order first entered
    step_phases: dict[str, str] = field(default_factory=dict)  # step -> last phase
    verdicts: dict[str, list[Verdict]] = field(default_factory=dict)  # step -> in order
    judged: list[tuple[str, Verdict]] = field(default_factory=list)  # (step, verdict) in order
    fixes: dict[str, FixRecord] = field(default_factory=dict)  # fix_id -> record
    refused: list[FixRefusedEvent] = field(default_factory=list)
    exports: list[ExportTaken] = field(default_factory=list)
    rollbacks: dict[str, RollbackRecord] = field(default_factory=dict)  # name -> record
    rollbacks_armed: int = 0  # RollbackArmed events (a name armed twice counts twice)
    disarmed: list[str] = field(default_factory=list)  # rollback names, as disarmed in order
    answers: list[OperatorAnswered] = field(default_factory=list)
    physical_requested: list[PhysicalActionRequested] = field(default_factory=list)
    physical_done: list[PhysicalActionDone] = field(default_factory=list)
    # the cabling now: the last recable done joined two nodes port to port, and its undo moves
    direct_cabled: bool = False
    direct_undo: tuple[tuple[str, str, str], ...] = ()
    conclusions: list[BisectionConcluded] = field(default_factory=list)  # in order
    transitions: dict[str, list[Transition]] = field(default_factory=dict)  # node -> in order
    drains: dict[str, list[NodeDrained]] = field(default_factory=dict)  # node -> in order
    # target -> when this session last changed it, on its own clock (`wizard.changes`)
    changed_at: dict[str, float] = field(default_factory=dict)
    measurements: list[MeasurementRecord] = field(default_factory=list)
    probes: dict[tuple[str, str, str], ProbeResult] = field(default_factory=dict)
    pending_probes: dict[tuple[str, str], ProbeSent] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> SessionState:
        state = cls()
        for ev in events:
            state.apply(ev)
        return state

    @property
    def session_id(self) -> str:
        return self.started.session_id if self.started else ""

    def apply(self, ev: Event) -> None:
        """Fold one event into the state (the same events, in the same order, give the same
        state: the engine can apply live events and a resume rebuilds them from the log)."""
        if not type(ev).persist:
            return
        self.events += 1
        handler = _HANDLERS.get(type(ev))
        if handler is not None:
            handler(self, ev)

    # -- one handler per event type (`_HANDLERS`)

    def _started(self, ev: SessionStarted) -> None:
        self.started = ev

    def _resumed(self, ev: SessionResumed) -> None:
        self.resumes.append(ev)
        self.ended = None

    def _ended(self, ev: SessionEnded) -> None:
        self.ended = ev

    def _step_changed(self, ev: StepChanged) -> None:
        if ev.step not in self.step_phases:
            self.step_order.append(ev.step)
        self.step, self.phase = ev.step, ev.phase
        self.step_phases[ev.step] = ev.phase

    def _probe_sent(self, ev: ProbeSent) -> None:
        self.pending_probes[(ev.step, ev.target)] = ev

    def _probe_answered(self, ev: ProbeAnswered) -> None:
        self.probes[(ev.step, ev.result.target, ev.probe)] = ev.result
        self.pending_probes.pop((ev.step, ev.result.target), None)

    def _verdict(self, ev: VerdictReached) -> None:
        self.verdicts.setdefault(ev.step, []).append(ev.verdict)
        self.judged.append((ev.step, ev.verdict))

    def _measurement(self, ev: MeasurementTaken) -> None:
        self.measurements.append(MeasurementRecord(ev.step, ev.at, ev.measurement))

    def _answered(self, ev: OperatorAnswered) -> None:
        self.answers.append(ev)
        if ev.question.startswith("apply fix ") and ev.answer == "no":
            rec = self.fixes.get(ev.question.removeprefix("apply fix "))
            if rec is not None and rec.state is FixState.PREVIEWED:
                rec.state = FixState.DECLINED

    def _physical_requested(self, ev: PhysicalActionRequested) -> None:
        self.physical_requested.append(ev)

    def _physical_done(self, ev: PhysicalActionDone) -> None:
        self.physical_done.append(ev)
        if ev.kind != "recable":
            return
        asked = next(
            (r for r in reversed(self.physical_requested) if r.kind == "recable" and r.cables),
            None,
        )
        if asked is not None:
            # a destination `node:<peer>:<port>` is a cable port to port, not to the switch
            self.direct_cabled = any(dest.startswith("node:") for _n, _p, dest in asked.cables)
            self.direct_undo = tuple(asked.undo) if self.direct_cabled else ()

    def _transition(self, ev: LinkTransitionSeen) -> None:
        self.transitions.setdefault(ev.node, []).append(Transition(ev.node, ev.at, ev.cause))

    def _drained(self, ev: NodeDrained) -> None:
        self.drains.setdefault(ev.node, []).append(ev)

    def _concluded(self, ev: BisectionConcluded) -> None:
        self.conclusions.append(ev)

    def _export(self, ev: ExportTaken) -> None:
        self.exports.append(ev)

    def _fix_previewed(self, ev: FixPreviewed) -> None:
        rec = self.fixes.get(ev.fix_id)
        if rec is None or rec.state is FixState.ROLLED_BACK:
            # A new attempt of a fix that was rolled back starts over.
            self.fixes[ev.fix_id] = FixRecord(
                fix_id=ev.fix_id,
                step=ev.step,
                fault=ev.fault,
                target=ev.target,
                summary=ev.summary,
                preview=ev.preview,
                bounces_links=ev.bounces_links,
                previewed_at=ev.at,
            )
        else:
            rec.summary, rec.preview, rec.bounces_links = ev.summary, ev.preview, ev.bounces_links
            if rec.state in _REOFFERED:
                rec.state = FixState.PREVIEWED

    def _fix_applied(self, ev: FixApplied) -> None:
        rec = self._fix(ev.fix_id, ev.step, ev.fault, ev.target)
        rec.state = FixState.APPLIED
        rec.applied_at = ev.at
        rec.export = ev.export
        rec.rollback_armed = ev.rollback_armed or rec.rollback_armed
        _replay_stamps(self.changed_at, ev.changed_at)

    def _fix_verified(self, ev: FixVerified) -> None:
        rec = self._fix(ev.fix_id, ev.step, ev.fault, "")
        rec.state = FixState.VERIFIED if ev.ok else FixState.VERIFY_FAILED
        rec.verified_ok = ev.ok
        rec.verify_detail = ev.detail
        rec.finished_at = ev.at

    def _fix_rolled_back(self, ev: FixRolledBack) -> None:
        rec = self._fix(ev.fix_id, ev.step, ev.fault, "")
        rec.state = FixState.ROLLED_BACK
        rec.rollback_reason = ev.reason
        rec.restored = ev.restored
        rec.finished_at = ev.at
        _replay_stamps(self.changed_at, ev.changed_at)

    def _fix_refused(self, ev: FixRefusedEvent) -> None:
        self.refused.append(ev)
        for rec in self.fixes.values():
            if rec.step == ev.step and rec.fault == ev.fault and rec.state is FixState.PREVIEWED:
                rec.state = FixState.REFUSED

    def _rollback_armed(self, ev: RollbackArmed) -> None:
        self.rollbacks_armed += 1
        self.rollbacks[ev.name] = RollbackRecord(
            name=ev.name,
            fix_id=ev.fix_id,
            target=ev.target,
            step=ev.step,
            window_s=ev.window_s,
            script=ev.script,
            armed_at=ev.at,
        )
        self._fix(ev.fix_id, ev.step, "", ev.target).rollback_armed = ev.name

    def _rollback_disarmed(self, ev: RollbackDisarmed) -> None:
        self.disarmed.append(ev.name)
        rb = self.rollbacks.get(ev.name)
        if rb is not None:
            rb.disarmed_at = ev.at

    def _note(self, ev: Note) -> None:
        self.notes.append(ev)

    def _fix(self, fix_id: str, step: str, fault: str, target: str) -> FixRecord:
        rec = self.fixes.get(fix_id)
        if rec is None:
            rec = FixRecord(fix_id=fix_id, step=step, fault=fault, target=target)
            self.fixes[fix_id] = rec
        return rec

    # -- questions the engine asks on resume

    @property
    def healthy_before(self) -> bool | None:
        """The preflight's first picture: no finding (None when preflight judged nothing)."""
        pre = self.verdicts.get("preflight", [])
        if not pre:
            return None
        return not any(v.is_finding for v in pre)

    @property
    def deferred(self) -> tuple[str, ...]:
        """The findings a skipped direct-connect test waits for (none once it ran after all)."""
        last = next((c for c in reversed(self.conclusions) if c.step == "direct_connect"), None)
        if last is None or last.conclusion != "skipped":
            return ()
        return tuple(str(f) for f in last.faults)

    @property
    def fix_counter(self) -> int:
        """Exports and rollbacks numbered so far: new names continue after them."""
        return len(self.exports) + self.rollbacks_armed

    @property
    def pre_fix_exports(self) -> dict[str, str]:
        """Switch -> the text of its last pre-fix export."""
        return {e.switch: e.contents for e in self.exports if e.purpose == "pre-fix" and e.contents}

    @property
    def rollback_scripts(self) -> dict[str, str]:
        """Rollback name -> the script armed under it (the last arming of a name)."""
        return {name: r.script for name, r in self.rollbacks.items()}

    @property
    def verified_fix_ids(self) -> tuple[str, ...]:
        return tuple(f.fix_id for f in self.fixes.values() if f.state is FixState.VERIFIED)

    def drain_guard(self) -> DrainGuard:
        """The drain guard as the log leaves it: every transition, the last drain and boot id
        per node, and when each target was last changed."""
        guard = DrainGuard(changed_at=dict(self.changed_at))
        for node, ts in self.transitions.items():
            for t in ts:
                guard.record_transition(node, t.at, t.cause)
        for node, ds in self.drains.items():
            for d in ds:
                guard.record_drain(node, d.at, d.boot_id)
        return guard

    @property
    def done_steps(self) -> list[str]:
        """Steps whose last phase is done or skipped, in the order entered."""
        return [s for s in self.step_order if self.step_phases.get(s) in ("done", "skipped")]

    @property
    def armed_rollbacks(self) -> list[RollbackRecord]:
        """Rollbacks armed and not disarmed: on a crash they fire, or must be disarmed."""
        return [r for r in self.rollbacks.values() if r.armed]

    def pending_rollbacks(self) -> list[tuple[str, str, str, bool]]:
        """(fix_id, target, name, fix verified) of every armed rollback, as `Resume` takes them:
        a verified fix's rollback is to be disarmed, an unverified one left to run."""
        out = []
        for r in self.armed_rollbacks:
            fix = self.fixes.get(r.fix_id)
            out.append((r.fix_id, r.target, r.name, bool(fix and fix.status == "verified")))
        return out

    def fixes_with_status(self, *statuses: FixStatus) -> list[FixRecord]:
        return [f for f in self.fixes.values() if f.status in statuses]

    @property
    def applied_fix_ids(self) -> set[str]:
        """Fixes whose change went out (applied, verified, failed or rolled back)."""
        return {f.fix_id for f in self.fixes.values() if f.applied}

    @property
    def unfinished_fixes(self) -> list[FixRecord]:
        """Applied but neither verified nor rolled back: the session stopped mid-fix."""
        return self.fixes_with_status("applied")

    def proofs_not_done(self) -> list[str]:
        """The proofs the walk offered that were not done, as they stand at the end: the reboot
        that shows every fix comes back by itself (declined, or its reboot skipped). A later
        reboot proof that was done (a rerun, a resumed session) settles it."""
        steps: list[tuple[float, str | None]] = []
        for a in self.answers:
            if a.question == REBOOT_PROOF_QUESTION:
                if not a.answer.startswith("reboot"):
                    steps.append((a.at, f"the operator chose to {a.answer}"))
            elif (
                a.question == physical_question("reboot")
                and a.step == "persist"
                and a.answer == "skip"
            ):
                steps.append((a.at, "its reboot was skipped"))
        for d in self.physical_done:
            if d.kind == "reboot" and d.step == "persist":
                steps.append((d.at, None))
        last = max(steps, key=lambda s: s[0], default=(0.0, None))[1]
        if last is None:
            return []
        return [
            f"reboot proof not done ({last}): that every fix survives a reboot is read from "
            "what the next boot applies, not shown by a reboot"
        ]

    def latest_verdicts(self, step: str | None = None) -> dict[str, Verdict]:
        """The last verdict per fault id (of one step, or over the whole session)."""
        out: dict[str, Verdict] = {}
        steps = [step] if step is not None else list(self.verdicts)
        for s in steps:
            for v in self.verdicts.get(s, []):
                out.pop(v.fault, None)  # keep insertion order = order last judged
                out[v.fault] = v
        return out

    def answer(self, step: str, question: str) -> str | None:
        """The operator's last answer to this question at this step, if already asked."""
        for a in reversed(self.answers):
            if a.step == step and a.question == question:
                return a.answer
        return None

    @property
    def answers_by_question(self) -> dict[tuple[str, str], str]:
        return {(a.step, a.question): a.answer for a in self.answers}

    @property
    def pending_physical(self) -> list[PhysicalActionRequested]:
        """Physical actions asked for and not reported done (matched by step, kind and nodes)."""
        done = [(d.step, d.kind, frozenset(d.nodes)) for d in self.physical_done]
        out: list[PhysicalActionRequested] = []
        for r in self.physical_requested:
            key = (r.step, r.kind, frozenset(r.nodes))
            if key in done:
                done.remove(key)
            else:
                out.append(r)
        return out

    @property
    def drained_at(self) -> dict[str, float]:
        """Node -> time of its last AC drain (for `flows.base.Context.drained_at`)."""
        return {node: ds[-1].at for node, ds in self.drains.items() if ds}

    @property
    def all_transitions(self) -> tuple[Transition, ...]:
        """Every link transition in time order (for `flows.base.Context.transitions`)."""
        return tuple(sorted((t for ts in self.transitions.values() for t in ts), key=_at))

    def needs_drain(self, node: str) -> bool:
        """True when a link transition on `node` came after its last AC drain: a bandwidth
        result of this node is not evidence (`process.undrained-measurement`)."""
        ts = self.transitions.get(node)
        if not ts:
            return False
        last_drain = self.drained_at.get(node)
        return last_drain is None or ts[-1].at > last_drain

    def undrained_nodes(self) -> list[str]:
        return sorted(n for n in self.transitions if self.needs_drain(n))

    def before_after(self) -> list[BeforeAfter]:
        """Per measured target: the first and the last valid measurement (per-rail Gb/s,
        NCCL busbw), in the order targets were first measured."""
        firsts: dict[str, MeasurementRecord] = {}
        lasts: dict[str, MeasurementRecord] = {}
        for rec in self.measurements:
            if not rec.measurement.valid:
                continue
            key = rec.measurement.target
            if key not in firsts:
                firsts[key] = rec
            else:
                lasts[key] = rec
        return [
            BeforeAfter(
                target=key,
                kind=first.measurement.kind,
                unit=first.measurement.unit,
                before=first,
                after=lasts.get(key),
            )
            for key, first in firsts.items()
        ]

    @property
    def invalid_measurements(self) -> list[MeasurementRecord]:
        return [m for m in self.measurements if not m.measurement.valid]

    def probe(self, step: str, target: str, probe: str) -> ProbeResult | None:
        return self.probes.get((step, target, probe))


def _at(t: Transition) -> float:
    return t.at


def _replay_stamps(changed_at: dict[str, float], stamped: dict[str, float | None]) -> None:
    """`wizard.changes.replay`, imported when a change is folded (it pulls in the fix
    executors, which a view of the session does not otherwise need)."""
    from wizard import changes

    changes.replay(changed_at, stamped)


_HANDLERS: dict[type[Event], Callable[[SessionState, Any], None]] = {
    SessionStarted: SessionState._started,
    SessionResumed: SessionState._resumed,
    SessionEnded: SessionState._ended,
    StepChanged: SessionState._step_changed,
    ProbeSent: SessionState._probe_sent,
    ProbeAnswered: SessionState._probe_answered,
    VerdictReached: SessionState._verdict,
    MeasurementTaken: SessionState._measurement,
    OperatorAnswered: SessionState._answered,
    PhysicalActionRequested: SessionState._physical_requested,
    PhysicalActionDone: SessionState._physical_done,
    LinkTransitionSeen: SessionState._transition,
    NodeDrained: SessionState._drained,
    BisectionConcluded: SessionState._concluded,
    ExportTaken: SessionState._export,
    FixPreviewed: SessionState._fix_previewed,
    FixApplied: SessionState._fix_applied,
    FixVerified: SessionState._fix_verified,
    FixRolledBack: SessionState._fix_rolled_back,
    FixRefusedEvent: SessionState._fix_refused,
    RollbackArmed: SessionState._rollback_armed,
    RollbackDisarmed: SessionState._rollback_disarmed,
    Note: SessionState._note,
}
