"""The import cache: a module comes from it only when the usual search would find the same file
with the same content; otherwise it is found and loaded as without it. Each case runs in a fresh
interpreter (the import system is process-wide), with its own sys.path folder and cache file."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# imports the given modules with the cache installed, saves it, and prints what each module
# is and where it came from
PROBE = """
import json, sys
sys.path[0:0] = {folders!r}
from screens import importcache
cache = importcache.install({cache!r})
out = {{"installed": cache is not None, "hits": [], "modules": {{}}}}
for name in {names!r}:
    try:
        module = __import__(name, fromlist=["_"])
    except ImportError as exc:
        out["modules"][name] = {{"error": type(exc).__name__}}
        continue
    spec = module.__spec__
    out["modules"][name] = {{
        "value": getattr(module, "VALUE", None),
        "file": module.__file__,
        "cached": getattr(module, "__cached__", None),
        "path": list(getattr(module, "__path__", [])) or None,
        "origin": spec.origin,
        "source_file_loader": isinstance(
            spec.loader, __import__("importlib.machinery").machinery.SourceFileLoader
        ),
        "source": spec.loader.get_source(name) if spec.loader else None,
    }}
if cache is not None:
    out["hits"] = sorted(n for n in cache.used - set(cache.fresh) if n in {names!r})
    importcache.save()
print(json.dumps(out))
"""


def _run(
    folder: Path, cache: Path, names: list[str], *, front: Path | None = None, **env: str
) -> dict[str, object]:
    """`names` imported with `folder` first on sys.path (or `front`, then `folder`)."""
    folders = [str(front), str(folder)] if front else [str(folder)]
    code = PROBE.format(folders=folders, cache=str(cache), names=names)
    environ = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **env}
    environ.pop("FABWIZ_CODE_CACHE", None) if "FABWIZ_CODE_CACHE" not in env else None
    proc = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environ,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def _modules(result: dict[str, object]) -> dict[str, dict[str, object]]:
    modules = result["modules"]
    assert isinstance(modules, dict)
    return modules


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _touch_folder(folder: Path) -> None:
    """Some file systems keep whole-second times: make a folder's change visible."""
    later = time.time() + 2
    os.utime(folder, (later, later))


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "site"
    _write(folder / "fw_mod.py", "VALUE = 'first'\n")
    _write(folder / "fw_pkg" / "__init__.py", "VALUE = 'package'\n")
    _write(folder / "fw_pkg" / "sub.py", "VALUE = 'sub'\n")
    return folder, tmp_path / "cache" / "imports.bin"


NAMES = ["fw_mod", "fw_pkg", "fw_pkg.sub"]


def test_a_module_from_the_cache_is_the_module_the_search_finds(tree: tuple[Path, Path]) -> None:
    folder, cache = tree
    first = _run(folder, cache, NAMES)
    assert first["installed"] is True
    assert first["hits"] == []  # nothing known yet: found the usual way, and remembered
    assert cache.is_file()
    second = _run(folder, cache, NAMES)
    assert second["hits"] == NAMES
    assert _modules(second) == _modules(first)  # the same file, path, source, loader kind
    mods = _modules(second)
    assert mods["fw_mod"]["value"] == "first"
    assert mods["fw_mod"]["file"] == str(folder / "fw_mod.py")
    assert mods["fw_mod"]["source_file_loader"] is True
    assert mods["fw_mod"]["source"] == "VALUE = 'first'\n"
    assert str(mods["fw_mod"]["cached"]).endswith(".pyc")
    assert mods["fw_pkg"]["path"] == [str(folder / "fw_pkg")]
    assert mods["fw_pkg.sub"]["value"] == "sub"


def test_an_edited_module_is_read_anew(tree: tuple[Path, Path]) -> None:
    folder, cache = tree
    _run(folder, cache, NAMES)
    _write(folder / "fw_pkg" / "sub.py", "VALUE = 'edited'\n")  # another size
    _run_again = _run(folder, cache, NAMES)
    assert _modules(_run_again)["fw_pkg.sub"]["value"] == "edited"
    assert "fw_pkg.sub" not in _run_again["hits"]
    assert _modules(_run(folder, cache, NAMES))["fw_pkg.sub"]["value"] == "edited"
    # the same size, another time: read anew too
    path = folder / "fw_mod.py"
    path.write_text("VALUE = 'secnd'\n")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1))
    assert _modules(_run(folder, cache, NAMES))["fw_mod"]["value"] == "secnd"


@pytest.fixture
def front(tmp_path: Path) -> Path:
    """A folder before the tree's on sys.path, empty to begin with."""
    folder = tmp_path / "front"
    folder.mkdir()
    return folder


def test_a_module_added_earlier_on_the_path_shadows_the_cached_one(
    tree: tuple[Path, Path], front: Path
) -> None:
    folder, cache = tree
    assert _run(folder, cache, NAMES, front=front)["hits"] == []
    assert _run(folder, cache, NAMES, front=front)["hits"] == NAMES
    _write(front / "fw_mod.py", "VALUE = 'in front'\n")
    _touch_folder(front)
    result = _run(folder, cache, NAMES, front=front)
    assert _modules(result)["fw_mod"]["value"] == "in front"
    assert "fw_mod" not in result["hits"]
    # another sys.path altogether: the search decides again
    assert _modules(_run(folder, cache, NAMES))["fw_mod"]["value"] == "first"


def test_a_package_added_beside_a_cached_module_comes_first(tree: tuple[Path, Path]) -> None:
    folder, cache = tree
    _run(folder, cache, NAMES)
    # a package of the same name beside the module: the search takes the package first
    _write(folder / "fw_mod" / "__init__.py", "VALUE = 'shadow'\n")
    _touch_folder(folder)
    result = _run(folder, cache, NAMES)
    assert _modules(result)["fw_mod"]["value"] == "shadow"
    assert "fw_mod" not in result["hits"]


def test_a_submodule_shadowed_in_its_package_folder_is_not_taken_from_the_cache(
    tree: tuple[Path, Path],
) -> None:
    folder, cache = tree
    _run(folder, cache, NAMES)
    _write(folder / "fw_pkg" / "sub" / "__init__.py", "VALUE = 'sub package'\n")
    _touch_folder(folder / "fw_pkg")
    assert _modules(_run(folder, cache, NAMES))["fw_pkg.sub"]["value"] == "sub package"


def test_a_removed_module_is_not_found(tree: tuple[Path, Path]) -> None:
    folder, cache = tree
    _run(folder, cache, NAMES)
    (folder / "fw_pkg" / "sub.py").unlink()
    _touch_folder(folder / "fw_pkg")
    assert _modules(_run(folder, cache, NAMES))["fw_pkg.sub"] == {"error": "ModuleNotFoundError"}


def test_a_file_others_may_write_or_garbage_is_not_read(tree: tuple[Path, Path]) -> None:
    folder, cache = tree
    _run(folder, cache, NAMES)
    cache.chmod(0o666)
    result = _run(folder, cache, NAMES)
    assert result["hits"] == []  # not trusted: found the usual way
    assert _modules(result)["fw_mod"]["value"] == "first"
    cache.unlink()
    cache.write_bytes(b"fabwiz-imports\n" + b"\xff" * 64)
    cache.chmod(0o600)
    result = _run(folder, cache, NAMES)
    assert result["hits"] == []
    assert _modules(result)["fw_pkg.sub"]["value"] == "sub"


def test_switched_off_with_the_other_start_up_caches(tree: tuple[Path, Path]) -> None:
    folder, cache = tree
    result = _run(folder, cache, NAMES, FABWIZ_CODE_CACHE="off")
    assert result["installed"] is False
    assert not cache.exists()


def test_a_later_save_keeps_what_an_earlier_one_wrote(tree: tuple[Path, Path]) -> None:
    folder, cache = tree
    _run(folder, cache, ["fw_mod"])
    _run(folder, cache, ["fw_pkg", "fw_pkg.sub"])  # learns these, keeps fw_mod
    assert _run(folder, cache, NAMES)["hits"] == NAMES


def test_two_saves_in_one_process_keep_both(tree: tuple[Path, Path]) -> None:
    folder, cache = tree
    code = (
        f"import sys; sys.path.insert(0, {str(folder)!r})\n"
        "from screens import importcache\n"
        f"importcache.install({str(cache)!r})\n"
        "import fw_mod\nimportcache.save()\nimport fw_pkg.sub\nimportcache.save()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    assert _run(folder, cache, NAMES)["hits"] == NAMES


def test_fabwiz_starts_from_the_cache_it_wrote(tmp_path: Path) -> None:
    """The console script's entry installs the cache before the command line's own imports, and
    a command that ends early (`--help`) saves it as the interpreter exits."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("FABWIZ_CODE_CACHE", None)
    code = (
        "import sys\n"
        "sys.argv = ['fabwiz', 'check', '--help']\n"
        "from screens import boot, importcache\n"
        "try:\n"
        "    boot.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('HITS', importcache._ACTIVE.hits, 'click' in importcache._ACTIVE.used)\n"
    )
    script = tmp_path / "bin" / "fabwiz"  # a console script: its folder first on sys.path
    _write(script, code)
    runs = [
        subprocess.run(
            [sys.executable, str(script)],
            check=False,
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
        )
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert "Usage: fabwiz check" in run.stdout
    first, second = (r.stdout.split("HITS ")[1].split() for r in runs)
    assert first == ["0", "True"]  # click found the usual way, remembered
    assert int(second[0]) > 20 and second[1] == "True"  # click and its modules from the cache


def test_a_shadow_added_while_the_module_was_not_imported_still_wins(
    tree: tuple[Path, Path], front: Path
) -> None:
    """A run that does not import a module saves the file with it in: that entry still holds
    what the folders before it were when it was found, not what they are at that save."""
    folder, cache = tree
    _run(folder, cache, NAMES, front=front)
    _write(front / "fw_mod.py", "VALUE = 'in front'\n")
    _touch_folder(front)
    assert _run(folder, cache, ["fw_pkg"], front=front)["hits"] == []  # re-found, saved
    assert _modules(_run(folder, cache, NAMES, front=front))["fw_mod"]["value"] == "in front"


def test_a_change_further_down_the_path_leaves_what_was_found_before_it(
    tree: tuple[Path, Path], tmp_path: Path
) -> None:
    folder, cache = tree
    back = tmp_path / "back"
    back.mkdir()
    code = PROBE.format(folders=[str(folder), str(back)], cache=str(cache), names=NAMES)
    env = {k: v for k, v in os.environ.items() if k != "FABWIZ_CODE_CACHE"}

    def run() -> dict[str, object]:
        proc = subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env
        )
        result: dict[str, object] = json.loads(proc.stdout)
        return result

    run()
    _write(back / "unrelated.py", "VALUE = 1\n")
    _touch_folder(back)
    assert run()["hits"] == NAMES


def test_each_environment_has_a_file_of_its_own(tmp_path: Path) -> None:
    """A checkout's virtualenv and a pipx install find asyncssh in different places: in one file
    they would replace each other's entries on every start."""
    code = (
        "import sys\n"
        "from screens import importcache\n"
        "print(importcache.default_path())\n"
        "sys.prefix = '/opt/pipx/venvs/fabwiz'\n"
        "print(importcache.default_path())\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env, cwd=ROOT
    )
    here, there = proc.stdout.split()
    assert here != there
    assert Path(here).parent == Path(there).parent == tmp_path / "fabwiz"
    assert Path(here).name.startswith("imports-") and Path(here).name.endswith(".bin")


def test_a_damaged_entry_is_read_the_usual_way_and_replaced(tree: tuple[Path, Path]) -> None:
    folder, cache = tree
    _run(folder, cache, NAMES)
    from screens import importcache

    reader = importcache.ImportCache(str(cache))
    reader.load()
    _origin, _pkg, _where, _mtime, _size, offset, length = reader.entries["fw_mod"]
    body_start = cache.stat().st_size - len(reader.table[1])
    data = bytearray(cache.read_bytes())
    data[body_start + offset : body_start + offset + length] = b"\x00" * length  # not code
    cache.write_bytes(bytes(data))
    damaged = _run(folder, cache, NAMES)
    assert _modules(damaged)["fw_mod"]["value"] == "first"  # compiled from its source
    assert "fw_mod" not in damaged["hits"]
    again = importcache.ImportCache(str(cache))  # the entry was written anew: code again
    again.load()
    *_rest, offset, length = again.entries["fw_mod"]
    code = marshal.loads(again.table[1][offset : offset + length])
    assert code.co_filename == str(folder / "fw_mod.py")
    assert _modules(_run(folder, cache, NAMES))["fw_mod"]["value"] == "first"
