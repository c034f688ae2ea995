"""The RouterOS API's words as fabwiz writes and reads them: a switch's address and credentials
(`RouterOsTarget`), the UTF-8 wire codec, and the small conversions of API words."""

from __future__ import annotations

import asyncio
import codecs
import logging
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from librouteros import protocol as ros_protocol
from librouteros.exceptions import ConnectionClosed, FatalError, ProtocolError

from wizard.model import ProbeResult

__all__ = [
    "FILE_CHUNK",
    "READ_ONLY",
    "WIRE_ENCODING",
    "RouterOsTarget",
    "api_attrs",
    "brief",
    "parse_words",
    "read_sentence",
    "wire_value",
    "with_fields",
    "word_int",
]

# librouteros decodes with the ASCII codec and errors="ignore": a comment "café" would come back
# as "caf" and a rollback would write that back. Words are UTF-8 on the wire (as WinBox and the
# CLI write them); a byte that is not UTF-8 becomes U+FFFD, visibly, and a change that would have
# to write such a value back is refused (wizard/rosquote.py) rather than corrupting it.
WIRE_ENCODING = "fabwiz-routeros-utf8"


def _wire_codec(name: str) -> codecs.CodecInfo | None:
    if name.replace("_", "-") != WIRE_ENCODING:
        return None
    utf8 = codecs.lookup("utf-8")

    def decode(data: Any, errors: str = "strict", /) -> tuple[str, int]:
        return codecs.utf_8_decode(data, "replace", True)

    return codecs.CodecInfo(utf8.encode, decode, name=WIRE_ENCODING)


codecs.register(_wire_codec)

FILE_CHUNK = 32768
READ_ONLY = frozenset({"print", "getall", "monitor"})


@dataclass(frozen=True, slots=True)
class RouterOsTarget:
    name: str
    host: str
    user: str
    password: str
    port: int | None = None
    tls: bool = False
    ca_file: str | None = None  # verify API-SSL against this CA; None: the system CAs
    timeout_s: float = 10.0
    tls_fingerprint: str | None = None  # pinned certificate (sha256:...)
    tls_anonymous: bool = False  # RouterOS' certificate-less api-ssl, by explicit opt-in

    @property
    def api_port(self) -> int:
        return self.port or (8729 if self.tls else 8728)

    @property
    def where(self) -> str:
        return f"{self.host}:{self.api_port}"

    @classmethod
    def from_spec(cls, spec: Any, password: str) -> RouterOsTarget:
        """From an inventory `SwitchSpec` and its resolved password."""
        tls = spec.tls
        detail = tls if not isinstance(tls, bool) else None
        return cls(
            name=spec.name,
            host=spec.host,
            user=spec.user,
            password=password,
            port=spec.port,
            tls=bool(tls),
            ca_file=(getattr(detail, "ca_file", None) or spec.ca_file),
            timeout_s=spec.timeout_s,
            tls_fingerprint=getattr(detail, "fingerprint", None),
            tls_anonymous=bool(getattr(detail, "anonymous", False)),
        )


def brief(word: str, limit: int = 80) -> str:
    """One word as shown in a message: a scheduler script or a file body on one short line."""
    flat = " ".join(word.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def api_attrs(items: Iterable[tuple[str, str]]) -> list[str]:
    return [f"={k}={wire_value(v)}" for k, v in items]


def wire_value(value: object) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return str(value)


def parse_words(words: Iterable[str]) -> dict[str, str]:
    """The `=key=value` words of a sentence as a mapping (`.tag` and the like left out; a key
    without `=value` maps to "")."""
    pairs = [word[1:].partition("=") for word in words if word[:1] == "="]
    return {key: value for key, _, value in pairs}


def word_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


def with_fields(r: ProbeResult, **kw: Any) -> ProbeResult:
    return replace(r, **kw)


async def read_sentence(protocol: Any) -> tuple[str, tuple[str, ...]]:
    """librouteros' `readSentence` for fabwiz's wire codec, read off its stream in chunks: the
    same words, the same end (the first empty word), the same errors and timeout, without
    three coroutine layers and two reads per word, a task per sentence and a debug line built
    per word (a switch's print is thousands of words). What a chunk holds past the sentence
    is kept for the next one: after the login every read of the session comes here. Another
    codec, or a transport that is not an asyncio stream, is left to librouteros."""
    reader = getattr(protocol.transport, "reader", None)
    if protocol.encoding != WIRE_ENCODING or not isinstance(reader, asyncio.StreamReader):
        reply: tuple[str, tuple[str, ...]] = await protocol.readSentence()
        return reply
    pending = _PENDING.setdefault(protocol, bytearray())
    found = _sentence(pending)
    if found is None:  # only then is there anything to wait for
        async with asyncio.timeout(protocol.timeout):
            while (found := _sentence(pending)) is None:
                chunk = await reader.read(_CHUNK)
                if not chunk:
                    raise ConnectionClosed("Connection unexpectedly closed.")
                pending += chunk
    end, spans = found
    sentence = _words(pending, spans)
    del pending[:end]
    if ros_protocol.LOGGER.isEnabledFor(logging.DEBUG):
        ros_protocol.log("--->", *sentence)
    reply_word, rest = sentence[0], sentence[1:]
    if reply_word == "!fatal":
        await protocol.transport.close()
        raise FatalError(rest[0])
    return reply_word, rest


_CHUNK = 65536
# what arrived past the last sentence read, by session (gone with the session)
_PENDING: weakref.WeakKeyDictionary[Any, bytearray] = weakref.WeakKeyDictionary()


def _word_at(data: bytearray, pos: int) -> tuple[int, int] | None:
    """(where the word at `pos` starts, its length), None when its length is not all here."""
    first = data[pos]
    if first < 0x80:
        return pos + 1, first
    if first < 0xC0:
        more, mask = 1, 0x8000
    elif first < 0xE0:
        more, mask = 2, 0xC00000
    elif first < 0xF0:
        more, mask = 3, 0xE0000000
    else:
        raise ProtocolError(f"Unknown controll byte {bytes([first])!r}")
    if pos + 1 + more > len(data):
        return None
    return pos + 1 + more, int.from_bytes(data[pos : pos + 1 + more], "big") ^ mask


def _sentence(data: bytearray) -> tuple[int, list[tuple[int, int]]] | None:
    """Where the first whole sentence in `data` ends (after its empty word) and where each of
    its words is (start, length); None when it has not all arrived."""
    pos, size = 0, len(data)
    spans: list[tuple[int, int]] = []
    while pos < size:
        first = data[pos]
        if first < 0x80:  # most words: a one-byte length
            start, length = pos + 1, first
        else:
            word = _word_at(data, pos)
            if word is None:
                return None
            start, length = word
        if length == 0:
            return start, spans
        spans.append((start, length))
        pos = start + length
    return None


def _decode(word: bytearray) -> str:
    """A word as the wire codec decodes it."""
    return codecs.utf_8_decode(word, "replace", True)[0]


def _words(data: bytearray, spans: list[tuple[int, int]]) -> tuple[str, ...]:
    """The words at `spans` of `data`, decoded as the wire codec decodes each: in one call for
    the sentence (its words joined by NUL, which ends any unfinished UTF-8 sequence before it
    as the end of a word does), word by word when a word holds a NUL itself."""
    if len(spans) < 2:
        return tuple(_decode(data[start : start + length]) for start, length in spans)
    joined = b"\0".join([data[start : start + length] for start, length in spans])
    words = codecs.utf_8_decode(joined, "replace", True)[0].split("\0")
    if len(words) != len(spans):  # a NUL inside a word
        return tuple(_decode(data[start : start + length]) for start, length in spans)
    return tuple(words)
