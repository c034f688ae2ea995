"""Resume: what the engine needs to continue a session, read from the session fold.

`resume_from(loaded, order)` takes a loaded session log and the flow's step ids in order, and
returns the engine's `Resume`: where to continue, which steps are done, which fixes went out
(never resent), the armed rollbacks to settle, the cabling as the log leaves it, the drain guard,
the exports and the findings a skipped direct-connect test waits for. Everything comes from one
fold of the events (`SessionState`); nothing here reads the events again.
"""

from __future__ import annotations

from collections.abc import Sequence

from wizard.engine.records import FixRecord, Resume
from wizard.model import FixState, Status
from wizard.session import LoadedSession, SessionState


def resume_step(state: SessionState, order: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The step to continue at, and the steps already done, in flow order: the step the log
    stopped in, or the first not done when that one is done (the last step when all are)."""
    done = tuple(s for s in order if s in state.done_steps)
    step = state.step if state.step is not None and state.step in order else order[0]
    if step in done:
        later = [s for s in order if s not in done]
        step = later[0] if later else order[-1]
    return step, done


def engine_fixes(state: SessionState) -> tuple[FixRecord, ...]:
    """Every fix of the log as the engine's record: applied ones are never sent again; one only
    previewed was interrupted before its answer."""
    return tuple(
        FixRecord(
            fix_id=f.fix_id,
            fault=f.fault,
            target=f.target,
            applied=f.applied,
            verified=f.state is FixState.VERIFIED,
            rolled_back=f.state is FixState.ROLLED_BACK,
            export=f.export,
            state=FixState.INTERRUPTED if f.status is FixState.PREVIEWED else None,
        )
        for f in state.fixes.values()
    )


def resume_from(loaded: LoadedSession, order: Sequence[str]) -> Resume:
    """What the engine needs to continue `loaded`, given the flow's step ids in order."""
    state = loaded.state()
    step, done = resume_step(state, order)
    return Resume(
        rollback_scripts=state.rollback_scripts,
        fix_counter=state.fix_counter,
        direct_cabled=state.direct_cabled,
        direct_undo=state.direct_undo,
        step=step,
        done_steps=done,
        verified_fixes=state.verified_fix_ids,
        pending_rollbacks=tuple(state.pending_rollbacks()),
        guard=state.drain_guard(),
        fixes=engine_fixes(state),
        healthy_before=state.healthy_before,
        deferred=state.deferred,
        exports=state.pre_fix_exports,
        disarmed=tuple(state.disarmed),
        unknown=tuple(
            sorted(f for f, v in state.latest_verdicts().items() if v.status is Status.UNKNOWN)
        ),
    )
