"""Log lines older than the last change are history: the switch-link check sets them aside and
says so in the evidence; without a change they count as they always did."""

from __future__ import annotations

import calendar
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pytest

from flows import loghistory
from flows.checks import switch_link
from flows.registry import make_context
from wizard.model import ProbeResult, Status, Verdict
from wizard.probes import Observations

CASE = (
    Path(__file__).resolve().parents[1]
    / "fixtures/checks/switch.breakout-autoneg/fault-switch-breakout-autoneg"
)


def _epoch(text: str) -> float:
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%d %H:%M:%S")))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30 00:18:39", "2026-11-30 00:18:39"),
        ("11-30 00:18:39", "2026-11-30 00:18:39"),
        ("nov/30 00:18:39", "2026-11-30 00:18:39"),
        ("00:18:39", "2026-12-01 00:18:39"),  # a time of day alone: the day of the change
    ],
)
def test_every_routeros_log_stamp_is_dated(text: str, expected: str) -> None:
    assert loghistory.stamp(text, _epoch("2026-12-01 10:00:00")) == _epoch(expected)


@pytest.mark.parametrize("text", ["", "yesterday", "13-45 00:00:00", "foo/30 00:18:39"])
def test_an_unreadable_stamp_is_none_and_the_line_stays_current(text: str) -> None:
    since = _epoch("2026-12-01 10:00:00")
    assert loghistory.stamp(text, since) is None
    got = loghistory.split([{"time": text, "message": "m"}], "sw", {"sw": since})
    assert len(got.current) == 1 and got.history == ()


def _obs(after_fix: bool) -> tuple[Observations, dict[str, Any]]:
    """The recorded breakout case: every lane master failed autoneg and logged it. `after_fix`:
    they were then forced and came up, but qsfp56-dd-1-5 has no link (its cable was pulled)."""
    data = json.loads((CASE / "observations.json").read_text())
    sw = {k: ProbeResult.from_json(r) for k, r in data["switches"]["crs804"].items()}
    if after_fix:
        rows = []
        for row in sw["monitor"].rows:
            r = dict(row)
            if r.get("name") == "qsfp56-dd-1-5":
                r["auto-negotiation"] = "disabled"
            elif r.get("auto-negotiation") == "failed":
                r.update(status="link-ok", rate="200Gbps", fec="fec91")
                r["auto-negotiation"] = "disabled"
            rows.append(r)
        sw["monitor"] = dataclasses.replace(sw["monitor"], rows=tuple(rows))
    return Observations(switches={"crs804": sw}), data["settings"]


def _judge(obs: Observations, settings: dict[str, Any], changed: float | None) -> Verdict:
    ctx = make_context(
        obs,
        nodes=settings["nodes"],
        switches=settings["switches"],
        cabling={k: tuple(v) for k, v in settings["cabling"].items()},
        management={k: tuple(v) for k, v in settings["management"].items()},
    )
    if changed is not None:
        ctx = dataclasses.replace(ctx, changed_at={"crs804": changed})
    return {v.fault: v for v in switch_link.CHECK.run(obs, ctx)}["switch.breakout-autoneg"]


def test_without_a_change_the_log_lines_count() -> None:
    obs, settings = _obs(after_fix=True)
    v = _judge(obs, settings, None)
    assert v.status is Status.FAIL and "crs804/qsfp56-dd-1-5" in v.targets
    ev = {e.target: e for e in v.evidence}["crs804/qsfp56-dd-1-5"]
    assert ev.observed == (
        "status=no-link auto-negotiation=disabled (log: module auto-initialization failed)"
    )


def test_lines_before_the_change_are_set_aside_and_named_in_the_evidence() -> None:
    obs, settings = _obs(after_fix=True)
    v = _judge(obs, settings, _epoch("2026-11-30 00:20:00"))
    # the pulled cable is no autoneg failure any more (host.rail-down judges a leg without link)
    assert "crs804/qsfp56-dd-1-5" not in v.targets
    assert v.status is Status.PASS
    up = {e.target: e for e in v.evidence}["crs804/qsfp56-dd-1-1"]
    assert up.status is Status.PASS
    assert up.observed == (
        "status=link-ok rate=200Gbps fec=fec91; set aside as history: 1 log line(s) 'module "
        "auto-initialization failed' from before the change at 2026-11-30 00:20:00 "
        "(2026-11-30 00:18:39)"
    )


def test_a_failing_leg_keeps_its_current_monitor_evidence_and_names_its_history() -> None:
    obs, settings = _obs(after_fix=False)
    v = _judge(obs, settings, _epoch("2026-11-30 00:20:00"))
    assert v.status is Status.FAIL  # the monitor still says auto-negotiation=failed
    ev = {e.target: e for e in v.evidence}["crs804/qsfp56-dd-1-1"]
    assert ev.observed.startswith("status=no-link auto-negotiation=failed; set aside as history")
    before = _judge(obs, settings, _epoch("2026-11-30 00:00:00"))
    ev = {e.target: e for e in before.evidence}["crs804/qsfp56-dd-1-1"]
    assert ev.observed == (
        "status=no-link auto-negotiation=failed (log: module auto-initialization failed)"
    )


def test_a_time_of_day_line_is_dated_on_the_day_the_log_was_read_across_midnight() -> None:
    since = _epoch("2026-12-01 23:59:00")  # the change, just before midnight
    now = _epoch("2026-12-02 00:05:00")  # the switch's clock, read with the log
    log = [
        {"time": "12-01 23:58:30", "message": "before the change"},
        {"time": "00:01:00", "message": "after midnight, after the change"},
    ]
    got = loghistory.split(log, "sw", {"sw": since}, now)
    assert [r["message"] for r in got.current] == ["after midnight, after the change"]
    assert [r["message"] for r in got.history] == ["before the change"]
    # without the clock the line is dated on the day of the change: history, the old mistake
    blind = loghistory.split(log, "sw", {"sw": since})
    assert len(blind.history) == 2
    # written just before midnight, the clock read just after: yesterday, not tonight
    assert loghistory.dated("23:59:50", since, _epoch("2026-12-02 00:00:30")) == _epoch(
        "2026-12-01 23:59:50"
    )
    assert loghistory.dated("12:00:00", since, now) == _epoch("2026-12-02 12:00:00") - 86400


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"date": "2026-12-02", "time": "00:05:00"}, "2026-12-02 00:05:00"),
        ({"date": "dec/02/2026", "time": "00:05:00"}, "2026-12-02 00:05:00"),
        ({"date": "garbage", "time": "00:05:00"}, None),
    ],
)
def test_the_switch_clock_row_gives_the_day_of_the_read(
    row: dict[str, str], expected: str | None
) -> None:
    assert loghistory.clock_now([row]) == (None if expected is None else _epoch(expected))
    assert loghistory.clock_now(None) is None and loghistory.clock_now([]) is None


def test_the_switch_link_check_reads_the_clock_with_the_log() -> None:
    obs, settings = _obs(after_fix=True)
    sw = dict(obs.switches["crs804"])
    # the recorded failure lines, reprinted as today's (time of day only) on a switch whose
    # clock says the next day: the change was yesterday evening, the lines are after it
    rows = tuple(
        {**r, "time": r["time"].split(" ")[-1]}
        if "auto-initialization" in r.get("message", "")
        else r
        for r in sw["log"].rows
    )
    sw["log"] = dataclasses.replace(sw["log"], rows=rows)
    sw["clock"] = ProbeResult(
        target="crs804",
        kind="api",
        command="/system/clock print",
        rows=({"date": "2026-12-01", "time": "01:00:00"},),
    )
    obs = Observations(switches={"crs804": sw})
    v = _judge(obs, settings, _epoch("2026-11-30 23:00:00"))
    assert v.status is Status.FAIL and "crs804/qsfp56-dd-1-5" in v.targets
    ev = {e.target: e for e in v.evidence}["crs804/qsfp56-dd-1-5"]
    assert ev.observed.endswith("(log: module auto-initialization failed)")
    assert switch_link.CHECK.probes[-1].path == "/system/clock"


def test_the_offload_line_after_midnight_is_current_with_the_switch_clock() -> None:
    from flows.checks import forwarding

    def api(name: str, *rows: dict[str, str]) -> ProbeResult:
        return ProbeResult(target="crs804", kind="api", command=f"/{name} print", rows=rows)

    line = {
        "time": "00:02:10",
        "topics": "bridge,info",
        "message": 'hardware offloading activated on bridge "bridge" ports: qsfp56-dd-1-1',
    }
    since = _epoch("2026-11-30 23:58:00")  # the offload fix, before midnight
    log = api("log", line)
    clock = api("system/clock", {"date": "2026-12-01", "time": "00:03:00"})
    read_after = Observations(switches={"crs804": {"log": log, "clock": clock}})
    ev = forwarding.log_evidence(read_after, "crs804", "bridge", ("qsfp56-dd-1-1",), since)
    assert ev.status is Status.PASS and ev.observed.startswith("00:02:10 hardware offloading")
    # without the clock the line is dated on the day of the change: taken as history
    blind = Observations(switches={"crs804": {"log": log}})
    ev = forwarding.log_evidence(blind, "crs804", "bridge", ("qsfp56-dd-1-1",), since)
    assert ev.status is Status.UNKNOWN and "predates this session's change" in ev.observed
