"""The session log: an append-only JSON Lines record of everything a session did, and its fold.

A troubleshooting session is evidence, and the machine running fabwiz is often one of the nodes
being drained: every event is written as one line (`Event.to_json()` plus a `seq` number) in one
`write(2)` at once, so a crash of fabwiz loses at most the line being written. Against a power
cut, the durability rule: every event that precedes or records a switch or host change (exports,
consents, armed rollbacks, applied/verified/rolled-back fixes, physical actions, drains, steps,
notes...) is fsynced before `write` returns, and with it every line before it; the high-volume
observations (probes sent and answered, verdicts, measurements) are fsynced in batches, at most
`BATCH_FSYNC_S` after they were written or at every `BATCH_FSYNC_EVENTS`-th, and at close. A torn
last line still loads (`LoadedSession.torn_tail`); a log from a future fabwiz is refused.

`SessionState` (`fold`) is rebuilt purely from the events (a fold): the current step and phase,
verdicts, fixes and their `FixState`, exports, operator answers, physical actions and the cabling
they leave, link transitions and drains (the drain guard), measurements and probe results. Resume,
the TUI's view model, replay and reports read it.

Secrets never reach the disk: every string of every event goes through a `SecretScrubber` holding
the passwords the process knows (a second line of defence behind the transports, which never put
them in events). Session folders are mode 0700 and their files 0600.

The package: `files` (the folder, its lock, raw writes), `scrub` (secrets), `writer` (`SessionLog`
and the durability rule), `loader` (`load_session`), `fold` (`SessionState`) and
`records` (what it keeps per fix, rollback and measurement).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wizard.session.files import (
        LAB_STATE_NAME,
        LOG_NAME,
        LOG_VERSION,
        default_sessions_root,
        new_session_id,
        resolve_session_path,
    )
    from wizard.session.fold import SessionState
    from wizard.session.loader import LoadedSession, load_session
    from wizard.session.records import (
        BeforeAfter,
        FixRecord,
        FixStatus,
        MeasurementRecord,
        RollbackRecord,
    )
    from wizard.session.scrub import SCRUBBED, SecretScrubber
    from wizard.session.writer import (
        BATCH_FSYNC_EVENTS,
        BATCH_FSYNC_S,
        BATCHED_EVENTS,
        SessionLog,
    )

# Each public name from the module that defines it, imported on first use: the TUI's view of a
# session needs the fold, not the writer or the loader.
_HOMES = {
    "files": (
        "LAB_STATE_NAME",
        "LOG_NAME",
        "LOG_VERSION",
        "default_sessions_root",
        "new_session_id",
        "resolve_session_path",
    ),
    "fold": ("SessionState",),
    "loader": ("LoadedSession", "load_session"),
    "records": ("BeforeAfter", "FixRecord", "FixStatus", "MeasurementRecord", "RollbackRecord"),
    "scrub": ("SCRUBBED", "SecretScrubber"),
    "writer": ("BATCH_FSYNC_EVENTS", "BATCH_FSYNC_S", "BATCHED_EVENTS", "SessionLog"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _HOME:
        value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BATCHED_EVENTS",
    "BATCH_FSYNC_EVENTS",
    "BATCH_FSYNC_S",
    "LAB_STATE_NAME",
    "LOG_NAME",
    "LOG_VERSION",
    "SCRUBBED",
    "BeforeAfter",
    "FixRecord",
    "FixStatus",
    "LoadedSession",
    "MeasurementRecord",
    "RollbackRecord",
    "SecretScrubber",
    "SessionLog",
    "SessionState",
    "default_sessions_root",
    "load_session",
    "new_session_id",
    "resolve_session_path",
]
