"""The direct-connect test: through the switch, drain what measured low, bisect what stays low
with a direct cable. The reasoning is wizard/bisect.py; this layer measures, asks and concludes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from wizard import bisect
from wizard.engine.fixing import FixingMixin
from wizard.engine.ports import StepLike
from wizard.engine.records import FixRecord
from wizard.events import BisectionConcluded, FixApplied, FixVerified, OperatorAnswered
from wizard.model import Evidence, Measurement, Status, Verdict
from wizard.probes import Observations


class BisectionMixin(FixingMixin):
    async def _step_direct_connect(self, spec: StepLike) -> bool:
        """Through the switch; drain what measured low and measure again; bisect what stays
        low with a direct cable (wizard/bisect.py holds the reasoning)."""
        target = self.thresholds.rail_fix_target_gbps
        if self.fabric.direct_connect_action() is None:
            # Already direct-cabled (a two-node lab): the measurement is the direct one.
            ms, verdicts = await self._measure_and_judge("direct", spec.faults)
            await self._host_branch(spec, verdicts, tuple(m for m in ms if m.valid))
            return False
        # across switches each pair has its own path (which ISL, which direction): every pair
        # from the start; on one switch the disjoint pairs cover every port
        every = len(self.fabric.switches) > 1 and len(self.fabric.nodes) > 2
        before, _ = await self._measure_and_judge("matrix" if every else "rails", spec.faults)
        bad = bisect.low(before, target)
        pending = self.guard.undrained(self.fabric.nodes)
        if not bad and not pending and bisect.good(before, target):
            self._fire("judged")
            self._concluded(
                "line-rate",
                "every rail is at line rate through the switch: no need to bisect",
                (),
                min(m.value for m in before if m.valid),
                None,
            )
            return True
        if bad:
            self.result.healthy_before = False  # low through the switch before any change
        explained = bisect.explaining(
            self._open_preflight_findings(),
            bad,
            self.fabric.switches,
            set(getattr(spec, "explained_by", ())),
        )
        if explained and not pending and await self._skip_explained(spec, explained, bad):
            return True
        if not every:
            before, bad = await self._matrix_if_low(spec, before, bad)
        # Drain first: a degraded CX7 clears only with an AC drain, and numbers from nodes with
        # a link transition since their last drain are no evidence anyway.
        to_drain = dict(pending)
        for node, why in bisect.drain_nodes(before, bad, target).items():
            to_drain.setdefault(node, why)
        if not to_drain and bad:
            # the low pairs share no node, each end at line rate with other partners: the
            # switch path, nothing to drain; the direct cable says so
            await self._bisect(spec, before, bad, ())
            self._fire("judged")
            return False
        if not to_drain:
            self._fire("judged")
            return False
        if not await self._drain(to_drain):
            self.note("the drain was not done: the bisection cannot judge these numbers", "warn")
            self._fire("judged")
            return False
        after, _ = await self._measure_and_judge("matrix" if every else "rails", spec.faults)
        if not every:
            after, _still = await self._matrix_if_low(spec, after, bisect.low(after, target))
        cleared = bisect.cleared_by_drain(before, after, to_drain, target)
        if cleared:
            self._cleared_by_drain(spec, cleared)
        still = bisect.low(after, target)
        if not still:
            self._fire("judged")
            if not cleared:
                self.note("after the drain every rail is at line rate through the switch")
            return False
        await self._bisect(spec, after, still, tuple(to_drain))
        self._fire("judged")
        return False

    async def _matrix_if_low(
        self, spec: StepLike, ms: list[Measurement], bad: list[Measurement]
    ) -> tuple[list[Measurement], list[Measurement]]:
        """The disjoint pairs measured a low rail: one pair cannot say which end is slow, every
        pair can (the node common to the low pairs, wizard/pairs.py). Measures every pair, in
        rounds of disjoint pairs at once, only then: a healthy fabric costs one round per
        plane. Returns (the measurements, the low ones)."""
        if not bad or len(self.fabric.nodes) <= 2:
            return ms, bad
        every, _ = await self._measure_and_judge("matrix", spec.faults)
        return every, bisect.low(every, self.thresholds.rail_fix_target_gbps)

    async def _skip_explained(
        self, spec: StepLike, found: Sequence[Verdict], bad: Sequence[Measurement]
    ) -> bool:
        """Preflight's findings explain the low numbers: say so, offer to skip the physical test.
        True when skipped (recorded with the reason); a host finding of this step is then fixed
        here, without the cabling."""
        sentence = bisect.skipped_sentence(found, bad)
        self.note(sentence, "warn")
        answer = await self.operator.choose(
            spec.id,
            f"{sentence}. Skip the physical test?",
            ["skip the physical test", "do the physical test"],
        )
        self.emit(OperatorAnswered(step=spec.id, question="skip the physical test", answer=answer))
        if not answer.startswith("skip"):
            return False
        ids = [s.id for s in self.flow]
        later = {f for s in self.flow[ids.index(spec.id) + 1 :] for f in s.faults}
        # fixed here: this step's host findings no later step owns (a throttled CX7)
        own = [v for v in found if v.fault in spec.faults and v.fault not in later]
        deferred = tuple(sorted({v.fault for v in found} - {v.fault for v in own}))
        self._concluded(
            "skipped", sentence, tuple(bisect.low_nodes(bad)), bad[0].value, None, deferred
        )
        if own:
            obs = self._last_obs or Observations()
            await self._fix_findings(spec, self._checks_for(spec.faults), own, obs)
        self._phase_reason = f"skipped: {sentence}"
        self._fire("skip")
        self._deferred = deferred
        return True

    def _open_preflight_findings(self) -> list[Verdict]:
        """Preflight's findings still open: the latest verdict of each fault id, over the steps
        in the order they ran, is still a failure or a warning."""
        latest: dict[str, Verdict] = {}
        from_traffic = {c.id for c in self.checks if c.needs_traffic}
        for verdicts in self.result.steps.values():
            for v in verdicts:
                if v.check not in from_traffic:  # config verdicts, with node targets
                    latest[v.fault] = v
        found = {v.fault for v in self.result.steps.get("preflight", ())}
        return [v for f, v in latest.items() if f in found and v.is_finding]

    def _maybe_revisit(self, measured: Sequence[Measurement]) -> None:
        """The direct-connect test was skipped because open findings explained the low numbers:
        once those are fixed, rails still low send the walk back to it."""
        if not self._deferred:
            return
        still_open = {v.fault for v in self._open_preflight_findings()}
        if still_open & set(self._deferred):
            return
        low = bisect.low(measured, self.thresholds.rail_fix_target_gbps)
        self._deferred = ()
        if low:
            worst = low[0]
            self.note(
                "the findings that explained the low numbers are fixed, yet "
                f"{worst.target} measures {worst.value:.2f} Gb/s: back to the direct-connect test",
                "warn",
            )
            self._revisit = next((s.id for s in self.flow if s.kind == "direct_connect"), None)

    def _cleared_by_drain(self, spec: StepLike, cleared: Sequence[bisect.Cleared]) -> None:
        """Low before the drain, at line rate after: host.cx7-degraded found and fixed."""
        nodes = tuple(sorted({n for c in cleared for n in c.nodes}))
        sentence = bisect.drained_sentence(cleared)
        evidence = tuple(
            Evidence(
                target=c.target,
                command="ib_write_bw through the switch, before and after the AC drain",
                observed=f"{c.before:.2f} Gb/s before, {c.after:.2f} Gb/s after",
                expected=f">= {self.thresholds.rail_fix_target_gbps:g} Gb/s",
                status=Status.FAIL,
            )
            for c in cleared
        )
        found = Verdict(
            fault="host.cx7-degraded",
            status=Status.FAIL,
            summary=sentence,
            targets=nodes,
            evidence=evidence,
            check="bisection",
        )
        self._record_verdicts([found])
        fix_id = f"{self._step}:host.cx7-degraded:{','.join(nodes)}"
        target = ",".join(nodes)
        self.emit(
            FixApplied(step=self._step, fix_id=fix_id, fault="host.cx7-degraded", target=target)
        )
        self.emit(
            FixVerified(
                step=self._step, fix_id=fix_id, fault="host.cx7-degraded", ok=True, detail=sentence
            )
        )
        self._record_verdicts(
            [replace(found, status=Status.PASS, summary=f"cleared by AC drain: {sentence}")]
        )
        self.result.fixes.append(
            FixRecord(
                fix_id=fix_id, fault="host.cx7-degraded", target=target, applied=True, verified=True
            )
        )
        self._verified_fixes.add(fix_id)
        self.result.healthy_before = False
        self._concluded(
            "cleared-by-drain",
            sentence,
            nodes,
            min(c.before for c in cleared),
            None,
        )

    async def _bisect(
        self,
        spec: StepLike,
        measured: Sequence[Measurement],
        still: Sequence[Measurement],
        drained_nodes: Sequence[str] = (),
    ) -> None:
        """Cable a node of the worst rail to a partner that measured well; good numbers clear
        it (then the other end of the worst rail is tried), bad ones open the host branch."""
        target = self.thresholds.rail_fix_target_gbps
        worst = still[0]
        port = bisect.port_of(worst)
        host_findings = [
            v for v in self.result.steps.get("preflight", ()) if v.fault.startswith("host.")
        ]
        clear: list[tuple[str, Measurement]] = []
        drained = set(drained_nodes)
        for suspect in bisect.suspects(still, host_findings):
            mate = bisect.partner(suspect, measured, target, self.fabric.nodes)
            if mate is None:
                break
            other, measured_well = mate
            if not measured_well:
                self.note(
                    f"no node measured well to pair {suspect} with: {other} is used, so a low "
                    "direct number may be either end",
                    "warn",
                )
            actions = self.fabric.direct_connect_action((suspect, other), port)
            if actions is None:
                self.note(
                    f"the cabling of {suspect} and {other} port {port} is not known: the direct "
                    "test cannot be described",
                    "error",
                )
                return
            to_direct, back = actions
            if not await self._physical(to_direct, undo=back):
                return
            pending = self.guard.undrained(to_direct.nodes)
            if pending:
                await self._drain(pending)
            ms, verdicts = await self._measure_and_judge("direct", spec.faults)
            direct = ms[0] if ms else None
            if direct is None:
                await self._physical(back)
                return
            ok, sentence = bisect.direct_sentence(suspect, other, port, direct, worst, target)
            if not ok and direct.valid and suspect in drained:
                sentence += (
                    f"; {suspect} was AC-drained and still measures low: not the state a drain "
                    "clears (a throttled or stale CX7: firmware and OS update)"
                )
            self.note(sentence, "info" if ok else "warn")
            if not direct.valid:
                await self._physical(back)
                return
            if not ok:
                self._concluded("host", sentence, (suspect,), worst.value, direct.value)
                await self._host_branch(spec, verdicts, tuple(m for m in ms if m.valid))
                self._fire("judged")
                await self._physical(back)
                return
            clear.append((suspect, direct))
            await self._physical(back)
            if not measured_well:
                break
        if clear:
            sentence = bisect.switch_path_sentence(clear, worst)
            self.note(sentence)
            self._concluded(
                "switch-path",
                sentence,
                tuple(n for n, _m in clear),
                worst.value,
                min(m.value for _n, m in clear),
            )

    def _concluded(
        self,
        conclusion: str,
        sentence: str,
        nodes: tuple[str, ...],
        switched: float | None,
        direct: float | None,
        faults: tuple[str, ...] = (),
    ) -> None:
        self.emit(
            BisectionConcluded(
                step=self._step,
                conclusion=conclusion,
                sentence=sentence,
                nodes=nodes,
                switched_gbps=switched,
                direct_gbps=direct,
                faults=faults,
            )
        )

    async def _host_branch(
        self, spec: StepLike, verdicts: list[Verdict], measured: tuple[Measurement, ...]
    ) -> None:
        """Bad numbers on a direct cable: judge and fix the host side (CX7 state, PCIe, MTU, PFC)."""
        checks = self._checks_for(spec.faults)
        obs = await self._sweep(checks)
        config = await self._judge([c for c in checks if not c.needs_traffic], obs, spec.faults)
        self._record_verdicts(config)
        obs = replace(obs, measurements=measured)
        await self._fix_findings(spec, checks, [*verdicts, *config], obs)
