"""Build and point-location times of :class:`geosynth.lattice.Grid`.

Targets (from the lattice issue): a 1000 x 1000 queen lattice with adjacency and connected
components in < 10 s, and 10^7 uniform points located in < 5 s on the regular grid. The clipped
rows (a disc with a hole over the same lattice) use the same targets for reference.

Run: ``python -m bench lattice`` (records to RESULTS.md), ``python -m bench.bench_lattice`` or
``python bench/bench_lattice.py`` (print only).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import shapely

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._timing import best_of
from geosynth.lattice import Grid  # noqa: E402

SIDE = 1000
N_POINTS = 10_000_000
BUILD_TARGET = 10.0
LOCATE_TARGET = 5.0
BOUNDS = (0.0, 0.0, 1000.0, 1000.0)



def _build_regular(side: int) -> Grid:
    grid = Grid.regular(BOUNDS, shape=(side, side), contiguity="queen")
    assert grid.n_components == 1 and grid.adjacency.nnz == 4 * (side - 1) * (2 * side - 1)
    return grid


def _build_clipped(side: int) -> Grid:
    region = shapely.Point(500, 500).buffer(480)
    hole = shapely.Point(500, 500).buffer(150)
    return Grid.regular(BOUNDS, shape=(side, side), region=region, exclude=hole)


def run(side: int = SIDE, n_points: int = N_POINTS) -> str:
    """Time lattice construction and point location; return a Markdown table."""
    rng = np.random.default_rng(20140101)
    xy = rng.uniform(0.0, 1000.0, size=(n_points, 2))

    build_s, grid = best_of(lambda: _build_regular(side))
    locate_s, cells = best_of(lambda: grid.locate(xy))
    assert np.all(cells >= 0)
    clip_build_s, clipped = best_of(lambda: _build_clipped(side), repeats=1)
    clip_locate_s, clip_cells = best_of(lambda: clipped.locate(xy))
    inside = float(np.mean(clip_cells >= 0))

    size = f"{side} x {side}"
    rows = [
        ("build regular queen lattice + adjacency + components", size, build_s, BUILD_TARGET),
        ("locate uniform points, regular lattice", f"{n_points:,} points", locate_s, LOCATE_TARGET),
        (
            f"build clipped lattice (disc with hole, {clipped.n_cells:,} cells)",
            size,
            clip_build_s,
            BUILD_TARGET,
        ),
        (
            f"locate uniform points, clipped lattice ({inside:.1%} kept)",
            f"{n_points:,} points",
            clip_locate_s,
            LOCATE_TARGET,
        ),
    ]
    lines = [
        "Build times are best of 3 (clipped build: 1 run); locate times best of 3.",
        "",
        "| task | size | seconds | target | ok |",
        "| --- | --- | ---: | --- | --- |",
    ]
    for task, what, seconds, target in rows:
        ok = "ok" if seconds < target else "MISSED"
        lines.append(f"| {task} | {what} | {seconds:.2f} | < {target:g} s | {ok} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
