"""Safe fix execution: the mandatory export, the dead-man rollback, the management-path guard.

Switch fixes go: export (`/export file=NAME`, verified: present, non-empty, contents copied into
the session) -> rollback armed on the switch (a `/system/scheduler` entry whose `on-event` holds the
inverse commands and fires after a window unless disarmed) -> the change -> verification (by the
engine) -> disarm, or roll back now and confirm the switch is back at the exported state.
Host fixes go: backup of every file -> a timed revert armed on the host (`systemd-run`) -> files
written and commands run -> verification -> disarm, or restore.

No export, no change: `FixRefused` is raised before anything is sent. A change that would remove
or alter a port (or the bridge) carrying the wizard's own API session is refused the same way.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import re
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from wizard.errors import FixRefused
from wizard.model import ApiCommand, HostChange, ProbeResult, SwitchChange
from wizard.rosquote import cli_command, quote
from wizard.transports.capped import cap_from_env


class RouterOsApi(Protocol):
    """What fixes need from a switch transport (wizard/transports/routeros.py provides it)."""

    async def call(self, path: str, verb: str, **args: str) -> list[dict[str, str]]: ...


class HostRunner(Protocol):
    async def run(
        self, node: str, command: str, *, stdin: str | None = None, timeout: float = 30.0
    ) -> ProbeResult: ...


@dataclass(frozen=True, slots=True)
class ExportStatus:
    switch: str
    file: str
    verified: bool
    size: int = 0
    sha256: str = ""
    contents: str = ""
    error: str | None = None


def to_cli(cmd: ApiCommand) -> str:
    """RouterOS CLI text for an API command (for previews and scheduler scripts), built from its
    fields with every value quoted. Raises `Unrepresentable` (a `FixRefused`) for a value that
    RouterOS script text cannot carry."""
    text = cli_command(cmd.path, cmd.verb, cmd.args, cmd.select)
    return "/" + cmd.path.strip("/").replace("/", " ") + text[len(cmd.path) :]


_cli_quote = quote


def _strip_export_header(text: str) -> str:
    # The first line carries the export's date and time ("# 2026-11-30 00:45:12 by RouterOS ...").
    lines = text.splitlines()
    return "\n".join(line for line in lines if " by RouterOS " not in line).strip()


def same_config(before: str, after: str) -> bool:
    """Whether two exports describe the same configuration.

    Compared item by item, ignoring the date header, comments, line wrapping and the order of
    items within a menu: a bridge port removed then added back by a rollback is listed last in
    RouterOS' export, and is the same configuration. Text that does not parse as an export is
    compared as text."""
    from wizard.errors import ParseError
    from wizard.parsers.routeros import parse_export

    try:
        a, b = parse_export(before).export, parse_export(after).export
    except ParseError:
        return _strip_export_header(before) == _strip_export_header(after)

    def canon(items: Sequence[object]) -> list[tuple[str, str, str, tuple[tuple[str, str], ...]]]:
        out = []
        for it in items:
            menu = str(getattr(it, "menu", ""))
            command = str(getattr(it, "command", "") or "")
            target = str(getattr(it, "target", "") or "")
            args = tuple(sorted(dict(getattr(it, "args", {})).items()))
            if menu == "/system scheduler" and dict(args).get("name", "").startswith("fabwiz-"):
                continue  # fabwiz's own lock and dead-man entries are not the configuration
            out.append((menu, command, target, args))
        return sorted(out)

    return canon(a) == canon(b)


# Attributes a `set` may change on a port carrying the API session without cutting it: STP
# costs and priorities, comments. Anything else (disabled, bridge, hw, mtu, speed...) can drop
# the link or move the port, and is refused there.
SAFE_ON_MANAGEMENT = frozenset(
    {"path-cost", "internal-path-cost", "priority", "comment", "edge", "point-to-point"}
)


def management_conflict(
    change: SwitchChange, management_ports: Sequence[str], bridge_of: Mapping[str, str]
) -> str | None:
    """Why this change would cut the wizard off its own API session, or None.

    `management_ports` are the ports the API session arrives on; `bridge_of` maps each port to
    its bridge, so that removing or disabling that bridge is caught too.
    """
    mgmt = set(management_ports)
    mgmt_bridges = {bridge_of[p] for p in mgmt if p in bridge_of}
    for cmd in change.commands:
        values = {v for _k, v in cmd.args}
        if cmd.select is not None:
            values.add(cmd.select[1])
        touched_ports = values & mgmt
        risky = cmd.verb in {"remove", "disable", "move"} or (
            cmd.verb == "set" and any(k not in SAFE_ON_MANAGEMENT for k, _v in cmd.args)
        )
        if touched_ports and risky:
            port = sorted(touched_ports)[0]
            return (
                f"`{to_cli(cmd)}` would {cmd.verb} {port}, which carries this wizard's own "
                f"RouterOS API session on {change.switch}: the session would drop mid-change."
            )
        if (
            cmd.path.rstrip("/").endswith("/interface/bridge")
            and values & mgmt_bridges
            and cmd.verb != "set"
        ):
            bridge = sorted(values & mgmt_bridges)[0]
            return (
                f"`{to_cli(cmd)}` would {cmd.verb} bridge {bridge}, which carries this wizard's "
                f"own RouterOS API session on {change.switch}."
            )
    return None


async def resolve_id(api: RouterOsApi, cmd: ApiCommand) -> str | None:
    """The `.id` of the item `cmd.select` names, looked up right before sending (ids change
    after a reboot, so none is ever kept)."""
    if cmd.select is None:
        return None
    key, value = cmd.select
    rows = await api.call(cmd.path, "print")
    for row in rows:
        if row.get(key) == value:
            return row.get(".id")
    return None


async def send(api: RouterOsApi, cmd: ApiCommand) -> None:
    args = dict(cmd.args)
    if cmd.select is not None:
        item = await resolve_id(api, cmd)
        if item is None:
            if cmd.verb == "remove":
                return  # already gone: removing is idempotent
            raise FixRefused(
                f"{cmd.path}: no item with {cmd.select[0]}={cmd.select[1]}",
                hint="the switch changed since it was probed; re-run the step",
            )
        args[".id"] = item
    await api.call(cmd.path, cmd.verb, **args)


async def take_export(
    api: RouterOsApi,
    switch: str,
    name: str,
    *,
    wait_s: float = 5.0,
    show_sensitive: bool = False,
) -> ExportStatus:
    """`/export file=NAME`, then read NAME.rsc back and verify it. Never raises for a missing or
    empty file: the status says so, and the caller refuses the change. RouterOS leaves sensitive
    values out unless `show-sensitive` is given: only when the operator asked for it."""
    file = f"{name}.rsc"
    if not _ENTRY_NAME.fullmatch(name):
        return ExportStatus(switch, file, False, error=f"export name {name!r} is not a plain name")
    try:
        extra = {"show-sensitive": ""} if show_sensitive else {}
        await api.call("/", "export", file=name, **extra)
        deadline = time.monotonic() + wait_s
        contents = ""
        size = 0
        while True:
            rows = [r for r in await api.call("/file", "print") if r.get("name") == file]
            if rows:
                size = int(rows[0].get("size") or 0)
                contents = rows[0].get("contents") or ""
                if size > cap_from_env():
                    return ExportStatus(
                        switch,
                        file,
                        False,
                        size=size,
                        error=f"{file} on {switch} is {size} bytes, more than the "
                        f"{cap_from_env()} fabwiz reads (FABWIZ_PROBE_OUTPUT_MB): it cannot be "
                        "verified whole",
                    )
                if size > 0 and not contents:
                    contents = await _read_file(api, file, size)
                if contents and not export_incomplete(contents, size):
                    break  # a file still being written is read again until whole
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
    except Exception as exc:  # transport errors arrive as many types; they become data here
        return ExportStatus(switch, file, False, error=f"export failed: {exc}")
    if not contents.strip():
        why = "missing" if not size and not contents else "empty"
        return ExportStatus(switch, file, False, size=size, error=f"{file} is {why} on {switch}")
    incomplete = export_incomplete(contents, size)
    if incomplete:
        return ExportStatus(
            switch, file, False, size=size, error=f"{file} on {switch} is incomplete: {incomplete}"
        )
    digest = hashlib.sha256(contents.encode()).hexdigest()
    return ExportStatus(switch, file, True, size=len(contents), sha256=digest, contents=contents)


def export_incomplete(contents: str, size: int) -> str | None:
    """Why an export read back is not a whole RouterOS export, or None: its size is what the
    switch reported, it starts with RouterOS' header, it ends at the end of a line (not inside
    a `\\` continuation), and it parses."""
    from wizard.errors import ParseError
    from wizard.parsers.routeros import parse_export

    got = len(contents.encode("utf-8"))
    if size and got != size:
        return f"{got} bytes read, the switch reports {size}"
    first = contents.lstrip().splitlines()[0] if contents.strip() else ""
    if not (first.startswith("#") and " by RouterOS " in first):
        return "it does not start with RouterOS' `# <date> by RouterOS <version>` header"
    if not contents.endswith("\n") or contents.rstrip("\n").endswith("\\"):
        return "it stops in the middle of a line"
    try:
        parse_export(contents)
    except ParseError as exc:
        return f"it does not parse ({exc.message})"
    return None


async def _read_file(api: RouterOsApi, file: str, size: int) -> str:
    chunks: list[str] = []
    offset = 0
    while offset < min(size, cap_from_env()):
        rows = await api.call(
            "/file", "read", file=file, offset=str(offset), **{"chunk-size": "4096"}
        )
        data = "".join(r.get("data", "") for r in rows)
        if not data:
            break
        chunks.append(data)
        offset += len(data.encode())
    return "".join(chunks)


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def parse_switch_clock(date: str, time_text: str) -> tuple[dt.datetime, bool] | None:
    """The switch's `/system/clock` date and time, in either format RouterOS prints: ISO
    `2026-12-01` (7.10+) or the older `dec/01/2026`. Also says whether it is the old format
    (the scheduler then wants its start-date written the same way)."""
    date, time_text = date.strip().lower(), time_text.strip()
    m = re.fullmatch(r"(\d{2}):(\d{2}):(\d{2})", time_text)
    if not m:
        return None
    hh, mm, ss = (int(g) for g in m.groups())
    iso = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", date)
    old = re.fullmatch(r"([a-z]{3})/(\d{1,2})/(\d{4})", date)
    try:
        if iso:
            y, mo, d = (int(g) for g in iso.groups())
            return dt.datetime(y, mo, d, hh, mm, ss), False
        if old and old.group(1) in _MONTHS:
            y, mo, d = int(old.group(3)), _MONTHS.index(old.group(1)) + 1, int(old.group(2))
            return dt.datetime(y, mo, d, hh, mm, ss), True
    except ValueError:
        return None
    return None


def scheduler_date(when: dt.datetime, old_format: bool) -> str:
    if old_format:
        return f"{_MONTHS[when.month - 1]}/{when.day:02d}/{when.year}"
    return when.strftime("%Y-%m-%d")


async def switch_clock(api: RouterOsApi) -> tuple[dt.datetime, bool]:
    """The switch's own clock (the scheduler fires on it) and whether it prints old-style dates.
    Raises FixRefused when it cannot be read: a dead-man entry timed on another clock could
    fire at once or never."""
    try:
        rows = await api.call("/system/clock", "print")
    except Exception as exc:  # transport errors arrive as many types
        raise FixRefused(f"cannot read the switch clock: {exc}") from None
    row = rows[0] if rows else {}
    parsed = parse_switch_clock(row.get("date", ""), row.get("time", ""))
    if parsed is None:
        raise FixRefused(
            f"the switch clock reads {row.get('date')!r} {row.get('time')!r}, a format fabwiz "
            "does not know: the dead-man rollback cannot be timed",
            hint="check /system clock print on the switch",
        )
    return parsed


async def switch_now(api: RouterOsApi, fallback: Callable[[], float] = time.time) -> dt.datetime:
    """The switch's own clock (the scheduler fires on it)."""
    return (await switch_clock(api))[0]


_ENTRY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,120}")


def unwritable(change: SwitchChange) -> str | None:
    """Why a change cannot be written as RouterOS CLI text (preview and dead-man script), or
    None: a change whose rollback cannot be armed exactly is refused before anything is sent."""
    try:
        for cmd in change.commands:
            to_cli(cmd)
        rollback_script(change, "fabwiz-check")
    except FixRefused as exc:
        return f"{change.switch}: {exc.message}; nothing was changed"
    return None


def rollback_script(change: SwitchChange, name: str) -> str:
    """The dead-man script: each inverse command in its own `:do {} on-error={}` so that a line
    meeting a state it did not expect (a port already back, an item already gone) is logged and
    the next line still runs, and the removal of its own scheduler entry always runs last.
    Running it twice leaves the switch as running it once."""
    if not _ENTRY_NAME.fullmatch(name):
        raise FixRefused(f"rollback entry name {name!r} is not a plain RouterOS name")
    lines = [f"# fabwiz dead-man rollback {name}", f':log warning "fabwiz rollback {name} ran"']
    for index, cmd in enumerate(change.rollback, 1):
        failed = quote(f"fabwiz rollback {name}: step {index} failed, state left as found")
        lines.append(f":do {{ {to_cli(cmd)} }} on-error={{ :log warning {failed} }}")
    lines.append(f':do {{ /system scheduler remove [find name="{name}"] }} on-error={{ }}')
    return "\n".join(lines)


async def arm_switch_rollback(
    api: RouterOsApi, change: SwitchChange, name: str, window_s: float
) -> str:
    """Arm the dead-man rollback; returns the script it holds."""
    return (await arm_switch_rollback_at(api, change, name, window_s))[0]


async def arm_switch_rollback_at(
    api: RouterOsApi, change: SwitchChange, name: str, window_s: float
) -> tuple[str, dt.datetime]:
    """Arm the dead-man rollback on the switch's clock; returns the script and when it fires
    (switch time)."""
    script = rollback_script(change, name)
    now, old_format = await switch_clock(api)
    when = now + dt.timedelta(seconds=window_s)
    await api.call(
        "/system/scheduler",
        "add",
        name=name,
        **{
            "start-date": scheduler_date(when, old_format),
            "start-time": when.strftime("%H:%M:%S"),
            "interval": "0s",
            "on-event": script,
            "comment": "fabwiz dead-man rollback: removed when the fix is verified",
        },
    )
    return script, when


async def disarm_switch_rollback(api: RouterOsApi, name: str) -> bool:
    rows = [r for r in await api.call("/system/scheduler", "print") if r.get("name") == name]
    for row in rows:
        await api.call("/system/scheduler", "remove", **{".id": row[".id"]})
    return bool(rows)


async def apply_switch_change(api: RouterOsApi, change: SwitchChange) -> None:
    for cmd in change.commands:
        await send(api, cmd)


async def roll_back_switch(api: RouterOsApi, change: SwitchChange, name: str) -> None:
    """Run the inverse commands now (the same ones the armed entry holds), then disarm it."""
    for cmd in change.rollback:
        await send(api, cmd)
    await disarm_switch_rollback(api, name)


# --- hosts ------------------------------------------------------------------------------------

BACKUP_SUFFIX = ".fabwiz-bak"


def _q(text: str) -> str:
    return shlex.quote(text)


def host_revert_script(change: HostChange) -> str:
    steps = []
    for f in change.files:
        bak = f.path + BACKUP_SUFFIX
        # (test && cp) || rm: restore the backup, or remove a file that did not exist before
        steps.append(f"test -e {_q(bak)} && cp -p {_q(bak)} {_q(f.path)} || rm -f {_q(f.path)}")
    steps.extend(change.rollback_commands)
    return "; ".join(steps)


async def backup_and_write(
    runner: HostRunner,
    change: HostChange,
    unit: str,
    window_s: float,
    backed_up: list[HostChange] | None = None,
) -> str:
    """Back up, arm the timed revert, write the files and run the commands. Returns the revert
    script. Raises FixRefused when a step fails (nothing after it is run). `backed_up` gets the
    change once its backups exist: only then may a revert run (it restores from them)."""
    for f in change.files:
        path, bak = _q(f.path), _q(f.path + BACKUP_SUFFIX)
        res = await runner.run(
            change.node,
            f"sudo -n rm -f {bak}; test ! -e {path} || sudo -n cp -p {path} {bak}",
        )
        _require(res, change.node, f"backing up {f.path}")
    if backed_up is not None:
        backed_up.append(change)
    script = host_revert_script(change)
    arm = f"sudo -n systemd-run --on-active={int(window_s)} --unit={_q(unit)} sh -c {_q(script)}"
    _require(await runner.run(change.node, arm), change.node, "arming the timed revert")
    for f in change.files:
        res = await runner.run(change.node, f"sudo -n tee {_q(f.path)} >/dev/null", stdin=f.content)
        _require(res, change.node, f"writing {f.path}", changed=True)
    for command in change.commands:
        res = await runner.run(change.node, command, timeout=120.0)
        _require(res, change.node, command, changed=True)
    return script


async def disarm_host_revert(runner: HostRunner, node: str, unit: str) -> None:
    await runner.run(node, f"sudo -n systemctl stop {_q(unit + '.timer')}")


async def revert_host(runner: HostRunner, change: HostChange, unit: str) -> None:
    """Restore the backups now and disarm the timed revert. Raises FixRefused when the node
    did not do it (the timed revert then stays armed and does it later)."""
    res = await runner.run(change.node, f"sudo -n sh -c {_q(host_revert_script(change))}")
    _require(res, change.node, "restoring the backups")
    await disarm_host_revert(runner, change.node, unit)


def _require(res: ProbeResult, node: str, what: str, *, changed: bool = False) -> None:
    if res.ok:
        return
    text = (res.error or res.stderr or res.stdout).strip()
    hint = None
    if "password is required" in text:
        hint = f"give the fabwiz user passwordless sudo on {node} for the fix commands"
    raise FixRefused(
        f"{node}: {what} failed: {text or f'exit {res.exit_status}'}", hint=hint, changed=changed
    )
