"""What a single raw tool output implies: detect its kind, then dispatch to the checks' rules.

`fabwiz analyze` has no cluster context (no inventory, no cabling, no history): it sees one
pasted output at a time. Each check of `flows.registry` says what it can judge from one output
of a kind (`Check.pasted`): the same parse and judge as a sweep where the text carries what they
need, the FAULTS.md signatures worded with the alternatives a single file cannot tell apart
otherwise, `unknown` where the text lacks the context (node names, rails). Findings are
`wizard.model.Verdict` values whose `fault` ids are the public ids of FAULTS.md; benign red
herrings come back with status `benign`; a `pass` is not a finding and is not listed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from flows.base import Context
from flows.checks._common import PASTED
from flows.expectations import DEFAULT, Expectations
from flows.registry import PASTED_ONLY, PASTED_RULES
from wizard.errors import ParseError
from wizard.model import Evidence, Status, Verdict
from wizard.parsers.detect import detect, parse
from wizard.parsers.iproute2 import IpResult
from wizard.parsers.mlnx_qos import MlnxQosResult
from wizard.parsers.nccl import NcclResult
from wizard.parsers.perftest import PerftestResult
from wizard.parsers.ping import PingResult
from wizard.parsers.routeros import RouterOsResult
from wizard.parsers.sysctl import SysctlResult
from wizard.pipeline import check_failed


@dataclass(frozen=True, slots=True)
class FileAnalysis:
    """One analysed text: its kind, the parsed value (or the parse error), the findings."""

    kind: str
    parsed: Any
    findings: tuple[Verdict, ...]
    error: str | None = None


def _rule_failed(fault: str, exc: Exception) -> Verdict:
    """The `unknown` verdict of a pasted-only rule that raised (`check_failed` for a check's)."""
    error = f"{type(exc).__name__}: {exc}"
    return Verdict(
        fault=fault,
        status=Status.UNKNOWN,
        summary=f"the rule for {fault} failed ({error}); this fault was not judged",
        evidence=(
            Evidence(
                "fabwiz", "fabwiz analyze", error, "the rule judges the output", Status.UNKNOWN
            ),
        ),
        check=fault,
    )


def findings_for(kind: str, text: str, exp: Expectations = DEFAULT) -> tuple[Verdict, ...]:
    """The findings one output of `kind` implies: every rule for that kind, passes left out.
    A rule that raises is an `unknown` verdict naming its check and the error."""
    ctx = Context(expectations=exp)
    out: list[Verdict] = []
    for check, rule in PASTED_RULES:
        if kind in rule.kinds:
            try:
                out.extend(rule.judge(text, ctx))
            except Exception as exc:  # a rule bug is not a finding and never a pass
                out.extend(check_failed(check, exc))
    for fault, rule in PASTED_ONLY:
        if kind in rule.kinds:
            try:
                out.extend(rule.judge(text, ctx))
            except Exception as exc:  # a rule bug is not a finding and never a pass
                out.append(_rule_failed(fault, exc))
    return tuple(_shown(v) for v in out if v.status is not Status.PASS)


def _unpasted(text: str) -> str:
    return text.replace(f"{PASTED}/", "")


def _said(target: str, observed: str) -> str:
    named = _unpasted(target)
    return observed if named == PASTED else f"{named}: {observed}"


def _shown(v: Verdict) -> Verdict:
    """A verdict on one pasted output as `fabwiz analyze` lists it: its evidence in the summary
    (the listing shows no evidence) and the names the output gave (netdevs, ports, PCI
    addresses) as targets instead of the stand-in node."""
    seen = [e for e in v.evidence if e.status is not Status.PASS] or list(v.evidence)
    if not seen:
        return v
    detail = "; ".join(dict.fromkeys(_said(e.target, e.observed) for e in seen[:6]))
    targets = tuple(
        dict.fromkeys(
            t
            for e in seen
            for t in _unpasted(e.target).replace(f"{PASTED} ", "").split(", ")
            if t and t != PASTED
        )
    )
    return replace(v, summary=f"{_unpasted(v.summary)} ({detail})", targets=targets)


def headline(kind: str, parsed: Any) -> str:
    """A one-line plain-text summary of the key parsed values (for tables and logs)."""
    if isinstance(parsed, PerftestResult):
        bw = f"{parsed.bw_avg_gbps:.2f} Gb/s avg" if parsed.bw_avg_gbps is not None else "no BW"
        parts = [parsed.test, parsed.device or "?", bw]
        if parsed.qps:
            parts.append(f"{parsed.qps} QP")
        if parsed.error:
            parts.append(f"error: {parsed.error}")
        return ", ".join(parts)
    if isinstance(parsed, NcclResult):
        avg = (
            f"avg busbw {parsed.avg_busbw:g} GB/s"
            if parsed.avg_busbw is not None
            else "no avg busbw"
        )
        parts = [parsed.op or "NCCL log", avg, f"transport {parsed.transport or '?'}"]
        if parsed.largest_size_busbw is not None:
            parts.append(f"{parsed.largest_size_busbw:g} GB/s at the largest size")
        if parsed.error:
            parts.append(f"error: {parsed.error}")
        return ", ".join(parts)
    if isinstance(parsed, IpResult):
        return ", ".join(
            f"{i.name} {i.state or ''} {' '.join(i.ipv4)}".strip() for i in parsed.interfaces
        )
    if isinstance(parsed, MlnxQosResult):
        return f"trust {parsed.trust}, PFC {parsed.pfc}"
    if isinstance(parsed, SysctlResult):
        return ", ".join(f"{k}={v}" for k, v in parsed.arp.items()) or f"{len(parsed.values)} keys"
    if isinstance(parsed, PingResult):
        return (
            f"{parsed.payload} B to {parsed.address}: {parsed.received}/{parsed.transmitted} "
            f"received, {parsed.mtu_errors} MTU errors"
        )
    if isinstance(parsed, RouterOsResult):
        what = f"{len(parsed.export)} export items" if parsed.export else f"{len(parsed.rows)} rows"
        return f"{parsed.format} {parsed.path or ''} {what}".replace("  ", " ")
    return kind


def analyze_text(text: str, exp: Expectations = DEFAULT) -> FileAnalysis:
    """Detect, parse and judge one text. Unrecognised or unparseable text is an `unknown`
    result carrying the parser's message, never an exception."""
    kind = detect(text)
    if kind == "unknown":
        return FileAnalysis("unknown", None, (), "output not recognised")
    try:
        parsed = parse(kind, text)
    except ParseError as exc:
        return FileAnalysis(kind, None, (), exc.message)
    return FileAnalysis(kind, parsed, findings_for(kind, text, exp))
