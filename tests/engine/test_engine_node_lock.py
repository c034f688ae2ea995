"""The node lock is an exclusive `mkdir`: of two sessions racing for one node exactly one wins,
the other is told who holds it and since when; a stale lock breaks only when asked; a holder
that refreshes keeps it. The lab's `mkdir` refuses an existing path as coreutils does."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rich.console import Console

from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard import locks
from wizard.errors import FixRefused
from wizard.lab import Lab

pytestmark = pytest.mark.lab

NODE = "spark2"
T0 = dt.datetime(2026, 12, 1, 12, 0, 0)


class _Ssh:
    """The fabric's SSH `run` as a `fixes.HostRunner`."""

    def __init__(self, fabric: Any) -> None:
        self.fabric = fabric

    async def run(
        self, node: str, command: str, *, stdin: str | None = None, timeout: float = 30.0
    ) -> Any:
        return await self.fabric.run(node, command, stdin=stdin, timeout=timeout)


@pytest.fixture
async def rig(tmp_path: Any) -> AsyncIterator[tuple[Lab, _Ssh]]:
    async with Lab("fault-host-mtu", time_scale=100.0) as lab:
        wiring = await open_wizard(
            operator=TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False),
            sinks=[],
            lab_object=lab,
            session_dir=tmp_path / "session",
            fsync=False,
        )
        try:
            yield lab, _Ssh(wiring.fabric)
        finally:
            await wiring.fabric.close()
            wiring.log.close()


async def test_lab_mkdir_refuses_an_existing_path_like_coreutils(rig: Any) -> None:
    lab, ssh = rig
    first = await ssh.run(NODE, "sudo -n mkdir /run/lock/x.lock")
    assert first.ok and first.stderr == ""
    again = await ssh.run(NODE, "sudo -n mkdir /run/lock/x.lock")
    assert again.exit_status == 1
    assert again.stderr == "mkdir: cannot create directory '/run/lock/x.lock': File exists\n"
    assert (await ssh.run(NODE, "mkdir -p /run/lock/x.lock")).ok  # -p: an existing dir is fine
    file_there = await ssh.run(NODE, "mkdir /etc/hostname")
    assert file_there.exit_status == 1 and "File exists" in file_there.stderr
    no_root = await ssh.run(NODE, "mkdir /etc/fabwiz.d")
    assert no_root.exit_status == 1
    assert no_root.stderr == "mkdir: cannot create directory '/etc/fabwiz.d': Permission denied\n"
    not_empty = await ssh.run(NODE, "sudo -n tee /run/lock/x.lock/f >/dev/null", stdin="1\n")
    assert not_empty.ok
    rmdir = await ssh.run(NODE, "rmdir /run/lock/x.lock")
    assert rmdir.exit_status == 1 and "Directory not empty" in rmdir.stderr
    plain_rm = await ssh.run(NODE, "rm /run/lock/x.lock")
    assert plain_rm.exit_status == 1 and "Is a directory" in plain_rm.stderr
    assert (await ssh.run(NODE, "rm -rf /run/lock/x.lock")).ok
    node = lab.world.nodes[NODE]
    assert "/run/lock/x.lock" not in node.dirs and "/run/lock/x.lock/f" not in node.files
    assert (await ssh.run(NODE, "mkdir /run/lock/x.lock")).ok  # free again


async def test_two_sessions_racing_for_a_node_exactly_one_wins(rig: Any) -> None:
    lab, ssh = rig
    outcomes = await asyncio.gather(
        *(
            locks.lock_node(ssh, NODE, f"session-{i}", 600, now=T0, operator=f"op{i}@desk")
            for i in range(4)
        ),
        return_exceptions=True,
    )
    winners = [i for i, o in enumerate(outcomes) if o is None]
    assert len(winners) == 1, outcomes
    won = winners[0]
    holder = lab.world.nodes[NODE].files[locks.NODE_HOLDER]
    assert f"session=session-{won} operator=op{won}@desk since=2026-12-01T12:00:00" in holder
    for i, o in enumerate(outcomes):
        if i == won:
            continue
        assert isinstance(o, locks.LockHeld), o
        assert f"session session-{won} of op{won}@desk, since 2026-12-01 12:00:00" in o.message
        assert NODE in o.message


async def test_a_stale_node_lock_breaks_only_with_the_flag(rig: Any) -> None:
    lab, ssh = rig
    await locks.lock_node(ssh, NODE, "dead-session", 60, now=T0, operator="bob@desk")
    later = T0 + dt.timedelta(seconds=120)
    with pytest.raises(locks.LockHeld) as held:
        await locks.lock_node(ssh, NODE, "new-session", 600, now=later)
    assert "expired at 2026-12-01 12:01:00" in held.value.message
    assert held.value.hint is not None and "--break-stale-lock" in held.value.hint
    assert "session=dead-session" in lab.world.nodes[NODE].files[locks.NODE_HOLDER]
    await locks.lock_node(ssh, NODE, "new-session", 600, now=later, break_stale=True)
    assert "session=new-session" in lab.world.nodes[NODE].files[locks.NODE_HOLDER]
    # a lock that is not stale is never broken, flag or not
    with pytest.raises(locks.LockHeld) as fresh:
        await locks.lock_node(ssh, NODE, "third", 600, now=later, break_stale=True)
    assert "being changed by session new-session" in fresh.value.message


async def test_a_holder_that_refreshes_keeps_its_lock(rig: Any) -> None:
    lab, ssh = rig
    await locks.lock_node(ssh, NODE, "long-fix", 60, now=T0, operator="carol@desk")
    await locks.refresh_node(ssh, NODE, "long-fix", 60, now=T0 + dt.timedelta(seconds=50))
    past_first_expiry = T0 + dt.timedelta(seconds=90)
    with pytest.raises(locks.LockHeld) as held:
        await locks.lock_node(ssh, NODE, "other", 600, now=past_first_expiry, break_stale=True)
    assert "until 2026-12-01 12:01:50" in held.value.message
    text = lab.world.nodes[NODE].files[locks.NODE_HOLDER]
    assert "session=long-fix" in text and "expires=2026-12-01T12:01:50" in text
    # taking it again as the same session refreshes too
    await locks.lock_node(ssh, NODE, "long-fix", 600, now=past_first_expiry)
    assert "expires=2026-12-01T12:11:30" in lab.world.nodes[NODE].files[locks.NODE_HOLDER]
    # a holder whose lock was broken is told so when it refreshes
    await locks.unlock_node(ssh, NODE, "long-fix")
    assert locks.NODE_LOCK not in lab.world.nodes[NODE].dirs
    await locks.lock_node(ssh, NODE, "usurper", 600, now=past_first_expiry)
    with pytest.raises(locks.LockHeld):
        await locks.refresh_node(ssh, NODE, "long-fix", 60, now=past_first_expiry)


async def test_a_node_that_cannot_make_the_lock_refuses_with_the_reason(rig: Any) -> None:
    lab, ssh = rig
    lab.world.nodes[NODE].files[locks.NODE_LOCK] = "something else\n"  # a plain file there
    with pytest.raises(FixRefused) as refused:
        await locks.lock_node(ssh, NODE, "s", 600, now=T0)
    assert NODE in refused.value.message
