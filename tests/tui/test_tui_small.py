"""80x24, the size promised over SSH: every verdict reachable, the explanation one key away,
whole step names, quit always in the footer, the fix preview's "N more lines" cue."""

from __future__ import annotations

from typing import Any

from test_tui_snapshots import LONG_PLAN, _app, _several_verdicts
from tui_fakes import export_of

from screens.end_screen import SessionEndModal
from screens.modals import FixConfirmModal
from screens.widgets.steps import StepList, fitting_title


def text_of(widget: Any) -> str:
    return str(getattr(widget, "renderable", "") or widget.render())


def footer_keys(app: Any) -> set[str]:
    return {k for k, b in app.screen.active_bindings.items() if b.binding.show and b.enabled}


def test_short_titles_only_when_the_full_one_does_not_fit() -> None:
    assert fitting_title("direct_connect", "Direct-connect test", 30) == "Direct-connect test"
    assert fitting_title("direct_connect", "Direct-connect test", 18) == "Direct cable"
    assert fitting_title("halves", "Both PCIe halves and NCCL", 18) == "Both halves"
    assert fitting_title("other", "Some long step title", 10) == "Some long"


async def test_80x24_every_verdict_reachable_explain_toggles_quit_shown() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _several_verdicts(pilot)
        screen = app.session
        # Whole step names (short forms where needed), none cut with an ellipsis.
        labels = {row.step_id: row.label.plain for row in app.query_one(StepList).rows()}
        assert labels["direct_connect"].endswith("Direct cable")
        assert labels["halves"].endswith("Both halves")
        assert not any("…" in label for label in labels.values()), labels
        # Five verdicts and the fix line; three fit: the cue says how many more.
        verdict = screen.query_one("#verdict")
        lines = text_of(screen.query_one("#verdict-text")).splitlines()
        assert len(lines) == 6 and lines[0].startswith("✘ FAIL    switch.offload-split-cage")
        assert verdict.scrollable_content_region.height == 3
        more = screen.query_one("#verdict-more")
        assert more.display and "3 more line(s)" in text_of(more)
        await pilot.press("v")
        assert verdict.has_focus
        for _ in range(3):
            await pilot.press("down")
        await pilot.pause()
        assert verdict.scroll_y == 3 and not more.display  # the last verdict is on screen
        await pilot.press("v")
        # The engine asks: the question replaces the explanation; e shows it, e hides it.
        explain = screen.query_one("#explain")
        assert explain.has_class("-prompting")
        assert not explain.display
        await pilot.press("e")
        await pilot.pause()
        assert explain.display and "What:" in text_of(screen.query_one("#explain-text"))
        assert screen.query_one("#actions").region.bottom <= 24  # the action bar stays
        await pilot.press("e")
        await pilot.pause()
        assert not explain.display
        assert "q" in footer_keys(app) and "e" in footer_keys(app)
        assert "u" not in footer_keys(app) and "o" not in footer_keys(app)  # nothing to show


async def test_80x24_long_fix_preview_scrolls_with_its_cue() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _several_verdicts(pilot)
        modal = FixConfirmModal(LONG_PLAN, export_of("offload", 1), rollback_window_s=300)
        app.push_screen(modal)
        await pilot.pause()
        await pilot.pause()
        more = modal.query_one("#preview-more")
        shown = modal.query_one("#preview").scrollable_content_region.height
        assert text_of(more).startswith(f"↓ {24 - shown} more line(s)")
        for _ in range(24):
            await pilot.press("down")
        await pilot.pause()
        assert not more.display  # scrolled to the last command
        assert modal.query_one("#apply").region.bottom <= 24
        assert "ctrl+q" in footer_keys(app) and "escape" in footer_keys(app)


async def test_the_end_screen_comes_back_with_u() -> None:
    from test_tui_snapshots import _end_of_session

    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _end_of_session(pilot)
        assert isinstance(app.screen, SessionEndModal)
        text = text_of(app.screen.query_one("#end-text"))
        assert "✔ fixed  switch.offload-split-cage on crs804" in text
        assert "export before the change: fabwiz-s1-offload-1.rsc" in text
        assert "? switch.qos-pfc-stall on crs804" in text
        assert "before the first fix: 9.1–9.4 (median 9.2, n=8)" in text
        assert "fabwiz report s1" in text and "fabwiz resume s1" in text
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.session and "u" in footer_keys(app)
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, SessionEndModal)
    assert app.exit_message().splitlines() == [
        "fabwiz: session s1",
        "  fabwiz report s1",
        "  fabwiz resume s1",
    ]
