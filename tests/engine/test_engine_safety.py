"""Fix safety on the lab: a failed verification rolls back to the exported state, and the
management-path guard refuses a change that would cut the wizard's own API session."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from flows import registry
from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard import fixes
from wizard.events import (
    Event,
    ExportTaken,
    FixApplied,
    FixRefusedEvent,
    FixRolledBack,
    FixVerified,
    RollbackArmed,
)
from wizard.lab import Lab
from wizard.model import FixPlan, SwitchChange

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


async def test_failed_verification_rolls_back_to_the_exported_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check = registry.by_fault("switch.offload-split-cage")
    assert check.fix is not None
    real_fix = check.fix

    def half_fix(parsed: Any, verdict: Any, ctx: Any) -> FixPlan | None:
        """The real plan, cut to its first command: the cage stays split, verification fails."""
        plan = real_fix(parsed, verdict, ctx)
        if plan is None or verdict.fault != "switch.offload-split-cage":
            return plan
        cut = tuple(
            SwitchChange(c.switch, c.commands[:1], c.rollback[:1]) for c in plan.switch_changes
        )
        return dataclasses.replace(plan, switch_changes=cut)

    patched = dataclasses.replace(check, fix=half_fix)
    import screens.compose

    monkeypatch.setattr(
        screens.compose, "CHECKS", tuple(patched if c is check else c for c in registry.CHECKS)
    )

    async with Lab("fault-switch-offload-split-cage", time_scale=100.0) as lab:
        result, events, wiring = await _walk(lab, tmp_path)
        applied = [e for e in events if isinstance(e, FixApplied)]
        assert applied and applied[0].fault == "switch.offload-split-cage"
        failed = [e for e in events if isinstance(e, FixVerified) and not e.ok]
        assert failed, "the cut plan must fail its verification"
        rolled = [e for e in events if isinstance(e, FixRolledBack)]
        assert rolled and rolled[0].restored is True
        assert "verification failed" in rolled[0].reason
        # The switch is back at the pre-fix export, as a fresh export shows.
        pre = next(e for e in events if isinstance(e, ExportTaken) and e.purpose == "pre-fix")
        api = wiring.fabric.api("crs804")
        after = await fixes.take_export(api, "crs804", "test-after")
        assert after.verified
        assert fixes.same_config(pre.contents, after.contents)
        # The dead-man entry is gone: it will not fire later.
        names = [e.name for e in events if isinstance(e, RollbackArmed)]
        sched = await api.call("/system/scheduler", "print")
        assert not [r for r in sched if r.get("name") in names]
        record = next(f for f in result.fixes if f.fault == "switch.offload-split-cage")
        assert record.applied and record.rolled_back and not record.verified
        assert result.healthy_after is False


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


async def test_management_guard_refuses_when_the_bridge_ports_cannot_be_read(
    tmp_path: Path,
) -> None:
    """The guard fails closed: a switch that drops every read of its bridge ports once the fix
    is previewed leaves fabwiz unable to tell where its API session runs, so nothing is sent."""
    from wizard.events import FixPreviewed
    from wizard.lab.faulthooks import FaultHooks

    async with Lab("fault-switch-offload-split-cage", time_scale=100.0) as lab:
        hooks = FaultHooks(lab)
        events: list[Event] = []

        def arm(e: Event) -> None:
            events.append(e)
            if isinstance(e, FixPreviewed) and not hooks.faults:
                hooks.api("crs804", "drop-before", match=r"^/interface/bridge/port/print", times=0)

        wiring = await open_wizard(
            operator=_operator(),
            sinks=[arm],
            lab_object=lab,
            session_dir=tmp_path / "session",
            fsync=False,
        )
        try:
            result = await wiring.engine.run()
        finally:
            await wiring.fabric.close()
            wiring.log.close()
        assert hooks.count("drop-before") >= 1
        refused = [e for e in events if isinstance(e, FixRefusedEvent)]
        assert refused and refused[0].fault == "switch.offload-split-cage"
        assert "could not be read" in refused[0].reason
        assert "crs804" in refused[0].reason and "by hand" in refused[0].reason
        assert not [e for e in events if isinstance(e, FixApplied)]
        assert not [e for e in events if isinstance(e, ExportTaken) and e.purpose == "pre-fix"]
        assert result.healthy_after is False


async def test_management_guard_refuses_when_no_management_port_is_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wizard.fabric import InventoryFabric

    monkeypatch.setattr(InventoryFabric, "management_ports", lambda self, switch: ())
    async with Lab("fault-switch-offload-split-cage", time_scale=100.0) as lab:
        result, events, _wiring = await _walk(lab, tmp_path)
    refused = [e for e in events if isinstance(e, FixRefusedEvent)]
    assert refused and refused[0].fault == "switch.offload-split-cage"
    assert "cannot tell which port of crs804" in refused[0].reason
    assert not [e for e in events if isinstance(e, FixApplied)]
    assert result.healthy_after is False
