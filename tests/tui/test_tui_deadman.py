"""The dead-man countdown in the TUI: armed by the engine's event it ticks down the seconds left
and says what happens when they run out; disarming or a rollback clears it. Pilot tests with an
injected clock (the widget's seconds are read from it, never from the test's own timing)."""

from __future__ import annotations

from typing import Any

from tui_fakes import T0

from screens.app import FabwizApp
from screens.deadman import DeadmanCountdown
from wizard.events import FixRolledBack, RollbackArmed, RollbackDisarmed, StepChanged


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _armed(name: str, target: str, *, fix_id: str = "f1", at: float = T0) -> RollbackArmed:
    return RollbackArmed(
        step="offload",
        fix_id=fix_id,
        target=target,
        name=name,
        window_s=3000.0,  # on the lab switch's clock, running 100 times faster
        wall_window_s=30.0,
        script=":log warning x",
        at=at,
    )


def _plain(widget: DeadmanCountdown) -> str:
    content: Any = widget.content
    return content.plain if hasattr(content, "plain") else str(content)


async def test_countdown_ticks_and_says_what_happens_then_clears_on_disarm() -> None:
    app = FabwizApp(None)
    clock = Clock(T0)
    async with app.run_test(size=(80, 24)) as pilot:
        countdown = app.session.query_one(DeadmanCountdown)
        countdown.clock = clock
        assert not countdown.display  # nothing armed: no line
        app.ports.emit(StepChanged(step="offload", phase="fixing", reason="fix", at=T0))
        app.ports.emit(_armed("fabwiz-rb-s1-1", "crs804"))
        await pilot.pause()
        assert countdown.display
        text = _plain(countdown)
        assert "30 s left to verify and disarm" in text
        assert "crs804 restores its pre-fix configuration by itself (fabwiz-rb-s1-1)" in text
        clock.now = T0 + 12.5
        countdown.tick()  # what the widget's one-second timer does
        assert "18 s left" in _plain(countdown)
        app.ports.emit(_armed("fabwiz-revert-s1-2", "spark2", fix_id="f2", at=T0 + 12.5))
        await pilot.pause()
        lines = _plain(countdown).splitlines()
        assert len(lines) == 2
        assert lines[0].startswith("⏱ dead-man 18 s left") and "crs804" in lines[0]
        assert "30 s left" in lines[1] and "spark2 restores its files from the backup" in lines[1]
        clock.now = T0 + 31.0
        countdown.tick()
        lines = _plain(countdown).splitlines()
        assert (
            lines[0].startswith("⏱ dead-man window over: crs804 restores") and "checks" in lines[0]
        )
        assert "12 s left" in lines[1]
        app.ports.emit(
            RollbackDisarmed(
                step="offload", fix_id="f2", target="spark2", name="fabwiz-revert-s1-2", at=T0
            )
        )
        app.ports.emit(
            FixRolledBack(step="offload", fix_id="f1", fault="x", reason="verified, then undone")
        )
        await pilot.pause()
        assert countdown.armed == {} and not countdown.display and _plain(countdown) == ""


async def test_a_replayed_window_long_gone_is_not_counted_down() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        countdown = app.session.query_one(DeadmanCountdown)
        countdown.clock = Clock(T0 + 3600)
        app.ports.emit(_armed("fabwiz-rb-old-1", "crs804"))
        await pilot.pause()
        assert countdown.armed == {} and not countdown.display


async def test_the_line_is_safe_against_hostile_target_names() -> None:
    app = FabwizApp(None)
    clock = Clock(T0)
    async with app.run_test(size=(120, 40)) as pilot:
        countdown = app.session.query_one(DeadmanCountdown)
        countdown.clock = clock
        app.ports.emit(_armed("fabwiz-rb-s1-1", "sw\x1b[2J[bold]x[/]"))
        await pilot.pause()
        text = _plain(countdown)
        assert "\x1b" not in text and "[bold]x[/]" in text  # shown as text, never as markup
        assert countdown.armed["fabwiz-rb-s1-1"].deadline == T0 + 30.0
