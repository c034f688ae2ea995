"""The cluster as the engine sees it: transports, the sweep, traffic, and the lab's hands.

`InventoryFabric` implements the engine's `Fabric` port over an inventory: one persistent SSH
connection per node (wizard.transports.ssh), one RouterOS API session per switch
(wizard.transports.routeros), the concurrent sweep and the traffic runner (wizard.sweep). When
the inventory belongs to a lab, `hands` performs physical actions in it; a real inventory has no
hands, so the engine only ever prompts a technician.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from wizard.counters import UPTIME
from wizard.errors import TransportError
from wizard.events import Event, MeasurementTaken, RailSampled
from wizard.inventory import Inventory
from wizard.model import Measurement, PhysicalAction, ProbeResult, Rail
from wizard.probes import Observations, Probe
from wizard.schedule import halves_rounds, home_switches
from wizard.sweep import Sweeper
from wizard.sweep_traffic import LISTEN_WAIT_S
from wizard.transports.routeros import RouterOsTransport
from wizard.transports.ssh import SshTransport, StreamFailed


class LabHands(Protocol):
    def perform(self, action: PhysicalAction) -> Any: ...


class HandsPort:
    """Adapts the lab's synchronous hands (or a control-channel client) to the engine's port."""

    def __init__(self, hands: LabHands) -> None:
        self._hands = hands

    async def perform(self, action: PhysicalAction) -> str:
        done = self._hands.perform(action)
        if inspect.isawaitable(done):
            done = await done
        if isinstance(done, str):
            return done or f"{action.kind} performed"
        return "; ".join(done) or f"{action.kind} performed"


class ApiPort:
    """Adapts a RouterOsTransport to the fix executor's `RouterOsApi`: rows, or an exception
    carrying the switch's error text."""

    def __init__(self, transport: RouterOsTransport) -> None:
        self.transport = transport

    async def call(self, path: str, verb: str, **args: str) -> list[dict[str, str]]:
        if verb == "export" and path in ("", "/"):
            res = await self.transport.export(args["file"], show_sensitive="show-sensitive" in args)
        elif verb == "print" and not args:
            res = await self.transport.print(path)
        else:
            # attribute words only: no key is "timeout" in a RouterOS command
            res = await self.transport.call(path, verb, **args)  # type: ignore[arg-type]
        if res.error is not None:
            # the transport's text already starts with the switch name; TransportError adds it
            message = res.error.removeprefix(f"{self.transport.name}: ")
            raise TransportError(message, target=self.transport.name)
        return [dict(r) for r in res.rows]


class InventoryFabric:
    def __init__(
        self,
        inventory: Inventory,
        ssh: SshTransport,
        switches: Mapping[str, RouterOsTransport],
        *,
        hands: LabHands | None = None,
        sink: Callable[[Event], None] | None = None,
        perf_duration_s: int = 5,
        server_start_delay_s: float = LISTEN_WAIT_S,
        sweeper: Sweeper | None = None,
    ) -> None:
        self.inventory = inventory
        self.ssh = ssh
        self.transports = dict(switches)
        self._hands = HandsPort(hands) if hands is not None else None
        self.perf_duration_s = perf_duration_s
        self.sample_interval_s = 0.25
        self._sample_sleep: dict[str, float] = {}  # node -> calibrated node-time sleep
        self._samples_seen: dict[str, int] = {}  # node -> samples emitted (streams alive)
        self._sampled = asyncio.Event()
        self._baselines: set[str] = set()  # nodes whose current stream sent its first sample
        # the longest a rail test's client waits for its server to say it listens
        self.server_start_delay_s = server_start_delay_s
        self._direct_pair: tuple[str, str, int] | None = None  # set by direct_connect_action
        # The engine emits MeasurementTaken itself (after the drain guard): the sweeper's
        # own measurement events are dropped here so that nothing is recorded twice.
        self._sink = sink
        self._management: dict[str, tuple[str, ...]] = {}  # switch -> ports read from it
        self.traffic: dict[str, object] = {}  # what the last fabric tests saw (the ping matrix)
        if sweeper is None:  # else one begun on these transports (a prefetched preflight)
            sweeper = Sweeper(
                ssh=ssh,
                nodes=[n.name for n in inventory.nodes],
                switches=self.transports,
                tool_paths={n.name: n.tools for n in inventory.nodes if n.tools},
            )
        sweeper.switches = self.transports
        sweeper.sink = self._forward
        self.sweeper = sweeper

    def _forward(self, event: Event) -> None:
        if self._sink is not None and not isinstance(event, MeasurementTaken):
            self._sink(event)

    # -- the engine's Fabric port ----------------------------------------------------------------

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.inventory.nodes)

    @property
    def switches(self) -> tuple[str, ...]:
        return tuple(self.transports)

    @property
    def hands(self) -> HandsPort | None:
        return self._hands

    @property
    def rails(self) -> Mapping[str, tuple[Rail, ...]]:
        return self.sweeper.rails

    def set_step(self, step: str) -> None:
        self.sweeper.step = step

    async def sweep(self, probes: Sequence[Probe]) -> Observations:
        obs = await self.sweeper.sweep(probes)
        self._learn_management(obs)
        return obs

    def _learn_management(self, obs: Observations) -> None:
        """Remember the ports each switch says the wizard's API session arrives on."""
        from wizard.mgmt import management_ports, paths_from_rows

        for name, results in obs.switches.items():
            got = {k: (r.rows if r.error is None else None) for k, r in results.items()}
            paths = paths_from_rows(got)
            if paths:
                self._management[name] = tuple(sorted(management_ports(paths)))

    async def measure(self, kind: str) -> list[Measurement]:
        if not any(self.sweeper.rails.values()):
            # Traffic needs the rails (and their addresses): discover them first.
            await self.sweeper.sweep([])
        sampler = asyncio.ensure_future(self._sample_rails())
        try:
            await self._first_samples()
            return await self._measure(kind)
        finally:
            await self._last_samples()
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
            self._baselines.clear()  # the next test opens new streams

    async def _first_samples(self) -> None:
        """Wait until every node's stream has sent its first sample, the baseline the gauges
        count from: a transfer that started before it would never be seen moving. Bounded: a
        node whose stream does not start is measured anyway."""
        if self._sink is not None:
            await self._until_sampled(lambda: all(n in self._baselines for n in self.nodes))

    async def _last_samples(self) -> None:
        """Let every streaming node send one more sample: the one that covers the end of the
        test (a test shorter than the sampling interval is seen only by it). Bounded."""
        before = dict(self._samples_seen)
        await self._until_sampled(
            lambda: all(self._samples_seen[n] > before.get(n, 0) for n in self._samples_seen)
        )

    async def _until_sampled(self, done: Callable[[], bool]) -> None:
        """Wait, sample by sample, until `done()`, for at most three sampling intervals."""
        deadline = time.monotonic() + 3 * self.sample_interval_s
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._sampled.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._sampled.wait(), left)

    async def _sample_rails(self) -> None:
        """Live gauges: one long-lived channel per node runs a sampling loop on the node (its
        uptime and RDMA byte counters every `sample_interval_s`, a marker line after each) and
        `RailSampled` Gb/s come from the deltas (node time, so a lab running faster than life
        still shows true rates). Never blocks the measurement."""
        if self._sink is None:
            return
        await asyncio.gather(*(self._sample_node(n) for n in self.nodes), return_exceptions=True)

    async def _sample_node(self, node: str) -> None:
        """One node's stream. Its node clock is calibrated on the first samples: a clock that
        runs faster than the wall (a lab at --time-scale) gets a longer node-time sleep, so the
        wall rate stays the asked one. A broken stream is started again after a pause."""
        assert self._sink is not None
        sleep_node_s = self._sample_sleep.get(node, self.sample_interval_s)
        calibrated = node in self._sample_sleep
        me = asyncio.current_task()
        while True:
            if me is not None and me.cancelling():
                # asked to stop, and the CancelledError was lost on the way (asyncio.wait_for
                # in 3.11 drops one that lands as its awaitable completes): stop all the same
                raise asyncio.CancelledError
            restart = False
            last: tuple[float, dict[str, int]] | None = None
            first_wall: tuple[float, float] | None = None  # (wall, node uptime) of sample 1
            block: list[str] = []
            try:
                # aclosing: leaving the loop (calibrated, cancelled) closes the channel now,
                # which ends the node's sampling loop
                async with contextlib.aclosing(
                    self.ssh.stream_lines(node, _sampler(sleep_node_s))
                ) as lines:
                    async for line in lines:
                        if line.strip() != _SAMPLE_END:
                            block.append(line)
                            continue
                        sample = _parse_counters("".join(block))
                        block = []
                        if sample is None:
                            continue
                        now = time.monotonic()
                        if last is not None and sample[0] > last[0]:
                            self._emit_samples(node, last, sample)
                            self._samples_seen[node] = self._samples_seen.get(node, 0) + 1
                            self._sampled.set()
                        elif last is None and calibrated:
                            self._baselines.add(node)  # the gauges count from here
                            self._sampled.set()
                        last = sample
                        if first_wall is None:
                            first_wall = (now, sample[0])
                        elif not calibrated and now - first_wall[0] >= _CALIBRATION_WALL_S:
                            calibrated = True
                            rate = (sample[0] - first_wall[1]) / (now - first_wall[0])
                            sleep_node_s = self.sample_interval_s
                            if rate > 1.5:  # the node's clock runs faster than the wall
                                sleep_node_s = round(self.sample_interval_s * rate, 3)
                                restart = True
                            self._sample_sleep[node] = sleep_node_s  # for the next tests too
                            if restart:
                                break  # restart the loop with the longer sleep
                            self._baselines.add(node)  # calibrated on this stream: counting
                            self._sampled.set()
            except StreamFailed:
                pass
            if me is not None and me.cancelling():
                raise asyncio.CancelledError  # (as above)
            if not restart:  # the stream broke or ended: try again after a pause
                await asyncio.sleep(max(1.0, self.sample_interval_s * 4))

    def _emit_samples(
        self, node: str, prev: tuple[float, dict[str, int]], sample: tuple[float, dict[str, int]]
    ) -> None:
        assert self._sink is not None
        dt = sample[0] - prev[0]
        by_rdma = {r.rdma: r.netdev for r in self.sweeper.rails.get(node, ())}
        for rdma, words in sample[1].items():
            before = prev[1].get(rdma)
            if before is None or rdma not in by_rdma or words < before:
                continue
            gbps = (words - before) * 4 * 8 / dt / 1e9  # port_xmit_data counts 4-byte words
            self._sink(RailSampled(node=node, netdev=by_rdma[rdma], gbps=round(gbps, 2)))

    async def _measure(self, kind: str) -> list[Measurement]:
        if kind in ("rails", "matrix"):
            # "matrix": every pair over n-1 rounds of disjoint pairs (a round at once, split so
            # no two flows share an ISL direction), for the direct-connect step, which reads
            # the node common to the low pairs off it (wizard/pairs.py); "rails": the disjoint
            # pairs, every rail once, to verify a fix in a bounded time
            ms = await self.sweeper.rail_tests(
                duration_s=self.perf_duration_s,
                server_start_delay_s=self.server_start_delay_s,
                quick=kind == "rails",
            )
            return [_with_nodes(m) for m in ms]
        if kind == "fabric":
            # the jumbo ping matrix and the two-flows-one-ISL test, as `check --perf` runs them
            ms = await self.sweeper.fabric_tests(
                duration_s=self.perf_duration_s, server_start_delay_s=self.server_start_delay_s
            )
            self.traffic = {"ping": list(self.sweeper.pings)}
            return [_with_nodes(m) for m in ms]
        if kind == "direct":
            return await self._direct()
        if kind == "halves":
            return await self._halves()
        if kind == "nccl":
            m, _res = await self.sweeper.nccl_test()
            # the switches the ring may cross: the gate it is held to depends on them
            runs = [
                replace(m, extra={**m.extra, "nodes": self.nodes, "switches": len(self.transports)})
            ]
            if len(self.nodes) >= 2:
                pair = self.nodes[:2]
                sr, _res = await self.sweeper.nccl_test(op="sendrecv_perf", nodes=pair)
                runs.append(replace(sr, extra={**sr.extra, "nodes": pair}))
            job, _res = await self.sweeper.nccl_test(mode="job")
            runs.append(replace(job, extra={**job.extra, "nodes": self.nodes}))
            return runs
        raise ValueError(f"unknown measurement kind {kind!r}")

    async def _pair(self, a: Rail, b: Rail, port: int) -> Measurement:
        m = await self.sweeper._one_rail_test(
            a,
            b,
            port=port,
            duration_s=self.perf_duration_s,
            delay=self.server_start_delay_s,
            timeout=60.0,
        )
        return _with_nodes(m)

    def _rail(self, node: str, port: int, half: str) -> Rail | None:
        for r in self.sweeper.rails.get(node, ()):
            if r.port == port and r.half == half:
                return r
        return None

    async def _direct(self) -> list[Measurement]:
        a, b, port = self._direct_pair or (self.nodes[0], self.nodes[1], 0)
        ra, rb = self._rail(a, port, "A"), self._rail(b, port, "A")
        if ra is None or rb is None or not ra.addresses or not rb.addresses:
            return [
                Measurement(
                    kind="rail",
                    target=f"{a}/port{port}->{b}/port{port}",
                    value=0.0,
                    unit="Gb/s",
                    valid=False,
                    reason=f"no addressed half-A rail on port {port} of both nodes",
                    extra={"nodes": (a, b)},
                )
            ]
        # the switch CPU sampled during the test, like every `check --perf` transfer
        return await self.sweeper.rail_round([self._pair(ra, rb, 18515)])

    async def _halves(self) -> list[Measurement]:
        """Both PCIe halves of port 0 at once, per sending node: the node's total, to a node on
        the same switch where there is one (an ISL direction carries ~163.8 Gb/s of the two
        flows, not the node's ~196); a pair that has to cross an ISL says so
        (`extra["across_isl"]`) and is held to the ISL's share."""
        out: list[Measurement] = []
        switch_of = home_switches(self.nodes, self.sweeper.rails)
        rounds = halves_rounds(list(self.nodes), switch_of)
        for pairs in rounds:
            jobs = []
            for i, (a, b) in enumerate(pairs):
                legs = [(self._rail(a, 0, h), self._rail(b, 0, h)) for h in ("A", "B")]
                if any(
                    x is None or y is None or not x.addresses or not y.addresses for x, y in legs
                ):
                    out.append(
                        Measurement(
                            kind="pair",
                            target=a,
                            value=0.0,
                            unit="Gb/s",
                            valid=False,
                            reason=f"{a}: both halves of port 0 need an address to be driven",
                            extra={"nodes": (a, b)},
                        )
                    )
                    continue
                across = None not in (switch_of[a], switch_of[b]) and switch_of[a] != switch_of[b]
                jobs.append(self._both(a, b, legs, 18600 + 2 * i, across_isl=across))
            out.extend(await self.sweeper.rail_round(jobs))
        seen: dict[str, Measurement] = {}
        for m in out:
            seen.setdefault(m.target, m)
        return list(seen.values())

    async def _both(
        self,
        a: str,
        b: str,
        legs: list[tuple[Rail | None, Rail | None]],
        port: int,
        *,
        across_isl: bool = False,
    ) -> Measurement:
        ms = await asyncio.gather(
            *(self._pair(x, y, port + k) for k, (x, y) in enumerate(legs) if x and y)
        )
        total = sum(m.value for m in ms)
        return Measurement(
            kind="pair",
            target=a,
            value=round(total, 2),
            unit="Gb/s",
            valid=all(m.valid for m in ms),
            reason="; ".join(m.reason for m in ms if m.reason),
            extra={
                "nodes": (a, b),
                "halves": {str(m.extra.get("client_netdev")): m.value for m in ms},
                "command": "ib_write_bw on both halves of port 0 at once",
                **({"across_isl": True} if across_isl else {}),
            },
        )

    async def run(
        self, node: str, command: str, *, stdin: str | None = None, timeout: float = 30.0
    ) -> ProbeResult:
        return await self.ssh.run(node, command, stdin=stdin, timeout=timeout)

    def api(self, switch: str) -> ApiPort:
        return ApiPort(self.transports[switch])

    def management_ports(self, switch: str) -> tuple[str, ...]:
        """The inventory's management ports and those the switch itself showed carrying the
        wizard's API session (the switch's answer wins; the inventory cannot shrink it)."""
        listed = tuple(self.inventory.switch(switch).management_ports)
        return tuple(dict.fromkeys((*self._management.get(switch, ()), *listed)))

    def direct_connect_action(
        self, pair: tuple[str, str] | None = None, port: int = 0
    ) -> tuple[PhysicalAction, PhysicalAction] | None:
        """The recabling that takes `pair` (default: the first two nodes) off the switch on node
        port `port` and cables them port to port, and the recabling that puts it back. None when
        there is no switch to bypass or a node's port is not known to be cabled to one."""
        if not self.transports or len(self.nodes) < 2:
            return None
        a, b = pair or (self.nodes[0], self.nodes[1])
        ends: dict[str, tuple[str, str]] = {}
        for node in (a, b):
            rail = self._rail(node, port, "A")
            dest = None
            if rail is not None and rail.switch and rail.switch_port:
                dest = (rail.switch, rail.switch_port)
            elif rail is not None:
                dest = self.inventory.cabling.get(rail.key)
            if dest is None:
                return None
            ends[node] = dest
        self._direct_pair = (a, b, port)
        (sa, pa), (sb, pb) = ends[a], ends[b]
        p = f"port{port}"
        breakout = [f"{s} {q}" for s, q in ((sa, pa), (sb, pb)) if _breakout(q)]
        cable = (
            "a QSFP112 DAC (200G, QSFP112 on both ends): the cables on "
            + " and ".join(breakout)
            + " are breakout DACs whose far end is a QSFP56-DD plug, which cannot go into a Spark"
            if breakout
            else "a QSFP112 DAC (200G, QSFP112 on both ends)"
        )
        to_direct = PhysicalAction(
            kind="recable",
            nodes=(a, b),
            cables=((a, p, f"node:{b}:{p}"),),
            instructions=(
                f"Direct-connect test: unplug {a} {p} from {sa} {pa} and {b} {p} from "
                f"{sb} {pb}; connect {a} {p} to {b} {p} with {cable}. Leave everything else as "
                "it is. The wizard waits for carrier at 200000Mb/s on both ends."
            ),
        )
        back = PhysicalAction(
            kind="recable",
            nodes=(a, b),
            cables=((a, p, f"switch:{sa}:{pa}"), (b, p, f"switch:{sb}:{pb}")),
            instructions=(
                f"Put the cabling back: remove the QSFP112 DAC, then {a} {p} to {sa} {pa}, and "
                f"{b} {p} to {sb} {pb}. The wizard waits for carrier at 200000Mb/s on both ends."
            ),
        )
        return to_direct, back

    async def close(self) -> None:
        self.sweeper.cancel_opening()
        await asyncio.gather(
            self.ssh.close(), *(t.close() for t in self.transports.values()), return_exceptions=True
        )


# The counters between two readings of the node's clock: a sample is timed at their midpoint,
# so that a sampling shell held up between the clock and the counters (a busy node, a loaded
# lab) shows as half the delay, not all of it, in the Gb/s of the gauges.
_COUNTERS = (
    "cat /proc/uptime; grep -H . /sys/class/infiniband/*/ports/1/counters/port_xmit_data; "
    "cat /proc/uptime"
)
_SAMPLE_END = "@@fabwiz-sample@@"
# The node clock's rate is measured over at least this much wall time: samples of a fast lab
# clock arrive several to a read, and two of one read would give a rate without bound.
_CALIBRATION_WALL_S = 0.2


def _sampler(sleep_s: float) -> str:
    """The sampling loop a node runs for the gauges: one sample, a marker line, a sleep."""
    return f"while :; do {_COUNTERS}; echo {_SAMPLE_END}; sleep {sleep_s:g}; done"


_XMIT = re.compile(
    r"^/sys/class/infiniband/([^/]+)/ports/1/counters/port_xmit_data:(\d+)\s*$", re.M
)


def _parse_counters(text: str) -> tuple[float, dict[str, int]] | None:
    """`cat /proc/uptime`, `grep -H .` of the counters, `cat /proc/uptime` -> (node time s,
    rdma -> words). The time is the midpoint of the two clock readings (the one there is, if
    the second is missing); none, or a clock that went back: no sample."""
    clock = [float(m.group(1)) for m in UPTIME.finditer(text)]
    if not clock or clock[-1] < clock[0]:
        return None
    uptime = (clock[0] + clock[-1]) / 2
    return uptime, {m.group(1): int(m.group(2)) for m in _XMIT.finditer(text)}


def _breakout(port: str) -> bool:
    """A switch sub-port of a QSFP56-DD cage: reached from a Spark through a breakout DAC."""
    return bool(re.fullmatch(r"qsfp56-dd-\d+-\d+", port))


def _with_nodes(m: Measurement) -> Measurement:
    nodes = tuple(n for n in (m.extra.get("client"), m.extra.get("server")) if n)
    return replace(m, extra={**m.extra, "nodes": nodes})
