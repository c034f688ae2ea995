"""The fabric map of a recorded session, for the HTML report: the same lanes as the TUI's `m`
view (screens/fabric_map.py), rebuilt from the log alone.

The rails are rediscovered from the recorded probe answers exactly as the live sweep discovers
them (flows.replay), the switch side comes from the recorded bridge-port and ethernet-monitor
rows, each cell is coloured by the latest verdicts, and the last Gb/s of each rail end is its
last valid recorded measurement judged against the expectations table (a `-b` run per
direction).
"""

from __future__ import annotations

from typing import Any

from flows.expectations import Expectations
from wizard.events import MeasurementTaken, ProbeAnswered
from wizard.model import ProbeResult
from wizard.session import LoadedSession


def fabric_map_data(loaded: LoadedSession, e: Expectations | None = None) -> dict[str, Any] | None:
    """{"headers": [...], "rows": [[{"text", "status"}, ...], ...]}, or None when the session
    recorded no rail discovery."""
    from flows.replay import observations_from, rails_from_observations
    from screens.fabric_map import COLUMNS, lanes_from
    from screens.widgets.view_model import SessionView, load_steps

    e = e or Expectations()
    view = SessionView.new(load_steps())
    latest: dict[tuple[str, str, str], ProbeResult] = {}
    last: dict[tuple[str, str], tuple[str, str]] = {}
    for ev in loaded.events:
        view.apply(ev)
        if isinstance(ev, ProbeAnswered):
            latest[(ev.result.kind, ev.result.target, ev.probe)] = ev.result
        elif isinstance(ev, MeasurementTaken) and ev.measurement.kind == "rail":
            m = ev.measurement
            if not m.valid:
                continue
            bidir = bool(m.extra.get("bidir"))
            value = m.value / 2 if bidir else m.value
            expected = e.bidir_rail_gbps / 2 if bidir else e.rail_switched_gbps
            text = f"{value:.1f}" + (" each way" if bidir else "")
            for end in m.target.split("->"):
                node, _, netdev = end.strip().partition("/")
                if netdev:
                    last[(node, netdev)] = (text, e.band(value, expected))
    rails = [
        r for rs in rails_from_observations(observations_from(latest.items())).values() for r in rs
    ]
    if not rails:
        return None
    rows = [
        [{"text": text, "status": status or "none"} for text, status in lane.cells]
        for lane in lanes_from(view, rails, last)
    ]
    return {"headers": list(COLUMNS), "rows": rows}


__all__ = ["fabric_map_data"]
