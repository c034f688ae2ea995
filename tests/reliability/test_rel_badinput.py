"""Bad input: the lab's RouterOS API server fed malformed sentences keeps serving the
other clients; broken scenario files each give one clear message naming the file and the field.
(The broken-inventory corpus is tests/checks/test_checks_inventory.py; the parsers' property
tests are tests/parsers/test_parsers_hypothesis.py and test_rel_parsers_cover.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from wizard.errors import ScenarioError
from wizard.lab.routeros.codec import encode_sentence, encode_word
from wizard.lab.routeros.server import RouterOsServer
from wizard.lab.routeros.switch import SwitchState
from wizard.lab.scenarios import load
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport

PASSWORD = "s3cret-api-pw"


@pytest.fixture
async def server() -> AsyncIterator[RouterOsServer]:
    srv = RouterOsServer(SwitchState.new("crs804", "CRS804-4DDQ"), users={"fabwiz": PASSWORD})
    await srv.start("127.0.0.1", 0)
    try:
        yield srv
    finally:
        await srv.stop()


def _client(srv: RouterOsServer) -> RouterOsTransport:
    return RouterOsTransport(
        RouterOsTarget("crs804", "127.0.0.1", "fabwiz", PASSWORD, port=srv.port, timeout_s=3.0)
    )


LOGIN = encode_sentence(["/login", "=name=fabwiz", f"=password={PASSWORD}"])

# (case, bytes sent, whether the server must answer with !fatal before closing)
MALFORMED: list[tuple[str, bytes, bool]] = [
    ("reserved control byte 0xF8 as a length", b"\xf8", True),
    ("control byte 0xFF", b"\xff\x00", True),
    ("5-byte length form 0xF0", b"\xf0\x00\x00\x00\x05hello\x00", True),
    ("command before login", encode_sentence(["/interface/print"]), True),
    ("control bytes in a word", encode_sentence(["/lo\x00gin\x07", "=name=\x1b[2J"]), False),
    ("invalid utf-8", encode_word("/login")[:1] + b"\xff\xfe\xfd\xfc\xfb\xfa" + b"\x00", False),
    ("huge length then disconnect mid-word", b"\xef\xff\xff\xff" + b"A" * 1000, False),
    ("2-byte length, body cut short", b"\x80\xff" + b"x" * 10, False),
    ("length prefix cut short", b"\xc0\x01", False),
    ("1000 empty sentences", b"\x00" * 1000, False),
    ("empty word storm after login", LOGIN + b"\x00" * 5000, False),
    ("unknown command after login", LOGIN + encode_sentence(["/no/such/menu/print"]), False),
    (
        "query garbage after login",
        LOGIN + encode_sentence(["/interface/print", "?#|&!", "?"]),
        False,
    ),
    ("attribute without =", LOGIN + encode_sentence(["/system/identity/set", "name"]), False),
    (
        "big word (1 MiB) after login",
        LOGIN + encode_sentence(["/log/print", "=x=" + "y" * 2**20]),
        False,
    ),
]


@pytest.mark.parametrize(("case", "data", "fatal"), MALFORMED, ids=[m[0] for m in MALFORMED])
async def test_malformed_sentences_never_stop_the_server(
    server: RouterOsServer, case: str, data: bytes, fatal: bool
) -> None:
    # a well-behaved client logged in before the bad one, and it stays served
    good = _client(server)
    first = await good.print("/system/identity")
    assert first.error is None and first.rows[0]["name"] == "crs804"
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(data)
    await writer.drain()
    if fatal:
        reply = await asyncio.wait_for(reader.read(4096), 3.0)
        assert b"!fatal" in reply, (case, reply)
        assert await asyncio.wait_for(reader.read(), 3.0) == b""  # and the server closed it
    writer.close()  # the bad client goes away, mid-word for the cut-short cases
    again = await good.print("/system/identity")
    assert again.error is None and again.rows[0]["name"] == "crs804", case
    fresh = _client(server)
    rows = await fresh.print("/interface/bridge")
    assert rows.error is None and rows.rows, case
    await good.close()
    await fresh.close()


async def test_a_client_stuck_mid_word_does_not_block_others(server: RouterOsServer) -> None:
    stuck = []
    for _ in range(5):  # five half-sent sentences held open
        _r, w = await asyncio.open_connection("127.0.0.1", server.port)
        w.write(b"\xc0\x10\x00" + b"z" * 100)  # a 4096-byte word, 100 bytes sent
        await w.drain()
        stuck.append(w)
    good = _client(server)
    res = await asyncio.wait_for(good.print("/interface/ethernet"), 3.0)
    assert res.error is None and len(res.rows) > 8
    for w in stuck:
        w.close()
    await good.close()


# --- broken scenario files -------------------------------------------------------------------

GOOD_TOPOLOGY = "topology: {nodes: 4, switches: [{model: CRS804-4DDQ}], cables_per_node: 2}\n"

BROKEN_SCENARIOS: list[tuple[str, str, str | None, list[str]]] = [
    ("bad yaml", "name: x\ntopology: {nodes: 4\n", None, ["not valid YAML"]),
    ("not a mapping", "- a\n- b\n", None, ["expected a mapping"]),
    ("empty file", "", None, ["expected a mapping"]),
    ("missing name", GOOD_TOPOLOGY, "name", ["Field required"]),
    ("missing topology", "name: x\n", "topology", ["Field required"]),
    ("nodes wrong type", "name: x\ntopology: {nodes: four}\n", "topology.nodes", ["integer"]),
    (
        "nodes out of range",
        "name: x\ntopology: {nodes: 99, switches: [{model: CRS804-4DDQ}]}\n",
        "topology.nodes",
        ["64"],
    ),
    ("unknown key", "name: x\ncolour: red\n" + GOOD_TOPOLOGY, "colour", ["Extra inputs"]),
    (
        "unknown topology key",
        "name: x\ntopology: {nodes: 2, cable: 1}\n",
        "topology.cable",
        ["Extra inputs"],
    ),
    (
        "unknown switch model",
        "name: x\ntopology: {nodes: 2, switches: [{model: CRS326}]}\n",
        "topology.switches[0].model",
        ["CRS804-4DDQ"],
    ),
    (
        "unknown fault id",
        "name: x\n" + GOOD_TOPOLOGY + "faults: [{id: switch.on-fire}]\n",
        "faults[0].id",
        ["unknown fault id 'switch.on-fire'"],
    ),
    (
        "fault names an unknown node",
        "name: x\n" + GOOD_TOPOLOGY + "faults: [{id: host.duplicate-ip, nodes: [spark9]}]\n",
        "faults[0].nodes",
        ["spark9"],
    ),
    (
        "fault is a string",
        "name: x\n" + GOOD_TOPOLOGY + "faults: [host.mtu]\n",
        "faults[0]",
        ["valid dictionary"],
    ),
    (
        "switch fault without a switch",
        "name: x\ntopology: {nodes: 2}\nfaults: [{id: switch.mtu}]\n",
        "faults[0].id",
        ["needs a switch"],
    ),
    (
        "too many nodes for the ports",
        "name: x\ntopology: {nodes: 8, switches: [{model: CRS804-4DDQ}], cables_per_node: 2}\n",
        "topology.nodes",
        ["200G ports"],
    ),
    (
        "direct cable with 3 nodes",
        "name: x\ntopology: {nodes: 3}\n",
        "topology.nodes",
        ["two nodes directly"],
    ),
    (
        "cables_per_node 3",
        "name: x\ntopology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 3}\n",
        "topology.cables_per_node",
        ["1 or 2"],
    ),
]
DUPLICATE = pytest.param(
    "duplicate switch names",
    "name: x\ntopology: {nodes: 2, switches: [{model: CRS804-4DDQ, name: a}, "
    "{model: CRS804-4DDQ, name: a}]}\n",
    "topology.switches",
    ["duplicate", "'a'"],
    id="duplicate switch names",
)


@pytest.mark.parametrize(
    ("case", "text", "field", "words"),
    [*(pytest.param(*b, id=b[0]) for b in BROKEN_SCENARIOS), DUPLICATE],
)
def test_broken_scenario_gives_one_clear_message(
    tmp_path: Path, case: str, text: str, field: str | None, words: list[str]
) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as info:
        load(str(path))
    err = info.value
    message = str(err)
    assert err.path == str(path) and message.startswith(str(path)), message
    assert err.field == field, message
    assert "Traceback" not in message
    for w in words:
        assert w in message, message


def test_broken_scenario_through_the_cli_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from screens.cli import cli

    path = tmp_path / "bad.yaml"
    path.write_text("name: x\n" + GOOD_TOPOLOGY + "faults: [{id: host.on-fire}]\n")
    out = CliRunner().invoke(cli, ["check", "--lab", str(path)])
    text = out.output
    assert out.exit_code == 2, text
    assert "Traceback" not in text
    assert out.exception is None or isinstance(out.exception, SystemExit)
    assert str(path) in text and "faults[0].id" in text and "host.on-fire" in text
