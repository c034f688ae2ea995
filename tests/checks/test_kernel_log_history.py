"""Kernel-log lines older than the last change are history: dmesg's seconds-since-boot stamps
are put on the node's clock with /proc/stat's btime and compared with `Context.changed_at`.
Real dmesg lines, and a lab node's own dmesg and /proc/stat."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from flows import hostlog
from flows.checks import benign_pcie27w
from flows.registry import make_context
from wizard.errors import ParseError
from wizard.lab import scenarios
from wizard.lab.hostcmds import Host
from wizard.lab.perftest import Registry
from wizard.model import ProbeResult, Status
from wizard.parsers.kernel_log import parse_kernel_log
from wizard.probes import Observations

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "fixtures" / "real" / "dmesg"
SAMPLE = REAL / "dgx-spark-dmesg-grep-insufficient-power-pcie-bandwidth-hotplug.txt"
BTIME = 1764576000.0  # 2025-12-01 08:00:00 UTC


def _dmesg() -> str:
    if not SAMPLE.exists():
        pytest.skip(f"{SAMPLE} is absent (the shared real fixtures are not on this machine)")
    return SAMPLE.read_text()


def test_btime_is_read_from_proc_stat_and_garbage_is_refused() -> None:
    stat = "cpu  1 2 3 4\nintr 5\nctxt 6\nbtime 1764576000\nprocesses 7\n"
    assert hostlog.parse_btime(stat) == BTIME
    with pytest.raises(ParseError, match="btime"):
        hostlog.parse_btime("cpu 1 2 3\n")


def test_lines_written_before_the_change_are_history_named_with_their_clock_time() -> None:
    events = parse_kernel_log(_dmesg()).events
    stamped = [e for e in events if e.time is not None]
    assert [e.time for e in stamped][:3] == [0.103426, 1.150104, 1.533198]
    # a change 1.2 s after boot: the first two lines were written before it
    s = hostlog.split(events, "spark1", {"spark1": BTIME + 1.2}, BTIME)
    assert [e.time for e in s.history] == [0.103426, 1.150104]
    assert any(e.kind == "pcie-27w" for e in s.current)
    text = hostlog.history_text(s, BTIME)
    assert text == (
        "set aside as history: 2 kernel line(s) from before the change at 2025-12-01 08:00:01 "
        "([0.103426] = 2025-12-01 08:00:00, [1.150104] = 2025-12-01 08:00:01)"
    )
    # no change, no boot time, or a line without a stamp: current, never dropped on a guess
    assert hostlog.split(events, "spark1", {}, BTIME).history == ()
    assert hostlog.split(events, "spark1", {"spark1": BTIME + 1.2}, None).history == ()
    unstamped = parse_kernel_log("cx7-pcie-hotplug MTKP0001:00: Cable plugin\n").events
    kept = hostlog.split(unstamped, "spark1", {"spark1": BTIME + 99}, BTIME)
    assert (kept.current, kept.history) == (unstamped, ())


def _obs(dmesg: str, btime: str | None) -> Observations:
    def r(cmd: str, out: str) -> ProbeResult:
        return ProbeResult(target="spark1", kind="ssh", command=cmd, stdout=out, exit_status=0)

    results = {"dmesg": r("sudo -n dmesg", dmesg)}
    if btime is not None:
        results["btime"] = r(hostlog.BTIME.command, btime)
    return Observations(nodes={"spark1": results})


def test_the_27w_line_from_before_a_change_is_not_current_evidence() -> None:
    obs = _obs(_dmesg(), "btime 1764576000\n")
    ctx = make_context(obs, nodes=["spark1"], switches=[])
    (seen,) = benign_pcie27w.CHECK.run(obs, ctx)
    assert seen.status is Status.BENIGN and seen.targets == ("spark1",)
    later = dataclasses.replace(ctx, changed_at={"spark1": BTIME + 600})
    (aside,) = benign_pcie27w.CHECK.run(obs, later)
    assert aside.status is Status.PASS
    assert (
        aside.summary == "the 27W line was not seen since the last change (older lines are history)"
    )
    assert aside.evidence[0].observed == (
        "set aside as history: 1 kernel line(s) from before the change at 2025-12-01 08:10:00 "
        "([1.533198] = 2025-12-01 08:00:01)"
    )
    # without the boot time the line cannot be dated: it stays current
    blind = _obs(_dmesg(), None)
    (kept,) = benign_pcie27w.CHECK.run(
        blind, dataclasses.replace(ctx, changed_at={"spark1": BTIME + 600})
    )
    assert kept.status is Status.BENIGN


@pytest.mark.lab
async def test_a_lab_node_dates_its_dmesg_with_its_proc_stat_btime() -> None:
    w = scenarios.build_world(scenarios.load("healthy-2node-direct"), time_scale=200.0)
    node = w.nodes["spark1"]
    host = Host(w, node, Registry())

    async def run(script: str) -> str:
        out: list[str] = []
        assert await host.run(script, out.append, lambda _e: None) == 0
        return "".join(out)

    stat = await run("grep ^btime /proc/stat")
    assert stat == f"btime {int(node.boot_time)}\n"
    btime = hostlog.parse_btime(stat)
    now = float((await run("date +%s")).strip())
    w.kmsg(node, "mlx5_core 0000:01:00.0 enp1s0f0np0: Link down")
    events = parse_kernel_log(await run("sudo dmesg")).events
    last = events[-1]
    assert last.kind == "link" and last.value == "down"
    at = hostlog.written_at(last, btime)
    assert at is not None and abs(at - now) < 5.0  # written now, on the node's own clock
    s = hostlog.split(events, "spark1", {"spark1": now - 1.0}, btime)
    assert s.current[-1] == last and len(s.history) == len(events) - 1
    full = await run("cat /proc/stat")
    assert full.startswith("cpu  ") and "\ncpu19 " in full and "\nprocs_running 1\n" in full
