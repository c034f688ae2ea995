"""The gauge panel draws every rail as one line of one widget (`GaugeRows`): the same rails, in
the same order, with the same text and the colour of each rail's state, however many rails."""

from __future__ import annotations

from tui_fakes import RAILS, drawn_as

from screens.app import FabwizApp
from screens.widgets.gauges import GaugeRows, RailGauge, RailGauges, rail_tag
from wizard.model import Measurement, Rail

NODES = [f"spark{i}" for i in range(1, 33)]


def _rails() -> list[Rail]:
    out = []
    for node in reversed(NODES):  # discovery's order is not the panel's
        for netdev in RAILS:
            # spark5's half B has no carrier: not cabled
            up = not (node == "spark5" and netdev.startswith("enP2"))
            half, port = rail_tag(netdev)
            addresses = ("10.0.0.1/24",) if up else ()
            out.append(Rail(node, netdev, "", port, half, up=up, addresses=addresses))
    return out


async def test_128_rails_are_one_widget_drawing_each_rails_line_in_its_states_colour() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        gauges: RailGauges = app.session.gauges
        gauges.set_rails(_rails())
        gauges.update_samples({("spark3", RAILS[0]): 97.5})
        m = Measurement("rail", f"spark7/{RAILS[0]}->spark8/{RAILS[0]}", 12.5, "Gb/s")
        gauges.add_measurement(m)
        await pilot.pause()
        rows = gauges.rows
        assert isinstance(rows, GaugeRows) and not rows.children
        assert not list(gauges.query(RailGauge.__name__))  # no widget per rail
        assert len(rows.rows) == len(gauges.gauges) == 32 * 4
        assert rows.virtual_size.height == 128 and rows.max_scroll_y > 0
        # node order (spark2 before spark10), then port, then half, as the rows were
        names = [r.node for r in rows.rows]
        assert names.index("spark2") < names.index("spark10") and names[-1] == "spark32"
        assert [(r.port, r.half) for r in rows.rows[:4]] == [(0, "A"), (0, "B"), (1, "A"), (1, "B")]
        width = rows.scrollable_content_region.width
        assert width == rows.size.width - rows.styles.scrollbar_size_vertical
        states = {
            ("spark3", RAILS[0]): "live",
            ("spark7", RAILS[0]): "fail",
            ("spark8", RAILS[0]): "fail",
            ("spark5", RAILS[1]): "uncabled",
            ("spark1", RAILS[0]): "idle",
        }
        for (node, netdev), verdict in states.items():
            g = gauges.gauge(node, netdev)
            assert g is not None and g.verdict == verdict and drawn_as(gauges, g, verdict)
        live = gauges.gauge("spark3", RAILS[0])
        assert live is not None and "97.5/109" in live.line(width)
        failed = gauges.gauge("spark7", RAILS[0])
        assert failed is not None and " 12.5/109" in failed.line(width)
        uncabled = gauges.gauge("spark5", RAILS[1])
        assert uncabled is not None and "not cabled" in uncabled.line(width)
        # what is on screen: the first rows, then, scrolled to the end, the last ones
        shown = [rows.render_line(y).text for y in range(rows.scrollable_content_region.height)]
        assert shown[0] == rows.rows[0].line(width).ljust(width)
        rows.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        last = rows.render_line(rows.scrollable_content_region.height - 1).text
        assert last == rows.rows[-1].line(width).ljust(width)
        # a change of state repaints the row in its new colour
        failed.measure(109.0, 109.0)
        assert drawn_as(gauges, failed, "pass")


async def test_a_both_halves_result_across_an_isl_is_held_to_the_isls_share() -> None:
    """Each half of a both-halves result is coloured against ~98 Gb/s; a node alone on its
    switch, measured across an ISL, against the ISL's share of two flows (~81.9)."""
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        gauges: RailGauges = app.session.gauges
        gauges.set_rails(_rails())
        halves = {RAILS[0]: 81.95, RAILS[1]: 81.9}
        home = Measurement("pair", "spark1", 163.85, "Gb/s", extra={"halves": halves})
        away = Measurement(
            "pair", "spark2", 163.85, "Gb/s", extra={"halves": halves, "across_isl": True}
        )
        gauges.add_measurement(home)
        gauges.add_measurement(away)
        await pilot.pause()
        assert gauges.gauges[("spark1", RAILS[0])].measured == (81.95, 98.04, True)
        assert gauges.gauges[("spark2", RAILS[0])].measured == (81.95, 81.9, True)
