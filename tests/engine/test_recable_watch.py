"""A re-cable is done when a cable moved, not when carrier is up: a node cabled to the switch has
carrier before anyone touches it, so "Done" pressed early must wait for the move, visibly."""

from __future__ import annotations

from dataclasses import dataclass, field

from flows.expectations import DEFAULT
from wizard import recable
from wizard.engine import Engine
from wizard.events import Event, PhysicalActionDone
from wizard.model import PhysicalAction, ProbeResult

NETDEVS = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")


def sysfs(downs: dict[str, int], carrier: dict[str, int], counted: bool = True) -> str:
    """What `grep -H . /sys/class/net/*/{carrier,speed,carrier_down_count}` prints."""
    out = ["/sys/class/net/lo/carrier:1", "/sys/class/net/enP7s7/carrier:1"]
    out += ["/sys/class/net/enP7s7/speed:10000"]
    out += ["/sys/class/net/enP7s7/carrier_down_count:3"] if counted else []
    for n in NETDEVS:
        up = carrier.get(n, 1)
        out.append(f"/sys/class/net/{n}/carrier:{up}")
        out.append(f"/sys/class/net/{n}/speed:{200000 if up else -1}")
        if counted:
            out.append(f"/sys/class/net/{n}/carrier_down_count:{downs.get(n, 0)}")
    return "\n".join(out) + "\n6a1f0c2e-0000-4000-8000-000000000001\n"


def test_carrier_up_alone_is_no_cable_move() -> None:
    before = recable.ports(sysfs({}, {}))
    assert set(before) == {*NETDEVS, "enP7s7"} and "lo" not in before
    assert before["enp1s0f0np0"] == recable.Port(1, 200000, 0)
    ok, why = recable.recabled(before, recable.ports(sysfs({}, {})))
    assert not ok and "no cable moved yet" in why
    # unplugged: down, counted
    ok, why = recable.recabled(before, recable.ports(sysfs({"enp1s0f0np0": 1}, {"enp1s0f0np0": 0})))
    assert not ok and why.startswith("enp1s0f0np0 went down and has no carrier")
    # plugged into its new place: the count rose and carrier is back
    moved = recable.ports(sysfs({"enp1s0f0np0": 1, "enP2p1s0f0np0": 1}, {}))
    ok, why = recable.recabled(before, moved)
    assert ok and why.startswith("enP2p1s0f0np0, enp1s0f0np0 re-cabled")


def test_a_reseat_of_a_port_without_carrier_shows_as_carrier_coming_up() -> None:
    before = recable.ports(sysfs({}, {"enp1s0f1np1": 0, "enP2p1s0f1np1": 0}))
    ok, _ = recable.recabled(before, before)
    assert not ok
    ok, why = recable.recabled(before, recable.ports(sysfs({}, {})))
    assert ok and "enP2p1s0f1np1, enp1s0f1np1 re-cabled" in why


def test_a_kernel_without_down_counts_takes_carrier_up_and_says_so() -> None:
    before = recable.ports(sysfs({}, {}, counted=False))
    ok, why = recable.recabled(before, before)
    assert ok and why.endswith("(no carrier_down_count)")


@dataclass
class Rack:
    """spark1 cabled to the switch; the cable moves after `moves_after` polls (never: -1)."""

    moves_after: int
    polls: int = 0

    async def run(self, node: str, command: str, timeout: float = 0.0) -> ProbeResult:
        if "carrier" in command:
            self.polls += 1
            moved = self.moves_after >= 0 and self.polls > self.moves_after + 1
            downs = {"enp1s0f0np0": 1, "enP2p1s0f0np0": 1} if moved else {}
            stdout = sysfs(downs, {})
        else:
            stdout = "6a1f0c2e-0000-4000-8000-000000000001\n"
        return ProbeResult(target=node, kind="ssh", command=command, stdout=stdout, exit_status=0)

    hands = None


@dataclass
class Operator:
    answers: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)

    async def physical_action(self, action: PhysicalAction, can_perform: bool) -> str:
        self.answers.append("done")
        return "done" if len(self.answers) < 3 else "skip"

    async def error(self, title: str, text: str, hint: str = "") -> None:
        self.errors.append((title, text))


def _engine(rack: Rack, operator: Operator, events: list[Event]) -> Engine:
    now = [0.0]

    async def sleep(s: float) -> None:
        now[0] += s

    return Engine(
        fabric=rack,  # type: ignore[arg-type]
        operator=operator,  # type: ignore[arg-type]
        emit=events.append,
        flow=[],
        checks=[],
        make_context=lambda obs, guard: None,
        thresholds=DEFAULT,
        clock=lambda: now[0],
        sleep=sleep,
        poll_interval_s=1.0,
        physical_timeout_s=30.0,
    )


ACTION = PhysicalAction(
    kind="recable",
    nodes=("spark1",),
    instructions="connect spark1 port0 to spark2 port0",
    cables=(("spark1", "port0", "node:spark2:port0"),),
)


async def test_done_before_the_cable_moved_waits_for_the_move() -> None:
    rack, operator, events = Rack(moves_after=4), Operator(), []
    assert await _engine(rack, operator, events)._physical(ACTION) is True
    assert rack.polls == 1 + 5  # the reading at the request, then 4 polls before the move
    [done] = [e for e in events if isinstance(e, PhysicalActionDone)]
    assert done.observed == (
        "spark1: enP2p1s0f0np0, enp1s0f0np0 re-cabled: carrier up at 200000Mb/s since the request"
    )
    assert operator.errors == []  # "Done" was early, but the wait saw the move come


async def test_a_cable_that_never_moves_is_not_taken_as_done() -> None:
    rack, operator, events = Rack(moves_after=-1), Operator(), []
    assert await _engine(rack, operator, events)._physical(ACTION) is False  # then skipped
    assert not any(isinstance(e, PhysicalActionDone) for e in events)
    title, text = operator.errors[0]
    assert title == "Not done yet"
    assert text == (
        "still waiting for spark1 (spark1: no fabric port went down or came up since the "
        "request: no cable moved yet)"
    )
