"""The one check pipeline (wizard.pipeline): one error policy for every caller."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from wizard.model import Status, Verdict
from wizard.pipeline import is_check_failure, run_checks, run_checks_yielding
from wizard.probes import Observations


@dataclass(frozen=True)
class _Fake:
    id: str
    faults: tuple[str, ...]
    boom: bool = False

    def run(self, obs: Observations, ctx: Any) -> list[Verdict]:
        if self.boom:
            raise KeyError("rails")
        return [
            Verdict(fault=f, status=Status.PASS, summary="ok", check=self.id) for f in self.faults
        ]


def test_a_check_that_raises_is_unknown_for_each_of_its_faults_and_the_others_still_run() -> None:
    checks = [_Fake("a", ("x.one", "x.two"), boom=True), _Fake("b", ("y.one",))]
    out = run_checks(checks, Observations(), None)
    assert [(v.fault, v.status, v.check) for v in out] == [
        ("x.one", Status.UNKNOWN, "a"),
        ("x.two", Status.UNKNOWN, "a"),
        ("y.one", Status.PASS, "b"),
    ]
    failed = out[0]
    assert is_check_failure(failed) and not is_check_failure(out[2])
    assert failed.summary == "the check a failed (KeyError: 'rails'); this fault was not judged"
    assert failed.evidence[0].observed == "KeyError: 'rails'"


def test_faults_filter_keeps_only_the_asked_fault_ids() -> None:
    out = run_checks([_Fake("b", ("y.one", "y.two"))], Observations(), None, faults=["y.two"])
    assert [v.fault for v in out] == ["y.two"]


async def test_the_yielding_pipeline_gives_the_same_verdicts_and_lets_the_loop_run_between_checks() -> (
    None
):
    ticks: list[int] = []
    seen: dict[str, int] = {}

    @dataclass(frozen=True)
    class _Seen(_Fake):
        def run(self, obs: Observations, ctx: Any) -> list[Verdict]:
            seen[self.id] = len(ticks)  # how often the loop ran something else so far
            return _Fake.run(self, obs, ctx)

    async def other_work() -> None:  # a screen's keys and repaints, in the TUI
        while True:
            ticks.append(1)
            await asyncio.sleep(0)

    checks = [
        _Seen("a", ("x.one",)),
        _Seen("b", ("y.one", "y.two"), boom=True),
        _Seen("c", ("z.one", "z.two")),
    ]
    other = asyncio.ensure_future(other_work())
    await asyncio.sleep(0)
    try:
        # a slice of no time: the loop runs after every check
        out = await run_checks_yielding(
            checks, Observations(), None, faults=["x.one", "z.two", "y.one"], slice_s=0.0
        )
    finally:
        other.cancel()
    order = [seen[c.id] for c in checks]
    # the error policy and the filter of run_checks, in the same order
    assert out == run_checks(checks, Observations(), None, faults=["x.one", "z.two", "y.one"])
    assert [(v.fault, v.status) for v in out] == [
        ("x.one", Status.PASS),
        ("y.one", Status.UNKNOWN),
        ("z.two", Status.PASS),
    ]
    assert order[0] < order[1] < order[2]  # the other work ran between each two checks
