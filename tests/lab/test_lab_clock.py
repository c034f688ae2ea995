"""Lab time comes from one clock: a test injects a ManualClock and advances it, and every wait in
the lab (sleep, timeout, ping, netplan try, systemd-run timers) ends when lab time says so."""

from __future__ import annotations

import asyncio

import pytest

from wizard.lab import scenarios
from wizard.lab.clock import CallableClock, ManualClock, ScaledClock, as_clock
from wizard.lab.hostcmds import Host
from wizard.lab.perftest import Registry
from wizard.lab.world import World


def stopped(
    name: str = "healthy-2node-direct", node: str = "spark1"
) -> tuple[World, ManualClock, Host]:
    clock = ManualClock()
    w = scenarios.build_world(scenarios.load(name), clock=clock)
    return w, clock, Host(w, w.nodes[node], Registry())


async def run(host: Host, script: str, stdin: str = "") -> tuple[str, str, int]:
    out: list[str] = []
    err: list[str] = []
    rc = await host.run(script, out.append, err.append, stdin=stdin, root=True)
    return "".join(out), "".join(err), rc


async def test_a_sleep_ends_when_lab_time_reaches_it_not_before() -> None:
    w, clock, host = stopped()
    t0 = w.now()
    task = asyncio.create_task(run(host, "sleep 5; echo done"))
    await clock.advance(4.9)
    assert not task.done() and clock.waiting == 1
    await clock.advance(0.1)
    assert await task == ("done\n", "", 0)
    assert w.now() == t0 + 5.0


async def test_sleepers_wake_in_deadline_order_and_a_loop_runs_once_per_second() -> None:
    _w, clock, host = stopped()
    woke: list[str] = []

    async def nap(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(name)

    tasks = [asyncio.create_task(nap("late", 3)), asyncio.create_task(nap("early", 1))]
    loop = asyncio.create_task(run(host, "while true; do echo tick; sleep 1; done"))
    await clock.advance(0)
    await clock.advance(3.5)
    assert woke == ["early", "late"]
    assert loop.done() is False
    loop.cancel()
    await asyncio.gather(*tasks)


async def test_timeout_counts_lab_seconds() -> None:
    _w, clock, host = stopped()
    assert (await clock.run(run(host, "timeout 3 sleep 10")))[2] == 124
    assert (await clock.run(run(host, "timeout 10 sleep 2")))[2] == 0


async def test_netplan_try_reverts_after_its_timeout_in_lab_time() -> None:
    w, clock, host = stopped("fault-host-mtu", "spark2")
    node = w.nodes["spark2"]
    assert node.rails[0].mtu == 1500
    good = node.files["/etc/netplan/40-cx7.yaml"].replace("mtu: 1500", "mtu: 9000")
    await run(host, "tee /etc/netplan/40-cx7.yaml", stdin=good)
    t0 = w.now()
    task = asyncio.create_task(run(host, "netplan try --timeout 30"))
    await clock.advance(29)
    assert not task.done() and node.rails[0].mtu == 9000  # applied while it waits for ENTER
    await clock.advance(1)
    out, _e, rc = await task
    assert rc == 78 and "Reverting." in out and node.rails[0].mtu == 1500
    assert w.now() == t0 + 30


async def test_a_systemd_run_timer_fires_when_due_and_not_once_stopped() -> None:
    w, clock, host = stopped()
    node = w.nodes["spark1"]
    cmd = "systemd-run --on-active=60 --unit=revert-1 tee /run/fired"
    assert (await run(host, cmd))[2] == 0
    await clock.advance(59)
    assert "/run/fired" not in node.files
    await clock.advance(1)
    assert "/run/fired" in node.files
    assert (await run(host, "systemd-run --on-active=60 --unit=revert-2 tee /run/two"))[2] == 0
    assert (await run(host, "systemctl stop revert-2.timer"))[2] == 0
    await clock.advance(120)
    assert "/run/two" not in node.files and clock.waiting == 0


async def test_ping_takes_a_lab_second_per_probe() -> None:
    w, clock, host = stopped()
    t0 = w.now()
    out, _e, rc = await clock.run(run(host, "ping -c 4 10.9.1.2"))
    assert rc == 0 and "4 packets transmitted, 4 received" in out
    assert w.now() - t0 == 3.0


async def test_run_refuses_to_spin_forever_on_a_wait_no_lab_time_ends() -> None:
    clock = ManualClock()
    with pytest.raises(TimeoutError, match="lab clock"):
        await clock.run(asyncio.Event().wait())
    with pytest.raises(TimeoutError, match="60 s of lab time"):
        await clock.run(clock.sleep(61), limit=60)


def test_without_an_injected_clock_the_world_runs_scaled_real_time() -> None:
    w = World(time_scale=50.0)
    assert isinstance(w.clock, ScaledClock) and w.time_scale == 50.0
    assert w.wall_seconds(10.0) == 0.2
    w.set_clock(1_000.0)
    assert 1_000.0 <= w.now() < 1_010.0


def test_a_function_of_time_is_still_a_clock() -> None:
    now = [500.0]
    clock = as_clock(lambda: now[0], 4.0)
    assert isinstance(clock, CallableClock) and clock.time_scale == 4.0
    clock.set(800.0)
    now[0] += 2.0
    assert clock.now() == 802.0
    given = ManualClock(start=10.0, time_scale=7.0)
    w = World(time_scale=1.0, clock=given)
    assert w.clock is given and w.now() == 10.0 and w.time_scale == 7.0
