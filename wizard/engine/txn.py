"""The fix transaction: lock -> guard -> export -> confirm -> arm the rollback -> apply ->
settle -> verify -> disarm, or roll back.

A fix changes switches (`SwitchChange`: RouterOS API commands, a scheduler entry as its dead-man
rollback) and nodes (`HostChange`: files backed up first, a systemd timer as its timed revert).
Each armed rollback is typed by what it guards (`ArmedSwitch`, `ArmedHost`), so every later step
(disarm, roll back) knows what it handles without guessing from attributes.

Every guard fails closed. A value that is not writable as RouterOS script text, a switch whose
bridge ports cannot be read, a switch whose management port fabwiz cannot tell, a change that
would cut fabwiz's own API session, a target another session holds, an export that does not read
back whole: the change is refused, with the reason and what to do by hand, before anything is
sent. A change that stops mid-way (a lost session, a failed step) is recovered on reconnect.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from wizard import changes, deadman, fixes
from wizard.engine import guards, linkwait, rollback
from wizard.engine.ports import FabricRunner
from wizard.engine.records import FixRecord
from wizard.engine.session import TxnSession
from wizard.errors import FabwizError, FixRefused
from wizard.events import (
    ExportTaken,
    FixApplied,
    FixPreviewed,
    FixRefusedEvent,
    FixRolledBack,
    FixVerified,
    LinkTransitionSeen,
    OperatorAnswered,
    RollbackArmed,
    RollbackDisarmed,
)
from wizard.fixes import ExportStatus
from wizard.model import FixPlan, FixState, HostChange, SwitchChange


@dataclass(frozen=True, slots=True)
class ArmedSwitch:
    """A switch change applied under its dead-man rollback (a one-shot scheduler entry)."""

    change: SwitchChange
    name: str

    @property
    def target(self) -> str:
        return self.change.switch


@dataclass(frozen=True, slots=True)
class ArmedHost:
    """A host change written under its timed revert (a systemd timer restoring the backups)."""

    change: HostChange
    name: str

    @property
    def target(self) -> str:
        return self.change.node


Armed = ArmedSwitch | ArmedHost


@dataclass(slots=True)
class Outcome:
    """How one offered fix ended. `record` goes into the walk's result."""

    record: FixRecord
    ok: bool = False  # applied and verified
    kept: bool = False  # verified and every rollback known gone: never offered again
    declined: bool = False  # the operator said no: it stays on offer


def export_taken(step: str, switch: str, status: ExportStatus, purpose: str) -> ExportTaken:
    """The record of an export read back from `switch` (before a fix, golden, or the running
    configuration it is compared with)."""
    return ExportTaken(
        step=step,
        switch=switch,
        file=status.file,
        contents=status.contents,
        sha256=status.sha256,
        purpose=purpose,
    )


def _why(exc: BaseException) -> str:
    if isinstance(exc, FabwizError):
        return exc.message + (f" ({exc.hint})" if exc.hint else "")
    return str(exc)


def landed(exc: BaseException, armed: Sequence[Armed]) -> bool:
    """Whether a change that stopped with `exc` may have reached its target. A step that says
    whether it had (`FixRefused.changed`) is believed; any other failure (a lost session) may
    have landed once a rollback was armed: a switch's entry is armed before its commands, a
    host's revert before its first write."""
    reached = exc.changed if isinstance(exc, FixRefused) else None
    if reached is True:
        return True
    if not armed:
        return False
    return reached is None or any(isinstance(a, ArmedSwitch) for a in armed)


class FixTransaction:
    """Offers and applies fixes for one session. `counter` numbers exports and rollbacks (a
    resumed session continues the count, so new names never collide with old ones)."""

    def __init__(self, session: TxnSession) -> None:
        self.s = session
        self.counter = 0
        self.fire_at: dict[str, dt.datetime] = {}  # rollback name -> when it fires (switch)

    # -- names ---------------------------------------------------------------------------------

    def export_name(self) -> str:
        return f"fabwiz-{self.s.session_id}-{self.s.step}-{self.counter}"

    def rollback_name(self) -> str:
        return f"fabwiz-rb-{self.s.session_id}-{self.counter}"

    def revert_unit(self) -> str:
        return f"fabwiz-revert-{self.s.session_id}-{self.counter}"

    # -- the offer -----------------------------------------------------------------------------

    def preview(self, fix_id: str, plan: FixPlan) -> None:
        self.s.fire("offer_fix")
        self.s.emit(
            FixPreviewed(
                step=self.s.step,
                fix_id=fix_id,
                fault=plan.fault,
                target=plan.target,
                summary=plan.summary,
                preview=plan.preview,
                bounces_links=plan.bounces_links,
            )
        )

    async def offer(self, fix_id: str, plan: FixPlan) -> Outcome:
        """Offer one fix under the locks of every switch and node it changes. A target locked
        by another session (or one that does not answer) refuses the fix."""
        record = FixRecord(fix_id=fix_id, fault=plan.fault, target=plan.target)
        held: list[tuple[str, str]] = []
        try:
            await guards.take_locks(self.s, plan, held)
        except Exception as exc:  # held by another session, or the target did not answer
            await guards.release_locks(self.s, held)
            return self.refuse(plan, record, f"not changed: {_why(exc)}", offered=False)
        try:
            self.preview(fix_id, plan)
            return await self._guarded(fix_id, plan, record)
        finally:
            await guards.release_locks(self.s, held)

    def refuse(
        self, plan: FixPlan, record: FixRecord, why: str, *, offered: bool = True
    ) -> Outcome:
        """Nothing is sent: the fix is refused with `why` (said, recorded)."""
        record.refused = why
        self.s.emit(
            FixRefusedEvent(step=self.s.step, fault=plan.fault, target=plan.target, reason=why)
        )
        if offered:
            self.s.fire("declined")
        return Outcome(record)

    async def _guarded(self, fix_id: str, plan: FixPlan, record: FixRecord) -> Outcome:
        why = await guards.refusal(self.s, plan)
        if why:
            return self.refuse(plan, record, why)
        exports: list[ExportStatus] = []
        if plan.switch_changes:
            self.s.fire("export")
        for change in plan.switch_changes:
            self.counter += 1
            status = await fixes.take_export(
                self.s.fabric.api(change.switch), change.switch, self.export_name()
            )
            if not status.verified:
                return self.refuse(plan, record, f"no verified export: {status.error}")
            exports.append(status)
            self.s.emit(export_taken(self.s.step, change.switch, status, "pre-fix"))
        record.export = exports[0].file if exports else None
        ok = await self.s.operator.confirm_fix(plan, exports[0] if exports else None)
        self.s.emit(
            OperatorAnswered(
                step=self.s.step, question=f"apply fix {fix_id}", answer="yes" if ok else "no"
            )
        )
        if not ok:
            self.s.fire("declined")
            return Outcome(record, declined=True)
        return await self._apply(fix_id, plan, record, exports)

    # -- apply, verify, keep or roll back ------------------------------------------------------

    async def _apply(
        self, fix_id: str, plan: FixPlan, record: FixRecord, exports: list[ExportStatus]
    ) -> Outcome:
        baseline = await linkwait.links(self.s, plan) if plan.bounces_links else {}
        self.s.fire("apply")
        armed: list[Armed] = []
        backed_up: list[HostChange] = []  # host changes whose backups exist (safe to revert)
        try:
            await self._arm_and_apply(fix_id, plan, armed, backed_up)
        except Exception as exc:  # a lost session or a failed step mid-change
            await self._stopped(fix_id, plan, record, exc, exports, armed, backed_up)
            return Outcome(record)
        record.applied = True
        stamped = await changes.stamp(
            self.s.guard.changed_at, plan, self.s.fabric.api, self.s.fabric.run
        )
        self.s.emit(
            FixApplied(
                step=self.s.step,
                fix_id=fix_id,
                fault=plan.fault,
                target=plan.target,
                export=record.export,
                rollback_armed=armed[0].name if armed else None,
                changed_at=stamped,
            )
        )
        if plan.bounces_links:
            for node in linkwait.nodes_of(plan, self.s.fabric):
                cause = f"fix {plan.fault} bounced links"
                self.s.guard.record_transition(node, self.s.clock(), cause)
                self.s.emit(LinkTransitionSeen(node=node, cause=cause))
            await linkwait.settle(self.s, plan, baseline)
        return await self._verify(fix_id, plan, record, armed, exports)

    async def _arm_and_apply(
        self, fix_id: str, plan: FixPlan, armed: list[Armed], backed_up: list[HostChange]
    ) -> None:
        """Each switch change after its dead-man rollback is armed; each host change after its
        backups and its timed revert exist."""
        for change in plan.switch_changes:
            api = self.s.fabric.api(change.switch)
            name = self.rollback_name()
            script, fire_at = await fixes.arm_switch_rollback_at(
                api, change, name, self.s.rollback_window_s
            )
            self.fire_at[name] = fire_at
            armed.append(ArmedSwitch(change, name))
            self._armed(fix_id, change.switch, name, script)
            await fixes.apply_switch_change(api, change)
        for hchange in plan.host_changes:
            unit = self.revert_unit()
            script = await fixes.backup_and_write(
                FabricRunner(self.s.fabric), hchange, unit, self.s.rollback_window_s, backed_up
            )
            armed.append(ArmedHost(hchange, unit))
            self._armed(fix_id, hchange.node, unit, script)

    def _armed(self, fix_id: str, target: str, name: str, script: str) -> None:
        window = self.s.rollback_window_s
        self.s.emit(
            RollbackArmed(
                step=self.s.step,
                fix_id=fix_id,
                target=target,
                name=name,
                window_s=window,
                script=script,
                wall_window_s=window / (self.s.target_clock_rate or 1.0),
            )
        )

    async def _stopped(
        self,
        fix_id: str,
        plan: FixPlan,
        record: FixRecord,
        exc: Exception,
        exports: Sequence[ExportStatus],
        armed: Sequence[Armed],
        backed_up: Sequence[HostChange],
    ) -> None:
        """The change stopped mid-way: find the state on reconnect, restore what can be
        restored now, and say whether anything was changed."""
        s = self.s
        found = await rollback.found_after_loss(s, self.rollback_name(), exports)
        found += await rollback.revert_hosts_now(s, self.revert_unit(), backed_up)
        record.applied = record.rolled_back = landed(exc, armed)
        if record.applied:
            reason = (
                f"the change failed ({exc}); the dead-man rollback armed before it restores "
                f"the previous state within {s.rollback_window_s:.0f} s{found}"
            )
            hint = "re-run the step once the target answers again"
            s.emit(FixRolledBack(step=s.step, fix_id=fix_id, fault=plan.fault, reason=reason))
        else:
            reason = f"nothing was changed: {exc}{found}"
            hint = (exc.hint if isinstance(exc, FabwizError) else None) or (
                "fix the cause and re-run the step"
            )
            s.emit(
                FixRefusedEvent(step=s.step, fault=plan.fault, target=plan.target, reason=reason)
            )
        s.fire("rolled_back" if s.can_fire("rolled_back") else "declined")
        await s.operator.error("Fix stopped", f"{plan.fault} on {plan.target}: {reason}", hint)

    async def _verify(
        self,
        fix_id: str,
        plan: FixPlan,
        record: FixRecord,
        armed: Sequence[Armed],
        exports: Sequence[ExportStatus],
    ) -> Outcome:
        s = self.s
        s.fire("verify")
        ok, detail = await s.verify(plan)
        s.emit(FixVerified(step=s.step, fix_id=fix_id, fault=plan.fault, ok=ok, detail=detail))
        if ok:
            record.verified = True
            kept = await self._disarm_verified(fix_id, plan, armed, exports, record)
            s.fire("verified")
            return Outcome(record, ok=True, kept=kept)
        restored = await self.roll_back(armed, exports)
        stamped = await changes.stamp(s.guard.changed_at, plan, s.fabric.api, s.fabric.run)
        record.rolled_back = True
        s.emit(
            FixRolledBack(
                step=s.step,
                fix_id=fix_id,
                fault=plan.fault,
                reason=f"verification failed: {detail}",
                restored=restored,
                changed_at=stamped,
            )
        )
        s.fire("rolled_back")
        return Outcome(record)

    async def roll_back(self, armed: Sequence[Armed], exports: Sequence[ExportStatus]) -> bool:
        """Undo every armed change now; True when every switch equals its pre-fix export."""
        restored = True
        for a in armed:
            if isinstance(a, ArmedHost):
                await fixes.revert_host(FabricRunner(self.s.fabric), a.change, a.name)
                continue
            api = self.s.fabric.api(a.target)
            await fixes.roll_back_switch(api, a.change, a.name)
            before = next((e for e in exports if e.switch == a.target), None)
            after = await fixes.take_export(api, a.target, f"{a.name}-after-rollback")
            same = (
                before is not None
                and after.verified
                and fixes.same_config(before.contents, after.contents)
            )
            restored = restored and same
            self.s.note(
                f"{a.target}: configuration {'equals' if same else 'DIFFERS from'} the "
                f"pre-fix export {before.file if before else '?'} after the rollback",
                "info" if same else "error",
            )
        return restored

    async def _disarm_one(self, a: Armed) -> deadman.Settled:
        def warn(text: str) -> None:
            self.s.note(text, "warn")

        if isinstance(a, ArmedSwitch):
            return await deadman.disarm_switch(
                self.s.fabric.api(a.target),
                a.name,
                budget_s=self.s.disarm_budget_s,
                fire_at=self.fire_at.get(a.name),
                sleep=self.s.sleep,
                notify=warn,
            )
        return await deadman.disarm_host(
            FabricRunner(self.s.fabric),
            a.change,
            a.name,
            budget_s=self.s.disarm_budget_s,
            sleep=self.s.sleep,
            notify=warn,
        )

    async def _disarm_verified(
        self,
        fix_id: str,
        plan: FixPlan,
        armed: Sequence[Armed],
        exports: Sequence[ExportStatus],
        record: FixRecord,
    ) -> bool:
        """Disarm every rollback of a verified fix, retried and checked on the target; True
        when the fix is known to stay. Anything else is said and recorded, never silent."""
        kept = True
        for a in armed:
            settled = await self._disarm_one(a)
            if settled.state == "disarmed":
                self.s.emit(
                    RollbackDisarmed(step=self.s.step, fix_id=fix_id, target=a.target, name=a.name)
                )
                continue
            kept = False
            if settled.state == "rolled-back":
                await self._undone(fix_id, plan, a, settled, exports, record)
            else:
                await self._still_armed(plan, a, settled, record)
        if kept:
            record.state = FixState.VERIFIED
        return kept

    async def _undone(
        self,
        fix_id: str,
        plan: FixPlan,
        a: Armed,
        settled: deadman.Settled,
        exports: Sequence[ExportStatus],
        record: FixRecord,
    ) -> None:
        """The rollback ran before it was disarmed: the verified fix is undone."""
        restored = True
        if isinstance(a, ArmedSwitch):
            restored = await rollback.compare_with_export(self.s, a.target, a.name, exports)
        record.rolled_back = True
        record.state = FixState.UNDONE_BY_ROLLBACK
        reason = f"verified, then {settled.detail}"
        self.s.emit(
            FixRolledBack(
                step=self.s.step, fix_id=fix_id, fault=plan.fault, reason=reason, restored=restored
            )
        )
        await self.s.operator.error(
            "Fix undone by the dead-man rollback",
            f"{plan.fault} on {a.target}: {reason}",
            "re-run the step: the fault is probed again and the fix offered anew",
        )

    async def _still_armed(
        self, plan: FixPlan, a: Armed, settled: deadman.Settled, record: FixRecord
    ) -> None:
        """The rollback could not be disarmed: it still fires unless removed by hand."""
        record.state = FixState.ROLLBACK_ARMED
        self.s.note(f"{plan.fault} on {a.target}: {settled.detail}", "error")
        how = (
            f"/system scheduler remove [find name={a.name}]"
            if isinstance(a, ArmedSwitch)
            else f"sudo systemctl stop {a.name}.timer"
        )
        await self.s.operator.error(
            "Rollback still armed",
            f"{plan.fault} on {a.target}: {settled.detail}",
            f"to keep the fix, run `{how}` on {a.target} before it fires, or "
            "`fabwiz resume` this session when the target answers",
        )
