"""Unit tests of the engine's pure parts: the life-cycle machine, the drain guard, fix safety."""

from __future__ import annotations

import pytest
from transitions import MachineError

from wizard import fixes
from wizard.drain import DrainGuard
from wizard.engine.machine import TRANSITIONS, Phase, StepLifecycle, mermaid
from wizard.events import LinkTransitionSeen, NodeDrained
from wizard.model import ApiCommand, HostChange, HostFile, SwitchChange


def test_lifecycle_records_each_move_and_refuses_illegal_ones() -> None:
    seen: list[tuple[str, str, str]] = []
    m = StepLifecycle(lambda a, b, t: seen.append((a.value, b.value, t)))
    for trigger in (
        "probe",
        "judged",
        "offer_fix",
        "export",
        "apply",
        "verify",
        "verified",
        "finish",
    ):
        m.fire(trigger)
    assert m.state is Phase.DONE
    assert seen[0] == ("idle", "probing", "probe")
    assert seen[-1] == ("verdict", "done", "finish")
    assert len(seen) == 8
    with pytest.raises(MachineError):
        m.fire("apply")  # no apply from done: auto transitions are off
    assert not m.can("export")


def test_apply_without_offer_is_impossible() -> None:
    m = StepLifecycle()
    m.fire("probe")
    m.fire("judged")
    assert not m.can("apply")
    assert not m.can("verify")


def test_diagram_comes_from_the_same_transitions() -> None:
    text = mermaid()
    edges = sum(len(t["source"]) if isinstance(t["source"], list) else 1 for t in TRANSITIONS)
    assert text.count("-->") == edges + 2  # plus the start and end markers
    assert "fix_offered --> exporting: export" in text
    assert "exporting --> applying: apply" in text


def test_the_readme_draws_the_machine_as_it_is() -> None:
    """The README's life-cycle diagram is the one `mermaid()` draws from `TRANSITIONS`."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    drawn = readme.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    assert drawn.rstrip("\n") == mermaid()


def test_drain_guard_prompted_transition_then_drain() -> None:
    g = DrainGuard()
    g.record_transition("spark1", 10.0, "recable (prompted)")
    assert g.undrained(["spark1", "spark2"]) == {"spark1": "recable (prompted)"}
    assert "spark1: recable (prompted)" in g.reason(g.undrained(["spark1"]))
    g.record_drain("spark1", 20.0, "boot-2")
    assert g.undrained(["spark1"]) == {}
    g.record_transition("spark1", 30.0, "fix switch.mtu bounced links")
    assert list(g.undrained(["spark1"])) == ["spark1"]


def test_drain_guard_sees_transitions_in_carrier_counters() -> None:
    g = DrainGuard()
    assert g.observe_counters("spark2", 0, 1.0, "boot-a") is None
    cause = g.observe_counters("spark2", 2, 2.0, "boot-a")
    assert cause == "link went down 2 time(s) (carrier counters)"
    assert "spark2" in g.undrained(["spark2"])
    # A new boot restarts the counters; a reboot is not a drain, so the node stays undrained.
    assert g.observe_counters("spark2", 0, 3.0, "boot-b") is None
    assert "spark2" in g.undrained(["spark2"])
    # First look at a node that already had link-downs since boot.
    g2 = DrainGuard()
    assert g2.observe_counters("spark3", 1, 1.0, "boot-x") == (
        "1 link-down event(s) since boot (carrier counters)"
    )


def test_drain_guard_rebuilt_from_events() -> None:
    events = [
        LinkTransitionSeen(node="spark1", cause="recable (prompted)", at=5.0),
        LinkTransitionSeen(node="spark2", cause="recable (prompted)", at=5.0),
        NodeDrained(node="spark1", boot_id="b1", at=9.0),
    ]
    g = DrainGuard.from_events(events)
    assert g.undrained(["spark1", "spark2"]) == {"spark2": "recable (prompted)"}


SPLIT_CAGE = SwitchChange(
    switch="crs804",
    commands=(
        ApiCommand("/interface/bridge/port", "remove", select=("interface", "qsfp56-dd-2-5")),
    ),
    rollback=(
        ApiCommand(
            "/interface/bridge/port",
            "add",
            args=(("bridge", "bridge-mgmt"), ("interface", "qsfp56-dd-2-5"), ("hw", "yes")),
        ),
    ),
)


def test_management_guard_refuses_cutting_the_api_session() -> None:
    why = fixes.management_conflict(SPLIT_CAGE, ["qsfp56-dd-2-5"], {"qsfp56-dd-2-5": "bridge-mgmt"})
    assert why is not None
    assert "qsfp56-dd-2-5" in why and "API session" in why
    assert fixes.management_conflict(SPLIT_CAGE, ["ether1"], {"ether1": "bridge-mgmt"}) is None
    drop_bridge = SwitchChange(
        switch="crs804",
        commands=(ApiCommand("/interface/bridge", "remove", select=("name", "bridge-mgmt")),),
        rollback=(),
    )
    why = fixes.management_conflict(drop_bridge, ["ether1"], {"ether1": "bridge-mgmt"})
    assert why is not None and "bridge bridge-mgmt" in why


def test_cli_rendering_and_rollback_script() -> None:
    assert fixes.to_cli(SPLIT_CAGE.commands[0]) == (
        "/interface bridge port remove [find interface=qsfp56-dd-2-5]"
    )
    script = fixes.rollback_script(SPLIT_CAGE, "fabwiz-rb-1")
    assert script.splitlines() == [
        "# fabwiz dead-man rollback fabwiz-rb-1",
        ':log warning "fabwiz rollback fabwiz-rb-1 ran"',
        ":do { /interface bridge port add bridge=bridge-mgmt interface=qsfp56-dd-2-5 hw=yes }"
        ' on-error={ :log warning "fabwiz rollback fabwiz-rb-1: step 1 failed, state left as'
        ' found" }',
        ':do { /system scheduler remove [find name="fabwiz-rb-1"] } on-error={ }',
    ]
    assert fixes._cli_quote('a "b" $c') == '"a \\"b\\" \\$c"'


def test_same_config_ignores_only_the_date_header() -> None:
    a = "# 2026-11-30 00:01:02 by RouterOS 7.21.2\n# model = CRS804-4DDQ\n/interface bridge\nadd name=bridge\n"
    b = a.replace("00:01:02", "00:09:59")
    assert fixes.same_config(a, b)
    assert not fixes.same_config(a, b + "add name=bridge2\n")


def test_host_revert_script_quotes_paths() -> None:
    change = HostChange(
        node="spark1",
        files=(HostFile("spark1", "/etc/netplan/40-fabwiz; rm -rf x.yaml", "network: {}\n"),),
        rollback_commands=("netplan apply",),
    )
    script = fixes.host_revert_script(change)
    assert "'/etc/netplan/40-fabwiz; rm -rf x.yaml.fabwiz-bak'" in script
    assert script.endswith("; netplan apply")


class FakeApi:
    """An in-memory RouterOS API for the export/rollback helpers (the lab tests use the real one)."""

    EXPORT = "# 2026-11-30 23:59:30 by RouterOS 7.23.1\n/interface bridge\nadd name=bridge\n"

    def __init__(
        self, *, export_empty: bool = False, export: str | None = None, size: int | None = None
    ) -> None:
        self.export_empty = export_empty
        self.export = self.EXPORT if export is None else export
        self.size = size
        self.files: dict[str, str] = {}
        self.sched: list[dict[str, str]] = []
        self.calls: list[tuple[str, str, dict[str, str]]] = []

    async def call(self, path: str, verb: str, **args: str) -> list[dict[str, str]]:
        self.calls.append((path, verb, args))
        if verb == "export":
            self.files[args["file"] + ".rsc"] = "" if self.export_empty else self.export
            return []
        if path == "/file" and verb == "print":
            return [
                {"name": k, "size": str(self.size or len(v.encode())), "contents": v}
                for k, v in self.files.items()
            ]
        if path == "/system/clock":
            return [{"date": "2026-11-30", "time": "23:59:30"}]
        if path == "/system/scheduler" and verb == "add":
            self.sched.append({".id": f"*{len(self.sched) + 1}", **args})
            return []
        if path == "/system/scheduler" and verb == "print":
            return list(self.sched)
        if path == "/system/scheduler" and verb == "remove":
            self.sched = [s for s in self.sched if s[".id"] != args[".id"]]
        return []


async def test_export_is_verified_or_refused() -> None:
    ok = await fixes.take_export(FakeApi(), "crs804", "fabwiz-s-offload-1")
    assert ok.verified and ok.file == "fabwiz-s-offload-1.rsc" and ok.size == len(ok.contents)
    assert len(ok.sha256) == 64
    empty = await fixes.take_export(FakeApi(export_empty=True), "crs804", "x", wait_s=0.2)
    assert not empty.verified
    assert empty.error == "x.rsc is empty on crs804" or "missing" in (empty.error or "")


@pytest.mark.parametrize(
    ("export", "size", "why"),
    [
        (FakeApi.EXPORT, len(FakeApi.EXPORT) + 4096, "bytes read, the switch reports"),
        (FakeApi.EXPORT[:-1] + "\\\n", None, "middle of a line"),
        (FakeApi.EXPORT.rstrip("\n"), None, "middle of a line"),
        ("/interface bridge\nadd name=bridge\n", None, "header"),
        ("# 2026-11-30 23:59:30 by RouterOS 7.23.1\nadd name=bridge\n", None, "does not parse"),
    ],
)
async def test_incomplete_export_is_refused(export: str, size: int | None, why: str) -> None:
    status = await fixes.take_export(FakeApi(export=export, size=size), "crs804", "x", wait_s=0.2)
    assert not status.verified
    assert "incomplete" in (status.error or "") and why in (status.error or ""), status.error


async def test_rollback_is_armed_on_the_switch_clock_and_disarmed() -> None:
    api = FakeApi()
    script = await fixes.arm_switch_rollback(api, SPLIT_CAGE, "fabwiz-rb-1", 300)
    entry = api.sched[0]
    # 23:59:30 + 300 s crosses midnight: the date moves too.
    assert (entry["start-date"], entry["start-time"]) == ("2026-12-01", "00:04:30")
    assert entry["on-event"] == script and entry["interval"] == "0s"
    assert await fixes.disarm_switch_rollback(api, "fabwiz-rb-1")
    assert api.sched == []


def test_a_fix_declined_after_its_export_goes_back_to_the_verdict_and_can_measure() -> None:
    seen: list[str] = []
    m = StepLifecycle(lambda a, b, t: seen.append(b.value))
    for trigger in ("probe", "judged", "offer_fix", "export", "declined", "measure"):
        m.fire(trigger)
    assert seen[-3:] == ["exporting", "verdict", "measuring"]


def test_an_undeclared_move_raises_as_a_bug() -> None:
    """The engine never drops a life-cycle move it did not declare: it raises, naming the step,
    the phase and the trigger, and the phase does not move."""
    from flows.expectations import DEFAULT
    from wizard.engine import Engine
    from wizard.errors import LifecycleError
    from wizard.events import Note

    notes: list[Note] = []
    engine = Engine(
        fabric=object(),  # type: ignore[arg-type]
        operator=object(),  # type: ignore[arg-type]
        emit=lambda e: notes.append(e) if isinstance(e, Note) else None,
        flow=[],
        checks=[],
        make_context=lambda obs, guard: None,
        thresholds=DEFAULT,
    )
    engine._step = "offload"
    engine._fire("probe")  # declared: idle -> probing
    assert engine.lifecycle.state is Phase.PROBING and not notes
    with pytest.raises(LifecycleError) as raised:
        engine._fire("verified")  # never declared from probing
    assert engine.lifecycle.state is Phase.PROBING  # nothing moved
    assert (raised.value.step, raised.value.phase, raised.value.trigger) == (
        "offload",
        "probing",
        "verified",
    )
    assert "step 'offload' cannot go 'verified' from phase 'probing'" in raised.value.message
    assert raised.value.hint is not None and "bug in fabwiz" in raised.value.hint


def test_a_fix_record_ends_in_one_fix_state() -> None:
    from wizard.engine import FixRecord, RunResult
    from wizard.model import FixState

    def rec(**kw: object) -> FixRecord:
        return FixRecord("addressing:host.mtu:spark1", "host.mtu", "spark1", **kw)  # type: ignore[arg-type]

    assert rec().final_state is FixState.DECLINED
    assert rec(applied=True).final_state is FixState.APPLIED
    assert rec(applied=True, verified=True).final_state is FixState.VERIFIED
    assert rec(applied=True, rolled_back=True).final_state is FixState.ROLLED_BACK
    assert rec(refused="locked by another session").final_state is FixState.REFUSED
    undone = rec(applied=True, verified=True, rolled_back=True, state=FixState.UNDONE_BY_ROLLBACK)
    assert undone.final_state is FixState.UNDONE_BY_ROLLBACK
    # a state given as its text (a resumed session's record) is read into the enum
    assert rec(state="interrupted").final_state is FixState.INTERRUPTED
    assert rec(state="", applied=True).final_state is FixState.APPLIED
    with pytest.raises(ValueError, match="half-done"):
        rec(state="half-done")
    result = RunResult(fixes=[undone])
    assert result.to_json()["fixes"][0]["state"] == "undone-by-rollback"


def test_nothing_to_drain_passes_only_the_nodes_whose_link_counters_were_read() -> None:
    from wizard.drain import CARRIER_PROBE
    from wizard.engine.steps import _nothing_to_drain
    from wizard.model import ProbeResult, Status
    from wizard.probes import Observations

    read = ProbeResult(target="spark1", kind="ssh", command=CARRIER_PROBE.command, stdout="x\n")
    obs = Observations(nodes={"spark1": {CARRIER_PROBE.name: read}})
    v = _nothing_to_drain(obs, ["spark1"])
    assert v.status is Status.PASS and v.targets == ()
    v = _nothing_to_drain(obs, ["spark1", "spark2"])
    assert v.status is Status.UNKNOWN and v.targets == ("spark2",)
    assert [e.status for e in v.evidence] == [Status.PASS, Status.UNKNOWN]
    assert v.summary.startswith("link counters not read on spark2")
