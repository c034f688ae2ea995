"""NCCL as the ground truth that can fail: the transport from per-channel lines, busbw judged in
bands (software path, sockets, half, healthy) under the fault that explains it or
`nccl.busbw-low`, and NCCL corroborating any drastic host verdict from perftest (perftest#394).
Also: a CX7 firmware difference alone is information, never `host.cx7-throttled`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from flows.base import Context
from flows.checks import perf_nccl, perf_rails
from flows.checks.perf_nccl import NcclRun, busbw_band, channel_transport
from flows.checks.perf_rails import RailRuns
from flows.expectations import DEFAULT
from wizard.model import Measurement, Status
from wizard.parsers.nccl import parse_nccl

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "fixtures" / "real"
CTX4 = Context(expectations=DEFAULT, nodes=("a", "b", "c", "d"), switches=("sw",))

SINGLE_HOST_NVLINK = """\
host1:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
host1:1:1 [0] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)
host1:1:1 [0] NCCL INFO Using network Socket
host1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read
host1:1:9 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC/read
"""


def test_single_host_p2p_channels_are_no_socket_fallback() -> None:
    p = parse_nccl(SINGLE_HOST_NVLINK)
    assert p.networks == ("Socket",)  # what "Using network" alone would say
    assert channel_transport(p) == "P2P"
    run = NcclRun(
        Measurement("nccl", "cluster", 0.0, "GB/s", extra={"raw": SINGLE_HOST_NVLINK}),
        p,
        None,
        active=2,
        hca_config_bad=False,
        half_config_bad=False,
        socket_config_bad=False,
    )
    ctx = Context(expectations=DEFAULT, nodes=("host1",))
    sock = next(v for v in perf_nccl.judge(run, ctx) if v.fault == "nccl.socket-fallback")
    assert sock.status == Status.PASS and "inside the node" in sock.summary


@pytest.mark.skipif(not REAL.is_dir(), reason="shared real fixtures absent")
def test_channel_lines_decide_on_real_logs() -> None:
    mixed = parse_nccl(
        (REAL / "nccl-debug/nccl-socket-channels-then-proxy-connect-warn.txt").read_text()
    )
    assert channel_transport(mixed) == "Socket"  # P2P inside the node, Socket between nodes
    ib = parse_nccl(
        (REAL / "nccl-debug/dgx-spark-mesh-plugin-channels-net-ib-4-5-gid3.txt").read_text()
    )
    assert channel_transport(ib) == "IB"


@pytest.mark.parametrize(
    ("busbw", "band"),
    [(0.46, "software"), (2.37, "socket"), (11.7, "half"), (18.0, "low"), (23.33, "healthy")],
)
def test_busbw_bands_of_faults_md(busbw: float, band: str) -> None:
    assert busbw_band(busbw, CTX4) == band


def _ib_run(busbw: float, explained: tuple[str, ...] = ()) -> NcclRun:
    text = "x NCCL INFO Using network IB\nx NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n"
    p = replace(parse_nccl(text), avg_busbw=busbw)
    m = Measurement("nccl", "cluster", busbw, "GB/s", extra={"raw": text})
    return NcclRun(m, p, None, 2, False, False, False, explained)


def test_slow_nccl_over_ib_is_busbw_low_when_nothing_explains_it() -> None:
    got = {v.fault: v for v in perf_nccl.judge(_ib_run(0.46), CTX4)}
    assert got["nccl.socket-fallback"].status == Status.PASS  # it is IB, and it is slow
    low = got["nccl.busbw-low"]
    assert low.status == Status.FAIL and "software-forwarding band" in low.summary
    assert low.evidence[0].observed == "busbw 0.46 GB/s over IB: software"


def test_slow_nccl_is_reported_under_the_fault_that_explains_it() -> None:
    got = {v.fault: v for v in perf_nccl.judge(_ib_run(0.46, ("switch.offload-lost",)), CTX4)}
    assert "nccl.busbw-low" not in got
    assert got["switch.offload-lost"].status == Status.FAIL
    assert "0.46 GB/s" in got["switch.offload-lost"].summary


def test_healthy_busbw_passes_against_the_gate() -> None:
    got = {v.fault: v for v in perf_nccl.judge(_ib_run(23.4), CTX4)}
    assert got["nccl.busbw-low"].status == Status.PASS


def _degraded(nccl: float | None) -> dict[str, object]:
    m = Measurement(
        "rail",
        "a/p0->b/p0",
        12.8,
        "Gb/s",
        extra={"client": "a", "server": "b", "client_netdev": "p0", "server_netdev": "p0"},
    )
    r = RailRuns((m,), (), False, False, frozenset(), frozenset(), {}, frozenset(), nccl)
    ctx = replace(CTX4, cabling={"a/p0": ("sw", "qsfp56-dd-1-1")})
    v = next(v for v in perf_rails.judge(r, ctx) if v.fault == "host.cx7-degraded")
    return {"status": v.status, "summary": v.summary, "evidence": v.evidence}


def test_nccl_corroborates_before_an_ac_drain() -> None:
    agrees = _degraded(6.0)
    assert agrees["status"] == Status.FAIL and "NCCL agrees (6 GB/s)" in str(agrees["summary"])
    healthy = _degraded(23.5)
    assert healthy["status"] == Status.WARN
    assert "perftest#394" in str(healthy["summary"])
    alone = _degraded(None)
    assert alone["status"] == Status.FAIL and "not corroborated" in str(alone["summary"])
    assert any(e.status == Status.UNKNOWN for e in alone["evidence"])  # type: ignore[attr-defined]


def test_firmware_difference_alone_is_information() -> None:
    from flows.checks import host_pcie
    from flows.checks.host_pcie import Firmware, HostPcie

    h = HostPcie((), (Firmware("a", "p0", "28.45.4028"), Firmware("b", "p0", "28.47.1088")), (), ())
    v = next(v for v in host_pcie.judge(h, CTX4) if v.fault == "host.cx7-throttled")
    assert v.status == Status.PASS
    assert "information only" in v.summary and "a" in v.summary
    assert any(e.status == Status.BENIGN and "28.45.4028" in e.observed for e in v.evidence)
