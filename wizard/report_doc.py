"""The report as a typed document, in reading order, for the Markdown and HTML templates.

`doc_from_data` turns the report data (`wizard.report.build_report`, already redacted when asked)
into sections a ticket reader wants in this order: the verdict line, the faults found and
whether they were fixed, the numbers before and after, what was never checked, the step-by-step
evidence, and last an appendix of raw outputs and exports. Evidence rows point at their raw
output in the appendix by reference (`raw_ref`) instead of carrying it inline, so the body of
the report stays a few screens long. The templates only lay this out; they compute nothing.
"""

from __future__ import annotations

from typing import Any

from wizard.model import Status
from wizard.report_records import (
    ChangeRow,
    Conclusion,
    EvidenceRow,
    FaultRow,
    FixBlock,
    MeasuredRow,
    RawBlock,
    ReportDoc,
    Rerun,
    StepFinding,
    StepLine,
    StepSection,
    UnseenRow,
    VerdictBlock,
    VersionRow,
    fmt_value,
    kind_label,
)

_SEVERITY = {s.value: s.severity for s in Status}


def _change(m: dict[str, Any]) -> str:
    if m["change"] is None:
        return "—"
    before = m["before"] or 0.0
    pct = f" ({m['change'] / before * 100:+.0f} %)" if before else ""
    return f"{m['change']:+.2f} {m['unit']}{pct}"


def _version_rows(rows: list[dict[str, Any]], nodes: list[str]) -> list[VersionRow]:
    """One row per component and version, naming the targets that run it ("all 4 nodes" when
    every node does): a rack of identical nodes reads in a dozen lines, and the odd one out
    stands out on its own row."""
    grouped: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for v in rows:
        targets, sources = grouped.setdefault((v["component"], v["version"]), ([], []))
        if v["target"] not in targets:
            targets.append(v["target"])
        if v["source"] not in sources:
            sources.append(v["source"])
    out = []
    for (component, version), (targets, sources) in grouped.items():
        who = (
            f"all {len(nodes)} nodes"
            if len(nodes) > 1 and sorted(targets) == sorted(nodes)
            else ", ".join(targets)
        )
        out.append(VersionRow(who, component, version, ", ".join(sources)))
    return out


def _inventory(s: dict[str, Any]) -> str:
    digest = s["inventory_digest"]
    short = f" (digest {digest[:19]}…)" if len(digest) > 19 else f" ({digest})" if digest else ""
    return f"{s['inventory'] or '—'}{short}"


EVIDENCE_ROWS = 8
PREVIEW_LINES = 15


def _short(command: str, limit: int = 90) -> str:
    return command if len(command) <= limit else command[: limit - 1] + "…"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _limits(overrides: dict[str, Any]) -> str:
    if not overrides:
        return "the table's defaults"
    changed = ", ".join(f"{k}={v}" for k, v in sorted(overrides.items()))
    return f"the table's defaults, with the inventory's {changed}"


SUMMARY_CHARS = 200


def _step_line(st: dict[str, Any], blocks: list[VerdictBlock]) -> StepLine:
    tally: dict[str, int] = {}
    for b in blocks:
        tally[b.status] = tally.get(b.status, 0) + 1
    counts = ", ".join(
        f"{n} {status}" for status, n in sorted(tally.items(), key=lambda kv: -_SEVERITY[kv[0]])
    )
    found: list[StepFinding] = []
    for b in sorted(blocks, key=lambda b: -_SEVERITY.get(b.status, 0)):
        if b.status in ("pass", "benign"):
            continue
        summary = b.summary
        if len(summary) > SUMMARY_CHARS:  # the whole of it is in the appendix's step
            summary = summary[: SUMMARY_CHARS - 1] + "…"
        found.append(StepFinding(b.status, b.fault, b.targets, summary))
    ranges: dict[tuple[str, str], list[float]] = {}
    for m in st["measurements"]:
        if m["valid"] and m["value"] is not None:
            kind = kind_label(m["kind"]) + (" -b" if m.get("bidir") else "")
            ranges.setdefault((kind, m["unit"]), []).append(float(m["value"]))
    invalid = sum(1 for m in st["measurements"] if not m["valid"])
    parts = []
    for (kind, unit), values in ranges.items():
        lo, hi = min(values), max(values)
        span = f"{lo:.2f} {unit}" if lo == hi else f"{lo:.2f}-{hi:.2f} {unit}"
        parts.append(f"{len(values)} {kind}: {span}")
    if invalid:
        parts.append(f"{invalid} not counted as evidence")
    return StepLine(
        st["step"],
        st["phase"],
        counts or "no verdict",
        tuple(found),
        "; ".join(parts),
    )


class _Raws:
    """The appendix being built: each raw text gets the next `raw-N` reference."""

    def __init__(self) -> None:
        self.blocks: list[RawBlock] = []

    def __call__(self, title: str, text: str, lang: str = "") -> str:
        ref = f"raw-{len(self.blocks) + 1}"
        self.blocks.append(RawBlock(ref, title, text, lang))
        return ref


def doc_from_data(data: dict[str, Any]) -> ReportDoc:
    s = data["session"]
    doc = ReportDoc(
        id=s["id"],
        verdict_line=data["verdict_line"],
        healthy=data["summary"]["healthy"],
        torn_tail=bool(s["torn_tail"]),
        data=data,
    )
    raw = _Raws()
    _fill_overview(doc, data)
    _fill_session(doc, s)
    _fill_summary(doc, data)
    for st in data["steps"]:
        blocks = tuple(_verdict_block(st["step"], v, raw) for v in st["verdicts"])
        doc.steps.append(_step_section(st, blocks, raw))
        doc.step_lines.append(_step_line(st, list(blocks)))
    doc.fixes = [_fix_block(f, raw) for f in data["fixes"]]
    doc.refused = [
        f"Refused {r['fault']} on {r['target']} ({r['step']}): {r['reason']}"
        for r in data["refused"]
    ]
    for e in data["exports"]:
        if e["fix_id"] is None:
            raw(
                f"{e['purpose']} export: {e['switch']} {e['file']} "
                f"(sha256 {e['sha256'][:16]}, {e['at']})",
                e["contents"],
                "routeros",
            )
    doc.operator = [(o["at"], o["step"], o["what"], o["result"]) for o in data["operator"]]
    doc.notes = [f"{n['level']}: {n['text']}" for n in data["notes"]]
    doc.errors = [n["text"] for n in data["notes"] if n["level"] == "error"]
    doc.log_warnings = list(s["warnings"])
    doc.raw = raw.blocks
    return doc


def _fill_overview(doc: ReportDoc, data: dict[str, Any]) -> None:
    """The first page: faults, before/after, what was not checked, the bisection's sentences."""
    doc.faults = [
        FaultRow(
            f["fault"],
            f["status"],
            ", ".join(f["targets"]),
            f["step"],
            f["proof"],
            bool(f["fixed"]),
            f["export"] or "",
        )
        for f in data["faults"]
    ]
    doc.before_after = [
        ChangeRow(
            m["target"],
            kind_label(m["kind"]) + (" -b (both directions)" if m.get("bidir") else ""),
            fmt_value(m["before"], m["unit"]),
            fmt_value(m["after"], m["unit"])
            + (f" (in {m['after_step']}, before the last fix)" if m.get("stale") else ""),
            _change(m),
        )
        for m in data["measurements"]
    ]
    doc.not_checked = [
        UnseenRow(n["fault"], ", ".join(n["targets"]), n["why"])
        for n in data["summary"]["not_checked"]
    ]
    doc.not_proven = list(data["summary"].get("not_proven", []))
    doc.conclusions = [
        Conclusion(c["step"], c["conclusion"], c["sentence"]) for c in data.get("conclusions", [])
    ]


def _fill_session(doc: ReportDoc, s: dict[str, Any]) -> None:
    """The session's table, its one-line form, and the versions it read."""
    doc.session = [
        ("Outcome", s["outcome"] + (f" ({s['end_reason']})" if s["end_reason"] else "")),
        ("Started", s["started_at"]),
        ("Ended", s["ended_at"] or "—"),
        ("Command", f"fabwiz {s['command']}"),
        ("fabwiz", f"{s['fabwiz_version']} (session log v{s['log_version']})"),
        ("Inventory", _inventory(s)),
        ("Scenario", s["scenario"] or "—"),
        ("Nodes", ", ".join(s["nodes"]) or "—"),
        ("Switches", ", ".join(s["switches"]) or "—"),
        ("Resumed", str(s["resumed"])),
        ("Redacted", "yes" if s["redacted"] else "no"),
        ("Expectations", _limits(s.get("expectations") or {})),
    ]
    when = f"{s['started_at']} to {s['ended_at']}" if s["ended_at"] else f"from {s['started_at']}"
    doc.session_line = (
        f"fabwiz {s['command']} ({s['outcome']}), {when}; "
        f"nodes {', '.join(s['nodes']) or '—'}; switches {', '.join(s['switches']) or '—'}; "
        f"fabwiz {s['fabwiz_version']}" + ("; redacted" if s["redacted"] else "")
    )


def _fill_summary(doc: ReportDoc, data: dict[str, Any]) -> None:
    """The summary lines, the findings, the measurements that are no evidence, the re-runs."""
    doc.versions = _version_rows(data.get("versions", []), list(data["session"]["nodes"]))
    summ = data["summary"]
    counts = ", ".join(
        f"{n} {st}"
        for st, n in sorted(summ["verdicts"].items(), key=lambda kv: -_SEVERITY.get(kv[0], 0))
    )
    fx = summ["fixes"]
    doc.summary = [
        f"Verdicts (final, per fault): {counts or 'none'}",
        f"Fixes: {fx['verified']} verified, {fx['rolled_back']} rolled back, "
        f"{fx['verify_failed']} failed verification, {fx['applied']} applied and unverified, "
        f"{fx['previewed']} previewed only",
    ]
    if summ["undrained_nodes"]:
        doc.summary.append(
            "Nodes with a link transition and no AC drain since: "
            + ", ".join(summ["undrained_nodes"])
        )
    doc.findings = [
        VerdictBlock(f["status"], f["fault"], ", ".join(f["targets"]), f["summary"], ())
        for f in summ["findings"]
    ]
    doc.invalid = [
        MeasuredRow(m["target"], m["step"], fmt_value(m["value"], m["unit"]), m["reason"])
        for m in data["invalid_measurements"]
    ]
    for r in data.get("rerun", []):
        got = fmt_value(r["value"], "GB/s") if r["value"] is not None else "no result"
        built = f", {r['versions']}" if r.get("versions") else ""
        doc.reruns.append(
            Rerun(f"{r['target']} ({got}{built}), on {r['node'] or 'the first node'}", r["command"])
        )


def _verdict_block(step: str, v: dict[str, Any], raw: _Raws) -> VerdictBlock:
    """One verdict of a step: in the body a finding's evidence (its worst rows first, up to
    EVIDENCE_ROWS); a pass stands on one line. Every row is in the appendix."""
    rows = [
        EvidenceRow(
            e["target"],
            e["command"],
            e["observed"],
            e["expected"],
            e["status"],
            raw(f"{step}: {e['target']} $ {_short(e['command'])}", e["raw"])
            if e.get("raw")
            else "",
        )
        for e in v["evidence"]
    ]
    shown: list[EvidenceRow] = []
    if v["status"] not in ("pass", "benign"):
        shown = sorted(rows, key=lambda r: -_SEVERITY.get(r.status, 0))[:EVIDENCE_ROWS]
    more = ""
    if len(shown) < len(rows):
        more = raw(
            f"{step}: {v['fault']}: {_plural(len(rows), 'evidence row')}",
            "\n".join(
                f"{r.status.upper():8} {r.target}  $ {r.command}\n"
                f"         observed: {r.observed}\n         expected: {r.expected}"
                for r in rows
            ),
        )
    return VerdictBlock(
        v["status"],
        v["fault"],
        ", ".join(v["targets"]),
        v["summary"],
        tuple(shown),
        len(rows),
        more,
    )


def _step_section(st: dict[str, Any], blocks: tuple[VerdictBlock, ...], raw: _Raws) -> StepSection:
    measured = tuple(
        MeasuredRow(
            m["target"],
            kind_label(m["kind"]),
            fmt_value(m["value"], m["unit"]),
            "yes" if m["valid"] else f"no: {m['reason']}",
        )
        for m in st["measurements"]
    )
    probes_ref = ""
    if st["probes"]:
        listing = "\n".join(
            f"{p['target']}  {p['probe']}  $ {p['command']}  (exit {p['exit_status']}"
            + (f", error {p['error']}" if p["error"] else "")
            + f", {p['duration_s']} s)"
            for p in st["probes"]
        )
        probes_ref = raw(f"{st['step']}: {_plural(len(st['probes']), 'probe')}", listing)
    return StepSection(st["step"], st["phase"], blocks, measured, len(st["probes"]), probes_ref)


def _fix_lines(f: dict[str, Any]) -> list[str]:
    lines = [f"Fix: {f['summary']} ({f['fix_id']}, step {f['step']})"]
    if f["applied_at"]:
        lines.append(f"Applied: {f['applied_at']}")
    if f["rollback_armed"]:
        lines.append(f"Dead-man rollback armed: {f['rollback_armed']}")
    if f["bounces_links"]:
        lines.append("Bounces links: a drain is needed before measuring")
    if f["verified_ok"] is not None:
        lines.append(
            f"Verification: {'passed' if f['verified_ok'] else 'FAILED'}"
            + (f": {f['verify_detail']}" if f["verify_detail"] else "")
        )
    if f["status"] == "rolled_back":
        restored = "confirmed restored" if f["restored"] else "not confirmed restored"
        lines.append(f"Rolled back ({restored}): {f['rollback_reason']}")
    return lines


def _fix_block(f: dict[str, Any], raw: _Raws) -> FixBlock:
    lines = _fix_lines(f)
    e = f["export"]
    title = ref = ""
    if e:
        title = (
            f"Export taken before the change: {e['switch']} {e['file']} (sha256 {e['sha256'][:16]})"
        )
        ref = raw(title, e["contents"], "routeros")
    preview = f["preview"]
    if preview.count("\n") >= PREVIEW_LINES:
        # a long preview (a whole netplan file) reads better in the appendix
        n = preview.rstrip("\n").count("\n") + 1
        lines.append(
            f"Preview ({n} lines): "
            + raw(f"Preview of {f['fault']} on {f['target']}", preview)
            + " in the appendix"
        )
        preview = ""
    return FixBlock(
        f["fault"], f["target"], f["status"].replace("_", " "), tuple(lines), preview, ref, title
    )


__all__ = ["doc_from_data"]
