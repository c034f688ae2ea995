"""`/export` wraps long lines as RouterOS does and `terse` puts the path on every line."""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard.lab.routeros.export import render_export, wrap
from wizard.lab.routeros.menus import EthernetMenu
from wizard.lab.routeros.switch import SwitchState
from wizard.parsers.routeros import parse_export

REAL = (
    Path(__file__).resolve().parents[3].parent / "shared" / "fixtures" / "real" / "routeros-export"
)


def test_wrapping_matches_a_real_export() -> None:
    path = REAL / "export-v7.24.4-crs504-roce-pfc-qos-second-bridge-roce.rsc"
    if not path.exists():
        pytest.skip("shared fixtures absent")
    lines = path.read_text().splitlines()
    start = next(i for i, x in enumerate(lines) if x.endswith("\\") and not x.startswith(" "))
    group = [lines[start]]
    while group[-1].endswith("\\"):
        group.append(lines[start + len(group)])
    logical = group[0][:-1] + "".join(g.strip().removesuffix("\\") for g in group[1:])
    assert wrap(logical) == group


def test_export_wraps_terse_does_not_and_both_parse_back() -> None:
    sw = SwitchState.new("crs804", "CRS804-4DDQ")
    EthernetMenu().set(sw, "qsfp56-dd-1-1", {"comment": "spark1 port0 leg, rail 1 and 2 " * 3})
    text = render_export(sw)
    assert max(len(x) for x in text.splitlines()) <= 79
    assert any(x.endswith("\\") for x in text.splitlines())
    terse = render_export(sw, terse=True)
    assert any(len(x) > 79 for x in terse.splitlines())
    assert all(x.startswith(("/", "#")) for x in terse.splitlines())
    a = [(i.menu, i.command, i.target, i.args) for i in parse_export(text).export]
    b = [(i.menu, i.command, i.target, i.args) for i in parse_export(terse).export]
    assert a == b and a
