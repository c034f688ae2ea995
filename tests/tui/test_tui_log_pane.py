"""The log pane shows every line written to it, scrolled to the newest, and a write repaints the
pane and its scroll bars only: no thread, no layout of the screen, no line rendered twice."""

from __future__ import annotations

from textual.geometry import Size
from textual.widgets import Log

from screens.app import FabwizApp
from screens.widgets.logpane import LogPane
from screens.widgets.view_model import SessionView, StepInfo
from wizard.events import ProbeAnswered
from wizard.model import ProbeResult

T0 = 1_780_000_000.0


async def test_written_lines_show_at_the_end_with_the_scroll_bars_updated_in_place() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        log = app.session.query_one("#log", LogPane)
        assert isinstance(log, Log)  # what other code queries it as
        lines = [f"{i:03d} spark{i % 32 + 1}: ethtool -S" for i in range(300)]
        log.write_lines(lines)
        # nothing asks the screen for a layout, nor starts a worker to measure the lines
        assert not log._layout_required
        assert list(app.workers) == []
        assert log.virtual_size == Size(len("010 spark11: ethtool -S"), 300)
        await pilot.pause()
        assert log.line_count == 300 and log.lines[-1] == "299 spark12: ethtool -S"
        assert log.scroll_offset.y == log.max_scroll_y > 0  # the newest lines show
        assert log.vertical_scrollbar.window_virtual_size == 300
        log.write_lines(["a longer line than the others: spark7: ip -j link show"])
        assert log.virtual_size == Size(len(log.lines[-1]), 301)
        await pilot.pause()
        assert log.scroll_offset.y == log.max_scroll_y
        assert log.vertical_scrollbar.window_virtual_size == 301


async def test_a_written_line_is_rendered_once_until_the_style_changes() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        log = app.session.query_one("#log", LogPane)
        log.write_lines(["spark1: ibdev2netdev", "spark2: ibdev2netdev"])
        await pilot.pause()
        style = log.rich_style
        first = log._render_line_strip(1, style)
        assert log._render_line_strip(1, style) is first  # kept
        assert first.text == "spark2: ibdev2netdev"
        log.notify_style_update()  # a theme or focus change
        assert log._render_line_strip(1, style) is not first


async def test_the_pane_keeps_its_last_lines_when_it_is_full() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        log = app.session.query_one("#log", LogPane)
        log.max_lines = 100
        log.write_lines([f"line {i}" for i in range(60)])
        log.write_lines([f"line {i}" for i in range(60, 130)])
        await pilot.pause()
        assert log.line_count == 100
        assert (log.lines[0], log.lines[-1]) == ("line 30", "line 129")
        assert log.virtual_size.height == 100
        rendered = log._render_line_strip(0, log.rich_style)
        assert rendered.text == "line 30"


def test_only_a_steps_first_probe_answer_changes_its_detail() -> None:
    view = SessionView.new([StepInfo("preflight", "Preflight", "", "", "")])

    def answered(i: int, error: str | None = None) -> ProbeAnswered:
        res = ProbeResult(target="spark1", kind="ssh", command=f"ethtool e{i}", error=error)
        return ProbeAnswered(step="preflight", probe=f"ethtool:e{i}", result=res, at=T0)

    # the first answer makes the step's raw output available (the detail's `x` button)
    assert view.apply(answered(0)) == {"log", "detail"}
    # later ones change nothing the detail shows: the log pane takes them
    assert view.apply(answered(1)) == {"log"}
    assert view.apply(answered(2, error="timed out")) == {"log"}
    assert len(view.steps["preflight"].probes) == 3
    assert view.log[-1][1:] == ("warn", "spark1: ethtool e2: timed out")
