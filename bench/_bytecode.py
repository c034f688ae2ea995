"""Compile fabwiz's own modules to bytecode before timing anything, as an install does.

With PYTHONDONTWRITEBYTECODE set (as on this project's build machine) nothing is cached: every
run would compile the ~150 modules of wizard/, flows/ and screens/ from source again, some
0.1 s of CPU an installed fabwiz never spends. Installed packages (asyncssh, pydantic, textual)
were compiled by pip already.
"""

from __future__ import annotations

import compileall
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def compile_fabwiz() -> None:
    for pkg in ("wizard", "flows", "screens"):
        compileall.compile_dir(ROOT / pkg, quiet=1)
