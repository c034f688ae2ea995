"""The per-step life cycle as a `transitions` state machine, defined as data.

States are an `Enum`, transitions a list of dicts, `auto_transitions=False`; callbacks only record
(the `on_change` hook emits a `StepChanged` event). All I/O happens in the engine loop
(wizard/engine/). The same `TRANSITIONS` list draws the diagram in the README (`mermaid()`).

Which step is current is the engine's cursor over the flow (flows/bisection.py); this machine is
the life cycle of the current step: probe -> verdict -> fix offered -> export -> apply -> verify,
or skip; `advance`/`back`/`rerun` move between steps.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from transitions import Machine


class Phase(Enum):
    IDLE = "idle"
    PROBING = "probing"
    MEASURING = "measuring"
    WAITING_PHYSICAL = "waiting_physical"
    VERDICT = "verdict"
    FIX_OFFERED = "fix_offered"
    EXPORTING = "exporting"
    APPLYING = "applying"
    VERIFYING = "verifying"
    DONE = "done"
    SKIPPED = "skipped"


P = Phase
_ANY_ACTIVE = [P.PROBING, P.MEASURING, P.WAITING_PHYSICAL, P.VERDICT, P.FIX_OFFERED]

TRANSITIONS: list[dict[str, Any]] = [
    # a sweep: at the start of a step, after a verdict or a physical action, or between the
    # measurements of a step that measures first (the ping matrix's own probes, both halves)
    {
        "trigger": "probe",
        "source": [P.IDLE, P.VERDICT, P.WAITING_PHYSICAL, P.MEASURING],
        "dest": P.PROBING,
    },
    # bandwidth tests: at the start of a step, after its sweep or verdict, after a physical
    # action, and again while measuring (the drain guard's re-measurement, a bisection)
    {
        "trigger": "measure",
        "source": [P.IDLE, P.PROBING, P.MEASURING, P.VERDICT, P.WAITING_PHYSICAL],
        "dest": P.MEASURING,
    },
    # hands at the rack: a drain or re-cable the step asks for, a fix that is a physical action,
    # or a further action asked for while waiting on one (a drain after a re-cable)
    {
        "trigger": "need_physical",
        "source": [
            P.IDLE,
            P.PROBING,
            P.MEASURING,
            P.VERDICT,
            P.VERIFYING,
            P.FIX_OFFERED,
            P.WAITING_PHYSICAL,
        ],
        "dest": P.WAITING_PHYSICAL,
    },
    # a conclusion: after a sweep, a measurement or a physical action, or a further one on a
    # verdict already reached (the direct-connect test concludes after its own measurement)
    {
        "trigger": "judged",
        "source": [P.PROBING, P.MEASURING, P.WAITING_PHYSICAL, P.VERDICT],
        "dest": P.VERDICT,
    },
    {"trigger": "offer_fix", "source": [P.VERDICT, P.VERIFYING], "dest": P.FIX_OFFERED},
    {"trigger": "declined", "source": [P.FIX_OFFERED, P.EXPORTING], "dest": P.VERDICT},
    {"trigger": "export", "source": P.FIX_OFFERED, "dest": P.EXPORTING},
    {"trigger": "apply", "source": [P.FIX_OFFERED, P.EXPORTING], "dest": P.APPLYING},
    {"trigger": "verify", "source": [P.APPLYING, P.WAITING_PHYSICAL], "dest": P.VERIFYING},
    {"trigger": "verified", "source": P.VERIFYING, "dest": P.VERDICT},
    {"trigger": "rolled_back", "source": [P.EXPORTING, P.APPLYING, P.VERIFYING], "dest": P.VERDICT},
    {"trigger": "finish", "source": [P.VERDICT, P.IDLE], "dest": P.DONE},
    {"trigger": "skip", "source": [P.IDLE, *_ANY_ACTIVE], "dest": P.SKIPPED},
    {"trigger": "rerun", "source": [P.VERDICT, P.DONE, P.SKIPPED], "dest": P.IDLE},
    {"trigger": "advance", "source": [P.DONE, P.SKIPPED], "dest": P.IDLE},
    {"trigger": "back", "source": [P.IDLE, P.VERDICT, P.DONE, P.SKIPPED], "dest": P.IDLE},
]


class StepLifecycle:
    """The model object the machine drives. `state` is a `Phase`."""

    state: Phase

    def __init__(self, on_change: Callable[[Phase, Phase, str], None] | None = None) -> None:
        self._on_change = on_change
        self.machine = Machine(
            model=self,
            states=Phase,
            transitions=TRANSITIONS,
            initial=Phase.IDLE,
            auto_transitions=False,
            send_event=True,
            after_state_change="_record",
        )

    def _record(self, event: Any) -> None:
        if self._on_change is not None:
            src = event.transition.source
            source = src if isinstance(src, Phase) else Phase[src]
            self._on_change(source, self.state, event.event.name)

    def fire(self, trigger: str) -> None:
        """Fire a trigger by name (raises transitions.MachineError on an illegal move)."""
        getattr(self, trigger)()

    def can(self, trigger: str) -> bool:
        return bool(getattr(self, f"may_{trigger}")())

    def force(self, phase: Phase) -> None:
        """Set the phase when rebuilding from a session log (no callbacks: it is history)."""
        self.machine.set_state(phase, model=self)


def mermaid() -> str:
    """The life-cycle diagram in Mermaid syntax, from `TRANSITIONS` (rendered in the README)."""
    lines = ["stateDiagram-v2", "    [*] --> idle"]
    for t in TRANSITIONS:
        sources = t["source"] if isinstance(t["source"], list) else [t["source"]]
        for s in sources:
            lines.append(f"    {s.value} --> {t['dest'].value}: {t['trigger']}")
    lines.append("    done --> [*]")
    return "\n".join(lines)
