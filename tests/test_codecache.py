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


# --- Textual's stylesheets ----------------------------------------------------------------------


def _stylesheet_sources() -> list[tuple[str, tuple[str, str], bool]]:
    """The app's stylesheet and a few widgets' DEFAULT_CSS, as Textual reads them."""
    from textual.widgets import DataTable, Log, Static

    import screens.app
    from screens.widgets.steps import StepList

    path = Path(screens.app.__file__).with_name("app.tcss")
    app_css = (path.read_text(), (str(path), ""), False)
    return [app_css] + [
        (w.DEFAULT_CSS, ("", w.__name__), True) for w in (StepList, DataTable, Log, Static)
    ]


def _parsed(variables: dict[str, str]) -> list[list[tuple[str, object, object, object]]]:
    from textual.css.stylesheet import Stylesheet
    from textual.layout import Layout

    def rules_of(styles: object) -> dict[str, object]:
        # a layout is a fresh, stateless object per parse (Textual's own too): compared by name
        rules = styles.get_rules()  # type: ignore[attr-defined]
        return {k: v.name if isinstance(v, Layout) else v for k, v in rules.items()}

    sheet = Stylesheet(variables=variables)
    out = []
    for css, where, defaults in _stylesheet_sources():
        rules = sheet._parse_rules(css, where, is_default_rules=defaults)
        out.append(
            [
                (r.css, sorted(r.selector_names), rules_of(r.styles), r.is_default_rules)
                for r in rules
            ]
        )
    return out


def _theme() -> dict[str, str]:
    from textual.app import App

    return App().get_css_variables()


def test_stylesheets_come_back_as_textual_parsed_them(cache_file: Path) -> None:
    variables = _theme()
    plain = _parsed(variables)  # Textual's own parse, no cache
    first = codecache.install(cache_file)
    assert first is not None
    codecache.cache_stylesheets()
    assert _parsed(variables) == plain
    assert len(first.css) == len(plain) and first.new >= len(plain)
    codecache.save()
    codecache.uninstall()
    second = codecache.install(cache_file)
    assert second is not None and len(second.css) == len(plain)
    codecache.cache_stylesheets()
    assert _parsed(variables) == plain  # unpickled, not parsed
    assert second.new == 0 and second.hits >= len(plain)


def test_another_theme_is_parsed_again_not_taken_from_the_cache(cache_file: Path) -> None:
    cache = codecache.install(cache_file)
    assert cache is not None
    codecache.cache_stylesheets()
    dark = _theme()
    _parsed(dark)
    # stylesheet entries only: `new` also counts code the first parse compiled (a module a
    # test before this one in the same worker may have loaded already)
    learned = len(cache.css)
    assert learned > 0
    light = {**dark, "surface": "#fafafa", "primary": "#ff0000"}
    assert _parsed(light) != _parsed(dark)  # the variables are in the parse
    assert len(cache.css) == 2 * learned  # every text again, under the other theme's key


def test_a_stylesheet_entry_that_does_not_unpickle_is_parsed(cache_file: Path) -> None:
    variables = _theme()
    plain = _parsed(variables)
    cache = codecache.install(cache_file)
    assert cache is not None
    codecache.cache_stylesheets()
    _parsed(variables)
    for key in cache.css:
        cache.css[key] = b"\x80\x05not a pickle"
    assert _parsed(variables) == plain


def test_uninstall_gives_textual_its_own_parse_back(cache_file: Path) -> None:
    from textual.css.stylesheet import Stylesheet

    original = Stylesheet._parse_rules
    codecache.install(cache_file)
    codecache.cache_stylesheets()
    assert Stylesheet._parse_rules is not original
    codecache.uninstall()
    assert Stylesheet._parse_rules is original


async def test_the_first_screen_from_a_warm_cache_is_the_same_screen(cache_file: Path) -> None:
    from screens.app import FabwizApp

    async def screen() -> list[str]:
        app = FabwizApp(None)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            return [
                "".join(f"{seg.text}|{seg.style}" for seg in strip)
                for strip in app.screen._compositor.render_strips()
            ]

    plain = await screen()
    cache = codecache.install(cache_file)
    assert cache is not None
    codecache.cache_stylesheets()
    assert await screen() == plain  # parsed and remembered
    codecache.save()
    codecache.uninstall()
    warm = codecache.install(cache_file)
    assert warm is not None
    codecache.cache_stylesheets()
    assert await screen() == plain  # every stylesheet from the cache
    assert warm.css and warm.new == 0 and warm.hits > 0


def test_forward_references_and_named_tuples_come_compiled_and_behave_as_without_it(
    cache_file: Path,
) -> None:
    import collections
    import typing

    cache = codecache.install(cache_file)
    assert cache is not None
    assert typing.compile == cache.compile and collections.eval == cache.eval
    ref = typing.ForwardRef("dict[str, int]")
    assert ("eval", "dict[str, int]") in cache.codes
    assert typing._eval_type(ref, {}, {}) == dict[str, int]  # type: ignore[attr-defined]
    with pytest.raises(SyntaxError, match="Forward reference must be an expression"):
        typing.ForwardRef("not an expression !")
    Port = collections.namedtuple("Port", ["name", "mtu"], defaults=[9000])
    assert Port("qsfp56-dd-1-1") == ("qsfp56-dd-1-1", 9000)
    assert Port(name="a", mtu=1500).mtu == 1500
    codecache.save()
    codecache.uninstall()
    assert "compile" not in vars(typing) and "eval" not in vars(collections)
    again = codecache.install(cache_file)
    assert again is not None
    typing.ForwardRef("dict[str, int]")
    collections.namedtuple("Port", ["name", "mtu"], defaults=[9000])
    assert again.new == 0 and again.hits >= 2  # both texts from the file


def test_eval_without_a_namespace_takes_the_callers(cache_file: Path) -> None:
    cache = codecache.install(cache_file)
    assert cache is not None
    mtu = 9000  # noqa: F841  # read by the text eval runs in this frame
    assert cache.eval("mtu + 1") == 9001
    assert cache.eval("mtu", None, {"mtu": 1500}) == 1500
