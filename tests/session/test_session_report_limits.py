"""A report draws against the limits its session ran with: the expectations table with the
inventory's overrides the session start recorded, never the bare defaults."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from click.testing import CliRunner
from session_helpers import RAIL, fix_session

from screens.cli import cli
from screens.report_limits import recorded_limits
from wizard.events import SessionStarted
from wizard.session import SessionLog, load_session

OVERRIDES = {"rail_switched_gbps": 98.0, "bidir_rail_gbps": 190.0, "nccl_busbw_2node": 20.5}


def _session(folder: Path, overrides: dict[str, object]) -> Path:
    events = fix_session()
    start = events[0]
    assert isinstance(start, SessionStarted)
    options = {"context": {"expectations": overrides}, "lab": False}
    log = SessionLog.create(folder)
    for ev in [dataclasses.replace(start, options=options), *events[1:]]:
        log.write(ev)
    log.close()
    return log.folder


def test_charts_map_and_session_table_use_the_recorded_overrides(tmp_path: Path) -> None:
    folder = _session(tmp_path / "s", OVERRIDES)
    limits = recorded_limits(load_session(folder).started)
    assert limits.expectations.rail_switched_gbps == 98.0 and limits.problem == ""
    assert limits.expectations.nccl_expected(2) == 20.5
    res = CliRunner().invoke(cli, ["report", str(folder), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["session"]["expectations"] == OVERRIDES
    rails = {(r["target"], r["bidir"]): r["ceiling"] for r in data["charts"]["rails"]}
    assert rails[(RAIL, False)] == 98.0  # not the default 109.2
    assert data["charts"]["nccl_expected"] == 20.5  # not the default 26.58
    assert data["charts"]["ratios"] == [0.9, 0.75]
    page = CliRunner().invoke(cli, ["report", str(folder), "--format", "html"])
    assert "expected 98.00 Gb/s" in page.stdout and "expected 109.20 Gb/s" not in page.stdout
    md = CliRunner().invoke(cli, ["report", str(folder)]).stdout
    assert (
        "| Expectations | the table's defaults, with the inventory's bidir_rail_gbps=190.0, "
        "nccl_busbw_2node=20.5, rail_switched_gbps=98.0 |" in md
    )


def test_a_session_without_overrides_says_defaults_and_an_unknown_key_is_named(
    tmp_path: Path,
) -> None:
    plain = _session(tmp_path / "a", {})
    md = CliRunner().invoke(cli, ["report", str(plain)]).stdout
    assert "| Expectations | the table's defaults |" in md
    data = json.loads(CliRunner().invoke(cli, ["report", str(plain), "--format", "json"]).stdout)
    assert data["charts"]["nccl_expected"] == 26.58
    odd = _session(tmp_path / "b", {"rail_warp_gbps": 1.0})
    res = CliRunner().invoke(cli, ["report", str(odd), "--format", "json"])
    assert res.exit_code == 0
    assert "recorded override(s) rail_warp_gbps unknown to this fabwiz" in res.stderr
    assert json.loads(res.stdout)["charts"]["nccl_expected"] == 26.58
