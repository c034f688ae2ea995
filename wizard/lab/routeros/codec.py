"""RouterOS API wire codec: word lengths, words and sentences.

The API frames every word with a 1-4 byte big-endian length prefix (routeros-api.md 1.2) and
ends a sentence with a zero-length word. librouteros cannot send or parse the 5-byte (0xF0)
form, and a first byte >= 0xF8 is a reserved control byte, so a first byte >= 0xF0 is treated
as a protocol error here, as librouteros does.
"""

from __future__ import annotations

import asyncio

__all__ = [
    "ProtocolViolation",
    "decode_length_prefix",
    "encode_length",
    "encode_sentence",
    "encode_word",
    "read_sentence",
]

_MAX_LEN = 0xFFFFFFF


class ProtocolViolation(Exception):
    """The peer sent bytes the RouterOS API does not allow (bad length or control byte)."""


def encode_length(length: int) -> bytes:
    """Encode a word length in the 1-4 byte form."""
    if length < 0:
        raise ProtocolViolation(f"negative length {length}")
    if length <= 0x7F:
        return length.to_bytes(1, "big")
    if length <= 0x3FFF:
        return (length | 0x8000).to_bytes(2, "big")
    if length <= 0x1FFFFF:
        return (length | 0xC00000).to_bytes(3, "big")
    if length <= _MAX_LEN:
        return (length | 0xE0000000).to_bytes(4, "big")
    raise ProtocolViolation(f"word of {length} bytes is too long for the API")


def decode_length_prefix(first: int) -> int:
    """How many more bytes follow a length whose first byte is `first`."""
    if first < 0x80:
        return 0
    if first < 0xC0:
        return 1
    if first < 0xE0:
        return 2
    if first < 0xF0:
        return 3
    raise ProtocolViolation(f"control byte {first:#04x} is not supported")


def _decode_length(raw: bytes) -> int:
    value = int.from_bytes(raw, "big")
    masks = {1: 0x7F, 2: 0x3FFF, 3: 0x1FFFFF, 4: 0xFFFFFFF}
    return value & masks[len(raw)]


def encode_word(word: str) -> bytes:
    data = word.encode("utf-8")
    return encode_length(len(data)) + data


def encode_sentence(words: list[str] | tuple[str, ...]) -> bytes:
    return b"".join(encode_word(w) for w in words) + b"\x00"


async def _read_word(reader: asyncio.StreamReader) -> str:
    first = await reader.readexactly(1)
    extra = decode_length_prefix(first[0])
    raw = first + (await reader.readexactly(extra) if extra else b"")
    length = _decode_length(raw)
    if length == 0:
        return ""
    data = await reader.readexactly(length)
    return data.decode("utf-8", errors="replace")


async def read_sentence(reader: asyncio.StreamReader) -> list[str]:
    """Read one non-empty sentence (empty sentences are skipped, as RouterOS does).

    Raises asyncio.IncompleteReadError at end of stream and ProtocolViolation on bad bytes.
    """
    while True:
        words: list[str] = []
        while True:
            word = await _read_word(reader)
            if word == "":
                break
            words.append(word)
        if words:
            return words
