"""Every command a full lab walk sends, from its session log, against the real tools' parsers.

mpirun lines are checked by the lab's Open MPI option table and, where `openmpi-bin` is
installed, by the real `mpirun --do-not-launch` (its own option and hostfile parsing, nothing
started); `ib_write_bw` lines by the real perftest binary, which parses its options before it
looks for an RDMA device; every `sudo -n` line against the sudoers rules fabwiz prints.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from flows import sudoers
from screens.compose import open_wizard
from screens.terminal import TerminalOperator
from wizard import ncclrun
from wizard.lab import perftest_args
from wizard.lab.nodecmds import check_mpirun, hostfile_hosts
from wizard.report import render_html, render_markdown
from wizard.session import load_session
from wizard.versions import latest

pytestmark = pytest.mark.lab


async def _walk_commands(tmp_path: Path) -> tuple[list[str], list[dict[str, object]], str]:
    operator = TerminalOperator(Console(file=io.StringIO()), yes=True, interactive=False)
    wiring = await open_wizard(
        operator=operator,
        sinks=[],
        lab="crs804-three-bugs",
        session_dir=tmp_path / "session",
        time_scale=200.0,
        fsync=False,
    )
    try:
        await wiring.engine.run()
    finally:
        await wiring.close()
    logs = list((tmp_path / "session").rglob("events.jsonl"))
    assert logs, "no session log written"
    events = [json.loads(line) for line in logs[0].read_text().splitlines()]
    sent = [str(e["command"]) for e in events if e["type"] == "probe_sent"]
    for e in events:
        if e["type"] == "fix_previewed":
            sent += [
                ln.strip() for ln in str(e["preview"]).splitlines() if ln.startswith("sudo -n")
            ]
    nccl = [
        e["measurement"]
        for e in events
        if e["type"] == "measurement_taken" and e["measurement"]["kind"] == "nccl"
    ]
    loaded = load_session(logs[0].parent)
    # the versions the walk ran against: one structured record, the last of its kind in the log
    record = latest(loaded.events)
    assert record is not None and sorted(record.nodes) == ["spark1", "spark2", "spark3", "spark4"]
    assert record.nodes["spark1"]["platform"] == "NVIDIA DGX Spark"
    assert record.nodes["spark1"]["nccl_tests"] == "2.18.3"
    assert {"dgx_os", "kernel", "driver", "cx7_firmware", "perftest", "openmpi", "nccl"} <= set(
        record.nodes["spark4"]
    )
    assert record.switches["crs804"]["model"] == "CRS804-4DDQ"
    html = render_html(loaded)
    assert "<h2>Re-run the NCCL tests</h2>" in html and "cat &gt; .fabwiz-hostfile" in html
    return sent, nccl, render_markdown(loaded)


def _real_mpirun(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`mpirun --do-not-launch` with the same options, the hostfile rewritten to this machine
    (one line, the same slot count) and the program replaced by /bin/true."""
    words = list(argv[1:])
    k = words.index("--hostfile")
    slots = len(
        hostfile_hosts(
            "".join(f"h{i} slots=1\n" for i in range(int(words[words.index("-np") + 1])))
        )
    )
    hf = tmp_path / "hostfile"
    hf.write_text(f"localhost slots={slots}\n")
    words[k + 1] = str(hf)
    prog = next(i for i, w in enumerate(words) if w.endswith(("all_reduce_perf", "sendrecv_perf")))
    words[prog] = "/bin/true"
    extra: list[str] = []
    return subprocess.run(
        ["mpirun", "--do-not-launch", *extra, *words],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_every_command_of_a_walk_parses_with_the_real_tools(tmp_path: Path) -> None:
    sent, nccl, report = await _walk_commands(tmp_path)
    mpiruns = [c for c in sent if "/mpirun " in c]
    # every line that runs ib_write_bw (the tool lookup of preflight only names it)
    perftests = [c for c in sent if "ib_write_bw" in c and not c.startswith("command -v ")]
    # no shell around it; both ends run under `stdbuf -oL` (the server says when it listens,
    # the client when its data begins)
    assert all(c.startswith("stdbuf -oL ib_write_bw ") for c in perftests)
    sudos = [c for c in sent if c.startswith("sudo -n ") and not c.startswith("sudo -n -l ")]
    assert mpiruns and perftests and sudos
    for c in sudos:
        assert sudoers.covered(c), f"not in the sudoers drop-in: {c}"
    for c in mpiruns:
        argv = ncclrun.mpirun_argv(c)
        assert argv[0] == "/usr/bin/mpirun"
        assert check_mpirun(argv[1:]) is None, c
        if shutil.which("mpirun"):
            res = _real_mpirun(argv, tmp_path)
            assert res.returncode == 0, res.stdout + res.stderr
            assert "unknown option" not in res.stderr
    _perftest_lines_pass_the_lab_and_the_real_parser(perftests)
    # the canonical run of seed 000, as recorded in the session
    cluster = next(m for m in nccl if m["target"] == "cluster")
    cmd = str(cluster["extra"]["command"])  # type: ignore[index]
    argv = ncclrun.mpirun_argv(cmd)
    assert argv[argv.index("-np") + 1] == "4"
    assert "NCCL_IB_HCA==rocep1s0f0,rocep1s0f1,roceP2p1s0f0,roceP2p1s0f1" in argv
    assert "NCCL_IB_ROCE_VERSION_NUM=2" in argv and "NCCL_SOCKET_IFNAME=enP7s7" in argv
    assert argv[argv.index("--mca") + 1 : argv.index("--mca") + 3] == [
        "btl_tcp_if_include",
        "enP7s7",
    ]
    assert not any(w.startswith("NCCL_IB_TC") for w in argv)
    assert argv[-13:] == ["/home/fabwiz/nccl-tests/build/all_reduce_perf", *ncclrun.SIZES]
    assert shlex.split(cmd)[2].count("slots=1") == 4
    assert "192.168.1.104 slots=1" in str(cluster["extra"]["hostfile"])  # type: ignore[index]
    assert "timeout -k 10" in cmd
    assert float(cluster["value"]) > 20  # type: ignore[arg-type]
    assert cluster["extra"]["nccl_tests_version"] == "2.18.3"  # type: ignore[index]
    assert cluster["extra"]["nccl_version"] == "2.28.9+cuda13.0"  # type: ignore[index]
    pair = next(m for m in nccl if str(m["target"]).endswith("/sendrecv_perf"))
    assert pair["target"] == "spark1+spark2/sendrecv_perf" and 20 <= float(pair["value"]) <= 27  # type: ignore[arg-type]
    job = next(m for m in nccl if m["target"] == "cluster/job-env")
    assert "NCCL_IB_HCA" not in str(job["extra"]["command"])  # type: ignore[index]
    # the report shows each run as a technician types it, hostfile first
    section = _report_section(report)
    assert "cat > .fabwiz-hostfile <<'EOF'\n192.168.1.101 slots=1\n" in section
    assert "  -x NCCL_IB_HCA==rocep1s0f0,rocep1s0f1,roceP2p1s0f0,roceP2p1s0f1 \\\n" in section
    assert "/home/fabwiz/nccl-tests/build/sendrecv_perf -b 256M" in section
    assert "nccl-tests 2.18.3, NCCL 2.28.9+cuda13.0), on spark1:" in section


def _perftest_lines_pass_the_lab_and_the_real_parser(lines: list[str]) -> None:
    """Every `ib_write_bw` line of the walk: the lab's strict parser (perftest's own option
    table and value checks) takes it and reads what fabwiz meant; the real binary (where
    perftest is installed) parses it and only then stops for want of an RDMA device."""
    servers = clients = 0
    qps: set[int] = set()
    for c in lines:
        argv = shlex.split(c)
        if argv[:2] == ["stdbuf", "-oL"]:
            argv = argv[2:]
        got = perftest_args.parse(argv[1:])
        assert got.ok, f"{c}: {got.stderr}"
        o = got.options
        assert o.qps == int(argv[argv.index("-q") + 1]) and o.gbits, c
        assert o.duration is not None and o.duration == float(argv[argv.index("-D") + 1]) > 0, c
        qps.add(o.qps)
        assert o.gid is not None and o.gid == int(argv[argv.index("-x") + 1]), c
        assert o.device == argv[argv.index("-d") + 1] and o.device.startswith("roce"), c
        assert c.startswith("stdbuf -oL "), c  # its header lines come as printed
        if o.server_ip is None:
            servers += 1
        else:
            clients += 1
            assert o.server_ip.startswith("10.9."), c  # a fabric address, never management
    assert servers == clients > 0  # each test is one server and its client
    assert 1 in qps  # the per-rail tests are single-QP (both halves at once may use more)
    if not shutil.which("ib_write_bw"):
        return  # the real binary is checked where perftest is installed (apt install perftest)
    shapes = {re.sub(r"\b\d+(\.\d+){3}\b|-p \d+", "N", c): c for c in lines}
    for c in shapes.values():
        res = subprocess.run(
            shlex.split(c), capture_output=True, text=True, timeout=30, check=False
        )
        out = res.stdout + res.stderr
        assert "Invalid Command or flag" not in out and "unrecognized option" not in out, c
        assert "Parser function exited with Error" not in out, c
        assert "Did not detect devices" in out or "No IB devices found" in out, out  # parsed


def test_lab_mpirun_refuses_what_open_mpi_refuses() -> None:
    assert check_mpirun(["--bogus", "x"]) == (
        "mpirun: Error: unknown option \"--bogus\"\nType 'mpirun --help' for usage.\n"
    )
    assert "did not have enough parameters (2)" in str(
        check_mpirun(["--mca", "btl_tcp_if_include"])
    )
    assert check_mpirun(["-np", "2", "-x", "A=1", "--mca", "k", "v", "prog", "-b", "1"]) is None
    assert hostfile_hosts("# c\n10.0.0.1 slots=2\n10.0.0.2\n") == [
        "10.0.0.1",
        "10.0.0.1",
        "10.0.0.2",
    ]


def _report_section(report: str) -> str:
    return report.split("## Re-run the NCCL tests", 1)[1].split("\n## ", 1)[0]
