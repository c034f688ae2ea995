"""What the session screen shows, folded from engine events. No Textual here, no decisions.

The engine decides; this module only remembers what it said, so widgets can render a step
(its phase, latest verdict per fault, the probes behind them, the fixes offered) and the app can
tell whether quitting would leave work unapplied. `SessionView.apply(event)` is the one entry
point; it returns which parts changed so the screen refreshes only those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from wizard.events import (
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
)
from wizard.model import Evidence, FixState, Measurement, ProbeResult, Status, Verdict
from wizard.session.fold import SessionState
from wizard.session.records import FixRecord


class StepText(Protocol):
    """A bisection step as `flows/bisection.py` describes it (duck-typed on these attributes)."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def what(self) -> str: ...
    @property
    def why(self) -> str: ...
    @property
    def good(self) -> str: ...


@dataclass(frozen=True, slots=True)
class StepInfo:
    """The TUI's own copy of a step's texts."""

    id: str
    title: str
    what: str
    why: str
    good: str


def load_steps() -> tuple[StepInfo, ...]:
    """The bisection steps of `flows.bisection`, in order."""
    from flows.bisection import FLOW

    return steps_from(FLOW)


def steps_from(raw: Iterable[StepText]) -> tuple[StepInfo, ...]:
    return tuple(
        StepInfo(
            str(s.id),
            str(s.title),
            str(getattr(s, "what", "")),
            str(getattr(s, "why", "")),
            str(getattr(s, "good", "")),
        )
        for s in raw
    )


# Phases after which the step's verdict is what counts; the rest mean "the engine is busy here"
# (`stopped`: the session ended while the step was busy).
_SETTLED = frozenset({"verdict", "fix_offered", "done", "stopped"})


@dataclass(slots=True)
class FixView:
    """A fix as a step shows it: the session fold's record of it, and its rollback as said."""

    record: FixRecord
    rollback: str = ""  # the armed dead-man rollback, as the log says it

    @property
    def fix_id(self) -> str:
        return self.record.fix_id

    @property
    def fault(self) -> str:
        return self.record.fault

    @property
    def target(self) -> str:
        return self.record.target

    @property
    def summary(self) -> str:
        return self.record.summary or self.record.fault

    @property
    def preview(self) -> str:
        return self.record.preview

    @property
    def export(self) -> str | None:
        return self.record.export

    @property
    def state(self) -> FixState:
        return self.record.state

    @property
    def unapplied(self) -> bool:
        return self.state.open


@dataclass(slots=True)
class StepView:
    info: StepInfo
    phase: str = "pending"
    reason: str = ""
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # fault -> latest
    probes: list[ProbeResult] = field(default_factory=list)
    sent: list[tuple[str, str]] = field(default_factory=list)  # (target, command)
    measurements: list[Measurement] = field(default_factory=list)
    direct: list[bool] = field(default_factory=list)  # per measurement: over a direct cable
    fixes: dict[str, FixView] = field(default_factory=dict)
    exports: list[ExportTaken] = field(default_factory=list)
    fix_at: int | None = None  # how many measurements the step had when its first fix went in
    # findings of this step that a later step judged to pass (preflight's first picture)
    resolved_later: set[str] = field(default_factory=set)

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def verdict_status(self) -> Status | None:
        if not self.verdicts:
            return None
        return Status.worst(tuple(v.status for v in self.verdicts.values()))

    @property
    def status(self) -> str:
        """One word for the step list: pending, running, skipped, fixed or a Status value."""
        if self.phase == "pending":
            return "pending"
        if self.phase == "skipped":
            return "skipped"
        if self.phase not in _SETTLED:
            return "running"
        worst = self.verdict_status
        if worst is None:
            return "pass" if self.phase == "done" else "running"
        if worst in (Status.PASS, Status.BENIGN) and any(
            f.state is FixState.VERIFIED for f in self.fixes.values()
        ):
            return "fixed"
        open_ = [
            v for v in self.verdicts.values() if v.is_finding and v.fault not in self.resolved_later
        ]
        if self.resolved_later and not open_:
            return "fixed"
        return "pass" if worst is Status.BENIGN else str(worst)

    @property
    def not_checked(self) -> list[Verdict]:
        """The verdicts of this step that could not be judged (`unknown`), worst first."""
        return [v for v in self.verdicts.values() if v.status is Status.UNKNOWN]

    @property
    def not_checked_reason(self) -> str:
        """Why this step could not judge, in a few words: the targets it could not see."""
        targets = sorted({t for v in self.not_checked for t in v.targets})
        if not targets:
            return ""
        shown = ", ".join(targets[:3]) + (
            f" and {len(targets) - 3} more" if len(targets) > 3 else ""
        )
        return f"could not see {shown}"

    @property
    def open_fix(self) -> FixView | None:
        for fix in reversed(self.fixes.values()):
            if fix.state is FixState.PREVIEWED:
                return fix
        return None


@dataclass(slots=True)
class SessionView:
    steps: dict[str, StepView]
    current: str | None = None
    started: SessionStarted | None = None
    ended: SessionEnded | None = None
    log: list[tuple[float, str, str]] = field(default_factory=list)  # (at, level, text)
    measurements: list[Measurement] = field(default_factory=list)
    waiting: PhysicalActionRequested | None = None
    # fault -> (step, verdict) of the latest verdict on it, in the order the engine gave them
    latest: dict[str, tuple[str, Verdict]] = field(default_factory=dict)
    first_fix_at: int | None = None  # len(measurements) when the first fix was applied
    found: dict[str, tuple[str, Verdict]] = field(default_factory=dict)  # first fail/warn
    # the session fold (wizard.session): fix states and the cabling come from it
    state: SessionState = field(default_factory=SessionState)

    @property
    def direct_cabled(self) -> bool:
        """The last re-cabling joined two nodes port to port."""
        return self.state.direct_cabled

    @property
    def measured_before_first_fix(self) -> int:
        return len(self.measurements) if self.first_fix_at is None else self.first_fix_at

    @classmethod
    def new(cls, steps: Sequence[StepInfo]) -> SessionView:
        return cls(steps={s.id: StepView(s) for s in steps})

    def step(self, step_id: str) -> StepView:
        if step_id not in self.steps:
            self.steps[step_id] = StepView(
                StepInfo(step_id, step_id.replace("_", " ").capitalize(), "", "", "")
            )
        return self.steps[step_id]

    def unapplied_work(self) -> list[str]:
        """What quitting now would leave behind: fixes offered or applied but not verified."""
        out = []
        for view in self.steps.values():
            for fix in view.fixes.values():
                if fix.state is FixState.PREVIEWED:
                    out.append(f"{view.info.title}: fix offered, not applied ({fix.summary})")
                elif fix.state is FixState.DECLINED:
                    out.append(f"{view.info.title}: fix declined, fault still open ({fix.summary})")
                elif fix.state is FixState.APPLIED:
                    out.append(
                        f"{view.info.title}: fix applied, not verified yet ({fix.summary}); "
                        "its rollback is still armed"
                    )
        if self.waiting is not None:
            out.append(
                f"Physical action in progress: {self.waiting.kind} on "
                + ", ".join(self.waiting.nodes)
            )
        return out

    def never_checked(self) -> list[tuple[str, Verdict]]:
        """(step, verdict) of every fault whose latest verdict is still `unknown`: what the
        session never saw, with the targets and the reason."""
        return [(s, v) for s, v in self.latest.values() if v.status is Status.UNKNOWN]

    def skipped_steps(self) -> list[StepView]:
        return [v for v in self.steps.values() if v.phase == "skipped"]

    def _log(self, event: Event, level: str, text: str) -> None:
        self.log.append((event.at, level, text))

    def apply(self, event: Event) -> set[str]:
        """Fold one event in. Returns the parts that changed: steps, detail, log, gauges, ended."""
        self.state.apply(event)
        handler = _HANDLERS.get(type(event))
        if handler is None:
            self._log(event, "debug", event.type)
            return {"log"}
        return {"log"} | handler(self, event)

    def _fix(self, step: str, fix_id: str) -> FixView:
        """The step's view of a fix, bound to the fold's record of it (a new attempt of a
        fix is a new record: the view follows it)."""
        record = self.state.fixes[fix_id]
        fixes = self.step(step).fixes
        view = fixes.get(fix_id)
        if view is None or view.record is not record:
            view = fixes[fix_id] = FixView(record)
        return view

    # -- one handler per event type (`_HANDLERS`), each returning the parts it changed

    def _on_started(self, event: SessionStarted) -> set[str]:
        self.started = event
        where = event.scenario or event.inventory_path or "inventory"
        self._log(event, "info", f"session {event.session_id} started on {where}")
        return set()

    def _on_resumed(self, event: SessionResumed) -> set[str]:
        self._log(
            event, "info", f"resumed at {event.from_step} ({event.events_loaded} events replayed)"
        )
        return set()

    def _on_ended(self, event: SessionEnded) -> set[str]:
        self.ended = event
        for view in self.steps.values():
            if view.phase not in _SETTLED and view.phase not in ("pending", "skipped"):
                # the walk stopped here: what it judged so far is what the step shows
                view.phase, view.reason = "stopped", event.reason
        word = "healthy" if event.healthy else "not healthy"
        self._log(
            event,
            "info" if event.healthy else "warn",
            f"session ended: {word}" + (f" ({event.reason})" if event.reason else ""),
        )
        return {"ended", "steps", "detail"}

    def _on_step(self, event: StepChanged) -> set[str]:
        view = self.step(event.step)
        view.phase = event.phase
        view.reason = event.reason
        self.current = event.step
        extra = f": {event.reason}" if event.reason else ""
        self._log(event, "info", f"[{event.step}] {event.phase}{extra}")
        return {"steps", "detail"}

    def _on_probe_sent(self, event: ProbeSent) -> set[str]:
        self.step(event.step).sent.append((event.target, event.command))
        self._log(event, "debug", f"{event.target}: {event.command}")
        return set()

    def _on_probe_answered(self, event: ProbeAnswered) -> set[str]:
        probes = self.step(event.step).probes
        probes.append(event.result)
        res = event.result
        if res.error:
            self._log(event, "warn", f"{res.target}: {res.command}: {res.error}")
        # the detail shows no probe, only whether the step has raw output (its first answer)
        return {"detail"} if len(probes) == 1 else set()

    def _on_verdict(self, event: VerdictReached) -> set[str]:
        verdict = event.verdict
        self.step(event.step).verdicts[verdict.fault] = verdict
        self.latest[verdict.fault] = (event.step, verdict)
        if verdict.status in (Status.FAIL, Status.WARN):
            self.found.setdefault(verdict.fault, (event.step, verdict))
        for other in self.steps.values():
            earlier = other.verdicts.get(verdict.fault)
            if other.id == event.step or earlier is None or not earlier.is_finding:
                continue
            if verdict.status in (Status.PASS, Status.BENIGN):
                other.resolved_later.add(verdict.fault)
            else:
                other.resolved_later.discard(verdict.fault)
        level = "info" if verdict.status in (Status.PASS, Status.BENIGN) else "warn"
        self._log(
            event, level, f"[{event.step}] {verdict.status}: {verdict.fault}: {verdict.summary}"
        )
        return {"steps", "detail"}

    def _on_measurement(self, event: MeasurementTaken) -> set[str]:
        m = event.measurement
        self.step(event.step).measurements.append(m)
        self.step(event.step).direct.append(self.direct_cabled)
        self.measurements.append(m)
        note = "" if m.valid else f" (not evidence: {m.reason})"
        self._log(event, "info" if m.valid else "warn", f"{m.target}: {m.value:.2f} {m.unit}{note}")
        return {"detail", "gauges"}

    def _on_answered(self, event: OperatorAnswered) -> set[str]:
        changed: set[str] = set()
        if event.question.startswith("apply fix ") and event.answer == "no":
            changed = {"detail", "steps"}  # the fold marked the fix declined
        self._log(event, "info", f"operator: {event.question} -> {event.answer}")
        return changed

    def _on_physical_requested(self, event: PhysicalActionRequested) -> set[str]:
        self.waiting = event
        self._log(event, "warn", f"hands needed: {event.kind} on {', '.join(event.nodes)}")
        return {"detail"}

    def _on_physical_done(self, event: PhysicalActionDone) -> set[str]:
        self.waiting = None
        by = "the lab" if event.performed_by == "lab" else "the operator"
        obs = f": {event.observed}" if event.observed else ""
        self._log(event, "info", f"{event.kind} on {', '.join(event.nodes)} done by {by}{obs}")
        return {"detail"}

    def _on_transition(self, event: LinkTransitionSeen) -> set[str]:
        self._log(event, "warn", f"link transition on {event.node} ({event.cause})")
        return set()

    def _on_drained(self, event: NodeDrained) -> set[str]:
        boot = f", boot_id {event.boot_id[:8]}" if event.boot_id else ""
        self._log(event, "info", f"{event.node} drained{boot}")
        return set()

    def _on_export(self, event: ExportTaken) -> set[str]:
        self.step(event.step).exports.append(event)
        self._log(
            event,
            "info",
            f"export {event.switch}:{event.file} "
            f"({len(event.contents)} bytes, sha256 {event.sha256[:12]}) kept",
        )
        return {"detail"}

    def _on_fix_previewed(self, event: FixPreviewed) -> set[str]:
        self.step(event.step).fixes[event.fix_id] = FixView(self.state.fixes[event.fix_id])
        self._log(event, "info", f"fix offered: {event.summary}")
        return {"detail", "steps"}

    def _on_fix_applied(self, event: FixApplied) -> set[str]:
        if self.first_fix_at is None:
            self.first_fix_at = len(self.measurements)
        step = self.step(event.step)
        if step.fix_at is None:
            step.fix_at = len(step.measurements)
        self._fix(event.step, event.fix_id)
        armed = f", rollback armed ({event.rollback_armed})" if event.rollback_armed else ""
        self._log(event, "info", f"fix applied on {event.target}{armed}")
        return {"detail", "steps"}

    def _on_fix_verified(self, event: FixVerified) -> set[str]:
        self._fix(event.step, event.fix_id)
        self._log(
            event,
            "info" if event.ok else "error",
            f"fix {'verified' if event.ok else 'did not verify'}: {event.fault}"
            + (f" ({event.detail})" if event.detail else ""),
        )
        return {"detail", "steps"}

    def _on_fix_rolled_back(self, event: FixRolledBack) -> set[str]:
        self._fix(event.step, event.fix_id)
        restored = "restored" if event.restored else "NOT confirmed restored"
        self._log(event, "error", f"fix rolled back ({event.reason}); {restored}")
        return {"detail", "steps"}

    def _on_fix_refused(self, event: FixRefusedEvent) -> set[str]:
        self._log(event, "error", f"fix refused on {event.target}: {event.reason}")
        return {"detail", "steps"}

    def _on_rollback_armed(self, event: RollbackArmed) -> set[str]:
        fix = self._fix(event.step, event.fix_id)
        fix.rollback = f"{event.name} on {event.target}, fires in {event.window_s:.0f} s"
        self._log(
            event,
            "info",
            f"rollback armed: {event.name} on {event.target} "
            f"({event.window_s:.0f} s dead-man window)",
        )
        return {"detail"}

    def _on_rollback_disarmed(self, event: RollbackDisarmed) -> set[str]:
        fix = self._fix(event.step, event.fix_id)
        fix.rollback = f"{event.name} on {event.target} disarmed"
        self._log(event, "info", f"rollback {event.name} on {event.target} disarmed")
        return {"detail"}

    def _on_note(self, event: Note) -> set[str]:
        prefix = f"[{event.step}] " if event.step else ""
        self._log(event, event.level, prefix + event.text)
        return set()


_HANDLERS: dict[type[Event], Callable[[SessionView, Any], set[str]]] = {
    SessionStarted: SessionView._on_started,
    SessionResumed: SessionView._on_resumed,
    SessionEnded: SessionView._on_ended,
    StepChanged: SessionView._on_step,
    ProbeSent: SessionView._on_probe_sent,
    ProbeAnswered: SessionView._on_probe_answered,
    VerdictReached: SessionView._on_verdict,
    MeasurementTaken: SessionView._on_measurement,
    OperatorAnswered: SessionView._on_answered,
    PhysicalActionRequested: SessionView._on_physical_requested,
    PhysicalActionDone: SessionView._on_physical_done,
    LinkTransitionSeen: SessionView._on_transition,
    NodeDrained: SessionView._on_drained,
    ExportTaken: SessionView._on_export,
    FixPreviewed: SessionView._on_fix_previewed,
    FixApplied: SessionView._on_fix_applied,
    FixVerified: SessionView._on_fix_verified,
    FixRolledBack: SessionView._on_fix_rolled_back,
    FixRefusedEvent: SessionView._on_fix_refused,
    RollbackArmed: SessionView._on_rollback_armed,
    RollbackDisarmed: SessionView._on_rollback_disarmed,
    Note: SessionView._on_note,
}


def _probe_text(p: ProbeResult) -> str:
    head = f"# {p.target}  $ {p.command}  (exit {p.exit_status}"
    head += f", {p.error})" if p.error else ")"
    return f"{head}\n{p.text}"


def raw_for(step: StepView, ev: Evidence | None) -> str:
    """The recorded output behind one evidence row (or the whole step): the evidence's own raw
    text, else the probes of its target running its command, else its measurement's tool output,
    else every probe of its target, else every probe of the step."""
    if ev is not None:
        if ev.raw:
            return ev.raw
        node = ev.target.split("/")[0]
        mine = [p for p in step.probes if p.target in (ev.target, node)]
        same = [
            p for p in mine if ev.command and (ev.command in p.command or p.command in ev.command)
        ]
        if same:
            return "\n\n".join(_probe_text(p) for p in same)
        for m in step.measurements:
            if m.target == ev.target and m.extra.get("raw"):
                parts = [f"# client $ {m.extra.get('command', '')}", str(m.extra["raw"])]
                if m.extra.get("server_raw"):
                    parts += ["# server", str(m.extra["server_raw"])]
                return "\n".join(parts)
        if mine:
            return "\n\n".join(_probe_text(p) for p in mine)
    text = "\n\n".join(_probe_text(p) for p in step.probes)
    return text or "(no raw output recorded for this step)"
