"""The lab's sshd forwards a command's output as OpenSSH's does: one packet per pipe read."""

from __future__ import annotations

import asyncio

from wizard.lab.sshd import PIPE_CHUNK, PipeWriter


async def test_a_burst_of_lines_goes_out_as_one_write_and_later_output_as_another() -> None:
    sent: list[str] = []
    out = PipeWriter(sent.append)
    for i in range(100):
        out(f"line {i}\n")
    assert sent == []  # still in the pipe: sshd reads it at the next turn of the loop
    await asyncio.sleep(0)
    assert sent == ["".join(f"line {i}\n" for i in range(100))]
    out("later\n")
    out.flush()
    assert sent[1:] == ["later\n"]


async def test_a_big_burst_is_sent_in_chunks_of_at_most_32_kib() -> None:
    sent: list[str] = []
    out = PipeWriter(sent.append)
    out("x" * (PIPE_CHUNK * 2 + 5))
    out.flush()
    assert [len(s) for s in sent] == [PIPE_CHUNK, PIPE_CHUNK, 5]


async def test_output_for_a_client_gone_is_dropped_not_raised() -> None:
    tried: list[str] = []

    def closed(text: str) -> None:
        tried.append(text)
        raise BrokenPipeError

    out = PipeWriter(closed)
    out("nobody reads this\n")
    out.flush()  # dropped, as sshd drops the output of a session whose client went away
    out.flush()  # and not sent twice
    assert tried == ["nobody reads this\n"]
