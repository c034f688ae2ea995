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


async def _read(stream: Any, cap: int) -> tuple[bytes, int]:
    kept = bytearray()
    total = 0
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            break
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8", "surrogateescape")
        total += len(chunk)
        room = cap - len(kept)
        if room > 0:
            kept += chunk[:room]
    return bytes(kept), total


def _decode(kept: bytes, total: int, cap: int) -> str:
    text = kept.decode("utf-8", "replace")
    return text + mark(cap, total) if total > len(kept) else text


async def run_capped(conn: Any, command: str, stdin: str | None, cap: int) -> Capped:
    """Run `command` on an asyncssh connection, keeping at most `cap` bytes of each stream."""
    proc = await conn.create_process(command, encoding=None)
    try:
        if stdin:
            proc.stdin.write(stdin.encode("utf-8"))
        proc.stdin.write_eof()
        (out, out_total), (err, err_total) = await asyncio.gather(
            _read(proc.stdout, cap), _read(proc.stderr, cap)
        )
        done = await proc.wait(check=False)
    finally:
        proc.close()
    return Capped(
        stdout=_decode(out, out_total, cap),
        stderr=_decode(err, err_total, cap),
        exit_status=done.exit_status,
        exit_signal=done.exit_signal,
        truncated=out_total > len(out) or err_total > len(err),
    )
