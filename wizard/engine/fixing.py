"""Fixes within a step: a plan for each finding, offered through the fix transaction
(wizard/engine/txn.py), or a physical fix the technician makes and the checks re-verify."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from wizard.engine.physical import PhysicalMixin
from wizard.engine.ports import CheckLike, StepLike
from wizard.engine.records import FixRecord
from wizard.errors import FabwizError
from wizard.events import FixApplied, FixVerified
from wizard.model import FixPlan, Status, Verdict
from wizard.probes import Observations

MANUAL_RECHECKS = 2  # a change made by hand is re-checked this many more times before it stays open


class FixingMixin(PhysicalMixin):
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
        """Offer one fix; True when it was applied and verified (or already was, in this
        session). Changes go through the fix transaction; a physical fix is asked for and
        re-checked."""
        fix_id = self._fix_id(verdict)
        if fix_id in self._verified_fixes:
            self.note(f"{plan.fault} on {plan.target}: already fixed and verified in this session")
            return True
        if plan.physical is not None and not plan.switch_changes and not plan.host_changes:
            self.txn.preview(fix_id, plan)
            record = FixRecord(fix_id=fix_id, fault=plan.fault, target=plan.target)
            return await self._physical_fix(plan, record, fix_id)
        outcome = await self.txn.offer(fix_id, plan)
        self.result.fixes.append(outcome.record)
        if outcome.declined:
            self._declined.setdefault(self._step, []).append((verdict, plan))
        if outcome.kept:
            self._verified_fixes.add(fix_id)
        return outcome.ok

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
