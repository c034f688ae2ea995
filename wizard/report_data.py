"""Parts of the report data worked out from the session: before/after split at the first fix,
the bisection's conclusions, the versions the session recorded, and the chart series.

All of it is plain JSON data (redacted with the rest by `wizard.report.build_report`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wizard.errors import ParseError
from wizard.model import Status, Verdict
from wizard.report_svg import band
from wizard.session import LoadedSession, MeasurementRecord, SessionState
from wizard.versions import latest as latest_versions

# What an evidence row of the preflight tool check records: "component version; ..." per node.
VERSIONS_EXPECTED = "versions recorded"


def first_fix_at(state: SessionState) -> float | None:
    applied = [f.applied_at for f in state.fixes.values() if f.applied_at is not None]
    return min(applied) if applied else None


def last_fix_at(state: SessionState) -> float | None:
    applied = [f.applied_at for f in state.fixes.values() if f.applied_at is not None]
    return max(applied) if applied else None


def before_after(state: SessionState) -> list[dict[str, Any]]:
    """Per measured target (in the order first measured): `before` is its first valid number
    taken before the first fix went out, `after` its last valid one taken after it; `stale` when
    that number was taken before the last fix (it is not what the fabric gives now, and no
    change is worked out from it); each number sits under the column of when it was taken.
    Without any fix: the first and the last."""
    cut = first_fix_at(state)
    final = last_fix_at(state)
    order: dict[str, MeasurementRecord] = {}
    before: dict[str, MeasurementRecord] = {}
    after: dict[str, MeasurementRecord] = {}
    seen: dict[str, int] = {}
    for rec in state.measurements:
        if not rec.measurement.valid:
            continue
        # a -b run and a one-way run of the same rail measure different things: two rows
        key = rec.measurement.target + ("\0-b" if rec.measurement.extra.get("bidir") else "")
        order.setdefault(key, rec)
        seen[key] = seen.get(key, 0) + 1
        if cut is None:
            if seen[key] == 1:
                before[key] = rec
            else:
                after[key] = rec
        elif rec.at < cut:
            before.setdefault(key, rec)
        else:
            after[key] = rec
    out = []
    for key, first in order.items():
        b, a = before.get(key), after.get(key)
        bv = None if b is None else b.measurement.value
        av = None if a is None else a.measurement.value
        last = a or b or first
        out.append(
            {
                "target": first.measurement.target,
                "kind": first.measurement.kind,
                "unit": first.measurement.unit,
                "before": bv,
                "before_step": None if b is None else b.step,
                "after": av,
                "after_step": None if a is None else a.step,
                "stale": a is not None and final is not None and a.at < final,
                "change": None
                if bv is None
                or av is None
                or (final is not None and a is not None and a.at < final)
                else av - bv,
                "bidir": bool(last.measurement.extra.get("bidir")),
            }
        )
    return out


def conclusions(state: SessionState) -> list[dict[str, Any]]:
    """What each bisection step concluded, with its numbers (the engine's own sentence)."""
    return [
        {
            "step": ev.step,
            "conclusion": ev.conclusion,
            "sentence": ev.sentence,
            "nodes": list(ev.nodes),
            "switched_gbps": ev.switched_gbps,
            "direct_gbps": ev.direct_gbps,
            "faults": list(ev.faults),
        }
        for ev in state.conclusions
    ]


def versions(loaded: LoadedSession, state: SessionState) -> list[dict[str, Any]]:
    """Every version the session holds, by field, with where it was read: fabwiz and the log
    format; the session's versions record; what preflight recorded per node (sessions from
    before the record); the NCCL builds the runs printed."""
    started = loaded.started
    out: list[dict[str, Any]] = [
        {
            "target": "fabwiz",
            "component": "fabwiz",
            "version": started.fabwiz_version,
            "source": "session start",
        },
        {
            "target": "fabwiz",
            "component": "session log",
            "version": str(started.log_version),
            "source": "session start",
        },
    ]
    for target, component, version, source in (
        *_recorded_versions(loaded),
        *_preflight_versions(state),
        *_nccl_versions(state),
    ):
        _add_version(out, target, component, version, source)
    return [r for r in out if r["component"]]


_Found = tuple[str, str, Any, str]  # (target, component, version, source)


def _add_version(
    out: list[dict[str, Any]], target: str, component: str, version: Any, source: str
) -> None:
    """One row per (target, component, version, source), a mapping as one row per key; an
    empty version is no row."""
    if version in (None, "", {}, []):
        return
    if isinstance(version, Mapping):
        for k, v in version.items():
            _add_version(out, target, str(k), v, source)
        return
    row = {"target": target, "component": component, "version": str(version), "source": source}
    if row not in out:
        out.append(row)


def _recorded_versions(loaded: LoadedSession) -> list[_Found]:
    record = latest_versions(loaded.events)  # the session's VersionsRecorded, if any
    if record is None:
        return []
    return [
        (target, component, version, "versions record")
        for target, comps in (*record.nodes.items(), *record.switches.items())
        for component, version in comps.items()
    ]


def _preflight_versions(state: SessionState) -> list[_Found]:
    found: list[_Found] = []
    for verdicts in state.verdicts.values():
        for e in (e for v in verdicts for e in v.evidence if e.expected == VERSIONS_EXPECTED):
            for part in e.observed.split("; "):
                component, _, version = part.partition(" ")
                if version:
                    found.append((e.target, component, version, "preflight"))
    return found


def _nccl_versions(state: SessionState) -> list[_Found]:
    found: list[_Found] = []
    for m in (r.measurement for r in state.measurements if r.measurement.kind == "nccl"):
        for key, label in (("nccl_tests_version", "nccl-tests"), ("nccl_version", "NCCL")):
            found.append(
                (str(m.extra.get("launch") or m.target), label, m.extra.get(key), "NCCL run")
            )
    return found


def _nccl_points(raw: str) -> list[tuple[int, float]]:
    from wizard.parsers.nccl import parse_nccl

    try:
        parsed = parse_nccl(raw)
    except ParseError:
        return []
    return [
        (r.size, max(r.busbw_out_of_place, r.busbw_in_place)) for r in parsed.rows if r.size > 0
    ]


def charts(
    state: SessionState,
    final: Mapping[str, Verdict],
    measured: list[dict[str, Any]],
    ceilings: Mapping[str, float] | None,
) -> dict[str, Any]:
    """The chart series: rails before/after against their ceiling, each NCCL run's sweep, and
    the measured lanes with the worst verdict naming them."""
    c = dict(ceilings or {})
    rails = []
    for m in measured:
        if m["kind"] != "rail":
            continue
        ceiling = c.get("rail_bidir") if m["bidir"] else c.get("rail")
        rails.append(
            {
                "target": m["target"],
                "before": m["before"],
                "after": m["after"],
                "ceiling": ceiling,
                "bidir": m["bidir"],
            }
        )
    cut = first_fix_at(state)
    nccl = []
    for rec in state.measurements:
        mm = rec.measurement
        if mm.kind != "nccl" or not mm.valid or not isinstance(mm.extra.get("raw"), str):
            continue
        when = "before the first fix" if cut is None or rec.at < cut else "after a fix"
        nccl.append(
            {
                "label": f"{mm.target}, {rec.step}, {when}: {mm.value:.2f} GB/s",
                "points": _nccl_points(str(mm.extra["raw"])),
            }
        )
    nccl = nccl[:1] + nccl[-1:] if len(nccl) > 2 else nccl  # the first and the last run
    # lanes: each end of every rail measured, coloured by the verdicts that name it
    worst: dict[str, Status] = {}
    for v in final.values():
        for e in v.evidence:
            for t in {e.target, *e.target.split("->")}:
                if t not in worst or e.status.severity > worst[t].severity:
                    worst[t] = e.status
    lanes: dict[tuple[str, str], dict[str, Any]] = {}
    ratios = (float(c.get("pass_ratio", 0.9)), float(c.get("warn_ratio", 0.75)))
    for r in rails:
        ends = [e.strip() for e in r["target"].split("->")]
        value = r["after"] if r["after"] is not None else r["before"]
        for i, end in enumerate(ends):
            node, _, netdev = end.partition("/")
            if not netdev:
                continue
            status = worst.get(end) or worst.get(r["target"])
            node_status = worst.get(node)
            per = value / 2 if r["bidir"] and value is not None else value
            ceil = (r["ceiling"] / 2 if r["bidir"] else r["ceiling"]) if r["ceiling"] else None
            lanes[(node, netdev)] = {
                "node": node,
                "half": "B" if netdev.startswith("enP2") else "A",
                "netdev": netdev,
                "peer": ends[1 - i] if len(ends) == 2 else "",
                "gbps": "—" if per is None else f"{per:.1f}" + (" each way" if r["bidir"] else ""),
                "band": "none" if per is None else band(per, ceil, ratios),
                "status": str(status) if status is not None else "none",
                "node_status": str(node_status) if node_status is not None else "none",
                "verdict": str(status) if status is not None else "not judged",
            }
    return {
        "rails": rails,
        "nccl": nccl,
        "nccl_expected": c.get("nccl"),
        "ratios": list(ratios),
        "lanes": [lanes[k] for k in sorted(lanes)],
    }


__all__ = ["before_after", "charts", "conclusions", "first_fix_at", "last_fix_at", "versions"]
