import threading
import time
import warnings
from decimal import Decimal
from fractions import Fraction

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from libpysal.weights import lat2SW, lat2W
from shapely import affinity
from shapely.geometry import Point, Polygon, box

from geosynth import lattice
from geosynth.errors import (
    CRSError,
    DataWarning,
    GridError,
    InputError,
    InputTypeError,
    IsolatedCellWarning,
)
from geosynth.lattice import Grid


def neighbour_image(grid):
    return np.asarray(grid.n_neighbours).reshape(grid.shape)


def quiet_grid(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        warnings.simplefilter("ignore", DataWarning)  # random exclusions may miss the region
        return Grid.regular(*args, **kwargs)


# ---------------------------------------------------------------------- adjacency
def test_queen_10x10_neighbour_counts():
    grid = Grid.regular((0, 0, 10, 10), shape=(10, 10))
    image = neighbour_image(grid)
    assert image[[0, 0, -1, -1], [0, -1, 0, -1]].tolist() == [3, 3, 3, 3]
    edges = np.concatenate([image[0, 1:-1], image[-1, 1:-1], image[1:-1, 0], image[1:-1, -1]])
    assert np.all(edges == 5)
    assert np.all(image[1:-1, 1:-1] == 8)
    assert grid.n_components == 1 and np.all(grid.component == 0)


def test_rook_10x10_neighbour_counts():
    grid = Grid.regular((0, 0, 10, 10), shape=(10, 10), contiguity="rook")
    image = neighbour_image(grid)
    assert image[[0, 0, -1, -1], [0, -1, 0, -1]].tolist() == [2, 2, 2, 2]
    edges = np.concatenate([image[0, 1:-1], image[-1, 1:-1], image[1:-1, 0], image[1:-1, -1]])
    assert np.all(edges == 3)
    assert np.all(image[1:-1, 1:-1] == 4)


@pytest.mark.parametrize("contiguity", ["queen", "rook"])
def test_adjacency_is_symmetric_binary_without_diagonal(contiguity):
    grid = Grid.regular((0, 0, 10, 6), shape=(6, 10), contiguity=contiguity)
    adj = grid.adjacency
    assert adj.shape == (60, 60) and adj.dtype == np.float64
    assert (adj != adj.T).nnz == 0
    assert np.all(adj.diagonal() == 0)
    assert set(np.unique(adj.data).tolist()) == {1.0}
    for name in ("indptr", "indices", "n_neighbours", "cell_row", "cell_col", "component"):
        assert getattr(grid, name).dtype == np.int64, name
    np.testing.assert_array_equal(grid.indptr, adj.indptr)
    np.testing.assert_array_equal(grid.indices, adj.indices)
    np.testing.assert_array_equal(grid.n_neighbours, np.diff(adj.indptr))
    # indices sorted within each row (numba kernels rely on it)
    for i in range(grid.n_cells):
        row = grid.indices[grid.indptr[i] : grid.indptr[i + 1]]
        assert np.all(np.diff(row) > 0)


@pytest.mark.parametrize("rook", [True, False])
def test_adjacency_equals_libpysal_lat2w(rook):
    grid = Grid.regular((0, 0, 10, 10), shape=(10, 10), contiguity="rook" if rook else "queen")
    w = lat2W(10, 10, rook=rook)
    assert w.id_order == list(range(100))
    theirs = w.sparse.tocsr().astype(float)
    assert (grid.adjacency != theirs).nnz == 0


@pytest.mark.parametrize("criterion", ["rook", "queen"])
@pytest.mark.parametrize("shape", [(7, 10), (10, 7), (1, 5), (4, 3)])
def test_adjacency_equals_lat2sw_on_non_square_lattices(criterion, shape):
    grid = quiet_grid((0, 0, 1, 1), shape=shape, contiguity=criterion)
    theirs = lat2SW(*shape, criterion=criterion).tocsr().astype(float)
    assert (grid.adjacency != theirs).nnz == 0


@pytest.mark.parametrize("rook", [True, False])
@pytest.mark.parametrize("shape", [(5, 1), (1, 2), (2, 2), (3, 2)])
def test_adjacency_equals_lat2w_on_narrow_lattices(rook, shape):
    # lat2SW cannot build lattices with fewer than 3 columns (duplicate diagonal offsets)
    grid = quiet_grid((0, 0, 1, 1), shape=shape, contiguity="rook" if rook else "queen")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = lat2W(*shape, rook=rook).sparse.tocsr().astype(float)
    assert (grid.adjacency != theirs).nnz == 0


@pytest.mark.parametrize("contiguity", ["queen", "rook"])
def test_to_libpysal_has_our_neighbours(contiguity):
    grid = Grid.regular((0, 0, 10, 10), shape=(10, 10), contiguity=contiguity)
    w = grid.to_libpysal()
    assert w.n == grid.n_cells
    assert w.id_order == list(range(grid.n_cells))
    for i in range(grid.n_cells):
        ours = grid.indices[grid.indptr[i] : grid.indptr[i + 1]].tolist()
        assert sorted(w.neighbors[i]) == ours
        assert all(v == 1.0 for v in w.weights[i])
    assert (w.sparse != grid.adjacency).nnz == 0


def test_to_libpysal_keeps_isolated_cells_as_islands():
    with pytest.warns(IsolatedCellWarning):
        grid = Grid.regular(
            (0, 0, 10, 10), shape=(10, 10), region=[box(0, 0, 3, 3), box(5, 5, 6, 6)]
        )
    w = grid.to_libpysal()
    assert w.n == grid.n_cells == 10
    assert w.islands == [9]


# ---------------------------------------------------------------------- ordering and sizes
def test_cell_ids_are_row_major_with_row_0_south():
    grid = Grid.regular((100, 200, 130, 220), shape=(2, 3))
    np.testing.assert_array_equal(grid.cell_row, [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(grid.cell_col, [0, 1, 2, 0, 1, 2])
    np.testing.assert_array_equal(grid.cell_bounds(0), [[100, 200, 110, 210]])
    np.testing.assert_array_equal(
        grid.cell_bounds([2, 3]), [[120, 200, 130, 210], [100, 210, 110, 220]]
    )
    # the southernmost point is in row 0, the northernmost in the last row
    assert grid.locate([[105, 201], [105, 219], [129, 219]]).tolist() == [0, 3, 5]
    np.testing.assert_array_equal(grid.lattice_to_cell, np.arange(6))
    assert grid.cell_size == (10.0, 10.0)
    assert grid.bounds == (100.0, 200.0, 130.0, 220.0)


@pytest.mark.parametrize(
    ("bounds", "cell_size", "shape", "extended"),
    [
        ((0, 0, 10, 7), 3, (3, 4), (0, 0, 12, 9)),
        ((0, 0, 10, 7), (2.5, 1.0), (7, 4), (0, 0, 10, 7)),
        ((0, 0, 0.3, 0.7), 0.1, (7, 3), (0, 0, 0.3, 0.7)),  # 0.3 / 0.1 = 2.9999999999999996
        ((5, 5, 6, 6), 10.0, (1, 1), (5, 5, 15, 15)),
    ],
)
def test_cell_size_constructor(bounds, cell_size, shape, extended):
    grid = quiet_grid(bounds, cell_size=cell_size)
    assert grid.shape == shape
    assert grid.n_cells == shape[0] * shape[1]
    np.testing.assert_allclose(grid.bounds, extended, rtol=0, atol=1e-12)
    dx, dy = (cell_size, cell_size) if np.isscalar(cell_size) else cell_size
    assert grid.cell_size == (dx, dy)
    widths = grid.cell_bounds(np.arange(grid.n_cells))
    np.testing.assert_allclose(widths[:, 2] - widths[:, 0], dx)
    np.testing.assert_allclose(widths[:, 3] - widths[:, 1], dy)


def test_single_cell_lattice_is_isolated():
    with pytest.warns(IsolatedCellWarning, match=r"cell ids 0\)"):
        grid = Grid.regular((0, 0, 1, 1), shape=(1, 1))
    assert grid.n_components == 1 and grid.n_neighbours.tolist() == [0]


# ---------------------------------------------------------------------- clipping
def test_region_of_two_polygons_gives_two_components():
    grid = Grid.regular((0, 0, 10, 10), shape=(10, 10), region=[box(0, 0, 3, 3), box(6, 6, 10, 10)])
    assert grid.is_clipped
    assert grid.n_cells == 9 + 16
    assert grid.n_components == 2
    south = grid.cell_row < 3
    assert np.all(grid.component[south] == 0) and np.all(grid.component[~south] == 1)
    assert np.all(grid.cell_col[south] < 3) and np.all(grid.cell_col[~south] >= 6)
    assert np.all(grid.habitable_fraction == 1.0) and np.all(grid.fully_habitable)
    # adjacency is the lattice adjacency restricted to kept cells
    assert neighbour_image(Grid.regular((0, 0, 3, 3), shape=(3, 3))).ravel().tolist() == (
        grid.n_neighbours[south].tolist()
    )
    kept = grid.cell_row * 10 + grid.cell_col
    np.testing.assert_array_equal(grid.lattice_to_cell[kept], np.arange(grid.n_cells))
    assert np.sum(grid.lattice_to_cell >= 0) == grid.n_cells


def test_isolated_cell_warning_names_the_cell_and_it_is_its_own_component():
    with pytest.warns(
        IsolatedCellWarning, match=r"1 cell\(s\) have no queen neighbour \(cell ids 9\)"
    ):
        grid = Grid.regular(
            (0, 0, 10, 10), shape=(10, 10), region=[box(0, 0, 3, 3), box(5, 5, 6, 6)]
        )
    assert grid.n_cells == 10
    assert (grid.cell_row[9], grid.cell_col[9]) == (5, 5)
    assert grid.n_neighbours[9] == 0
    assert grid.component.tolist() == [0] * 9 + [1]


def test_corner_touching_cells_connect_under_queen_only():
    region = shapely.MultiPolygon([box(0, 0, 1, 1), box(1, 1, 2, 2)])
    queen = Grid.regular((0, 0, 2, 2), shape=(2, 2), region=region)
    assert queen.n_cells == 2 and queen.n_components == 1
    with pytest.warns(
        IsolatedCellWarning, match=r"2 cell\(s\) have no rook neighbour \(cell ids 0, 1\)"
    ):
        rook = Grid.regular((0, 0, 2, 2), shape=(2, 2), region=region, contiguity="rook")
    assert rook.n_components == 2 and rook.component.tolist() == [0, 1]


def test_isolated_cell_warning_names_first_ten_only():
    region = [box(2 * k, 0, 2 * k + 1, 1) for k in range(12)]
    with pytest.warns(
        IsolatedCellWarning, match=r"cell ids 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 2 more"
    ):
        grid = Grid.regular((0, 0, 24, 1), shape=(1, 24), region=region)
    assert grid.n_components == 12


def test_components_are_numbered_by_smallest_cell_id():
    region = [box(7, 0, 10, 2), box(0, 5, 2, 10)]
    grid = Grid.regular((0, 0, 10, 10), shape=(10, 10), region=region)
    assert grid.component[0] == 0
    assert grid.cell_row[0] == 0 and grid.cell_col[0] == 7
    assert np.all(grid.component[grid.cell_row >= 5] == 1)


def test_exclusion_drops_covered_cells_and_sets_fractions():
    grid = Grid.regular((0, 0, 4, 4), shape=(4, 4), exclude=box(1, 1, 3, 2.5))
    # cells (row 1, col 1) and (1, 2) lie wholly inside the exclusion and are dropped
    assert grid.n_cells == 14
    assert grid.lattice_to_cell[[5, 6]].tolist() == [-1, -1]
    half = grid.lattice_to_cell[[9, 10]]  # row 2, cols 1 and 2 lose y in [2, 2.5)
    np.testing.assert_allclose(grid.habitable_fraction[half], 0.5)
    others = np.setdiff1d(np.arange(grid.n_cells), half)
    np.testing.assert_array_equal(grid.habitable_fraction[others], 1.0)
    np.testing.assert_allclose(
        shapely.area(grid.habitable_geometry), grid.habitable_fraction * 1.0, rtol=1e-12
    )
    # boxes touching the exclusion are not fully habitable; those away from it are
    assert not grid.fully_habitable[grid.lattice_to_cell[0]]  # touches the corner (1, 1)
    assert grid.fully_habitable[grid.lattice_to_cell[15]]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"exclude": box(200, 200, 400, 400)},  # e.g. given in another, undeclared CRS
        {"exclude": box(4, 0, 8, 4)},  # touches the lattice along its east edge only
        {"region": box(0, 0, 2, 4), "exclude": box(3, 1, 4, 3)},  # only outside the region
    ],
)
def test_exclusion_that_removes_nothing_warns_naming_exclude_and_the_crs(kwargs):
    with pytest.warns(DataWarning, match=r"excluded areas .* remove no part .*exclude= and the "
                                         r"grid share a CRS"):
        grid = Grid.regular((0, 0, 4, 4), shape=(4, 4), **kwargs)
    assert np.all(grid.habitable_fraction == 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # any overlap at all is a real exclusion
        grid = Grid.regular((0, 0, 4, 4), shape=(4, 4), exclude=box(3.9, 3.9, 5, 5))
    assert grid.habitable_fraction.min() == pytest.approx(0.99)


def test_triangle_exclusion_hand_computed_areas():
    # x + y <= 2 covers the unit square at the origin, half of its two neighbours and
    # touches the north-east cell at a single point.
    triangle = Polygon([(0, 0), (2, 0), (0, 2)])
    grid = Grid.regular((0, 0, 2, 2), shape=(2, 2), exclude=triangle)
    assert grid.lattice_to_cell.tolist() == [-1, 0, 1, 2]
    np.testing.assert_allclose(grid.habitable_fraction, [0.5, 0.5, 1.0])
    assert grid.fully_habitable.tolist() == [False, False, False]


def test_region_clipping_hand_computed_areas():
    # a right triangle with legs 3 over a 3x3 unit lattice: diagonal cells keep 1/2,
    # cells below the diagonal are whole, cells above it are dropped
    region = Polygon([(0, 0), (3, 0), (0, 3)])
    grid = Grid.regular((0, 0, 3, 3), shape=(3, 3), region=region)
    image = np.full(9, np.nan)
    image[grid.cell_row * 3 + grid.cell_col] = grid.habitable_fraction
    expected = np.array([[1, 1, 0.5], [1, 0.5, np.nan], [0.5, np.nan, np.nan]])
    np.testing.assert_allclose(image.reshape(3, 3), expected)
    assert grid.fully_habitable.tolist() == [True, True, False, True, False, False]


def test_region_and_exclusion_fraction_of_annulus():
    outer, inner = Point(5, 5).buffer(4), Point(5, 5).buffer(1.5)
    grid = Grid.regular((0, 0, 10, 10), shape=(40, 40), region=outer, exclude=inner)
    cell_area = 0.25**2
    assert grid.habitable_fraction.sum() * cell_area == pytest.approx(
        outer.area - inner.area, rel=1e-9
    )
    assert np.all((grid.habitable_fraction > 0) & (grid.habitable_fraction <= 1))


def test_region_geodataframe_is_reprojected_to_grid_crs():
    region_3857 = gpd.GeoSeries([box(1e5 + 10, 2e5 + 10, 1e5 + 990, 2e5 + 490)], crs=3857)
    direct = Grid.regular((1e5, 2e5, 1.01e5, 2.005e5), shape=(5, 10), crs=3857, region=region_3857)
    projected = Grid.regular(
        (1e5, 2e5, 1.01e5, 2.005e5),
        shape=(5, 10),
        crs="EPSG:3857",
        region=gpd.GeoDataFrame(geometry=region_3857.to_crs(4326)),
    )
    assert projected.n_cells == direct.n_cells == 50
    np.testing.assert_allclose(projected.habitable_fraction, direct.habitable_fraction, rtol=1e-6)
    assert direct.habitable_fraction.min() < 1


def test_a_region_in_degrees_keeps_its_edges_along_the_parallels():
    # to_crs moved the corners only: the south edge (the 45th parallel, 14-16 E) became the
    # chord between them, 486 m north of the parallel at 15 E in UTM zone 33, and a record
    # 55 m inside the region there fell in no cell.
    degrees = gpd.GeoSeries([box(14, 45, 16, 46)], crs=4326)
    x0, y0, x1, y1 = degrees.to_crs(32633).total_bounds
    grid = Grid.regular((x0, y0 - 2000, x1, y1), cell_size=1000, crs=32633, region=degrees)
    near = gpd.GeoSeries([Point(15, 45.0005), Point(15, 44.9995), Point(14.0005, 45.5)],
                         crs=4326).to_crs(32633)
    inside, outside, west = grid.locate(near)
    assert inside >= 0 and outside == -1 and west >= 0


def test_a_cell_touching_the_region_along_an_edge_keeps_only_its_area():
    # The east cell's part of the region: an island and the line where the cell touches the
    # west square. A record on that line went to the east cell (habitable area 600 m away)
    # instead of the west cell it lies on the edge of.
    region = shapely.union_all([box(0, 0, 1000, 1000), box(1600, 400, 1800, 600)])
    grid = Grid.regular((0, 0, 2000, 1000), shape=(1, 2), crs=32633, region=region)
    east = np.asarray(grid.habitable_geometry)[1]
    assert east.geom_type == "Polygon" and east.equals(box(1600, 400, 1800, 600))
    np.testing.assert_array_equal(grid.locate(np.array([[1000.0, 300.0], [1700.0, 500.0]])),
                                  [0, 1])


def test_cells_geodataframe():
    grid = Grid.regular((0, 0, 4, 4), shape=(4, 4), crs=3857, exclude=box(1, 1, 3, 2.5))
    cells = grid.cells
    assert list(cells.columns) == [
        "cell_id",
        "row",
        "col",
        "n_neighbours",
        "habitable_fraction",
        "component",
        "geometry",
    ]
    assert cells.crs.to_epsg() == 3857
    assert cells["cell_id"].tolist() == list(range(grid.n_cells))
    np.testing.assert_array_equal(cells["row"], grid.cell_row)
    np.testing.assert_array_equal(cells["n_neighbours"], grid.n_neighbours)
    np.testing.assert_array_equal(cells.geometry.bounds.to_numpy(), grid.cell_bounds(np.arange(14)))
    assert grid.cells is cells


def test_unclipped_habitable_geometry_is_the_box():
    grid = Grid.regular((0, 0, 3, 2), shape=(2, 3))
    assert not grid.is_clipped
    geoms = grid.habitable_geometry
    assert all(
        g.equals(box(*b)) for g, b in zip(geoms, grid.cell_bounds(np.arange(6)), strict=True)
    )
    assert np.all(grid.habitable_fraction == 1.0)


def test_public_arrays_are_read_only():
    grid = Grid.regular((0, 0, 3, 2), shape=(2, 3))
    for name in (
        "cell_row",
        "lattice_to_cell",
        "indptr",
        "indices",
        "component",
        "habitable_fraction",
    ):
        with pytest.raises(ValueError, match="read-only"):
            getattr(grid, name)[0] = 5
    assert grid.cell_row[0] == 0


def test_from_points_bounds_pad_and_crs():
    pts = gpd.GeoDataFrame(geometry=[Point(1, 2), Point(9, 6)], crs=3857)
    grid = Grid.from_points(pts, shape=(4, 5), pad=1.0)
    # padded extremes (0, 1, 10, 7); units: nice_floor(10 / 5) = 2, nice_floor(6 / 4) = 1;
    # the bounds are the multiples of the units strictly outside the padded extremes
    assert grid.bounds == (-2.0, 0.0, 12.0, 8.0)
    assert grid.shape == (4, 5) and grid.cell_size == pytest.approx((2.8, 2.0))
    assert grid.snap_unit == (2.0, 1.0)
    assert grid.crs.to_epsg() == 3857
    assert grid.locate(pts).tolist() == [1 * 5 + 1, 3 * 5 + 3]
    # with a region the lattice spans the (public) region: the points give only the CRS
    region = gpd.GeoSeries([box(-10, 0, 5, 5)], crs=3857)
    grid = Grid.from_points(pts, cell_size=1.0, region=region)
    assert grid.bounds == (-10.0, 0.0, 5.0, 5.0) and grid.snap_unit is None
    assert grid.is_clipped and grid.n_cells == 15 * 5
    assert grid.locate(pts).tolist() == [2 * 15 + 11, -1]


# ---------------------------------------------------------------------- locate
def test_locate_input_types_and_missing_points():
    grid = Grid.regular((0, 0, 2, 2), shape=(2, 2), crs=3857)
    pts = [Point(0.5, 0.5), None, Point(), box(0, 0, 1, 1), Point(1.5, 1.5), Point(np.nan, 1)]
    expected = [0, -1, -1, -1, 3, -1]
    series = gpd.GeoSeries(pts, crs=3857)
    assert grid.locate(series).tolist() == expected
    assert grid.locate(gpd.GeoDataFrame(geometry=series)).tolist() == expected
    assert grid.locate(np.array(pts, dtype=object)).tolist() == expected
    assert grid.locate(shapely.points([[1.5, 0.5]])).tolist() == [1]
    assert grid.locate(Point(0.5, 1.5)).tolist() == [2]
    assert grid.locate([[0.5, 1.5], [np.nan, np.nan], [2.0, 2.0], [2.0001, 1]]).tolist() == [
        2,
        -1,
        3,
        -1,
    ]
    assert grid.locate(np.empty((0, 2))).shape == (0,)
    assert grid.locate(np.array([[1, 1]], dtype=np.int32)).dtype == np.int64


def test_locate_boundary_conventions_in_clipped_grid():
    # region and exclusion boundaries both count as habitable; only points strictly inside an
    # exclusion or strictly outside the region are refused
    grid = Grid.regular(
        (0, 0, 4, 4), shape=(4, 4), region=box(0, 0, 3.5, 3.5), exclude=box(0.5, 0.5, 1.5, 1.5)
    )
    xy = [
        [0.7, 0.7],  # strictly inside the exclusion
        [0.5, 0.7],  # on the exclusion's west edge, in cell (0, 0)
        [1.5, 1.2],  # on the exclusion's east edge, in cell (1, 1)
        [3.5, 1.2],  # on the region's east edge, in cell (1, 3)
        [3.6, 1.2],  # outside the region, in cell (1, 3)
        [3.2, 3.5],  # on the region's north edge, in cell (3, 3)
        [0.2, 0.2],  # habitable part of cell (0, 0)
    ]
    l2c = grid.lattice_to_cell
    expected = [-1, l2c[0], l2c[5], l2c[7], -1, l2c[15], l2c[0]]
    assert min(expected[1:4]) >= 0
    assert grid.locate(xy).tolist() == expected
    assert not grid.fully_habitable[[l2c[0], l2c[5], l2c[7], l2c[15]]].any()


def test_locate_on_region_boundary_inside_partial_cell():
    region = box(0, 0, 2.5, 2.5)
    grid = Grid.regular((0, 0, 3, 3), shape=(3, 3), region=region)
    assert not grid.fully_habitable[grid.lattice_to_cell[8]]
    cell = grid.locate([[2.5, 2.2], [2.6, 2.2], [2.2, 2.5], [2.2, 2.51]])
    assert cell.tolist() == [grid.lattice_to_cell[8], -1, grid.lattice_to_cell[8], -1]


def test_locate_crs_mismatch():
    grid = Grid.regular((0, 0, 2, 2), shape=(2, 2), crs=3857)
    with pytest.raises(CRSError, match=r"reproject with points.to_crs\(grid.crs\)"):
        grid.locate(gpd.GeoSeries([Point(1, 1)], crs=4326))


def test_locate_bad_input():
    grid = Grid.regular((0, 0, 2, 2), shape=(2, 2))
    with pytest.raises(InputError, match=r"\(n, 2\) array.*shape \(4,\)"):
        grid.locate([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(InputError, match=r"positions \[1\] are not shapely geometries"):
        grid.locate(np.array([Point(0, 0), "a"], dtype=object))
    with pytest.raises(InputError, match=r"dtype complex128"):  # the imaginary part was dropped
        grid.locate(np.array([[1 + 1j, 1.0]]))
    # a ragged list raised NumPy's ValueError; a masked x was located at its hidden value
    with pytest.raises(InputError, match=r"\(n, 2\) array of x, y coordinates; NumPy could not"):
        grid.locate([[1.0, 2.0], [3.0]])
    with pytest.raises(InputError, match=r"points is a masked array with masked entries"):
        grid.locate(np.ma.masked_array([[1.5, 0.5]], mask=[[True, False]]))


def test_locate_takes_a_frame_of_nullable_coordinates():
    # Float64/Int64 columns were refused as "not shapely geometries" (positions of cells)
    grid = Grid.regular((0, 0, 2, 2), shape=(2, 2))
    frame = pd.DataFrame({"x": pd.array([0.5, 1.5, None], dtype="Float64"),
                          "y": pd.array([0, 1, 1], dtype="Int64")})
    assert grid.locate(frame).tolist() == [0, 3, -1]  # a missing x: not located
    # a frame of point objects is located as before (the float conversion raised TypeError)
    assert grid.locate(pd.DataFrame({"geometry": [Point(0.5, 0.5), Point(1.5, 1.5)]})
                       ).tolist() == [0, 3]


def test_cell_bounds_rejects_bad_ids():
    grid = Grid.regular((0, 0, 2, 2), shape=(2, 2))
    with pytest.raises(InputError, match=r"cell_ids must lie in 0..3; got \[4, -1\]"):
        grid.cell_bounds([0, 4, -1])
    with pytest.raises(InputError, match="integer cell ids"):
        grid.cell_bounds([0.5])


@st.composite
def regular_grids(draw):
    xmin = draw(st.floats(-1e6, 1e6))
    ymin = draw(st.floats(-1e6, 1e6))
    width = draw(st.floats(1e-2, 1e5))
    height = draw(st.floats(1e-2, 1e5))
    nrows, ncols = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        return Grid.regular((xmin, ymin, xmin + width, ymin + height), shape=(nrows, ncols))


def coordinate(draw, vmin, vmax, n):
    """A coordinate in [vmin, vmax]: uniform, on an edge vmin + k * step or one ulp either side."""
    kind = draw(st.sampled_from(["uniform", "edge", "below", "above", "min", "max"]))
    if kind == "uniform":
        return min(vmin + draw(st.floats(0, 1)) * (vmax - vmin), vmax)
    if kind in ("edge", "below", "above"):
        k = draw(st.integers(1 if kind == "below" else 0, n if kind == "below" else n - 1))
        edge = vmax if k == n else vmin + k * ((vmax - vmin) / n)
        return {
            "edge": edge,
            "below": np.nextafter(edge, -np.inf),
            "above": np.nextafter(edge, np.inf),
        }[kind]
    return vmin if kind == "min" else vmax


def half_open_contains(grid, x, y):
    """Brute force: cells whose box holds (x, y), max outer edges closed."""
    b = grid.cell_bounds(np.arange(grid.n_cells))
    xmax, ymax = grid.bounds[2], grid.bounds[3]
    in_x = (b[:, 0] <= x) & ((x < b[:, 2]) | ((x == xmax) & (b[:, 2] == xmax)))
    in_y = (b[:, 1] <= y) & ((y < b[:, 3]) | ((y == ymax) & (b[:, 3] == ymax)))
    return np.flatnonzero(in_x & in_y)


@settings(deadline=None, max_examples=200)
@given(data=st.data(), grid=regular_grids())
def test_point_inside_is_located_in_the_one_box_holding_it(data, grid):
    xmin, ymin, xmax, ymax = grid.bounds
    nrows, ncols = grid.shape
    xs = [coordinate(data.draw, xmin, xmax, ncols) for _ in range(5)]
    ys = [coordinate(data.draw, ymin, ymax, nrows) for _ in range(5)]
    located = grid.locate(np.column_stack([xs, ys]))
    for x, y, cell in zip(xs, ys, located, strict=True):
        holders = half_open_contains(grid, x, y)
        assert holders.tolist() == [cell]
        col = cell % ncols
        # the double nearest the decimal edge the bounds mean (xmin + col·width/ncols)
        low, high = Fraction(repr(float(xmin))), Fraction(repr(float(xmax)))
        assert grid.cell_bounds(cell)[0, 0] == float(low + col * (high - low) / ncols)


@settings(deadline=None, max_examples=100)
@given(
    grid=regular_grids(),
    side=st.sampled_from(["west", "east", "south", "north", "nan"]),
    offset=st.floats(1e-9, 1e9),
    along=st.floats(0, 1),
)
def test_point_outside_bounds_is_minus_one(grid, side, offset, along):
    xmin, ymin, xmax, ymax = grid.bounds
    x, y = xmin + along * (xmax - xmin), ymin + along * (ymax - ymin)
    if side == "west":
        x = xmin - offset
    elif side == "east":
        x = xmax + offset
    elif side == "south":
        y = ymin - offset
    elif side == "north":
        y = ymax + offset
    else:
        x = np.nan
    assume(np.isnan(x) or not (xmin <= x <= xmax and ymin <= y <= ymax))
    assert grid.locate([[x, y]]).tolist() == [-1]


@st.composite
def clipped_setups(draw):
    nrows, ncols = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    bounds = (0.0, 0.0, float(ncols), float(nrows))
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        x0, y0 = draw(st.floats(-1, ncols)), draw(st.floats(-1, nrows))
        w, h = draw(st.floats(0.2, ncols + 1)), draw(st.floats(0.2, nrows + 1))
        angle = draw(st.sampled_from([0.0, 15.0, 45.0, 60.0]))
        parts.append(affinity.rotate(box(x0, y0, x0 + w, y0 + h), angle))
    exclude = None
    if draw(st.booleans()):
        cx, cy = draw(st.floats(0, ncols)), draw(st.floats(0, nrows))
        exclude = Point(cx, cy).buffer(draw(st.floats(0.1, 2.0)), quad_segs=4)
    return bounds, (nrows, ncols), parts, exclude


@settings(deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(setup=clipped_setups(), data=st.data())
def test_clipped_locate_agrees_with_shapely(setup, data):
    bounds, shape, parts, exclude = setup
    try:
        grid = quiet_grid(bounds, shape=shape, region=parts, exclude=exclude)
    except GridError:
        assume(False)
    full = quiet_grid(bounds, shape=shape)
    region = shapely.union_all(parts)
    boxes = shapely.box(*full.cell_bounds(np.arange(full.n_cells)).T)
    habitable = shapely.intersection(boxes, region)
    if exclude is not None:
        habitable = shapely.difference(habitable, exclude)
    # The polygonal part: where a region touches a cell only along its edge (a square resting
    # on the lattice's top edge), the intersection holds that segment too, and a record on it
    # is on no habitable area (the lattice clips to polygons; found by hypothesis).
    habitable = np.array([shapely.union_all([part for part in shapely.get_parts(g)
                                             if part.geom_type in ("Polygon", "MultiPolygon")])
                          for g in habitable], dtype=object)
    fraction = shapely.area(habitable) / shapely.area(boxes)
    # kept cells are exactly the lattice positions with habitable area
    np.testing.assert_array_equal(grid.lattice_to_cell >= 0, fraction > 1e-12)
    kept = grid.lattice_to_cell >= 0
    np.testing.assert_allclose(grid.habitable_fraction, fraction[kept], rtol=1e-9, atol=1e-12)

    # random points, plus vertices of the region and exclusion (on their boundaries)
    nrows, ncols = shape
    pts = [
        (coordinate(data.draw, 0.0, ncols, ncols), coordinate(data.draw, 0.0, nrows, nrows))
        for _ in range(20)
    ]
    vertices = shapely.get_coordinates(region).tolist()
    if exclude is not None:
        vertices += shapely.get_coordinates(exclude).tolist()
    xy = np.array(pts + vertices)
    located = grid.locate(xy)

    position = full.locate(xy)  # arithmetic cell on the full lattice (-1 outside bounds)
    expected = np.where(position >= 0, grid.lattice_to_cell[position], -1)
    test = expected >= 0
    inside = shapely.intersects_xy(habitable[position[test]], xy[test, 0], xy[test, 1])
    expected[np.flatnonzero(test)[~inside]] = -1
    # A point lost on its arithmetic cell's west or south edge (the region ends there, or a
    # no-go area starts there) lies on the closed edge of the cell west, south or south-west of
    # it: the smallest kept cell id among those whose habitable part holds it.
    for k in np.flatnonzero((expected < 0) & (position >= 0)):
        row, col = divmod(int(position[k]), ncols)
        west_edge, south_edge = full.cell_bounds(np.array([position[k]]))[0, :2]
        on_west, on_south = xy[k, 0] == west_edge, xy[k, 1] == south_edge
        holders = []
        for shared, r, c in ((on_west, row, col - 1), (on_south, row - 1, col),
                             (on_west and on_south, row - 1, col - 1)):
            if shared and r >= 0 and c >= 0 and grid.lattice_to_cell[r * ncols + c] >= 0 \
                    and shapely.intersects_xy(habitable[r * ncols + c], *xy[k]):
                holders.append(int(grid.lattice_to_cell[r * ncols + c]))
        expected[k] = min(holders, default=-1)
    np.testing.assert_array_equal(located, expected)


# ---------------------------------------------------------------------- validation errors
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(bounds=(1, 0, 1, 1), shape=(2, 2)), r"xmin < xmax and ymin < ymax.*xmin=1.0"),
        (dict(bounds=(0, 2, 1, 1), shape=(2, 2)), r"xmin < xmax and ymin < ymax"),
        (dict(bounds=(0, 0, 1), shape=(2, 2)), r"bounds must be four finite numbers"),
        (dict(bounds=(0, 0, np.nan, 1), shape=(2, 2)), r"bounds must be four finite numbers"),
        (dict(bounds=(0, 0, 1, 1)), r"exactly one of shape=\(nrows, ncols\) or cell_size.*neither"),
        (dict(bounds=(0, 0, 1, 1), shape=(2, 2), cell_size=0.5), r"exactly one of .*got both"),
        (dict(bounds=(0, 0, 1, 1), shape=(0, 2)), r"shape must be two positive integers"),
        (dict(bounds=(0, 0, 1, 1), shape=(2.5, 2)), r"shape must be two positive integers"),
        (dict(bounds=(0, 0, 1, 1), shape=(2, 2, 2)), r"shape must be two positive integers"),
        (dict(bounds=(0, 0, 1, 1), cell_size=-1.0), r"cell_size must be a positive number"),
        (dict(bounds=(0, 0, 1, 1), cell_size=(0.1, 0)), r"cell_size must be a positive number"),
        (dict(bounds=(0, 0, 1, 1), cell_size=1e300), r"cell_size 1e\+300 is beyond 1e\+12"),
        (
            dict(bounds=(0, 0, 1, 1), shape=(2, 2), contiguity="x"),
            r"^contiguity must be one of 'queen', 'rook', got str 'x'$",
        ),
        (
            dict(bounds=(0, 0, 1e6, 1e6), cell_size=0.1),
            r"about 1\.0e14 cells, more than the limit",
        ),
        (
            dict(bounds=(0, 0, 1, 1), shape=(2, 2), region=box(5, 5, 6, 6)),
            r"region .* does not intersect the grid bounds .*share a CRS",
        ),
        (
            dict(bounds=(0, 0, 1, 1), shape=(2, 2), region=box(1, 0, 2, 1)),
            r"no cell has habitable area",
        ),
        (
            dict(bounds=(0, 0, 1, 1), shape=(2, 2), exclude=box(-1, -1, 2, 2)),
            r"no cell has habitable area: every cell is outside the region",
        ),
        (  # a region inside one huge cell was "outside the region"
            dict(bounds=(0, 0, 1e12, 1e12), shape=(1, 1), region=box(10, 10, 1000, 1000)),
            r"no cell has habitable area: the habitable region is a rounding sliver .* choose "
            r"cells smaller than the region",
        ),
        (
            dict(bounds=(0, 0, 1, 1), shape=(2, 2), region=Point(0.5, 0.5)),
            r"region must contain only Polygon/MultiPolygon.*POINT.*buffer",
        ),
        (
            dict(
                bounds=(0, 0, 1, 1),
                shape=(2, 2),
                exclude=[Polygon([(0, 0), (1, 1), (1, 0), (0, 1)])],
            ),
            r"exclude has invalid polygons at non-empty positions \[0\].*make_valid",
        ),
        (
            dict(bounds=(0, 0, 1, 1), shape=(2, 2), region=[Polygon()]),
            r"region has no non-empty polygon",
        ),
        (
            dict(bounds=(0, 0, 1, 1), shape=(2, 2), region="POLYGON"),
            r"region must be a GeoDataFrame",
        ),
        (
            dict(bounds=(0, 0, 1, 1), shape=(2, 2), exclude=[box(0, 0, 1, 1), 3]),
            r"exclude items at positions \[1\] are not shapely geometries",
        ),
    ],
)
def test_grid_errors(kwargs, match):
    with pytest.raises(GridError, match=match):
        Grid.regular(**kwargs)


@pytest.mark.parametrize("build", [
    lambda: Grid.regular((1e15, 0, 1e15 + 1, 1), shape=(1, 100)),  # edges not even increasing
    # 1 m cells at 2**50, where float64 holds four values per metre: uniform points landed on
    # the records' own locations about once in 16 draws
    lambda: Grid.regular((2.0**50, 2.0**50, 2.0**50 + 2, 2.0**50 + 2), shape=(2, 2)),
    lambda: Grid.regular((-2.0**50, 0, -2.0**50 + 4, 4), cell_size=1.0),
    lambda: Grid.hexagonal((2.0**50, 2.0**50, 2.0**50 + 20, 2.0**50 + 20), 1.0),
])
def test_cells_too_small_for_float64_at_their_coordinates_are_refused(build):
    with pytest.raises(GridError, match=r"cells of 0?\.?\d* ?.*CRS units are below 1e-10 of the "
                                        r"coordinates \(of the order of 1e15\).*larger cells"):
        build()


def test_hexagons_too_small_are_told_a_larger_side_not_a_smaller_shape():
    # A hexagonal lattice has no shape: "use a larger cell_size or a smaller shape".
    points = gpd.GeoDataFrame(geometry=gpd.points_from_xy([2.0**50, 2.0**50 + 30],
                                                          [2.0**50, 2.0**50 + 30]))
    for build in (lambda: Grid.hexagonal((2.0**50, 2.0**50, 2.0**50 + 20, 2.0**50 + 20), 1.0),
                  lambda: Grid.from_points(points, cell_size=1e-9, kind="hexagonal")):
        with pytest.raises(GridError, match="cell_size, the hexagons' side") as caught:
            build()
        assert "shape" not in str(caught.value)


def test_cells_of_a_millimetre_in_utm_coordinates_are_kept():
    # 1e-10 of a UTM northing (5e6 m) is half a millimetre: ordinary fine lattices pass
    grid = Grid.regular((500_000, 5_000_000, 500_001, 5_000_001), cell_size=0.001)
    assert grid.shape == (1000, 1000)


def test_empty_cell_ids_are_none_and_text_is_refused():
    grid = Grid.regular((0, 0, 1, 1), shape=(2, 2))
    assert grid.check_cell_ids([]).dtype == np.int64 and grid.check_cell_ids([]).size == 0
    with pytest.raises(InputError, match="integer cell ids, got dtype <U1"):  # was numpy's
        grid.check_cell_ids(np.array([], dtype=str))                       # UFuncTypeError


@pytest.mark.parametrize(
    ("build", "match"),
    [
        # the count (an int past the float range) failed to format: OverflowError
        (lambda: Grid.regular((0, 0, 1e4, 1e4), cell_size=1e-160), r"about 1\.0e328 cells"),
        (lambda: Grid.hexagonal((0, 0, 1e4, 1e4), cell_size=1e-160), r"about 3\.8e327 cells"),
        # the extent over the cell size overflowed to inf: math.ceil raised OverflowError
        (lambda: Grid.regular((0, 0, 1e300, 1e300), cell_size=1e-10), r"about 1\.0e620 cells"),
        (lambda: Grid.regular((-1.7e308, 0, 1.7e308, 1), cell_size=1.0),
         r"about 3\.4e308 cells"),
        # hexagons: rows and columns overflowed to inf (int(math.floor(inf)): OverflowError)
        (lambda: Grid.hexagonal((0, 0, 1e15, 1e15), cell_size=1e-300), r"about 3\.8e629 cells"),
    ],
)
def test_cell_counts_beyond_the_float_range_are_refused_with_the_limit(build, match):
    with pytest.raises(GridError, match=match + r", more than the limit .* use a larger"):
        build()


def test_lattice_size_limit(monkeypatch):
    monkeypatch.setattr(lattice, "MAX_CELLS", 99)
    Grid.regular((0, 0, 1, 1), shape=(9, 11))
    with pytest.raises(GridError, match=r"about 1\.0e2 cells, more than the limit of 99; use a "
                       r"smaller shape"):
        Grid.regular((0, 0, 1, 1), shape=(10, 10))
    # From a cell size the rows and columns are the extent over it: only a rounded count.
    with pytest.raises(GridError, match=r"about 1\.3e2 cells.*use a larger cell_size") as info:
        Grid.regular((0, 0, 1.234, 0.987), cell_size=0.1)  # 10 rows x 13 columns
    assert "13" not in str(info.value) and "130" not in str(info.value)


def test_region_with_crs_needs_a_grid_crs():
    region = gpd.GeoSeries([box(0, 0, 1, 1)], crs=3857)
    with pytest.raises(CRSError, match=r"region has CRS EPSG:3857 but the grid has no CRS"):
        Grid.regular((0, 0, 1, 1), shape=(2, 2), region=region)
    pts = gpd.GeoSeries([Point(0, 0), Point(1, 1)])
    with pytest.raises(CRSError, match=r"region has CRS EPSG:3857 but the grid has no CRS"):
        Grid.from_points(pts, shape=(2, 2), region=region)
    # A geographic region's CRS was suggested as the grid's, which the grid then refused.
    degrees = gpd.GeoSeries([box(-44, -20, -43.9, -19.9)], crs=4326)
    with pytest.raises(CRSError,
                       match=r"give the grid its CRS \(a projected CRS in metres") as info:
        Grid.regular((0, 0, 1, 1), shape=(2, 2), region=degrees)
    assert "crs='EPSG:4326'" not in str(info.value)


def test_a_single_cell_is_told_to_use_smaller_cells():
    # "use a larger cell_size" for a lattice of one cell: the fix is smaller cells.
    with pytest.warns(IsolatedCellWarning, match=r"a smaller cell_size \(a single cell"):
        Grid.hexagonal(box(0, 0, 50, 50), cell_size=100)


def test_invalid_crs():
    with pytest.raises(CRSError, match=r"crs 'EPSG:nope' is not a valid CRS"):
        Grid.regular((0, 0, 1, 1), shape=(2, 2), crs="EPSG:nope")


def test_from_points_errors():
    with pytest.raises(InputError, match="gdf must be a GeoDataFrame or GeoSeries"):
        Grid.from_points(np.zeros((3, 2)), shape=(2, 2))
    with pytest.raises(GridError, match=r"gdf has no records.*region=.*--region"):
        Grid.from_points(gpd.GeoSeries([], crs=3857), shape=(2, 2))
    one = gpd.GeoSeries([Point(1, 1), Point(1, 1)], crs=3857)
    with pytest.raises(GridError, match=r"all lie at one point \(zero width and height\)"):
        Grid.from_points(one, shape=(2, 2))
    with pytest.raises(GridError, match="pad must be a finite number >= 0"):
        Grid.from_points(one, shape=(2, 2), pad=-1)
    # padded extremes (0, 0, 2, 2), unit nice_floor(2 / 2) = 1, snapped strictly outward
    assert Grid.from_points(one, shape=(2, 2), pad=1).bounds == (-1.0, -1.0, 3.0, 3.0)


def test_a_point_on_a_line_where_the_region_or_a_no_go_area_begins_keeps_its_cell():
    # Square cells are half-open: a point on x = 1 went to the east cell, which was dropped
    # (the region ends on the line) or whose habitable part starts beyond it (a lake starts on
    # the line), so the point was in no cell although it lies on the west cell's closed edge.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lake = Grid.regular((0, 0, 2, 2), shape=(2, 2), exclude=box(1, 0, 1.5, 2))
        half = Grid.regular((0, 0, 2, 2), shape=(2, 2), region=box(0, 0, 1, 2))
        corner = Grid.regular((0, 0, 2, 2), shape=(2, 2), region=box(0, 0, 1, 1))
    assert lake.locate([[1.0, 0.5], [1.0, 1.5], [1.5, 0.5], [1.2, 0.5]]).tolist() == [0, 2, 1, -1]
    assert half.locate([[1.0, 0.5], [1.0, 1.0], [1.0 + 1e-9, 0.5]]).tolist() == [0, 0, -1]
    assert corner.locate([[1.0, 1.0], [0.5, 1.0], [1.0, 0.5]]).tolist() == [0, 0, 0]
    # where the east cell holds the line, the point stays there (half-open cells)
    full = Grid.regular((0, 0, 2, 2), shape=(2, 2), exclude=box(1.5, 0, 2, 0.2))
    assert full.locate([[1.0, 0.5]]).tolist() == [1]


def test_a_region_digitised_on_lattice_lines_leaves_no_sliver_cells():
    # At UTM coordinates a region edge read from a file (7519104.4) misses the lattice line
    # computed from the origin (7519097.8 + 3 * 2.2) by a float64 step: the cells beyond the
    # region kept a sliver of 5e-11 of their area, far above the relative guard of 1e-12, and
    # came out as 6 spurious cells with neighbours.
    region = box(715315.7, 7519097.8, 715322.3, 7519104.4)  # 3 x 3 cells of 2.2 m
    grid = Grid.regular((715315.7, 7519097.8, 715326.7, 7519108.8), cell_size=2.2,
                        region=region, crs="EPSG:31983")
    assert grid.shape == (5, 5) and grid.n_cells == 9
    assert grid.cell_row.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert grid.cell_col.tolist() == [0, 1, 2] * 3
    assert np.allclose(grid.habitable_fraction, 1.0)
    assert (grid.adjacency != lat2W(3, 3, rook=False).sparse).nnz == 0
    # the same region as a no-go area: the 16 cells around it, not 22
    around = Grid.regular((715315.7, 7519097.8, 715326.7, 7519108.8), cell_size=2.2,
                          exclude=region)
    assert around.n_cells == 16 and np.allclose(around.habitable_fraction, 1.0)


def test_locate_from_several_threads_runs_one_geometric_test_at_a_time(monkeypatch):
    # shapely prepares a geometry on its first point test, and GEOS's prepared geometries are
    # not thread-safe: threads locating points in one fresh clipped or areal grid crashed the
    # interpreter (double free, segfault). The geometric tests now take turns.
    boxes = shapely.box(np.arange(8.0), 0, np.arange(8.0) + 1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        grids = [
            Grid.regular((0, 0, 8, 1), shape=(1, 8), region=box(0, 0.1, 8, 0.9)),
            Grid.hexagonal(box(0, 0, 8, 1), cell_size=0.2),
            Grid.from_polygons(gpd.GeoSeries(boxes)),
        ]
    xy = np.column_stack([np.linspace(0, 8, 400), np.linspace(0, 1, 400)])
    expected = [grid.locate(xy) for grid in grids]
    running, most = [0], [0]
    guard = threading.Lock()

    def one_at_a_time(function):
        def counted(*args, **kwargs):
            with guard:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.002)  # lets the other threads in
            try:
                return function(*args, **kwargs)
            finally:
                with guard:
                    running[0] -= 1
        return counted

    for name in ("intersects_xy", "contains_properly"):
        monkeypatch.setattr(shapely, name, one_at_a_time(getattr(shapely, name)))
    for grid, cells in zip(grids, expected, strict=True):
        grid._cache.pop("index", None)  # an areal grid builds its index on first use
        found = []
        threads = [threading.Thread(target=lambda g=grid, out=found: out.append(g.locate(xy)))
                   for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(found) == 6 and all(np.array_equal(f, cells) for f in found)
    assert most[0] == 1


def test_a_geometry_collection_is_refused_with_how_to_keep_its_polygons():
    # make_valid, which the invalid-polygon message recommends, turns a polygon with a spike
    # into a GeometryCollection: the refusal said only "buffer lines or points first"
    spiked = Polygon([(0, 0), (2, 0), (2, 2), (3, 2), (2, 2), (0, 2)])
    repaired = shapely.make_valid(spiked)
    assert repaired.geom_type == "GeometryCollection"
    with pytest.raises(GridError, match=r"GEOMETRYCOLLECTION.*method='structure'.*explode"):
        Grid.regular((0, 0, 4, 4), shape=(2, 2), region=repaired)


# ------------------------------------------------------------------ fuzzed arguments
_ARRAY = np.array(["queen", "rook"])
_POINTS = gpd.GeoSeries.from_xy([0.0, 10.0, 3.0], [0.0, 10.0, 7.0], crs=3857)
_AREAS = gpd.GeoDataFrame(geometry=[box(0, 0, 1, 1), box(1, 0, 2, 1)], crs=3857)


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: Grid.regular((0, 0, 4, 4), shape=(2, 2), contiguity=_ARRAY), "contiguity"),
        (lambda: Grid.from_points(_POINTS, shape=(2, 2), kind=_ARRAY), "kind"),
        (lambda: Grid.from_points(_POINTS, shape=(2, 2), orientation=_ARRAY), "orientation"),
        (lambda: Grid.from_points(_POINTS, shape=(2, 2), contiguity=_ARRAY), "contiguity"),
        (lambda: Grid.hexagonal((0, 0, 4, 4), 1.0, orientation=_ARRAY), "orientation"),
        (lambda: Grid.from_polygons(_AREAS, islands=_ARRAY), "islands"),
        (lambda: Grid.from_polygons(_AREAS, contiguity=_ARRAY), "contiguity"),
    ],
)
def test_a_word_option_given_an_array_is_refused_naming_it(build, name):
    # `option not in (...)` raised NumPy's "truth value of an array is ambiguous".
    with pytest.raises(GridError, match=rf"^{name} must be one of .*got ndarray of shape \(2,\)"):
        build()


@pytest.mark.parametrize(
    "build",
    [
        lambda crs: Grid.regular((0, 0, 4, 4), shape=(2, 2), crs=crs),
        lambda crs: Grid.hexagonal((0, 0, 4, 4), 1.0, crs=crs),
        lambda crs: lattice.parse_crs(crs),
        lambda crs: lattice.require_projected_crs(crs),
    ],
)
@pytest.mark.parametrize("crs", [np.array([3857, 3857]), [3857], True])
def test_a_crs_given_an_array_list_or_bool_is_a_type_error_naming_crs(build, crs):
    with pytest.raises(InputTypeError, match=r"^crs must be a pyproj.CRS, an EPSG code"):
        build(crs)


@pytest.mark.parametrize("crs", ["bogus", np.nan, 1])
def test_require_projected_crs_refuses_what_pyproj_cannot_read_with_our_crs_error(crs):
    # pyproj's own CRSError (a RuntimeError) escaped.
    with pytest.raises(CRSError, match=r"^crs .* is not a valid CRS .*pass e.g. 'EPSG:"):
        lattice.require_projected_crs(crs)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Grid.regular((0, 0, 4, 4), cell_size=10**400), r"cell_size \(an int past"),
        (lambda: Grid.regular((0, 0, 4, 4), cell_size=(1, 10**400)), r"cell_size \(an int past"),
        (lambda: Grid.from_points(_POINTS, cell_size=10**400), r"cell_size \(an int past"),
        (lambda: Grid.hexagonal((0, 0, 4, 4), cell_size=10**400), r"cell_size \(an int past"),
        # an infinite float is shown as itself, not as an int past the float range
        (lambda: Grid.regular((0, 0, 4, 4), cell_size=float("inf")), r"^cell_size inf is beyond"),
        (lambda: Grid.regular((0, 0, 4, 4), cell_size=(1.0, np.inf)), r"^cell_size \(1.0, inf\)"),
        (lambda: Grid.regular((0, 0, 4, 4), cell_size=(np.inf, 10**5000)),
         r"cell_size \(an int past"),  # repr of the int raised ValueError (4,300 digits)
        (lambda: Grid.from_points(_POINTS, shape=(2, 2), pad=10**400),
         r"pad must be a finite number >= 0, got int <401 digits"),
        (lambda: Grid.regular((0, 0, 10**400, 4), shape=(2, 2)), "bounds must be four finite"),
        (lambda: Grid.regular((True, 0, 5, 5), shape=(2, 2)), "bounds must be four finite"),
        (lambda: Grid.regular((0, 0, "5", 5), shape=(2, 2)), "bounds must be four finite"),
        (lambda: Grid.hexagonal(None, cell_size=1.0), "extent must be bounds"),
        (lambda: Grid.hexagonal(np.array(1.0), cell_size=1.0), "region must be a GeoDataFrame"),
        (lambda: Grid.regular((0, 0, 4, 4), cell_size=np.array(1.0)), "cell_size must be"),
    ],
)
def test_huge_ints_bools_and_missing_extents_are_grid_errors(build, match):
    # 10**400 raised OverflowError, None "cannot convert NaN to integer", a 0-d array
    # "len() of unsized object"; True was accepted as the number 1.
    with pytest.raises(GridError, match=match):
        build()


def test_check_cell_ids_refuses_too_many_ids_before_converting_them():
    # np.asarray(range(10**9)) raised MemoryError (8 GB) inside check_cell_ids.
    grid = Grid.regular((0, 0, 4, 4), shape=(2, 2))
    for ids in (range(lattice.MAX_CELL_IDS + 1), range(10**20)):
        with pytest.raises(InputError, match=r"^cells holds .* ids, more than the limit"):
            grid.check_cell_ids(ids, "cells")
    assert grid.check_cell_ids(range(4)).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("size", [0.1, 2.2, 30.48, 1.1])
def test_points_on_the_lines_go_east_and_north_whatever_the_decimal_size(size):
    # Edges computed as xmin + k·size in floats fell one float step off many decimal lines:
    # 40-75 % of the points on lines went west or south, against the half-open rule, and
    # records rounded onto the lines (coarse geocoding) counted 0 and 20 in alternate columns
    # of 10 each.
    x0, y0 = 500_000.0, 7_519_097.8
    grid = Grid.regular((x0, y0, x0 + 20 * size, y0 + 20 * size), cell_size=size)
    k = np.arange(20)
    # the lines as a file's text reads them: "500002.2" is the double nearest 500,002.2
    columns = [float(Decimal(repr(x0)) + j * Decimal(repr(size))) for j in k]
    rows = [float(Decimal(repr(y0)) + j * Decimal(repr(size))) for j in k]
    np.testing.assert_array_equal(
        grid.locate(np.column_stack([columns, np.full(20, y0 + 0.5 * size)])), k)
    np.testing.assert_array_equal(
        grid.locate(np.column_stack([np.full(20, x0 + 0.5 * size), rows])), k * 20)
    # and Grid.regular((0, 0, 1, 1), shape=(10, 10)) put 0.3 and 0.7 in the cells before them
    tenths = Grid.regular((0, 0, 1, 1), shape=(10, 10))
    np.testing.assert_array_equal(tenths.locate([[0.3, 0.05], [0.4, 0.05], [0.6, 0.05],
                                                 [0.7, 0.05]]), [3, 4, 6, 7])


def test_a_region_beyond_the_bounds_is_pointed_out():
    # Grid.regular((0, 0, 10, 10), ..., region=box(0, 0, 100, 100)) cut 99 % of the region off
    # without a word: every point there was located in no cell.
    with pytest.warns(DataWarning, match=r"99% of the region's area lies beyond the grid bounds "
                                         r"\(0\.0, 0\.0, 10\.0, 10\.0\)"):
        grid = Grid.regular((0, 0, 10, 10), cell_size=1, region=box(0, 0, 100, 100))
    assert grid.locate([[50.0, 50.0]]).tolist() == [-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        Grid.regular((0, 0, 10, 10), cell_size=1, region=box(0, 0, 10.05, 10))  # 0.5 %
        Grid.regular((0, 0, 10, 10), cell_size=1, region=box(1, 1, 9, 9))


def test_an_empty_extent_is_not_told_to_be_skipped():
    # "pass None to skip it": Grid.hexagonal's extent is required (None is refused)
    with pytest.raises(GridError, match=r"has no non-empty polygon, so it covers no area") as info:
        Grid.hexagonal(Polygon(), 1.0)
    assert "None" not in str(info.value)
