"""The typed codec of events: encode, write as JSON, read, decode gives an equal event, for every
event type and every field (tuples stay tuples, enums stay enums, nested values keep their type).
Logs written by the earlier hand-rolled encoder still load."""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wizard.events import (
    EVENT_TYPES,
    Event,
    MeasurementTaken,
    VerdictReached,
    event_from_json,
)
from wizard.model import Evidence, FixState, Measurement, ProbeResult, Status, Verdict
from wizard.session import SessionLog, load_session

# JSON-native values for the free-form mappings (`options`, `Measurement.extra`)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)


def _field_strategy(hint: Any) -> st.SearchStrategy[Any]:
    if hint == dict[str, Any]:
        return st.dictionaries(st.text(max_size=6), JSON, max_size=3)
    if hint is float:
        return FLOATS
    if hint == (float | None):
        return st.none() | FLOATS
    if hint == dict[str, float | None]:
        return st.dictionaries(st.text(max_size=6), st.none() | FLOATS, max_size=3)
    return st.from_type(hint)


def full(cls: type[Any]) -> st.SearchStrategy[Any]:
    """Instances of a dataclass with every field drawn (not only the required ones)."""
    hints = typing.get_type_hints(cls)
    return st.builds(
        cls, **{f.name: _field_strategy(hints[f.name]) for f in dataclasses.fields(cls)}
    )


for _nested in (Evidence, Verdict, ProbeResult, Measurement):
    st.register_type_strategy(_nested, full(_nested))


def _roundtrip(event: Event) -> Event:
    return event_from_json(json.loads(json.dumps(event.to_json())))


@pytest.mark.parametrize("type_name", sorted(EVENT_TYPES))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_event_type_round_trips_to_an_equal_event(
    type_name: str, data: st.DataObject
) -> None:
    event = data.draw(full(EVENT_TYPES[type_name]))
    back = _roundtrip(event)
    assert back == event
    assert type(back) is type(event)


@pytest.mark.parametrize("type_name", sorted(EVENT_TYPES))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_events_are_written_as_pydantic_would_write_them(
    type_name: str, data: st.DataObject
) -> None:
    # the log is written without pydantic and read back through it: both agree on every field
    from wizard import codec

    event = data.draw(full(EVENT_TYPES[type_name]))
    expected = codec.adapter(type(event)).dump_python(event, mode="json", fallback=str)
    assert json.dumps(codec.encode(event)) == json.dumps(expected)


def test_values_without_a_json_shape_are_written_as_pydantic_writes_them(tmp_path: Path) -> None:
    from wizard import codec

    odd = {
        "nan": float("nan"),
        "inf": float("-inf"),
        "status": Status.WARN,
        "path": tmp_path,
        "set": frozenset({3}),
        "nested": {1: (2.5, None, True)},
        "object": object,
    }
    m = Measurement(kind="rail", target="a->b", value=float("inf"), unit="Gb/s", extra=odd)
    expected = codec.adapter(Measurement).dump_python(m, mode="json", fallback=str)
    assert codec.encode(m) == expected
    assert codec.encode(m)["value"] == float("inf") and codec.encode(m)["extra"]["nan"] is None
    assert codec.encode(m)["extra"]["nested"] == {"1": [2.5, None, True]}


def test_tuples_enums_and_nested_values_keep_their_types() -> None:
    verdict = Verdict(
        fault="host.mtu",
        status=Status.FAIL,
        summary="mtu 1500",
        targets=("spark1", "spark2"),
        evidence=(Evidence("spark1", "ip -j link", "1500", "9000", Status.FAIL),),
    )
    back = _roundtrip(VerdictReached(step="addressing", verdict=verdict))
    assert isinstance(back, VerdictReached)
    assert back.verdict.targets == ("spark1", "spark2")
    assert back.verdict.status is Status.FAIL
    assert isinstance(back.verdict.evidence[0], Evidence)
    assert back.verdict.evidence[0].status is Status.FAIL


def test_a_record_that_does_not_fit_its_type_names_the_field() -> None:
    data = VerdictReached(
        step="qos", verdict=Verdict(fault="x", status=Status.PASS, summary="ok")
    ).to_json()
    data["verdict"]["status"] = "great"
    with pytest.raises(ValueError, match=r"verdict\.status"):
        event_from_json(data)


def test_an_odd_value_in_a_free_form_mapping_is_written_as_text(tmp_path: Path) -> None:
    m = Measurement(kind="rail", target="a->b", value=98.0, unit="Gb/s", extra={"path": tmp_path})
    data = MeasurementTaken(step="halves", measurement=m).to_json()
    assert data["measurement"]["extra"] == {"path": str(tmp_path)}


# one line of each shape, as the hand-rolled encoder of earlier builds wrote them (its key order)
EARLIER_LOG = [
    {
        "seq": 1,
        "type": "session_started",
        "at": 1796132000.5,
        "session_id": "20261201T000000Z-0a1b2c3d",
        "fabwiz_version": "0.9.0",
        "log_version": 1,
        "command": "fix",
        "inventory_digest": "",
        "inventory_path": "",
        "scenario": "offload-split-cage",
        "nodes": ["spark1", "spark2"],
        "switches": ["crs804"],
        "options": {"context": {"cabling": {"spark1": ["crs804", "qsfp56-dd-1-1"]}}},
    },
    {
        "seq": 2,
        "type": "probe_answered",
        "at": 1796132001.0,
        "step": "preflight",
        "probe": "ports",
        "result": {
            "target": "crs804",
            "kind": "api",
            "command": "/interface/ethernet/print",
            "stdout": "",
            "stderr": "",
            "exit_status": None,
            "rows": [{"name": "qsfp56-dd-1-1", "running": "true"}],
            "error": None,
            "started_at": 1796132000.9,
            "duration_s": 0.01,
        },
    },
    {
        "seq": 3,
        "type": "verdict_reached",
        "at": 1796132002.0,
        "step": "preflight",
        "verdict": {
            "fault": "switch.offload-split-cage",
            "status": "fail",
            "targets": ["crs804"],
            "summary": "cage split across two bridges",
            "evidence": [
                {
                    "target": "crs804",
                    "command": "/interface/bridge/port/print",
                    "observed": "bridge2",
                    "expected": "bridge",
                    "status": "fail",
                    "raw": None,
                }
            ],
            "check": "switch_offload",
        },
    },
    {
        "seq": 4,
        "type": "physical_action_requested",
        "at": 1796132003.0,
        "step": "direct_connect",
        "kind": "recable",
        "nodes": ["spark1"],
        "instructions": "cable spark1 to spark2",
        "cables": [["spark1", "enp1s0f0np0", "node:spark2:enp1s0f0np0"]],
        "undo": [["spark1", "enp1s0f0np0", "crs804:qsfp56-dd-1-1"]],
    },
    {
        "seq": 5,
        "type": "measurement_taken",
        "at": 1796132004.0,
        "step": "direct_connect",
        "measurement": {
            "kind": "rail",
            "target": "spark1/enp1s0f0np0->spark2/enp1s0f0np0",
            "value": 111.8,
            "unit": "Gb/s",
            "valid": True,
            "reason": "",
            "extra": {"qps": 1},
        },
    },
    {
        "seq": 6,
        "type": "fix_applied",
        "at": 1796132005.0,
        "step": "offload",
        "fix_id": "offload:switch.offload-split-cage:crs804",
        "fault": "switch.offload-split-cage",
        "target": "crs804",
        "export": "fabwiz-1",
        "rollback_armed": "fabwiz-rollback-2",
    },
]


def test_a_log_written_by_the_earlier_encoder_still_loads(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in EARLIER_LOG))
    loaded = load_session(folder)
    assert [e.type for e in loaded.events] == [r["type"] for r in EARLIER_LOG]
    assert loaded.warnings == ()
    started, probe, verdict, asked, measured, applied = loaded.events
    assert started.nodes == ("spark1", "spark2")  # type: ignore[attr-defined]
    assert probe.result.rows == ({"name": "qsfp56-dd-1-1", "running": "true"},)  # type: ignore[attr-defined]
    assert verdict.verdict.evidence[0].observed == "bridge2"  # type: ignore[attr-defined]
    assert asked.undo == (("spark1", "enp1s0f0np0", "crs804:qsfp56-dd-1-1"),)  # type: ignore[attr-defined]
    assert measured.measurement.value == 111.8  # type: ignore[attr-defined]
    assert applied.changed_at == {}  # type: ignore[attr-defined]
    state = loaded.state()
    assert state.fixes["offload:switch.offload-split-cage:crs804"].export == "fabwiz-1"
    # and what this build writes of the same events reads back equal
    log = SessionLog.create(tmp_path / "again", fsync=False)
    for ev in loaded.events:
        log.write(ev)
    log.close()
    assert load_session(log.folder).events == loaded.events


RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "sessions" / "earlier-encoder.jsonl"


def test_a_fix_walk_recorded_by_the_earlier_encoder_loads_and_folds(tmp_path: Path) -> None:
    """A lab fix walk (fault-switch-link-degraded) as the earlier build wrote it, cut to one
    line or a few of each kind (seqs renumbered, every other byte as written)."""
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "events.jsonl").write_bytes(RECORDED.read_bytes())
    loaded = load_session(folder)
    assert loaded.warnings == () and not loaded.torn_tail
    assert len(loaded.events) == len(RECORDED.read_text().splitlines())
    state = loaded.state()
    assert state.ended is not None and state.ended.healthy
    assert [f.state for f in state.fixes.values()] == [FixState.VERIFIED]
    assert state.armed_rollbacks == [] and state.disarmed
    assert state.direct_cabled is False
    assert state.undrained_nodes() == []
    # re-encoded by this build, every event reads back equal
    for ev in loaded.events:
        assert event_from_json(json.loads(json.dumps(ev.to_json()))) == ev
