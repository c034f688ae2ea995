"""Session reports for tickets: Markdown, standalone HTML and JSON, from a session log.

A support engineer reading a ticket needs what was checked, the evidence, each verdict, the fixes
with the switch exports taken before them, and the numbers before and after (per-rail Gb/s,
NCCL busbw). `build_report` turns a `LoadedSession` into plain data; the three renderers draw the
same data, so with `redact=True` (one `Redactor` for the whole report) a host has the same
placeholder in every format. The engine returns data, never markup (STYLE.md rule 2): this module
renders files for outside readers, not the terminal UI.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from wizard import report_data, report_render
from wizard.events import (
    ExportTaken,
    LinkTransitionSeen,
    NodeDrained,
    PhysicalActionDone,
    PhysicalActionRequested,
    ProbeAnswered,
    ProbeSent,
)
from wizard.model import Status, Verdict
from wizard.redact import Redactor
from wizard.report_doc import doc_from_data
from wizard.session import LoadedSession, SessionState

ReportFormat = Literal["md", "html", "json"]
REPORT_VERSION = 1


def _iso(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


# --- the data ----------------------------------------------------------------------------------


def _recorded_overrides(options: Mapping[str, Any]) -> dict[str, Any]:
    """The inventory's `expectations:` overrides the session start recorded ({}: defaults)."""
    context = options.get("context")
    raw = context.get("expectations") if isinstance(context, Mapping) else None
    return {str(k): v for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def build_report(
    loaded: LoadedSession,
    *,
    redact: bool = False,
    ceilings: Mapping[str, float] | None = None,
    redactor: Redactor | None = None,
    fabric_map: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The report as plain JSON data (what `render_json` prints and the others draw).
    `ceilings` are the expected numbers the charts draw against (keys `rail`, `rail_bidir`,
    `nccl`, `pass_ratio`, `warn_ratio`), from the expectations table of the caller. With
    `redact`, `redactor` (default: a fresh one for this session) replaces what identifies the
    site; pass the same one to redact other files consistently with this report."""
    state = loaded.state()
    started = loaded.started
    outcome: str
    if state.ended is None:
        outcome = "not finished"
    elif state.ended.healthy:
        outcome = "healthy"
    else:
        outcome = "findings remain"

    final = state.latest_verdicts()
    findings = [
        {
            "fault": v.fault,
            "status": str(v.status),
            "targets": list(v.targets),
            "summary": v.summary,
            "check": v.check,
        }
        for v in sorted(final.values(), key=lambda v: -v.status.severity)
        if v.status != Status.PASS
    ]
    faults = _faults(state, final)
    not_checked = [
        {
            "fault": v.fault,
            "targets": list(v.targets),
            "why": v.summary,
            "check": v.check,
        }
        for v in final.values()
        if v.status == Status.UNKNOWN
    ]
    counts: dict[str, int] = {}
    for v in final.values():
        counts[str(v.status)] = counts.get(str(v.status), 0) + 1

    linked: dict[int, str] = {}  # index in state.exports -> fix_id
    fixes = []
    for f in state.fixes.values():
        index = _export_for_fix(state, f.fix_id)
        export = None
        if index is not None:
            linked.setdefault(index, f.fix_id)
            chosen = state.exports[index]
            export = {
                "switch": chosen.switch,
                "file": chosen.file,
                "sha256": chosen.sha256,
                "contents": chosen.contents,
            }
        fixes.append(
            {
                "fix_id": f.fix_id,
                "step": f.step,
                "fault": f.fault,
                "target": f.target,
                "summary": f.summary,
                "preview": f.preview,
                "status": f.status,
                "bounces_links": f.bounces_links,
                "applied_at": _iso(f.applied_at),
                "rollback_armed": f.rollback_armed,
                "verified_ok": f.verified_ok,
                "verify_detail": f.verify_detail,
                "rollback_reason": f.rollback_reason,
                "restored": f.restored,
                "export": export,
            }
        )

    exports = [
        {
            "step": e.step,
            "switch": e.switch,
            "file": e.file,
            "sha256": e.sha256,
            "purpose": e.purpose,
            "at": _iso(e.at),
            "contents": e.contents,
            "fix_id": linked.get(i),
        }
        for i, e in enumerate(state.exports)
    ]
    steps = _steps(loaded, state)

    measurements = report_data.before_after(state)
    invalid = [
        {
            "step": m.step,
            "target": m.measurement.target,
            "value": m.measurement.value,
            "unit": m.measurement.unit,
            "reason": m.measurement.reason,
        }
        for m in state.invalid_measurements
    ]

    data: dict[str, Any] = {
        "report_version": REPORT_VERSION,
        "session": {
            "id": started.session_id,
            "started_at": _iso(started.at),
            "ended_at": _iso(state.ended.at) if state.ended else "",
            "fabwiz_version": started.fabwiz_version,
            "log_version": started.log_version,
            "command": started.command,
            "scenario": started.scenario,
            "inventory": Path(started.inventory_path).name if redact else started.inventory_path,
            "inventory_digest": started.inventory_digest,
            "nodes": list(started.nodes),
            "switches": list(started.switches),
            "outcome": outcome,
            "end_reason": state.ended.reason if state.ended else "",
            "resumed": len(state.resumes),
            "events": len(loaded.events),
            "torn_tail": loaded.torn_tail,
            "warnings": list(loaded.warnings),
            "expectations": _recorded_overrides(started.options),
        },
        "summary": {
            "healthy": None if state.ended is None else state.ended.healthy,
            "verdicts": counts,
            "findings": findings,
            "fixes": {
                status: sum(1 for f in state.fixes.values() if f.status == status)
                for status in ("previewed", "applied", "verified", "verify_failed", "rolled_back")
            },
            "undrained_nodes": state.undrained_nodes(),
            "not_checked": not_checked,
            "not_proven": state.proofs_not_done(),
        },
        "verdict_line": _verdict_line(outcome, faults, not_checked, state),
        "faults": faults,
        "steps": steps,
        "fixes": fixes,
        "refused": [
            {"step": r.step, "fault": r.fault, "target": r.target, "reason": r.reason}
            for r in state.refused
        ],
        "exports": exports,
        "measurements": measurements,
        "invalid_measurements": invalid,
        "answers": [
            {"step": a.step, "question": a.question, "answer": a.answer, "at": _iso(a.at)}
            for a in state.answers
        ],
        "operator": [
            {"at": _iso(at), "step": step, "what": what, "result": result}
            for at, step, what, result in sorted(
                [(a.at, a.step, a.question, a.answer) for a in state.answers]
                + [
                    (
                        p.at,
                        p.step,
                        f"{p.kind} on {', '.join(p.nodes)} by {p.performed_by}",
                        p.observed,
                    )
                    for p in state.physical_done
                ]
            )
        ],
        "physical": [
            {
                "step": p.step,
                "kind": p.kind,
                "nodes": list(p.nodes),
                "performed_by": p.performed_by,
                "observed": p.observed,
                "at": _iso(p.at),
            }
            for p in state.physical_done
        ],
        "notes": [
            {"level": n.level, "step": n.step, "text": n.text, "at": _iso(n.at)}
            for n in state.notes
            if n.level in ("warn", "error")
        ],
        "rerun": _rerun(state),
        "conclusions": report_data.conclusions(state),
        "versions": report_data.versions(loaded, state),
        "charts": report_data.charts(state, final, measurements, ceilings),
        # the lanes host and switch side by side, as the caller rebuilt them from the log
        "fabric_map": dict(fabric_map) if fabric_map else None,
    }
    if redact:
        data = (redactor or redactor_for(loaded)).redact_json(data)
        data["session"]["redacted"] = True
    else:
        data["session"]["redacted"] = False
    return data


def _rerun(state: SessionState) -> list[dict[str, Any]]:
    """The NCCL commands as sent (the last run of each), for the customer to run again."""
    last: dict[str, dict[str, Any]] = {}
    for rec in state.measurements:
        m = rec.measurement
        command = m.extra.get("command")
        if m.kind == "nccl" and isinstance(command, str) and " " in command:
            last[m.target] = {
                "target": m.target,
                "node": str(m.extra.get("launch", "")),
                "value": m.value if m.valid else None,
                "command": str(m.extra.get("rerun") or command),
                "hostfile": str(m.extra.get("hostfile", "")),
                "versions": ", ".join(
                    f"{label} {m.extra[key]}"
                    for key, label in (
                        ("nccl_tests_version", "nccl-tests"),
                        ("nccl_version", "NCCL"),
                    )
                    if m.extra.get(key)
                ),
            }
    return list(last.values())


def _faults(state: SessionState, final: dict[str, Verdict]) -> list[dict[str, Any]]:
    """Every fault found (fail or warn) during the session, first sighting first: where, how it
    was proven, and whether it was fixed (with the export). The proof is the first failing
    evidence of the fault's last failing verdict: a later step has seen more of what the fabric
    did (a QoS stall is configuration at preflight and a stalled rail test at its own step,
    which puts the traffic first), and that is what the fix was applied on."""
    out: dict[str, dict[str, Any]] = {}
    strongest: dict[str, Verdict] = {}
    for _step, v in state.judged:  # in the order judged: the last failing one stays
        if v.status in (Status.FAIL, Status.WARN):
            strongest[v.fault] = v
    for step, verdicts in state.verdicts.items():
        for v in verdicts:
            if v.status not in (Status.FAIL, Status.WARN) or v.fault in out:
                continue
            shown = strongest[v.fault]
            proof = next(
                (e for e in shown.evidence if e.status in (Status.FAIL, Status.WARN)), None
            )
            fix = next(
                (f for f in state.fixes.values() if f.fault == v.fault and f.status == "verified"),
                None,
            )
            last = final.get(v.fault)
            out[v.fault] = {
                "fault": v.fault,
                "status": str(v.status),
                "targets": list(v.targets),
                "step": step,
                "summary": v.summary,
                "proof": (
                    f"{proof.target}: {proof.command} → {proof.observed} (expected {proof.expected})"
                    if proof is not None
                    else shown.summary
                ),
                "fixed": fix is not None
                or (last is not None and last.status in (Status.PASS, Status.BENIGN)),
                "export": fix.export if fix is not None else None,
            }
    return list(out.values())


def _verdict_line(
    outcome: str,
    faults: list[dict[str, Any]],
    not_checked: list[dict[str, Any]],
    state: SessionState,
) -> str:
    """The report's first line: the outcome in one sentence."""
    fixed = [f["fault"] for f in faults if f["fixed"]]
    open_ = [f["fault"] for f in faults if not f["fixed"]]
    parts = []
    if outcome == "healthy":
        parts.append("Healthy")
    elif outcome == "not finished":
        parts.append("Not finished")
    else:
        parts.append("Not healthy")
    if faults:
        parts.append(f"{len(faults)} fault(s) found, {len(fixed)} fixed")
    if open_:
        parts.append("still open: " + ", ".join(open_))
    if not_checked:
        parts.append(f"{len(not_checked)} never checked")
    if state.proofs_not_done():
        parts.append("reboot proof not done")
    if state.ended is not None and state.ended.reason and outcome != "healthy":
        parts.append(state.ended.reason)
    return "; ".join(parts) + "."


def redactor_for(loaded: LoadedSession) -> Redactor:
    """The redactor of one session: its nodes, switches and every host a probe ran on."""
    started = loaded.started
    r = Redactor(nodes=started.nodes, switches=started.switches)
    # Every target a probe ran on, and every node the hands or the drain guard touched, is a
    # host name (verdict targets are not: they may be words like "cluster").
    for ev in loaded.events:
        if isinstance(ev, ProbeAnswered | ProbeSent):
            target = ev.result.target if isinstance(ev, ProbeAnswered) else ev.target
            r.add_name(target, "host")
        elif isinstance(ev, PhysicalActionRequested | PhysicalActionDone):
            for n in ev.nodes:
                r.add_name(n, "node")
        elif isinstance(ev, LinkTransitionSeen | NodeDrained):
            r.add_name(ev.node, "node")
        elif isinstance(ev, ExportTaken):
            r.add_name(ev.switch, "switch")
    return r


def _export_for_fix(state: SessionState, fix_id: str) -> int | None:
    """Which recorded export belongs to a fix: the one it names, else the last pre-fix export
    of its step taken before the change went out."""
    fix = state.fixes[fix_id]
    chosen = None
    if fix.export:
        for i, e in enumerate(state.exports):
            if fix.export in (e.file, e.sha256, f"{e.switch}:{e.file}"):
                chosen = i
    if chosen is None and fix.applied_at is not None:
        for i, e in enumerate(state.exports):
            if e.step == fix.step and e.purpose == "pre-fix" and e.at <= fix.applied_at:
                chosen = i
    return chosen


def _steps(loaded: LoadedSession, state: SessionState) -> list[dict[str, Any]]:
    order = list(state.step_order)
    for ev in loaded.events:
        step = getattr(ev, "step", "")
        if isinstance(step, str) and step and step not in order:
            order.append(step)
    out = []
    for step in order:
        probes = [
            {
                "target": target,
                "probe": probe,
                "command": r.command,
                "exit_status": r.exit_status,
                "error": r.error,
                "duration_s": round(r.duration_s, 3),
            }
            for (s, target, probe), r in state.probes.items()
            if s == step
        ]
        verdicts = [v.to_json() for v in state.verdicts.get(step, [])]
        measured = [
            {
                "target": m.measurement.target,
                "kind": m.measurement.kind,
                "value": m.measurement.value,
                "unit": m.measurement.unit,
                "valid": m.measurement.valid,
                "reason": m.measurement.reason,
                "bidir": bool(m.measurement.extra.get("bidir")),
            }
            for m in state.measurements
            if m.step == step
        ]
        phase = state.step_phases.get(step, "")
        if not (phase or probes or verdicts or measured):
            continue
        out.append(
            {
                "step": step,
                "phase": phase,
                "probes": probes,
                "verdicts": verdicts,
                "measurements": measured,
            }
        )
    return out


# --- Markdown and HTML (Jinja2 templates over the typed document) -----------------------------


def render_markdown(loaded: LoadedSession, *, redact: bool = False) -> str:
    return markdown_from_data(build_report(loaded, redact=redact))


def markdown_from_data(data: dict[str, Any]) -> str:
    return report_render.render_markdown(doc_from_data(data))


def render_html(loaded: LoadedSession, *, redact: bool = False) -> str:
    return html_from_data(build_report(loaded, redact=redact))


def html_from_data(data: dict[str, Any]) -> str:
    return report_render.render_html(doc_from_data(data))


# --- JSON and dispatch -------------------------------------------------------------------------


def render_json(loaded: LoadedSession, *, redact: bool = False) -> str:
    return json.dumps(build_report(loaded, redact=redact), indent=2, ensure_ascii=False) + "\n"


def render(
    loaded: LoadedSession,
    fmt: ReportFormat = "md",
    *,
    redact: bool = False,
    ceilings: Mapping[str, float] | None = None,
    fabric_map: Mapping[str, Any] | None = None,
) -> str:
    """The report in one format: "md", "html" or "json"."""
    data = build_report(loaded, redact=redact, ceilings=ceilings, fabric_map=fabric_map)
    if fmt == "md":
        return markdown_from_data(data)
    if fmt == "html":
        return html_from_data(data)
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    raise ValueError(f"unknown report format {fmt!r} (md, html or json)")


__all__ = [
    "ReportFormat",
    "build_report",
    "html_from_data",
    "markdown_from_data",
    "redactor_for",
    "render",
    "render_html",
    "render_json",
    "render_markdown",
]
