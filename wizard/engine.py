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
import re
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from wizard import fixes
from wizard.drain import FAULT_ID as UNDRAINED
from wizard.drain import DrainGuard
from wizard.errors import FabwizError
from wizard.events import (
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
    Measurement,
    PhysicalAction,
    ProbeResult,
    Status,
    Verdict,
)
from wizard.probes import HostProbe, Observations, Probe

UNREACHABLE = "preflight.unreachable"

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


MeasureKind = Literal["rails", "halves", "direct", "nccl"]


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
    def direct_connect_action(self) -> tuple[PhysicalAction, PhysicalAction] | None: ...


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


# --- the engine ------------------------------------------------------------------------------

_LINK_DOWN = re.compile(r"^/sys/class/net/([^/]+)/carrier_down_count:(\d+)\s*$", re.M)
_CARRIER = re.compile(r"^/sys/class/net/([^/]+)/(carrier|speed):(-?\d+)\s*$", re.M)
_CARRIER_PROBE = HostProbe(
    name="fabwiz.carrier",
    command=(
        "grep -H . /sys/class/net/*/carrier /sys/class/net/*/speed "
        "/sys/class/net/*/carrier_down_count 2>/dev/null; cat /proc/sys/kernel/random/boot_id"
    ),
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
    ) -> None:
        self.fabric = fabric
        self.operator = operator
        self._emit = emit
        self.flow = list(flow)
        self.checks = list(checks)
        self.make_context = make_context
        self.thresholds = thresholds
        self.session_id = session_id
        self.rollback_window_s = rollback_window_s
        self.clock = clock
        self.sleep = sleep
        self.poll_interval_s = poll_interval_s
        self.physical_timeout_s = physical_timeout_s
        self.guard = resume.guard if resume and resume.guard else DrainGuard()
        self.result = RunResult()
        self._resume = resume
        self._verified_fixes: set[str] = set(resume.verified_fixes) if resume else set()
        self._fix_counter = 0
        self._step = self.flow[0].id if self.flow else ""
        self._phase_reason = ""  # why the next phase change happens, when not the trigger
        self.lifecycle = StepLifecycle(self._phase_changed)
        self._last_obs: Observations | None = None
        self._skips: set[str] = set()  # steps the operator asked to skip
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
        if self.lifecycle.can(trigger):
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
        if spec.id in self._skips:
            self._skips.discard(spec.id)
            self.emit(OperatorAnswered(step=spec.id, question="skip step", answer="skip"))
            self._phase_reason = "skipped by the operator"
            self._fire("skip")
        elif skipped:
            self._fire("skip")
        else:
            if self.lifecycle.state is not Phase.VERDICT:
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
        probes: dict[str, Probe] = {_CARRIER_PROBE.name: _CARRIER_PROBE}
        for c in checks:
            for p in c.probes:
                probes.setdefault(p.name, p)
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
            downs = sum(int(m.group(2)) for m in _LINK_DOWN.finditer(res.stdout))
            boot_id = res.stdout.strip().splitlines()[-1].strip()
            cause = self.guard.observe_counters(node, downs, now, boot_id)
            if cause:
                self.emit(LinkTransitionSeen(node=node, cause=cause, at=now))

    def _judge(
        self, checks: Sequence[CheckLike], obs: Observations, faults: Sequence[str] | None
    ) -> list[Verdict]:
        ctx = self.make_context(obs, self.guard)
        verdicts: list[Verdict] = []
        for c in checks:
            try:
                found = c.run(obs, ctx)
            except Exception as exc:  # a check bug must not stop the walk: it is an unknown
                found = [
                    Verdict(
                        fault=f,
                        status=Status.UNKNOWN,
                        summary=f"the check {c.id} failed: {exc!r}",
                        check=c.id,
                    )
                    for f in c.faults
                ]
            verdicts.extend(v for v in found if faults is None or v.fault in faults)
        return verdicts

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
                if kind in ("rails", "direct"):
                    self.result.rails_gbps[m.target] = m.value
                elif kind == "halves":
                    self.result.halves_gbps[m.target] = m.value
                elif kind == "nccl":
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
        self, kind: MeasureKind, faults: Sequence[str]
    ) -> tuple[list[Measurement], list[Verdict]]:
        ms = await self._measure(kind)
        valid = tuple(m for m in ms if m.valid)
        if not valid:
            return ms, []
        base = self._last_obs or Observations()
        obs = replace(base, measurements=valid)
        checks = self._checks_for(faults, traffic=True)
        verdicts = self._judge(checks, obs, faults)
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
        deadline = self.clock() + self.physical_timeout_s
        waiting = set(action.nodes)
        seen: list[str] = []
        while waiting and self.clock() < deadline and not self._cancel_wait:
            now = await self._boot_ids(sorted(waiting))
            for node, boot in now.items():
                if action.kind in ("ac_drain", "reboot", "firmware_update", "power_cycle"):
                    if boot and boot != before.get(node):
                        waiting.discard(node)
                        seen.append(f"{node} back with a new boot_id")
                        if action.kind == "ac_drain":
                            self.guard.record_drain(node, self.clock(), boot)
                            self.emit(NodeDrained(node=node, boot_id=boot, at=self.clock()))
                        else:
                            self.guard.link_down_counts.pop(node, None)
                    elif not boot:
                        self.note(f"waiting for {node} to come back")
                elif await self._carrier_up(node):  # recable / reseat: carrier up at 200G
                    waiting.discard(node)
                    seen.append(f"{node} carrier up at 200000Mb/s")
                    self.guard.record_transition(node, self.clock(), f"{action.kind} (prompted)")
                    self.emit(
                        LinkTransitionSeen(
                            node=node, cause=f"{action.kind} (prompted)", at=self.clock()
                        )
                    )
            if waiting and not self._cancel_wait:
                await self.sleep(self.poll_interval_s)
        if waiting:
            return False, f"still waiting for {', '.join(sorted(waiting))}"
        return True, "; ".join(seen)

    async def _carrier_up(self, node: str) -> bool:
        res = await self.fabric.run(node, _CARRIER_PROBE.command, timeout=5.0)
        if not res.ok:
            return False
        values: dict[tuple[str, str], int] = {}
        for m in _CARRIER.finditer(res.stdout):
            values[(m.group(1), m.group(2))] = int(m.group(3))
        fabric = [
            n
            for (n, k) in values
            if k == "carrier" and not n.startswith(("lo", "eth", "wl", "docker"))
        ]
        up = [
            n
            for n in fabric
            if values.get((n, "carrier")) == 1 and values.get((n, "speed"), 0) >= 200000
        ]
        return bool(up)

    # -- fixes ---------------------------------------------------------------------------------

    def _fix_id(self, verdict: Verdict) -> str:
        return f"{self._step}:{verdict.fault}:{','.join(verdict.targets) or 'cluster'}"

    def _plans(
        self, obs: Observations, verdicts: Sequence[Verdict]
    ) -> list[tuple[Verdict, FixPlan]]:
        ctx = self.make_context(obs, self.guard)
        out: list[tuple[Verdict, FixPlan]] = []
        for v in verdicts:
            if v.status not in (Status.FAIL, Status.WARN):
                continue
            for c in self.checks:
                if v.fault in c.faults and c.fix is not None:
                    try:
                        plan = c.fix(c.parse(obs, ctx), v, ctx)
                    except Exception as exc:  # a plan bug is shown, never a crash
                        self.note(f"no fix plan for {v.fault}: {exc!r}", "error")
                        plan = None
                    if plan is not None:
                        out.append((v, plan))
                    break
        return out

    async def _offer_and_apply(self, verdict: Verdict, plan: FixPlan) -> bool:
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
        # Safety first: the management-path guard, before any export or change.
        for change in plan.switch_changes:
            bridge_of = await self._bridge_of(change.switch)
            why = fixes.management_conflict(
                change, self.fabric.management_ports(change.switch), bridge_of
            )
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
                self.emit(
                    ExportTaken(
                        step=self._step,
                        switch=change.switch,
                        file=status.file,
                        contents=status.contents,
                        sha256=status.sha256,
                    )
                )
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
        self._fire("apply")
        armed: list[tuple[Any, str]] = []  # (change, rollback name)
        backed_up: list[Any] = []  # host changes whose backups exist (safe to revert)
        try:
            for change in plan.switch_changes:
                api = self.fabric.api(change.switch)
                name = f"fabwiz-rb-{self.session_id}-{self._fix_counter}"
                script = await fixes.arm_switch_rollback(api, change, name, self.rollback_window_s)
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
        self.emit(
            FixApplied(
                step=self._step,
                fix_id=fix_id,
                fault=plan.fault,
                target=plan.target,
                export=record.export,
                rollback_armed=armed[0][1] if armed else None,
            )
        )
        if plan.bounces_links:
            for node in self._nodes_of(plan):
                self.guard.record_transition(node, self.clock(), f"fix {plan.fault} bounced links")
                self.emit(LinkTransitionSeen(node=node, cause=f"fix {plan.fault} bounced links"))
        self._fire("verify")
        ok, detail = await self._verify(plan)
        self.emit(
            FixVerified(step=self._step, fix_id=fix_id, fault=plan.fault, ok=ok, detail=detail)
        )
        if ok:
            for change, name in armed:
                if hasattr(change, "switch"):
                    await fixes.disarm_switch_rollback(self.fabric.api(change.switch), name)
                    target = change.switch
                else:
                    await fixes.disarm_host_revert(_Runner(self.fabric), change.node, name)
                    target = change.node
                self.emit(
                    RollbackDisarmed(step=self._step, fix_id=fix_id, target=target, name=name)
                )
            record.verified = True
            self._verified_fixes.add(fix_id)
            self._fire("verified")
        else:
            restored = await self._roll_back(plan, armed, exports)
            record.rolled_back = True
            self.emit(
                FixRolledBack(
                    step=self._step,
                    fix_id=fix_id,
                    fault=plan.fault,
                    reason=f"verification failed: {detail}",
                    restored=restored,
                )
            )
            self._fire("rolled_back")
        self.result.fixes.append(record)
        return ok

    async def _found_after_loss(self, exports: Sequence[ExportStatus]) -> str:
        """A switch fix stopped mid-way (the API session broke): reconnect, let the rollback
        armed under this fix's name run now if it is on the switch, and say what state the switch
        is in compared with the pre-fix export (issue 8)."""
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

    async def _bridge_of(self, switch: str) -> dict[str, str]:
        try:
            rows = await self.fabric.api(switch).call("/interface/bridge/port", "print")
        except Exception:  # the guard then only knows the ports themselves
            return {}
        return {r["interface"]: r.get("bridge", "") for r in rows if "interface" in r}

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
            if v.fault == plan.fault and v.status in (Status.FAIL, Status.WARN, Status.UNKNOWN)
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
                    await self._disarm(target, name)
                    self.emit(
                        RollbackDisarmed(step=self._step, fix_id=fix_id, target=target, name=name)
                    )
                    self.note(
                        f"{fix_id}: verified before the interruption; rollback {name} on "
                        f"{target} disarmed"
                    )
                    continue
                ran = await self._run_rollback_now(target, name)
                self.emit(
                    FixRolledBack(
                        step=self._step,
                        fix_id=fix_id,
                        fault=fix_id.split(":")[1] if ":" in fix_id else fix_id,
                        reason=f"interrupted before verification: rollback {name} on {target} {ran}",
                    )
                )
                self.note(
                    f"{fix_id}: interrupted before verification; rollback {name} {ran}", "warn"
                )
            except Exception as exc:  # the target may still be away: say so, go on
                self.note(f"could not settle rollback {name} on {target}: {exc}", "error")

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

    async def _disarm(self, target: str, name: str) -> None:
        if target in self.fabric.switches:
            await fixes.disarm_switch_rollback(self.fabric.api(target), name)
        else:
            await fixes.disarm_host_revert(_Runner(self.fabric), target, name)

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
        when = await fixes.switch_now(api) + dt.timedelta(seconds=2)
        await api.call(
            "/system/scheduler",
            "set",
            **{
                ".id": rows[0][".id"],
                "start-date": when.strftime("%Y-%m-%d"),
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
        pending = self.guard.undrained(self.fabric.nodes)
        if not pending:
            ms, _ = await self._measure_and_judge("rails", spec.faults)
            valid = [m for m in ms if m.valid]
            if valid and all(m.value >= self.thresholds.rail_fix_target_gbps for m in valid):
                self._fire("judged")
                self.note("every rail is at line rate through the switch: no need to bisect")
                return True
        actions = self.fabric.direct_connect_action()
        if actions is None:
            # Already direct-cabled (a two-node lab): the measurement above is the direct one.
            ms, verdicts = await self._measure_and_judge("direct", spec.faults)
            await self._host_branch(spec, verdicts, tuple(m for m in ms if m.valid))
            return False
        to_direct, back = actions
        if not await self._physical(to_direct, undo=back):
            return True
        pending = self.guard.undrained(to_direct.nodes)
        if pending:
            await self._drain(pending)
        ms, verdicts = await self._measure_and_judge("direct", spec.faults)
        valid = [m for m in ms if m.valid]
        if valid and all(m.value >= self.thresholds.rail_fix_target_gbps for m in valid):
            self.note(
                "direct cable at line rate: NICs and host stack are clear, the fault is on the switch path"
            )
        else:
            await self._host_branch(spec, verdicts, tuple(valid))
        self._fire("judged")
        await self._physical(back)
        return False

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
        checks = self._checks_for(spec.faults, traffic=False)
        obs = await self._sweep(checks)
        verdicts = self._judge(checks, obs, spec.faults)
        self._record_verdicts(verdicts)
        await self._fix_findings(spec, checks, verdicts, obs)
        if spec.traffic:
            pending = self.guard.undrained(self.fabric.nodes)
            if pending:
                await self._drain(pending)
            await self._measure_and_judge("rails", spec.faults)
        return False

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
        await self._measure_and_judge("nccl", spec.faults)
        return False

    async def _step_persist(self, spec: StepLike) -> bool:
        for switch in self.fabric.switches:
            name = f"fabwiz-{self.session_id}-golden"
            status = await fixes.take_export(self.fabric.api(switch), switch, name)
            if status.verified:
                self.emit(
                    ExportTaken(
                        step=self._step,
                        switch=switch,
                        file=status.file,
                        contents=status.contents,
                        sha256=status.sha256,
                        purpose="golden",
                    )
                )
            else:
                self.note(f"{switch}: golden export failed: {status.error}", "error")
        config = [c for c in self.checks if not c.needs_traffic]
        obs = await self._sweep(config)
        verdicts = self._judge(config, obs, None)
        self._record_verdicts(verdicts)
        self._fire("judged")
        t = self.thresholds
        rails_ok = bool(self.result.rails_gbps) and all(
            v >= t.rail_fix_target_gbps for v in self.result.rails_gbps.values()
        )
        halves_ok = all(v >= t.node_both_halves_min_gbps for v in self.result.halves_gbps.values())
        gate = t.nccl_gate(len(self.fabric.nodes), len(self.fabric.switches))
        nccl_ok = self.result.nccl_busbw is None or self.result.nccl_busbw >= gate
        findings = [v for v in verdicts if v.is_finding]
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
