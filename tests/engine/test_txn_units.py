"""The fix transaction (wizard.engine.txn) against one lab switch and one lab host.

One RouterOS API server (crs804 of the `fault-switch-mtu` world, a fabric port below jumbo MTU)
and one SSH server (spark1) on 127.0.0.1, reached through the real transports: no scenario walk.
Each test offers one plan and reads back what the targets hold afterwards.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import asyncssh
import pytest

from wizard import fixes
from wizard.drain import DrainGuard
from wizard.engine.machine import Phase, StepLifecycle
from wizard.engine.txn import ArmedHost, ArmedSwitch, FixTransaction, landed
from wizard.errors import FixRefused, LifecycleError
from wizard.events import (
    Event,
    ExportTaken,
    FixApplied,
    FixPreviewed,
    FixRefusedEvent,
    FixRolledBack,
    FixVerified,
    RollbackArmed,
    RollbackDisarmed,
)
from wizard.fabric import ApiPort
from wizard.fixes import ExportStatus
from wizard.lab import scenarios
from wizard.lab.hostcmds import Host
from wizard.lab.perftest import Registry
from wizard.lab.routeros.server import RouterOsServer
from wizard.lab.sshd import NodeServer
from wizard.model import (
    ApiCommand,
    FixPlan,
    FixState,
    HostChange,
    HostFile,
    Measurement,
    PhysicalAction,
    ProbeResult,
    SwitchChange,
)
from wizard.probes import Observations, Probe
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport
from wizard.transports.ssh import SshTarget, SshTransport

pytestmark = pytest.mark.lab

SWITCH, NODE = "crs804", "spark1"
SYSCTL = "/etc/sysctl.d/90-fabwiz-arp.conf"
SYSCTL_TEXT = "net.ipv4.conf.all.arp_ignore = 1\nnet.ipv4.conf.all.arp_announce = 2\n"
JUMBO = ("9216", "9000")  # l2mtu, mtu


class OneSwitchOneHost:
    """The fabric as the transaction uses it: one switch's API, one node's shell, and the
    switch's management port as the inventory would give it."""

    def __init__(self, api: ApiPort, ssh: SshTransport, mgmt: tuple[str, ...]) -> None:
        self._api = api
        self._ssh = ssh
        self.mgmt = mgmt
        self.nodes = (NODE,)
        self.switches = (SWITCH,)
        self.hands = None

    def api(self, switch: str) -> ApiPort:
        assert switch == SWITCH
        return self._api

    async def run(
        self, node: str, command: str, *, stdin: str | None = None, timeout: float = 30.0
    ) -> ProbeResult:
        return await self._ssh.run(node, command, stdin=stdin, timeout=timeout)

    def management_ports(self, switch: str) -> tuple[str, ...]:
        return self.mgmt

    # the walk's side of the fabric: the transaction never sweeps, measures or re-cables
    def set_step(self, step: str) -> None:
        raise AssertionError("not the transaction's")

    async def sweep(self, probes: Sequence[Probe]) -> Observations:
        raise AssertionError("not the transaction's")

    async def measure(self, kind: str) -> list[Measurement]:
        raise AssertionError("not the transaction's")

    def direct_connect_action(
        self, pair: tuple[str, str] | None = None, port: int = 0
    ) -> tuple[PhysicalAction, PhysicalAction] | None:
        raise AssertionError("not the transaction's")


@dataclass
class YesOperator:
    confirmed: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)

    async def confirm_fix(self, plan: FixPlan, export: ExportStatus | None) -> bool:
        self.confirmed.append(plan.fault)
        return True

    async def error(self, title: str, message: str, hint: str | None) -> None:
        self.errors.append((title, message))

    async def physical_action(self, action: PhysicalAction, can_perform_in_lab: bool) -> str:
        raise AssertionError("a change is no physical action")

    async def choose(self, step: str, question: str, options: list[str]) -> str:
        raise AssertionError("the transaction asks nothing but its confirmation")


@dataclass
class Rig:
    """A `TxnSession`: what the transaction reads of the walk running it."""

    fabric: OneSwitchOneHost
    operator: YesOperator
    verify_with: Callable[[FixPlan], Awaitable[tuple[bool, str]]]
    events: list[Event] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    guard: DrainGuard = field(default_factory=DrainGuard)
    thresholds: Any = None
    session_id: str = "unit"
    step: str = "addressing"
    rollback_window_s: float = 300.0
    disarm_budget_s: float = 5.0
    target_clock_rate: float = 1.0
    poll_interval_s: float = 0.05
    settle_timeout_s: float = 5.0
    break_stale_locks: bool = False
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
    lifecycle: StepLifecycle = field(default_factory=StepLifecycle)

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def note(self, text: str, level: str = "info") -> None:
        self.notes.append((level, text))

    def fire(self, trigger: str) -> None:
        if not self.lifecycle.can(trigger):
            raise LifecycleError(self.step, self.lifecycle.state.value, trigger)
        self.lifecycle.fire(trigger)

    def can_fire(self, trigger: str) -> bool:
        return self.lifecycle.can(trigger)

    async def verify(self, plan: FixPlan) -> tuple[bool, str]:
        return await self.verify_with(plan)

    def of(self, kind: type[Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


@dataclass
class Lab1:
    """One lab switch and one lab host, served on 127.0.0.1."""

    server: RouterOsServer
    node: NodeServer
    api: ApiPort
    ssh: SshTransport
    port: str  # the fabric port the world left below jumbo MTU

    def rig(
        self,
        verify: Callable[[FixPlan], Awaitable[tuple[bool, str]]],
        mgmt: tuple[str, ...] = ("ether1",),
    ) -> Rig:
        rig = Rig(OneSwitchOneHost(self.api, self.ssh, mgmt), YesOperator(), verify)
        rig.fire("probe")
        rig.fire("judged")  # a verdict is in: its fix may be offered
        return rig

    async def port_mtu(self) -> tuple[str, str]:
        rows = await self.api.call("/interface/ethernet", "print")
        row = next(r for r in rows if r.get("name") == self.port)
        return row.get("l2mtu", ""), row.get("mtu", "")

    async def rollback_entries(self) -> list[str]:
        rows = await self.api.call("/system/scheduler", "print")
        return [r.get("name", "") for r in rows if r.get("name", "").startswith("fabwiz-rb-")]

    async def cat(self, path: str) -> ProbeResult:
        return await self.ssh.run(NODE, f"sudo -n cat {path}")


@pytest.fixture
async def lab1(tmp_path: Path) -> AsyncIterator[Lab1]:
    world = scenarios.build_world(scenarios.load("fault-switch-mtu"))
    switch = world.switches[SWITCH]
    server = RouterOsServer(switch, users={"fabwiz": "pw"}, tick_interval=None)  # type: ignore[arg-type]
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    key_path = tmp_path / "id_ed25519"
    client_key.write_private_key(str(key_path))
    node = NodeServer(
        Host(world, world.nodes[NODE], Registry(), "fabwiz"),
        host_key=host_key,
        client_public_key=client_key.export_public_key().decode(),
        user="fabwiz",
        password="pw",
    )
    api_port = await server.start()
    ssh_port = await node.start()
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{ssh_port} {host_key.export_public_key().decode()}")
    transport = RouterOsTransport(
        RouterOsTarget(SWITCH, "127.0.0.1", "fabwiz", "pw", port=api_port)
    )
    api = ApiPort(transport)
    target = SshTarget(NODE, "127.0.0.1", ssh_port, "fabwiz", str(key_path), str(known))
    ssh = SshTransport([target], ssh_config=None)
    rows = await api.call("/interface/ethernet", "print")
    low = [
        r["name"] for r in rows if r.get("name", "").startswith("qsfp") and r.get("mtu") != "9000"
    ]
    assert low, "the fault-switch-mtu world leaves a fabric port below jumbo MTU"
    try:
        yield Lab1(server, node, api, ssh, low[0])
    finally:
        await transport.close()
        await ssh.close()
        await node.stop()
        await server.stop()


def _set_mtu(port: str, l2mtu: str, mtu: str) -> ApiCommand:
    return ApiCommand(
        "/interface/ethernet", "set", (("l2mtu", l2mtu), ("mtu", mtu)), ("name", port)
    )


async def _plan(lab: Lab1, *, cut: bool = False) -> FixPlan:
    """Jumbo MTU on the low port (its rollback: the values it has now) and the ARP sysctls on
    the node. `cut`: the switch change sets only l2mtu, so the port stays below jumbo MTU."""
    l2mtu, mtu = await lab.port_mtu()
    up = _set_mtu(lab.port, JUMBO[0], mtu if cut else JUMBO[1])
    back = _set_mtu(lab.port, l2mtu, mtu)
    return FixPlan(
        fault="switch.mtu",
        target=f"{SWITCH},{NODE}",
        summary="jumbo MTU on the fabric port; ARP sysctls on the node",
        preview=fixes.to_cli(up),
        switch_changes=(SwitchChange(SWITCH, (up,), (back,)),),
        host_changes=(
            HostChange(
                node=NODE,
                files=(HostFile(NODE, SYSCTL, SYSCTL_TEXT),),
                commands=("sudo -n sysctl --system",),
                rollback_commands=("sudo -n sysctl --system",),
            ),
        ),
    )


def _reads(lab: Lab1) -> Callable[[FixPlan], Awaitable[tuple[bool, str]]]:
    """The verification: what the switch port and the node's file hold now."""

    async def verify(plan: FixPlan) -> tuple[bool, str]:
        now = await lab.port_mtu()
        held = await lab.cat(SYSCTL)
        if now != JUMBO:
            return False, f"{lab.port}: l2mtu={now[0]} mtu={now[1]}"
        if held.stdout != SYSCTL_TEXT:
            return False, f"{SYSCTL} on {NODE} does not hold the fix"
        return True, "jumbo MTU and ARP sysctls in place"

    return verify


async def test_a_verified_fix_is_kept_and_its_rollbacks_are_disarmed(lab1: Lab1) -> None:
    rig = lab1.rig(_reads(lab1))
    outcome = await FixTransaction(rig).offer("addressing:switch.mtu:crs804", await _plan(lab1))
    assert outcome.ok and outcome.kept and not outcome.declined
    assert outcome.record.final_state == "verified" and outcome.record.export is not None
    assert rig.operator.confirmed == ["switch.mtu"] and not rig.operator.errors
    pre = rig.of(ExportTaken)
    assert [e.purpose for e in pre] == ["pre-fix"] and pre[0].switch == SWITCH
    armed = rig.of(RollbackArmed)
    assert [(a.target, a.name) for a in armed] == [
        (SWITCH, "fabwiz-rb-unit-1"),
        (NODE, "fabwiz-revert-unit-1"),
    ]
    assert rig.of(FixApplied)[0].rollback_armed == "fabwiz-rb-unit-1"
    assert [v.ok for v in rig.of(FixVerified)] == [True]
    assert sorted(d.target for d in rig.of(RollbackDisarmed)) == [SWITCH, NODE]
    # the targets hold the fix, and nothing is left to undo it
    assert await lab1.port_mtu() == JUMBO
    assert (await lab1.cat(SYSCTL)).stdout == SYSCTL_TEXT
    assert await lab1.rollback_entries() == []
    timer = await lab1.ssh.run(NODE, "systemctl is-active fabwiz-revert-unit-1.timer")
    assert timer.stdout.strip() != "active"
    assert rig.lifecycle.state is Phase.VERDICT


async def test_a_failed_verification_rolls_both_targets_back(lab1: Lab1) -> None:
    older = "net.ipv4.conf.all.arp_ignore = 0\n"  # the node's own file, which the fix replaces
    await lab1.ssh.run(NODE, f"sudo -n tee {SYSCTL} >/dev/null", stdin=older)
    before_mtu = await lab1.port_mtu()
    before_file = await lab1.cat(SYSCTL)
    assert before_file.stdout == older
    rig = lab1.rig(_reads(lab1))
    outcome = await FixTransaction(rig).offer(
        "addressing:switch.mtu:crs804", await _plan(lab1, cut=True)
    )
    assert not outcome.ok and not outcome.kept
    assert outcome.record.applied and outcome.record.rolled_back
    assert outcome.record.final_state is FixState.ROLLED_BACK
    verified = rig.of(FixVerified)
    assert [v.ok for v in verified] == [False] and lab1.port in verified[0].detail
    rolled = rig.of(FixRolledBack)
    assert len(rolled) == 1 and rolled[0].restored is True
    assert rolled[0].reason.startswith("verification failed")
    # the switch equals its pre-fix export again; the node's file is as it was
    pre = rig.of(ExportTaken)[0]
    after = await fixes.take_export(lab1.api, SWITCH, "unit-after")
    assert after.verified and fixes.same_config(pre.contents, after.contents)
    assert await lab1.port_mtu() == before_mtu
    assert (await lab1.cat(SYSCTL)).stdout == before_file.stdout
    assert await lab1.rollback_entries() == []
    assert rig.lifecycle.state is Phase.VERDICT


async def _drop(cmd_prefix: str, server: RouterOsServer, *, times: int = 0) -> list[str]:
    """Cut the API session whenever (or the first `times` times) a command starting with
    `cmd_prefix` arrives (nothing of it runs), as a switch that stops answering mid-fix does.
    Returns the commands it cut."""
    cut: list[str] = []

    async def hook(phase: str, session: Any, cmd: str, attrs: dict[str, str]) -> bool:
        if phase != "before" or not cmd.startswith(cmd_prefix) or 0 < times <= len(cut):
            return False
        cut.append(cmd)
        session.writer.transport.abort()
        return True

    server.fault_hook = hook
    return cut


async def _nothing_sent(lab: Lab1, rig: Rig, before: tuple[str, str], file: ProbeResult) -> None:
    assert not rig.of(RollbackArmed) and not rig.of(FixApplied)
    assert await lab.port_mtu() == before
    assert (await lab.cat(SYSCTL)).stdout == file.stdout
    assert await lab.rollback_entries() == []
    assert rig.lifecycle.state is Phase.VERDICT


async def test_an_export_that_fails_refuses_the_fix_before_any_change(lab1: Lab1) -> None:
    before, file = await lab1.port_mtu(), await lab1.cat(SYSCTL)
    rig = lab1.rig(_reads(lab1))
    plan = await _plan(lab1)
    cut = await _drop("/export", lab1.server)
    outcome = await FixTransaction(rig).offer("addressing:switch.mtu:crs804", plan)
    assert cut, "the export was asked for and cut"
    lab1.server.fault_hook = None
    assert not outcome.ok and outcome.record.final_state == "refused"
    assert outcome.record.refused is not None
    assert outcome.record.refused.startswith("no verified export")
    refused = rig.of(FixRefusedEvent)
    assert len(refused) == 1 and refused[0].reason == outcome.record.refused
    assert rig.operator.confirmed == []  # never asked: there is nothing to roll back to
    await _nothing_sent(lab1, rig, before, file)


async def test_an_unknown_management_port_refuses_the_fix(lab1: Lab1) -> None:
    before, file = await lab1.port_mtu(), await lab1.cat(SYSCTL)
    rig = lab1.rig(_reads(lab1), mgmt=())
    outcome = await FixTransaction(rig).offer("addressing:switch.mtu:crs804", await _plan(lab1))
    why = outcome.record.refused or ""
    assert "cannot tell which port of crs804 carries its own RouterOS API session" in why
    assert "by hand from the switch's console" in why  # the manual alternative
    assert [e.reason for e in rig.of(FixRefusedEvent)] == [why]
    assert [e.fault for e in rig.of(FixPreviewed)] == ["switch.mtu"]  # the operator saw it
    assert not rig.of(ExportTaken) and rig.operator.confirmed == []
    await _nothing_sent(lab1, rig, before, file)


async def test_unreadable_bridge_ports_refuse_the_fix(lab1: Lab1) -> None:
    """The guard fails closed: the bridge ports cannot be read, so fabwiz cannot tell whether
    the change cuts its own session; nothing is exported or sent."""
    before, file = await lab1.port_mtu(), await lab1.cat(SYSCTL)
    rig = lab1.rig(_reads(lab1))
    plan = await _plan(lab1)
    cut = await _drop("/interface/bridge/port/print", lab1.server)
    outcome = await FixTransaction(rig).offer("addressing:switch.mtu:crs804", plan)
    lab1.server.fault_hook = None
    assert cut
    why = outcome.record.refused or ""
    assert why.startswith("the bridge ports of crs804 could not be read")
    assert "by hand" in why
    assert not rig.of(ExportTaken)
    await _nothing_sent(lab1, rig, before, file)


async def test_a_change_cutting_the_api_session_is_refused(lab1: Lab1) -> None:
    before, file = await lab1.port_mtu(), await lab1.cat(SYSCTL)
    rig = lab1.rig(_reads(lab1), mgmt=(lab1.port,))  # the session arrives on the port changed
    plan = await _plan(lab1)
    off = ApiCommand("/interface/ethernet", "disable", (), ("name", lab1.port))
    plan = replace(plan, switch_changes=(SwitchChange(SWITCH, (off,), ()),))
    outcome = await FixTransaction(rig).offer("addressing:switch.mtu:crs804", plan)
    why = outcome.record.refused or ""
    assert f"would disable {lab1.port}" in why and "API session" in why and "by hand" in why
    await _nothing_sent(lab1, rig, before, file)


async def test_a_session_lost_mid_change_is_recovered_on_reconnect(lab1: Lab1) -> None:
    """The API session drops as the change is sent, after its rollback was armed: on reconnect
    the rollback runs now and the switch is compared with its pre-fix export."""
    before = await lab1.port_mtu()
    rig = lab1.rig(_reads(lab1))
    plan = await _plan(lab1)
    plan = replace(plan, host_changes=())
    cut = await _drop("/interface/ethernet/set", lab1.server, times=1)
    outcome = await FixTransaction(rig).offer("addressing:switch.mtu:crs804", plan)
    assert cut == ["/interface/ethernet/set"]
    assert outcome.record.applied and outcome.record.rolled_back and not outcome.ok
    assert [a.name for a in rig.of(RollbackArmed)] == ["fabwiz-rb-unit-1"]
    assert not rig.of(FixApplied) and not rig.of(FixVerified)
    (rolled,) = rig.of(FixRolledBack)
    assert "the dead-man rollback armed before it restores" in rolled.reason
    assert (
        "on reconnect, rollback fabwiz-rb-unit-1 ran now and crs804's configuration equals "
        "the pre-fix export" in rolled.reason
    )
    assert rig.operator.errors and rig.operator.errors[0][0] == "Fix stopped"
    assert await lab1.port_mtu() == before
    assert await lab1.rollback_entries() == []
    assert rig.lifecycle.state is Phase.VERDICT


def test_what_a_stopped_change_may_have_left_is_typed() -> None:
    switch = ArmedSwitch(SwitchChange(SWITCH, (), ()), "fabwiz-rb-unit-1")
    host = ArmedHost(HostChange(NODE), "fabwiz-revert-unit-1")
    assert (switch.target, host.target) == (SWITCH, NODE)
    # a step that says whether it reached the target is believed
    assert landed(FixRefused("write failed", changed=True), []) is True
    assert landed(FixRefused("backup failed", changed=False), [host]) is False
    # a switch's rollback is armed before its commands: they may have landed
    assert landed(FixRefused("apply failed", changed=False), [switch]) is True
    # a lost session: landed once anything was armed, not before
    assert landed(ConnectionResetError("lost"), [host]) is True
    assert landed(ConnectionResetError("lost"), []) is False


async def test_a_rollback_removes_a_file_the_fix_created(lab1: Lab1) -> None:
    assert (await lab1.cat(SYSCTL)).exit_status != 0  # the node has no such file
    rig = lab1.rig(_reads(lab1))
    outcome = await FixTransaction(rig).offer(
        "addressing:switch.mtu:crs804", await _plan(lab1, cut=True)
    )
    assert outcome.record.rolled_back
    assert (await lab1.cat(SYSCTL)).exit_status != 0
