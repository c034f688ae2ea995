"""What a walk produces and what a resumed walk starts from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wizard.drain import DrainGuard
from wizard.model import FixState, Verdict


@dataclass(slots=True)
class FixRecord:
    fix_id: str
    fault: str
    target: str
    applied: bool = False
    verified: bool = False
    rolled_back: bool = False
    export: str | None = None
    refused: str | None = None
    state: FixState | None = None  # the final state, when the flags do not say it

    def __post_init__(self) -> None:
        # a state given as its text ("" for none: the flags say it) is read into the enum
        self.state = FixState.read(self.state) if self.state else None

    @property
    def final_state(self) -> FixState:
        """The state the fix ended in (the flags say it unless `state` does)."""
        if self.state is not None:
            return self.state
        if self.refused:
            return FixState.REFUSED
        if self.rolled_back:
            return FixState.ROLLED_BACK
        if self.verified:
            return FixState.VERIFIED
        return FixState.APPLIED if self.applied else FixState.DECLINED


@dataclass(slots=True)
class RunResult:
    healthy_before: bool | None = None
    healthy_after: bool | None = None
    steps: dict[str, list[Verdict]] = field(default_factory=dict)
    fixes: list[FixRecord] = field(default_factory=list)
    rails_gbps: dict[str, float] = field(default_factory=dict)
    halves_gbps: dict[str, float] = field(default_factory=dict)
    # the nodes whose both-halves test crossed an ISL (alone on their switch): the ISL's share
    halves_across_isl: set[str] = field(default_factory=set)
    nccl_busbw: float | None = None
    unjudged: dict[str, str] = field(
        default_factory=dict
    )  # target -> why its number is no evidence
    aborted: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "healthy_before": self.healthy_before,
            "healthy_after": self.healthy_after,
            "steps": [
                {"step": s, "verdicts": [v.to_json() for v in vs]} for s, vs in self.steps.items()
            ],
            "fixes": [
                {
                    "fault": f.fault,
                    "target": f.target,
                    "applied": f.applied,
                    "verified": f.verified,
                    "rolled_back": f.rolled_back,
                    "export": f.export,
                    "state": f.final_state.label,
                }
                for f in self.fixes
            ],
            "measurements": {
                "rails_gbps": dict(sorted(self.rails_gbps.items())),
                "halves_gbps": dict(sorted(self.halves_gbps.items())),
                "halves_across_isl": sorted(self.halves_across_isl),
                "nccl_busbw": self.nccl_busbw,
            },
            "unjudged": dict(sorted(self.unjudged.items())),
            "aborted": self.aborted,
        }


@dataclass(slots=True)
class Resume:
    """What a resumed engine takes from the session log (wizard/session.py folds it)."""

    step: str
    done_steps: tuple[str, ...] = ()
    verified_fixes: tuple[str, ...] = ()  # fix ids applied and verified: never repeated
    pending_rollbacks: tuple[tuple[str, str, str, bool], ...] = ()  # (fix_id, target, name, ok)
    rollback_scripts: dict[str, str] = field(default_factory=dict)  # name -> armed script
    fix_counter: int = 0  # exports and rollbacks already numbered: new names never collide
    direct_cabled: bool = False  # cut off mid direct-connect test: two nodes still cabled together
    direct_undo: tuple[tuple[str, str, str], ...] = ()  # the recorded moves that restore it
    guard: DrainGuard | None = None
    fixes: tuple[FixRecord, ...] = ()
    healthy_before: bool | None = None
    deferred: tuple[str, ...] = ()  # the direct-connect test waits for these findings' fixes
    exports: dict[str, str] = field(default_factory=dict)  # switch -> last pre-fix export text
    disarmed: tuple[str, ...] = ()  # rollback entries the log records as disarmed
    unknown: tuple[str, ...] = ()  # fault ids whose last verdict was `unknown`
