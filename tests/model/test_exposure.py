"""The exposure of a cell: a clipped cell, or an area of its size, expects its share of records.

Without the offset log a_i the ICAR prior pulled the count of a cell that a region or no-go
area cut down towards those of its whole neighbours, and releases put about twice their share
of points in cells less than half habitable: along coasts, lake shores and region edges. An
areal lattice smooths its areas' counts as counts unless built with an exposure (their area).
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


@pytest.fixture(scope="module")
def board():
    """A 6 x 6 km checkerboard of 1 km districts and 1 km blocks cut into 16 squares of 250 m.

    400 records uniform over it: half the area, and about half the records, are in the small
    squares. (A pattern of areas drawn at two scales, as wards beside rural districts.)
    """
    boxes = []
    for i in range(6):
        for j in range(6):
            if (i + j) % 2 == 0:
                boxes.append(shapely.box(i * 1000, j * 1000, (i + 1) * 1000, (j + 1) * 1000))
            else:
                boxes += [shapely.box(i * 1000 + a * 250, j * 1000 + b * 250,
                                      i * 1000 + (a + 1) * 250, j * 1000 + (b + 1) * 250)
                          for a in range(4) for b in range(4)]
    areas = gpd.GeoDataFrame({"hectares": shapely.area(boxes) / 1e4}, geometry=boxes, crs=3857)
    rng = np.random.default_rng(1)
    xy = rng.uniform(0, 6000, (400, 2))
    points = gpd.GeoDataFrame({"a": rng.integers(0, 2, 400)},
                              geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=3857)
    return areas, points


def _small_areas_share(areas, points, exposure):
    """Records, posterior expected count and mean release count in the 250 m squares."""
    grid = Grid.from_polygons(areas, exposure=exposure)
    counts = geosynth.prepare(points, grid, attributes=["a"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = geosynth.PaivaModel().fit(counts, n_iter=1000, burn_in=400, seed=3,
                                        progress=False)
    small = np.flatnonzero(areas.area.to_numpy() < 1e6)
    releases = geosynth.synthesize(fit, points, m=5, seed=5)
    placed = np.mean([np.isin(grid.locate(r), small).sum() for r in releases])
    return (counts.counts.sum(axis=1)[small].sum(),
            fit.posterior_mean_lambda().sum(axis=1)[small].sum(), placed)


def test_areas_of_two_sizes_get_their_share_with_their_area_as_exposure(board):
    # Smoothed as counts (the default), each small square is pulled towards its big
    # neighbours' counts, 16 times its own expectation: the small squares, with 217 of the
    # 400 records, expected 270 (1.24 times) and got 272 points a release. With their area as
    # exposure: 201 expected and 203 points, the uniform density's 200.
    areas, points = board
    observed, counted, counted_placed = _small_areas_share(areas, points, None)
    _, expected, placed = _small_areas_share(areas, points, "area")
    assert observed == 217
    assert counted / observed > 1.15 and counted_placed / observed > 1.15  # the test's power
    assert 0.85 < expected / observed < 1.1
    assert 0.85 < placed / observed < 1.1


def test_a_column_proportional_to_the_area_is_the_same_exposure_as_the_area(board):
    areas, points = board
    by_area = Grid.from_polygons(areas, exposure="area")
    by_column = Grid.from_polygons(areas, exposure="hectares")
    assert np.allclose(by_column.exposure, by_area.exposure, rtol=1e-12)
    assert np.allclose(np.log(by_area.exposure).mean(), 0.0, atol=1e-12)
    counts = geosynth.prepare(points, by_column, attributes=["a"])
    data, _, _ = build_model_data(counts, geosynth.PaivaModel())
    assert np.array_equal(data.log_exposure, np.log(by_column.exposure))


def test_a_population_per_cell_as_exposure_recovers_the_expected_counts():
    # Records at a uniform rate per resident of a lognormal population (sd 1 on the log
    # scale): smoothed as a density, a populous cell's count was pulled towards its
    # neighbours'; with the population as exposure the fields smooth the (flat) rate. RMSE of
    # the posterior expected count against the truth: 1.04 -> 0.17 (seeds 2 and 3 of the same
    # set-up: 1.00 -> 0.28, 1.28 -> 0.52).
    rng = np.random.default_rng(1)
    grid = Grid.regular((0, 0, 1200, 1200), shape=(12, 12), crs=3857)
    population = np.exp(rng.normal(0.0, 1.0, grid.n_cells))
    truth = 1.5 * population / population.mean()
    cells = np.repeat(np.arange(grid.n_cells), rng.poisson(truth))
    xy = geosynth.synth.place_in_cells(grid, cells, seed=1)
    points = gpd.GeoDataFrame({"a": rng.integers(0, 2, cells.size)},
                              geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=3857)
    errors = []
    for lattice in (grid, grid.with_exposure(population, source="population")):
        counts = geosynth.prepare(points, lattice, attributes=["a"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = geosynth.PaivaModel().fit(counts, n_iter=1000, burn_in=400, seed=3,
                                            progress=False)
        expected = fit.posterior_mean_lambda().sum(axis=1)
        errors.append(float(np.sqrt(np.mean((expected - truth) ** 2))))
    assert errors[1] < 0.5 * errors[0], errors
