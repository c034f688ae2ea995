"""Step 8 reads what the next boot applies: a NetworkManager profile that fights netplan is a
finding with its fix (before any reboot shows it), and the golden export is listed on the switch
with the size that was read back."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard.engine import RunResult
from wizard.events import (
    BisectionConcluded,
    Event,
    ExportTaken,
    FixApplied,
    Note,
    VerdictReached,
)
from wizard.lab.lab import Lab
from wizard.lab.nmprofiles import KEYFILE_DIR
from wizard.model import Status

pytestmark = pytest.mark.lab

KEYFILE = f"{KEYFILE_DIR}Wired connection 1.nmconnection"


async def _walk(tmp_path: Path, lab: Lab) -> tuple[RunResult, list[Event]]:
    await lab.start()
    events: list[Event] = []
    wiring = await open_wizard(
        operator=TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False),
        sinks=[events.append],
        lab=None,
        lab_object=lab,
        session_dir=tmp_path / "session",
        time_scale=200.0,
        fsync=False,
    )
    try:
        result = await wiring.engine.run()
    finally:
        await wiring.close()
        await lab.stop()
    return result, events


def _verdicts(events: list[Event], fault: str) -> list[tuple[str, VerdictReached]]:
    return [
        (e.step, e) for e in events if isinstance(e, VerdictReached) and e.verdict.fault == fault
    ]


# nm-profile-fights, and spark2's rails at MTU 1500: the addressing step is about to write
# spark2's netplan, which the fighting profile would undo at the next boot
FIGHTS_AND_MTU = (
    Path(__file__).resolve().parents[2] / "wizard" / "lab" / "scenarios" / "nm-profile-fights.yaml"
)


async def test_a_fighting_networkmanager_profile_is_found_fixed_and_survives_the_reboot(
    tmp_path: Path,
) -> None:
    scenario = tmp_path / "nm-profile-fights-and-mtu.yaml"
    text = FIGHTS_AND_MTU.read_text().replace("name: nm-profile-fights", "name: fights-and-mtu")
    scenario.write_text(text + "faults:\n  - id: host.mtu\n")
    lab = Lab(str(scenario), time_scale=200.0)
    result, events = await _walk(tmp_path, lab)
    seen = _verdicts(events, "persist.nm-profile")
    first = seen[0][1].verdict
    assert seen[0][0] == "preflight" and first.status is Status.FAIL
    assert first.targets == ("spark2/enp1s0f0np0",)
    observed = first.evidence[0].observed
    assert observed.startswith("profile 'Wired connection 1' (")
    assert "/etc/NetworkManager/system-connections/Wired connection 1.nmconnection" in observed
    assert "autoconnects on enp1s0f0np0: ipv4.method auto" in observed
    assert result.healthy_before is False
    # the addressing step says the profile would undo its MTU fix, and fixes the profile first
    said = [e for e in events if isinstance(e, Note) and "would undo this step's fix" in e.text]
    assert [(n.step, n.level) for n in said] == [("addressing", "warn")]
    assert said[0].text.startswith(
        "persist.nm-profile on spark2 would undo this step's fix (host.mtu) at the next boot or "
        "AC drain: "
    )
    assert said[0].text.endswith("Fixed first, with Addressing and MTU, not left to step 8")
    applied = [(e.step, e.fault) for e in events if isinstance(e, FixApplied)]
    assert applied.index(("addressing", "persist.nm-profile")) < applied.index(
        ("addressing", "host.mtu")
    )
    assert ("persist", "persist.nm-profile") not in applied
    fixes = [f for f in result.fixes if f.fault == "persist.nm-profile"]
    assert [(f.target, f.verified) for f in fixes] == [("spark2", True)]
    assert [f.verified for f in result.fixes if f.fault == "host.mtu"] == [True]
    # kept, not deleted: the profile no longer autoconnects
    assert "autoconnect=false" in lab.world.nodes["spark2"].files[KEYFILE]
    last = [v for step, v in seen if step == "persist"][-1].verdict
    assert last.status is Status.PASS
    proof = [e for e in events if isinstance(e, BisectionConcluded) and e.step == "persist"]
    assert [p.conclusion for p in proof] == ["persisted"] and proof[0].nodes == ("spark2",)
    assert lab.world.nodes["spark2"].rail("enp1s0f0np0").addresses == ["10.9.1.2/24"]  # type: ignore[union-attr]
    assert result.healthy_after is True


async def test_the_golden_export_is_listed_on_the_switch_with_its_size(tmp_path: Path) -> None:
    lab = Lab("healthy-4node-crs804", time_scale=200.0)
    result, events = await _walk(tmp_path, lab)
    golden = [e for e in events if isinstance(e, ExportTaken) and e.purpose == "golden"]
    assert len(golden) == 1
    size = len(golden[0].contents.encode("utf-8"))
    seen = _verdicts(events, "persist.golden-export")
    # listed with its size, then, at the end of the step, compared with the running config
    assert [s for s, _ in seen] == ["persist", "persist"]
    v = seen[0][1].verdict
    assert v.status is Status.PASS and v.targets == ("crs804",)
    assert v.evidence[0].command == "/file print"
    assert v.evidence[0].observed == f"{golden[0].file} size={size}" == v.evidence[0].expected
    assert size > 100
    last = seen[-1][1].verdict
    assert last.status is Status.PASS and last.targets == ("crs804",)
    assert [e.command for e in last.evidence] == ["/file print", "/file print (golden) vs /export"]
    assert f"the golden export {golden[0].file} on crs804 equals its running configuration" in (
        last.summary
    )
    running = [e for e in events if isinstance(e, ExportTaken) and e.purpose == "running"]
    assert [e.file for e in running] == [golden[0].file.replace("-golden", "-golden-check")]
    assert result.healthy_after is True
