"""The top line: the icon, the app's title and sub-title, centred as Textual's `Header` shows them,
drawn by one widget (the `Header` is four, and each title change updates a `Static`, which lays
the screen out again). A click on the icon opens the command palette, as on the `Header`."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.widget import Widget

from wizard.safetext import clean

ICON_CELLS = 8  # the `Header`'s icon box (padding included)
RIGHT_CELLS = 10  # and the room it keeps for a clock on the right


class TitleBar(Widget):
    DEFAULT_CSS = """
    TitleBar { dock: top; width: 100%; height: 1; background: $panel; color: $foreground; }
    """

    def __init__(self, *, icon: str = "≋") -> None:
        super().__init__()
        self.icon = icon

    def on_mount(self) -> None:
        self.watch(self.app, "title", self._changed, init=False)
        self.watch(self.app, "sub_title", self._changed, init=False)

    def _changed(self, _value: str) -> None:
        self.refresh()

    def render(self) -> Text:
        # Title and sub-title are plain text (an inventory's path, a scenario's name): never
        # markup, and no escape sequence or control character reaches the terminal.
        app = self.app
        title = Text(clean(app.title), no_wrap=True, overflow="ellipsis", end="")
        if app.sub_title:
            title.append(" — ", style="dim")
            title.append(clean(app.sub_title).replace("\n", " "), style="dim")
        room = max(0, self.size.width - ICON_CELLS - RIGHT_CELLS)
        title.truncate(room, overflow="ellipsis")
        left = (room - title.cell_len) // 2
        icon = f" {self.icon}"
        line = Text(icon + " " * max(0, ICON_CELLS - cell_len(icon)) + " " * left, end="")
        line.append_text(title)
        line.append(" " * max(0, self.size.width - line.cell_len))
        return line

    async def on_click(self, event: events.Click) -> None:
        if event.x < ICON_CELLS and self.app.ENABLE_COMMAND_PALETTE:
            event.stop()
            await self.run_action("app.command_palette")
