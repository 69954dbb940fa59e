"""Points inside cells: habitable geometry, uniformity, raster weights and validation."""

import warnings

import geopandas as gpd
import numpy as np
import pytest
import shapely
from affine import Affine
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy import stats
from shapely.geometry import Point, Polygon, box

from geosynth import Grid
from geosynth.errors import (
    CRSError,
    DataWarning,
    GridError,
    InputError,
    IsolatedCellWarning,
    MemoryLimitError,
    PrivacyLeakWarning,
)
from geosynth.rasters import read_weights
from geosynth.synth import PixelTable, place_in_cells
from tests.synth.helpers import CRS, from_origin, write_raster

ALPHA = 1e-3


def quiet_grid(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        warnings.simplefilter("ignore", DataWarning)  # random holes may miss the region
        return Grid.regular(*args, **kwargs)


def place_weighted(grid, cells, seed=None, raster=None):
    """``place_in_cells`` with the raster read for the grid, as geosynth.synthesize reads it."""
    return place_in_cells(grid, cells, seed=seed, weights=read_weights(raster, grid))


def assert_in_cells(grid, cells, xy):
    x, y = xy[:, 0], xy[:, 1]
    np.testing.assert_array_equal(grid.locate(xy), cells)
    assert shapely.contains_xy(np.asarray(grid.habitable_geometry)[cells], x, y).all()
    bounds = grid.cell_bounds(cells)
    assert ((x >= bounds[:, 0]) & (x < bounds[:, 2])).all()
    assert ((y >= bounds[:, 1]) & (y < bounds[:, 3])).all()


# ---------------------------------------------------------------------- geometry (property tests)
@settings(max_examples=40, deadline=None)
@given(
    xmin=st.floats(-1e6, 1e6),
    ymin=st.floats(-1e6, 1e6),
    width=st.floats(1e-2, 1e5),
    height=st.floats(1e-2, 1e5),
    nrows=st.integers(1, 7),
    ncols=st.integers(1, 7),
    seed=st.integers(0, 2**32 - 1),
)
def test_regular_grid_points_lie_in_their_cells(xmin, ymin, width, height, nrows, ncols, seed):
    grid = quiet_grid((xmin, ymin, xmin + width, ymin + height), shape=(nrows, ncols))
    cells = np.random.default_rng(seed).integers(0, grid.n_cells, 300)
    xy = place_in_cells(grid, cells, seed=seed)
    assert_in_cells(grid, cells, xy)


# Coordinates on a 1e-6 lattice: GEOS overlays lose robustness with vertices near 1e-200 (a
# box ∩ region result can then differ from the true intersection), which is not what we test.
coordinate = st.floats(-2, 12).map(lambda v: round(v, 6))
polygon_points = st.lists(st.tuples(coordinate, coordinate), min_size=3, max_size=7)
circles = st.lists(st.tuples(st.floats(0, 10), st.floats(0, 10), st.floats(0.2, 3.0)), max_size=3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    region_points=polygon_points,
    holes=circles,
    nrows=st.integers(1, 6),
    ncols=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_clipped_grid_points_lie_in_habitable_geometry(region_points, holes, nrows, ncols, seed):
    region = shapely.convex_hull(shapely.multipoints(region_points))
    assume(region.geom_type == "Polygon" and region.area > 1.0)
    exclude = [Point(x, y).buffer(r) for x, y, r in holes] or None
    try:
        grid = quiet_grid((0, 0, 10, 10), shape=(nrows, ncols), region=region, exclude=exclude)
    except GridError:
        assume(False)
    cells = np.random.default_rng(seed).integers(0, grid.n_cells, 400)
    xy = place_in_cells(grid, cells, seed=seed)
    assert_in_cells(grid, cells, xy)
    # Checked against the polygons themselves, not only the grid's clipped geometry.
    assert shapely.intersects_xy(region, xy[:, 0], xy[:, 1]).all()
    if exclude is not None:
        holes_union = shapely.union_all(exclude)
        assert not shapely.contains_xy(holes_union, xy[:, 0], xy[:, 1]).any()


def test_thin_diagonal_sliver_is_sampled_inside():
    # A band of width ~0.01 along the diagonal of a 10 x 10 cell: ~0.1% of its bounding box.
    band = Polygon([(0, 0), (0.01, 0), (10, 9.99), (10, 10), (9.99, 10), (0, 0.01)])
    grid = quiet_grid((0, 0, 10, 10), shape=(1, 1), region=band)
    assert grid.habitable_fraction[0] < 0.002
    cells = np.zeros(2000, dtype=np.int64)
    xy = place_in_cells(grid, cells, seed=4)
    assert_in_cells(grid, cells, xy)
    assert shapely.contains_xy(band, xy[:, 0], xy[:, 1]).all()
    # Spread along the whole band, not stuck at one end.
    assert stats.kstest(xy[:, 0], stats.uniform(0, 10).cdf).pvalue > ALPHA


def test_slivers_far_thinner_than_their_box_are_sampled_uniformly_from_their_triangles():
    # A diagonal strip 1e-4 m wide across a 1 km cell and a horizontal one 3e-4 m wide fill
    # 4e-7 of its box: drawing from the box took 78 s for 20 points in such a strip, and one
    # 1e-6 m wide failed after 408 s.
    x0, y0, side = 500_000.0, 5_000_000.0, 1000.0
    diagonal = Polygon([(x0, y0), (x0 + 1e-4, y0), (x0 + side, y0 + side - 1e-4),
                        (x0 + side, y0 + side)])
    across = box(x0, y0 + 500.0, x0 + side, y0 + 500.0 + 3e-4)
    habitable = shapely.union_all([diagonal, across])
    grid = quiet_grid((x0, y0, x0 + side, y0 + side), shape=(1, 1), crs=CRS, region=habitable)
    assert grid.habitable_fraction[0] < 1e-6
    cells = np.zeros(6000, dtype=np.int64)
    xy = place_in_cells(grid, cells, seed=5)
    assert_in_cells(grid, cells, xy)
    on_diagonal = shapely.contains_xy(diagonal, xy[:, 0], xy[:, 1])
    share = diagonal.area / habitable.area  # ~ 1 : 3, as the areas
    assert stats.binomtest(int(on_diagonal.sum()), xy.shape[0], share).pvalue > ALPHA
    # uniform along each strip: x is uniform over the cell's width on both
    for points in (xy[on_diagonal], xy[~on_diagonal]):
        assert stats.kstest(points[:, 0] - x0, stats.uniform(0, side).cdf).pvalue > ALPHA
    finer = Polygon([(x0, y0), (x0 + 1e-6, y0), (x0 + side, y0 + side - 1e-6),
                     (x0 + side, y0 + side)])
    sliver = quiet_grid((x0, y0, x0 + side, y0 + side), shape=(1, 1), crs=CRS, region=finer)
    xy = place_in_cells(sliver, np.zeros(50, dtype=np.int64), seed=6)
    assert shapely.contains_xy(finer, xy[:, 0], xy[:, 1]).all()


def test_a_sliver_under_a_weights_raster_is_sampled_from_its_triangles(tmp_path):
    # The same strip 1e-4 m wide under 250 m pixels: its pieces (pixel ∩ strip) fill 1e-7 of
    # their boxes, and drawing from the boxes was as slow.
    x0, y0, side = 500_000.0, 5_000_000.0, 1000.0
    diagonal = Polygon([(x0, y0), (x0 + 1e-4, y0), (x0 + side, y0 + side - 1e-4),
                        (x0 + side, y0 + side)])
    grid = quiet_grid((x0, y0, x0 + side, y0 + side), shape=(1, 1), crs=CRS, region=diagonal)
    values = np.ones((4, 4))
    values[0, 3] = 5.0  # the north-east pixel, one of the four the strip crosses
    raster = write_raster(tmp_path / "w.tif", values, from_origin(x0, y0 + side, 250, 250))
    cells = np.zeros(4000, dtype=np.int64)
    xy = place_weighted(grid, cells, seed=7, raster=raster)
    assert_in_cells(grid, cells, xy)
    assert shapely.contains_xy(diagonal, xy[:, 0], xy[:, 1]).all()
    north_east = int(((xy[:, 0] > x0 + 750) & (xy[:, 1] > y0 + 750)).sum())
    assert stats.binomtest(north_east, cells.size, 5 / 8).pvalue > ALPHA  # equal lengths


def test_placement_never_prepares_the_grids_own_geometries(tmp_path):
    # shapely.prepare changes the objects it is given, and GEOS's prepared geometries are not
    # thread-safe: releases placed in threads on one grid (synthesize_dask) prepared and tested
    # the same objects at once. Each call now prepares copies, with the same draws.
    grid = quiet_grid((0, 0, 10, 10), shape=(2, 2), crs=CRS,
                      region=Polygon([(0, 0), (10, 0), (0, 10)]))
    cells = np.repeat(np.arange(grid.n_cells), 50)
    xy = place_in_cells(grid, cells, seed=3)
    assert not shapely.is_prepared(np.asarray(grid.habitable_geometry)).any()
    np.testing.assert_array_equal(place_in_cells(grid, cells, seed=3), xy)
    # With weights: reading the raster locates its pixels, and the grid prepares its own
    # geometries for that (under its lock); undone here to see what the placement does.
    path = write_raster(tmp_path / "w.tif", np.ones((10, 10)), from_origin(0, 10, 1, 1))
    weights = read_weights(path, grid)
    place_in_cells(grid, cells, seed=3, weights=weights)
    shapely.destroy_prepared(np.asarray(grid.habitable_geometry))
    place_in_cells(grid, cells, seed=3, weights=weights)
    assert not shapely.is_prepared(np.asarray(grid.habitable_geometry)).any()


# ---------------------------------------------------------------------- uniformity
def test_uniform_in_box_cell_ks():
    grid = Grid.regular((2, 3, 12, 23), shape=(2, 2))
    cell = 3  # box (7, 13, 12, 23)
    np.testing.assert_array_equal(grid.cell_bounds(cell), [[7, 13, 12, 23]])
    xy = place_in_cells(grid, np.full(5000, cell), seed=11)
    assert stats.kstest(xy[:, 0], stats.uniform(7, 5).cdf).pvalue > ALPHA
    assert stats.kstest(xy[:, 1], stats.uniform(13, 10).cdf).pvalue > ALPHA
    # The test has power: the same points are far from uniform on a shifted interval.
    assert stats.kstest(xy[:, 0], stats.uniform(7.5, 5).cdf).pvalue < ALPHA


def test_uniform_over_partial_cell_chi_square():
    grid = quiet_grid((0, 0, 4, 4), shape=(1, 1), exclude=box(0, 0, 2, 2))  # an L of area 12
    assert not grid.fully_habitable[0]
    xy = place_in_cells(grid, np.zeros(12_000, dtype=np.int64), seed=5)
    unit = np.floor(xy[:, 0]).astype(int) * 4 + np.floor(xy[:, 1]).astype(int)
    counts = np.bincount(unit, minlength=16).reshape(4, 4)  # [x square, y square]
    assert counts[:2, :2].sum() == 0
    observed = np.concatenate([counts[2:, :].ravel(), counts[:2, 2:].ravel()])
    assert stats.chisquare(observed).pvalue > ALPHA


def test_mixed_cells_keep_input_order():
    grid = Grid.regular((0, 0, 30, 10), shape=(1, 3), exclude=box(12, 2, 18, 8))
    cells = np.array([1, 0, 2, 1, 1, 0])
    xy = place_in_cells(grid, cells, seed=0)
    assert_in_cells(grid, cells, xy)


def test_reproducible_by_seed():
    grid = Grid.regular((0, 0, 10, 10), shape=(3, 3), exclude=Point(5, 5).buffer(2))
    cells = np.arange(9).repeat(20)
    a = place_in_cells(grid, cells, seed=3)
    np.testing.assert_array_equal(a, place_in_cells(grid, cells, seed=3))
    assert not np.array_equal(a, place_in_cells(grid, cells, seed=4))
    rng = np.random.default_rng(3)
    np.testing.assert_array_equal(a, place_in_cells(grid, cells, seed=rng))


def test_empty_cells_give_empty_array():
    grid = Grid.regular((0, 0, 10, 10), shape=(2, 2))
    assert place_in_cells(grid, np.array([], dtype=np.int64), seed=1).shape == (0, 2)


@pytest.mark.parametrize(
    ("cells", "match"),
    [
        ([0.5, 1.0], "integer cell ids"),
        ([[0, 1]], "1-d array"),
        ([0, 4], r"0\.\.3"),
        ([-1], r"0\.\.3"),
    ],
)
def test_bad_cells_are_refused(cells, match):
    grid = Grid.regular((0, 0, 10, 10), shape=(2, 2))
    with pytest.raises(InputError, match=match):
        place_in_cells(grid, cells)


def test_grid_must_be_a_grid():
    with pytest.raises(InputError, match="grid must be a geosynth.lattice.Grid"):
        place_in_cells("grid", [0])


# ---------------------------------------------------------------------- raster weights
def unit_grid(**kwargs):
    return quiet_grid((0, 0, 100, 100), crs=CRS, **kwargs)


def test_all_weight_in_one_quadrant_puts_all_points_there(tmp_path):
    values = np.zeros((10, 10))
    values[:5, 5:] = 1.0  # rows count from the north: the north-east quadrant
    path = write_raster(tmp_path / "w.tif", values, from_origin(0, 100, 10, 10))
    grid = unit_grid(shape=(1, 1))
    xy = place_weighted(grid, np.zeros(3000, dtype=np.int64), seed=2, raster=path)
    assert (xy[:, 0] >= 50).all() and (xy[:, 1] >= 50).all()
    assert stats.kstest(xy[:, 0], stats.uniform(50, 50).cdf).pvalue > ALPHA
    assert stats.kstest(xy[:, 1], stats.uniform(50, 50).cdf).pvalue > ALPHA


def test_a_cell_of_small_weights_beside_one_of_huge_weights(tmp_path):
    # Cell 1's pixels weigh 1 and 3, next to cell 0's 1e17: one running sum over all cells
    # made cell 1's total 2e17 + 4 − 2e17 = 0, so its points fell uniformly (half, not 3/4, in
    # the heavier pixel) with a false "no pixel of positive weight" warning.
    path = write_raster(tmp_path / "w.tif", [[1e17, 1e17, 1.0, 3.0]], from_origin(0, 1, 1, 1))
    grid = Grid.regular((0, 0, 4, 1), shape=(1, 2), crs=CRS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xy = place_weighted(grid, np.ones(20_000, dtype=np.int64), seed=1, raster=path)
    heavier = int((xy[:, 0] >= 3).sum())
    assert stats.binomtest(heavier, 20_000, 0.75).pvalue > ALPHA


def test_weights_near_the_float_maximum_keep_their_ratios(tmp_path):
    # Finite weights of 1e308 and 3e308 summed to inf: every cell fell back to uniform
    # placement (half, not 3/4, in the heavier pixel) with a false warning.
    path = write_raster(tmp_path / "w.tif", [[1e308, 1.7e308 * 0.9, 1.0, 3.0]],
                        from_origin(0, 1, 1, 1))
    grid = Grid.regular((0, 0, 4, 1), shape=(1, 2), crs=CRS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xy = place_weighted(grid, np.zeros(20_000, dtype=np.int64), seed=3, raster=path)
    heavier = int((xy[:, 0] >= 1).sum())
    assert stats.binomtest(heavier, 20_000, 1.53 / 2.53).pvalue > ALPHA


def test_truncated_and_huge_weight_rasters_are_refused_clearly(tmp_path, monkeypatch):
    from geosynth import rasters
    from geosynth.errors import MemoryLimitError

    values = np.random.default_rng(4).random((200, 200))
    path = write_raster(tmp_path / "w.tif", values, from_origin(0, 100, 0.5, 0.5))
    monkeypatch.setattr(rasters, "MAX_WEIGHT_PIXELS", 100)
    with pytest.raises(MemoryLimitError, match="40,000 pixels over the grid.*gdalwarp -tr"):
        place_weighted(unit_grid(shape=(1, 1)), [0], raster=path)
    monkeypatch.undo()
    truncated = tmp_path / "t.tif"
    truncated.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(InputError, match="t.tif' cannot be (opened as a raster|read)"):
        place_weighted(unit_grid(shape=(1, 1)), [0], raster=truncated)


def pixel_of(xy, size=25.0, top=100.0):
    col = np.floor(xy[:, 0] / size).astype(int)
    row = np.floor((top - xy[:, 1]) / size).astype(int)
    return row, col


def test_pixel_proportions_follow_weights_chi_square(tmp_path):
    rng = np.random.default_rng(8)
    values = rng.integers(0, 5, (4, 4)).astype(float)
    values[3, 0] = 0.0  # one zero pixel in cell 0 (south-west)
    values[2, 0] = 3.0
    path = write_raster(tmp_path / "w.tif", values, from_origin(0, 100, 25, 25))
    grid = unit_grid(shape=(2, 2))
    for cell, rows, cols in [(0, [2, 3], [0, 1]), (3, [0, 1], [2, 3])]:
        n = 20_000
        xy = place_weighted(grid, np.full(n, cell), seed=cell, raster=path)
        row, col = pixel_of(xy)
        observed = np.zeros((4, 4), dtype=int)
        np.add.at(observed, (row, col), 1)
        block = np.ix_(rows, cols)
        assert observed.sum() == observed[block].sum() == n
        weights = values[block].ravel()
        counts = observed[block].ravel()
        assert (counts[weights == 0] == 0).all()
        positive = weights > 0
        expected = n * weights[positive] / weights[positive].sum()
        assert stats.chisquare(counts[positive], expected).pvalue > ALPHA
        if positive.sum() > 1 and np.ptp(weights[positive]) > 0:
            uniform = np.full(positive.sum(), n / positive.sum())
            assert stats.chisquare(counts[positive], uniform).pvalue < ALPHA


def test_pixel_area_rule_and_partial_cells(tmp_path):
    # Excluding x < 45 keeps the habitable half [45, 50) of the pixel column [40, 50): it weighs
    # half a whole column, so columns 4..9 are drawn in the ratio 1/2 : 1 : 1 : 1 : 1 : 1 (a
    # uniform density over the habitable part, as the constant raster says).
    path = write_raster(tmp_path / "w.tif", np.ones((10, 10)), from_origin(0, 100, 10, 10))
    grid = unit_grid(shape=(1, 1), exclude=box(-1, -1, 45, 101))
    n = 12_000
    xy = place_weighted(grid, np.zeros(n, dtype=np.int64), seed=6, raster=path)
    assert_in_cells(grid, np.zeros(n, dtype=np.int64), xy)
    assert (xy[:, 0] >= 45).all()
    col = np.floor(xy[:, 0] / 10).astype(int)
    counts = np.bincount(col, minlength=10)
    assert counts[:4].sum() == 0
    share = np.array([0.5, 1, 1, 1, 1, 1]) / 5.5
    assert stats.chisquare(counts[4:], n * share).pvalue > ALPHA
    # Uniform within the habitable half of column 4.
    in4 = xy[col == 4, 0]
    assert stats.kstest(in4, stats.uniform(45, 5).cdf).pvalue > ALPHA


def test_pixels_straddling_cell_edges_leave_no_strip_empty(tmp_path):
    # 250 m cells under a constant raster of 100 m pixels: each pixel went wholly to the cell
    # holding its centre, and the strips of the other cell under it got no point (36 % of one
    # cell). Split by area, the points are uniform over every cell.
    grid = quiet_grid((0, 0, 500, 500), crs=CRS, shape=(2, 2))
    path = write_raster(tmp_path / "w.tif", np.ones((5, 5)), from_origin(0, 500, 100, 100))
    for cell in range(grid.n_cells):
        xy = place_weighted(grid, np.full(4000, cell), seed=cell, raster=path)
        x0, y0, x1, y1 = grid.cell_bounds(cell)[0]
        assert stats.kstest(xy[:, 0], stats.uniform(x0, x1 - x0).cdf).pvalue > ALPHA
        assert stats.kstest(xy[:, 1], stats.uniform(y0, y1 - y0).cdf).pvalue > ALPHA


def test_a_table_read_for_another_lattice_is_refused(tmp_path):
    # Read for a 2 x 2 lattice elsewhere, the table had this one's number of cells: every
    # point went into the other lattice's pixels, outside this one, without a word.
    path = write_raster(tmp_path / "w.tif", np.ones((4, 4)), from_origin(0, 100, 25, 25))
    here = unit_grid(shape=(2, 2))
    elsewhere = quiet_grid((5000, 5000, 5100, 5100), crs=CRS, shape=(2, 2))
    other = write_raster(tmp_path / "o.tif", np.ones((4, 4)), from_origin(5000, 5100, 25, 25))
    with pytest.raises(InputError, match="weights is a PixelTable read for another lattice"):
        place_in_cells(here, [0, 1], seed=1, weights=read_weights(other, elsewhere))
    same = quiet_grid((0, 0, 100, 100), crs=CRS, shape=(2, 2))  # built alike: equal
    assert place_in_cells(here, [0, 1], seed=1, weights=read_weights(path, same)).shape == (2, 2)


def test_nodata_pixels_get_no_points(tmp_path):
    values = np.ones((4, 4))
    values[2:, :2] = -9999.0  # nodata over most of cell 0
    values[3, 1] = 1.0
    path = write_raster(tmp_path / "w.tif", values, from_origin(0, 100, 25, 25), nodata=-9999.0)
    grid = unit_grid(shape=(2, 2))
    xy = place_weighted(grid, np.zeros(500, dtype=np.int64), seed=1, raster=path)
    row, col = pixel_of(xy)
    assert ((row == 3) & (col == 1)).all()


def test_dataset_and_path_give_the_same_points(tmp_path):
    import rasterio

    rng = np.random.default_rng(0)
    path = write_raster(tmp_path / "w.tif", rng.random((8, 8)), from_origin(0, 100, 12.5, 12.5))
    grid = unit_grid(shape=(2, 2))
    cells = np.arange(4).repeat(50)
    from_path = place_weighted(grid, cells, seed=9, raster=path)
    with rasterio.open(path) as dataset:
        from_dataset = place_weighted(grid, cells, seed=9, raster=dataset)
        assert not dataset.closed
    np.testing.assert_array_equal(from_path, from_dataset)
    assert_in_cells(grid, cells, from_path)


def test_raster_larger_than_grid_and_offset(tmp_path):
    # Pixels of 7 m not aligned with the cells; the raster extends beyond the grid.
    values = np.zeros((30, 30))
    values[:, 10] = 1.0  # a single pixel column x in [-30 + 70, -30 + 77) = [40, 47)
    path = write_raster(tmp_path / "w.tif", values, from_origin(-30, 130, 7, 7))
    grid = unit_grid(shape=(2, 2))
    cells = np.array([0, 2] * 200)
    xy = place_weighted(grid, cells, seed=2, raster=path)
    assert_in_cells(grid, cells, xy)
    assert ((xy[:, 0] >= 40) & (xy[:, 0] < 47)).all()


def test_cells_without_weight_fall_back_to_uniform(tmp_path):
    values = np.zeros((4, 4))
    values[3, 0] = 1.0  # only cell 0 has weight
    path = write_raster(tmp_path / "w.tif", values, from_origin(0, 100, 25, 25))
    grid = unit_grid(shape=(2, 2))
    cells = np.array([0] * 10 + [3] * 2000)
    with pytest.warns(DataWarning, match=r"1 cell\(s\) are covered by no pixel of positive "
                                         r"weight.*\[3\]"):
        xy = place_weighted(grid, cells, seed=2, raster=path)
    assert_in_cells(grid, cells, xy)
    assert (xy[:10] < 25).all()
    assert stats.kstest(xy[10:, 0], stats.uniform(50, 50).cdf).pvalue > ALPHA


def test_raster_crs_must_match(tmp_path):
    path = write_raster(
        tmp_path / "w.tif", np.ones((2, 2)), from_origin(0, 100, 50, 50), crs="EPSG:32723"
    )
    with pytest.raises(CRSError, match="differs from the grid CRS"):
        place_weighted(unit_grid(shape=(1, 1)), [0], raster=path)
    no_crs = write_raster(
        tmp_path / "n.tif", np.ones((2, 2)), from_origin(0, 100, 50, 50), crs=None
    )
    with pytest.raises(CRSError, match="has no CRS"):
        place_weighted(unit_grid(shape=(1, 1)), [0], raster=no_crs)
    grid_without_crs = quiet_grid((0, 0, 100, 100), shape=(1, 1))
    with pytest.raises(CRSError, match="the grid has none"):
        place_weighted(grid_without_crs, [0], raster=path)
    # Neither has a CRS: accepted.
    assert place_weighted(grid_without_crs, [0], raster=no_crs, seed=0).shape == (1, 2)


@pytest.mark.parametrize(
    ("values", "transform", "match"),
    [
        (np.ones((2, 2)), Affine(50, 5, 0, 0, -50, 100), "rotated"),
        (-np.ones((2, 2)), from_origin(0, 100, 50, 50), "negative or infinite"),
        (np.full((2, 2), np.inf), from_origin(0, 100, 50, 50), "negative or infinite"),
        (np.ones((2, 2)), from_origin(1000, 2000, 50, 50), "does not overlap"),
        # every point silently fell back to uniform placement (a warning only)
        (np.zeros((2, 2)), from_origin(0, 100, 50, 50), "no pixel of positive weight"),
        (np.full((2, 2), np.nan), from_origin(0, 100, 50, 50), "no pixel of positive weight"),
        # the only weight touches the grid at a corner: no area of it
        (np.array([[1.0, 0.0], [0.0, 0.0]]), from_origin(-100, 200, 100, 100),
         "no pixel of positive weight"),
    ],
)
def test_bad_rasters_are_refused(tmp_path, values, transform, match):
    path = write_raster(tmp_path / "w.tif", values, transform)
    with pytest.raises(InputError, match=match):
        place_weighted(unit_grid(shape=(1, 1)), [0], raster=path)


def test_weights_must_be_a_raster(tmp_path):
    not_raster = tmp_path / "w.txt"
    not_raster.write_text("hello")
    with pytest.raises(InputError, match="cannot be opened as a raster"):
        place_weighted(unit_grid(shape=(1, 1)), [0], raster=not_raster)
    with pytest.raises(InputError, match="raster path or an open rasterio dataset"):
        place_weighted(unit_grid(shape=(1, 1)), [0], raster=np.ones((2, 2)))


def write_bands(path, values, dtype="float64", **options):
    """A raster of several bands, ``values`` shaped (bands, rows, cols), over the unit grid."""
    import rasterio

    values = np.asarray(values)
    with rasterio.open(path, "w", driver="GTiff", height=values.shape[1],
                       width=values.shape[2], count=values.shape[0], dtype=dtype, crs=CRS,
                       transform=from_origin(0, 100, 50, 50), **options) as dst:
        dst.write(values.astype(dtype))
    return path


def test_rasters_of_several_bands_or_complex_values_are_refused(tmp_path):
    grid = unit_grid(shape=(1, 1))
    # Band 1 was read silently: here its weight is all in the north, band 2's in the south.
    stack = np.zeros((3, 2, 2))
    stack[0, 0, :] = 1.0
    stack[1, 1, :] = 1.0
    path = write_bands(tmp_path / "rgb.tif", stack)
    with pytest.raises(InputError, match=r"weights raster has 3 data bands.*gdal_translate -b"):
        place_weighted(grid, [0], seed=1, raster=path)
    # Complex weights lost their imaginary part with a NumPy ComplexWarning.
    path = write_bands(tmp_path / "c.tif", np.full((1, 2, 2), 1 + 1j), dtype="complex64")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError, match=r"complex values \(complex64\)"):
            place_weighted(grid, [0], seed=1, raster=path)
    # One data band with an alpha band: the alpha masks it (a transparent pixel weighs 0).
    alpha = np.array([np.ones((2, 2)), [[0, 255], [0, 0]]])
    path = write_bands(tmp_path / "a.tif", alpha, dtype="uint8", photometric="MINISBLACK",
                       alpha="YES")
    xy = place_weighted(grid, np.zeros(200, dtype=np.int64), seed=1, raster=path)
    assert (xy >= 50).all()  # the north-east pixel, the only opaque one


def test_nan_pixels_weigh_zero(tmp_path):
    values = np.full((2, 2), np.nan)
    values[0, 1] = 2.0  # north-east
    path = write_raster(tmp_path / "w.tif", values, from_origin(0, 100, 50, 50))
    xy = place_weighted(
        unit_grid(shape=(1, 1)), np.zeros(200, dtype=np.int64), seed=1, raster=path
    )
    assert (xy >= 50).all()


# ---------------------------------------------------------------------- uniformity: other cells
def area_share_test(grid, cell, n, seed, k=6, weights=None):
    """Chi-square of the points of ``cell`` over a k x k split of its box against exact shares.

    The expected share of a sub-box is its area of intersection with the cell's habitable
    geometry over the habitable area (shapely's polygon overlay: exact up to rounding). Returns
    the p-value against those shares and the p-value against the sub-boxes' shares of the box
    (what a point uniform in the box, not in the cell, would give).
    """
    x0, y0, x1, y1 = grid.cell_bounds(cell)[0]
    xe, ye = np.linspace(x0, x1, k + 1), np.linspace(y0, y1, k + 1)
    subs = shapely.box(*np.meshgrid(xe[:-1], ye[:-1], indexing="ij"),
                       *np.meshgrid(xe[1:], ye[1:], indexing="ij")).ravel()
    habitable = np.asarray(grid.habitable_geometry)[cell]
    share = shapely.area(shapely.intersection(subs, habitable)) / habitable.area
    assert share.sum() == pytest.approx(1.0, rel=1e-9)
    cells = np.full(n, cell)
    xy = place_in_cells(grid, cells, seed=seed, weights=weights)
    assert_in_cells(grid, cells, xy)
    i = np.clip(np.searchsorted(xe, xy[:, 0], side="right") - 1, 0, k - 1)
    j = np.clip(np.searchsorted(ye, xy[:, 1], side="right") - 1, 0, k - 1)
    observed = np.bincount(i * k + j, minlength=k * k)
    assert (observed[share == 0] == 0).all()
    keep = share > 0
    p_exact = stats.chisquare(observed[keep], n * share[keep]).pvalue
    box_share = shapely.area(subs) / shapely.area(subs).sum()
    p_box = stats.chisquare(observed[keep], n * box_share[keep] / box_share[keep].sum()).pvalue
    return p_exact, p_box


@pytest.mark.parametrize("orientation", ["pointy", "flat"])
def test_uniform_in_hexagons_chi_square(orientation):
    grid = Grid.hexagonal((0, 0, 30, 30), cell_size=5.0, orientation=orientation, crs=CRS)
    assert not grid.fully_habitable.any()
    p_exact, p_box = area_share_test(grid, grid.n_cells // 2, 20_000, seed=1)
    assert p_exact > ALPHA
    assert p_box < ALPHA  # the test has power: uniform over the hexagon's box is refused


def test_uniform_in_cells_with_holes_chi_square():
    # A disc excluded from the middle of a square cell and of a hexagon: habitable geometries
    # with an interior ring.
    square = Grid.regular((0, 0, 30, 30), shape=(3, 3), crs=CRS, exclude=Point(15, 15).buffer(3))
    assert not square.fully_habitable[4]
    assert len(np.asarray(square.habitable_geometry)[4].interiors) == 1
    p_exact, p_box = area_share_test(square, 4, 20_000, seed=2)
    assert p_exact > ALPHA and p_box < ALPHA
    hexagons = Grid.hexagonal((0, 0, 30, 30), cell_size=5.0, crs=CRS)
    centre = hexagons.cells.geometry.iloc[hexagons.n_cells // 2].centroid
    holed = Grid.hexagonal((0, 0, 30, 30), cell_size=5.0, crs=CRS,
                           exclude=centre.buffer(2.0))
    p_exact, p_box = area_share_test(holed, holed.n_cells // 2, 20_000, seed=3)
    assert p_exact > ALPHA and p_box < ALPHA


def areal_grid():
    """Three areas: a concave U with a square hole in its base, a triangle, and a two-part area
    (a square and a small island). They touch along x = 10 and y = 0."""

    u_shape = Polygon([(0, 0), (10, 0), (10, 10), (7, 10), (7, 4), (3, 4), (3, 10), (0, 10)],
                      holes=[[(4, 1), (6, 1), (6, 3), (4, 3)]])
    triangle = Polygon([(10, 0), (20, 0), (10, 10)])
    two_parts = shapely.MultiPolygon([box(0, -10, 10, 0), box(12, -5, 14, -3)])
    areas = gpd.GeoDataFrame({"name": ["u", "t", "m"]},
                             geometry=[u_shape, triangle, two_parts], crs=CRS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        return Grid.from_polygons(areas)


def test_uniform_in_areal_polygons():
    grid = areal_grid()
    assert grid.kind == "areal"
    # The concave area with a hole: exact area shares of a 5 x 5 split of its box.
    p_exact, p_box = area_share_test(grid, 0, 20_000, seed=4, k=5)
    assert p_exact > ALPHA and p_box < ALPHA
    # The triangle: x has density 2 (20 - x) / 100 on [10, 20], CDF 1 - ((20 - x) / 10)^2.
    xy = place_in_cells(grid, np.full(5000, 1), seed=5)
    assert_in_cells(grid, np.full(5000, 1), xy)
    assert stats.kstest(xy[:, 0], lambda x: 1 - ((20 - np.clip(x, 10, 20)) / 10) ** 2).pvalue \
        > ALPHA
    assert stats.kstest(xy[:, 0], stats.uniform(10, 10).cdf).pvalue < ALPHA
    # The two-part area: the island (area 4 of 104) gets its area share of the points.
    n = 20_000
    xy = place_in_cells(grid, np.full(n, 2), seed=6)
    assert_in_cells(grid, np.full(n, 2), xy)
    on_island = int((xy[:, 0] > 10).sum())
    assert stats.binomtest(on_island, n, 4 / 104).pvalue > ALPHA


def test_weighted_hexagon_follows_the_pixel_areas(tmp_path):
    # 1 m pixels of weight 1 over hexagons of side 5: each pixel's share of the hexagon's points
    # is the area of pixel ∩ hexagon over the hexagon's (the pixel centre rule gave pixels
    # straddling the edge all or nothing), and every point is inside the hexagon.
    grid = Grid.hexagonal((0, 0, 30, 30), cell_size=5.0, crs=CRS)
    path = write_raster(tmp_path / "w.tif", np.ones((40, 40)), from_origin(-5, 35, 1, 1))
    cell = grid.n_cells // 2
    n = 20_000
    cells = np.full(n, cell)
    xy = place_weighted(grid, cells, seed=7, raster=path)
    assert_in_cells(grid, cells, xy)
    hexagon = grid.cells.geometry.iloc[cell]
    x0, y0, x1, y1 = grid.cell_bounds(cell)[0]
    corners = [(i, j) for i in range(int(np.floor(x0)), int(np.ceil(x1)))
               for j in range(int(np.floor(y0)), int(np.ceil(y1)))]
    areas = shapely.area(shapely.intersection(
        shapely.box(*np.array([(i, j, i + 1, j + 1) for i, j in corners]).T), hexagon))
    covered = areas > 1e-9
    position = {corner: k for k, corner in enumerate(corners)}
    pixel = [position[key] for key in zip(np.floor(xy[:, 0]).astype(int).tolist(),
                                          np.floor(xy[:, 1]).astype(int).tolist(), strict=True)]
    counts = np.bincount(pixel, minlength=len(corners))
    assert counts[~covered].sum() == 0
    assert stats.chisquare(counts[covered], n * areas[covered] / hexagon.area).pvalue > ALPHA


# ---------------------------------------------------------------------- raster limits
def test_max_weight_pixels_bounds_the_memory_it_claims(tmp_path):
    # MAX_WEIGHT_PIXELS was 2**28 "8 bytes each": reading takes over 200 bytes per pixel of
    # positive weight, so a raster under the limit could need 60 GiB and kill the process
    # instead of raising MemoryLimitError.
    import tracemalloc

    from geosynth import rasters

    # Split among the cells they overlap, pixels as large as the cells and offset from them
    # make four pieces each (630 bytes a pixel), so the limit counts pieces: both a fine raster
    # (a piece a pixel) and the worst one stay within the memory the limit claims.
    side = 400
    fine = write_raster(tmp_path / "w.tif", np.ones((side, side)),
                        from_origin(0, 100, 100 / side, 100 / side))
    coarse = write_raster(tmp_path / "c.tif", np.ones((side, side)),
                          from_origin(0.5, 100.5, 1.0, 1.0))
    for path, grid in ((fine, unit_grid(shape=(4, 4))), (coarse, unit_grid(shape=(100, 100)))):
        tracemalloc.start()
        try:
            table = read_weights(path, grid)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert rasters.MAX_WEIGHT_PIXELS * peak / table.boxes.shape[0] <= 2.5 * 2**30


def test_the_pixel_limit_counts_the_pieces_of_pixels_over_several_cells(tmp_path,
                                                                         monkeypatch):
    from geosynth import rasters

    monkeypatch.setattr(rasters, "MAX_WEIGHT_PIXELS", 100)
    grid = unit_grid(shape=(8, 8))  # cells of 12.5
    small = write_raster(tmp_path / "s.tif", np.ones((8, 8)), from_origin(0, 100, 1.25, 1.25))
    assert read_weights(small, grid).boxes.shape[0] == 64  # 64 pixels, one piece each
    large = write_raster(tmp_path / "l.tif", np.ones((8, 8)), from_origin(-6, 106, 12.5, 12.5))
    with pytest.raises(MemoryLimitError, match=r"64 pixels over the grid \(about 4 pieces each"):
        read_weights(large, grid)  # 64 pixels, each over four cells: 256 pieces


def test_a_pixel_larger_than_the_grid_makes_at_most_a_piece_per_cell(tmp_path):
    # One pixel of 10^12 m over a grid of two cells was refused as "about 1e+18 pieces each,
    # up to 238,418,579,578 GiB": it overlaps two cells, so it is read and makes two pieces.
    from geosynth.lattice import Grid

    grid = Grid.regular((0, 0, 2000, 1000), shape=(1, 2), crs=CRS)
    huge = write_raster(tmp_path / "h.tif", np.ones((1, 1)), from_origin(-1e11, 1e11, 1e12, 1e12))
    assert read_weights(huge, grid).boxes.shape[0] == 2


@pytest.mark.parametrize("kind", ["hexagons", "areas"])
def test_the_pixel_limit_counts_the_pieces_over_hexagons_and_areas(kind):
    # The pieces a pixel makes were estimated from the cells' boxes, as for squares: pixels half
    # as large as hexagons made 1.81 pieces each against 1.61 estimated, and the limit let
    # through a table a ninth larger than it claimed. The estimate is now the mean area of the
    # cells' Minkowski sums with the pixel, exact for convex cells away from the edge.
    from geosynth.rasters import _pieces_per_pixel

    bounds = (0.0, 0.0, 3000.0, 3000.0)
    if kind == "hexagons":
        grid = Grid.hexagonal(bounds, 100.0, crs=CRS)
    else:
        seeds = shapely.multipoints(np.random.default_rng(0).uniform(0, 3000, (300, 2)))
        cells = shapely.intersection(
            shapely.get_parts(shapely.voronoi_polygons(seeds, extend_to=shapely.box(*bounds))),
            shapely.box(*bounds))
        grid = Grid.from_polygons(gpd.GeoSeries(cells, crs=CRS))
    for size in (10.0, 50.0):
        side = int(3000 / size)
        transform = Affine(size, 0, size / 3, 0, -size, 3000 + size / 3)
        table = PixelTable.from_band(np.ones((side, side)), transform, 0, 0, grid)
        made = table.boxes.shape[0] / side**2
        assert _pieces_per_pixel(transform, grid) == pytest.approx(made, rel=0.03)


@pytest.mark.parametrize("transform", [
    Affine(25, 0, 0, 0, 0, 100),  # zero pixel height: ZeroDivisionError
    Affine(25, 0, float("nan"), 0, -25, 100),  # NaN origin: "cannot convert float NaN"
])
def test_degenerate_geotransforms_are_refused(tmp_path, transform):
    path = write_raster(tmp_path / "w.tif", np.ones((4, 4)), transform, crs=None)
    grid = quiet_grid((0, 0, 100, 100), shape=(1, 1))
    with pytest.raises(InputError, match="weights raster has no usable geotransform"):
        place_weighted(grid, [0], raster=path)


def test_a_subnormal_pixel_size_is_refused_with_its_geotransform(tmp_path):
    # 1e-320 passed the checks of a finite, non-zero pixel size, then overflowed: a bare
    # "OverflowError: cannot convert float infinity to integer".
    path = write_raster(tmp_path / "w.tif", np.ones((4, 4)), Affine(1e-320, 0, 0, 0, -1, 100),
                        crs=None)
    grid = quiet_grid((0, 0, 100, 100), shape=(1, 1))
    with pytest.raises(InputError, match=r"weights raster has pixels of 1e-320 x -1.0, so small "
                                         r"that the grid's extent spans more pixels"):
        place_weighted(grid, [0], raster=path)


def test_no_overlap_message_does_not_quote_bounds_derived_from_the_points(tmp_path):
    points = gpd.GeoSeries(gpd.points_from_xy([303.25, 396.5], [507.5, 591.75]), crs=CRS)
    grid = Grid.from_points(points, shape=(2, 2))
    assert grid.snap_unit is not None
    path = write_raster(tmp_path / "w.tif", np.ones((2, 2)), from_origin(1e6, 2e6, 50, 50))
    with pytest.raises(InputError, match="does not overlap") as info:
        place_weighted(grid, [0], raster=path)
    assert not any(str(v) in str(info.value) for v in grid.bounds)


def test_pixels_below_the_coordinate_resolution_are_refused(tmp_path):
    # 1e-11 m pixels at x = 500,050: a pixel's edges are the same float, and its points were
    # put just west of it (in the west neighbour when it starts a cell).
    grid = quiet_grid((500_000, 0, 500_100, 100), shape=(1, 2), crs=CRS)
    path = write_raster(tmp_path / "w.tif", np.ones((4, 4)), from_origin(500_050, 50, 1e-11, 1e-11))
    with pytest.raises(InputError, match=r"pixels \(1e-11 x 1e-11\) are too small"):
        place_weighted(grid, [1], raster=path)


def test_a_raster_without_geotransform_is_refused(tmp_path):
    # rasterio reads a raster with no geotransform (not georeferenced, or only by GCPs) with
    # the identity: 1-unit pixels from (0, 0), rows running north. With neither a CRS, the
    # weight of the image's top rows was put in the south of the grid, with no geosynth error.
    import rasterio
    from rasterio.errors import NotGeoreferencedWarning

    values = np.zeros((100, 100), dtype="float32")
    values[:10, :] = 1.0  # the top rows of the image
    path = tmp_path / "plain.tif"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotGeoreferencedWarning)
        with rasterio.open(path, "w", driver="GTiff", width=100, height=100, count=1,
                           dtype="float32") as dst:
            dst.write(values, 1)
        grid = quiet_grid((0, 0, 100, 100), shape=(1, 1))
        with pytest.raises(InputError, match=r"weights raster has no geotransform.*gdalwarp"):
            place_weighted(grid, np.zeros(50, dtype=np.int64), seed=1, raster=path)


def test_a_weights_raster_made_from_the_records_is_warned_about():
    # Positive only in the 10 m pixels holding a record (a density of the cases at a fine
    # bandwidth): every synthetic point was drawn into a record's pixel. The positive pixels
    # cover a sliver of the cells yet hold every record.
    from geosynth.synth.placement import warn_if_weights_follow_records

    grid = unit_grid(shape=(2, 2))
    xy = np.random.default_rng(3).uniform(0, 100, (40, 2))
    values = np.zeros((100, 100))
    values[(100 - xy[:, 1]).astype(int), xy[:, 0].astype(int)] = 1.0  # 1 m pixels
    made = PixelTable.from_band(values, from_origin(0, 100, 1, 1), 0, 0, grid)
    with pytest.warns(PrivacyLeakWarning, match=r"cover 0\.\d+% of the habitable area .* yet "
                                                r"100% of the records lie in them"):
        warn_if_weights_follow_records(made, grid, xy)
    public = PixelTable.from_band(np.ones((100, 100)), from_origin(0, 100, 1, 1), 0, 0, grid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_weights_follow_records(public, grid, xy)


def test_cells_partly_beyond_the_raster_are_named():
    """A raster reaching a cell by a part put every point of the cell in that part, silently."""
    grid = Grid.regular((0, 0, 2, 2), shape=(2, 2), crs=CRS)
    # pixels of 0.25 covering x < 0.5 only: cells 0 and 2 half, cells 1 and 3 not at all
    with pytest.warns(DataWarning, match=r"^2 cell\(s\) reach beyond the weights raster "
                                         r"\(cell ids \[0, 2\]\): the raster weighs the area "
                                         r"beyond it 0"):
        table = PixelTable.from_band(np.ones((8, 2)), from_origin(0, 2, 0.25, 0.25), 0, 0, grid)
    points = place_in_cells(grid, np.zeros(200, dtype=np.int64), np.random.default_rng(1),
                            table)
    assert points[:, 0].max() < 0.5  # as the warning says: only the covered part
    with warnings.catch_warnings():  # a raster covering the lattice: no word
        warnings.simplefilter("error", DataWarning)
        PixelTable.from_band(np.ones((8, 8)), from_origin(0, 2, 0.25, 0.25), 0, 0, grid)
