"""Running flows advance the counters over simulated time, so sampled counters show live Gb/s.

A flow is registered while an emulated `ib_write_bw` or NCCL run is in progress. Counters are
settled lazily (on every read and on every change of the flow set) from the rates the physics
gives the current set of flows. A stalled flow still moves counters the way a real one does:
the sender's `tx_packets_phy` (retransmissions) and `local_ack_timeout_err` climb, the
receiver stays flat. The switches hear about software-forwarded Gb/s (their cpu-load) and the
bytes crossing their ports.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections import defaultdict
from dataclasses import dataclass

from wizard.lab import pause
from wizard.lab.physics import ROCE_OVERHEAD, FlowResult, FlowSpec, ack_timeout_s, solve
from wizard.lab.world import RailState, World

ISL_SHARED_SEQ_ERR_PER_S = 550.0  # DCQCN splitting: some packet_seq_err is normal (003)
SOFTWARE_SEQ_ERR_PER_S = 900.0  # a CPU-forwarded path drops what it cannot carry (003)
SOFTWARE_CNP_PER_S = 120.0


@dataclass
class _Active:
    spec: FlowSpec
    result: FlowResult
    expired: float = 0.0  # ACK timeouts its QPs have had while it stalled


class Traffic:
    """The set of running flows and the counter accounting."""

    def __init__(self, world: World) -> None:
        self.world = world
        world.traffic = self
        self._ids = itertools.count(1)
        self.flows: dict[int, _Active] = {}
        self._last = world.now()

    @property
    def last_settled(self) -> float:
        """The simulated instant up to which the counters are accounted."""
        return self._last

    def start(self, specs: list[FlowSpec]) -> list[int]:
        self.settle()
        ids = []
        for spec in specs:
            fid = next(self._ids)
            self.flows[fid] = _Active(spec, FlowResult(0.0))
            ids.append(fid)
        self.recompute(settle=False)
        return ids

    def stop(self, ids: list[int]) -> None:
        self.settle()
        for fid in ids:
            self.flows.pop(fid, None)
        self.recompute(settle=False)

    def result(self, fid: int) -> FlowResult | None:
        a = self.flows.get(fid)
        return a.result if a else None

    def node_lost(self, node: str) -> None:
        self.settle()
        for fid, a in list(self.flows.items()):
            if node in (a.spec.src, a.spec.dst):
                self.flows.pop(fid)
        self.recompute(settle=False)

    def recompute(self, *, settle: bool = True) -> None:
        if settle:
            self.settle()
        with self._reading():
            self._recompute()

    def _reading(self) -> contextlib.ExitStack:
        """Every switch's tables read with its look-ups remembered (nothing changes them while
        the flows are solved or settled)."""
        stack = contextlib.ExitStack()
        for switch in self.world.switches.values():
            stack.enter_context(switch.reading())
        return stack

    def _recompute(self) -> None:
        items = list(self.flows.items())
        try:
            results = solve(self.world, [a.spec for _, a in items]) if items else []
        except KeyError:
            results = [FlowResult(0.0, True, "gone") for _ in items]
        sw_gbps: dict[str, float] = defaultdict(float)
        for (_fid, a), r in zip(items, results, strict=True):
            a.result = r
            for sw in r.software:
                sw_gbps[sw] += r.gbps
        for sw_name, switch in self.world.switches.items():
            switch.set_software_forwarded_gbps(sw_gbps.get(sw_name, 0.0))

    def settle(self, fresh_within_s: float = 0.0) -> None:
        """The counters accounted up to now (or left as they are when they were accounted
        less than `fresh_within_s` of lab time ago)."""
        now = self.world.now()
        dt = max(0.0, now - self._last)
        if dt < fresh_within_s:
            return
        self._last = now
        if dt <= 0 or not self.flows:
            return
        with self._reading():
            self._settle(dt)

    def _settle(self, dt: float) -> None:
        world = self.world
        # flows landing on each rail at once: a lossless receiver pauses what it cannot drain
        arriving: dict[tuple[str, str], int] = defaultdict(int)
        for a in self.flows.values():
            if not a.result.stalled:
                arriving[(a.spec.dst, a.spec.dst_rail)] += 1
        for a in self.flows.values():
            spec, r = a.spec, a.result
            src, dst = world.nodes.get(spec.src), world.nodes.get(spec.dst)
            if src is None or dst is None:
                continue
            sr, dr = src.rail(spec.src_rail), dst.rail(spec.dst_rail)
            if sr is None or dr is None:
                continue
            if r.stalled:
                self._settle_stalled(a, sr, dt)
                continue
            self._settle_flowing(r, sr, dr, arriving[(spec.dst, spec.dst_rail)], dt)

    def _settle_stalled(self, a: _Active, sr: RailState, dt: float) -> None:
        """A stalled flow for `dt` seconds: each QP sends its window once per ACK timeout
        (`physics.ack_timeout_s`: the first time, then once a retry) and counts each timeout it
        recovers from by a retry (`local_ack_timeout_err`: mlx5 counts the ones under the retry
        limit; the last one is the error completion). No ACK comes back whatever swallowed the
        frames: a lossless queue that never drains or a MAC that ARP flux resolved wrongly both
        leave the QP to time out. A lossless first hop keeps the sender paused."""
        spec, r = a.spec, a.result
        period = ack_timeout_s(spec.qp_timeout)
        if r.path is None or not r.path.ok or period is None:
            return  # (a QP without a timeout waits, silent, for ever)
        expired = spec.qps * dt / period
        limit = spec.qps * spec.retry_cnt
        retries = min(a.expired + expired, limit) - min(a.expired, limit)
        # a QP sends its window once, then once a retry; after the last it is in error and
        # sends nothing more, however late its process reaps it
        sends = spec.qps * (spec.retry_cnt + 1)
        windows = min(a.expired + expired, sends) - min(a.expired, sends)
        a.expired += expired
        pk = windows * math.ceil(spec.window_bytes / r.mtu)
        sr.bump("tx_packets_phy", pk)
        frame = r.mtu + ROCE_OVERHEAD
        sr.bump("tx_bytes_phy", pk * frame)
        sr.bump("port_xmit_packets", pk)
        sr.bump("port_xmit_data", pk * frame / 4)
        sr.bump("local_ack_timeout_err", retries)
        sr.bump("roce_adp_retrans", retries)
        first = r.path.hops[0] if r.path.hops else None
        if first is not None and first.lossless and first.offloaded:
            # the lossless queue never drains: the switch keeps the sender paused
            n = pause.held(sr, dt)
            self.world.switches[first.switch].add_port_pause(first.ingress, tx=n)

    def _settle_flowing(
        self, r: FlowResult, sr: RailState, dr: RailState, arriving: int, dt: float
    ) -> None:
        """A flowing flow for `dt` seconds: the bytes and packets on both rails and every switch
        port on its path, the errors of a software-forwarded or shared-ISL path, and the pause
        frames of an incast onto `dr`."""
        world = self.world
        nbytes = r.gbps * 1e9 / 8 * dt
        frame = r.mtu + ROCE_OVERHEAD
        pkts = nbytes / r.mtu
        wire = pkts * frame
        for rail, way in ((sr, "tx"), (dr, "rx")):
            rail.bump(f"{way}_bytes_phy", wire)
            rail.bump(f"{way}_packets_phy", pkts)
            rail.bump(f"{way}_prio3_packets", pkts)
        sr.bump("port_xmit_data", wire / 4)
        sr.bump("port_xmit_packets", pkts)
        dr.bump("port_rcv_data", wire / 4)
        dr.bump("port_rcv_packets", pkts)
        dr.bump("rx_write_requests", pkts)
        if r.software:
            # the switch CPU drops the rest: the sender sees sequence errors and CNPs
            sr.bump("packet_seq_err", SOFTWARE_SEQ_ERR_PER_S * dt)
            dr.bump("np_cnp_sent", SOFTWARE_CNP_PER_S * dt)
            sr.bump("rp_cnp_handled", SOFTWARE_CNP_PER_S * dt)
        if r.path is not None and r.path.isl and self._isl_shared(r.path.isl):
            sr.bump("packet_seq_err", ISL_SHARED_SEQ_ERR_PER_S * dt)
            dr.bump("np_cnp_sent", 40 * dt)
            sr.bump("rp_cnp_handled", 40 * dt)
        n = pause.incast(dr, sr, arriving, dt)
        if n and r.path is not None and r.path.hops:
            last = r.path.hops[-1]  # a lossy switch port counts the frames and drops them
            world.switches[last.switch].add_port_pause(last.egress, rx=n)
        elif n:
            sr.bump("rx_pause_ctrl_phy", n)  # a direct cable: the sender gets them
            sr.bump("rx_prio3_pause", n)
        if r.path is not None:
            for hop in r.path.hops:
                sw = world.switches[hop.switch]
                n_b, n_p = int(wire), int(pkts)
                sw.add_port_traffic(hop.ingress, 0, n_b, 0, n_p)
                sw.add_port_traffic(hop.egress, n_b, 0, n_p, 0)

    def _isl_shared(self, isl: tuple[tuple[str, str], ...]) -> bool:
        """Whether more than one flow crosses one of these ISLs."""
        crossing = set(isl)
        shared = sum(
            1
            for b in self.flows.values()
            if b.result.path is not None and set(b.result.path.isl) & crossing
        )
        return shared > 1
