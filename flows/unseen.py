"""Nothing unobserved passes: a check's verdicts, corrected for the targets it could not see.

A judge only looks at what the sweep brought back. A node whose SSH was refused, or a switch
that rejected the password, simply has no observations, and a judge that finds nothing wrong in
the rest would say `pass` for the whole fabric. `account_unseen` runs after every judge (from
`Check.run`, so the engine, `fabwiz check`, replay and the reports all get the same answer): for
each verdict of a check that needed a target the sweep could not reach, that target becomes an
`unknown` piece of evidence; a verdict that would have passed becomes `unknown` for exactly
those targets; a finding keeps its status and names the unseen targets beside its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from wizard.model import Evidence, Status, Verdict
from wizard.probes import HostProbe, Observations, SwitchProbe

if TYPE_CHECKING:
    from flows.base import Check, Context

NOT_SEEN = "not checked"


def unseen_targets(check: Check, obs: Observations, ctx: Context) -> dict[str, str]:
    """target -> why it could not be observed, for the targets `check` needs."""
    needs_nodes = check.needs_traffic or any(isinstance(p, HostProbe) for p in check.probes)
    needs_switches = any(isinstance(p, SwitchProbe) for p in check.probes)
    out: dict[str, str] = {}
    if needs_nodes:
        for node in ctx.nodes:
            if node in obs.unreachable:
                out[node] = obs.unreachable[node]
    if needs_switches:
        for switch in ctx.switches:
            if switch in obs.unreachable:
                out[switch] = obs.unreachable[switch]
    return out


def account_unseen(
    check: Check, verdicts: Sequence[Verdict], obs: Observations, ctx: Context
) -> list[Verdict]:
    """`verdicts` with every unseen target of `check` made explicit (see the module doc)."""
    unseen = unseen_targets(check, obs, ctx)
    if not unseen:
        return list(verdicts)
    return [_with_unseen(v, unseen) for v in verdicts]


def _with_unseen(v: Verdict, unseen: dict[str, str]) -> Verdict:
    missing = {t: why for t, why in unseen.items() if t not in v.targets}
    if not missing and v.status is not Status.PASS:
        return v
    evidence = tuple(
        Evidence(
            target=t,
            command="connect",
            observed=f"{NOT_SEEN}: {why}",
            expected="reachable",
            status=Status.UNKNOWN,
        )
        for t, why in sorted(missing.items())
    )
    names = _why(unseen)
    if v.status in (Status.PASS, Status.BENIGN, Status.UNKNOWN):
        already = v.targets if v.status is Status.UNKNOWN else ()
        targets = tuple(dict.fromkeys((*already, *sorted(unseen))))
        seen = [e for e in v.evidence if e.target not in unseen]
        if v.status is Status.UNKNOWN:
            summary = f"{v.summary}; {NOT_SEEN} on {names}"
        elif seen:
            summary = f"{NOT_SEEN} on {names}; elsewhere: {v.summary}"
        else:
            summary = f"{NOT_SEEN} on {names}"
        return Verdict(
            fault=v.fault,
            status=Status.UNKNOWN,
            summary=summary,
            targets=targets,
            evidence=(*evidence, *v.evidence),
            check=v.check,
        )
    # A finding stays a finding; the targets it could not see are listed beside it.
    return Verdict(
        fault=v.fault,
        status=v.status,
        summary=f"{v.summary}; {NOT_SEEN} on {names}",
        targets=v.targets,
        evidence=(*v.evidence, *evidence),
        check=v.check,
    )


def _why(unseen: dict[str, str]) -> str:
    """`spark3 (connection refused)`, or the names alone when there are many."""
    if len(unseen) > 3:
        return ", ".join(sorted(unseen))
    return ", ".join(f"{t} ({_short(why, t)})" for t, why in sorted(unseen.items()))


def _short(text: str, target: str, limit: int = 60) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "no answer"
    line = line.removeprefix(f"{target}: ")
    return line if len(line) <= limit else line[: limit - 1] + "…"
