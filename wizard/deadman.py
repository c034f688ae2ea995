"""Disarming the dead-man rollback as part of the fix: retried, then verified on the target.

A verified fix is kept only when its rollback is known to be gone before it fired. A reply lost
at disarm time is not an answer: the disarm is retried on a fresh connection (the transport opens
a new session after a failure) until the entry is seen gone, or its script is seen to have run,
or the retry budget is spent. The outcome is what the switch shows, never what was sent:

- `disarmed`: the entry is gone and its script did not run (the switch log has no `ran` line);
- `rolled-back`: the script ran (its first line logs `fabwiz rollback NAME ran`): the fix is
  undone, which the caller then compares with the pre-fix export;
- `armed`: the switch could not be reached within the budget: the entry may still fire.

Hosts: `systemctl stop UNIT.timer` must succeed and the timer must then be inactive, and every
file the fix wrote must still hold what it wrote (a revert that already ran restored them).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from wizard import fixes
from wizard.model import HostChange

State = Literal["disarmed", "rolled-back", "armed"]


@dataclass(frozen=True, slots=True)
class Settled:
    state: State
    detail: str
    attempts: int = 1


def ran_marker(name: str) -> str:
    """The log line a rollback script writes first when it runs."""
    return f"fabwiz rollback {name} ran"


async def rollback_ran(api: fixes.RouterOsApi, name: str) -> bool:
    rows = await api.call("/log", "print")
    marker = ran_marker(name)
    return any(marker in (r.get("message") or "") for r in rows)


async def disarm_switch(
    api: fixes.RouterOsApi,
    name: str,
    *,
    budget_s: float,
    fire_at: dt.datetime | None = None,
    sleep: Callable[[float], Awaitable[object]],
    notify: Callable[[str], None] = lambda _text: None,
    clock: Callable[[], float] = time.monotonic,
) -> Settled:
    """Remove the entry `name`, retrying lost replies for `budget_s` seconds, and say what the
    switch shows afterwards. Never raises for a transport failure."""
    deadline = clock() + budget_s
    attempts = 0
    last_error = ""
    pause = 0.5
    while True:
        attempts += 1
        try:
            rows = [
                r for r in await api.call("/system/scheduler", "print") if r.get("name") == name
            ]
            if await rollback_ran(api, name) or any(
                r.get("run-count", "0") not in ("0", "") for r in rows
            ):
                if rows:  # ran but its own removal did not: nothing more to fire, tidy it
                    await fixes.disarm_switch_rollback(api, name)
                return Settled(
                    "rolled-back",
                    f"the switch ran rollback {name} before it was disarmed",
                    attempts,
                )
            if not rows:
                return Settled(
                    "disarmed", f"rollback {name} removed; its script never ran", attempts
                )
            for row in rows:
                await api.call("/system/scheduler", "remove", **{".id": row[".id"]})
            continue  # verify on the next pass
        except Exception as exc:  # a lost reply, a closed session: retried on a fresh one
            last_error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        left = deadline - clock()
        if left <= 0:
            when = f" at {fire_at:%Y-%m-%d %H:%M:%S} (switch clock)" if fire_at else ""
            return Settled(
                "armed",
                f"could not disarm rollback {name} ({last_error}): it is still armed and undoes "
                f"the fix{when} unless removed",
                attempts,
            )
        when = f"; it fires at {fire_at:%H:%M:%S} switch time" if fire_at else ""
        notify(
            f"disarming {name}: {last_error}; retrying on a fresh connection "
            f"({left:.0f} s of retries left{when}; if they run out the switch rolls the fix back)"
        )
        await sleep(min(pause, max(left, 0.0)))
        pause = min(pause * 2, 5.0)


async def disarm_host(
    runner: fixes.HostRunner,
    change: HostChange,
    unit: str,
    *,
    budget_s: float,
    sleep: Callable[[float], Awaitable[object]],
    notify: Callable[[str], None] = lambda _text: None,
    clock: Callable[[], float] = time.monotonic,
) -> Settled:
    """Stop the timed revert and check it is stopped and the fix's files are still in place."""
    deadline = clock() + budget_s
    attempts = 0
    pause = 0.5
    last_error = ""
    q = fixes._q
    while True:
        attempts += 1
        stop = await runner.run(change.node, f"sudo -n systemctl stop {q(unit + '.timer')}")
        if stop.ok:
            active = await runner.run(change.node, f"systemctl is-active {q(unit + '.timer')}")
            if active.error is None and active.stdout.strip() != "active":
                changed: list[str] = []
                for f in change.files:
                    now = await runner.run(change.node, f"sudo -n cat {q(f.path)}")
                    if now.error is not None:
                        changed = []
                        last_error = now.error
                        break
                    if now.stdout != f.content:
                        changed.append(f.path)
                else:
                    if changed:
                        return Settled(
                            "rolled-back",
                            f"the timed revert {unit} ran before it was stopped: "
                            f"{', '.join(changed)} no longer hold the fix",
                            attempts,
                        )
                    return Settled(
                        "disarmed",
                        f"timed revert {unit} stopped; the fix's files are in place",
                        attempts,
                    )
            else:
                last_error = active.error or f"{unit}.timer is still active"
        else:
            last_error = (stop.error or stop.stderr or f"exit {stop.exit_status}").strip()
        left = deadline - clock()
        if left <= 0:
            return Settled(
                "armed",
                f"could not stop the timed revert {unit} on {change.node} ({last_error}): it "
                "still restores the backups when due",
                attempts,
            )
        notify(f"stopping {unit} on {change.node}: {last_error}; retrying ({left:.0f} s left)")
        await sleep(min(pause, max(left, 0.0)))
        pause = min(pause * 2, 5.0)
