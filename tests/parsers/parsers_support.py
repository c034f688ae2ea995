"""Shared helpers for the parser tests: the real fixtures are read in place, never copied."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "fixtures" / "real"


def real_files(folder: str) -> list[str]:
    """File names of one fixture folder (empty when /work/shared is absent)."""
    path = REAL / folder
    if not path.is_dir():
        return []
    return sorted(p.name for p in path.iterdir() if p.is_file() and p.name != "PROVENANCE.md")


def load_real(folder: str, name: str) -> str:
    """The text of one real fixture, or a skip when ../shared is absent."""
    path = REAL / folder / name
    if not path.is_file():
        pytest.skip(f"real fixture {folder}/{name} not available (../shared is absent)")
    return path.read_text(encoding="utf-8", errors="replace")


def assert_covers(folder: str, expected: dict[str, object] | set[str]) -> None:
    """Every file of the folder has expectations written out (new fixtures must get some)."""
    files = real_files(folder)
    if not files:
        pytest.skip(f"real fixtures {folder}/ not available (../shared is absent)")
    assert set(files) == set(expected), f"{folder}: files without expectations or gone"
