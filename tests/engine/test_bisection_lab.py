"""The direct-connect step's reasoning on the lab: drain first, re-measure, bisect what stays low
with the right pair, skip the cabling when preflight already explains the numbers."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard.engine import RunResult
from wizard.events import (
    BisectionConcluded,
    Event,
    FixApplied,
    FixRolledBack,
    FixVerified,
    NodeDrained,
    Note,
    PhysicalActionDone,
    PhysicalActionRequested,
    StepChanged,
    VerdictReached,
)
from wizard.lab import scenarios
from wizard.lab.lab import Lab
from wizard.lab.world import World
from wizard.model import PhysicalAction

pytestmark = pytest.mark.lab

FOUR = "topology: {nodes: 4, switches: [{model: CRS804-4DDQ}], cables_per_node: 2}\n"


async def walk_text(
    text: str,
    tmp_path: Path,
    *,
    edit: Callable[[World], None] | None = None,
    operator: TerminalOperator | None = None,
    lab: Lab | None = None,
    time_scale: float = 200.0,
) -> tuple[RunResult, list[Event]]:
    if lab is None:
        lab = Lab(scenarios.load_text(text, path="scenario.yaml"), time_scale=time_scale)
    if edit is not None:
        edit(lab.world)
    await lab.start()
    events: list[Event] = []
    if operator is None:
        operator = TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False)
    wiring = await open_wizard(
        operator=operator,
        sinks=[events.append],
        lab=None,
        lab_object=lab,
        session_dir=tmp_path / "session",
        time_scale=time_scale,
        fsync=False,
    )
    try:
        result = await wiring.engine.run()
    finally:
        await wiring.close()
        await lab.stop()
    return result, events


def _step(events: list[Event], step: str) -> list[Event]:
    return [e for e in events if getattr(e, "step", None) == step]


async def test_degraded_cx7_on_the_second_pair_is_cleared_by_the_drain(tmp_path: Path) -> None:
    text = (
        "name: degraded-spark3\n" + FOUR + "faults:\n  - {id: host.cx7-degraded, nodes: [spark3]}\n"
    )
    result, events = await walk_text(text, tmp_path)
    direct = _step(events, "direct_connect")
    asked = [e for e in direct if isinstance(e, PhysicalActionRequested)]
    # The drain comes first, on the node common to the low pairs only (every pair is
    # measured: spark3 is low with each partner, who reach line rate without it); no cable
    # is moved.
    assert [(e.kind, e.nodes) for e in asked] == [("ac_drain", ("spark3",))]
    assert "spark3 is low with every partner (spark1-spark3, spark2-spark3, spark3-spark4" in (
        asked[0].instructions
    )
    assert "12." in asked[0].instructions
    concluded = [e for e in direct if isinstance(e, BisectionConcluded)]
    assert [c.conclusion for c in concluded] == ["cleared-by-drain"]
    c = concluded[0]
    assert c.nodes == ("spark3",)
    assert c.switched_gbps is not None and 8.0 <= c.switched_gbps <= 25.0
    assert "host.cx7-degraded on spark3, cleared by AC drain" in c.sentence
    assert "Gb/s before" in c.sentence and "Gb/s after" in c.sentence
    # Found (a failing verdict), fixed (applied and verified), never "healthy before".
    found = [
        e.verdict
        for e in direct
        if isinstance(e, VerdictReached)
        and e.verdict.fault == "host.cx7-degraded"
        and e.verdict.check == "bisection"
    ]
    assert [v.status.value for v in found] == ["fail", "pass"]
    assert found[0].targets == ("spark3",)
    assert any(isinstance(e, FixApplied) and e.fault == "host.cx7-degraded" for e in direct)
    assert any(
        isinstance(e, FixVerified) and e.ok and "cleared by AC drain" in e.detail for e in direct
    )
    assert result.healthy_before is False
    assert result.healthy_after is True
    fixed = [f for f in result.fixes if f.fault == "host.cx7-degraded"]
    assert fixed and fixed[0].verified and fixed[0].target == "spark3"
    assert not any(isinstance(e, PhysicalActionRequested) and e.kind == "recable" for e in events)


def _stale_cx7(world: World) -> None:
    # a CX7 stuck low with current firmware: nothing in the configuration shows it and an AC
    # drain does not clear it (NVIDIA's "stale initialisation" band)
    world.nodes["spark3"].throttled = True


async def test_low_after_the_drain_is_bisected_with_a_node_that_measured_well(
    tmp_path: Path,
) -> None:
    text = "name: stale-spark3\n" + FOUR + "faults: []\n"
    result, events = await walk_text(text, tmp_path, edit=_stale_cx7)
    direct = _step(events, "direct_connect")
    asked = [e for e in direct if isinstance(e, PhysicalActionRequested)]
    assert asked[0].kind == "ac_drain" and asked[0].nodes == ("spark3",)  # the common node
    recable = [e for e in asked if e.kind == "recable"]
    # spark3 (worst rail) with spark1 (measured well), never the first two nodes by index
    to_direct = recable[0]
    assert to_direct.nodes == ("spark3", "spark1")
    assert len(to_direct.cables) == 1
    node, port, dest = to_direct.cables[0]
    assert (node, dest) == ("spark3", f"node:spark1:{port}")
    text_ = to_direct.instructions
    assert f"unplug spark3 {port} from crs804 qsfp56-dd-3-" in text_
    assert f"spark1 {port} from crs804 qsfp56-dd-1-" in text_
    assert "QSFP112 DAC" in text_ and "breakout DAC" in text_ and "cannot go into a Spark" in text_
    # and put back exactly where they were
    assert recable[-1].cables == to_direct.undo
    assert {d for _n, _p, d in to_direct.undo} == {
        f"switch:crs804:{q}" for q in _switch_ports(text_)
    }
    concluded = [e for e in direct if isinstance(e, BisectionConcluded)]
    assert [c.conclusion for c in concluded] == ["host"]
    c = concluded[0]
    assert c.nodes == ("spark3",)
    assert c.direct_gbps is not None and c.direct_gbps < 25.0
    assert c.switched_gbps is not None and c.switched_gbps < 25.0
    assert "direct cable spark3 port" in c.sentence and "<-> spark1 port" in c.sentence
    assert f"{c.direct_gbps:.2f} Gb/s, against {c.switched_gbps:.2f} Gb/s" in c.sentence
    assert "the fault is on the host side" in c.sentence
    assert "was AC-drained and still measures low" in c.sentence
    assert result.healthy_before is False
    assert result.healthy_after is False  # a CX7 stuck low is never hidden


def _switch_ports(instructions: str) -> set[str]:
    return set(re.findall(r"from crs804 (qsfp56-dd-\d+-\d+)", instructions))


async def test_preflight_finding_that_explains_the_numbers_skips_the_cabling(
    tmp_path: Path,
) -> None:
    # A fabric port with hw=no forwards in the switch CPU (~9.5 Gb/s): preflight's config sweep
    # finds it, so the direct cable is not needed. (A throttled CX7 is no longer a preflight
    # finding: an old firmware alone is information per FAULTS.md; the bisection finds it.)
    text = "name: hw-off\n" + FOUR + "faults:\n  - {id: switch.offload-disabled}\n"
    result, events = await walk_text(text, tmp_path)
    direct = _step(events, "direct_connect")
    assert not [e for e in direct if isinstance(e, PhysicalActionRequested) and e.kind == "recable"]
    skipped = [e for e in direct if isinstance(e, StepChanged) and e.phase == "skipped"]
    assert len(skipped) == 1
    assert skipped[0].reason.startswith("skipped: preflight already found switch.offload-disabled")
    concluded = [e for e in direct if isinstance(e, BisectionConcluded)]
    assert [c.conclusion for c in concluded] == ["skipped"]
    assert "explains the low numbers through the switch" in concluded[0].sentence
    assert "physical direct-connect test is skipped" in concluded[0].sentence
    # nothing is fixed here: the switch finding is fixed in its own step, the offload step
    assert not [e for e in direct if isinstance(e, FixApplied)]
    applied = [e for e in events if isinstance(e, FixApplied)]
    assert [(e.step, e.fault) for e in applied] == [("offload", "switch.offload-disabled")]
    assert result.healthy_before is False
    assert result.healthy_after is True


class RebootsFirst(TerminalOperator):
    """A technician who answers the first AC-drain prompt with a warm reboot (and says done),
    then does the real drain when told it did not count."""

    def __init__(self, lab: Lab) -> None:
        super().__init__(Console(file=io.StringIO()), yes=True, interactive=False)
        self.lab = lab
        self.rebooted = 0
        self.errors: list[str] = []

    async def physical_action(self, action: PhysicalAction, can_perform_in_lab: bool) -> str:
        if action.kind == "ac_drain" and not self.rebooted:
            self.rebooted += 1
            for node in action.nodes:
                self.lab.hands.reboot(node)
            return "done"
        return await super().physical_action(action, can_perform_in_lab)

    async def error(self, title: str, message: str, hint: str | None) -> None:
        self.errors.append(message)


async def test_a_reboot_offered_as_a_drain_is_refused_with_the_journal_gap(
    tmp_path: Path,
) -> None:
    text = (
        "name: degraded-spark3\n" + FOUR + "faults:\n  - {id: host.cx7-degraded, nodes: [spark3]}\n"
    )
    lab = Lab(scenarios.load_text(text, path="scenario.yaml"), time_scale=200.0)
    operator = RebootsFirst(lab)
    result, events = await walk_text(text, tmp_path, lab=lab, operator=operator)
    assert operator.rebooted == 1
    refused = [
        e
        for e in events
        if isinstance(e, Note) and "rebooted, not drained" in e.text and e.step == "direct_connect"
    ]
    assert {e.text.split()[0] for e in refused} == {"spark3"}
    gap = re.search(
        r"not drained: (\d+) s between the previous boot's last journal entry", refused[0].text
    )
    assert gap is not None and int(gap.group(1)) < 60
    assert any("rebooted, not drained" in m for m in operator.errors)
    # the reboot drained nothing; the real drain that followed did, with the journal's word
    drained = [e for e in events if isinstance(e, NodeDrained)]
    first_drain = events.index(drained[0])
    assert events.index(refused[-1]) < first_drain
    done = [e for e in events if isinstance(e, PhysicalActionDone) and e.kind == "ac_drain"]
    assert "spark3 was off 75 s (journal): AC-drained" in done[0].observed
    # the degraded state survived the reboot and was cleared by the drain, as on real CX7s
    concluded = [e for e in events if isinstance(e, BisectionConcluded)]
    assert concluded[0].conclusion == "cleared-by-drain"
    assert result.healthy_after is True


async def test_a_skipped_test_is_taken_up_again_once_the_explanation_is_fixed(
    tmp_path: Path,
) -> None:
    text = (
        "name: offload-and-degraded\n"
        + FOUR
        + "faults:\n  - id: switch.offload-split-cage\n"
        + "  - {id: host.cx7-degraded, nodes: [spark3]}\n"
    )
    result, events = await walk_text(text, tmp_path)
    concluded = [
        e for e in events if isinstance(e, BisectionConcluded) and e.step == "direct_connect"
    ]
    assert [(c.step, c.conclusion) for c in concluded] == [
        ("direct_connect", "skipped"),
        ("direct_connect", "cleared-by-drain"),
    ]
    assert concluded[0].faults == ("switch.offload-split-cage",)
    back = [
        e for e in events if isinstance(e, Note) and "back to the direct-connect test" in e.text
    ]
    assert len(back) == 1 and back[0].step == "offload"
    # the low test of spark3's pair (on a half-B rail it runs spark4 -> spark3)
    assert "spark4/enP2p1s0f0np0->spark3/enP2p1s0f0np0 measures" in back[0].text
    # the step order: the test skipped, the offload fixed, the test again, then on to QoS
    entered = [e.step for e in events if isinstance(e, StepChanged) and e.phase == "entered"]
    assert entered[:6] == [
        "preflight",
        "direct_connect",
        "drain",
        "offload",
        "direct_connect",
        "qos",
    ]
    assert concluded[1].nodes == ("spark3",)  # every pair measured: the common node
    assert {f.fault for f in result.fixes if f.verified} == {
        "switch.offload-split-cage",
        "host.cx7-degraded",
    }
    assert result.healthy_after is True


async def test_forced_legs_that_train_for_seconds_are_waited_for_not_rolled_back(
    tmp_path: Path,
) -> None:
    text = (
        "name: forced-legs-delayed\n"
        + FOUR
        + "faults:\n  - id: switch.breakout-autoneg\n"
        + "facts:\n  switches:\n    crs804: {link_up_delay_s: 40}\n"
    )
    result, events = await walk_text(text, tmp_path, time_scale=20.0)
    applied = [
        e for e in events if isinstance(e, FixApplied) and e.fault == "switch.breakout-autoneg"
    ]
    assert len(applied) == 1
    i = events.index(applied[0])
    verified = next(e for e in events[i:] if isinstance(e, FixVerified))
    j = events.index(verified)
    between = [e for e in events[i:j] if isinstance(e, Note)]
    countdown = [e.text for e in between if e.text.startswith("settling: ")]
    # the legs were still training after the change: the wizard waited, showing the countdown
    assert countdown and "crs804/qsfp56-dd-1-1" in countdown[0] and "s left" in countdown[0]
    settled = [e.text for e in between if e.text.startswith("links settled")]
    assert len(settled) == 1
    assert verified.ok and verified.fault == "switch.breakout-autoneg"
    assert not [e for e in events if isinstance(e, FixRolledBack)]
    assert result.healthy_after is True
