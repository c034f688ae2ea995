"""Per-rail gauges: every node x rail with live Gb/s against the expected ceiling.

One compact row per rail (node, netdev, half and port, a bar, the value against the ceiling and a
short history), so 32 nodes x 4 rails scroll in a small panel. Fed by `RailsSampled` snapshots
(coalesced upstream) and by `MeasurementTaken` results; colour comes from CSS (the component
classes `rail-gauge--pass`, `--warn`, `--fail`, `--idle`...), never from Python. History lives in
a bounded deque.

The rows are one widget (`GaugeRows`, a line-API scroll view rendering one line per rail), not a
widget per rail: 128 rails would otherwise be 128 widgets to style as they mount and to lay out
on every reflow of the screen.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Iterable, Mapping
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from flows.expectations import Expectations
from wizard.model import Measurement, Rail, node_order
from wizard.safetext import clean

HISTORY = 32
IDLE_GBPS = 0.5  # below this, with no measurement, a rail is idle rather than failing
_SPARK = " ▁▂▃▄▅▆▇█"
_PORT = re.compile(r"f(\d)np\d")
VERDICTS = ("pass", "warn", "fail", "live", "idle", "stale", "uncabled")
STALE_S = 3.0  # a rail with no sample for this long is back at rest


def rail_tag(netdev: str) -> tuple[str, int]:
    """(half, port) from a ConnectX-7 netdev name: domain 0002 (`enP2p...`) is half B."""
    half = "B" if netdev.startswith("enP2") else "A"
    match = _PORT.search(netdev)
    return half, int(match.group(1)) if match else 0


def sparkline(values: Iterable[float], ceiling: float, width: int) -> str:
    vals = list(values)[-width:] if width > 0 else []
    top = max(ceiling, *vals) if vals else ceiling
    if top <= 0:
        return " " * len(vals)
    steps = len(_SPARK) - 1
    return "".join(_SPARK[min(steps, round(v / top * steps))] for v in vals)


class RailGauge:
    """One rail: `spark3 enP2p1s0f0np0 B0 ██████░░░  64.1/109 ▂▄▆▆▅▃`, a row of `GaugeRows`."""

    def __init__(
        self,
        node: str,
        netdev: str,
        *,
        half: str,
        port: int,
        ceiling: float,
        expectations: Expectations,
        label_width: int = 8,
    ) -> None:
        self.node = node
        self.netdev = netdev
        # names from the nodes, shown without their control characters (wizard.safetext)
        self._shown_names = (clean(node), clean(netdev))
        self.half = half
        self.port = port
        self.ceiling = ceiling
        self.label_width = label_width
        self.value = 0.0
        self.sampled_at = 0.0  # monotonic time of the last sample
        self.history: deque[float] = deque(maxlen=HISTORY)
        self.measured: tuple[float, float, bool] | None = None  # value, expected, valid
        self.cabled = True  # False: discovery found the rail without carrier or address
        self.stale = False  # a verified fix changed the fabric since the last measurement
        self.bidir = False  # the last measurement ran both directions at once (`-b`)
        self._expectations = expectations
        self.rows: GaugeRows | None = None  # the widget that shows this row

    @property
    def verdict(self) -> str:
        """pass/warn/fail from the rail's last measurement (against what that kind of test
        expects); else "live" while traffic flows and "idle" at rest. Live samples are not
        judged: NCCL or a shared test legitimately runs a rail below its single-flow ceiling."""
        if self.value < IDLE_GBPS and not self.cabled and self.measured is None:
            return "uncabled"
        if self.measured is not None and self.stale and self.value < IDLE_GBPS:
            return "stale"
        if self.measured is not None:
            value, expected, valid = self.measured
            if not valid:
                return "warn"
            return self._expectations.band(value, expected)
        return "idle" if self.value < IDLE_GBPS else "live"

    def sample(self, gbps: float) -> None:
        self.value = gbps
        self.history.append(gbps)
        self.sampled_at = time.monotonic()
        self._restyle()

    def measure(
        self, value: float, expected: float, *, valid: bool = True, bidir: bool = False
    ) -> None:
        """Record a result; a `-b` result comes per direction, against the per-direction
        share of the bidirectional expectation."""
        self.measured = (value, expected, valid)
        self.bidir = bidir
        self.stale = False
        self._restyle()

    def mark_stale(self) -> None:
        if self.measured is not None:
            self.stale = True
            self._restyle()

    @property
    def state_text(self) -> str:
        """Why the rail shows what it shows, in words, when there is no live number."""
        if self.value >= IDLE_GBPS:
            return ""
        if self.verdict == "uncabled":
            return "not cabled"
        if self.measured is None:
            return "not tested yet"
        if self.stale:
            return "not re-measured yet"
        return ""

    def clear_measurement(self) -> None:
        self.measured = None
        self._restyle()

    def _restyle(self) -> None:
        if self.rows is not None:
            self.rows.refresh()

    def render(self, width: int = 72) -> Text:
        return Text(self.line(width), no_wrap=True, overflow="crop")

    def line(self, width: int) -> str:
        """The row's text, at most `width` cells."""
        node, netdev = self._shown_names
        label = f"{node:<{self.label_width}} {netdev:<14} {self.half}{self.port}"
        # Live traffic shows as it flows; at rest the rail shows its last measurement.
        shown = self.value
        ceiling = self.ceiling
        if self.measured is not None and self.value < IDLE_GBPS:
            shown, ceiling = self.measured[0], self.measured[1]
        state = self.state_text
        if state and state != "not re-measured yet":
            value = f"{state:>11}"
        else:
            value = f"{shown:6.1f}/{ceiling:<4.0f}"
            if self.bidir and self.measured is not None and self.value < IDLE_GBPS:
                value += " each way"
        if state == "not re-measured yet":
            value += " not re-measured yet"
        spark_w = min(HISTORY, 12) if width >= 64 else 0
        bar_w = max(4, width - len(label) - len(value) - spark_w - 4)
        filled = round(min(shown, ceiling) / ceiling * bar_w) if ceiling and not state else 0
        bar = "█" * filled + ("░" if not state else "·") * (bar_w - filled)
        spark = sparkline(self.history, self.ceiling, spark_w)
        line = f"{label} {bar} {value}"
        if spark_w:
            line += f" {spark:<{spark_w}}"
        return line[:width]


class GaugeRows(ScrollView):
    """Every rail's row, drawn line by line: one widget, whatever the number of rails."""

    ALLOW_MAXIMIZE = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {f"rail-gauge--{v}" for v in VERDICTS}
    DEFAULT_CSS = """
    GaugeRows { overflow-x: hidden; overflow-y: auto; }
    GaugeRows > .rail-gauge--idle { color: $text-muted; }
    GaugeRows > .rail-gauge--pass { color: $success; }
    GaugeRows > .rail-gauge--warn { color: $warning; }
    GaugeRows > .rail-gauge--fail { color: $error; text-style: bold; }
    GaugeRows > .rail-gauge--live { color: $accent; }
    GaugeRows > .rail-gauge--stale { color: $text-muted; text-style: italic; }
    GaugeRows > .rail-gauge--uncabled { color: $text-disabled; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[RailGauge] = []  # in the order shown

    def show(self, rows: list[RailGauge]) -> None:
        """Show these rows, in this order."""
        self.rows = rows
        for row in rows:
            row.rows = self
        if self.is_attached:
            self.virtual_size = Size(0, len(rows))
            self.refresh()

    def on_mount(self) -> None:
        self.virtual_size = Size(0, len(self.rows))

    def style_of(self, row: RailGauge) -> Style:
        """The style the row is drawn in: its verdict's component class."""
        return self.get_component_rich_style(f"rail-gauge--{row.verdict}")

    def render_line(self, y: int) -> Strip:
        # beside the scrollbar, as a row widget was
        return self.strip(round(self.scroll_offset.y) + y, self.scrollable_content_region.width)

    def strip(self, index: int, width: int) -> Strip:
        """Row `index` as drawn, `width` cells wide."""
        # the panel's background only: below the last row, and right of a short row
        blank = Style.from_color(bgcolor=self.rich_style.bgcolor)
        if not 0 <= index < len(self.rows):
            return Strip.blank(width, blank)
        row = self.rows[index]
        return Strip([Segment(row.line(width), self.style_of(row))]).adjust_cell_length(
            width, blank
        )


class RailGauges(Vertical):
    """The gauge panel: a summary line and one scrolling row per node x rail."""

    DEFAULT_CSS = """
    RailGauges { height: 1fr; }
    RailGauges > #gauge-summary { height: 1; color: $text-muted; }
    RailGauges > #gauge-rows { height: 1fr; }
    """

    def __init__(
        self,
        *,
        expectations: Expectations | None = None,
        ceiling: float | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.expectations = expectations or Expectations()
        self.ceiling = ceiling if ceiling is not None else self.expectations.rail_switched_gbps
        self.gauges: dict[tuple[str, str], RailGauge] = {}
        self.stale_s = STALE_S
        self._label_width = 8
        # The panel holds its own children: rails and samples can arrive before it is mounted
        # (rails known at start-up) or while the app tears it down, and neither may query the DOM.
        self._summary = Static("no rail sampled yet", id="gauge-summary")
        self._rows = GaugeRows(id="gauge-rows")

    def compose(self) -> ComposeResult:
        yield self._summary
        yield self._rows

    @property
    def rows(self) -> GaugeRows:
        return self._rows

    def on_mount(self) -> None:
        self.set_interval(1.0, self.expire)

    def expire(self, now: float | None = None) -> None:
        """Rails whose samples stopped (the test ended) drop back to 0 and rest."""
        now = time.monotonic() if now is None else now
        stale = [g for g in self.gauges.values() if g.value and now - g.sampled_at > self.stale_s]
        for g in stale:
            g.sample(0.0)
        if stale:
            self._summarise()

    def gauge(self, node: str, netdev: str) -> RailGauge | None:
        return self.gauges.get((node, netdev))

    def set_rails(self, rails: Iterable[Rail]) -> None:
        """Pre-create rows for known rails (discovery or the lab) so the panel has its shape;
        a rail without carrier or address shows as not cabled."""
        rails = list(rails)
        cabled = {(r.node, r.netdev): bool(r.up and r.addresses) for r in rails}
        # new rows get their state before they are mounted (no restyle of each)
        self._add([(r.node, r.netdev, r.half, r.port) for r in rails], cabled=cabled)
        for key, is_cabled in cabled.items():
            gauge = self.gauges.get(key)
            if gauge is not None and gauge.cabled != is_cabled:
                gauge.cabled = is_cabled
                gauge._restyle()
        self._summarise()

    def mark_stale(self) -> None:
        """A verified fix changed the fabric: every measurement so far is from before it."""
        for gauge in self.gauges.values():
            gauge.mark_stale()
        self._summarise()

    def update_samples(self, samples: Mapping[tuple[str, str], float]) -> None:
        new = [(n, d, *rail_tag(d)) for (n, d) in samples if (n, d) not in self.gauges]
        self._add(new)
        for key, gbps in samples.items():
            self.gauges[key].sample(gbps)
        self._summarise()

    def add_measurement(self, measurement: Measurement, *, direct: bool = False) -> None:
        """A rail result colours the rails at both ends of its target against the ceiling of
        its situation (direct cable or through the switch); a both-halves result ("pair",
        target = the node) colours each half against the concurrent rate (across an ISL, a
        node alone on its switch: against the ISL's share of two flows)."""
        m = measurement
        if m.kind == "rail":
            e = self.expectations
            expected = e.rail_direct_gbps if direct else e.rail_switched_gbps
            value = m.value
            bidir = bool(m.extra.get("bidir"))
            if bidir:
                # both directions at once: the aggregate is judged and shown per direction
                value, expected = m.value / 2, e.bidir_rail_gbps / 2
            for end in m.target.split("->"):
                node, _, netdev = end.strip().partition("/")
                if netdev:
                    self._gauge(node, netdev).measure(value, expected, valid=m.valid, bidir=bidir)
        elif m.kind == "pair":
            halves = m.extra.get("halves")
            if isinstance(halves, dict):
                e = self.expectations
                expected = e.halves_concurrent_gbps
                if m.extra.get("across_isl"):
                    # a node alone on its switch: its two flows share one ISL direction
                    expected = e.isl_shared_flow_gbps
                for netdev, value in halves.items():
                    gauge = self._gauge(m.target, str(netdev))
                    gauge.measure(float(value), expected, valid=m.valid)
        self._summarise()

    def _gauge(self, node: str, netdev: str) -> RailGauge:
        if (node, netdev) not in self.gauges:
            self._add([(node, netdev, *rail_tag(netdev))])
        return self.gauges[(node, netdev)]

    def clear_measurements(self) -> None:
        for gauge in self.gauges.values():
            gauge.clear_measurement()
        self._summarise()

    def _add(
        self,
        rails: list[tuple[str, str, str, int]],
        *,
        cabled: Mapping[tuple[str, str], bool] | None = None,
    ) -> None:
        if not rails:
            return
        widest = max(len(clean(n)) for n, *_ in rails)
        if widest > self._label_width:
            self._label_width = widest
            for g in self.gauges.values():
                g.label_width = widest
            self._rows.refresh()
        added = False
        for node, netdev, half, port in rails:
            if (node, netdev) in self.gauges:
                continue
            gauge = RailGauge(
                node,
                netdev,
                half=half,
                port=port,
                ceiling=self.ceiling,
                expectations=self.expectations,
                label_width=self._label_width,
            )
            if cabled is not None and not cabled.get((node, netdev), True):
                gauge.cabled = False
            self.gauges[(node, netdev)] = gauge
            added = True
        if added:
            self._rows.show(sorted(self.gauges.values(), key=_gauge_order))
            self._summarise()

    def _summarise(self) -> None:
        if not self.gauges:
            return
        counts = {"pass": 0, "warn": 0, "fail": 0, "live": 0, "idle": 0, "stale": 0}
        counts["uncabled"] = 0
        for g in self.gauges.values():
            counts[g.verdict] += 1
        live = sum(g.value >= IDLE_GBPS for g in self.gauges.values())
        total = sum(g.value for g in self.gauges.values())
        nodes = len({n for n, _ in self.gauges})
        untested = sum(g.measured is None and g.cabled for g in self.gauges.values())
        extra = f" · {untested} not tested yet" if untested else ""
        if counts["stale"]:
            extra += f" · {counts['stale']} not re-measured since a fix"
        if counts["uncabled"]:
            extra += f" · {counts['uncabled']} not cabled"
        self._summary.update(
            f"{nodes} nodes · {len(self.gauges)} rails · tested ✔{counts['pass']} "
            f"▲{counts['warn']} ✘{counts['fail']}{extra} · {live} live, {total:.0f} Gb/s"
        )


def _gauge_order(g: RailGauge) -> tuple[tuple[str, int], int, str]:
    return (node_order(g.node), g.port, g.half)
