"""Physical actions in the lab: what a technician's hands do at the rack.

Re-cable a node port (to a switch sub-port, to another node directly, or nowhere), reseat a
cable, AC-drain a node (power off, unplug, wait: clears the CX7 degraded state, new boot_id),
reboot (new boot_id, does NOT clear the degraded state; activates staged firmware, which is
what clears a throttled CX7), power off/on, install firmware, reboot a switch. Every link
transition shows in the carrier counters (`link_down_events_phy`) and in dmesg, and re-arms the
degraded state of a CX7 the scenario marked susceptible (`host.cx7-degraded`).
"""

from __future__ import annotations

from collections.abc import Callable

from wizard.errors import FabwizError
from wizard.lab.boots import DRAIN_OFF_S, REBOOT_OFF_S
from wizard.lab.world import GOOD_FIRMWARE, End, World
from wizard.model import PhysicalAction

ACTIONS = (
    "recable",
    "unplug",
    "reseat",
    "ac_drain",
    "reboot",
    "power_off",
    "power_on",
    "firmware_update",
    "reboot_switch",
)


def _port(node_port: str | int) -> str:
    text = str(node_port)
    if text in ("0", "1"):
        return f"port{text}"
    if text in ("port0", "port1"):
        return text
    # a netdev or rdma name: the port is the PCI function (f0/f1)
    if "f0" in text:
        return "port0"
    if "f1" in text:
        return "port1"
    raise FabwizError(f"not a node port: {node_port!r}", hint="use 0, 1, port0, port1 or a netdev")


class Hands:
    """The lab's hands. Every method returns one line saying what was done."""

    def __init__(self, world: World) -> None:
        self.world = world
        # told when a node loses or regains power (the lab drops its SSH sessions)
        self.power_listeners: list[Callable[[str, bool], None]] = []
        self.history: list[str] = []

    def _node(self, name: str) -> str:
        if name not in self.world.nodes:
            raise FabwizError(f"no node named {name!r}", hint=", ".join(self.world.nodes))
        return name

    def _done(self, text: str) -> str:
        self.history.append(text)
        self.world.changed("hands")
        return text

    def recable(self, node: str, port: str | int, to: str) -> str:
        """Move the cable of `node`'s `port` to `to`: "switch:NAME:PORT", "node:NAME:PORT"
        (or "NAME:PORT"), or "unplugged"."""
        self._node(node)
        me = End("node", node, _port(port))
        if to in ("unplugged", "none", ""):
            self.world.unplug(me)
            return self._done(f"unplugged {me.label}")
        parts = to.split(":")
        if parts[0] in ("switch", "node"):
            parts = parts[1:]
        if len(parts) != 2:
            raise FabwizError(f"bad destination {to!r}", hint="switch:NAME:PORT or node:NAME:PORT")
        name, dport = parts
        if name in self.world.switches:
            if dport not in self.world.switches[name].fabric_ports():
                raise FabwizError(f"{name} has no fabric port {dport!r}")
            other = End("switch", name, dport)
        else:
            self._node(name)
            other = End("node", name, _port(dport))
        self.world.plug(me, other)
        return self._done(f"cabled {me.label} -> {other.label}")

    def unplug(self, node: str, port: str | int) -> str:
        return self.recable(node, port, "unplugged")

    def reseat(self, node: str, port: str | int) -> str:
        self._node(node)
        me = End("node", node, _port(port))
        if self.world.cable_at(me) is None:
            raise FabwizError(f"no cable on {me.label}")
        self.world.reseat(me)
        return self._done(f"reseated the cable of {me.label}")

    def _power(self, node: str, on: bool) -> None:
        for f in list(self.power_listeners):
            f(node, on)

    def power_off(self, node: str) -> str:
        n = self.world.nodes[self._node(node)]
        self._power(node, False)
        self.world.power_off(n)
        return self._done(f"{node} powered off")

    def power_on(self, node: str) -> str:
        n = self.world.nodes[self._node(node)]
        if n.powered:
            return self._done(f"{node} already on")
        self.world.boot(n)
        self._power(node, True)
        return self._done(f"{node} powered on (boot_id {n.boot_id})")

    def reboot(self, node: str) -> str:
        n = self.world.nodes[self._node(node)]
        self._power(node, False)
        self.world.power_off(n)
        n.off_s = REBOOT_OFF_S
        # a warm reboot neither clears the degraded state nor arms it: the links come up with
        # the cables attached, as at boot (FAULTS.md: survives reboots, only an AC drain clears)
        self.world.boot(n)
        self._power(node, True)
        return self._done(f"{node} rebooted (boot_id {n.boot_id})")

    def ac_drain(self, node: str) -> str:
        """Power off, unplug AC for >= 60 s, power on: the only cure for a degraded CX7."""
        n = self.world.nodes[self._node(node)]
        self._power(node, False)
        self.world.power_off(n)
        n.off_s = DRAIN_OFF_S  # the cord stays out for over a minute
        n.degraded = False
        self.world.boot(n)
        self._power(node, True)
        return self._done(f"{node} AC-drained (boot_id {n.boot_id})")

    def firmware_update(self, node: str, version: str = GOOD_FIRMWARE) -> str:
        n = self.world.nodes[self._node(node)]
        n.staged_firmware = version
        return self._done(f"{node}: firmware {version} installed, active after reboot")

    def reboot_switch(self, switch: str) -> str:
        if switch not in self.world.switches:
            raise FabwizError(f"no switch named {switch!r}", hint=", ".join(self.world.switches))
        self.world.switches[switch].reboot()
        self.world.learn_macs()
        return self._done(f"{switch} rebooted")

    async def perform(self, action: PhysicalAction) -> str:
        """Carry out a `PhysicalAction` the wizard asked a technician for (engine's port)."""
        return "; ".join(self.perform_now(action))

    def perform_now(self, action: PhysicalAction) -> list[str]:
        """Carry out a `PhysicalAction`, one line per thing done."""
        done: list[str] = []
        if action.kind == "recable":
            for node, port, dest in action.cables:
                done.append(self.recable(node, port, dest))
        elif action.kind == "reseat":
            for node, port, _dest in action.cables:
                done.append(self.reseat(node, port))
            if not action.cables:
                for node in action.nodes:
                    for p in (0, 1):
                        if self.world.cable_at(End("node", node, f"port{p}")) is not None:
                            done.append(self.reseat(node, p))
        elif action.kind == "ac_drain":
            done += [self.ac_drain(n) for n in action.nodes]
        elif action.kind == "reboot":
            done += [self.reboot(n) for n in action.nodes]
        elif action.kind == "power_cycle":
            for n in action.nodes:
                done += [self.power_off(n), self.power_on(n)]
        elif action.kind == "firmware_update":
            for n in action.nodes:
                done += [self.firmware_update(n), self.reboot(n)]
        return done
