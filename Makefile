# Two commands for a newcomer: `make run` and `make test`. Everything else is a helper of those.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test install install-dev lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

## Start the gateway on SQLite (./var/), on http://127.0.0.1:8080.
run: install
	$(BIN)/rolecall serve

## Install what the tests need, then lint, type-check and run every test.
test: install-dev lint typecheck
	$(BIN)/pytest

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install-dev
	$(BIN)/mypy core gateway channels bench

bench: install-dev
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
