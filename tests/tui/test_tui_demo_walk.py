"""The CRS804 three-bug demo, walked through the TUI from the first screen to healthy.

The real thing end to end: the in-process lab (SSH and RouterOS API servers on 127.0.0.1), the
real engine and checks (`screens.compose.open_wizard`, as `fabwiz demo` wires them), driven by
key presses only. At each decision the test asserts what the screen shows, then answers as a
technician would: next step, perform physical actions with the lab's hands, apply each fix
once its export is verified.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from screens.app import FabwizApp
from screens.modals import ChoiceModal, ErrorModal, FixConfirmModal, PhysicalActionModal
from screens.widgets.detail import ActionBar
from screens.widgets.gauges import IDLE_GBPS
from wizard.model import Status

pytestmark = [pytest.mark.lab, pytest.mark.slow]

THREE_BUGS = {"switch.offload-split-cage", "switch.qos-pfc-stall", "host.duplicate-ip"}


async def test_three_bug_demo_walks_to_healthy(tmp_path: Path) -> None:
    pytest.importorskip("wizard.lab")
    from screens.commands.run import wizard_factory

    app = FabwizApp(
        wizard_factory(lab="crs804-three-bugs", time_scale=50.0, session_dir=tmp_path),
        sub_title="demo",
    )
    fixes_seen: list[tuple[str, bool, str]] = []  # (fault, apply enabled, export file)
    physical: list[str] = []
    questions: list[str] = []
    halves_gauges: dict[tuple[str, str], str] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        # The first screen: eight steps (that it paints before the lab is up is
        # test_first_screen_paints_before_a_slow_start's).
        screen = app.session
        assert app.screen is screen
        assert list(app.view.steps) == [
            "preflight",
            "direct_connect",
            "drain",
            "offload",
            "qos",
            "addressing",
            "halves",
            "persist",
        ]
        deadline = time.monotonic() + 280  # a loaded machine is slow, never stuck
        while app.view.ended is None:
            assert time.monotonic() < deadline, f"stuck at {app.view.current}: {app.screen}"
            await pilot.pause(0.05)
            top = app.screen
            if isinstance(top, ErrorModal):
                pytest.fail(f"error modal: {top.title_text}: {top.message}")
            if isinstance(top, FixConfirmModal):
                if not top.query("#apply"):
                    continue  # pushed, not composed yet
                export = top.export
                apply_btn = top.query_one("#apply")
                fixes_seen.append(
                    (top.plan.fault, not apply_btn.disabled, export.file if export else "")
                )
                if top.plan.switch_changes:
                    # Switch fixes reach the modal only with a verified export.
                    assert export is not None and export.verified and export.sha256
                await pilot.press("a")
                await pilot.pause(0.1)
                continue
            if isinstance(top, ChoiceModal):
                # the engine's own questions: skip the cabling preflight explains, reboot proof
                questions.append(top.question)
                await pilot.press("1")
                await pilot.pause(0.1)
                continue
            if isinstance(top, PhysicalActionModal) and top.state == "ask":
                assert top.can_perform_in_lab
                physical.append(top.action.kind)
                await pilot.press("p")
                continue
            choice = app.pending_choice
            if choice is not None and not choice.future.done() and top is screen:
                step = app.view.steps[choice.step]
                assert screen.viewed == choice.step
                # The action bar offers exactly the engine's options.
                bar = screen.query_one(ActionBar)
                assert bar.enabled("next")
                assert bar.offered("next")
                if choice.step == "halves":
                    # Both halves and NCCL just ran: the gauges hold their results.
                    halves_gauges = {
                        k: g.verdict for k, g in screen.gauges.gauges.items() if g.measured
                    }
                # The step's verdicts are on screen before the engine asks.
                assert step.phase in ("done", "skipped"), (choice.step, step.phase)
                await pilot.press("n")
        # why not, and the steps that did not end clean (short: pytest cuts a long message)
        assert app.view.ended.healthy, (
            app.view.ended.reason,
            [
                (s, v.status, [(f, str(x.status), x.summary) for f, x in v.verdicts.items()])
                for s, v in app.view.steps.items()
                if v.status not in ("pass", "fixed", "skipped")
            ],
        )
        # The three fixes were offered, applied with Apply enabled, switch ones after an export.
        faults = {f for f, _, _ in fixes_seen}
        assert faults >= THREE_BUGS, fixes_seen
        assert all(enabled for _, enabled, _ in fixes_seen)
        switch_exports = [e for f, _, e in fixes_seen if f.startswith("switch.")]
        assert all(e.endswith(".rsc") for e in switch_exports)
        # Preflight's findings explain the ~10 Gb/s: the cabling is skipped (first option);
        # the last step proves persistence by rebooting one node with the lab's hands.
        assert any("preflight already found" in q for q in questions), questions
        assert "recable" not in physical and "reboot" in physical, physical
        # Every finding of the three bugs ends verified in the step list.
        for step_id in ("offload", "qos", "addressing"):
            step = app.view.steps[step_id]
            assert step.status == "fixed", (step_id, step.status)
            assert any(f.state == "verified" for f in step.fixes.values())
        # the golden export, then the running config it is compared with at the end
        assert [e.purpose for e in app.view.steps["persist"].exports] == ["golden", "running"]
        assert app.view.unapplied_work() == []
        assert screen.query_one("#prompt").display
        # The gauges showed every rail of the last bandwidth tests at line rate.
        assert len(halves_gauges) == 16, halves_gauges
        assert set(halves_gauges.values()) == {"pass"}, halves_gauges
        # ...and moved while they ran: every rail was sampled live with traffic on it. How
        # much of a 0.1 s test a sample window catches depends on the machine's load, so the
        # peak is only required to be live (above the idle floor), not near line rate.
        peaks = {k: max(g.history, default=0.0) for k, g in screen.gauges.gauges.items()}
        assert len(peaks) == 16 and all(p >= IDLE_GBPS for p in peaks.values()), peaks
        # Preflight keeps the first picture (three findings); the final sweep in "persist"
        # re-judges every read-only check, the three bugs included, and finds nothing.
        first = app.view.steps["preflight"].verdicts
        assert all(first[f].status is Status.FAIL for f in THREE_BUGS), first.keys()
        final = app.view.steps["persist"].verdicts
        assert set(final) >= THREE_BUGS
        assert Status.worst(tuple(v.status for v in final.values())) in (Status.PASS, Status.BENIGN)
