"""The dataclass code cache: the same classes as without it, compiled once, and a file it may
not trust is not read."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from screens import codecache


@pytest.fixture
def cache_file(tmp_path: Path) -> Iterator[Path]:
    codecache.uninstall()
    yield tmp_path / "fabwiz" / "code.bin"
    codecache.uninstall()


def _make_class() -> type:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Rail:
        node: str
        netdev: str
        port: int = 1

    return Rail


def test_classes_made_through_the_cache_behave_as_without_it(cache_file: Path) -> None:
    plain = _make_class()
    cache = codecache.install(cache_file)
    assert cache is not None
    cached = _make_class()
    assert cache.new > 0  # compiled and remembered
    a, b = cached("spark1", "enp1s0f0np0"), cached("spark1", "enp1s0f0np0")
    assert a == b and hash(a) == hash(b)
    assert repr(a) == repr(plain("spark1", "enp1s0f0np0")).replace(
        plain.__qualname__, cached.__qualname__
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.port = 2  # type: ignore[misc]


def test_a_second_start_compiles_nothing_it_already_compiled(cache_file: Path) -> None:
    first = codecache.install(cache_file)
    assert first is not None
    _make_class()
    codecache.save()
    assert cache_file.exists() and oct(cache_file.stat().st_mode & 0o777) == "0o600"
    codecache.uninstall()
    second = codecache.install(cache_file)
    assert second is not None and second.codes
    _make_class()
    assert second.new == 0 and second.hits > 0


def test_a_file_others_may_write_is_not_read(cache_file: Path) -> None:
    first = codecache.install(cache_file)
    assert first is not None
    _make_class()
    codecache.save()
    codecache.uninstall()
    cache_file.chmod(0o666)
    again = codecache.CodeCache(cache_file)
    again.load()
    assert again.codes == {}


def test_a_damaged_file_is_compiled_around(cache_file: Path) -> None:
    cache_file.parent.mkdir(parents=True)
    cache_file.write_bytes(b"\x00not marshal at all")
    cache_file.chmod(0o600)
    cache = codecache.install(cache_file)
    assert cache is not None and cache.codes == {}
    assert _make_class()("a", "b").port == 1


def test_it_can_be_turned_off(cache_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FABWIZ_CODE_CACHE", "off")
    assert codecache.install(cache_file) is None
    assert "exec" not in vars(dataclasses)


def test_a_cache_grown_past_its_bound_keeps_what_this_run_used(
    cache_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(codecache, "MAX_ENTRIES", 3)
    cache = codecache.install(cache_file)
    assert cache is not None
    for i in range(10):
        cache.codes[f"# an older version's text {i}\n"] = compile("pass", "<string>", "exec")
    _make_class()
    used = set(cache.used)
    codecache.save()
    again = codecache.CodeCache(cache_file)
    again.load()
    assert set(again.codes) == used


PATTERN = r"(?P<rail>enp\d+s0f[01]np[01])\s+(?P<state>Up|Down)[^\x00-\x08\uD800-\uDFFF]*"


def test_patterns_compiled_through_the_cache_match_as_without_it(cache_file: Path) -> None:
    import re

    plain = re.compile(PATTERN, re.IGNORECASE)
    re.purge()
    first = codecache.install(cache_file)
    assert first is not None
    learned = re.compile(PATTERN, re.IGNORECASE)
    assert first.patterns and (PATTERN, int(re.IGNORECASE)) in first.patterns
    codecache.save()
    codecache.uninstall()
    re.purge()
    second = codecache.install(cache_file)
    assert second is not None
    cached = re.compile(PATTERN, re.IGNORECASE)
    assert second.new == 0 and second.hits >= 1  # built from the kept code, not parsed
    line = "enp1s0f1np1  UP and more"
    for p in (learned, cached):
        assert p == plain and p.flags == plain.flags and p.groupindex == plain.groupindex
        m = p.match(line)
        assert m is not None and m.groupdict() == {"rail": "enp1s0f1np1", "state": "UP"}
    re.purge()
    assert re.compile(b"GLIBC_([0-9.]+)").match(b"GLIBC_2.36") is not None  # bytes too
    assert re.compile("x", re.DEBUG) is not None  # never kept: it prints as it compiles
    assert ("x", int(re.DEBUG)) not in second.patterns


def test_uninstalled_re_compiles_as_it_did(cache_file: Path) -> None:
    import re

    real = re._compiler.compile  # type: ignore[attr-defined]
    codecache.install(cache_file)
    assert re._compiler.compile is not real  # type: ignore[attr-defined]
    codecache.uninstall()
    assert re._compiler.compile is real  # type: ignore[attr-defined]
    assert re._compiler._sre.__name__ == "_sre"  # type: ignore[attr-defined]
