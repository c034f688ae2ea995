"""The golden export must still be the switch's running configuration: the stored file, read
back from the switch, against a fresh `/export`, menu by menu. Parsed real exports, and one lab
switch whose export follows its configuration."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from wizard import fixes, golden
from wizard.fabric import ApiPort
from wizard.lab.routeros.server import RouterOsServer
from wizard.lab.routeros.switch import SwitchState
from wizard.model import Status
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "fixtures" / "real" / "routeros-export"
V7 = REAL / "export-v7.24.4-crs504-roce-pfc-qos-second-bridge-roce.rsc"
FILE = "fabwiz-s1-golden.rsc"


def _real() -> str:
    if not V7.exists():
        pytest.skip(f"{V7} is absent (the shared real fixtures are not on this machine)")
    return V7.read_text()


def test_a_later_export_of_the_same_config_is_current_whatever_its_date() -> None:
    text = _real()
    later = text.replace("# 2026-09-24 13:32:13 by RouterOS", "# 2026-12-01 09:00:00 by RouterOS")
    assert later != text
    v = golden.judge_current("crs504", FILE, text, later)
    assert v.status is Status.PASS and v.fault == "persist.golden-export"
    assert v.summary == f"the golden export {FILE} on crs504 equals its running configuration"


def test_a_changed_menu_makes_it_stale_naming_the_menu_and_both_sides() -> None:
    text = _real()
    changed = text.replace(
        "set [ find default-name=qsfp28-2-1 ] l2mtu=9014 mtu=9000",
        "set [ find default-name=qsfp28-2-1 ] l2mtu=1592 mtu=1500",
    )
    assert changed != text
    v = golden.judge_current("crs504", FILE, text, changed)
    assert v.status is Status.FAIL
    assert v.summary.startswith(
        f"the golden export is stale: /interface ethernet differs between {FILE} and the "
        "running configuration of crs504"
    )
    (ev,) = v.evidence
    assert ev.command.endswith(": /interface ethernet")
    assert ev.observed == "running: set [ find default-name=qsfp28-2-1 ] l2mtu=1592 mtu=1500"
    assert ev.expected == f"{FILE}: set [ find default-name=qsfp28-2-1 ] l2mtu=9014 mtu=9000"


def test_fabwiz_scheduler_entries_are_not_configuration_and_garbage_is_unknown() -> None:
    text = _real()
    with_lock = text + '/system scheduler\nadd name=fabwiz-lock-s1 on-event=":log info x"\n'
    assert golden.judge_current("crs504", FILE, text, with_lock).status is Status.PASS
    other = text + '/system scheduler\nadd name=backup on-event=":log info x"\n'
    stale = golden.judge_current("crs504", FILE, text, other)
    assert stale.status is Status.FAIL and "/system scheduler differs" in stale.summary
    assert stale.evidence[0].expected == f"{FILE}: nothing"
    garbage = golden.judge_current("crs504", FILE, text, "this is not an export at all\n")
    assert garbage.status is Status.UNKNOWN and "does not parse" in garbage.summary
    unreadable = golden.judge_current("crs504", FILE, None, "", "not listed")
    assert unreadable.status is Status.UNKNOWN and "not listed" in unreadable.summary


def test_two_switches_merge_into_one_verdict_keeping_each_finding() -> None:
    text = _real()
    ok = golden.judge_current("crs804-a", FILE, text, text)
    bad = golden.judge_current(
        "crs804-b", FILE, text, text + "/ip address\nadd address=10.9.9.1/24 interface=bridge\n"
    )
    (merged,) = golden.merge([ok, bad])
    assert merged.status is Status.FAIL and merged.targets == ("crs804-a", "crs804-b")
    assert merged.summary == bad.summary and len(merged.evidence) == 2
    (both,) = golden.merge([ok, ok])
    assert both.status is Status.PASS and both.summary == ok.summary


@pytest.fixture
async def lab_switch() -> AsyncIterator[RouterOsTransport]:
    sw = SwitchState.new("crs804", "CRS804-4DDQ")
    server = RouterOsServer(sw, users={"fabwiz": "pw"})
    port = await server.start()
    target = RouterOsTarget(
        name="crs804", host="127.0.0.1", user="fabwiz", password="pw", port=port, timeout_s=30.0
    )
    try:
        async with RouterOsTransport(target) as t:
            yield t
    finally:
        await server.stop()


@pytest.mark.lab
async def test_the_lab_switch_golden_export_goes_stale_when_its_config_changes(
    lab_switch: RouterOsTransport,
) -> None:
    api = ApiPort(lab_switch)
    taken = await fixes.take_export(api, "crs804", "fabwiz-s1-golden")
    assert taken.verified
    same, now = await golden.check_current(api, "crs804", FILE, "fabwiz-s1-golden-check")
    assert same.status is Status.PASS and now is not None and now.verified
    ports = await api.call("/interface/bridge/port", "print")
    first = ports[0]
    await api.call(
        "/interface/bridge/port", "set", **{".id": first[".id"], "comment": "moved by hand"}
    )
    stale, now = await golden.check_current(api, "crs804", FILE, "fabwiz-s1-golden-check")
    assert stale.status is Status.FAIL
    assert "the golden export is stale: /interface bridge port differs" in stale.summary
    (ev,) = stale.evidence
    assert 'comment="moved by hand"' in ev.observed or "comment=moved by hand" in ev.observed
    assert f"interface={first['interface']}" in ev.observed
    # the stored golden file is what was taken; the fresh export carries the change
    assert await golden.read_stored(api, FILE) == taken.contents
    assert now is not None and "moved by hand" in now.contents
    missing, none = await golden.check_current(api, "crs804", "nope.rsc", "fabwiz-s1-x")
    assert missing.status is Status.UNKNOWN and none is None
    assert "nope.rsc is not listed by /file print" in missing.summary
