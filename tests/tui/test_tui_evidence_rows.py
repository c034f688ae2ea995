"""The evidence table adds a step's rows in one pass: the same rows, keys, cursor and screen as
adding them one by one with `DataTable.add_row`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

from screens.widgets.detail import EvidenceTable
from screens.widgets.view_model import SessionView, load_steps
from wizard.events import VerdictReached
from wizard.model import Evidence, Status, Verdict


class OneByOne(EvidenceTable):
    """The table as it was built before: `add_row` per row, its size measured by DataTable."""

    def _append_rows(self, table: list[tuple[Text, ...]]) -> None:
        for i, cells in enumerate(table, self.row_count):
            self.add_row(*cells, key=str(i))

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        DataTable._update_dimensions(self, new_rows)


class Tables(App[None]):
    CSS = "EvidenceTable { height: 1fr; }"  # as in the session screen: a share of the panel

    def compose(self) -> ComposeResult:
        yield EvidenceTable(id="bulk")
        yield OneByOne(id="single")


def _step(n: int) -> Any:
    view = SessionView.new(load_steps())
    statuses = (Status.PASS, Status.FAIL, Status.WARN, Status.UNKNOWN)
    evidence = tuple(
        Evidence(
            target=f"spark{i % 32 + 1}",
            command=f"ip -j addr show dev enp1s0f{i % 2}np{i % 2}",
            observed=f"10.0.{i}.1/24",
            expected="one address on the fabric subnet",
            status=statuses[i % len(statuses)],
        )
        for i in range(n)
    )
    verdict = Verdict(
        fault="host.duplicate-ip",
        status=Status.FAIL,
        summary="dup",
        targets=("spark1",),
        evidence=evidence,
    )
    view.apply(VerdictReached(step="preflight", verdict=verdict))
    return view.steps["preflight"]


async def test_rows_added_in_one_pass_are_the_rows_add_row_gives() -> None:
    app = Tables()
    async with app.run_test(size=(120, 60)) as pilot:
        bulk = app.query_one("#bulk", EvidenceTable)
        single = app.query_one("#single", EvidenceTable)
        await pilot.pause()  # mounted and laid out
        for n in (0, 300, 1182, 5):  # empty, then rebuilt larger, then smaller
            step = _step(n)
            layouts = bulk._layout_updates
            bars = (bulk.show_vertical_scrollbar, bulk.show_horizontal_scrollbar)
            bulk.show(step)
            single.show(step)
            await pilot.pause()
            # its box is the CSS's: new rows ask for a layout of the screen only when a scroll
            # bar comes or goes (Textual's rule), never for the rows themselves
            if bars == (bulk.show_vertical_scrollbar, bulk.show_horizontal_scrollbar):
                assert bulk._layout_updates == layouts, n
            else:
                assert bulk._layout_updates > layouts
            assert single._layout_updates > 0  # DataTable's own measure asks every time
            assert bulk.row_count == single.row_count == n
            assert list(bulk.rows) == list(single.rows)
            assert [bulk.get_row_at(i) for i in range(n)] == [
                single.get_row_at(i) for i in range(n)
            ]
            assert bulk.cursor_coordinate == single.cursor_coordinate
            assert bulk.virtual_size == single.virtual_size
            assert [c.content_width for c in bulk.ordered_columns] == [
                c.content_width for c in single.ordered_columns
            ]
            lines = bulk.size.height
            assert [bulk.render_line(y).text for y in range(lines)] == [
                single.render_line(y).text for y in range(lines)
            ]
            assert bulk.rows_shown == single.rows_shown
            if n:
                assert bulk.get_row_at(0)[0].plain.startswith("✘ ")  # findings first
        bulk.move_cursor(row=3)
        single.move_cursor(row=3)
        assert bulk.selected_row == single.selected_row == 3


class Growing(App[None]):
    def compose(self) -> ComposeResult:
        yield EvidenceTable(id="auto")  # DataTable's own CSS: `height: auto`


async def test_a_table_whose_height_follows_its_rows_grows_with_them() -> None:
    app = Growing()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one("#auto", EvidenceTable)
        table.show(_step(5))
        await pilot.pause()
        await pilot.pause()
        assert table.virtual_size.height == 6  # the header and five rows
        assert table.size.height == 6  # laid out again for them
