"""Suite-wide ordering (the long tests start first) and the test run's own cache folder.

With `pytest -n 4` the workers take tests in collection order; a long lab walk collected last
runs alone while the other workers sit idle. Starting the `slow` walks, then the other `lab`
tests, then the unit tests keeps every worker busy to the end (the order within each group is
the collection order, so a run is still reproducible).
"""

from __future__ import annotations

import os
import tempfile

import pytest

# `fabwiz` run as a process by a test keeps its start-up cache (screens.codecache) in a folder of
# the test run, not in the user's ~/.cache; set before any test starts one.
os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="fabwiz-test-cache-"))


def _weight(item: pytest.Item) -> int:
    if item.get_closest_marker("slow") is not None:
        return 0
    if item.get_closest_marker("lab") is not None:
        return 1
    return 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_weight)
