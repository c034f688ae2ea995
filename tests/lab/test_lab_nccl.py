"""NCCL per rank: each rank's own env and devices, the ring's slowest hop, latency, collectives."""

from __future__ import annotations

import re

import pytest

from wizard.lab import scenarios
from wizard.lab.hostcmds import Host
from wizard.lab.nccl_ring import ring, timing
from wizard.lab.perftest import Registry
from wizard.lab.scenarios import build_world, load_text
from wizard.lab.world import World

FOUR = "-H spark1,spark2,spark3,spark4"
# nccl-tests as NVIDIA's playbook builds it: not on PATH, under the login directory
NT = "~/nccl-tests/build"


def lab(name: str) -> World:
    return scenarios.build_world(scenarios.load(name), time_scale=2000.0)


async def run(w: World, script: str, node: str = "spark1") -> tuple[str, str, int]:
    host = Host(w, w.nodes[node], Registry())
    out: list[str] = []
    err: list[str] = []
    rc = await host.run(script, out.append, err.append)
    return "".join(out), "".join(err), rc


def busbw(out: str) -> float:
    m = re.search(r"# Avg bus bandwidth\s*:\s*([0-9.e+-]+)", out)
    assert m, out
    return float(m.group(1))


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if re.match(r"^\s+\d+\s+\d+\s", line)]


async def test_each_rank_reads_its_own_node_config() -> None:
    w = lab("healthy-4node-crs804")
    healthy = ring(w, list(w.nodes), [{}] * 4)
    # one rank restricted to half A of port 0: the ranks agree on one channel, one half
    w.nodes["spark3"].files["/etc/nccl.conf"] = "NCCL_IB_HCA==rocep1s0f0\n"
    out, _e, rc = await run(w, f"mpirun -np 4 {FOUR} {NT}/all_reduce_perf -b 1G -e 1G")
    assert rc == 0
    assert busbw(out) == pytest.approx(healthy.busbw / 2, rel=0.03)
    # only that rank's INFO lines show its filter
    out, _e, rc = await run(
        w, f"mpirun -np 4 {FOUR} -x NCCL_DEBUG=INFO {NT}/all_reduce_perf -b 1G -e 1G"
    )
    filters = re.findall(r"^(spark\d):\S+ \[0\] NCCL INFO NCCL_IB_HCA set to (\S+)", out, re.M)
    assert filters == [("spark3", "=rocep1s0f0")]


async def test_a_rank_on_sockets_among_ib_ranks_fails() -> None:
    w = lab("healthy-4node-crs804")
    w.nodes["spark2"].files["/etc/nccl.conf"] = "NCCL_IB_DISABLE=1\n"
    out, err, rc = await run(w, f"mpirun -np 4 {FOUR} {NT}/all_reduce_perf -b 1G -e 1G")
    assert rc == 1 and "Avg bus bandwidth" not in out
    assert "remote process exited or there was a network error" in err
    for n in w.nodes.values():
        n.files["/etc/nccl.conf"] = "NCCL_IB_DISABLE=1\n"
    out, _e, rc = await run(w, f"mpirun -np 4 {FOUR} {NT}/all_reduce_perf -b 1G -e 1G")
    assert rc == 0 and 2.0 <= busbw(out) <= 3.0


async def test_one_software_forwarded_port_drags_the_whole_ring() -> None:
    text = (
        "name: one-slow-leg\n"
        "topology: {nodes: 4, switches: [{model: CRS804-4DDQ}], cables_per_node: 2}\n"
        "facts: {ports: {crs804/qsfp56-dd-2-1: {hw-offload: false}}}\n"
    )
    w = build_world(load_text(text, path="x.yaml"), time_scale=2000.0)
    healthy = ring(lab("healthy-4node-crs804"), ["spark1", "spark2", "spark3", "spark4"], [{}] * 4)
    slow = ring(w, list(w.nodes), [{}] * 4)
    assert not slow.error
    # the channels through spark2's CPU-forwarded leg crawl, the others run at line rate ...
    assert min(slow.channel_gbps) < 10.0 < min(healthy.channel_gbps) <= max(slow.channel_gbps)
    # ... and the slowest sets the pace of the whole collective: not averaged away
    assert slow.busbw < healthy.busbw / 8


def test_latency_term_makes_small_sizes_slow() -> None:
    _t, _a, tiny = timing("all_reduce", 4, 8, 23.3)
    _t, _a, mid = timing("all_reduce", 4, 1 << 20, 23.3)
    t_big, _a, big = timing("all_reduce", 4, 1 << 30, 23.3)
    assert tiny < 0.001 < mid < big
    assert big == pytest.approx(23.3, rel=0.01) and t_big > 1000
    t_sr, _a, _b = timing("sendrecv", 4, 8, 23.3)
    t_ar, _a, _b = timing("all_reduce", 4, 8, 23.3)
    assert t_sr < t_ar  # one step instead of 2(n-1)


@pytest.mark.parametrize(
    ("program", "redop", "count_div"),
    [
        ("all_reduce_perf", "sum", 1),
        ("all_gather_perf", "none", 4),
        ("reduce_scatter_perf", "sum", 4),
        ("sendrecv_perf", "sum", 1),
    ],
)
async def test_collectives(program: str, redop: str, count_div: int) -> None:
    w = lab("healthy-4node-crs804")
    out, err, rc = await run(w, f"mpirun -np 4 {FOUR} {NT}/{program} -b 8 -e 1G -f 32")
    assert rc == 0, err
    assert f"# Collective test starting: {program}" in out
    table = rows(out)
    assert [int(r[0]) for r in table] == [8, 256, 8192, 262144, 8388608, 268435456]
    assert all(r[3] == redop and int(r[1]) == int(r[0]) // 4 // count_div for r in table)
    assert float(table[0][7]) < 0.01 and float(table[-1][7]) == pytest.approx(23.3, rel=0.03)
    if program == "sendrecv_perf":
        assert table[0][-1] == "N/A"


async def test_mpirun_x_and_hostfile() -> None:
    w = lab("healthy-4node-crs804")
    w.nodes["spark1"].files["/home/fabwiz/hosts"] = "# the rack\nspark1 slots=1\nspark2 slots=1\n"
    out, _e, rc = await run(
        w,
        "mpirun -np 2 --hostfile /home/fabwiz/hosts -x NCCL_IB_HCA==rocep1s0f0 "
        f"{NT}/all_reduce_perf -b 1G -e 1G",
    )
    assert rc == 0
    assert "on     spark2 device" in out and "spark3" not in out
    two = ring(w, ["spark1", "spark2"], [{}] * 2)
    assert busbw(out) == pytest.approx(two.busbw / 2, rel=0.03)
    out, err, rc = await run(w, f"mpirun -np 2 --hostfile /nope {NT}/all_reduce_perf")
    assert rc == 1 and "Open RTE was unable to open the hostfile:\n    /nope\n" in err


async def test_mpirun_fails_like_open_mpi() -> None:
    w = lab("healthy-4node-crs804")
    _o, err, rc = await run(w, f"mpirun -np 4 {FOUR} {NT}/all_reduce_perf_typo -b 1G")
    assert rc == 132
    # the login shell expands the ~ before mpirun sees the path
    assert "Executable: /home/fabwiz/nccl-tests/build/all_reduce_perf_typo\nNode: spark1\n" in err
    assert err.endswith("4 total processes failed to start\n")
    _o, err, rc = await run(w, f"mpirun -np 2 -H spark1,spark9 {NT}/all_reduce_perf")
    assert rc == 255 and err.startswith("ssh: Could not resolve hostname spark9")
    assert "ORTE was unable to reliably start one or more daemons." in err
    w.power_off(w.nodes["spark2"])
    _o, err, rc = await run(w, f"mpirun -np 2 -H spark1,spark2 {NT}/all_reduce_perf")
    assert rc == 255 and "No route to host" in err
    _o, err, rc = await run(w, "mpirun --bogus -np 2 all_reduce_perf")
    assert (rc, err) == (
        1,
        "mpirun: Error: unknown option \"--bogus\"\nType 'mpirun --help' for usage.\n",
    )
    assert ("spark1", "mpirun --bogus -np 2 all_reduce_perf") in w.refused
