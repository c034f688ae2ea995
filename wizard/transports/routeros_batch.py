"""One RouterOS API reply as it is read, and several commands in flight on one session.

A command that carries `.tag=X` gets `.tag=X` on every sentence of its reply, and the replies of
commands running at once on one session interleave (routeros-api.md 1.3 and the MikroTik API
doc's example there: `!done .tag=3` arrives between the `!re .tag=2` of a running `listen`). So
a sweep's dozen reads of one switch are sent together, each tagged, and their replies read in
whatever order they come: one round trip instead of twelve. A reply is kept up to the transport's caps; what is past them
is still read off the wire (the session stays in step) and reported as cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from librouteros.exceptions import ConnectionClosed, MultiTrapError, TrapError

from wizard.transports.capped import api_mark
from wizard.transports.routeros_wire import parse_words, read_sentence

__all__ = ["Reply", "pipelined"]


class Reply:
    """The rows of one command's reply, read sentence by sentence until its `!done`."""

    def __init__(self, max_rows: int, max_bytes: int) -> None:
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.rows: list[dict[str, str]] = []
        self.traps: list[TrapError] = []
        self.kept = self.total = self.total_rows = 0
        self.full = False
        self.done = False

    def feed(self, reply: str, raw: Sequence[str]) -> bool:
        """One sentence of this reply; True when it was the last (`!done`)."""
        attrs = parse_words(raw)
        carries_row = reply == "!re" or (reply == "!done" and bool(attrs))
        if carries_row:
            size = len("".join(raw).encode("utf-8", "surrogateescape")) + len(raw)
            self.total += size
            self.total_rows += 1
            self.full = (
                self.full or len(self.rows) >= self.max_rows or self.kept + size > self.max_bytes
            )
            if not self.full:
                self.kept += size
                self.rows.append(attrs)
        elif reply == "!trap":
            category = attrs.get("category")
            self.traps.append(
                TrapError(
                    attrs.get("message", "trap"),
                    int(category) if category and category.isdigit() else None,
                )
            )
        self.done = reply == "!done"
        return self.done

    def result(self) -> tuple[list[dict[str, str]], str]:
        """The rows kept and a truncation mark ("" when whole); a refusal raises its trap(s)."""
        if len(self.traps) > 1:
            raise MultiTrapError(*self.traps)
        if self.traps:
            raise self.traps[0]
        cut = ""
        if self.total_rows > len(self.rows):
            cut = api_mark(len(self.rows), self.total_rows, self.kept, self.total)
        return self.rows, cut


def _untagged(raw: Sequence[str]) -> tuple[str | None, tuple[str, ...]]:
    """The sentence's tag, and its words without it (a reply's size is its content's, as
    when it was sent alone)."""
    tag = None
    words = []
    for word in raw:
        if word.startswith(".tag="):
            tag = word[5:]
        else:
            words.append(word)
    return tag, tuple(words)


async def pipelined(
    protocol: Any, commands: Sequence[tuple[str, list[str]]], replies: Sequence[Reply]
) -> None:
    """Send every (command, words) at once, each tagged with its index, and read until each of
    `replies` (one per command) has its `!done`; on a timeout or a failure the caller sees which
    did. A sentence without a known tag breaks the session's framing: the session is not trusted
    further (ConnectionClosed, as for a cut connection)."""
    for i, (cmd, words) in enumerate(commands):
        await protocol.writeSentence(cmd, *words, f".tag={i}")
    waiting = len(commands)
    while waiting:
        reply_word, tagged = await read_sentence(protocol)
        tag, raw = _untagged(tagged)
        index = int(tag) if tag is not None and tag.isdigit() else -1
        if not 0 <= index < len(replies) or replies[index].done:
            raise ConnectionClosed(f"a reply tagged {tag!r} that no command in flight carries")
        if replies[index].feed(reply_word, raw):
            waiting -= 1
