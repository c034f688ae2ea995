"""The end of a session in a few lines: what was found, fixed, skipped or never checked, the
numbers before and after, and the commands to use next. Folded from the `SessionView`; pure
data (no Textual), so the end screen and its tests read the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from statistics import median

from screens.widgets.view_model import SessionView
from wizard.model import Measurement, Status


@dataclass(frozen=True, slots=True)
class Found:
    fault: str
    targets: tuple[str, ...]
    step: str  # where it was first found
    summary: str
    fixed: bool
    export: str = ""  # the pre-fix switch export of its verified fix


@dataclass(frozen=True, slots=True)
class Numbers:
    """One kind of measurement before the first fix and at the end."""

    what: str  # "rails (ib_write_bw, per rail)", "NCCL all_reduce busbw"
    unit: str
    before: tuple[float, ...]
    after: tuple[float, ...]

    @staticmethod
    def _span(values: tuple[float, ...]) -> str:
        if not values:
            return "not measured"
        if len(values) == 1:
            return f"{values[0]:.2f}"
        return f"{min(values):.1f}–{max(values):.1f} (median {median(values):.1f}, n={len(values)})"

    @property
    def before_text(self) -> str:
        return self._span(self.before)

    @property
    def after_text(self) -> str:
        return self._span(self.after)


@dataclass(frozen=True, slots=True)
class SessionSummary:
    session_id: str
    healthy: bool | None
    reason: str
    found: tuple[Found, ...]
    skipped: tuple[str, ...]  # step titles
    never_checked: tuple[tuple[str, tuple[str, ...], str], ...]  # (fault, targets, why)
    not_proven: tuple[str, ...]  # proofs offered and not done (the reboot proof)
    numbers: tuple[Numbers, ...]
    report_command: str
    resume_command: str


def session_reference(view: SessionView, folder: str) -> str:
    """How to name this session on the command line: its id when it sits in the default
    sessions folder, else its folder."""
    sid = view.started.session_id if view.started is not None else ""
    if not folder:
        return sid or "SESSION"
    from wizard.session import default_sessions_root

    path = Path(folder)
    if sid and path.name == sid and path.parent == default_sessions_root():
        return sid
    return folder


def summarise(view: SessionView, folder: str = "") -> SessionSummary:
    ref = session_reference(view, folder)
    found: dict[str, Found] = {}
    fixes = {f.fault: f for s in view.steps.values() for f in s.fixes.values()}
    for step_id, v in view.found.values():
        fix = fixes.get(v.fault)
        latest = view.latest.get(v.fault)
        fixed = (fix is not None and fix.state == "verified") or (
            latest is not None and latest[1].status in (Status.PASS, Status.BENIGN)
        )
        found[v.fault] = Found(
            v.fault,
            v.targets,
            view.step(step_id).info.title,
            v.summary,
            fixed,
            (fix.export or "") if fix is not None else "",
        )
    never = tuple((v.fault, v.targets, v.summary) for _s, v in view.never_checked())
    ended = view.ended
    return SessionSummary(
        session_id=view.started.session_id if view.started is not None else "",
        healthy=None if ended is None else ended.healthy,
        reason="" if ended is None else ended.reason,
        found=tuple(found.values()),
        skipped=tuple(s.info.title for s in view.skipped_steps()),
        never_checked=never,
        not_proven=tuple(view.state.proofs_not_done()),
        numbers=_numbers(view.measurements, view.measured_before_first_fix),
        report_command=f"fabwiz report {ref}",
        resume_command=f"fabwiz resume {ref}",
    )


def _numbers(measurements: list[Measurement], split: int) -> tuple[Numbers, ...]:
    """Before: the first measurement of each target before the first fix was applied. After:
    the latest of each target measured since (nothing when no fix was applied)."""
    out = []
    for kind, what in (("rail", "rails (ib_write_bw, per rail)"), ("nccl", "NCCL busbw")):
        ms = [m for m in measurements if m.kind == kind and m.valid]
        if not ms:
            continue
        first: dict[str, float] = {}
        for m in measurements[:split]:
            if m.kind == kind and m.valid:
                first.setdefault(m.target, m.value)
        last: dict[str, float] = {}
        for m in measurements[split:]:
            if m.kind == kind and m.valid:
                last[m.target] = m.value
        out.append(Numbers(what, ms[0].unit, tuple(first.values()), tuple(last.values())))
    return tuple(out)
