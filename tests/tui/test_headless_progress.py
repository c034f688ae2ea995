"""Headless long work shows live progress on a terminal, fed by the sweep's and engine's own
events, and nothing at all when the output is not a terminal or is JSON."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from screens.cli import cli
from screens.progress import HeadlessProgress, progress_for
from wizard.events import (
    MeasurementTaken,
    PhysicalActionDone,
    PhysicalActionRequested,
    ProbeAnswered,
    ProbeSent,
)
from wizard.model import Measurement, ProbeResult

RAIL = "spark1/enp1s0f0np0->spark2/enp1s0f0np0"
NCCL = (
    "timeout -k 10 600 /usr/bin/mpirun --allow-run-as-root -np 2 --hostfile ~/.fabwiz-hosts "
    "/opt/nccl-tests/build/all_reduce_perf -b 256M -e 4G -f 2 -g 1"
)


def test_progress_follows_probes_rail_tests_nccl_and_a_drain() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=140)
    with HeadlessProgress(console) as prog:
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
        for value in (109.2, 9.4):
            prog(
                MeasurementTaken(
                    step="offload", measurement=Measurement("rail", RAIL, value, "Gb/s")
                )
            )
        prog(ProbeSent(step="halves", target="spark1", command=NCCL))
        shown = prog.shown
        assert "probes answered" in shown
        assert f"rail tests: 2 measured, last 9.4 Gb/s on {RAIL}" in shown
        assert "NCCL all_reduce_perf running, stops by 600 s" in shown
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
        assert "waiting for spark3 (ac drain)" in prog.shown
        prog(
            PhysicalActionDone(
                step="drain", kind="ac_drain", nodes=("spark3",), performed_by="operator"
            )
        )
        assert "waiting" not in prog.shown
    assert "rail tests" in out.getvalue()  # it was drawn on the terminal


def test_hostile_text_in_a_progress_line_is_shown_literally() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=140)
    with HeadlessProgress(console) as prog:
        target = "spark1/[bold red]x[/]->spark2/e"
        prog(MeasurementTaken(step="offload", measurement=Measurement("rail", target, 1.0, "Gb/s")))
        line = prog.shown
    assert "\\[bold red]x\\[/]" in line


def test_no_progress_with_json_or_without_a_terminal() -> None:
    assert progress_for(as_json=False, stream=io.StringIO()) is None
    master, slave = os.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as tty:
            assert isinstance(progress_for(as_json=False, stream=tty), HeadlessProgress)
            assert progress_for(as_json=True, stream=tty) is None
    finally:
        os.close(master)
        os.close(slave)


@pytest.mark.lab
@pytest.mark.slow
def test_check_perf_prints_no_progress_when_not_on_a_terminal(tmp_path: Path) -> None:
    args = ["check", "--lab", "healthy-4node-crs804", "--time-scale", "1000", "--perf", "--quick"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    for word in ("probes answered", "rail tests", "NCCL all_reduce_perf running"):
        assert word not in res.output and word not in res.stderr
    assert res.output.splitlines()[0].startswith("HEALTHY")
