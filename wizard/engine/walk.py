"""The walk: the flow's steps in order, with the operator's navigation (next, rerun, back), a
skipped test revisited once what made it skippable is fixed, and a resumed session settled
before anything is probed."""

from __future__ import annotations

from wizard.engine import settlement
from wizard.engine.machine import Phase
from wizard.engine.ports import StepLike
from wizard.engine.records import RunResult
from wizard.engine.steps import StepsMixin
from wizard.errors import FabwizError, SessionLogError
from wizard.events import OperatorAnswered, SessionEnded, StepChanged


class Engine(StepsMixin):
    """Walks the bisection with the operator, one step at a time (see wizard/engine/)."""

    async def run(self) -> RunResult:
        """Walk the flow from the start (or from the resumed step) to the end."""
        index, done = await self._start()
        try:
            while index < len(self.flow):
                index = await self._next(index, done)
        except SessionLogError as exc:
            # the log cannot be written (disk full, read-only): stop now, say what the
            # targets do next; nothing more can be recorded
            self.result.aborted = str(exc)
            armed = " Any dead-man rollback already armed restores its target when due."
            await self.operator.error("The wizard stopped", exc.message + armed, exc.hint)
            raise
        except FabwizError as exc:
            self.result.aborted = str(exc)
            await self.operator.error("The wizard stopped", exc.message, exc.hint)
        self.emit(
            SessionEnded(healthy=bool(self.result.healthy_after), reason=self.result.aborted or "")
        )
        return self.result

    async def _start(self) -> tuple[int, set[str]]:
        """Where the walk starts: the first step, or the resumed one once every rollback the
        stopped session left armed has settled (a step whose verified fix a rollback undid runs
        again) and the cabling of an interrupted direct-connect test is back."""
        resume = self._resume
        if resume is None:
            return 0, set()
        done = set(resume.done_steps)
        ids = [s.id for s in self.flow]
        index = ids.index(resume.step) if resume.step in ids else 0
        self._step = self.flow[index].id
        self.txn.counter = resume.fix_counter
        settled = await settlement.settle_pending(self, resume, self.result.fixes)
        self._undone_steps |= settled.undone_steps
        self._verified_fixes -= settled.undone_fixes
        redo = [s for s in ids if s in self._undone_steps]
        if redo:  # a verified fix its rollback undid meanwhile: that step runs again
            done -= set(redo)
            index = min(index, ids.index(redo[0]))
            self._step = self.flow[index].id
        if resume.direct_cabled:
            await self._restore_cabling()
        return index, done

    async def _next(self, index: int, done: set[str]) -> int:
        """Run the step at `index` (unless done); the index of the step to run next."""
        spec = self.flow[index]
        if spec.id in done:
            return index + 1
        self._step = spec.id
        self.fabric.set_step(spec.id)
        self.lifecycle.force(Phase.IDLE)
        self.emit(StepChanged(step=spec.id, phase="entered", reason="next"))
        outcome = await self._run_step(spec)
        if outcome == "back":
            done.discard(self.flow[max(0, index - 1)].id)
            return max(0, index - 1)
        if outcome == "rerun":
            return index
        done.add(spec.id)
        index += 1
        revisit, self._revisit = self._revisit, None
        ids = [s.id for s in self.flow]
        if revisit in ids and ids.index(revisit) < index:
            # back to a skipped test once what made it skippable is fixed, then on
            self._return_to = index
            done.discard(revisit)
            return ids.index(revisit)
        if self._return_to is not None:
            index, self._return_to = self._return_to, None
        return index

    async def _run_step(self, spec: StepLike) -> str:
        handler = {
            "preflight": self._step_preflight,
            "direct_connect": self._step_direct_connect,
            "drain": self._step_drain,
            "config": self._step_config,
            "halves": self._step_halves,
            "persist": self._step_persist,
        }[spec.kind]
        self._declined.pop(spec.id, None)  # a re-run offers its fixes afresh
        skipped = True if spec.id in self._skips else await handler(spec)
        self._close_step(spec, skipped)
        return await self._after_step(spec)

    def _close_step(self, spec: StepLike, skipped: bool) -> None:
        """The step's life cycle to its end: skipped (by the operator or the step), or done."""
        state = self.lifecycle.state
        if spec.id in self._skips:
            self._skips.discard(spec.id)
            self.emit(OperatorAnswered(step=spec.id, question="skip step", answer="skip"))
            self._phase_reason = "skipped by the operator"
            if state is not Phase.SKIPPED:
                self._fire("skip")
        elif skipped:
            if state is not Phase.SKIPPED:  # the handler may have said why itself
                self._fire("skip")
        else:
            if state not in (Phase.VERDICT, Phase.IDLE):  # IDLE: nothing to judge
                self._fire("judged")
            if not self._declined.get(spec.id):  # else done once no fix is wanted any more
                self._fire("finish")

    async def _after_step(self, spec: StepLike) -> str:
        """Ask where to go; a declined fix stays on offer and is offered again (with a fresh
        export) when the operator asks for it. The step stays at its verdict while fixes are
        on offer and is done once the operator moves on; a skipped step offers none."""
        if self.lifecycle.state is Phase.SKIPPED and self._declined.pop(spec.id, []):
            self.note(
                f"{spec.title}: skipped, so its declined fixes are no longer on offer", "warn"
            )
        while True:
            declined = self._declined.get(spec.id, [])
            options = ["next", "rerun", "back"] + (["apply"] if declined else [])
            question = f"{spec.title}: done." + (
                f" {len(declined)} fix(es) declined, still on offer." if declined else ""
            )
            answer = await self.operator.choose(spec.id, question, options)
            self.emit(OperatorAnswered(step=spec.id, question="step finished", answer=answer))
            if answer != "apply":
                if self.lifecycle.state is Phase.VERDICT:  # fixes were on offer: done now
                    self._fire("finish")
                return answer
            self._declined[spec.id] = []
            for verdict, plan in declined:
                await self._offer_and_apply(verdict, plan)
