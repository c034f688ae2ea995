"""The one check pipeline: observations in, verdicts out, with one error policy.

The engine's steps, `fabwiz check`, `fabwiz fix` and `fabwiz replay` all judge through
`run_checks`. A check that raises is a bug in that check, not a finding about the fabric and
never a pass: each fault id it owns gets an `unknown` verdict naming the check and the error, and
the other checks are judged as usual.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from wizard.model import Evidence, Status, Verdict
from wizard.probes import Observations
from wizard.turns import Turns

__all__ = ["Judged", "check_failed", "is_check_failure", "run_check", "run_checks"]

_FAILED_COMMAND = "fabwiz check "


class Judged(Protocol):
    """What the pipeline needs of a check (flows.base.Check has it)."""

    @property
    def id(self) -> str: ...
    @property
    def faults(self) -> tuple[str, ...]: ...

    def run(self, obs: Observations, ctx: Any) -> list[Verdict]: ...


def check_failed(check: Judged, exc: BaseException) -> list[Verdict]:
    """The `unknown` verdicts of a check that raised: one per fault id it owns."""
    error = f"{type(exc).__name__}: {exc}"
    return [
        Verdict(
            fault=fault,
            status=Status.UNKNOWN,
            summary=f"the check {check.id} failed ({error}); this fault was not judged",
            evidence=(
                Evidence(
                    target="fabwiz",
                    command=_FAILED_COMMAND + check.id,
                    observed=error,
                    expected="the check judges the recorded output",
                    status=Status.UNKNOWN,
                ),
            ),
            check=check.id,
        )
        for fault in check.faults
    ]


def is_check_failure(verdict: Verdict) -> bool:
    """True for a verdict `check_failed` made (the check raised; nothing was judged)."""
    return verdict.status is Status.UNKNOWN and any(
        e.target == "fabwiz" and e.command == _FAILED_COMMAND + verdict.check
        for e in verdict.evidence
    )


def run_check(check: Judged, obs: Observations, ctx: Any) -> list[Verdict]:
    """One check's verdicts; a check that raises gives `check_failed`'s unknowns."""
    try:
        return check.run(obs, ctx)
    except Exception as exc:  # a check bug must not stop the others nor pass its faults
        return check_failed(check, exc)


def run_checks(
    checks: Iterable[Judged],
    obs: Observations,
    ctx: Any,
    *,
    faults: Sequence[str] | None = None,
) -> list[Verdict]:
    """Every check's verdicts in order, keeping only `faults` when given."""
    wanted = None if faults is None else set(faults)
    out: list[Verdict] = []
    for check in checks:
        out.extend(_kept(run_check(check, obs, ctx), wanted))
    return out


async def run_checks_yielding(
    checks: Iterable[Judged],
    obs: Observations,
    ctx: Any,
    *,
    faults: Sequence[str] | None = None,
    slice_s: float = 0.015,
) -> list[Verdict]:
    """`run_checks` on an event loop that keeps a screen: the loop runs between two checks once
    `slice_s` has gone by. The checks of one sweep take ~0.1 s in all at 64 nodes, in one piece
    too long for a key press or a repaint to wait."""
    wanted = None if faults is None else set(faults)
    out: list[Verdict] = []
    turns = Turns(slice_s)
    for check in checks:
        await turns.take()
        out.extend(_kept(run_check(check, obs, ctx), wanted))
    return out


def _kept(verdicts: list[Verdict], wanted: set[str] | None) -> list[Verdict]:
    return verdicts if wanted is None else [v for v in verdicts if v.fault in wanted]
