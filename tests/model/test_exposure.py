"""The habitable fraction of a cell is its exposure: a clipped cell expects its share of records.

Without the offset log a_i the ICAR prior pulled the count of a cell that a region or no-go
area cut down towards those of its whole neighbours, and releases put about twice their share
of points in cells less than half habitable: along coasts, lake shores and region edges.
"""

import warnings

import geopandas as gpd
import numpy as np
import pytest
import shapely

import geosynth
from geosynth import Grid
from geosynth.model.fit import build_model_data


@pytest.fixture(scope="module")
def disc():
    """400 points uniform in a disc with six lakes, over a 10 x 10 lattice; a fit of two chains."""
    rng = np.random.default_rng(1)
    region = shapely.Point(5, 5).buffer(4.6)
    lakes = shapely.union_all([shapely.Point(x, y).buffer(0.7)
                               for x, y in rng.uniform(1.5, 8.5, (6, 2))])
    xy = rng.uniform(0, 10, (8000, 2))
    habitable = (shapely.contains_xy(region, xy[:, 0], xy[:, 1])
                 & ~shapely.contains_xy(lakes, xy[:, 0], xy[:, 1]))
    xy = xy[habitable][:400]
    points = gpd.GeoDataFrame({"a": rng.integers(0, 2, len(xy))},
                              geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=3857)
    grid = Grid.regular((0, 0, 10, 10), shape=(10, 10), crs=3857, region=region, exclude=lakes)
    counts = geosynth.prepare(points, grid, attributes=["a"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = geosynth.PaivaModel().fit(counts, n_iter=1000, burn_in=400, seed=3,
                                        progress=False)
    return points, grid, counts, fit


def test_the_exposure_is_the_log_habitable_fraction_and_zero_for_whole_cells(disc):
    _, grid, counts, fit = disc
    data, _, _ = build_model_data(counts, fit.model)
    assert np.array_equal(data.log_exposure, np.log(grid.habitable_fraction))
    whole = Grid.regular((0, 0, 10, 10), shape=(10, 10), crs=3857)
    assert np.array_equal(np.log(whole.habitable_fraction), np.zeros(100))


def test_cells_cut_down_by_the_region_expect_their_share_of_records(disc):
    # Density is uniform over the habitable area, so a cell's records follow its habitable
    # area. The 27 cells less than half habitable hold 31 records (32.7 by their area); their
    # posterior expected count was 67.6 without the exposure (2.2 times), and is 32.6 with it.
    points, grid, counts, fit = disc
    part = grid.habitable_fraction < 0.5
    observed = counts.counts.sum(axis=1)[part].sum()
    expected = fit.posterior_mean_lambda().sum(axis=1)[part].sum()
    assert part.sum() == 27 and observed == 31
    assert 0.75 < expected / observed < 1.33
    # The releases too: their points in those cells are about the records' number.
    releases = geosynth.synthesize(fit, points, m=5, seed=5)
    placed = [np.isin(grid.locate(r), np.flatnonzero(part)).sum() for r in releases]
    assert 0.75 * observed < np.mean(placed) < 1.33 * observed, placed
