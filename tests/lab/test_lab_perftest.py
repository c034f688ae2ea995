"""The lab's `ib_write_bw` refuses what perftest refuses, and the GID tables are mlx5's."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import shutil
import subprocess

import pytest

from wizard.lab import scenarios
from wizard.lab.clock import ManualClock
from wizard.lab.facts import Facts
from wizard.lab.hostcmds import Host
from wizard.lab.perftest import Registry
from wizard.lab.perftest_args import parse
from wizard.lab.world import World
from wizard.schema import parse as parse_record

REAL = shutil.which("ib_write_bw")


class Node:
    """One node's shell on a world whose lab time moves only as its commands wait on it."""

    def __init__(self, w: World, clock: ManualClock, reg: Registry, name: str) -> None:
        self.host = Host(w, w.nodes[name], reg)
        self.clock = clock
        self.reg = reg

    async def _run(self, script: str) -> tuple[str, str, int]:
        out: list[str] = []
        err: list[str] = []
        rc = await self.host.run(script, out.append, err.append)
        return "".join(out), "".join(err), rc

    async def run(self, script: str) -> tuple[str, str, int]:
        """The script to its end, lab time moving on whenever it only waits for lab time."""
        return await self.clock.run(self._run(script))

    def start(self, script: str) -> asyncio.Task[tuple[str, str, int]]:
        return asyncio.create_task(self._run(script))

    async def serve(self, script: str) -> asyncio.Task[tuple[str, str, int]]:
        """Start an `ib_write_bw` server; back once it listens (or has refused to)."""
        before = len(self.reg.servers)
        task = self.start(script)
        while len(self.reg.servers) == before and not task.done():
            await asyncio.sleep(0)
        return task


def lab(name: str, facts: Facts | None = None) -> tuple[World, dict[str, Node]]:
    s = scenarios.load(name)
    if facts is not None:
        s = dataclasses.replace(s, facts=facts)
    clock = ManualClock()
    w = scenarios.build_world(s, clock=clock)
    reg = Registry()
    return w, {n: Node(w, clock, reg, n) for n in w.nodes}


async def pair(n: dict[str, Node], server: str, client: str) -> tuple[tuple[str, str, int], ...]:
    srv = await n["spark2"].serve(server)
    cli = await n["spark1"].run(client)
    return cli, await n["spark2"].clock.run(srv)


REFUSED = [
    ["--foo"],
    ["-Y"],
    ["-d"],
    ["--duration"],
    ["--re"],
    ["--report_gbits=1"],
    ["-x", "abc"],
    ["-x", "65"],
    ["-q", "0"],
    ["-q", "16385"],
    ["-s", "abc"],
    ["-n", "0"],
    ["-D", "0"],
    ["-D", "abc"],
    ["-p", "abc"],
    ["-i", "0"],
    ["--force-link=XX"],
    ["1.2.3.4", "5.6.7.8"],
]


@pytest.mark.parametrize("args", REFUSED, ids=" ".join)
def test_refused_like_perftest(args: list[str]) -> None:
    p = parse(args)
    assert p.status == 1 and p.stderr
    if REAL is None:
        pytest.skip("perftest not installed: nothing to compare the text with")
    real = subprocess.run(
        ["ib_write_bw", *args],
        executable=REAL,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    assert (p.stdout, p.stderr, p.status) == (real.stdout, real.stderr, real.returncode)


def test_unknown_option_gives_the_usage_error() -> None:
    p = parse(["--gid_index", "3"])
    assert p.stderr.startswith("ib_write_bw: unrecognized option '--gid_index'\n")
    assert " Invalid Command or flag.\n" in p.stderr
    assert p.stdout.startswith("Usage:\n  ib_write_bw            start a server")


@pytest.mark.parametrize(
    "cmd",
    [
        "-d rocep1s0f0 -x 3 -q 1 -D 5 -F --report_gbits 10.9.1.2",
        "-d rocep1s0f0 -i 1 -x 3 -q 4 -s 65536 -n 1000 -F -b --report_gbits --cpu_util 10.9.1.2",
        "-d rocep1s0f0 -a -F --report_gbits -R --force-link IB",
        "-F --run_infinitely --report_gbits -p 12000 -ddev -x3 -q2",
        "--ib-dev=rocep1s0f0 --gid-index=3 --qp=2 --duration=5 --size=64K --report_gbit",
    ],
)
def test_accepted_like_perftest(cmd: str) -> None:
    p = parse(cmd.split())
    assert p.ok, p.stderr
    o = p.options
    assert o.qps >= 1 and o.size >= 1


def test_parsed_values() -> None:
    o = parse(
        [
            "-d",
            "roceP2p1s0f0",
            "-x",
            "0x3",
            "-q",
            "4",
            "-s",
            "1M",
            "-D",
            "6",
            "-b",
            "--report_gbits",
            "10.9.2.2",
        ]
    ).options
    assert (o.device, o.gid, o.qps, o.size, o.duration, o.bidir, o.gbits, o.server_ip) == (
        "roceP2p1s0f0",
        3,
        4,
        1048576,
        6.0,
        True,
        True,
        "10.9.2.2",
    )
    d = parse(["-a", "-D", "5"])
    assert d.stderr == "Duration mode currently doesn't support running on all sizes.\n"


async def test_gid_table_sysfs_and_show_gids() -> None:
    _w, n = lab("healthy-2node-direct")
    s = n["spark1"]
    base = "/sys/class/infiniband/rocep1s0f0/ports/1"
    out, _e, _rc = await s.run(f"cat {base}/gids/0 {base}/gids/3 {base}/gids/4")
    g0, g3, g4 = out.splitlines()
    assert g0.startswith("fe80:0000:0000:0000:") and len(g0) == 39
    assert g3 == "0000:0000:0000:0000:0000:ffff:0a09:0101"  # 10.9.1.1
    assert g4 == "0000:0000:0000:0000:0000:0000:0000:0000"
    out, _e, _rc = await s.run(f"cat {base}/gid_attrs/types/2 {base}/gid_attrs/types/3")
    assert out == "IB/RoCE v1\nRoCE v2\n"
    assert (await s.run(f"cat {base}/gid_attrs/ndevs/3"))[0] == "enp1s0f0np0\n"
    assert await s.run(f"cat {base}/gid_attrs/types/4") == (
        "",
        f"cat: {base}/gid_attrs/types/4: Invalid argument\n",
        1,
    )
    out, _e, _rc = await s.run("show_gids")
    rows = [r.split("\t") for r in out.splitlines()[2:-1]]
    # cabled rails have 4 entries, the others only the default GID (as on a real GB10)
    assert [(r[0], r[2], r[4].strip(), r[5]) for r in rows if r[0] == "rocep1s0f0"] == [
        ("rocep1s0f0", "0", "", "v1"),
        ("rocep1s0f0", "1", "", "v2"),
        ("rocep1s0f0", "2", "10.9.1.1", "v1"),
        ("rocep1s0f0", "3", "10.9.1.1", "v2"),
    ]
    assert out.splitlines()[-1] == f"n_gids_found={len(rows)}"


async def test_ipv6_first_shifts_the_ipv4_gids() -> None:
    facts = parse_record(Facts, {"nodes": {"spark1": {"ipv6_first": True}}})
    w, n = lab("healthy-2node-direct", facts)
    rail = w.nodes["spark1"].rails[0]
    rail.ipv6 = ["fd00:9:1::1/64"]
    out, _e, _rc = await n["spark1"].run("show_gids rocep1s0f0")
    ipv4 = [line.split("\t")[2] for line in out.splitlines() if "10.9.1.1" in line]
    assert ipv4 == ["4", "5"]
    # spark2 keeps IPv4 at 2/3: `-x 3` on both ends now pairs an IPv6 with an IPv4 GID
    (cout, cerr, crc), (_so, serr, src) = await pair(
        n,
        "ib_write_bw -d rocep1s0f0 -x 3 -D 2 --report_gbits",
        "ib_write_bw -d rocep1s0f0 -x 3 -D 2 --report_gbits 10.9.1.2",
    )
    assert crc == 1 and "Found Incompatibility issue with GID types." in cerr
    assert "BW average" not in cout and src == 1 and "Incompatibility" in serr
    # perftest's own choice (no -x) is the RoCE v2 IPv4 entry, wherever it sits
    (cout, cerr, crc), _srv = await pair(
        n,
        "ib_write_bw -d rocep1s0f0 -D 2 --report_gbits",
        "ib_write_bw -d rocep1s0f0 -D 2 --report_gbits 10.9.1.2",
    )
    assert crc == 0, cerr
    assert " GID index       : 5" in cout


@pytest.mark.parametrize(
    ("gid", "client_error"),
    [
        ("0", "Failed status 12: wr_id 0 syndrom 0x81"),  # link-local RoCE v1
        ("1", "Unable to Connect the HCA's through the link"),  # IPv6 link-local, IPv6 off
        ("2", "Failed status 12: wr_id 0 syndrom 0x81"),  # IPv4 but RoCE v1
        ("9", "Unable to set up socket connection"),  # an empty slot
    ],
)
async def test_a_gid_that_is_not_roce_v2_ipv4_moves_no_data(gid: str, client_error: str) -> None:
    w, n = lab("healthy-2node-direct")
    before = w.nodes["spark2"].rails[0].counters["port_rcv_data"]
    (cout, cerr, crc), (_so, _se, src) = await pair(
        n,
        f"ib_write_bw -d rocep1s0f0 -x {gid} -D 2 --report_gbits",
        f"ib_write_bw -d rocep1s0f0 -x {gid} -D 2 --report_gbits 10.9.1.2",
    )
    assert crc == 1 and src == 1
    assert client_error in cerr
    assert not re.search(r"^ 65536\s+\d+", cout, re.M)
    assert w.nodes["spark2"].rails[0].counters["port_rcv_data"] == before


async def test_stalled_run_prints_the_results_header_then_the_error() -> None:
    _w, n = lab("fault-switch-qos-pfc-stall")
    (cout, cerr, crc), (sout, _se, src) = await pair(
        n,
        "ib_write_bw -d rocep1s0f0 -x 3 -D 2 --report_gbits",
        "ib_write_bw -d rocep1s0f0 -x 3 -D 2 --report_gbits 10.9.1.2",
    )
    head = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
    assert crc == 1 and cout.splitlines()[-1] == head
    assert sout.splitlines()[-1] == head and src == 1
    assert "Failed status 12" in cerr


@pytest.mark.parametrize(
    ("timeout", "seconds"), [("", 0.537), ("-u 16", 2.147), ("-u 0x0c", 0.134)]
)
async def test_a_stalled_qp_gives_up_after_its_retries(timeout: str, seconds: float) -> None:
    # RC: a QP waits 4.096 us x 2^timeout for an ACK, sends its window again, and after 7
    # retries completes with "retry exceeded": 8 timeouts (perftest's -u, default 14)
    w, n = lab("fault-switch-qos-pfc-stall")
    clock = n["spark1"].clock
    tx = w.nodes["spark1"].rails[0]
    w.traffic.settle()
    before = dict(tx.counters)
    srv = await n["spark2"].serve(f"ib_write_bw -d rocep1s0f0 -x 3 -D 10 {timeout}")
    client = n["spark1"].start(f"ib_write_bw -d rocep1s0f0 -x 3 -D 10 {timeout} 10.9.1.2")
    t0 = clock.now()
    # perftest's second of sleep once connected, then the stall; nothing ends before its time
    await clock.run(asyncio.sleep(0))
    while not client.done():
        await clock.advance(0.001)
    took = clock.now() - t0
    assert took == pytest.approx(1.0 + seconds, abs=0.005)
    cout, cerr, crc = client.result()
    assert cout.splitlines()[-1].startswith(" #bytes")  # the header, then no row
    assert crc == 1 and "Failed status 12" in cerr and "scnt=128, ccnt=0" in cerr
    await clock.run(srv)
    w.traffic.settle()
    timeouts = tx.counters["local_ack_timeout_err"] - before["local_ack_timeout_err"]
    assert timeouts == 7  # the eighth is the error completion, not a recoverable timeout
    # each timeout sent the QP's window again: 128 writes of 64 KiB in 4 KiB frames
    sent = tx.counters["tx_packets_phy"] - before["tx_packets_phy"]
    assert sent == pytest.approx(8 * 2048, rel=0.01)


def test_the_qp_timeout_is_read_as_perftest_reads_it() -> None:
    # `(uint8_t)strtol(optarg, NULL, 0)`: any text, its leading number or 0, modulo 256
    assert parse(["-u", "16"]).options.qp_timeout == 16
    assert parse(["--qp-timeout=0x10"]).options.qp_timeout == 16
    assert parse(["-u", "020"]).options.qp_timeout == 16
    assert parse(["-u", "18abc"]).options.qp_timeout == 18
    assert parse(["-u", "abc"]).options.qp_timeout == 0
    assert parse(["-u", "270"]).options.qp_timeout == 14
    assert parse([]).options.qp_timeout == 14


async def test_bandwidth_depends_on_message_size() -> None:
    _w, n = lab("healthy-2node-direct")
    (cout, _ce, crc), _srv = await pair(
        n,
        "ib_write_bw -d rocep1s0f0 -x 3 -a -F --report_gbits",
        "ib_write_bw -d rocep1s0f0 -x 3 -a -F --report_gbits 10.9.1.2",
    )
    assert crc == 0
    rows = {
        int(m.group(1)): float(m.group(2))
        for m in re.finditer(r"^ (\d+)\s+\d+\s+[\d.]+\s+([\d.]+)", cout, re.M)
    }
    assert sorted(rows) == [2**k for k in range(1, 24)]
    assert rows[2] < 0.2 and 1.0 < rows[1024] < rows[65536]
    assert rows[65536] == pytest.approx(111.86, rel=0.01)
    assert rows[8388608] == pytest.approx(111.86, rel=0.01)


async def test_cpu_util_adds_its_column() -> None:
    _w, n = lab("healthy-2node-direct")
    (cout, _ce, crc), _srv = await pair(
        n,
        "ib_write_bw -d rocep1s0f0 -x 3 -D 2 --cpu_util --report_gbits",
        "ib_write_bw -d rocep1s0f0 -x 3 -D 2 --cpu_util --report_gbits 10.9.1.2",
    )
    assert crc == 0
    assert "MsgRate[Mpps]    CPU_Util[%]" in cout
    row = next(x for x in cout.splitlines() if x.startswith(" 65536"))
    assert len(row.split()) == 6


async def test_server_whose_client_died_fails_its_handshake() -> None:
    _w, n = lab("healthy-2node-direct")
    clock = n["spark1"].clock
    srv = await n["spark2"].serve("ib_write_bw -d rocep1s0f0 -x 3 --run_infinitely")
    cli = n["spark1"].start("ib_write_bw -d rocep1s0f0 -x 3 --run_infinitely 10.9.1.2")
    await clock.advance(50)  # the client runs a while, then goes away
    assert not cli.done()
    cli.cancel()
    out, err, rc = await clock.run(srv)
    assert rc == 1 and err == " Failed to exchange data between server and clients\n"
    assert "Waiting for client to connect" in out and " #bytes" in out
