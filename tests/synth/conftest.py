"""Fixtures of the synthesizer tests."""

import pytest

from geosynth import Grid, prepare
from tests.synth.helpers import CRS, make_points


@pytest.fixture(scope="module")
def regular_data():
    """3000 points on a 3 x 4 lattice of 30 m cells, prepared with a continuous z."""
    gdf = make_points(3000, seed=1)
    grid = Grid.regular((0, 0, 120, 90), shape=(3, 4), crs=CRS)
    counts = prepare(gdf, grid, attributes=["a", "c"], continuous="z")
    return gdf, grid, counts
