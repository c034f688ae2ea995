"""What a check is: probe specs, a pure parse, a pure judge, an optional fix plan.

A check lives in one module of `flows/checks/` and exports `CHECK`. The sweep collects the probes
of every check, runs each once per target (batched per node), and hands the results to the checks
as `Observations`. `parse` turns the observations it needs into typed values (pure, using
`wizard.parsers`); `judge` compares them with the expectations table and returns one `Verdict` per
fault id it owns, each citing its evidence. Unknown or unparseable output gives an `unknown`
verdict carrying the raw text, never a crash and never a silent pass.

A check may also judge one pasted tool output (`fabwiz analyze`): `pasted` maps an output kind
of `wizard.parsers.detect` to the check's rule for it. The rule builds the check's observations
from the text and runs the check's own parse and judge, so a pasted output and a sweep are judged
by the same rules; what the text cannot show (node names, rails) is `unknown`, never a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from flows.expectations import Expectations
from wizard.model import FixPlan, Rail, Verdict
from wizard.probes import HostProbe, Observations, Probe, SwitchProbe, Transition

__all__ = [
    "Check",
    "Context",
    "HostProbe",
    "Observations",
    "PastedRule",
    "Probe",
    "Step",
    "SwitchProbe",
    "Transition",
]


@dataclass(frozen=True, slots=True)
class Context:
    """Everything a judge may consult besides the observations. Passed explicitly, never global."""

    expectations: Expectations
    rails: Mapping[str, tuple[Rail, ...]] = field(default_factory=dict)  # node -> rails
    nodes: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()
    cabling: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # rail key -> (sw, port)
    management: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # switch -> ports
    addressing: Mapping[str, Any] = field(default_factory=dict)  # the inventory's plan
    known_good_firmware: str | None = None
    transitions: tuple[Transition, ...] = ()
    drained_at: Mapping[str, float] = field(default_factory=dict)  # node -> last AC drain
    nccl_devices: str | None = None  # the inventory's `nccl: {devices: one|all}`
    jobs: Mapping[str, str] = field(default_factory=dict)  # node -> the job's container name
    job_processes: Mapping[str, str] = field(default_factory=dict)  # node -> its process name
    # target (switch or node) -> when this session last changed it, on that target's own clock
    # (epoch seconds). Log lines older than that are history, never current evidence.
    changed_at: Mapping[str, float] = field(default_factory=dict)
    fixed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # node -> faults fixed


Step = Literal[
    "preflight",
    "direct_connect",
    "drain",
    "offload",
    "qos",
    "addressing",
    "halves",
    "persist",
]


PastedJudge = Callable[[str, Context], list[Verdict]]


@dataclass(frozen=True, slots=True)
class PastedRule:
    """What a check says about one pasted output of one of `kinds` (`wizard.parsers.detect`).

    `judge(text, context)` returns the verdicts the text supports: findings, `benign` red
    herrings, and `unknown` where it lacks the context a sweep has; a `pass` is dropped by
    `fabwiz analyze`, which lists findings only."""

    kinds: tuple[str, ...]
    judge: PastedJudge


@dataclass(frozen=True, slots=True)
class Check:
    """One check module's contract (STYLE.md, "What a check looks like")."""

    id: str  # the check's name: its primary fault id
    title: str
    description: str  # the module docstring: the in-app help (what, why, what good looks like)
    faults: tuple[str, ...]  # the fault ids this check can report
    step: Step  # where it sits in the bisection order
    probes: tuple[Probe, ...]
    parse: Callable[[Observations, Context], Any]
    judge: Callable[[Any, Context], list[Verdict]]
    fix: Callable[[Any, Verdict, Context], FixPlan | None] | None = None
    needs_traffic: bool = False  # judged from bandwidth tests (`check --perf`)
    pasted: tuple[PastedRule, ...] = ()  # how it judges one pasted output (`fabwiz analyze`)

    def run(self, obs: Observations, ctx: Context) -> list[Verdict]:
        """parse then judge, stamping the check id on each verdict; a target the sweep could not
        reach is `unknown` in every verdict that needed it (`flows.unseen`)."""
        from flows.unseen import account_unseen

        parsed = self.parse(obs, ctx)
        out = []
        for v in self.judge(parsed, ctx):
            out.append(v if v.check else _with_check(v, self.id))
        return account_unseen(self, out, obs, ctx)


def _with_check(v: Verdict, check: str) -> Verdict:
    return Verdict(
        fault=v.fault,
        status=v.status,
        summary=v.summary,
        targets=v.targets,
        evidence=v.evidence,
        check=check,
    )
