"""A rail test starts its client once the ib_write_bw server says it listens (perftest's client
does not retry: one that connects first is refused), tries a refused client again while the
server runs, reports a server that ended before it listened without a number, and, in a proof
run, reads each rail's counters once between two tests and each node's GID table once."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from flows.expectations import DEFAULT
from wizard import sweep_traffic
from wizard.events import Event, ProbeSent
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

    def __init__(self, banner_after: float, *, fail: str = "") -> None:
        self.banner_after = banner_after
        self.fail = fail  # the server's own error: it ends before it listens
        self.listening = asyncio.Event()
        self.client_done = asyncio.Event()
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
        if command.startswith("stdbuf -oL ib_write_bw "):
            await asyncio.sleep(self.banner_after)
            if self.fail:
                return ProbeResult(name, "ssh", command, stderr=self.fail, exit_status=1)
            assert watch is not None
            self.listening.set()
            watch.feed(BANNER.encode()[:20])  # the line may come in pieces
            watch.feed(BANNER.encode()[20:])
            await self.client_done.wait()
            return ProbeResult(name, "ssh", command, stdout=BANNER + RESULT, exit_status=0)
        if command.startswith("ib_write_bw "):
            if not self.listening.is_set():
                return ProbeResult(
                    name,
                    "ssh",
                    command,
                    stderr="Couldn't connect to 10.9.1.2:18515\n"
                    " Unable to init the socket connection\n",
                    exit_status=1,
                )
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
    [(t_server, server)] = [x for x in node.log if x[1].startswith("stdbuf")]
    [(t_client, client)] = [x for x in node.log if x[1].startswith("ib_write_bw")]
    assert server.startswith("stdbuf -oL ib_write_bw -d rocep1s0f0 -x 3 -q 1 -D 5 ")
    assert client.endswith(" 10.9.1.2") and " -p 18515" in client
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
    clients = [c for _t, c in node.log if c.startswith("ib_write_bw")]
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
    assert not [c for _t, c in node.log if c.startswith("ib_write_bw")]  # no client ran
    # and the log holds only what was sent: the server, and its answer
    logged = [(type(e).__name__, getattr(e, "command", "") or e.result.command) for e in events]  # type: ignore[attr-defined]
    assert [kind for kind, _c in logged] == ["ProbeSent", "ProbeAnswered"]
    assert all(c.startswith("stdbuf -oL ib_write_bw ") for _k, c in logged)


async def test_a_proof_run_reads_counters_once_between_tests_and_gids_once() -> None:
    async with Lab("healthy-4node-crs804", time_scale=200) as lab:
        inv = load_inventory(lab.write_inventory())
        ssh = SshTransport([SshTarget.from_spec(n) for n in inv.nodes], ssh_config=None)
        ran: list[str] = []
        real = ssh.run

        async def run(name: str, command: str, **kw: Any) -> ProbeResult:
            ran.append(command)
            return await real(name, command, **kw)

        ssh.run = run  # type: ignore[method-assign]
        try:
            sw = Sweeper(ssh=ssh, nodes=[n.name for n in inv.nodes], switches={}, limits=DEFAULT)
            await sw.sweep([])
            ran.clear()
            ms = await sw.rail_tests(duration_s=2, bidirectional=False)
        finally:
            await ssh.close()
    assert ms and all(m.valid for m in ms)
    counters = [c for c in ran if "/hw_counters/" in c]
    used = {f"{m.extra['client']}/{m.extra['client_netdev']}" for m in ms} | {
        f"{m.extra['server']}/{m.extra['server_netdev']}" for m in ms
    }
    # one read after each end of each test, one before each rail's first test
    assert len(counters) == 2 * len(ms) + len(used)
    gids = [c for c in ran if c == "show_gids"]
    assert len(gids) == len(inv.nodes)
    for m in ms:  # each end's deltas are there, and moved with the test
        assert set(m.extra["counters"]) == {"client", "server"}


class Switch:
    """A switch whose CPU is idle until `busy_at` (the transfer's start), then at 80 %."""

    def __init__(self, busy_at: float) -> None:
        self.busy_at = busy_at

    async def call(self, path: str, verb: str, **kw: Any) -> ProbeResult:
        load = "80" if time.monotonic() >= self.busy_at else "1"
        rows = [{"cpu-load": load}] if path == "/system/resource" else []
        return ProbeResult("sw", "api", f"{path} {verb}", rows=tuple(rows))


async def _sampled(transfer_s: float) -> dict[str, Any]:
    """The switch CPU `with_switch_cpu` puts on a rail test whose client starts at once and whose
    ends then sleep perftest's second (0.1 s at a 10x clock) before `transfer_s` of data."""
    sw = Sweeper(ssh=Node(0.0), nodes=["spark1", "spark2"], switches={}, sink=lambda _e: None)
    sw.clock_rate = 10.0
    setup = sweep_traffic.PERFTEST_SETUP_S / sw.clock_rate
    switch = Switch(busy_at=0.0)
    sw.switches = {"sw": switch}  # type: ignore[dict-item]

    async def job() -> Measurement:
        starts = sweep_traffic._CLIENT_STARTS.get()
        assert starts is not None
        starts.append(time.monotonic())
        switch.busy_at = time.monotonic() + setup
        await asyncio.sleep(setup + transfer_s)
        return Measurement("rail", "spark1/p0->spark2/p0", 9.4, "Gb/s")

    [m] = await sweep_traffic.with_switch_cpu(sw, [job()], delay=10.0)
    return dict(m.extra)


async def test_no_switch_cpu_sample_before_the_data_moves_is_evidence() -> None:
    # a test whose data moved for less than two sampling intervals: the idle samples taken
    # while perftest slept are not "the CPU during the transfer"
    assert "switch_cpu" not in await _sampled(0.03)
    # a long enough transfer: only samples of the busy CPU count
    assert (await _sampled(0.3))["switch_cpu"] == {"sw": 80.0}
