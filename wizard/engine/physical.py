"""Physical actions: hands at the rack, asked for (or performed by the lab's hands) and watched.

An AC drain is seen done when the node comes back with a new boot_id and its journal shows it was
off long enough (wizard/boots.py); a re-cable or reseat when a port moved since the request and is
back at line rate (wizard/recable.py). Nothing is taken on the operator's word alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from wizard import boots, recable
from wizard.drain import CARRIER_PROBE
from wizard.engine.core import EngineCore
from wizard.events import (
    LinkTransitionSeen,
    NodeDrained,
    OperatorAnswered,
    PhysicalActionDone,
    PhysicalActionRequested,
    physical_question,
)
from wizard.model import PhysicalAction

BOOT_KINDS = ("ac_drain", "reboot", "firmware_update", "power_cycle")


class PhysicalMixin(EngineCore):
    async def _drain(self, nodes: dict[str, str]) -> bool:
        """Ask for (or perform) an AC drain of `nodes`; True when all came back drained."""
        names = tuple(sorted(nodes))
        action = PhysicalAction(
            kind="ac_drain",
            nodes=names,
            instructions=(
                f"AC-drain {', '.join(names)}: shut down, unplug the power cord, wait at least "
                "60 s, plug it back and power on. Reason: "
                + "; ".join(f"{n}: {c}" for n, c in sorted(nodes.items()))
                + ". The wizard waits for each node to come back with a new boot_id."
            ),
        )
        ok = await self._physical(action)
        return ok

    # -- physical actions ------------------------------------------------------------------------

    async def _boot_ids(self, nodes: Sequence[str]) -> dict[str, str]:
        async def one(node: str) -> tuple[str, str]:
            res = await self.fabric.run(node, "cat /proc/sys/kernel/random/boot_id", timeout=5.0)
            return node, res.stdout.strip() if res.ok else ""

        return dict(await asyncio.gather(*(one(n) for n in nodes)))

    async def _physical(self, action: PhysicalAction, undo: PhysicalAction | None = None) -> bool:
        self._fire("need_physical")
        self.emit(
            PhysicalActionRequested(
                step=self._step,
                kind=action.kind,
                nodes=action.nodes,
                instructions=action.instructions,
                cables=action.cables,
                undo=undo.cables if undo is not None else (),
            )
        )
        before = await self._boot_ids(action.nodes)
        # the ports as they are when asked: a re-cable shows as a change from this
        self._ports_before = (
            await self._ports(action.nodes) if action.kind in ("recable", "reseat") else {}
        )
        self._confirmed = set()
        while True:
            if self._step in self._skips:
                return False
            hands = self.fabric.hands
            answer = await self.operator.physical_action(action, hands is not None)
            self.emit(
                OperatorAnswered(
                    step=self._step, question=physical_question(action.kind), answer=answer
                )
            )
            if answer == "skip":
                self.note(
                    f"{action.kind} on {', '.join(action.nodes)} skipped by the operator", "warn"
                )
                return False
            by = "operator"
            if answer == "perform" and hands is not None:
                observed = await hands.perform(action)
                by = "lab"
                self.note(f"lab: {observed}")
            self._cancel_wait = False
            ok, observed = await self._watch(action, before)
            if not ok and self._cancel_wait:
                self._cancel_wait = False
                self.note(f"stopped waiting for {action.kind}: asking again", "warn")
                continue
            if ok:
                self.emit(
                    PhysicalActionDone(
                        step=self._step,
                        kind=action.kind,
                        nodes=action.nodes,
                        performed_by=by,
                        observed=observed,
                    )
                )
                return True
            await self.operator.error("Not done yet", observed, "do it, then answer again")

    async def _watch(self, action: PhysicalAction, before: dict[str, str]) -> tuple[bool, str]:
        if action.kind == "manual":  # nothing to watch: the re-check verifies it
            return True, f"changed by hand on {', '.join(action.nodes)}: re-checking"
        deadline = self.clock() + self.physical_timeout_s
        waiting = set(action.nodes) - self._confirmed
        seen: list[str] = []
        rebooted: list[str] = []  # booted again, but the journal shows no AC drain
        while waiting and self.clock() < deadline and not self._cancel_wait:
            now = await self._boot_ids(sorted(waiting))
            for node, boot in now.items():
                if action.kind in BOOT_KINDS:
                    if boot and boot != before.get(node):
                        waiting.discard(node)
                        await self._came_back(action, node, boot, before, seen, rebooted)
                    elif not boot:
                        self.note(f"waiting for {node} to come back")
                elif await self._carrier_up(node):  # recable / reseat: moved, carrier up
                    waiting.discard(node)
                    self._recabled(action, node, seen)
            if waiting and not self._cancel_wait:
                await self.sleep(self.poll_interval_s)
        if rebooted:
            return False, "; ".join(rebooted) + ". Do the AC drain: cord out for over a minute"
        if waiting:
            seen_now = "".join(
                f" ({n}: {self._recable_seen[n]})"
                for n in sorted(waiting)
                if n in self._recable_seen
            )
            return False, f"still waiting for {', '.join(sorted(waiting))}{seen_now}"
        return True, "; ".join(seen)

    async def _came_back(
        self,
        action: PhysicalAction,
        node: str,
        boot: str,
        before: dict[str, str],
        seen: list[str],
        rebooted: list[str],
    ) -> None:
        """`node` is back with a new boot_id: an AC drain counts when the journal shows the node
        was off long enough (a plain reboot goes to `rebooted`); any other boot action counts."""
        if action.kind != "ac_drain":
            seen.append(f"{node} back with a new boot_id")
            self.guard.link_down_counts.pop(node, None)
            return
        drained, why = await self._drained(node, boot)
        before[node] = boot  # the next try needs yet another boot
        if drained is False:
            rebooted.append(why)
            self.note(why, "warn")
            return
        if drained is None:
            why += "; taken as drained on the operator's word"
            self.note(why, "warn")
        seen.append(why)
        self._confirmed.add(node)
        self.guard.record_drain(node, self.clock(), boot)
        self.emit(NodeDrained(node=node, boot_id=boot, at=self.clock()))

    def _recabled(self, action: PhysicalAction, node: str, seen: list[str]) -> None:
        seen.append(f"{node}: {self._recable_seen.pop(node, 'carrier up')}")
        cause = f"{action.kind} (prompted)"
        self.guard.record_transition(node, self.clock(), cause)
        self.emit(LinkTransitionSeen(node=node, cause=cause, at=self.clock()))

    async def _drained(self, node: str, boot: str) -> tuple[bool | None, str]:
        """Was `node` off long enough for an AC drain before boot `boot`? (the journal says)"""
        res = await self.fabric.run(node, boots.COMMAND, timeout=10.0)
        min_off = float(getattr(self.thresholds, "ac_drain_min_off_s", 60.0))
        return boots.judge_drain(node, res.stdout, res.ok, boot, min_off)

    async def _ports(self, nodes: Sequence[str]) -> dict[str, dict[str, recable.Port]]:
        """Each node's fabric ports now (carrier, speed, down events); unreadable: left out."""

        async def one(node: str) -> tuple[str, dict[str, recable.Port] | None]:
            res = await self.fabric.run(node, CARRIER_PROBE.command, timeout=5.0)
            return node, recable.ports(res.stdout) if res.ok else None

        return {n: p for n, p in await asyncio.gather(*(one(n) for n in nodes)) if p is not None}

    async def _carrier_up(self, node: str) -> bool:
        """The node's part of a re-cable or reseat shows: a port moved since the request and is
        back at 200G (wizard.recable). Without a reading from the request, carrier up it is."""
        now = (await self._ports([node])).get(node)
        if now is None:
            return False
        before = self._ports_before.get(node)
        if before is None:
            up = [n for n, p in now.items() if p.carrier == 1 and p.speed >= recable.RATE_MBPS]
            self._recable_seen[node] = f"carrier up at 200000Mb/s on {', '.join(up)}"
            return bool(up)
        ok, why = recable.recabled(before, now)
        self._recable_seen[node] = why
        return ok

    async def _restore_cabling(self) -> None:
        """The session stopped during the direct-connect test: put the cables back first, with
        the moves recorded when the cables were taken off the switch."""
        assert self._resume is not None
        moves = self._resume.direct_undo
        if not moves:
            await self.operator.error(
                "Cabling to restore",
                "the session stopped during the direct-connect test: two nodes may still be "
                "cabled port to port",
                "put their port 0 cables back on the switch ports they came from, then go on",
            )
            return
        nodes = tuple(dict.fromkeys(m[0] for m in moves))
        where = "; ".join(f"{n} {p} -> {d}" for n, p, d in moves)
        self.note("the session stopped mid direct-connect test: restoring the switch cabling")
        await self._physical(
            PhysicalAction(
                kind="recable",
                nodes=nodes,
                cables=moves,
                instructions=(
                    "The session stopped during the direct-connect test. Put the cabling back "
                    f"as it was: {where}. The wizard waits for carrier at 200000Mb/s."
                ),
            )
        )
