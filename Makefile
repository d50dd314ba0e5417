# lldsched: the two set-up commands are `make demo` and `make test`.
# Everything installs into .venv from pyproject.toml; a change to pyproject.toml
# refreshes the environment on the next make.

# Another interpreter, in a venv of its own (`.venv-*` is ignored by git):
#   make test PYTHON=python3.13 VENV=.venv-3.13
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The browser test drives Debian's Chromium with Playwright (Playwright's own browser
# download does not work here); installing it needs root, as CI is.
CHROMIUM := /usr/bin/chromium
# The PostgreSQL tests start a throwaway server of their own (tests/pg_server.py) from
# Debian's binaries, which live in /usr/lib/postgresql/<version>/bin, not on PATH.
PG_INITDB = $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb))
# APScheduler 4 (a pre-release) cannot share the main venv with APScheduler 3: the
# cluster benchmark runs it as subprocesses from a venv of its own.
APS4_VENV := .venv-aps4

.PHONY: demo test lint typecheck pytest bench bench-quick install notebooks binder-check clean \
	postgresql

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

# Three worker processes (pytest-xdist), a test file at a time each: the notebooks' cells
# and a file's module-wide fixtures stay in one process. Serial, the suite took about
# 600 s on a two-core machine; in two workers 594 s, in three 484 s (a third of two
# workers' time was waiting). PYTEST_WORKERS=0 runs it in this process.
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set (many CI images set it):
# the suite starts hundreds of Python processes, and each would compile lldsched from
# source again (docs/decisions/parallel-tests.md, "The test suite in parallel workers").
PYTEST_WORKERS ?= 3
pytest: $(STAMP) $(CHROMIUM) postgresql
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile

# Installs Debian's server (needs root, as CI is) only when its binaries are missing, and
# PgBouncer, which the cluster tests also run through (tests/pg_bouncer.py installs it
# too, as root, when a test needs it and it is missing).
postgresql:
	@if [ -z "$(PG_INITDB)" ]; then \
		apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; \
	fi
	@if [ ! -x /usr/sbin/pgbouncer ] && ! command -v pgbouncer >/dev/null; then \
		apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer; \
	fi

$(CHROMIUM):
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

test: lint typecheck pytest

# Rebuild notebooks/NN-*.ipynb from notebooks/src/NN-*.py and execute them (outputs kept).
notebooks: $(STAMP)
	$(BIN)/python tools/build_notebooks.py

# Run the notebooks in a fresh environment built from binder/ alone, as mybinder.org
# builds it (plus pytest and nbval to run them).
BINDER_VENV := .binder-venv
binder-check:
	rm -rf $(BINDER_VENV)
	$(PYTHON) -m venv $(BINDER_VENV)
	$(BINDER_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BINDER_VENV)/bin/python -m pip install --quiet -r binder/requirements.txt
	$(BINDER_VENV)/bin/python -m pip install --quiet pytest pytest-timeout nbval
	PATH="$(abspath $(BINDER_VENV))/bin:$$PATH" bash binder/postBuild
	$(BINDER_VENV)/bin/python -m pytest -p no:cacheprovider notebooks

bench: $(STAMP) postgresql $(APS4_VENV)/.installed
	$(BIN)/python benchmarks/run_all.py

$(APS4_VENV)/.installed:
	$(PYTHON) -m venv $(APS4_VENV)
	$(APS4_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(APS4_VENV)/bin/python -m pip install --quiet 'apscheduler==4.0.0a6' 'sqlalchemy[asyncio]>=2.0,<2.1' \
		'psycopg[binary]>=3.1' sniffio  # a6 imports sniffio, which anyio 4.5+ no longer brings
	touch $@

bench-quick: $(STAMP) postgresql $(APS4_VENV)/.installed  # the smaller size sets, for everyday runs
	$(BIN)/python benchmarks/run_all.py --quick

clean:
	rm -rf $(VENV) $(BINDER_VENV) $(APS4_VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build *.egg-info
