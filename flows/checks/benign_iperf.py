"""Red herring: one iperf3 TCP stream at ~8-16 Gb/s measures the ARM core, not the link.

A single TCP stream on a GB10 is bound by one core; the link carries ~93 Gb/s per half with
`-P 4` or more on both halves (`benign.iperf-single-stream`). The sweep runs no iperf3, so no
check judges it: this is the rule for a pasted `iperf3 -J` output only.
"""

from __future__ import annotations

from flows.base import Context, PastedRule
from wizard.errors import ParseError
from wizard.model import Status, Verdict
from wizard.parsers.iperf3 import parse_iperf3

FAULT = "benign.iperf-single-stream"


def judge_pasted(text: str, ctx: Context) -> list[Verdict]:
    """A pasted `iperf3 -J` run: one stream in the single-core band is benign."""
    try:
        r = parse_iperf3(text)
    except ParseError:
        return []
    bw = r.received_gbps or r.sent_gbps
    if r.streams != 1 or bw is None or not 8.0 <= bw <= 16.0:
        return []
    return [
        Verdict(
            FAULT,
            Status.BENIGN,
            f"one TCP stream at {bw:.1f} Gb/s measures the ARM core, not the link: use "
            "-P 4+ on both halves (expect ~93 Gb/s per half)",
            check=FAULT,
        )
    ]


RULE = PastedRule(("iperf3",), judge_pasted)
