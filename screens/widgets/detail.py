"""The detail of one step: what it checks, why, what good looks like, the verdicts, the evidence
table (target, command, observed, expected, verdict) and the action bar.

The action bar only says which button was pressed (`ActionBar.Pressed`); the screen turns it into
a `...Requested` intent. When the engine waits for a decision, the offered actions are highlighted
(`-offered`) and the question is shown above the evidence.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from functools import lru_cache
from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.message import Message
from textual.widget import Widget
from textual.widgets import DataTable, Static
from textual.widgets.data_table import Row, RowKey

from screens.widgets.classes import set_classes_of
from screens.widgets.hover import HoverPart
from screens.widgets.steps import GLYPHS
from screens.widgets.view_model import StepView
from screens.widgets.virtual import set_virtual_size
from wizard.model import Evidence, Status, Verdict
from wizard.safetext import clean

_ACTIONS: tuple[tuple[str, str, str], ...] = (
    # intent, label, key (the screen's bindings)
    ("run", "Run", "r"),
    ("raw", "Raw", "x"),
    ("apply", "Apply fix", "a"),
    ("skip", "Skip", "s"),
    ("back", "Back", "b"),
    ("next", "Next", "n"),
)


class EvidenceTable(DataTable[Text | str]):
    """Evidence rows of the step's latest verdicts; the verdict cell is styled from CSS."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "evidence--pass",
        "evidence--benign",
        "evidence--unknown",
        "evidence--warn",
        "evidence--fail",
    }
    DEFAULT_CSS = """
    EvidenceTable > .evidence--pass { color: $success; }
    EvidenceTable > .evidence--benign { color: $text-muted; }
    EvidenceTable > .evidence--unknown { color: $warning; }
    EvidenceTable > .evidence--warn { color: $warning; }
    EvidenceTable > .evidence--fail { color: $error; text-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.rows_shown: list[tuple[Verdict, Evidence]] = []

    def on_mount(self) -> None:
        # What was seen and what was expected come first: on 80 columns they are what the
        # technician needs; the command (also in the raw view, `x`) comes after.
        self.add_columns("Target", "Observed", "Expected", "Command", "Verdict")

    def show(self, view: StepView) -> None:
        rows = [(v, e) for v in view.verdicts.values() for e in v.evidence]
        rows.sort(key=lambda r: -r[1].status.severity)  # findings first, stable otherwise
        if _same_rows(rows, self.rows_shown):
            return
        shown = len(self.rows_shown)
        if shown and len(rows) > shown and _same_rows(rows[:shown], self.rows_shown):
            # verdicts came after the ones shown, their rows after theirs (a sweep's checks
            # judged one after another): only the new rows are made and added
            new = rows[shown:]
        else:
            self.clear()
            new = rows
        self.rows_shown = rows
        styles: dict[str, Style] = {}
        # a step's rows repeat their targets and verdicts: each cell is made (and measured)
        # once per show; the same object in every row that shows it (a cell is never changed)
        marked: dict[tuple[str, str], tuple[Text, int]] = {}  # (status, target) -> cell
        verdicts: dict[str, tuple[Text, int]] = {}  # status -> the verdict cell
        widths = [0] * len(self.ordered_columns)
        table: list[tuple[Text, ...]] = []
        for _verdict, ev in new:
            status = str(ev.status)
            style = styles.get(status)
            if style is None:
                style = styles[status] = self.get_component_rich_style(
                    f"evidence--{status}", partial=True
                )
                glyph = GLYPHS.get(status, "·")
                verdict = Text(f"{glyph} {status}", style=style)
                verdicts[status] = (verdict, cell_len(verdict.plain))
            target = marked.get((status, ev.target))
            if target is None:
                mark = Text(f"{GLYPHS.get(status, '·')} ", style=style)  # seen at 80 columns
                mark.append_text(_cell(ev.target, 24)[0])
                target = marked[(status, ev.target)] = (mark, cell_len(mark.plain))
            cells = (
                target,
                _cell(ev.observed, 34),
                _cell(ev.expected, 28),
                _cell(ev.command, 34),
                verdicts[status],
            )
            for k, (_text, width) in enumerate(cells):
                widths[k] = max(widths[k], width)
            table.append(tuple(text for text, _width in cells))
        self._append_rows(table)
        # Every cell is one line: its width is its text's. Sized here, the table does not
        # measure each cell again (rich builds its console options once per cell).
        for column, width in zip(self.ordered_columns, widths, strict=False):
            column.content_width = max(column.content_width, width)
        # sized now, not when the table is next idle: a scroll bar that comes or goes is laid
        # out with the rest of the panel, in one layout
        self._update_dimensions(())

    def _append_rows(self, table: list[tuple[Text, ...]]) -> None:
        """`add_row(*cells, key=str(i))` for each row, keys counting on from the rows there,
        with what `add_row` does for the table as a whole done once, not per row (checking the
        cursor, sorting the columns, waking the widget): 0.1 s for a 1,000-row preflight. The
        rows are not queued for measuring (`_new_rows`): `show` measured them."""
        columns = [column.key for column in self.ordered_columns]
        if table and len(table[0]) > len(columns):
            raise ValueError("More values provided than there are columns.")
        start = self.row_count
        for index, cells in enumerate(table, start):
            key = RowKey(str(index))
            self._row_locations[key] = index
            self._data[key] = dict(zip(columns, cells, strict=False))
            self.rows[key] = Row(key, 1, None, False)
        if not table:
            return
        self._require_update_dimensions = True
        self.cursor_coordinate = self.cursor_coordinate
        if start == 0 and self.columns and self.show_cursor and self.cursor_type != "none":
            self._highlight_cursor()  # a cell to highlight where there was none
        self._update_count += len(table)
        self.check_idle()

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """The table's scrollable size. The rows all come from `show`, which sized the columns
        for them, one line each; the table's box is set by the CSS, so its scroll bars are
        updated in place, without a layout of the screen."""
        width = sum(column.get_render_width(self) for column in self.columns.values())
        header = self.header_height if self.show_header else 0
        set_virtual_size(
            self, Size(width + self._row_label_column_width, self._total_row_height + header)
        )

    @property
    def selected_row(self) -> int | None:
        if not self.rows_shown:
            return None
        return min(max(self.cursor_row, 0), len(self.rows_shown) - 1)


class ActionBar(HoverPart, Widget):
    """Run, raw output, apply fix, skip, back, next: one line of compact buttons naming their
    keys, drawn by one widget (six `Button`s were ~15% of the first screen's layout and
    styling). A click on an enabled one says which (`Pressed`); the keys are the keyboard's way.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "action-bar--button",
        "action-bar--disabled",
        "action-bar--offered",
        "action-bar--hover",
    }
    DEFAULT_CSS = """
    ActionBar { height: 1; }
    ActionBar > .action-bar--button { text-style: bold; color: $button-foreground; background: $surface; }
    ActionBar > .action-bar--disabled { text-style: bold; color: $text-disabled; background: $surface; }
    ActionBar > .action-bar--offered { text-style: bold reverse; }
    ActionBar > .action-bar--hover { background: $surface-darken-1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._enabled: frozenset[str] = frozenset()  # disabled until the screen says
        self._offered: frozenset[str] = frozenset()
        self._hover: str | None = None
        self._spans: list[tuple[int, int, str]] = []  # (start, end, intent) as last drawn

    def enabled(self, intent: str) -> bool:
        return intent in self._enabled

    def offered(self, intent: str) -> bool:
        return intent in self._offered

    def show(self, *, enabled: Collection[str], offered: Collection[str]) -> None:
        state = (frozenset(enabled), frozenset(offered))
        if state != (self._enabled, self._offered):
            self._enabled, self._offered = state
            self.refresh()

    def render(self) -> Text:
        labels = [(intent, f" {key} {label} ") for intent, label, key in _ACTIONS]
        room = self.size.width
        # a cell between buttons when the line has room for it (not on 80 columns)
        gap = 1 if sum(len(t) for _i, t in labels) + len(labels) - 1 <= room else 0
        line = Text(no_wrap=True, overflow="crop")
        self._spans = []
        for intent, text in labels:
            if line:
                line.append(" " * gap)
            part = "button" if intent in self._enabled else "disabled"
            style = self.get_component_rich_style(f"action-bar--{part}")
            if intent in self._offered and intent in self._enabled:
                style += self.get_component_rich_style("action-bar--offered", partial=True)
            if intent == self._hover and intent in self._enabled:
                style += self.get_component_rich_style("action-bar--hover", partial=True)
            self._spans.append((len(line), len(line) + len(text), intent))
            line.append(text, style=style)
        return line

    def offset_of(self, intent: str) -> tuple[int, int]:
        """Where a click lands on `intent`'s button (tests, and the mouse)."""
        for start, _end, name in self._spans:
            if name == intent:
                return (start + 1, 0)
        raise LookupError(intent)

    def _at(self, x: int) -> str | None:
        return next((name for start, end, name in self._spans if start <= x < end), None)

    class Pressed(Message):
        """A button of the bar, by intent: the screen turns it into its `...Requested`
        (the same path as the key, so the raw output knows the selected evidence row)."""

        def __init__(self, intent: str) -> None:
            super().__init__()
            self.intent = intent

    def on_click(self, event: events.Click) -> None:
        intent = self._at(event.x)
        if intent is not None and intent in self._enabled:
            event.stop()
            self.post_message(self.Pressed(intent))

    def _part_at(self, event: events.MouseMove) -> str | None:
        return self._at(event.x)

    def _hover_changed(self) -> None:
        self.refresh()


class VerdictText(Static):
    """The verdict list's text. Its height follows its lines once laid out, which can be a
    refresh after the text changed (keys pressed back to back): the "N more" cue under the
    list is placed again whenever that height changes."""

    def on_resize(self, _event: events.Resize) -> None:
        try:
            detail = self.query_ancestor(StepDetail)
        except NoMatches:
            return  # taken down with the screen
        detail.call_after_refresh(detail.more_verdicts)


class StepDetail(Vertical):
    """Everything about the step being looked at."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: dict[str, Text | str] = {}  # selector -> what its Static shows
        self._more_at: Size | None = None  # the panel's size when the "N more" cue was placed
        explain_text = Static("", id="explain-text")
        verdict_text = VerdictText("", id="verdict-text")
        self._top: tuple[Widget, ...] = (
            Static("", id="step-title"),
            VerticalScroll(explain_text, id="explain"),
            VerticalScroll(verdict_text, id="verdict"),
            Static("", id="verdict-more", classes="dim"),
            Static("", id="conclusion"),
            Static("", id="prompt"),
            EvidenceTable(id="evidence"),
            ActionBar(id="actions"),
        )
        self._parts = (*self._top, explain_text, verdict_text)

    def compose(self) -> ComposeResult:
        yield from self._top

    @property
    def showable(self) -> bool:
        """Every part is mounted: not yet composed, or being torn down as the app closes (its
        parts go before it does), there is nothing to show a step in."""
        return self.is_attached and all(part.is_attached for part in self._parts)

    def on_mount(self) -> None:
        scroll = self.query_one("#verdict", VerticalScroll)
        scroll.watch(scroll, "scroll_y", lambda _y: self.more_verdicts(), init=False)

    def more_verdicts(self) -> None:
        """The "N more" cue under a verdict list taller than its box (v scrolls it)."""
        if not self.showable:
            return
        scroll = self.query_one("#verdict", VerticalScroll)
        text = self.query_one("#verdict-text", Static)
        total = text.virtual_size.height or text.size.height
        shown_to = int(scroll.scroll_y) + scroll.scrollable_content_region.height
        left = max(0, total - shown_to)
        more = self.query_one("#verdict-more", Static)
        more.display = left > 0
        self._update("#verdict-more", f"↓ {left} more line(s): v, then ↑/↓" if left else "")

    def show(
        self,
        view: StepView,
        *,
        is_current: bool,
        question: str | None,
        enabled: Collection[str],
        offered: Collection[str],
        conclusion: str = "",
    ) -> None:
        if not self.showable:
            return
        info = view.info
        title = Text(info.title, style="bold")
        phase = view.phase.replace("_", " ")
        title.append(f"  ({info.id} · {phase}{' · current' if is_current else ''})", style="dim")
        self._update("#step-title", title)

        explain = Text()
        for head, body in (("What", info.what), ("Why", info.why), ("Good", info.good)):
            if body:
                explain.append(f"{head}: ", style="bold")
                explain.append(body + "\n")
        explain.rstrip()
        self._update("#explain-text", explain if explain.plain else Text("—"))
        # on a short terminal, the question takes the explanation's place (app.tcss)
        self.query_one("#explain").set_class(question is not None, "-prompting")

        verdict = self.query_one("#verdict", VerticalScroll)
        worst = view.verdict_status
        set_classes_of(verdict, () if worst is None else (f"-{worst}",), [f"-{s}" for s in Status])
        changed = self._update("#verdict-text", _verdict_text(view))
        said = self.query_one("#conclusion", Static)
        said.display = bool(conclusion)
        # the conclusion names targets and rails: shown without their control characters
        said_text = Text.assemble(("→ ", "bold"), clean(conclusion)) if conclusion else ""
        self._update("#conclusion", said_text)
        if changed or self.size != self._more_at:
            # the verdict list's height follows its text and the panel's size: the cue under
            # it is worked out again (once laid out) only when one of them changed
            self._more_at = self.size
            self.call_after_refresh(self.more_verdicts)

        prompt = self.query_one("#prompt", Static)
        prompt.display = bool(question)
        # the question can name rails and nodes: shown without their control characters
        self._update("#prompt", Text(f"▶ {clean(question)}") if question else "")

        self.query_one(EvidenceTable).show(view)
        self.query_one(ActionBar).show(enabled=enabled, offered=offered)

    def _update(self, selector: str, content: Text | str) -> bool:
        """Show `content` in the Static `selector` unless it shows it already (an update
        re-lays the screen out); whether it changed."""
        if self._shown.get(selector) == content:
            return False
        self._shown[selector] = content
        self.query_one(selector, Static).update(content)
        return True


def _same_rows(a: list[tuple[Verdict, Evidence]], b: list[tuple[Verdict, Evidence]]) -> bool:
    """Whether two lists of rows hold the same objects. Not `==`: two equal verdicts compare
    their whole evidence, so a list of a verdict's thousand rows (a rail matrix) compared with
    an equal one (the step run again) is a million comparisons, seconds of a frozen screen."""
    return len(a) == len(b) and all(v is w and e is f for (v, e), (w, f) in zip(a, b, strict=True))


@lru_cache(maxsize=8192)
def _cell(text: str, width: int) -> tuple[Text, int]:
    """One line, at most `width` cells (the raw output modal has the rest), and its width in
    cells. The same cell (a command, an expected value on every node) is one object, never
    changed once made."""
    line = " ".join(clean(text).split())
    cell = Text(line if len(line) <= width else line[: width - 1] + "…", no_wrap=True)
    return cell, cell_len(cell.plain)


def _verdict_text(view: StepView) -> Text:
    if not view.verdicts:
        if view.status == "running":
            return Text(f"… {view.phase.replace('_', ' ')}", style="italic")
        if view.status == "skipped":
            return Text("skipped")
        return Text("not run yet")
    lines: list[Text] = []
    ordered = sorted(view.verdicts.values(), key=lambda v: -v.status.severity)
    for v in ordered:
        word = "NOT CHECKED" if v.status is Status.UNKNOWN else str(v.status).upper()
        line = Text(f"{GLYPHS.get(str(v.status), '·')} {word:<7} ", style="bold")
        line.append(f"{v.fault}: {clean(v.summary)}")
        lines.append(line)
    for fix in view.fixes.values():
        line = Text(f"  fix {fix.state.replace('_', ' ')}: ", style="bold")
        line.append(clean(fix.summary))
        lines.append(line)
    return Text("\n").join(lines)
