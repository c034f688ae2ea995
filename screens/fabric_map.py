"""The fabric map (`m`): per node and lane, host and switch side by side.

QSFP cage → PCIe half → netdev → RDMA device → addresses → switch sub-port → bridge → `H`
flag → link rate/FEC → last measured Gb/s: the picture a technician draws on a whiteboard,
joined from discovery (the rails), the switch answers recorded in the session (bridge ports,
ethernet monitor) and the gauges. Each cell is coloured by the worst verdict whose evidence
names its side of the lane.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from screens.modals import Dialog
from screens.widgets.gauges import RailGauge
from screens.widgets.view_model import SessionView
from wizard.model import ProbeResult, Rail, Status

COLUMNS = (
    "Node",
    "Cage",
    "Half",
    "Netdev",
    "RDMA",
    "Addresses",
    "Switch port",
    "Bridge",
    "H",
    "Rate/FEC",
    "Last Gb/s",
)
_STATUSES = ("pass", "benign", "unknown", "warn", "fail")


class MapTable(DataTable[Text]):
    """The map's cells, coloured from CSS by verdict."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {f"map--{s}" for s in _STATUSES}
    DEFAULT_CSS = """
    MapTable > .map--pass { color: $success; }
    MapTable > .map--benign { color: $success; }
    MapTable > .map--unknown { color: $warning; }
    MapTable > .map--warn { color: $warning; }
    MapTable > .map--fail { color: $error; text-style: bold; }
    """

    def cell(self, text: str, status: str) -> Text:
        if status not in _STATUSES:
            return Text(text)
        return Text(text, style=self.get_component_rich_style(f"map--{status}", partial=True))


@dataclass(frozen=True, slots=True)
class Lane:
    cells: tuple[tuple[str, str], ...]  # (text, status) per column


def _latest_rows(view: SessionView, prefix: str, verb: str) -> list[dict[str, str]]:
    found: ProbeResult | None = None
    for step in view.steps.values():
        for p in step.probes:
            own = p.command.startswith(prefix) and not p.command.startswith(prefix + "/")
            if p.kind == "api" and own and verb in p.command and p.rows:
                found = p
    return list(found.rows) if found is not None else []


def _status_by_target(view: SessionView) -> dict[str, Status]:
    out: dict[str, Status] = {}
    for _step, v in view.latest.values():
        for e in v.evidence:
            out[e.target] = Status.worst([out.get(e.target, Status.PASS), e.status])
        for t in v.targets if v.status is not Status.PASS else ():
            out[t] = Status.worst([out.get(t, Status.PASS), v.status])
    return out


def _worst(statuses: Mapping[str, Status], *keys: str) -> str:
    seen = [statuses[k] for k in keys if k and k in statuses]
    return str(Status.worst(seen)) if seen else ""


def lanes(
    view: SessionView,
    rails: Iterable[Rail],
    gauges: Mapping[tuple[str, str], RailGauge],
    cabling: Mapping[str, tuple[str, str]] | None = None,
) -> list[Lane]:
    last: dict[tuple[str, str], tuple[str, str]] = {}
    for key, gauge in gauges.items():
        if gauge.measured is not None:
            verdict = gauge.verdict if gauge.verdict in _STATUSES else ""
            last[key] = (f"{gauge.measured[0]:.1f}" + (" (stale)" if gauge.stale else ""), verdict)
    return lanes_from(view, rails, last, cabling)


def lanes_from(
    view: SessionView,
    rails: Iterable[Rail],
    last_measured: Mapping[tuple[str, str], tuple[str, str]],
    cabling: Mapping[str, tuple[str, str]] | None = None,
) -> list[Lane]:
    """The lanes, with each rail's last measured Gb/s given as (text, status) by (node, netdev)
    (the gauges in the TUI, the recorded measurements in a report)."""
    bridge = {r.get("interface", ""): r for r in _latest_rows(view, "/interface/bridge/port", "")}
    monitor = {r.get("name", ""): r for r in _latest_rows(view, "/interface/ethernet", "monitor")}
    statuses = _status_by_target(view)
    out = []
    for r in sorted(rails, key=lambda r: (r.node, r.port, r.half)):
        host = _worst(statuses, r.node, f"{r.node}/{r.netdev}")
        switch, port = r.switch or "", r.switch_port or ""
        if not port and cabling and r.key in cabling:
            switch, port = cabling[r.key]
        sw = _worst(statuses, switch, f"{switch}/{port}") if port else ""
        b = bridge.get(port, {})
        m = monitor.get(port, {})
        h = (b.get("hw-offload") or "").lower()
        measured = last_measured.get((r.node, r.netdev))
        if measured is None:
            last, last_status = ("not cabled" if not r.up else "not tested"), ""
        else:
            last, last_status = measured
        cells = (
            (r.node, host),
            (str(r.port), ""),
            (r.half, ""),
            (r.netdev, host),
            (r.rdma, host),
            (", ".join(r.addresses) or "—", host),
            (f"{switch}:{port}" if port else "—", sw),
            (b.get("bridge", "—"), sw),
            ("H" if h in ("true", "yes") else ("—" if not b else "no"), sw),
            (f"{m.get('rate', '?')}/{m.get('fec', '?')}" if m else "—", sw),
            (last, last_status),
        )
        out.append(Lane(cells))
    return out


class FabricMapModal(Dialog[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,m", "close", "Close")]

    def __init__(self, rows: list[Lane]) -> None:
        super().__init__(classes="dialog")
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="map"):
            yield Static(
                Text("Fabric map: host and switch, per lane", style="bold"), id="dialog-title"
            )
            if not self.rows:
                yield Static("No rail discovered yet: the map fills in after preflight.")
            yield MapTable(id="map-table", zebra_stripes=True)

    def on_mount(self) -> None:
        super().on_mount()
        table = self.query_one("#map-table", MapTable)
        table.add_columns(*COLUMNS)
        for lane in self.rows:
            table.add_row(*(table.cell(t, s) for t, s in lane.cells))
        table.focus()

    def action_close(self) -> None:
        self.dismiss(None)
