"""fabwiz (or a probe script) in its own Python process, as a user starts it: from the checkout,
output captured, no terminal on stdin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python ARGS...` run from the checkout (`-m screens.cli ...` is the `fabwiz` command)."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )
