"""The engine's ports (STYLE.md rule 6): what it is given, as protocols.

`Fabric` (transports, sweep, traffic, the lab's hands if any), `Operator` (decisions, awaited),
the flow's steps, the checks and the thresholds. The engine never imports flows, transports or
the lab: the composition root hands it objects of these shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

from wizard import fixes
from wizard.fixes import ExportStatus
from wizard.model import FixPlan, Measurement, PhysicalAction, ProbeResult, Verdict
from wizard.probes import Observations, Probe


class StepLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def faults(self) -> tuple[str, ...]: ...
    @property
    def traffic(self) -> bool: ...


class CheckLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def faults(self) -> tuple[str, ...]: ...
    @property
    def probes(self) -> tuple[Probe, ...]: ...
    @property
    def needs_traffic(self) -> bool: ...
    @property
    def parse(self) -> Callable[[Observations, Any], Any]: ...
    @property
    def fix(self) -> Callable[[Any, Verdict, Any], FixPlan | None] | None: ...

    def run(self, obs: Observations, ctx: Any) -> list[Verdict]: ...


class Thresholds(Protocol):
    @property
    def rail_fix_target_gbps(self) -> float: ...
    @property
    def node_both_halves_min_gbps(self) -> float: ...
    def halves_gate(self, across_isl: bool = False) -> float: ...
    def nccl_gate(self, nodes: int, switches: int) -> float: ...


class Hands(Protocol):
    """The lab's hands: performs a physical action in the simulated rack."""

    async def perform(self, action: PhysicalAction) -> str: ...


MeasureKind = Literal["rails", "halves", "direct", "nccl", "fabric", "matrix"]


class Fabric(Protocol):
    """The cluster as the engine sees it (wizard/fabric.py builds it from an inventory)."""

    @property
    def nodes(self) -> tuple[str, ...]: ...
    @property
    def switches(self) -> tuple[str, ...]: ...
    @property
    def hands(self) -> Hands | None: ...

    def set_step(self, step: str) -> None: ...
    async def sweep(self, probes: Sequence[Probe]) -> Observations: ...
    async def measure(self, kind: MeasureKind) -> list[Measurement]: ...
    async def run(
        self, node: str, command: str, *, stdin: str | None = None, timeout: float = 30.0
    ) -> ProbeResult: ...
    def api(self, switch: str) -> fixes.RouterOsApi: ...
    def management_ports(self, switch: str) -> tuple[str, ...]: ...
    def direct_connect_action(
        self, pair: tuple[str, str] | None = None, port: int = 0
    ) -> tuple[PhysicalAction, PhysicalAction] | None: ...


Choice = Literal["done", "perform", "skip"]


class Operator(Protocol):
    """Decisions, awaited from the engine's worker (a TUI modal, a terminal prompt, `--yes`)."""

    async def confirm_fix(self, plan: FixPlan, export: ExportStatus | None) -> bool: ...
    async def physical_action(self, action: PhysicalAction, can_perform_in_lab: bool) -> str: ...
    async def choose(self, step: str, question: str, options: list[str]) -> str: ...
    async def error(self, title: str, message: str, hint: str | None) -> None: ...


class FabricRunner:
    """Adapts the fabric's `run` to the `fixes.HostRunner` port."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric

    async def run(
        self, node: str, command: str, *, stdin: str | None = None, timeout: float = 30.0
    ) -> ProbeResult:
        return await self.fabric.run(node, command, stdin=stdin, timeout=timeout)
