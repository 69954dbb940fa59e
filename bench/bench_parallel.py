"""Seconds per sweep of the serial and the chromatic parallel Gibbs sampler.

Data: the Nunes (2018) scenario with 5 records per cell on sqrt(G) x sqrt(G) queen lattices
over the study square, B = 12 attribute combinations, the thesis' attribute-effects model.

Two measures, after a compile run:

- *sampler*: the kernels alone — :func:`geosynth.model.sweep.run_chunk` against
  :func:`geosynth.model.parallel.run_chunk_parallel` on 2 numba threads (and on 1, to show the
  chromatic sweep's own overhead), each from the same initial state, best of 3 timings of a
  fixed number of sweeps. This is the speed-up the issue's target is about.
- *whole fit*: ``PaivaModel.fit(parallel=False/True)`` with one chain, best of 2 wall times
  divided by its sweeps; includes the Python layer (colouring, per-cell streams, storage).

Run: ``python -m bench parallel``.
"""

from __future__ import annotations

import time
import warnings

import numba
import numpy as np

from geosynth import Grid, PaivaModel, prepare
from geosynth.datasets import paiva_scenario
from geosynth.model.fit import build_model_data
from geosynth.model.parallel import (
    cell_streams_for,
    colour_classes,
    greedy_colouring,
    run_chunk_parallel,
)
from geosynth.model.runner import initial_state
from geosynth.model.state import model_shape
from geosynth.model.sweep import run_chunk
from geosynth.samplers.rng import make_streams

SIDES = (40, 80, 160)
THREADS = 2
TARGET_SPEEDUP = 1.7  # at G >= 6,400 on 2 cores


def _counts(side: int):
    scenario = paiva_scenario(n=5 * side * side, seed=2014)
    grid = Grid.regular(scenario.bounds, shape=(side, side), crs=scenario.crs)
    return prepare(scenario.data, grid, attributes=["y", "x1", "x2"])


def _kernel_seconds(data, tables, n_sweeps, chromatic, threads) -> float:
    """Best of 3: seconds per sweep of the kernel from the same initial state (no records)."""
    G, B, n_levels = model_shape(data)
    stream = make_streams(1, 1)[0]
    out = (np.zeros((1, 2 * n_levels + 4)), np.zeros((1, G), np.float32),
           np.zeros((1, 1, G), np.float32), np.zeros((1, G, B), np.float32))
    colours = colour_classes(greedy_colouring(data.indptr, data.indices))
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        best = float("inf")
        for _ in range(3):
            state = initial_state(data, tables, stream)
            if chromatic:
                streams = cell_streams_for(stream, G)
                run_chunk_parallel(data, state, 2, 1, *out, 0, False, *colours, streams)
                start = time.perf_counter()
                run_chunk_parallel(data, state, n_sweeps, 1, *out, 0, False, *colours, streams)
            else:
                run_chunk(data, state, 2, 1, *out, 0, False)
                start = time.perf_counter()
                run_chunk(data, state, n_sweeps, 1, *out, 0, False)
            best = min(best, time.perf_counter() - start)
    finally:
        numba.set_num_threads(before)
    return best / n_sweeps


def _fit_seconds(model, counts, n_iter, parallel) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        model.fit(counts, n_iter=n_iter, burn_in=n_iter // 2, thin=1, chains=1, n_jobs=1,
                  seed=1, progress=False, parallel=parallel)
        best = min(best, time.perf_counter() - start)
    return best / n_iter


def run() -> str:
    """Time serial and chromatic sweeps per lattice size; return a Markdown table."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    threads = min(THREADS, numba.config.NUMBA_NUM_THREADS)
    model = PaivaModel()
    small = _counts(10)
    for parallel in (False, True):  # compile (or load numba's cache)
        model.fit(small, n_iter=4, burn_in=2, thin=1, chains=1, seed=0, progress=False,
                  parallel=parallel)
    lines = [
        f"| G | B | sweeps | serial ms/sweep | chromatic, 1 thread | chromatic, {threads} threads "
        f"| speed-up ({threads} threads / serial) | whole fit: serial / parallel ms per sweep "
        "| whole-fit speed-up |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for side in SIDES:
        counts = _counts(side)
        data, tables, names = build_model_data(counts, model)
        G, B, P = model_shape(data)
        n_sweeps = max(8, 400_000 // G)
        serial = _kernel_seconds(data, tables, n_sweeps, False, 1)
        one = _kernel_seconds(data, tables, n_sweeps, True, 1)
        many = _kernel_seconds(data, tables, n_sweeps, True, threads)
        n_iter = max(8, 240_000 // G)
        fit_serial = _fit_seconds(model, counts, n_iter, False)
        fit_parallel = _fit_seconds(model, counts, n_iter, True)
        lines.append(
            f"| {G:,} | {B} | {n_sweeps} | {1e3 * serial:.2f} | {1e3 * one:.2f} | "
            f"{1e3 * many:.2f} | {serial / many:.2f}× | {1e3 * fit_serial:.2f} / "
            f"{1e3 * fit_parallel:.2f} | {fit_serial / fit_parallel:.2f}× |"
        )
        print(lines[-1], flush=True)
    lines.append("")
    lines.append(f"Target: ≥ {TARGET_SPEEDUP}× on 2 cores at G ≥ 6,400, B = 12 (sampler "
                 "column). Kernel times: best of 3 from the same initial state.")
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
