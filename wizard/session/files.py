"""The session folder on disk: its names and modes, the exclusive lock, raw writes and cuts."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

from wizard.errors import SessionLogError

LOG_VERSION = 1
"""The version of the log format this build writes and the highest it reads."""

LOG_NAME = "events.jsonl"
LAB_STATE_NAME = "lab-state.json"
SCRUBBED = "«secret»"
"""What a registered secret is replaced with in the log."""

_DIR_MODE = 0o700
_FILE_MODE = 0o600


def default_sessions_root() -> Path:
    """Where session folders go by default: `<user state dir>/fabwiz/sessions`."""
    import platformdirs

    return platformdirs.user_state_path("fabwiz") / "sessions"


def cannot_create_session(
    session_dir: Path | str | None = None, *, root: Path | str | None = None
) -> SessionLogError | None:
    """What `SessionLog.create` would refuse for this `--session-dir` (or sessions root), found
    without creating anything: a folder that already holds a session log, or no writable folder
    to create it in. None when `create` should succeed (a disk may still fill up)."""
    if session_dir is not None:
        folder = Path(session_dir).expanduser()
    else:
        base = Path(root).expanduser() if root is not None else default_sessions_root()
        folder = base / "new-session"
    if (folder / LOG_NAME).exists():
        return SessionLogError(
            f"{folder} already holds a session log",
            hint=f"continue it with `fabwiz resume {folder}`, or pick another --session-dir",
        )
    where = folder
    while not where.exists() and where != where.parent:
        where = where.parent
    if where.is_dir() and os.access(where, os.W_OK | os.X_OK):
        return None
    why = "not a folder" if not where.is_dir() else "not writable"
    return SessionLogError(
        f"cannot create the session folder {folder}: {where} is {why}",
        hint="pass a writable folder with --session-dir",
    )


def new_session_id(now: float | None = None) -> str:
    """`<UTC timestamp>-<short id>`, e.g. `20261130T001500Z-3f9a1c2e`: sorts by time."""
    import secrets

    stamp = datetime.fromtimestamp(time.time() if now is None else now, tz=UTC)
    return f"{stamp:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _fsync_dir(path: Path) -> None:
    """Make a new or renamed directory entry durable (best effort: not every OS allows it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _open_locked(path: Path) -> int:
    """Open the log for appending, holding an exclusive lock for the life of the process (a
    `kill -9` releases it): two fabwiz processes never append to one session."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, _FILE_MODE)
    except OSError as exc:  # a read-only folder or file system, no permission, disk full
        raise SessionLogError(
            f"cannot open the session log {path} for writing: {exc.strerror or exc}",
            hint="make the session folder writable (or copy it somewhere writable and resume "
            "that copy); `fabwiz report` can read it as it is",
        ) from None
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no advisory locks, carry on
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        raise SessionLogError(
            f"the session {path.parent} is in use by another fabwiz process",
            hint="finish or stop that process first; `fabwiz report` can read it meanwhile",
        ) from exc
    return fd


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() == 0:
            return True
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def _cut_torn_tail(path: Path, good_bytes: int, torn_text: str) -> None:
    if torn_text:
        aside = path.with_name(path.name + ".torn")
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_APPEND, _FILE_MODE)
        try:
            _write_all(fd, torn_text.encode("utf-8", "replace") + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
    fd = os.open(path, os.O_RDWR)
    try:
        os.ftruncate(fd, good_bytes)
        if good_bytes and not _ends_with_newline(path):
            os.lseek(fd, 0, os.SEEK_END)
            _write_all(fd, b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


def resolve_session_path(session: Path | str) -> Path:
    """The events.jsonl of SESSION, given as a session folder, the log file itself, or a bare
    session id (a folder under `default_sessions_root()`)."""
    p = Path(session).expanduser()
    if not p.exists() and p.name == str(session) and (default_sessions_root() / p.name).is_dir():
        p = default_sessions_root() / p.name
    if p.is_dir():
        p = p / LOG_NAME
    if not p.exists():
        raise SessionLogError(
            f"no session log at {p}",
            hint="give a session folder (it holds events.jsonl) or the events.jsonl path",
        )
    return p
