"""The reasoning on screen: each step's conclusion as a sentence with its numbers, and gauges
that say why they show what they show (not cabled, not tested yet, a measured 0.0, not
re-measured since a verified fix) against the ceiling of the rail's situation."""

from __future__ import annotations

from typing import Any

from tui_fakes import drawn_as

from flows.expectations import Expectations
from screens.app import FabwizApp
from screens.widgets.conclusion import conclusion
from screens.widgets.view_model import SessionView, load_steps
from wizard.events import (
    FixApplied,
    FixVerified,
    MeasurementTaken,
    PhysicalActionDone,
    PhysicalActionRequested,
    VerdictReached,
)
from wizard.model import Measurement, Rail, Status, Verdict

RETRY = (
    "Completion with error at client; Failed status 12 (transport retry counter exceeded): "
    "wr_id 0 syndrom 0x81"
)


def rail(node: str, netdev: str, value: float, reason: str = "") -> Measurement:
    return Measurement("rail", f"{node}/{netdev}->spark2/{netdev}", value, "Gb/s", reason=reason)


def direct_connect_events() -> list[Any]:
    return [
        MeasurementTaken(
            step="direct_connect", measurement=rail("spark1", "enp1s0f0np0", 0.0, RETRY)
        ),
        MeasurementTaken(
            step="direct_connect", measurement=rail("spark3", "enp1s0f0np0", 0.0, RETRY)
        ),
        PhysicalActionRequested(
            step="direct_connect",
            kind="recable",
            nodes=("spark1", "spark2"),
            instructions="connect spark1 port 0 to spark2 port 0",
            cables=(("spark1", "0", "node:spark2:0"), ("spark2", "0", "node:spark1:0")),
        ),
        PhysicalActionDone(
            step="direct_connect", kind="recable", nodes=("spark1", "spark2"), performed_by="lab"
        ),
        MeasurementTaken(step="direct_connect", measurement=rail("spark1", "enp1s0f0np0", 111.97)),
    ]


def test_the_direct_connect_conclusion_names_both_numbers_and_the_branch() -> None:
    view = SessionView.new(load_steps())
    for e in direct_connect_events():
        view.apply(e)
    assert view.steps["direct_connect"].direct == [False, False, True]
    assert conclusion(view.steps["direct_connect"], Expectations()) == (
        "through the switch: 0.00 Gb/s, transport retry counter exceeded; "
        "direct cable: 111.97 Gb/s; so the fault is on the switch path"
    )
    # A direct cable below target sends the walk down the host branch.
    slow = SessionView.new(load_steps())
    for e in direct_connect_events()[:-1]:
        slow.apply(e)
    slow.apply(
        MeasurementTaken(step="direct_connect", measurement=rail("spark1", "enp1s0f0np0", 12.74))
    )
    said = conclusion(slow.steps["direct_connect"], Expectations())
    assert said.endswith(
        "direct cable: 12.74 Gb/s; below 100 Gb/s on a direct cable too: "
        "so the fault is on the host side (NIC, PCIe, CX7 state)"
    )


def test_the_halves_conclusion_reads_the_cluster_all_reduce_against_its_gate() -> None:
    """NCCL in the conclusion is the cluster's all_reduce (not the 2-node sendrecv, 26.4)
    against the gate of its nodes and switches (across three switches 18.28, not 21.875); a
    node alone on its switch is held to the ISL's share of both halves."""
    view = SessionView.new(load_steps())
    ms = [
        Measurement("pair", "spark1", 196.1, "Gb/s", extra={"halves": {}}),
        Measurement("pair", "spark14", 163.7, "Gb/s", extra={"across_isl": True}),
        Measurement(
            "nccl",
            "cluster",
            19.38,
            "GB/s",
            extra={"nodes": [f"s{i}" for i in range(14)], "switches": 3},
        ),
        Measurement("nccl", "spark1+spark2/sendrecv_perf", 26.4, "GB/s"),
        Measurement("nccl", "cluster/job-env", 19.36, "GB/s"),
    ]
    for m in ms:
        view.apply(MeasurementTaken(step="halves", measurement=m))
    said = conclusion(view.steps["halves"], Expectations())
    assert "both halves 163.7–196.1 Gb/s per node (expected ≥ 180; ≥ 150 for 1 node(s) " in said
    assert said.endswith("NCCL all_reduce busbw 19.38 GB/s (gate 18.28)")


def test_other_steps_conclude_with_their_findings_and_numbers() -> None:
    view = SessionView.new(load_steps())
    view.apply(
        VerdictReached(
            step="offload",
            verdict=Verdict("switch.offload-split-cage", Status.FAIL, "cage split", ("crs804",)),
        )
    )
    view.apply(
        VerdictReached(
            step="offload",
            verdict=Verdict("switch.mtu", Status.UNKNOWN, "not checked", ("crs804",)),
        )
    )
    view.apply(MeasurementTaken(step="offload", measurement=rail("spark1", "enp1s0f0np0", 9.4)))
    view.apply(MeasurementTaken(step="offload", measurement=rail("spark3", "enp1s0f0np0", 9.5)))
    assert conclusion(view.steps["offload"], Expectations()) == (
        "1 finding(s): switch.offload-split-cage; 1 not checked (could not see crs804); "
        "rails 9.4–9.5 Gb/s (expected ~109 through the switch)"
    )


async def test_gauges_say_why_they_show_what_they_show() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        gauges = app.session.gauges
        gauges.set_rails(
            [
                Rail(
                    "spark1",
                    "enp1s0f0np0",
                    "rocep1s0f0",
                    0,
                    "A",
                    up=True,
                    addresses=("10.9.1.1/24",),
                ),
                Rail("spark1", "enp1s0f1np1", "rocep1s0f1", 1, "A", up=False),
                Rail(
                    "spark2",
                    "enp1s0f0np0",
                    "rocep1s0f0",
                    0,
                    "A",
                    up=True,
                    addresses=("10.9.1.2/24",),
                ),
                Rail(
                    "spark3",
                    "enp1s0f0np0",
                    "rocep1s0f0",
                    0,
                    "A",
                    up=True,
                    addresses=("10.9.1.3/24",),
                ),
            ]
        )
        await pilot.pause()
        g = gauges.gauge
        assert g("spark1", "enp1s0f1np1").state_text == "not cabled"
        assert drawn_as(gauges, g("spark1", "enp1s0f1np1"), "uncabled")
        assert g("spark3", "enp1s0f0np0").state_text == "not tested yet"
        assert "not tested yet" in str(g("spark3", "enp1s0f0np0").render())
        summary = str(gauges.query_one("#gauge-summary").render())
        assert "tested ✔0 ▲0 ✘0 · 3 not tested yet · 1 not cabled" in summary
        # Through the switch: 0.0 measured, against the switched ceiling (a real 0, red).
        for e in direct_connect_events()[:2]:
            app.ports.emit(e)
        await pilot.pause()
        zero = g("spark1", "enp1s0f0np0")
        assert zero.measured == (0.0, 109.2, True) and zero.verdict == "fail"
        assert zero.state_text == "" and "0.0/109" in str(zero.render())
        # On the direct cable the ceiling is the direct one.
        for e in direct_connect_events()[2:]:
            app.ports.emit(e)
        await pilot.pause()
        assert zero.measured == (111.97, 111.86, True) and zero.verdict == "pass"
        assert "112.0/112" in str(zero.render())
        # A verified fix: every number so far is from before it.
        app.ports.emit(
            FixVerified(step="offload", fix_id="f1", fault="switch.offload-split-cage", ok=True)
        )
        await pilot.pause()
        assert zero.state_text == "not re-measured yet" and drawn_as(gauges, zero, "stale")
        assert "not re-measured yet" in str(zero.render())
        summary = str(gauges.query_one("#gauge-summary").render())
        assert "3 not re-measured since a fix · 1 not cabled" in summary
        # The next measurement makes it current again.
        app.ports.emit(
            MeasurementTaken(step="offload", measurement=rail("spark1", "enp1s0f0np0", 109.1))
        )
        await pilot.pause()
        assert not zero.stale and zero.verdict == "pass"


async def test_a_bidirectional_rail_is_judged_and_shown_per_direction() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        gauges = app.session.gauges
        both = Measurement(
            "rail",
            "spark1/enp1s0f0np0->spark2/enp1s0f0np0",
            206.0,
            "Gb/s",
            extra={"bidir": True},
        )
        app.ports.emit(MeasurementTaken(step="offload", measurement=both))
        await pilot.pause()
        g = gauges.gauge("spark1", "enp1s0f0np0")
        assert g is not None
        # 206 Gb/s aggregate is 103 each way against the -b expectation's 103 each way
        assert g.measured == (103.0, Expectations().bidir_rail_gbps / 2, True)
        assert g.verdict == "pass" and g.bidir
        text = str(g.render())
        assert "103.0/103  each way" in text and "206.0" not in text
        # a -b rail at the one-way switched rate is half of what -b should carry: a fail
        half = Measurement(
            "rail",
            "spark1/enp1s0f0np0->spark2/enp1s0f0np0",
            109.0,
            "Gb/s",
            extra={"bidir": True},
        )
        app.ports.emit(MeasurementTaken(step="offload", measurement=half))
        await pilot.pause()
        assert g.measured is not None and g.measured[0] == 54.5 and g.verdict == "fail"


def test_a_step_whose_rails_moved_nothing_says_why_in_the_tools_words() -> None:
    # after the offload fix the PFC stall shows: RoCE connects, the data stalls, perftest says so
    view = SessionView.new(load_steps())
    for node in ("spark1", "spark3"):
        view.apply(
            MeasurementTaken(step="offload", measurement=rail(node, "enp1s0f0np0", 0.0, RETRY))
        )
    assert conclusion(view.steps["offload"], Expectations()) == (
        "rails 0.00 Gb/s, transport retry counter exceeded (expected ~109 through the switch)"
    )


def test_a_step_that_measured_before_its_fix_shows_before_and_after_apart() -> None:
    # the QoS step proves the stall before its fix and measures again after it: one span of
    # 0.00-109.3 would say neither
    view = SessionView.new(load_steps())
    for node in ("spark1", "spark3"):
        view.apply(MeasurementTaken(step="qos", measurement=rail(node, "enp1s0f0np0", 0.0, RETRY)))
    view.apply(FixApplied(step="qos", fix_id="f1", fault="switch.qos-pfc-stall", target="crs804"))
    for node, gbps in (("spark1", 109.1), ("spark3", 109.3)):
        view.apply(MeasurementTaken(step="qos", measurement=rail(node, "enp1s0f0np0", gbps)))
    assert conclusion(view.steps["qos"], Expectations()) == (
        "rails 109.1–109.3 Gb/s after the fix, 0.00 Gb/s, transport retry counter exceeded "
        "before it (expected ~109 through the switch)"
    )


async def test_a_fix_verified_with_the_rails_still_held_names_what_is_still_open() -> None:
    """Seed 000's order: the offload fix is verified (H flags, activation line), then the rails
    stall at 0, held by the QoS stall preflight found and the next step proves. The offload
    step's conclusion says so instead of "fixed and verified" beside 0 Gb/s alone."""
    from screens.widgets.detail import StepDetail

    app = FabwizApp(None)
    async with app.run_test(size=(140, 45)) as pilot:
        emit = app.ports.emit
        emit(
            VerdictReached(
                step="preflight",
                verdict=Verdict("switch.qos-pfc-stall", Status.FAIL, "lossless QoS", ("crs804",)),
            )
        )
        emit(
            VerdictReached(
                step="offload",
                verdict=Verdict("switch.offload-split-cage", Status.FAIL, "split", ("crs804",)),
            )
        )
        emit(MeasurementTaken(step="offload", measurement=rail("spark1", "enp1s0f0np0", 9.4)))
        emit(
            FixApplied(
                step="offload", fix_id="f1", fault="switch.offload-split-cage", target="crs804"
            )
        )
        emit(FixVerified(step="offload", fix_id="f1", fault="switch.offload-split-cage", ok=True))
        emit(
            VerdictReached(
                step="offload",
                verdict=Verdict("switch.offload-split-cage", Status.PASS, "offloaded", ()),
            )
        )
        emit(
            MeasurementTaken(step="offload", measurement=rail("spark1", "enp1s0f0np0", 0.0, RETRY))
        )
        await pilot.pause(0.3)
        app.session.viewed = "offload"
        app.session.update_view({"detail"})
        await pilot.pause(0.3)
        said = str(app.session.query_one(StepDetail).query_one("#conclusion").render())
        flat = " ".join(said.split())
        assert "rails 0.00 Gb/s, transport retry counter exceeded after the fix" in flat
        assert "the rails are still low with switch.qos-pfc-stall still open" in flat
        assert flat.endswith("fixed and verified")
