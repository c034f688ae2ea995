"""`mlnx_qos -i IFACE`: DCBX mode, trust state, PFC per priority, ETS traffic classes.

Sample lines it matches (real/mlnx_qos/):

    Priority trust state: dscp
    PFC configuration:
            priority    0   1   2   3   4   5   6   7
            enabled     0   0   0   1   0   0   0   0
    tc: 3 ratelimit: unlimited, tsa: ets, bw: 50%

`pfc_enabled` lists the priorities with PFC on: any is `host.pfc-enabled` on a lossy fabric.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wizard.errors import ParseError
from wizard.parsers.common import lines, strip_prompt

TOOL = "mlnx_qos"


@dataclass(frozen=True, slots=True)
class QosTrafficClass:
    tc: int
    tsa: str | None
    bw_pct: int | None
    ratelimit: str | None
    priorities: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MlnxQosResult:
    interface: str | None = None
    dcbx_mode: str | None = None
    trust: str | None = None  # pcp | dscp
    pfc: tuple[int, ...] | None = None  # 8 flags by priority; None when the paste has no PFC table
    pfc_buffer: tuple[int, ...] | None = None
    receive_buffers: tuple[int, ...] = ()
    cable_len: int | None = None
    traffic_classes: tuple[QosTrafficClass, ...] = ()
    dscp2prio: dict[int, tuple[int, ...]] | None = None

    @property
    def pfc_enabled(self) -> tuple[int, ...]:
        """Priorities with PFC on."""
        return tuple(i for i, v in enumerate(self.pfc or ()) if v)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text))


def parse_mlnx_qos(text: str) -> MlnxQosResult:
    iface: str | None = None
    dcbx = trust = None
    pfc: tuple[int, ...] | None = None
    buf: tuple[int, ...] | None = None
    rxbuf: tuple[int, ...] = ()
    cable: int | None = None
    tcs: list[dict[str, object]] = []
    d2p: dict[int, tuple[int, ...]] = {}
    seen = False
    for raw in lines(text):
        line = strip_prompt(raw).strip()
        if m := re.search(r"mlnx_qos\s+.*?-i\s+(\S+)", line):
            iface = m.group(1)
            continue
        if m := re.match(r"DCBX mode:\s*(.+)$", line):
            dcbx, seen = m.group(1).strip(), True
        elif m := re.match(r"Priority trust (?:state|mode):\s*(\S+)", line):
            trust, seen = m.group(1), True
        elif m := re.match(r"prio:(\d+)\s+dscp:([\d,]+)", line):
            d2p[int(m.group(1))] = _ints(m.group(2))
        elif m := re.match(r"Receive buffer size \(bytes\):\s*(.*)$", line):
            rxbuf = _ints(m.group(1).split("max_buffer_size")[0])
        elif m := re.match(r"Cable len:\s*(\d+)", line):
            cable = int(m.group(1))
        elif m := re.match(r"enabled\s+([\d\s]+)$", line):
            vals = _ints(m.group(1))
            if len(vals) == 8:
                pfc, seen = vals, True
        elif m := re.match(r"buffer\s+([\d\s]+)$", line):
            vals = _ints(m.group(1))
            if len(vals) == 8:
                buf = vals
        elif m := re.match(
            r"tc:\s*(\d+)\s+ratelimit:\s*([^,]+),\s*tsa:\s*(\w+)(?:,\s*bw:\s*(\d+)%)?", line
        ):
            tcs.append(
                {
                    "tc": int(m.group(1)),
                    "ratelimit": m.group(2).strip(),
                    "tsa": m.group(3),
                    "bw": int(m.group(4)) if m.group(4) else None,
                    "prios": [],
                }
            )
            seen = True
        elif (m := re.match(r"priority:\s*(\d+)$", line)) and tcs:
            prios = tcs[-1]["prios"]
            assert isinstance(prios, list)
            prios.append(int(m.group(1)))
    if not seen:
        raise ParseError("no DCBX/trust/PFC/tc line of mlnx_qos", tool=TOOL, raw=text)
    classes = _traffic_classes(tcs)
    return MlnxQosResult(iface, dcbx, trust, pfc, buf, rxbuf, cable, classes, d2p or None)


def _traffic_classes(tcs: list[dict[str, object]]) -> tuple[QosTrafficClass, ...]:
    classes = []
    for t in tcs:
        tc, tsa, bw, rl, prios = t["tc"], t["tsa"], t["bw"], t["ratelimit"], t["prios"]
        assert isinstance(tc, int) and isinstance(prios, list)
        classes.append(
            QosTrafficClass(
                tc,
                tsa if isinstance(tsa, str) else None,
                bw if isinstance(bw, int) else None,
                rl if isinstance(rl, str) else None,
                tuple(int(p) for p in prios),
            )
        )
    return tuple(classes)
