"""The key footer, composed again only when the keys it shows change.

Textual's `Footer` builds all its keys again (one widget each, styled as it mounts) on every
bindings signal: a focus change, a screen pushed or popped, any reactive declared with
`bindings=True`. At start-up that is three rebuilds of the same keys in a row. `KeysFooter`
compares what it would show (every shown key, its label, whether it is enabled, its tooltip)
with what it shows, and rebuilds only when they differ.
"""

from __future__ import annotations

from collections.abc import Hashable

from textual.app import ComposeResult
from textual.widgets import Footer


class KeysFooter(Footer):
    """A `Footer` (same look, same keys) that skips rebuilds that would change nothing."""

    def __init__(self) -> None:
        super().__init__()
        self._shown: Hashable | None = None  # what the last compose showed
        self.rebuilds = 0  # times the keys were composed again (tests)

    def shown_keys(self) -> Hashable:
        """Everything the footer's compose reads, as one comparable value."""
        if not self._bindings_ready:
            return None
        app = self.app
        keys = tuple(
            (
                binding.key,
                app.get_key_display(binding),
                binding.description,
                binding.action,
                binding.tooltip,
                binding.group,
                binding.show,
                enabled,
                tooltip,
            )
            for (_node, binding, enabled, tooltip) in self.screen.active_bindings.values()
        )
        return (keys, self.compact, self.show_command_palette, app.ENABLE_COMMAND_PALETTE)

    def compose(self) -> ComposeResult:
        self._shown = self.shown_keys()
        yield from super().compose()

    async def recompose(self) -> None:
        if self._shown is not None and self.shown_keys() == self._shown:
            return
        self.rebuilds += 1
        await super().recompose()
