"""Builders shared by the session tests: one instance of every event type, and a whole synthetic
session (a CRS804 split-cage fix with its export, drains and before/after numbers)."""

from __future__ import annotations

from pathlib import Path

from wizard.events import (
    BisectionConcluded,
    Event,
    ExportTaken,
    FixApplied,
    FixPreviewed,
    FixRefusedEvent,
    FixRolledBack,
    FixVerified,
    LinkTransitionSeen,
    MeasurementTaken,
    NodeDrained,
    Note,
    OperatorAnswered,
    PhysicalActionDone,
    PhysicalActionRequested,
    ProbeAnswered,
    ProbeSent,
    RailSampled,
    RollbackArmed,
    RollbackDisarmed,
    SessionEnded,
    SessionResumed,
    SessionStarted,
    StepChanged,
    TrafficPlanned,
    VerdictReached,
    VersionsRecorded,
)
from wizard.model import Evidence, Measurement, ProbeResult, Status, Verdict
from wizard.session import LOG_VERSION

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures" / "real"

SECRET = "Zq9-lab-PASSWORD-7781"
T0 = 1_795_996_800.0  # 2026-11-30 00:00:00 UTC

EXPORT_TEXT = """# 2026-11-30 00:05:01 by RouterOS 7.20.3
# model = CRS804-4DDQ
/interface bridge
add name=bridge
add name=mgmt
/interface bridge port
add bridge=bridge interface=qsfp56-dd-1-1
add bridge=mgmt interface=qsfp56-dd-1-2
/ip address
add address=192.168.88.1/24 interface=ether1 network=192.168.88.0
"""

BRIDGE_ROWS = (
    {".id": "*1", "interface": "qsfp56-dd-1-1", "bridge": "bridge", "hw": "true",
     "hw-offload": "false"},
    {".id": "*2", "interface": "qsfp56-dd-1-2", "bridge": "mgmt", "hw": "true",
     "hw-offload": "false"},
)  # fmt: skip

IP_ADDR_SPARK1 = (
    '[{"ifname":"enp1s0f0np0","address":"4c:bb:47:00:01:01","mtu":9000,'
    '"addr_info":[{"family":"inet","local":"10.9.1.1","prefixlen":24}]},'
    '{"ifname":"enP2p1s0f0np0","address":"4c:bb:47:00:01:02","mtu":9000,'
    '"addr_info":[{"family":"inet","local":"10.9.1.1","prefixlen":24}]}]'
)


def one_of_each() -> list[Event]:
    """One instance of every event type of wizard.events, with non-default values."""
    probe = ProbeResult(
        target="spark1",
        kind="ssh",
        command="ip -j addr show",
        stdout=IP_ADDR_SPARK1,
        stderr="warning: x\n",
        exit_status=0,
        started_at=T0 + 2,
        duration_s=0.125,
    )
    api = ProbeResult(
        target="crs804",
        kind="api",
        command="/interface/bridge/port print",
        rows=BRIDGE_ROWS,
        started_at=T0 + 3,
        duration_s=0.05,
    )
    verdict = Verdict(
        fault="switch.offload-split-cage",
        status=Status.FAIL,
        summary="qsfp56-dd-1-2 sits in bridge mgmt: cage 1 is split, no offload",
        targets=("crs804/qsfp56-dd-1-2",),
        evidence=(
            Evidence(
                target="crs804",
                command="/interface/bridge/port print",
                observed="hw-offload=false on qsfp56-dd-1-1",
                expected="hw-offload=true",
                status=Status.FAIL,
                raw="interface=qsfp56-dd-1-1 bridge=bridge hw-offload=false",
            ),
        ),
        check="switch.offload-split-cage",
    )
    return [
        SessionStarted(
            at=T0,
            session_id="20261130T000000Z-abcdef12",
            fabwiz_version="0.1.0",
            log_version=LOG_VERSION,
            command="fix",
            inventory_digest="sha256:" + "ab" * 32,
            inventory_path="/home/alice/fabric.yaml",
            scenario="crs804-three-bugs",
            nodes=("spark1", "spark2"),
            switches=("crs804",),
            options={"yes": True, "expectations": {"pass_ratio": 0.9}},
        ),
        SessionResumed(at=T0 + 1, from_step="offload", events_loaded=12, torn_tail=True),
        StepChanged(at=T0 + 1.5, step="preflight", phase="probing", reason="start"),
        ProbeSent(at=T0 + 2, step="preflight", target="spark1", command="ip -j addr show"),
        ProbeAnswered(at=T0 + 2.2, step="preflight", probe="ip_addr", result=probe),
        ProbeAnswered(at=T0 + 3.1, step="offload", probe="bridge_port", result=api),
        VerdictReached(at=T0 + 4, step="offload", verdict=verdict),
        MeasurementTaken(
            at=T0 + 5,
            step="offload",
            measurement=Measurement(
                kind="rail",
                target="spark1/enp1s0f0np0->spark2/enp1s0f0np0",
                value=9.42,
                unit="Gb/s",
                extra={"qps": 1, "cpu_load": 99},
            ),
        ),
        OperatorAnswered(at=T0 + 6, step="offload", question="apply fix?", answer="yes"),
        PhysicalActionRequested(
            at=T0 + 7,
            step="drain",
            kind="ac_drain",
            nodes=("spark1", "spark2"),
            instructions="Unplug both nodes for 60 s.",
        ),
        PhysicalActionDone(
            at=T0 + 8,
            step="drain",
            kind="ac_drain",
            nodes=("spark1", "spark2"),
            performed_by="lab",
            observed="both back with a new boot_id",
        ),
        LinkTransitionSeen(at=T0 + 9, node="spark1", cause="fix bounced qsfp56-dd-1-1"),
        NodeDrained(at=T0 + 10, node="spark1", boot_id="0c9f5e2a-1111-2222-3333-444455556666"),
        BisectionConcluded(
            at=T0 + 10.5,
            step="direct_connect",
            conclusion="switch-path",
            sentence="spark3 111.90 Gb/s on a direct cable, against 12.80 Gb/s through the switch",
            nodes=("spark3",),
            switched_gbps=12.8,
            direct_gbps=111.9,
            faults=("switch.offload-split-cage",),
        ),
        ExportTaken(
            at=T0 + 11,
            step="offload",
            switch="crs804",
            file="fabwiz-pre-offload.rsc",
            contents=EXPORT_TEXT,
            sha256="5" * 64,
        ),
        FixPreviewed(
            at=T0 + 12,
            step="offload",
            fix_id="offload:switch.offload-split-cage:crs804",
            fault="switch.offload-split-cage",
            target="crs804",
            summary="remove qsfp56-dd sub-ports from bridge mgmt",
            preview='/interface/bridge/port remove [find bridge=mgmt interface~"qsfp56-dd"]',
            bounces_links=True,
        ),
        FixApplied(
            at=T0 + 13,
            step="offload",
            fix_id="offload:switch.offload-split-cage:crs804",
            fault="switch.offload-split-cage",
            target="crs804",
            export="fabwiz-pre-offload.rsc",
            rollback_armed="fabwiz-deadman-1",
        ),
        FixVerified(
            at=T0 + 14,
            step="offload",
            fix_id="offload:switch.offload-split-cage:crs804",
            fault="switch.offload-split-cage",
            ok=True,
            detail="hw-offload=true on every fabric port",
        ),
        FixRolledBack(
            at=T0 + 15,
            step="qos",
            fix_id="qos:switch.qos-pfc-stall:crs804",
            fault="switch.qos-pfc-stall",
            reason="API session lost during the change",
            restored=True,
        ),
        RollbackArmed(
            at=T0 + 15.2,
            step="offload",
            fix_id="offload:switch.offload-split-cage:crs804",
            target="crs804",
            name="fabwiz-deadman-1",
            window_s=300.0,
            script="/interface/bridge/port add bridge=mgmt interface=qsfp56-dd-1-2",
        ),
        RollbackDisarmed(
            at=T0 + 15.4,
            step="offload",
            fix_id="offload:switch.offload-split-cage:crs804",
            target="crs804",
            name="fabwiz-deadman-1",
        ),
        FixRefusedEvent(
            at=T0 + 16,
            step="offload",
            fault="switch.offload-second-bridge",
            target="crs804",
            reason="ether1 carries the API session",
        ),
        Note(at=T0 + 17, level="warn", text="spark2 answered slowly (4.2 s)", step="preflight"),
        RailSampled(at=T0 + 18, node="spark1", netdev="enp1s0f0np0", gbps=97.5),
        TrafficPlanned(
            at=T0 + 18.2,
            step="offload",
            rounds=(("spark1/enp1s0f0np0->spark2/enp1s0f0np0",),),
            duration_s=5.0,
        ),
        VersionsRecorded(
            at=T0 + 18.5,
            step="preflight",
            nodes={"spark1": {"platform": "NVIDIA DGX Spark", "dgx_os": "7.2.3"}},
            switches={"crs804": {"model": "CRS804-4DDQ", "routeros": "7.22.1"}},
        ),
        SessionEnded(at=T0 + 19, healthy=True, reason="all steps passed"),
    ]


RAIL = "spark1/enp1s0f0np0->spark2/enp1s0f0np0"
RAIL_B = "spark1/enP2p1s0f0np0->spark2/enP2p1s0f0np0"
FIX_OFFLOAD = "offload:switch.offload-split-cage:crs804"
FIX_QOS = "qos:switch.qos-pfc-stall:crs804"


def _m(at: float, step: str, target: str, value: float, **kw: object) -> MeasurementTaken:
    kind = "nccl" if target == "cluster" else "rail"
    unit = "GB/s" if kind == "nccl" else "Gb/s"
    return MeasurementTaken(
        at=at,
        step=step,
        measurement=Measurement(kind=kind, target=target, value=value, unit=unit, **kw),  # type: ignore[arg-type]
    )


def fix_session() -> list[Event]:
    """A whole session: split cage fixed (export, apply, verify), a QoS fix rolled back,
    a drain, before/after numbers, one undrained (invalid) measurement."""
    bad = Verdict(
        fault="switch.offload-split-cage",
        status=Status.FAIL,
        summary="cage 1 split across bridges bridge and mgmt: the switch CPU forwards",
        targets=("crs804",),
        evidence=(
            Evidence(
                target="crs804",
                command="/interface/bridge/port print",
                observed="qsfp56-dd-1-2 in bridge mgmt; hw-offload=false",
                expected="every sub-port of cage 1 in bridge; hw-offload=true",
                status=Status.FAIL,
            ),
            Evidence(
                target="spark1",
                command="ip -j addr show",
                observed="enp1s0f0np0 10.9.1.1/24 mac 4c:bb:47:00:01:01",
                expected="unique address",
                status=Status.PASS,
            ),
        ),
        check="switch.offload-split-cage",
    )
    good = Verdict(
        fault="switch.offload-split-cage",
        status=Status.PASS,
        summary="fabric bridge offloaded",
        targets=(),
        check="switch.offload-split-cage",
    )
    qos = Verdict(
        fault="switch.qos-pfc-stall",
        status=Status.FAIL,
        summary="trust-l3=keep pfc=pfc3 on qsfp56-dd-1-1",
        targets=("crs804/qsfp56-dd-1-1",),
        check="switch.qos-pfc-stall",
    )
    dup = Verdict(
        fault="host.duplicate-ip",
        status=Status.WARN,
        summary="10.9.1.1 on spark1 enp1s0f0np0 and enP2p1s0f0np0",
        targets=("spark1/enp1s0f0np0", "spark1/enP2p1s0f0np0"),
        evidence=(
            Evidence(
                target="spark1",
                command="ip -j addr show",
                observed="10.9.1.1 on enp1s0f0np0 (4c:bb:47:00:01:01) and enP2p1s0f0np0",
                expected="one address per rail",
                status=Status.WARN,
            ),
        ),
        check="host.duplicate-ip",
    )
    return [
        SessionStarted(
            at=T0,
            session_id="20261130T000000Z-abcdef12",
            fabwiz_version="0.1.0",
            log_version=LOG_VERSION,
            command="fix",
            inventory_digest="sha256:" + "cd" * 32,
            inventory_path="/home/alice/fabric.yaml",
            scenario="crs804-three-bugs",
            nodes=("spark1", "spark2"),
            switches=("crs804",),
        ),
        StepChanged(at=T0 + 1, step="preflight", phase="probing"),
        ProbeSent(at=T0 + 1.1, step="preflight", target="spark1", command="ip -j addr show"),
        ProbeAnswered(
            at=T0 + 1.2,
            step="preflight",
            probe="ip_addr",
            result=ProbeResult(
                target="spark1",
                kind="ssh",
                command="ip -j addr show",
                stdout=IP_ADDR_SPARK1,
                exit_status=0,
                duration_s=0.2,
            ),
        ),
        ProbeSent(at=T0 + 1.3, step="preflight", target="spark2", command="ip -j addr show"),
        VerdictReached(at=T0 + 2, step="preflight", verdict=dup),
        StepChanged(at=T0 + 2.5, step="preflight", phase="done"),
        StepChanged(at=T0 + 3, step="offload", phase="probing"),
        ProbeAnswered(
            at=T0 + 3.2,
            step="offload",
            probe="bridge_port",
            result=ProbeResult(
                target="crs804",
                kind="api",
                command="/interface/bridge/port print",
                rows=BRIDGE_ROWS,
                duration_s=0.03,
            ),
        ),
        _m(T0 + 4, "offload", RAIL, 9.42),
        _m(T0 + 4.1, "offload", "cluster", 1.12),
        VerdictReached(at=T0 + 5, step="offload", verdict=bad),
        StepChanged(at=T0 + 5.5, step="offload", phase="fix_offered"),
        FixPreviewed(
            at=T0 + 6,
            step="offload",
            fix_id=FIX_OFFLOAD,
            fault="switch.offload-split-cage",
            target="crs804",
            summary="remove qsfp56-dd sub-ports from bridge mgmt",
            preview='/interface/bridge/port remove [find bridge=mgmt interface~"qsfp56-dd"]',
            bounces_links=True,
        ),
        OperatorAnswered(at=T0 + 6.5, step="offload", question="apply fix?", answer="yes"),
        ExportTaken(
            at=T0 + 7,
            step="offload",
            switch="crs804",
            file="fabwiz-pre-offload.rsc",
            contents=EXPORT_TEXT,
            sha256="5" * 64,
        ),
        RollbackArmed(
            at=T0 + 7.5,
            step="offload",
            fix_id=FIX_OFFLOAD,
            target="crs804",
            name="fabwiz-deadman-1",
            window_s=300.0,
            script="/interface/bridge/port add bridge=mgmt interface=qsfp56-dd-1-2",
        ),
        FixApplied(
            at=T0 + 8,
            step="offload",
            fix_id=FIX_OFFLOAD,
            fault="switch.offload-split-cage",
            target="crs804",
            export="fabwiz-pre-offload.rsc",
            rollback_armed="fabwiz-deadman-1",
        ),
        LinkTransitionSeen(at=T0 + 8.5, node="spark1", cause="fix bounced qsfp56-dd-1-1"),
        LinkTransitionSeen(at=T0 + 8.6, node="spark2", cause="fix bounced qsfp56-dd-2-1"),
        _m(T0 + 9, "offload", RAIL, 12.5, valid=False, reason="process.undrained-measurement"),
        PhysicalActionRequested(
            at=T0 + 10,
            step="drain",
            kind="ac_drain",
            nodes=("spark1",),
            instructions="Unplug spark1 for 60 s.",
        ),
        PhysicalActionDone(
            at=T0 + 11,
            step="drain",
            kind="ac_drain",
            nodes=("spark1",),
            performed_by="operator",
            observed="spark1 back with a new boot_id",
        ),
        NodeDrained(at=T0 + 11.5, node="spark1", boot_id="boot-2"),
        VerdictReached(at=T0 + 12, step="offload", verdict=good),
        _m(T0 + 12.5, "offload", RAIL, 109.2),
        FixVerified(
            at=T0 + 13,
            step="offload",
            fix_id=FIX_OFFLOAD,
            fault="switch.offload-split-cage",
            ok=True,
            detail="hw-offload=true; rail 109.2 Gb/s",
        ),
        RollbackDisarmed(
            at=T0 + 13.5,
            step="offload",
            fix_id=FIX_OFFLOAD,
            target="crs804",
            name="fabwiz-deadman-1",
        ),
        StepChanged(at=T0 + 13.8, step="offload", phase="done"),
        StepChanged(at=T0 + 14, step="qos", phase="verdict"),
        VerdictReached(at=T0 + 14.5, step="qos", verdict=qos),
        FixPreviewed(
            at=T0 + 15,
            step="qos",
            fix_id=FIX_QOS,
            fault="switch.qos-pfc-stall",
            target="crs804",
            summary="lossy QoS on fabric ports",
            preview='/interface/ethernet/switch/qos/port set [find name~"qsfp56-dd"] '
            "trust-l3=ignore pfc=disabled",
        ),
        RollbackArmed(
            at=T0 + 15.5,
            step="qos",
            fix_id=FIX_QOS,
            target="crs804",
            name="fabwiz-deadman-2",
            window_s=300.0,
            script="/interface/ethernet/switch/qos/port set ...",
        ),
        FixApplied(
            at=T0 + 16, step="qos", fix_id=FIX_QOS, fault="switch.qos-pfc-stall", target="crs804"
        ),
        FixRolledBack(
            at=T0 + 17,
            step="qos",
            fix_id=FIX_QOS,
            fault="switch.qos-pfc-stall",
            reason="API session lost during the change",
            restored=True,
        ),
        _m(T0 + 18, "halves", "cluster", 23.31),
        _m(T0 + 18.5, "halves", RAIL_B, 98.04),
        Note(at=T0 + 19, level="error", text="spark2 unreachable for 12 s", step="halves"),
        Note(at=T0 + 19.5, level="info", text="sweep done"),
        StepChanged(at=T0 + 20, step="halves", phase="done"),
        SessionEnded(at=T0 + 21, healthy=False, reason="switch.qos-pfc-stall remains"),
    ]
