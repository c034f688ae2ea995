# `make check` is what CI runs (.ci/run): lint, types, import rules, tests.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: check install lint types imports test demo bench clean

$(BIN)/fabwiz: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

install: $(BIN)/fabwiz

lint: install
	$(BIN)/ruff check wizard flows screens tests bench
	$(BIN)/ruff format --check wizard flows screens tests bench

types: install
	$(BIN)/mypy

# the architecture contracts in pyproject.toml ([tool.importlinter])
imports: install
	$(BIN)/lint-imports --no-cache

# The lab-backed tests mostly wait on simulated time: four workers keep two cores busy. The
# long walks are collected first (tests/conftest.py) and handed out one at a time, so no worker
# is left with a queue of them at the end.
test: install
	$(BIN)/pytest -n 4 --maxschedchunk 1

check: lint types imports test

demo: install
	$(BIN)/fabwiz demo

bench: install
	$(BIN)/python bench/sweep.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
