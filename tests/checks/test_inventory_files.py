"""A missing SSH identity file is an inventory error when a command is about to connect: it names
the file, the nodes that use it and what to do; parsing an inventory never looks at the disk, so
the example inventory loads on a machine without that key."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from screens.commands.check import check
from wizard.errors import InventoryError
from wizard.inventory import load_inventory, parse_inventory
from wizard.inventory_files import require_identity_files

ROOT = Path(__file__).resolve().parents[2]

INV = """\
defaults: {user: fabwiz, identity_file: keys/id_fabric}
nodes:
  - {name: spark1, host: 127.0.0.1, port: 1}
  - {name: spark2, host: 127.0.0.1, port: 1}
  - {name: spark3, host: 127.0.0.1, port: 1, identity_file: keys/id_spark3}
"""


def test_the_example_inventory_parses_without_its_key_on_this_machine(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "fabric.yaml").read_text()
    inv = parse_inventory(text, path=tmp_path / "fabric.yaml")
    assert [n.host for n in inv.nodes][:2] == ["spark1.lab.example", "spark2.lab.example"]
    # the key it names is only required once a command connects with it
    key = inv.nodes[0].identity_file
    assert key is not None
    if not Path(key).is_file():
        with pytest.raises(InventoryError, match="does not exist"):
            require_identity_files(inv)


def test_a_missing_identity_file_names_the_file_the_nodes_and_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id_spark3").write_text("key")
    p = tmp_path / "fab.yaml"
    p.write_text(INV)
    inv = load_inventory(p)
    with pytest.raises(InventoryError) as err:
        require_identity_files(inv)
    e = err.value
    key = tmp_path / "keys" / "id_fabric"
    assert e.path == str(p) and e.field == "nodes.0.identity_file"
    assert f"the SSH identity file {key} does not exist (used by spark1, spark2)" in str(e)
    assert e.hint is not None and f"ssh-keygen -t ed25519 -f {key}" in e.hint
    # once it exists, nothing is said
    key.write_text("key")
    require_identity_files(inv)
    # a directory where the key should be
    (tmp_path / "keys" / "id_spark3").unlink()
    (tmp_path / "keys" / "id_spark3").mkdir()
    with pytest.raises(InventoryError, match=r"id_spark3 is not a file \(used by spark3\)"):
        require_identity_files(inv)


def test_check_stops_on_the_missing_key_before_connecting(tmp_path: Path) -> None:
    p = tmp_path / "fab.yaml"
    p.write_text(INV)
    res = CliRunner().invoke(check, ["-i", str(p)])
    assert res.exit_code == 2
    assert f"{p}: nodes.0.identity_file: the SSH identity file" in res.output
    assert "cannot reach" not in res.output  # no connection was tried
