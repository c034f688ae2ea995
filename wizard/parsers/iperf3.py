"""`iperf3 -J`: one JSON object, also on failure (`"error": "..."`).

Sample input it matches (real/iperf3-json/):

    {"start": {"test_start": {"protocol": "TCP", "num_streams": 1, ...}}, "intervals": [...],
     "end": {"sum_sent": {"bits_per_second": 37511606028.6}, "sum_received": {...}}}

A single TCP stream near 12 Gb/s on a GB10 measures the ARM core, not the link
(`benign.iperf-single-stream`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wizard.errors import ParseError
from wizard.parsers.common import load_json

TOOL = "iperf3"


@dataclass(frozen=True, slots=True)
class Iperf3Result:
    protocol: str | None = None
    streams: int | None = None
    duration_s: float | None = None
    sent_gbps: float | None = None
    received_gbps: float | None = None
    retransmits: int | None = None
    remote_host: str | None = None
    reverse: bool = False
    error: str | None = None


def _d(obj: Any, key: str) -> dict[str, Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def parse_iperf3(text: str) -> Iperf3Result:
    data = load_json(text, tool=TOOL)
    if not isinstance(data, dict) or not ({"start", "end", "error"} & set(data)):
        raise ParseError("JSON without start/end/error: not iperf3 -J", tool=TOOL, raw=text)
    start, end = _d(data, "start"), _d(data, "end")
    ts = _d(start, "test_start")
    sent, recv = _d(end, "sum_sent"), _d(end, "sum_received")
    if not sent and "sum" in end:  # UDP
        sent = _d(end, "sum")
    bps_s, bps_r = _num(sent.get("bits_per_second")), _num(recv.get("bits_per_second"))
    conns = start.get("connected")
    remote = None
    if isinstance(conns, list) and conns and isinstance(conns[0], dict):
        host = conns[0].get("remote_host")
        remote = host if isinstance(host, str) else None
    streams = _num(ts.get("num_streams"))
    dur = _num(sent.get("seconds"))
    retr = _num(sent.get("retransmits"))
    err = data.get("error")
    proto = ts.get("protocol")
    return Iperf3Result(
        protocol=proto if isinstance(proto, str) else None,
        streams=int(streams) if streams is not None else None,
        duration_s=dur,
        sent_gbps=round(bps_s / 1e9, 3) if bps_s is not None else None,
        received_gbps=round(bps_r / 1e9, 3) if bps_r is not None else None,
        retransmits=int(retr) if retr is not None else None,
        remote_host=remote,
        reverse=bool(ts.get("reverse")),
        error=err if isinstance(err, str) else None,
    )
