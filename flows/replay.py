"""Replay: re-run a session's verdicts offline from its recorded probe outputs.

A support engineer gets a session log attached to a ticket; replay runs today's checks on the raw
outputs the session recorded and shows where the verdicts differ from the ones recorded at the
rack (a parser fixed since, a threshold changed, a check that judged wrong). It is also how
fixtures are harvested: a recorded answer whose replay agrees is a ready test case.

Events are walked in order. At each recorded `VerdictReached`, the check that judged it (by its
`check` id, else by fault id) is run on what the engine judged it with: the answers of the last
sweep (a step's `probing`, a fix's `verifying`: an answer read before, say before a drain, is
not judged again), the valid results of the measurement since (a `measuring` phase begins one,
a sweep ends it, so a verdict after a fix is never judged with the numbers from before it), the
rails as discovered from every answer so far, and the link transitions, drains, changes and
fixes seen so far. Nothing is sent anywhere: replay is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from flows.base import Check, Context, Observations
from flows.expectations import DEFAULT, Expectations
from wizard.changes import fixed_by_node
from wizard.errors import FabwizError
from wizard.events import MeasurementTaken, ProbeAnswered, StepChanged, VerdictReached
from wizard.model import Measurement, ProbeResult, Rail, Status, Verdict
from wizard.pipeline import is_check_failure, run_check
from wizard.session import LoadedSession, SessionState


class ReplayUnavailable(FabwizError):
    """The checks cannot be loaded in this build (no `flows.registry` yet)."""


@dataclass(frozen=True, slots=True)
class ReplayRow:
    """One recorded verdict next to its replay (or a replayed finding nobody recorded)."""

    step: str
    fault: str
    check: str
    recorded: Status | None
    replayed: Status | None
    recorded_targets: tuple[str, ...] = ()
    replayed_targets: tuple[str, ...] = ()
    recorded_summary: str = ""
    replayed_summary: str = ""
    at: float = 0.0
    note: str = ""  # why there is no replayed verdict, or the error a check raised
    # False: a verdict the engine judges itself (not a check) from what no probe answer holds;
    # replay does not judge it again, and it is no difference
    compared: bool = True

    @property
    def agree(self) -> bool:
        if not self.compared:
            return True
        return (
            self.recorded is not None
            and self.recorded == self.replayed
            and sorted(self.recorded_targets) == sorted(self.replayed_targets)
        )

    @property
    def difference(self) -> str:
        """What differs, in words ("" when they agree)."""
        if self.agree:
            return ""
        if self.recorded is None:
            return "replay finds what the session did not record"
        if self.replayed is None:
            return self.note or "not judged on replay"
        if self.recorded != self.replayed:
            return f"status {self.recorded} -> {self.replayed}"
        return "targets differ"

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "fault": self.fault,
            "check": self.check,
            "recorded": None if self.recorded is None else str(self.recorded),
            "replayed": None if self.replayed is None else str(self.replayed),
            "recorded_targets": list(self.recorded_targets),
            "replayed_targets": list(self.replayed_targets),
            "recorded_summary": self.recorded_summary,
            "replayed_summary": self.replayed_summary,
            "agree": self.agree,
            "compared": self.compared,
            "difference": self.difference,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class ReplayResult:
    rows: tuple[ReplayRow, ...]
    checks_run: int = 0  # check executions (one per check per snapshot of observations)
    warnings: tuple[str, ...] = ()

    @property
    def agree(self) -> bool:
        return all(r.agree for r in self.rows)

    @property
    def differences(self) -> tuple[ReplayRow, ...]:
        return tuple(r for r in self.rows if not r.agree)

    def to_json(self) -> dict[str, Any]:
        return {
            "agree": self.agree,
            "verdicts": len([r for r in self.rows if r.recorded is not None]),
            "differences": len(self.differences),
            "checks_run": self.checks_run,
            "rows": [r.to_json() for r in self.rows],
            "warnings": list(self.warnings),
        }


# --- the checks and the context ----------------------------------------------------------------

# Verdicts the engine judges itself, by their `check`, and what they rest on: none of it is a
# recorded probe answer a check could read again, so replay shows them and does not judge them.
ENGINE_JUDGED = {
    "persist.golden-export": "the switch's /file listing read after the golden export",
    "bisection": "the drain and direct-connect bisection's before and after",
    "persist-proof": "the reboot proof's rails that did not come back",
    "sweep": "the sweep's connection attempts",
    "drain-guard:refused": "the results it refused as not evidence (undrained nodes)",
}


def _judged_at(step: str, fault: str) -> bool:
    """Whether the wizard judges `fault` at `step` (preflight and persist judge everything)."""
    from flows.bisection import FLOW

    spec = next((s for s in FLOW if s.id == step), None)
    if spec is None or spec.kind in ("preflight", "persist"):
        return True
    return fault in spec.faults


def registered_checks() -> tuple[Check, ...]:
    """Every check of `flows.registry`, in bisection order (loaded when a replay needs them)."""
    from flows.registry import CHECKS

    return CHECKS


def _rail_from_json(node: str, data: Mapping[str, Any]) -> Rail | None:
    try:
        return Rail(
            node=str(data.get("node", node)),
            netdev=str(data["netdev"]),
            rdma=str(data.get("rdma", "")),
            port=int(data.get("port", 0)),
            half="B" if data.get("half") == "B" else "A",
            pci=str(data.get("pci", "")),
            mac=str(data.get("mac", "")),
            addresses=tuple(data.get("addresses") or ()),
            ipv6=tuple(data.get("ipv6") or ()),
            mtu=int(data.get("mtu", 0)),
            up=bool(data.get("up", False)),
            speed_mbps=data.get("speed_mbps"),
            switch=data.get("switch"),
            switch_port=data.get("switch_port"),
        )
    except (KeyError, TypeError, ValueError):
        return None


def rails_from_observations(
    obs: Observations, cabling: Mapping[str, tuple[str, str]] | None = None
) -> dict[str, tuple[Rail, ...]]:
    """Rails rediscovered from recorded outputs exactly as the live sweep discovers them
    (`wizard.discovery`): per node from `ibdev2netdev` (+ `ip -j`, `ethtool -i`, `ethtool`),
    cabled from the given map or the switches' recorded host tables."""
    from wizard import discovery

    found: dict[str, tuple[Rail, ...]] = discovery.rails_from_observations(obs, cabling)
    return found


def _context_at(
    obs: Observations, base: Context, state: SessionState, recorded_cabling: bool
) -> Context:
    """The judging context at one verdict: the one the engine builds from a sweep
    (`flows.registry.make_context`) on the rails discovered from every answer so far (`obs`),
    with the drain guard's history as known at that moment."""
    from flows.registry import make_context

    ctx = make_context(
        obs,
        nodes=base.nodes,
        switches=base.switches,
        expectations=base.expectations,
        cabling=dict(base.cabling) if recorded_cabling else None,
        management=base.management,
        addressing=base.addressing,
        known_good_firmware=base.known_good_firmware,
    )
    fixed = fixed_by_node((f.target, f.fault) for f in state.fixes.values() if f.verified_ok)
    return replace(
        ctx,
        rails={**base.rails, **ctx.rails},
        transitions=state.all_transitions,
        drained_at=state.drained_at,
        # what the session changed and when (older log lines are history) and what it fixed
        # (the persistence checks ask for those files), as the engine's context has them
        changed_at=dict(state.changed_at),
        fixed=fixed,
        nccl_devices=base.nccl_devices,
        jobs=base.jobs,
        job_processes=base.job_processes,
    )


def context_from_session(
    loaded: LoadedSession, *, expectations: Expectations | None = None
) -> Context:
    """The judging context as recorded at session start.

    The engine may record it in `SessionStarted.options["context"]` (rails per node as dicts of
    `wizard.model.Rail` fields, cabling, management, addressing, expectations overrides,
    known_good_firmware). `replay_session` rediscovers the rails at each verdict from the
    recorded discovery outputs, as the engine does from each sweep; recorded rails only fill in
    nodes whose discovery output was not recorded.
    """
    started = loaded.started
    opts: Mapping[str, Any] = started.options
    recorded = opts.get("context")
    ctx_opts: Mapping[str, Any] = recorded if isinstance(recorded, Mapping) else opts
    exp = expectations or DEFAULT
    overrides = ctx_opts.get("expectations")
    if isinstance(overrides, Mapping) and expectations is None:
        try:
            exp = DEFAULT.with_overrides(overrides)
        except (KeyError, TypeError, ValueError):
            exp = DEFAULT

    rails: dict[str, tuple[Rail, ...]] = {}
    raw_rails = ctx_opts.get("rails")
    if isinstance(raw_rails, Mapping):
        for node, items in raw_rails.items():
            parsed = [_rail_from_json(str(node), r) for r in items or () if isinstance(r, Mapping)]
            rails[str(node)] = tuple(r for r in parsed if r is not None)

    def pairs(value: Any) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        if isinstance(value, Mapping):
            for k, v in value.items():
                if isinstance(v, str) and "/" in v:
                    sw, port = v.split("/", 1)
                    out[str(k)] = (sw, port)
                elif isinstance(v, list | tuple) and len(v) == 2:
                    out[str(k)] = (str(v[0]), str(v[1]))
        return out

    management_raw = ctx_opts.get("management")
    management = (
        {str(k): tuple(v) for k, v in management_raw.items()}
        if isinstance(management_raw, Mapping)
        else {}
    )
    addressing = ctx_opts.get("addressing")
    firmware = ctx_opts.get("known_good_firmware")
    return Context(
        expectations=exp,
        rails=rails,
        nodes=tuple(started.nodes) or tuple(sorted(rails)),
        switches=tuple(started.switches),
        cabling=pairs(ctx_opts.get("cabling")),
        management=management,
        addressing=dict(addressing) if isinstance(addressing, Mapping) else {},
        known_good_firmware=firmware if isinstance(firmware, str) else exp.known_good_firmware,
        nccl_devices=devices if isinstance(devices := ctx_opts.get("nccl_devices"), str) else None,
        jobs=_names(ctx_opts.get("jobs")),
        job_processes=_names(ctx_opts.get("job_processes")),
    )


def _names(value: Any) -> dict[str, str]:
    """A recorded `node -> name` map (anything else in its place: none)."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


# --- observations ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Recorded:
    """Probe answers and measurements as known at a point of the walk."""

    latest: dict[tuple[str, str, str], ProbeResult] = field(default_factory=dict)
    # the answers of the last sweep: what the engine judges with (a sweep reads its step's
    # probes; an answer read steps ago, before a drain or a change, is not judged again)
    current: dict[tuple[str, str, str], ProbeResult] = field(default_factory=dict)
    measurements: dict[str, list[Measurement]] = field(default_factory=dict)
    version: int = 0

    def take(self, ev: object) -> bool:
        """Fold in a probe answer, a measurement or a phase (True: it was one of them)."""
        if isinstance(ev, ProbeAnswered):
            self.add(ev.probe, ev.result)
        elif isinstance(ev, MeasurementTaken):
            self.measured(ev.step, ev.measurement)
        elif isinstance(ev, StepChanged):
            self.phase(ev.step, ev.phase)
        else:
            return False
        return True

    def phase(self, step: str, phase: str) -> None:
        """A step's phase: a sweep begins (its answers replace the last sweep's, and it judges
        without numbers), or a measurement begins a new batch."""
        if phase in _SWEEP_PHASES:
            self.current = {}
            self.version += 1
        if phase in _BATCH_PHASES and self.measurements.get(step):
            self.measurements[step] = []
            self.version += 1

    def measured(self, step: str, m: Measurement) -> None:
        self.measurements.setdefault(step, []).append(m)
        self.version += 1

    def add(self, probe: str, result: ProbeResult) -> None:
        key = (result.kind, result.target, probe)
        self.current[key] = result
        self.latest[key] = result
        self.version += 1

    def observations(self, step: str) -> Observations:
        """The last sweep's answers with the valid results of the step's batch (the checks
        judge no other)."""
        batch = [m for m in self.measurements.get(step, ()) if m.valid]
        return observations_from(self.current.items(), batch)

    def discovered(self) -> Observations:
        """Every answer last read: the rails as the sweeper knows them (it keeps what it found)."""
        return observations_from(self.latest.items())


# a sweep of the engine (`_sweep`): the step's `probing`, or a fix's `verifying`
_SWEEP_PHASES = frozenset({"probing", "verifying"})
# the phases after which the engine judges with other measurements than the step's last ones:
# a new measurement, or a sweep (its observations carry none)
_BATCH_PHASES = frozenset({"measuring", *_SWEEP_PHASES})


def observations_from(
    answers: Iterable[tuple[tuple[str, str, str], ProbeResult]],
    measurements: Iterable[Measurement] = (),
) -> Observations:
    """Observations from recorded answers keyed (kind, target, probe). A target whose every
    answer is a transport error with no output counts as unreachable, as the sweep reports it."""
    nodes: dict[str, dict[str, ProbeResult]] = {}
    switches: dict[str, dict[str, ProbeResult]] = {}
    for (kind, target, probe), result in answers:
        (switches if kind == "api" else nodes).setdefault(target, {})[probe] = result
    unreachable: dict[str, str] = {}
    for group in (nodes, switches):
        for target, probes in group.items():
            results = list(probes.values())
            if results and all(
                r.error and not r.stdout and not r.rows and r.exit_status is None for r in results
            ):
                unreachable[target] = results[0].error or "unreachable"
    return Observations(
        nodes=nodes,
        switches=switches,
        unreachable=unreachable,
        measurements=tuple(measurements),
    )


def observations_by_step(loaded: LoadedSession) -> dict[str, Observations]:
    """The last recorded answer of every (target, probe) per step, as `Observations`."""
    answers: dict[str, dict[tuple[str, str, str], ProbeResult]] = {}
    measurements: dict[str, list[Measurement]] = {}
    for ev in loaded.events:
        if isinstance(ev, ProbeAnswered):
            answers.setdefault(ev.step, {})[(ev.result.kind, ev.result.target, ev.probe)] = (
                ev.result
            )
        elif isinstance(ev, MeasurementTaken):
            measurements.setdefault(ev.step, []).append(ev.measurement)
    steps = list(dict.fromkeys([*answers, *measurements]))
    return {
        s: observations_from(answers.get(s, {}).items(), measurements.get(s, ())) for s in steps
    }


# --- replay ------------------------------------------------------------------------------------


def replay_session(
    loaded: LoadedSession,
    *,
    checks: Sequence[Check] | None = None,
    context: Context | None = None,
) -> ReplayResult:
    """Re-judge every recorded verdict from the recorded outputs; rows say where they differ."""
    by_id, by_fault = _lookups(tuple(checks) if checks is not None else registered_checks())
    base = context or context_from_session(loaded)
    recorded_cabling = bool(base.cabling)

    rec = _Recorded()
    state = SessionState()
    cache: dict[tuple[Any, ...], tuple[list[Verdict], str]] = {}
    recorded_in_group: dict[tuple[Any, ...], set[str]] = {}
    group_step: dict[tuple[Any, ...], tuple[str, str, float]] = {}
    rows: list[ReplayRow] = []
    warnings: list[str] = []
    context_version = 0  # the drain guard's history and the session's changes, as of now

    for ev in loaded.events:
        state.apply(ev)
        if ev.type in _CONTEXT_EVENTS:
            context_version += 1
        if rec.take(ev) or not isinstance(ev, VerdictReached):
            continue
        v = ev.verdict
        check = by_id.get(v.check)
        if check is None and v.check not in ENGINE_JUDGED:
            check = by_fault.get(v.fault)
        if check is None:
            rows.append(_not_judged(ev.step, v, ev.at))
            continue
        key = (ev.step, check.id, rec.version, context_version)
        if key not in cache:
            obs = rec.observations(ev.step)
            ctx = _context_at(rec.discovered(), base, state, recorded_cabling)
            replayed = run_check(check, obs, ctx)
            failed = next((r for r in replayed if is_check_failure(r)), None)
            cache[key] = (replayed, failed.summary if failed else "")
            group_step[key] = (ev.step, check.id, ev.at)
        recorded_in_group.setdefault(key, set()).add(v.fault)
        replayed, error = cache[key]
        match = next((r for r in replayed if r.fault == v.fault), None)
        note = error or ("" if match else f"{check.id} gave no verdict for this fault")
        rows.append(_row(ev.step, v, match, check=check.id, at=ev.at, note=note))

    for key, (replayed, error) in cache.items():
        if error:
            warnings.append(error)
        else:
            rows.extend(_unrecorded(replayed, group_step[key], recorded_in_group[key]))
    return ReplayResult(rows=tuple(rows), checks_run=len(cache), warnings=tuple(warnings))


# the events after which the judging context differs (the drain guard, what was changed and fixed)
_CONTEXT_EVENTS = frozenset(
    {"link_transition_seen", "node_drained", "fix_applied", "fix_verified", "fix_rolled_back"}
)


def _not_judged(step: str, v: Verdict, at: float) -> ReplayRow:
    """A recorded verdict no check judges: the engine's own (shown, no difference), or one no
    check in this build reports (a difference)."""
    what = ENGINE_JUDGED.get(v.check)
    if what is None:
        return _row(step, v, None, check="", at=at, note="no check in this build judges it")
    note = f"judged by the engine from {what}, not by a check: not judged again"
    return replace(_row(step, v, None, check="", at=at, note=note), compared=False)


def _lookups(checks: tuple[Check, ...]) -> tuple[dict[str, Check], dict[str, Check]]:
    """The checks by id, and by each fault id (the first check that reports it)."""
    by_fault: dict[str, Check] = {}
    for c in checks:
        for fault in c.faults:
            by_fault.setdefault(fault, c)
    return {c.id: c for c in checks}, by_fault


def _unrecorded(
    replayed: list[Verdict], where: tuple[str, str, float], recorded: set[str]
) -> list[ReplayRow]:
    """The replay's findings that no verdict of that step and check recorded."""
    step, check_id, at = where
    return [
        ReplayRow(
            step=step,
            fault=r.fault,
            check=check_id,
            recorded=None,
            replayed=r.status,
            replayed_targets=r.targets,
            replayed_summary=r.summary,
            at=at,
        )
        for r in replayed
        # a fault the wizard judges in another step of the bisection is not this step's
        if _judged_at(step, r.fault) and r.fault not in recorded and r.is_finding
    ]


def _row(
    step: str, recorded: Verdict, replayed: Verdict | None, *, check: str, at: float, note: str
) -> ReplayRow:
    return ReplayRow(
        step=step,
        fault=recorded.fault,
        check=check or recorded.check,
        recorded=recorded.status,
        replayed=None if replayed is None else replayed.status,
        recorded_targets=recorded.targets,
        replayed_targets=() if replayed is None else replayed.targets,
        recorded_summary=recorded.summary,
        replayed_summary="" if replayed is None else replayed.summary,
        at=at,
        note=note,
    )


__all__ = [
    "ReplayResult",
    "ReplayRow",
    "ReplayUnavailable",
    "context_from_session",
    "observations_by_step",
    "observations_from",
    "rails_from_observations",
    "registered_checks",
    "replay_session",
]
