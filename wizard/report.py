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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from wizard import safetext
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
from wizard.session import LoadedSession, SessionState

ReportFormat = Literal["md", "html", "json"]
REPORT_VERSION = 1

_STATUS_ORDER = {s.value: s.severity for s in Status}


def _iso(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _fmt_value(value: float | None, unit: str) -> str:
    return "—" if value is None else f"{value:.2f} {unit}"


# --- the data ----------------------------------------------------------------------------------


def build_report(loaded: LoadedSession, *, redact: bool = False) -> dict[str, Any]:
    """The report as plain JSON data (what `render_json` prints and the others draw)."""
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

    measurements = [
        {
            "target": ba.target,
            "kind": ba.kind,
            "unit": ba.unit,
            "before": ba.before.measurement.value,
            "before_step": ba.before.step,
            "after": None if ba.after is None else ba.after.measurement.value,
            "after_step": None if ba.after is None else ba.after.step,
            "change": ba.delta,
        }
        for ba in state.before_after()
    ]
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
    }
    if redact:
        data = _redactor_for(loaded).redact_json(data)
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
    was proven (its first failing evidence), and whether it was fixed (with the export)."""
    out: dict[str, dict[str, Any]] = {}
    for step, verdicts in state.verdicts.items():
        for v in verdicts:
            if v.status not in (Status.FAIL, Status.WARN) or v.fault in out:
                continue
            proof = next((e for e in v.evidence if e.status in (Status.FAIL, Status.WARN)), None)
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
                    else v.summary
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
    if state.ended is not None and state.ended.reason and outcome != "healthy":
        parts.append(state.ended.reason)
    return "; ".join(parts) + "."


def _redactor_for(loaded: LoadedSession) -> Redactor:
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


# --- Markdown ----------------------------------------------------------------------------------


def _md_cell(value: Any) -> str:
    return safetext.markdown_cell(value) or " "


def _md_table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return lines


def _fence(text: str, lang: str = "") -> list[str]:
    return safetext.code_block(text, lang)


def _inventory(s: dict[str, Any]) -> str:
    digest = s["inventory_digest"]
    short = f" (digest {digest[:19]}…)" if len(digest) > 19 else f" ({digest})" if digest else ""
    return f"{s['inventory'] or '—'}{short}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _measured_rows(st: dict[str, Any]) -> list[list[str]]:
    return [
        [
            m["target"],
            "NCCL busbw" if m["kind"] == "nccl" else m["kind"],
            _fmt_value(m["value"], m["unit"]),
            "yes" if m["valid"] else f"no: {m['reason']}",
        ]
        for m in st["measurements"]
    ]


def _status_mark(status: str) -> str:
    return status.upper()


def _change(m: dict[str, Any]) -> str:
    if m["change"] is None:
        return "—"
    before = m["before"] or 0.0
    pct = f" ({m['change'] / before * 100:+.0f} %)" if before else ""
    return f"{m['change']:+.2f} {m['unit']}{pct}"


def render_markdown(loaded: LoadedSession, *, redact: bool = False) -> str:
    return markdown_from_data(build_report(loaded, redact=redact))


def markdown_from_data(data: dict[str, Any]) -> str:
    s = data["session"]
    out: list[str] = [f"# fabwiz session report: {s['id']}", ""]
    out += [f"**{data['verdict_line']}**", ""]
    if data["faults"]:
        out += ["## Faults found", ""]
        out += _md_table(
            ["Fault", "Targets", "How it was proven", "Fixed?"],
            [
                [
                    f"`{f['fault']}`",
                    ", ".join(f["targets"]),
                    f["proof"],
                    ("yes" + (f" (export {f['export']})" if f["export"] else ""))
                    if f["fixed"]
                    else "**no**",
                ]
                for f in data["faults"]
            ],
        )
        out.append("")
    rows = [
        ["Outcome", s["outcome"] + (f" ({s['end_reason']})" if s["end_reason"] else "")],
        ["Started", s["started_at"]],
        ["Ended", s["ended_at"] or "—"],
        ["Command", f"fabwiz {s['command']}"],
        ["fabwiz", f"{s['fabwiz_version']} (session log v{s['log_version']})"],
        ["Inventory", _inventory(s)],
        ["Scenario", s["scenario"] or "—"],
        ["Nodes", ", ".join(s["nodes"]) or "—"],
        ["Switches", ", ".join(s["switches"]) or "—"],
        ["Resumed", str(s["resumed"])],
        ["Redacted", "yes" if s["redacted"] else "no"],
    ]
    out += _md_table(["Session", ""], rows)
    out.append("")
    if s["torn_tail"]:
        out += [
            "> **The log's last line was cut mid-write** (the session stopped abruptly); "
            "everything before it is in this report.",
            "",
        ]

    summ = data["summary"]
    out += ["## Summary", ""]
    counts = ", ".join(
        f"{n} {st}" for st, n in sorted(summ["verdicts"].items(), key=lambda kv: -_sev(kv[0]))
    )
    out.append(f"- Verdicts (final, per fault): {counts or 'none'}")
    fx = summ["fixes"]
    out.append(
        f"- Fixes: {fx['verified']} verified, {fx['rolled_back']} rolled back, "
        f"{fx['verify_failed']} failed verification, {fx['applied']} applied and unverified, "
        f"{fx['previewed']} previewed only"
    )
    if summ["undrained_nodes"]:
        out.append(
            "- Nodes with a link transition and no AC drain since: "
            + ", ".join(summ["undrained_nodes"])
        )
    out.append("")
    if summ["findings"]:
        out += _md_table(
            ["Status", "Fault", "Targets", "Summary"],
            [
                [
                    _status_mark(f["status"]),
                    f"`{f['fault']}`",
                    ", ".join(f["targets"]),
                    f["summary"],
                ]
                for f in summ["findings"]
            ],
        )
        out.append("")
    if summ["not_checked"]:
        out += ["## Not checked", ""]
        out += [
            "These faults were never judged: an input was missing (unreachable, refused, wrong "
            "credentials, timed out or unreadable). None of them counts as passed.",
            "",
        ]
        out += _md_table(
            ["Fault", "Targets", "Why"],
            [[f"`{n['fault']}`", ", ".join(n["targets"]), n["why"]] for n in summ["not_checked"]],
        )
        out.append("")

    if data["measurements"]:
        out += ["## Before and after", ""]
        out += _md_table(
            ["Target", "Kind", "Before", "After", "Change"],
            [
                [
                    m["target"],
                    "NCCL busbw" if m["kind"] == "nccl" else m["kind"],
                    _fmt_value(m["before"], m["unit"]),
                    _fmt_value(m["after"], m["unit"]),
                    _change(m),
                ]
                for m in data["measurements"]
            ],
        )
        out.append("")
    if data.get("rerun"):
        out += ["## Re-run the NCCL tests", ""]
        for r in data["rerun"]:
            got = _fmt_value(r["value"], "GB/s") if r["value"] is not None else "no result"
            built = f", {r['versions']}" if r.get("versions") else ""
            out += [f"{r['target']} ({got}{built}), on {r['node'] or 'the first node'}:", ""]
            out += _fence(r["command"], "sh")
            out.append("")
    if data["invalid_measurements"]:
        out += ["Measurements not counted as evidence:", ""]
        out += _md_table(
            ["Step", "Target", "Value", "Why"],
            [
                [m["step"], m["target"], _fmt_value(m["value"], m["unit"]), m["reason"]]
                for m in data["invalid_measurements"]
            ],
        )
        out.append("")

    out += ["## Steps", ""]
    for st in data["steps"]:
        out += [f"### {st['step']}" + (f" ({st['phase']})" if st["phase"] else ""), ""]
        for v in st["verdicts"]:
            targets = f" on {', '.join(v['targets'])}" if v["targets"] else ""
            out += [f"**{_status_mark(v['status'])}** `{v['fault']}`{targets}: {v['summary']}", ""]
            if v["evidence"]:
                out += _md_table(
                    ["Target", "Command", "Observed", "Expected", "Status"],
                    [
                        [e["target"], e["command"], e["observed"], e["expected"], e["status"]]
                        for e in v["evidence"]
                    ],
                )
                out.append("")
                raws = [e for e in v["evidence"] if e.get("raw")]
                for e in raws:
                    out += [f"<details><summary>raw output: {e['target']} {e['command']}"]
                    out[-1] += "</summary>"
                    out += ["", *_fence(e["raw"]), "", "</details>", ""]
        if st["measurements"]:
            out += _md_table(["Measured", "Kind", "Value", "Evidence"], _measured_rows(st))
            out.append("")
        if st["probes"]:
            out += [f"<details><summary>{_plural(len(st['probes']), 'probe')}</summary>", ""]
            out += _md_table(
                ["Target", "Probe", "Command", "Exit", "Error", "Time (s)"],
                [
                    [
                        p["target"],
                        p["probe"],
                        p["command"],
                        p["exit_status"],
                        p["error"] or "",
                        p["duration_s"],
                    ]
                    for p in st["probes"]
                ],
            )
            out += ["", "</details>", ""]

    if data["fixes"] or data["refused"]:
        out += ["## Fixes", ""]
    for f in data["fixes"]:
        out += [f"### `{f['fault']}` on {f['target']}: {f['status'].replace('_', ' ')}", ""]
        out.append(f"- Fix: {f['summary']} (`{f['fix_id']}`, step {f['step']})")
        if f["applied_at"]:
            out.append(f"- Applied: {f['applied_at']}")
        if f["rollback_armed"]:
            out.append(f"- Dead-man rollback armed: `{f['rollback_armed']}`")
        if f["bounces_links"]:
            out.append("- Bounces links: a drain is needed before measuring")
        if f["verified_ok"] is not None:
            out.append(
                f"- Verification: {'passed' if f['verified_ok'] else 'FAILED'}"
                + (f": {f['verify_detail']}" if f["verify_detail"] else "")
            )
        if f["status"] == "rolled_back":
            restored = "confirmed restored" if f["restored"] else "not confirmed restored"
            out.append(f"- Rolled back ({restored}): {f['rollback_reason']}")
        out.append("")
        if f["preview"]:
            out += ["Preview:", "", *_fence(f["preview"]), ""]
        e = f["export"]
        if e:
            out += [
                f"<details><summary>Export taken before the change: {e['switch']} "
                f"{e['file']} (sha256 {e['sha256'][:16]})</summary>",
                "",
                *_fence(e["contents"], "routeros"),
                "",
                "</details>",
                "",
            ]
    for r in data["refused"]:
        out += [f"- Refused `{r['fault']}` on {r['target']} ({r['step']}): {r['reason']}"]
    if data["refused"]:
        out.append("")

    other = [e for e in data["exports"] if e["fix_id"] is None]
    if other:
        out += ["## Exports", ""]
        for e in other:
            out += [
                f"<details><summary>{e['purpose']} export: {e['switch']} {e['file']} "
                f"(sha256 {e['sha256'][:16]}, {e['at']})</summary>",
                "",
                *_fence(e["contents"], "routeros"),
                "",
                "</details>",
                "",
            ]

    if data["operator"]:
        out += ["## Operator", ""]
        rows = [[o["at"], o["step"], o["what"], o["result"]] for o in data["operator"]]
        out += _md_table(["When", "Step", "Action / question", "Result / answer"], rows)
        out.append("")
    if data["notes"]:
        out += ["## Warnings and errors", ""]
        out += [f"- {n['level']}: {n['text']}" for n in data["notes"]]
        out.append("")
    if s["warnings"]:
        out += ["## Session log", ""]
        out += [f"- {w}" for w in s["warnings"]]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _sev(status: str) -> int:
    return _STATUS_ORDER.get(status, 0)


# --- HTML --------------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:72em;
 padding:0 1em;color:#1d1d1f}
h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f6f6f6;padding:.6em;overflow:auto;font-size:12px}code{font-size:12px}
.st{font-weight:600;padding:0 .3em;border-radius:3px}
.st-pass{background:#d9f2dc}.st-benign{background:#e3eefc}.st-unknown{background:#eee}
.st-warn{background:#fff0c2}.st-fail{background:#f9d2d0}
.banner{background:#fff0c2;border:1px solid #e0c060;padding:.5em}
"""


def _h(value: Any) -> str:
    return safetext.html_text(value)


def _html_table(headers: list[str], rows: list[list[str]]) -> str:
    """`rows` cells are already-escaped HTML."""
    head = "".join(f"<th>{_h(x)}</th>" for x in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _badge(status: str) -> str:
    return f'<span class="st st-{_h(status)}">{_h(status.upper())}</span>'


def render_html(loaded: LoadedSession, *, redact: bool = False) -> str:
    return html_from_data(build_report(loaded, redact=redact))


def html_from_data(data: dict[str, Any]) -> str:
    s = data["session"]
    parts: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>fabwiz session report {_h(s['id'])}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>fabwiz session report: {_h(s['id'])}</h1>",
        f'<p class="verdict"><strong>{_h(data["verdict_line"])}</strong></p>',
    ]
    if data["faults"]:
        parts.append("<h2>Faults found</h2>")
        parts.append(
            _html_table(
                ["Fault", "Targets", "How it was proven", "Fixed?"],
                [
                    [
                        f"<code>{_h(f['fault'])}</code>",
                        _h(", ".join(f["targets"])),
                        _h(f["proof"]),
                        _h(
                            ("yes" + (f" (export {f['export']})" if f["export"] else ""))
                            if f["fixed"]
                            else "no"
                        ),
                    ]
                    for f in data["faults"]
                ],
            )
        )
    rows = [
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
    ]
    parts.append(_html_table(["Session", ""], [[_h(k), _h(v)] for k, v in rows]))
    if s["torn_tail"]:
        parts.append(
            '<p class="banner">The log\'s last line was cut mid-write (the session stopped '
            "abruptly); everything before it is in this report.</p>"
        )

    summ = data["summary"]
    parts.append("<h2>Summary</h2><ul>")
    counts = ", ".join(
        f"{n} {st}" for st, n in sorted(summ["verdicts"].items(), key=lambda kv: -_sev(kv[0]))
    )
    parts.append(f"<li>Verdicts (final, per fault): {_h(counts or 'none')}</li>")
    fx = summ["fixes"]
    parts.append(
        f"<li>Fixes: {fx['verified']} verified, {fx['rolled_back']} rolled back, "
        f"{fx['verify_failed']} failed verification, {fx['applied']} applied and unverified, "
        f"{fx['previewed']} previewed only</li>"
    )
    if summ["undrained_nodes"]:
        parts.append(
            "<li>Nodes with a link transition and no AC drain since: "
            f"{_h(', '.join(summ['undrained_nodes']))}</li>"
        )
    parts.append("</ul>")
    if summ["findings"]:
        parts.append(
            _html_table(
                ["Status", "Fault", "Targets", "Summary"],
                [
                    [
                        _badge(f["status"]),
                        f"<code>{_h(f['fault'])}</code>",
                        _h(", ".join(f["targets"])),
                        _h(f["summary"]),
                    ]
                    for f in summ["findings"]
                ],
            )
        )
    if summ["not_checked"]:
        parts.append(
            "<h2>Not checked</h2><p>These faults were never judged: an input was missing "
            "(unreachable, refused, wrong credentials, timed out or unreadable). None of them "
            "counts as passed.</p>"
        )
        parts.append(
            _html_table(
                ["Fault", "Targets", "Why"],
                [
                    [f"<code>{_h(n['fault'])}</code>", _h(", ".join(n["targets"])), _h(n["why"])]
                    for n in summ["not_checked"]
                ],
            )
        )

    if data["measurements"]:
        parts.append("<h2>Before and after</h2>")
        parts.append(
            _html_table(
                ["Target", "Kind", "Before", "After", "Change"],
                [
                    [
                        _h(m["target"]),
                        _h("NCCL busbw" if m["kind"] == "nccl" else m["kind"]),
                        f'<span class="num">{_h(_fmt_value(m["before"], m["unit"]))}</span>',
                        f'<span class="num">{_h(_fmt_value(m["after"], m["unit"]))}</span>',
                        _h(_change(m)),
                    ]
                    for m in data["measurements"]
                ],
            )
        )
    if data.get("rerun"):
        parts.append("<h2>Re-run the NCCL tests</h2>")
        for r in data["rerun"]:
            got = _fmt_value(r["value"], "GB/s") if r["value"] is not None else "no result"
            built = f", {r['versions']}" if r.get("versions") else ""
            parts.append(f"<p>{_h(r['target'])} ({_h(got + built)}), on {_h(r['node'])}:</p>")
            parts.append(f"<pre>{_h(r['command'])}</pre>")
    if data["invalid_measurements"]:
        parts.append("<p>Measurements not counted as evidence:</p>")
        parts.append(
            _html_table(
                ["Step", "Target", "Value", "Why"],
                [
                    [
                        _h(m["step"]),
                        _h(m["target"]),
                        _h(_fmt_value(m["value"], m["unit"])),
                        _h(m["reason"]),
                    ]
                    for m in data["invalid_measurements"]
                ],
            )
        )

    parts.append("<h2>Steps</h2>")
    for st in data["steps"]:
        phase = f" ({_h(st['phase'])})" if st["phase"] else ""
        parts.append(f"<h3>{_h(st['step'])}{phase}</h3>")
        for v in st["verdicts"]:
            targets = f" on {_h(', '.join(v['targets']))}" if v["targets"] else ""
            parts.append(
                f"<p>{_badge(v['status'])} <code>{_h(v['fault'])}</code>{targets}: "
                f"{_h(v['summary'])}</p>"
            )
            if v["evidence"]:
                parts.append(
                    _html_table(
                        ["Target", "Command", "Observed", "Expected", "Status"],
                        [
                            [
                                _h(e["target"]),
                                f"<code>{_h(e['command'])}</code>",
                                _h(e["observed"]),
                                _h(e["expected"]),
                                _badge(e["status"]),
                            ]
                            for e in v["evidence"]
                        ],
                    )
                )
                for e in v["evidence"]:
                    if e.get("raw"):
                        parts.append(
                            f"<details><summary>raw output: {_h(e['target'])} "
                            f"{_h(e['command'])}</summary><pre>{_h(e['raw'])}</pre></details>"
                        )
        if st["measurements"]:
            parts.append(
                _html_table(
                    ["Measured", "Kind", "Value", "Evidence"],
                    [[_h(c) for c in row] for row in _measured_rows(st)],
                )
            )
        if st["probes"]:
            parts.append(f"<details><summary>{_plural(len(st['probes']), 'probe')}</summary>")
            parts.append(
                _html_table(
                    ["Target", "Probe", "Command", "Exit", "Error", "Time (s)"],
                    [
                        [
                            _h(p["target"]),
                            _h(p["probe"]),
                            f"<code>{_h(p['command'])}</code>",
                            _h(p["exit_status"]),
                            _h(p["error"] or ""),
                            _h(p["duration_s"]),
                        ]
                        for p in st["probes"]
                    ],
                )
            )
            parts.append("</details>")

    if data["fixes"] or data["refused"]:
        parts.append("<h2>Fixes</h2>")
    for f in data["fixes"]:
        parts.append(
            f"<h3><code>{_h(f['fault'])}</code> on {_h(f['target'])}: "
            f"{_h(f['status'].replace('_', ' '))}</h3><ul>"
        )
        parts.append(
            f"<li>Fix: {_h(f['summary'])} (<code>{_h(f['fix_id'])}</code>, step "
            f"{_h(f['step'])})</li>"
        )
        if f["applied_at"]:
            parts.append(f"<li>Applied: {_h(f['applied_at'])}</li>")
        if f["rollback_armed"]:
            parts.append(
                f"<li>Dead-man rollback armed: <code>{_h(f['rollback_armed'])}</code></li>"
            )
        if f["verified_ok"] is not None:
            detail = f": {_h(f['verify_detail'])}" if f["verify_detail"] else ""
            parts.append(
                f"<li>Verification: {'passed' if f['verified_ok'] else 'FAILED'}{detail}</li>"
            )
        if f["status"] == "rolled_back":
            restored = "confirmed restored" if f["restored"] else "not confirmed restored"
            parts.append(f"<li>Rolled back ({restored}): {_h(f['rollback_reason'])}</li>")
        parts.append("</ul>")
        if f["preview"]:
            parts.append(f"<p>Preview:</p><pre>{_h(f['preview'])}</pre>")
        e = f["export"]
        if e:
            parts.append(
                f"<details><summary>Export taken before the change: {_h(e['switch'])} "
                f"{_h(e['file'])} (sha256 {_h(e['sha256'][:16])})</summary>"
                f"<pre>{_h(e['contents'])}</pre></details>"
            )
    if data["refused"]:
        parts.append("<ul>")
        for r in data["refused"]:
            parts.append(
                f"<li>Refused <code>{_h(r['fault'])}</code> on {_h(r['target'])} "
                f"({_h(r['step'])}): {_h(r['reason'])}</li>"
            )
        parts.append("</ul>")

    other = [e for e in data["exports"] if e["fix_id"] is None]
    if other:
        parts.append("<h2>Exports</h2>")
        for e in other:
            parts.append(
                f"<details><summary>{_h(e['purpose'])} export: {_h(e['switch'])} {_h(e['file'])} "
                f"(sha256 {_h(e['sha256'][:16])}, {_h(e['at'])})</summary>"
                f"<pre>{_h(e['contents'])}</pre></details>"
            )
    if data["operator"]:
        parts.append("<h2>Operator</h2>")
        rows2 = [[_h(o[k]) for k in ("at", "step", "what", "result")] for o in data["operator"]]
        parts.append(_html_table(["When", "Step", "Action / question", "Result / answer"], rows2))
    if data["notes"]:
        parts.append("<h2>Warnings and errors</h2><ul>")
        parts += [f"<li>{_h(n['level'])}: {_h(n['text'])}</li>" for n in data["notes"]]
        parts.append("</ul>")
    if s["warnings"]:
        parts.append("<h2>Session log</h2><ul>")
        parts += [f"<li>{_h(w)}</li>" for w in s["warnings"]]
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# --- JSON and dispatch -------------------------------------------------------------------------


def render_json(loaded: LoadedSession, *, redact: bool = False) -> str:
    return json.dumps(build_report(loaded, redact=redact), indent=2, ensure_ascii=False) + "\n"


def render(loaded: LoadedSession, fmt: ReportFormat = "md", *, redact: bool = False) -> str:
    """The report in one format: "md", "html" or "json"."""
    data = build_report(loaded, redact=redact)
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
    "render",
    "render_html",
    "render_json",
    "render_markdown",
]
