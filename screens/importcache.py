"""Where a start finds its modules: one file read instead of ~470 searches and ~470 file reads.

`fabwiz check` imports ~470 modules and the TUI ~800. For each one, Python's path finder walks
`sys.path` (or the package's folder), stats and opens the module's `.pyc`, checks its header
against the source's time and size, and reads it: about a tenth of a check's start-up CPU, the
same work on every start. This keeps, per module found the usual way (a `.py` file through the
standard source loader), where it was found and its compiled code, in one file that is mapped
into memory on start.

A module is taken from here only when the usual search would find the same file with the same
content:
- the folders searched before it, and the one holding it, are the same as when it was found
  (the start of `sys.path` for a top-level name, its package's folder for a submodule), and
  none of them has changed since: nothing was added, removed or renamed there, so no module,
  package or extension of the same name can come first;
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

FORMAT = 2
MAGIC = b"fabwiz-imports\n"
MAX_ENTRIES = 4000  # past this many (modules of older versions), a save keeps the used ones
_HEADER = len(MAGIC) + 8  # the magic, then the index's length

# the folders searched for a name up to the one it was found in, each with its mtime_ns then
Where = tuple[tuple[str, int], ...]
# name -> (origin, is package, where, source mtime_ns, size, the code's offset in the file's
#          body, its length)
Entry = tuple[str, bool, Where, int, int, int, int]


class _Loader(SourceFileLoader):
    """The standard source loader, handed the module's code when the cache holds it; either
    way the code it runs is kept for the next start."""

    def __init__(
        self, name: str, path: str, cache: ImportCache, code: Any = None, where: Where = ()
    ) -> None:
        super().__init__(name, path)
        self._cache = cache
        self._code = code  # marshalled code from the cache's file, or None
        self._where = where  # how the path finder found it (a miss), to be remembered

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
        if self._where:
            self._cache.remember(fullname, self.path, self._where, code)
        return code


class ImportCache:
    """A finder placed just before the path finder: the modules it knows, else the path
    finder's answer (and what that loads, remembered)."""

    def __init__(self, path: str) -> None:
        self.path = path
        # the entries and the file's code section (mapped) they point into, swapped as one (an
        # import in another thread reads them while a save replaces them)
        self.table: tuple[dict[str, Entry], Any] = ({}, b"")
        self.fresh: dict[str, tuple[Entry, bytes]] = {}  # learned in this process
        self.used: set[str] = set()
        self.hits = 0
        self._folders: dict[str, int] = {}  # folder -> its mtime_ns now (once a process), or -1
        self._lock = _thread.allocate_lock()  # the learned entries
        self._saving = _thread.allocate_lock()  # one save at a time (it reads the last one's table)

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
            entries = index.get("entries")
            if not isinstance(entries, dict):
                return
            body = _map(fd, _HEADER + size, st.st_size)
        except (OSError, EOFError, ValueError, TypeError, OverflowError, MemoryError):
            return  # unreadable: imports go as without the cache
        finally:
            os.close(fd)
        if body is None:
            return
        self.table = (entries, body)

    def _mtime(self, folder: str) -> int:
        """When `folder` (or a zip on sys.path) last changed; -1 while it does not exist (it can
        then hold nothing: created later, it has another time)."""
        found = self._folders.get(folder)
        if found is None:
            try:
                found = os.stat(folder).st_mtime_ns
            except (OSError, ValueError):
                found = -1
            self._folders[folder] = found
        return found

    @property
    def entries(self) -> dict[str, Entry]:
        return self.table[0]

    def _hit(self, name: str, path: Any) -> ModuleSpec | None:
        entries, body = self.table
        entry = entries.get(name)
        if entry is None:
            return None
        origin, is_package, where, mtime, size, offset, length = entry
        searched = sys.path if path is None else path  # a top-level name, or a submodule
        if len(searched) < len(where):
            return None
        for (folder, folder_mtime), now in zip(where, searched, strict=False):
            if folder != now or self._mtime(folder) != folder_mtime:
                return None
        try:
            st = os.stat(origin)
        except OSError:
            return None
        if st.st_mtime_ns != mtime or st.st_size != size:
            return None
        data = memoryview(body)[offset : offset + length]
        if len(data) != length:
            return None
        self.hits += 1
        self.used.add(name)
        # `where` too: code that does not unmarshal is read the usual way and replaced
        return _spec(name, origin, is_package, _Loader(name, origin, self, data, where))

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
            where = self._where(spec.origin, sys.path if path is None else path)
            if where:
                # loaded by the same loader, which remembers the code for the next start
                spec.loader = _Loader(name, spec.origin, self, where=where)
        return spec

    def _where(self, origin: str, searched: Any) -> Where:
        """The folders the path finder searched up to the one holding `origin` (a module, or a
        package's `__init__.py`), with their times now; () when that folder is not one of them
        as written (a relative or unusual entry: not cached)."""
        home = os.path.dirname(origin)
        folder = os.path.dirname(home) if os.path.basename(origin) == "__init__.py" else home
        try:
            searched = list(searched)
            k = searched.index(folder)
        except ValueError:
            return ()
        if not all(isinstance(p, str) and p for p in searched[: k + 1]):
            return ()  # the current folder ('') or something else than a path: not cached
        return tuple((p, self._mtime(p)) for p in searched[: k + 1])

    def invalidate_caches(self) -> None:
        self._folders.clear()

    # --- learning and writing --------------------------------------------------------------

    def remember(self, name: str, origin: str, where: Where, code: CodeType) -> None:
        try:
            st = os.stat(origin)
            data = marshal.dumps(code)
        except (OSError, ValueError):
            return
        is_package = os.path.basename(origin) == "__init__.py"
        entry: Entry = (origin, is_package, where, st.st_mtime_ns, st.st_size, 0, 0)
        with self._lock:
            self.fresh[name] = (entry, data)
            self.used.add(name)

    def save(self) -> None:
        """Write what this process learned, with what the file held (atomically; silently not
        at all on error)."""
        with self._saving:
            self._save()

    def _save(self) -> None:
        with self._lock:
            if not self.fresh:
                return
            fresh, self.fresh = self.fresh, {}
            old, old_body = self.table
            kept = {k: v for k, v in old.items() if k not in fresh}
            if len(kept) + len(fresh) > MAX_ENTRIES:
                kept = {k: v for k, v in kept.items() if k in self.used}
        parts: list[bytes] = []
        entries: dict[str, Entry] = {}
        offset = 0
        body = memoryview(old_body)
        for name, (origin, pkg, where, mtime, size, off, length) in kept.items():
            chunk = bytes(body[off : off + length])
            entries[name] = (origin, pkg, where, mtime, size, offset, length)
            parts.append(chunk)
            offset += length
        for name, ((origin, pkg, where, mtime, size, _o, _l), data) in fresh.items():
            entries[name] = (origin, pkg, where, mtime, size, offset, len(data))
            parts.append(data)
            offset += len(data)
        index = marshal.dumps({"v": FORMAT, "optimize": sys.flags.optimize, "entries": entries})
        import contextlib  # loaded by then (the code cache uses it): not at start

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
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return
        finally:
            os.close(fd)
        if body is not None:
            self.table = (entries, body)


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
    """One file per interpreter version and environment: two virtualenvs (a checkout and a pipx
    install) find their modules in different places, and would otherwise replace each other's
    entries on every start."""
    import zlib

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    version = ".".join(map(str, sys.version_info[:3]))
    env = f"{zlib.crc32(sys.prefix.encode(errors='surrogateescape')):08x}"
    name = f"imports-{sys.implementation.cache_tag}-{version}-{env}.bin"
    return os.path.join(base, "fabwiz", name)


def switched_off() -> bool:
    """`FABWIZ_CODE_CACHE=off` (or 0, no): every start-up cache is off."""
    return os.environ.get("FABWIZ_CODE_CACHE", "").lower() in ("off", "0", "no")


def install(path: str | None = None) -> ImportCache | None:
    """Put the cache just before the path finder (once per process)."""
    global _ACTIVE
    if _ACTIVE is not None:
        return _ACTIVE
    if switched_off():
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
