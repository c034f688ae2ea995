"""One rail test as the sweep records it (`p0` on each end), for the checks' proof tests."""

from __future__ import annotations

from typing import Any

from wizard.model import Measurement


def rail_run(
    client: str,
    server: str,
    gbps: float,
    counters: tuple[dict[str, int], dict[str, int]],
    **extra: Any,
) -> Measurement:
    """A test from `client`'s p0 to `server`'s p0 at `gbps` (0: it failed, as a stall does),
    with the (client, server) counter deltas read during it."""
    return Measurement(
        "rail",
        f"{client}/p0->{server}/p0",
        gbps,
        "Gb/s",
        reason="" if gbps else "Completion with error at client",
        extra={
            "client": client,
            "server": server,
            "client_netdev": "p0",
            "server_netdev": "p0",
            "command": "ib_write_bw -d rocep1s0f0 -x 3 -q 1 -D 5 -F --report_gbits -p 18515 ip",
            "counters": {"client": counters[0], "server": counters[1]},
            **extra,
        },
    )
