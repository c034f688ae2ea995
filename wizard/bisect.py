"""The reasoning of the direct-connect step, as pure functions over measurements and verdicts.

The step measures every rail through the switch. Low numbers are first met with an AC drain of
the nodes that measured low (a degraded CX7 clears only with one), and measured through the switch
again: a rail that was low before the drain and at line rate after it is `host.cx7-degraded` on
the drained nodes, "cleared by AC drain". Only what stays low is bisected: a node of the worst
rail is cabled port to port to a partner that measured well, and the direct number decides
between the switch path (good) and the host branch (bad). Configuration findings from preflight
that already explain the low numbers make the physical test optional.

Nothing here does I/O: the engine (wizard/engine.py) runs the measurements and the hands, these
functions decide who to drain, who to cable and what the numbers mean, in sentences that quote
the numbers on both sides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from wizard import pairs
from wizard.model import Measurement, Status, Verdict


def nodes_of(m: Measurement) -> tuple[str, ...]:
    """The nodes a measurement ran between (client first)."""
    found = [str(m.extra.get(k, "")) for k in ("client", "server")]
    nodes = tuple(n for n in found if n)
    if not nodes:
        nodes = tuple(str(n) for n in m.extra.get("nodes") or ())
    return nodes


def low(ms: Iterable[Measurement], target_gbps: float) -> list[Measurement]:
    """Valid rail measurements below the target, worst first."""
    return sorted((m for m in ms if m.valid and m.value < target_gbps), key=lambda m: m.value)


def good(ms: Iterable[Measurement], target_gbps: float) -> list[Measurement]:
    return [m for m in ms if m.valid and m.value >= target_gbps]


def low_nodes(bad: Iterable[Measurement]) -> list[str]:
    return sorted({n for m in bad for n in nodes_of(m)})


def drain_nodes(
    ms: Sequence[Measurement], bad: Sequence[Measurement], target_gbps: float
) -> dict[str, str]:
    """The nodes to AC-drain for the low rails, each with why, read off the whole pair matrix
    (wizard/pairs.py): the node common to the low pairs, and only it, while its partners reach
    the target with other nodes; both ends of a low pair nothing splits. A low pair whose two
    ends reach the target elsewhere is the switch path: nobody is drained for it."""
    reading = pairs.read(bad, good(ms, target_gbps))
    out: dict[str, str] = {}
    for c in reading.culprits:
        worst = min(c.low, key=lambda m: m.value)
        out[c.node] = (
            f"{c.node} is low with every partner ({pairs.pair_names(c.low)}; {worst.value:.2f} "
            f"Gb/s on {worst.target}) while they reach line rate without it: drain before "
            "bisecting (a degraded CX7 clears only with an AC drain)"
        )
    for m in reading.unsplit:
        for node in nodes_of(m):
            out.setdefault(
                node,
                f"{m.value:.2f} Gb/s through the switch on {m.target}: drain before "
                "bisecting (a degraded CX7 clears only with an AC drain)",
            )
    return out


def _node_of_target(target: str) -> str:
    return target.split("/", 1)[0].split(":", 1)[0]


def explaining(
    findings: Iterable[Verdict],
    bad: Sequence[Measurement],
    switches: Iterable[str],
    faults: set[str],
) -> list[Verdict]:
    """The open configuration findings (of the fault ids in `faults`) that explain every low
    number: a switch-side finding explains any rail through that switch, a host finding the rails
    of the nodes it names. Empty unless every low rail is explained by at least one."""
    sw = set(switches)
    out: list[Verdict] = []
    explained: set[str] = set()
    for v in findings:
        if v.fault not in faults or v.status not in (Status.FAIL, Status.WARN):
            continue
        targets = {_node_of_target(t) for t in v.targets}
        covers = [
            m
            for m in bad
            if v.fault.startswith("switch.")
            or targets & sw
            or not v.targets
            or targets & set(nodes_of(m))
        ]
        if covers:
            out.append(v)
            explained.update(m.target for m in covers)
    if not bad or any(m.target not in explained for m in bad):
        return []
    return out


def suspects(bad: Sequence[Measurement], host_findings: Iterable[Verdict]) -> list[str]:
    """The nodes of the worst rail, most suspect first: a node named by a host finding, then the
    node in more low measurements, then by name."""
    if not bad:
        return []
    worst = bad[0]
    named = {_node_of_target(t) for v in host_findings if v.is_finding for t in v.targets}
    count: dict[str, int] = {}
    for m in bad:
        for n in nodes_of(m):
            count[n] = count.get(n, 0) + 1
    return sorted(nodes_of(worst), key=lambda n: (n not in named, -count.get(n, 0), n))


def partner(
    suspect: str, ms: Sequence[Measurement], target_gbps: float, nodes: Sequence[str]
) -> tuple[str, bool] | None:
    """A partner for `suspect` on a direct cable: a node that only measured well (True), else any
    other node (False), else None."""
    well_ms = good(ms, target_gbps)
    # the suspects of the pair matrix: a partner of a degraded node measured low with it only
    bad_nodes = set(pairs.read(low(ms, target_gbps), well_ms).nodes)
    well = {n for m in well_ms for n in nodes_of(m)}
    for n in nodes:
        if n != suspect and n in well and n not in bad_nodes:
            return n, True
    for n in nodes:
        if n != suspect:
            return n, False
    return None


@dataclass(frozen=True, slots=True)
class Cleared:
    """A rail low before the drain and at line rate after it."""

    target: str
    before: float
    after: float
    nodes: tuple[str, ...]


def cleared_by_drain(
    before: Sequence[Measurement],
    after: Sequence[Measurement],
    drained: Iterable[str],
    target_gbps: float,
) -> list[Cleared]:
    """Rails measured low before the drain and at line rate after it, between drained nodes."""
    done = set(drained)
    now = {m.target: m for m in after if m.valid}
    out: list[Cleared] = []
    for m in low(before, target_gbps):
        a = now.get(m.target)
        nodes = nodes_of(m)
        if a is not None and a.value >= target_gbps and set(nodes) & done:
            out.append(Cleared(m.target, m.value, a.value, tuple(n for n in nodes if n in done)))
    return out


def drained_sentence(cleared: Sequence[Cleared]) -> str:
    nodes = sorted({n for c in cleared for n in c.nodes})
    pairs = "; ".join(
        f"{c.target} {c.before:.2f} Gb/s before, {c.after:.2f} Gb/s after" for c in cleared
    )
    return (
        f"host.cx7-degraded on {', '.join(nodes)}, cleared by AC drain: {pairs} through the "
        "switch. The CX7 was in its low-throughput state; found and fixed by the drain."
    )


def direct_sentence(
    suspect: str,
    mate: str,
    port: int,
    direct: Measurement,
    switched: Measurement,
    target_gbps: float,
) -> tuple[bool, str]:
    """(good, the sentence) for one direct-cable measurement against the switched one."""
    ok = direct.valid and direct.value >= target_gbps
    head = (
        f"direct cable {suspect} port {port} <-> {mate} port {port}: {direct.value:.2f} Gb/s, "
        f"against {switched.value:.2f} Gb/s through the switch ({switched.target})"
    )
    if not direct.valid:
        return False, f"{head}: not evidence ({direct.reason})"
    if ok:
        return True, f"{head}: {suspect}'s NIC and host stack are clear at line rate"
    return False, (
        f"{head}: the low number follows {suspect} off the switch; the fault is on the host side "
        "(CX7 state, PCIe width, host MTU or PFC)"
    )


def switch_path_sentence(cleared: Sequence[tuple[str, Measurement]], switched: Measurement) -> str:
    parts = "; ".join(f"{n} {m.value:.2f} Gb/s on a direct cable" for n, m in cleared)
    return (
        f"{parts}, against {switched.value:.2f} Gb/s through the switch ({switched.target}): "
        "the NICs and host stacks are clear; the fault is on the switch path"
    )


def skipped_sentence(found: Sequence[Verdict], bad: Sequence[Measurement]) -> str:
    faults = ", ".join(sorted({v.fault for v in found}))
    worst = bad[0]
    tests = len({m.target for m in bad})  # a rail test run more than once is still one test
    return (
        f"preflight already found {faults}, which explains the low numbers through the switch "
        f"({worst.value:.2f} Gb/s on {worst.target}, {tests} rail test(s) low): the physical "
        "direct-connect test is skipped; the configuration is fixed first"
    )


def port_of(m: Measurement) -> int:
    try:
        return int(m.extra.get("port", 0))
    except (TypeError, ValueError):
        return 0


def by_target(ms: Iterable[Measurement]) -> Mapping[str, Measurement]:
    return {m.target: m for m in ms}
