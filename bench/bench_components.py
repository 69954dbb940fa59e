"""A lattice's islands: set-up and sweep cost as the connected components grow in number.

A grid clipped to a coastline, or cut by no-go areas, leaves islands: connected components of a
few cells each. Each component adds a constant to the ICAR fields' null space, and the engine's
per-component work must not grow with their number faster than their cells: until 2026-12 the
joint move along the smooth modes carried every component's constant (a lattice of 144 islands
with five levels' fields made it 936-dimensional, 54 ms a sweep on 576 cells), and the smooth
modes asked ``eigsh`` for one eigenpair more per component (25 s of set-up at 801 components).

The lattices: a 60 × 60 mainland of 100 m cells (3,600 cells, one component) and ``n`` islands
east of it, alternately 2 × 2 cells and one cell, for each ``n`` of :data:`ISLANDS`; attributes
y (3 levels) and x (4 levels), so P = 5 and B = 12, from 3·G records uniform over the
bounding box (those off the lattice dropped). For each: the seconds of
:func:`geosynth.model.fit.build_model_data` (modes, multigrid aggregates, tables), the joint
move's dimension (1 + P)·(K + C'), and the milliseconds of a sweep of one chain (the time of a
fit of 300 sweeps less that of one of 100, both after a warm-up fit, so set-up and compilation
cancel), also per cell and as a ratio to the mainland's cost per cell.

Run: ``python -m bench components`` or ``python -m bench.bench_components [--islands 0,400]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import geopandas as gpd  # noqa: E402
import shapely  # noqa: E402

import geosynth  # noqa: E402
from geosynth.model.fit import build_model_data  # noqa: E402

ISLANDS = (0, 100, 400, 1600)
MAINLAND = 60  # cells a side
CELL = 100.0  # metres
SWEEPS = (100, 300)
SEED = 1


def island_counts(n_islands: int, seed: int = SEED) -> geosynth.CellCounts:
    """The counts of the mainland and ``n_islands`` islands (module docstring)."""
    side = MAINLAND * CELL
    parts = [shapely.box(0.0, 0.0, side, side)]
    columns = int(np.ceil(np.sqrt(n_islands))) if n_islands else 0
    for k in range(n_islands):
        x0, y0 = side + 2 * CELL + (k // columns) * 3 * CELL, (k % columns) * 3 * CELL
        size = CELL if k % 2 else 2 * CELL
        parts.append(shapely.box(x0, y0, x0 + size, y0 + size))
    width = side + 2 * CELL + columns * 3 * CELL
    height = max(side, columns * 3 * CELL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the islands warning: they are the point here
        grid = geosynth.Grid.regular((0.0, 0.0, width, height),
                                     shape=(round(height / CELL), round(width / CELL)),
                                     crs="EPSG:31983", region=shapely.union_all(parts))
    rng = np.random.default_rng(seed)
    n = 3 * grid.n_cells
    points = gpd.GeoDataFrame(
        {"y": rng.integers(0, 3, n).astype(str), "x": rng.integers(0, 4, n).astype(str)},
        geometry=gpd.points_from_xy(rng.uniform(0, width, n), rng.uniform(0, height, n)),
        crs="EPSG:31983")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return geosynth.prepare(points, grid, attributes=["y", "x"], outside="drop")


def _fit_seconds(counts, sweeps: int) -> float:
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        geosynth.PaivaModel().fit(counts, n_iter=sweeps, burn_in=sweeps // 2, thin=1, chains=1,
                                  seed=SEED, progress=False, n_jobs=1)
    return time.perf_counter() - start


def measure(n_islands: int) -> dict:
    """Set-up seconds, joint dimension and ms per sweep of the lattice with ``n_islands``."""
    counts = island_counts(n_islands)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data, _, _ = build_model_data(counts, geosynth.PaivaModel())
    setup = time.perf_counter() - start
    P = data.level_combos_ptr.shape[0] - 1
    _fit_seconds(counts, 4)  # compile and warm up
    short, long = (_fit_seconds(counts, sweeps) for sweeps in SWEEPS)
    ms = (long - short) / (SWEEPS[1] - SWEEPS[0]) * 1e3
    return {"islands": n_islands, "cells": counts.grid.n_cells,
            "components": counts.grid.n_components, "setup_s": setup,
            "dimension": (1 + P) * data.modes.shape[1], "ms": ms}


def format_table(results: list[dict]) -> str:
    """Markdown table, with the cost per cell relative to the first row's (the mainland's)."""
    lines = ["| islands | cells | components | set-up s | joint move dimension | ms per sweep "
             "| µs per cell and sweep | ÷ mainland's |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    base = results[0]["ms"] / results[0]["cells"]
    for r in results:
        per_cell = r["ms"] / r["cells"]
        lines.append(f"| {r['islands']:,} | {r['cells']:,} | {r['components']:,} | "
                     f"{r['setup_s']:.2f} | {r['dimension']} | {r['ms']:.2f} | "
                     f"{per_cell * 1e3:.2f} | {per_cell / base:.2f}× |")
    lines += ["", f"One chain, B = 12, P = 5; ms per sweep from fits of {SWEEPS[1]} and "
              f"{SWEEPS[0]} sweeps (the difference), after a warm-up fit."]
    return "\n".join(lines)


def islands_list(text: str) -> tuple[int, ...]:
    """``--islands``: numbers of islands separated by commas, the first the reference."""
    try:
        values = tuple(int(item) for item in text.split(","))
    except ValueError:
        values = ()
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(
            f"expected whole numbers >= 0 separated by commas, e.g. 0,400; got {text!r}")
    return values


def run(islands: tuple[int, ...] = ISLANDS) -> str:
    """Measure every lattice of ``islands`` and return the Markdown table."""
    return format_table([measure(n) for n in islands])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--islands", type=islands_list, default=ISLANDS,
                        help="numbers of islands, separated by commas (the first is the "
                             "reference of the last column)")
    args = parser.parse_args(argv)
    print(run(args.islands))


if __name__ == "__main__":
    main()
