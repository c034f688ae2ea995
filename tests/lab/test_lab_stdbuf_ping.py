"""The lab's `stdbuf` refuses and runs as coreutils' does, perftest's stdout is buffered as a C
program's on a pipe, and `ping -i` spaces the echo requests as iputils does."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest

from wizard.lab import scenarios
from wizard.lab.clock import ManualClock
from wizard.lab.hostcmds import Host
from wizard.lab.perftest import PIPE_BUFFER, Registry, StdioOut
from wizard.lab.world import World


def _lab(name: str = "healthy-2node-direct") -> tuple[World, ManualClock, Registry]:
    clock = ManualClock()
    return scenarios.build_world(scenarios.load(name), clock=clock), clock, Registry()


async def _run(host: Host, clock: ManualClock, script: str) -> tuple[str, str, int]:
    out: list[str] = []
    err: list[str] = []

    async def go() -> int:
        return await host.run(script, out.append, err.append)

    rc = await clock.run(go())
    return "".join(out), "".join(err), rc


# what coreutils' stdbuf says and returns; checked against the real one where it is installed
STDBUF_CASES = [
    ("stdbuf echo hi", "", "stdbuf: you must specify a buffering mode option\n", 125),
    ("stdbuf -oL", "", "stdbuf: missing operand\n", 125),
    ("stdbuf -iL true", "", "stdbuf: line buffering stdin is meaningless\n", 125),
    ("stdbuf -oX true", "", "stdbuf: invalid mode \u2018X\u2019\n", 125),
    ("stdbuf -q true", "", "stdbuf: invalid option -- 'q'\n", 125),
    ("stdbuf -o", "", "stdbuf: option requires an argument -- 'o'\n", 125),
    (
        "stdbuf -oL nosuchcmd",
        "",
        "stdbuf: failed to run command \u2018nosuchcmd\u2019: No such file or directory\n",
        127,
    ),
    ("stdbuf -oL echo ok", "ok\n", "", 0),
    ("stdbuf --output=L echo ok", "ok\n", "", 0),
    ("stdbuf -o L echo ok", "ok\n", "", 0),
    ("stdbuf -o1K echo ok", "ok\n", "", 0),
    ("stdbuf -o0 -eL -- echo ok", "ok\n", "", 0),
    ("stdbuf -oL false", "", "", 1),
]
TRY = "Try 'stdbuf --help' for more information.\n"


@pytest.mark.parametrize(("script", "out", "err", "rc"), STDBUF_CASES)
async def test_stdbuf_as_coreutils(script: str, out: str, err: str, rc: int) -> None:
    w, clock, reg = _lab()
    got = await _run(Host(w, w.nodes["spark1"], reg), clock, script)
    usage = rc == 125 and "invalid mode" not in err
    assert got == (out, err + (TRY if usage else ""), rc)


@pytest.mark.skipif(shutil.which("stdbuf") is None, reason="coreutils' stdbuf is not installed")
@pytest.mark.parametrize(("script", "out", "err", "rc"), STDBUF_CASES)
def test_the_cases_are_what_the_real_stdbuf_does(script: str, out: str, err: str, rc: int) -> None:
    real = subprocess.run(
        script, shell=True, capture_output=True, text=True, timeout=10, check=False
    )
    first = real.stderr.splitlines(keepends=True)[:1]
    assert (real.stdout, "".join(first), real.returncode) == (out, err, rc)


def test_stdio_out_buffers_as_the_c_library() -> None:
    got: list[str] = []
    block = StdioOut(got.append, "")  # a pipe: blocks of 4096 bytes
    block("banner\n")
    assert got == []
    block("x" * PIPE_BUFFER)
    assert got == [("banner\n" + "x" * PIPE_BUFFER)[:PIPE_BUFFER]]
    block.flush()  # at exit: the rest
    assert "".join(got) == "banner\n" + "x" * PIPE_BUFFER
    got.clear()
    line = StdioOut(got.append, "L")
    line("a\nb")
    line("c\n")
    assert got == ["a\n", "bc\n"]
    got.clear()
    StdioOut(got.append, "0")("no buffer")
    assert got == ["no buffer"]


async def test_perftest_server_says_it_listens_only_when_line_buffered() -> None:
    w, _clock, reg = _lab()
    host = Host(w, w.nodes["spark2"], reg)
    for script, heard in (
        ("ib_write_bw -d rocep1s0f0 -x 3 -D 2 --report_gbits", False),
        ("stdbuf -oL ib_write_bw -d rocep1s0f0 -x 3 -D 2 --report_gbits -p 18600", True),
    ):
        out: list[str] = []
        task = asyncio.ensure_future(host.run(script, out.append, lambda _s: None))
        while len(reg.servers) == 0 and not task.done():
            await asyncio.sleep(0)
        await asyncio.sleep(0.01)
        assert reg.servers, script  # it listens either way
        assert ("Waiting for client to connect" in "".join(out)) is heard, script
        task.cancel()  # killed: what it buffered is lost, as on a node
        with pytest.raises(asyncio.CancelledError):
            await task
        assert "".join(out).count("Waiting") == int(heard)
        reg.servers.clear()


async def test_ping_interval_as_iputils() -> None:
    w, clock, reg = _lab()
    host = Host(w, w.nodes["spark1"], reg)
    base = "ping -c 3 -W 1 -I enp1s0f0np0 10.9.1.2"
    start = clock.now()
    out, _err, rc = await _run(host, clock, base)
    assert rc == 0 and clock.now() - start == pytest.approx(2.0)  # 1 s apart by default
    assert ", time 20" in out
    start = clock.now()
    out, _err, rc = await _run(host, clock, base.replace("-c 3", "-c 3 -i 0.2"))
    assert rc == 0 and clock.now() - start == pytest.approx(0.4)
    assert "3 received" in out and ", time 4" in out
    refused = await _run(host, clock, base.replace("-c 3", "-c 3 -i 0.001"))
    assert refused == (
        "",
        "ping: cannot flood, minimal interval for user must be >= 2 ms, use -i 0.002 (or higher)\n",
        2,
    )
    assert w.refused[-1] == ("spark1", base.replace("-c 3", "-c 3 -i 0.001"))
