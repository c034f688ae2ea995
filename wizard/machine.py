"""The step life cycle moved to `wizard.engine.machine`; this name still imports it."""

from wizard.engine.machine import TRANSITIONS, Phase, StepLifecycle, mermaid

__all__ = ["TRANSITIONS", "Phase", "StepLifecycle", "mermaid"]
