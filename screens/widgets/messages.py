"""The messages of the TUI: attributes go down, messages come up.

- `EngineEvent` is the one bridge from the engine: every fact it emits, posted to the app.
  The sweep's flood (a probe sent and answered per command per node) comes as `EngineEvents`,
  the flood of a few milliseconds (or one loop turn) in one message, in the order emitted.
- `RailsSampled` is the high-rate gauge feed: a snapshot of the latest Gb/s per rail. A newer
  snapshot supersedes a pending older one (`can_replace`), so a busy loop never queues stale data.
- `...Requested` messages are operator intents from widgets; only the app talks to the engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from textual.message import Message

from wizard.events import Event

RailKey = tuple[str, str]  # (node, netdev)


class EngineEvent(Message):
    """One engine event, as emitted (wizard/events.py)."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class EngineEvents(Message):
    """Engine events emitted within a few milliseconds (the sweep's probes), in order: one message for
    what would be hundreds."""

    def __init__(self, events: Sequence[Event]) -> None:
        super().__init__()
        self.events = tuple(events)


class RailsSampled(Message):
    """The latest throughput of every sampled rail. Immutable snapshot; newest wins."""

    def __init__(self, samples: Mapping[RailKey, float], at: float) -> None:
        super().__init__()
        self.samples: Mapping[RailKey, float] = dict(samples)
        self.at = at

    def can_replace(self, message: Message) -> bool:
        # Textual asks the message being handled whether the next pending one supersedes it.
        return isinstance(message, RailsSampled)


class StepRequested(Message):
    """Base of the intents that name a step."""

    intent = ""

    def __init__(self, step: str | None) -> None:
        super().__init__()
        self.step = step


class RunStepRequested(StepRequested):
    intent = "run"


class SkipStepRequested(StepRequested):
    intent = "skip"


class BackRequested(StepRequested):
    intent = "back"


class NextRequested(StepRequested):
    intent = "next"


class ApplyFixRequested(StepRequested):
    intent = "apply"


class ShowRawRequested(StepRequested):
    """Show the raw output behind the selected evidence row (or the whole step)."""

    intent = "raw"

    def __init__(self, step: str | None, row: int | None = None) -> None:
        super().__init__(step)
        self.row = row


class StepViewRequested(Message):
    """The operator selected a step in the list to look at (no engine call)."""

    def __init__(self, step: str) -> None:
        super().__init__()
        self.step = step
