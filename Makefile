# lldsched: the two set-up commands are `make demo` and `make test`.
# Everything installs into .venv from pyproject.toml; a change to pyproject.toml
# refreshes the environment on the next make.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The browser test drives Debian's Chromium with Playwright (Playwright's own browser
# download does not work here); installing it needs root, as CI is.
CHROMIUM := /usr/bin/chromium

.PHONY: demo test lint typecheck pytest bench install notebooks clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[notebook,test,bench]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m lldsched demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP) $(CHROMIUM)
	$(BIN)/python -m pytest

$(CHROMIUM):
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

test: lint typecheck pytest

# Rebuild notebooks/NN-*.ipynb from notebooks/src/NN-*.py and execute them (outputs kept).
notebooks: $(STAMP)
	$(BIN)/python tools/build_notebooks.py

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
