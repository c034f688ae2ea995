"""Where a start finds its modules: one file read instead of ~470 searches and ~470 file reads.

`fabwiz check` imports ~470 modules and the TUI ~800. For each one, Python's path finder walks
`sys.path` (or the package's folder), stats and opens the module's `.pyc`, checks its header
against the source's time and size, and reads it: about a tenth of a check's start-up CPU, the
same work on every start. This keeps, per module found the usual way (a `.py` file through the
standard source loader), where it was found and its compiled code, in one file that is mapped
into memory on start.

A module is taken from here only when the usual search would find the same file with the same
content:
- its name is looked for where it was found before: the same `sys.path` (every folder on it
  unchanged since, so no new module can shadow it), or the same package folder;
- the folder holding it has not changed since (nothing was added, removed or renamed there: a
  package or extension module of the same name would come first);
- the source file's modification time (to the nanosecond) and size are the ones its code was
  compiled from (a `.pyc` compares whole seconds and size).
Anything else (another file, a changed one, a folder that changed, a module served by another
finder, a zip, an extension, a namespace package) is found and loaded exactly as without this
cache, and the code that loading compiles or reads is kept for the next start. Modules keep
their usual `__file__`, `__cached__`, `__path__` and loader (a `SourceFileLoader`), so source
lines in tracebacks, `inspect` and `importlib.resources` behave as before.

The file lives beside the start-up code cache (`screens.codecache`: under `$XDG_CACHE_HOME/
fabwiz`, one per interpreter version), is read only if it belongs to this user and nobody else
may write it (its code runs), and is written atomically. `FABWIZ_CODE_CACHE=off` turns it off
with the other start-up caches. This module imports only what Python has loaded before any of
fabwiz runs, so that the cache can serve every import after it (click, asyncio, asyncssh...).
"""

from __future__ import annotations

import _thread
import marshal
import os
import sys

# the import system's own classes (importlib.machinery re-exports them), from the modules
# Python has loaded before any of fabwiz: importlib, typing and threading are then served
# from the cache too
from _frozen_importlib import ModuleSpec  # type: ignore[import-not-found]
from _frozen_importlib_external import PathFinder, SourceFileLoader  # type: ignore[import-not-found]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType
    from typing import Any
else:
    CodeType = type((lambda: None).__code__)

__all__ = ["ImportCache", "default_path", "install", "save", "uninstall"]

FORMAT = 1
MAGIC = b"fabwiz-imports\n"
MAX_ENTRIES = 4000  # past this many (modules of older versions), a save keeps the used ones
_HEADER = len(MAGIC) + 8  # the magic, then the index's length

# name -> (origin, is package, folder looked in, its mtime_ns, source mtime_ns, size,
#          the code's offset in the file's body, its length)
Entry = tuple[str, bool, str, int, int, int, int, int]


class _Loader(SourceFileLoader):
    """The standard source loader, handed the module's code when the cache holds it; either
    way the code it runs is kept for the next start."""

    def __init__(self, name: str, path: str, cache: ImportCache, code: Any = None) -> None:
        super().__init__(name, path)
        self._cache = cache
        self._code = code  # marshalled code from the cache's file, or None

    def get_code(self, fullname: str) -> CodeType:  # type: ignore[override]  # never None here
        data, self._code = self._code, None
        if data is not None:
            try:
                code = marshal.loads(data)  # noqa: S302  # ours: the file's owner and mode checked
            except (EOFError, ValueError, TypeError):
                code = None
            if isinstance(code, CodeType):
                return code
        code = super().get_code(fullname)
        assert code is not None  # a source file always compiles to code (or raises)
        self._cache.remember(fullname, self.path, code)
        return code


class ImportCache:
    """A finder placed just before the path finder: the modules it knows, else the path
    finder's answer (and what that loads, remembered)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries: dict[str, Entry] = {}
        self.body: Any = b""  # the file's code section (mapped), which entries point into
        self.fresh: dict[str, tuple[Entry, bytes]] = {}  # learned in this process
        self.used: set[str] = set()
        self.hits = 0
        self._sys_path: list[str] | None = None  # the sys.path the file's entries were found on
        self._folders: dict[str, int | None] = {}  # folder -> its mtime_ns now (once a process)
        self._lock = _thread.allocate_lock()

    # --- reading ---------------------------------------------------------------------------

    def load(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return
        try:
            st = os.fstat(fd)
            # its code runs in this process: only a file of ours that nobody else can change
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return
            head = os.read(fd, _HEADER)
            if len(head) != _HEADER or not head.startswith(MAGIC):
                return
            size = int.from_bytes(head[len(MAGIC) :], "little")
            if size > st.st_size - _HEADER:
                return
            index = marshal.loads(os.read(fd, size))  # noqa: S302  # ours: owner and mode checked
            if not isinstance(index, dict) or index.get("v") != FORMAT:
                return
            if index.get("optimize") != sys.flags.optimize:
                return
            entries, sys_path = index.get("entries"), index.get("path")
            if not isinstance(entries, dict) or not isinstance(sys_path, list):
                return
            body = _map(fd, _HEADER + size, st.st_size)
        except (OSError, EOFError, ValueError, TypeError, OverflowError, MemoryError):
            return  # unreadable: imports go as without the cache
        finally:
            os.close(fd)
        if body is None:
            return
        self.entries, self.body = entries, body
        # the entries found on sys.path hold while every folder on it is as it was
        folders = index.get("folders")
        if sys_path == sys.path and folders == [self._mtime(p) for p in sys_path]:
            self._sys_path = list(sys_path)

    def _mtime(self, folder: str) -> int | None:
        found = self._folders.get(folder, 0)
        if found == 0:
            try:
                found = os.stat(folder or ".").st_mtime_ns
            except OSError:
                found = None
            self._folders[folder] = found
        return found

    def _hit(self, name: str, path: Any) -> ModuleSpec | None:
        entry = self.entries.get(name)
        if entry is None:
            return None
        origin, is_package, folder, folder_mtime, mtime, size, offset, length = entry
        if path is None:  # a top-level name: looked for along sys.path
            if self._sys_path is None or sys.path != self._sys_path:
                return None
        elif list(path) != [folder]:  # a submodule: looked for in its package's one folder
            return None
        if self._mtime(folder) != folder_mtime:
            return None
        try:
            st = os.stat(origin)
        except OSError:
            return None
        if st.st_mtime_ns != mtime or st.st_size != size:
            return None
        data = memoryview(self.body)[offset : offset + length]
        if len(data) != length:
            return None
        self.hits += 1
        self.used.add(name)
        return _spec(name, origin, is_package, _Loader(name, origin, self, data))

    # --- the finder ------------------------------------------------------------------------

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        hit = self._hit(name, path)
        if hit is not None:
            return hit
        spec = PathFinder.find_spec(name, path, target)
        if (
            spec is not None
            and type(spec.loader) is SourceFileLoader
            and spec.origin is not None
            and spec.origin.endswith(".py")
            and spec.has_location
        ):
            # what the path finder found, loaded by the same loader that remembers its code
            spec.loader = _Loader(name, spec.origin, self)
        return spec

    def invalidate_caches(self) -> None:
        self._folders.clear()

    # --- learning and writing --------------------------------------------------------------

    def remember(self, name: str, origin: str, code: CodeType) -> None:
        try:
            st = os.stat(origin)
            data = marshal.dumps(code)
        except (OSError, ValueError):
            return
        is_package = os.path.basename(origin) == "__init__.py"
        home = os.path.dirname(origin)
        folder = os.path.dirname(home) if is_package else home
        mtime = self._mtime(folder)
        if mtime is None:
            return
        entry: Entry = (origin, is_package, folder, mtime, st.st_mtime_ns, st.st_size, 0, 0)
        with self._lock:
            self.fresh[name] = (entry, data)
            self.used.add(name)

    def save(self) -> None:
        """Write what this process learned, with what the file held (atomically; silently not
        at all on error)."""
        with self._lock:
            if not self.fresh:
                return
            fresh, self.fresh = self.fresh, {}
            kept = {k: v for k, v in self.entries.items() if k not in fresh}
            if len(kept) + len(fresh) > MAX_ENTRIES:
                kept = {k: v for k, v in kept.items() if k in self.used}
        parts: list[bytes] = []
        entries: dict[str, Entry] = {}
        offset = 0
        body = memoryview(self.body)
        for name, (origin, pkg, folder, fmtime, mtime, size, off, length) in kept.items():
            chunk = bytes(body[off : off + length])
            entries[name] = (origin, pkg, folder, fmtime, mtime, size, offset, length)
            parts.append(chunk)
            offset += length
        for name, ((origin, pkg, folder, fmtime, mtime, size, _o, _l), data) in fresh.items():
            entries[name] = (origin, pkg, folder, fmtime, mtime, size, offset, len(data))
            parts.append(data)
            offset += len(data)
        index = marshal.dumps(
            {
                "v": FORMAT,
                "optimize": sys.flags.optimize,
                "path": list(sys.path),
                "folders": [self._mtime(p) for p in sys.path],
                "entries": entries,
            }
        )
        folder = os.path.dirname(self.path)
        head = MAGIC + len(index).to_bytes(8, "little") + index
        tmp = os.path.join(folder, f".imports-{os.getpid()}-{os.urandom(6).hex()}")
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError:
            return
        try:
            with os.fdopen(os.dup(fd), "wb") as f:
                f.write(head)
                for part in parts:
                    f.write(part)
            # the entries now point into the file just written (a later save keeps them)
            body = _map(fd, len(head), len(head) + offset)
            os.replace(tmp, self.path)
        except OSError:
            with _suppressed():
                os.unlink(tmp)
            return
        finally:
            os.close(fd)
        if body is not None:
            with self._lock:
                self.entries, self.body = entries, body


class _suppressed:
    """contextlib.suppress(OSError), without importing contextlib at start."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        return kind is not None and issubclass(kind, OSError)


def _map(fd: int, start: int, end: int) -> Any:
    """The file's bytes from `start` to `end`, mapped (read on first touch) where possible."""
    if end < start:
        return None
    if end == start:
        return b""
    try:
        import mmap

        whole = mmap.mmap(fd, end, access=mmap.ACCESS_READ)
    except (ImportError, OSError, ValueError):
        os.lseek(fd, start, os.SEEK_SET)
        data = b""
        while len(data) < end - start:
            chunk = os.read(fd, end - start - len(data))
            if not chunk:
                return None
            data += chunk
        return data
    return memoryview(whole)[start:end]


def _spec(name: str, origin: str, is_package: bool, loader: _Loader) -> ModuleSpec:
    """The spec the path finder would have made for this file."""
    spec = ModuleSpec(name, loader, origin=origin, is_package=is_package)
    spec.has_location = True
    if is_package:
        spec.submodule_search_locations = [os.path.dirname(origin)]
    return spec


_ACTIVE: ImportCache | None = None


def default_path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    version = ".".join(map(str, sys.version_info[:3]))
    return os.path.join(base, "fabwiz", f"imports-{sys.implementation.cache_tag}-{version}.bin")


def install(path: str | None = None) -> ImportCache | None:
    """Put the cache just before the path finder (once per process)."""
    global _ACTIVE
    if _ACTIVE is not None:
        return _ACTIVE
    if os.environ.get("FABWIZ_CODE_CACHE", "").lower() in ("off", "0", "no"):
        return None
    if PathFinder not in sys.meta_path:  # an unusual interpreter: leave its imports alone
        return None
    cache = ImportCache(path or default_path())
    cache.load()
    sys.meta_path.insert(sys.meta_path.index(PathFinder), cache)  # type: ignore[arg-type]
    _ACTIVE = cache
    return cache


def save() -> None:
    if _ACTIVE is not None:
        _ACTIVE.save()


def uninstall() -> None:
    """Imports as without the cache again (tests)."""
    global _ACTIVE
    if _ACTIVE is not None and _ACTIVE in sys.meta_path:
        sys.meta_path.remove(_ACTIVE)  # type: ignore[arg-type]
    _ACTIVE = None
