"""Replay: the recorded probe outputs, re-judged offline, give the recorded verdicts back."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any

import pytest
from session_helpers import FIXTURES

from flows.base import Check, Context, HostProbe, Observations
from flows.expectations import DEFAULT
from flows.registry import CHECKS
from flows.replay import (
    observations_by_step,
    rails_from_observations,
    registered_checks,
    replay_session,
)
from wizard.events import (
    Event,
    LinkTransitionSeen,
    MeasurementTaken,
    NodeDrained,
    ProbeAnswered,
    SessionStarted,
    StepChanged,
    VerdictReached,
)
from wizard.model import Measurement, ProbeResult, Status, Verdict
from wizard.session import LOG_VERSION, LoadedSession, SessionLog, load_session

# --- a tiny check, so the mechanics are tested whatever the checks helper ships ----------------

LINKS = HostProbe("links", "ibdev2netdev")


def _parse(obs: Observations, ctx: Context) -> dict[str, int]:
    out = {}
    for node in ctx.nodes:
        r = obs.node(node, "links")
        if r is not None:
            if "boom" in r.stdout:
                raise ValueError("unparseable")
            out[node] = r.stdout.count("(Down)")
    return out


def _judge(down: dict[str, int], ctx: Context) -> list[Verdict]:
    bad = tuple(sorted(n for n, d in down.items() if d))
    undrained = tuple(
        sorted(t.node for t in ctx.transitions if ctx.drained_at.get(t.node, 0.0) < t.at)
    )
    out = [
        Verdict(
            fault="host.rail-down",
            status=Status.FAIL if bad else Status.PASS,
            summary=f"rails down on {', '.join(bad)}" if bad else "all rails up",
            targets=bad,
        )
    ]
    if undrained:
        out.append(
            Verdict(
                fault="process.undrained-measurement",
                status=Status.WARN,
                summary="undrained",
                targets=undrained,
            )
        )
    return out


TINY = Check(
    id="host.rail-down",
    title="Rails up",
    description="",
    faults=("host.rail-down", "process.undrained-measurement"),
    step="preflight",
    probes=(LINKS,),
    parse=_parse,
    judge=_judge,
)

UP = "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\nroceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Up)\n"
DOWN = "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\nroceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Down)\n"


def _ans(step: str, node: str, probe: str, text: str, command: str = "ibdev2netdev") -> Event:
    return ProbeAnswered(
        step=step,
        probe=probe,
        result=ProbeResult(target=node, kind="ssh", command=command, stdout=text, exit_status=0),
    )


def _started(**options: Any) -> SessionStarted:
    return SessionStarted(
        session_id="t",
        fabwiz_version="0.1.0",
        log_version=LOG_VERSION,
        command="fix",
        nodes=("spark1", "spark2"),
        options=options,
    )


def _save(tmp_path: Path, events: list[Event]) -> LoadedSession:
    log = SessionLog.create(tmp_path / "s")
    for ev in events:
        log.write(ev)
    log.close()
    return load_session(log.folder)


def _verdict(step: str, fault: str, status: Status, *targets: str) -> VerdictReached:
    return VerdictReached(
        step=step,
        verdict=Verdict(fault=fault, status=status, summary="", targets=targets, check=TINY.id),
    )


# a preflight sweep that finds spark2's half-B rail down, and its verdict
_PREFLIGHT_SPARK2_DOWN = (
    _started(),
    StepChanged(step="preflight", phase="probing"),
    _ans("preflight", "spark1", "links", UP),
    _ans("preflight", "spark2", "links", DOWN),
    _verdict("preflight", "host.rail-down", Status.FAIL, "spark2"),
)


def test_replay_agrees_when_the_recorded_verdicts_follow_from_the_outputs(tmp_path: Path) -> None:
    loaded = _save(
        tmp_path,
        [
            *_PREFLIGHT_SPARK2_DOWN,
            # later the rail came back: a second sweep, a second verdict
            _ans("verify", "spark2", "links", UP),
            _verdict("verify", "host.rail-down", Status.PASS),
        ],
    )
    result = replay_session(loaded, checks=[TINY])
    assert result.agree and result.differences == ()
    assert [(r.step, r.recorded, r.replayed) for r in result.rows] == [
        ("preflight", Status.FAIL, Status.FAIL),
        ("verify", Status.PASS, Status.PASS),
    ]
    assert result.checks_run == 2
    assert result.to_json()["differences"] == 0


def test_replay_shows_where_verdicts_differ(tmp_path: Path) -> None:
    loaded = _save(
        tmp_path,
        [
            _started(),
            _ans("preflight", "spark1", "links", UP),
            _ans("preflight", "spark2", "links", DOWN),
            _verdict("preflight", "host.rail-down", Status.PASS),  # judged wrong at the rack
            VerdictReached(  # no check for it in this build
                step="preflight",
                verdict=Verdict(fault="switch.mtu", status=Status.FAIL, summary="", check=""),
            ),
        ],
    )
    result = replay_session(loaded, checks=[TINY])
    assert not result.agree
    wrong, unknown = result.rows
    assert (wrong.recorded, wrong.replayed) == (Status.PASS, Status.FAIL)
    assert wrong.replayed_targets == ("spark2",) and wrong.difference == "status pass -> fail"
    assert unknown.replayed is None and "no check" in unknown.difference
    assert result.to_json()["differences"] == 2


def _slowest(obs: Observations, ctx: Context) -> list[float]:
    return [m.value for m in obs.measurements if m.kind == "rail"]


def _judge_rates(rates: list[float], ctx: Context) -> list[Verdict]:
    status = Status.UNKNOWN if not rates else Status.FAIL if min(rates) < 80 else Status.PASS
    return [Verdict(fault="host.cx7-degraded", status=status, summary=f"{rates}", check="rates")]


RATES = Check(
    id="rates",
    title="Rates",
    description="",
    faults=("host.cx7-degraded",),
    step="qos",
    probes=(),
    parse=_slowest,
    judge=_judge_rates,
)


def _rate(step: str, gbps: float, *, valid: bool = True) -> MeasurementTaken:
    return MeasurementTaken(
        step=step,
        measurement=Measurement("rail", f"a/p0->b/p{gbps:g}", gbps, "Gb/s", valid=valid),
    )


def _rates_verdict(step: str, status: Status) -> VerdictReached:
    return VerdictReached(
        step=step,
        verdict=Verdict(fault="host.cx7-degraded", status=status, summary="", check="rates"),
    )


def test_replay_judges_each_verdict_with_the_measurement_the_engine_judged_it_with(
    tmp_path: Path,
) -> None:
    # the engine judges a measurement's valid results alone, and a sweep (a fix's verification)
    # with none: the numbers from before a fix never judge the verdicts after it
    loaded = _save(
        tmp_path,
        [
            _started(),
            StepChanged(step="qos", phase="probing"),
            _ans("qos", "spark1", "links", UP),
            _rates_verdict("qos", Status.UNKNOWN),  # the sweep: no numbers yet
            StepChanged(step="qos", phase="measuring"),
            _rate("qos", 0.0),
            _rate("qos", 3.0, valid=False),  # an undrained node's: not evidence, not judged
            _rates_verdict("qos", Status.FAIL),
            StepChanged(step="qos", phase="verifying"),
            _ans("qos", "spark1", "links", UP),
            _rates_verdict("qos", Status.UNKNOWN),  # the fix's verification: a sweep
            StepChanged(step="qos", phase="measuring"),
            _rate("qos", 109.2),
            _rate("qos", 109.3),
            _rates_verdict("qos", Status.PASS),  # after the fix: its own numbers only
        ],
    )
    result = replay_session(loaded, checks=[RATES])
    assert [(r.recorded, r.replayed) for r in result.rows] == [
        (Status.UNKNOWN, Status.UNKNOWN),
        (Status.FAIL, Status.FAIL),
        (Status.UNKNOWN, Status.UNKNOWN),
        (Status.PASS, Status.PASS),
    ]
    assert result.rows[1].replayed_summary == "[0.0]"
    assert result.rows[3].replayed_summary == "[109.2, 109.3]"


def test_a_sweep_is_judged_with_its_own_answers_not_with_older_ones(tmp_path: Path) -> None:
    # the engine judges a sweep's answers: one that did not read spark2 again (another step's
    # probes) is not judged with what spark2 said steps ago, before a drain or a change
    loaded = _save(
        tmp_path,
        [
            *_PREFLIGHT_SPARK2_DOWN,
            StepChanged(step="qos", phase="probing"),
            _ans("qos", "spark1", "links", UP),
            _verdict("qos", "host.rail-down", Status.PASS),
        ],
    )
    result = replay_session(loaded, checks=[TINY])
    assert result.agree, [r.to_json() for r in result.differences]
    assert [r.replayed for r in result.rows] == [Status.FAIL, Status.PASS]


def test_a_verdict_the_engine_judges_itself_is_shown_not_judged_again(tmp_path: Path) -> None:
    golden = Verdict(
        fault="persist.golden-export",
        status=Status.PASS,
        summary="the golden export x.rsc is on crs804 (3378 bytes)",
        targets=("crs804",),
        check="persist.golden-export",
    )
    loaded = _save(tmp_path, [_started(), VerdictReached(step="persist", verdict=golden)])
    result = replay_session(loaded, checks=[TINY])
    [row] = result.rows
    assert not row.compared and row.agree and result.agree and result.differences == ()
    assert row.note.startswith("judged by the engine from the switch's /file listing")
    assert result.to_json()["rows"][0]["compared"] is False


def test_replay_uses_the_transitions_and_drains_known_at_the_verdict(tmp_path: Path) -> None:
    loaded = _save(
        tmp_path,
        [
            _started(),
            _ans("offload", "spark1", "links", UP),
            LinkTransitionSeen(at=100.0, node="spark1", cause="fix bounced links"),
            _verdict("offload", "host.rail-down", Status.PASS),
            _verdict("offload", "process.undrained-measurement", Status.WARN, "spark1"),
            NodeDrained(at=200.0, node="spark1"),
            _verdict("offload", "host.rail-down", Status.PASS),
        ],
    )
    result = replay_session(loaded, checks=[TINY])
    assert result.agree, [r.to_json() for r in result.differences]
    assert result.checks_run == 2  # re-run after the drain, not before


def test_a_replayed_finding_nobody_recorded_is_a_difference(tmp_path: Path) -> None:
    loaded = _save(
        tmp_path,
        [
            _started(),
            _ans("drain", "spark1", "links", UP),
            LinkTransitionSeen(at=100.0, node="spark1", cause="recabled"),
            _verdict("drain", "host.rail-down", Status.PASS),
        ],
    )
    result = replay_session(loaded, checks=[TINY])
    [extra] = result.differences
    assert extra.fault == "process.undrained-measurement" and extra.recorded is None
    assert extra.replayed == Status.WARN and extra.replayed_targets == ("spark1",)


def test_a_check_that_raises_on_recorded_output_is_reported_not_fatal(tmp_path: Path) -> None:
    loaded = _save(
        tmp_path,
        [
            _started(),
            _ans("preflight", "spark1", "links", "boom"),
            _verdict("preflight", "host.rail-down", Status.UNKNOWN, "spark1"),
        ],
    )
    result = replay_session(loaded, checks=[TINY])
    [row] = result.rows
    # one error policy (wizard.pipeline): the check's faults replay as unknown, naming the error
    assert row.replayed == Status.UNKNOWN and row.recorded == Status.UNKNOWN
    assert "the check host.rail-down failed (ValueError: unparseable)" in row.note
    assert result.warnings == (row.note,)


def test_observations_by_step_keeps_the_latest_answer(tmp_path: Path) -> None:
    loaded = _save(
        tmp_path,
        [
            _started(),
            _ans("preflight", "spark1", "links", DOWN),
            _ans("preflight", "spark1", "links", UP),
            ProbeAnswered(
                step="offload",
                probe="bridge_port",
                result=ProbeResult(
                    target="crs804",
                    kind="api",
                    command="/interface/bridge/port print",
                    rows=({"interface": "qsfp56-dd-1-1"},),
                ),
            ),
            ProbeAnswered(
                step="offload",
                probe="ibdev2netdev",
                result=ProbeResult(
                    target="spark2", kind="ssh", command="ibdev2netdev", error="timeout"
                ),
            ),
        ],
    )
    obs = observations_by_step(loaded)
    pre = obs["preflight"].node("spark1", "links")
    assert pre is not None and pre.stdout == UP
    off = obs["offload"]
    bp = off.switch("crs804", "bridge_port")
    assert bp is not None and bp.rows[0]["interface"] == "qsfp56-dd-1-1"
    assert dict(off.unreachable) == {"spark2": "timeout"}


# --- real fixtures, real checks ----------------------------------------------------------------


def _real(rel: str) -> str:
    p = FIXTURES / rel
    if not p.exists():
        pytest.skip(f"shared fixture {rel} not available (needs ../shared next to the repo)")
    return p.read_text(encoding="utf-8")


def _checks(*modules: str) -> list[Check]:
    out = []
    for m in modules:
        try:
            out.append(importlib.import_module(f"flows.checks.{m}").CHECK)
        except (ImportError, AttributeError) as exc:
            pytest.skip(f"check module flows.checks.{m} not available yet: {exc}")
    return out


def _real_session() -> tuple[list[Event], list[Check]]:
    """A synthetic session made of real outputs: two nodes with the same addresses (a real
    duplicate-IP capture), one with the distro ARP defaults, one with the RoCE sysctls."""
    from wizard.discovery import discover_rails

    checks = _checks("host_arp", "host_addressing")
    ib = _real("ibdev2netdev/dgx-spark-5c2d-port0-up.txt")
    ip = _real("iproute2/ip-j-addr-spark1-dup-ip-two-rails.json")
    sysctl = {
        "spark1": _real("sysctl/sysctl-arp-defaults.txt"),
        "spark2": _real("sysctl/sysctl-w-arp-roce.txt"),
    }
    events: list[Event] = [_started(), StepChanged(step="addressing", phase="probing")]
    nodes: dict[str, dict[str, ProbeResult]] = {}
    for node in ("spark1", "spark2"):
        for probe, command, text in (
            ("ibdev2netdev", "ibdev2netdev", ib),
            ("ip_addr", "ip -j addr show", ip),
            ("sysctl_arp", "sysctl net.ipv4.conf.all.arp_ignore", sysctl[node]),
        ):
            ev = _ans("addressing", node, probe, text, command)
            assert isinstance(ev, ProbeAnswered)
            nodes.setdefault(node, {})[probe] = ev.result
            events.append(ev)
    # What the engine judged at the rack: the checks on the live observations.
    obs = Observations(nodes=nodes)
    rails = {n: discover_rails(n, ib, ip_addr=ip) for n in nodes}
    ctx = Context(expectations=DEFAULT, rails=rails, nodes=("spark1", "spark2"))
    for check in checks:
        events += [VerdictReached(step="addressing", verdict=v) for v in check.run(obs, ctx)]
    return events, checks


def test_replay_of_a_session_built_from_real_outputs_reproduces_its_verdicts(
    tmp_path: Path,
) -> None:
    events, checks = _real_session()
    loaded = _save(tmp_path, events)
    rails = rails_from_observations(observations_by_step(loaded)["addressing"])
    assert {r.netdev for r in rails["spark1"]} >= {"enp1s0f0np0", "enP2p1s0f0np0"}
    recorded = {e.verdict.fault: e.verdict for e in events if isinstance(e, VerdictReached)}
    assert recorded["host.arp-sysctls"].status == Status.FAIL
    assert recorded["host.arp-sysctls"].targets == ("spark1",)
    assert recorded["host.duplicate-ip"].status == Status.FAIL
    result = replay_session(loaded, checks=checks)
    assert result.agree, [r.to_json() for r in result.differences]
    assert {r.fault for r in result.rows} == set(recorded)
    assert len(result.rows) == len(recorded)


def test_replay_of_real_outputs_flags_a_tampered_verdict(tmp_path: Path) -> None:
    events, checks = _real_session()
    tampered = [
        VerdictReached(
            at=e.at,
            step=e.step,
            verdict=dataclasses.replace(e.verdict, status=Status.PASS, targets=()),
        )
        if isinstance(e, VerdictReached) and e.verdict.fault == "host.arp-sysctls"
        else e
        for e in events
    ]
    result = replay_session(_save(tmp_path, tampered), checks=checks)
    [diff] = result.differences
    assert diff.fault == "host.arp-sysctls"
    assert (diff.recorded, diff.replayed, diff.replayed_targets) == (
        Status.PASS,
        Status.FAIL,
        ("spark1",),
    )


def test_replay_with_the_registry(tmp_path: Path) -> None:
    checks = registered_checks()
    assert [c.id for c in checks] == [c.id for c in CHECKS]
    events, _ = _real_session()
    result = replay_session(_save(tmp_path, events), checks=checks)
    assert result.agree, [r.to_json() for r in result.differences]
