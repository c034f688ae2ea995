"""The part of a one-widget control under the mouse (a button of the action bar, a row of the
step list), lit while the mouse is over it."""

from __future__ import annotations

from typing import Any

from textual import events


class HoverPart:
    """Mixed into a Widget: `_part_at(event)` names the part under the mouse (None: none),
    `_hover_changed()` repaints; `_hover` is the part lit now."""

    _hover: Any = None

    def _part_at(self, event: events.MouseMove) -> Any:
        raise NotImplementedError

    def _hover_changed(self) -> None:
        raise NotImplementedError

    def on_mouse_move(self, event: events.MouseMove) -> None:
        part = self._part_at(event)
        if part != self._hover:
            self._hover = part
            self._hover_changed()

    def on_leave(self, _event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self._hover_changed()
