"""asyncssh, imported once and lean: what its import does that a client of GB10 nodes never needs.

Two parts of asyncssh's import cost more than the rest of it together and give fabwiz nothing:

- looking for its optional C libraries (liboqs for the post-quantum sntrup761 key exchange,
  nettle for the umac MACs) with `ctypes.util.find_library`, which on Linux runs `ldconfig -p`,
  then `gcc` and `ld` when a library is absent (tens of milliseconds of child processes on every
  start). Here the same libraries are looked for in the dynamic linker's directories
  (`LD_LIBRARY_PATH`, `/etc/ld.so.conf`, the standard ones): found or not, asyncssh offers
  exactly the algorithms it would have.
- its X.509 certificate support, which loads `cryptography.x509` and its name tables and then
  needs pyOpenSSL (not a fabwiz dependency: without it asyncssh has no X.509 either way). OpenSSH
  has no X.509 host keys or user certificates (OpenSSH certificates are a different format,
  unaffected), so asyncssh is imported without it; the module is not blocked afterwards.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["SKIPPED_MODULES", "find_shared_library", "library_dirs", "load_asyncssh"]

SKIPPED_MODULES = ("asyncssh.crypto.x509",)
_STANDARD_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib")


def _ld_conf_dirs(conf: Path, depth: int = 0) -> Iterator[str]:
    """The directories named by an ld.so.conf file, following its `include` globs."""
    try:
        lines = conf.read_text(errors="replace").splitlines()
    except OSError:
        return
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("include") and depth < 4:
            for pattern in line.split()[1:]:
                base = Path("/") if pattern.startswith("/") else conf.parent
                for inc in sorted(base.glob(pattern.lstrip("/"))):
                    yield from _ld_conf_dirs(inc, depth + 1)
        elif line.startswith("/"):
            yield line


def library_dirs(etc: Path = Path("/etc")) -> list[str]:
    """Where the dynamic linker looks: LD_LIBRARY_PATH, ld.so.conf, the standard directories."""
    env = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    return list(dict.fromkeys([*env, *_ld_conf_dirs(etc / "ld.so.conf"), *_STANDARD_DIRS]))


def _listing(d: str, cache: dict[str, list[str]]) -> list[str]:
    """A directory's names, read once per lookup (os.listdir: pathlib costs ~0.1 s over
    /usr/lib's thousands of entries, and usrmerge lists the same directory twice)."""
    key = os.path.realpath(d)
    if key not in cache:
        try:
            cache[key] = os.listdir(key)  # noqa: PTH208  # speed, see above
        except OSError:
            cache[key] = []
    return cache[key]


def find_shared_library(
    name: str, dirs: list[str] | None = None, cache: dict[str, list[str]] | None = None
) -> str | None:
    """The path of `lib<name>.so*` in the linker's directories (what find_library would name),
    without running a child process; None when it is not installed."""
    prefix = f"lib{name}.so"
    for d in library_dirs() if dirs is None else dirs:
        # the versioned name (the soname the loader uses) before a -dev package's bare .so
        names = _listing(d, {} if cache is None else cache)
        found = sorted(
            (f for f in names if f == prefix or f.startswith(prefix + ".")), key=lambda f: -len(f)
        )
        if found:
            return str(Path(d) / found[0])
    return None


@contextmanager
def _quick_library_lookup() -> Iterator[None]:
    import ctypes.util

    original: Callable[[str], str | None] = ctypes.util.find_library
    dirs = library_dirs()
    cache: dict[str, list[str]] = {}

    def find_library(name: str) -> str | None:
        return find_shared_library(name, dirs, cache)

    setattr(ctypes.util, "find_library", find_library)  # noqa: B010  # typed as the original
    try:
        yield
    finally:
        setattr(ctypes.util, "find_library", original)  # noqa: B010


@contextmanager
def _without(modules: tuple[str, ...]) -> Iterator[None]:
    blocked = [m for m in modules if m not in sys.modules]
    for m in blocked:
        sys.modules[m] = None  # type: ignore[assignment]  # `import m` raises ImportError
    try:
        yield
    finally:
        for m in blocked:
            if sys.modules.get(m, 0) is None:
                del sys.modules[m]


def load_asyncssh() -> Any:
    """asyncssh, imported on the first call (later calls return the loaded module)."""
    loaded = sys.modules.get("asyncssh")
    if loaded is not None:
        return loaded
    with _quick_library_lookup(), _without(SKIPPED_MODULES):
        import asyncssh
    return asyncssh
