"""The wizard engine: walks the bisection with the operator, one step at a time.

For each step of the flow (flows/bisection.py, injected): probe (one concurrent sweep of the
step's checks), judge (the checks, injected), show the evidence (events), offer each fix (preview,
mandatory export, dead-man rollback, apply, verify, disarm or roll back), perform or prompt for
physical actions and watch for their result, and confirm with a bandwidth test where the step
calls for one. The drain guard refuses to judge bandwidth from undrained nodes.

Everything goes through ports (STYLE.md rule 6): `Fabric` (transports, sweep, traffic, the lab's
hands if any), `Operator` (decisions, awaited), an event sink, a clock. The same engine runs in
the TUI, headless (`fabwiz fix`), in tests and on resume. The engine never imports flows: the
flow, the checks and the context factory are given to it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from wizard import bisect, boots, changes, deadman, fixes, golden, locks, recable, settle, undoes
from wizard.drain import FAULT_ID as UNDRAINED
from wizard.drain import DrainGuard, link_downs
from wizard.errors import FabwizError, LifecycleError, SessionLogError
from wizard.events import (
    BisectionConcluded,
    Event,
    ExportTaken,
    FixApplied,
    FixPreviewed,
    FixRefusedEvent,
    FixRolledBack,
    FixVerified,
    LinkTransitionSeen,
    MeasurementTaken,
    NodeDrained,
    Note,
    OperatorAnswered,
    PhysicalActionDone,
    PhysicalActionRequested,
    RollbackArmed,
    RollbackDisarmed,
    SessionEnded,
    StepChanged,
    VerdictReached,
)
from wizard.fixes import ExportStatus
from wizard.machine import Phase, StepLifecycle
from wizard.model import (
    Evidence,
    FixPlan,
    HostChange,
    Measurement,
    PhysicalAction,
    ProbeResult,
    Status,
    Verdict,
)
from wizard.pipeline import run_checks
from wizard.probes import HostProbe, Observations, Probe

UNREACHABLE = "preflight.unreachable"
JOB_ENV = "nccl.job-env"  # the check judging NCCL with the job's own environment
MANUAL_RECHECKS = 2  # a change made by hand is re-checked this many more times before it stays open

# --- ports -----------------------------------------------------------------------------------


class StepLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def faults(self) -> tuple[str, ...]: ...
    @property
    def traffic(self) -> bool: ...


class CheckLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def faults(self) -> tuple[str, ...]: ...
    @property
    def probes(self) -> tuple[Probe, ...]: ...
    @property
    def needs_traffic(self) -> bool: ...
    @property
    def parse(self) -> Callable[[Observations, Any], Any]: ...
    @property
    def fix(self) -> Callable[[Any, Verdict, Any], FixPlan | None] | None: ...

    def run(self, obs: Observations, ctx: Any) -> list[Verdict]: ...


class Thresholds(Protocol):
    @property
    def rail_fix_target_gbps(self) -> float: ...
    @property
    def node_both_halves_min_gbps(self) -> float: ...
    def nccl_gate(self, nodes: int, switches: int) -> float: ...


class Hands(Protocol):
    """The lab's hands: performs a physical action in the simulated rack."""

    async def perform(self, action: PhysicalAction) -> str: ...


MeasureKind = Literal["rails", "halves", "direct", "nccl", "fabric", "matrix"]


class Fabric(Protocol):
    """The cluster as the engine sees it (wizard/fabric.py builds it from an inventory)."""

    @property
    def nodes(self) -> tuple[str, ...]: ...
    @property
    def switches(self) -> tuple[str, ...]: ...
    @property
    def hands(self) -> Hands | None: ...

    def set_step(self, step: str) -> None: ...
    async def sweep(self, probes: Sequence[Probe]) -> Observations: ...
    async def measure(self, kind: MeasureKind) -> list[Measurement]: ...
    async def run(
        self, node: str, command: str, *, stdin: str | None = None, timeout: float = 30.0
    ) -> ProbeResult: ...
    def api(self, switch: str) -> fixes.RouterOsApi: ...
    def management_ports(self, switch: str) -> tuple[str, ...]: ...
    def direct_connect_action(
        self, pair: tuple[str, str] | None = None, port: int = 0
    ) -> tuple[PhysicalAction, PhysicalAction] | None: ...


Choice = Literal["done", "perform", "skip"]


class Operator(Protocol):
    """Decisions, awaited from the engine's worker (a TUI modal, a terminal prompt, `--yes`)."""

    async def confirm_fix(self, plan: FixPlan, export: ExportStatus | None) -> bool: ...
    async def physical_action(self, action: PhysicalAction, can_perform_in_lab: bool) -> str: ...
    async def choose(self, step: str, question: str, options: list[str]) -> str: ...
    async def error(self, title: str, message: str, hint: str | None) -> None: ...


# --- results ---------------------------------------------------------------------------------


@dataclass(slots=True)
class FixRecord:
    fix_id: str
    fault: str
    target: str
    applied: bool = False
    verified: bool = False
    rolled_back: bool = False
    export: str | None = None
    refused: str | None = None
    state: str = ""  # final state, when the flags do not say it (see `final_state`)

    @property
    def final_state(self) -> str:
        """verified, rolled-back, undone-by-rollback, rollback-armed, refused, declined..."""
        if self.state:
            return self.state
        if self.refused:
            return "refused"
        if self.rolled_back:
            return "rolled-back"
        if self.verified:
            return "verified"
        return "applied" if self.applied else "declined"


@dataclass(slots=True)
class RunResult:
    healthy_before: bool | None = None
    healthy_after: bool | None = None
    steps: dict[str, list[Verdict]] = field(default_factory=dict)
    fixes: list[FixRecord] = field(default_factory=list)
    rails_gbps: dict[str, float] = field(default_factory=dict)
    halves_gbps: dict[str, float] = field(default_factory=dict)
    nccl_busbw: float | None = None
    unjudged: dict[str, str] = field(
        default_factory=dict
    )  # target -> why its number is no evidence
    aborted: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "healthy_before": self.healthy_before,
            "healthy_after": self.healthy_after,
            "steps": [
                {"step": s, "verdicts": [v.to_json() for v in vs]} for s, vs in self.steps.items()
            ],
            "fixes": [
                {
                    "fault": f.fault,
                    "target": f.target,
                    "applied": f.applied,
                    "verified": f.verified,
                    "rolled_back": f.rolled_back,
                    "export": f.export,
                    "state": f.final_state,
                }
                for f in self.fixes
            ],
            "measurements": {
                "rails_gbps": dict(sorted(self.rails_gbps.items())),
                "halves_gbps": dict(sorted(self.halves_gbps.items())),
                "nccl_busbw": self.nccl_busbw,
            },
            "unjudged": dict(sorted(self.unjudged.items())),
            "aborted": self.aborted,
        }


@dataclass(slots=True)
class Resume:
    """What a resumed engine takes from the session log (wizard/session.py folds it)."""

    step: str
    done_steps: tuple[str, ...] = ()
    verified_fixes: tuple[str, ...] = ()  # fix ids applied and verified: never repeated
    pending_rollbacks: tuple[tuple[str, str, str, bool], ...] = ()  # (fix_id, target, name, ok)
    rollback_scripts: dict[str, str] = field(default_factory=dict)  # name -> armed script
    fix_counter: int = 0  # exports and rollbacks already numbered: new names never collide
    direct_cabled: bool = False  # cut off mid direct-connect test: two nodes still cabled together
    direct_undo: tuple[tuple[str, str, str], ...] = ()  # the recorded moves that restore it
    guard: DrainGuard | None = None
    fixes: tuple[FixRecord, ...] = ()
    healthy_before: bool | None = None
    deferred: tuple[str, ...] = ()  # the direct-connect test waits for these findings' fixes
    exports: dict[str, str] = field(default_factory=dict)  # switch -> last pre-fix export text
    disarmed: tuple[str, ...] = ()  # rollback entries the log records as disarmed


# --- the engine ------------------------------------------------------------------------------

_CARRIER_PROBE = HostProbe(
    name="fabwiz.carrier",
    command=(
        "grep -H . /sys/class/net/*/carrier /sys/class/net/*/speed "
        "/sys/class/net/*/carrier_down_count 2>/dev/null; cat /proc/sys/kernel/random/boot_id"
    ),
)


# the NIC's own link-down counter per rail (a physical bounce; an MTU change does not count)
_PHY_PROBE = HostProbe(
    name="fabwiz.link_down_phy",
    command="ethtool -S {netdev} | grep link_down_events_phy",
    per_rail=True,
)


class Engine:
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
        session_id: str = "session",
        rollback_window_s: float = 300.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Any] = asyncio.sleep,
        poll_interval_s: float = 1.0,
        physical_timeout_s: float = 900.0,
        resume: Resume | None = None,
        disarm_budget_s: float = 60.0,
        break_stale_locks: bool = False,
    ) -> None:
        self.fabric = fabric
        self.break_stale_locks = break_stale_locks  # the operator asked: stale locks may go
        self.disarm_budget_s = disarm_budget_s  # retries of a lost disarm reply
        self._fire_at: dict[str, dt.datetime] = {}  # rollback name -> when it fires (switch)
        self._undone_steps: set[str] = set()  # steps whose verified fix a rollback undid
        self.operator = operator
        self._emit = emit
        self.flow = list(flow)
        self.checks = list(checks)
        self.make_context = make_context
        self.thresholds = thresholds
        self.session_id = session_id
        self.rollback_window_s = rollback_window_s
        self.target_clock_rate = 1.0  # target-clock seconds per wall second (a lab runs faster)
        self.clock = clock
        self.sleep = sleep
        self.poll_interval_s = poll_interval_s
        self.physical_timeout_s = physical_timeout_s
        self.guard = resume.guard if resume and resume.guard else DrainGuard()
        self.result = RunResult()
        self._resume = resume
        self._verified_fixes: set[str] = set(resume.verified_fixes) if resume else set()
        self._fix_counter = 0
        self._golden_files: dict[str, str] = {}  # switch -> golden export listed with its size
        self._step = self.flow[0].id if self.flow else ""
        self._phase_reason = ""  # why the next phase change happens, when not the trigger
        self.lifecycle = StepLifecycle(self._phase_changed)
        self._last_obs: Observations | None = None
        self._skips: set[str] = set()  # steps the operator asked to skip
        self._confirmed: set[str] = set()  # nodes whose part of a physical action is seen done
        self._ports_before: dict[str, dict[str, recable.Port]] = {}  # at the re-cable request
        self._recable_seen: dict[str, str] = {}  # node -> what its ports showed last
        # the direct-connect test skipped because these open findings explained the numbers
        self._deferred: tuple[str, ...] = resume.deferred if resume else ()
        self._revisit: str | None = None  # a step to run again once the current one ends
        self._return_to: int | None = None
        self.settle_timeout_s = 30.0  # links bounced by a fix: how long to wait for them
        # (the expectations' link_settle_timeout_s overrides it: inventory `expectations:`)
        self._declined: dict[str, list[tuple[Verdict, FixPlan]]] = {}  # step -> still on offer
        self._cancel_wait = False  # the operator stopped waiting for a physical action
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
        """Move the step's life cycle. A move `wizard.machine.TRANSITIONS` does not declare is
        a bug in the engine: it is logged as an error naming the step, phase and trigger (in the
        session log, the TUI and the report), never a silent no-op; the walk goes on."""
        if not self.lifecycle.can(trigger):
            self.note(str(LifecycleError(self._step, self.lifecycle.state.value, trigger)), "error")
            return
        self.lifecycle.fire(trigger)

    # -- the walk ------------------------------------------------------------------------------

    async def run(self) -> RunResult:
        """Walk the flow from the start (or from the resumed step) to the end."""
        index = 0
        done: set[str] = set()
        if self._resume is not None:
            done = set(self._resume.done_steps)
            ids = [s.id for s in self.flow]
            index = ids.index(self._resume.step) if self._resume.step in ids else 0
            self._step = self.flow[index].id
            self._fix_counter = self._resume.fix_counter
            await self._settle_pending_rollbacks()
            redo = [s for s in ids if s in self._undone_steps]
            if redo:  # a verified fix its rollback undid meanwhile: that step runs again
                done -= set(redo)
                index = min(index, ids.index(redo[0]))
                self._step = self.flow[index].id
            if self._resume.direct_cabled:
                await self._restore_cabling()
        try:
            while index < len(self.flow):
                spec = self.flow[index]
                if spec.id in done:
                    index += 1
                    continue
                self._step = spec.id
                self.fabric.set_step(spec.id)
                self.lifecycle.force(Phase.IDLE)
                self.emit(StepChanged(step=spec.id, phase="entered", reason="next"))
                outcome = await self._run_step(spec)
                if outcome == "back":
                    done.discard(self.flow[max(0, index - 1)].id)
                    index = max(0, index - 1)
                    continue
                if outcome == "rerun":
                    continue
                done.add(spec.id)
                index += 1
                revisit, self._revisit = self._revisit, None
                ids = [s.id for s in self.flow]
                if revisit in ids and ids.index(revisit) < index:
                    # back to a skipped test once what made it skippable is fixed, then on
                    self._return_to = index
                    done.discard(revisit)
                    index = ids.index(revisit)
                    continue
                if self._return_to is not None:
                    index, self._return_to = self._return_to, None
        except SessionLogError as exc:
            # the log cannot be written (disk full, read-only): stop now, say what the
            # targets do next; nothing more can be recorded
            self.result.aborted = str(exc)
            armed = " Any dead-man rollback already armed restores its target when due."
            await self.operator.error("The wizard stopped", exc.message + armed, exc.hint)
            raise
        except FabwizError as exc:
            self.result.aborted = str(exc)
            await self.operator.error("The wizard stopped", exc.message, exc.hint)
        self.emit(
            SessionEnded(healthy=bool(self.result.healthy_after), reason=self.result.aborted or "")
        )
        return self.result

    async def _run_step(self, spec: StepLike) -> str:
        handler = {
            "preflight": self._step_preflight,
            "direct_connect": self._step_direct_connect,
            "drain": self._step_drain,
            "config": self._step_config,
            "halves": self._step_halves,
            "persist": self._step_persist,
        }[spec.kind]
        self._declined.pop(spec.id, None)  # a re-run offers its fixes afresh
        if spec.id in self._skips:
            skipped = True
        else:
            skipped = await handler(spec)
        state = self.lifecycle.state
        if spec.id in self._skips:
            self._skips.discard(spec.id)
            self.emit(OperatorAnswered(step=spec.id, question="skip step", answer="skip"))
            self._phase_reason = "skipped by the operator"
            if state is not Phase.SKIPPED:
                self._fire("skip")
        elif skipped:
            if state is not Phase.SKIPPED:  # the handler may have said why itself
                self._fire("skip")
        else:
            if state not in (Phase.VERDICT, Phase.IDLE):  # IDLE: nothing to judge
                self._fire("judged")
            self._fire("finish")
        while True:
            declined = self._declined.get(spec.id, [])
            options = ["next", "rerun", "back"] + (["apply"] if declined else [])
            question = f"{spec.title}: done." + (
                f" {len(declined)} fix(es) declined, still on offer." if declined else ""
            )
            answer = await self.operator.choose(spec.id, question, options)
            self.emit(OperatorAnswered(step=spec.id, question="step finished", answer=answer))
            if answer != "apply":
                return answer
            # A declined fix stays on offer: offer it again, with a fresh export.
            self._declined[spec.id] = []
            for verdict, plan in declined:
                await self._offer_and_apply(verdict, plan)

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
        probes: dict[str, Probe] = {
            _CARRIER_PROBE.name: _CARRIER_PROBE,
            _PHY_PROBE.name: _PHY_PROBE,
        }
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
            res = obs.node(node, _CARRIER_PROBE.name)
            if res is None or not res.stdout:
                continue
            phy = [
                r.stdout
                for key, r in obs.nodes.get(node, {}).items()
                if key.startswith(_PHY_PROBE.name + ":") and r.ok
            ]
            downs = link_downs(res.stdout, phy)
            boot_id = res.stdout.strip().splitlines()[-1].strip()
            cause = self.guard.observe_counters(node, downs, now, boot_id)
            if cause:
                self.emit(LinkTransitionSeen(node=node, cause=cause, at=now))

    def _judge(
        self, checks: Sequence[CheckLike], obs: Observations, faults: Sequence[str] | None
    ) -> list[Verdict]:
        ctx = self._with_session(self.make_context(obs, self.guard))
        return run_checks(checks, obs, ctx, faults=faults)

    def _record_verdicts(self, verdicts: Sequence[Verdict]) -> None:
        self.result.steps.setdefault(self._step, [])
        existing = self.result.steps[self._step]
        for v in verdicts:
            self.emit(VerdictReached(step=self._step, verdict=v))
            existing[:] = [e for e in existing if e.fault != v.fault] + [v]

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
            else:
                self.result.unjudged.pop(m.target, None)
                if kind in ("rails", "direct", "matrix"):
                    self.result.rails_gbps[m.target] = m.value
                elif kind == "halves":
                    self.result.halves_gbps[m.target] = m.value
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
                        check="drain-guard",
                    )
                ]
            )
        return out

    async def _measure_and_judge(
        self, kind: MeasureKind, faults: Sequence[str], *, explained: bool = False
    ) -> tuple[list[Measurement], list[Verdict]]:
        """Measure and judge with the step's traffic checks. With `explained`, a verdict the
        checks give under another fault id (the finding that explains a low number) is kept."""
        ms = await self._measure(kind)
        valid = tuple(m for m in ms if m.valid)
        seen = getattr(self.fabric, "traffic", None) if kind == "fabric" else None
        if not valid and not seen:
            return ms, []
        checks = self._checks_for(faults, traffic=True)
        base = self._last_obs or Observations()
        if kind == "fabric":
            # the checks that judge the ping matrix, on a fresh sweep of their own probes (the
            # last sweep may have been a fix's verification, which read other probes)
            checks = [
                c for c in self._checks_for(faults) if c.needs_traffic or c.id == "switch.mtu"
            ]
            base = await self._sweep([c for c in checks if not c.needs_traffic])
        obs = replace(base, measurements=valid)
        if isinstance(seen, Mapping) and seen:
            obs = replace(obs, traffic={**base.traffic, **seen})  # the ping matrix
        verdicts = self._judge(checks, obs, None if explained else faults)
        self._record_verdicts(verdicts)
        return ms, verdicts

    async def _drain(self, nodes: dict[str, str]) -> bool:
        """Ask for (or perform) an AC drain of `nodes`; True when all came back drained."""
        names = tuple(sorted(nodes))
        action = PhysicalAction(
            kind="ac_drain",
            nodes=names,
            instructions=(
                f"AC-drain {', '.join(names)}: shut down, unplug the power cord, wait at least "
                "60 s, plug it back and power on. Reason: "
                + "; ".join(f"{n}: {c}" for n, c in sorted(nodes.items()))
                + ". The wizard waits for each node to come back with a new boot_id."
            ),
        )
        ok = await self._physical(action)
        return ok

    # -- physical actions ------------------------------------------------------------------------

    async def _boot_ids(self, nodes: Sequence[str]) -> dict[str, str]:
        async def one(node: str) -> tuple[str, str]:
            res = await self.fabric.run(node, "cat /proc/sys/kernel/random/boot_id", timeout=5.0)
            return node, res.stdout.strip() if res.ok else ""

        return dict(await asyncio.gather(*(one(n) for n in nodes)))

    async def _physical(self, action: PhysicalAction, undo: PhysicalAction | None = None) -> bool:
        self._fire("need_physical")
        self.emit(
            PhysicalActionRequested(
                step=self._step,
                kind=action.kind,
                nodes=action.nodes,
                instructions=action.instructions,
                cables=action.cables,
                undo=undo.cables if undo is not None else (),
            )
        )
        before = await self._boot_ids(action.nodes)
        # the ports as they are when asked: a re-cable shows as a change from this
        self._ports_before = (
            await self._ports(action.nodes) if action.kind in ("recable", "reseat") else {}
        )
        self._confirmed = set()
        while True:
            if self._step in self._skips:
                return False
            hands = self.fabric.hands
            answer = await self.operator.physical_action(action, hands is not None)
            self.emit(
                OperatorAnswered(step=self._step, question=f"physical:{action.kind}", answer=answer)
            )
            if answer == "skip":
                self.note(
                    f"{action.kind} on {', '.join(action.nodes)} skipped by the operator", "warn"
                )
                return False
            by = "operator"
            if answer == "perform" and hands is not None:
                observed = await hands.perform(action)
                by = "lab"
                self.note(f"lab: {observed}")
            self._cancel_wait = False
            ok, observed = await self._watch(action, before)
            if not ok and self._cancel_wait:
                self._cancel_wait = False
                self.note(f"stopped waiting for {action.kind}: asking again", "warn")
                continue
            if ok:
                self.emit(
                    PhysicalActionDone(
                        step=self._step,
                        kind=action.kind,
                        nodes=action.nodes,
                        performed_by=by,
                        observed=observed,
                    )
                )
                return True
            await self.operator.error("Not done yet", observed, "do it, then answer again")

    async def _watch(self, action: PhysicalAction, before: dict[str, str]) -> tuple[bool, str]:
        if action.kind == "manual":  # nothing to watch: the re-check verifies it
            return True, f"changed by hand on {', '.join(action.nodes)}: re-checking"
        deadline = self.clock() + self.physical_timeout_s
        waiting = set(action.nodes) - self._confirmed
        seen: list[str] = []
        rebooted: list[str] = []  # booted again, but the journal shows no AC drain
        while waiting and self.clock() < deadline and not self._cancel_wait:
            now = await self._boot_ids(sorted(waiting))
            for node, boot in now.items():
                if action.kind in ("ac_drain", "reboot", "firmware_update", "power_cycle"):
                    if boot and boot != before.get(node):
                        waiting.discard(node)
                        if action.kind == "ac_drain":
                            drained, why = await self._drained(node, boot)
                            before[node] = boot  # the next try needs yet another boot
                            if drained is False:
                                rebooted.append(why)
                                self.note(why, "warn")
                                continue
                            if drained is None:
                                why += "; taken as drained on the operator's word"
                                self.note(why, "warn")
                            seen.append(why)
                            self._confirmed.add(node)
                        else:
                            seen.append(f"{node} back with a new boot_id")
                        if action.kind == "ac_drain":
                            self.guard.record_drain(node, self.clock(), boot)
                            self.emit(NodeDrained(node=node, boot_id=boot, at=self.clock()))
                        else:
                            self.guard.link_down_counts.pop(node, None)
                    elif not boot:
                        self.note(f"waiting for {node} to come back")
                elif await self._carrier_up(node):  # recable / reseat: moved, carrier up
                    waiting.discard(node)
                    seen.append(f"{node}: {self._recable_seen.pop(node, 'carrier up')}")
                    self.guard.record_transition(node, self.clock(), f"{action.kind} (prompted)")
                    self.emit(
                        LinkTransitionSeen(
                            node=node, cause=f"{action.kind} (prompted)", at=self.clock()
                        )
                    )
            if waiting and not self._cancel_wait:
                await self.sleep(self.poll_interval_s)
        if rebooted:
            return False, "; ".join(rebooted) + ". Do the AC drain: cord out for over a minute"
        if waiting:
            seen_now = "".join(
                f" ({n}: {self._recable_seen[n]})"
                for n in sorted(waiting)
                if n in self._recable_seen
            )
            return False, f"still waiting for {', '.join(sorted(waiting))}{seen_now}"
        return True, "; ".join(seen)

    async def _drained(self, node: str, boot: str) -> tuple[bool | None, str]:
        """Was `node` off long enough for an AC drain before boot `boot`? (the journal says)"""
        res = await self.fabric.run(node, boots.COMMAND, timeout=10.0)
        min_off = float(getattr(self.thresholds, "ac_drain_min_off_s", 60.0))
        return boots.judge_drain(node, res.stdout, res.ok, boot, min_off)

    async def _ports(self, nodes: Sequence[str]) -> dict[str, dict[str, recable.Port]]:
        """Each node's fabric ports now (carrier, speed, down events); unreadable: left out."""

        async def one(node: str) -> tuple[str, dict[str, recable.Port] | None]:
            res = await self.fabric.run(node, _CARRIER_PROBE.command, timeout=5.0)
            return node, recable.ports(res.stdout) if res.ok else None

        return {n: p for n, p in await asyncio.gather(*(one(n) for n in nodes)) if p is not None}

    async def _carrier_up(self, node: str) -> bool:
        """The node's part of a re-cable or reseat shows: a port moved since the request and is
        back at 200G (wizard.recable). Without a reading from the request, carrier up it is."""
        now = (await self._ports([node])).get(node)
        if now is None:
            return False
        before = self._ports_before.get(node)
        if before is None:
            up = [n for n, p in now.items() if p.carrier == 1 and p.speed >= recable.RATE_MBPS]
            self._recable_seen[node] = f"carrier up at 200000Mb/s on {', '.join(up)}"
            return bool(up)
        ok, why = recable.recabled(before, now)
        self._recable_seen[node] = why
        return ok

    # -- fixes ---------------------------------------------------------------------------------

    def _fix_id(self, verdict: Verdict) -> str:
        return f"{self._step}:{verdict.fault}:{','.join(verdict.targets) or 'cluster'}"

    def _plans(
        self, obs: Observations, verdicts: Sequence[Verdict]
    ) -> list[tuple[Verdict, FixPlan]]:
        ctx = self._with_session(self.make_context(obs, self.guard))
        out: list[tuple[Verdict, FixPlan]] = []
        for v in verdicts:
            if v.status not in (Status.FAIL, Status.WARN):
                continue
            for c in self.checks:
                if v.fault in c.faults and c.fix is not None:
                    try:
                        plan = c.fix(c.parse(obs, ctx), v, ctx)
                    except Exception as exc:  # a plan bug is shown, never a crash
                        why = str(exc) if isinstance(exc, FabwizError) else repr(exc)
                        self.note(f"no fix plan for {v.fault}: {why}", "error")
                        plan = None
                    for p in () if plan is None else (plan, *plan.then):
                        out.append((_for_targets(v, p.verify_targets), p))
                    break
        return out

    async def _offer_and_apply(self, verdict: Verdict, plan: FixPlan) -> bool:
        """Offer one fix under the locks of every switch and node it changes; True when it was
        applied and verified. A target locked by another session refuses the fix."""
        fix_id = self._fix_id(verdict)
        if fix_id in self._verified_fixes or not (plan.switch_changes or plan.host_changes):
            return await self._offer_and_apply_locked(verdict, plan)
        held: list[tuple[str, str]] = []
        try:
            for change in plan.switch_changes:
                if ("switch", change.switch) not in held:
                    await locks.lock_switch(
                        self.fabric.api(change.switch),
                        change.switch,
                        self.session_id,
                        self._lock_hold_s(),
                        break_stale=self.break_stale_locks,
                    )
                    held.append(("switch", change.switch))
            for hchange in plan.host_changes:
                if ("node", hchange.node) not in held:
                    await locks.lock_node(
                        _Runner(self.fabric),
                        hchange.node,
                        self.session_id,
                        self._lock_hold_s(),
                        now=dt.datetime.fromtimestamp(self.clock(), dt.UTC).replace(tzinfo=None),
                        break_stale=self.break_stale_locks,
                    )
                    held.append(("node", hchange.node))
        except Exception as exc:  # held by another session, or the target did not answer
            await self._release_locks(held)
            record = FixRecord(fix_id=fix_id, fault=plan.fault, target=plan.target)
            hint = getattr(exc, "hint", None)
            why = getattr(exc, "message", str(exc)) + (f" ({hint})" if hint else "")
            return self._refuse(plan, record, f"not changed: {why}")
        try:
            return await self._offer_and_apply_locked(verdict, plan)
        finally:
            await self._release_locks(held)

    def _lock_hold_s(self) -> float:
        """How long a lock stays valid without its session: the dead-man window, the disarm
        retries and time to verify."""
        return self.rollback_window_s + self.disarm_budget_s + 600.0

    async def _release_locks(self, held: Sequence[tuple[str, str]]) -> None:
        for kind, target in held:
            try:
                if kind == "switch":
                    await locks.unlock_switch(self.fabric.api(target), self.session_id)
                else:
                    await locks.unlock_node(_Runner(self.fabric), target, self.session_id)
            except Exception as exc:  # away: the lock expires on its own
                self.note(
                    f"{target}: could not release the fabwiz lock ({exc}); it expires", "warn"
                )

    async def _offer_and_apply_locked(self, verdict: Verdict, plan: FixPlan) -> bool:
        """Offer one fix; True when it was applied and verified."""
        fix_id = self._fix_id(verdict)
        record = FixRecord(fix_id=fix_id, fault=plan.fault, target=plan.target)
        if fix_id in self._verified_fixes:
            self.note(f"{plan.fault} on {plan.target}: already fixed and verified in this session")
            return True
        self._fire("offer_fix")
        self.emit(
            FixPreviewed(
                step=self._step,
                fix_id=fix_id,
                fault=plan.fault,
                target=plan.target,
                summary=plan.summary,
                preview=plan.preview,
                bounces_links=plan.bounces_links,
            )
        )
        if plan.physical is not None and not plan.switch_changes and not plan.host_changes:
            return await self._physical_fix(plan, record, fix_id)
        # Safety first: every value must be writable as RouterOS script text, and the
        # management-path guard holds, before any export or change.
        for change in plan.switch_changes:
            why = fixes.unwritable(change)
            if why:
                return self._refuse(plan, record, why)
            # The guard fails closed: when fabwiz cannot tell where its own management path
            # runs, the change is refused, never let through.
            bridge_of, unread = await self._bridge_of(change.switch)
            mgmt = self.fabric.management_ports(change.switch)
            if unread:
                why = (
                    f"the bridge ports of {change.switch} could not be read ({unread}), so fabwiz "
                    "cannot tell whether this change cuts its own RouterOS API session."
                )
            elif not mgmt:
                why = (
                    f"fabwiz cannot tell which port of {change.switch} carries its own RouterOS "
                    "API session (the switch did not show it and the inventory lists no "
                    "`management_ports`), so it cannot rule out cutting that session."
                )
            else:
                why = fixes.management_conflict(change, mgmt, bridge_of)
            if why:
                return self._refuse(
                    plan,
                    record,
                    why + " Do it by hand from the switch's console "
                    "(serial or a port outside the change), or move the management "
                    "port first.",
                )
        exports: list[ExportStatus] = []
        if plan.switch_changes:
            self._fire("export")
            for change in plan.switch_changes:
                self._fix_counter += 1
                name = f"fabwiz-{self.session_id}-{self._step}-{self._fix_counter}"
                status = await fixes.take_export(
                    self.fabric.api(change.switch), change.switch, name
                )
                if not status.verified:
                    return self._refuse(plan, record, f"no verified export: {status.error}")
                exports.append(status)
                self._export_taken(change.switch, status, "pre-fix")
            record.export = exports[0].file
        ok = await self.operator.confirm_fix(plan, exports[0] if exports else None)
        self.emit(
            OperatorAnswered(
                step=self._step, question=f"apply fix {fix_id}", answer="yes" if ok else "no"
            )
        )
        if not ok:
            self._fire("declined")
            self.result.fixes.append(record)
            self._declined.setdefault(self._step, []).append((verdict, plan))
            return False
        baseline = await self._links(plan) if plan.bounces_links else {}
        self._fire("apply")
        armed: list[tuple[Any, str]] = []  # (change, rollback name)
        backed_up: list[Any] = []  # host changes whose backups exist (safe to revert)
        try:
            for change in plan.switch_changes:
                api = self.fabric.api(change.switch)
                name = f"fabwiz-rb-{self.session_id}-{self._fix_counter}"
                script, fire_at = await fixes.arm_switch_rollback_at(
                    api, change, name, self.rollback_window_s
                )
                self._fire_at[name] = fire_at
                armed.append((change, name))
                self._armed(fix_id, change.switch, name, script)
                await fixes.apply_switch_change(api, change)
            for hchange in plan.host_changes:
                unit = f"fabwiz-revert-{self.session_id}-{self._fix_counter}"
                script = await fixes.backup_and_write(
                    _Runner(self.fabric), hchange, unit, self.rollback_window_s, backed_up
                )
                armed.append((hchange, unit))
                self._armed(fix_id, hchange.node, unit, script)
        except Exception as exc:  # a lost session or a failed step mid-change
            found = await self._found_after_loss(exports)  # reliability: state on reconnect
            found += await self._revert_hosts_now(backed_up)
            changed = getattr(exc, "changed", True) or any(hasattr(c, "switch") for c, _ in armed)
            # the change may have landed only once a rollback was armed (a host's revert is
            # armed before its first write): otherwise nothing was applied
            landed = changed and bool(armed or getattr(exc, "changed", False))
            record.applied = landed
            record.rolled_back = landed
            self.result.fixes.append(record)
            if landed:
                reason = (
                    f"the change failed ({exc}); the dead-man rollback armed before it restores "
                    f"the previous state within {self.rollback_window_s:.0f} s{found}"
                )
                hint = "re-run the step once the target answers again"
                self.emit(
                    FixRolledBack(step=self._step, fix_id=fix_id, fault=plan.fault, reason=reason)
                )
            else:
                reason = f"nothing was changed: {exc}{found}"
                hint = getattr(exc, "hint", None) or "fix the cause and re-run the step"
                self.emit(
                    FixRefusedEvent(
                        step=self._step, fault=plan.fault, target=plan.target, reason=reason
                    )
                )
            self._fire("rolled_back" if self.lifecycle.can("rolled_back") else "declined")
            await self.operator.error(
                "Fix stopped", f"{plan.fault} on {plan.target}: {reason}", hint
            )
            return False
        record.applied = True
        stamped = await changes.stamp(self.guard.changed_at, plan, self.fabric.api, self.fabric.run)
        self.emit(
            FixApplied(
                step=self._step,
                fix_id=fix_id,
                fault=plan.fault,
                target=plan.target,
                export=record.export,
                rollback_armed=armed[0][1] if armed else None,
                changed_at=stamped,
            )
        )
        if plan.bounces_links:
            for node in self._nodes_of(plan):
                self.guard.record_transition(node, self.clock(), f"fix {plan.fault} bounced links")
                self.emit(LinkTransitionSeen(node=node, cause=f"fix {plan.fault} bounced links"))
            await self._settle(plan, baseline)
        self._fire("verify")
        ok, detail = await self._verify(plan)
        self.emit(
            FixVerified(step=self._step, fix_id=fix_id, fault=plan.fault, ok=ok, detail=detail)
        )
        if ok:
            record.verified = True
            kept = await self._disarm_verified(fix_id, plan, armed, exports, record)
            if kept:
                self._verified_fixes.add(fix_id)
            self._fire("verified")
        else:
            restored = await self._roll_back(plan, armed, exports)
            stamped = await changes.stamp(
                self.guard.changed_at, plan, self.fabric.api, self.fabric.run
            )
            record.rolled_back = True
            self.emit(
                FixRolledBack(
                    step=self._step,
                    fix_id=fix_id,
                    fault=plan.fault,
                    reason=f"verification failed: {detail}",
                    restored=restored,
                    changed_at=stamped,
                )
            )
            self._fire("rolled_back")
        self.result.fixes.append(record)
        return ok

    async def _disarm_verified(
        self,
        fix_id: str,
        plan: FixPlan,
        armed: list[tuple[Any, str]],
        exports: list[ExportStatus],
        record: FixRecord,
    ) -> bool:
        """Disarm every rollback of a verified fix, retried and checked on the target; True
        when the fix is known to stay. Anything else is said and recorded, never silent."""
        kept = True
        for change, name in armed:
            switch = hasattr(change, "switch")
            target = change.switch if switch else change.node
            if switch:
                settled = await deadman.disarm_switch(
                    self.fabric.api(target),
                    name,
                    budget_s=self.disarm_budget_s,
                    fire_at=self._fire_at.get(name),
                    sleep=self.sleep,
                    notify=lambda text: self.note(text, "warn"),
                )
            else:
                settled = await deadman.disarm_host(
                    _Runner(self.fabric),
                    change,
                    name,
                    budget_s=self.disarm_budget_s,
                    sleep=self.sleep,
                    notify=lambda text: self.note(text, "warn"),
                )
            if settled.state == "disarmed":
                self.emit(
                    RollbackDisarmed(step=self._step, fix_id=fix_id, target=target, name=name)
                )
                continue
            kept = False
            if settled.state == "rolled-back":
                restored = (
                    await self._compare_with_export(target, name, exports) if switch else True
                )
                record.rolled_back = True
                record.state = "undone-by-rollback"
                reason = f"verified, then {settled.detail}"
                self.emit(
                    FixRolledBack(
                        step=self._step,
                        fix_id=fix_id,
                        fault=plan.fault,
                        reason=reason,
                        restored=restored,
                    )
                )
                await self.operator.error(
                    "Fix undone by the dead-man rollback",
                    f"{plan.fault} on {target}: {reason}",
                    "re-run the step: the fault is probed again and the fix offered anew",
                )
            else:
                record.state = "rollback-armed"
                self.note(f"{plan.fault} on {target}: {settled.detail}", "error")
                how = (
                    f"/system scheduler remove [find name={name}]"
                    if switch
                    else f"sudo systemctl stop {name}.timer"
                )
                await self.operator.error(
                    "Rollback still armed",
                    f"{plan.fault} on {target}: {settled.detail}",
                    f"to keep the fix, run `{how}` on {target} before it fires, or "
                    "`fabwiz resume` this session when the target answers",
                )
        if kept:
            record.state = "verified"
        return kept

    async def _compare_with_export(
        self, switch: str, name: str, exports: Sequence[ExportStatus]
    ) -> bool:
        """Whether the switch now equals its pre-fix export (said, and returned)."""
        before = next((e for e in exports if e.switch == switch), None)
        try:
            after = await fixes.take_export(self.fabric.api(switch), switch, f"{name}-after")
        except Exception as exc:  # unreachable again: say so
            self.note(f"{switch}: could not export after rollback {name}: {exc}", "error")
            return False
        same = bool(
            before is not None
            and after.verified
            and fixes.same_config(before.contents, after.contents)
        )
        self.note(
            f"{switch}: configuration {'equals' if same else 'DIFFERS from'} the pre-fix export "
            f"{before.file if before else '?'} after rollback {name}",
            "info" if same else "error",
        )
        return same

    async def _links(self, plan: FixPlan) -> dict[str, bool]:
        """Link state of what `plan` may bounce: "switch/port" -> link-ok from
        `/interface/ethernet/monitor once`, "node/netdev" -> carrier at line rate."""
        out: dict[str, bool] = {}
        for sw in sorted({c.switch for c in plan.switch_changes}):
            try:
                api = self.fabric.api(sw)
                eth = await api.call("/interface/ethernet", "print")
                ports = [
                    r["name"] for r in eth if r.get("name") and not r["name"].startswith("ether")
                ]
                rows = await api.call(
                    "/interface/ethernet", "monitor", numbers=",".join(ports), once=""
                )
            except Exception as exc:  # a switch that does not answer is not settled
                self.note(f"{sw}: link state unreadable while settling: {exc}", "warn")
                continue
            for port, (up, cabled) in settle.switch_links(rows).items():
                out[f"{sw}/{port}"] = up
                if cabled:
                    out.setdefault(f"{sw}/{port}#cabled", True)
        for node in self._nodes_of(plan):
            res = await self.fabric.run(node, _CARRIER_PROBE.command, timeout=5.0)
            if res.ok:
                for netdev, up in settle.host_links(res.stdout).items():
                    out[f"{node}/{netdev}"] = up
        return out

    async def _settle(self, plan: FixPlan, before: dict[str, bool]) -> bool:
        """After a change that bounces links: poll until every link up before the change (and
        every cabled port the change touched) is up, or the settle timeout; then verify."""
        must = [
            f"{sw}/{port}"
            for sw, ports in settle.touched_ports(plan.switch_changes).items()
            for port in ports
            if before.get(f"{sw}/{port}#cabled")
        ]
        timeout = float(getattr(self.thresholds, "link_settle_timeout_s", self.settle_timeout_s))
        start = self.clock()
        deadline = start + timeout
        shown: tuple[list[str], float] | None = None
        while True:
            now = await self._links(plan)
            waiting = settle.pending({k: v for k, v in before.items() if "#" not in k}, now, must)
            left = deadline - self.clock()
            if not waiting:
                self.note(f"links settled {self.clock() - start:.0f} s after the change")
                return True
            if left <= 0:
                self.note(
                    f"links not settled {timeout:.0f} s after the change: "
                    + ", ".join(waiting[:6])
                    + ("..." if len(waiting) > 6 else "")
                    + "; verifying as they are",
                    "warn",
                )
                return False
            # the countdown: when the set of links waited for changes, and every 5 s
            if shown is None or shown[0] != waiting or shown[1] - left >= 5.0:
                shown = (waiting, left)
                self.note(
                    f"settling: {left:.0f} s left, waiting for "
                    + ", ".join(waiting[:4])
                    + (f" and {len(waiting) - 4} more" if len(waiting) > 4 else "")
                )
            await self.sleep(self.poll_interval_s)

    async def _found_after_loss(self, exports: Sequence[ExportStatus]) -> str:
        """A switch fix stopped mid-way (the API session broke): reconnect, let the rollback
        armed under this fix's name run now if it is on the switch, and say what state the switch
        is in compared with the pre-fix export."""
        name = f"fabwiz-rb-{self.session_id}-{self._fix_counter}"
        found: list[str] = []
        for before in exports:
            api = self.fabric.api(before.switch)
            try:
                ran = await self._run_rollback_now(before.switch, name)
                after = await fixes.take_export(api, before.switch, f"{name}-after-loss")
                same = after.verified and fixes.same_config(before.contents, after.contents)
                found.append(
                    f"on reconnect, rollback {name} {ran} and {before.switch}'s configuration "
                    f"{'equals' if same else 'DIFFERS from'} the pre-fix export {before.file}"
                )
            except Exception as exc:  # still away: the armed entry runs on the switch itself
                found.append(
                    f"{before.switch} did not answer after the loss ({exc}); its armed rollback "
                    f"{name}, if it reached the switch, runs there within "
                    f"{self.rollback_window_s:.0f} s: compare with {before.file} when it is back"
                )
        for line in found:
            self.note(line, "warn")
        return "".join(f"; {line}" for line in found)

    def _armed(self, fix_id: str, target: str, name: str, script: str) -> None:
        self.emit(
            RollbackArmed(
                step=self._step,
                fix_id=fix_id,
                target=target,
                name=name,
                window_s=self.rollback_window_s,
                script=script,
                wall_window_s=self.rollback_window_s / (self.target_clock_rate or 1.0),
            )
        )

    async def _revert_hosts_now(self, backed_up: Sequence[Any]) -> str:
        """A host fix stopped mid-way: restore every node whose backup exists now, when it
        answers, instead of leaving it to the timed revert (which stays armed otherwise)."""
        unit = f"fabwiz-revert-{self.session_id}-{self._fix_counter}"
        found: list[str] = []
        for change in backed_up:
            try:
                await fixes.revert_host(_Runner(self.fabric), change, unit)
                found.append(f"{change.node} restored from its backup now")
            except Exception as exc:  # still away: the timed revert on the node does it
                found.append(
                    f"{change.node} did not answer ({exc}); its timed revert restores the backup "
                    f"within {self.rollback_window_s:.0f} s"
                )
        for line in found:
            self.note(line, "warn")
        return "".join(f"; {line}" for line in found)

    def _refuse(self, plan: FixPlan, record: FixRecord, why: str) -> bool:
        record.refused = why
        self.result.fixes.append(record)
        self.emit(
            FixRefusedEvent(step=self._step, fault=plan.fault, target=plan.target, reason=why)
        )
        self._fire("declined")
        return False

    def _nodes_of(self, plan: FixPlan) -> tuple[str, ...]:
        nodes = {h.node for h in plan.host_changes}
        if plan.physical is not None:
            nodes.update(plan.physical.nodes)
        if plan.switch_changes and not nodes:
            nodes.update(self.fabric.nodes)
        return tuple(sorted(nodes))

    async def _bridge_of(self, switch: str) -> tuple[dict[str, str], str]:
        """Each bridge port's bridge on `switch`, or why it could not be read."""
        try:
            rows = await self.fabric.api(switch).call("/interface/bridge/port", "print")
        except Exception as exc:  # the management guard refuses the change on this
            return {}, f"{type(exc).__name__}: {exc}".rstrip(": ")
        return {r["interface"]: r.get("bridge", "") for r in rows if "interface" in r}, ""

    async def _verify(self, plan: FixPlan) -> tuple[bool, str]:
        faults = plan.verify_checks or (plan.fault,)
        checks = self._checks_for(faults, traffic=False)
        if not checks:
            return True, "no read-only check to re-run"
        obs = await self._sweep(checks)
        verdicts = self._judge(checks, obs, faults)
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

    async def _roll_back(
        self, plan: FixPlan, armed: list[tuple[Any, str]], exports: list[ExportStatus]
    ) -> bool:
        restored = True
        for change, name in armed:
            if hasattr(change, "switch"):
                api = self.fabric.api(change.switch)
                await fixes.roll_back_switch(api, change, name)
                before = next((e for e in exports if e.switch == change.switch), None)
                after = await fixes.take_export(api, change.switch, f"{name}-after-rollback")
                same = (
                    before is not None
                    and after.verified
                    and fixes.same_config(before.contents, after.contents)
                )
                restored = restored and same
                self.note(
                    f"{change.switch}: configuration {'equals' if same else 'DIFFERS from'} the "
                    f"pre-fix export {before.file if before else '?'} after the rollback",
                    "info" if same else "error",
                )
            else:
                await fixes.revert_host(_Runner(self.fabric), change, name)
        return restored

    async def _physical_fix(self, plan: FixPlan, record: FixRecord, fix_id: str) -> bool:
        assert plan.physical is not None
        done = await self._physical(plan.physical)
        record.applied = done
        if not done:
            self.result.fixes.append(record)
            return False
        self.emit(FixApplied(step=self._step, fix_id=fix_id, fault=plan.fault, target=plan.target))
        self._fire("verify")
        ok, detail = await self._verify(plan)
        for _again in range(MANUAL_RECHECKS if plan.physical.kind == "manual" else 0):
            if ok:
                break
            # "I changed it, re-check": the step's probes run again after each answer
            self.note(f"re-check: {detail}; change it, then answer again", "warn")
            if not await self._physical(plan.physical):
                break
            self._fire("verify")  # the answer given: verifying again
            ok, detail = await self._verify(plan)
        self.emit(
            FixVerified(step=self._step, fix_id=fix_id, fault=plan.fault, ok=ok, detail=detail)
        )
        record.verified = ok
        if ok:
            self._verified_fixes.add(fix_id)
        self._fire("verified")
        self.result.fixes.append(record)
        return ok

    async def _settle_pending_rollbacks(self) -> None:
        """On resume, before anything is probed, make every armed rollback settle:

        - a fix verified before the interruption but not yet disarmed would be undone by its
          dead-man rollback: disarm it;
        - a fix not verified is rolled back now (the switch's scheduler entry is made due at
          once and awaited; a host's revert script runs), so the state is known again before the
          step is re-probed and the fix, if still needed, offered anew.
        """
        assert self._resume is not None
        for fix_id, target, name, verified in self._resume.pending_rollbacks:
            try:
                if verified:
                    settled = await self._disarm(target, name)
                    if settled.state == "disarmed":
                        self.emit(
                            RollbackDisarmed(
                                step=self._step, fix_id=fix_id, target=target, name=name
                            )
                        )
                        self.note(
                            f"{fix_id}: verified before the interruption; rollback {name} on "
                            f"{target} disarmed"
                        )
                    elif settled.state == "rolled-back":
                        self._undone_steps.add(fix_id.split(":")[0])
                        self._verified_fixes.discard(fix_id)
                        for rec in self.result.fixes:
                            if rec.fix_id == fix_id:
                                rec.rolled_back, rec.state = True, "undone-by-rollback"
                        self.emit(
                            FixRolledBack(
                                step=self._step,
                                fix_id=fix_id,
                                fault=fix_id.split(":")[1] if ":" in fix_id else fix_id,
                                reason=f"verified before the interruption, then {settled.detail}",
                            )
                        )
                        self.note(f"{fix_id}: {settled.detail}; it is offered again", "warn")
                    else:
                        self.note(f"{fix_id}: {settled.detail}", "error")
                    continue
                ran = await self._run_rollback_now(target, name)
                restored = False
                if target in self.fabric.switches:
                    restored = await self._compare_with_export(target, name, self._resume_exports())
                    ran += (
                        "; the switch equals its pre-fix export"
                        if restored
                        else "; the switch DIFFERS from its pre-fix export (or none was kept)"
                    )
                self.emit(
                    FixRolledBack(
                        step=self._step,
                        fix_id=fix_id,
                        fault=fix_id.split(":")[1] if ":" in fix_id else fix_id,
                        reason=f"interrupted before verification: rollback {name} on {target} {ran}",
                        restored=restored,
                    )
                )
                self.note(
                    f"{fix_id}: interrupted before verification; rollback {name} {ran}", "warn"
                )
            except Exception as exc:  # the target may still be away: say so, go on
                self.note(f"could not settle rollback {name} on {target}: {exc}", "error")
        await self._settle_orphans()

    def _resume_exports(self) -> list[ExportStatus]:
        saved = self._resume.exports if self._resume else {}
        return [ExportStatus(sw, "the pre-fix export", True, contents=t) for sw, t in saved.items()]

    async def _settle_orphans(self) -> None:
        """Rollback entries of this session on a switch that the log does not hold as armed
        (the session died between the scheduler `add` and its record): each would fire later
        and undo whatever is then on the switch. Run each now, then compare the switch with
        its pre-fix export."""
        assert self._resume is not None
        prefix = f"fabwiz-rb-{self.session_id}-"
        settled = {name for _f, _t, name, _v in self._resume.pending_rollbacks}
        for switch in self.fabric.switches:
            try:
                rows = await self.fabric.api(switch).call("/system/scheduler", "print")
            except Exception as exc:  # away: its entries fire on their own; say so
                self.note(
                    f"{switch}: could not look for this session's rollback entries ({exc}); "
                    "any left there fire when due",
                    "error",
                )
                continue
            for row in rows:
                name = row.get("name", "")
                if not name.startswith(prefix) or name in settled:
                    continue
                if name in self._resume.disarmed:  # its fix was verified: it must never run
                    try:
                        gone = await self._disarm(switch, name)
                    except Exception as exc:  # went away meanwhile: said, it fires when due
                        self.note(f"{switch}: could not remove {name}: {exc}", "error")
                        continue
                    self.note(
                        f"{switch}: rollback entry {name} was disarmed before the session "
                        f"stopped, yet is still on the switch: {gone.detail or gone.state}; the "
                        "verified fix stays",
                        "warn" if gone.state == "disarmed" else "error",
                    )
                    continue
                try:
                    ran = await self._run_rollback_now(switch, name)
                    same = await self._compare_with_export(switch, name, self._resume_exports())
                except Exception as exc:  # went away meanwhile
                    self.note(
                        f"{switch}: could not settle orphaned rollback {name}: {exc}", "error"
                    )
                    continue
                self.note(
                    f"{switch}: orphaned rollback entry {name} (armed, then the session stopped "
                    f"before recording it) {ran}; the switch "
                    f"{'equals' if same else 'DIFFERS from'} its pre-fix export",
                    "warn" if same else "error",
                )

    async def _restore_cabling(self) -> None:
        """The session stopped during the direct-connect test: put the cables back first, with
        the moves recorded when the cables were taken off the switch."""
        assert self._resume is not None
        moves = self._resume.direct_undo
        if not moves:
            await self.operator.error(
                "Cabling to restore",
                "the session stopped during the direct-connect test: two nodes may still be "
                "cabled port to port",
                "put their port 0 cables back on the switch ports they came from, then go on",
            )
            return
        nodes = tuple(dict.fromkeys(m[0] for m in moves))
        where = "; ".join(f"{n} {p} -> {d}" for n, p, d in moves)
        self.note("the session stopped mid direct-connect test: restoring the switch cabling")
        await self._physical(
            PhysicalAction(
                kind="recable",
                nodes=nodes,
                cables=moves,
                instructions=(
                    "The session stopped during the direct-connect test. Put the cabling back "
                    f"as it was: {where}. The wizard waits for carrier at 200000Mb/s."
                ),
            )
        )

    async def _disarm(self, target: str, name: str) -> deadman.Settled:
        def warn(text: str) -> None:
            self.note(text, "warn")

        if target in self.fabric.switches:
            return await deadman.disarm_switch(
                self.fabric.api(target),
                name,
                budget_s=self.disarm_budget_s,
                sleep=self.sleep,
                notify=warn,
            )
        return await deadman.disarm_host(
            _Runner(self.fabric),
            HostChange(node=target, files=()),
            name,
            budget_s=self.disarm_budget_s,
            sleep=self.sleep,
            notify=warn,
        )

    async def _run_rollback_now(self, target: str, name: str) -> str:
        if target not in self.fabric.switches:
            script = self._resume.rollback_scripts.get(name, "") if self._resume else ""
            if script:
                await self.fabric.run(target, f"sudo -n sh -c {shlex.quote(script)}")
            await fixes.disarm_host_revert(_Runner(self.fabric), target, name)
            return "ran (host files restored)"
        api = self.fabric.api(target)
        rows = [r for r in await api.call("/system/scheduler", "print") if r.get("name") == name]
        if not rows:
            return "had already run"
        # A one-shot entry whose start is past never runs: make it due in two seconds.
        now, old_dates = await fixes.switch_clock(api)
        when = now + dt.timedelta(seconds=2)
        await api.call(
            "/system/scheduler",
            "set",
            **{
                ".id": rows[0][".id"],
                "start-date": fixes.scheduler_date(when, old_dates),
                "start-time": when.strftime("%H:%M:%S"),
            },
        )
        deadline = self.clock() + 30.0
        while self.clock() < deadline:
            left = [
                r for r in await api.call("/system/scheduler", "print") if r.get("name") == name
            ]
            if not left or left[0].get("run-count", "0") not in ("0", ""):
                if left:
                    await fixes.disarm_switch_rollback(api, name)
                return "ran now"
            await self.sleep(self.poll_interval_s)
        return "did not run within 30 s"

    # -- the steps -----------------------------------------------------------------------------

    async def _fix_findings(
        self,
        spec: StepLike,
        checks: Sequence[CheckLike],
        verdicts: list[Verdict],
        obs: Observations,
    ) -> list[Verdict]:
        self._fire("judged")
        for verdict, plan in self._plans(obs, [v for v in verdicts if v.fault in spec.faults]):
            if spec.id in self._skips:
                break  # the operator skipped the rest of this step
            await self._offer_and_apply(verdict, plan)
        return verdicts

    async def _step_preflight(self, spec: StepLike) -> bool:
        obs = await self._sweep(self.checks)
        all_config = [c for c in self.checks if not c.needs_traffic]
        verdicts = self._judge(all_config, obs, None) + _unreachable_verdicts(self.fabric, obs)
        self._record_verdicts(verdicts)
        if len(obs.unreachable) >= len(self.fabric.nodes) + len(self.fabric.switches):
            raise FabwizError(
                "no node and no switch answered",
                hint="check the inventory's addresses, credentials and host keys (fabwiz check -i ...)",
            )
        findings = [v for v in verdicts if v.is_finding]
        self.result.healthy_before = not findings and not obs.unreachable
        for target, error in obs.unreachable.items():
            await self.operator.error(
                f"{target} is unreachable", error, "the walk goes on without it"
            )
        await self._fix_findings(spec, all_config, verdicts, obs)
        return False

    async def _step_direct_connect(self, spec: StepLike) -> bool:
        """Through the switch; drain what measured low and measure again; bisect what stays
        low with a direct cable (wizard/bisect.py holds the reasoning)."""
        target = self.thresholds.rail_fix_target_gbps
        if self.fabric.direct_connect_action() is None:
            # Already direct-cabled (a two-node lab): the measurement is the direct one.
            ms, verdicts = await self._measure_and_judge("direct", spec.faults)
            await self._host_branch(spec, verdicts, tuple(m for m in ms if m.valid))
            return False
        # across switches each pair has its own path (which ISL, which direction): every pair
        # from the start; on one switch the disjoint pairs cover every port
        every = len(self.fabric.switches) > 1 and len(self.fabric.nodes) > 2
        before, _ = await self._measure_and_judge("matrix" if every else "rails", spec.faults)
        bad = bisect.low(before, target)
        pending = self.guard.undrained(self.fabric.nodes)
        if not bad and not pending and bisect.good(before, target):
            self._fire("judged")
            self._concluded(
                "line-rate",
                "every rail is at line rate through the switch: no need to bisect",
                (),
                min(m.value for m in before if m.valid),
                None,
            )
            return True
        if bad:
            self.result.healthy_before = False  # low through the switch before any change
        explained = bisect.explaining(
            self._open_preflight_findings(),
            bad,
            self.fabric.switches,
            set(getattr(spec, "explained_by", ())),
        )
        if explained and not pending and await self._skip_explained(spec, explained, bad):
            return True
        if not every:
            before, bad = await self._matrix_if_low(spec, before, bad)
        # Drain first: a degraded CX7 clears only with an AC drain, and numbers from nodes with
        # a link transition since their last drain are no evidence anyway.
        to_drain = dict(pending)
        for node, why in bisect.drain_nodes(before, bad, target).items():
            to_drain.setdefault(node, why)
        if not to_drain and bad:
            # the low pairs share no node, each end at line rate with other partners: the
            # switch path, nothing to drain; the direct cable says so
            await self._bisect(spec, before, bad, ())
            self._fire("judged")
            return False
        if not to_drain:
            self._fire("judged")
            return False
        if not await self._drain(to_drain):
            self.note("the drain was not done: the bisection cannot judge these numbers", "warn")
            self._fire("judged")
            return False
        after, _ = await self._measure_and_judge("matrix" if every else "rails", spec.faults)
        if not every:
            after, _still = await self._matrix_if_low(spec, after, bisect.low(after, target))
        cleared = bisect.cleared_by_drain(before, after, to_drain, target)
        if cleared:
            self._cleared_by_drain(spec, cleared)
        still = bisect.low(after, target)
        if not still:
            self._fire("judged")
            if not cleared:
                self.note("after the drain every rail is at line rate through the switch")
            return False
        await self._bisect(spec, after, still, tuple(to_drain))
        self._fire("judged")
        return False

    async def _matrix_if_low(
        self, spec: StepLike, ms: list[Measurement], bad: list[Measurement]
    ) -> tuple[list[Measurement], list[Measurement]]:
        """The disjoint pairs measured a low rail: one pair cannot say which end is slow, every
        pair can (the node common to the low pairs, wizard/pairs.py). Measures every pair, in
        rounds of disjoint pairs at once, only then: a healthy fabric costs one round per
        plane. Returns (the measurements, the low ones)."""
        if not bad or len(self.fabric.nodes) <= 2:
            return ms, bad
        every, _ = await self._measure_and_judge("matrix", spec.faults)
        return every, bisect.low(every, self.thresholds.rail_fix_target_gbps)

    async def _skip_explained(
        self, spec: StepLike, found: Sequence[Verdict], bad: Sequence[Measurement]
    ) -> bool:
        """Preflight's findings explain the low numbers: say so, offer to skip the physical test.
        True when skipped (recorded with the reason); a host finding of this step is then fixed
        here, without the cabling."""
        sentence = bisect.skipped_sentence(found, bad)
        self.note(sentence, "warn")
        answer = await self.operator.choose(
            spec.id,
            f"{sentence}. Skip the physical test?",
            ["skip the physical test", "do the physical test"],
        )
        self.emit(OperatorAnswered(step=spec.id, question="skip the physical test", answer=answer))
        if not answer.startswith("skip"):
            return False
        ids = [s.id for s in self.flow]
        later = {f for s in self.flow[ids.index(spec.id) + 1 :] for f in s.faults}
        # fixed here: this step's host findings no later step owns (a throttled CX7)
        own = [v for v in found if v.fault in spec.faults and v.fault not in later]
        deferred = tuple(sorted({v.fault for v in found} - {v.fault for v in own}))
        self._concluded(
            "skipped", sentence, tuple(bisect.low_nodes(bad)), bad[0].value, None, deferred
        )
        if own:
            obs = self._last_obs or Observations()
            await self._fix_findings(spec, self._checks_for(spec.faults), own, obs)
        self._phase_reason = f"skipped: {sentence}"
        self._fire("skip")
        self._deferred = deferred
        return True

    def _open_preflight_findings(self) -> list[Verdict]:
        """Preflight's findings still open: the latest verdict of each fault id, over the steps
        in the order they ran, is still a failure or a warning."""
        latest: dict[str, Verdict] = {}
        from_traffic = {c.id for c in self.checks if c.needs_traffic}
        for verdicts in self.result.steps.values():
            for v in verdicts:
                if v.check not in from_traffic:  # config verdicts, with node targets
                    latest[v.fault] = v
        found = {v.fault for v in self.result.steps.get("preflight", ())}
        return [v for f, v in latest.items() if f in found and v.is_finding]

    def _maybe_revisit(self, measured: Sequence[Measurement]) -> None:
        """The direct-connect test was skipped because open findings explained the low numbers:
        once those are fixed, rails still low send the walk back to it."""
        if not self._deferred:
            return
        still_open = {v.fault for v in self._open_preflight_findings()}
        if still_open & set(self._deferred):
            return
        low = bisect.low(measured, self.thresholds.rail_fix_target_gbps)
        self._deferred = ()
        if low:
            worst = low[0]
            self.note(
                "the findings that explained the low numbers are fixed, yet "
                f"{worst.target} measures {worst.value:.2f} Gb/s: back to the direct-connect test",
                "warn",
            )
            self._revisit = next((s.id for s in self.flow if s.kind == "direct_connect"), None)

    def _cleared_by_drain(self, spec: StepLike, cleared: Sequence[bisect.Cleared]) -> None:
        """Low before the drain, at line rate after: host.cx7-degraded found and fixed."""
        nodes = tuple(sorted({n for c in cleared for n in c.nodes}))
        sentence = bisect.drained_sentence(cleared)
        evidence = tuple(
            Evidence(
                target=c.target,
                command="ib_write_bw through the switch, before and after the AC drain",
                observed=f"{c.before:.2f} Gb/s before, {c.after:.2f} Gb/s after",
                expected=f">= {self.thresholds.rail_fix_target_gbps:g} Gb/s",
                status=Status.FAIL,
            )
            for c in cleared
        )
        found = Verdict(
            fault="host.cx7-degraded",
            status=Status.FAIL,
            summary=sentence,
            targets=nodes,
            evidence=evidence,
            check="bisection",
        )
        self._record_verdicts([found])
        fix_id = f"{self._step}:host.cx7-degraded:{','.join(nodes)}"
        target = ",".join(nodes)
        self.emit(
            FixApplied(step=self._step, fix_id=fix_id, fault="host.cx7-degraded", target=target)
        )
        self.emit(
            FixVerified(
                step=self._step, fix_id=fix_id, fault="host.cx7-degraded", ok=True, detail=sentence
            )
        )
        self._record_verdicts(
            [replace(found, status=Status.PASS, summary=f"cleared by AC drain: {sentence}")]
        )
        self.result.fixes.append(
            FixRecord(
                fix_id=fix_id, fault="host.cx7-degraded", target=target, applied=True, verified=True
            )
        )
        self._verified_fixes.add(fix_id)
        self.result.healthy_before = False
        self._concluded(
            "cleared-by-drain",
            sentence,
            nodes,
            min(c.before for c in cleared),
            None,
        )

    async def _bisect(
        self,
        spec: StepLike,
        measured: Sequence[Measurement],
        still: Sequence[Measurement],
        drained_nodes: Sequence[str] = (),
    ) -> None:
        """Cable a node of the worst rail to a partner that measured well; good numbers clear
        it (then the other end of the worst rail is tried), bad ones open the host branch."""
        target = self.thresholds.rail_fix_target_gbps
        worst = still[0]
        port = bisect.port_of(worst)
        host_findings = [
            v for v in self.result.steps.get("preflight", ()) if v.fault.startswith("host.")
        ]
        clear: list[tuple[str, Measurement]] = []
        drained = set(drained_nodes)
        for suspect in bisect.suspects(still, host_findings):
            mate = bisect.partner(suspect, measured, target, self.fabric.nodes)
            if mate is None:
                break
            other, measured_well = mate
            if not measured_well:
                self.note(
                    f"no node measured well to pair {suspect} with: {other} is used, so a low "
                    "direct number may be either end",
                    "warn",
                )
            actions = self.fabric.direct_connect_action((suspect, other), port)
            if actions is None:
                self.note(
                    f"the cabling of {suspect} and {other} port {port} is not known: the direct "
                    "test cannot be described",
                    "error",
                )
                return
            to_direct, back = actions
            if not await self._physical(to_direct, undo=back):
                return
            pending = self.guard.undrained(to_direct.nodes)
            if pending:
                await self._drain(pending)
            ms, verdicts = await self._measure_and_judge("direct", spec.faults)
            direct = ms[0] if ms else None
            if direct is None:
                await self._physical(back)
                return
            ok, sentence = bisect.direct_sentence(suspect, other, port, direct, worst, target)
            if not ok and direct.valid and suspect in drained:
                sentence += (
                    f"; {suspect} was AC-drained and still measures low: not the state a drain "
                    "clears (a throttled or stale CX7: firmware and OS update)"
                )
            self.note(sentence, "info" if ok else "warn")
            if not direct.valid:
                await self._physical(back)
                return
            if not ok:
                self._concluded("host", sentence, (suspect,), worst.value, direct.value)
                await self._host_branch(spec, verdicts, tuple(m for m in ms if m.valid))
                self._fire("judged")
                await self._physical(back)
                return
            clear.append((suspect, direct))
            await self._physical(back)
            if not measured_well:
                break
        if clear:
            sentence = bisect.switch_path_sentence(clear, worst)
            self.note(sentence)
            self._concluded(
                "switch-path",
                sentence,
                tuple(n for n, _m in clear),
                worst.value,
                min(m.value for _n, m in clear),
            )

    def _concluded(
        self,
        conclusion: str,
        sentence: str,
        nodes: tuple[str, ...],
        switched: float | None,
        direct: float | None,
        faults: tuple[str, ...] = (),
    ) -> None:
        self.emit(
            BisectionConcluded(
                step=self._step,
                conclusion=conclusion,
                sentence=sentence,
                nodes=nodes,
                switched_gbps=switched,
                direct_gbps=direct,
                faults=faults,
            )
        )

    async def _host_branch(
        self, spec: StepLike, verdicts: list[Verdict], measured: tuple[Measurement, ...]
    ) -> None:
        """Bad numbers on a direct cable: judge and fix the host side (CX7 state, PCIe, MTU, PFC)."""
        checks = self._checks_for(spec.faults)
        obs = await self._sweep(checks)
        config = self._judge([c for c in checks if not c.needs_traffic], obs, spec.faults)
        self._record_verdicts(config)
        obs = replace(obs, measurements=measured)
        await self._fix_findings(spec, checks, [*verdicts, *config], obs)

    async def _step_drain(self, spec: StepLike) -> bool:
        await self._sweep([])
        pending = self.guard.undrained(self.fabric.nodes)
        if not pending:
            self.note("no link transition since the last drain on any node")
            self._fire("judged")
            return False
        await self._drain(pending)
        left = self.guard.undrained(self.fabric.nodes)
        self._fire("judged")
        self._record_verdicts(
            [
                Verdict(
                    fault=UNDRAINED,
                    status=Status.FAIL if left else Status.PASS,
                    summary=(
                        self.guard.reason(left)
                        if left
                        else "every node with a link transition has been AC-drained"
                    ),
                    targets=tuple(sorted(left)),
                    check="drain-guard",
                )
            ]
        )
        return False

    async def _step_config(self, spec: StepLike) -> bool:
        persisted_with = tuple(getattr(spec, "persisted_with", ()))
        checks = self._checks_for((*spec.faults, *persisted_with), traffic=False)
        obs = await self._sweep(checks)
        verdicts = self._judge(checks, obs, (*spec.faults, *persisted_with))
        self._record_verdicts(verdicts)
        self._fire("judged")  # the verdicts are in: fixes may be offered
        await self._persistence_first(spec, verdicts, obs, persisted_with)
        await self._fix_findings(spec, checks, verdicts, obs)
        if spec.traffic:
            pending = self.guard.undrained(self.fabric.nodes)
            if pending:
                await self._drain(pending)
            ms, _ = await self._measure_and_judge("rails", spec.faults)
            self._maybe_revisit(ms)
            if getattr(spec, "fabric_tests", False):
                # the jumbo ping matrix and, across switches, the shared-ISL test
                await self._measure_and_judge("fabric", spec.faults)
        return False

    async def _persistence_first(
        self,
        spec: StepLike,
        verdicts: Sequence[Verdict],
        obs: Observations,
        persisted_with: Sequence[str],
    ) -> None:
        """A persistence finding that would undo this step's fix at the next boot (a
        NetworkManager profile taking the rail the addressing fix writes) is said and fixed
        first, with this step (wizard/undoes.py)."""
        own = [v for v in verdicts if v.fault in spec.faults]
        persist = [v for v in verdicts if v.fault in persisted_with]
        for verdict, undone in undoes.undoing(own, persist, self.fabric.nodes):
            self.note(undoes.sentence(verdict, undone, spec.title, self.fabric.nodes), "warn")
            for v, plan in self._plans(obs, [verdict]):
                if spec.id in self._skips:
                    return
                await self._offer_and_apply(v, plan)

    async def _step_halves(self, spec: StepLike) -> bool:
        checks = self._checks_for(spec.faults, traffic=False)
        obs = await self._sweep(checks)
        verdicts = self._judge(checks, obs, spec.faults)
        self._record_verdicts(verdicts)
        await self._fix_findings(spec, checks, verdicts, obs)
        pending = self.guard.undrained(self.fabric.nodes)
        if pending:
            await self._drain(pending)
        await self._measure_and_judge("rails", spec.faults)
        await self._measure_and_judge("halves", spec.faults)
        # the switch side is read with the NCCL run, so what explains a low busbw is current
        # (offload, QoS, RSTP) and a low busbw is reported under it
        await self._sweep(self._checks_for(spec.faults, traffic=True))
        await self._measure_and_judge("nccl", spec.faults, explained=True)
        return False

    def _with_session(self, ctx: Any) -> Any:
        """The judges' context with what this session fixed (node -> fault ids of verified
        fixes): the persistence checks ask for the files those fixes need at boot."""
        fixed: dict[str, tuple[str, ...]] = {}
        for f in self.result.fixes:
            if f.verified:
                for n in f.target.replace(",", " ").split():
                    fixed[n] = (*fixed.get(n, ()), f.fault)
        if not fixed or not hasattr(ctx, "fixed"):
            return ctx
        return replace(ctx, fixed=fixed)

    async def _golden_exports(self) -> list[Verdict]:
        """A golden export of every switch, then `/file print` to see it is there with the size
        read back (wizard/golden.py); a missing or short one is taken again once."""
        out: list[Verdict] = []
        for switch in self.fabric.switches:
            name = f"fabwiz-{self.session_id}-golden"
            verdict: Verdict | None = None
            for _attempt in range(2):
                status = await fixes.take_export(self.fabric.api(switch), switch, name)
                if not status.verified:
                    self.note(f"{switch}: golden export failed: {status.error}", "error")
                    verdict = golden.judge(switch, status.file, 0, None, status.error or "")
                    break
                self._export_taken(switch, status, "golden")
                size = len(status.contents.encode("utf-8"))
                try:
                    rows: list[dict[str, str]] | None = list(
                        await self.fabric.api(switch).call("/file", "print")
                    )
                    error = ""
                except Exception as exc:  # transport errors arrive as many types: data here
                    rows, error = None, str(exc)
                verdict = golden.judge(switch, status.file, size, rows, error)
                if verdict.status != Status.FAIL:
                    break
            if verdict is not None:
                out.append(verdict)
                if verdict.status == Status.PASS:
                    self._golden_files[switch] = f"{name}.rsc"
        return out

    def _export_taken(self, switch: str, status: fixes.ExportStatus, purpose: str) -> None:
        """Record an export read back from `switch` (before a fix, golden, or the running
        configuration it is compared with)."""
        self.emit(
            ExportTaken(
                step=self._step,
                switch=switch,
                file=status.file,
                contents=status.contents,
                sha256=status.sha256,
                purpose=purpose,
            )
        )

    async def _golden_still_current(self) -> list[Verdict]:
        """At the end of step 8: each golden export, read back from the switch, against the
        running configuration exported now (wizard/golden.py). A switch changed since the
        golden export was taken fails with the menus that differ."""
        out: list[Verdict] = []
        for switch, file in self._golden_files.items():
            name = f"fabwiz-{self.session_id}-golden-check"
            verdict, now = await golden.check_current(self.fabric.api(switch), switch, file, name)
            if now is not None:
                self._export_taken(switch, now, "running")
            out.append(verdict)
        return out

    async def _step_persist(self, spec: StepLike) -> bool:
        golden_verdicts = golden.merge(await self._golden_exports())
        config = [c for c in self.checks if not c.needs_traffic]
        obs = await self._sweep(config)
        verdicts = self._judge(config, obs, None)
        self._record_verdicts(verdicts + golden_verdicts)
        own = [v for v in verdicts if v.fault in spec.faults and v.is_finding]
        if own:
            await self._fix_findings(spec, config, verdicts, obs)
            obs = await self._sweep(config)
            verdicts = self._judge(config, obs, None)
            self._record_verdicts(verdicts)
        else:
            self._fire("judged")
        verdicts = verdicts + golden_verdicts
        t = self.thresholds
        rails_ok = bool(self.result.rails_gbps) and all(
            v >= t.rail_fix_target_gbps for v in self.result.rails_gbps.values()
        )
        halves_ok = all(v >= t.node_both_halves_min_gbps for v in self.result.halves_gbps.values())
        gate = t.nccl_gate(len(self.fabric.nodes), len(self.fabric.switches))
        nccl_ok = self.result.nccl_busbw is None or self.result.nccl_busbw >= gate
        findings = [v for v in verdicts if v.is_finding]
        # the job's own NCCL environment is measured with the halves (no config sweep sees it)
        findings += [
            v
            for vs in self.result.steps.values()
            for v in vs
            if v.check == JOB_ENV and v.is_finding
        ]
        if not findings and not obs.unreachable and rails_ok:
            regressed = await self._prove_after_reboot(spec, config)
            if regressed:
                findings = regressed
        current = golden.merge([*golden_verdicts, *await self._golden_still_current()])
        self._record_verdicts(current)
        findings = [v for v in findings if v.fault != golden.FAULT]
        findings += [v for v in current if v.is_finding]
        self.result.healthy_after = (
            not findings
            and rails_ok
            and halves_ok
            and nccl_ok
            and not obs.unreachable
            and not self.result.unjudged
        )
        if findings:
            self.note("still open: " + ", ".join(sorted({v.fault for v in findings})), "warn")
        return False

    async def _prove_after_reboot(
        self, spec: StepLike, config: Sequence[CheckLike]
    ) -> list[Verdict]:
        """Reboot one node and run the sweep again: every fix must come back by itself (seed
        000: "zero manual steps"). Offered first in a lab (its hands reboot), as an option on a
        real rack. Returns the findings the reboot brought back."""
        node = self._proof_node()
        if node is None:
            return []
        question = f"Reboot {node} and re-run the sweep, to prove every fix survives a reboot?"
        options = ["reboot and re-run the sweep", "skip the proof"]
        if self.fabric.hands is None:
            options.reverse()  # on a real rack the technician chooses it deliberately
        answer = await self.operator.choose(spec.id, question, options)
        self.emit(OperatorAnswered(step=spec.id, question="reboot proof", answer=answer))
        if not answer.startswith("reboot"):
            self.note(f"persistence not proven by a reboot: {answer}", "warn")
            return []
        action = PhysicalAction(
            kind="reboot",
            nodes=(node,),
            instructions=(
                f"Reboot {node} (sudo reboot, or its power button): a plain reboot, no AC drain. "
                "The wizard waits for it to come back with a new boot_id, then runs every check "
                "and the rail tests again: nothing may need a manual step."
            ),
        )
        if not await self._physical(action):
            self.note(f"persistence not proven: the reboot of {node} was not done", "warn")
            return []
        obs = await self._sweep(config)
        verdicts = self._judge(config, obs, None)
        self._record_verdicts(verdicts)
        back = [v for v in verdicts if v.is_finding]
        traffic = tuple(f for c in self.checks if c.needs_traffic for f in c.faults)
        ms, measured = await self._measure_and_judge("rails", traffic)
        back += [v for v in measured if v.is_finding and v.fault not in {b.fault for b in back}]
        low = bisect.low(ms, self.thresholds.rail_fix_target_gbps)
        mine = [m for m in ms if node in bisect.nodes_of(m) and m.valid]
        if back or low or obs.unreachable or not mine:
            what = sorted({v.fault for v in back}) + [f"{m.target} {m.value:.2f} Gb/s" for m in low]
            sentence = f"after a reboot of {node} the fabric did not come back by itself: " + (
                ", ".join(what) or "no rail of it measured"
            )
            self._concluded("not-persisted", sentence, (node,), None, None)
            self.note(sentence, "error")
            return back or [
                Verdict(
                    fault="host.rail-down",  # its rails did not come back to be measured
                    status=Status.FAIL,
                    summary=sentence,
                    targets=(node,),
                    check="persist-proof",
                )
            ]
        worst = min(m.value for m in mine)
        sentence = (
            f"{node} rebooted and came back by itself: every check passes and its rails "
            f"measure >= {worst:.2f} Gb/s with zero manual steps"
        )
        self._concluded("persisted", sentence, (node,), worst, None)
        self.note(sentence)
        return []

    def _proof_node(self) -> str | None:
        """The node to reboot: one a host fix of this session touched, else the first node."""
        for f in self.result.fixes:
            if f.verified:
                for n in f.target.replace(",", " ").split():
                    if n in self.fabric.nodes:
                        return n
        return self.fabric.nodes[0] if self.fabric.nodes else None


def _for_targets(verdict: Verdict, targets: Sequence[str]) -> Verdict:
    """The verdict as one plan of it sees it: only its targets and their evidence (a verdict
    whose targets need different changes, the host's files and a container's environment)."""
    if not targets:
        return verdict
    keep = set(targets)
    return replace(
        verdict,
        targets=tuple(t for t in verdict.targets if t in keep),
        evidence=tuple(e for e in verdict.evidence if e.target in keep),
    )


def _unreachable_verdicts(fabric: Fabric, obs: Observations) -> list[Verdict]:
    """One `preflight.unreachable` finding per target the sweep could not reach or log into."""
    return [
        Verdict(
            fault=UNREACHABLE,
            status=Status.UNKNOWN,
            summary=(
                f"the {'node' if target in fabric.nodes else 'switch'} {target} could not be "
                f"checked: {error}"
            ),
            targets=(target,),
            evidence=(Evidence(target, "connect", error, "reachable", Status.UNKNOWN),),
            check="sweep",
        )
        for target, error in sorted(obs.unreachable.items())
    ]


class _Runner:
    """Adapts the fabric's `run` to the `fixes.HostRunner` port."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric

    async def run(
        self, node: str, command: str, *, stdin: str | None = None, timeout: float = 30.0
    ) -> ProbeResult:
        return await self.fabric.run(node, command, stdin=stdin, timeout=timeout)
