"""librouteros 4.2 (sync and async) as the client of the lab's RouterOS API server."""

from __future__ import annotations

import asyncio
import ssl

import librouteros
import pytest
from librouteros.exceptions import FatalError, MultiTrapError, TrapError
from librouteros.query import Key
from ros_helpers import FakeClock, ThreadedServer

from wizard.lab.routeros.server import RouterOsServer, api_ssl_context
from wizard.lab.routeros.switch import SwitchState


def connect(srv: ThreadedServer) -> librouteros.api.Api:
    return librouteros.connect("127.0.0.1", "admin", "s3cret", port=srv.port, timeout=5)


def test_sync_probes_of_the_team_contract(threaded: ThreadedServer, crs804: SwitchState) -> None:
    api = connect(threaded)
    try:
        res = next(iter(api.path("system", "resource")))
        assert (res["board-name"], res["cpu-load"], res["cpu-count"]) == ("CRS804-4DDQ", 1, 4)
        assert res["version"] == "7.23.1 (stable)"
        assert tuple(api.path("system", "identity")) == ({"name": "crs804"},)
        assert next(iter(api.path("system", "routerboard")))["model"] == "CRS804-4DDQ"
        ifaces = {r["name"]: r for r in api.path("interface")}
        assert ifaces["qsfp56-dd-1-1"]["running"] is True and ifaces["bridge"]["type"] == "bridge"
        eth = {r["name"]: r for r in api.path("interface", "ethernet")}
        assert (eth["qsfp56-dd-1-5"]["l2mtu"], eth["qsfp56-dd-1-5"]["speed"]) == (
            9216,
            "200G-baseCR4",
        )
        mon = tuple(
            api.path("interface", "ethernet")(
                "monitor", numbers="qsfp56-dd-1-1,qsfp56-dd-2-5", once=True
            )
        )
        assert [(m["name"], m["status"], m["rate"], m["fec"], m["full-duplex"]) for m in mon] == [
            ("qsfp56-dd-1-1", "link-ok", "200Gbps", "fec91", True),
            ("qsfp56-dd-2-5", "link-ok", "200Gbps", "fec91", True),
        ]
        bridges = tuple(api.path("interface", "bridge"))
        assert [b["name"] for b in bridges] == ["bridge"]
        ports = tuple(api.path("interface", "bridge", "port"))
        assert (
            len(ports) == 33 and ports[0]["hw-offload"] is False and ports[1]["hw-offload"] is True
        )
        hosts = tuple(api.path("interface", "bridge", "host"))
        # nothing learned yet: one local entry per bridge port, with the port's own MAC
        assert len(hosts) == len(ports) and all(h["local"] is True for h in hosts)
        assert {h["on-interface"] for h in hosts} == {p["interface"] for p in ports}
        addrs = tuple(api.path("ip", "address"))
        # a switch outside a world has no management port, so no management network is modelled
        # (/ip/address: the address sits on the management port's bridge, per switch)
        assert addrs == ()
        assert tuple(api.path("ip", "arp")) == ()
        sw = next(iter(api.path("interface", "ethernet", "switch")))
        assert (sw["name"], sw["type"], sw["qos-hw-offloading"]) == (
            "switch1",
            "Marvell-98DX7335",
            True,
        )
        qos = {q["name"]: q for q in api.path("interface", "ethernet", "switch", "qos", "port")}
        assert (qos["qsfp56-dd-1-1"]["trust-l3"], qos["qsfp56-dd-1-1"]["pfc"]) == (
            "ignore",
            "disabled",
        )
        logs = [entry["message"] for entry in api.path("log")]
        assert any(m.startswith('hardware offloading activated on bridge "bridge"') for m in logs)
    finally:
        api.close()


def test_sync_query_add_update_remove(threaded: ThreadedServer, crs804: SwitchState) -> None:
    api = connect(threaded)
    try:
        bp = api.path("interface", "bridge", "port")
        iface, hw, bridge = Key("interface"), Key("hw-offload"), Key("bridge")
        rows = list(
            bp.select(iface, hw).where(
                hw == False,  # noqa: E712 (librouteros builds the query from ==)
                bridge.In("bridge", "other"),
                iface != "ether1",
            )
        )
        assert rows == []
        new = api.path("interface", "bridge").add(name="roce-br")
        assert new == "*24"
        ids = [r[".id"] for r in bp.select(Key(".id")).where(iface == "qsfp56-dd-1-1")]
        bp.update(**{".id": ids[0], "bridge": "roce-br"})
        rows = list(bp.select(iface, hw, bridge).where(bridge == "roce-br"))
        assert rows == [{"interface": "qsfp56-dd-1-1", "hw-offload": False, "bridge": "roce-br"}]
        removable = [
            r[".id"]
            for r in bp.select(Key(".id")).where(
                bridge == "bridge", iface.In("qsfp56-dd-1-2", "qsfp56-dd-1-3")
            )
        ]
        bp.remove(*removable)
        assert crs804.bridge_port("qsfp56-dd-1-2") is None
        with pytest.raises(TrapError) as trap:
            bp.remove("*FFF")
        assert (trap.value.message, trap.value.category) == ("no such item (4)", None)
        with pytest.raises(MultiTrapError) as multi:
            tuple(api.path("system", "routerboardx"))
        assert (
            str(multi.value)
            == "no such command or directory (routerboardx), no such command prefix"
        )
        with pytest.raises(TrapError) as bad:
            api.path("interface", "ethernet").update(**{".id": "qsfp56-dd-1-1", "speed": "999G"})
        assert bad.value.category == 1
    finally:
        api.close()


def test_sync_export_file_and_scheduler(
    threaded: ThreadedServer, crs804: SwitchState, clock: FakeClock
) -> None:
    api = connect(threaded)
    try:
        assert tuple(api("/export", file="fabwiz-before")) == ()
        files = list(
            api.path("file")
            .select(Key("name"), Key("size"), Key("contents"))
            .where(Key("name") == "fabwiz-before.rsc")
        )
        assert files[0]["size"] == len(files[0]["contents"]) > 1000
        assert files[0]["contents"].startswith("# 2026-09-21 14:13:20 by RouterOS 7.23.1\n")
        data = tuple(api("/file/read", file="fabwiz-before.rsc", offset=0, **{"chunk-size": 40}))
        assert data[0]["data"] == files[0]["contents"][:40]
        api.path("file").remove("fabwiz-before.rsc")
        assert tuple(api.path("file")) == ()
        sched = api.path("system", "scheduler")
        sched.add(
            name="fabwiz-rollback",
            interval="30s",
            **{"on-event": "/interface bridge port set [find interface=qsfp56-dd-1-1] hw=no"},
        )
        row = next(iter(sched))
        assert (row["name"], row["interval"], row["run-count"], row["next-run"]) == (
            "fabwiz-rollback",
            "30s",
            0,
            "2026-09-21 14:13:50",
        )
        clock.now += 31
        tuple(api.path("system", "identity"))  # every command ticks the scheduler
        assert crs804.bridge_port("qsfp56-dd-1-1")["hw"] == "false"
        assert next(iter(sched))["run-count"] == 1
    finally:
        api.close()


def test_sync_bad_password(threaded: ThreadedServer) -> None:
    with pytest.raises(TrapError) as exc:
        librouteros.connect("127.0.0.1", "admin", "wrong", port=threaded.port, timeout=5)
    assert exc.value.message == "invalid user name or password (6)"


def test_token_login_refused_plain_login_and_quit(threaded: ThreadedServer) -> None:
    # the pre-6.43 challenge login does not exist on RouterOS 7
    with pytest.raises(TrapError, match="invalid user name or password"):
        librouteros.connect(
            "127.0.0.1",
            "admin",
            "s3cret",
            port=threaded.port,
            timeout=5,
            login_method=librouteros.login.token,
        )
    api = connect(threaded)
    assert tuple(api.path("system", "identity")) == ({"name": "crs804"},)
    with pytest.raises(FatalError, match="session terminated on request"):
        tuple(api("/quit"))


async def test_async_client(crs804: SwitchState) -> None:
    server = RouterOsServer(crs804, users={"admin": "s3cret"}, tick_interval=0.01)
    port = await server.start()
    try:
        api = await librouteros.async_connect("127.0.0.1", "admin", "s3cret", port=port, timeout=5)
        rows = [
            r
            async for r in api.path("interface", "bridge", "port")
            .select(Key("interface"), Key("hw-offload"))
            .where(Key("interface") == "qsfp56-dd-3-5")
        ]
        assert rows == [{"interface": "qsfp56-dd-3-5", "hw-offload": True}]
        mon = [
            r
            async for r in api.path("interface", "ethernet")(
                "monitor", numbers="qsfp56-dd-3-5", once=True
            )
        ]
        assert mon[0]["status"] == "link-ok"
        new = await api.path("interface", "bridge").add(name="b2")
        assert new.startswith("*")
        await api.path("interface", "bridge").remove(new)
        assert [b["name"] for b in crs804.bridges()] == ["bridge"]
        await api.close()
    finally:
        await server.stop()


async def test_async_bad_login(crs804: SwitchState) -> None:
    server = RouterOsServer(crs804, users={"admin": "s3cret"}, tick_interval=None)
    port = await server.start()
    try:
        with pytest.raises(TrapError, match=r"invalid user name or password \(6\)"):
            await librouteros.async_connect("127.0.0.1", "admin", "x", port=port, timeout=5)
    finally:
        await server.stop()


def test_passwords_never_logged(
    threaded: ThreadedServer, crs804: SwitchState, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    with pytest.raises(TrapError):
        librouteros.connect("127.0.0.1", "admin", "wrong-pw-123", port=threaded.port, timeout=5)
    api = connect(threaded)
    tuple(api.path("system", "identity"))
    api.close()
    # librouteros itself logs the words it sends at DEBUG: look at the server's records only
    server_lines = [r.getMessage() for r in caplog.records if r.name.startswith("wizard")]
    logged = "\n".join(server_lines + [e["message"] for e in crs804.tables["log"]])
    assert "s3cret" not in logged and "wrong-pw-123" not in logged
    assert "user admin logged in from 127.0.0.1 via api" in logged


def _anon_client_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers("AECDH:ADH:@SECLEVEL=0")
    return ctx


def test_api_ssl_sync(crs804: SwitchState) -> None:
    srv = ThreadedServer(crs804, tick_interval=None, ssl=api_ssl_context())
    try:
        api = librouteros.connect(
            "127.0.0.1",
            "admin",
            "s3cret",
            port=srv.port,
            timeout=5,
            ssl_wrapper=_anon_client_context().wrap_socket,
        )
        assert tuple(api.path("system", "identity")) == ({"name": "crs804"},)
        api.close()
    finally:
        srv.close()


async def test_api_ssl_async(crs804: SwitchState) -> None:
    server = RouterOsServer(
        crs804, users={"admin": "s3cret"}, tick_interval=None, ssl=api_ssl_context()
    )
    port = await server.start()
    try:
        api = await librouteros.async_connect(
            "127.0.0.1", "admin", "s3cret", port=port, timeout=5, ssl_wrapper=_anon_client_context()
        )
        assert [r async for r in api.path("system", "identity")] == [{"name": "crs804"}]
        await api.close()
    finally:
        await server.stop()


def test_reboot_over_api_changes_ids(threaded: ThreadedServer, crs804: SwitchState) -> None:
    api = connect(threaded)
    before = [r[".id"] for r in api.path("interface", "bridge", "port")]
    assert tuple(api("/system/reboot")) == ()
    with pytest.raises((ConnectionError, librouteros.exceptions.ConnectionClosed)):
        tuple(api.path("system", "identity"))
    api = connect(threaded)
    after = [r[".id"] for r in api.path("interface", "bridge", "port")]
    assert before[0] == "*1" and after[0] == "*101"
    logs = [e["message"] for e in api.path("log")]
    assert logs[0] == "router rebooted"
    assert any(m.startswith('hardware offloading activated on bridge "bridge"') for m in logs)
    rows = tuple(api.path("interface", "bridge", "port")("print", **{".id": after[1]}))
    assert [r["interface"] for r in rows] == ["qsfp56-dd-1-1"]
    api.close()


async def test_background_ticker_fires_dead_man(crs804: SwitchState, clock: FakeClock) -> None:
    server = RouterOsServer(crs804, users={"admin": "s3cret"}, tick_interval=0.005)
    port = await server.start()
    try:
        api = await librouteros.async_connect("127.0.0.1", "admin", "s3cret", port=port, timeout=5)
        sched = api.path("system", "scheduler")
        await sched.add(
            name="fabwiz-rollback",
            **{
                "start-date": "2026-09-21",
                "start-time": "14:14:00",
                "on-event": "/interface bridge port add bridge=bridge interface=ether2",
            },
        )
        await api.close()
        await asyncio.sleep(0.03)
        assert crs804.bridge_port("ether2") is None
        clock.now += 40  # the window passes on the switch clock; nobody talks to the API
        for _ in range(100):
            await asyncio.sleep(0.005)
            if crs804.bridge_port("ether2") is not None:
                break
        assert crs804.bridge_port("ether2")["bridge"] == "bridge"
    finally:
        await server.stop()


def test_file_add_and_import(threaded: ThreadedServer, crs804: SwitchState) -> None:
    api = connect(threaded)
    try:
        api.path("file").add(
            name="fix.rsc",
            contents="/interface bridge port\nset [find interface=qsfp56-dd-1-1] hw=no\n",
        )
        assert tuple(api("/import", **{"file-name": "fix.rsc"})) == ()
        assert not crs804.hw_offload("qsfp56-dd-1-1")
        api.path("file").add(
            name="bad.rsc",
            contents="/interface bridge port set [find interface=qsfp56-dd-1-1] hw=perhaps\n",
        )
        with pytest.raises(TrapError) as exc:
            tuple(api("/import", **{"file-name": "bad.rsc"}))
        assert (exc.value.category, exc.value.message) == (
            3,
            "input does not match any value of hw",
        )
        with pytest.raises(TrapError, match="already exists"):
            api.path("file").add(name="fix.rsc", contents="")
    finally:
        api.close()
