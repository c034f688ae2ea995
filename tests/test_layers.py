"""STYLE.md rule 1: screens -> flows -> wizard; the engine and the domain load no UI module."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imported_modules(package: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
        out[str(path.relative_to(ROOT))] = names
    return out


def test_wizard_and_flows_load_no_ui_module_in_a_fresh_process() -> None:
    code = (
        "import sys, pkgutil, importlib\n"
        "import wizard, flows\n"
        "for pkg in (wizard, flows):\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'screens'))\n"
        "print(','.join(bad))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"UI modules loaded by the engine: {proc.stdout.strip()}"


def test_dependency_direction_in_source() -> None:
    for path, names in _imported_modules("wizard").items():
        assert not names & {"flows", "screens", "textual", "rich"}, path
    for path, names in _imported_modules("flows").items():
        assert not names & {"screens", "textual", "rich"}, path


def test_only_transports_import_network_clients() -> None:
    for path, names in _imported_modules("wizard").items():
        if "/transports/" in path or "/lab/" in path:
            continue  # the lab's servers use asyncssh's server side
        assert not names & {"asyncssh", "librouteros"}, path
    for path, names in _imported_modules("flows").items():
        assert not names & {"asyncssh", "librouteros"}, path
