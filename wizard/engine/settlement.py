"""Resume settlement: before a resumed walk probes anything, every rollback its log left armed
settles, and so does every rollback of the session found on a switch that the log does not hold.

- a fix verified before the interruption but not yet disarmed would be undone by its dead-man
  rollback: it is disarmed;
- a fix not verified is rolled back now (the switch's scheduler entry is made due at once and
  awaited; a host's revert script runs), so the state is known again before the step is
  re-probed and the fix, if still needed, offered anew;
- an orphaned entry (the session died between the scheduler `add` and its record) would fire
  later and undo whatever is then on the switch: it runs now, then the switch is compared with
  its pre-fix export.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from wizard.engine import rollback
from wizard.engine.records import FixRecord, Resume
from wizard.engine.session import TxnSession
from wizard.events import FixRolledBack, RollbackDisarmed
from wizard.fixes import ExportStatus
from wizard.model import FixState


@dataclass(slots=True)
class Settlement:
    """What settling changed for the walk: steps whose verified fix a rollback undid (they run
    again) and those fixes (no longer verified)."""

    undone_steps: set[str] = field(default_factory=set)
    undone_fixes: set[str] = field(default_factory=set)


def _fault_of(fix_id: str) -> str:
    return fix_id.split(":")[1] if ":" in fix_id else fix_id


def resume_exports(resume: Resume) -> list[ExportStatus]:
    return [
        ExportStatus(sw, "the pre-fix export", True, contents=t) for sw, t in resume.exports.items()
    ]


async def _keep_verified(
    session: TxnSession,
    fix_id: str,
    target: str,
    name: str,
    fixes: Sequence[FixRecord],
    out: Settlement,
) -> None:
    settled = await rollback.disarm(session, target, name)
    if settled.state == "disarmed":
        session.emit(RollbackDisarmed(step=session.step, fix_id=fix_id, target=target, name=name))
        session.note(
            f"{fix_id}: verified before the interruption; rollback {name} on {target} disarmed"
        )
    elif settled.state == "rolled-back":  # the dead-man script ran
        out.undone_steps.add(fix_id.split(":", maxsplit=1)[0])
        out.undone_fixes.add(fix_id)
        for rec in fixes:
            if rec.fix_id == fix_id:
                rec.rolled_back, rec.state = True, FixState.UNDONE_BY_ROLLBACK
        session.emit(
            FixRolledBack(
                step=session.step,
                fix_id=fix_id,
                fault=_fault_of(fix_id),
                reason=f"verified before the interruption, then {settled.detail}",
            )
        )
        session.note(f"{fix_id}: {settled.detail}; it is offered again", "warn")
    else:
        session.note(f"{fix_id}: {settled.detail}", "error")


async def _undo_unverified(
    session: TxnSession, resume: Resume, fix_id: str, target: str, name: str
) -> None:
    ran = await rollback.run_now(session, target, name, resume.rollback_scripts)
    restored = False
    if target in session.fabric.switches:
        restored = await rollback.compare_with_export(session, target, name, resume_exports(resume))
        ran += (
            "; the switch equals its pre-fix export"
            if restored
            else "; the switch DIFFERS from its pre-fix export (or none was kept)"
        )
    session.emit(
        FixRolledBack(
            step=session.step,
            fix_id=fix_id,
            fault=_fault_of(fix_id),
            reason=f"interrupted before verification: rollback {name} on {target} {ran}",
            restored=restored,
        )
    )
    session.note(f"{fix_id}: interrupted before verification; rollback {name} {ran}", "warn")


async def settle_pending(
    session: TxnSession, resume: Resume, fixes: Sequence[FixRecord]
) -> Settlement:
    """Settle every rollback the log holds as armed, then the orphans (see the module)."""
    out = Settlement()
    for fix_id, target, name, verified in resume.pending_rollbacks:
        try:
            if verified:
                await _keep_verified(session, fix_id, target, name, fixes, out)
            else:
                await _undo_unverified(session, resume, fix_id, target, name)
        except Exception as exc:  # the target may still be away: say so, go on
            session.note(f"could not settle rollback {name} on {target}: {exc}", "error")
    await settle_orphans(session, resume)
    return out


async def _remove_disarmed(session: TxnSession, switch: str, name: str) -> None:
    """An entry the log records as disarmed (its fix was verified) must never run."""
    try:
        gone = await rollback.disarm(session, switch, name)
    except Exception as exc:  # went away meanwhile: said, it fires when due
        session.note(f"{switch}: could not remove {name}: {exc}", "error")
        return
    session.note(
        f"{switch}: rollback entry {name} was disarmed before the session stopped, yet is "
        f"still on the switch: {gone.detail or gone.state}; the verified fix stays",
        "warn" if gone.state == "disarmed" else "error",
    )


async def _run_orphan(session: TxnSession, resume: Resume, switch: str, name: str) -> None:
    try:
        ran = await rollback.run_now(session, switch, name, resume.rollback_scripts)
        same = await rollback.compare_with_export(session, switch, name, resume_exports(resume))
    except Exception as exc:  # went away meanwhile
        session.note(f"{switch}: could not settle orphaned rollback {name}: {exc}", "error")
        return
    session.note(
        f"{switch}: orphaned rollback entry {name} (armed, then the session stopped before "
        f"recording it) {ran}; the switch {'equals' if same else 'DIFFERS from'} its pre-fix "
        "export",
        "warn" if same else "error",
    )


async def settle_orphans(session: TxnSession, resume: Resume) -> None:
    """Rollback entries of this session on a switch that the log does not hold as armed."""
    prefix = f"fabwiz-rb-{session.session_id}-"
    settled = {name for _f, _t, name, _v in resume.pending_rollbacks}
    for switch in session.fabric.switches:
        try:
            rows = await session.fabric.api(switch).call("/system/scheduler", "print")
        except Exception as exc:  # away: its entries fire on their own; say so
            session.note(
                f"{switch}: could not look for this session's rollback entries ({exc}); "
                "any left there fire when due",
                "error",
            )
            continue
        for row in rows:
            name = row.get("name", "")
            if not name.startswith(prefix) or name in settled:
                continue
            if name in resume.disarmed:
                await _remove_disarmed(session, switch, name)
            else:
                await _run_orphan(session, resume, switch, name)
