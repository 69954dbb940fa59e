"""geosynth.lattice at its edges: extreme bounds, reprojected polygons, messages, grid equality."""

import pickle
import warnings

import geopandas as gpd
import pytest
import shapely
from shapely.geometry import MultiPolygon, Point, box

from geosynth.errors import GridError, IsolatedCellWarning
from geosynth.lattice import Grid


@pytest.mark.parametrize("bounds", [
    (-1e308, -1e308, 1e308, 1e308),  # the width overflowed to inf: NaN edges, inf cell size
    (0.0, 0.0, 1e200, 1e200),  # cells of 5e199: box areas overflowed, fractions 0
])
def test_bounds_too_wide_for_float64_cells_with_a_shape_are_refused(bounds):
    # cell_size= refused cells above 1e12 CRS units; shape= built them (the first with NaN
    # bounds and edges, whose points located nowhere)
    with pytest.raises(GridError, match=r"shape=\(2, 2\) give cells of .* CRS units, beyond "
                                        r"1e\+12 .*check the bounds and their CRS"):
        Grid.regular(bounds, shape=(2, 2))


def test_region_outside_the_bounds_is_named_with_plain_numbers():
    # numpy 2 printed the region's bounds as np.float64(20.0), ...
    with pytest.raises(GridError, match=r"region \(bounds \(20\.0, 20\.0, 30\.0, 30\.5\)\) does "
                                        r"not intersect the grid bounds \(0\.0, 0\.0, 10\.0, "
                                        r"10\.0\)"):
        Grid.regular((0, 0, 10, 10), shape=(2, 2), region=box(20, 20, 30, 30.5))


@pytest.mark.parametrize("name", ["region", "exclude"])
def test_polygons_broken_by_reprojection_are_not_called_invalid_input(name):
    # The whole world in degrees is a valid polygon; in UTM its meridians +-180 collapse onto
    # the central meridian. The message said to repair the polygons with QGIS's Fix geometries.
    world = gpd.GeoSeries([box(-180, -90, 180, 90)], crs=4326)
    with warnings.catch_warnings(), pytest.raises(GridError) as info:
        warnings.simplefilter("ignore", RuntimeWarning)  # pyproj: points beyond the zone
        Grid.regular((166_000, 0, 834_000, 9e6), cell_size=1e5, crs=32633, **{name: world})
    message = str(info.value)
    assert f"{name} polygons at non-empty positions [0] are valid in their CRS EPSG:4326" in message
    assert "reprojected to the grid CRS EPSG:32633" in message
    assert f"clip {name} to the study area" in message and "Fix geometries" not in message


def test_polygons_invalid_in_their_own_crs_still_get_the_repair_message():
    bowtie = gpd.GeoSeries.from_wkt(["POLYGON ((0 0, 10 10, 10 0, 0 10, 0 0))"], crs=3857)
    with pytest.raises(GridError, match=r"region has invalid polygons .*Self-intersection.*"
                                        r"repair them"):
        Grid.regular((0, 0, 10, 10), shape=(2, 2), crs=32633, region=bowtie.to_crs(4326))


# ---------------------------------------------------------------------- equality
REGION = Point(5, 5).buffer(4)


def _square(**kwargs):
    args = dict(bounds=(0, 0, 10, 10), shape=(10, 10), crs=3857, region=REGION)
    return Grid.regular(**{**args, **kwargs})


def _areas():
    return gpd.GeoDataFrame({"id": ["a", "b", "c"]}, crs=3857,
                            geometry=[box(0, 0, 1, 1), box(1, 0, 2, 1), box(5, 5, 6, 6)])


def _areal(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        return Grid.from_polygons(_areas(), **{"id_column": "id", **kwargs})


@pytest.mark.parametrize("build", [
    _square,
    lambda: _square(region=None),
    lambda: _square(exclude=box(2, 2, 4, 4), contiguity="rook"),
    lambda: Grid.hexagonal(REGION, 1.0, crs=3857),
    lambda: Grid.hexagonal((0, 0, 10, 10), 1.0, orientation="flat"),
    _areal,
    lambda: _areal(islands="nearest", public_ids=True),
])
def test_grids_built_alike_are_equal_with_equal_hashes(build):
    a, b = build(), build()
    assert a is not b
    assert a == b and not a != b  # was identity: False
    assert hash(a) == hash(b) and {a: "fit"}[b] == "fit"
    assert a == pickle.loads(pickle.dumps(a))


def test_a_lattice_equals_the_same_lattice_built_another_way():
    # shape=(10, 10) and cell_size=1 give the same edges; a CRS given as code or text
    assert _square(region=None) == Grid.regular((0, 0, 10, 10), cell_size=1.0, crs="EPSG:3857")


@pytest.mark.parametrize("other", [
    lambda: _square(contiguity="rook"),  # same cells, another adjacency
    lambda: _square(region=REGION.buffer(0.01)),  # same cells, other fractions
    lambda: _square(crs=32633),
    lambda: _square(crs=None),
    lambda: _square(exclude=box(4.2, 4.2, 4.4, 4.4)),  # one fraction differs
    lambda: _square(region=None),
    lambda: _square(bounds=(0, 0, 10, 10.5)),
    lambda: Grid.hexagonal(REGION, 1.0, crs=3857),
])
def test_grids_that_differ_are_unequal(other):
    assert _square() != other()


def test_grids_that_differ_in_what_a_release_publishes_are_unequal():
    points = gpd.GeoSeries.from_xy([1.3, 8.9], [0.4, 9.6], crs=3857)
    snapped = Grid.from_points(points, cell_size=1.0)
    same_cells = Grid.regular(snapped.bounds, cell_size=1.0, crs=3857)
    assert snapped.snap_unit == (1.0, 1.0) and same_cells.snap_unit is None
    assert snapped != same_cells  # the bounds of one reveal the points' extremes
    assert _areal() != _areal(public_ids=True)
    assert _areal() != _areal(islands="nearest")
    assert _areal() != _areal(id_column=None)
    assert Grid.hexagonal(REGION, 1.0) != Grid.hexagonal(REGION, 1.0, orientation="flat")


def test_a_grid_is_not_equal_to_other_objects():
    grid = _square()
    assert grid != "grid" and grid != grid.cells.geometry.iloc[0] and grid is not None
    assert (grid == 1) is False


@pytest.mark.parametrize("kind", ["square", "hexagonal"])
def test_pad_widens_the_bounds_but_never_the_study_region(kind):
    # Hexagons over a region buffered it by pad: points (and synthetic points) up to pad
    # outside the study region were in habitable cells, unlike square cells.
    points = gpd.GeoSeries.from_xy([10.0, 50.0], [10.0, 50.0], crs=3857)
    region = box(0, 0, 100, 100)
    grid = Grid.from_points(points, cell_size=10, pad=20, region=region, kind=kind)
    habitable = shapely.union_all(grid.habitable_geometry)
    assert region.buffer(1e-9).covers(habitable)
    assert habitable.area == pytest.approx(region.area)
    cell = grid.locate([[-10.0, 50.0], [50.0, 110.0], [50.0, 50.0]])
    assert cell[:2].tolist() == [-1, -1] and cell[2] >= 0


TWO_ISLANDS = MultiPolygon([box(0, 0, 1, 1), box(5, 5, 6, 6)])


@pytest.mark.parametrize("build", [
    lambda: Grid.regular((0, 0, 10, 10), shape=(10, 10), region=TWO_ISLANDS),
    lambda: Grid((0, 0, 10, 10), shape=(10, 10), region=TWO_ISLANDS),
    lambda: Grid.hexagonal((0, 0, 1, 1), 10.0),
    lambda: Grid.from_points(gpd.GeoSeries.from_xy([0.5], [0.5]), cell_size=10,
                             region=box(0, 0, 1, 1)),
    lambda: Grid.from_points(gpd.GeoSeries.from_xy([0.5], [0.5]), cell_size=10,
                             region=box(0, 0, 1, 1), kind="hexagonal"),
    lambda: Grid.from_polygons(gpd.GeoSeries([box(0, 0, 1, 1), box(5, 5, 6, 6)])),
])
def test_isolated_cell_warning_points_at_the_callers_line(build):
    # A fixed stacklevel=4 pointed past the caller (Grid(...), hexagonal, from_polygons) or
    # into lattice.py (from_points with hexagons).
    with pytest.warns(IsolatedCellWarning) as record:
        build()
    assert {(w.filename, w.lineno) for w in record} == {(__file__, build.__code__.co_firstlineno)}
