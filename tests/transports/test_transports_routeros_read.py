"""`read_sentence` reads a RouterOS API reply off the stream exactly as librouteros'
`readSentence` does: compared, byte for byte, on the same wire input."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from librouteros.connections import AsyncSocketTransport
from librouteros.exceptions import ConnectionClosed, FatalError, ProtocolError
from librouteros.protocol import AsyncApiProtocol, encode_length

from wizard.transports.routeros_wire import WIRE_ENCODING, read_sentence


class _Writer:
    closed = False

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        return None


def _protocol(
    data: bytes, timeout: float | None = 5.0, encoding: str = WIRE_ENCODING
) -> AsyncApiProtocol:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    transport = AsyncSocketTransport(reader, _Writer())  # type: ignore[arg-type]
    return AsyncApiProtocol(transport, encoding, timeout)


def _word(raw: bytes) -> bytes:
    return encode_length(len(raw)) + raw


async def _both(data: bytes, encoding: str = WIRE_ENCODING) -> tuple[Any, Any]:
    """What librouteros and read_sentence make of the same bytes: every sentence, or the
    error that ended the reading."""

    async def drain(read: Any, proto: AsyncApiProtocol) -> list[Any]:
        out: list[Any] = []
        for _ in range(10):
            try:
                out.append(await read(proto))
            except (ConnectionClosed, FatalError, ProtocolError, IndexError) as exc:
                out.append((type(exc).__name__, str(exc)))
                break
        return out

    theirs = await drain(lambda p: p.readSentence(), _protocol(data, encoding=encoding))
    ours = await drain(read_sentence, _protocol(data, encoding=encoding))
    return theirs, ours


SENTENCES = {
    "rows": _word(b"!re")
    + _word(b"=name=qsfp56-dd-1-1")
    + _word(b"=comment=caf\xc3\xa9")
    + b"\x00"
    + _word(b"!done")
    + b"\x00",
    # lengths in every encoding: 1, 2, 3 bytes
    "long words": _word(b"!re")
    + _word(b"=a=" + b"x" * 200)
    + _word(b"=b=" + b"y" * 20000)
    + _word(b"=c=" + b"z" * 0x200001)
    + b"\x00",
    "invalid utf-8": _word(b"!re") + _word(b"=v=\xff\xfeok") + b"\x00",
    # a sentence is decoded in one call: what ends one word must not run into the next
    "utf-8 cut at a word's end": _word(b"!re")
    + _word(b"=a=caf\xc3")
    + _word(b"\xa9=b=x")
    + _word(b"=c=\xe2\x82")
    + _word(b"=d=\xf0\x9f\x98")
    + b"\x00",
    "a NUL inside a word": _word(b"!re") + _word(b"=a=x\x00y") + _word(b"=b=\x00") + b"\x00",
    "fatal": _word(b"!fatal") + _word(b"session terminated on request") + b"\x00",
    "cut short": _word(b"!re") + _word(b"=name=ether1")[:5],
    "no end": _word(b"!re") + _word(b"=name=ether1"),
    "bad control byte": _word(b"!re") + b"\xf8abcd",
    "two-byte zero length ends the sentence": _word(b"!re")
    + b"\x80\x00"
    + _word(b"!done")
    + b"\x00",
    "empty sentence": b"\x00",
    "trap": _word(b"!trap") + _word(b"=message=no such item") + b"\x00" + _word(b"!done") + b"\x00",
}


@pytest.mark.parametrize("name", sorted(SENTENCES))
async def test_the_same_words_and_errors_as_librouteros(name: str) -> None:
    theirs, ours = await _both(SENTENCES[name])
    assert ours == theirs
    assert ours  # every case reads something or fails in a named way


@pytest.mark.parametrize("name", ["rows", "invalid utf-8", "fatal"])
async def test_another_encoding_decodes_as_librouteros_does(name: str) -> None:
    theirs, ours = await _both(SENTENCES[name] + _word(b"\xe9\xe9") + b"\x00", encoding="ascii")
    assert ours == theirs


async def test_a_reply_reads_as_its_words() -> None:
    proto = _protocol(SENTENCES["rows"])
    assert await read_sentence(proto) == ("!re", ("=name=qsfp56-dd-1-1", "=comment=café"))
    assert await read_sentence(proto) == ("!done", ())


async def test_a_silent_switch_times_out() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(_word(b"!re"))  # then nothing
    proto = AsyncApiProtocol(
        AsyncSocketTransport(reader, _Writer()),  # type: ignore[arg-type]
        WIRE_ENCODING,
        0.05,
    )
    with pytest.raises(TimeoutError):
        await read_sentence(proto)


async def test_fatal_closes_the_transport() -> None:
    proto = _protocol(SENTENCES["fatal"])
    with pytest.raises(FatalError, match="session terminated"):
        await read_sentence(proto)
    assert proto.transport.writer.closed  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["rows", "long words", "trap", "fatal"])
async def test_a_reply_that_trickles_in_reads_the_same(name: str) -> None:
    """Bytes that arrive a few at a time (a sentence cut anywhere, even inside a length)."""
    data = SENTENCES[name]
    reader = asyncio.StreamReader()
    proto = AsyncApiProtocol(
        AsyncSocketTransport(reader, _Writer()),  # type: ignore[arg-type]
        WIRE_ENCODING,
        5.0,
    )

    async def trickle() -> None:
        step = 3 if len(data) < 1000 else 4093
        for i in range(0, len(data), step):
            reader.feed_data(data[i : i + step])
            await asyncio.sleep(0)
        reader.feed_eof()

    feeding = asyncio.create_task(trickle())
    got: list[Any] = []
    for _ in range(10):
        try:
            got.append(await read_sentence(proto))
        except (ConnectionClosed, FatalError) as exc:
            got.append((type(exc).__name__, str(exc)))
            break
    await feeding
    theirs, _ours = await _both(data)
    assert got == theirs


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=12), min_size=1, max_size=6))
def test_any_words_decode_as_librouteros_decodes_them(words: list[bytes]) -> None:
    """Bytes of any kind in any word (cut UTF-8, NULs, U+FFFD itself): the same words."""
    data = _word(b"!re") + b"".join(_word(w) for w in words) + b"\x00"
    theirs, ours = asyncio.run(_both(data))
    assert ours == theirs
