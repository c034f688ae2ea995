"""A rail test starts its client once the ib_write_bw server says it listens (perftest's client
does not retry: one that connects first is refused), tries a refused client again while the
server runs, reports a server that ended before it listened without a number; a round reads its
rails' counters and samples the switch CPU while its data moves and nothing else does, the next
round's clients connecting as its data is about to end; a proof run reads each node's GID table
once."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest

from flows.expectations import DEFAULT
from wizard import sweep_traffic
from wizard.events import Event, ProbeSent, TrafficPlanned
from wizard.inventory import load_inventory
from wizard.lab.lab import Lab
from wizard.model import Measurement, ProbeResult, Rail
from wizard.readiness import NodeTools
from wizard.sweep import Sweeper
from wizard.sweep_traffic import RailRun, one_rail_test
from wizard.transports.capped import OutputWatch
from wizard.transports.ssh import SshTarget, SshTransport

RESULT = (
    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
    " 65536      1066939          0.00               111.86               0.213349\n"
)
BANNER = (
    "\n************************************\n"
    "* Waiting for client to connect... *\n"
    "************************************\n"
)


class Node:
    """A node pair's perftest as a node runs it: the server prints its line (through
    `stdbuf -oL`) after `banner_after` seconds and listens only from then; a client that
    connects before is refused, as perftest's is."""

    def __init__(self, banner_after: float, *, fail: str = "", transfer_s: float = 0.0) -> None:
        self.banner_after = banner_after
        self.transfer_s = transfer_s  # how long the client's data moves after its header
        self.fail = fail  # the server's own error: it ends before it listens
        self.listening = asyncio.Event()
        self.client_done = asyncio.Event()
        self.data_began = False
        self.log: list[tuple[float, str]] = []

    async def run(
        self,
        name: str,
        command: str,
        *,
        timeout: float | None = None,
        stdin: str | None = None,
        watch: OutputWatch | None = None,
    ) -> ProbeResult:
        self.log.append((time.monotonic(), command))
        client = command.startswith("stdbuf -oL ib_write_bw ") and command.endswith(" 10.9.1.2")
        if command.startswith("stdbuf -oL ib_write_bw ") and not client:
            await asyncio.sleep(self.banner_after)
            if self.fail:
                return ProbeResult(name, "ssh", command, stderr=self.fail, exit_status=1)
            assert watch is not None
            self.listening.set()
            watch.feed(BANNER.encode()[:20])  # the line may come in pieces
            watch.feed(BANNER.encode()[20:])
            await self.client_done.wait()
            return ProbeResult(name, "ssh", command, stdout=BANNER + RESULT, exit_status=0)
        if client:
            if not self.listening.is_set():
                return ProbeResult(
                    name,
                    "ssh",
                    command,
                    stderr="Couldn't connect to 10.9.1.2:18515\n"
                    " Unable to init the socket connection\n",
                    exit_status=1,
                )
            assert watch is not None  # the round learns from its header when its data began
            watch.feed(RESULT.encode())
            self.data_began = True
            await asyncio.sleep(self.transfer_s)
            self.client_done.set()
            return ProbeResult(name, "ssh", command, stdout=RESULT, exit_status=0)
        return ProbeResult(name, "ssh", command, error="not a counter this test serves")

    async def connect(self, name: str) -> str | None:
        return None


def _rail(node: str, ip: str) -> Rail:
    return Rail(node, "enp1s0f0np0", "rocep1s0f0", 0, "A", addresses=(f"{ip}/24",), up=True)


async def _test(node: Node, wait: float) -> tuple[Measurement, list[Event]]:
    """One rail test from spark1 to spark2 on `node`'s perftest; the client waits at most
    `wait` for its server to say it listens."""
    events: list[Event] = []
    sw = Sweeper(ssh=node, nodes=["spark1", "spark2"], switches={}, sink=events.append)
    for n in ("spark1", "spark2"):
        sw.tools[n] = NodeTools(paths={"ib_write_bw": "/usr/bin/ib_write_bw"})
    client, server = _rail("spark1", "10.9.1.1"), _rail("spark2", "10.9.1.2")
    return await one_rail_test(sw, client, server, RailRun(18515, 5, wait, 30.0)), events


@pytest.fixture
def _gid(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GID index, as the fake nodes serve no GID table."""

    async def index(sw: Any, rail: Rail) -> tuple[int | None, str]:
        return 3, ""

    monkeypatch.setattr(sweep_traffic, "gid_index", index)


@pytest.mark.usefixtures("_gid")
async def test_the_client_starts_when_the_server_says_it_listens() -> None:
    node = Node(banner_after=0.4)
    m, events = await _test(node, 10.0)
    assert m.valid and m.value == pytest.approx(111.86)
    [(t_server, server)] = [x for x in node.log if x[1].endswith(" -p 18515")]
    [(t_client, client)] = [x for x in node.log if x[1].endswith(" 10.9.1.2")]
    assert server.startswith("stdbuf -oL ib_write_bw -d rocep1s0f0 -x 3 -q 1 -D 5 ")
    # the client line-buffered too: its results header says when its data began
    assert client.startswith("stdbuf -oL ib_write_bw -d rocep1s0f0 -x 3 -q 1 -D 5 ")
    assert client.endswith(" 10.9.1.2") and " -p 18515" in client
    assert m.extra["command"] == client.removeprefix("stdbuf -oL ")  # the evidence's line
    assert t_client - t_server >= 0.4  # not before it listens: never refused
    sent = [e.command for e in events if isinstance(e, ProbeSent)]
    assert sent == [server, client]  # every command run is in the log, as it ran


@pytest.mark.usefixtures("_gid")
async def test_a_refused_client_tries_again_while_its_server_runs() -> None:
    # the server says nothing within the client's wait (0.05 s): the client goes, is refused,
    # and tries again until the server listens
    node = Node(banner_after=0.6)
    m, events = await _test(node, 0.05)
    assert m.valid and m.value == pytest.approx(111.86)
    clients = [c for _t, c in node.log if c.endswith(" 10.9.1.2")]
    assert len(clients) == 3  # at 0.05 s, 0.3 s (refused), 0.8 s (listening)
    refused = [e for e in events if getattr(e, "result", None) and "Couldn't" in e.result.stderr]
    assert len(refused) == 2  # each refused attempt is logged with its answer


@pytest.mark.usefixtures("_gid")
async def test_a_server_that_ends_before_it_listens_gives_no_number() -> None:
    node = Node(banner_after=0.01, fail=" Couldn't listen to port\n")
    m, events = await _test(node, 10.0)
    assert not m.valid and m.value == 0.0
    assert m.reason == (
        "no result: not run: the ib_write_bw server on spark2 ended before it listened "
        "(Couldn't listen to port)"
    )
    assert not [c for _t, c in node.log if c.endswith(" 10.9.1.2")]  # no client ran
    # and the log holds only what was sent: the server, and its answer
    logged = [(type(e).__name__, getattr(e, "command", "") or e.result.command) for e in events]  # type: ignore[attr-defined]
    assert [kind for kind, _c in logged] == ["ProbeSent", "ProbeAnswered"]
    assert all(c.startswith("stdbuf -oL ib_write_bw -d rocep1s0f0 ") for _k, c in logged)


async def test_a_proof_run_reads_counters_inside_each_rounds_data_and_gids_once() -> None:
    # -D 10 at 10x: a second of data per round, long enough for every round to overlap the
    # next one's connection with its data, and for its window to close inside it
    async with Lab("healthy-4node-crs804", time_scale=10) as lab:
        inv = load_inventory(lab.write_inventory())
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        ran: list[tuple[float, str]] = []
        spans: list[tuple[float, float]] = []  # each client's (launched, ended)
        real = ssh.run

        async def run(name: str, command: str, **kw: Any) -> ProbeResult:
            t0 = time.monotonic()
            ran.append((t0, command))
            res = await real(name, command, **kw)
            if (
                command.startswith("stdbuf -oL ib_write_bw ")
                and "." in command.rsplit(maxsplit=1)[-1]
            ):
                spans.append((t0, time.monotonic()))
            return res

        ssh.run = run  # type: ignore[method-assign]
        events: list[Event] = []
        try:
            sw = Sweeper(
                ssh=ssh,
                nodes=[n.name for n in inv.nodes],
                switches={},
                sink=events.append,
                limits=DEFAULT,
            )
            sw.clock_rate = 10.0
            await sw.sweep([])
            ran.clear()
            ms = await sw.rail_tests(duration_s=10, bidirectional=False)
        finally:
            await ssh.close()
    assert len(ms) == 24 and all(m.valid and m.value > 100 for m in ms)
    [plan] = [e for e in events if isinstance(e, TrafficPlanned)]
    # the counters: one command per node before and one after each round, all its rails at once
    reads = [c for _t, c in ran if "/hw_counters/" in c]
    nodes_per_round = [len({f.split("/")[0] for f in flows}) for flows in plan.rounds]
    assert len(reads) == 2 * sum(nodes_per_round)
    # (a machine too busy to read the counters in time reads them after the data: the window
    # then says so, and spans the whole data phase)
    inside = [m for m in ms if m.extra["counter_window_in_data"]]
    assert len(inside) >= len(ms) // 2
    for m in ms:
        c, s = m.extra["counters"]["client"], m.extra["counters"]["server"]
        window = m.extra["counter_window_s"]
        if m not in inside:
            assert window > 9.5
            assert c["tx_bytes_phy"] * 8 / window / 1e9 < m.value * 1.1
            continue
        assert 0 < window < 10  # inside the test's data phase
        # what crossed the rails in the window is this test's data and nothing else: the
        # receiver counted what the sender sent, at the rate perftest reported (plus framing)
        # (the two nodes are read a few ms apart: a few % of the window)
        assert s["rx_packets_phy"] == pytest.approx(c["tx_packets_phy"], rel=0.1)
        # (the window is the sender's own clock between its two reads, /proc/uptime around
        # the counters: exact to its 10 ms, however long the SSH round trips took; what is
        # left above the rate perftest reports is RoCE framing, ~1.5%; a second flow on the
        # rail would double it)
        wire_gbps = c["tx_bytes_phy"] * 8 / window / 1e9
        assert m.value * 0.98 < wire_gbps < m.value * 1.1
    # the rounds follow each other at the test's duration: each round's clients connect while
    # the round before still moves data (perftest's second of sleep overlaps it), and every
    # client connects the first time (no server was asked before it listened)
    assert len(spans) == len(ms)
    order = sorted(spans)
    sizes = [len(r) for r in plan.rounds]
    rounds = [order[sum(sizes[:k]) : sum(sizes[: k + 1])] for k in range(len(sizes))]
    pipelined = {m.target for m in inside}
    for k, (before, after) in enumerate(itertools.pairwise(rounds)):
        if not set(plan.rounds[k]) <= pipelined:
            continue  # read after its data: the next round connected after that
        assert min(t0 for t0, _t1 in after) < max(t1 for _t0, t1 in before)
    gids = [c for _t, c in ran if c == "show_gids"]
    assert len(gids) == len(inv.nodes)


class Switch:
    """A switch whose CPU is busy (80 %) while `busy()` says so, idle (1 %) otherwise."""

    def __init__(self, busy: Any) -> None:
        self.busy = busy

    async def call(self, path: str, verb: str, **kw: Any) -> ProbeResult:
        load = "80" if self.busy() else "1"
        rows = [{"cpu-load": load}] if path == "/system/resource" else []
        return ProbeResult("sw", "api", f"{path} {verb}", rows=tuple(rows))


@pytest.mark.usefixtures("_gid")
async def test_a_round_samples_the_switch_cpu_while_its_data_moves_only() -> None:
    # the switch CPU is busy until the client's results header (perftest's second of sleep,
    # a handshake: not the transfer) and idle while the data moves: the round says idle
    node = Node(banner_after=0.0, transfer_s=0.3)
    sw = Sweeper(ssh=node, nodes=["spark1", "spark2"], switches={}, sink=lambda _e: None)
    for n in ("spark1", "spark2"):
        sw.tools[n] = NodeTools(paths={"ib_write_bw": "/usr/bin/ib_write_bw"})
    sw.switches = {"sw": Switch(lambda: not node.data_began)}  # type: ignore[dict-item]
    client, server = _rail("spark1", "10.9.1.1"), _rail("spark2", "10.9.1.2")
    [m] = await sweep_traffic.rail_round(
        sw, [one_rail_test(sw, client, server, RailRun(18515, 5, 10.0, 30.0))]
    )
    assert m.valid and m.extra["switch_cpu"] == {"sw": 1.0}


async def test_a_launch_that_says_nothing_is_sampled_from_its_delay_on() -> None:
    # an NCCL launch prints nothing as its data begins: samples count from `delay` after it
    sw = Sweeper(ssh=Node(0.0), nodes=["spark1"], switches={}, sink=lambda _e: None)
    began = time.monotonic() + 0.1
    sw.switches = {"sw": Switch(lambda: time.monotonic() < began)}  # type: ignore[dict-item]

    async def job() -> Measurement:
        await asyncio.sleep(0.4)
        return Measurement("nccl", "cluster", 20.0, "GB/s")

    [m] = await sweep_traffic.with_switch_cpu(sw, [job()], delay=0.1, interval_s=0.01)
    assert m.extra["switch_cpu"] == {"sw": 1.0}
