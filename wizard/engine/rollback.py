"""Running, disarming and checking dead-man rollbacks outside the happy path.

Shared by the fix transaction (loss recovery: a session broke mid-change) and by resume
settlement (rollbacks a stopped session left armed). What the target shows decides, never what
was sent: a switch is compared with its pre-fix export after every rollback.
"""

from __future__ import annotations

import datetime as dt
import shlex
from collections.abc import Mapping, Sequence

from wizard import deadman, fixes
from wizard.engine.ports import FabricRunner
from wizard.engine.session import TxnSession
from wizard.fixes import ExportStatus
from wizard.model import HostChange

RUN_NOW_WAIT_S = 30.0  # how long a rollback made due now is waited for


async def compare_with_export(
    session: TxnSession, switch: str, name: str, exports: Sequence[ExportStatus]
) -> bool:
    """Whether the switch now equals its pre-fix export (said, and returned)."""
    before = next((e for e in exports if e.switch == switch), None)
    try:
        after = await fixes.take_export(session.fabric.api(switch), switch, f"{name}-after")
    except Exception as exc:  # unreachable again: say so
        session.note(f"{switch}: could not export after rollback {name}: {exc}", "error")
        return False
    same = bool(
        before is not None and after.verified and fixes.same_config(before.contents, after.contents)
    )
    session.note(
        f"{switch}: configuration {'equals' if same else 'DIFFERS from'} the pre-fix export "
        f"{before.file if before else '?'} after rollback {name}",
        "info" if same else "error",
    )
    return same


async def disarm(session: TxnSession, target: str, name: str) -> deadman.Settled:
    """Disarm the rollback `name` on `target` (a switch's scheduler entry or a node's timer),
    retried within the session's disarm budget."""

    def warn(text: str) -> None:
        session.note(text, "warn")

    if target in session.fabric.switches:
        return await deadman.disarm_switch(
            session.fabric.api(target),
            name,
            budget_s=session.disarm_budget_s,
            sleep=session.sleep,
            notify=warn,
        )
    return await deadman.disarm_host(
        FabricRunner(session.fabric),
        HostChange(node=target, files=()),
        name,
        budget_s=session.disarm_budget_s,
        sleep=session.sleep,
        notify=warn,
    )


async def run_now(
    session: TxnSession, target: str, name: str, host_scripts: Mapping[str, str]
) -> str:
    """Make the rollback `name` on `target` run now and say what happened. A node runs the
    armed revert script it was given (`host_scripts`: name -> script), then its timer goes."""
    if target not in session.fabric.switches:
        script = host_scripts.get(name, "")
        if script:
            await session.fabric.run(target, f"sudo -n sh -c {shlex.quote(script)}")
        await fixes.disarm_host_revert(FabricRunner(session.fabric), target, name)
        return "ran (host files restored)"
    api = session.fabric.api(target)
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
    deadline = session.clock() + RUN_NOW_WAIT_S
    while session.clock() < deadline:
        left = [r for r in await api.call("/system/scheduler", "print") if r.get("name") == name]
        if not left or left[0].get("run-count", "0") not in ("0", ""):
            if left:
                await fixes.disarm_switch_rollback(api, name)
            return "ran now"
        await session.sleep(session.poll_interval_s)
    return f"did not run within {RUN_NOW_WAIT_S:.0f} s"


async def found_after_loss(session: TxnSession, name: str, exports: Sequence[ExportStatus]) -> str:
    """A switch fix stopped mid-way (the API session broke): reconnect, let the rollback armed
    under `name` run now if it is on the switch, and say what state the switch is in compared
    with the pre-fix export."""
    found: list[str] = []
    for before in exports:
        api = session.fabric.api(before.switch)
        try:
            ran = await run_now(session, before.switch, name, {})
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
                f"{session.rollback_window_s:.0f} s: compare with {before.file} when it is back"
            )
    for line in found:
        session.note(line, "warn")
    return "".join(f"; {line}" for line in found)


async def revert_hosts_now(session: TxnSession, unit: str, backed_up: Sequence[HostChange]) -> str:
    """A host fix stopped mid-way: restore every node whose backup exists now, when it answers,
    instead of leaving it to the timed revert (which stays armed otherwise)."""
    found: list[str] = []
    for change in backed_up:
        try:
            await fixes.revert_host(FabricRunner(session.fabric), change, unit)
            found.append(f"{change.node} restored from its backup now")
        except Exception as exc:  # still away: the timed revert on the node does it
            found.append(
                f"{change.node} did not answer ({exc}); its timed revert restores the backup "
                f"within {session.rollback_window_s:.0f} s"
            )
    for line in found:
        session.note(line, "warn")
    return "".join(f"; {line}" for line in found)
