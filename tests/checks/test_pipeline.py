"""The one check pipeline (wizard.pipeline): one error policy for every caller."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wizard.model import Status, Verdict
from wizard.pipeline import is_check_failure, run_checks
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
