"""The inventory's `expectations:` overrides are typed: a bad one is refused when the inventory
loads, naming the file, the line and the key, never in the middle of a walk."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from flows.expectations import DEFAULT, validate_overrides
from wizard.errors import InventoryError
from wizard.inventory import load_inventory

ROOT = Path(__file__).resolve().parents[2]

HEAD = "nodes: [{name: spark1, host: 127.0.0.1}]\nexpectations:\n  rail_pass_gate_gbps: 70\n"


def _load(tmp_path: Path, line: str) -> InventoryError:
    path = tmp_path / "fab.yaml"
    path.write_text(HEAD + f"  {line}\n", encoding="utf-8")
    with pytest.raises(InventoryError) as info:
        load_inventory(path, expectations=validate_overrides)
    assert info.value.path == str(path)
    return info.value


def test_a_wrong_type_names_file_line_and_field(tmp_path: Path) -> None:
    err = _load(tmp_path, "fabric_mtu: nine-thousand")
    assert (err.line, err.field) == (4, "expectations.fabric_mtu")
    assert str(err) == (
        f"{tmp_path / 'fab.yaml'}:4: expectations.fabric_mtu: "
        "Input should be a valid integer (got 'nine-thousand')"
    )


def test_a_quoted_number_is_not_an_mtu(tmp_path: Path) -> None:
    err = _load(tmp_path, "fabric_mtu: '9000'")
    assert (err.line, err.field) == (4, "expectations.fabric_mtu")
    assert "valid integer (got '9000')" in str(err)


def test_an_out_of_range_value_says_the_bound(tmp_path: Path) -> None:
    err = _load(tmp_path, "arp_ignore: 9")
    assert (err.line, err.field) == (4, "expectations.arp_ignore")
    assert str(err).endswith(
        "expectations.arp_ignore: Input should be less than or equal to 8 (got 9)"
    )
    err = _load(tmp_path, "fabric_mtu: 50")
    assert "greater than or equal to 68 (got 50)" in str(err)


def test_an_unknown_key_names_the_known_ones(tmp_path: Path) -> None:
    err = _load(tmp_path, "rail_gbps: 90")
    assert (err.line, err.field) == (4, "expectations.rail_gbps")
    assert "unknown expectation 'rail_gbps'; expected one of: " in str(err)
    assert "rail_pass_gate_gbps" in str(err) and "fabric_mtu" in str(err)


def test_a_bad_item_of_a_list_is_named_by_its_index(tmp_path: Path) -> None:
    err = _load(tmp_path, "routeros_rdma_regressions: ['7.19', 7]")
    assert (err.line, err.field) == (4, "expectations.routeros_rdma_regressions.1")
    assert "valid string (got 7)" in str(err)


def test_warn_ratio_may_not_exceed_pass_ratio(tmp_path: Path) -> None:
    err = _load(tmp_path, "warn_ratio: 0.95")
    assert (err.line, err.field) == (4, "expectations.warn_ratio")
    assert "less than or equal to pass_ratio (0.9) (got 0.95)" in str(err)


def test_a_band_is_low_then_high(tmp_path: Path) -> None:
    err = _load(tmp_path, "degraded_band_gbps: [30, 10]")
    assert err.field == "expectations.degraded_band_gbps"
    assert "low below high, got [30.0, 10.0]" in str(err)


def test_several_problems_are_counted(tmp_path: Path) -> None:
    err = _load(tmp_path, "fabric_mtu: x\n  pcie_width: 0")
    assert err.field == "expectations.fabric_mtu"
    assert err.hint == "1 more problem(s) after this one"


def test_good_overrides_load_as_written_and_apply_typed(tmp_path: Path) -> None:
    path = tmp_path / "fab.yaml"
    path.write_text(HEAD + "  degraded_band_gbps: [5, 20]\n  pcie_speed: 16GT/s\n", "utf-8")
    inv = load_inventory(path, expectations=validate_overrides)
    assert inv.expectations == {
        "rail_pass_gate_gbps": 70,
        "degraded_band_gbps": [5, 20],
        "pcie_speed": "16GT/s",
    }
    exp = DEFAULT.with_overrides(inv.expectations)
    assert exp.degraded_band_gbps == (5.0, 20.0)
    assert exp.rail_pass_gate_gbps == 70.0 and exp.pcie_speed == "16GT/s"
    assert exp.fabric_mtu == DEFAULT.fabric_mtu


def test_with_overrides_refuses_a_bad_value() -> None:
    with pytest.raises(KeyError, match="rail_gbps"):
        DEFAULT.with_overrides({"rail_gbps": 1})
    with pytest.raises(ValidationError) as info:
        DEFAULT.with_overrides({"pcie_speed": "fast"})
    assert [e["loc"] for e in info.value.errors()] == [("pcie_speed",)]
    assert isinstance(info.value, ValueError)  # what replay's and the report's callers catch


def test_fabwiz_check_refuses_a_bad_override_before_connecting(tmp_path: Path) -> None:
    from screens.cli import cli

    path = tmp_path / "fab.yaml"
    path.write_text(HEAD + "  fabric_mtu: nine-thousand\n", encoding="utf-8")
    res = CliRunner().invoke(cli, ["check", "-i", str(path)])
    assert res.exit_code == 2, res.output
    assert f"{path}:4: expectations.fabric_mtu: Input should be a valid integer" in res.output


def test_the_table_imports_without_pydantic() -> None:
    code = "import sys, flows.expectations; print('pydantic' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"
