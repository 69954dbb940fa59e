"""``geosynth compile``: the samplers compiled ahead of time, so a later fit only loads them."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.cli.helpers import run

ROOT = Path(__file__).resolve().parents[2]

CHECK = textwrap.dedent("""
    from geosynth.model.runner import kernels_need_compiling
    from geosynth.model.sweep import run_chunk

    print("needs compiling:", kernels_need_compiling(run_chunk))
""")
FIT = CHECK + textwrap.dedent("""
    from geosynth import Grid, PaivaModel, prepare
    from geosynth.datasets import paiva_scenario

    scenario = paiva_scenario(n=100, seed=2)
    grid = Grid.regular(scenario.bounds, shape=(4, 4), crs=scenario.crs)
    counts = prepare(scenario.data, grid, attributes=["y", "x2"], continuous="z")
    PaivaModel(beta_prior="normal").fit(counts, n_iter=20, burn_in=10, thin=1, seed=1,
                                        progress=True)
    print("cache misses:", sum(run_chunk.stats.cache_misses.values()))
    print("cache hits:", sum(run_chunk.stats.cache_hits.values()))

    import numpy as np
    from geosynth.model.diagnostics import convergence_diagnostics

    for dtype in (np.float32, np.float64):  # an n_iter="auto" fit's checks
        convergence_diagnostics(np.arange(60, dtype=dtype).reshape(2, 10, 3))
""")


SIGNATURES = textwrap.dedent("""
    import json
    import sys

    from numba.core.dispatcher import Dispatcher

    def print_compiled_signatures():
        \"\"\"Print {kernel: its signatures} of every geosynth kernel this process has.\"\"\"
        found = {}
        for module in list(sys.modules.values()):
            if not getattr(module, "__name__", "").startswith("geosynth"):
                continue
            for value in list(vars(module).values()):
                if isinstance(value, Dispatcher) and value.signatures:
                    name = f"{value.py_func.__module__}.{value.py_func.__qualname__}"
                    found[name] = sorted(map(str, value.signatures))
        print("signatures:", json.dumps(found))
""")
COMPILE_KIND = SIGNATURES + textwrap.dedent("""
    from geosynth.cli.compiling import compile_kind

    compile_kind("serial")
    print_compiled_signatures()
""")


def _in_cache(cache: Path | None, *args: str) -> subprocess.CompletedProcess:
    """Run Python with ``args`` in a new process, in numba's cache ``cache`` (None: the suite's)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=1200)


def _signatures(process: subprocess.CompletedProcess) -> dict[str, set[str]]:
    line = next(line for line in process.stdout.splitlines() if line.startswith("signatures:"))
    return {name: set(found) for name, found in json.loads(line.partition(" ")[2]).items()}


@pytest.mark.slow
def test_a_fit_after_compile_loads_the_kernels_without_compiling():
    """``geosynth compile --kinds serial``, then a new process's fit (with β) compiles nothing.

    In numba's own cache, which the install filled (``make`` runs ``geosynth compile``): an
    empty cache, as this test used, cost a cold compile (3-5 minutes) for the same check. What
    the compile compiles is read from a process that runs it, kernel by kernel and signature by
    signature; the fit's kernels must all be among them, so an earlier test's fit that compiled
    a kernel into the shared cache cannot hide one the compile misses.
    """
    compiled = _in_cache(None, "-c", "from geosynth.cli import main; main()", "compile",
                         "--kinds", "serial", "--jobs", "1")
    assert compiled.returncode == 0, compiled.stderr
    assert "serial:" in compiled.stderr and "compiled in" in compiled.stderr
    compiling = _in_cache(None, "-c", COMPILE_KIND)
    assert compiling.returncode == 0, compiling.stderr
    fitted = _in_cache(None, "-c", SIGNATURES + FIT + "print_compiled_signatures()\n")
    assert fitted.returncode == 0, fitted.stderr
    assert "needs compiling: False" in fitted.stdout
    assert "cache misses: 0" in fitted.stdout
    assert "cache hits: 1" in fitted.stdout
    assert "compil" not in fitted.stderr  # neither the notice nor "compiled the sampler in"
    by_compile, by_fit = _signatures(compiling), _signatures(fitted)
    assert "geosynth.model.sweep.run_chunk" in by_fit
    missed = {name: found - by_compile.get(name, set()) for name, found in by_fit.items()}
    assert not {name: found for name, found in missed.items() if found}


def test_the_first_fit_without_compile_says_compiling(tmp_path):
    """The control of the test above: in an empty cache the fit's kernel is not compiled."""
    fitted = _in_cache(tmp_path, "-c", CHECK)
    assert fitted.returncode == 0, fitted.stderr
    assert "needs compiling: True" in fitted.stdout


@pytest.mark.parametrize("kinds, message", [
    ("serial,gpu", "unknown kind 'gpu'"),
    (" , ", "name at least one of serial"),
])
def test_unknown_kinds_are_refused_naming_the_option(kinds, message):
    result = run("compile", "--kinds", kinds)
    assert result.exit_code == 2
    assert "--kinds" in result.output and message in result.output
    assert "compiling the samplers" not in result.output


def test_a_kind_named_twice_compiles_once():
    from geosynth.cli.compiling import wanted_kinds

    assert wanted_kinds("block, serial,block,serial") == ["block", "serial"]


def test_compile_kinds_are_the_kinds_whose_compile_time_the_notice_quotes():
    from geosynth.cli.compiling import KINDS
    from geosynth.model.runner import COMPILE_SECONDS

    assert KINDS == tuple(COMPILE_SECONDS)


def test_ctrl_c_stops_the_compilation_at_once(tmp_path):
    # The process pool waited for its workers: the command exited a minute or more after
    # Ctrl-C, saying "nothing was written" while the cache had been filled.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    command = [sys.executable, "-c", "from geosynth.cli import main; main()", "compile",
               "--kinds", "serial", "--jobs", "1"]
    process = subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    time.sleep(5)  # compiling (a first compile takes a minute or more)
    os.killpg(process.pid, signal.SIGINT)
    start = time.monotonic()
    stderr = process.communicate(timeout=120)[1]
    assert process.returncode == 130
    assert time.monotonic() - start < 20
    assert "stay in numba's cache" in stderr and "Traceback" not in stderr
