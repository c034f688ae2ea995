"""PFC pause frames, from the mechanism: who sends them, who counts them, who obeys.

A port sends PFC pause frames for a priority only when that priority is lossless on it and its
receive side is congested (more arrives than it can drain):
- a node whose NIC has PFC on for the RoCE priority (3) and two or more flows arriving on one rail
  (incast) sends pause frames: its `tx_pause_ctrl_phy` climbs. The next hop counts them: a
  direct-cabled sender's `rx_pause_ctrl_phy`, or the switch port's `rx-pause`. A lossy switch
  port ignores them (host PFC on a lossy fabric is hygiene, never a stall);
- a switch port whose QoS is lossless (trust-l3/pfc) on the chip-forwarded path holds the RoCE
  priority: the queue toward a receiver that never drains it (the stall of seed 000) stays full
  and the switch keeps pausing the sender: the port's `tx-pause` and the sender's
  `rx_pause_ctrl_phy` climb at the full refresh rate.

Rates follow 802.1Qbb: each frame pauses the link for `PFC_QUANTA` x 512 bit times; a congested
queue refreshes the pause `REFRESH_PER_PAUSE` times per pause time, for the share of the time it
needs the sender held back (its overload).
"""

from __future__ import annotations

from wizard.lab.world import RailState

PFC_QUANTA = 0xFFFF  # quanta per pause frame (the maximum, what the CX7 and the switch send)
REFRESH_PER_PAUSE = 2.0  # a congested queue re-pauses at half the pause time
ROCE_PRIORITY = 3  # the priority RoCE traffic is tagged with on these fabrics
LINK_GBPS = 200.0  # the rail's line rate: the pause time is counted in its bit times


def frames_per_s(overload: float, link_gbps: float = LINK_GBPS) -> float:
    """Pause frames per second that hold a sender back `overload` (0..1) of the time."""
    pause_s = PFC_QUANTA * 512 / (link_gbps * 1e9)
    return max(0.0, min(1.0, overload)) * REFRESH_PER_PAUSE / pause_s


def lossless_on(rail: RailState) -> bool:
    """The NIC's PFC is on for the RoCE priority."""
    return len(rail.pfc) > ROCE_PRIORITY and bool(rail.pfc[ROCE_PRIORITY])


def incast(receiver: RailState, sender: RailState, arriving: int, dt: float) -> float:
    """`arriving` running flows land on `receiver`'s rail: with PFC on for the RoCE priority it
    pauses what it cannot drain (a fair share of 1/arriving each: overload 1 - 1/arriving).
    Returns the frames this flow's sender receives over `dt` when nothing sits between them
    (the caller routes them through a switch instead). Each flow's share of the pauses."""
    if arriving < 2 or not lossless_on(receiver):
        return 0.0
    n = frames_per_s(1.0 - 1.0 / arriving) * dt / arriving
    receiver.bump("tx_pause_ctrl_phy", n)
    receiver.bump("tx_prio3_pause", n)
    return n


def held(sender: RailState, dt: float) -> float:
    """A lossless switch queue that never drains keeps `sender` paused: frames over `dt`."""
    n = frames_per_s(1.0) * dt
    sender.bump("rx_pause_ctrl_phy", n)
    sender.bump("rx_prio3_pause", n)
    return n
