"""What the fold keeps per fix, rollback and measurement."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from wizard.model import FixState, Measurement

FixStatus = Literal["previewed", "applied", "verified", "verify_failed", "rolled_back"]
"""A fix as its own events say it (`FixRecord.status`): declined and refused read as previewed."""


@dataclass(slots=True)
class FixRecord:
    """One fix of the session by `fix_id`, with what happened to it so far."""

    fix_id: str
    step: str
    fault: str
    target: str
    summary: str = ""
    preview: str = ""
    bounces_links: bool = False
    state: FixState = FixState.PREVIEWED
    export: str | None = None
    rollback_armed: str | None = None
    verified_ok: bool | None = None
    verify_detail: str = ""
    rollback_reason: str = ""
    restored: bool = False
    previewed_at: float | None = None
    applied_at: float | None = None
    finished_at: float | None = None

    @property
    def applied(self) -> bool:
        """The change reached the target (whatever came after): never send it again."""
        return self.applied_at is not None

    @property
    def status(self) -> FixState:
        """The state as the fix's own events say it: a fix declined or refused before it was
        applied reads as previewed (what the report counts as "previewed only")."""
        if self.state in (FixState.DECLINED, FixState.REFUSED):
            return FixState.PREVIEWED
        return self.state


@dataclass(slots=True)
class RollbackRecord:
    """A dead-man rollback armed on a switch (scheduler entry) or a host (timer)."""

    name: str
    fix_id: str
    target: str
    step: str
    window_s: float
    script: str
    armed_at: float
    disarmed_at: float | None = None

    @property
    def armed(self) -> bool:
        return self.disarmed_at is None


@dataclass(frozen=True, slots=True)
class MeasurementRecord:
    step: str
    at: float
    measurement: Measurement


@dataclass(frozen=True, slots=True)
class BeforeAfter:
    """First and last valid measurement of one target (a rail, a pair, or the NCCL cluster)."""

    target: str
    kind: str
    unit: str
    before: MeasurementRecord
    after: MeasurementRecord | None  # None when the target was measured only once

    @property
    def delta(self) -> float | None:
        if self.after is None:
            return None
        return self.after.measurement.value - self.before.measurement.value
