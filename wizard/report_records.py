"""The records of a report document: faults, changes, evidence, verdicts, steps, fixes, raws.

`ReportDoc` and its rows are what `wizard.report_doc.doc_from_data` fills and the Markdown and
HTML templates lay out, plus the two value formatters both sides use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ChangeRow",
    "Conclusion",
    "EvidenceRow",
    "FaultRow",
    "FixBlock",
    "MeasuredRow",
    "RawBlock",
    "ReportDoc",
    "Rerun",
    "StepFinding",
    "StepLine",
    "StepSection",
    "UnseenRow",
    "VerdictBlock",
    "VersionRow",
    "fmt_value",
    "kind_label",
]


def fmt_value(value: float | None, unit: str) -> str:
    return "—" if value is None else f"{value:.2f} {unit}"


def kind_label(kind: str) -> str:
    return "NCCL busbw" if kind == "nccl" else kind


@dataclass(frozen=True, slots=True)
class FaultRow:
    fault: str
    status: str
    targets: str
    step: str
    proof: str
    fixed: bool
    export: str


@dataclass(frozen=True, slots=True)
class ChangeRow:
    """One measured target: its number before the first fix and after it, each under the
    column of when it was taken ("—" where there is none)."""

    target: str
    kind: str
    before: str
    after: str
    change: str


@dataclass(frozen=True, slots=True)
class UnseenRow:
    fault: str
    targets: str
    why: str


@dataclass(frozen=True, slots=True)
class Conclusion:
    step: str
    conclusion: str
    sentence: str


@dataclass(frozen=True, slots=True)
class VersionRow:
    target: str
    component: str
    version: str
    source: str


@dataclass(frozen=True, slots=True)
class EvidenceRow:
    target: str
    command: str
    observed: str
    expected: str
    status: str
    raw_ref: str  # "" or the id of its raw output in the appendix


@dataclass(frozen=True, slots=True)
class VerdictBlock:
    status: str
    fault: str
    targets: str
    summary: str
    evidence: tuple[EvidenceRow, ...]  # the rows shown in the body
    evidence_count: int = 0  # every row the verdict has
    evidence_ref: str = ""  # the appendix entry with all of them, when not all are shown


@dataclass(frozen=True, slots=True)
class MeasuredRow:
    target: str
    kind: str
    value: str
    evidence: str


@dataclass(frozen=True, slots=True)
class StepSection:
    step: str
    phase: str
    verdicts: tuple[VerdictBlock, ...]
    measurements: tuple[MeasuredRow, ...]
    probes: int
    probes_ref: str  # the appendix entry listing this step's probes


@dataclass(frozen=True, slots=True)
class StepFinding:
    status: str
    fault: str
    targets: str
    summary: str  # cut at SUMMARY_CHARS; the whole of it is in the appendix


@dataclass(frozen=True, slots=True)
class StepLine:
    """One step in a few lines for the body: its verdict counts, its findings (fault, where,
    what), its numbers as a range; the tables are in the appendix."""

    step: str
    phase: str
    counts: str  # "1 fail, 12 pass"
    findings: tuple[StepFinding, ...]
    measured: str  # "8 rail: 7.74-109.34 Gb/s; 1 NCCL busbw: 23.21 GB/s"


@dataclass(frozen=True, slots=True)
class FixBlock:
    fault: str
    target: str
    status: str
    lines: tuple[str, ...]  # what happened, one fact a line
    preview: str
    export_ref: str
    export_title: str


@dataclass(frozen=True, slots=True)
class RawBlock:
    ref: str
    title: str
    text: str
    lang: str = ""


@dataclass(frozen=True, slots=True)
class Rerun:
    title: str
    command: str


@dataclass(slots=True)
class ReportDoc:
    id: str
    verdict_line: str
    healthy: bool | None
    faults: list[FaultRow] = field(default_factory=list)
    before_after: list[ChangeRow] = field(default_factory=list)
    not_checked: list[UnseenRow] = field(default_factory=list)
    not_proven: list[str] = field(default_factory=list)  # proofs offered and not done
    conclusions: list[Conclusion] = field(default_factory=list)
    session: list[tuple[str, str]] = field(default_factory=list)
    torn_tail: bool = False
    versions: list[VersionRow] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    findings: list[VerdictBlock] = field(default_factory=list)
    invalid: list[MeasuredRow] = field(default_factory=list)
    reruns: list[Rerun] = field(default_factory=list)
    steps: list[StepSection] = field(default_factory=list)
    step_lines: list[StepLine] = field(default_factory=list)
    session_line: str = ""
    fixes: list[FixBlock] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    operator: list[tuple[str, str, str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the error notes, also in the body
    log_warnings: list[str] = field(default_factory=list)
    raw: list[RawBlock] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)  # the report data, for the charts
