"""Session channels per connection below the node's sshd MaxSessions, against the lab's sshd
(which refuses the channel past its MaxSessions at the open, as OpenSSH does)."""

from __future__ import annotations

import asyncio

import pytest

from wizard.lab import Lab
from wizard.transports.sessions import DEFAULT_MAX_SESSIONS, SessionSlots
from wizard.transports.ssh import SshTarget, SshTransport

pytestmark = pytest.mark.lab


def _transport(lab: Lab, **kw: object) -> SshTransport:
    target = SshTarget(
        "spark1",
        "127.0.0.1",
        lab.node_port("spark1"),
        "fabwiz",
        str(lab.key_path),
        str(lab.known_hosts_path),
    )
    return SshTransport([target], ssh_config=None, **kw)  # type: ignore[arg-type]


async def test_more_commands_than_max_sessions_all_run_within_it() -> None:
    """Sixteen commands at once on one node: at most MaxSessions (10) channels open, every
    command answers, one connection."""
    async with Lab("healthy-2node-direct", time_scale=100) as lab:
        async with _transport(lab) as ssh:
            results = await asyncio.gather(
                *(ssh.run("spark1", f"sleep 5; echo {i}") for i in range(16))
            )
            assert [r.stdout for r in results] == [f"{i}\n" for i in range(16)]
            assert all(r.ok for r in results)
            assert ssh.sessions("spark1").peak == DEFAULT_MAX_SESSIONS
            assert ssh.handshakes == 1
        server = lab.ssh["spark1"]
        assert server.peak_sessions == DEFAULT_MAX_SESSIONS and server.refused_sessions == 0


async def test_a_lower_max_sessions_is_learned_from_the_refusal_and_nothing_fails() -> None:
    """A hardened sshd (MaxSessions 3): the opens past 3 are refused; fabwiz comes down to 3,
    runs the refused command once a slot frees, and keeps the connection and its sessions."""
    async with Lab("healthy-2node-direct", time_scale=100) as lab:
        lab.ssh["spark1"].max_sessions = 3
        async with _transport(lab) as ssh:
            results = await asyncio.gather(
                *(ssh.run("spark1", f"sleep 5; echo {i}") for i in range(8))
            )
            assert [r.stdout for r in results] == [f"{i}\n" for i in range(8)]
            assert all(r.error is None for r in results)
            slots = ssh.sessions("spark1")
            assert slots.learned == 3 and slots.limit == 3 and slots.open == 0
            assert ssh.handshakes == 1  # a refusal is not a broken connection
            server = lab.ssh["spark1"]
            # the opens sent before the first refusal came back were refused too, once
            first = server.refused_sessions
            assert 1 <= first <= 5
            again = await asyncio.gather(*(ssh.run("spark1", "echo again") for _ in range(8)))
            assert all(r.stdout == "again\n" for r in again)
            assert server.refused_sessions == first  # learned: no refusal the second time
        assert server.peak_sessions == 3


async def test_a_stream_holds_a_slot_until_it_is_closed() -> None:
    async with Lab("healthy-2node-direct", time_scale=100) as lab:
        lab.ssh["spark1"].max_sessions = 2
        async with _transport(lab, max_sessions=2) as ssh:
            lines = ssh.stream_lines("spark1", "while true; do echo tick; sleep 1; done")
            assert await anext(lines) == "tick\n"
            assert ssh.sessions("spark1").open == 1
            r = await ssh.run("spark1", "echo beside")  # the second slot
            assert r.stdout == "beside\n"
            await lines.aclose()
            assert ssh.sessions("spark1").open == 0
        assert lab.ssh["spark1"].refused_sessions == 0


async def test_a_daemon_that_refuses_every_session_is_named() -> None:
    async with Lab("healthy-2node-direct", time_scale=100) as lab:
        lab.ssh["spark1"].max_sessions = 0
        async with _transport(lab) as ssh:
            r = await ssh.run("spark1", "hostname")
            assert r.exit_status is None
            assert r.error is not None and "sshd refused a session for `hostname`" in r.error
            assert "MaxSessions" in r.error and "sshd -T" in r.error


async def test_slots_wait_and_wake() -> None:
    slots = SessionSlots(limit=1)
    await slots.take()
    waiter = asyncio.ensure_future(slots.take())
    await asyncio.sleep(0)
    assert not waiter.done()
    slots.give()
    await asyncio.wait_for(waiter, 1)
    assert slots.open == 1 and slots.peak == 1
    assert not slots.refused()  # nothing else open: no lower limit to learn


async def test_check_perf_on_nodes_hardened_to_two_sessions_measures_every_rail() -> None:
    """Every node's sshd at MaxSessions 2: the rail tests (server, client, the counters read
    during them) wait for their slots; every rail is measured at line rate, nothing is lost."""
    from screens.commands.check import run_check
    from wizard.inventory import load_inventory

    async with Lab("healthy-4node-crs804", time_scale=50) as lab:
        for server in lab.ssh.values():
            server.max_sessions = 2
        report = await run_check(
            load_inventory(lab.inventory_path), perf=True, ssh_config=None, clock_rate=50
        )
        assert all(s.peak_sessions <= 2 for s in lab.ssh.values())
    assert report.checked and not [v for v in report.verdicts if v.is_finding]
    rails = [m for m in report.measurements if m.kind == "rail"]
    assert len(rails) == 25 and all(m.valid for m in rails)
    assert all(105 < m.value < 112 for m in rails if not m.extra.get("bidir"))
