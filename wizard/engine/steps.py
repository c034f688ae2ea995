"""The steps of the walk other than the direct-connect test: preflight, drain, configuration,
both PCIe halves, and persistence (golden exports, the reboot proof)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from wizard import bisect, fixes, golden, undoes
from wizard.drain import CARRIER_PROBE
from wizard.drain import FAULT_ID as UNDRAINED
from wizard.engine.bisection import BisectionMixin
from wizard.engine.ports import CheckLike, Fabric, StepLike
from wizard.engine.txn import export_taken
from wizard.errors import FabwizError
from wizard.events import REBOOT_PROOF_QUESTION, OperatorAnswered
from wizard.model import Evidence, PhysicalAction, Status, Verdict
from wizard.probes import Observations

UNREACHABLE = "preflight.unreachable"
JOB_ENV = "nccl.job-env"  # the check judging NCCL with the job's own environment


class StepsMixin(BisectionMixin):
    async def _step_preflight(self, spec: StepLike) -> bool:
        obs = await self._sweep(self.checks)
        all_config = [c for c in self.checks if not c.needs_traffic]
        verdicts = await self._judge(all_config, obs, None) + _unreachable_verdicts(
            self.fabric, obs
        )
        self._record_verdicts(verdicts)
        if len(obs.unreachable) >= len(self.fabric.nodes) + len(self.fabric.switches):
            raise FabwizError(
                "no node and no switch answered",
                hint="check the inventory's addresses, credentials and host keys (fabwiz check -i ...)",
            )
        findings = [v for v in verdicts if v.is_finding]
        self.result.healthy_before = not findings and not obs.unreachable
        for target, error in obs.unreachable.items():
            await self.operator.error(
                f"{target} is unreachable", error, "the walk goes on without it"
            )
        await self._fix_findings(spec, all_config, verdicts, obs)
        return False

    async def _step_drain(self, spec: StepLike) -> bool:
        obs = await self._sweep([])
        pending = self.guard.undrained(self.fabric.nodes)
        if not pending:
            self.note("no link transition since the last drain on any node")
            self._fire("judged")
            self._record_verdicts([_nothing_to_drain(obs, self.fabric.nodes)])
            return False
        await self._drain(pending)
        left = self.guard.undrained(self.fabric.nodes)
        self._fire("judged")
        self._record_verdicts(
            [
                Verdict(
                    fault=UNDRAINED,
                    status=Status.FAIL if left else Status.PASS,
                    summary=(
                        self.guard.reason(left)
                        if left
                        else "every node with a link transition has been AC-drained"
                    ),
                    targets=tuple(sorted(left)),
                    check="drain-guard",
                )
            ]
        )
        return False

    async def _step_config(self, spec: StepLike) -> bool:
        persisted_with = tuple(getattr(spec, "persisted_with", ()))
        checks = self._checks_for((*spec.faults, *persisted_with), traffic=False)
        obs = await self._sweep(checks)
        verdicts = await self._judge(checks, obs, (*spec.faults, *persisted_with))
        if spec.traffic:
            obs, verdicts = await self._proven(spec, checks, obs, verdicts, persisted_with)
        self._record_verdicts(verdicts)
        self._fire("judged")  # the verdicts are in: fixes may be offered
        await self._persistence_first(spec, verdicts, obs, persisted_with)
        await self._fix_findings(spec, checks, verdicts, obs)
        if spec.traffic:
            pending = self.guard.undrained(self.fabric.nodes)
            if pending:
                await self._drain(pending)
            ms, _ = await self._measure_and_judge("rails", spec.faults)
            self._maybe_revisit(ms)
            if getattr(spec, "fabric_tests", False):
                # the jumbo ping matrix and, across switches, the shared-ISL test
                await self._measure_and_judge("fabric", spec.faults)
        return False

    async def _proven(
        self,
        spec: StepLike,
        checks: Sequence[CheckLike],
        obs: Observations,
        verdicts: list[Verdict],
        persisted_with: Sequence[str],
    ) -> tuple[Observations, list[Verdict]]:
        """A finding this step would fix, shown with what the fabric does before anything
        changes: the rails measured now (the switch CPU during each test, each end's counters
        around it) and the checks judged again with them, so the verdict a fix rests on carries
        its runtime evidence (a stall's ACK timeouts, a forwarding switch CPU), not only the
        configuration. Not measured on nodes awaiting a drain (their numbers are no evidence):
        the verdict then says it is not yet proven by traffic."""
        if not any(v.is_finding and v.fault in spec.faults for v in verdicts):
            return obs, verdicts
        if self.guard.undrained(self.fabric.nodes):
            return obs, verdicts
        valid = tuple(m for m in await self._measure("rails") if m.valid)
        if not valid:
            return obs, verdicts
        obs = replace(obs, measurements=valid)
        self._last_obs = obs
        return obs, await self._judge(checks, obs, (*spec.faults, *persisted_with))

    async def _persistence_first(
        self,
        spec: StepLike,
        verdicts: Sequence[Verdict],
        obs: Observations,
        persisted_with: Sequence[str],
    ) -> None:
        """A persistence finding that would undo this step's fix at the next boot (a
        NetworkManager profile taking the rail the addressing fix writes) is said and fixed
        first, with this step (wizard/undoes.py)."""
        own = [v for v in verdicts if v.fault in spec.faults]
        persist = [v for v in verdicts if v.fault in persisted_with]
        for verdict, undone in undoes.undoing(own, persist, self.fabric.nodes):
            self.note(undoes.sentence(verdict, undone, spec.title, self.fabric.nodes), "warn")
            for v, plan in self._plans(obs, [verdict]):
                if spec.id in self._skips:
                    return
                await self._offer_and_apply(v, plan)

    async def _step_halves(self, spec: StepLike) -> bool:
        checks = self._checks_for(spec.faults, traffic=False)
        obs = await self._sweep(checks)
        verdicts = await self._judge(checks, obs, spec.faults)
        self._record_verdicts(verdicts)
        await self._fix_findings(spec, checks, verdicts, obs)
        pending = self.guard.undrained(self.fabric.nodes)
        if pending:
            await self._drain(pending)
        await self._measure_and_judge("rails", spec.faults)
        await self._measure_and_judge("halves", spec.faults)
        # the switch side is read with the NCCL run, so what explains a low busbw is current
        # (offload, QoS, RSTP) and a low busbw is reported under it
        await self._sweep(self._checks_for(spec.faults, traffic=True))
        await self._measure_and_judge("nccl", spec.faults, explained=True)
        return False

    async def _golden_exports(self) -> list[Verdict]:
        """A golden export of every switch, then `/file print` to see it is there with the size
        read back (wizard/golden.py); a missing or short one is taken again once."""
        out: list[Verdict] = []
        for switch in self.fabric.switches:
            name = f"fabwiz-{self.session_id}-golden"
            verdict: Verdict | None = None
            for _attempt in range(2):
                status = await fixes.take_export(self.fabric.api(switch), switch, name)
                if not status.verified:
                    self.note(f"{switch}: golden export failed: {status.error}", "error")
                    verdict = golden.judge(switch, status.file, 0, None, status.error or "")
                    break
                self._export_taken(switch, status, "golden")
                size = len(status.contents.encode("utf-8"))
                try:
                    rows: list[dict[str, str]] | None = list(
                        await self.fabric.api(switch).call("/file", "print")
                    )
                    error = ""
                except Exception as exc:  # transport errors arrive as many types: data here
                    rows, error = None, str(exc)
                verdict = golden.judge(switch, status.file, size, rows, error)
                if verdict.status != Status.FAIL:
                    break
            if verdict is not None:
                out.append(verdict)
                if verdict.status == Status.PASS:
                    self._golden_files[switch] = f"{name}.rsc"
        return out

    def _export_taken(self, switch: str, status: fixes.ExportStatus, purpose: str) -> None:
        self.emit(export_taken(self._step, switch, status, purpose))

    async def _golden_still_current(self) -> list[Verdict]:
        """At the end of step 8: each golden export, read back from the switch, against the
        running configuration exported now (wizard/golden.py). A switch changed since the
        golden export was taken fails with the menus that differ."""
        out: list[Verdict] = []
        for switch, file in self._golden_files.items():
            name = f"fabwiz-{self.session_id}-golden-check"
            verdict, now = await golden.check_current(self.fabric.api(switch), switch, file, name)
            if now is not None:
                self._export_taken(switch, now, "running")
            out.append(verdict)
        return out

    async def _step_persist(self, spec: StepLike) -> bool:
        golden_verdicts = golden.merge(await self._golden_exports())
        config = [c for c in self.checks if not c.needs_traffic]
        obs = await self._sweep(config)
        verdicts = await self._judge(config, obs, None)
        self._record_verdicts(verdicts + golden_verdicts)
        own = [v for v in verdicts if v.fault in spec.faults and v.is_finding]
        if own:
            await self._fix_findings(spec, config, verdicts, obs)
            obs = await self._sweep(config)
            verdicts = await self._judge(config, obs, None)
            self._record_verdicts(verdicts)
        else:
            self._fire("judged")
        verdicts = verdicts + golden_verdicts
        t = self.thresholds
        rails_ok = bool(self.result.rails_gbps) and all(
            v >= t.rail_fix_target_gbps for v in self.result.rails_gbps.values()
        )
        across = self.result.halves_across_isl
        halves_ok = all(v >= t.halves_gate(n in across) for n, v in self.result.halves_gbps.items())
        gate = t.nccl_gate(len(self.fabric.nodes), len(self.fabric.switches))
        nccl_ok = self.result.nccl_busbw is None or self.result.nccl_busbw >= gate
        findings = [v for v in verdicts if v.is_finding]
        # the job's own NCCL environment is measured with the halves (no config sweep sees it)
        findings += [
            v
            for vs in self.result.steps.values()
            for v in vs
            if v.check == JOB_ENV and v.is_finding
        ]
        if not findings and not obs.unreachable and rails_ok:
            regressed = await self._prove_after_reboot(spec, config)
            if regressed:
                findings = regressed
        current = golden.merge([*golden_verdicts, *await self._golden_still_current()])
        self._record_verdicts(current)
        findings = [v for v in findings if v.fault != golden.FAULT]
        findings += [v for v in current if v.is_finding]
        self.result.healthy_after = (
            not findings
            and rails_ok
            and halves_ok
            and nccl_ok
            and not obs.unreachable
            and not self.result.unjudged
        )
        if findings:
            self.note("still open: " + ", ".join(sorted({v.fault for v in findings})), "warn")
        return False

    async def _prove_after_reboot(
        self, spec: StepLike, config: Sequence[CheckLike]
    ) -> list[Verdict]:
        """Reboot one node and run the sweep again: every fix must come back by itself (seed
        000: "zero manual steps"). Offered first in a lab (its hands reboot), as an option on a
        real rack. Returns the findings the reboot brought back."""
        node = self._proof_node()
        if node is None:
            return []
        question = f"Reboot {node} and re-run the sweep, to prove every fix survives a reboot?"
        options = ["reboot and re-run the sweep", "skip the proof"]
        if self.fabric.hands is None:
            options.reverse()  # on a real rack the technician chooses it deliberately
        answer = await self.operator.choose(spec.id, question, options)
        self.emit(OperatorAnswered(step=spec.id, question=REBOOT_PROOF_QUESTION, answer=answer))
        if not answer.startswith("reboot"):
            self.note(f"persistence not proven by a reboot: {answer}", "warn")
            return []
        action = PhysicalAction(
            kind="reboot",
            nodes=(node,),
            instructions=(
                f"Reboot {node} (sudo reboot, or its power button): a plain reboot, no AC drain. "
                "The wizard waits for it to come back with a new boot_id, then runs every check "
                "and the rail tests again: nothing may need a manual step."
            ),
        )
        if not await self._physical(action):
            self.note(f"persistence not proven: the reboot of {node} was not done", "warn")
            return []
        obs = await self._sweep(config)
        verdicts = await self._judge(config, obs, None)
        self._record_verdicts(verdicts)
        back = [v for v in verdicts if v.is_finding]
        traffic = tuple(f for c in self.checks if c.needs_traffic for f in c.faults)
        ms, measured = await self._measure_and_judge("rails", traffic)
        back += [v for v in measured if v.is_finding and v.fault not in {b.fault for b in back}]
        low = bisect.low(ms, self.thresholds.rail_fix_target_gbps)
        mine = [m for m in ms if node in bisect.nodes_of(m) and m.valid]
        if back or low or obs.unreachable or not mine:
            what = sorted({v.fault for v in back}) + [f"{m.target} {m.value:.2f} Gb/s" for m in low]
            sentence = f"after a reboot of {node} the fabric did not come back by itself: " + (
                ", ".join(what) or "no rail of it measured"
            )
            self._concluded("not-persisted", sentence, (node,), None, None)
            self.note(sentence, "error")
            return back or [
                Verdict(
                    fault="host.rail-down",  # its rails did not come back to be measured
                    status=Status.FAIL,
                    summary=sentence,
                    targets=(node,),
                    check="persist-proof",
                )
            ]
        worst = min(m.value for m in mine)
        sentence = (
            f"{node} rebooted and came back by itself: every check passes and its rails "
            f"measure >= {worst:.2f} Gb/s with zero manual steps"
        )
        self._concluded("persisted", sentence, (node,), worst, None)
        self.note(sentence)
        return []

    def _proof_node(self) -> str | None:
        """The node to reboot: one a host fix of this session touched, else the first node."""
        for f in self.result.fixes:
            if f.verified:
                for n in f.target.replace(",", " ").split():
                    if n in self.fabric.nodes:
                        return n
        return self.fabric.nodes[0] if self.fabric.nodes else None


def _nothing_to_drain(obs: Observations, nodes: Sequence[str]) -> Verdict:
    """No node to drain: a pass for the nodes whose link counters this sweep read, `unknown` for
    a node it could not read (no transition seen is not the same as none)."""
    read = [n for n in nodes if (r := obs.node(n, CARRIER_PROBE.name)) is not None and r.stdout]
    unread = [n for n in nodes if n not in read]
    evidence = tuple(
        Evidence(
            target=n,
            command=CARRIER_PROBE.command,
            observed="no link transition since the last AC drain"
            if n in read
            else "link counters not read",
            expected="no link transition since the last AC drain",
            status=Status.PASS if n in read else Status.UNKNOWN,
        )
        for n in nodes
    )
    return Verdict(
        fault=UNDRAINED,
        status=Status.UNKNOWN if unread else Status.PASS,
        summary=(
            f"link counters not read on {', '.join(unread)}: whether it needs a drain is unknown"
            if unread
            else "no link transition since the last drain on any node: nothing to drain"
        ),
        targets=tuple(unread),
        evidence=evidence,
        check="drain-guard",
    )


def _unreachable_verdicts(fabric: Fabric, obs: Observations) -> list[Verdict]:
    """One `preflight.unreachable` finding per target the sweep could not reach or log into."""
    return [
        Verdict(
            fault=UNREACHABLE,
            status=Status.UNKNOWN,
            summary=(
                f"the {'node' if target in fabric.nodes else 'switch'} {target} could not be "
                f"checked: {error}"
            ),
            targets=(target,),
            evidence=(Evidence(target, "connect", error, "reachable", Status.UNKNOWN),),
            check="sweep",
        )
        for target, error in sorted(obs.unreachable.items())
    ]
