"""Reading a session log: the events in order, a torn last line flagged, a newer format refused."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard import __version__, codec
from wizard.errors import SessionLogError
from wizard.events import EVENT_TYPES, Event, SessionStarted, event_from_json
from wizard.session.files import LAB_STATE_NAME, LOG_VERSION, resolve_session_path
from wizard.session.fold import SessionState


@dataclass(frozen=True, slots=True)
class _Envelope:
    """What every line of a fabwiz log has, whatever its event type (validated at load)."""

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


def _not_a_log(path: Path, why: str) -> SessionLogError:
    return SessionLogError(
        f"{path} is not a fabwiz session log: {why}",
        hint="give the events.jsonl written by fabwiz (or its session folder)",
    )


_Line = tuple[int, bytes]  # (end offset, content without its newline)
_Parsed = tuple[int, dict[str, Any] | None, str]  # (end offset, record, error)


def load_session(session: Path | str) -> LoadedSession:
    """Read a session log. A torn last line is dropped and flagged; a log written with a newer
    log format is refused; anything that is not a fabwiz log gets a SessionLogError."""
    path = resolve_session_path(session)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SessionLogError(f"cannot read {path}: {exc.strerror or exc}") from exc
    lines = _split_lines(raw)
    parsed = [_parse_line(end, content) for end, content in lines]
    good_idx = [i for i, (_e, rec, _err) in enumerate(parsed) if rec is not None]
    if not good_idx:
        raise _nothing_loadable(path, raw, lines)
    _check_start(path, parsed, good_idx[0])
    last_good = good_idx[-1]
    for i in range(last_good):
        if parsed[i][1] is None and parsed[i][2] != "empty":
            raise SessionLogError(
                f"{path}: line {i + 1} is damaged ({parsed[i][2]}) in the middle of the log",
                hint="only the last line of a log can be torn by a crash; the file was altered",
            )
    tail = lines[last_good + 1 :]
    torn_text = b"\n".join(c for _e, c in tail).decode("utf-8", "replace").strip("\x00\n ")
    events, seqs, warnings = _decode_records(path, parsed, good_idx)
    if torn_text:
        warnings.append(
            f"the last line was cut mid-write ({len(torn_text)} characters): "
            "the session stopped abruptly; everything before it is loaded"
        )
    return LoadedSession(
        path=path,
        events=tuple(events),
        seqs=tuple(seqs),
        torn_tail=bool(torn_text),
        torn_text=torn_text,
        warnings=tuple(warnings),
        good_bytes=parsed[last_good][0],
    )


def _split_lines(raw: bytes) -> list[_Line]:
    """Split keeping byte offsets, so a resume can cut exactly after the last good line."""
    lines: list[_Line] = []
    start = 0
    while start < len(raw):
        nl = raw.find(b"\n", start)
        if nl == -1:
            lines.append((len(raw), raw[start:]))
            break
        lines.append((nl + 1, raw[start:nl]))
        start = nl + 1
    return lines


def _parse_line(end: int, content: bytes) -> _Parsed:
    text = content.decode("utf-8", "replace").strip()
    if not text or set(text) <= {"\x00"}:
        return (end, None, "empty")
    try:
        obj = json.loads(text)
        codec.decode(_Envelope, obj)
    except ValueError as exc:
        return (end, None, str(exc).splitlines()[0])
    return (end, obj, "")


def _nothing_loadable(path: Path, raw: bytes, lines: list[_Line]) -> SessionLogError:
    if len(lines) == 1 and lines[0][1].startswith(b'{"seq": 1, "type": "session_started"'):
        return SessionLogError(
            f"{path} holds only a torn first line: the session stopped before anything "
            "was recorded",
            hint="there is nothing to resume or report; start a new session",
        )
    if raw.strip(b"\x00 \n\r\t"):
        return _not_a_log(path, "no line is a fabwiz event record")
    return _not_a_log(path, "the file is empty")


def _check_start(path: Path, parsed: list[_Parsed], first_idx: int) -> None:
    """The first line is a session start of a log version this build reads."""
    first = parsed[first_idx][1]
    assert first is not None
    if first_idx != 0:
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


def _decode_records(
    path: Path, parsed: list[_Parsed], good_idx: list[int]
) -> tuple[list[Event], list[int], list[str]]:
    """The events of the good lines, their seqs, and a warning per odd seq or unknown type."""
    events: list[Event] = []
    seqs: list[int] = []
    warnings: list[str] = []
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
    return events, seqs, warnings
