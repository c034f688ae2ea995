"""Faults survived on the lab: SSH and RouterOS API sessions cut mid-probe, mid-test and
mid-fix, nodes going away while probed, the switch rebooting mid-session, probes that never answer
and nodes that answer slowly. In each: no traceback, a message saying what happened and what to
do, and no event missing from the session log (rel_support.assert_nothing_lost)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rel_support import assert_nothing_lost, walk

from wizard.events import (
    ExportTaken,
    FixRefusedEvent,
    FixRolledBack,
    FixVerified,
    MeasurementTaken,
    Note,
    ProbeAnswered,
)
from wizard.fixes import same_config
from wizard.lab import Lab
from wizard.lab.faulthooks import FaultHooks
from wizard.lab.routeros.export import render_export

pytestmark = pytest.mark.lab

SPLIT = "fault-switch-offload-split-cage"
HEALTHY = "healthy-4node-crs804"


@pytest.fixture
async def lab(request: pytest.FixtureRequest) -> AsyncIterator[Lab]:
    the_lab = Lab(getattr(request, "param", HEALTHY), time_scale=100.0)
    await the_lab.start()
    the_lab.faults = FaultHooks(the_lab)  # type: ignore[attr-defined]
    try:
        yield the_lab
    finally:
        await the_lab.faults.stop()  # type: ignore[attr-defined]
        await the_lab.stop()


def hooks(lab: Lab) -> FaultHooks:
    return lab.faults  # type: ignore[attr-defined,no-any-return]


def notes(w: object, level: str | None = None) -> list[str]:
    return [n.text for n in w.of(Note) if level is None or n.level == level]  # type: ignore[attr-defined]


# --- SSH ----------------------------------------------------------------------------------------


async def test_ssh_dropped_mid_probe_is_reported_then_picked_up(lab: Lab, tmp_path: Path) -> None:
    hooks(lab).ssh("spark2", "partial", match="ibdev2netdev")
    w = await walk(lab, tmp_path, ["preflight", "drain"], traffic=False)
    assert hooks(lab).count("partial") == 1
    said = [t for t in notes(w, "error") if t.startswith("spark2 did not answer")]
    assert said and "SSH connection broke" in said[0] and "reconnects" in said[0]
    assert "spark2 is unreachable" in w.text and "the walk goes on without it" in w.text
    # picked up again at the next step: spark2 answers the drain step's probes
    later = [e for e in w.of(ProbeAnswered) if e.step == "drain" and e.result.target == "spark2"]
    assert later and all(e.result.error is None for e in later)
    assert_nothing_lost(w)


async def test_ssh_dropped_mid_bandwidth_test_is_no_evidence(lab: Lab, tmp_path: Path) -> None:
    # the client side of the first spark1 ib_write_bw (the one with the server's address)
    hooks(lab).ssh("spark1", "partial", match=r"ib_write_bw .* 10\.9\.")
    # preflight lists the traffic tools on each node: without it no bandwidth test runs at all
    w = await walk(lab, tmp_path, ["preflight", "direct_connect", "qos"])
    assert hooks(lab).count("partial") == 1
    ms = [e.measurement for e in w.of(MeasurementTaken)]
    lost = [m for m in ms if not m.valid]
    assert len(lost) == 1 and lost[0].reason.startswith("no result: spark1: the SSH connection")
    # never judged as a 0 Gb/s rail: no rail verdict cites it
    assert not [
        v
        for v in (e.verdict for e in w.events if hasattr(e, "verdict"))
        if v.is_finding and lost[0].target in " ".join(x.target for x in v.evidence)
    ]
    # the qos step measured every rail again: the lost one is judged after all
    assert not w.result.unjudged
    assert w.result.rails_gbps.get(lost[0].target, 0.0) >= 100.0
    assert_nothing_lost(w)


@pytest.mark.parametrize("lab", ["fault-host-duplicate-ip"], indirect=True)
async def test_ssh_dropped_mid_host_fix_the_backup_is_restored(lab: Lab, tmp_path: Path) -> None:
    before = {n: dict(node.files) for n, node in lab.world.nodes.items()}
    for node in lab.world.nodes:
        hooks(lab).ssh(node, "partial", match=r"tee /etc/netplan")  # written, answer lost
    w = await walk(lab, tmp_path, ["addressing"], traffic=False)
    rolled = w.of(FixRolledBack)
    assert rolled and "dead-man rollback" in rolled[0].reason
    assert "Fix stopped" in w.text and "re-run the step once the target answers again" in w.text
    hit = {t for t, _k, _c in hooks(lab).fired}
    assert hit  # the write went out and its answer was lost
    # on reconnect the wizard restores the backups at once (the timed revert armed before the
    # write stays as the safety net when a node does not answer)
    assert "restored from its backup now" in rolled[0].reason
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline and any(
        lab.world.nodes[n].files.get(p) != v for n in hit for p, v in before[n].items()
    ):
        await asyncio.sleep(0.2)
    for n in hit:
        netplan = {
            p: v
            for p, v in lab.world.nodes[n].files.items()
            if p.startswith("/etc/netplan") and not p.endswith(".fabwiz-bak")  # backups stay
        }
        assert netplan == {p: v for p, v in before[n].items() if p.startswith("/etc/netplan")}
    assert_nothing_lost(w)


# --- RouterOS API -------------------------------------------------------------------------------


def _switch_config_matches(lab: Lab, w: object) -> tuple[bool, str]:
    export = w.of(ExportTaken)[0]  # type: ignore[attr-defined]
    sw = lab.world.switches[export.switch]
    return same_config(export.contents, render_export(sw)), export.file


@pytest.mark.parametrize("lab", [SPLIT], indirect=True)
@pytest.mark.parametrize(
    ("kind", "match", "case"),
    [
        ("drop-after", r"^/system/scheduler/add .*name=fabwiz-rb-", "rollback armed, reply lost"),
        ("drop-before", r"^/interface/bridge/port/remove", "before the change reaches the switch"),
        ("drop-after", r"^/interface/bridge/port/remove", "during the change: one port removed"),
    ],
)
async def test_api_dropped_mid_fix_rollback_runs_and_state_is_reported(
    lab: Lab, tmp_path: Path, kind: str, match: str, case: str
) -> None:
    sw = next(iter(lab.api))
    hooks(lab).api(sw, kind, match=match)  # type: ignore[arg-type]
    w = await walk(lab, tmp_path, ["offload"], traffic=False)
    assert hooks(lab).count(kind) == 1, case
    assert w.of(ExportTaken), "the export comes first"
    stopped = [*w.of(FixRolledBack), *w.of(FixRefusedEvent)]
    assert len(stopped) == 1
    reason = stopped[0].reason
    assert "on reconnect, rollback fabwiz-rb-" in reason
    # the --json record says the same: applied (and rolled back) only if the change went out
    record = w.result.fixes[-1]
    assert record.applied == record.rolled_back == isinstance(stopped[0], FixRolledBack)
    same, file = _switch_config_matches(lab, w)
    # the wizard says what it found, and what it says is true
    assert f"{'equals' if same else 'DIFFERS from'} the pre-fix export {file}" in reason
    assert "Fix stopped" in w.text
    # the dead-man entry never lingers: it ran (or was never armed) and is gone
    assert not [s for s in lab.world.switches[sw].tables["scheduler"] if "fabwiz-rb" in s["name"]]
    ports = {p["interface"]: p["bridge"] for p in lab.world.switches[sw].tables["bridge-port"]}
    assert ports["qsfp56-dd-1-2"] == "bridge", "the removed port is back where it was"
    assert_nothing_lost(w)


@pytest.mark.parametrize("lab", [SPLIT], indirect=True)
async def test_api_dropped_after_the_change_fix_still_verified(lab: Lab, tmp_path: Path) -> None:
    sw = next(iter(lab.api))
    removes = [
        p
        for p in lab.world.switches[sw].tables["bridge-port"]
        if p["bridge"] == "bridge" and p["interface"].startswith("qsfp56-dd")
    ]
    # the last remove is applied and answered, then the session drops
    hooks(lab).api(
        sw, "drop-after-reply", match=r"^/interface/bridge/port/remove", after=len(removes) - 1
    )
    w = await walk(lab, tmp_path, ["offload"], traffic=False)
    assert hooks(lab).count("drop-after-reply") == 1
    verified = w.of(FixVerified)
    rolled = w.of(FixRolledBack)
    assert verified or rolled
    if verified and verified[-1].ok:
        assert not [
            s for s in lab.world.switches[sw].tables["scheduler"] if "fabwiz-rb" in s["name"]
        ]
        ports = {p["interface"]: p["bridge"] for p in lab.world.switches[sw].tables["bridge-port"]}
        assert "qsfp56-dd-1-2" not in ports
    else:
        same, file = _switch_config_matches(lab, w)
        assert same, f"rolled back, but the switch differs from {file}"
    assert_nothing_lost(w)


@pytest.mark.parametrize("lab", [SPLIT], indirect=True)
async def test_switch_reboot_mid_session_nothing_keys_on_a_stale_id(
    lab: Lab, tmp_path: Path
) -> None:
    sw = next(iter(lab.api))
    ids_before = {p["interface"]: p[".id"] for p in lab.world.switches[sw].tables["bridge-port"]}
    # preflight reads the bridge ports (their ids), then the switch reboots under the wizard
    hooks(lab).api(sw, "reboot", match=r"^/interface/bridge/port/print")
    w = await walk(lab, tmp_path, ["preflight", "offload"], traffic=False)
    state = lab.world.switches[sw]
    assert state.boot_count == 1
    ids_after = {p["interface"]: p[".id"] for p in state.tables["bridge-port"]}
    assert any(ids_after.get(k) != v for k, v in ids_before.items()), "ids changed at reboot"
    fixed = [v for v in w.of(FixVerified) if v.fault == "switch.offload-split-cage"]
    assert fixed and fixed[-1].ok, w.text[-3000:]
    assert "no such item" not in w.text and "no item with" not in w.text
    assert "qsfp56-dd-1-2" not in {p["interface"] for p in state.tables["bridge-port"]}
    assert_nothing_lost(w)


# --- nodes going away, probes that never answer, slow nodes ------------------------------------


@pytest.mark.parametrize("kind", ["reboot", "ac_drain"])
async def test_node_going_away_while_probed_is_reported_then_picked_up(
    lab: Lab, tmp_path: Path, kind: str
) -> None:
    boot = lab.world.nodes["spark3"].boot_id
    hooks(lab).ssh("spark3", kind, match="ibdev2netdev", away_s=0.2)  # type: ignore[arg-type]
    w = await walk(lab, tmp_path, ["preflight", "qos", "addressing"], traffic=False)
    assert lab.world.nodes["spark3"].boot_id != boot
    assert "spark3 is unreachable" in w.text
    said = [t for t in notes(w, "error") if t.startswith("spark3 did not answer")]
    assert said
    back = [
        e for e in w.of(ProbeAnswered) if e.step == "addressing" and e.result.target == "spark3"
    ]
    assert back and all(e.result.error is None for e in back)
    assert_nothing_lost(w)


async def test_probe_that_never_answers_times_out_and_the_rest_goes_on(
    lab: Lab, tmp_path: Path
) -> None:
    hooks(lab).ssh("spark2", "hang", match="ibdev2netdev")
    sw = next(iter(lab.api))
    hooks(lab).api(sw, "hang", match=r"^/interface/bridge/host/print")

    def short_timeouts(wiring: object) -> None:
        fabric = wiring.fabric  # type: ignore[attr-defined]
        fabric.sweeper.batch_timeout_s = 1.0
        for t in fabric.transports.values():
            t.target = dataclasses.replace(t.target, timeout_s=1.0)

    t0 = time.monotonic()
    w = await walk(lab, tmp_path, ["preflight"], traffic=False, tweak=short_timeouts)
    took = time.monotonic() - t0
    assert took < 8.0, f"a hung probe held the walk for {took:.1f} s"
    said = [t for t in notes(w, "error") if t.startswith("spark2 did not answer")]
    assert said and "gave no answer within 1 s" in said[0]
    api_errs = [
        e.result.error for e in w.of(ProbeAnswered) if e.result.target == sw and e.result.error
    ]
    assert api_errs and "gave no answer within" in api_errs[0]
    ok = {e.result.target for e in w.of(ProbeAnswered) if e.result.error is None}
    assert {"spark1", "spark3", "spark4"} <= ok
    assert_nothing_lost(w)


async def test_very_slow_node_is_waited_for(lab: Lab, tmp_path: Path) -> None:
    hooks(lab).ssh("spark4", "slow", delay_s=0.4, times=0)
    w = await walk(lab, tmp_path, ["preflight"], traffic=False)
    assert hooks(lab).count("slow") >= 1  # its one script (the per-rail probes in its loop)
    assert "unreachable" not in w.text
    slow = [e.result for e in w.of(ProbeAnswered) if e.result.target == "spark4"]
    assert slow and all(r.error is None for r in slow)
    assert max(r.duration_s for r in slow) >= 0.4
    assert w.result.healthy_before is True
    assert_nothing_lost(w)
