"""A scripted engine for the TUI tests: real events (wizard/events.py), real Operator calls.

`ThreeBugEngine` replays the shape of the CRS804 three-bug walk the real engine does (preflight,
direct-connect at ~9.5 Gb/s through the switch, a drain, the offload fix with a verified export, a
drain, QoS fix, duplicate-IP host fix, both halves, persist) with fixed timestamps, so snapshots
are stable. It records every answer the TUI gave.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from wizard.events import (
    Event,
    ExportTaken,
    FixApplied,
    FixPreviewed,
    FixVerified,
    LinkTransitionSeen,
    MeasurementTaken,
    NodeDrained,
    Note,
    PhysicalActionDone,
    PhysicalActionRequested,
    ProbeAnswered,
    ProbeSent,
    RailSampled,
    RollbackArmed,
    RollbackDisarmed,
    SessionEnded,
    SessionStarted,
    StepChanged,
    VerdictReached,
)
from wizard.fixes import ExportStatus
from wizard.model import (
    ApiCommand,
    Evidence,
    FixPlan,
    HostChange,
    HostFile,
    Measurement,
    PhysicalAction,
    ProbeResult,
    Status,
    SwitchChange,
    Verdict,
)

T0 = 1_795_000_000.0  # a fixed wall clock for events (2026-11-17 UTC)
NODES = ("spark1", "spark2", "spark3", "spark4")
RAILS = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")


def ev(target: str, command: str, observed: str, expected: str, status: Status) -> Evidence:
    return Evidence(target, command, observed, expected, status)


SPLIT_CAGE = Verdict(
    fault="switch.offload-split-cage",
    status=Status.FAIL,
    summary="cage 2 is split across bridge and bridge2: the switch CPU forwards the fabric",
    targets=("crs804",),
    evidence=(
        ev(
            "crs804",
            "/interface/bridge/port print",
            "qsfp56-dd-2-1 in bridge, hw-offload=no",
            "hw-offload=yes",
            Status.FAIL,
        ),
        ev(
            "crs804",
            "/interface/bridge/port print",
            "qsfp56-dd-2-5 in bridge2",
            "same bridge as qsfp56-dd-2-1",
            Status.FAIL,
        ),
        ev(
            "crs804",
            "/system/resource print",
            "cpu-load=98% during ib_write_bw",
            "~0 %",
            Status.FAIL,
        ),
    ),
    check="switch_offload",
)
PFC_STALL = Verdict(
    fault="switch.qos-pfc-stall",
    status=Status.FAIL,
    summary="lossless QoS on the fabric ports while the hosts run PFC off: RDMA stalls",
    targets=("crs804",),
    evidence=(
        ev(
            "crs804",
            "/interface/ethernet/switch/qos/port print",
            "trust-l3=keep pfc=pfc-tc3",
            "trust-l3=ignore pfc=disabled",
            Status.FAIL,
        ),
    ),
)
DUP_IP = Verdict(
    fault="host.duplicate-ip",
    status=Status.FAIL,
    summary="10.9.1.2 is on spark2 and spark3",
    targets=("spark2", "spark3"),
    evidence=(
        ev("spark2", "ip -j addr show", "enp1s0f0np0 10.9.1.2/24", "10.9.1.2/24", Status.PASS),
        ev("spark3", "ip -j addr show", "enp1s0f0np0 10.9.1.2/24", "10.9.1.3/24", Status.FAIL),
    ),
)


def passed(v: Verdict, summary: str) -> Verdict:
    return Verdict(
        fault=v.fault,
        status=Status.PASS,
        summary=summary,
        targets=v.targets,
        evidence=tuple(
            Evidence(e.target, e.command, e.expected, e.expected, Status.PASS) for e in v.evidence
        ),
        check=v.check,
    )


OFFLOAD_PLAN = FixPlan(
    fault="switch.offload-split-cage",
    target="crs804",
    summary="move qsfp56-dd-2-5 into bridge (one bridge per cage)",
    preview=(
        "/interface bridge port remove [find interface=qsfp56-dd-2-5]\n"
        "/interface bridge port add bridge=bridge interface=qsfp56-dd-2-5 hw=yes"
    ),
    switch_changes=(
        SwitchChange(
            switch="crs804",
            commands=(
                ApiCommand(
                    "/interface/bridge/port", "remove", select=("interface", "qsfp56-dd-2-5")
                ),
            ),
            rollback=(),
        ),
    ),
    bounces_links=True,
)
QOS_PLAN = FixPlan(
    fault="switch.qos-pfc-stall",
    target="crs804",
    summary="lossy QoS on every fabric port (trust-l3=ignore, pfc=disabled)",
    preview="/interface ethernet switch qos port set [find] trust-l3=ignore pfc=disabled",
    switch_changes=(SwitchChange(switch="crs804", commands=(), rollback=()),),
)
DUP_PLAN = FixPlan(
    fault="host.duplicate-ip",
    target="spark3",
    summary="give spark3 its own addresses (10.9.<rail>.3/24)",
    preview="--- /etc/netplan/40-fabwiz.yaml\n+++ /etc/netplan/40-fabwiz.yaml\n-      - 10.9.1.2/24\n+      - 10.9.1.3/24",
    host_changes=(
        HostChange(
            node="spark3",
            files=(HostFile("spark3", "/etc/netplan/40-fabwiz.yaml", "network: {}\n"),),
        ),
    ),
)


def export_of(step: str, n: int, *, verified: bool = True) -> ExportStatus:
    body = f"# 2026-11-17 by RouterOS 7.21.2\n/interface bridge\nadd name=bridge {n}\n"
    return ExportStatus(
        switch="crs804",
        file=f"fabwiz-s1-{step}-{n}.rsc",
        verified=verified,
        size=len(body) if verified else 0,
        sha256=("ab" * 32) if verified else "",
        contents=body if verified else "",
        error=None if verified else "export not on the switch yet",
    )


@dataclass
class ThreeBugEngine:
    """Emits a believable walk; awaits the TUI for every decision."""

    operator: Any
    emit_: Callable[[Event], None]
    answers: list[tuple[str, Any]] = field(default_factory=list)
    first_export_verified: bool = True
    rollback_window_s: float = 300.0
    step_gate: asyncio.Event | None = None  # tests can hold the walk at a step
    t: float = T0
    samples_per_test: int = 6

    def emit(self, event_cls: type[Event], **kw: Any) -> None:
        self.t += 1.0
        self.emit_(event_cls(at=self.t, **kw))

    async def step_done(self, step: str, title: str) -> str:
        self.emit(StepChanged, step=step, phase="done", reason="finish")
        answer = await self.operator.choose(step, f"{title}: done.", ["next", "rerun", "back"])
        self.answers.append((f"choose:{step}", answer))
        return answer

    async def probe(self, step: str, target: str, command: str, stdout: str) -> None:
        self.emit(ProbeSent, step=step, target=target, command=command)
        res = ProbeResult(target=target, kind="ssh", command=command, stdout=stdout, exit_status=0)
        self.emit(ProbeAnswered, step=step, probe=command.split(maxsplit=1)[0], result=res)

    async def traffic(self, step: str, gbps: float, *, nodes: tuple[str, ...] = NODES) -> None:
        self.emit(StepChanged, step=step, phase="measuring", reason="measure")
        for i in range(self.samples_per_test):
            for n in nodes:
                for r in RAILS[:2]:
                    self.t += 0.01
                    value = gbps * min(1.0, (i + 1) / 3)
                    self.emit_(RailSampled(node=n, netdev=r, gbps=value, at=self.t))
            await asyncio.sleep(0.01)
        for n in nodes:
            for r in RAILS[:2]:
                self.emit_(RailSampled(node=n, netdev=r, gbps=0.0, at=self.t))
        for a, b in (("spark1", "spark2"), ("spark3", "spark4")):
            m = Measurement(
                "rail",
                f"{a}/{RAILS[0]}->{b}/{RAILS[0]}",
                gbps,
                "Gb/s",
                extra={"command": "ib_write_bw -d rocep1s0f0 -x 3 -q 1"},
            )
            self.emit(MeasurementTaken, step=step, measurement=m)

    async def fix(self, step: str, verdict: Verdict, plan: FixPlan, n: int) -> bool:
        fix_id = f"{step}:{plan.fault}:{plan.target}"
        self.emit(StepChanged, step=step, phase="fix_offered", reason="offer_fix")
        self.emit(
            FixPreviewed,
            step=step,
            fix_id=fix_id,
            fault=plan.fault,
            target=plan.target,
            summary=plan.summary,
            preview=plan.preview,
            bounces_links=plan.bounces_links,
        )
        export = None
        if plan.switch_changes:
            self.emit(StepChanged, step=step, phase="exporting", reason="export")
            export = export_of(step, n, verified=self.first_export_verified or n > 1)
            if export.verified:
                self.emit(
                    ExportTaken,
                    step=step,
                    switch="crs804",
                    file=export.file,
                    contents=export.contents,
                    sha256=export.sha256,
                )
        ok = await self.operator.confirm_fix(plan, export)
        self.answers.append((f"confirm:{plan.fault}", ok))
        if not ok:
            self.emit(StepChanged, step=step, phase="verdict", reason="declined")
            return False
        self.emit(StepChanged, step=step, phase="applying", reason="apply")
        name = f"fabwiz-rb-s1-{n}"
        self.emit(
            RollbackArmed,
            step=step,
            fix_id=fix_id,
            target=plan.target,
            name=name,
            window_s=self.rollback_window_s,
            script="/interface bridge port add ...",
        )
        self.emit(
            FixApplied,
            step=step,
            fix_id=fix_id,
            fault=plan.fault,
            target=plan.target,
            export=export.file if export else None,
            rollback_armed=name,
        )
        self.emit(StepChanged, step=step, phase="verifying", reason="verify")
        self.emit(VerdictReached, step=step, verdict=passed(verdict, f"{plan.fault} cleared"))
        self.emit(
            FixVerified,
            step=step,
            fix_id=fix_id,
            fault=plan.fault,
            ok=True,
            detail=f"{plan.fault}: check passes after the change",
        )
        self.emit(RollbackDisarmed, step=step, fix_id=fix_id, target=plan.target, name=name)
        self.emit(StepChanged, step=step, phase="verdict", reason="verified")
        return True

    async def drain(self, step: str, nodes: tuple[str, ...]) -> str:
        action = PhysicalAction(
            kind="ac_drain",
            nodes=nodes,
            instructions=(
                f"AC-drain {', '.join(nodes)}: shut down, unplug the power cord, wait at least 60 s, "
                "plug it back and power on."
            ),
        )
        self.emit(StepChanged, step=step, phase="waiting_physical", reason="need_physical")
        self.emit(
            PhysicalActionRequested,
            step=step,
            kind="ac_drain",
            nodes=nodes,
            instructions=action.instructions,
        )
        answer = await self.operator.physical_action(action, True)
        self.answers.append((f"physical:{step}", answer))
        if answer == "skip":
            return answer
        for n in nodes:
            self.emit(Note, level="info", text=f"waiting for {n} to come back", step=step)
            await asyncio.sleep(0.02)
            self.emit(NodeDrained, node=n, boot_id=f"boot-{n}-2")
        self.emit(
            PhysicalActionDone,
            step=step,
            kind="ac_drain",
            nodes=nodes,
            performed_by="lab" if answer == "perform" else "operator",
            observed="; ".join(f"{n} back with a new boot_id" for n in nodes),
        )
        return answer

    async def gate(self) -> None:
        if self.step_gate is not None:
            await self.step_gate.wait()

    async def run(self) -> str:
        self.emit(
            SessionStarted,
            session_id="s1",
            fabwiz_version="0.1.0",
            log_version=1,
            command="demo",
            scenario="crs804-three-bugs",
            nodes=NODES,
            switches=("crs804",),
        )
        # 1 preflight
        self.emit(StepChanged, step="preflight", phase="probing", reason="probe")
        for n in NODES:
            await self.probe(
                "preflight", n, "ibdev2netdev", "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\n"
            )
        self.emit(
            VerdictReached,
            step="preflight",
            verdict=Verdict(
                fault="switch.breakout-autoneg",
                status=Status.PASS,
                summary="every leg at 200G, fec91",
                evidence=(
                    ev(
                        "crs804",
                        "/interface/ethernet/monitor",
                        "rate=200Gbps fec=fec91 x8",
                        "200Gbps fec91",
                        Status.PASS,
                    ),
                ),
            ),
        )
        self.emit(
            VerdictReached,
            step="preflight",
            verdict=Verdict(
                fault="benign.pcie-27w",
                status=Status.BENIGN,
                summary="lspci reports 27W slot power: harmless on GB10",
            ),
        )
        await self.gate()
        await self.step_done("preflight", "Preflight")
        # 2 direct connect: slow through the switch, fine on a direct cable
        await self.traffic("direct_connect", 9.4)
        self.emit(
            Note,
            level="warn",
            step="direct_connect",
            text="9.4 Gb/s through the switch: bisecting with a direct cable",
        )
        self.emit(
            VerdictReached,
            step="direct_connect",
            verdict=Verdict(
                fault="host.cx7-degraded",
                status=Status.PASS,
                summary="111.9 Gb/s on a direct cable: NICs and host stack are clear",
                evidence=(
                    ev(
                        "spark1->spark2",
                        "ib_write_bw -d rocep1s0f0 -q 1",
                        "111.90 Gb/s",
                        ">= 100 Gb/s",
                        Status.PASS,
                    ),
                ),
            ),
        )
        await self.step_done("direct_connect", "Direct-connect test")
        # 3 drain: the re-cabling bounced spark1/spark2
        self.emit(StepChanged, step="drain", phase="probing", reason="probe")
        self.emit(LinkTransitionSeen, node="spark1", cause="recable (prompted)")
        self.emit(LinkTransitionSeen, node="spark2", cause="recable (prompted)")
        await self.drain("drain", ("spark1", "spark2"))
        self.emit(
            VerdictReached,
            step="drain",
            verdict=Verdict(
                fault="process.undrained-measurement",
                status=Status.PASS,
                summary="every node with a link transition has been AC-drained",
                targets=("spark1", "spark2"),
            ),
        )
        await self.step_done("drain", "Drain")
        # 4 offload
        self.emit(StepChanged, step="offload", phase="probing", reason="probe")
        await self.probe(
            "offload",
            "crs804",
            "/interface/bridge/port print",
            "interface=qsfp56-dd-2-5 bridge=bridge2 hw=yes hw-offload=false",
        )
        self.emit(VerdictReached, step="offload", verdict=SPLIT_CAGE)
        self.emit(StepChanged, step="offload", phase="verdict", reason="judged")
        await self.gate()
        await self.fix("offload", SPLIT_CAGE, OFFLOAD_PLAN, 1)
        for n in NODES:
            self.emit(
                LinkTransitionSeen, node=n, cause="fix switch.offload-split-cage bounced links"
            )
        await self.drain("offload", NODES)
        await self.traffic("offload", 12.0)  # still stalled by QoS? no: rail fine, PFC next
        await self.step_done("offload", "Switch offload")
        # 5 qos
        self.emit(StepChanged, step="qos", phase="probing", reason="probe")
        self.emit(VerdictReached, step="qos", verdict=PFC_STALL)
        await self.fix("qos", PFC_STALL, QOS_PLAN, 2)
        await self.step_done("qos", "QoS and PFC")
        # 6 addressing
        self.emit(StepChanged, step="addressing", phase="probing", reason="probe")
        self.emit(VerdictReached, step="addressing", verdict=DUP_IP)
        await self.fix("addressing", DUP_IP, DUP_PLAN, 3)
        await self.traffic("addressing", 109.2)
        await self.step_done("addressing", "Addressing and MTU")
        # 7 halves
        self.emit(StepChanged, step="halves", phase="probing", reason="probe")
        await self.traffic("halves", 98.0)
        self.emit(
            VerdictReached,
            step="halves",
            verdict=Verdict(
                fault="nccl.hca-filter",
                status=Status.PASS,
                summary="NCCL uses all 4 RDMA devices; busbw 23.31 GB/s",
            ),
        )
        await self.step_done("halves", "Both PCIe halves and NCCL")
        # 8 persist
        self.emit(StepChanged, step="persist", phase="probing", reason="probe")
        golden = export_of("persist", 9)
        self.emit(
            ExportTaken,
            step="persist",
            switch="crs804",
            file="fabwiz-s1-golden.rsc",
            contents=golden.contents,
            sha256=golden.sha256,
            purpose="golden",
        )
        await self.step_done("persist", "Persist and prove")
        self.emit(SessionEnded, healthy=True)
        return "healthy"


def factory_for(holder: dict[str, Any], **kw: Any) -> Callable[[Any, AsyncExitStack], Any]:
    """An engine factory for `FabwizApp` that keeps the engine in `holder['engine']`."""

    async def make(ports: Any, stack: AsyncExitStack) -> ThreeBugEngine:
        engine = ThreeBugEngine(operator=ports, emit_=ports.emit, **kw)
        holder["engine"] = engine
        stack.callback(lambda: holder.setdefault("closed", True))
        return engine

    return make


def drawn_as(gauges: Any, gauge: Any, verdict: str) -> bool:
    """`gauge`'s row, as the gauge panel draws it, has its text and the colour CSS gives
    `verdict` (its component class `rail-gauge--<verdict>`)."""
    rows = gauges.rows
    width = rows.scrollable_content_region.width
    strip = rows.strip(rows.rows.index(gauge), width)
    assert strip.cell_length == width and strip.text.startswith(gauge.line(width))
    style = next(iter(strip)).style
    return bool(style == rows.get_component_rich_style(f"rail-gauge--{verdict}"))
