"""What the counters of one bandwidth test say (seed 000's bisection, seed 003's rounds).

Deltas read by the sweep while each `ib_write_bw` moved data (`extra["counters"]`, per end,
over `extra["counter_window_s"]` seconds: no handshake, no other test in them) and the switch
ports that moved (`extra["switch_ports"]`). A downstream count under `counter_flat_share` of
what the sender sent is flat: background frames (LLDP, ARP), none of the test's data. The patterns:
frames vanish (sender `tx_packets_phy` grows, no switch leg and no receiver counts them) and,
with no ACK coming back, the sender's `local_ack_timeout_err` climbs: the data path stalls. Seed
000 saw that signature twice, from lossless QoS on the path (`switch.qos-pfc-stall`) and from
ARP flux (`host.duplicate-ip`): the counters cannot tell the two apart, the configuration along
the test can (`switch_qos`, `host_addressing`);
`packet_seq_err` growing near line rate under oversubscription is congestion control working,
growing while throughput sits in single digits is a broken path; `link_down_events_phy`
moving means the link bounced during the test (not evidence).
"""

from __future__ import annotations

from dataclasses import dataclass

from flows.base import Context
from wizard.model import Evidence, Measurement, Status

COMMAND = (
    "counters read while the test's data moved (sysfs hw_counters/counters, ethtool -S, "
    "switch /interface)"
)


@dataclass(frozen=True, slots=True)
class Signature:
    sent: int  # sender tx_packets_phy delta
    received: int  # receiver rx_packets_phy delta
    timeouts: int  # sender local_ack_timeout_err delta
    seq_err: int  # packet_seq_err + out_of_sequence, both ends
    cnp: int  # np_cnp_sent + rp_cnp_handled, both ends
    discards: int  # rx_discards_phy, both ends
    pauses: int  # tx/rx_pause_ctrl_phy, both ends
    link_downs: int  # link_down_events_phy, both ends
    switch_rx: int | None  # packets the client's switch leg received (None: leg unknown)
    window_s: float | None = None  # the targets' seconds of the transfer the deltas span
    # False: the second read came after the test's data ended (the window holds idle time)
    in_data: bool = True
    # a count under this share of `sent` is flat: none of the test's data (background frames)
    flat_share: float = 0.01

    def flat(self, count: int | None) -> bool:
        """Whether a downstream count is flat against what the sender sent."""
        return count is None or count <= self.sent * self.flat_share

    @property
    def vanished(self) -> bool:
        """Frames left the sender and nobody downstream counted them."""
        return self.sent > 0 and self.flat(self.received) and self.flat(self.switch_rx)

    @property
    def stalled_with_timeouts(self) -> bool:
        return self.sent > 0 and self.flat(self.received) and self.timeouts > 0


def _get(side: dict[str, int], *names: str) -> int:
    return sum(int(side.get(n, 0)) for n in names)


def signature(m: Measurement, ctx: Context) -> Signature | None:
    """The counter signature of one rail test (None: the counters were not read)."""
    got = m.extra.get("counters")
    if not isinstance(got, dict) or "client" not in got or "server" not in got:
        return None
    cli, srv = dict(got["client"]), dict(got["server"])
    both = (cli, srv)
    leg: int | None = None
    key = f"{m.extra.get('client', '')}/{m.extra.get('client_netdev', '')}"
    cable = ctx.cabling.get(key)
    ports = m.extra.get("switch_ports")
    if cable is not None and isinstance(ports, dict):
        sw, port = cable
        leg = int(dict(dict(ports.get(sw) or {}).get(port) or {}).get("rx-packet", 0))
    return Signature(
        sent=_get(cli, "tx_packets_phy"),
        received=_get(srv, "rx_packets_phy"),
        timeouts=_get(cli, "local_ack_timeout_err"),
        seq_err=sum(_get(s, "packet_seq_err", "out_of_sequence") for s in both),
        cnp=sum(_get(s, "np_cnp_sent", "rp_cnp_handled") for s in both),
        discards=sum(_get(s, "rx_discards_phy") for s in both),
        pauses=sum(_get(s, "tx_pause_ctrl_phy", "rx_pause_ctrl_phy") for s in both),
        link_downs=sum(_get(s, "link_down_events_phy") for s in both),
        switch_rx=leg,
        window_s=_seconds(m.extra.get("counter_window_s")),
        in_data=m.extra.get("counter_window_in_data") is not False,
        flat_share=ctx.expectations.counter_flat_share,
    )


def _seconds(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def reading(sig: Signature, gbps: float, ctx: Context) -> str:
    """What the pattern means, in words."""
    e = ctx.expectations
    if sig.link_downs:
        return "the link bounced during the test: not evidence"
    if sig.vanished and sig.timeouts:
        return (
            "frames left the sender, nothing downstream counted them and its ACKs timed out: "
            "the data path stalls (lossless QoS or ARP flux)"
        )
    if sig.stalled_with_timeouts:
        return "connection formed, data stalled: the sender's ACKs time out"
    if sig.vanished:
        return "frames left the sender and nothing downstream counted them"
    if sig.seq_err and gbps >= e.isl_shared_flow_gbps * e.warn_ratio:
        return "sequence errors near line rate: congestion control working"
    if sig.seq_err and gbps <= e.software_forwarding_max_gbps:
        return "sequence errors at single-digit Gb/s: a broken path (software forwarding, MTU)"
    return "counters consistent with the rate"


def evidence(m: Measurement, sig: Signature, ctx: Context, status: Status) -> Evidence:
    leg = "unknown" if sig.switch_rx is None else f"+{sig.switch_rx}"
    span = ""
    if sig.window_s is not None:
        when = "while the test ran" if sig.in_data else "the second read after the test ended"
        span = f"read {sig.window_s:g} s apart, {when}: "
    observed = (
        f"{span}sender tx_packets_phy +{sig.sent}, local_ack_timeout_err +{sig.timeouts}; receiver "
        f"rx_packets_phy +{sig.received}; switch leg rx-packet {leg}; packet_seq_err/"
        f"out_of_sequence +{sig.seq_err}, CNP +{sig.cnp}, rx_discards_phy +{sig.discards}, "
        f"pause +{sig.pauses}, link_down_events_phy +{sig.link_downs}: "
        + reading(sig, m.value, ctx)
    )
    return Evidence(
        m.target,
        COMMAND,
        observed,
        "receiver counts what the sender sends; no ACK timeouts, no link-down events",
        status,
    )
