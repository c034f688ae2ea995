"""Disarm is part of the fix: a lost reply is retried on a fresh connection, the outcome is what
the switch shows, a verified fix is never silently undone and `--json` lists every fix with its
final state. Also: the dead-man entry is timed on the switch's clock in its own date format."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.rel_support import walk
from wizard import deadman, fixes
from wizard.events import FixRolledBack, FixVerified, Note, RollbackArmed, RollbackDisarmed
from wizard.lab import Lab
from wizard.lab.faulthooks import FaultHooks

pytestmark = pytest.mark.lab

SCENARIO = "fault-switch-offload-split-cage"
STEPS = ["preflight", "offload"]
WINDOW_PAST = 3000.0 + 60.0  # the lab's dead-man window at time scale 100, and a minute


def _fix(result: Any) -> dict[str, Any]:
    fixes_json = result.to_json()["fixes"]
    found = [f for f in fixes_json if f["fault"] == "switch.offload-split-cage"]
    assert len(found) == 1, fixes_json
    return dict(found[0])


async def test_lost_disarm_reply_is_retried_and_the_fix_stays(tmp_path: Path) -> None:
    async with Lab(SCENARIO, time_scale=100.0) as lab:
        hooks = FaultHooks(lab)
        hooks.api("crs804", "drop-after", match=r"/system/scheduler/remove")
        try:
            w = await walk(lab, tmp_path, STEPS, traffic=False)
        finally:
            await hooks.stop()
        assert hooks.count("drop-after") == 1  # the removal landed, its reply was lost
        assert w.result.aborted is None
        assert [e for e in w.of(FixVerified) if e.ok]
        disarmed = w.of(RollbackDisarmed)
        armed = w.of(RollbackArmed)
        assert [d.name for d in disarmed] == [a.name for a in armed]
        assert any("retrying on a fresh connection" in n.text for n in w.of(Note))
        fix = _fix(w.result)
        assert fix["verified"] and not fix["rolled_back"] and fix["state"] == "verified"
        sw: Any = lab.world.switches["crs804"]
        assert not [r for r in sw.tables["scheduler"] if r["name"].startswith("fabwiz-rb-")]
        # nothing fires later: the fix is still there after the window
        lab.world.set_clock(lab.world.now() + WINDOW_PAST)
        sw.tick()
        assert sw.hw_offloaded_bridge() == "roce-br"


async def test_unreachable_at_disarm_is_recorded_as_still_armed(tmp_path: Path) -> None:
    async with Lab(SCENARIO, time_scale=100.0) as lab:
        hooks = FaultHooks(lab)
        hooks.api("crs804", "drop-before", match=r"/system/scheduler/remove", times=0)

        def short_budget(wiring: Any) -> None:
            wiring.engine.disarm_budget_s = 1.0

        try:
            w = await walk(lab, tmp_path, STEPS, traffic=False, tweak=short_budget)
        finally:
            await hooks.stop()
        assert w.result.aborted is None
        fix = _fix(w.result)
        assert fix["applied"] and fix["state"] == "rollback-armed"
        assert "Rollback still armed" in w.text and "scheduler remove" in w.text
        assert not w.of(RollbackDisarmed)


async def test_rollback_fired_before_disarm_is_said_and_compared(tmp_path: Path) -> None:
    async with Lab(SCENARIO, time_scale=100.0) as lab:
        sw: Any = lab.world.switches["crs804"]

        def window_runs_out(wiring: Any) -> None:
            verify = wiring.engine._verify

            async def slow_verify(plan: Any) -> tuple[bool, str]:
                ok, detail = await verify(plan)
                lab.world.set_clock(lab.world.now() + WINDOW_PAST)  # the operator was away
                sw.tick()
                return ok, detail

            wiring.engine._verify = slow_verify

        w = await walk(lab, tmp_path, STEPS, traffic=False, tweak=window_runs_out)
        fix = _fix(w.result)
        assert fix["state"] == "undone-by-rollback" and fix["rolled_back"]
        rolled = w.of(FixRolledBack)
        assert (
            rolled and rolled[-1].restored is True and "before it was disarmed" in rolled[-1].reason
        )
        assert any("equals the pre-fix export" in n.text for n in w.of(Note))
        assert sw.hw_offloaded_bridge() != "roce-br"  # the switch really is back


@pytest.mark.parametrize(
    ("date", "old"),
    [("2026-12-01", False), ("dec/01/2026", True), ("jan/02/1970", True)],
)
def test_switch_clock_formats(date: str, old: bool) -> None:
    parsed = fixes.parse_switch_clock(date, "23:59:30")
    assert parsed is not None
    when, is_old = parsed
    assert is_old is old
    later = when + dt.timedelta(seconds=300)
    text = fixes.scheduler_date(later, is_old)
    again = fixes.parse_switch_clock(text, later.strftime("%H:%M:%S"))
    assert again is not None and again[0] == later
    assert fixes.parse_switch_clock("13/45/2026", "00:00:00") is None


async def test_old_date_switch_gets_an_old_date_entry_on_its_own_clock() -> None:
    async with Lab(SCENARIO, time_scale=1.0) as lab:
        sw: Any = lab.world.switches["crs804"]
        sw.old_dates = True
        lab.world.set_clock(dt.datetime(1970, 1, 2, 23, 58, tzinfo=dt.UTC).timestamp())
        from wizard.fabric import ApiPort
        from wizard.transports.routeros import RouterOsTarget, RouterOsTransport

        target = RouterOsTarget(
            "crs804", "127.0.0.1", "fabwiz", lab.switch_passwords["crs804"],
            port=lab.switch_port("crs804"),
        )  # fmt: skip
        async with RouterOsTransport(target) as transport:
            api = ApiPort(transport)
            change = fixes.SwitchChange("crs804", (), ())
            _script, when = await fixes.arm_switch_rollback_at(api, change, "fabwiz-rb-t-1", 300)
            rows = await api.call("/system/scheduler", "print")
        entry = next(r for r in rows if r["name"] == "fabwiz-rb-t-1")
        assert entry["start-date"] == "jan/03/1970" and entry["start-time"] == "00:03:00"
        assert when == dt.datetime(1970, 1, 3, 0, 3)
        lab.world.set_clock(lab.world.now() + 310)
        sw.tick()
        assert not [r for r in sw.tables["scheduler"] if r["name"] == "fabwiz-rb-t-1"]
        assert any(deadman.ran_marker("fabwiz-rb-t-1") in e["message"] for e in sw.tables["log"])


class Killed(BaseException):
    """fabwiz dying (nothing of it catches this)."""


async def test_orphaned_rollback_entry_is_found_and_settled_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console

    from flows.bisection import FLOW
    from screens.compose import open_wizard
    from screens.terminal import TerminalOperator
    from wizard.session import load_session

    real_arm = fixes.arm_switch_rollback_at

    async def arm_then_die(*args: Any, **kwargs: Any) -> Any:
        await real_arm(*args, **kwargs)
        raise Killed  # the entry is on the switch, the log never heard of it

    async with Lab(SCENARIO, time_scale=100.0) as lab:
        sw: Any = lab.world.switches["crs804"]
        monkeypatch.setattr(fixes, "arm_switch_rollback_at", arm_then_die)
        with pytest.raises(Killed):
            await walk(lab, tmp_path, STEPS, traffic=False)
        monkeypatch.setattr(fixes, "arm_switch_rollback_at", real_arm)
        orphans = [r["name"] for r in sw.tables["scheduler"] if r["name"].startswith("fabwiz-rb-")]
        assert len(orphans) == 1
        loaded = load_session(tmp_path / "session")
        assert not [e for e in loaded.events if isinstance(e, RollbackArmed)]

        events: list[Any] = []
        console = Console(file=io.StringIO(), width=160)
        wiring = await open_wizard(
            operator=TerminalOperator(console, yes=True, interactive=False),
            sinks=[events.append],
            lab_object=lab,
            resume=loaded,
            command="resume",
            fsync=False,
        )
        wiring.engine.flow = [s for s in FLOW if s.id in STEPS]
        try:
            result = await wiring.engine.run()
        finally:
            await wiring.close()
        notes = [e.text for e in events if isinstance(e, Note)]
        assert any(f"orphaned rollback entry {orphans[0]}" in n for n in notes), notes
        assert any("equals its pre-fix export" in n for n in notes if orphans[0] in n)
        assert orphans[0] not in {r["name"] for r in sw.tables["scheduler"]}
        states = [f["state"] for f in result.to_json()["fixes"]]
        assert states == ["interrupted", "verified"]
        # nothing of the dead session fires later and undoes the verified fix
        lab.world.set_clock(lab.world.now() + WINDOW_PAST)
        sw.tick()
        assert sw.hw_offloaded_bridge() == "roce-br"


async def test_a_verified_fix_undone_before_resume_is_said_and_applied_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console

    from flows.bisection import FLOW
    from screens.compose import open_wizard
    from screens.terminal import TerminalOperator
    from wizard.session import load_session

    async def die(*_a: Any, **_k: Any) -> Any:
        raise Killed  # verified, killed before the disarm

    async with Lab(SCENARIO, time_scale=100.0) as lab:
        sw: Any = lab.world.switches["crs804"]
        real = deadman.disarm_switch
        monkeypatch.setattr(deadman, "disarm_switch", die)
        with pytest.raises(Killed):
            await walk(lab, tmp_path, STEPS, traffic=False)
        monkeypatch.setattr(deadman, "disarm_switch", real)
        assert sw.hw_offloaded_bridge() == "roce-br"  # fixed...
        lab.world.set_clock(lab.world.now() + WINDOW_PAST)
        sw.tick()
        assert sw.hw_offloaded_bridge() != "roce-br"  # ...and undone by its own rollback

        events: list[Any] = []
        wiring = await open_wizard(
            operator=TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False),
            sinks=[events.append],
            lab_object=lab,
            resume=load_session(tmp_path / "session"),
            command="resume",
            fsync=False,
        )
        wiring.engine.flow = [s for s in FLOW if s.id in STEPS]
        try:
            result = await wiring.engine.run()
        finally:
            await wiring.close()
        undone = [e for e in events if isinstance(e, FixRolledBack)]
        assert undone and "before it was disarmed" in undone[0].reason
        states = [f["state"] for f in result.to_json()["fixes"]]
        assert states == ["undone-by-rollback", "verified"], states
        assert sw.hw_offloaded_bridge() == "roce-br"  # applied again, and it stays
        assert not [r for r in sw.tables["scheduler"] if r["name"].startswith("fabwiz-")]
