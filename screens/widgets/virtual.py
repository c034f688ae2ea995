"""A scrollable widget's content size, changed without a layout of the screen.

Textual lays the whole screen out again whenever a widget's `virtual_size` changes, in case the
widget's box follows its content. The log pane and the evidence table have boxes set by the CSS
(a share of their container), so their content only decides how far they scroll: the scroll
bars are updated in place, and the screen is laid out only when a scroll bar appears or goes
(Textual's own rule for that), or when the widget's CSS makes its box follow its content."""

from __future__ import annotations

from textual.geometry import Size
from textual.widget import Widget


def set_virtual_size(widget: Widget, size: Size) -> None:
    """Give `widget` the scrollable size `size`: in place when its box is set by the CSS, with a
    layout when its width or height is `auto` (the box follows the content)."""
    if size == widget.virtual_size:
        return
    styles = widget.styles
    if any(scalar is not None and scalar.is_auto for scalar in (styles.width, styles.height)):
        widget.virtual_size = size
        return
    widget.set_reactive(Widget.virtual_size, size)
    if widget.is_mounted and widget.container_size:
        widget._scroll_update(size)
        widget.refresh()
