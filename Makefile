# Two commands on a fresh machine: `make demo` and `make test`.
# Each bootstraps .venv from pyproject.toml; the install is skipped while pyproject.toml is unchanged.
# The install ends with `geosynth compile` (~3 min on 2 cores, once): the samplers' numba kernels
# are compiled into numba's cache ahead of time, so no fit waits for the compiler.
# `make bench` also bootstraps .venv-pymc, a separate virtualenv holding only the peers of
# bench/bench_pymc.py (PyMC with its default NUTS, and nutpie): pymc pins its own pytensor and
# numba while geosynth is benchmarked on its own numba, and PyMC >= 6 needs Python >= 3.12, so
# the two cannot share one environment. It is built from PYMC_PYTHON: by default the first of
# python3.13, python3.12 on PATH that runs and is >= 3.12 (a pyenv shim of a version that is
# not active does not run), else a pyenv-installed 3.13, then 3.12; set it to use another,
# e.g. `make bench PYMC_PYTHON=/usr/local/bin/python3.12`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
OUT ?= out
PYMC_VENV := .venv-pymc
PYMC_STAMP := $(PYMC_VENV)/.installed-stamp
# The newest releases: a benchmark against an outdated peer is wrong, so nothing older is pinned.
PYMC_REQUIREMENT := 'pymc>=6.4' 'nutpie>=0.16' arviz
PYMC_MIN_PYTHON := import sys; sys.exit(sys.version_info < (3, 12))
PYMC_PYTHON ?= $(firstword $(foreach p,python3.13 python3.12 \
	$(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) \
	$(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12),\
	$(shell $(p) -c '$(PYMC_MIN_PYTHON)' >/dev/null 2>&1 && command -v $(p))))

.PHONY: demo test bench lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/geosynth compile
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/geosynth demo --out $(OUT) --maps maps --overwrite

test: $(STAMP)
	$(BIN)/python -m pytest

# The peers' venv: pip re-runs (and upgrades to the newest releases) whenever this Makefile
# changes, as .venv's install re-runs when pyproject.toml changes; a .venv-pymc left by an older
# Python (< 3.12, the PyMC 5 era) is rebuilt.
$(PYMC_STAMP): Makefile
	@test -n "$(PYMC_PYTHON)" || { echo "make bench: the PyMC peer (.venv-pymc) needs Python \
	>= 3.12 and none was found (tried python3.13 and python3.12 on PATH, then \
	$(HOME)/.pyenv/versions/3.1x). Install one (e.g. apt-get install python3.12-venv, \
	pyenv install 3.13, or CPython built from source with ./configure --enable-shared: \
	pytensor links a shared libpython) or name it: \
	make bench PYMC_PYTHON=/path/to/python3.12" >&2; exit 1; }
	@echo "PyMC peer venv from $(PYMC_PYTHON) ($$($(PYMC_PYTHON) --version 2>&1))"
	$(PYMC_VENV)/bin/python -c '$(PYMC_MIN_PYTHON)' 2>/dev/null || \
		{ rm -rf $(PYMC_VENV) && $(PYMC_PYTHON) -m venv $(PYMC_VENV); }
	$(PYMC_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PYMC_VENV)/bin/python -m pip install --quiet --upgrade $(PYMC_REQUIREMENT)
	touch $(PYMC_STAMP)

bench: $(STAMP) $(PYMC_STAMP)
	BENCH_PYMC_PYTHON=$(abspath $(PYMC_VENV))/bin/python $(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check geosynth tests bench studies

clean:
	rm -rf $(OUT) .pytest_cache
