"""The bisection steps as a list with their status (one row per step, styled by class).

Moving the highlight only changes which step the detail panel shows (`StepViewRequested`); it
never moves the engine, which only the action intents do.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Label, ListItem, ListView

from screens.widgets.classes import set_classes_of
from screens.widgets.messages import StepViewRequested
from screens.widgets.view_model import SessionView, StepView

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
STATUS_CLASSES = tuple(f"-{s}" for s in GLYPHS)

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


class StepItem(ListItem):
    def __init__(self, step_id: str, number: int) -> None:
        self._label = Label("", classes="step-label")
        super().__init__(self._label, classes="-pending")
        self.step_id = step_id
        self.number = number
        self.status = "pending"
        self._shown: tuple[StepView, bool] | None = None
        self._label_shown: Text | None = None

    def on_resize(self) -> None:
        if self._shown is not None:
            self.show(*self._shown)

    def show(self, view: StepView, current: bool = False) -> None:
        self._shown = (view, current)
        self.status = view.status
        wanted = {f"-{self.status}"} | ({"-current"} if current else set())
        set_classes_of(self, wanted, (*STATUS_CLASSES, "-current"))
        glyph = GLYPHS.get(view.status, "·")
        room = self.size.width or 28  # the content width, padding excluded
        prefix = f"{glyph} {self.number} "
        title = fitting_title(view.id, view.info.title, room - len(prefix))
        # the title is fitted to the room above; a "not checked" reason wraps rather than
        # losing the names of what could not be seen
        label = Text(prefix + title, overflow="fold")
        if view.status == "running":
            # the phase on its own line: the title stays whole
            label.append("\n")
            label.append_text(
                Text(f"  {view.phase.replace('_', ' ')}", style="italic", overflow="ellipsis")
            )
        elif view.status == "unknown" or (view.status != "skipped" and view.not_checked_reason):
            # never a pass: the step says it could not look, and at what, also when something
            # it did see is worse (a warn found by traffic does not hide what stayed unseen)
            if view.status != "unknown" and len(label) + len(view.status) + 2 <= room:
                label.append(f"  {view.status}", style="dim")
            reason = view.not_checked_reason or "an input could not be read"
            label.append("\n")
            label.append_text(Text(f"  not checked: {reason}", style="italic"))
        elif view.status not in ("pending", "pass") and len(label) + len(view.status) + 2 <= room:
            label.append(f"  {view.status}", style="dim")
        if label != self._label_shown:  # an update re-lays the screen out
            self._label_shown = label
            self._label.update(label)


class StepList(ListView):
    """Steps in bisection order. Enter or the highlight selects which step to look at."""

    def __init__(self, view: SessionView, *, id: str | None = None) -> None:
        self._session = view
        items = [StepItem(s, i) for i, s in enumerate(view.steps, start=1)]
        for item in items:  # labelled before the first paint
            item.show(view.steps[item.step_id])
        super().__init__(*items, id=id)

    def items(self) -> list[StepItem]:
        """The step rows, in order (the list's own children: no walk of the DOM)."""
        return [child for child in self.children if isinstance(child, StepItem)]

    def item(self, step_id: str) -> StepItem | None:
        for child in self.items():
            if child.step_id == step_id:
                return child
        return None

    def refresh_steps(self) -> None:
        items = self.items()
        known = {c.step_id for c in items}
        for step_id in self._session.steps:
            if step_id not in known:
                self.append(StepItem(step_id, len(known) + 1))
                known.add(step_id)
        for child in self.items():
            child.show(self._session.steps[child.step_id], child.step_id == self._session.current)

    def on_list_view_highlighted(self, message: ListView.Highlighted) -> None:
        if isinstance(message.item, StepItem):
            message.stop()
            self.post_message(StepViewRequested(message.item.step_id))

    def on_list_view_selected(self, message: ListView.Selected) -> None:
        if isinstance(message.item, StepItem):
            message.stop()
            self.post_message(StepViewRequested(message.item.step_id))
