"""Several reads of one switch in flight at once, each tagged: the same results as one `call`
after the other, in one round trip; a session that breaks mid-batch falls back to the calls."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest

from wizard.lab.routeros.codec import encode_sentence, read_sentence
from wizard.lab.routeros.server import RouterOsServer
from wizard.lab.routeros.switch import SwitchState
from wizard.model import ProbeResult
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport

READS: list[tuple[str, str, dict[str, str]]] = [
    ("/interface/ethernet", "print", {}),
    ("/interface/bridge/port", "print", {}),
    ("/no/such/menu", "print", {}),  # refused: a trap for this one only
    ("/system/resource", "print", {}),
    ("/interface/bridge/host", "print", {}),
]


def _target(port: int) -> RouterOsTarget:
    return RouterOsTarget(
        name="crs804", host="127.0.0.1", user="fabwiz", password="pw", port=port, timeout_s=5.0
    )


def _same(r: ProbeResult) -> tuple[object, ...]:
    timeless = dataclasses.replace(r, started_at=0.0, duration_s=0.0)
    # the resource row's uptime moves between two reads
    rows = tuple({k: v for k, v in row.items() if k != "uptime"} for row in timeless.rows)
    return (timeless.command, timeless.error, timeless.stderr, rows)


@pytest.fixture
async def lab_switch() -> AsyncIterator[int]:
    server = RouterOsServer(SwitchState.new("crs804", "CRS804-4DDQ"), users={"fabwiz": "pw"})
    port = await server.start()
    yield port
    await server.stop()


async def test_a_batch_gives_what_the_calls_give_one_by_one(lab_switch: int) -> None:
    async with RouterOsTransport(_target(lab_switch)) as t:
        one_by_one = [await t.call(p, v, **a) for p, v, a in READS]
        together = await t.call_many(READS)
    assert [_same(r) for r in together] == [_same(r) for r in one_by_one]
    assert len(together[1].rows) > 20 and together[1].error is None
    assert together[2].error is not None and "refused by the switch" in together[2].error
    assert together[3].ok and together[4].ok  # a refusal in the batch spoils no other reply


async def test_a_reply_past_the_caps_is_cut_in_its_own_result(lab_switch: int) -> None:
    async with RouterOsTransport(_target(lab_switch)) as t:
        t.reply_rows = 3
        alone = await t.call("/interface/bridge/port", "print")
        together = await t.call_many(READS)
        after = await t.call("/system/identity", "print")  # the session stayed in step
    assert _same(together[1]) == _same(alone)
    assert len(together[1].rows) == 3 and together[1].error and "truncated" in together[1].error
    assert after.rows == ({"name": "crs804"},)


class _Switch:
    """A switch that logs in, then breaks the first batch one way or another."""

    def __init__(self, breaks: str) -> None:
        self.breaks = breaks
        self.sessions = 0
        self.tagged = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.sessions += 1
        try:
            while True:
                words = await read_sentence(reader)
                tag = next((w for w in words if w.startswith(".tag=")), None)
                if tag is not None:
                    self.tagged += 1
                    if self.breaks == "drop":
                        writer.close()
                        return
                    if self.breaks == "hang":
                        continue
                    reply = [["!re", "=name=x", ".tag=99"], ["!done", ".tag=99"]]
                elif words[0] == "/login":
                    reply = [["!done"]]
                else:
                    reply = [["!re", f"=name={words[0]}"], ["!done"]]
                for r in reply:
                    writer.write(encode_sentence(r))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


@pytest.mark.parametrize("breaks", ["drop", "stray-tag"])
async def test_a_batch_whose_session_breaks_is_asked_again_call_by_call(breaks: str) -> None:
    switch = _Switch(breaks)
    server = await asyncio.start_server(switch.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with RouterOsTransport(_target(port)) as t:
            got = await t.call_many([("/a", "print", {}), ("/b", "print", {})])
    finally:
        server.close()
    assert [r.rows for r in got] == [({"name": "/a/print"},), ({"name": "/b/print"},)]
    assert all(r.error is None for r in got)
    assert switch.tagged >= 1 and switch.sessions == 2  # the broken session was not reused


async def test_reads_the_switch_does_not_answer_in_time_are_not_asked_again() -> None:
    switch = _Switch("hang")
    server = await asyncio.start_server(switch.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with RouterOsTransport(_target(port)) as t:
            got = await t.call_many([("/a", "print", {}), ("/b", "print", {})], timeout=0.3)
    finally:
        server.close()
    assert all(r.error and "gave no answer within 0.3 s" in r.error for r in got)
    assert switch.sessions == 1  # never wait twice


async def test_writes_are_never_sent_together(lab_switch: int) -> None:
    async with RouterOsTransport(_target(lab_switch)) as t:
        got = await t.call_many(
            [("/system/identity", "print", {}), ("/system/identity", "set", {"name": "x"})]
        )
        assert got[1].ok, got[1].error
        assert (await t.call("/system/identity", "print")).rows == ({"name": "x"},)
