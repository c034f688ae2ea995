"""`wizard.turns.Turns`: synchronous pieces (a node's batch said or taken in, a check judged) run
a time slice of the event loop at a time, first come first served: 64 nodes answering together
no longer hold a TUI's loop for the whole lot, and within a slice nothing waits."""

from __future__ import annotations

import asyncio
import itertools

from wizard.turns import Turns


async def _run(turns: Turns, pieces: int, other: list[str]) -> list[str]:
    """`pieces` tasks, each taking a turn then running a piece; `other` records, in between,
    when the loop ran something else (a screen's keys and repaints, in the TUI)."""
    order: list[str] = []

    async def piece(i: int) -> None:
        await turns.take()
        order.append(f"piece {i}")
        other.append(f"piece {i}")

    async def meanwhile() -> None:
        while True:
            other.append("loop")
            await asyncio.sleep(0)

    watcher = asyncio.ensure_future(meanwhile())
    await asyncio.sleep(0)
    await asyncio.gather(*(piece(i) for i in range(pieces)))
    watcher.cancel()
    return order


async def test_once_the_slice_is_spent_each_piece_waits_for_its_own_turn_in_order() -> None:
    other: list[str] = []
    order = await _run(Turns(slice_s=0.0), 5, other)  # a slice of no time: one piece a turn
    assert order == [f"piece {i}" for i in range(5)]  # first come, first served
    pieces = [i for i, what in enumerate(other) if what.startswith("piece")]
    # the loop ran something else between any two pieces
    assert all(b - a > 1 for a, b in itertools.pairwise(pieces))


async def test_within_a_slice_the_pieces_run_at_once() -> None:
    other: list[str] = []
    order = await _run(Turns(slice_s=60.0), 5, other)
    assert order == [f"piece {i}" for i in range(5)]
    pieces = [i for i, what in enumerate(other) if what.startswith("piece")]
    assert pieces == list(range(pieces[0], pieces[0] + 5))  # one after the other, no wait


async def test_a_waiter_cancelled_gives_its_turn_to_the_next() -> None:
    turns = Turns(slice_s=0.0)
    ran: list[int] = []

    async def piece(i: int) -> None:
        await turns.take()
        ran.append(i)

    tasks = [asyncio.ensure_future(piece(i)) for i in range(4)]
    await asyncio.sleep(0)  # all four waiting (or the first through)
    tasks[1].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert ran == [0, 2, 3]
