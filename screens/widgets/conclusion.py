"""A step's conclusion as one sentence with its numbers, above its evidence.

"through the switch: 0.0 Gb/s, transport retry counter exceeded; direct cable: 111.97 Gb/s; so
the fault is on the switch path". Built from what the step measured and judged (the
`StepView`) against the expectations table; pure, no Textual.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from flows.expectations import Expectations
from screens.widgets.view_model import StepView
from wizard.model import Measurement, Status

_ERROR = re.compile(r"\(([^()]*)\)")


def _span(values: Sequence[float]) -> str:
    if not values:
        return "—"
    lo, hi = min(values), max(values)
    return f"{hi:.2f} Gb/s" if abs(hi - lo) < 0.005 else f"{lo:.1f}–{hi:.1f} Gb/s"


def _why_zero(ms: Sequence[Measurement]) -> str:
    """The tool's own words for a failed run: `transport retry counter exceeded`."""
    for m in ms:
        if m.value == 0 and m.reason:
            found = _ERROR.search(m.reason)
            return found.group(1) if found else m.reason.split(";")[0]
    return ""


def _direct_sentence(step: StepView, e: Expectations) -> str:
    rails = [(m, d) for m, d in zip(step.measurements, step.direct, strict=False) if m.valid]
    switched = [m for m, d in rails if m.kind == "rail" and not d]
    direct = [m for m, d in rails if m.kind == "rail" and d]
    if not switched and not direct:
        return ""
    parts = []
    target = e.rail_fix_target_gbps
    if switched:
        text = f"through the switch: {_span([m.value for m in switched])}"
        why = _why_zero(switched)
        parts.append(text + (f", {why}" if why else ""))
    if direct:
        text = f"direct cable: {_span([m.value for m in direct])}"
        why = _why_zero(direct)
        parts.append(text + (f", {why}" if why else ""))
    sw_ok = bool(switched) and min(m.value for m in switched) >= target
    di_ok = bool(direct) and min(m.value for m in direct) >= target
    if sw_ok:
        parts.append(f"every rail at ≥ {target:.0f} Gb/s through the switch: nothing to bisect")
    elif direct and di_ok:
        parts.append("so the fault is on the switch path")
    elif direct:
        parts.append(
            f"below {target:.0f} Gb/s on a direct cable too: so the fault is on the host side "
            "(NIC, PCIe, CX7 state)"
        )
    return "; ".join(parts)


def _rails(ms: list[Measurement]) -> str:
    """The span of these rail tests, and why a test that moved nothing did not."""
    why = _why_zero(ms)
    return f"{_span([m.value for m in ms])}{f', {why}' if why else ''}"


def _measured(step: StepView, e: Expectations) -> str:
    measured = [m for m in step.measurements if m.kind == "rail" and m.valid]
    rails = [m.value for m in measured]
    # a step that measured before its fix (the proof) and after it: the two apart
    cut = step.fix_at if step.fix_at is not None else 0
    before = [m for m in step.measurements[:cut] if m.kind == "rail" and m.valid]
    after = [m for m in step.measurements[cut:] if m.kind == "rail" and m.valid]
    pairs = [m.value for m in step.measurements if m.kind == "pair" and m.valid]
    # the cluster's all_reduce (not the 2-node sendrecv or the job's own environment)
    cluster = [
        m for m in step.measurements if m.kind == "nccl" and m.valid and m.target == "cluster"
    ]
    out = []
    expected = f"(expected ~{e.rail_switched_gbps:.0f} through the switch)"
    if before and after:
        out.append(f"rails {_rails(after)} after the fix, {_rails(before)} before it {expected}")
    elif rails:
        # a rail that moved nothing says why, in the tool's words (a stall the next step fixes)
        out.append(f"rails {_rails(measured)} {expected}")
    if pairs:
        across = sum(
            1
            for m in step.measurements
            if m.kind == "pair" and m.valid and m.extra.get("across_isl")
        )
        isl = (
            f"; ≥ {e.halves_gate(True):.0f} for {across} node(s) alone on a switch, across an ISL"
            if across
            else ""
        )
        out.append(
            f"both halves {_span(pairs)} per node "
            f"(expected ≥ {e.node_both_halves_min_gbps:.0f}{isl})"
        )
    if cluster:
        m = cluster[-1]
        nodes = m.extra.get("nodes")
        n = len(nodes) if isinstance(nodes, (list, tuple)) else 0
        switches = m.extra.get("switches")
        gate = e.nccl_gate(n, switches) if n and isinstance(switches, int) else e.nccl_pass_gate
        out.append(f"NCCL all_reduce busbw {m.value:.2f} GB/s (gate {gate:.2f})")
    return "; ".join(out)


def _low_at_the_end(step: StepView, e: Expectations) -> bool:
    """The step's last rail tests (after its fix, when it made one) include one below the fix
    target."""
    cut = step.fix_at if step.fix_at is not None else 0
    last = [m for m in step.measurements[cut:] if m.kind == "rail" and m.valid]
    return any(m.value < e.rail_fix_target_gbps for m in last)


def conclusion(step: StepView, e: Expectations, open_elsewhere: Sequence[str] = ()) -> str:
    """The step's conclusion, or "" while it has nothing to say. `open_elsewhere`: the faults
    found and still open that other steps judge: named when this step's rails stay below the
    fix target with nothing of its own failing (an offload fixed and verified, the rails then
    held at 0 by the QoS stall the next step proves)."""
    if step.id == "direct_connect":
        sentence = _direct_sentence(step, e)
        if sentence:
            return sentence
    verdicts = list(step.verdicts.values())
    bad = [v for v in verdicts if v.status in (Status.FAIL, Status.WARN)]
    unseen = [v for v in verdicts if v.status is Status.UNKNOWN]
    parts = []
    if bad:
        names = ", ".join(v.fault for v in bad[:3]) + (" …" if len(bad) > 3 else "")
        parts.append(f"{len(bad)} finding(s): {names}")
    if unseen:
        parts.append(f"{len(unseen)} not checked ({step.not_checked_reason})")
    if verdicts and not bad and not unseen:
        parts.append(f"all {len(verdicts)} check(s) pass")
    measured = _measured(step, e)
    if measured:
        parts.append(measured)
    if measured and not bad and open_elsewhere and _low_at_the_end(step, e):
        names = ", ".join(open_elsewhere[:3]) + (" …" if len(open_elsewhere) > 3 else "")
        parts.append(f"the rails are still low with {names} still open")
    if any(f.state == "verified" for f in step.fixes.values()):
        parts.append("fixed and verified")
    return "; ".join(parts)
