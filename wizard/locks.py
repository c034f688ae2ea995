"""One change at a time: a lock on each switch and node for the length of a fix.

Two sessions changing one switch at once leave it matching neither the original nor the fixed
configuration (each exports, arms and rolls back over the other's work). So before the export a
session takes:

- on each switch, a disabled `/system/scheduler` entry named `fabwiz-lock` (it never runs; the
  `add` fails when the name exists, so two sessions cannot both take it), its comment holding the
  session id, the operator, since when and until when (switch clock);
- on each node a host change touches, the directory `/run/lock/fabwiz.lock`, made with `mkdir`
  (an exclusive create: it fails with `File exists` when the lock is there, so of two sessions
  racing exactly one wins), its `holder` file holding the same fields. The holder refreshes its
  expiry by rewriting that file; a reboot clears it (/run is a tmpfs).

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
NODE_LOCK = "/run/lock/fabwiz.lock"  # a directory: `mkdir` takes it atomically
NODE_HOLDER = f"{NODE_LOCK}/holder"
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
    """Who holds the node's lock (None: nobody, or a holder file not written yet). A lock
    file of an older fabwiz (a plain file at the lock's path) is read too."""
    lock, holder = shlex.quote(NODE_LOCK), shlex.quote(NODE_HOLDER)
    res = await runner.run(node, f"cat {holder} 2>/dev/null || cat {lock} 2>/dev/null || true")
    if res.error is not None:
        raise FixRefused(f"{node}: cannot read {NODE_HOLDER}: {res.error}")
    return Holder.parse(res.stdout)


def _holder(session: str, operator: str | None, now: dt.datetime, hold_s: float) -> Holder:
    return Holder(
        session,
        operator or operator_name(),
        now.strftime(_FMT),
        (now + dt.timedelta(seconds=hold_s)).strftime(_FMT),
    )


async def _write_holder(runner: fixes.HostRunner, node: str, mine: Holder) -> None:
    res = await runner.run(
        node, f"sudo -n tee {shlex.quote(NODE_HOLDER)} >/dev/null", stdin=mine.text() + "\n"
    )
    if not res.ok:
        raise FixRefused(f"{node}: cannot write {NODE_HOLDER}: {(res.error or res.stderr).strip()}")


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
    """Take the node's lock for `session` with an exclusive `mkdir` (raises LockHeld when
    another session holds it, FixRefused when the node cannot make it). The session's own lock
    is refreshed; a stale one is broken only with `break_stale`."""
    mine = _holder(session, operator, now, hold_s)
    lock = shlex.quote(NODE_LOCK)
    for _attempt in range(2):
        res = await runner.run(
            node,
            f"sudo -n mkdir {lock} && sudo -n tee {shlex.quote(NODE_HOLDER)} >/dev/null",
            stdin=mine.text() + "\n",
        )
        if res.ok:
            return
        why = (res.error or res.stderr).strip()
        if res.error is not None or "File exists" not in res.stderr:
            raise FixRefused(f"{node}: cannot make the lock {NODE_LOCK}: {why}")
        holder = await _node_holder(runner, node)
        if holder is None:  # its maker may be between `mkdir` and writing its name
            holder = await _node_holder(runner, node)
        if holder is None:
            holder = Holder("(none recorded)", "unknown", "unknown", "unknown")
        if holder.session == session:
            await _write_holder(runner, node, mine)
            return
        stale = holder.expired(now)
        if not (stale and break_stale):
            raise _held(node, holder, stale)
        gone = await runner.run(node, f"sudo -n rm -rf {lock}")
        if not gone.ok:
            raise FixRefused(
                f"{node}: cannot break the stale lock {NODE_LOCK}: "
                f"{(gone.error or gone.stderr).strip()}"
            )
        break_stale = False  # once: whoever makes it next holds it
    back = await _node_holder(runner, node)
    raise _held(node, back or Holder("?", "?", "?", "?"), False)


async def refresh_node(
    runner: fixes.HostRunner,
    node: str,
    session: str,
    hold_s: float,
    *,
    now: dt.datetime,
    operator: str | None = None,
) -> None:
    """Push the expiry of this session's node lock forward (raises LockHeld when the lock is
    no longer this session's: it expired and was broken)."""
    holder = await _node_holder(runner, node)
    if holder is None or holder.session != session:
        raise _held(node, holder or Holder("(none)", "nobody", "?", "?"), False)
    await _write_holder(runner, node, _holder(session, operator, now, hold_s))


async def unlock_node(runner: fixes.HostRunner, node: str, session: str) -> None:
    holder = await _node_holder(runner, node)
    if holder is not None and holder.session == session:
        await runner.run(node, f"sudo -n rm -rf {shlex.quote(NODE_LOCK)}")
