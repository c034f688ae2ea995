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


def _verdict(
    fault: str, status: Status, rows: int, start: int = 0, statuses: tuple[Status, ...] = ()
) -> Verdict:
    """A verdict of `rows` evidence rows (their statuses cycling through `statuses` if given)."""
    evidence = tuple(
        Evidence(
            target=f"spark{i % 32 + 1}",
            command=f"ip -j addr show dev enp1s0f{i % 2}np{i % 2}",
            observed=f"{fault} 10.0.{i}.1/24",
            expected="one address on the fabric subnet",
            status=statuses[i % len(statuses)] if statuses else status,
        )
        for i in range(start, start + rows)
    )
    return Verdict(
        fault=fault, status=status, summary=fault, targets=("spark1",), evidence=evidence
    )


def _step(n: int) -> Any:
    view = SessionView.new(load_steps())
    statuses = (Status.PASS, Status.FAIL, Status.WARN, Status.UNKNOWN)
    verdict = _verdict("host.duplicate-ip", Status.FAIL, n, statuses=statuses)
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


class Fresh(App[None]):
    def compose(self) -> ComposeResult:
        yield EvidenceTable(id="grown")
        yield EvidenceTable(id="fresh")


async def test_verdicts_that_come_after_add_their_rows_and_the_table_is_the_one_built_at_once() -> (
    None
):
    view = SessionView.new(load_steps())
    app = Fresh()
    async with app.run_test(size=(120, 60)) as pilot:
        grown = app.query_one("#grown", EvidenceTable)
        await pilot.pause()
        cleared: list[int] = []
        real_clear = grown.clear

        def clear(*a: Any, **k: Any) -> Any:
            cleared.append(grown.row_count)
            return real_clear(*a, **k)

        grown.clear = clear  # type: ignore[method-assign]
        arrivals = [
            (_verdict("host.mtu", Status.PASS, 40), False),  # the first rows
            (_verdict("switch.mtu", Status.PASS, 7, 40), False),  # after them: added
            (_verdict("host.arp-sysctls", Status.PASS, 300, 47), False),  # a long one: added
            (_verdict("host.duplicate-ip", Status.FAIL, 3), True),  # a finding goes first
            (_verdict("host.ipv6-on-fabric", Status.PASS, 2), False),  # after the passes
        ]
        for verdict, rebuilt in arrivals:
            before = len(cleared)
            view.apply(VerdictReached(step="preflight", verdict=verdict))
            step = view.steps["preflight"]
            grown.show(step)
            fresh = EvidenceTable()  # the same rows, shown at once on a new table
            await app.mount(fresh)
            fresh.show(step)
            await pilot.pause()
            assert any(rows > 0 for rows in cleared[before:]) is rebuilt  # rows thrown away
            assert grown.rows_shown == fresh.rows_shown
            n = grown.row_count
            assert n == fresh.row_count == sum(len(v.evidence) for v in step.verdicts.values())
            assert [grown.get_row_at(i) for i in range(n)] == [
                fresh.get_row_at(i) for i in range(n)
            ]
            assert list(grown.rows) == [RowKey(str(i)) for i in range(n)]
            assert [c.content_width for c in grown.ordered_columns] == [
                c.content_width for c in fresh.ordered_columns
            ]
            assert grown.virtual_size == fresh.virtual_size
            await fresh.remove()
        assert grown.get_row_at(0)[0].plain.startswith("✘ ")  # the finding's rows lead
        assert grown.row_count == 352


async def test_rows_are_compared_as_objects_never_through_a_verdicts_whole_evidence(
    monkeypatch: Any,
) -> None:
    """A step run again gives equal verdicts, new objects: comparing them with `==` compares
    every verdict's whole evidence for each of its rows (a rail matrix of 2,000 rows froze the
    screen for seconds). The rows are told apart by identity; equal new rows are made again."""
    compared: list[str] = []
    real_eq = Verdict.__eq__

    def eq(self: Verdict, other: object) -> bool:
        compared.append(self.fault)
        return bool(real_eq(self, other))

    monkeypatch.setattr(Verdict, "__eq__", eq)
    app = Growing()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one("#auto", EvidenceTable)
        first, again = _step(400), _step(400)  # the same values, new objects
        table.show(first)
        await pilot.pause()
        table.show(first)  # the same objects: nothing to do
        shown = table.rows_shown
        table.show(again)
        await pilot.pause()
        assert compared == []
        assert table.rows_shown is not shown and table.row_count == 400
        verdict = again.verdicts["host.duplicate-ip"]
        assert all(v is verdict for v, _e in table.rows_shown)
        assert [table.get_row_at(i)[1].plain for i in range(3)] == [
            e.observed for _v, e in table.rows_shown[:3]
        ]
