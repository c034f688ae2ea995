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
from dataclasses import dataclass, field

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


_INT = re.compile(r"\d+")
_COMMAND = re.compile(r"mlnx_qos\s+.*?-i\s+(\S+)")
_DCBX = re.compile(r"DCBX mode:\s*(.+)$")
_TRUST = re.compile(r"Priority trust (?:state|mode):\s*(\S+)")
_DSCP2PRIO = re.compile(r"prio:(\d+)\s+dscp:([\d,]+)")
_RXBUF = re.compile(r"Receive buffer size \(bytes\):\s*(.*)$")
_CABLE = re.compile(r"Cable len:\s*(\d+)")
_ENABLED = re.compile(r"enabled\s+([\d\s]+)$")
_BUFFER = re.compile(r"buffer\s+([\d\s]+)$")
_TC = re.compile(r"tc:\s*(\d+)\s+ratelimit:\s*([^,]+),\s*tsa:\s*(\w+)(?:,\s*bw:\s*(\d+)%)?")
_PRIORITY = re.compile(r"priority:\s*(\d+)$")


def _ints(text: str) -> tuple[int, ...]:
    return tuple(map(int, _INT.findall(text)))


@dataclass
class _Reading:
    """What the lines of one output said so far."""

    iface: str | None = None
    dcbx: str | None = None
    trust: str | None = None
    pfc: tuple[int, ...] | None = None
    buf: tuple[int, ...] | None = None
    rxbuf: tuple[int, ...] = ()
    cable: int | None = None
    tcs: list[dict[str, object]] = field(default_factory=list)
    d2p: dict[int, tuple[int, ...]] = field(default_factory=dict)
    seen: bool = False


def parse_mlnx_qos(text: str) -> MlnxQosResult:
    r = _Reading()
    for raw in lines(text):
        line = strip_prompt(raw).strip()
        if "mlnx_qos" in line and (m := _COMMAND.search(line)):
            r.iface = m.group(1)
            continue
        _read_line(r, line)
    if not r.seen:
        raise ParseError("no DCBX/trust/PFC/tc line of mlnx_qos", tool=TOOL, raw=text)
    classes = _traffic_classes(r.tcs)
    return MlnxQosResult(
        r.iface, r.dcbx, r.trust, r.pfc, r.buf, r.rxbuf, r.cable, classes, r.d2p or None
    )


def _read_line(r: _Reading, line: str) -> None:
    """One line of the table: each pattern is tried only on a line that starts with its own
    first words (the dscp2prio map alone is 64 lines)."""
    if line.startswith("prio:"):
        if m := _DSCP2PRIO.match(line):
            r.d2p[int(m.group(1))] = _ints(m.group(2))
    elif line.startswith("DCBX mode:") and (m := _DCBX.match(line)):
        r.dcbx, r.seen = m.group(1).strip(), True
    elif line.startswith("Priority trust ") and (m := _TRUST.match(line)):
        r.trust, r.seen = m.group(1), True
    elif line.startswith("Receive buffer size") and (m := _RXBUF.match(line)):
        r.rxbuf = _ints(m.group(1).split("max_buffer_size")[0])
    elif line.startswith("Cable len:") and (m := _CABLE.match(line)):
        r.cable = int(m.group(1))
    elif line.startswith("enabled") and (m := _ENABLED.match(line)):
        vals = _ints(m.group(1))
        if len(vals) == 8:
            r.pfc, r.seen = vals, True
    elif line.startswith("buffer") and (m := _BUFFER.match(line)):
        vals = _ints(m.group(1))
        if len(vals) == 8:
            r.buf = vals
    elif line.startswith("tc:") and (m := _TC.match(line)):
        r.tcs.append(
            {
                "tc": int(m.group(1)),
                "ratelimit": m.group(2).strip(),
                "tsa": m.group(3),
                "bw": int(m.group(4)) if m.group(4) else None,
                "prios": [],
            }
        )
        r.seen = True
    elif line.startswith("priority:") and (m := _PRIORITY.match(line)) and r.tcs:
        prios = r.tcs[-1]["prios"]
        assert isinstance(prios, list)
        prios.append(int(m.group(1)))


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
