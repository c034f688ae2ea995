"""Engine events: what happened, in the past tense. One type per fact.

The engine emits these through its event sink; the session log writes each as one JSON line
(`to_json`, with `type` and `at`), and rebuilds them with `event_from_json` for resume, replay and
reports, both through the typed codec of `wizard.codec` (the round trip is lossless); the TUI
renders them. `RailSampled` is high-rate gauge data: it goes to the UI and is not written to the
log (the log keeps the measurements themselves).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from wizard.model import Measurement, ProbeResult, Verdict


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    type: ClassVar[str] = "event"
    persist: ClassVar[bool] = True
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        """The event as JSON data: `type`, then every field (`wizard.codec`)."""
        from wizard import codec

        return {"type": self.type, **codec.encode(self)}


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStarted(Event):
    type: ClassVar[str] = "session_started"
    session_id: str
    fabwiz_version: str
    log_version: int
    command: str  # "fix", "check", "run", "demo"
    inventory_digest: str = ""
    inventory_path: str = ""
    scenario: str | None = None
    nodes: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionResumed(Event):
    type: ClassVar[str] = "session_resumed"
    from_step: str
    events_loaded: int
    torn_tail: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEnded(Event):
    type: ClassVar[str] = "session_ended"
    healthy: bool
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class StepChanged(Event):
    """The bisection moved: `step` entered `phase` (probing, verdict, fix_offered, exporting,
    applying, verifying, done, skipped, waiting_physical...)."""

    type: ClassVar[str] = "step_changed"
    step: str
    phase: str
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeSent(Event):
    type: ClassVar[str] = "probe_sent"
    step: str
    target: str
    command: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeAnswered(Event):
    type: ClassVar[str] = "probe_answered"
    step: str
    probe: str  # the probe name (`name` or `name:netdev`)
    result: ProbeResult


@dataclass(frozen=True, slots=True, kw_only=True)
class VerdictReached(Event):
    type: ClassVar[str] = "verdict_reached"
    step: str
    verdict: Verdict


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasurementTaken(Event):
    type: ClassVar[str] = "measurement_taken"
    step: str
    measurement: Measurement


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorAnswered(Event):
    type: ClassVar[str] = "operator_answered"
    step: str
    question: str
    answer: str


# The questions the session's fold reads the answers of (the log's words for them).
REBOOT_PROOF_QUESTION = "reboot proof"  # the persist step's offer to prove by a reboot


def physical_question(kind: str) -> str:
    """The question a physical action's answer (done, skip...) is recorded under."""
    return f"physical:{kind}"


@dataclass(frozen=True, slots=True, kw_only=True)
class PhysicalActionRequested(Event):
    type: ClassVar[str] = "physical_action_requested"
    step: str
    kind: str
    nodes: tuple[str, ...]
    instructions: str
    # for a recable: (node, port, destination) moves, and the moves that put it back
    cables: tuple[tuple[str, str, str], ...] = ()
    undo: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PhysicalActionDone(Event):
    type: ClassVar[str] = "physical_action_done"
    step: str
    kind: str
    nodes: tuple[str, ...]
    performed_by: str  # "operator" or "lab"
    observed: str = ""  # e.g. "spark3 back with a new boot_id"


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkTransitionSeen(Event):
    """A link transition on a node: caused by a fix, prompted (recabling) or seen in counters."""

    type: ClassVar[str] = "link_transition_seen"
    node: str
    cause: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeDrained(Event):
    type: ClassVar[str] = "node_drained"
    node: str
    boot_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class BisectionConcluded(Event):
    """What a bisection step concluded, in one sentence with the numbers on both sides:
    `conclusion` is "switch-path", "host", "cleared-by-drain", "skipped" or "line-rate"."""

    type: ClassVar[str] = "bisection_concluded"
    step: str
    conclusion: str
    sentence: str
    nodes: tuple[str, ...] = ()
    switched_gbps: float | None = None
    direct_gbps: float | None = None
    faults: tuple[str, ...] = ()  # "skipped": the open findings that explained the numbers


@dataclass(frozen=True, slots=True, kw_only=True)
class ExportTaken(Event):
    """A verified `/export file=NAME` of a switch; `contents` is the `.rsc` text as kept."""

    type: ClassVar[str] = "export_taken"
    step: str
    switch: str
    file: str
    contents: str
    sha256: str
    purpose: str = "pre-fix"  # or "golden"


@dataclass(frozen=True, slots=True, kw_only=True)
class FixPreviewed(Event):
    type: ClassVar[str] = "fix_previewed"
    step: str
    fix_id: str  # stable within the session: "<step>:<fault>:<target>"
    fault: str
    target: str
    summary: str
    preview: str
    bounces_links: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FixApplied(Event):
    type: ClassVar[str] = "fix_applied"
    step: str
    fix_id: str
    fault: str
    target: str
    export: str | None = None
    rollback_armed: str | None = None  # the scheduler entry name on the switch
    # target -> when this change landed, on the target's own clock (None: clock unreadable)
    changed_at: dict[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class FixVerified(Event):
    type: ClassVar[str] = "fix_verified"
    step: str
    fix_id: str
    fault: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class FixRolledBack(Event):
    type: ClassVar[str] = "fix_rolled_back"
    step: str
    fix_id: str
    fault: str
    reason: str
    restored: bool = False  # the switch/host is confirmed back at its exported state
    # target -> when the rollback landed, on the target's own clock (None: clock unreadable)
    changed_at: dict[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class RollbackArmed(Event):
    """A dead-man rollback armed on a switch (a /system/scheduler entry) or a host (a timer)."""

    type: ClassVar[str] = "rollback_armed"
    step: str
    fix_id: str
    target: str
    name: str
    window_s: float
    script: str
    wall_window_s: float | None = None  # the window in this machine's seconds (a lab runs faster)


@dataclass(frozen=True, slots=True, kw_only=True)
class RollbackDisarmed(Event):
    type: ClassVar[str] = "rollback_disarmed"
    step: str
    fix_id: str
    target: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FixRefusedEvent(Event):
    type: ClassVar[str] = "fix_refused"
    step: str
    fault: str
    target: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Note(Event):
    """A line for the log pane: what the engine is doing, or a warning/error for the operator."""

    type: ClassVar[str] = "note"
    level: str  # "info", "warn", "error"
    text: str
    step: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RailSampled(Event):
    """Gauge data: one node x rail throughput sample from counters. Not persisted."""

    type: ClassVar[str] = "rail_sampled"
    persist: ClassVar[bool] = False
    node: str
    netdev: str
    gbps: float


@dataclass(frozen=True, slots=True, kw_only=True)
class TrafficPlanned(Event):
    """The rail tests about to run: rounds one after the other, the pairs of a round at once
    (each `client->server` as its measurement's target), `duration_s` each. For progress;
    not persisted (the log keeps the measurements themselves)."""

    type: ClassVar[str] = "traffic_planned"
    persist: ClassVar[bool] = False
    step: str
    rounds: tuple[tuple[str, ...], ...]
    duration_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class VersionsRecorded(Event):
    """The versions read so far (wizard.versions): node -> {platform, dgx_os, kernel, ...},
    switch -> {model, routeros, firmware, serial, ...}. The last one is the session's record."""

    type: ClassVar[str] = "versions_recorded"
    step: str = ""
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    switches: dict[str, dict[str, str]] = field(default_factory=dict)


EVENT_TYPES: dict[str, type[Event]] = {
    cls.type: cls
    for cls in (
        SessionStarted,
        SessionResumed,
        SessionEnded,
        StepChanged,
        ProbeSent,
        ProbeAnswered,
        VerdictReached,
        MeasurementTaken,
        OperatorAnswered,
        PhysicalActionRequested,
        PhysicalActionDone,
        LinkTransitionSeen,
        NodeDrained,
        BisectionConcluded,
        ExportTaken,
        FixPreviewed,
        FixApplied,
        FixVerified,
        FixRolledBack,
        RollbackArmed,
        RollbackDisarmed,
        FixRefusedEvent,
        Note,
        RailSampled,
        TrafficPlanned,
        VersionsRecorded,
    )
}


def event_from_json(data: dict[str, Any]) -> Event:
    """Rebuild an event from its JSON form, through its type's codec (`wizard.codec`): equal to
    the event written. Raises KeyError on an unknown type, ValueError on data that does not fit
    the event's fields."""
    from wizard import codec

    cls = EVENT_TYPES[data["type"]]
    return codec.decode(cls, {k: v for k, v in data.items() if k != "type"})
