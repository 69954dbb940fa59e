"""Run time of linking islands (``Grid.from_polygons(..., islands="nearest")``, ``--link-islands``).

Areal units of archipelagos and coasts (Indonesian desa, Philippine barangays, Greek
municipalities) hold tens of thousands of areas and hundreds or thousands of groups made only
of islands. Layout: a mainland of 200 x 100 unit squares and, in the sea east of it, groups of
small islands (0.4 wide, 0.2 apart, each island nearer to its group than to anything else) on a
jittered lattice of spacing 4, ids shuffled: pairs, or clusters of 3-5 islands. Each group is
linked by its nearest pair to the nearest area outside it, group after group
(``geosynth._areas.link_islands``); the loop this replaced, with one STRtree and one component
labelling per group, took 15 s (500 pairs, median of 3), 158 s (2,000 pairs) and 40 s (500
clusters; single runs) on a 2-core AMD EPYC.

Run: ``python -m bench islands`` (records to RESULTS.md) or ``python -m bench.bench_islands``.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import geopandas as gpd
import numpy as np
import shapely

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._timing import best_of  # noqa: E402
from geosynth._areas import area_contiguity, link_islands  # noqa: E402
from geosynth.lattice import Grid  # noqa: E402

CASES = ((500, (2,)), (2_000, (2,)), (500, (3, 4, 5)), (2_000, (3, 4, 5)))
TARGET = 10.0  # seconds for link_islands: "in seconds", not minutes


def archipelago(n_groups: int, sizes: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """The mainland's 20,000 squares and ``n_groups`` island groups of ``sizes``, shuffled."""
    rng = np.random.default_rng(seed)
    width, height = 200, 100
    x, y = np.meshgrid(np.arange(width), np.arange(height), indexing="ij")
    mainland = shapely.box(x.ravel(), y.ravel(), x.ravel() + 1, y.ravel() + 1)
    rows = height // 4
    islands = []
    for group in range(n_groups):
        col, row = divmod(group, rows)
        x0, y0 = width + 2 + 4 * col + rng.uniform(0, 0.8), 4 * row + rng.uniform(0, 0.8)
        for member in range(int(rng.choice(sizes))):
            islands.append(shapely.box(x0 + 0.6 * member, y0, x0 + 0.6 * member + 0.4, y0 + 0.4))
    polygons = np.concatenate([mainland, np.array(islands, dtype=object)])
    return polygons[rng.permutation(polygons.size)]


def run(cases: tuple[tuple[int, tuple[int, ...]], ...] = CASES) -> str:
    """Time link_islands (best of 3) and Grid.from_polygons (1 run); return a Markdown table."""
    lines = [
        "link_islands: best of 3 (contiguity given); from_polygons: 1 run (includes the "
        "contiguity of all areas).",
        "",
        "| island groups | areas | links | link_islands s | from_polygons s | target | ok |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for n_groups, sizes in cases:
        polygons = archipelago(n_groups, sizes)
        adjacency = area_contiguity(polygons, rook=False)
        link_s, (_, links) = best_of(lambda p=polygons, a=adjacency: link_islands(p, a))
        areas = gpd.GeoDataFrame(geometry=polygons, crs="EPSG:3857")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            build_s, grid = best_of(lambda a=areas: Grid.from_polygons(a, islands="nearest"),
                                    repeats=1)
        assert grid.n_components == 1 and np.array_equal(grid.linked_islands, links)
        kind = "pairs" if sizes == (2,) else f"clusters of {min(sizes)}-{max(sizes)}"
        ok = "ok" if link_s < TARGET else "MISSED"
        lines.append(f"| {n_groups:,} {kind} | {polygons.size:,} | {len(links):,} | "
                     f"{link_s:.2f} | {build_s:.2f} | < {TARGET:g} s | {ok} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
