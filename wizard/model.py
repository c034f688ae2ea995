"""The values the engine passes around: the fabric as discovered, probe results, evidence,
verdicts and fix plans. Frozen, slotted dataclasses; no I/O, no UI.

Vocabulary (FAULTS.md): a GB10 node has one ConnectX-7 with two QSFP ports; the SoC reaches it over
two PCIe Gen5 x4 links ("halves", A on PCI domain 0000 and B on 0002), so each physical port shows
as two netdevs and two RDMA devices. A *rail* is one netdev/RDMA-device pair.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal


class Status(StrEnum):
    """A verdict's status. Ordered by severity for `worst()`."""

    PASS = "pass"  # noqa: S105 - a verdict status, not a password
    BENIGN = "benign"
    UNKNOWN = "unknown"
    WARN = "warn"
    FAIL = "fail"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]

    @staticmethod
    def worst(statuses: list[Status] | tuple[Status, ...]) -> Status:
        """The most severe status of a list (PASS for an empty list)."""
        return max(statuses, key=lambda s: s.severity, default=Status.PASS)


class FixState(StrEnum):
    """A fix's life cycle: the one vocabulary of the engine, the session fold, the TUI and reports.

    previewed -> declined (the operator said no) | refused (a guard, a lock or the export said
    no; nothing was sent) | applied; applied -> verified | verify_failed | rolled_back. After the
    walk a verified fix can still end undone_by_rollback (its dead-man rollback ran) or
    rollback_armed (its rollback could not be disarmed); a fix previewed when the session stopped
    is interrupted. A declined, refused or failed fix offered again is previewed again; a
    rolled-back one offered again is a new attempt.
    """

    PREVIEWED = "previewed"
    DECLINED = "declined"
    REFUSED = "refused"
    APPLIED = "applied"  # applied, not verified (a physical fix not seen done is not applied)
    VERIFIED = "verified"  # applied, verified, every rollback known disarmed
    VERIFY_FAILED = "verify_failed"
    ROLLED_BACK = "rolled_back"  # verification failed (or the change stopped): undone
    UNDONE_BY_ROLLBACK = "undone_by_rollback"  # verified, then its dead-man rollback ran
    ROLLBACK_ARMED = "rollback_armed"  # verified, but its rollback could not be disarmed
    INTERRUPTED = "interrupted"  # previewed, then the session stopped (a resumed walk's record)

    @property
    def open(self) -> bool:
        """Offered and not answered, or applied and not verified: quitting leaves it behind."""
        return self in (FixState.PREVIEWED, FixState.APPLIED)

    @property
    def label(self) -> str:
        """The spelling of `fabwiz fix --json`'s `fixes[].state` (hyphens, as since 0.1.0)."""
        return self.value.replace("_", "-")

    @classmethod
    def read(cls, text: str) -> FixState:
        """A state from either spelling (`rolled_back` or the JSON's `rolled-back`)."""
        try:
            return cls(text.replace("-", "_"))
        except ValueError:
            raise ValueError(f"{text!r} is not a fix state") from None


_SEVERITY = {
    Status.PASS: 0,
    Status.BENIGN: 1,
    Status.UNKNOWN: 2,
    Status.WARN: 3,
    Status.FAIL: 4,
}

Half = Literal["A", "B"]


@dataclass(frozen=True, slots=True)
class Rail:
    """One netdev/RDMA-device pair of a node's ConnectX-7."""

    node: str
    netdev: str
    rdma: str
    port: int  # physical QSFP port: 0 or 1 (the PCI function)
    half: Half  # PCIe half: A on domain 0000, B on 0002
    pci: str = ""  # e.g. "0000:01:00.0"
    mac: str = ""
    addresses: tuple[str, ...] = ()  # IPv4 in CIDR form
    ipv6: tuple[str, ...] = ()
    mtu: int = 0
    up: bool = False
    speed_mbps: int | None = None
    switch: str | None = None  # switch name this rail's cable lands on, if known
    switch_port: str | None = None  # e.g. "qsfp56-dd-1-1"

    @property
    def key(self) -> str:
        return f"{self.node}/{self.netdev}"


Hop = tuple[str, str]  # (switch, the other switch) or (switch, one of its ports)


@dataclass(frozen=True, slots=True)
class SwitchMap:
    """Which port of each switch leads toward each other switch (`toward[(s, t)]`), as the
    switches' MAC tables show it. Empty: one switch, or tables not read."""

    toward: Mapping[Hop, str] = field(default_factory=dict)

    def egress(self, a: str, b: str) -> tuple[Hop, ...]:
        """(switch, port) of every switch a frame from a leg of switch `a` to one of `b` leaves
        by: `a`'s port toward `b`, and each switch between them (its ports toward `a` and
        toward `b` differ). Empty when `a`'s way to `b` is not known."""
        first = self.toward.get((a, b))
        if first is None or a == b:
            return ()
        hops = [(a, first)]
        for s in sorted({s for s, _ in self.toward}):
            if s in (a, b):
                continue
            pa, pb = self.toward.get((s, a)), self.toward.get((s, b))
            if pa is not None and pb is not None and pa != pb:
                hops.append((s, pb))
        return tuple(hops)


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What one probe returned, verbatim. Exactly what the session log records.

    `kind` is "ssh" for a host command (stdout/stderr/exit_status) or "api" for a RouterOS
    API call (`rows`: the `!re` attribute dicts with values as the wire carries them, strings).
    `error` is set when the transport failed (timeout, refused, trap...): then the output
    fields hold whatever arrived before the failure.
    """

    target: str
    kind: Literal["ssh", "api"]
    command: str
    stdout: str = ""
    stderr: str = ""
    exit_status: int | None = None
    rows: tuple[dict[str, str], ...] = ()
    error: str | None = None
    started_at: float = 0.0  # wall clock, seconds since the epoch
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and (self.kind == "api" or self.exit_status == 0)

    @property
    def text(self) -> str:
        """The raw text to show an operator: stdout then stderr (or the API rows)."""
        if self.kind == "api":
            return "\n".join(" ".join(f"{k}={v}" for k, v in row.items()) for row in self.rows) or (
                self.error or ""
            )
        out = self.stdout
        if self.stderr:
            out = f"{out}\n{self.stderr}" if out else self.stderr
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "kind": self.kind,
            "command": self.command,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "exit_status": self.exit_status,
            "rows": [dict(r) for r in self.rows],
            "error": self.error,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProbeResult:
        return cls(
            target=str(data["target"]),
            kind="api" if data.get("kind") == "api" else "ssh",
            command=str(data["command"]),
            stdout=str(data.get("stdout") or ""),
            stderr=str(data.get("stderr") or ""),
            exit_status=data.get("exit_status"),
            rows=tuple(dict(r) for r in data.get("rows") or ()),
            error=data.get("error"),
            started_at=float(data.get("started_at") or 0.0),
            duration_s=float(data.get("duration_s") or 0.0),
        )


@dataclass(frozen=True, slots=True)
class Evidence:
    """One observed fact behind a verdict: where, what was run, what was seen, what was expected."""

    target: str
    command: str
    observed: str
    expected: str
    status: Status = Status.PASS
    raw: str | None = None  # the raw text, for `unknown` verdicts and "show raw output"

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "command": self.command,
            "observed": self.observed,
            "expected": self.expected,
            "status": str(self.status),
            "raw": self.raw,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evidence:
        return cls(
            target=str(data["target"]),
            command=str(data["command"]),
            observed=str(data["observed"]),
            expected=str(data["expected"]),
            status=Status(data.get("status", "pass")),
            raw=data.get("raw"),
        )


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judgement of one fault id over the cluster: pass, or a finding with its evidence."""

    fault: str  # a stable id from FAULTS.md
    status: Status
    summary: str
    targets: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    check: str = ""  # the check module that judged it

    @property
    def is_finding(self) -> bool:
        return self.status in (Status.FAIL, Status.WARN, Status.UNKNOWN)

    def to_json(self) -> dict[str, Any]:
        return {
            "fault": self.fault,
            "status": str(self.status),
            "targets": list(self.targets),
            "summary": self.summary,
            "evidence": [e.to_json() for e in self.evidence],
            "check": self.check,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        return cls(
            fault=str(data["fault"]),
            status=Status(data["status"]),
            summary=str(data["summary"]),
            targets=tuple(data.get("targets") or ()),
            evidence=tuple(Evidence.from_json(e) for e in data.get("evidence") or ()),
            check=str(data.get("check") or ""),
        )


# --- fix plans -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ApiCommand:
    """One RouterOS API command of a switch fix.

    `path` is the menu (`/interface/bridge/port`), `verb` the command (`set`, `remove`, `add`),
    `args` the attribute words. `cli` is the same command in RouterOS CLI syntax: shown in the
    preview and used inside the dead-man rollback script of `/system/scheduler`.
    Items are selected by a stable key (`select`, e.g. `("interface", "qsfp56-dd-1-2")`) and
    looked up by the executor right before sending: RouterOS `.id`s change after a reboot.
    """

    path: str
    verb: str
    args: tuple[tuple[str, str], ...] = ()
    select: tuple[str, str] | None = None
    cli: str = ""


@dataclass(frozen=True, slots=True)
class SwitchChange:
    switch: str
    commands: tuple[ApiCommand, ...]
    rollback: tuple[ApiCommand, ...]


@dataclass(frozen=True, slots=True)
class HostFile:
    """A file a host fix writes (backed up first, restored by the rollback)."""

    node: str
    path: str
    content: str
    mode: int = 0o644


@dataclass(frozen=True, slots=True)
class HostChange:
    node: str
    files: tuple[HostFile, ...] = ()
    commands: tuple[str, ...] = ()  # run after the files are written, e.g. "netplan apply"
    rollback_commands: tuple[str, ...] = ()


PhysicalKind = Literal[
    "recable", "ac_drain", "reboot", "reseat", "firmware_update", "power_cycle", "manual"
]  # manual: a change only the technician can make (a container's environment), then re-check


@dataclass(frozen=True, slots=True)
class PhysicalAction:
    """Something only hands at the rack can do. The engine then watches for its result."""

    kind: PhysicalKind
    nodes: tuple[str, ...]
    instructions: str
    # recable details: (node, netdev or port, destination) where destination is
    # "switch:<switch>:<port>", "node:<node>:<port>" or "unplugged"
    cables: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class FixPlan:
    """A fix offered for a fault: preview, target, rollback, verification."""

    fault: str
    target: str
    summary: str
    preview: str  # the exact commands or the diff, as shown to the operator
    switch_changes: tuple[SwitchChange, ...] = ()
    host_changes: tuple[HostChange, ...] = ()
    physical: PhysicalAction | None = None
    bounces_links: bool = False
    verify_checks: tuple[str, ...] = ()  # fault ids re-judged after the change
    verify_targets: tuple[str, ...] = ()  # set: the change is for these targets of the verdict
    then: tuple[FixPlan, ...] = ()  # the verdict's other targets, each its own plan, offered next

    def to_json(self) -> dict[str, Any]:
        return {
            "fault": self.fault,
            "target": self.target,
            "summary": self.summary,
            "preview": self.preview,
            "bounces_links": self.bounces_links,
            "switches": [c.switch for c in self.switch_changes],
            "nodes": [c.node for c in self.host_changes],
            "physical": None
            if self.physical is None
            else {
                "kind": self.physical.kind,
                "nodes": list(self.physical.nodes),
                "instructions": self.physical.instructions,
            },
        }


@dataclass(frozen=True, slots=True)
class Measurement:
    """A bandwidth result: a perftest rail or an NCCL run, with whether it counts as evidence."""

    kind: Literal["rail", "pair", "nccl"]
    target: str  # "spark1/enp1s0f0np0->spark2/enp1s0f0np0", or "cluster" for NCCL
    value: float  # Gb/s for rails, GB/s busbw for NCCL
    unit: Literal["Gb/s", "GB/s"]
    valid: bool = True
    reason: str = ""  # why it is not evidence (process.undrained-measurement), or the error
    extra: dict[str, Any] = field(default_factory=dict)


def node_order(name: str) -> tuple[str, int]:
    """A sort key for node names: spark2 before spark10."""
    match = re.match(r"(.*?)(\d+)$", name)
    return (match.group(1), int(match.group(2))) if match else (name, 0)
