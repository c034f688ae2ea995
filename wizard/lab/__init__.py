"""The simulated lab: a digital twin of a GB10 + MikroTik fabric on 127.0.0.1.

`Lab` / `start_lab` run a scenario with real SSH servers (one per node) and RouterOS API
servers (one per switch); `world`, `physics` and `scenarios` are the model underneath, usable
without any server (tests of the numbers). See DESIGN.md, "The simulated lab".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wizard.lab.lab import Lab, start_lab

__all__ = ["Lab", "start_lab"]


def __getattr__(name: str) -> Any:
    # lazy: importing wizard.lab.world must not pull asyncssh in
    if name in __all__:
        from wizard.lab import lab as _lab

        return getattr(_lab, name)
    raise AttributeError(name)
