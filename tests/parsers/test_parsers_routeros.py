"""RouterOS replies on every real sample: API rows/sentences, CLI prints, /log, /export."""

from __future__ import annotations

from typing import Any

import pytest
from parsers_support import assert_covers, load_real

from wizard.errors import ParseError
from wizard.parsers.routeros import parse_export, parse_routeros, typed_row, typed_value

API: dict[str, dict[str, Any]] = {  # format, rows, values of the first row, traps, done
    "bridge-port-print-api-reply-words-true-false-hw-offload-group-v6.txt": {
        "format": "api-sentences",
        "rows": 1,
        "first": {
            "nextid": "*1",
            "bridge": "bridgeGestio",
            "hw": True,
            "hw-offload": True,
            "hw-offload-group": "switch1",
            "inactive": False,
            "interface": "ether4",
            "path-cost": 10,
            "role": "root-port",
            "designated-cost": 0,
        },
    },
    "interface-bridge-host-print-librouteros.json": {
        "format": "api",
        "rows": 3,
        "first": {
            ".id": "*131",
            "bridge": "Inside",
            "external": False,
            "local": True,
            "mac-address": "11:33:55:77:99:AA",
        },
    },
    "interface-print-running-false-librouteros.json": {
        "format": "api",
        "rows": 1,
        "first": {
            ".id": "*1",
            "name": "ether1poe",
            "running": False,
            "l2mtu": 1592,
            "max-l2mtu": 9578,
            "mtu": 1500,
        },
    },
    "raw-api-interface-getall-tagged-re-done.txt": {
        "format": "api-sentences",
        "rows": 2,
        "done": True,
        "first": {".id": "*1", "disabled": False, "running": True, "name": "ether1", "mtu": 1500},
    },
    "raw-api-python-client-session-login-getall.txt": {
        "format": "api-sentences",
        "rows": 1,
        "done": True,
        "first": {".id": "*1", "name": "admin", "group": "full", "disabled": False},
    },
    "raw-api-resource-print-proplist-oid-re-done.txt": {
        "format": "api-sentences",
        "rows": 1,
        "done": True,
        "first": {"uptime": "01:22:53", "cpu-load": 0, "cpu-load.oid": ".1.3.6.1.2.1.25.3.3.1.2.1"},
    },
    "raw-api-trap-interrupted-tag.txt": {
        "format": "api-sentences",
        "rows": 0,
        "traps": [("interrupted", 2, "2")],
    },
    "routeros_api-python-ip-address-get-strings-and-failure-dynamic.txt": {
        "format": "api",
        "rows": 1,
        "first": {"id": "*27C", "address": "111.111.11.192/32", "dynamic": True, "invalid": False},
        "traps": [('Error "failure: can not change dynamic address"', None, None)],
    },
    "system-resource-print-v7.4-ccr2004-librouteros.json": {
        "format": "api",
        "rows": 1,
        "first": {
            "version": "7.4 (stable)",
            "cpu-count": 4,
            "cpu-load": 0,
            "board-name": "CCR2004-16G-2S+",
            "total-memory": 4227858432,
        },
    },
}

CLI: dict[str, dict[str, Any]] = {  # format, path, rows, first row values, flags of rows
    "bridge-host-print-flags-D-DL.txt": {
        "format": "cli-table",
        "path": "/interface/bridge/host",
        "rows": 4,
        "first": {
            "mac-address": "B8:69:F4:C9:EE:D7",
            "on-interface": "ether1",
            "bridge": "bridge1",
            "vid": None,
        },
        "flags": [("D",), ("D",), ("D", "L"), ("D", "L")],
    },
    "bridge-port-monitor-two-ports-columns.txt": {
        "format": "cli-monitor",
        "path": "/interface/bridge/port",
        "rows": 2,
        "first": {
            "interface": "ether1",
            "role": "alternate-port",
            "forwarding": False,
            "actual-path-cost": 2000,
            "internal-root-path-cost": 2000,
            "designated-bridge-id": "0x7000.64:D1:54:C7:3A:6E",
            "last-topology-change": None,
            "hw-offload-group": "switch1",
        },
        "second": {
            "interface": "ether2",
            "role": "designated-port",
            "forwarding": True,
            "internal-root-path-cost": None,
            "last-topology-change": "34m53s",
            "tx-rx-bpdu": "4/1049",
        },
    },
    "bridge-port-print-abbrev-pr-dynamic.txt": {
        "format": "cli-table",
        "path": "/interface/bridge/port",
        "rows": 6,
        "first": {
            "interface": "LAN1",
            "bridge": "bridge1",
            "hw": True,
            "pvid": 1,
            "priority": "0x80",
            "path-cost": 10,
            "horizon": "none",
        },
        "flags": [(), ("D",), ("D",), (), ("D",), ("D",)],
    },
    "bridge-port-print-v6style-legend-no-H.txt": {
        "format": "cli-table",
        "path": "/interface/bridge/port",
        "rows": 2,
        "first": {"interface": "ether1", "hw": True, "pvid": 100},
        "flags": [(), ()],
    },
    "bridge-port-print-v7-columns-HW-OFFLOAD-H-flags.txt": {
        "format": "cli-table",
        "path": "/interface/bridge/port",
        "rows": 4,
        "first": {
            "interface": "ether2",
            "bridge": "bridge1",
            "hw": True,
            "edge": "auto",
            "pvid": 1,
            "frame-types": "admit-all",
        },
        "flags": [("H",)] * 4,
    },
    "bridge-print-v7-wrapped.txt": {
        "format": "cli-detail",
        "path": "/interface/bridge",
        "rows": 1,
        "first": {
            "name": "bridge1",
            "mtu": "auto",
            "actual-mtu": 1500,
            "l2mtu": 65535,
            "protocol-mode": "rstp",
            "vlan-filtering": False,
            "dhcp-snooping": False,
        },
        "flags": [("R",)],
    },
    "ethernet-monitor-ether2-1G-link-ok.txt": {
        "format": "cli-monitor",
        "path": "/interface/ethernet",
        "rows": 1,
        "first": {
            "name": "ether2",
            "status": "link-ok",
            "auto-negotiation": "done",
            "rate": "1Gbps",
            "full-duplex": True,
        },
    },
    "ethernet-monitor-qsfp28-supported-advertising-truncated.txt": {
        "format": "cli-monitor",
        "path": "/interface/ethernet",
        "rows": 1,
        "first": {
            "name": "qsfp28-1-1",
            "advertising": "10G-baseSR-LR,25G-baseSR-LR,100G-baseSR4-LR4",
            "sfp-supported": "10G-baseSR-LR,25G-baseSR-LR,100G-baseSR4-LR4",
        },
    },
    "ethernet-print-stats-5ports-columns.txt": {
        "format": "cli-monitor",
        "path": "/interface/ethernet",
        "rows": 5,
        "first": {
            "name": "ether1",
            "driver-rx-byte": 182334805898,
            "rx-bytes": 178663398808,
            "tx-bytes": 16098535973,
            "rx-too-long": 0,
        },
    },
    "interface-print-detail-v6-x86.txt": {
        "format": "cli-detail",
        "path": None,
        "rows": 11,
        "first": {
            "name": "ether1",
            "default-name": "ether1",
            "type": "ether",
            "mtu": 1500,
            "mac-address": "00:1C:42:36:52:90",
            "last-link-up-time": "sep/25/2018 06:30:04",
            "link-downs": 0,
        },
    },
    "interface-print-l2mtu-max-l2mtu-prestera.txt": {
        "format": "cli-table",
        "path": "/interface",
        "rows": 1,
        "first": {
            "name": "sfp-sfpplus1",
            "type": "ether",
            "actual-mtu": 1500,
            "l2mtu": 1584,
            "max-l2mtu": 10218,
            "mac-address": "64:D1:54:FF:E3:7F",
        },
        "flags": [("R",)],
    },
    "log-print-where-topics-dhcp.txt": {"format": "log", "path": "/log", "rows": 0},
    "switch-qos-monitor-once-crs312.txt": {
        "format": "cli-monitor",
        "path": "/interface/ethernet/switch/qos",
        "rows": 1,
        "first": {
            "total-packet-cap": 11480,
            "total-byte-cap": "2648.0KiB",
            "lossless-pool-packet-cap": 2301,
            "lossless-pool-byte-use": 0,
        },
    },
    "switch-qos-port-print-crs3xx.txt": {
        "format": "cli-table",
        "path": "/interface/ethernet/switch/qos/port",
        "rows": 27,
        "first": {
            "name": "ether1",
            "switch": "switch1",
            "profile": "voip",
            "trust-l2": "ignore",
            "trust-l3": "ignore",
            "tx-manager": "default",
        },
    },
    "switch-qos-port-print-pfc-crs812-rx-tx-pause.txt": {
        "format": "cli-monitor",
        "path": "/interface/ethernet/switch/qos/port",
        "rows": 1,
        "first": {
            "name": "sfp56-5",
            "pfc": "roce",
            "rx-pause": 287,
            "tx-pause": 46,
            "pfc3-use": 2184200,
        },
    },
    "switch-qos-tx-manager-queue-print.txt": {
        "format": "cli-table",
        "path": "/interface/ethernet/switch/qos/tx-manager/queue",
        "rows": 8,
        "first": {
            "tx-manager": "default",
            "traffic-class": 0,
            "schedule": "low-priority-group",
            "weight": 1,
            "use-shared-buffers": False,
        },
    },
    "system-resource-cpu-print-rb1100-old.txt": {
        "format": "cli-table",
        "path": "/system/resource/cpu",
        "rows": 1,
        "first": {"cpu": 0, "load": 5, "irq": 0, "disk": 0},
    },
    "system-resource-print-v5-rb1100-with-prompt.txt": {
        "format": "cli-monitor",
        "path": "/system/resource",
        "rows": 1,
        "first": {
            "uptime": "2w1d23h34m57s",
            "version": "5.0rc1",
            "cpu-load": "9%",
            "cpu-count": 1,
            "board-name": "RB1100",
        },
    },
    "system-resource-print-v7.24rc2-hap-ax-lite.txt": {
        "format": "cli-monitor",
        "path": "/system/resource",
        "rows": 1,
        "first": {
            "version": "7.24rc2",
            "cpu-load": "2%",
            "cpu-count": 2,
            "board-name": "hAP ax lite LTE6",
            "build-time": "2023-08-31 13:55:47",
        },
    },
    "system-routerboard-print-v6-rb3011.txt": {
        "format": "cli-monitor",
        "path": None,
        "rows": 1,
        "first": {
            "routerboard": True,
            "model": "RouterBOARD 3011UiAS",
            "current-firmware": "3.41",
            "upgrade-firmware": "6.42.2",
        },
    },
}


def test_every_routeros_fixture_has_expectations() -> None:
    assert_covers("routeros-api", API)
    assert_covers("routeros-cli", CLI)
    assert_covers("routeros-export", EXPORT)


@pytest.mark.parametrize("name", sorted(API))
def test_routeros_api_real(name: str) -> None:
    r = parse_routeros(load_real("routeros-api", name))
    want = API[name]
    assert r.format == want["format"]
    assert len(r.rows) == want["rows"]
    for key, value in want.get("first", {}).items():
        assert r.rows[0][key] == value, key
    assert [(t.message, t.category, t.tag) for t in r.traps] == want.get("traps", [])
    if "done" in want:
        assert r.done is want["done"]


@pytest.mark.parametrize("name", sorted(CLI))
def test_routeros_cli_real(name: str) -> None:
    r = parse_routeros(load_real("routeros-cli", name))
    want = CLI[name]
    assert (r.format, r.path, len(r.rows)) == (want["format"], want["path"], want["rows"])
    for key, value in want.get("first", {}).items():
        assert r.rows[0][key] == value, key
    for key, value in want.get("second", {}).items():
        assert r.rows[1][key] == value, key
    if "flags" in want:
        assert list(r.flags) == want["flags"]


def test_bridge_port_words_multiline_debug_info() -> None:
    r = parse_routeros(
        load_real(
            "routeros-api", "bridge-port-print-api-reply-words-true-false-hw-offload-group-v6.txt"
        )
    )
    info = r.rows[0]["debug-info"]
    assert isinstance(info, str) and "role:Root (2)" in info and "migration:SENSING" in info


def test_log_entries() -> None:
    r = parse_routeros(load_real("routeros-cli", "log-print-where-topics-dhcp.txt"))
    assert [(e.time, e.topics) for e in r.log] == [("11:42:32", ("dhcp", "info"))] * 2
    assert r.log[1].message == "defconf assigned 192.168.88.37 for B0:E4:5C:27:EF:F2 Samsung"
    v7 = parse_routeros(
        " 07-10 06:42:50 bridge,info hardware offloading activated on bridge "
        '"bridge1" ports: qsfp28-4-1\n'
    )
    assert v7.log[0].time == "07-10 06:42:50"
    assert v7.log[0].message.startswith("hardware offloading activated on bridge")


def test_ethernet_stats_columns() -> None:
    r = parse_routeros(load_real("routeros-cli", "ethernet-print-stats-5ports-columns.txt"))
    assert [row["name"] for row in r.rows] == ["ether1", "ether2", "ether3", "ether4", "ether5"]
    assert [row["rx-bytes"] for row in r.rows] == [178663398808, 0, 5983590739, 1358140795, 0]
    assert [row["driver-tx-byte"] for row in r.rows] == [15881099971, 0, 70502669211, 60498056, 53]


EXPORT: dict[str, dict[str, Any]] = {
    "export-terse-show-sensitive-v7.4-751G.txt": {
        "header": {"version": "7.4", "model": "751G-2HnD", "date": "aug/13/2022 21:34:26"},
        "items": 2,
        "last": (
            "/ip address",
            "add",
            None,
            {"address": "1.1.1.1/24", "interface": "ether1", "comment": "some comment with spaces"},
        ),
    },
    "export-v6.42.5-small.txt": {
        "header": {"version": "6.42.5", "software_id": "9EER-511K"},
        "items": 13,
        "last": ("/tool user-manager database", "set", None, {"db-path": "user-manager"}),
    },
    "export-v7.24.4-crs504-roce-pfc-qos-second-bridge-roce.rsc": {
        "header": {"version": "7.24.4", "model": "CRS504-4XQ", "software_id": "J87S-AHVQ"},
        "items": 54,
        "last": ("/system routerboard settings", "set", None, {"enter-setup-on": "delete-key"}),
    },
}


@pytest.mark.parametrize("name", sorted(EXPORT))
def test_routeros_export_real(name: str) -> None:
    r = parse_routeros(load_real("routeros-export", name))
    want = EXPORT[name]
    assert r.format == "export"
    for key, value in want["header"].items():
        assert r.header[key] == value, key
    assert len(r.export) == want["items"]
    last = r.export[-1]
    assert (last.menu, last.command, last.target, last.args) == want["last"]


def test_export_continuations_and_qos() -> None:
    r = parse_export(
        load_real("routeros-export", "export-v7.24.4-crs504-roce-pfc-qos-second-bridge-roce.rsc")
    )
    eth = r.items("/interface/ethernet")
    adv = next(i for i in eth if i.target == "[ find default-name=qsfp28-1-3 ]")
    assert adv.args["advertise"].endswith(
        "40G-baseSR4-LR4,40G-baseCR4,25G-baseSR-LR,25G-baseCR,50G-baseSR2-LR2,50G-baseCR2"
    )
    assert "2.5G-baseT,2.5G-baseX" in adv.args["advertise"]
    qos = r.items("/interface ethernet switch qos port")
    assert [(i.target, i.args["pfc"], i.args["trust-l3"]) for i in qos] == [
        (f"qsfp28-{n}-1", "pfc-tc3", "trust") for n in range(1, 5)
    ]
    assert qos[0].args["egress-rate-queue3"] == "100.0Gbps"
    pfc = r.items("/interface ethernet switch qos priority-flow-control")[0]
    assert pfc.args == {
        "name": "pfc-tc3",
        "pause-threshold": "90%",
        "resume-threshold": "70%",
        "rx": "yes",
        "traffic-class": "3",
        "tx": "yes",
    }
    ports = r.items("/interface bridge port")
    assert [(p.args["bridge"], p.args["interface"]) for p in ports][:2] == [
        ("bridge", "ether1"),
        ("bridge-roce", "qsfp28-1-1"),
    ]
    switch = r.items("/interface ethernet switch")[0]
    assert (switch.command, switch.target, switch.args) == (
        "set",
        "switch1",
        {"qos-hw-offloading": "yes"},
    )


def test_export_terse_and_comment_inside_group() -> None:
    text = (
        "# 2026-01-01 00:00:00 by RouterOS 7.24.4\n"
        "/interface bridge port add bridge=bridge interface=qsfp56-dd-1-1\n"
        "/interface ethernet\n"
        "set [ find default-name=qsfp56-dd-1-1 ] auto-negotiation=no \\\n"
        "    speed=200G-baseCR4\n"
        "# unsupported speed\n"
        "set [ find default-name=qsfp56-dd-1-5 ] auto-negotiation=no\n"
    )
    r = parse_export(text)
    assert [(i.menu, i.command, i.target) for i in r.export] == [
        ("/interface bridge port", "add", None),
        ("/interface ethernet", "set", "[ find default-name=qsfp56-dd-1-1 ]"),
        ("/interface ethernet", "set", "[ find default-name=qsfp56-dd-1-5 ]"),
    ]
    assert r.export[1].args == {"auto-negotiation": "no", "speed": "200G-baseCR4"}


def test_typed_values() -> None:
    assert typed_value("true") is True and typed_value("no") is False
    assert typed_value("1500") == 1500 and typed_value("*1A") == "*1A"
    assert typed_value("2 969 461 776 402") == 2969461776402
    assert typed_row({"hw": "yes", "id": "*5", "mtu": 9000}) == {
        "hw": True,
        "id": "*5",
        "mtu": 9000,
    }


def test_garbage_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_routeros("\n\n")
