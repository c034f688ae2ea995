"""RouterOsTransport against a small scripted RouterOS API server on 127.0.0.1, port 0.

The server speaks the real wire protocol (the lab's codec) and plays back a few menus; the lab's
full switch model is tested by the switch helper. Here: rows arrive as wire strings, `.id`s are
looked up by key right before a write, and every failure is a ProbeResult error naming the switch.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from wizard.lab.routeros.codec import encode_sentence, read_sentence
from wizard.model import ApiCommand
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport

BIG = "# 2026-11-30 by RouterOS 7.23.1\n" + "/interface bridge port\n" * 4000


@dataclass
class FakeSwitch:
    ports: dict[str, dict[str, str]] = field(
        default_factory=lambda: {
            "*1": {
                "interface": "qsfp56-dd-1-1",
                "bridge": "bridge",
                "hw": "true",
                "hw-offload": "true",
            },
            "*2": {
                "interface": "qsfp56-dd-1-2",
                "bridge": "bridge1",
                "hw": "true",
                "hw-offload": "false",
            },
        }
    )
    received: list[list[str]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)

    def answer(self, words: list[str]) -> list[list[str]] | None:
        cmd, rest = words[0], words[1:]
        attrs = {w[1:].split("=", 1)[0]: w[1:].split("=", 1)[1] for w in rest if w.startswith("=")}
        query = {w[1:].split("=", 1)[0]: w[1:].split("=", 1)[1] for w in rest if w.startswith("?")}
        if cmd == "/slow/print":
            return None  # never answer
        handler = {
            "/login": self._login,
            "/interface/bridge/port/print": self._port_print,
            "/interface/bridge/port/set": self._port_change,
            "/interface/bridge/port/remove": self._port_change,
            "/interface/bridge/port/add": self._port_add,
            "/interface/ethernet/monitor": self._monitor,
            "/export": self._export,
            "/file/print": self._file_print,
            "/file/read": self._file_read,
            "/system/resource/print": self._resource,
            "/quit": self._quit,
        }.get(cmd)
        if handler is None:
            return [["!trap", "=message=no such command prefix"], ["!done"]]
        return handler(cmd, attrs, query)

    def _login(self, _cmd: str, attrs: dict[str, str], _q: dict[str, str]) -> list[list[str]]:
        if attrs.get("name") == "fabwiz" and attrs.get("password") == "pw":
            return [["!done"]]
        return [["!trap", "=message=invalid user name or password (6)"], ["!done"]]

    def _port_print(
        self, _cmd: str, attrs: dict[str, str], query: dict[str, str]
    ) -> list[list[str]]:
        out = []
        for pid, row in self.ports.items():
            if all(row.get(k) == v or (k == ".id" and pid == v) for k, v in query.items()):
                full = {".id": pid, **row}
                keep = attrs.get(".proplist", "").split(",") if ".proplist" in attrs else list(full)
                out.append(["!re", *(f"={k}={full[k]}" for k in keep if k in full)])
        return [*out, ["!done"]]

    def _port_change(self, cmd: str, attrs: dict[str, str], _q: dict[str, str]) -> list[list[str]]:
        pid = attrs.pop(".id")
        if pid not in self.ports:
            return [["!trap", "=message=no such item (4)"], ["!done"]]
        if cmd.endswith("remove"):
            del self.ports[pid]
        else:
            self.ports[pid].update(attrs)
        return [["!done"]]

    def _port_add(self, _cmd: str, attrs: dict[str, str], _q: dict[str, str]) -> list[list[str]]:
        pid = f"*{len(self.ports) + 10:X}"
        self.ports[pid] = attrs
        return [["!done", f"=ret={pid}"]]

    def _monitor(self, _cmd: str, attrs: dict[str, str], _q: dict[str, str]) -> list[list[str]]:
        return [
            *(
                ["!re", f"=name={p}", "=status=link-ok", "=rate=200Gbps", "=fec=fec91"]
                for p in attrs["numbers"].split(",")
            ),
            ["!done"],
        ]

    def _export(self, _cmd: str, attrs: dict[str, str], _q: dict[str, str]) -> list[list[str]]:
        self.files[attrs["file"] + ".rsc"] = BIG
        return [["!done"]]

    def _file_print(self, _cmd: str, _a: dict[str, str], query: dict[str, str]) -> list[list[str]]:
        name = query["name"]
        if name not in self.files:
            return [["!done"]]
        text = self.files[name]
        row = ["!re", f"=name={name}", f"=size={len(text)}"]
        if len(text) < 61439:
            row.append(f"=contents={text}")
        return [row, ["!done"]]

    def _file_read(self, _cmd: str, attrs: dict[str, str], _q: dict[str, str]) -> list[list[str]]:
        text = self.files[attrs["file"]]
        off, size = int(attrs["offset"]), int(attrs["chunk-size"])
        return [["!re", f"=data={text[off : off + size]}"], ["!done"]]

    def _resource(self, _cmd: str, _a: dict[str, str], _q: dict[str, str]) -> list[list[str]]:
        return [["!re", "=cpu-load=3", "=version=7.23.1 (stable)"], ["!done"]]

    def _quit(self, _cmd: str, _a: dict[str, str], _q: dict[str, str]) -> list[list[str]]:
        return [["!fatal", "session terminated on request"]]


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeSwitch, int]]:
    sw = FakeSwitch()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                words = await read_sentence(reader)
                sw.received.append(words)
                replies = sw.answer(words)
                if replies is None:
                    continue
                for r in replies:
                    writer.write(encode_sentence(r))
                await writer.drain()
                if replies[0][0] == "!fatal":
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    yield sw, server.sockets[0].getsockname()[1]
    server.close()


def target(port: int, **kw: object) -> RouterOsTarget:
    args: dict[str, object] = {
        "host": "127.0.0.1",
        "user": "fabwiz",
        "password": "pw",
        "port": port,
        "timeout_s": 2.0,
    }
    args.update(kw)
    return RouterOsTarget(name="crs804", **args)  # type: ignore[arg-type]


async def test_print_keeps_wire_strings_and_proplist(fake: tuple[FakeSwitch, int]) -> None:
    sw, port = fake
    async with RouterOsTransport(target(port)) as t:
        r = await t.print("/interface/bridge/port")
        assert r.ok and r.kind == "api" and r.target == "crs804"
        assert r.command == "/interface/bridge/port print"
        assert r.rows[1] == {
            ".id": "*2",
            "interface": "qsfp56-dd-1-2",
            "bridge": "bridge1",
            "hw": "true",
            "hw-offload": "false",
        }
        r2 = await t.print(
            "/interface/bridge/port",
            proplist=["interface", "hw-offload"],
            where={"bridge": "bridge1"},
        )
        assert r2.rows == ({"interface": "qsfp56-dd-1-2", "hw-offload": "false"},)
        mon = await t.monitor_once(["qsfp56-dd-1-1", "qsfp56-dd-1-5"])
        assert [row["name"] for row in mon.rows] == ["qsfp56-dd-1-1", "qsfp56-dd-1-5"]
        assert sw.received[-1] == [
            "/interface/ethernet/monitor",
            "=numbers=qsfp56-dd-1-1,qsfp56-dd-1-5",
            "=once=",
        ]
        res = await t.call("/system/resource", "print")
        assert res.rows[0]["cpu-load"] == "3"
        assert t.logins == 1


async def test_writes_select_by_key_and_look_up_the_id_first(fake: tuple[FakeSwitch, int]) -> None:
    sw, port = fake
    async with RouterOsTransport(target(port)) as t:
        r = await t.set("/interface/bridge/port", ("interface", "qsfp56-dd-1-2"), hw=True)
        assert r.ok, r.error
        assert sw.ports["*2"]["hw"] == "yes"
        assert sw.received[-2] == [
            "/interface/bridge/port/print",
            "=.proplist=.id",
            "?interface=qsfp56-dd-1-2",
        ]
        assert sw.received[-1] == ["/interface/bridge/port/set", "=.id=*2", "=hw=yes"]
        gone = await t.execute(
            ApiCommand("/interface/bridge/port", "remove", select=("interface", "qsfp56-dd-1-2"))
        )
        assert gone.ok and "*2" not in sw.ports
        again = await t.remove("/interface/bridge/port", ("interface", "qsfp56-dd-1-2"))
        assert (
            again.error is not None
            and "nothing in /interface/bridge/port has interface=qsfp56-dd-1-2" in again.error
        )
        added = await t.add("/interface/bridge/port", bridge="bridge", interface="qsfp56-dd-1-2")
        assert added.rows == ({"ret": "*B"},)


async def test_export_and_read_a_large_file_in_chunks(fake: tuple[FakeSwitch, int]) -> None:
    sw, port = fake
    async with RouterOsTransport(target(port)) as t:
        assert (await t.export("fabwiz-pre")).ok
        r = await t.read_file("fabwiz-pre.rsc")
        assert r.stdout == BIG
        reads = [w for w in sw.received if w[0] == "/file/read"]
        assert len(reads) == 3  # 92k in 32k chunks
        missing = await t.read_file("nope.rsc")
        assert missing.error == "crs804: no file 'nope.rsc' on the switch"


async def test_failures_are_results_naming_the_switch(fake: tuple[FakeSwitch, int]) -> None:
    _sw, port = fake
    async with RouterOsTransport(target(port, password="wrong")) as t:
        r = await t.print("/system/resource")
        assert r.error is not None
        assert r.error.startswith("crs804: login refused for user 'fabwiz'")
        assert "invalid user name or password (6)" in r.error
    async with RouterOsTransport(target(port)) as t:
        trap = await t.call("/nonsense", "print")
        assert (
            trap.error
            == "crs804: `/nonsense print` was refused by the switch: no such command prefix"
        )
        slow = await t.call("/slow", "print", timeout=0.3)
        assert slow.error is not None and "gave no answer within 0.3 s" in slow.error
        fatal = await t.call("", "quit")
        assert (
            fatal.error == "crs804: the switch ended the API session: session terminated on request"
        )
        ok = await t.print("/system/resource")  # reconnects
        assert ok.ok and t.logins == 3


async def test_a_started_login_is_the_one_connect_waits_for(fake: tuple[FakeSwitch, int]) -> None:
    sw, port = fake
    async with RouterOsTransport(target(port)) as t:
        t.start()
        t.start()  # once
        assert await t.connect() is None and t.logins == 1
        assert (await t.print("/system/resource")).ok and t.logins == 1
    async with RouterOsTransport(target(port, password="wrong")) as bad:
        bad.start()
        err = await bad.connect()
        assert err is not None and err.startswith("crs804: login refused for user 'fabwiz'")
        assert bad.logins == 1  # the refused login was tried once, not again by connect
        assert await bad.connect() is not None and bad.logins == 2  # a later connect: a new try
    logins = [w for w in sw.received if w[0] == "/login"]
    assert len(logins) == 3


async def test_close_cancels_a_login_nobody_waited_for(fake: tuple[FakeSwitch, int]) -> None:
    _sw, port = fake
    t = RouterOsTransport(target(port))
    t.start()
    started = t._starting
    await t.close()
    assert started is not None and started.done() and t._starting is None


async def test_refused_port() -> None:
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    async with RouterOsTransport(target(port)) as t:
        r = await t.print("/system/resource")
    assert r.error is not None
    assert r.error.startswith(f"crs804: 127.0.0.1:{port} refused the connection")
    assert "/ip service enable api" in r.error


# --- against the lab's RouterOS API server (the real switch model), plain and API-SSL -----------


def _self_signed(tmp: object) -> tuple[str, str]:
    import datetime as dt
    from pathlib import Path

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "crs804")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    d = Path(str(tmp))
    (d / "c.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (d / "k.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(d / "c.pem"), str(d / "k.pem")


@pytest.mark.parametrize("tls", [False, True], ids=["api-8728", "api-ssl-8729"])
async def test_against_the_lab_switch(tls: bool, tmp_path: object) -> None:
    import ssl

    from wizard.lab.routeros.server import RouterOsServer
    from wizard.lab.routeros.switch import SwitchState

    sw = SwitchState.new("crs804", "CRS804-4DDQ")
    context = None
    if tls:
        cert, key = _self_signed(tmp_path)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
    server = RouterOsServer(sw, users={"fabwiz": "pw"}, ssl=context)
    port = await server.start()
    pin = None
    if tls:  # a self-signed certificate is trusted by its pinned fingerprint only
        from pathlib import Path

        from wizard.transports.routeros_tls import fingerprint

        pin = fingerprint(ssl.PEM_cert_to_DER_cert(Path(cert).read_text()))
    try:
        async with RouterOsTransport(target(port, tls=tls, tls_fingerprint=pin)) as t:
            ident = await t.print("/system/identity")
            assert ident.rows == ({"name": "crs804"},)
            bp = await t.print(
                "/interface/bridge/port",
                proplist=["interface", "hw"],
                where={"interface": "qsfp56-dd-2-5"},
            )
            assert bp.rows == ({"interface": "qsfp56-dd-2-5", "hw": "true"},)
            r = await t.set("/interface/bridge/port", ("interface", "qsfp56-dd-2-5"), hw="no")
            assert r.ok, r.error
            after = await t.print(
                "/interface/bridge/port", proplist=["hw"], where={"interface": "qsfp56-dd-2-5"}
            )
            assert after.rows == ({"hw": "false"},)
            mon = await t.monitor_once(["qsfp56-dd-1-1"])
            assert mon.rows[0]["name"] == "qsfp56-dd-1-1" and mon.rows[0]["status"] in (
                "link-ok",
                "no-link",
            )
            assert (await t.export("fabwiz-pre")).ok
            exp = await t.read_file("fabwiz-pre.rsc")
            assert exp.error is None
            assert "/interface bridge port" in exp.stdout and "hw=no" in exp.stdout
            bad = await t.call("/interface/bridge/port", "remove", **{".id": "*FFFF"})
            assert bad.error is not None and "no such item" in bad.error
    finally:
        await server.stop()


async def test_started_says_when_the_begun_login_has_ended(fake: tuple[FakeSwitch, int]) -> None:
    _sw, port = fake
    async with RouterOsTransport(target(port)) as t:
        assert await t.started(0.01)  # none begun
        t.start()
        taken = asyncio.ensure_future(t.connect())  # a sweep takes it over at once
        await asyncio.sleep(0)
        assert await t.started(5.0) and await taken is None and t.logins == 1
    silent = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    try:
        async with RouterOsTransport(target(silent.sockets[0].getsockname()[1])) as hung:
            hung.start()
            assert not await hung.started(0.1)  # a switch that never answers the login
    finally:
        silent.close()
