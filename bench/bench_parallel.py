"""Seconds per sweep of the serial and the chromatic parallel Gibbs sampler.

Data: the Nunes (2018) scenario with 5 records per cell on sqrt(G) x sqrt(G) queen lattices
over the study square, B = 12 attribute combinations, the thesis' attribute-effects model. One
chain; the serial sampler (``parallel=False``) against the chromatic sampler of
:mod:`geosynth.model.parallel` (``parallel=True``) on 2 numba threads, after a compile run;
best of 2 wall times of the whole ``fit`` call divided by its sweeps.

Run: ``python -m bench parallel``.
"""

from __future__ import annotations

import time
import warnings

import numba

from geosynth import Grid, PaivaModel, prepare
from geosynth.datasets import paiva_scenario

SIDES = (40, 80, 160)
THREADS = 2
TARGET_SPEEDUP = 1.7  # at G >= 6,400 on 2 cores


def _counts(side: int):
    scenario = paiva_scenario(n=5 * side * side, seed=2014)
    grid = Grid.regular(scenario.bounds, shape=(side, side), crs=scenario.crs)
    return prepare(scenario.data, grid, attributes=["y", "x1", "x2"])


def _seconds_per_sweep(model, counts, n_iter, parallel) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        model.fit(counts, n_iter=n_iter, burn_in=n_iter // 2, thin=1, chains=1, n_jobs=1,
                  seed=1, progress=False, parallel=parallel)
        best = min(best, time.perf_counter() - start)
    return best / n_iter


def run() -> str:
    """Time serial and parallel sweeps per lattice size; return a Markdown table."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    threads_before = numba.get_num_threads()
    numba.set_num_threads(min(THREADS, numba.config.NUMBA_NUM_THREADS))
    try:
        model = PaivaModel()
        small = _counts(10)
        for parallel in (False, True):  # compile
            model.fit(small, n_iter=4, burn_in=2, thin=1, chains=1, seed=0, progress=False,
                      parallel=parallel)
        lines = [
            f"| G | B | sweeps | serial s/sweep | parallel s/sweep ({numba.get_num_threads()} "
            "threads) | speed-up |",
            "| ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for side in SIDES:
            counts = _counts(side)
            G, B = counts.counts.shape
            n_iter = max(6, 240_000 // G)
            serial = _seconds_per_sweep(model, counts, n_iter, False)
            chromatic = _seconds_per_sweep(model, counts, n_iter, True)
            lines.append(f"| {G:,} | {B} | {n_iter} | {serial:.4f} | {chromatic:.4f} | "
                         f"{serial / chromatic:.2f}× |")
    finally:
        numba.set_num_threads(threads_before)
    lines.append("")
    lines.append(f"Target: ≥ {TARGET_SPEEDUP}× on 2 cores at G ≥ 6,400, B = 12.")
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
