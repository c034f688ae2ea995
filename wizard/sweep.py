"""The read-only sweep: every probe of every node and switch, concurrently, in few round trips.

Why it is shaped this way: a technician's `ssh host cmd` per command costs a handshake each; here
each node gets ONE persistent connection (wizard.transports.ssh) and its probes travel as ONE
`sh -c` script per phase, each section framed by marker lines that carry the exit status
(phase 1: the node-wide probes and discovery; phase 2: the per-rail probes, once the rails are
known). Every interpolated value is shell-quoted. Switches get their API calls on one session
each. Nodes and switches run concurrently; an unreachable one lands in
`Observations.unreachable` and the rest goes on.

The `--perf` traffic runner is here too: single-QP `ib_write_bw` per rail between node pairs
(disjoint pairs at the same time, one rail index at a time so the two ports of a PCIe half do not
share it), and one NCCL `all_reduce_perf` run. Events (ProbeSent, ProbeAnswered,
MeasurementTaken) go to an optional sink so the session log and the TUI see them.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import secrets
import shlex
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from wizard import ncclrun, readiness
from wizard.counters import deltas, parse_rail, rail_command, switch_deltas, switch_ports
from wizard.discovery import (
    DISCOVERY_HOST_PROBES,
    ETHTOOL_I,
    IBDEV,
    SW_BRIDGE_HOST,
    discover_rails,
)
from wizard.errors import ParseError
from wizard.events import Event, MeasurementTaken, ProbeAnswered, ProbeSent, TrafficPlanned
from wizard.model import Measurement, ProbeResult, Rail
from wizard.parsers.ibdev2netdev import parse_ibdev2netdev
from wizard.probes import HostProbe, Observations, Probe, SwitchProbe
from wizard.readiness import NodeTools
from wizard.transports.ssh import sudo_error
from wizard.versions import Versions

__all__ = [
    "HostRunner",
    "Sweeper",
    "SwitchApi",
    "build_script",
    "rail_pairs",
    "split_script_output",
]

EventSink = Callable[[Event], None]


class HostRunner(Protocol):
    """What the sweep needs from SSH (wizard.transports.ssh.SshTransport provides it)."""

    async def run(
        self, name: str, command: str, *, timeout: float | None = None, stdin: str | None = None
    ) -> ProbeResult: ...

    async def connect(self, name: str) -> str | None: ...


class SwitchApi(Protocol):
    """What the sweep needs from one switch (wizard.transports.routeros.RouterOsTransport)."""

    async def connect(self) -> str | None: ...

    async def call(
        self, path: str, verb: str, *, timeout: float | None = None, **args: str
    ) -> ProbeResult: ...

    async def monitor_once(
        self, ports: Sequence[str], *, timeout: float | None = None
    ) -> ProbeResult: ...


# --- batching -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Section:
    key: str  # the Observations key: probe name, or name:netdev
    command: str  # the command as run (what the session log shows)


def _fill(probe: HostProbe, rail: Rail | None) -> str:
    cmd = probe.command
    if rail is not None:
        cmd = cmd.replace("{netdev}", shlex.quote(rail.netdev)).replace(
            "{rdma}", shlex.quote(rail.rdma)
        )
    return f"sudo -n {cmd}" if probe.sudo else cmd


def build_script(sections: Sequence[Section], marker: str) -> str:
    """One `sh -c` script running each section between marker lines that carry its exit status."""
    parts = []
    for s in sections:
        tag = shlex.quote(f"{marker} {s.key}")
        parts.append(f"echo {tag} BEGIN; {s.command} 2>&1; echo {tag} END $?")
    return "sh -c " + shlex.quote("; ".join(parts))


def split_script_output(
    text: str,
    sections: Sequence[Section],
    marker: str,
    *,
    target: str,
    started: float,
    duration: float,
) -> dict[str, ProbeResult]:
    """Cut a batched run's stdout back into one ProbeResult per section."""
    out: dict[str, ProbeResult] = {}
    by_key = {s.key: s for s in sections}
    current: str | None = None
    buf: list[str] = []
    begin = re.compile(rf"^{re.escape(marker)} (\S+) BEGIN$")
    # output that does not end in a newline (a NUL-separated /proc file, a file without a last
    # newline) puts the end marker on its last line: what comes before it is output
    end = re.compile(rf"^(.*?){re.escape(marker)} (\S+) END (\d+)$", re.S)
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        m = begin.match(stripped)
        if m:
            current, buf = m.group(1), []
            continue
        m = end.match(stripped)
        if m and current is not None and current == m.group(2):
            s = by_key.get(current)
            if s is not None:
                body = "".join(buf) + m.group(1)
                status = int(m.group(3))
                err = (
                    sudo_error(target, s.command, body) if s.command.startswith("sudo -n") else None
                )
                out[current] = ProbeResult(
                    target=target,
                    kind="ssh",
                    command=s.command,
                    stdout=body,
                    exit_status=status,
                    error=err,
                    started_at=started,
                    duration_s=duration,
                )
            current, buf = None, []
            continue
        if current is not None:
            buf.append(line)
    for s in sections:
        if s.key not in out:
            out[s.key] = ProbeResult(
                target=target,
                kind="ssh",
                command=s.command,
                stdout="".join(buf) if current == s.key else "",
                error=f"{target}: the output of `{s.command}` was cut short (no end marker)",
                started_at=started,
                duration_s=duration,
            )
    return out


# --- the sweep -------------------------------------------------------------------------------


CPU_SAMPLE_S = 0.25  # the switch CPU is sampled this often during a transfer (targets' time)
MIN_WALL_SAMPLE_S = 0.002  # and never more often than this (wall time: one API round trip)


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

    def _emit(self, event: Event) -> None:
        if self.sink is not None:
            self.sink(event)

    def open(self) -> None:
        """Start every node's SSH handshake and every switch's login now, in the background;
        the sweep then reuses them. A caller with work of its own to do first (loading the
        checks) overlaps it with the handshakes' round trips. Failures surface in the sweep."""
        for n in self.nodes:
            self._opening[f"node:{n}"] = asyncio.ensure_future(self.ssh.connect(n))
        for name, api in self.switches.items():
            self._opening[f"switch:{name}"] = asyncio.ensure_future(api.connect())

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
        host = [p for p in probes if isinstance(p, HostProbe)]
        sw = [p for p in probes if isinstance(p, SwitchProbe)]
        peer_ssh = any(p.name == readiness.MPIRUN_SSH.name for p in host)
        host = readiness.with_mgmt_probes([p for p in host if p.name != readiness.MPIRUN_SSH.name])
        if self.nodes:
            names = {p.name for p in host}
            host = [*host, *(p for p in DISCOVERY_HOST_PROBES if p.name not in names)]
        if self.switches and not any(p.name == SW_BRIDGE_HOST.name for p in sw):
            sw = [*sw, SW_BRIDGE_HOST]  # cabling from the MACs each switch learned
        node_tasks = [self._sweep_node(n, host) for n in self.nodes]
        switch_tasks = [self._sweep_switch(s, api, sw) for s, api in self.switches.items()]
        results = await asyncio.gather(*node_tasks, *switch_tasks)
        nodes: dict[str, dict[str, ProbeResult]] = {}
        switches: dict[str, dict[str, ProbeResult]] = {}
        unreachable: dict[str, str] = {}
        for i, (name, res, err) in enumerate(results):
            if err is not None:
                unreachable[name] = err
                continue
            (nodes if i < len(node_tasks) else switches)[name] = res
        if peer_ssh and self.nodes and self.nodes[0] in nodes:
            nodes[self.nodes[0]].update(await self._peer_ssh(self.nodes[0]))
        obs = Observations(nodes=nodes, switches=switches, unreachable=unreachable)
        if self.versions.update(nodes, switches):
            self._emit(self.versions.event(self.step))
        if switches:
            # which switch each rail lands on, from the MACs the switches learned
            from wizard.discovery import rails_from_observations

            for node, found in rails_from_observations(obs, discovered=self.rails).items():
                if found and node in self.rails:
                    self.rails[node] = found
        return obs

    async def _peer_ssh(self, launch: str) -> dict[str, ProbeResult]:
        """mpirun's SSH, tried from the launch node to each other node's management address."""
        peers = [n for n in self.nodes[1:] if n in self.mgmt]
        sections = [
            Section(f"{readiness.MPIRUN_SSH.name}:{n}", readiness.peer_ssh_command(self.mgmt[n][1]))
            for n in peers
        ]
        if not sections:
            return {}
        out, _err = await self._batch(launch, sections, readiness.MPIRUN_SSH.timeout_s + 5)
        return out

    def _unreached(self, target: str, kind: Literal["ssh", "api"], error: str) -> None:
        """A target that could not be reached or logged into is an answer too: the log keeps
        it, so replay and reports know what was never seen, and why."""
        self._emit(ProbeSent(step=self.step, target=target, command="connect"))
        failed = ProbeResult(target=target, kind=kind, command="connect", error=error)
        self._emit(ProbeAnswered(step=self.step, probe="connect", result=failed))

    async def _batch(
        self, node: str, sections: list[Section], timeout: float
    ) -> tuple[dict[str, ProbeResult], str | None]:
        marker = f"@@FABWIZ-{secrets.token_hex(4)}@@"
        script = build_script(sections, marker)
        for s in sections:
            self._emit(ProbeSent(step=self.step, target=node, command=s.command))
        res = await self.ssh.run(node, script, timeout=timeout)
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
            return {}, res.error
        out = split_script_output(
            res.stdout,
            sections,
            marker,
            target=node,
            started=res.started_at,
            duration=res.duration_s,
        )
        for key, r in out.items():
            self._emit(ProbeAnswered(step=self.step, probe=key, result=r))
        return out, None

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
        out, err = await self._batch(
            node, [Section(p.name, self._node_command(node, p)) for p in node_wide], timeout
        )
        if err is not None:
            return node, {}, err
        self._note_readiness(node, out)
        ports = _rail_names(node, out)
        if per_rail and ports:
            sections = [
                Section(f"{p.name}:{r.netdev}", _fill(p, r)) for r in ports for p in per_rail
            ]
            more, err2 = await self._batch(node, sections, timeout)
            if err2 is not None:
                for s in sections:
                    out[s.key] = ProbeResult(target=node, kind="ssh", command=s.command, error=err2)
            out.update(more)
        # worked out once, from both phases' outputs
        self.rails[node] = self._rails_from(node, out) if ports else ()
        return node, out, None

    def _node_command(self, node: str, probe: HostProbe) -> str:
        paths = self.tool_paths.get(node)
        if probe.name == readiness.TOOLS_PROBE.name and paths:
            return readiness.tools_command(tuple(paths.values()))
        return _fill(probe, None)

    def _note_readiness(self, node: str, out: Mapping[str, ProbeResult]) -> None:
        tools = out.get(readiness.TOOLS_PROBE.name)
        if tools is not None and tools.error is None:
            self.tools[node] = readiness.parse_tools(tools.stdout, self.tool_paths.get(node))
        route, addr = out.get(readiness.MGMT_ROUTE.name), out.get("ip_addr")
        if route is not None and addr is not None and route.ok and addr.ok:
            found = readiness.management(route.stdout, addr.stdout)
            if found is not None:
                self.mgmt[node] = found

    def _rails_from(self, node: str, out: Mapping[str, ProbeResult]) -> tuple[Rail, ...]:
        ib = out.get(IBDEV.name)
        if ib is None or not ib.ok:
            return ()
        try:
            mapping = parse_ibdev2netdev(ib.stdout)
        except ParseError:
            return ()
        netdevs = [m.netdev for m in mapping.mappings]

        def text(name: str) -> str | None:
            r = out.get(name)
            return r.stdout if r is not None and r.ok else None

        try:
            return discover_rails(
                node,
                ib.stdout,
                ip_addr=text("ip_addr"),
                ip_link=text("ip_link"),
                ethtool_i={n: t for n in netdevs if (t := text(f"{ETHTOOL_I.name}:{n}"))},
                ethtool={n: t for n in netdevs if (t := text(f"ethtool:{n}"))},
            )
        except ParseError:
            return ()

    async def _sweep_switch(
        self, name: str, api: SwitchApi, probes: list[SwitchProbe]
    ) -> tuple[str, dict[str, ProbeResult], str | None]:
        err = await self._connected(f"switch:{name}", api.connect)
        if err is not None:
            self._unreached(name, "api", err)
            return name, {}, err
        out: dict[str, ProbeResult] = {}
        plain = [p for p in probes if not p.per_fabric_port]
        ports_probes = [p for p in probes if p.per_fabric_port]
        for p in plain:
            self._emit(ProbeSent(step=self.step, target=name, command=f"{p.path} {p.verb}"))
            res = await api.call(p.path, p.verb, timeout=p.timeout_s, **dict(p.args))
            out[p.name] = res
            self._emit(ProbeAnswered(step=self.step, probe=p.name, result=res))
        if ports_probes:
            eth = out.get("ethernet")
            if eth is None or eth.error is not None:
                eth = await api.call("/interface/ethernet", "print")
                out.setdefault("ethernet", eth)
            fabric = [
                r.get("name", "")
                for r in eth.rows
                if not (r.get("default-name") or r.get("name", "")).startswith("ether")
            ]
            for p in ports_probes:
                self._emit(ProbeSent(step=self.step, target=name, command=f"{p.path} {p.verb}"))
                if p.verb == "monitor":
                    res = await api.monitor_once(fabric, timeout=p.timeout_s)
                else:
                    res = await api.call(
                        p.path,
                        p.verb,
                        timeout=p.timeout_s,
                        numbers=",".join(fabric),
                        **dict(p.args),
                    )
                out[p.name] = res
                self._emit(ProbeAnswered(step=self.step, probe=p.name, result=res))
        return name, out, None

    # --- traffic (--perf) ---------------------------------------------------------------------

    async def rail_tests(
        self,
        *,
        duration_s: int = 5,
        server_start_delay_s: float = 0.3,
        base_port: int = 18515,
        timeout_s: float = 60.0,
        low_gbps: float | None = None,
        rerun_qps: int | None = None,
        max_reruns: int | None = None,
        bidirectional: bool = True,
        quick: bool = False,
    ) -> list[Measurement]:
        """Single-QP ib_write_bw on every rail index between node pairs (every pair over a
        round-robin schedule, or the disjoint pairs only with `quick`); the pairs of a round
        run at the same time, rounds and rail indexes one after the other. Then: up to
        `max_reruns` rails below `low_gbps` are re-run alone with one QP and `rerun_qps` QPs (a
        number that does not move is a fixed structure in the path, seed 000), and
        `bidir_rails` rails run bidirectional (`-b`). Unset limits come from `self.limits`
        (the expectations table: rail_pass_gate_gbps, qp_rerun_qps, qp_rerun_max_rails,
        bidir_rails)."""
        lim = self.limits
        if low_gbps is None:
            low_gbps = float(getattr(lim, "rail_pass_gate_gbps", 80.0))
        rerun_qps = int(getattr(lim, "qp_rerun_qps", 8)) if rerun_qps is None else rerun_qps
        if max_reruns is None:
            max_reruns = int(getattr(lim, "qp_rerun_max_rails", 4))
        bidir_rails = int(getattr(lim, "bidir_rails", 1)) if bidirectional else 0
        if any(n not in self.tools for n in self.nodes if self.rails.get(n)):
            await self.sweep([readiness.TOOLS_PROBE])  # a resumed session has not looked yet
        out = await self._rail_rounds(
            duration_s=duration_s,
            delay=server_start_delay_s,
            base_port=base_port,
            timeout_s=timeout_s,
            quick=quick,
        )
        if max_reruns > 0:
            low = [m for m in out if m.valid and 0.0 < m.value < low_gbps][:max_reruns]
            for m in low:
                pair = self._pair_rails(m)
                if pair is None:
                    continue
                # alone, one QP then several: like against like (a round shares the path)
                alone: dict[int, Measurement] = {}
                for qps in (1, rerun_qps):
                    [alone[qps]] = await self.with_switch_cpu(
                        [
                            self._one_rail_test(
                                *pair,
                                port=base_port,
                                duration_s=duration_s,
                                delay=server_start_delay_s,
                                timeout=timeout_s,
                                qps=qps,
                            )
                        ],
                        delay=server_start_delay_s,
                    )
                one, many = alone[1], alone[rerun_qps]
                i = out.index(m)
                out[i] = replace(
                    m,
                    extra={
                        **m.extra,
                        "rerun_qps": rerun_qps,
                        "rerun_single_gbps": one.value if one.valid else None,
                        "rerun_gbps": many.value if many.valid else None,
                        "rerun_command": many.extra.get("command", ""),
                    },
                )
        measured = [m for m in out if m.valid and m.value > 0 and not m.extra.get("bidir")]
        for first in measured[:bidir_rails]:
            pair = self._pair_rails(first)
            if pair is not None:
                [bi] = await self.with_switch_cpu(
                    [
                        self._one_rail_test(
                            *pair,
                            port=base_port,
                            duration_s=duration_s,
                            delay=server_start_delay_s,
                            timeout=timeout_s,
                            bidir=True,
                        )
                    ],
                    delay=server_start_delay_s,
                )
                out.append(bi)
                self._emit(MeasurementTaken(step=self.step, measurement=bi))
        return out

    async def fabric_tests(
        self, *, duration_s: int = 5, server_start_delay_s: float = 0.3, timeout_s: float = 60.0
    ) -> list[Measurement]:
        """The jumbo ping matrix (kept in `self.pings`) and, with several switches, the
        two-flows-one-ISL-direction test (seed 003: ~81.9 + 81.9 Gb/s)."""
        self.pings = await self.ping_matrix()
        return await self.isl_shared_test(
            duration_s=duration_s, delay=server_start_delay_s, timeout_s=timeout_s
        )

    async def ping_matrix(self, *, payload: int = 8972) -> list[dict[str, object]]:
        """`ping -M do -s 8972` between every node pair on every plane (rail index), both
        ends addressed; the pairs of a round at once."""
        from wizard.parsers.ping import parse_ping

        by_node = {n: self.rails.get(n, ()) for n in self.nodes}
        count = max((len(r) for r in by_node.values()), default=0)

        async def one(a: Rail, b: Rail) -> dict[str, object]:
            ip = b.addresses[0].split("/")[0]
            cmd = f"ping -M do -s {payload} -c 3 -W 1 -I {shlex.quote(a.netdev)} {shlex.quote(ip)}"
            self._emit(ProbeSent(step=self.step, target=a.node, command=cmd))
            res = await self.ssh.run(a.node, cmd, timeout=15.0)
            self._emit(ProbeAnswered(step=self.step, probe=f"ping:{a.netdev}", result=res))
            try:
                p = parse_ping(res.stdout + res.stderr)
                ok, received, mtu_err = p.ok, p.received or 0, p.mtu_errors
            except ParseError:
                ok, received, mtu_err = False, 0, 0
            small_ok: bool | None = None
            if not (ok and res.error is None) and res.error is None:
                # a lost jumbo frame is MTU evidence only if a small one gets through
                small = f"ping -c 3 -W 1 -I {shlex.quote(a.netdev)} {shlex.quote(ip)}"
                self._emit(ProbeSent(step=self.step, target=a.node, command=small))
                sres = await self.ssh.run(a.node, small, timeout=15.0)
                self._emit(ProbeAnswered(step=self.step, probe=f"ping:{a.netdev}", result=sres))
                try:
                    small_ok = parse_ping(sres.stdout + sres.stderr).ok and sres.error is None
                except ParseError:
                    small_ok = None
            return {
                "src": a.key,
                "dst": b.key,
                "ip": ip,
                "ok": ok and res.error is None,
                "received": received,
                "mtu_errors": mtu_err,
                "small_ok": small_ok,
                "cross_switch": bool(a.switch and b.switch and a.switch != b.switch),
                "command": cmd,
                "raw": (res.stdout + res.stderr)[-600:],
                "error": res.error or "",
            }

        # a round's pairs on every plane at once (a few jumbo frames share no bottleneck);
        # the results in plane order
        by_plane: list[list[dict[str, object]]] = [[] for _ in range(count)]
        for pairs in round_robin(list(self.nodes)):
            jobs, planes = [], []
            for idx in range(count):
                for a, b in pairs:
                    ra, rb = _rail_at(by_node[a], idx), _rail_at(by_node[b], idx)
                    if ra and rb and ra.addresses and rb.addresses and ra.up and rb.up:
                        jobs.append(one(ra, rb))
                        planes.append(idx)
            for idx, got in zip(planes, await asyncio.gather(*jobs), strict=True):
                by_plane[idx].append(got)
        return [p for plane in by_plane for p in plane]

    async def isl_shared_test(
        self, *, duration_s: int, delay: float, timeout_s: float, base_port: int = 18600
    ) -> list[Measurement]:
        """Two flows from one switch's nodes to the other's at once: they share one ISL
        direction (~81.9 Gb/s each, DCQCN splitting, some packet_seq_err normal)."""
        by_switch: dict[str, list[Rail]] = {}
        for n in self.nodes:
            first = _rail_at(self.rails.get(n, ()), 0)
            if first is not None and first.switch and first.addresses and first.up:
                by_switch.setdefault(first.switch, []).append(first)
        sides = [rs for _, rs in sorted(by_switch.items()) if len(rs) >= 2]
        if len(sides) < 2:
            return []
        (a1, a2), (b1, b2) = sides[0][:2], sides[1][:2]
        jobs = [
            self._one_rail_test(
                c, s, port=base_port + i, duration_s=duration_s, delay=delay, timeout=timeout_s
            )
            for i, (c, s) in enumerate(((a1, b1), (a2, b2)))
        ]
        out = []
        for got in await self.with_switch_cpu(jobs, delay=delay):
            m = replace(got, extra={**got.extra, "isl_shared": True})
            out.append(m)
            self._emit(MeasurementTaken(step=self.step, measurement=m))
        return out

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
        schedule = rail_pairs(list(self.nodes)) if quick else round_robin(list(self.nodes))
        flows: list[tuple[Rail, Rail]] = []
        for idx in range(count):
            for round_pairs in _isl_safe(schedule, by_node, idx):
                for a, b in round_pairs:
                    ra = _rail_at(by_node.get(a, ()), idx)
                    rb = peer_rail(ra, by_node.get(b, ()), idx)
                    if (
                        ra is None
                        or rb is None
                        or not (ra.up and rb.up and ra.addresses and rb.addresses)
                    ):
                        continue
                    flows.append((ra, rb))
        plan = [[(i, ra, rb) for i, (ra, rb) in enumerate(r)] for r in pack_rounds(flows)]
        rounds = tuple(tuple(f"{ra.key}->{rb.key}" for _, ra, rb in r) for r in plan)
        self._emit(TrafficPlanned(step=self.step, rounds=rounds, duration_s=float(duration_s)))
        for planned in plan:
            jobs = [
                self._one_rail_test(
                    ra,
                    rb,
                    port=base_port + i,
                    duration_s=duration_s,
                    delay=server_start_delay_s,
                    timeout=timeout_s,
                )
                for i, ra, rb in planned
            ]
            for m in await self.with_switch_cpu(jobs, delay=server_start_delay_s):
                out.append(m)
                self._emit(MeasurementTaken(step=self.step, measurement=m))
        return out

    async def gid_index(self, rail: Rail) -> tuple[int | None, str]:
        """The RoCE v2 GID index of the rail's IPv4 address on its RDMA device, read now (an
        address change shifts it): `show_gids`, else sysfs `gids`/`gid_attrs/types`."""
        from wizard.gids import (
            SHOW_GIDS,
            gids_from_show_gids,
            parse_sysfs_gids,
            roce_v2_index,
            sysfs_command,
        )

        if not rail.addresses:
            return None, f"{rail.key} has no IPv4 address"
        ip = rail.addresses[0].split("/")[0]
        why = ""
        for command, parse in (
            (SHOW_GIDS, gids_from_show_gids),
            (sysfs_command(rail.rdma), parse_sysfs_gids),
        ):
            res = await self.ssh.run(rail.node, command, timeout=10.0)
            if not res.ok:
                why = f"`{command.split()[0]}` on {rail.node}: {res.error or res.stderr.strip()[:120]}"
                continue
            try:
                gids = parse(res.stdout)
            except ParseError as exc:
                why = f"`{command.split()[0]}` on {rail.node}: {exc}"
                continue
            index = roce_v2_index(gids, rail.rdma, ip)
            if index is not None:
                return index, ""
            why = f"no RoCE v2 GID of {ip} on {rail.rdma} ({rail.node}, `{command.split()[0]}`)"
        return None, why

    async def with_switch_cpu(
        self,
        jobs: Sequence[Awaitable[Measurement]],
        *,
        delay: float,
        interval_s: float | None = None,
    ) -> list[Measurement]:
        """Run bandwidth jobs while sampling every switch's `/system/resource` cpu-load; each
        measurement carries the highest load seen during it (`extra["switch_cpu"]`). Only
        samples sent at least `interval_s` after the clients started and answered at least
        `interval_s` before the last one ended count: a sample that may have missed the
        transfer is no evidence of an idle CPU."""
        if not jobs:
            return []
        if interval_s is None:
            interval_s = max(MIN_WALL_SAMPLE_S, CPU_SAMPLE_S / (self.clock_rate or 1.0))
        done = asyncio.Event()
        samples: list[tuple[float, float, str, float]] = []  # sent, answered, switch, load

        async def sample() -> None:
            await asyncio.sleep(delay + interval_s)  # the clients start after the servers
            while not done.is_set():
                for name, api in self.switches.items():
                    sent = time.monotonic()
                    res = await api.call("/system/resource", "print", timeout=5.0)
                    for row in res.rows if res.error is None else ():
                        load = row.get("cpu-load", "")
                        if load.strip().isdigit():
                            samples.append((sent, time.monotonic(), name, float(load)))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(done.wait(), interval_s)

        started = time.monotonic() + delay
        ports_before = await self._switch_port_counters()
        sampler = asyncio.ensure_future(sample()) if self.switches else None
        try:
            results = await asyncio.gather(*jobs)
        finally:
            ended = time.monotonic()
            done.set()
            if sampler is not None:
                with contextlib.suppress(Exception):
                    await sampler
        ports_after = await self._switch_port_counters()
        peaks: dict[str, float] = {}
        for sent, answered, name, load in samples:
            if sent >= started + interval_s and answered <= ended - interval_s:
                peaks[name] = max(peaks.get(name, 0.0), load)
        moved = {
            sw: switch_deltas(ports_before[sw], after)
            for sw, after in ports_after.items()
            if sw in ports_before
        }
        extra: dict[str, object] = {}
        if peaks:
            extra["switch_cpu"] = dict(peaks)
        if moved:
            extra["switch_ports"] = moved  # per switch, the ports whose counters moved
        return [replace(m, extra={**m.extra, **extra}) if extra else m for m in results]

    async def _switch_port_counters(self) -> dict[str, dict[str, dict[str, int]]]:
        """Every switch's per-port packet and byte counters (`/interface print`)."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        for name, api in self.switches.items():
            res = await api.call("/interface", "print", timeout=10.0)
            if res.error is None:
                out[name] = switch_ports(res.rows)
        return out

    async def _rail_counters(self, rail: Rail) -> dict[str, int] | None:
        res = await self.ssh.run(rail.node, rail_command(rail), timeout=10.0)
        if res.error is not None:
            return None
        try:
            return parse_rail(res.stdout)
        except ParseError:
            return None

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
        target = f"{client.key}->{server.key}"
        absent = [
            n
            for n in (client.node, server.node)
            if n not in self.tools or "ib_write_bw" not in self.tools[n].paths
        ]
        if absent:
            return Measurement(
                kind="rail",
                target=target,
                value=0.0,
                unit="Gb/s",
                valid=False,
                reason=(
                    f"not run: ib_write_bw is not installed on {', '.join(absent)} "
                    "(preflight.tool-missing)"
                    if all(n in self.tools for n in absent)
                    else f"not run: the tools were not listed on {', '.join(absent)} "
                    "(preflight.tool-missing)"
                ),
                extra={"client": client.node, "server": server.node, "command": "ib_write_bw"},
            )
        (cgid, cwhy), (sgid, swhy) = await asyncio.gather(
            self.gid_index(client), self.gid_index(server)
        )
        if cgid is None or sgid is None:
            # no RoCE v2 GID for the rail's address: nothing to measure, and no number
            return Measurement(
                kind="rail",
                target=target,
                value=0.0,
                unit="Gb/s",
                valid=False,
                reason=f"no RoCE v2 GID index: {cwhy if cgid is None else swhy}",
                extra={
                    "client": client.node,
                    "server": server.node,
                    "client_netdev": client.netdev,
                    "server_netdev": server.netdev,
                },
            )
        base = f"ib_write_bw -d {{rdma}} -x {{gid}} -q {qps} -D {int(duration_s)} -F --report_gbits -p {port}"
        if bidir:
            base += " -b"
        server_cmd = base.replace("{rdma}", shlex.quote(server.rdma)).replace("{gid}", str(sgid))
        client_ip = server.addresses[0].split("/")[0]
        client_cmd = (
            base.replace("{rdma}", shlex.quote(client.rdma)).replace("{gid}", str(cgid))
            + f" {shlex.quote(client_ip)}"
        )
        c0, s0 = await asyncio.gather(self._rail_counters(client), self._rail_counters(server))
        self._emit(ProbeSent(step=self.step, target=server.node, command=server_cmd))
        srv = asyncio.ensure_future(self.ssh.run(server.node, server_cmd, timeout=timeout))
        await asyncio.sleep(delay)
        self._emit(ProbeSent(step=self.step, target=client.node, command=client_cmd))
        cli = await self.ssh.run(client.node, client_cmd, timeout=timeout)
        try:
            srv_res = await asyncio.wait_for(srv, timeout)
        except TimeoutError:
            srv.cancel()
            srv_res = ProbeResult(
                target=server.node, kind="ssh", command=server_cmd, error="timeout"
            )
        c1, s1 = await asyncio.gather(self._rail_counters(client), self._rail_counters(server))
        counters = {
            side: deltas(a, b)
            for side, a, b in (("client", c0, c1), ("server", s0, s1))
            if a is not None and b is not None
        }
        self._emit(ProbeAnswered(step=self.step, probe=f"ib_write_bw:{client.netdev}", result=cli))
        self._emit(
            ProbeAnswered(step=self.step, probe=f"ib_write_bw:{server.netdev}", result=srv_res)
        )
        from wizard.parsers.perftest import parse_perftest

        value = 0.0
        reason = ""
        try:
            parsed = parse_perftest(cli.stdout + ("\n" + cli.stderr if cli.stderr else ""))
            value = parsed.bw_avg_gbps or 0.0
            reason = parsed.error or ""
        except ParseError as exc:
            reason = f"unreadable ib_write_bw output: {exc}"
        # A broken SSH session or a command that never answered says nothing about the rail:
        # no number, and the measurement is not evidence (it is re-taken on the next test).
        lost = next(
            (r.error for r in (cli, srv_res) if r.error and r.exit_status is None and not value),
            None,
        )
        if cli.error:
            reason = cli.error
        if lost is not None:
            reason = f"no result: {lost}"
        return Measurement(
            kind="rail",
            target=target,
            value=value,
            unit="Gb/s",
            valid=lost is None,
            reason=reason,
            extra={
                "client": client.node,
                "server": server.node,
                "client_netdev": client.netdev,
                "server_netdev": server.netdev,
                "half": client.half,
                "port": client.port,
                "command": client_cmd,
                "gid_index": {"client": cgid, "server": sgid},
                "counters": counters,  # RDMA/PHY counter deltas around the test, per end
                "qps": qps,
                "bidir": bidir,
                "raw": cli.stdout,
                "exit_status": cli.exit_status,
                "server_raw": srv_res.stdout,
            },
        )

    async def nccl_test(
        self,
        *,
        timeout_s: float = 300.0,
        op: str = "all_reduce_perf",
        mode: ncclrun.Mode = "canonical",
        nodes: Sequence[str] | None = None,
    ) -> tuple[Measurement, ProbeResult]:
        """One NCCL test (seed 000's canonical launch, or the job's own environment) across
        `nodes` (every node), launched from the first one."""
        nodes = list(nodes or self.nodes)
        if any(n not in self.tools or n not in self.mgmt for n in nodes):
            await self.sweep([readiness.TOOLS_PROBE])  # a resumed session has not looked yet
        target = "cluster" if op == "all_reduce_perf" else f"{'+'.join(nodes)}/{op}"
        if mode == "job":
            target += "/job-env"
        launch = ncclrun.build(
            nodes,
            tools=self.tools,
            mgmt=self.mgmt,
            rails=self.rails,
            op=op,
            mode=mode,
            time_limit_s=int(timeout_s),
        )
        info: dict[str, object] = {"op": op, "mode": mode, "launch": nodes[0]}
        if launch.cannot:
            m = Measurement(
                kind="nccl",
                target=target,
                value=0.0,
                unit="GB/s",
                valid=False,
                reason=f"not run: {launch.cannot}",
                extra={**info, "command": op},
            )
            self._emit(MeasurementTaken(step=self.step, measurement=m))
            return m, ProbeResult(target=nodes[0], kind="ssh", command=op, error=launch.cannot)
        cmd = launch.command
        info["hostfile"] = launch.hostfile
        info["rerun"] = launch.readable
        timeout_s += 30.0  # the run's own `timeout` fires first
        rails = [r for n in nodes for r in self.rails.get(n, ()) if r.up and r.addresses]
        before = await asyncio.gather(*(self._rail_counters(r) for r in rails))
        self._emit(ProbeSent(step=self.step, target=nodes[0], command=cmd))
        t0 = time.monotonic()
        got: list[ProbeResult] = []

        async def launch_run() -> Measurement:
            got.append(await self.ssh.run(nodes[0], cmd, timeout=timeout_s))
            return Measurement(kind="nccl", target=target, value=0.0, unit="GB/s")

        # the switch CPU sampled and the switch ports read around the run, like ib_write_bw
        [around] = await self.with_switch_cpu([launch_run()], delay=0.0)
        res = got[0]
        after = await asyncio.gather(*(self._rail_counters(r) for r in rails))
        self._emit(ProbeAnswered(step=self.step, probe="nccl", result=res))
        from wizard.parsers.nccl import parse_nccl

        value = 0.0
        reason = res.error or ""
        extra: dict[str, object] = {
            **info,
            "command": cmd,
            **ncclrun.versions_in(res.stdout),
            "raw": res.stdout,
            "seconds": time.monotonic() - t0,
            # per rail, the RDMA/PHY counter deltas around the run (None: not read)
            "rail_counters": {
                r.key: deltas(b, a) if a is not None and b is not None else None
                for r, b, a in zip(rails, before, after, strict=True)
            },
            **{k: around.extra[k] for k in ("switch_cpu", "switch_ports") if k in around.extra},
        }
        try:
            parsed = parse_nccl(res.stdout)
            value = parsed.avg_busbw or 0.0
            extra.update(
                transport=parsed.transport, devices=[d.name for d in parsed.net_ib_devices]
            )
            reason = reason or (parsed.error or "")
        except ParseError as exc:
            reason = reason or f"unreadable {op} output: {exc}"
        if self.versions.update_nccl(nodes, extra):
            self._emit(self.versions.event(self.step))
        lost = res.error is not None and res.exit_status is None and not value
        m = Measurement(
            kind="nccl",
            target=target,
            value=value,
            unit="GB/s",
            valid=not lost,  # a broken session or a hung run is no busbw
            reason=f"no result: {res.error}" if lost else reason,
            extra=extra,
        )
        self._emit(MeasurementTaken(step=self.step, measurement=m))
        return m, res


def _rail_names(node: str, out: Mapping[str, ProbeResult]) -> tuple[Rail, ...]:
    """The netdev/RDMA pairs of phase 1's ibdev2netdev, enough to address phase 2's per-rail
    probes (the rest of each rail is worked out once, after phase 2)."""
    ib = out.get(IBDEV.name)
    if ib is None or not ib.ok:
        return ()
    try:
        mapping = parse_ibdev2netdev(ib.stdout)
    except ParseError:
        return ()
    return tuple(
        Rail(node=node, netdev=m.netdev, rdma=m.rdma, port=0, half="A") for m in mapping.mappings
    )


def peer_rail(mine: Rail | None, theirs: Sequence[Rail], idx: int) -> Rail | None:
    """The rail of the other node that `mine` is cabled to: the one up in the same IPv4 subnet
    (crossed cabling: one node's port 1 on the other's port 0, seed 002), else the same index."""
    if mine is not None and mine.addresses:
        nets = {n for n in map(_network, mine.addresses) if n is not None}
        same = [
            r
            for r in sorted(theirs, key=lambda r: (r.port, r.half, r.netdev))
            if r.up and any(_network(a) in nets for a in r.addresses)
        ]
        if same:
            return same[0]
    return _rail_at(theirs, idx)


def _network(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_interface(cidr).network
    except ValueError:
        return None


def _rail_at(rails: Sequence[Rail], idx: int) -> Rail | None:
    ordered = sorted(rails, key=lambda r: (r.port, r.half, r.netdev))
    return ordered[idx] if idx < len(ordered) else None


def _isl_safe(
    schedule: list[list[tuple[str, str]]], by_node: Mapping[str, Sequence[Rail]], idx: int
) -> list[list[tuple[str, str]]]:
    """Split rounds so that at most one flow crosses an ISL in one direction at once: a single
    flow measures the rail (~109 Gb/s, seed 003); two sharing one direction (~81.9 each) is
    its own test (`isl_shared_test`)."""
    out: list[list[tuple[str, str]]] = []
    for pairs in schedule:
        subs: list[tuple[list[tuple[str, str]], dict[tuple[str, str], int]]] = []
        for a, b in pairs:
            ra, rb = _rail_at(by_node.get(a, ()), idx), _rail_at(by_node.get(b, ()), idx)
            way = (ra.switch or "", rb.switch or "") if ra and rb else ("", "")
            crossing = bool(way[0] and way[1] and way[0] != way[1])
            for sub, used in subs:
                if not crossing or used.get(way, 0) < 1:
                    sub.append((a, b))
                    if crossing:
                        used[way] = used.get(way, 0) + 1
                    break
            else:
                subs.append(([(a, b)], {way: 1} if crossing else {}))
        out.extend(sub for sub, _ in subs)
    return out


def flow_uses(client: Rail, server: Rail) -> frozenset[tuple[str, ...]]:
    """What one single-QP rail test needs to itself to measure the rail: its client's send
    side and its server's receive side (the NIC's ~196 Gb/s a direction is less than two rails),
    both nodes' PCIe halves (both directions on one half cost each ~8%), and the ISL direction
    it crosses (two flows on one direction is `isl_shared_test`)."""
    uses = {
        ("tx", client.node),
        ("rx", server.node),
        ("half", client.node, client.half),
        ("half", server.node, server.half),
    }
    if client.switch and server.switch and client.switch != server.switch:
        uses.add(("isl", client.switch, server.switch))
    return frozenset(uses)


def pack_rounds(flows: Sequence[tuple[Rail, Rail]]) -> list[list[tuple[Rail, Rail]]]:
    """(client, server) rail tests packed into as few rounds as run without sharing a
    bottleneck (`flow_uses`): each goes into the first round it fits, in order. A node may
    send on one PCIe half while it receives on the other, so a plane's test joins another
    plane's round where its nodes play the other parts on the other half."""
    rounds: list[tuple[list[tuple[Rail, Rail]], set[tuple[str, ...]]]] = []
    for client, server in flows:
        need = flow_uses(client, server)
        for planned, used in rounds:
            if not need & used:
                planned.append((client, server))
                used.update(need)
                break
        else:
            rounds.append(([(client, server)], set(need)))
    return [planned for planned, _ in rounds]


def round_robin(nodes: list[str]) -> list[list[tuple[str, str]]]:
    """Every node pair once, as n-1 rounds of disjoint pairs (the circle method; an odd node
    count adds a bye). Pairs of one round can run at the same time."""
    ring: list[str | None] = list(nodes)
    if len(ring) % 2:
        ring.append(None)
    n = len(ring)
    rounds: list[list[tuple[str, str]]] = []
    for r in range(n - 1):
        pairs = []
        for i in range(n // 2):
            a, b = ring[i], ring[n - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b) if r % 2 == 0 or i else (b, a))
        if pairs:
            rounds.append(pairs)
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return rounds


def rail_pairs(nodes: list[str]) -> list[list[tuple[str, str]]]:
    """Rounds of disjoint (client, server) pairs covering every node: (1,2),(3,4)...; an odd
    node out is paired with the first node in a second round."""
    first = [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]
    rounds = [first] if first else []
    if len(nodes) % 2 == 1 and len(nodes) > 1:
        rounds.append([(nodes[-1], nodes[0])])
    return rounds
