"""The session log: an append-only JSON Lines record of everything a session did, and its fold.

A troubleshooting session is evidence, and the machine running fabwiz is often one of the nodes
being drained: every event is written as one line (`Event.to_json()` plus a `seq` number) in one
`write(2)` at once, so a crash of fabwiz loses at most the line being written. Against a power
cut, the durability rule: every event that precedes or records a switch or host change (exports,
consents, armed rollbacks, applied/verified/rolled-back fixes, physical actions, drains, steps,
notes...) is fsynced before `write` returns, and with it every line before it; the high-volume
observations (probes sent and answered, verdicts, measurements) are fsynced in batches, at most
`BATCH_FSYNC_S` after they were written, and at close. That torn last line still loads
(`LoadedSession.torn_tail`); a log from a future fabwiz is refused.

`SessionState` is rebuilt purely from the events (a fold): the current step and phase, verdicts,
fixes and their status, exports, operator answers, physical actions, link transitions and drains
(the drain guard), measurements and probe results. That gives resume, replay and reports.

Secrets never reach the disk: every string of every event goes through a `SecretScrubber` holding
the passwords the process knows (a second line of defence behind the transports, which never put
them in events). Session folders are mode 0700 and their files 0600.
"""

from __future__ import annotations

import json
import os
import re
import secrets as _secrets
import threading
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from wizard import __version__
from wizard.errors import SessionLogError
from wizard.events import (
    EVENT_TYPES,
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
    RollbackArmed,
    RollbackDisarmed,
    SessionEnded,
    SessionResumed,
    SessionStarted,
    StepChanged,
    VerdictReached,
    event_from_json,
)
from wizard.model import Measurement, ProbeResult, Verdict
from wizard.probes import Transition

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


def new_session_id(now: float | None = None) -> str:
    """`<UTC timestamp>-<short id>`, e.g. `20261130T001500Z-3f9a1c2e`: sorts by time."""
    stamp = datetime.fromtimestamp(time.time() if now is None else now, tz=UTC)
    return f"{stamp:%Y%m%dT%H%M%SZ}-{_secrets.token_hex(4)}"


# --- secrets ---------------------------------------------------------------------------------


_PASSWORD_CONTEXT = r"""((?:password|passwd|secret|passphrase|token)["']?\s*[:=]\s*["']?)"""  # noqa: S105 - a pattern
_PASSWORD_KEY = re.compile(r"password|passwd|secret|passphrase|token", re.I)


class SecretScrubber:
    """Replaces every registered secret string with `«secret»` in text and in JSON data.

    The process registers the switch passwords it knows (and any other secret) as soon as it
    reads them; the session log scrubs every string (values and keys) of every record with it.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self._weak: set[str] = set()  # common-word secrets: scrubbed in password contexts only
        for s in secrets:
            self.add(s)

    @staticmethod
    def weak(secret: str) -> bool:
        """A secret that is also an ordinary word of the evidence (`admin`, `bridge`, `true`):
        replacing it everywhere would corrupt exports and probe output, so it is scrubbed
        where a password is written (`password=...`, a "password" key), never elsewhere."""
        return len(secret) < 8 or bool(re.fullmatch(r"[A-Za-z]+|[0-9]+", secret))

    def add(self, secret: str) -> None:
        """Register a secret, with the forms it takes inside recorded text: stripped (read from a
        file), JSON-escaped (inside `ip -j` or API output kept as text), RouterOS-escaped (inside
        an export) and percent-encoded (inside a URL)."""
        for base in {secret, secret.strip()}:
            if not base:
                continue
            for variant in (
                base,
                json.dumps(base, ensure_ascii=False)[1:-1],
                re.sub(r'([\\"$?])', r"\\\1", base),
                urllib.parse.quote(base, safe=""),
            ):
                if variant:
                    (self._weak if self.weak(base) else self._secrets).add(variant)

    def __len__(self) -> int:
        return len(self._secrets) + len(self._weak)

    def scrub(self, text: str) -> str:
        if not self._secrets and not self._weak:
            return text
        # Longest first, so a secret containing another is replaced whole.
        for s in sorted(self._secrets, key=len, reverse=True):
            if s in text:
                text = text.replace(s, SCRUBBED)
        for s in sorted(self._weak, key=len, reverse=True):
            if s in text:
                text = re.sub(
                    _PASSWORD_CONTEXT + re.escape(s) + r"(?![\w])", rf"\g<1>{SCRUBBED}", text
                )
        return text

    def scrub_json(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {
                (self.scrub(k) if isinstance(k, str) else k): (
                    SCRUBBED
                    if isinstance(k, str) and _PASSWORD_KEY.search(k) and v in self._weak
                    else self.scrub_json(v)
                )
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.scrub_json(v) for v in value]
        return value


# --- writing ---------------------------------------------------------------------------------


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


def _encode_line(record: dict[str, Any]) -> bytes:
    # json.dumps escapes newlines inside strings, so one record is always exactly one line;
    # `default=str` keeps an odd value in `Measurement.extra` from killing the session.
    return (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")


# Observations, written by the hundred during a sweep: fsynced in batches. Every other event
# type (any new one too) is fsynced as it is written; it comes before or records a change.
BATCHED_EVENTS: frozenset[str] = frozenset(
    {ProbeSent.type, ProbeAnswered.type, VerdictReached.type, MeasurementTaken.type}
)
BATCH_FSYNC_S = 0.5  # the longest a batched line waits for its fsync


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
            record = {"seq": seq, **self.scrubber.scrub_json(event.to_json())}
            line = _encode_line(record)
            end = os.lseek(self._fd, 0, os.SEEK_END)
            try:
                _write_all(self._fd, line)
                self._dirty = True
                if self._fsync:
                    if event.type in BATCHED_EVENTS:
                        self._sync_later()
                    else:
                        self._sync_now()
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

    def _sync_later(self) -> None:
        """Under the lock: make sure a batch fsync comes within BATCH_FSYNC_S."""
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


# --- loading ---------------------------------------------------------------------------------


class _Envelope(BaseModel):
    """What every line of a fabwiz log has, whatever its event type (validated at load)."""

    model_config = ConfigDict(extra="allow")

    seq: int
    type: str
    at: float


@dataclass(frozen=True, slots=True)
class LoadedSession:
    """A session log as read from disk: the events in order, and what was odd about it."""

    path: Path  # the events.jsonl
    events: tuple[Event, ...]
    seqs: tuple[int, ...]
    torn_tail: bool = False  # the last line was cut mid-write (it is not in `events`)
    torn_text: str = ""  # what was left of it
    warnings: tuple[str, ...] = ()
    good_bytes: int = 0  # bytes of the file up to the end of the last complete event

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def started(self) -> SessionStarted:
        first = self.events[0]
        assert isinstance(first, SessionStarted)
        return first

    @property
    def session_id(self) -> str:
        return self.started.session_id

    @property
    def last_seq(self) -> int:
        return self.seqs[-1] if self.seqs else 0

    def state(self) -> SessionState:
        return SessionState.from_events(self.events)

    def lab_state(self) -> dict[str, Any] | None:
        """The saved `lab-state.json` beside the log, if any."""
        p = self.folder / LAB_STATE_NAME
        if not p.exists():
            return None
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SessionLogError(f"{p}: unreadable lab state: {exc}") from exc
        if not isinstance(data, dict):
            raise SessionLogError(f"{p}: the lab state is not a JSON object")
        return data


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


def _not_a_log(path: Path, why: str) -> SessionLogError:
    return SessionLogError(
        f"{path} is not a fabwiz session log: {why}",
        hint="give the events.jsonl written by fabwiz (or its session folder)",
    )


def load_session(session: Path | str) -> LoadedSession:
    """Read a session log. A torn last line is dropped and flagged; a log written with a newer
    log format is refused; anything that is not a fabwiz log gets a SessionLogError."""
    path = resolve_session_path(session)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SessionLogError(f"cannot read {path}: {exc.strerror or exc}") from exc

    # Split keeping byte offsets, so a resume can cut exactly after the last good line.
    lines: list[tuple[int, bytes, bool]] = []  # (end offset, content, had newline)
    start = 0
    while start < len(raw):
        nl = raw.find(b"\n", start)
        if nl == -1:
            lines.append((len(raw), raw[start:], False))
            break
        lines.append((nl + 1, raw[start:nl], True))
        start = nl + 1

    parsed: list[tuple[int, dict[str, Any] | None, str]] = []  # (end offset, record, error)
    for end, content, _had_nl in lines:
        text = content.decode("utf-8", "replace").strip()
        if not text or set(text) <= {"\x00"}:
            parsed.append((end, None, "empty"))
            continue
        try:
            obj = json.loads(text)
            _Envelope.model_validate(obj)
        except (ValueError, ValidationError) as exc:
            parsed.append((end, None, str(exc).splitlines()[0]))
            continue
        parsed.append((end, obj, ""))

    good_idx = [i for i, (_e, rec, _err) in enumerate(parsed) if rec is not None]
    if not good_idx:
        if len(lines) == 1 and lines[0][1].startswith(b'{"seq": 1, "type": "session_started"'):
            raise SessionLogError(
                f"{path} holds only a torn first line: the session stopped before anything "
                "was recorded",
                hint="there is nothing to resume or report; start a new session",
            )
        if raw.strip(b"\x00 \n\r\t"):
            raise _not_a_log(path, "no line is a fabwiz event record")
        raise _not_a_log(path, "the file is empty")

    first = parsed[good_idx[0]][1]
    assert first is not None
    if good_idx[0] != 0:
        raise _not_a_log(path, f"line 1 is not an event record ({parsed[0][2]})")
    if first.get("type") != SessionStarted.type:
        raise _not_a_log(path, f"it starts with {first.get('type')!r}, not a session start")
    version = first.get("log_version")
    if not isinstance(version, int):
        raise _not_a_log(path, "the session start has no log_version")
    if version > LOG_VERSION:
        raise SessionLogError(
            f"{path} was written by fabwiz {first.get('fabwiz_version', '?')} with session log "
            f"version {version}; this fabwiz ({__version__}) reads log versions up to "
            f"{LOG_VERSION}",
            hint="upgrade fabwiz (pip install -U fabwiz) to open this session",
        )

    last_good = good_idx[-1]
    warnings: list[str] = []
    for i in range(last_good):
        if parsed[i][1] is None and parsed[i][2] != "empty":
            raise SessionLogError(
                f"{path}: line {i + 1} is damaged ({parsed[i][2]}) in the middle of the log",
                hint="only the last line of a log can be torn by a crash; the file was altered",
            )

    tail = lines[last_good + 1 :]
    torn_text = b"\n".join(c for _e, c, _n in tail).decode("utf-8", "replace").strip("\x00\n ")
    torn = bool(torn_text)

    events: list[Event] = []
    seqs: list[int] = []
    for i in good_idx:
        rec = parsed[i][1]
        assert rec is not None
        seq = int(rec["seq"])
        if seqs and seq <= seqs[-1]:
            warnings.append(f"line {i + 1}: seq {seq} does not follow {seqs[-1]} (doubled?)")
        elif seqs and seq != seqs[-1] + 1:
            warnings.append(f"line {i + 1}: seq jumps from {seqs[-1]} to {seq} (lost events?)")
        if rec["type"] not in EVENT_TYPES:
            warnings.append(f"line {i + 1}: unknown event type {rec['type']!r} skipped")
            continue
        body = {k: v for k, v in rec.items() if k != "seq"}
        try:
            event = event_from_json(body)
        except (KeyError, TypeError, ValueError) as exc:
            raise SessionLogError(
                f"{path}: line {i + 1}: a {rec['type']} record is malformed ({exc})",
                hint="the log was altered or written by an incompatible build",
            ) from exc
        events.append(event)
        seqs.append(seq)
    if torn:
        warnings.append(
            f"the last line was cut mid-write ({len(torn_text)} characters): "
            "the session stopped abruptly; everything before it is loaded"
        )
    return LoadedSession(
        path=path,
        events=tuple(events),
        seqs=tuple(seqs),
        torn_tail=torn,
        torn_text=torn_text,
        warnings=tuple(warnings),
        good_bytes=parsed[last_good][0],
    )


# --- the fold --------------------------------------------------------------------------------

FixStatus = Literal["previewed", "applied", "verified", "verify_failed", "rolled_back"]


@dataclass(slots=True)
class FixRecord:
    """One fix of the session by `fix_id`, with what happened to it so far."""

    fix_id: str
    step: str
    fault: str
    target: str
    summary: str = ""
    preview: str = ""
    bounces_links: bool = False
    status: FixStatus = "previewed"
    export: str | None = None
    rollback_armed: str | None = None
    verified_ok: bool | None = None
    verify_detail: str = ""
    rollback_reason: str = ""
    restored: bool = False
    previewed_at: float | None = None
    applied_at: float | None = None
    finished_at: float | None = None

    @property
    def applied(self) -> bool:
        """The change reached the target (whatever came after): never send it again."""
        return self.applied_at is not None


@dataclass(slots=True)
class RollbackRecord:
    """A dead-man rollback armed on a switch (scheduler entry) or a host (timer)."""

    name: str
    fix_id: str
    target: str
    step: str
    window_s: float
    script: str
    armed_at: float
    disarmed_at: float | None = None

    @property
    def armed(self) -> bool:
        return self.disarmed_at is None


@dataclass(frozen=True, slots=True)
class MeasurementRecord:
    step: str
    at: float
    measurement: Measurement


@dataclass(frozen=True, slots=True)
class BeforeAfter:
    """First and last valid measurement of one target (a rail, a pair, or the NCCL cluster)."""

    target: str
    kind: str
    unit: str
    before: MeasurementRecord
    after: MeasurementRecord | None  # None when the target was measured only once

    @property
    def delta(self) -> float | None:
        if self.after is None:
            return None
        return self.after.measurement.value - self.before.measurement.value


@dataclass(slots=True)
class SessionState:
    """Everything a session knows, rebuilt from its events in order (`from_events`, `apply`).

    The engine resumes from it: `step`/`phase` say where it stopped, `fixes` which changes went
    out (never resend an `applied` one), `answers` what the operator already said,
    `pending_physical` what the hands were asked to do, `transitions`/`drains` feed the drain
    guard (`undrained_nodes`).
    """

    started: SessionStarted | None = None
    ended: SessionEnded | None = None
    resumes: list[SessionResumed] = field(default_factory=list)
    events: int = 0
    step: str | None = None
    phase: str | None = None
    step_order: list[str] = field(default_factory=list)  # steps in the order first entered
    step_phases: dict[str, str] = field(default_factory=dict)  # step -> last phase
    verdicts: dict[str, list[Verdict]] = field(default_factory=dict)  # step -> in order
    fixes: dict[str, FixRecord] = field(default_factory=dict)  # fix_id -> record
    refused: list[FixRefusedEvent] = field(default_factory=list)
    exports: list[ExportTaken] = field(default_factory=list)
    rollbacks: dict[str, RollbackRecord] = field(default_factory=dict)  # name -> record
    answers: list[OperatorAnswered] = field(default_factory=list)
    physical_requested: list[PhysicalActionRequested] = field(default_factory=list)
    physical_done: list[PhysicalActionDone] = field(default_factory=list)
    transitions: dict[str, list[Transition]] = field(default_factory=dict)  # node -> in order
    drains: dict[str, list[NodeDrained]] = field(default_factory=dict)  # node -> in order
    measurements: list[MeasurementRecord] = field(default_factory=list)
    probes: dict[tuple[str, str, str], ProbeResult] = field(default_factory=dict)
    pending_probes: dict[tuple[str, str], ProbeSent] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> SessionState:
        state = cls()
        for ev in events:
            state.apply(ev)
        return state

    @property
    def session_id(self) -> str:
        return self.started.session_id if self.started else ""

    def apply(self, ev: Event) -> None:
        """Fold one event into the state (the same events, in the same order, give the same
        state: the engine can apply live events and a resume rebuilds them from the log)."""
        if not type(ev).persist:
            return
        self.events += 1
        if isinstance(ev, SessionStarted):
            self.started = ev
        elif isinstance(ev, SessionResumed):
            self.resumes.append(ev)
            self.ended = None
        elif isinstance(ev, SessionEnded):
            self.ended = ev
        elif isinstance(ev, StepChanged):
            if ev.step not in self.step_phases:
                self.step_order.append(ev.step)
            self.step, self.phase = ev.step, ev.phase
            self.step_phases[ev.step] = ev.phase
        elif isinstance(ev, ProbeSent):
            self.pending_probes[(ev.step, ev.target)] = ev
        elif isinstance(ev, ProbeAnswered):
            self.probes[(ev.step, ev.result.target, ev.probe)] = ev.result
            self.pending_probes.pop((ev.step, ev.result.target), None)
        elif isinstance(ev, VerdictReached):
            self.verdicts.setdefault(ev.step, []).append(ev.verdict)
        elif isinstance(ev, MeasurementTaken):
            self.measurements.append(MeasurementRecord(ev.step, ev.at, ev.measurement))
        elif isinstance(ev, OperatorAnswered):
            self.answers.append(ev)
        elif isinstance(ev, PhysicalActionRequested):
            self.physical_requested.append(ev)
        elif isinstance(ev, PhysicalActionDone):
            self.physical_done.append(ev)
        elif isinstance(ev, LinkTransitionSeen):
            self.transitions.setdefault(ev.node, []).append(Transition(ev.node, ev.at, ev.cause))
        elif isinstance(ev, NodeDrained):
            self.drains.setdefault(ev.node, []).append(ev)
        elif isinstance(ev, ExportTaken):
            self.exports.append(ev)
        elif isinstance(ev, FixPreviewed):
            rec = self.fixes.get(ev.fix_id)
            if rec is None or rec.status == "rolled_back":
                # A new attempt of a fix that was rolled back starts over.
                self.fixes[ev.fix_id] = FixRecord(
                    fix_id=ev.fix_id,
                    step=ev.step,
                    fault=ev.fault,
                    target=ev.target,
                    summary=ev.summary,
                    preview=ev.preview,
                    bounces_links=ev.bounces_links,
                    previewed_at=ev.at,
                )
            else:
                rec.summary, rec.preview, rec.bounces_links = (
                    ev.summary,
                    ev.preview,
                    ev.bounces_links,
                )
        elif isinstance(ev, FixApplied):
            rec = self._fix(ev.fix_id, ev.step, ev.fault, ev.target)
            rec.status = "applied"
            rec.applied_at = ev.at
            rec.export = ev.export
            rec.rollback_armed = ev.rollback_armed or rec.rollback_armed
        elif isinstance(ev, FixVerified):
            rec = self._fix(ev.fix_id, ev.step, ev.fault, "")
            rec.status = "verified" if ev.ok else "verify_failed"
            rec.verified_ok = ev.ok
            rec.verify_detail = ev.detail
            rec.finished_at = ev.at
        elif isinstance(ev, FixRolledBack):
            rec = self._fix(ev.fix_id, ev.step, ev.fault, "")
            rec.status = "rolled_back"
            rec.rollback_reason = ev.reason
            rec.restored = ev.restored
            rec.finished_at = ev.at
        elif isinstance(ev, RollbackArmed):
            self.rollbacks[ev.name] = RollbackRecord(
                name=ev.name,
                fix_id=ev.fix_id,
                target=ev.target,
                step=ev.step,
                window_s=ev.window_s,
                script=ev.script,
                armed_at=ev.at,
            )
            self._fix(ev.fix_id, ev.step, "", ev.target).rollback_armed = ev.name
        elif isinstance(ev, RollbackDisarmed):
            rb = self.rollbacks.get(ev.name)
            if rb is not None:
                rb.disarmed_at = ev.at
        elif isinstance(ev, FixRefusedEvent):
            self.refused.append(ev)
        elif isinstance(ev, Note):
            self.notes.append(ev)

    def _fix(self, fix_id: str, step: str, fault: str, target: str) -> FixRecord:
        rec = self.fixes.get(fix_id)
        if rec is None:
            rec = FixRecord(fix_id=fix_id, step=step, fault=fault, target=target)
            self.fixes[fix_id] = rec
        return rec

    # -- questions the engine asks on resume

    @property
    def done_steps(self) -> list[str]:
        """Steps whose last phase is done or skipped, in the order entered."""
        return [s for s in self.step_order if self.step_phases.get(s) in ("done", "skipped")]

    @property
    def armed_rollbacks(self) -> list[RollbackRecord]:
        """Rollbacks armed and not disarmed: on a crash they fire, or must be disarmed."""
        return [r for r in self.rollbacks.values() if r.armed]

    def pending_rollbacks(self) -> list[tuple[str, str, str, bool]]:
        """(fix_id, target, name, fix verified) of every armed rollback, as `Resume` takes them:
        a verified fix's rollback is to be disarmed, an unverified one left to run."""
        out = []
        for r in self.armed_rollbacks:
            fix = self.fixes.get(r.fix_id)
            out.append((r.fix_id, r.target, r.name, bool(fix and fix.status == "verified")))
        return out

    def fixes_with_status(self, *statuses: FixStatus) -> list[FixRecord]:
        return [f for f in self.fixes.values() if f.status in statuses]

    @property
    def applied_fix_ids(self) -> set[str]:
        """Fixes whose change went out (applied, verified, failed or rolled back)."""
        return {f.fix_id for f in self.fixes.values() if f.applied}

    @property
    def unfinished_fixes(self) -> list[FixRecord]:
        """Applied but neither verified nor rolled back: the session stopped mid-fix."""
        return self.fixes_with_status("applied")

    def latest_verdicts(self, step: str | None = None) -> dict[str, Verdict]:
        """The last verdict per fault id (of one step, or over the whole session)."""
        out: dict[str, Verdict] = {}
        steps = [step] if step is not None else list(self.verdicts)
        for s in steps:
            for v in self.verdicts.get(s, []):
                out.pop(v.fault, None)  # keep insertion order = order last judged
                out[v.fault] = v
        return out

    def answer(self, step: str, question: str) -> str | None:
        """The operator's last answer to this question at this step, if already asked."""
        for a in reversed(self.answers):
            if a.step == step and a.question == question:
                return a.answer
        return None

    @property
    def answers_by_question(self) -> dict[tuple[str, str], str]:
        return {(a.step, a.question): a.answer for a in self.answers}

    @property
    def pending_physical(self) -> list[PhysicalActionRequested]:
        """Physical actions asked for and not reported done (matched by step, kind and nodes)."""
        done = [(d.step, d.kind, frozenset(d.nodes)) for d in self.physical_done]
        out: list[PhysicalActionRequested] = []
        for r in self.physical_requested:
            key = (r.step, r.kind, frozenset(r.nodes))
            if key in done:
                done.remove(key)
            else:
                out.append(r)
        return out

    @property
    def drained_at(self) -> dict[str, float]:
        """Node -> time of its last AC drain (for `flows.base.Context.drained_at`)."""
        return {node: ds[-1].at for node, ds in self.drains.items() if ds}

    @property
    def all_transitions(self) -> tuple[Transition, ...]:
        """Every link transition in time order (for `flows.base.Context.transitions`)."""
        return tuple(sorted((t for ts in self.transitions.values() for t in ts), key=_at))

    def needs_drain(self, node: str) -> bool:
        """True when a link transition on `node` came after its last AC drain: a bandwidth
        result of this node is not evidence (`process.undrained-measurement`)."""
        ts = self.transitions.get(node)
        if not ts:
            return False
        last_drain = self.drained_at.get(node)
        return last_drain is None or ts[-1].at > last_drain

    def undrained_nodes(self) -> list[str]:
        return sorted(n for n in self.transitions if self.needs_drain(n))

    def before_after(self) -> list[BeforeAfter]:
        """Per measured target: the first and the last valid measurement (per-rail Gb/s,
        NCCL busbw), in the order targets were first measured."""
        firsts: dict[str, MeasurementRecord] = {}
        lasts: dict[str, MeasurementRecord] = {}
        for rec in self.measurements:
            if not rec.measurement.valid:
                continue
            key = rec.measurement.target
            if key not in firsts:
                firsts[key] = rec
            else:
                lasts[key] = rec
        return [
            BeforeAfter(
                target=key,
                kind=first.measurement.kind,
                unit=first.measurement.unit,
                before=first,
                after=lasts.get(key),
            )
            for key, first in firsts.items()
        ]

    @property
    def invalid_measurements(self) -> list[MeasurementRecord]:
        return [m for m in self.measurements if not m.measurement.valid]

    def probe(self, step: str, target: str, probe: str) -> ProbeResult | None:
        return self.probes.get((step, target, probe))


def _at(t: Transition) -> float:
    return t.at


__all__ = [
    "LAB_STATE_NAME",
    "LOG_NAME",
    "LOG_VERSION",
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
