"""Headless long work shows live progress on a terminal, fed by the sweep's and engine's own
events (the traffic plan's rounds, NCCL against its expected duration, a drain counting down),
and plain phase lines on stderr when the output is not a terminal or is JSON."""

from __future__ import annotations

import io
import json
import os
import re

import pytest
from click.testing import CliRunner
from rich.console import Console

from flows.expectations import DEFAULT
from screens.cli import cli
from screens.progress import HeadlessProgress, progress_for
from screens.progress_lines import PlainProgress, ProgressModel, nccl_expected_s
from wizard.events import (
    MeasurementTaken,
    PhysicalActionDone,
    PhysicalActionRequested,
    ProbeAnswered,
    ProbeSent,
    TrafficPlanned,
)
from wizard.model import Measurement, ProbeResult

RAIL = "spark1/enp1s0f0np0->spark2/enp1s0f0np0"
NCCL = (
    "timeout -k 10 600 /usr/bin/mpirun --allow-run-as-root -np 2 --hostfile ~/.fabwiz-hosts "
    "/opt/nccl-tests/build/all_reduce_perf -b 256M -e 4G -f 2 -g 1"
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _rail(target: str, value: float) -> MeasurementTaken:
    return MeasurementTaken(step="offload", measurement=Measurement("rail", target, value, "Gb/s"))


PLAN = (
    ("spark1/a->spark2/a", "spark3/a->spark4/a"),
    ("spark1/a->spark3/a", "spark2/a->spark4/a"),
    ("spark1/a->spark4/a",),
)


def test_progress_follows_probes_rail_rounds_nccl_and_a_drain_countdown() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=160)
    clock = Clock()
    with HeadlessProgress(console, ProgressModel(clock=clock, wait_s=900.0)) as prog:
        for cmd in ("ip -j addr show", "ethtool enp1s0f0np0", "cat /proc/cmdline"):
            prog(ProbeSent(step="preflight", target="spark1", command=cmd))
        for _ in range(2):
            prog(
                ProbeAnswered(
                    step="preflight",
                    probe="ip_addr",
                    result=ProbeResult(target="spark1", kind="ssh", command="ip -j addr show"),
                )
            )
        prog(TrafficPlanned(step="offload", rounds=PLAN, duration_s=5.0))
        assert "rail tests: round 1 of 3 (2 pair(s) at once)" in prog.shown
        prog(_rail(PLAN[0][0], 109.2))
        assert "round 1 of 3" in prog.shown  # one of its two pairs measured
        prog(_rail(PLAN[0][1], 9.4))
        assert "round 2 of 3 (2 pair(s) at once)" in prog.shown
        assert "last 9.4 Gb/s on spark3/a->spark4/a" in prog.shown
        rails = next(t for t in prog.progress.tasks if "rail tests" in t.description)
        assert (rails.completed, rails.total) == (2, 5)  # measured of the planned pairs
        for target in (*PLAN[1], *PLAN[2]):
            prog(_rail(target, 109.0))
        assert "rail tests: 5 measured, last 109.0 Gb/s on spark1/a->spark4/a" in prog.shown
        prog(ProbeSent(step="halves", target="spark1", command=NCCL))
        assert "NCCL all_reduce_perf running 0 s of ~13 s expected" in prog.shown
        clock.now += 9.0
        assert "9 s of ~13 s expected" in prog.shown  # elapsed moves on the clock alone
        probes = next(t for t in prog.progress.tasks if t.description == "probes answered")
        assert (probes.completed, probes.total) == (2, 4)  # the NCCL launch is a probe too
        prog(
            MeasurementTaken(
                step="halves", measurement=Measurement("nccl", "cluster", 23.3, "GB/s")
            )
        )
        assert "NCCL" not in prog.shown  # done: its line is gone
        prog(
            PhysicalActionRequested(
                step="drain", kind="ac_drain", nodes=("spark3",), instructions="unplug"
            )
        )
        assert "waiting for spark3 (ac drain) 15:00 left" in prog.shown
        clock.now += 75.0
        assert "waiting for spark3 (ac drain) 13:45 left" in prog.shown
        prog(
            PhysicalActionDone(
                step="drain", kind="ac_drain", nodes=("spark3",), performed_by="operator"
            )
        )
        assert "waiting" not in prog.shown
    assert "rail tests" in out.getvalue()  # it was drawn on the terminal


def test_the_expected_nccl_duration_comes_from_the_sizes_and_the_expected_busbw() -> None:
    # 2 ranks: busbw = algbw; sizes 256M..4G by 2 (5 sizes), 20 iterations out of place and in
    # place each, 5 warm-up iterations at the largest and the smallest size
    sizes = [256 << 20, 512 << 20, 1 << 30, 2 << 30, 4 << 30]
    moved = 5 * (sizes[-1] + sizes[0]) + sum(2 * 20 * s for s in sizes)
    assert nccl_expected_s(NCCL, DEFAULT) == pytest.approx(moved / 26.58e9)
    slower = DEFAULT.with_overrides({"nccl_busbw_2node": 13.29})
    assert nccl_expected_s(NCCL, slower) == pytest.approx(2 * moved / 26.58e9)
    # 4 ranks, all_reduce: busbw = algbw * 2 * 3 / 4; as fabwiz launches it (quoted in sh -c)
    launched = (
        "sh -c 'printf x > h && timeout -k 10 600 /usr/bin/mpirun -np 4 -x NCCL_DEBUG=INFO "
        "/home/u/nccl-tests/build/all_reduce_perf -b 256M -e 4G -f 2 -g 1 -n 30 -w 5'"
    )
    moved4 = 5 * (sizes[-1] + sizes[0]) + sum(2 * 30 * s for s in sizes)
    assert nccl_expected_s(launched, DEFAULT) == pytest.approx(moved4 * 1.5 / 23.33e9)
    assert nccl_expected_s("mpirun -np 4 some_tool -b 8", DEFAULT) is None  # not nccl-tests
    assert nccl_expected_s("/x/all_reduce_perf -b 8 -e 8G", DEFAULT) is None  # no -np


def test_plain_lines_give_one_line_per_round_nccl_run_and_wait() -> None:
    err = io.StringIO()
    clock = Clock()
    sink = PlainProgress(err, ProgressModel(clock=clock, wait_s=600.0))
    sink(TrafficPlanned(step="offload", rounds=PLAN, duration_s=5.0))
    for target in (*PLAN[0], *PLAN[1], *PLAN[2]):
        sink(_rail(target, 109.2))
    sink(
        MeasurementTaken(
            step="offload",
            measurement=Measurement("rail", PLAN[0][0], 206.0, "Gb/s", extra={"bidir": True}),
        )
    )
    sink(ProbeSent(step="halves", target="spark1", command=NCCL))
    clock.now += 14.0
    sink(MeasurementTaken(step="halves", measurement=Measurement("nccl", "c", 26.1, "GB/s")))
    sink(PhysicalActionRequested(step="d", kind="ac_drain", nodes=("spark3",), instructions=""))
    clock.now += 95.0
    sink(PhysicalActionDone(step="d", kind="ac_drain", nodes=("spark3",), performed_by="lab"))
    assert err.getvalue().splitlines() == [
        "fabwiz: rail tests: 3 round(s), 5 pair(s), 5 s each",
        "fabwiz: rail tests: round 1 of 3 (spark1/a->spark2/a, spark3/a->spark4/a)",
        "fabwiz: rail tests: round 1 of 3 done, last 109.2 Gb/s on spark3/a->spark4/a",
        "fabwiz: rail tests: round 2 of 3 (spark1/a->spark3/a, spark2/a->spark4/a)",
        "fabwiz: rail tests: round 2 of 3 done, last 109.2 Gb/s on spark2/a->spark4/a",
        "fabwiz: rail tests: round 3 of 3 (spark1/a->spark4/a)",
        "fabwiz: rail tests: round 3 of 3 done, last 109.2 Gb/s on spark1/a->spark4/a",
        "fabwiz: rail test: 103.0 Gb/s each way on spark1/a->spark2/a",
        "fabwiz: NCCL all_reduce_perf started (~13 s expected at 26.58 GB/s)",
        "fabwiz: NCCL all_reduce_perf done after 14 s: 26.10 GB/s",
        "fabwiz: waiting for spark3 (ac drain): up to 600 s",
        "fabwiz: waiting for spark3 (ac drain): done after 95 s",
    ]


def test_nccl_runs_at_once_each_get_their_own_line_until_their_result() -> None:
    clock = Clock()
    console = Console(file=io.StringIO(), force_terminal=True, width=160)
    with HeadlessProgress(console, ProgressModel(clock=clock)) as prog:
        prog(ProbeSent(step="halves", target="spark1", command=NCCL))
        prog(
            ProbeSent(
                step="halves", target="spark1", command=NCCL.replace("all_reduce", "sendrecv")
            )
        )
        shown = prog.shown.splitlines()
        assert "NCCL all_reduce_perf running 0 s of ~13 s expected" in shown
        assert "NCCL sendrecv_perf running 0 s of ~13 s expected" in shown
        sendrecv = Measurement("nccl", "spark1+spark2/sendrecv_perf", 26.4, "GB/s")
        prog(MeasurementTaken(step="halves", measurement=sendrecv))
        assert "sendrecv" not in prog.shown and "NCCL all_reduce_perf running" in prog.shown
        prog(MeasurementTaken(step="halves", measurement=Measurement("nccl", "cluster", 26, "")))
        assert "NCCL" not in prog.shown


def test_plain_lines_clean_hostile_target_text() -> None:
    err = io.StringIO()
    sink = PlainProgress(err)
    sink(TrafficPlanned(step="o", rounds=(("spark1/\x1b[2Jx->s2/e",),), duration_s=5.0))
    assert "\x1b" not in err.getvalue()
    assert "spark1/x->s2/e" in err.getvalue()


def test_hostile_text_in_a_progress_line_is_shown_literally() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=140)
    with HeadlessProgress(console) as prog:
        target = "spark1/[bold red]x[/]->spark2/e"
        prog(MeasurementTaken(step="offload", measurement=Measurement("rail", target, 1.0, "Gb/s")))
        line = prog.shown
    assert "\\[bold red]x\\[/]" in line


def test_plain_lines_with_json_or_without_a_terminal_and_live_only_on_one() -> None:
    assert isinstance(progress_for(as_json=False, stream=io.StringIO()), PlainProgress)
    master, slave = os.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as tty:
            live = progress_for(as_json=False, stream=tty, stdout=tty)
            assert isinstance(live, HeadlessProgress)
            assert isinstance(progress_for(as_json=True, stream=tty, stdout=tty), PlainProgress)
            piped = progress_for(as_json=False, stream=tty, stdout=io.StringIO())
            assert isinstance(piped, PlainProgress)  # `fabwiz check | tee`: no live display
    finally:
        os.close(master)
        os.close(slave)


@pytest.mark.lab
@pytest.mark.slow
def test_check_perf_json_keeps_stdout_json_and_prints_plain_rounds_on_stderr() -> None:
    args = ["check", "--lab", "healthy-4node-crs804", "--time-scale", "1000", "--perf", "--quick"]
    res = CliRunner().invoke(cli, [*args, "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)  # nothing but the JSON on stdout
    assert report["healthy"] is True and report["measured"] is True
    lines = res.stderr.splitlines()
    assert "\x1b[" not in res.stderr  # never the live display
    # 4 nodes, 4 planes, the disjoint pairs: a node sends on one half and receives on the
    # other, so 2 rounds of 4 tests (a line names the first two of a round)
    assert "fabwiz: rail tests: 2 round(s), 8 pair(s), 5 s each" in lines
    done = [ln for ln in lines if re.match(r"fabwiz: rail tests: round \d of 2 done", ln)]
    assert len(done) == 2
    planned = [
        m.group(1).split(", ")
        for ln in lines
        if (m := re.match(r"fabwiz: rail tests: round \d of 2 \((.*) \+2 more\)$", ln))
    ]
    rails = [m["target"] for m in report["measurements"] if m["kind"] == "rail"]
    # the plan announced what was measured, in order
    assert [rails[0:2], rails[4:6]] == planned
    assert any(
        re.match(r"fabwiz: NCCL all_reduce_perf started \(~3\d s expected", ln) for ln in lines
    )
    plain = CliRunner().invoke(cli, args)
    assert plain.exit_code == 0, plain.output
    assert plain.stdout.splitlines()[0].startswith("HEALTHY")
    assert "fabwiz: rail tests: round 1 of 2 (" in plain.stderr
    assert "fabwiz:" not in plain.stdout
