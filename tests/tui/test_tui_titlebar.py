"""The title bar: the app's title and sub-title as Textual's Header places them, plain text
(an inventory path is never markup), following sub-title changes; the icon opens the palette."""

from __future__ import annotations

from textual.command import CommandPalette

from screens.app import FabwizApp
from screens.widgets.titlebar import ICON_CELLS, TitleBar


async def test_the_title_bar_shows_plain_titles_and_follows_them() -> None:
    app = FabwizApp(None, sub_title="[bold]lab[/] inventory.yaml")
    async with app.run_test(size=(80, 24)) as pilot:
        bar = app.screen.query_one(TitleBar)
        line = bar.render()
        assert line.cell_len == 80
        assert line.plain.startswith(" ≋" + " " * (ICON_CELLS - 2))
        title = "fabwiz — [bold]lab[/] inventory.yaml"  # the markup as typed, not applied
        assert line.plain.strip(" ").endswith(title)
        # centred in what the icon and the clock's room leave, as the Header centres it
        start = line.plain.index("fabwiz")
        assert start == ICON_CELLS + (80 - ICON_CELLS - 10 - len(title)) // 2
        app.sub_title = "healthy"
        await pilot.pause()
        assert bar.render().plain.strip(" ").endswith("fabwiz — healthy")
        app.sub_title = "inv\x1b]0;pwned\x07\n.yaml"  # a path with an escape and a newline
        await pilot.pause()
        plain = bar.render().plain
        assert "\x1b" not in plain and "\x07" not in plain and "\n" not in plain
        assert "fabwiz — inv" in plain and ".yaml" in plain
        app.sub_title = "x" * 200  # longer than the line: cut with an ellipsis, one line
        await pilot.pause()
        line = bar.render()
        assert line.cell_len == 80 and "…" in line.plain and "\n" not in line.plain
        await pilot.click(TitleBar, offset=(1, 0))
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
