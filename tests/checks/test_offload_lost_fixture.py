"""The recorded `fault-switch-offload-lost` case: a bridge that lost hardware offload with none of
the modelled causes fails as `switch.offload-lost` on the switch's own evidence."""

from __future__ import annotations

from pathlib import Path

from flows.registry import by_fault
from tests.checks.test_checks_fixtures import load_case, run
from wizard.model import Status

CASE = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "checks"
    / "switch.offload-split-cage"
    / "fault-switch-offload-lost"
)


def test_recorded_offload_lost_case_fails_on_the_switch_evidence() -> None:
    obs, settings = load_case(CASE)
    got = run(by_fault("switch.offload-lost"), obs, settings)
    lost = got["switch.offload-lost"]
    assert lost.status == Status.FAIL and lost.targets == ("crs804/bridge",)
    for other in ("switch.offload-split-cage", "switch.offload-second-bridge"):
        assert got[other].status == Status.PASS  # no modelled cause
    flags = [e for e in lost.evidence if e.command == "/interface/bridge/port print"]
    assert len(flags) == 8 and all("hw-offload=false" in e.observed for e in flags)
    hosts = [e for e in lost.evidence if e.command == "/interface/bridge/host print"]
    assert hosts and all("learned D (software: switch CPU)" in e.observed for e in hosts)
    log = next(e for e in lost.evidence if e.command == "/log print")
    # the latest activation line no longer names the lost ports
    assert "does not name qsfp56-dd-1-1" in log.observed and log.status == Status.FAIL
