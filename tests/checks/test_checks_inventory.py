"""The inventory loader: a corpus of broken files, each giving one clear message."""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard.errors import InventoryError
from wizard.inventory import load_inventory, parse_inventory, resolve_password

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
name: t
defaults: {user: fabwiz, identity_file: id_ed25519}
nodes:
  - name: spark1
    host: 127.0.0.1
    port: 40001
  - name: spark2
    host: alias-two
switches:
  - name: crs804
    host: 127.0.0.1
    password: {file: sw.password}
cabling:
  spark1/enp1s0f0np0: crs804/qsfp56-dd-1-1
"""

# (case, text, expected line, expected field, words the message must contain)
BROKEN = [
    ("bad yaml", "nodes:\n  - name: a\n   host: b\n", 3, None, ["not valid YAML"]),
    ("tab indentation", "nodes:\n\t- name: a\n", 2, None, ["not valid YAML"]),
    ("empty", "", None, None, ["empty"]),
    ("not a mapping", "- a\n- b\n", 1, None, ["expected a mapping"]),
    ("missing nodes", "switches: []\n", 1, "nodes", ["required"]),
    ("empty nodes", "nodes: []\n", 1, "nodes", ["at least 1"]),
    ("missing node name", "nodes:\n  - host: x\n", 2, "nodes.0.name", ["required"]),
    (
        "node without host",
        "nodes:\n  - name: spark1\n",
        2,
        "nodes.0.host",
        ["required", "address", "~/.ssh/config alias", "never looks a bare node name up in DNS"],
    ),
    (
        "port not a number",
        "nodes:\n  - name: a\n    port: twenty-two\n    host: a.lab\n",
        3,
        "nodes.0.port",
        ["integer", "twenty-two"],
    ),
    (
        "port out of range",
        "nodes:\n  - name: a\n    port: 70000\n    host: a.lab\n",
        3,
        "nodes.0.port",
        ["65535"],
    ),
    (
        "unknown node key",
        "nodes:\n  - name: a\n    hostname: x\n    host: a.lab\n",
        3,
        "nodes.0.hostname",
        ["unknown key 'hostname'", "host"],
    ),
    (
        "unknown top key",
        "nodes:\n  - name: a\n    host: a.lab\nswitchs: []\n",
        4,
        "switchs",
        ["unknown key", "switches"],
    ),
    (
        "duplicate node names",
        "nodes:\n  - {name: a, host: a.lab}\n  - {name: b, host: b.lab}\n  - {name: a, host: c.lab}\n",
        4,
        "nodes.2.name",
        ["used twice"],
    ),
    ("duplicate yaml key", "nodes:\n  - name: a\n    name: b\n", 3, "name", ["appears twice"]),
    (
        "bad password source",
        "nodes: [{name: a, host: a.lab}]\nswitches:\n  - name: s\n    host: h\n    password: {vault: x}\n",
        5,
        "switches.0.password",
        ["env"],
    ),
    (
        "two password sources",
        "nodes: [{name: a, host: a.lab}]\nswitches:\n  - name: s\n    host: h\n    password: {env: A, file: b}\n",
        5,
        "switches.0.password",
        ["exactly one"],
    ),
    (
        "tls not a bool",
        "nodes: [{name: a, host: a.lab}]\nswitches:\n  - {name: s, host: h, tls: maybe}\n",
        3,
        "switches.0.tls",
        ["boolean"],
    ),
    (
        "unknown model",
        "nodes: [{name: a, host: a.lab}]\nswitches:\n  - {name: s, host: h, model: CRS326}\n",
        3,
        "switches.0.model",
        ["CRS804-4DDQ"],
    ),
    (
        "cabling unknown node",
        "nodes: [{name: a, host: a.lab}]\nswitches: [{name: s, host: h}]\ncabling:\n  b/enp1s0f0np0: s/qsfp56-dd-1-1\n",
        4,
        "cabling.b/enp1s0f0np0",
        ["unknown node 'b'"],
    ),
    (
        "cabling bad shape",
        "nodes: [{name: a, host: a.lab}]\nswitches: [{name: s, host: h}]\ncabling:\n  a: s\n",
        4,
        "cabling.a",
        ["node/netdev"],
    ),
    (
        "addressing without rail",
        "nodes: [{name: a, host: a.lab}]\naddressing: {pattern: '10.9.0.{host}/24'}\n",
        2,
        "addressing.pattern",
        ["{rail}"],
    ),
    ("nodes is a string", "nodes: spark1\n", 1, "nodes", ["tuple"]),
]


@pytest.mark.parametrize(
    ("case", "text", "line", "field", "words"), BROKEN, ids=[b[0] for b in BROKEN]
)
def test_broken_inventory_gives_one_clear_message(
    case: str, text: str, line: int | None, field: str | None, words: list[str]
) -> None:
    with pytest.raises(InventoryError) as info:
        parse_inventory(text, path="/etc/fab.yaml")
    err = info.value
    assert err.path == "/etc/fab.yaml"
    assert err.line == line, str(err)
    assert err.field == field, str(err)
    message = str(err)
    assert message.startswith("/etc/fab.yaml"), message
    assert "Traceback" not in message
    for w in words:
        assert w in message, message


def test_unknown_expectation_is_named() -> None:
    with pytest.raises(InventoryError) as info:
        parse_inventory(
            "nodes: [{name: a, host: a.lab}]\nexpectations:\n  rail_gbps: 90\n",
            path="f.yaml",
            expectation_keys={"rail_pass_gate_gbps"},
        )
    assert info.value.field == "expectations.rail_gbps"
    assert info.value.line == 3
    assert "rail_pass_gate_gbps" in str(info.value)


def test_missing_file() -> None:
    with pytest.raises(InventoryError, match="no such file"):
        load_inventory("/nonexistent/fabric.yaml")


def test_good_inventory_resolves_paths_and_defaults(tmp_path: Path) -> None:
    p = tmp_path / "fab.yaml"
    p.write_text(GOOD)
    inv = load_inventory(p)
    s1, s2 = inv.nodes
    assert (s1.address, s1.port, s1.user) == ("127.0.0.1", 40001, "fabwiz")
    assert (s2.address, s2.port) == ("alias-two", None)  # ~/.ssh/config decides
    assert s1.identity_file == str(tmp_path / "id_ed25519")
    assert inv.cabling == {"spark1/enp1s0f0np0": ("crs804", "qsfp56-dd-1-1")}
    sw = inv.switch("crs804")
    assert sw.api_port == 8728
    (tmp_path / "sw.password").write_text("s3cret\n")
    assert resolve_password(sw) == "s3cret"
    assert inv.warnings == ()


def test_clear_password_is_accepted_with_a_warning() -> None:
    inv = parse_inventory(
        "nodes: [{name: a, host: a.lab}]\nswitches: [{name: s, host: h, tls: true, password: hunter2}]\n",
        path="f.yaml",
    )
    assert resolve_password(inv.switches[0]) == "hunter2"
    assert inv.switches[0].api_port == 8729
    assert len(inv.warnings) == 1
    assert "in clear" in inv.warnings[0] and "switches.0.password" in inv.warnings[0]
    assert "hunter2" not in inv.warnings[0]


def test_password_sources() -> None:
    inv = parse_inventory(
        "nodes: [{name: a, host: a.lab}]\nswitches:\n"
        "  - {name: e, host: h, password: {env: SWPW}}\n"
        "  - {name: k, host: h, user: ops, password: {keyring: fabwiz}}\n"
        "  - {name: p, host: h, password: {prompt: true}}\n",
        path="f.yaml",
    )
    e, k, p = inv.switches
    assert resolve_password(e, env={"SWPW": "x1"}) == "x1"
    with pytest.raises(InventoryError, match="SWPW is not set"):
        resolve_password(e, env={})
    assert resolve_password(k, keyring_get=lambda s, u: f"{s}:{u}") == "fabwiz:ops"
    with pytest.raises(InventoryError, match="no password in the keyring"):
        resolve_password(k, keyring_get=lambda s, u: None)
    assert resolve_password(p, prompt=lambda q: "typed" if "p (h)" in q else "") == "typed"
    with pytest.raises(InventoryError, match="no terminal"):
        resolve_password(p)


def test_example_inventory_loads() -> None:
    inv = load_inventory(ROOT / "examples" / "fabric.yaml")
    assert [n.name for n in inv.nodes] == ["spark1", "spark2", "spark3", "spark4"]
    assert inv.switches[0].api_port == 8729
    assert inv.warnings == ()
