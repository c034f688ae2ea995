"""How fast this machine runs Python, printed beside the figures: the README's figures and a
reader's own are only comparable at the same speed (the same 2-core kind of machine has been
seen to run the same code 1.6x slower from one day to the next)."""

from __future__ import annotations

import statistics
import subprocess
import sys

_LOOP = "import time\nt = time.perf_counter()\ns = 0\nfor i in range(3_000_000): s += i\n"
_LOOP += "print(time.perf_counter() - t)"


def reference_seconds(runs: int = 5) -> float:
    """The median time of a fixed CPython loop (3 million additions), each in a fresh process."""
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _LOOP], capture_output=True, text=True, check=True
        ).stdout
        times.append(float(out))
    return statistics.median(times)


def describe() -> str:
    return (
        f"machine: a reference loop (3M CPython additions) takes {reference_seconds():.3f} s "
        "(figures scale with it)"
    )
