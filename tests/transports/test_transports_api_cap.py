"""RouterOS API replies and switch files are capped like SSH probe output: a switch that answers
with more than the caps costs at most the caps, the reply says what was cut, and the session
stays in step for the next command. Against the lab's RouterOS API server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from wizard import fixes
from wizard.fabric import ApiPort
from wizard.lab.routeros.menus_system import write_file
from wizard.lab.routeros.server import RouterOsServer
from wizard.lab.routeros.switch import SwitchState
from wizard.transports.capped import DEFAULT_CAP
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport


@pytest.fixture
async def switch() -> AsyncIterator[tuple[SwitchState, RouterOsTransport]]:
    sw = SwitchState.new("crs804", "CRS804-4DDQ")
    server = RouterOsServer(sw, users={"fabwiz": "pw"})
    port = await server.start()
    target = RouterOsTarget(
        name="crs804", host="127.0.0.1", user="fabwiz", password="pw", port=port, timeout_s=30.0
    )
    try:
        async with RouterOsTransport(target) as t:
            yield sw, t
    finally:
        await server.stop()


async def _flood_log(t: RouterOsTransport, sw: SwitchState, rows: int, width: int) -> None:
    assert await t.connect() is None  # logged in first: the login's own log line is gone too
    sw.tables["log"].clear()
    for i in range(rows):
        sw.log("system,info", f"line {i:04d} " + "x" * width)


async def test_a_huge_reply_is_cut_at_the_default_cap_and_says_so(switch: Any) -> None:
    sw, t = switch
    await _flood_log(t, sw, 1000, 8000)  # about 8 MB in one reply
    res = await t.print("/log")
    assert res.error is not None and "reply truncated: 1000 rows" in res.error
    assert "FABWIZ_PROBE_OUTPUT_MB" in res.error and "incomplete" in res.error
    kept = sum(sum(len(k) + len(v) + 3 for k, v in r.items()) for r in res.rows)
    assert 0 < len(res.rows) < 1000 and kept <= DEFAULT_CAP
    # the first rows, in order, exactly as sent; nothing after the cut
    assert [r["message"][:9] for r in res.rows] == [f"line {i:04d}" for i in range(len(res.rows))]
    assert res.stderr == res.error.removeprefix("crs804: `/log print`: ")
    # the rest was drained: the next command on the same session gets its own answer
    ident = await t.print("/system/identity")
    assert ident.error is None and ident.rows == ({"name": "crs804"},)
    assert t.logins == 1


async def test_the_row_cap_is_configurable(switch: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sw, t = switch
    await _flood_log(t, sw, 600, 10)
    monkeypatch.setenv("FABWIZ_API_ROWS", "250")
    from wizard.transports.capped import rows_from_env

    t.reply_rows = rows_from_env()
    res = await t.print("/log")
    assert len(res.rows) == 250
    assert res.error is not None
    assert "600 rows" in res.error and "only the first 250 rows" in res.error
    t.reply_rows = 1000
    whole = await t.print("/log")
    assert whole.error is None and len(whole.rows) == 600


async def test_a_switch_file_larger_than_the_cap_is_read_only_to_the_cap(switch: Any) -> None:
    sw, t = switch
    body = "".join(f"# line {i:06d}\n" for i in range(40000))  # 560 kB
    write_file(sw, "big.rsc", body)
    t.reply_cap = 128 * 1024
    res = await t.read_file("big.rsc")
    assert res.error is not None and f"big.rsc is {len(body)} bytes" in res.error
    assert res.rows[0]["contents"] == body[: 128 * 1024]
    assert res.stdout.startswith(body[: 128 * 1024])
    assert f"output truncated: {len(body)} bytes, only the first {128 * 1024} kept" in res.stdout
    t.reply_cap = DEFAULT_CAP
    whole = await t.read_file("big.rsc")
    assert whole.error is None and whole.stdout == body


async def test_an_export_larger_than_the_cap_refuses_the_change(
    switch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sw, t = switch
    for item in sw.tables["bridge-port"]:
        item["comment"] = "c" * 4000  # a real export, made large by the switch's own comments
    monkeypatch.setenv("FABWIZ_PROBE_OUTPUT_MB", "0.0625")  # 64 KiB
    status = await fixes.take_export(ApiPort(t), "crs804", "fabwiz-pre")
    assert not status.verified
    assert status.size > 64 * 1024
    assert status.error is not None
    assert f"is {status.size} bytes, more than the 65536 fabwiz reads" in status.error
    monkeypatch.delenv("FABWIZ_PROBE_OUTPUT_MB")
    ok = await fixes.take_export(ApiPort(t), "crs804", "fabwiz-pre2")
    assert ok.verified and ok.error is None and ok.size == len(ok.contents.encode())
    assert ok.size > 64 * 1024 and "interface=qsfp56-dd-4-8" in ok.contents
