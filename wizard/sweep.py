"""The read-only sweep: every probe of every node and switch, concurrently, in few round trips.

Why it is shaped this way: a technician's `ssh host cmd` per command costs a handshake each; here
each node gets ONE persistent connection (wizard.transports.ssh) and its probes travel as ONE
`sh -c` script, each section framed by marker lines that carry the exit status: the node-wide
probes and discovery, then the per-rail probes in a loop the node runs over its own
ibdev2netdev (`sweep_batch.rail_loop`), so that finding the rails costs no second round trip.
Every interpolated value is shell-quoted; a rail's names reach its commands as double-quoted
variables. Switches get their API calls on one session each. Nodes and switches run
concurrently; an unreachable one lands in `Observations.unreachable` and the rest goes on.

The `--perf` traffic runner is here too: single-QP `ib_write_bw` per rail between node pairs
(disjoint pairs at the same time, one rail index at a time so the two ports of a PCIe half do not
share it), and one NCCL `all_reduce_perf` run. Events (ProbeSent, ProbeAnswered,
MeasurementTaken) go to an optional sink so the session log and the TUI see them.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NamedTuple

from wizard import readiness, sweep_nccl
from wizard import sweep_traffic as traffic
from wizard.discovery import (
    DISCOVERY_HOST_PROBES,
    SW_BRIDGE_HOST,
    node_rails,
    rails_from_observations,
    read_ibdev2netdev,
    switch_map_from_observations,
)
from wizard.errors import FabwizError
from wizard.events import Event, MeasurementTaken, ProbeAnswered, ProbeSent, TrafficPlanned
from wizard.model import Measurement, ProbeResult, Rail, SwitchMap
from wizard.probes import HostProbe, Observations, Probe, SwitchProbe
from wizard.readiness import NodeTools
from wizard.schedule import flux_last, pack_rounds, rail_pairs, round_robin
from wizard.sweep_batch import (
    HostRunner,
    Section,
    SwitchApi,
    answered,
    build_script,
    fill,
    rail_loop,
    rail_names,
    rail_results,
    split_script_output,
    switch_probes,
)
from wizard.sweep_rounds import Round
from wizard.sweep_traffic import LISTEN_WAIT_S, peer_rail, rail_at
from wizard.turns import Turns
from wizard.versions import Versions

__all__ = [
    "HostRunner",
    "Section",
    "Sweeper",
    "SwitchApi",
    "build_script",
    "rail_pairs",
    "round_robin",
    "split_script_output",
]

_fill = fill  # the name bench/sweep.py imports

EventSink = Callable[[Event], None]


# --- the sweep -------------------------------------------------------------------------------


def _outcome_taken(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


class _Batch(NamedTuple):
    """What one script on a node gave: its declared sections' results (or the transport's
    error), the sections it framed itself (`rail_loop`), and when it ran."""

    out: dict[str, ProbeResult]
    error: str | None
    loose: dict[str, tuple[str, int | None]]
    started: float
    duration: float


@dataclass(frozen=True, slots=True)
class _RailTest:
    """How long and where one rail test runs (ib_write_bw's port, duration, timeouts)."""

    port: int
    duration_s: int
    delay: float
    timeout_s: float


@dataclass
class Sweeper:
    """Runs probes against nodes (over `ssh`) and switches (over their API sessions)."""

    ssh: HostRunner
    nodes: Sequence[str]
    switches: Mapping[str, SwitchApi] = field(default_factory=dict)
    sink: EventSink | None = None
    step: str = "preflight"
    batch_timeout_s: float | None = None
    rails: dict[str, tuple[Rail, ...]] = field(default_factory=dict)  # discovered, by node
    # each switch's port toward each other switch, from the last sweep's host tables: the ISL
    # directions a rail test crosses (the rail matrix runs no two flows on one)
    switch_map: SwitchMap = field(default_factory=SwitchMap)
    # readiness, by node: where each tool is, the management (netdev, IPv4)
    tools: dict[str, NodeTools] = field(default_factory=dict)
    mgmt: dict[str, tuple[str, str]] = field(default_factory=dict)
    # the inventory's `tools:`, by node: tool -> path
    tool_paths: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    _opening: dict[str, asyncio.Future[str | None]] = field(default_factory=dict, repr=False)
    pings: list[dict[str, object]] = field(default_factory=list)  # the last jumbo ping matrix
    versions: Versions = field(default_factory=Versions)  # emitted as VersionsRecorded on change
    # the expectations table (flows.expectations.Expectations, any object with its fields):
    # rail_tests reads its re-run and bidirectional limits from it
    limits: Any = None
    # how many times faster than life the targets' clock runs (a lab's time scale; 1 on a
    # rack): the switch CPU is sampled every `CPU_SAMPLE_S` of the targets' time, so that a
    # transfer is sampled as often whatever the clock
    clock_rate: float = 1.0
    # Nodes' batches are said and taken in (split, logged, said) by time slices of the event
    # loop: 64 nodes sent or answering at once were up to ~0.2 s of a TUI that took no key.
    _turns: Turns = field(default_factory=Turns, repr=False)
    # a sweep begun before anyone asked (`prefetch`): its probes' names and its task
    _early: tuple[frozenset[str], asyncio.Task[Observations]] | None = field(
        default=None, repr=False
    )
    _held: list[Event] | None = field(default=None, repr=False)  # its events, until taken over

    def _emit(self, event: Event) -> None:
        if self._held is not None:
            self._held.append(event)
        elif self.sink is not None:
            self.sink(event)

    def prefetch(self, probes: Sequence[Probe]) -> None:
        """Begin a sweep of `probes` now, before anyone asked for it (`fabwiz run`: the read-only
        preflight, under way while the screen loads). Its events are held until a `sweep` of
        the same probes takes it over and says them, in order, to the sink of that time; a
        `sweep` of other probes says them too (every probe sent is in the log), then sweeps."""
        if self._early is not None:
            raise RuntimeError("a prefetched sweep is already under way")
        self._held = []
        names = frozenset(p.name for p in probes)
        self._early = (names, asyncio.ensure_future(self._sweep(probes)))

    def cancel_prefetch(self) -> None:
        """Drop a prefetched sweep nobody took over (closing before the engine ran)."""
        if self._early is not None:
            task = self._early[1]
            task.cancel()
            task.add_done_callback(_outcome_taken)  # nobody awaits it: its outcome is dropped
            self._early, self._held = None, None

    def open(self) -> None:
        """Start every node's SSH handshake and every switch's login now, in the background;
        the sweep then reuses them. A caller with work of its own to do first (loading the
        checks) overlaps it with the handshakes' round trips. Failures surface in the sweep."""
        for n in self.nodes:
            self._opening[f"node:{n}"] = asyncio.ensure_future(self.ssh.connect(n))
        for name, api in self.switches.items():
            self._opening[f"switch:{name}"] = asyncio.ensure_future(api.connect())

    async def opened(self) -> None:
        """Wait until every handshake and login `open` started has ended, either way (a caller
        with CPU work of its own does it then: the round trips are no longer waiting on it)."""
        if self._opening:
            await asyncio.wait(list(self._opening.values()))

    def cancel_opening(self) -> None:
        """Stop the handshakes `open` started that no sweep has waited for (closing early)."""
        for fut in self._opening.values():
            fut.cancel()
        self._opening.clear()

    async def _connected(
        self, name: str, connect: Callable[[], Awaitable[str | None]]
    ) -> str | None:
        """The outcome of the handshake `open` started for `name` (one try per sweep), else a
        fresh one."""
        pending = self._opening.pop(name, None)
        return await (pending if pending is not None else connect())

    async def sweep(self, probes: Sequence[Probe]) -> Observations:
        early = self._early
        if early is not None:
            self._early = None
            names, task = early
            held, self._held = self._held or [], None
            for event in held:
                self._emit(event)
            obs = await task
            if names == {p.name for p in probes}:
                return obs
        return await self._sweep(probes)

    async def _sweep(self, probes: Sequence[Probe]) -> Observations:
        host = [p for p in probes if isinstance(p, HostProbe)]
        sw = [p for p in probes if isinstance(p, SwitchProbe)]
        peer_ssh = any(p.name == readiness.MPIRUN_SSH.name for p in host)
        host = readiness.with_mgmt_probes([p for p in host if p.name != readiness.MPIRUN_SSH.name])
        if self.nodes:
            names = {p.name for p in host}
            host = [*host, *(p for p in DISCOVERY_HOST_PROBES if p.name not in names)]
        if self.switches and not any(p.name == SW_BRIDGE_HOST.name for p in sw):
            sw = [*sw, SW_BRIDGE_HOST]  # cabling from the MACs each switch learned
        nodes, switches, unreachable = await self._answers(host, sw, peer_ssh=peer_ssh)
        obs = Observations(nodes=nodes, switches=switches, unreachable=unreachable)
        if self.versions.update(nodes, switches):
            self._emit(self.versions.event(self.step))
        if switches:
            # which switch each rail lands on, from the MACs the switches learned
            for node, found in rails_from_observations(obs, discovered=self.rails).items():
                if found and node in self.rails:
                    self.rails[node] = found
            found_map = switch_map_from_observations(obs, self.rails)
            if found_map.toward:  # a sweep whose tables could not be read keeps the last
                self.switch_map = found_map
        # the checks judge from these rails: nothing works them out again from these outputs
        return replace(obs, rails={n: self.rails.get(n, ()) for n in nodes})

    async def _answers(
        self, host: list[HostProbe], sw: list[SwitchProbe], *, peer_ssh: bool
    ) -> tuple[
        dict[str, dict[str, ProbeResult]], dict[str, dict[str, ProbeResult]], dict[str, str]
    ]:
        """Every node's and switch's answers, and the targets that could not be reached. With
        `peer_ssh`, mpirun's SSH from the launch node to each other node's management address
        goes as soon as both have answered (the peer's answers hold that address), while the
        other nodes and the switches are still answering."""
        switch_tasks = asyncio.gather(
            *(self._sweep_switch(s, api, sw) for s, api in self.switches.items())
        )
        launch = self.nodes[0] if peer_ssh and self.nodes else None
        launched: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        logins: list[asyncio.Future[tuple[str, ProbeResult] | None]] = []

        async def node(name: str) -> tuple[str, dict[str, ProbeResult], str | None]:
            answer = await self._sweep_node(name, host)
            if name == launch:
                launched.set_result(answer[2] is None)
            elif launch is not None and name in self.mgmt:
                logins.append(asyncio.ensure_future(self._login(launch, name, launched)))
            return answer

        try:
            nodes, unreachable = answered(await asyncio.gather(*(node(n) for n in self.nodes)))
        except BaseException:
            pending: list[asyncio.Future[Any]] = [switch_tasks, *logins]
            for task in pending:
                task.cancel()
                # its outcome is this cancellation: taken, so that asyncio does not report it
                # as an exception nobody retrieved (a ctrl-c while a sweep runs)
                task.add_done_callback(_outcome_taken)
            raise
        switches, down = answered(await switch_tasks)
        unreachable.update(down)
        for login in await asyncio.gather(*logins):
            if login is not None and launch in nodes:
                nodes[launch][login[0]] = login[1]
        return nodes, switches, unreachable

    async def _login(
        self, launch: str, peer: str, launched: asyncio.Future[bool]
    ) -> tuple[str, ProbeResult] | None:
        """mpirun's SSH from the launch node to `peer`'s management address, once the launch
        node has answered (None when it could not be reached). Each login runs in a session
        of its own on the launch node's connection, as many together as its sshd's MaxSessions
        allows: one after the other in one script, 32 nodes would wait 31 logins, and a peer
        that is down its whole ConnectTimeout before the next one is tried."""
        if not await asyncio.shield(launched):
            return None
        command = readiness.peer_ssh_command(self.mgmt[peer][1])
        key = f"{readiness.MPIRUN_SSH.name}:{peer}"
        self._emit(ProbeSent(step=self.step, target=launch, command=command))
        res = await self.ssh.run(launch, command, timeout=readiness.MPIRUN_SSH.timeout_s + 5)
        self._emit(ProbeAnswered(step=self.step, probe=key, result=res))
        return key, res

    def _unreached(self, target: str, kind: Literal["ssh", "api"], error: str) -> None:
        """A target that could not be reached or logged into is an answer too: the log keeps
        it, so replay and reports know what was never seen, and why."""
        self._emit(ProbeSent(step=self.step, target=target, command="connect"))
        failed = ProbeResult(target=target, kind=kind, command="connect", error=error)
        self._emit(ProbeAnswered(step=self.step, probe="connect", result=failed))

    async def _batch(
        self,
        node: str,
        sections: list[Section],
        timeout: float,
        per_rail: Sequence[HostProbe] = (),
    ) -> _Batch:
        """One script on `node`: its sections, then (with `per_rail`) those probes on every
        rail of the node's own ibdev2netdev, in the same round trip (`rail_loop`): their
        sections come back loose, for `_rail_answers`."""
        marker = f"@@FABWIZ-{secrets.token_hex(4)}@@"
        script = build_script(sections, marker, rail_loop(per_rail, marker) if per_rail else None)
        await self._turns.take()
        for s in sections:
            self._emit(ProbeSent(step=self.step, target=node, command=s.command))
        res = await self.ssh.run(node, script, timeout=timeout)
        await self._turns.take()
        return self._digested(node, sections, marker, res)

    def _digested(
        self, node: str, sections: list[Section], marker: str, res: ProbeResult
    ) -> _Batch:
        """A batch's output split into its sections' results, each answer said."""
        loose: dict[str, tuple[str, int | None]] = {}
        if res.error is not None and res.exit_status is None:
            # every probe sent gets its answer in the log, even when the answer is the failure
            for s in sections:
                failed = ProbeResult(
                    target=node,
                    kind="ssh",
                    command=s.command,
                    error=res.error,
                    started_at=res.started_at,
                    duration_s=res.duration_s,
                )
                self._emit(ProbeAnswered(step=self.step, probe=s.key, result=failed))
            return _Batch({}, res.error, loose, res.started_at, res.duration_s)
        out = split_script_output(
            res.stdout,
            sections,
            marker,
            target=node,
            started=res.started_at,
            duration=res.duration_s,
            loose=loose,
        )
        for key, r in out.items():
            self._emit(ProbeAnswered(step=self.step, probe=key, result=r))
        return _Batch(out, None, loose, res.started_at, res.duration_s)

    def _rail_answers(
        self, node: str, rails: Sequence[Rail], probes: Sequence[HostProbe], batch: _Batch
    ) -> dict[str, ProbeResult]:
        """The per-rail probes' results on the node's rails, from the batch's loose sections;
        sent as the node's loop reached each rail, so they are said now, each with its answer."""
        found = rail_results(
            node, rails, probes, batch.loose, started=batch.started, duration=batch.duration
        )
        for key, r in found.items():
            self._emit(ProbeSent(step=self.step, target=node, command=r.command))
            self._emit(ProbeAnswered(step=self.step, probe=key, result=r))
        return found

    async def _sweep_node(
        self, node: str, probes: list[HostProbe]
    ) -> tuple[str, dict[str, ProbeResult], str | None]:
        err = await self._connected(f"node:{node}", lambda: self.ssh.connect(node))
        if err is not None:
            self._unreached(node, "ssh", err)
            return node, {}, err
        node_wide = [p for p in probes if not p.per_rail]
        per_rail = [p for p in probes if p.per_rail]
        timeout = self.batch_timeout_s or max([p.timeout_s for p in probes] or [10.0]) + 5
        # one round trip: the per-rail probes run on the node, over its own ibdev2netdev
        sections = [Section(p.name, self._node_command(node, p)) for p in node_wide]
        batch = await self._batch(node, sections, timeout, per_rail)
        if batch.error is not None:
            return node, {}, batch.error
        out = batch.out
        self._note_readiness(node, out)
        mapping = read_ibdev2netdev(out)  # parsed once: the rails' sections and the rails
        if per_rail and mapping:
            out.update(self._rail_answers(node, rail_names(node, mapping), per_rail, batch))
        self.rails[node] = (node_rails(node, out, mapping) or ()) if mapping else ()
        return node, out, None

    def _node_command(self, node: str, probe: HostProbe) -> str:
        paths = self.tool_paths.get(node)
        if probe.name == readiness.TOOLS_PROBE.name and paths:
            return readiness.tools_command(tuple(paths.values()))
        return fill(probe, None)

    def _note_readiness(self, node: str, out: Mapping[str, ProbeResult]) -> None:
        tools = out.get(readiness.TOOLS_PROBE.name)
        if tools is not None and tools.error is None:
            self.tools[node] = readiness.parse_tools(tools.stdout, self.tool_paths.get(node))
        route, addr = out.get(readiness.MGMT_ROUTE.name), out.get("ip_addr")
        if route is not None and addr is not None and route.ok and addr.ok:
            found = readiness.management(route.stdout, addr.stdout)
            if found is not None:
                self.mgmt[node] = found

    async def _sweep_switch(
        self, name: str, api: SwitchApi, probes: list[SwitchProbe]
    ) -> tuple[str, dict[str, ProbeResult], str | None]:
        err = await self._connected(f"switch:{name}", api.connect)
        if err is not None:
            self._unreached(name, "api", err)
            return name, {}, err
        return name, await switch_probes(api, name, probes, self._emit, self.step), None

    # --- traffic (--perf) ---------------------------------------------------------------------

    # the traffic tests, as methods (wizard.sweep_traffic, wizard.sweep_nccl)
    ping_matrix = traffic.ping_matrix
    isl_shared_test = traffic.isl_shared_test
    gid_index = traffic.gid_index
    with_switch_cpu = traffic.with_switch_cpu
    rail_round = traffic.rail_round
    nccl_test = sweep_nccl.nccl_test

    async def rail_tests(
        self,
        *,
        duration_s: int = 5,
        server_start_delay_s: float = LISTEN_WAIT_S,
        base_port: int = 18515,
        timeout_s: float = 60.0,
        bidirectional: bool = True,
        quick: bool = False,
    ) -> list[Measurement]:
        """Single-QP ib_write_bw on every rail index between node pairs (every pair over a
        round-robin schedule, or the disjoint pairs only with `quick`); the tests of a round
        run at the same time, rounds one after the other. Then: up to `qp_rerun_max_rails`
        rails below `rail_pass_gate_gbps` are re-run alone with one QP and `qp_rerun_qps` QPs
        (a number that does not move is a fixed structure in the path, seed 000), and
        `bidir_rails` rails run bidirectional (`-b`). The limits are `self.limits` (the
        expectations table)."""
        if any(n not in self.tools for n in self.nodes if self.rails.get(n)):
            await self.sweep([readiness.TOOLS_PROBE])  # a resumed session has not looked yet
        test = _RailTest(base_port, duration_s, server_start_delay_s, timeout_s)
        with traffic.shared_readings():  # one test after the other, nothing else on the rails
            out = await self._rail_rounds(
                duration_s=duration_s,
                delay=server_start_delay_s,
                base_port=base_port,
                timeout_s=timeout_s,
                quick=quick,
            )
            await self._rerun_low_rails(out, test)
            if bidirectional:
                out.extend(await self._bidirectional(out, test))
        return out

    def _limit(self, name: str) -> float:
        """A limit of the rail tests, from the expectations table the sweep was given."""
        if self.limits is None:
            raise FabwizError(
                f"the rail tests have no expectations table to read {name} from",
                hint="give the Sweeper the expectations (limits=...), as the composition root does",
            )
        return float(getattr(self.limits, name))

    async def _alone(self, pair: tuple[Rail, Rail], test: _RailTest, **kw: Any) -> Measurement:
        """One rail test with nothing else on the fabric, the switch CPU sampled during it."""
        [m] = await self.rail_round(
            [
                self._one_rail_test(
                    *pair,
                    port=test.port,
                    duration_s=test.duration_s,
                    delay=test.delay,
                    timeout=test.timeout_s,
                    **kw,
                )
            ]
        )
        return m

    async def _rerun_low_rails(self, out: list[Measurement], test: _RailTest) -> None:
        """The low rails re-run alone, one QP then several: like against like (a round shares
        the path); the two numbers are added to the round's measurement."""
        low_gbps = self._limit("rail_pass_gate_gbps")
        rerun_qps = int(self._limit("qp_rerun_qps"))
        max_reruns = int(self._limit("qp_rerun_max_rails"))
        low = [m for m in out if m.valid and 0.0 < m.value < low_gbps][: max(max_reruns, 0)]
        for m in low:
            pair = self._pair_rails(m)
            if pair is None:
                continue
            one = await self._alone(pair, test, qps=1)
            many = await self._alone(pair, test, qps=rerun_qps)
            out[out.index(m)] = replace(
                m,
                extra={
                    **m.extra,
                    "rerun_qps": rerun_qps,
                    "rerun_single_gbps": one.value if one.valid else None,
                    "rerun_gbps": many.value if many.valid else None,
                    "rerun_command": many.extra.get("command", ""),
                },
            )

    async def _bidirectional(self, out: list[Measurement], test: _RailTest) -> list[Measurement]:
        """The first `bidir_rails` measured rails again with `-b` (both directions at once)."""
        measured = [m for m in out if m.valid and m.value > 0 and not m.extra.get("bidir")]
        extra: list[Measurement] = []
        for first in measured[: int(self._limit("bidir_rails"))]:
            pair = self._pair_rails(first)
            if pair is not None:
                bi = await self._alone(pair, test, bidir=True)
                extra.append(bi)
                self._emit(MeasurementTaken(step=self.step, measurement=bi))
        return extra

    async def fabric_tests(
        self,
        *,
        duration_s: int = 5,
        server_start_delay_s: float = LISTEN_WAIT_S,
        timeout_s: float = 60.0,
    ) -> list[Measurement]:
        """The jumbo ping matrix (kept in `self.pings`) and, with several switches, the
        two-flows-one-ISL-direction test (seed 003: ~81.9 + 81.9 Gb/s)."""
        self.pings = await self.ping_matrix()
        return await self.isl_shared_test(
            duration_s=duration_s, delay=server_start_delay_s, timeout_s=timeout_s
        )

    def _pair_rails(self, m: Measurement) -> tuple[Rail, Rail] | None:
        def find(node: object, netdev: object) -> Rail | None:
            return next((r for r in self.rails.get(str(node), ()) if r.netdev == netdev), None)

        a = find(m.extra.get("client"), m.extra.get("client_netdev"))
        b = find(m.extra.get("server"), m.extra.get("server_netdev"))
        return (a, b) if a is not None and b is not None else None

    async def _rail_rounds(
        self, *, duration_s: int, delay: float, base_port: int, timeout_s: float, quick: bool
    ) -> list[Measurement]:
        server_start_delay_s = delay
        out: list[Measurement] = []
        by_node = {n: self.rails.get(n, ()) for n in self.nodes}
        count = max((len(r) for r in by_node.values()), default=0)
        schedule = (
            rail_pairs(flux_last(self.nodes, self.rails))
            if quick
            else round_robin(list(self.nodes))
        )
        flows: list[tuple[Rail, Rail]] = []
        for round_pairs in schedule:
            for idx in range(count):
                for a, b in round_pairs:
                    ra = rail_at(by_node.get(a, ()), idx)
                    rb = peer_rail(ra, by_node.get(b, ()), idx)
                    if (
                        ra is None
                        or rb is None
                        or not (ra.up and rb.up and ra.addresses and rb.addresses)
                    ):
                        continue
                    # a pair's test on a half-B rail runs the other way: each node sends on one
                    # half and receives on the other, and the pair's tests of both halves fit
                    # one round (as do its two ways across an ISL)
                    flows.append((rb, ra) if ra.half == "B" else (ra, rb))
        packed = pack_rounds(flows, self.switch_map)
        plan = [[(i, ra, rb) for i, (ra, rb) in enumerate(r)] for r in packed]
        rounds = tuple(tuple(f"{ra.key}->{rb.key}" for _, ra, rb in r) for r in plan)
        self._emit(TrafficPlanned(step=self.step, rounds=rounds, duration_s=float(duration_s)))
        # each round starts its servers once the round before moves data, and its clients
        # connect as that round's data is about to end (wizard.sweep_rounds); two rounds are
        # under way at once, on two banks of TCP ports
        bank = max((len(r) for r in plan), default=0)
        running: deque[asyncio.Future[list[Measurement]]] = deque()
        prev: Round | None = None
        try:
            for k, planned in enumerate(plan):
                jobs = [
                    self._one_rail_test(
                        ra,
                        rb,
                        port=base_port + (k % 2) * bank + i,
                        duration_s=duration_s,
                        delay=server_start_delay_s,
                        timeout=timeout_s,
                    )
                    for i, ra, rb in planned
                ]
                prev = Round(self, prev=prev)
                running.append(asyncio.ensure_future(prev.run(jobs)))
                await prev.opened.wait()
                while running and running[0].done():
                    self._taken(out, running.popleft().result())
            while running:
                self._taken(out, await running[0])
                running.popleft()
        finally:
            for task in running:
                task.cancel()
        return out

    def _taken(self, out: list[Measurement], ms: list[Measurement]) -> None:
        for m in ms:
            out.append(m)
            self._emit(MeasurementTaken(step=self.step, measurement=m))

    async def _one_rail_test(
        self,
        client: Rail,
        server: Rail,
        *,
        port: int,
        duration_s: int,
        delay: float,
        timeout: float,
        qps: int = 1,
        bidir: bool = False,
    ) -> Measurement:
        run = traffic.RailRun(port, duration_s, delay, timeout, qps, bidir)
        return await traffic.one_rail_test(self, client, server, run)
