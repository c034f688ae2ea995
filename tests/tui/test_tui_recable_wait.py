""" "Done" pressed before the cable is moved: the real engine's watch (wizard.engine, one fake
node, no scenario walk) does not take carrier that was up all along as the re-cable; the modal
waits live until the move shows, then closes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from flows.expectations import DEFAULT
from screens.app import FabwizApp
from screens.modals import PhysicalActionModal
from wizard.engine import Engine
from wizard.events import Event, PhysicalActionDone
from wizard.model import PhysicalAction, ProbeResult

SIZE = (120, 40)
NETDEVS = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")
ACTION = PhysicalAction(
    kind="recable",
    nodes=("spark1",),
    instructions="Direct-connect test: connect spark1 port0 to spark2 port0",
    cables=(("spark1", "port0", "node:spark2:port0"),),
)


@dataclass
class Node:
    """spark1 cabled to the switch, carrier up on every port; `moved` is the technician."""

    moved: bool = False
    hands = None

    async def run(self, node: str, command: str, timeout: float = 0.0) -> ProbeResult:
        lines = []
        for n in NETDEVS:
            downs = 1 if self.moved and n.endswith("f0np0") else 0
            lines += [
                f"/sys/class/net/{n}/carrier:1",
                f"/sys/class/net/{n}/speed:200000",
                f"/sys/class/net/{n}/carrier_down_count:{downs}",
            ]
        lines.append("6a1f0c2e-0000-4000-8000-000000000001")
        stdout = "\n".join(lines) + "\n"
        return ProbeResult(target=node, kind="ssh", command=command, stdout=stdout, exit_status=0)


class OneRecable:
    def __init__(self, ports: Any, node: Node) -> None:
        self.done: bool | None = None
        self.events: list[Event] = []

        def emit(event: Event) -> None:
            self.events.append(event)
            ports.emit(event)

        self.engine = Engine(
            fabric=node,  # type: ignore[arg-type]
            operator=ports,
            emit=emit,
            flow=[],
            checks=[],
            make_context=lambda obs, guard: None,
            thresholds=DEFAULT,
            poll_interval_s=0.02,
            physical_timeout_s=600.0,
        )

    async def run(self) -> str:
        self.done = await self.engine._physical(ACTION)
        await asyncio.Event().wait()  # stays open: the test quits
        return "stopped"

    def request(self, intent: str, step: str | None = None) -> None:
        self.engine.request(intent, step)


async def test_done_before_the_move_waits_live_and_the_move_closes_it() -> None:
    node = Node()
    holder: dict[str, OneRecable] = {}

    async def make(ports: Any, stack: Any) -> OneRecable:
        holder["e"] = OneRecable(ports, node)
        return holder["e"]

    app = FabwizApp(make)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(250):
            if isinstance(app.screen, PhysicalActionModal) and app.screen.state == "ask":
                break
            await pilot.pause(0.02)
        modal = app.screen
        assert isinstance(modal, PhysicalActionModal) and modal.action.kind == "recable"
        await pilot.press("d")  # "Done", but nothing was moved: carrier is up all along
        for _ in range(50):
            await pilot.pause(0.02)
        assert modal.state == "waiting" and holder["e"].done is None  # not taken as done
        assert app.screen is modal
        waiting = str(modal.query_one("#waiting").render())
        assert "Waiting for the moved cable(s) of spark1: port down, then carrier up (" in waiting
        assert not any(isinstance(e, PhysicalActionDone) for e in holder["e"].events)
        node.moved = True  # the technician moves the cable now
        for _ in range(250):
            if holder["e"].done is not None:
                break
            await pilot.pause(0.02)
        assert holder["e"].done is True
        [done] = [e for e in holder["e"].events if isinstance(e, PhysicalActionDone)]
        assert done.observed == (
            "spark1: enP2p1s0f0np0, enp1s0f0np0 re-cabled: carrier up at 200000Mb/s since the "
            "request"
        )
        for _ in range(100):
            if app.screen is not modal:
                break
            await pilot.pause(0.02)
        assert app.screen is not modal  # the move closed the modal
