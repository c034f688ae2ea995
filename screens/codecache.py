"""A persistent cache of start-up work: the methods `dataclasses` writes and the regular
expressions `re` compiles, done once per Python version.

`@dataclass` writes `__init__`, `__repr__`, `__eq__`, `__hash__` and, for frozen classes,
`__setattr__`/`__delattr__` as source text and compiles each with `exec`. For the ~200 dataclasses
`fabwiz check` loads (fabwiz's own, pydantic's, annotated_types') that is ~1,100 compilations:
about a quarter of its start-up CPU, repeated on every run, for text that is the same every run.
Python keeps compiled modules in `__pycache__`; this keeps those functions' code the same way.

How: the `exec` that the dataclasses module calls is looked up in its globals before the
builtins, so a module-level `exec` there takes the same (text, globals, namespace) and runs the
code object compiled from exactly that text (the cache's key is the whole text; a miss compiles
it as `exec` would and remembers it). Nothing else changes: the same text, compiled with the same
flags, runs with the same globals.

Compiled regular expressions are kept the same way. `re` parses a pattern and compiles it to the
regex engine's code in Python (~200 patterns at start-up, most of them compiled at import by the
parsers, PyYAML and click); the engine then builds the pattern object from that code. The cache
keeps, per (pattern, flags), the arguments `re` handed the engine, and a hit hands them over
again: the same pattern object, without the parse. Only str and bytes patterns are kept, and
never with `re.DEBUG`.

The typing module compiles the text of each forward reference (`"Widget"` in
`Optional["Widget"]`; ~350 as Textual and asyncssh load) and `collections.namedtuple` the text of
each named tuple's `__new__`: both look `compile` and `eval` up in their module's globals first,
as dataclasses does `exec`, and get them from here the same way (same text, same mode, no
`__future__` flags in either module).

Textual's parsed stylesheets are kept too. Every start, Textual tokenizes and parses the app's
stylesheet and each widget class's `DEFAULT_CSS` (~25 texts, about a tenth of the first screen's
time); the parse of one text depends on the text, where it was read from, its defaults /
tie-breaker / scope, the theme's variables and the Textual version, and all of that is the key
here. A hit unpickles the rule sets Textual's own parse made (a tenth of the parse's time); a
miss, an error in the text, or anything odd in the cache means Textual parses as without it.

Each entry is marshalled on its own inside the file and read the first time it is asked for:
`fabwiz check` uses about a third of the code the TUI keeps there. The cache is a marshal file
per interpreter (`sys.implementation.cache_tag` and the full version
in its name) under `$XDG_CACHE_HOME/fabwiz` (default `~/.cache/fabwiz`), created 0700/0600. It is
read only if it belongs to this user and nobody else may write it (its code objects run), and it
is written atomically. Any problem reading or writing it just means compiling, as without it.
`FABWIZ_CODE_CACHE=off` turns it off.
"""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]  # the regex engine `re` compiles for
import builtins
import contextlib
import marshal
import os
import re
import stat
import sys
import threading
from pathlib import Path
from types import CodeType
from typing import Any

__all__ = ["CodeCache", "install", "save"]

_ACTIVE: CodeCache | None = None
# past this many entries (texts of older fabwiz or library versions), a save keeps only the
# entries this process used
MAX_ENTRIES = 5000
MAX_STYLESHEETS = 200
FORMAT = 2  # each entry marshalled on its own (1: the whole file in one piece)


class CodeCache:
    """Source text -> code object, loaded from and saved to one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # source text -> its code object (marshalled, as read, until first asked for)
        self.codes: dict[Any, CodeType | bytes] = {}
        # (pattern, flags) -> the regex engine's compile arguments (marshalled, likewise)
        self.patterns: dict[Any, tuple[Any, ...] | bytes] = {}
        self.new = 0
        self.hits = 0
        # stylesheet key -> the rule sets Textual parsed from it, pickled
        self.css: dict[tuple[Any, ...], bytes] = {}
        self.used: set[Any] = set()
        self._lock = threading.Lock()

    def load(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            # its code objects run in this process: only a file of ours nobody else can change
            if st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return
            try:
                loaded = marshal.loads(f.read())  # noqa: S302  # ours: owner and mode checked
            except (EOFError, ValueError, TypeError):
                return
        if not isinstance(loaded, dict):
            return
        codes, patterns, css = loaded.get("code"), loaded.get("re"), loaded.get("css")
        # each value stays marshalled until it is asked for (`_entry`): `check` uses a third
        # of the code the TUI keeps here, and the loads of all of it is most of a start's read
        if isinstance(codes, dict):
            self.codes = codes
        if isinstance(patterns, dict):
            self.patterns = patterns
        if isinstance(css, dict):
            self.css = {k: v for k, v in css.items() if isinstance(k, tuple) and type(v) is bytes}
        if loaded.get("v") != FORMAT:
            self.new += 1  # a file of fabwiz 0.1 (loaded whole on every start): written anew

    def stylesheet_rules(self, key: tuple[Any, ...]) -> Any:
        """The rule sets parsed before under `key`, or None (not kept, or not readable)."""
        data = self.css.get(key)
        if data is None:
            return None
        import pickle

        try:
            rules = pickle.loads(data)  # noqa: S301  # ours: the file's owner and mode checked
        except Exception:  # a Textual whose classes changed: parse again
            return None
        if not isinstance(rules, list):
            return None
        self.hits += 1
        self.used.add(key)
        return rules

    def remember_stylesheet(self, key: tuple[Any, ...], rules: Any) -> None:
        import pickle

        try:
            data = pickle.dumps(rules, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # something unpicklable in a rule: not kept
            return
        with self._lock:
            self.css[key] = data
            self.used.add(key)
            self.new += 1

    def code(self, source: str, mode: str = "exec") -> CodeType:
        """The code compiled from `source` (as `compile(source, "<string>", mode)` from a
        module without `__future__` imports), from the cache or compiled and remembered."""
        key: Any = source if mode == "exec" else (mode, source)
        found = _entry(self.codes, key, CodeType)
        if found is not None:
            self.hits += 1
            self.used.add(key)
            return found
        compiled = compile(source, "<string>", mode, dont_inherit=True)
        with self._lock:
            self.codes[key] = compiled
            self.used.add(key)
            self.new += 1
        return compiled

    def compile(
        self,
        source: Any,
        filename: Any,
        mode: str,
        flags: int = 0,
        dont_inherit: bool = False,
        optimize: int = -1,
    ) -> Any:
        """`compile` as the typing module calls it for each forward reference (`"Widget"` in
        `Optional["Widget"]`: hundreds as Textual and asyncssh load); anything else as the
        builtin does it."""
        if (
            type(source) is str
            and filename == "<string>"
            and mode == "eval"
            and not flags
            and optimize == -1
        ):
            return self.code(source, "eval")
        return builtins.compile(source, filename, mode, flags, dont_inherit, optimize)

    def eval(self, source: Any, globals_: Any = None, locals_: Any = None, /) -> Any:
        """`eval` as `collections.namedtuple` calls it (each named tuple's `__new__`, written
        as text), with the compiled code of `source`."""
        if type(source) is str and globals_ is not None:
            source = self.code(source, "eval")
        elif globals_ is None:  # the caller's own namespace, as the builtin would take it
            frame = sys._getframe(1)
            globals_, locals_ = frame.f_globals, frame.f_locals if locals_ is None else locals_
        return builtins.eval(source, globals_, locals_)  # noqa: S307  # namedtuple's own text

    def exec(self, source: Any, globals_: Any = None, locals_: Any = None, /) -> None:
        """`exec` as the dataclasses module calls it, with the compiled code of `source`."""
        if isinstance(source, str):
            source = self.code(source)
        builtins.exec(source, globals_, locals_)  # noqa: S102  # the dataclasses' own text

    def compile_regex(self, pattern: Any, flags: Any = 0) -> Any:
        """`re._compiler.compile` through the cache."""
        if not isinstance(pattern, str | bytes) or flags & re.DEBUG:
            return _RE_COMPILE(pattern, flags)
        key = (pattern, int(flags))
        args = _entry(self.patterns, key, tuple)
        if args is not None and len(args) == 6:
            self.hits += 1
            self.used.add(key)
            return _sre.compile(*args)
        _ENGINE.take()
        compiled = _RE_COMPILE(pattern, flags)
        captured = _ENGINE.take()
        if captured is not None and _marshals(captured):
            with self._lock:
                self.patterns[key] = captured
                self.used.add(key)
                self.new += 1
        return compiled

    def save(self) -> None:
        """Write the cache if it learned something (atomically; silently not at all on error)."""
        with self._lock:
            if not self.new:
                return
            if len(self.codes) > MAX_ENTRIES:
                self.codes = {k: v for k, v in self.codes.items() if k in self.used}
            if len(self.patterns) > MAX_ENTRIES:
                self.patterns = {k: v for k, v in self.patterns.items() if k in self.used}
            if len(self.css) > MAX_STYLESHEETS:  # older Textual versions' and themes'
                self.css = {k: v for k, v in self.css.items() if k in self.used}
            data = marshal.dumps(
                {
                    "code": {k: _marshalled(v) for k, v in self.codes.items()},
                    "re": {k: _marshalled(v) for k, v in self.patterns.items()},
                    "css": self.css,
                    "v": FORMAT,
                }
            )
            self.new = 0
        import tempfile

        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".codecache-", dir=self.path.parent)
            with os.fdopen(fd, "wb") as f:  # mkstemp: 0600
                f.write(data)
            Path(tmp).replace(self.path)
        except OSError:
            return
        if self.path == default_path():  # the dataclass-only file of fabwiz 0.1
            version = ".".join(map(str, sys.version_info[:3]))
            old = f"dataclass-code-{sys.implementation.cache_tag}-{version}.bin"
            with contextlib.suppress(OSError):
                (self.path.parent / old).unlink(missing_ok=True)


def _entry(table: dict[Any, Any], key: Any, kind: type) -> Any:
    """`table[key]` as a `kind`, unmarshalled on first use (and kept so); None when absent or
    not of that kind (a file of another version: compiled again, as on a miss)."""
    value = table.get(key)
    if type(value) is bytes:
        try:
            value = marshal.loads(value)  # noqa: S302  # ours: the file's owner and mode checked
        except (EOFError, ValueError, TypeError):
            value = None
        if isinstance(value, kind):
            table[key] = value
    return value if isinstance(value, kind) else None


def _marshalled(value: Any) -> bytes:
    return value if type(value) is bytes else marshal.dumps(value)


_RE_COMPILE = re._compiler.compile  # type: ignore[attr-defined]


class _Engine(threading.local):
    """Stands in for `_sre` in `re._compiler`: the same module, except that `compile` notes
    (per thread) the arguments it was given."""

    captured: tuple[Any, ...] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(_sre, name)

    def compile(self, *args: Any) -> Any:
        self.captured = args
        return _sre.compile(*args)

    def take(self) -> tuple[Any, ...] | None:
        """The arguments noted since the last take (None: no compile in between), as plain
        values (`re` writes its opcodes as int subclasses, which marshal does not keep)."""
        captured, self.captured = self.captured, None
        if captured is None or len(captured) != 6:
            return None
        pattern, flags, code, groups, groupindex, indexgroup = captured
        return (
            pattern,
            int(flags),
            [int(c) for c in code],
            int(groups),
            {k: int(v) for k, v in groupindex.items()},
            tuple(indexgroup),
        )


_ENGINE = _Engine()


def _marshals(value: Any) -> bool:
    try:
        marshal.dumps(value)
    except ValueError:
        return False
    return True


def default_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    version = ".".join(map(str, sys.version_info[:3]))
    return Path(base) / "fabwiz" / f"startup-{sys.implementation.cache_tag}-{version}.bin"


def install(path: Path | None = None) -> CodeCache | None:
    """Make the dataclasses module compile through the cache (once per process)."""
    global _ACTIVE
    if _ACTIVE is not None:
        return _ACTIVE
    from screens.importcache import switched_off

    if switched_off():
        return None
    import dataclasses

    if "exec" in vars(dataclasses):  # someone else's exec there already: leave it alone
        return None
    cache = CodeCache(path or default_path())
    cache.load()
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    # typing and collections look `compile` and `eval` up in their globals first, as
    # dataclasses does `exec`
    import collections
    import typing

    if "compile" not in vars(typing):
        typing.compile = cache.compile  # type: ignore[attr-defined]
    if "eval" not in vars(collections):
        collections.eval = cache.eval  # type: ignore[attr-defined]
    compiler = re._compiler  # type: ignore[attr-defined]
    if compiler.compile is _RE_COMPILE and compiler._sre is _sre:
        compiler._sre = _ENGINE
        compiler.compile = cache.compile_regex
    _ACTIVE = cache
    return cache


def cache_stylesheets() -> None:
    """Make Textual's stylesheet parse go through the active cache (once per process; nothing
    without an active cache). Called as the TUI's modules load, before any app starts."""
    cache = _ACTIVE
    if cache is None:
        return
    from textual.css.stylesheet import Stylesheet

    original = Stylesheet._parse_rules
    if getattr(original, "__fabwiz_cached__", False):
        return
    textual_stamp = _textual_stamp()
    themes: dict[int, tuple[Any, str]] = {}  # id(stylesheet) -> (its variables, their digest)

    def _parse_rules(
        self: Stylesheet,
        css: str,
        read_from: Any,
        is_default_rules: bool = False,
        tie_breaker: int = 0,
        scope: str = "",
    ) -> Any:
        memo_key = (css, read_from, is_default_rules, tie_breaker, scope)  # Textual's own memo
        memo = self._parse_cache.get(memo_key)
        if memo is not None:
            return memo  # parsed already in this process (Textual's own memo)
        # the theme's digest, worked out once per variables mapping (Textual replaces the
        # mapping when the theme changes, and clears its own memo then)
        variables = self._variables
        theme = themes.get(id(self))
        if theme is None or theme[0] is not variables:
            theme = themes[id(self)] = (variables, _theme_stamp(variables))
        key = (
            textual_stamp,
            theme[1],
            css,
            tuple(read_from),
            bool(is_default_rules),
            int(tie_breaker),
            str(scope),
        )
        rules = cache.stylesheet_rules(key)
        if rules is not None:
            self._parse_cache[memo_key] = rules
            return rules
        rules = original(self, css, read_from, is_default_rules, tie_breaker, scope)
        if not any(rule.errors for rule in rules):  # an error is reported by a fresh parse
            cache.remember_stylesheet(key, rules)
        return rules

    _parse_rules.__fabwiz_cached__ = True  # type: ignore[attr-defined]
    _parse_rules.__wrapped__ = original  # type: ignore[attr-defined]
    Stylesheet._parse_rules = _parse_rules  # type: ignore[method-assign]


def _textual_stamp() -> tuple[Any, ...]:
    """Which Textual parsed a stylesheet: its version and its CSS modules' sizes and times (an
    upgrade, or an edited checkout, parses again)."""
    import textual

    root = Path(textual.__file__).parent
    stamp: list[Any] = []
    for name in ("__init__.py", "css/parse.py", "css/model.py", "css/styles.py", "color.py"):
        try:
            st = (root / name).stat()
        except OSError:
            return ("unknown",)
        stamp += [name, st.st_size, st.st_mtime_ns]
    try:
        dist = [n for n in os.listdir(root.parent) if n.startswith("textual-")]  # noqa: PTH208
    except OSError:
        dist = []
    return (*sorted(dist), *stamp)


def _theme_stamp(variables: Any) -> str:
    """The theme's variables (the parse substitutes them), as one short digest."""
    import hashlib

    text = "\n".join(f"{k}={v}" for k, v in sorted(dict(variables).items()))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def save() -> None:
    if _ACTIVE is not None:
        _ACTIVE.save()


def uninstall() -> None:
    """Back to the builtin exec (tests)."""
    global _ACTIVE
    import dataclasses

    if _ACTIVE is not None and vars(dataclasses).get("exec") == _ACTIVE.exec:
        del dataclasses.exec  # type: ignore[attr-defined]
    import collections
    import typing

    if _ACTIVE is not None and vars(typing).get("compile") == _ACTIVE.compile:
        del typing.compile  # type: ignore[attr-defined]
    if _ACTIVE is not None and vars(collections).get("eval") == _ACTIVE.eval:
        del collections.eval  # type: ignore[attr-defined]
    compiler = re._compiler  # type: ignore[attr-defined]
    if _ACTIVE is not None and compiler.compile == _ACTIVE.compile_regex:
        compiler.compile = _RE_COMPILE
        compiler._sre = _sre
    stylesheet = sys.modules.get("textual.css.stylesheet")
    if stylesheet is not None:
        parse = stylesheet.Stylesheet._parse_rules
        if getattr(parse, "__fabwiz_cached__", False):
            stylesheet.Stylesheet._parse_rules = parse.__wrapped__
    _ACTIVE = None
