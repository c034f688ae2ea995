"""One change at a time: a switch or node locked by another session refuses the fix, saying
who and since when; a stale lock is broken only when asked; the lock is released after."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.rel_support import walk
from wizard import locks
from wizard.events import ExportTaken, FixApplied, FixRefusedEvent
from wizard.lab import Lab
from wizard.lab.routeros.menus import SchedulerMenu

pytestmark = pytest.mark.lab

STEPS = ["preflight", "offload"]


def _switch_lock(sw: Any, *, expires_in_s: float, session: str = "other-session") -> None:
    now = dt.datetime.fromtimestamp(sw.clock(), dt.UTC).replace(tzinfo=None)
    holder = locks.Holder(
        session,
        "alice@laptop",
        now.strftime("%Y-%m-%d %H:%M:%S"),
        (now + dt.timedelta(seconds=expires_in_s)).strftime("%Y-%m-%d %H:%M:%S"),
    )
    SchedulerMenu().add(
        sw,
        {
            "name": locks.SWITCH_LOCK,
            "disabled": "yes",
            "start-time": "startup",
            "on-event": ":log info fabwiz-lock",
            "comment": holder.text(),
        },
    )


async def test_switch_locked_by_another_session_refuses_the_fix(tmp_path: Path) -> None:
    async with Lab("fault-switch-offload-split-cage", time_scale=100.0) as lab:
        sw: Any = lab.world.switches["crs804"]
        _switch_lock(sw, expires_in_s=3600)
        ports_before = sorted(p["interface"] for p in sw.tables["bridge-port"])
        w = await walk(lab, tmp_path, STEPS, traffic=False)
        refused = [e for e in w.of(FixRefusedEvent) if e.fault == "switch.offload-split-cage"]
        assert refused, [e.reason for e in w.of(FixRefusedEvent)]
        reason = refused[0].reason
        assert "other-session" in reason and "alice@laptop" in reason and "since" in reason
        assert not w.of(FixApplied)
        assert not [e for e in w.of(ExportTaken) if e.purpose == "pre-fix"]
        assert sorted(p["interface"] for p in sw.tables["bridge-port"]) == ports_before
        assert [r["name"] for r in sw.tables["scheduler"]] == [locks.SWITCH_LOCK]
        fix = next(
            f for f in w.result.to_json()["fixes"] if f["fault"] == "switch.offload-split-cage"
        )
        assert fix["state"] == "refused"


async def test_stale_switch_lock_is_broken_only_when_asked(tmp_path: Path) -> None:
    async with Lab("fault-switch-offload-split-cage", time_scale=100.0) as lab:
        sw: Any = lab.world.switches["crs804"]
        _switch_lock(sw, expires_in_s=-60)
        w = await walk(lab, tmp_path / "a", STEPS, traffic=False)
        refused = [e.reason for e in w.of(FixRefusedEvent)]
        assert any("expired" in r and "--break-stale-lock" in r for r in refused), refused
        assert not w.of(FixApplied)

        def break_stale(wiring: Any) -> None:
            wiring.engine.break_stale_locks = True

        w = await walk(lab, tmp_path / "b", STEPS, traffic=False, tweak=break_stale)
        fix = next(
            f for f in w.result.to_json()["fixes"] if f["fault"] == "switch.offload-split-cage"
        )
        assert fix["state"] == "verified"
        assert sw.hw_offloaded_bridge() == "roce-br"
        # released at the end of the change: no lock and no rollback entry left
        assert not [r for r in sw.tables["scheduler"] if r["name"].startswith("fabwiz-")]


async def test_node_locked_by_another_session_refuses_the_host_fix(tmp_path: Path) -> None:
    async with Lab("fault-host-mtu", time_scale=100.0) as lab:
        node = lab.world.nodes["spark2"]
        now = dt.datetime.fromtimestamp(lab.world.now(), dt.UTC).replace(tzinfo=None)
        holder = locks.Holder(
            "other-session",
            "bob@desk",
            now.strftime("%Y-%m-%d %H:%M:%S"),
            (now + dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S"),
        )
        node.dirs.add(locks.NODE_LOCK)
        node.files[locks.NODE_HOLDER] = holder.text() + "\n"
        w = await walk(lab, tmp_path, ["preflight", "addressing"], traffic=False)
        refused = [e.reason for e in w.of(FixRefusedEvent) if e.fault == "host.mtu"]
        assert refused and "bob@desk" in refused[0] and "spark2" in refused[0], refused
        assert not [e for e in w.of(FixApplied) if e.fault == "host.mtu"]
        assert node.files[locks.NODE_HOLDER] == holder.text() + "\n"
        assert locks.NODE_LOCK in node.dirs


async def test_node_lock_is_taken_and_released_around_a_host_fix(tmp_path: Path) -> None:
    async with Lab("fault-host-mtu", time_scale=100.0) as lab:
        node = lab.world.nodes["spark2"]
        seen: list[str] = []

        def watch(wiring: Any) -> None:
            verify = wiring.engine._verify

            async def verify_and_look(plan: Any) -> tuple[bool, str]:
                seen.append(node.files.get(locks.NODE_HOLDER, ""))
                return await verify(plan)

            wiring.engine._verify = verify_and_look

        w = await walk(lab, tmp_path, ["preflight", "addressing"], traffic=False, tweak=watch)
        assert [e for e in w.of(FixApplied) if e.fault == "host.mtu"]
        fix = next(f for f in w.result.to_json()["fixes"] if f["fault"] == "host.mtu")
        assert fix["state"] == "verified"  # the timed revert was stopped, its files in place
        assert not lab.hosts["spark2"].timers
        assert seen and all("session=" in s for s in seen)
        assert locks.NODE_HOLDER not in node.files and locks.NODE_LOCK not in node.dirs


async def test_two_sessions_at_once_leave_the_switch_fixed_and_clean(tmp_path: Path) -> None:
    import asyncio

    async with Lab("fault-switch-offload-split-cage", time_scale=100.0) as lab:
        sw: Any = lab.world.switches["crs804"]
        a, b = await asyncio.gather(
            walk(lab, tmp_path / "a", STEPS, traffic=False),
            walk(lab, tmp_path / "b", STEPS, traffic=False),
        )
        states = []
        for w in (a, b):
            for f in w.result.to_json()["fixes"]:
                if f["fault"] == "switch.offload-split-cage":
                    states.append(f["state"])
        # one session fixed it; the other was refused by the lock or found nothing to fix
        assert states.count("verified") >= 1, states
        assert set(states) <= {"verified", "refused"}, states
        refusals = [e.reason for w in (a, b) for e in w.of(FixRefusedEvent)]
        assert all("being changed by session" in r for r in refusals), refusals
        assert sw.hw_offloaded_bridge() == "roce-br"
        assert not [r for r in sw.tables["scheduler"] if r["name"].startswith("fabwiz-")]
        assert not [e for e in sw.tables["log"] if "error" in e["topics"]]
