"""A remote command's output, read with a cap: a probe that prints 100 MB costs at most the cap
in memory, the rest is drained (so the exit status is still real) and a truncation mark says how
much was left out.

The cap is per stream of one probe: `FABWIZ_PROBE_OUTPUT_MB` (default 4 MiB), or the
transport's `output_cap` attribute. A RouterOS API reply is capped the same way, in bytes (the
same setting) and in rows (`FABWIZ_API_ROWS`, default 100000), and so is a switch file read with
`/file/read`; a reply cut short is an error naming what was kept, never a silent partial answer.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_CAP",
    "DEFAULT_ROWS",
    "Capped",
    "OutputWatch",
    "api_mark",
    "cap_from_env",
    "mark",
    "rows_from_env",
    "run_capped",
]

DEFAULT_CAP = 4 * 1024 * 1024
DEFAULT_ROWS = 100_000
_CHUNK = 256 * 1024


def cap_from_env() -> int:
    raw = os.environ.get("FABWIZ_PROBE_OUTPUT_MB", "")
    try:
        mb = float(raw)
    except ValueError:
        return DEFAULT_CAP
    return max(64 * 1024, int(mb * 1024 * 1024)) if mb > 0 else DEFAULT_CAP


def rows_from_env() -> int:
    """Rows kept of one RouterOS API reply: `FABWIZ_API_ROWS`, default 100000."""
    raw = os.environ.get("FABWIZ_API_ROWS", "")
    try:
        rows = int(raw)
    except ValueError:
        return DEFAULT_ROWS
    return max(100, rows) if rows > 0 else DEFAULT_ROWS


def api_mark(rows: int, total_rows: int, size: int, total_size: int) -> str:
    """What a capped API reply says: how much arrived, how much was kept, and the settings."""
    return (
        f"reply truncated: {total_rows} rows ({total_size} bytes) arrived, only the first "
        f"{rows} rows ({size} bytes) kept (caps FABWIZ_API_ROWS, FABWIZ_PROBE_OUTPUT_MB); "
        "the evidence is incomplete: narrow the query or raise the caps"
    )


def mark(kept: int, total: int) -> str:
    return (
        f"\n[fabwiz: output truncated: {total} bytes, only the first {kept} kept "
        f"(cap FABWIZ_PROBE_OUTPUT_MB={kept / 1048576:g})]\n"
    )


@dataclass(frozen=True, slots=True)
class Capped:
    stdout: str
    stderr: str
    exit_status: int | None
    exit_signal: Any
    truncated: bool


class _Stream:
    """One stream of a remote command: the first `cap` bytes kept, every byte counted."""

    __slots__ = ("cap", "kept", "total")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += data[:room]

    def text(self) -> str:
        return _decode(bytes(self.kept), self.total, self.cap)


class OutputWatch:
    """Waits for a text on a running command's stdout (a server saying it listens): `seen` is
    set when it has come, across the chunks it arrived in."""

    __slots__ = ("_needle", "_tail", "seen")

    def __init__(self, text: str) -> None:
        self._needle = text.encode("utf-8")
        self._tail = b""
        self.seen = asyncio.Event()

    def feed(self, data: bytes) -> None:
        if self.seen.is_set():
            return
        window = self._tail + data
        if self._needle in window:
            self.seen.set()
            self._tail = b""
            return
        self._tail = window[len(window) - len(self._needle) + 1 :] if self._needle else b""


class _Collector:
    """The session side of one remote command: its output goes straight into two capped
    buffers as the channel delivers it (no stream readers, no task per stream), and the
    command's end (the channel closing) resolves `done`. A `watch` sees stdout as it comes."""

    def __init__(self, cap: int, watch: OutputWatch | None = None) -> None:
        self.stdout = _Stream(cap)
        self.stderr = _Stream(cap)
        self.watch = watch
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, chan: Any) -> None:
        pass

    def session_started(self) -> None:
        pass

    def data_received(self, data: bytes, datatype: int | None) -> None:
        if datatype is None:
            self.stdout.feed(data)
            if self.watch is not None:
                self.watch.feed(data)
        else:
            self.stderr.feed(data)

    def eof_received(self) -> bool:
        return True  # stay half open: the exit status and the close follow

    def pause_writing(self) -> None:
        pass

    def resume_writing(self) -> None:
        pass

    def exit_status_received(self, status: int) -> None:
        pass  # the channel keeps it (`get_exit_status`)

    def exit_signal_received(self, signal: str, core_dumped: bool, msg: str, lang: str) -> None:
        pass  # the channel keeps it (`get_exit_signal`)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.done.done():
            return
        if exc is None:
            self.done.set_result(None)
        else:
            self.done.set_exception(exc)


def _decode(kept: bytes, total: int, cap: int) -> str:
    text = kept.decode("utf-8", "replace")
    return text + mark(cap, total) if total > len(kept) else text


async def run_capped(
    conn: Any, command: str, stdin: str | None, cap: int, watch: OutputWatch | None = None
) -> Capped:
    """Run `command` on an asyncssh connection, keeping at most `cap` bytes of each stream;
    its stdin is `stdin`, then closed; `watch` sees its stdout as it comes. A channel that
    breaks raises asyncssh's error."""
    collector = _Collector(cap, watch)
    chan, _session = await conn.create_session(lambda: collector, command, encoding=None)
    try:
        if stdin:
            chan.write(stdin.encode("utf-8"))
        chan.write_eof()
        await collector.done
    finally:
        if not collector.done.done():
            collector.done.cancel()  # given up (a timeout): a late end has no one to tell
        chan.close()
    out, err = collector.stdout, collector.stderr
    return Capped(
        stdout=out.text(),
        stderr=err.text(),
        exit_status=chan.get_exit_status(),  # -1 for a signal, None when neither came
        exit_signal=chan.get_exit_signal(),
        truncated=out.total > len(out.kept) or err.total > len(err.kept),
    )
