"""Scheduler entries really run their on-event scripts when due on the switch clock."""

from __future__ import annotations

import re

from ros_helpers import FakeClock

from wizard.lab.routeros import script
from wizard.lab.routeros.export import render_export
from wizard.lab.routeros.menus import BridgePortMenu, MenuError, SchedulerMenu
from wizard.lab.routeros.switch import SwitchState


def test_split_and_tokenize() -> None:
    text = (
        "/interface bridge port set [find interface=X] hw=yes; :delay 5s\n# c\n"
        'add comment="a \\"b\\" c" \\\n    interface=Y'
    )
    assert script.split_commands(text) == [
        "/interface bridge port set [find interface=X] hw=yes",
        ":delay 5s",
        'add comment="a \\"b\\" c" interface=Y',
    ]
    assert script.tokenize('add comment="a \\"b\\" c" interface=Y') == [
        "add",
        'comment=a "b" c',
        "interface=Y",
    ]


def test_dead_man_rollback_with_interval(crs804: SwitchState, clock: FakeClock) -> None:
    SchedulerMenu().add(
        crs804,
        {
            "name": "fabwiz-rollback",
            "interval": "2m",
            "on-event": "/interface bridge port set [find interface=qsfp56-dd-1-1] hw=yes\n"
            "/system scheduler remove [find name=fabwiz-rollback]",
        },
    )
    BridgePortMenu().set(crs804, "qsfp56-dd-1-1", {"hw": "no"})
    assert not crs804.hw_offload("qsfp56-dd-1-1")
    row = SchedulerMenu().rows(crs804)[0]
    assert row["next-run"] == "2026-09-21 14:15:20" and row["run-count"] == "0"
    clock.now += 119
    crs804.tick()
    assert not crs804.hw_offload("qsfp56-dd-1-1")
    clock.now += 1
    crs804.tick()
    assert crs804.hw_offload("qsfp56-dd-1-1")
    assert crs804.tables["scheduler"] == []


def test_rollback_with_start_date_and_time_and_delay(crs804: SwitchState, clock: FakeClock) -> None:
    # engine arms "at 14:16:00 today", removing the split-cage fix then re-adding ports
    crs804.tables["bridge-port"] = [
        p for p in crs804.tables["bridge-port"] if p["interface"] != "qsfp56-dd-2-3"
    ]
    SchedulerMenu().add(
        crs804,
        {
            "name": "rb",
            "start-date": "2026-09-21",
            "start-time": "14:16:00",
            "on-event": ':log warning "fabwiz rollback"; /interface bridge port; :delay 10s; '
            "add bridge=bridge interface=qsfp56-dd-2-3 comment=restored; "
            '/interface ethernet set [find default-name~"qsfp56-dd-3-[15]"] l2mtu=9000',
        },
    )
    crs804.tick(clock.now + 159)
    assert crs804.tables["log"][-1]["message"] != "fabwiz rollback"
    clock.now += 160
    crs804.tick()
    assert crs804.tables["log"][-1]["message"] == "fabwiz rollback"
    assert crs804.bridge_port("qsfp56-dd-2-3") is None  # suspended at :delay
    clock.now += 10
    crs804.tick()
    assert crs804.bridge_port("qsfp56-dd-2-3") is not None
    assert crs804.ether("qsfp56-dd-3-1")["l2mtu"] == "9000"
    assert crs804.ether("qsfp56-dd-3-5")["l2mtu"] == "9000"
    assert crs804.ether("qsfp56-dd-3-2")["l2mtu"] == "9216"
    row = SchedulerMenu().rows(crs804)[0]
    assert (row["run-count"], row["next-run"]) == ("1", "")  # interval 0: ran once


def test_find_with_regex_and_and(crs804: SwitchState, clock: FakeClock) -> None:
    script.run(
        crs804,
        '/interface bridge port remove [find bridge=bridge and interface~"qsfp56-dd-1"]',
        owner="t",
        now=clock.now,
    )
    assert [p["interface"] for p in crs804.tables["bridge-port"]][:2] == ["ether1", "qsfp56-dd-2-1"]
    script.run(
        crs804,
        "/interface ethernet switch qos port set qsfp56-dd-2-1 trust-l3=keep pfc=disabled",
        owner="t",
        now=clock.now,
    )
    assert crs804.lossless("qsfp56-dd-2-1")


def test_failing_script_is_logged_and_stops(crs804: SwitchState, clock: FakeClock) -> None:
    script.run(
        crs804,
        "/interface bridge port set [find interface=qsfp56-dd-1-1] hw=maybe; "
        "/system identity set name=changed",
        owner="rb",
        now=clock.now,
    )
    last = crs804.tables["log"][-1]
    assert last["topics"] == "script,error"
    assert "input does not match any value of hw" in last["message"]
    assert crs804.tables["identity"][0]["name"] == "crs804"


def test_export_imports_back(crs804: SwitchState, clock: FakeClock) -> None:
    text = render_export(crs804)
    assert max(len(x) for x in text.splitlines()) <= 79  # RouterOS wraps long lines
    lines = re.sub(r"\\\n[ \t]*", "", text).splitlines()  # the logical lines
    assert lines[0] == "# 2026-09-21 14:13:20 by RouterOS 7.23.1"
    assert lines[3:5] == ["# model = CRS804-4DDQ", f"# serial number = {crs804.serial}"]
    assert (
        "/interface bridge port" in lines
        and "add bridge=bridge comment=defconf interface=ether1" in lines
    )
    assert (
        "set [ find default-name=qsfp56-dd-1-1 ] auto-negotiation=no fec-mode=fec91 l2mtu=9216 mtu=9000 speed=200G-baseCR4"
        in lines
    )
    # wipe the bridge ports, then import only that section back
    crs804.tables["bridge-port"].clear()
    crs804.recompute()
    ports = "\n".join(
        lines[lines.index("/interface bridge port") : lines.index("/system identity")]
    )
    script.run(crs804, ports, owner="import", now=clock.now)
    assert crs804.hw_offloaded_bridge() == "bridge" and len(crs804.tables["bridge-port"]) == 33


def test_scheduler_validation(crs804: SwitchState) -> None:
    SchedulerMenu().add(crs804, {"name": "a", "interval": "1m"})
    try:
        SchedulerMenu().add(crs804, {"name": "a", "interval": "1m"})
    except MenuError as exc:
        assert exc.message == "failure: item with such name already exists"
    else:
        raise AssertionError("duplicate accepted")


def test_scheduler_export_roundtrip_and_slash_form(crs804: SwitchState, clock: FakeClock) -> None:
    on_event = '/interface/bridge/port/set [find interface="qsfp56-dd-2-1"] hw=yes\n:log info "done \\$x"'  # `$` is a variable even inside quotes: a literal one is escaped
    SchedulerMenu().add(crs804, {"name": "rb", "interval": "1m", "on-event": on_event})
    text = render_export(crs804, path=("system", "scheduler"), terse=True)
    line = text.splitlines()[-1].removeprefix("/system scheduler ")
    assert line.startswith("add interval=1m name=rb on-event=")
    assert '\\"qsfp56-dd-2-1\\"' in line and "\\n" in line and "\\$x" in line
    crs804.tables["scheduler"].clear()
    script.run(crs804, "/system scheduler\n" + line, owner="import", now=clock.now)
    assert crs804.tables["scheduler"][0]["on-event"] == on_event
    BridgePortMenu().set(crs804, "qsfp56-dd-2-1", {"hw": "no"})
    crs804.tick(clock.now + 60)
    assert crs804.hw_offload("qsfp56-dd-2-1")
    assert crs804.tables["log"][-1]["message"] == "done $x"


def test_startup_entries_run_after_reboot(crs804: SwitchState, clock: FakeClock) -> None:
    SchedulerMenu().add(
        crs804, {"name": "boot", "start-time": "startup", "on-event": ":log info booted"}
    )
    crs804.tick()
    assert crs804.tables["log"][-1]["message"] != "booted"
    crs804.reboot()
    crs804.tick()
    assert [e["message"] for e in crs804.tables["log"] if e["topics"] == "script,info"] == [
        "booted"
    ]
