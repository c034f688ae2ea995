"""What a repaint costs: a widget's classes change in one restyle or none, the screen starts
with its breakpoint classes, and a detail shown again with nothing new updates no widget."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from screens.app import FabwizApp
from screens.session_screen import SessionScreen, breakpoint_classes
from screens.widgets.classes import set_classes_of
from screens.widgets.detail import StepDetail
from wizard.errors import FabwizError

FAMILY = ("-pass", "-warn", "-fail")


def test_breakpoint_classes_are_textuals_widest_fitting_per_axis() -> None:
    h, v = SessionScreen.HORIZONTAL_BREAKPOINTS, SessionScreen.VERTICAL_BREAKPOINTS
    assert breakpoint_classes((120, 40), h, v) == ["-wide", "-tall"]
    assert breakpoint_classes((80, 24), h, v) == ["-narrow", "-short"]
    assert breakpoint_classes((110, 34), h, v) == ["-wide", "-tall"]  # the edges count
    assert breakpoint_classes((109, 33), h, v) == ["-narrow", "-short"]


async def test_the_screen_starts_with_the_classes_textual_gives_it() -> None:
    for size, expected in (((80, 24), {"-narrow", "-short"}), ((160, 48), {"-wide", "-tall"})):
        app = FabwizApp(None)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, SessionScreen)
            assert expected | {"-show-log"} <= set(screen.classes)
            assert not {"-narrow", "-wide", "-short", "-tall"} - expected & set(screen.classes)


async def test_a_class_change_is_one_restyle_and_no_change_is_none() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        widget = app.screen.query_one("#conclusion", Static)
        restyled: list[Any] = []
        real = app.update_styles

        def counting(node: Any, animate: bool = True) -> None:
            restyled.append(node)
            real(node, animate)

        app.update_styles = counting  # type: ignore[method-assign]
        assert set_classes_of(widget, ("-warn",), FAMILY)
        assert set_classes_of(widget, ("-fail",), FAMILY)  # -warn out, -fail in: one restyle
        assert not set_classes_of(widget, ("-fail",), FAMILY)
        assert restyled == [widget, widget]
        assert widget.has_class("-fail") and not widget.has_class("-warn")
        # a widget not mounted yet only takes the classes (it is styled when mounted)
        loose = Static("")
        assert set_classes_of(loose, ("-pass",), FAMILY)
        assert loose.has_class("-pass") and restyled == [widget, widget]


async def test_a_detail_shown_again_with_nothing_new_updates_no_widget() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        detail = screen.query_one(StepDetail)
        updated: list[str] = []
        for static in detail.query(Static):
            real = static.update

            def update(content: Any = "", *, _real: Any = real, _id: Any = static.id) -> None:
                updated.append(str(_id))
                _real(content)

            static.update = update  # type: ignore[method-assign]
        screen.update_view({"detail"})
        assert updated == []  # what it shows is what it showed
        screen.hidden_question = "fix: MTU 9000 on spark1"
        screen.update_view({"prompt"})
        assert updated == ["prompt"]
        assert "Still open: fix: MTU 9000 on spark1" in str(detail.query_one("#prompt").render())


async def test_the_footer_is_rebuilt_only_when_its_keys_change() -> None:
    from textual.widgets._footer import FooterKey

    from screens.widgets.footer import KeysFooter

    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.session
        footer = screen.query_one(KeysFooter)
        # focus, the screen stack and the app's focus each signal the bindings at start-up
        assert footer.rebuilds == 1

        def keys() -> list[str]:
            return [k.key for k in footer.query(FooterKey)]

        assert "q" in keys() and "o" not in keys()
        screen.refresh_bindings()  # nothing changed
        await pilot.pause()
        assert footer.rebuilds == 1
        screen.hidden_question = "fix: offload"  # now `o` has something to open
        screen.refresh_bindings()
        await pilot.pause()
        assert footer.rebuilds == 2 and "o" in keys()
        screen.hidden_question = None
        screen.refresh_bindings()
        await pilot.pause()
        assert footer.rebuilds == 3 and "o" not in keys()


async def test_the_wizard_collects_young_garbage_every_10000_allocations_not_700() -> None:
    import gc

    from screens.app import YOUNG_GC_THRESHOLD

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, before[1], before[2])
        started: list[bool] = []

        async def factory(ports: Any, stack: Any) -> Any:
            started.append(True)
            raise FabwizError("no engine in this test")

        app = FabwizApp(factory)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.pause()
            assert started == [True]
            assert gc.get_threshold() == (YOUNG_GC_THRESHOLD, before[1], before[2])
            assert gc.get_freeze_count() > 0  # what start-up built is out of the full passes
    finally:
        gc.set_threshold(*before)
