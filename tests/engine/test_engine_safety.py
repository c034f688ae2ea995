"""Fix safety on the lab: a failed verification rolls back to the exported state, and the
management-path guard refuses a change that would cut the wizard's own API session."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard.events import (
    Event,
    ExportTaken,
    FixApplied,
    FixRefusedEvent,
)
from wizard.lab import Lab

pytestmark = pytest.mark.lab


def _operator() -> TerminalOperator:
    return TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False)


async def _walk(lab: Lab, tmp_path: Path) -> tuple[Any, list[Event], Any]:
    events: list[Event] = []
    wiring = await open_wizard(
        operator=_operator(),
        sinks=[events.append],
        lab_object=lab,
        session_dir=tmp_path / "session",
        fsync=False,
    )
    try:
        result = await wiring.engine.run()
    finally:
        await wiring.fabric.close()
        wiring.log.close()
    return result, events, wiring


async def test_management_guard_refuses_to_cut_the_api_session(tmp_path: Path) -> None:
    async with Lab("fault-switch-offload-split-cage", time_scale=100.0) as lab:
        # The API session arrives on a sub-port the split-cage fix would remove.
        data = yaml.safe_load(lab.inventory_path.read_text())
        data["switches"][0]["management_ports"] = ["qsfp56-dd-1-2"]
        lab.inventory_path.write_text(yaml.safe_dump(data))
        result, events, wiring = await _walk(lab, tmp_path)
        refused = [e for e in events if isinstance(e, FixRefusedEvent)]
        assert refused and refused[0].fault == "switch.offload-split-cage"
        assert "qsfp56-dd-1-2" in refused[0].reason and "API session" in refused[0].reason
        assert "by hand" in refused[0].reason  # the manual alternative
        assert not [e for e in events if isinstance(e, FixApplied)]
        # Nothing was sent: no export was even taken for it, and the port is still bridged.
        assert not [e for e in events if isinstance(e, ExportTaken) and e.purpose == "pre-fix"]
        rows = await wiring.fabric.api("crs804").call("/interface/bridge/port", "print")
        assert any(r.get("interface") == "qsfp56-dd-1-2" for r in rows)
        assert result.healthy_after is False
