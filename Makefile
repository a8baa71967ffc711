# Two commands for a newcomer: `make run` and `make test`. Everything else is a helper of those.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test install install-dev lint typecheck bench docs clean

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

## Install what the tests need, then lint, type-check and run every test; print the branch
## coverage of core, channels and gateway (the table leaves out fully covered files; TOTAL last).
test: install-dev lint typecheck
	$(BIN)/pytest --cov --cov-branch --cov-report=term:skip-covered

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install-dev
	$(BIN)/mypy core gateway channels bench tests

bench: install-dev
	$(BIN)/python -m bench.run_all

## The agent tools' table in docs/api.md, rendered from their declarations.
docs: install
	$(BIN)/python -m core.engine.tools.docs docs/api.md

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.*
