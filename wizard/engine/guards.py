"""The guards of the fix transaction: locks, and the checks that fail closed.

Before anything is exported or sent: every switch and node the fix changes is locked for this
session (wizard/locks.py), every value must be writable as RouterOS script text, and the change
must not cut fabwiz's own management path. When fabwiz cannot tell where that path runs (the
bridge ports cannot be read, no management port is known), the change is refused with the
reason and what to do by hand.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from wizard import fixes, locks
from wizard.engine.ports import FabricRunner
from wizard.engine.session import TxnSession
from wizard.model import FixPlan

MANUAL_WAY = (
    " Do it by hand from the switch's console (serial or a port outside the change), or move "
    "the management port first."
)


def lock_hold_s(session: TxnSession) -> float:
    """How long a lock stays valid without its session: the dead-man window, the disarm
    retries and time to verify."""
    return session.rollback_window_s + session.disarm_budget_s + 600.0


async def take_locks(session: TxnSession, plan: FixPlan, held: list[tuple[str, str]]) -> None:
    """Lock every switch and node `plan` changes (`held` gets each lock as it is taken)."""
    s = session
    for change in plan.switch_changes:
        if ("switch", change.switch) not in held:
            await locks.lock_switch(
                s.fabric.api(change.switch),
                change.switch,
                s.session_id,
                lock_hold_s(s),
                break_stale=s.break_stale_locks,
            )
            held.append(("switch", change.switch))
    for hchange in plan.host_changes:
        if ("node", hchange.node) not in held:
            await locks.lock_node(
                FabricRunner(s.fabric),
                hchange.node,
                s.session_id,
                lock_hold_s(s),
                now=dt.datetime.fromtimestamp(s.clock(), dt.UTC).replace(tzinfo=None),
                break_stale=s.break_stale_locks,
            )
            held.append(("node", hchange.node))


async def release_locks(session: TxnSession, held: Sequence[tuple[str, str]]) -> None:
    for kind, target in held:
        try:
            if kind == "switch":
                await locks.unlock_switch(session.fabric.api(target), session.session_id)
            else:
                await locks.unlock_node(FabricRunner(session.fabric), target, session.session_id)
        except Exception as exc:  # away: the lock expires on its own
            session.note(f"{target}: could not release the fabwiz lock ({exc}); it expires", "warn")


async def bridge_of(session: TxnSession, switch: str) -> tuple[dict[str, str], str]:
    """Each bridge port's bridge on `switch`, or why it could not be read."""
    try:
        rows = await session.fabric.api(switch).call("/interface/bridge/port", "print")
    except Exception as exc:  # the management guard refuses the change on this
        return {}, f"{type(exc).__name__}: {exc}".rstrip(": ")
    return {r["interface"]: r.get("bridge", "") for r in rows if "interface" in r}, ""


async def refusal(session: TxnSession, plan: FixPlan) -> str | None:
    """Why `plan` must not be sent, or None: every value must be writable as RouterOS script
    text and the management-path guard must hold, on every switch it changes. When fabwiz
    cannot tell where its own management path runs, the answer is a refusal."""
    for change in plan.switch_changes:
        why = fixes.unwritable(change)
        if why:
            return why
        bridged, unread = await bridge_of(session, change.switch)
        mgmt = session.fabric.management_ports(change.switch)
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
            why = fixes.management_conflict(change, mgmt, bridged)
        if why:
            return why + MANUAL_WAY
    return None
