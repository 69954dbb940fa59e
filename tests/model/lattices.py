"""Lattices shared by the model tests."""

import geopandas as gpd
from shapely.geometry import box

from geosynth import Grid


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
