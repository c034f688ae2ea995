"""The bisection steps as a list with their status (one row per step, styled by class).

Moving the highlight only changes which step the detail panel shows (`StepViewRequested`); it
never moves the engine, which only the action intents do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.strip import Strip
from textual.widget import Widget

from screens.widgets.hover import HoverPart
from screens.widgets.messages import StepViewRequested
from screens.widgets.view_model import SessionView, StepView
from wizard.safetext import clean

GLYPHS = {
    "pending": "○",
    "running": "◐",
    "pass": "✔",
    "benign": "✔",
    "fixed": "✔",
    "warn": "▲",
    "fail": "✘",
    "unknown": "?",
    "skipped": "»",
}

# Titles for a narrow step list (80 columns): the full title when it fits, else this.
SHORT_TITLES = {
    "direct_connect": "Direct cable",
    "addressing": "Addressing",
    "halves": "Both halves",
    "persist": "Persist",
    "qos": "QoS and PFC",
    "offload": "Switch offload",
}


def fitting_title(step_id: str, title: str, room: int) -> str:
    """The step's title, or its short form when the full one does not fit in `room` cells."""
    if len(title) <= room:
        return title
    short = SHORT_TITLES.get(step_id)
    if short is not None and len(short) <= room:
        return short
    words = title.split()
    while len(words) > 1 and len(" ".join(words)) > room:
        words.pop()
    return " ".join(words)


@dataclass(frozen=True)
class StepRow:
    """One step as the list shows it: its status and the label's text (before wrapping)."""

    step_id: str
    number: int
    status: str
    current: bool
    label: Text  # glyph, number, title and what goes under it
    title_end: int  # the label's first line ends here: `current` underlines up to it


def step_label(view: StepView, number: int, room: int) -> tuple[Text, int]:
    """The row's text for a step in `room` cells (its title fitted, its status or phase
    after it) and where its first line ends."""
    glyph = GLYPHS.get(view.status, "·")
    prefix = f"{glyph} {number} "
    title = fitting_title(view.id, view.info.title, room - len(prefix))
    # the title is fitted to the room above; a "not checked" reason wraps rather than
    # losing the names of what could not be seen
    label = Text(prefix + title, overflow="fold")
    if view.status == "running":
        # the phase on its own line: the title stays whole
        end = len(label)
        label.append("\n")
        label.append_text(
            Text(f"  {view.phase.replace('_', ' ')}", style="italic", overflow="ellipsis")
        )
        return label, end
    if view.status == "unknown" or (view.status != "skipped" and view.not_checked_reason):
        # never a pass: the step says it could not look, and at what, also when something
        # it did see is worse (a warn found by traffic does not hide what stayed unseen)
        if view.status != "unknown" and len(label) + len(view.status) + 2 <= room:
            label.append(f"  {view.status}", style="dim")
        end = len(label)
        # the targets' names (a switch's interface names among them): never a control character
        reason = clean(view.not_checked_reason) or "an input could not be read"
        label.append("\n")
        label.append_text(Text(f"  not checked: {reason}", style="italic"))
        return label, end
    if view.status not in ("pending", "pass") and len(label) + len(view.status) + 2 <= room:
        label.append(f"  {view.status}", style="dim")
    return label, len(label)


class StepList(HoverPart, Widget, can_focus=True):
    """Steps in bisection order, one row each (two or more when a phase or a "not checked"
    reason goes under the title), drawn by one widget: a `ListView` of eight `ListItem`s and
    their `Label`s was ~17 widgets to style and lay out before the first screen.

    ↑/↓ move the highlight, Enter or a click selects; either way the detail panel shows that
    step (`StepViewRequested`). A list taller than its box scrolls to keep the highlight in
    view (the wheel scrolls it too).
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *(f"step-list--{s}" for s in GLYPHS),
        "step-list--current",
        "step-list--highlight",
        "step-list--hover",
    }
    DEFAULT_CSS = """
    StepList {
        background: $surface;
        color: $foreground;
        &:focus { background-tint: $foreground 5%; }
        /* a row keeps its status colour under the highlight */
        & > .step-list--highlight {
            background: $block-cursor-blurred-background;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .step-list--highlight {
            background: $block-cursor-background;
            text-style: $block-cursor-text-style;
        }
        & > .step-list--hover { background: $block-hover-background; }
        & > .step-list--current { text-style: bold underline; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
    ]

    def __init__(self, view: SessionView, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._session = view
        self._ids: list[str] = list(view.steps)
        self._index: int | None = None
        self._hover: int | None = None
        self._top = 0  # the first line shown (a list taller than its box)
        self._rows: list[StepRow] = []
        self._lines: list[Strip] | None = None  # drawn for (width, focus, highlight, hover)
        self._owners: list[int] = []  # the row each drawn line belongs to
        self._rows_for(28)  # labelled before the first paint (the room once laid out)

    # --- what it shows --------------------------------------------------------------------

    @property
    def step_ids(self) -> list[str]:
        return list(self._ids)

    def rows(self) -> list[StepRow]:
        """The rows as last drawn (tests, and the screen's summaries)."""
        return list(self._rows)

    def row(self, step_id: str) -> StepRow | None:
        return next((r for r in self._rows if r.step_id == step_id), None)

    def _room(self) -> int:
        return max(1, (self.size.width or 30) - 2)  # a cell of padding each side

    def _rows_for(self, room: int) -> bool:
        steps = self._session.steps
        for step_id in steps:
            if step_id not in self._ids:
                self._ids.append(step_id)
        rows = []
        for number, step_id in enumerate(self._ids, start=1):
            view = steps[step_id]
            label, end = step_label(view, number, room)
            rows.append(
                StepRow(step_id, number, view.status, step_id == self._session.current, label, end)
            )
        if rows == self._rows:
            return False
        self._rows = rows
        return True

    def refresh_steps(self) -> None:
        """Show the session's steps as they are now (a repaint only when a row changed)."""
        if self._rows_for(self._room()):
            self._redraw()

    def on_resize(self) -> None:
        self._rows_for(self._room())
        self._redraw()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines = None  # focus, theme: the row styles change

    def _redraw(self) -> None:
        self._lines = None
        self.refresh()

    # --- the highlight --------------------------------------------------------------------

    @property
    def index(self) -> int | None:
        return self._index

    @index.setter
    def index(self, value: int | None) -> None:
        if value is not None:
            value = max(0, min(value, len(self._ids) - 1)) if self._ids else None
        if value == self._index:
            return
        self._index = value
        self._redraw()
        self._keep_in_view()
        if value is not None:
            self.post_message(StepViewRequested(self._ids[value]))

    def on_mount(self) -> None:
        if self._index is None and self._ids:
            self.index = 0

    def action_cursor_up(self) -> None:
        if self._index is None:
            self.index = 0
        elif self._index > 0:
            self.index = self._index - 1

    def action_cursor_down(self) -> None:
        if self._index is None:
            self.index = 0
        elif self._index < len(self._ids) - 1:
            self.index = self._index + 1

    def action_select_cursor(self) -> None:
        if self._index is not None:
            self.post_message(StepViewRequested(self._ids[self._index]))

    # --- the mouse ------------------------------------------------------------------------

    def _row_at(self, y: int) -> int | None:
        self._draw()
        line = self._top + y
        return self._owners[line] if 0 <= line < len(self._owners) else None

    def offset_of(self, step_id: str) -> tuple[int, int]:
        """Where a click lands on `step_id`'s row (tests, and the mouse)."""
        self._draw()
        row = self._ids.index(step_id)
        return (1, self._owners.index(row) - self._top)

    def on_click(self, event: events.Click) -> None:
        row = self._row_at(event.y)
        if row is None:
            return
        event.stop()
        self.focus()
        if row == self._index:
            self.action_select_cursor()
        else:
            self.index = row

    def _part_at(self, event: events.MouseMove) -> int | None:
        return self._row_at(event.y)

    def _hover_changed(self) -> None:
        self._redraw()

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self._scroll_to(self._top + 1)
        event.stop()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._scroll_to(self._top - 1)
        event.stop()

    def _scroll_to(self, top: int) -> None:
        self._draw()
        top = max(0, min(top, len(self._owners) - self.size.height))
        if top != self._top:
            self._top = top
            self.refresh()

    def _keep_in_view(self) -> None:
        if self._index is None or not self.size.height:
            return
        self._draw()
        lines = [i for i, row in enumerate(self._owners) if row == self._index]
        if lines[0] < self._top:
            self._scroll_to(lines[0])
        elif lines[-1] >= self._top + self.size.height:
            self._scroll_to(lines[-1] - self.size.height + 1)

    # --- drawing --------------------------------------------------------------------------

    def _row_style(self, row: int, status: str) -> tuple[Style, Style]:
        """The row's style (colour on its background, text style) and its title's when it is
        the step the engine is on."""
        own = self.get_component_styles(f"step-list--{status}")
        background = self.background_colors[1]
        text_style = own.text_style if own.has_rule("text_style") else None
        if row == self._index:
            cursor = self.get_component_styles("step-list--highlight")
            background = background + cursor.background
            if text_style is None:
                text_style = cursor.text_style
        elif row == self._hover:
            background = background + self.get_component_styles("step-list--hover").background
        color = own.color if own.has_rule("color") else self.styles.color
        style = Style(color=(background + color).rich_color, bgcolor=background.rich_color)
        if text_style is not None:
            style += text_style
        return style, self.get_component_rich_style("step-list--current", partial=True)

    def _draw(self) -> list[Strip]:
        if self._lines is not None:
            return self._lines
        width = self.size.width or 30
        room = max(1, width - 2)
        console = self.app.console
        lines: list[Strip] = []
        owners: list[int] = []
        for i, row in enumerate(self._rows):
            style, current = self._row_style(i, row.status)
            label = row.label.copy()
            if row.current:
                label.stylize(current, 0, row.title_end)
            for part in label.wrap(console, room, overflow="fold"):
                part.rstrip_end(room)
                text = Text(" ")
                text.append_text(part)
                text.pad_right(width - text.cell_len)
                # the row's style under the label's own (Text.render leaves the base to its caller)
                lines.append(Strip(Segment.apply_style(text.render(console), style), width))
                owners.append(i)
        self._lines, self._owners = lines, owners
        return lines

    def render_line(self, y: int) -> Strip:
        lines = self._draw()
        line = self._top + y
        if 0 <= line < len(lines):
            return lines[line]
        return Strip.blank(self.size.width, self.rich_style)
