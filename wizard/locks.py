"""One change at a time: a lock on each switch and node for the length of a fix.

Two sessions changing one switch at once leave it matching neither the original nor the fixed
configuration (each exports, arms and rolls back over the other's work). So before the export a
session takes:

- on each switch, a disabled `/system/scheduler` entry named `fabwiz-lock` (it never runs; the
  `add` fails when the name exists, so two sessions cannot both take it), its comment holding the
  session id, the operator, since when and until when (switch clock);
- on each node a host change touches, `/run/lock/fabwiz.lock` with the same fields, written and
  read back (the last writer holds it; the other one reads someone else's id and backs off).

A lock held by another session refuses the change, saying who holds it and since when. A lock
whose expiry is past is stale (its session died without releasing it): it is broken only when the
operator asks (`--break-stale-lock`). The session's own lock (a resumed session) is taken over.
"""

from __future__ import annotations

import datetime as dt
import getpass
import re
import shlex
import socket
from dataclasses import dataclass

from wizard import fixes
from wizard.errors import FixRefused

SWITCH_LOCK = "fabwiz-lock"
NODE_LOCK = "/run/lock/fabwiz.lock"
_FMT = "%Y-%m-%d %H:%M:%S"


def operator_name() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return re.sub(r"[^\w.@-]", "_", f"{user}@{socket.gethostname()}")[:64]


@dataclass(frozen=True, slots=True)
class Holder:
    session: str
    operator: str
    since: str
    expires: str

    def text(self) -> str:
        return (
            f"fabwiz lock: session={self.session} operator={self.operator} "
            f"since={self.since.replace(' ', 'T')} expires={self.expires.replace(' ', 'T')}"
        )

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        fields = dict(re.findall(r"(\w+)=(\S+)", text or ""))
        if "session" not in fields:
            return None
        return cls(
            session=fields["session"],
            operator=fields.get("operator", "?"),
            since=fields.get("since", "?").replace("T", " "),
            expires=fields.get("expires", "?").replace("T", " "),
        )

    def expired(self, now: dt.datetime) -> bool:
        try:
            return dt.datetime.strptime(self.expires, _FMT) < now
        except ValueError:
            return True  # unreadable: as good as stale

    def who(self) -> str:
        return f"session {self.session} of {self.operator}, since {self.since}"


class LockHeld(FixRefused):
    """Another session holds the lock of a target."""


def _held(target: str, holder: Holder, stale: bool) -> LockHeld:
    if stale:
        return LockHeld(
            f"{target} is locked by {holder.who()}; the lock expired at {holder.expires}",
            hint="if that session is gone, run again with --break-stale-lock",
        )
    return LockHeld(
        f"{target} is being changed by {holder.who()} (until {holder.expires}): one change at "
        "a time",
        hint="wait for that session to finish, or ask its operator",
    )


async def lock_switch(
    api: fixes.RouterOsApi,
    switch: str,
    session: str,
    hold_s: float,
    *,
    operator: str | None = None,
    break_stale: bool = False,
) -> None:
    """Take the switch's lock for `session` (raises LockHeld, or FixRefused when the switch
    does not answer)."""
    now, _old = await fixes.switch_clock(api)
    mine = Holder(
        session,
        operator or operator_name(),
        now.strftime(_FMT),
        (now + dt.timedelta(seconds=hold_s)).strftime(_FMT),
    )
    last = ""
    for _attempt in range(2):
        rows = [
            r for r in await api.call("/system/scheduler", "print") if r.get("name") == SWITCH_LOCK
        ]
        if rows:
            holder = Holder.parse(rows[0].get("comment", "")) or Holder("?", "?", "?", "?")
            if holder.session != session:
                stale = holder.expired(now)
                if not (stale and break_stale):
                    raise _held(switch, holder, stale)
            for row in rows:
                await api.call("/system/scheduler", "remove", **{".id": row[".id"]})
        try:
            await api.call(
                "/system/scheduler",
                "add",
                name=SWITCH_LOCK,
                disabled="yes",
                interval="0s",
                **{
                    "start-time": "startup",
                    "on-event": ":log info fabwiz-lock",
                    "comment": mine.text(),
                },
            )
            return
        except Exception as exc:  # someone else added it in between: look again
            last = str(exc)
    raise FixRefused(
        f"{switch}: could not take the fabwiz lock (another session races for it: {last})"
    )


async def unlock_switch(api: fixes.RouterOsApi, session: str) -> None:
    """Release the switch's lock if this session holds it."""
    for row in await api.call("/system/scheduler", "print"):
        if row.get("name") != SWITCH_LOCK:
            continue
        holder = Holder.parse(row.get("comment", ""))
        if holder is not None and holder.session == session:
            await api.call("/system/scheduler", "remove", **{".id": row[".id"]})


async def _node_holder(runner: fixes.HostRunner, node: str) -> Holder | None:
    res = await runner.run(node, f"cat {NODE_LOCK} 2>/dev/null || true")
    if res.error is not None:
        raise FixRefused(f"{node}: cannot read {NODE_LOCK}: {res.error}")
    return Holder.parse(res.stdout)


async def lock_node(
    runner: fixes.HostRunner,
    node: str,
    session: str,
    hold_s: float,
    *,
    now: dt.datetime,
    operator: str | None = None,
    break_stale: bool = False,
) -> None:
    """Take the node's lock file for `session` (raises LockHeld)."""
    holder = await _node_holder(runner, node)
    if holder is not None and holder.session != session:
        stale = holder.expired(now)
        if not (stale and break_stale):
            raise _held(node, holder, stale)
    mine = Holder(
        session,
        operator or operator_name(),
        now.strftime(_FMT),
        (now + dt.timedelta(seconds=hold_s)).strftime(_FMT),
    )
    res = await runner.run(
        node, f"sudo -n tee {shlex.quote(NODE_LOCK)} >/dev/null", stdin=mine.text() + "\n"
    )
    if not res.ok:
        raise FixRefused(f"{node}: cannot write {NODE_LOCK}: {(res.error or res.stderr).strip()}")
    back = await _node_holder(runner, node)
    if back is None or back.session != session:
        raise _held(node, back or Holder("?", "?", "?", "?"), False)


async def unlock_node(runner: fixes.HostRunner, node: str, session: str) -> None:
    holder = await _node_holder(runner, node)
    if holder is not None and holder.session == session:
        await runner.run(node, f"sudo -n rm -f {shlex.quote(NODE_LOCK)}")
