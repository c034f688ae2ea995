"""`ping` (iputils) output, with `-M do` (don't fragment) jumbo checks in mind.

Sample lines it matches (real/ping/):

    PING 10.9.0.2 (10.9.0.2) from 10.9.0.1 enp1s0f0np0: 8972(9000) bytes of data.
    8980 bytes from 10.9.0.2: icmp_seq=1 ttl=64 time=0.069 ms
    ping: local error: Message too long, mtu=1460
    3 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms

`mtu_errors` (`local error: message too long`, either case) means the local netdev MTU is below
the packet size (`host.mtu`); silent loss of jumbo frames with small pings fine points at the
path (`switch.mtu`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wizard.errors import ParseError
from wizard.parsers.common import lines, strip_prompt

TOOL = "ping"
_HEAD = re.compile(
    r"^PING\s+(\S*)\s+\(([^)]*)\)\s+(?:from (\S+) (\S+?): )?(\d+)\((\d+)\) bytes of data"
)
_REPLY = re.compile(r"^(\d+) bytes from .*icmp_seq=(\d+).*time=([\d.]+) ms")
_STATS = re.compile(
    r"^(\d+) packets transmitted, (\d+) (?:packets )?received(?:, \+(\d+) errors)?"
    r"(?:, \+\d+ duplicates)?, ([\d.]+)% packet loss"
)
_RTT = re.compile(r"^(?:rtt|round-trip) min/avg/max/(?:mdev|stddev) = ([\d.]+)/([\d.]+)/([\d.]+)")
_MTU = re.compile(r"local error: [Mm]essage too long, mtu=(\d+)")


@dataclass(frozen=True, slots=True)
class PingResult:
    target: str | None = None
    address: str | None = None
    source: str | None = None
    interface: str | None = None
    payload: int | None = None  # -s size
    packet_size: int | None = None  # IP packet (payload + 28)
    dont_fragment: bool | None = None  # -M do on the pasted command line
    transmitted: int | None = None
    received: int | None = None
    errors: int = 0
    loss_pct: float | None = None
    rtt_avg_ms: float | None = None
    replies: int = 0
    mtu_errors: int = 0
    reported_mtu: int | None = None
    error_lines: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return bool(self.received) and not self.mtu_errors


def parse_ping(text: str) -> PingResult:
    fields: dict[str, object] = {}
    replies = mtu_errors = 0
    reported: int | None = None
    errs: list[str] = []
    df: bool | None = None
    seen = False
    for raw in lines(text):
        line = strip_prompt(raw).strip()
        if line.startswith("ping ") and " -" in line:
            df = bool(re.search(r"-M\s*do\b", line))
            continue
        if m := _HEAD.match(line):
            seen = True
            fields.update(
                target=m.group(1) or None,
                address=m.group(2),
                source=m.group(3),
                interface=m.group(4),
                payload=int(m.group(5)),
                packet_size=int(m.group(6)),
            )
        elif _REPLY.match(line):
            replies += 1
        elif m := _MTU.search(line):
            mtu_errors += 1
            seen = True
            reported = int(m.group(1))
            if line not in errs:
                errs.append(line)
        elif m := _STATS.match(line):
            seen = True
            fields.update(
                transmitted=int(m.group(1)),
                received=int(m.group(2)),
                errors=int(m.group(3) or 0),
                loss_pct=float(m.group(4)),
            )
        elif m := _RTT.match(line):
            fields["rtt_avg_ms"] = float(m.group(2))
        elif line.startswith("ping:") and line not in errs:
            errs.append(line)
            seen = True
    if not seen:
        raise ParseError("no `PING` header, statistics or `ping:` error line", tool=TOOL, raw=text)

    def s(key: str) -> str | None:
        v = fields.get(key)
        return v if isinstance(v, str) else None

    def i(key: str) -> int | None:
        v = fields.get(key)
        return v if isinstance(v, int) else None

    loss = fields.get("loss_pct")
    rtt = fields.get("rtt_avg_ms")
    return PingResult(
        target=s("target"),
        address=s("address"),
        source=s("source"),
        interface=s("interface"),
        payload=i("payload"),
        packet_size=i("packet_size"),
        dont_fragment=df,
        transmitted=i("transmitted"),
        received=i("received"),
        errors=i("errors") or 0,
        loss_pct=loss if isinstance(loss, float) else None,
        rtt_avg_ms=rtt if isinstance(rtt, float) else None,
        replies=replies,
        mtu_errors=mtu_errors,
        reported_mtu=reported,
        error_lines=tuple(errs),
    )
