"""Fault hooks: transport trouble on demand, for the reliability tests and for training.

A technician runs fabwiz on a broken fabric: SSH sessions drop mid-command, a node reboots or is
AC-drained while it is probed, the switch reboots mid-session (its `.id`s change), a command never
answers or answers slowly, the RouterOS API session drops right after the `/export` or in the
middle of a fix. The lab's servers call one hook each (`NodeServer.fault_hook` before running an
exec request, `RouterOsServer.fault_hook` before and after answering a command); `FaultHooks`
installs them and decides, per command, whether a fault fires. Every fired fault is recorded in
`FaultHooks.fired` so tests and `bench/reliability.py` can say what happened.

    hooks = FaultHooks(lab)
    hooks.ssh("spark2", "drop", match=r"ibdev2netdev")          # the batch that discovers rails
    hooks.ssh("spark1", "partial", match=r"ib_write_bw .* \\d+\\.\\d+")  # client, mid-output
    hooks.api("crs804", "drop-after", match=r"/system/scheduler/add")    # armed, reply lost
    hooks.reboot_switch("crs804")                                # ids change, sessions drop
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from wizard.lab.boots import DRAIN_OFF_S

if TYPE_CHECKING:
    from wizard.lab.lab import Lab

SshKind = Literal["drop", "partial", "hang", "slow", "reboot", "ac_drain", "power_off"]
ApiKind = Literal["drop-before", "drop-after", "drop-after-reply", "hang", "slow", "reboot"]


@dataclass(slots=True)
class Fault:
    """One armed fault: fires on the `after`+1-th command matching `match`, `times` times."""

    target: str
    kind: str
    match: str | None = None  # a regex searched in the command (None: every command)
    after: int = 0  # let this many matching commands through first
    times: int = 1  # how many times it fires (0: every time)
    delay_s: float = 0.0  # slow: wall seconds added before answering
    away_s: float = 0.3  # reboot/ac_drain: wall seconds the node stays off
    seen: int = 0
    fired: int = 0

    def hit(self, command: str) -> bool:
        if self.match is not None and re.search(self.match, command) is None:
            return False
        self.seen += 1
        if self.seen <= self.after:
            return False
        if self.times and self.fired >= self.times:
            return False
        self.fired += 1
        return True


@dataclass
class FaultHooks:
    """Installs the fault hooks on a running lab's servers and records what fired."""

    lab: Lab
    faults: list[Fault] = field(default_factory=list)
    fired: list[tuple[str, str, str]] = field(default_factory=list)  # (target, kind, command)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    # --- arming ---------------------------------------------------------------------------

    def ssh(self, node: str, kind: SshKind, **options: Any) -> Fault:
        """Arm an SSH fault on `node`. Kinds:

        drop     the connection is cut before the command runs (no answer at all)
        partial  the command runs, half its output is sent, then the connection is cut
        hang     the command never answers (until the client gives up and closes)
        slow     the command answers after `delay_s` more wall seconds
        reboot / ac_drain / power_off
                 the node goes down as the command arrives (connection cut, new connections
                 refused) and comes back after `away_s` wall seconds (power_off: stays off)
        """
        server = self.lab.ssh[node]
        fault = Fault(node, kind, **options)
        self.faults.append(fault)
        server.fault_hook = self._ssh_hook
        return fault

    def api(self, switch: str, kind: ApiKind, **options: Any) -> Fault:
        """Arm a RouterOS API fault on `switch`; `match` is searched in `/path/verb attrs`.

        drop-before       the session is cut when the command arrives (nothing runs)
        drop-after        the command runs, then the session is cut before the reply
        drop-after-reply  the command runs and is answered, then the session is cut
        hang              the command is never answered (until the client closes)
        slow              the reply comes `delay_s` wall seconds late
        reboot            the command runs, then the switch reboots (new ids, sessions cut)
        """
        server = self.lab.api[switch]
        fault = Fault(switch, kind, **options)
        self.faults.append(fault)
        server.fault_hook = self._api_hook
        return fault

    def clear(self) -> None:
        self.faults.clear()

    def count(self, kind: str | None = None) -> int:
        return sum(1 for _t, k, _c in self.fired if kind is None or k == kind)

    # --- direct actions ---------------------------------------------------------------------

    def reboot_switch(self, switch: str) -> None:
        """The switch reboots now: fresh `*HEX` ids, links bounce, API sessions cut."""
        self.lab.hands.reboot_switch(switch)
        api = self.lab.api.get(switch)
        if api is not None:
            self._spawn(api.drop_sessions())
        self.fired.append((switch, "reboot-switch", ""))

    def node_down(self, node: str, kind: str = "reboot", away_s: float = 0.3) -> None:
        """Take `node` down now (reboot, ac_drain or power_off) and bring it back later."""
        hands = self.lab.hands
        n = self.lab.world.nodes[node]
        hands.power_off(node)
        self.fired.append((node, kind, ""))
        if kind == "power_off":
            return

        async def back() -> None:
            await asyncio.sleep(away_s)
            if kind == "ac_drain":
                n.degraded = False
                n.off_s = DRAIN_OFF_S
            elif n.susceptible:
                n.degraded = True  # a reboot bounces the links: re-arms a susceptible CX7
            hands.power_on(node)

        self._spawn(back())

    async def stop(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        for t in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await t

    # --- the hooks the servers call ---------------------------------------------------------

    def _first(self, target: str, command: str, kinds: tuple[str, ...]) -> Fault | None:
        for fault in self.faults:
            if fault.target == target and fault.kind in kinds and fault.hit(command):
                return fault
        return None

    async def _ssh_hook(self, server: Any, process: Any, command: str) -> bool:
        """Called by the node's SSH server before it runs `command`; True when handled."""
        node = server.host.node.name
        fault = self._first(
            node, command, ("drop", "partial", "hang", "slow", "reboot", "ac_drain", "power_off")
        )
        if fault is None:
            return False
        self.fired.append((node, fault.kind, command))
        conn = process.channel.get_connection()
        if fault.kind == "drop":
            conn.abort()
            return True
        if fault.kind == "slow":
            await asyncio.sleep(fault.delay_s)
            return False
        if fault.kind == "hang":
            await process.channel.wait_closed()
            return True
        if fault.kind == "partial":
            out: list[str] = []
            await server.host.run(command, out.append, out.append)
            text = "".join(out)
            process.stdout.write(text[: len(text) // 2])
            await asyncio.sleep(0.02)  # let the half reach the client
            conn.abort()
            return True
        self.node_down(node, fault.kind, fault.away_s)
        return True

    async def _api_hook(self, phase: str, session: Any, cmd: str, attrs: dict[str, str]) -> bool:
        """Called by the API server before ("before") and after ("after") it runs `cmd`, and
        after it answered ("replied"); True when the session was cut (stop serving it)."""
        switch = session.server.switch.name
        text = cmd + "".join(f" {k}={v}" for k, v in sorted(attrs.items()))
        kinds = {
            "before": ("drop-before", "hang", "slow"),
            "after": ("drop-after",),
            "replied": ("drop-after-reply", "reboot"),
        }[phase]
        fault = self._first(switch, text, kinds)
        if fault is None:
            return False
        self.fired.append((switch, fault.kind, text))
        if fault.kind == "slow":
            await asyncio.sleep(fault.delay_s)
            return False
        if fault.kind == "hang":
            with contextlib.suppress(ConnectionError):
                await session.reader.read()  # swallow whatever comes until the client closes
            return True
        if fault.kind == "reboot":
            self.lab.hands.reboot_switch(switch)
            await session.server.drop_sessions()
            return True
        session.writer.transport.abort()
        return True

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
