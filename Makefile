# Two commands on a fresh machine: `make demo` and `make test`.
# Each bootstraps .venv from pyproject.toml; the install is skipped while pyproject.toml is unchanged.
# `make bench` also bootstraps .venv-pymc, a separate virtualenv holding only the PyMC peer of
# bench/bench_pymc.py: pymc pins pytensor, which pins numba <= 0.65.1, while geosynth is
# benchmarked on its own (newer) numba, so the two cannot share one environment.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
OUT ?= out
PYMC_VENV := .venv-pymc
PYMC_STAMP := $(PYMC_VENV)/.installed-stamp
PYMC_REQUIREMENT := pymc>=5.10,<6

.PHONY: demo test bench lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/geosynth demo --out $(OUT) --maps maps --overwrite

test: $(STAMP)
	$(BIN)/python -m pytest

# The PyMC peer's venv: pip re-runs whenever this Makefile changes (a no-op unless
# PYMC_REQUIREMENT did), as .venv's install re-runs when pyproject.toml changes.
$(PYMC_STAMP): Makefile
	test -x $(PYMC_VENV)/bin/python || $(PYTHON) -m venv $(PYMC_VENV)
	$(PYMC_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PYMC_VENV)/bin/python -m pip install --quiet '$(PYMC_REQUIREMENT)'
	touch $(PYMC_STAMP)

bench: $(STAMP) $(PYMC_STAMP)
	BENCH_PYMC_PYTHON=$(abspath $(PYMC_VENV))/bin/python $(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check geosynth tests bench studies

clean:
	rm -rf $(OUT) .pytest_cache
