"""The engine's core: its state, its events, the step life cycle, probing, judging, measuring.

The layers above add physical actions (wizard/engine/physical.py), fixes (fixing.py), the
bisection (bisection.py), the steps (steps.py) and the walk (walk.py). All I/O goes through the
ports (wizard/engine/ports.py); the fix transaction is wizard/engine/txn.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypedDict, Unpack

from wizard import changes, recable
from wizard.drain import CARRIER_PROBE, ENGINE_PROBES, PHY_PROBE, DrainGuard, link_downs
from wizard.drain import FAULT_ID as UNDRAINED
from wizard.engine.machine import Phase, StepLifecycle
from wizard.engine.ports import (
    CheckLike,
    Fabric,
    MeasureKind,
    Operator,
    StepLike,
    Thresholds,
)
from wizard.engine.records import Resume, RunResult
from wizard.engine.txn import FixTransaction
from wizard.errors import LifecycleError
from wizard.events import (
    Event,
    LinkTransitionSeen,
    MeasurementTaken,
    Note,
    StepChanged,
    VerdictReached,
)
from wizard.model import Evidence, FixPlan, Measurement, Status, Verdict
from wizard.pipeline import run_checks_yielding
from wizard.probes import Observations, Probe


class EngineOptions(TypedDict, total=False):
    """The engine's tunables; each has a default (see `EngineCore.__init__`)."""

    session_id: str
    rollback_window_s: float
    clock: Callable[[], float]
    sleep: Callable[[float], Any]
    poll_interval_s: float
    physical_timeout_s: float
    resume: Resume | None
    disarm_budget_s: float
    break_stale_locks: bool


class EngineCore:
    def __init__(
        self,
        *,
        fabric: Fabric,
        operator: Operator,
        emit: Callable[[Event], None],
        flow: Sequence[StepLike],
        checks: Sequence[CheckLike],
        make_context: Callable[[Observations, DrainGuard], Any],
        thresholds: Thresholds,
        **options: Unpack[EngineOptions],
    ) -> None:
        resume = options.get("resume")
        self.fabric = fabric
        self.operator = operator
        self._emit = emit
        self.flow = list(flow)
        self.checks = list(checks)
        self.make_context = make_context
        self.thresholds = thresholds
        self.session_id = options.get("session_id", "session")
        self.rollback_window_s = options.get("rollback_window_s", 300.0)
        self.clock: Callable[[], float] = options.get("clock", time.time)
        self.sleep: Callable[[float], Any] = options.get("sleep", asyncio.sleep)
        self.poll_interval_s = options.get("poll_interval_s", 1.0)
        self.physical_timeout_s = options.get("physical_timeout_s", 900.0)
        self.disarm_budget_s = options.get("disarm_budget_s", 60.0)  # retries of a lost disarm
        self.break_stale_locks = options.get("break_stale_locks", False)  # the operator asked
        self.target_clock_rate = 1.0  # target-clock seconds per wall second (a lab runs faster)
        self.settle_timeout_s = 30.0  # links bounced by a fix: how long to wait for them
        # (the expectations' link_settle_timeout_s overrides it: inventory `expectations:`)
        self.guard = resume.guard if resume and resume.guard else DrainGuard()
        self.result = RunResult()
        self._resume = resume
        self._verified_fixes: set[str] = set(resume.verified_fixes) if resume else set()
        self._undone_steps: set[str] = set()  # steps whose verified fix a rollback undid
        self._golden_files: dict[str, str] = {}  # switch -> golden export listed with its size
        self._step = self.flow[0].id if self.flow else ""
        self._phase_reason = ""  # why the next phase change happens, when not the trigger
        self.lifecycle = StepLifecycle(self._phase_changed)
        self.txn = FixTransaction(self)
        self._last_obs: Observations | None = None
        self._skips: set[str] = set()  # steps the operator asked to skip
        self._confirmed: set[str] = set()  # nodes whose part of a physical action is seen done
        self._ports_before: dict[str, dict[str, recable.Port]] = {}  # at the re-cable request
        self._recable_seen: dict[str, str] = {}  # node -> what its ports showed last
        # the direct-connect test skipped because these open findings explained the numbers
        self._deferred: tuple[str, ...] = resume.deferred if resume else ()
        self._revisit: str | None = None  # a step to run again once the current one ends
        self._return_to: int | None = None
        self._declined: dict[str, list[tuple[Verdict, FixPlan]]] = {}  # step -> still on offer
        self._cancel_wait = False  # the operator stopped waiting for a physical action
        # faults whose last verdict is `unknown`: a later measurement judges them again (a CX7
        # masked by a switch fault is proven by the rails measured once it is fixed)
        self._unknown: set[str] = set(resume.unknown) if resume else set()
        if resume is not None:
            self.result.fixes = list(resume.fixes)
            self.result.healthy_before = resume.healthy_before

    # -- operator intents ----------------------------------------------------------------------

    def request(self, intent: str, step: str | None = None) -> None:
        """An operator intent from outside the engine's own questions (the TUI's buttons).
        `skip`: the step (default: the current one) is not run, or stops offering fixes, and is
        recorded as skipped by the operator. Navigation (next, rerun, back) is answered when the
        engine asks at the end of each step."""
        if intent == "skip":
            target = step or self._step
            self._skips.add(target)
            self.note(f"{target}: skipped by the operator", "warn")
        elif intent == "cancel_wait":
            self._cancel_wait = True

    # -- events --------------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        self._emit(event)

    def note(self, text: str, level: str = "info") -> None:
        self.emit(Note(level=level, text=text, step=self._step))

    def _phase_changed(self, _src: Phase, dest: Phase, trigger: str) -> None:
        reason, self._phase_reason = self._phase_reason or trigger, ""
        self.emit(StepChanged(step=self._step, phase=dest.value, reason=reason))

    def _fire(self, trigger: str) -> None:
        """Move the step's life cycle. A move `wizard.engine.machine.TRANSITIONS` does not
        declare is a bug in the engine: it raises `LifecycleError` naming the step, phase and
        trigger (the walk stops and says so), never a silent no-op."""
        if not self.lifecycle.can(trigger):
            raise LifecycleError(self._step, self.lifecycle.state.value, trigger)
        self.lifecycle.fire(trigger)

    # -- what the fix transaction reads of the walk (wizard/engine/session.py) ---------------

    @property
    def step(self) -> str:
        return self._step

    def fire(self, trigger: str) -> None:
        self._fire(trigger)

    def can_fire(self, trigger: str) -> bool:
        return self.lifecycle.can(trigger)

    async def verify(self, plan: FixPlan) -> tuple[bool, str]:
        return await self._verify(plan)

    # -- probing and judging -------------------------------------------------------------------

    def _checks_for(self, faults: Sequence[str], *, traffic: bool | None = None) -> list[CheckLike]:
        wanted = set(faults)
        out = []
        for c in self.checks:
            if not wanted & set(c.faults):
                continue
            if traffic is not None and c.needs_traffic != traffic:
                continue
            out.append(c)
        return out

    async def _sweep(self, checks: Sequence[CheckLike]) -> Observations:
        probes: dict[str, Probe] = {p.name: p for p in ENGINE_PROBES}
        for c in checks:
            for p in c.probes:
                probes.setdefault(p.name, p)
        if self.lifecycle.state is not Phase.VERIFYING:  # a verification's sweep stays one
            self._fire("probe")
        # The fabric records every probe (ProbeSent/ProbeAnswered) as it goes.
        obs = await self.fabric.sweep(list(probes.values()))
        for target, error in obs.unreachable.items():
            self.note(f"{target} did not answer: {error}", "error")
        self._observe_carrier(obs)
        self._last_obs = obs
        return obs

    def _observe_carrier(self, obs: Observations) -> None:
        now = self.clock()
        for node in self.fabric.nodes:
            res = obs.node(node, CARRIER_PROBE.name)
            if res is None or not res.stdout:
                continue
            phy = [
                r.stdout
                for key, r in obs.nodes.get(node, {}).items()
                if key.startswith(PHY_PROBE.name + ":") and r.ok
            ]
            downs = link_downs(res.stdout, phy)
            boot_id = res.stdout.strip().splitlines()[-1].strip()
            cause = self.guard.observe_counters(node, downs, now, boot_id)
            if cause:
                self.emit(LinkTransitionSeen(node=node, cause=cause, at=now))

    async def _judge(
        self, checks: Sequence[CheckLike], obs: Observations, faults: Sequence[str] | None
    ) -> list[Verdict]:
        """The checks' verdicts, the loop running between two checks (a TUI answers its keys)."""
        ctx = self._with_session(self.make_context(obs, self.guard))
        return await run_checks_yielding(checks, obs, ctx, faults=faults)

    def _record_verdicts(self, verdicts: Sequence[Verdict]) -> None:
        self.result.steps.setdefault(self._step, [])
        existing = self.result.steps[self._step]
        for v in verdicts:
            self.emit(VerdictReached(step=self._step, verdict=v))
            existing[:] = [e for e in existing if e.fault != v.fault] + [v]
            if v.status is Status.UNKNOWN:
                self._unknown.add(v.fault)
            else:
                self._unknown.discard(v.fault)

    # -- measurements and the drain guard -----------------------------------------------------

    async def _measure(self, kind: MeasureKind) -> list[Measurement]:
        self._fire("measure")
        raw = await self.fabric.measure(kind)
        out: list[Measurement] = []
        if kind in ("rails", "matrix") and raw:
            # A rails sweep measures the whole plan: it replaces the last one. The plan's pairs
            # follow the addresses (a fixed duplicate IP gives new targets), so keeping the old
            # keys would judge the fabric by pairs that no longer exist.
            stale = set(self.result.rails_gbps) | {t for t in self.result.unjudged if "->" in t}
            self.result.rails_gbps.clear()
            for target in stale:
                self.result.unjudged.pop(target, None)
        for measured in raw:
            nodes = tuple(measured.extra.get("nodes") or self.fabric.nodes)
            pending = self.guard.undrained(nodes)
            m = measured
            if pending and m.valid:
                m = replace(m, valid=False, reason=self.guard.reason(pending))
            out.append(m)
            self.emit(MeasurementTaken(step=self._step, measurement=m))
            if not m.valid:
                self.result.unjudged[m.target] = m.reason
                self.result.rails_gbps.pop(m.target, None)
                self.result.halves_gbps.pop(m.target, None)
                self.result.halves_across_isl.discard(m.target)
            else:
                self.result.unjudged.pop(m.target, None)
                if kind in ("rails", "direct", "matrix"):
                    self.result.rails_gbps[m.target] = m.value
                elif kind == "halves":
                    self.result.halves_gbps[m.target] = m.value
                    if m.extra.get("across_isl"):
                        self.result.halves_across_isl.add(m.target)
                    else:
                        self.result.halves_across_isl.discard(m.target)
                elif kind == "nccl" and m.target == "cluster":
                    self.result.nccl_busbw = m.value
        invalid = [m for m in out if not m.valid and m.reason.startswith("not evidence")]
        if invalid:
            self._record_verdicts(
                [
                    Verdict(
                        fault=UNDRAINED,
                        status=Status.FAIL,
                        summary=invalid[0].reason,
                        targets=tuple(sorted(self.guard.undrained(self.fabric.nodes))),
                        evidence=tuple(
                            Evidence(
                                target=m.target,
                                command=str(m.extra.get("command", kind)),
                                observed=f"{m.value:.2f} {m.unit} (not judged)",
                                expected="a measurement from drained nodes",
                                status=Status.FAIL,
                            )
                            for m in invalid
                        ),
                        check="drain-guard:refused",  # the engine's own, from the results
                    )
                ]
            )
        return out

    async def _measure_and_judge(
        self, kind: MeasureKind, faults: Sequence[str], *, explained: bool = False
    ) -> tuple[list[Measurement], list[Verdict]]:
        """Measure and judge with the step's traffic checks. With `explained`, a verdict the
        checks give under another fault id (the finding that explains a low number) is kept."""
        checks = self._checks_for(faults, traffic=True)
        if kind == "fabric":
            # the checks that judge the ping matrix, on a fresh sweep of their own probes (the
            # last sweep may have been a fix's verification, which read other probes), read
            # before the traffic: the session log then holds the sweep, the measurement and
            # the verdicts judged with both, in that order
            checks = [
                c for c in self._checks_for(faults) if c.needs_traffic or c.id == "switch.mtu"
            ]
            await self._sweep([c for c in checks if not c.needs_traffic])
        base = await self._read_for(checks)
        ms = await self._measure(kind)
        valid = tuple(m for m in ms if m.valid)
        seen = getattr(self.fabric, "traffic", None) if kind == "fabric" else None
        if not valid and not seen:
            return ms, []
        obs = replace(base, measurements=valid)
        if isinstance(seen, Mapping) and seen:
            obs = replace(obs, traffic={**base.traffic, **seen})  # the ping matrix
        # what these numbers can settle besides the step's own faults: those left `unknown`
        # before (a CX7 masked by a switch fault until it was fixed). Only a pass settles one
        # here; still unknown, it stays as it was, and a finding is its own step's (the walk
        # goes back to the direct-connect test when rails stay low once the causes are fixed)
        settle = sorted({f for c in checks for f in c.faults} & (self._unknown - set(faults)))
        verdicts = await self._judge(checks, obs, None if explained else (*faults, *settle))
        verdicts = [v for v in verdicts if v.fault not in settle or v.status is Status.PASS]
        self._record_verdicts(verdicts)
        return ms, verdicts

    async def _read_for(self, checks: Sequence[CheckLike]) -> Observations:
        """What the traffic checks read besides the numbers (the QoS table, the addresses, the
        bridge that explain a stall or a low rail), read again just before the tests run, over
        the last sweep: a step's sweep reads only its own checks' probes. Part of the last
        sweep, not a sweep of its own (no phase: the session log holds these answers after
        that sweep's, and replay reads them the same way)."""
        base = self._last_obs or Observations()
        probes: dict[str, Probe] = {}
        for c in checks:
            for p in c.probes:
                probes.setdefault(p.name, p)
        if not probes:
            return base
        got = await self.fabric.sweep(list(probes.values()))
        nodes = {t: {**base.nodes.get(t, {}), **a} for t, a in got.nodes.items()}
        switches = {t: {**base.switches.get(t, {}), **a} for t, a in got.switches.items()}
        merged = replace(
            base,
            nodes={**base.nodes, **nodes},
            switches={**base.switches, **switches},
            # a target this read reached (or not) is as it says; the others as the sweep said
            unreachable={
                **{t: e for t, e in base.unreachable.items() if t not in {*nodes, *switches}},
                **got.unreachable,
            },
        )
        self._last_obs = merged
        return merged

    async def _verify(self, plan: FixPlan) -> tuple[bool, str]:
        faults = plan.verify_checks or (plan.fault,)
        checks = self._checks_for(faults, traffic=False)
        if not checks:
            return True, "no read-only check to re-run"
        obs = await self._sweep(checks)
        # The same sweep also shows the step's other faults those checks report: they are
        # judged again too, so no verdict from before the change stays on the step as if current
        # (an "explained by <the fault just fixed>" pass).
        verdicts = await self._judge(checks, obs, (*faults, *self._step_faults_of(checks)))
        self._record_verdicts(verdicts)
        bad = [
            v
            for v in verdicts
            if v.fault == plan.fault
            and v.status in (Status.FAIL, Status.WARN, Status.UNKNOWN)
            and (
                not plan.verify_targets
                or not v.targets
                or bool(set(v.targets) & set(plan.verify_targets))
            )
        ]
        if bad:
            return False, bad[0].summary
        return True, f"{plan.fault}: check passes after the change"

    def _step_faults_of(self, checks: Sequence[CheckLike]) -> tuple[str, ...]:
        """The current step's fault ids that `checks` report."""
        spec = next((s for s in self.flow if s.id == self._step), None)
        own = set(getattr(spec, "faults", ()))
        return tuple(f for c in checks for f in c.faults if f in own)

    def _with_session(self, ctx: Any) -> Any:
        """The judges' context with what this session fixed (node -> fault ids of verified
        fixes): the persistence checks ask for the files those fixes need at boot."""
        fixed = changes.fixed_by_node((f.target, f.fault) for f in self.result.fixes if f.verified)
        if not fixed or not hasattr(ctx, "fixed"):
            return ctx
        return replace(ctx, fixed=fixed)
