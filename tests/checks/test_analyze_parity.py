"""`fabwiz analyze` and the sweep judge the same output the same way.

For every kind a check judges through its own parse and judge (`Check.pasted`), each recorded
probe output of tests/fixtures/checks/ is judged twice: by the check in a sweep of that one
target (with the rails and cabling the sweep discovers), and as a pasted file by
`flows.analyze.analyze_text` (which knows nothing but the text). The fault ids and statuses
must be the same; the only difference allowed is the one the paste cannot know: a host's ARP
sysctls on a host whose rails are not in the text are `unknown`, where the sweep, which knows
whether that host has several addressed rails, says fail or pass. Never a pass for a finding.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests_checks_support import FIXTURES, load_case

from flows.analyze import analyze_text
from flows.base import Check
from flows.registry import PASTED_RULES, by_fault, make_context
from wizard.model import ProbeResult, Status, Verdict
from wizard.probes import Observations


@dataclass(frozen=True)
class Source:
    """One probe whose recorded output is also a pasted kind, and what it judges."""

    check: str  # the check id (and its fixture folder)
    probe: str  # the probe result's key, or its prefix for a per-rail probe ("mlnx_qos:")
    kind: str  # what `wizard.parsers.detect` makes of the text
    faults: tuple[str, ...]  # the faults the check judges from that probe alone
    switch: bool = False


SOURCES = (
    Source("host.arp-sysctls", "sysctl_arp", "sysctl", ("host.arp-sysctls",)),
    Source("host.pfc-enabled", "mlnx_qos:", "mlnx_qos", ("host.pfc-enabled",)),
    Source("host.pcie-width", "lspci", "lspci", ("host.pcie-width",)),
    Source("benign.pcie-27w", "dmesg", "kernel-log", ("benign.pcie-27w",)),
    Source(
        "host.duplicate-ip",
        "ip_addr",
        "ip-json",
        ("host.duplicate-ip", "host.same-subnet-rails", "host.mtu", "host.ipv6-on-fabric"),
    ),
    Source("host.rail-down", "ip_addr", "ip-json", ("host.half-unused",)),
    Source("switch.qos-pfc-stall", "qos_port", "routeros", ("switch.qos-pfc-stall",), True),
    Source("switch.mtu", "ethernet", "routeros", ("switch.mtu",), True),
)
# the paste cannot tell: fault -> what the sweep knows that the text does not show
NEEDS_CONTEXT = {"host.arp-sysctls": "whether the host has several addressed rails"}


def _text(result: ProbeResult) -> str:
    """A probe result as an operator would paste it: the command's output, or the API reply."""
    return json.dumps(list(result.rows)) if result.kind == "api" else result.stdout


def _statuses(verdicts: Sequence[Verdict], faults: tuple[str, ...]) -> dict[str, str]:
    """fault -> status, findings only (a pass is not listed by `fabwiz analyze`)."""
    return {
        v.fault: str(v.status) for v in verdicts if v.fault in faults and v.status != Status.PASS
    }


def _pairs() -> list[tuple[Source, Path, str, str]]:
    out = []
    for src in SOURCES:
        for case in sorted((FIXTURES / src.check).iterdir()):
            data = json.loads((case / "observations.json").read_text())
            targets = data["switches"] if src.switch else data["nodes"]
            for target, results in sorted(targets.items()):
                for key in sorted(results):
                    if key == src.probe or (src.probe.endswith(":") and key.startswith(src.probe)):
                        out.append((src, case, target, key))
    return out


PAIRS = _pairs()


def _sweep(src: Source, case: Path, target: str) -> dict[str, str]:
    """The check's findings in a sweep of `target` alone, with what the sweep discovers."""
    obs, settings = load_case(src.check, case.name)
    if src.switch:
        one = Observations(switches={target: obs.switches[target]})
        ctx = make_context(one, nodes=(), switches=(target,))
    else:
        one = Observations(nodes={target: obs.nodes[target]})
        cabling = {k: (v[0], v[1]) for k, v in settings["cabling"].items()}
        ctx = make_context(one, nodes=(target,), switches=(), cabling=cabling)
    check: Check = by_fault(src.check)
    return _statuses(check.run(one, ctx), src.faults)


def test_every_analyzable_source_has_recorded_outputs() -> None:
    assert {src.check for src, *_ in PAIRS} == {src.check for src in SOURCES}
    assert len(PAIRS) >= 60
    # each source names a kind some check really judges through its own rules
    kinds = {kind for _c, rule in PASTED_RULES for kind in rule.kinds}
    assert {src.kind for src in SOURCES} <= kinds


def test_the_parity_is_not_only_of_passes() -> None:
    # every source has recorded outputs on which the sweep finds something (not all pass)
    found = {src.check for src, case, target, _key in PAIRS if _sweep(src, case, target)}
    assert found == {src.check for src in SOURCES}


@pytest.mark.parametrize(
    ("src", "case", "target", "key"),
    PAIRS,
    ids=[f"{c.parent.name}/{c.name}/{t}/{k}" for _s, c, t, k in PAIRS],
)
def test_analyze_and_the_sweep_agree(src: Source, case: Path, target: str, key: str) -> None:
    obs, _settings = load_case(src.check, case.name)
    result = (obs.switches if src.switch else obs.nodes)[target][key]
    pasted = analyze_text(_text(result))
    assert pasted.kind == src.kind, pasted.error
    got = _statuses(pasted.findings, src.faults)
    want = _sweep(src, case, target)
    for fault in src.faults:
        if fault in NEEDS_CONTEXT and got.get(fault) == "unknown":
            # the text does not show it; the sweep's answer is then either way, never a pass
            continue
        assert got.get(fault) == want.get(fault), (fault, got, want)


def test_the_context_a_paste_lacks_is_unknown_never_a_pass() -> None:
    src = SOURCES[0]
    case = FIXTURES / src.check / "fault-host-arp-sysctls"
    assert _sweep(src, case, "spark1") == {"host.arp-sysctls": "fail"}
    obs, _ = load_case(src.check, case.name)
    pasted = analyze_text(obs.nodes["spark1"]["sysctl_arp"].stdout)
    (v,) = pasted.findings
    assert (v.fault, v.status, v.targets) == ("host.arp-sysctls", Status.UNKNOWN, ())
    assert "arp_ignore=0 arp_announce=0 rp_filter=2 (rails not known)" in v.summary
    assert "a fault only on a host with several addressed rails" in v.summary
