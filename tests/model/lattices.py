"""Lattices shared by the model tests."""

import geopandas as gpd
from shapely.geometry import box

from geosynth import Grid, PaivaModel, prepare
from geosynth.datasets import paiva_scenario
from geosynth.model.fit import build_model_data
from geosynth.model.runner import initial_state
from geosynth.samplers.rng import make_streams


def split_lattice(bounds, shape, column):
    """A regular lattice over ``bounds`` cut in two by excluding one column of cells.

    ``shape`` is (rows, columns); the excluded strip is column ``column`` (0-based, from the
    west), so the lattice has two connected components.
    """
    x0, y0, x1, y1 = bounds
    width = (x1 - x0) / shape[1]
    grid = Grid.regular(bounds, shape=shape, exclude=gpd.GeoSeries(
        [box(x0 + column * width, y0, x0 + (column + 1) * width, y1)]))
    assert grid.n_components == 2
    return grid


def split_lattice_chain(seed):
    """A chain's start on a 5 × 5 lattice cut in two (C = 2), one attribute (B = 2).

    ``paiva_scenario(n=150, seed=seed)`` on :func:`split_lattice` (column 2 excluded, the
    points there dropped), the default model; returns ``(data, state, grid)`` with the state
    of :func:`~geosynth.model.runner.initial_state` from ``seed``'s stream.
    """
    scenario = paiva_scenario(n=150, seed=seed)
    grid = split_lattice(scenario.bounds, (5, 5), 2)
    counts = prepare(scenario.data, grid, attributes=["y"], outside="drop")
    data, tables, _ = build_model_data(counts, PaivaModel())
    return data, initial_state(data, tables, make_streams(seed, 1)[0]), grid
