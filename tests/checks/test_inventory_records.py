"""The inventory's records: plain frozen dataclasses checked field by field, every problem found
in one pass, each worded for a technician with its file, line and field."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from wizard.errors import InventoryError
from wizard.inventory import NodeSpec, PasswordSource, SwitchSpec, parse_inventory
from wizard.inventory_models import InventoryFile, TlsSpec
from wizard.schema import SchemaError, parse

NODE = "nodes:\n  - name: spark1\n    host: 127.0.0.1\n"


def _error(text: str) -> InventoryError:
    with pytest.raises(InventoryError) as info:
        parse_inventory(text, path="/inv/f.yaml")
    return info.value


def test_values_are_stripped_numbers_read_and_defaults_applied() -> None:
    inv = parse_inventory(
        "defaults: {user: ' ops ', port: '2222', tools: {' ib_write_bw ': ' /opt/ib '}}\n"
        "nodes:\n  - {name: ' spark1 ', host: ' 10.0.0.1 ', port: 22.0}\n"
        "  - {name: spark2, host: h2}\n"
        "switches:\n  - {name: crs804, host: h, timeout_s: '2.5', tls: {anonymous: 'yes'}}\n",
        path="/inv/f.yaml",
    )
    one, two = inv.nodes
    assert (one.name, one.host, one.port, one.user) == ("spark1", "10.0.0.1", 22, "ops")
    assert (two.port, two.tools) == (2222, {"ib_write_bw": "/opt/ib"})
    sw = inv.switches[0]
    assert sw.timeout_s == 2.5 and sw.tls == TlsSpec(anonymous=True) and sw.api_port == 8729
    assert sw.management_ports == ("ether1",) and sw.user == "admin"
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.host = "elsewhere"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "nodes:\n  - {name: a, host: h, port: true}\n",
            "/inv/f.yaml:2: nodes.0.port",
            "Input should be a valid integer (got True)",
        ),
        (
            NODE + "switches:\n  - {name: s, host: h, timeout_s: false}\n",
            "/inv/f.yaml:5: switches.0.timeout_s",
            "Input should be a valid number (got False)",
        ),
        (
            NODE + "addressing: {hosts: {spark1: yes}}\n",
            "/inv/f.yaml:4: addressing.hosts.spark1",
            "Input should be a valid integer (got True)",
        ),
    ],
    ids=["port", "timeout", "host octet"],
)
def test_a_boolean_is_not_a_number(text: str, where: str, message: str) -> None:
    assert str(_error(text)) == f"{where}: {message}"


def test_an_unknown_key_names_the_keys_of_its_own_record() -> None:
    tls = _error(NODE + "switches:\n  - name: s\n    host: h\n    tls: {pin: x}\n")
    assert str(tls) == (
        "/inv/f.yaml:7: switches.0.tls.pin: unknown key 'pin'; "
        "expected one of: anonymous, ca_file, fingerprint"
    )
    nccl = _error(NODE + "nccl: {device: one}\n")
    assert str(nccl) == "/inv/f.yaml:4: nccl.device: unknown key 'device'; expected one of: devices"
    node = _error("nodes:\n  - {name: a, host: h, 7: x}\n")
    assert str(node).startswith("/inv/f.yaml:2: nodes.0.7: unknown key 7; expected one of: host, ")


def test_every_problem_is_counted_and_the_first_is_shown() -> None:
    err = _error(
        "nodes:\n  - {name: 'a b', host: h, port: 0, zz: 1}\n  - 5\n"
        "switches:\n  - {name: s, host: h, model: CRS999, password: {env: A, file: f}}\n"
    )
    assert str(err).splitlines()[0] == (
        "/inv/f.yaml:2: nodes.0.name: should be letters, digits, '.', '_' or '-' only (got 'a b')"
    )
    assert err.hint == "5 more problem(s) after this one"
    with pytest.raises(SchemaError) as info:
        parse(InventoryFile, {"nodes": [{"name": "a b", "host": "h", "port": 0, "zz": 1}, 5]})
    assert [(e["type"], e["loc"]) for e in info.value.errors()] == [
        ("string_pattern_mismatch", ("nodes", 0, "name")),
        ("greater_than_equal", ("nodes", 0, "port")),
        ("extra_forbidden", ("nodes", 0, "zz")),
        ("model_type", ("nodes", 1)),
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{}", "give exactly one of {env: VAR}, {prompt: true}, {keyring: SERVICE}, {file: PATH} "
         "(got none) (got {})"),
        ("{env: A, keyring: k}", "give exactly one of {env: VAR}, {prompt: true}, "
         "{keyring: SERVICE}, {file: PATH} (got env, keyring) (got dict)"),
        ("{vault: x}", "unknown password source 'vault'; expected {env: VAR}, {prompt: true}, "
         "{keyring: SERVICE} or {file: PATH} (got dict)"),
        ("{env: 5}", "Input should be a valid string (got 5)"),
        ("[a]", "expected a string or one of {env: VAR}, {prompt: true}, {keyring: SERVICE}, "
         "{file: PATH} (got list)"),
    ],
)  # fmt: skip
def test_password_sources_are_refused_with_the_forms_they_can_take(
    value: str, message: str
) -> None:
    err = _error(NODE + f"switches:\n  - name: s\n    host: h\n    password: {value}\n")
    assert str(err).split(": ", 2)[2] == message
    assert err.line == 7 and (err.field or "").startswith("switches.0.password")


def test_an_empty_node_list_and_a_bad_pin_say_what_is_expected() -> None:
    assert str(_error("nodes: []\n")) == "/inv/f.yaml:1: nodes: give at least 1 entry (got [])"
    pin = _error(NODE + "switches:\n  - {name: s, host: h, tls: {fingerprint: 'md5:00'}}\n")
    assert str(pin) == (
        "/inv/f.yaml:5: switches.0.tls.fingerprint: should be sha256: then the certificate's "
        "32 bytes in hex (sha256:0F:3A:...) (got 'md5:00')"
    )


def test_records_are_built_from_data_and_refuse_what_the_file_would() -> None:
    spec = parse(SwitchSpec, {"name": "s", "host": "h", "password": {"prompt": True}})
    assert spec.password == PasswordSource(prompt=True) and spec.password.kind == "prompt"
    assert parse(NodeSpec, {"name": "n", "host": "h"}).address == "h"
    bad: list[dict[str, Any]] = [
        {"name": "s"},
        {"name": "s", "host": "h", "tls": "yes"},
        {"name": "s", "host": "h", "timeout_s": 0},
        {"name": "s", "host": "h", "tls": {"fingerprint": "md5:00"}},
    ]
    kinds = []
    for data in bad:
        with pytest.raises(SchemaError) as info:
            parse(SwitchSpec, data)
        kinds.append(info.value.errors()[0]["type"])
    assert kinds == ["missing", "value_error", "greater_than", "string_pattern_mismatch"]


def test_a_key_holding_an_escape_sequence_is_quoted_not_sent_to_the_terminal() -> None:
    # a title-setting OSC sequence and a colour in a key: printed raw, the terminal would act
    err = _error('nodes:\n  - name: s1\n    host: h\n    "\\e]0;pwned\\a\\e[31mRED": 1\n')
    text = str(err)
    assert "\x1b" not in text and "\x07" not in text
    assert text.startswith("/inv/f.yaml:4: 'nodes.0.\\x1b]0;pwned\\x07\\x1b[31mRED': unknown key")
    cabling = _error(NODE + 'cabling:\n  "x\\e[2J": crs804/p\n')
    assert "\x1b" not in str(cabling) and "got 'x\\x1b[2J': 'crs804/p'" in str(cabling)
