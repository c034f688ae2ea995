"""Writing a session log: one JSON line per event, fsynced by the durability rule."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from wizard import __version__
from wizard.errors import SessionLogError
from wizard.events import (
    Event,
    MeasurementTaken,
    ProbeAnswered,
    ProbeSent,
    SessionResumed,
    SessionStarted,
    VerdictReached,
)
from wizard.session.files import (
    _DIR_MODE,
    _FILE_MODE,
    LAB_STATE_NAME,
    LOG_NAME,
    LOG_VERSION,
    _cut_torn_tail,
    _ends_with_newline,
    _fsync_dir,
    _open_locked,
    _write_all,
    default_sessions_root,
    new_session_id,
    resolve_session_path,
)
from wizard.session.loader import LoadedSession, load_session
from wizard.session.scrub import SecretScrubber

# JSON escapes newlines inside strings, so one record is always exactly one line; `default=str`
# keeps an odd value in `Measurement.extra` from killing the session. One encoder for every line
# (`json.dumps` with options builds one per call); a record is a fresh tree of dicts and lists
# (`wizard.codec`), so there is no cycle to look for.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str, check_circular=False)


# Observations, written by the hundred during a sweep: fsynced in batches. Every other event
# type (any new one too) is fsynced as it is written; it comes before or records a change.
BATCHED_EVENTS: frozenset[str] = frozenset(
    {ProbeSent.type, ProbeAnswered.type, VerdictReached.type, MeasurementTaken.type}
)
BATCH_FSYNC_S = 0.5  # the longest a batched line waits for its fsync
BATCH_FSYNC_EVENTS = 512  # the most batched lines waiting for one fsync


class SessionLog:
    """An open session folder: appends events to `events.jsonl`, one line each, fsynced by the
    durability rule of this module (changes at once, observations in batches).

    Create a new one with `SessionLog.create(...)`, reopen one to resume with
    `SessionLog.reopen(...)`. `write(event)` (also `log(event)`) is the engine's event sink.
    """

    def __init__(
        self,
        folder: Path,
        *,
        next_seq: int = 1,
        secrets: Iterable[str] = (),
        session_id: str | None = None,
        fsync: bool = True,
        fd: int | None = None,
    ) -> None:
        self.folder = folder
        self.path = folder / LOG_NAME
        self.session_id = session_id or folder.name
        self.scrubber = SecretScrubber(secrets)
        self._fsync = fsync
        self._next_seq = next_seq
        self._lock = threading.Lock()
        self._fd: int | None = fd if fd is not None else _open_locked(self.path)
        self.path.chmod(_FILE_MODE)
        self._dirty = False  # lines written since the last fsync
        self._waiting = 0  # batched lines written since the last fsync
        self._timer: threading.Timer | None = None
        self.fsyncs = 0  # fsync calls of the log file, for tests and the bench

    # -- construction

    @classmethod
    def create(
        cls,
        session_dir: Path | str | None = None,
        *,
        root: Path | str | None = None,
        session_id: str | None = None,
        secrets: Iterable[str] = (),
        fsync: bool = True,
    ) -> SessionLog:
        """A new session folder: a fresh `<root>/<UTC timestamp>-<short id>` (root defaults to
        `default_sessions_root()`), or `--session-dir`: that folder itself when it is new or
        empty, else a fresh `<id>` folder inside it (so pointing it at a folder of sessions, or
        at one that holds other files, never mixes a session with anything else).

        Raises SessionLogError when the folder already holds a session log.
        """
        sid = session_id or new_session_id()
        if session_dir is not None:
            folder = Path(session_dir).expanduser()
            if folder.is_dir() and not (folder / LOG_NAME).exists() and any(folder.iterdir()):
                folder = folder / sid
        else:
            base = Path(root).expanduser() if root is not None else default_sessions_root()
            folder = base / sid
        if (folder / LOG_NAME).exists():
            raise SessionLogError(
                f"{folder} already holds a session log",
                hint=f"continue it with `fabwiz resume {folder}`, or pick another --session-dir",
            )
        existed = folder.exists()
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=_DIR_MODE)
            folder.chmod(_DIR_MODE)
        except OSError as exc:
            raise SessionLogError(
                f"cannot create the session folder {folder}: {exc.strerror or exc}",
                hint="pass a writable folder with --session-dir",
            ) from exc
        log = cls(folder, secrets=secrets, session_id=sid, fsync=fsync)
        if not existed:
            _fsync_dir(folder.parent)
        return log

    @classmethod
    def reopen(
        cls, session: Path | str, *, secrets: Iterable[str] = (), fsync: bool = True
    ) -> tuple[SessionLog, LoadedSession]:
        """Open an existing session to append to it (resume). A torn last line is moved aside
        into `events.jsonl.torn` (kept as evidence) and cut from the log, so new lines start
        clean; numbering continues after the last complete event."""
        fd = _open_locked(resolve_session_path(session))
        try:
            loaded = load_session(session)
            size = loaded.path.stat().st_size
            if size != loaded.good_bytes or not _ends_with_newline(loaded.path):
                _cut_torn_tail(loaded.path, loaded.good_bytes, loaded.torn_text)
        except BaseException:
            os.close(fd)
            raise
        log = cls(
            loaded.folder,
            next_seq=loaded.last_seq + 1,
            secrets=secrets,
            session_id=loaded.session_id,
            fsync=fsync,
            fd=fd,
        )
        return log, loaded

    # -- secrets

    def add_secret(self, secret: str) -> None:
        """Register a secret (a switch password...): it will never be written to the log."""
        self.scrubber.add(secret)

    # -- writing

    @property
    def next_seq(self) -> int:
        return self._next_seq

    def write(self, event: Event) -> int | None:
        """Append one event (the engine's event sink). Returns its `seq`, or None when the event
        type is not persisted (`persist = False`, e.g. gauge samples)."""
        if not type(event).persist:
            return None
        with self._lock:
            if self._fd is None:
                raise SessionLogError(f"the session log {self.path} is closed")
            seq = self._next_seq
            data = event.to_json()
            text = _ENCODER.encode({"seq": seq, **data})
            if self.scrubber.occurs_in(text):
                text = _ENCODER.encode({"seq": seq, **self.scrubber.scrub_json(data)})
            line = (text + "\n").encode("utf-8")
            end = os.lseek(self._fd, 0, os.SEEK_END)
            try:
                _write_all(self._fd, line)
                self._dirty = True
                if self._fsync:
                    batched = event.type in BATCHED_EVENTS
                    if not batched or self._waiting + 1 >= BATCH_FSYNC_EVENTS:
                        self._sync_now()
                    else:
                        self._waiting += 1
                        self._sync_later()
            except OSError as exc:
                # Never leave half a line in the middle of the log (disk full): cut it back.
                try:
                    os.ftruncate(self._fd, end)
                except OSError:
                    pass
                raise SessionLogError(
                    f"cannot write the session log {self.path}: {exc.strerror or exc}",
                    hint="free some disk space or pass another --session-dir",
                ) from exc
            self._next_seq = seq + 1
            return seq

    __call__ = write

    def flush(self) -> None:
        """fsync every line written so far (the batched ones too)."""
        with self._lock:
            if self._fd is not None and self._fsync:
                self._sync_now()

    def _sync_now(self) -> None:
        """Under the lock: fsync the log if a line is waiting (one fsync covers every line)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._dirty and self._fd is not None:
            os.fsync(self._fd)
            self.fsyncs += 1
            self._dirty = False
            self._waiting = 0

    def _sync_later(self) -> None:
        """Under the lock: make sure a batch fsync comes within BATCH_FSYNC_S (or sooner, at the
        BATCH_FSYNC_EVENTS-th batched line)."""
        if self._timer is None:
            self._timer = threading.Timer(BATCH_FSYNC_S, self._timed_sync)
            self._timer.daemon = True
            self._timer.start()

    def _timed_sync(self) -> None:
        with self._lock:
            if self._timer is not threading.current_thread():
                return  # cancelled while it waited for the lock: a later sync covered it
            self._timer = None
            if self._fd is None:
                return
            try:
                self._sync_now()
            except OSError:
                # the next durable write or close fsyncs again and reports the error there
                self._dirty = True

    def start(
        self,
        command: str,
        *,
        inventory_digest: str = "",
        inventory_path: str = "",
        scenario: str | None = None,
        nodes: Iterable[str] = (),
        switches: Iterable[str] = (),
        options: Mapping[str, Any] | None = None,
    ) -> SessionStarted:
        """Write the first record of a session (this build's version numbers filled in)."""
        event = SessionStarted(
            session_id=self.session_id,
            fabwiz_version=__version__,
            log_version=LOG_VERSION,
            command=command,
            inventory_digest=inventory_digest,
            inventory_path=inventory_path,
            scenario=scenario,
            nodes=tuple(nodes),
            switches=tuple(switches),
            options=dict(options or {}),
        )
        self.write(event)
        return event

    def resumed(self, loaded: LoadedSession, from_step: str) -> SessionResumed:
        """Write the record that says this process continues `loaded` from `from_step`."""
        event = SessionResumed(
            from_step=from_step, events_loaded=len(loaded.events), torn_tail=loaded.torn_tail
        )
        self.write(event)
        return event

    def save_lab_state(self, state: Mapping[str, Any], *, scrub: bool = True) -> Path:
        """Write `lab-state.json` beside the log atomically (temp file, fsync, rename).

        Registered secrets are scrubbed unless `scrub=False` (a lab that must restore its own
        users' passwords should take them from its own config, not from the session folder).
        """
        data = self.scrubber.scrub_json(dict(state)) if scrub else dict(state)
        target = self.folder / LAB_STATE_NAME
        tmp = self.folder / f".{LAB_STATE_NAME}.{os.getpid()}.tmp"
        payload = json.dumps(data, ensure_ascii=False, indent=1, default=str).encode("utf-8")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, _FILE_MODE)
        try:
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        tmp.chmod(_FILE_MODE)
        tmp.replace(target)
        _fsync_dir(self.folder)
        return target

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                try:
                    if self._fsync:
                        self._sync_now()
                finally:
                    os.close(self._fd)
                    self._fd = None

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
