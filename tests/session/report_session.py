"""A recorded session with everything the report draws: the fix session of session_helpers plus
the versions preflight recorded, the bisection's conclusion, a `-b` rail, an unseen target and an
NCCL run whose sweep is a real all_reduce_perf output (read in place from /work/shared)."""

from __future__ import annotations

from pathlib import Path

from session_helpers import T0, fix_session

from wizard.events import BisectionConcluded, Event, MeasurementTaken, VerdictReached
from wizard.model import Evidence, Measurement, Status, Verdict
from wizard.session import SessionLog

ROOT = Path(__file__).resolve().parents[2]
NCCL_REAL = (
    ROOT.parent
    / "shared"
    / "fixtures"
    / "real"
    / "nccl-tests"
    / "all_reduce_perf-2node-4rank-h100nvl-stepbytes-GOOD.txt"
)
SENTENCE = (
    "spark1 111.97 Gb/s on a direct cable, against 0.00 Gb/s through the switch "
    "(spark1/enp1s0f0np0->spark2/enp1s0f0np0): the NICs and host stacks are clear; the fault "
    "is on the switch path"
)
VERSIONS = "platform ASUSTeK COMPUTER INC. GX10; kernel 6.11.0-1016-nvidia; cx7_firmware 28.45.1020"
BIDIR = "spark1/enp1s0f1np1->spark2/enp1s0f1np1"


def extra_events(nccl_raw: str | None) -> list[Event]:
    tools = Verdict(
        fault="preflight.tool-missing",
        status=Status.PASS,
        summary="every tool the walk runs is on every node",
        evidence=(Evidence("spark1", "uname -r; ...", VERSIONS, "versions recorded", Status.PASS),),
        check="preflight.tools",
    )
    unseen = Verdict(
        fault="switch.mtu",
        status=Status.UNKNOWN,
        summary="not checked on crs804 (login refused)",
        targets=("crs804",),
        check="switch.mtu",
    )
    out: list[Event] = [
        VerdictReached(at=T0 + 2.1, step="preflight", verdict=tools),
        VerdictReached(at=T0 + 2.2, step="preflight", verdict=unseen),
        BisectionConcluded(
            at=T0 + 3,
            step="direct_connect",
            conclusion="switch-path",
            sentence=SENTENCE,
            nodes=("spark1", "spark2"),
            switched_gbps=0.0,
            direct_gbps=111.97,
        ),
        MeasurementTaken(  # the same rail one way, before the first fix
            at=T0 + 4.2,
            step="offload",
            measurement=Measurement("rail", BIDIR, 9.5, "Gb/s"),
        ),
        MeasurementTaken(
            at=T0 + 18.7,
            step="halves",
            measurement=Measurement("rail", BIDIR, 206.1, "Gb/s", extra={"bidir": True}),
        ),
    ]
    if nccl_raw is not None:
        out.append(
            MeasurementTaken(
                at=T0 + 18.8,
                step="halves",
                measurement=Measurement(
                    "nccl", "cluster", 9.11, "GB/s", extra={"raw": nccl_raw, "launch": "spark1"}
                ),
            )
        )
    return out


def write_session(folder: Path, *, nccl: bool = True) -> Path:
    raw = NCCL_REAL.read_text() if nccl and NCCL_REAL.is_file() else None
    events = fix_session()
    log = SessionLog.create(folder)
    for ev in events[:-1]:
        log.write(ev)
    for ev in extra_events(raw):
        log.write(ev)
    log.write(events[-1])  # the session's end
    log.close()
    return log.folder


RACK_STEPS = ("preflight", "offload", "qos", "addressing", "halves", "persist")
NODES = ("spark1", "spark2", "spark3", "spark4")
NETDEVS = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")


def rack_events() -> list[Event]:
    """What a 4-node walk adds on top: every step judges ~25 faults with an evidence row per
    node and re-measures the 8 rails of 4 planes, each number its own."""
    out: list[Event] = []
    for s, step in enumerate(RACK_STEPS):
        at = T0 + 2.3 + s * 0.01
        for f in range(25):
            rows = tuple(
                Evidence(n, f"probe-{f} {n}", f"{step} {n} value {f}.{i}", "healthy", Status.PASS)
                for i, n in enumerate(NODES)
            )
            v = Verdict(
                fault=f"rack.check-{f:02d}",
                status=Status.PASS,
                summary=f"check {f} holds on every node in {step}",
                evidence=rows,
                check=f"rack.check-{f:02d}",
            )
            out.append(VerdictReached(at=at, step=step, verdict=v))
        for r in range(8):
            a, b = NODES[2 * (r % 2)], NODES[2 * (r % 2) + 1]
            target = f"{a}/{NETDEVS[r // 2]}->{b}/{NETDEVS[r // 2]}"
            value = 108.0 + s + r / 100 + 0.003
            out.append(
                MeasurementTaken(
                    at=at, step=step, measurement=Measurement("rail", target, value, "Gb/s")
                )
            )
    return out


def write_rack_session(folder: Path) -> Path:
    """The recorded fix session of a 4-node rack with three faults, at a rack's size."""
    raw = NCCL_REAL.read_text() if NCCL_REAL.is_file() else None
    events = fix_session()
    log = SessionLog.create(folder)
    for ev in events[:-1]:
        log.write(ev)
    for ev in [*extra_events(raw), *rack_events()]:
        log.write(ev)
    log.write(events[-1])
    log.close()
    return log.folder
