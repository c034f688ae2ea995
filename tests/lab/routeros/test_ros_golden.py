"""Byte-level golden transcripts of the RouterOS API server (routeros-api.md 1.8 and 7)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from wizard.lab.routeros.server import RouterOsServer
from wizard.lab.routeros.switch import SwitchState


def s(*words: str) -> bytes:
    out = b""
    for w in words:
        data = w.encode()
        assert len(data) < 0x80
        out += bytes([len(data)]) + data
    return out + b"\x00"


class Wire:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def talk(self, request: bytes, expect: bytes) -> None:
        self.writer.write(request)
        await self.writer.drain()
        got = await asyncio.wait_for(self.reader.readexactly(len(expect)), 2)
        assert got == expect
        self.writer.write(b"")

    async def nothing_more(self) -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(self.reader.read(1), 0.05)


async def _open(sw: SwitchState, **kw: object) -> AsyncIterator[Wire]:
    server = RouterOsServer(sw, users={"admin": "pw"}, tick_interval=None, **kw)  # type: ignore[arg-type]
    port = await server.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        yield Wire(reader, writer)
    finally:
        writer.close()
        await server.stop()


@pytest.fixture
async def wire(crs804: SwitchState) -> AsyncIterator[Wire]:
    async for w in _open(crs804):
        yield w


@pytest.fixture
async def wire_old(crs804: SwitchState) -> AsyncIterator[Wire]:
    async for w in _open(crs804, empty_reply=False):
        yield w


LOGIN = b"\x06/login\x0b=name=admin\x0c=password=pw\x00"


async def test_login_bytes(wire: Wire) -> None:
    await wire.talk(LOGIN, b"\x05!done\x00")


async def test_bad_login_bytes(wire: Wire) -> None:
    await wire.talk(
        s("/login", "=name=admin", "=password=nope"),
        b"\x05!trap" + b"\x2a=message=invalid user name or password (6)" + b"\x00\x05!done\x00",
    )
    # still not logged in: any other command is fatal
    await wire.talk(s("/system/identity/print"), s("!fatal", "not logged in"))


async def test_challenge_login_is_refused_as_on_routeros_7(wire: Wire, crs804: SwitchState) -> None:
    # RouterOS 6.43 and later: /login takes name and password only (no challenge, no response)
    await wire.talk(
        s("/login"), s("!trap", "=message=invalid user name or password (6)") + s("!done")
    )
    await wire.talk(
        s("/login", "=name=admin", "=response=00" + "0" * 32),
        s("!trap", "=message=invalid user name or password (6)") + s("!done"),
    )
    await wire.talk(LOGIN, s("!done"))
    await wire.talk(s("/system/identity/print"), s("!re", "=name=crs804") + s("!done"))


async def test_challenge_login_before_6_43(wire: Wire, crs804: SwitchState) -> None:
    crs804.routeros_version = "6.42.12"
    wire.writer.write(s("/login"))
    head = await wire.reader.readexactly(1 + 5 + 1)
    assert head == b"\x05!done\x25"
    ret = (await wire.reader.readexactly(0x25)).decode()
    assert ret.startswith("=ret=") and len(ret) == 37
    await wire.reader.readexactly(1)
    from librouteros.login import encode_password

    response = encode_password(ret[5:], "pw")
    await wire.talk(s("/login", "=name=admin", f"=response={response}"), s("!done"))
    await wire.talk(s("/system/identity/print"), s("!re", "=name=crs804") + s("!done"))


async def test_print_proplist_and_query(wire: Wire) -> None:
    await wire.talk(LOGIN, s("!done"))
    await wire.talk(
        s(
            "/interface/bridge/port/print",
            "=.proplist=.id,interface,hw-offload",
            "?=interface=qsfp56-dd-1-1",
            "?=interface=ether1",
            "?#|",
        ),
        s("!re", "=.id=*1", "=interface=ether1", "=hw-offload=false")
        + s("!re", "=.id=*2", "=interface=qsfp56-dd-1-1", "=hw-offload=true")
        + s("!done"),
    )
    await wire.talk(
        s("/interface/bridge/port/print", "=count-only=", "?hw-offload=yes"), s("!done", "=ret=32")
    )


async def test_empty_print_and_pre_718(wire: Wire, wire_old: Wire) -> None:
    await wire.talk(LOGIN, s("!done"))
    await wire.talk(s("/ip/arp/print"), s("!empty") + s("!done"))
    await wire.talk(s("/ip/arp/print", ".tag=5"), s("!empty", ".tag=5") + s("!done", ".tag=5"))
    await wire_old.talk(LOGIN, s("!done"))
    await wire_old.talk(s("/ip/arp/print"), s("!done"))


async def test_add_set_remove(wire: Wire, crs804: SwitchState) -> None:
    await wire.talk(LOGIN, s("!done"))
    await wire.talk(s("/interface/bridge/add", "=name=roce-br"), s("!done", "=ret=*24"))
    await wire.talk(s("/interface/bridge/port/set", "=.id=*2,*6", "=bridge=roce-br"), s("!done"))
    assert crs804.bridge_port("qsfp56-dd-1-5")["bridge"] == "roce-br"
    await wire.talk(s("/interface/bridge/port/remove", "=.id=*2,*6"), s("!done"))
    await wire.talk(
        s("/interface/bridge/port/add", "=bridge=roce-br", "=interface=ether2", "=hw=yes"),
        s("!done", "=ret=*22"),
    )
    await wire.talk(s("/interface/set", "=.id=ether2", "=comment=mgmt"), s("!done"))
    await wire.talk(
        s("/interface/print", "=.proplist=comment", "?name=ether2"),
        s("!re", "=comment=mgmt") + s("!done"),
    )


async def test_traps(wire: Wire) -> None:
    await wire.talk(LOGIN, s("!done"))
    await wire.talk(
        s("/system/routerboardx/print"),
        s("!trap", "=category=0", "=message=no such command or directory (routerboardx)")
        + s("!trap", "=message=no such command prefix")
        + s("!done"),
    )
    await wire.talk(
        s("/interface/bridge/port/remove", "=.id=*FFF"),
        s("!trap", "=message=no such item (4)") + s("!done"),
    )
    await wire.talk(
        s("/interface/bridge/port/add", "=bridge=nope", "=interface=ether2"),
        s("!trap", "=category=1", "=message=input does not match any value of bridge") + s("!done"),
    )
    await wire.talk(
        s("/interface/ethernet/set", "=.id=qsfp56-dd-1-1", "=fec-mode=fec99", ".tag=7"),
        s("!trap", "=category=1", "=message=input does not match any value of fec-mode", ".tag=7")
        + s("!done", ".tag=7"),
    )


async def test_monitor_once(wire: Wire) -> None:
    await wire.talk(LOGIN, s("!done"))
    wire.writer.write(
        s(
            "/interface/ethernet/monitor",
            "=numbers=qsfp56-dd-1-1",
            "=once=yes",
            "=.proplist=name,status,auto-negotiation,rate,fec",
        )
    )
    expect = s(
        "!re",
        "=name=qsfp56-dd-1-1",
        "=status=link-ok",
        "=auto-negotiation=disabled",
        "=rate=200Gbps",
        "=fec=fec91",
    ) + s("!done")
    got = await asyncio.wait_for(wire.reader.readexactly(len(expect)), 2)
    assert got == expect


async def test_streaming_monitor_and_cancel(wire: Wire) -> None:
    await wire.talk(LOGIN, s("!done"))
    wire.writer.write(s("/interface/ethernet/monitor", "=numbers=qsfp56-dd-1-1", ".tag=2"))
    first = await asyncio.wait_for(wire.reader.readexactly(4), 2)
    assert first == b"\x03!re"
    await asyncio.sleep(0.05)
    await wire.reader.read(4096)  # drain the first sample
    await wire.talk(
        s("/cancel", "=tag=2", ".tag=7"),
        s("!trap", "=category=2", "=message=interrupted", ".tag=2")
        + s("!done", ".tag=2")
        + s("!done", ".tag=7"),
    )


async def test_quit_is_fatal_then_closed(wire: Wire) -> None:
    await wire.talk(LOGIN, s("!done"))
    await wire.talk(s("/quit"), s("!fatal", "session terminated on request"))
    assert await asyncio.wait_for(wire.reader.read(1), 2) == b""


async def test_protocol_error_is_fatal(wire: Wire) -> None:
    await wire.talk(b"\xf8", s("!fatal", "protocol error"))
