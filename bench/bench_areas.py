"""Point location on hexagonal and areal lattices.

Targets (from the areal-units issue): 10^7 points located on ~2,000 polygons in < 30 s, and on
a hexagonal lattice "in seconds, like the square lattice" (the square lattice's target is
< 5 s). The polygons are a Voronoi tessellation of 2,000 random seeds over a 100 km square,
densified to a vertex at least every 500 m (the median is printed). The first areal
call includes building the bin index; the second reuses it. A peer row times geopandas'
``sjoin`` (STRtree with ``intersects``) on the same points, the usual analyst's way.

Run: ``python -m bench areas`` (records to RESULTS.md) or ``python -m bench.bench_areas``.
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

from bench._timing import best_of
from geosynth.lattice import Grid  # noqa: E402

N_POINTS = 10_000_000
N_AREAS = 2_000
SIDE = 100_000.0
AREAL_TARGET = 30.0
HEX_TARGET = 5.0


def tessellation(n_areas: int, seed: int = 7) -> gpd.GeoDataFrame:
    """Voronoi cells of random seeds over the square, densified every 500 m."""
    rng = np.random.default_rng(seed)
    square = shapely.box(0.0, 0.0, SIDE, SIDE)
    seeds = shapely.MultiPoint(rng.uniform(0.0, SIDE, size=(n_areas, 2)))
    cells = shapely.get_parts(shapely.voronoi_polygons(seeds, extend_to=square))
    cells = shapely.segmentize(shapely.intersection(cells, square), 500.0)
    return gpd.GeoDataFrame(geometry=cells, crs="EPSG:3857")


def run(n_points: int = N_POINTS, n_areas: int = N_AREAS) -> str:
    """Time locate on ~2,000 areas and on hexagons; return a Markdown table."""
    rng = np.random.default_rng(20140101)
    xy = rng.uniform(0.0, SIDE, size=(n_points, 2))
    areas = tessellation(n_areas)
    vertices = int(np.median(shapely.get_num_coordinates(np.asarray(areas.geometry.array))))
    build_s, areal = best_of(lambda: Grid.from_polygons(areas), repeats=1)
    first_s, cells = best_of(lambda: Grid.from_polygons(areas).locate(xy), repeats=1)
    areal.locate(xy[:1])  # builds the bin index
    again_s, again = best_of(lambda: areal.locate(xy), repeats=3)
    assert np.array_equal(cells, again) and (cells >= 0).all()
    hexagons = Grid.hexagonal((0.0, 0.0, SIDE, SIDE), cell_size=1_000.0)
    hex_s, hex_cells = best_of(lambda: hexagons.locate(xy), repeats=3)
    assert (hex_cells >= 0).all()
    square = Grid.regular((0.0, 0.0, SIDE, SIDE), cell_size=1_000.0)
    square_s, _ = best_of(lambda: square.locate(xy), repeats=3)
    sample = xy[:1_000_000]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        points = gpd.GeoDataFrame(geometry=gpd.points_from_xy(sample[:, 0], sample[:, 1]),
                                  crs=areas.crs)
        sjoin_s, joined = best_of(lambda: gpd.sjoin(points, areas, predicate="intersects"),
                                  repeats=1)
    assert len(joined) >= len(sample)
    ours_million = again_s * len(sample) / n_points
    rows = [
        (f"build areal lattice + contiguity ({n_areas:,} areas, median {vertices} vertices)",
         "", build_s, None),
        (f"locate on {n_areas:,} areas, first call (builds the bin index)",
         f"{n_points:,} points", first_s, AREAL_TARGET),
        (f"locate on {n_areas:,} areas, index built", f"{n_points:,} points", again_s,
         AREAL_TARGET),
        (f"locate on {hexagons.n_cells:,} hexagons (side 1 km)", f"{n_points:,} points", hex_s,
         HEX_TARGET),
        (f"locate on {square.n_cells:,} square cells (1 km), for reference",
         f"{n_points:,} points", square_s, HEX_TARGET),
        (f"peer: geopandas {gpd.__version__} sjoin(intersects) on the areas "
         f"(ours: {ours_million:.2f} s, ratio {sjoin_s / ours_million:.0f}x)",
         f"{len(sample):,} points", sjoin_s, None),
    ]
    lines = [
        "Areal first call: 1 run (includes Grid.from_polygons); other locates best of 3.",
        "",
        "| task | size | seconds | target | ok |",
        "| --- | --- | ---: | --- | --- |",
    ]
    for task, what, seconds, target in rows:
        ok = "-" if target is None else ("ok" if seconds < target else "MISSED")
        shown = "-" if target is None else f"< {target:g} s"
        lines.append(f"| {task} | {what} | {seconds:.2f} | {shown} | {ok} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
