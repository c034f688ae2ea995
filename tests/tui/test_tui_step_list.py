"""The step list: one widget drawing every step's row. The keys and the mouse choose which step
the detail panel shows, the rows carry their status colours and the highlight, and a list taller
than its box keeps the highlighted step in view."""

from __future__ import annotations

from test_tui_snapshots import _app, _feed, _several_verdicts
from textual import events
from textual.widgets import Static
from tui_fakes import T0

from screens.app import FabwizApp
from screens.widgets.steps import StepList
from wizard.events import StepChanged, VerdictReached
from wizard.model import Status, Verdict


def shown(steps: StepList) -> list[str]:
    """The list's lines as drawn on screen (what the operator reads)."""
    return [steps.render_line(y).text.rstrip() for y in range(steps.size.height)]


def backgrounds(steps: StepList, y: int) -> set[str]:
    return {
        seg.style.bgcolor.name
        for seg in steps.render_line(y)
        if seg.style is not None and seg.style.bgcolor is not None
    }


async def test_keys_move_the_highlight_and_the_detail_follows() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        steps = app.session.query_one(StepList)
        ids = steps.step_ids
        assert steps.has_focus and steps.index == 0 and app.session.viewed == ids[0]
        await pilot.press("down", "down")
        await pilot.pause()
        assert steps.index == 2 and app.session.viewed == ids[2]
        title = app.session.query_one("#step-title").render()
        assert str(title).startswith(app.view.steps[ids[2]].info.title)
        await pilot.press("up")
        await pilot.pause()
        assert steps.index == 1 and app.session.viewed == ids[1]
        await pilot.press("up", "up")  # at the top it stays there
        await pilot.pause()
        assert steps.index == 0 and app.session.viewed == ids[0]
        for _ in range(len(ids) + 2):
            await pilot.press("down")
        await pilot.pause()
        assert steps.index == len(ids) - 1 and app.session.viewed == ids[-1]
        # The highlight moved; the engine's step did not (only the action intents move it).
        assert app.view.current is None


async def test_a_click_on_a_row_shows_that_step() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        steps = app.session.query_one(StepList)
        x, y = steps.offset_of("qos")
        assert shown(steps)[y].lstrip().startswith("○ 5 ")
        assert await pilot.click(StepList, offset=(x, y))
        await pilot.pause()
        assert steps.index == steps.step_ids.index("qos") and app.session.viewed == "qos"
        # a click below the last row selects nothing
        assert await pilot.click(StepList, offset=(1, steps.size.height - 1))
        await pilot.pause()
        assert app.session.viewed == "qos"


async def test_rows_carry_their_status_the_current_step_and_the_highlight() -> None:
    app = _app()
    async with app.run_test(size=(100, 30)) as pilot:
        await _feed(pilot)
        steps = app.session.query_one(StepList)
        lines = shown(steps)
        assert [line.strip() for line in lines[:8]] == [
            "✔ 1 Preflight",
            "✔ 2 Direct cable",
            "✔ 3 Drain",
            "✘ 4 Switch offload",
            "○ 5 QoS and PFC",
            "○ 6 Addressing and MTU",
            "○ 7 Both halves",
            "○ 8 Persist and prove",
        ]
        rows = {row.step_id: row for row in steps.rows()}
        assert rows["offload"].status == "fail" and rows["offload"].current
        assert rows["preflight"].status == "pass" and not rows["preflight"].current
        # The engine is on offload: the highlight follows it, in the cursor's colour.
        assert steps.index == 3
        surface = steps.background_colors[1]
        cursor = surface + steps.get_component_styles("step-list--highlight").background
        assert backgrounds(steps, 3) == {cursor.rich_color.name}
        assert cursor.rich_color.name not in backgrounds(steps, 0)
        # Status colours: a pass in the theme's success colour, a fail bold in its error one,
        # the current step's title underlined.
        success = app.theme_variables["success"].lower()
        error = app.theme_variables["error"].lower()
        segments = [s for s in steps.render_line(0) if s.text.strip()]
        assert {s.style.color.triplet.hex for s in segments} == {success}
        title = next(s for s in steps.render_line(3) if "Switch offload" in s.text)
        assert title.style.color.triplet.hex == error
        assert title.style.bold and title.style.underline
        # Out of focus, the highlight stays, in the blurred cursor's colour.
        app.session.query_one("#verdict").focus()
        await pilot.pause()
        surface = steps.background_colors[1]
        blurred = surface + steps.get_component_styles("step-list--highlight").background
        assert blurred != cursor
        assert backgrounds(steps, 3) == {blurred.rich_color.name}


async def test_a_list_taller_than_its_box_keeps_the_highlight_in_view() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        # Every step not checked, for a long reason: two or three lines a row.
        reason = "could not see spark1, spark2, spark3 and spark4"
        for i, step in enumerate(app.view.steps):
            app.ports.emit(StepChanged(step=step, phase="probing", at=T0 + 3 * i))
            app.ports.emit(
                VerdictReached(
                    step=step,
                    verdict=Verdict(
                        f"{step}.seen", Status.UNKNOWN, f"not checked ({reason})", targets=("x",)
                    ),
                    at=T0 + 3 * i + 1,
                )
            )
            app.ports.emit(StepChanged(step=step, phase="done", at=T0 + 3 * i + 2))
        await pilot.pause(0.2)
        app.session.update_view({"steps"})
        await pilot.pause()
        steps = app.session.query_one(StepList)
        steps.focus()
        height = steps.size.height
        total = sum(1 for _ in steps._draw())
        assert total > height, (total, height)  # the rows need more lines than the box has
        steps.index = 0
        await pilot.pause()
        assert shown(steps)[0].lstrip().startswith("? 1 Preflight")
        for _ in range(len(steps.step_ids) - 1):
            await pilot.press("down")
        await pilot.pause()
        last = steps.rows()[-1]
        assert any(line.lstrip().startswith(f"? {last.number} ") for line in shown(steps))
        assert not any(line.lstrip().startswith("? 1 ") for line in shown(steps))
        # the wheel scrolls back up without moving the highlight
        for _ in range(total):
            steps.post_message(events.MouseScrollUp(steps, 1, 1, 0, -1, 0, False, False, False))
        await pilot.pause()
        assert shown(steps)[0].lstrip().startswith("? 1 Preflight")
        assert steps.index == len(steps.step_ids) - 1


async def test_the_row_under_the_mouse_is_lit() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        steps = app.session.query_one(StepList)
        plain = backgrounds(steps, 2)
        await pilot.hover(StepList, offset=steps.offset_of(steps.step_ids[2]))
        await pilot.pause()
        hover = backgrounds(steps, 2)
        assert hover and hover != plain
        assert backgrounds(steps, 4) == plain  # only that row


async def test_the_more_cue_follows_the_verdict_list_once_it_is_laid_out() -> None:
    """Keys pressed back to back (↓↓ in one read) can show a step whose verdict text is laid
    out a refresh after the cue was placed: the cue is placed again when the text's height
    changes, not only when the detail shows a new text."""
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _several_verdicts(pilot)
        more = app.session.query_one("#verdict-more")
        assert more.display and "3 more line(s)" in str(more.render())
        # the text changes height with no call from `show` (as when its layout comes late)
        app.session.query_one("#verdict-text", Static).update("not run yet")
        for _ in range(3):
            await pilot.pause()
        assert not more.display and str(more.render()) == ""
