"""The API length codec against librouteros' own vectors (routeros-api.md 1.2)."""

from __future__ import annotations

import asyncio

import pytest
from librouteros.protocol import encode_word as lib_encode_word

from wizard.lab.routeros.codec import (
    ProtocolViolation,
    decode_length_prefix,
    encode_length,
    encode_sentence,
    read_sentence,
)


@pytest.mark.parametrize(
    ("length", "raw"),
    [
        (0, "00"),
        (127, "7f"),
        (130, "8082"),
        (256, "8100"),
        (0x3FFF, "bfff"),
        (0x4000, "c04000"),
        (2097140, "dffff4"),
        (0x200000, "e0200000"),
        (268435440, "effffff0"),
    ],
)
def test_length_vectors(length: int, raw: str) -> None:
    assert encode_length(length).hex() == raw


def test_long_word_matches_librouteros() -> None:
    word = "=comment=" + "x" * 300
    assert encode_sentence([word])[:-1] == lib_encode_word(word, "ASCII")


@pytest.mark.parametrize("first", [0xF0, 0xF8, 0xFF])
def test_control_bytes_are_protocol_errors(first: int) -> None:
    with pytest.raises(ProtocolViolation):
        decode_length_prefix(first)


def test_five_byte_length_refused() -> None:
    with pytest.raises(ProtocolViolation):
        encode_length(0x10000000)


async def test_read_sentence_skips_empty_sentences() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(
        b"\x00" + encode_sentence(["/login", "=name=admin"]) + b"\x81\x00" + b"=" * 256
    )
    assert await read_sentence(reader) == ["/login", "=name=admin"]
    reader.feed_data(b"\x00")
    assert await read_sentence(reader) == ["=" * 256]


async def test_read_sentence_rejects_f0() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(b"\xf0\x00\x00\x00\x01a\x00")
    with pytest.raises(ProtocolViolation):
        await read_sentence(reader)
