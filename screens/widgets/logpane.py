"""The log pane: Textual's `Log`, written to without a thread, a second pass or a screen layout
per write.

A sweep writes a few hundred lines into the log pane a few times a second. Textual's `Log` then
starts a thread worker per write to measure the new lines' widths, sets its virtual size twice
(once per line count, once per width, the second from that thread), and each of those asks for a
layout of the whole screen; its rendered lines are cached only while text is selected, so every
repaint renders every visible line again. `LogPane` shows the same lines in the same places:
the widths are measured as the lines are written, the virtual size is set once, and since the
pane's own size never depends on its content (its box is set by the CSS), the scroll bars are
updated in place instead of laying the screen out again (`screens.widgets.virtual`). Rendered lines are cached until they
change (or the style does), as `Log` meant to.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Self

from rich.cells import cell_len
from rich.style import Style
from textual.geometry import Size
from textual.strip import Strip
from textual.widgets import Log

from screens.widgets.virtual import set_virtual_size


class LogPane(Log):
    """A `Log` whose writes repaint the pane and its scroll bars only."""

    def write_lines(self, lines: Iterable[str], scroll_end: bool | None = None) -> Self:
        at_end = self.is_vertical_scroll_end
        auto_scroll = self.auto_scroll if scroll_end is None else scroll_end
        new_lines = [piece for line in lines for piece in line.splitlines()]
        start = len(self._lines)
        self._lines.extend(new_lines)
        if self.max_lines is not None and len(self._lines) > self.max_lines:
            self._prune_max_lines()
        if new_lines:
            process = self._process_line
            self._width = max(self._width, *(cell_len(process(line)) for line in new_lines))
        set_virtual_size(self, Size(self._width, self.line_count))
        self.refresh_lines(start, len(new_lines))
        if auto_scroll and not self.is_vertical_scrollbar_grabbed and at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        else:
            self.refresh()
        return self

    def _render_line_strip(self, y: int, rich_style: Style) -> Strip:
        if self.text_selection is not None:  # a selection's highlight is never kept
            strip = super()._render_line_strip(y, rich_style)
            self._render_line_cache.discard(y)
            return strip
        cached = self._render_line_cache.get(y)
        if cached is None:
            cached = super()._render_line_strip(y, rich_style)
            self._render_line_cache[y] = cached
        return cached
