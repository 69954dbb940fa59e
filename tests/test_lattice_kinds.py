"""Hexagonal and areal lattices: adjacency against libpysal, point location, clipping, errors.

The areal tests run on county and tract polygons bundled inside libpysal (offline): North
Carolina's 100 counties (``sids2``), Georgia's 159 counties (``G_utm``), Columbus' 49
neighbourhoods and Albuquerque's 195 census tracts (``10740``).
"""

import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from libpysal import examples
from libpysal.graph import Graph
from libpysal.weights import Queen, Rook
from scipy import stats

import geosynth.lattice
from geosynth import Grid
from geosynth.errors import CRSError, DataWarning, GridError, IsolatedCellWarning

# Coordinates in metres; the files state no CRS (Georgia's fit UTM zone 17N; Columbus is in
# arbitrary planar units, given a projected CRS for the test).
BUNDLED = {
    "sids2": ("sids2.shp", "EPSG:4267", "EPSG:32119", "FIPS"),
    "georgia": ("G_utm.shp", None, "EPSG:32617", "AreaKey"),
    "columbus": ("columbus.shp", None, "EPSG:32617", "POLYID"),
    "albuquerque": ("10740.shp", "EPSG:4269", "EPSG:26913", "STFID"),
}


def bundled_areas(name):
    """One of libpysal's bundled polygon sets, in a projected CRS."""
    filename, source, target, _ = BUNDLED[name]
    frame = gpd.read_file(examples.get_path(filename))
    if source is None:
        return frame.set_crs(target)
    return frame.set_crs(source).to_crs(target)


def binary(matrix):
    dense = (np.asarray(matrix.todense()) != 0).astype(int)
    np.fill_diagonal(dense, 0)
    return dense


# ---------------------------------------------------------------------- adjacency
@pytest.mark.parametrize("name", sorted(BUNDLED))
@pytest.mark.parametrize("contiguity", ["queen", "rook"])
def test_areal_adjacency_equals_libpysal_weights_and_graph(name, contiguity):
    areas = bundled_areas(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        grid = Grid.from_polygons(areas, id_column=BUNDLED[name][3], contiguity=contiguity)
    builder = Queen if contiguity == "queen" else Rook
    weights = builder.from_dataframe(areas, use_index=False, silence_warnings=True)
    graph = Graph.build_contiguity(areas.reset_index(drop=True), rook=contiguity == "rook",
                                   strict=True)
    assert grid.kind == "areal" and grid.n_cells == len(areas)
    np.testing.assert_array_equal(binary(grid.adjacency), binary(weights.sparse))
    np.testing.assert_array_equal(binary(grid.adjacency), binary(graph.sparse))
    np.testing.assert_array_equal(grid.area_ids, areas[BUNDLED[name][3]].to_numpy())
    assert (grid.adjacency != grid.adjacency.T).nnz == 0


def test_areas_sharing_an_edge_without_a_vertex_are_neighbours():
    # A T-junction, common between census tracts: the small areas' corners lie mid-edge on the
    # big one. Comparing vertices (libpysal's strict=False) saw no neighbour there.
    big, left, right = shapely.box(0, 0, 10, 5), shapely.box(2, 5, 6, 8), shapely.box(6, 5, 10, 8)
    corner = shapely.box(10, 0, 12, 2.5)  # its corner (10, 2.5) lies mid-edge on the big one
    for contiguity, expected in (("rook", [3, 2, 2, 1]), ("queen", [3, 2, 2, 1])):
        grid = Grid.from_polygons(gpd.GeoDataFrame(geometry=[big, left, right, corner]),
                                  contiguity=contiguity)
        assert grid.n_neighbours.tolist() == expected
    tip = shapely.Polygon([(10, 2.5), (12, 3.5), (12, 1.5)])  # one point, mid-edge of the big box
    grid = Grid.from_polygons(gpd.GeoDataFrame(geometry=[big, tip]), contiguity="queen")
    assert grid.n_neighbours.tolist() == [1, 1]


@pytest.mark.parametrize("contiguity", ["queen", "rook"])
def test_areas_overlapping_in_an_accepted_sliver_are_neighbours(contiguity):
    # A shared boundary digitised twice: the overlap (1e-10 of the area) passes the overlap
    # check, but libpysal's strict rules saw no contiguity: two islands instead of neighbours.
    areas = gpd.GeoDataFrame(geometry=[shapely.box(0, 0, 1, 1),
                                       shapely.box(1 - 1e-10, 0, 2, 1),
                                       shapely.box(2, 0, 3, 1)], crs=3857)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IsolatedCellWarning)
        grid = Grid.from_polygons(areas, contiguity=contiguity)
    assert binary(grid.adjacency).tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
    assert grid.n_components == 1


@pytest.mark.parametrize("orientation", ["pointy", "flat"])
def test_hexagonal_adjacency_equals_libpysal_and_has_six_neighbours_inside(orientation):
    grid = Grid.hexagonal((0, 0, 2000, 1500), cell_size=100, orientation=orientation)
    polygons = gpd.GeoSeries(np.asarray(grid.cells.geometry.array))
    for rook in (False, True):
        graph = Graph.build_contiguity(polygons, rook=rook, strict=True)
        np.testing.assert_array_equal(binary(grid.adjacency), binary(graph.sparse))
    # Interior hexagons (not touching the lattice's outer boundary) have exactly six.
    outline = shapely.union_all(np.asarray(grid.cells.geometry.array)).boundary
    border = shapely.intersects(np.asarray(grid.cells.geometry.array), outline)
    assert (grid.n_neighbours[~border] == 6).all() and (~border).sum() > 50
    assert (grid.n_neighbours[border] < 6).all()
    areas = shapely.area(np.asarray(grid.cells.geometry.array))
    np.testing.assert_allclose(areas, 1.5 * np.sqrt(3) * 100**2, rtol=1e-12)


def test_hexagons_cover_the_bounds_and_are_a_coverage():
    grid = Grid.hexagonal((10, 20, 1010, 720), cell_size=60)
    cells = np.asarray(grid.cells.geometry.array)
    union = shapely.union_all(cells)
    assert union.covers(shapely.box(10, 20, 1010, 720))
    assert shapely.area(union) == pytest.approx(shapely.area(cells).sum(), rel=1e-9)
    assert tuple(np.round(grid.bounds, 6)) == tuple(np.round(shapely.bounds(union), 6))


# ---------------------------------------------------------------------- locate
def covering_cells(polygons, x, y):
    """Brute force: every polygon intersecting each point."""
    hits = shapely.intersects_xy(polygons[None, :], x[:, None], y[:, None])
    return hits


@pytest.mark.parametrize("orientation", ["pointy", "flat"])
def test_hexagon_locate_lands_in_the_covering_hexagon(orientation):
    grid = Grid.hexagonal((0, 0, 1000, 800), cell_size=70, orientation=orientation)
    polygons = np.asarray(grid.cells.geometry.array)
    rng = np.random.default_rng(3)
    x, y = rng.uniform(-200, 1200, 4000), rng.uniform(-200, 1000, 4000)
    # Corners and edge midpoints: points shared by two or three hexagons.
    corners = shapely.get_coordinates(polygons[:20])
    x, y = np.r_[x, corners[:, 0]], np.r_[y, corners[:, 1]]
    cell = grid.locate(np.column_stack([x, y]))
    hits = covering_cells(polygons, x, y)
    expected = np.where(hits.any(axis=1), np.argmax(hits, axis=1), -1)  # smallest id
    np.testing.assert_array_equal(cell, expected)


def test_areal_locate_takes_the_smallest_id_on_shared_boundaries():
    areas = bundled_areas("georgia")
    grid = Grid.from_polygons(areas)
    polygons = np.asarray(areas.geometry.array)
    rng = np.random.default_rng(4)
    x0, y0, x1, y1 = areas.total_bounds
    x, y = rng.uniform(x0 - 1e4, x1 + 1e4, 3000), rng.uniform(y0 - 1e4, y1 + 1e4, 3000)
    vertices = shapely.get_coordinates(polygons[:15])
    x, y = np.r_[x, vertices[:, 0]], np.r_[y, vertices[:, 1]]
    cell = grid.locate(np.column_stack([x, y]))
    hits = covering_cells(polygons, x, y)
    expected = np.where(hits.any(axis=1), np.argmax(hits, axis=1), -1)
    np.testing.assert_array_equal(cell, expected)


@settings(max_examples=40, deadline=None)
@given(x=st.floats(-3000, 3000), y=st.floats(-3000, 3000), size=st.floats(10, 900),
       flat=st.booleans())
def test_hexagon_locate_property(x, y, size, flat):
    grid = Grid.hexagonal((0, 0, 2000, 2000), cell_size=size,
                          orientation="flat" if flat else "pointy")
    polygons = np.asarray(grid.cells.geometry.array)
    cell = int(grid.locate([[x, y]])[0])
    hits = shapely.intersects_xy(polygons, x, y)
    assert cell == (int(np.argmax(hits)) if hits.any() else -1)


def test_locate_refuses_nothing_and_maps_missing_points_to_minus_one():
    for grid in (Grid.hexagonal((0, 0, 100, 100), 10), Grid.from_polygons(gpd.GeoSeries(
            [shapely.box(0, 0, 1, 1), shapely.box(1, 0, 2, 1)], crs=3857))):
        cell = grid.locate(np.array([[np.nan, 1.0], [np.inf, 0.0], [1e12, 1e12]]))
        assert cell.tolist() == [-1, -1, -1]


def test_far_points_are_outside_a_hexagonal_lattice_without_a_warning():
    # their rows and columns overflowed int64: "invalid value encountered in cast"
    grids = (Grid.hexagonal((0, 0, 100, 100), 10),
             Grid.hexagonal(shapely.box(0, 0, 100, 100), 10, exclude=shapely.box(40, 40, 60, 60)))
    for grid in grids:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cell = grid.locate(np.array([[1e300, 50.0], [50.0, -1e300], [-1e20, 1e20]]))
        assert cell.tolist() == [-1, -1, -1]


def test_a_region_made_of_hexagons_of_another_lattice_leaves_no_sliver_cells():
    # the region's edges meet the new hexagons' edges within a float64 step at UTM coordinates:
    # two hexagons kept a sliver of 1e-11 of their area and came out as spurious cells
    x0, y0 = 715315.7, 7519097.8
    other = Grid.hexagonal((x0, y0, x0 + 30, y0 + 30), cell_size=2.2)
    region = shapely.union_all(other.cells.geometry.iloc[[0, 1, 2, 8, 9, 10]])
    grid = Grid.hexagonal(region, cell_size=2.2, crs="EPSG:31983")
    assert grid.habitable_fraction.min() > 0.1
    assert grid.n_cells == 12


def test_clipped_hexagons_keep_only_habitable_parts():
    region = gpd.GeoSeries([shapely.Point(500, 500).buffer(400)], crs=3857)
    lake = shapely.box(400, 400, 600, 600)
    grid = Grid.hexagonal(region, cell_size=50, exclude=lake)
    assert grid.kind == "hexagonal" and grid.is_clipped and grid.crs.to_epsg() == 3857
    habitable = shapely.union_all(grid.habitable_geometry)
    expected = region.iloc[0].difference(lake)
    assert shapely.area(habitable) == pytest.approx(expected.area, rel=1e-9)
    assert not grid.fully_habitable.any()  # placement always goes through the hexagon
    cell = grid.locate([[500, 500], [450, 300], [2000, 2000]])
    assert cell[0] == -1 and cell[1] >= 0 and cell[2] == -1


# ---------------------------------------------------------------------- areal specifics
def island_areas():
    squares = [shapely.box(i, 0, i + 1, 1) for i in range(3)]
    return gpd.GeoDataFrame({"code": ["a", "b", "c", "island"]},
                            geometry=[*squares, shapely.box(5, 0, 6, 1)], crs=3857)


@pytest.mark.parametrize("name", sorted(BUNDLED))
@pytest.mark.parametrize(("contiguity", "gaps"), [("rook", 3), ("queen", 30)])
def test_a_gap_restores_the_neighbours_of_areas_digitised_apart(name, contiguity, gaps):
    # Each area shrunk by d leaves a gap of 2d along every shared edge: exact contiguity then
    # sees islands only. A gap of 3d joins them again as rook neighbours and finds no rook pair
    # that was not one; queen pairs meeting at a corner retreat further (d / sin(angle / 2) each
    # at a sharp corner), so queen needs a wider gap to find every one of them.
    areas = bundled_areas(name)
    d = 1e-4 * np.sqrt(np.median(areas.area))
    shrunk = areas.set_geometry(areas.buffer(-d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        exact = Grid.from_polygons(areas, contiguity=contiguity)
        apart = Grid.from_polygons(shrunk, contiguity=contiguity)
        joined = Grid.from_polygons(shrunk, contiguity=contiguity, gap=gaps * d)
    assert apart.n_neighbours.sum() == 0
    np.testing.assert_array_equal(binary(joined.adjacency), binary(exact.adjacency))


def test_a_gap_joins_rook_neighbours_along_an_edge_not_at_a_corner():
    # Four unit squares 0.01 apart: across a gap of 0.02 the edge pairs are rook neighbours;
    # the diagonal pairs (0.014 apart at a corner) are queen neighbours only.
    boxes = [shapely.box(x, y, x + 1, y + 1) for y in (0, 1.01) for x in (0, 1.01)]
    areas = gpd.GeoDataFrame(geometry=boxes, crs=3857)
    rook = Grid.from_polygons(areas, contiguity="rook", gap=0.02)
    queen = Grid.from_polygons(areas, contiguity="queen", gap=0.02)
    assert rook.n_neighbours.tolist() == [2, 2, 2, 2]
    assert queen.n_neighbours.tolist() == [3, 3, 3, 3]
    assert rook.n_components == queen.n_components == 1
    assert (rook.gap, Grid.from_polygons(areas).gap) == (0.02, 0.0)


@pytest.mark.parametrize(("gap", "error", "match"), [
    (-1.0, GridError, r"gap must be a finite distance >= 0"),
    (np.nan, GridError, r"gap must be a finite distance >= 0"),
    (np.inf, GridError, r"gap must be a finite distance >= 0"),
    (0.2, GridError, r"gap=0.2 is more than a tenth of a typical area's side \(1 CRS"),
    (True, TypeError, r"gap must be a real number, got bool"),
    ("0.01", TypeError, r"gap must be a real number, got str"),
])
def test_a_bad_gap_is_refused_naming_it(gap, error, match):
    boxes = [shapely.box(0, 0, 1, 1), shapely.box(1, 0, 2, 1)]
    with pytest.raises(error, match=match):
        Grid.from_polygons(gpd.GeoDataFrame(geometry=boxes, crs=3857), gap=gap)


def test_island_is_its_own_component_with_a_warning_or_linked_to_its_nearest_area():
    with pytest.warns(IsolatedCellWarning, match="islands='nearest'"):
        kept = Grid.from_polygons(island_areas(), id_column="code")
    assert kept.n_components == 2 and kept.n_neighbours[3] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", IsolatedCellWarning)
        linked = Grid.from_polygons(island_areas(), id_column="code", islands="nearest")
    assert linked.n_components == 1
    assert linked.linked_islands.tolist() == [[3, 2]]  # box 2 is the nearest to the island
    assert set(linked.indices[linked.indptr[3]:linked.indptr[4]]) == {2}


def test_islands_nearer_each_other_than_the_mainland_are_linked_to_it_too():
    # Islands at x 10 and 11.5 are each other's nearest area; linking only each to its nearest
    # left them a two-area component apart from the mainland (x 0 to 3).
    mainland = [shapely.box(i, 0, i + 1, 1) for i in range(3)]
    islands = [shapely.box(10, 0, 11, 1), shapely.box(11.5, 0, 12.5, 1)]
    areas = gpd.GeoDataFrame(geometry=[*mainland, *islands], crs=3857)
    grid = Grid.from_polygons(areas, islands="nearest")
    assert grid.n_components == 1
    # each island to its nearest, then the pair, by its nearest member, to the mainland's box 2
    assert grid.linked_islands.tolist() == [[3, 4], [4, 3], [3, 2]]
    assert grid.n_neighbours.tolist() == [1, 2, 2, 2, 1]  # a chain 0-1-2-3-4
    # Two islands, three links: the CLI said "3 island(s) linked" and the metadata recorded 3.
    assert grid.n_linked_islands == 2
    from geosynth.cli.helpers import describe_lattice

    assert ", 2 island(s) linked to the nearest area they reach" in describe_lattice(grid)


def test_areas_that_are_all_islands_are_linked_into_one_component():
    boxes = [shapely.box(3 * i, 0, 3 * i + 1, 1) for i in range(4)]
    grid = Grid.from_polygons(gpd.GeoDataFrame(geometry=boxes, crs=3857), islands="nearest")
    assert grid.n_components == 1
    assert grid.n_neighbours.sum() == 2 * 3  # a chain: three links, no duplicates


def test_areal_exclusions_and_ids_follow_the_kept_areas():
    areas = island_areas()
    grid = Grid.from_polygons(areas, id_column="code", islands="nearest",
                              exclude=shapely.box(0.5, -1, 1.5, 2))
    assert grid.habitable_fraction[:2].tolist() == pytest.approx([0.5, 0.5])
    # The cells are renumbered over the areas kept: said, naming the area left out.
    with pytest.warns(DataWarning, match=r"exclude covers 1 area\(s\) entirely .*areas\.index "
                                         rf"\[{areas.index[0]!r}\].*cell k is not areas\.iloc"):
        gone = Grid.from_polygons(areas, id_column="code", islands="nearest",
                                  exclude=shapely.box(-1, -1, 1.2, 2))
    assert gone.n_cells == 3 and gone.area_ids.tolist() == ["b", "c", "island"]
    assert gone.locate([[0.5, 0.5], [1.1, 0.5], [1.5, 0.5]]).tolist() == [-1, -1, 0]


@pytest.mark.parametrize(
    ("areas", "kwargs", "match"),
    [
        ("overlap", {}, r"overlap: rows \(0, 1\)"),
        ("points", {}, "not Polygon/MultiPolygon"),
        ("duplicate", {"id_column": "code"}, "duplicate values"),
        ("ok", {"id_column": "nope"}, "not a column"),
        ("ok", {"id_column": "geometry"}, "'geometry' is a geometry column"),
        ("ok", {"islands": "link"}, "islands must be"),
        ("ok", {"contiguity": "bishop"}, "contiguity must be"),
        ("frame", {}, "GeoDataFrame or GeoSeries"),
        # each of these raised a raw error, or (lists) was accepted as ids
        ("ok", {"id_column": ["code"]}, r"id_column must be the name of a column \(a str\)"),
        ("lists", {"id_column": "code"}, r"'code' holds values that are no identifier .* rows "
                                         r"\[0, 1\]"),
        ("two_codes", {"id_column": "code"}, "areas has several columns named 'code'"),
        ("no_geometry", {"id_column": "code"}, "areas has no active geometry column"),
        # 1 and "1" were two ids, one once written to a file
        ("alike", {"id_column": "code"}, r"distinct values written alike \['1'\]"),
    ],
)
def test_from_polygons_refuses_bad_areas_naming_rows_and_fix(areas, kwargs, match):
    boxes = [shapely.box(0, 0, 1, 1), shapely.box(1, 0, 2, 1)]
    ok = gpd.GeoDataFrame({"code": [1, 2]}, geometry=boxes, crs=3857)
    frames = {
        "ok": ok,
        "lists": ok.assign(code=[[1], [2]]),
        "two_codes": gpd.GeoDataFrame(pd.concat([ok[["code"]], ok], axis=1), crs=3857),
        "no_geometry": gpd.GeoDataFrame({"code": [1, 2], "shape": boxes}),
        "overlap": gpd.GeoDataFrame(geometry=[boxes[0], shapely.box(0.5, 0, 2, 1)], crs=3857),
        "points": gpd.GeoDataFrame(geometry=[boxes[0], shapely.Point(3, 3)], crs=3857),
        "duplicate": gpd.GeoDataFrame({"code": [1, 1]}, geometry=boxes, crs=3857),
        "alike": gpd.GeoDataFrame({"code": [1, "1"]}, geometry=boxes, crs=3857),
        "frame": boxes,
    }
    with pytest.raises(GridError, match=match):
        Grid.from_polygons(frames[areas], **kwargs)


def test_hexagonal_refuses_bad_arguments():
    with pytest.raises(GridError, match="orientation"):
        Grid.hexagonal((0, 0, 1, 1), 0.1, orientation="diagonal")
    points = gpd.GeoSeries(gpd.points_from_xy([0.0, 1.0], [0.0, 1.0]), crs=3857)
    with pytest.raises(GridError, match="orientation must be one of 'pointy', 'flat'"):
        Grid.from_points(points, shape=(2, 2), orientation="diagonal")  # a square typo
    with pytest.raises(GridError, match="one number"):
        Grid.hexagonal((0, 0, 1, 1), (0.1, 0.2))
    with pytest.raises(GridError, match="cell_size"):
        Grid.hexagonal((0, 0, 1, 1), -1)
    with pytest.raises(GridError, match="limit"):
        Grid.hexagonal((0, 0, 1e6, 1e6), 0.1)
    with pytest.raises(GridError, match="beyond 1e\\+12 CRS units"):  # overflowed placement
        Grid.hexagonal((0, 0, 1, 1), 1e300)


def test_square_only_attributes_say_what_to_use():
    areal = Grid.from_polygons(island_areas(), islands="nearest")
    for name in ("shape", "cell_size", "cell_row", "lattice_to_cell"):
        with pytest.raises(GridError, match="areal lattice has one cell per polygon"):
            getattr(areal, name)
    hexagons = Grid.hexagonal((0, 0, 100, 100), 10)
    with pytest.raises(GridError, match="needs a square lattice.*hexagonal"):
        hexagons.require_square("a GeoTIFF")
    assert "row" in hexagons.cells.columns and "area_id" not in hexagons.cells.columns


def test_hexagons_over_points_snap_bounds_and_hide_extremes():
    rng = np.random.default_rng(5)
    points = gpd.GeoSeries.from_xy(rng.uniform(1234.5, 5678.9, 50), rng.uniform(987.6, 4321.0,
                                                                               50), crs=3857)
    grid = Grid.from_points(points, cell_size=250, kind="hexagonal")
    assert grid.kind == "hexagonal" and grid.snap_unit == (250.0, 250.0)
    assert (grid.locate(points) >= 0).all()
    vertices = shapely.get_coordinates(np.asarray(grid.cells.geometry.array))
    extremes = np.r_[points.x.min(), points.x.max(), points.y.min(), points.y.max()]
    assert not np.isin(extremes, vertices).any()
    assert not np.isin(extremes, np.asarray(grid.bounds)).any()
    with pytest.raises(GridError, match="hexagonal lattice takes cell_size"):
        Grid.from_points(points, shape=(4, 4), kind="hexagonal")
    with pytest.raises(GridError, match="kind must be"):
        Grid.from_points(points, cell_size=250, kind="areal")


@pytest.mark.parametrize("orientation", ["pointy", "flat"])
def test_points_on_hexagon_edges_of_a_clipped_lattice_are_never_lost(orientation):
    # A point on the edge of two hexagons, outside the first one's habitable part, was given
    # the first and then dropped (about 1 % of edge points of partly habitable hexagons).
    region = shapely.Polygon([(0, 0), (1500, 200), (1200, 1300), (100, 900)])
    grid = Grid.hexagonal(region, 90, orientation=orientation, crs="EPSG:31983")
    habitable = np.asarray(grid.habitable_geometry)
    edges = [shapely.line_interpolate_point(shapely.boundary(cell), t, normalized=True)
             for cell in np.asarray(grid.cells.geometry.array) for t in np.linspace(0, 1, 23)]
    xy = shapely.get_coordinates(np.asarray(edges))
    touched = np.array([shapely.intersects_xy(habitable, x, y).any() for x, y in xy])
    cells = grid.locate(xy)
    assert (cells[touched] >= 0).all() and touched.sum() > 1000
    assert shapely.intersects_xy(habitable[cells[touched]], xy[touched, 0], xy[touched, 1]).all()


@pytest.mark.filterwarnings("ignore:the lattice's CRS:geosynth.errors.DataWarning")  # far out
@pytest.mark.parametrize("orientation", ["pointy", "flat"])
@pytest.mark.parametrize(("origin", "size"), [(7.5e6, 0.5), (1e7, 1.0), (4e6, 0.2)])
def test_hexagon_corners_far_from_the_crs_origin_go_to_the_smallest_holding_hexagon(
        orientation, origin, size):
    # At UTM northings (up to 1e7 in the south) the corners of small hexagons are rounded to a
    # float64 step of the coordinates, far more than the 1e-9 sides the arithmetic location
    # trusted: corners and edge points went to another hexagon than the smallest holding them,
    # to one not holding them, or (0.2 m hexagons at 4e6) to none.
    extent = 40 * size
    grid = Grid.hexagonal((origin, origin, origin + extent, origin + extent), cell_size=size,
                          orientation=orientation, crs="EPSG:32723")
    polygons = np.asarray(grid.cells.geometry.array)
    rng = np.random.default_rng(6)
    on_edges = [shapely.line_interpolate_point(shapely.boundary(cell), t, normalized=True)
                for cell in polygons for t in rng.uniform(0, 1, 6)]
    xy = np.r_[shapely.get_coordinates(polygons), shapely.get_coordinates(np.asarray(on_edges))]
    cell = grid.locate(xy)
    hits = covering_cells(polygons, xy[:, 0], xy[:, 1])
    held = hits.any(axis=1)  # an edge point of the outer boundary may round just outside
    assert held.mean() > 0.9
    np.testing.assert_array_equal(cell, np.where(held, np.argmax(hits, axis=1), -1))


@pytest.mark.parametrize("orientation", ["pointy", "flat"])
def test_uniform_points_fall_in_clipped_hexagons_in_proportion_to_their_area(orientation):
    # Pearson's chi-square of the counts of uniform points in each habitable hexagon (and
    # outside every one) against the exact expectation N * area / window area.
    region = shapely.Point(500, 500).buffer(450, quad_segs=64)
    lake = shapely.box(380, 420, 610, 560)
    grid = Grid.hexagonal(region, cell_size=40, orientation=orientation, exclude=lake,
                          crs="EPSG:31983")
    area = shapely.area(np.asarray(grid.habitable_geometry))
    assert shapely.area(shapely.union_all(grid.habitable_geometry)) == pytest.approx(
        region.difference(lake).area, rel=1e-9)
    n, window = 400_000, (0.0, 0.0, 1000.0, 1000.0)
    rng = np.random.default_rng(7)
    xy = rng.uniform(window[:2], window[2:], size=(n, 2))
    cell = grid.locate(xy)
    counts = np.bincount(cell + 1, minlength=grid.n_cells + 1)
    share = np.r_[1e6 - area.sum(), area] / 1e6
    expected = n * share
    keep = expected >= 5  # clipped slivers with too few expected points are pooled
    observed, target = counts[keep], expected[keep]
    if not keep.all():
        observed, target = np.r_[observed, counts[~keep].sum()], np.r_[target,
                                                                        expected[~keep].sum()]
    statistic, p_value = stats.chisquare(observed, target, ddof=0)
    assert p_value > 1e-3, (statistic, p_value)


def test_areas_overlapping_in_a_speck_at_a_corner_are_queen_not_rook_neighbours():
    # Four tracts meeting at (1, 1), the first digitised 1e-8 too far: it overlaps its two edge
    # neighbours in slivers along the edges (rook neighbours) and the tract diagonal to it in a
    # 1e-8 square at the corner, which made those two rook neighbours as well.
    d = 1e-8
    areas = gpd.GeoDataFrame(geometry=[shapely.box(0, 0, 1 + d, 1 + d), shapely.box(1, 0, 2, 1),
                                       shapely.box(0, 1, 1, 2), shapely.box(1, 1, 2, 2)],
                             crs=3857)
    rook = Grid.from_polygons(areas, contiguity="rook")
    queen = Grid.from_polygons(areas, contiguity="queen")
    assert binary(rook.adjacency).tolist() == [[0, 1, 1, 0], [1, 0, 0, 1], [1, 0, 0, 1],
                                               [0, 1, 1, 0]]
    assert binary(queen.adjacency).tolist() == [[0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 0, 1],
                                                [1, 1, 1, 0]]


def test_areal_locate_in_a_dense_cluster_of_small_areas_holds_bounded_memory():
    # 1,600 city blocks inside one bin of the point index (beside a large rural area): every
    # point was paired with all 1,600 candidates at once, 1.6 GB for 20,000 points (a million
    # points there ran out of memory).
    import tracemalloc

    k = 40
    blocks = [shapely.box(i, j, i + 1, j + 1) for j in range(k) for i in range(k)]
    rural = shapely.box(0, 0, 1e5, 1e5).difference(shapely.box(0, 0, k, k))
    grid = Grid.from_polygons(gpd.GeoSeries([rural, *blocks], crs=3857))
    rng = np.random.default_rng(8)
    x, y = rng.uniform(0, k, 20_000), rng.uniform(0, k, 20_000)
    grid.locate(np.column_stack([x[:10], y[:10]]))  # builds the index
    tracemalloc.start()
    try:
        cell = grid.locate(np.column_stack([x, y]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    expected = 1 + np.floor(y).astype(np.int64) * k + np.floor(x).astype(np.int64)
    np.testing.assert_array_equal(cell, expected)
    assert peak < 300e6


def test_far_points_are_outside_an_areal_lattice_without_a_warning():
    # their bins in the point index overflowed: "overflow encountered in divide"
    grid = Grid.from_polygons(gpd.GeoSeries([shapely.box(0, 0, 1, 1), shapely.box(1, 0, 2, 1)],
                                            crs=3857))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cell = grid.locate(np.array([[1e308, -1e308], [-1e308, 0.5], [1.5, 1e308],
                                     [np.inf, 0.5], [2.0, 1.0]]))
    assert cell.tolist() == [-1, -1, -1, -1, 1]


def test_from_polygons_refuses_more_areas_than_max_cells_before_any_geometric_work(monkeypatch):
    boxes = [shapely.box(i, 0, i + 1, 1) for i in range(5)]
    areas = gpd.GeoDataFrame(geometry=boxes, crs=3857)
    monkeypatch.setattr(geosynth.lattice, "MAX_CELLS", 4)
    monkeypatch.setattr(geosynth.lattice, "_area_polygons", None)  # not reached
    with pytest.raises(GridError, match="5 areas, more than the limit of 4 cells"):
        Grid.from_polygons(areas)


@pytest.mark.parametrize("flat", [False, True])
def test_hexagons_meeting_the_bounds_intersect_only_the_border_ones(monkeypatch, flat):
    # Intersecting every hexagon with the bounds took 23 s of the 29 s of a million hexagons;
    # only those crossing the border need it, and the cells are those a brute force keeps.
    from geosynth._hexagons import hex_layout, hex_polygons, hex_positions_meeting

    bounds = (500_003.7, 7_500_011.2, 502_417.9, 7_502_093.4)
    layout = hex_layout(bounds, 20.0, flat)
    row, col = np.divmod(np.arange(layout.nrows * layout.ncols), layout.ncols)
    everyone = hex_polygons(layout, row, col)
    expected = np.flatnonzero(shapely.area(shapely.intersection(everyone, shapely.box(*bounds)))
                              > 0)
    intersected = []
    real = shapely.intersection
    monkeypatch.setattr(shapely, "intersection",
                        lambda a, b, **kw: intersected.append(np.size(a)) or real(a, b, **kw))
    position, polygons = hex_positions_meeting(layout, bounds)
    np.testing.assert_array_equal(position, expected)
    assert shapely.equals_exact(polygons, everyone[expected], tolerance=0.0).all()
    # The border: about a perimeter's worth of hexagons, a few percent of its 5,112.
    assert sum(intersected) < 0.1 * everyone.size


def test_overlapping_areas_are_named_by_their_row_labels_as_the_other_checks_name_them():
    # The pair was named by positions ("rows (0, 1)") where every other check of the areas
    # names the frame's labels: areas.loc[[0, 1]] then showed other areas, or none.
    boxes = [shapely.box(0, 0, 1, 1), shapely.box(1, 0, 2, 1), shapely.box(1.5, 0, 3, 1)]
    areas = gpd.GeoDataFrame(geometry=boxes, crs=3857, index=[30, 10, 20])
    with pytest.raises(GridError, match=r"overlap: rows \(10, 20\) share"):
        Grid.from_polygons(areas)
    with pytest.raises(GridError, match=r"overlap: rows \('b', 'c'\) share"):
        Grid.from_polygons(areas.set_axis(["a", "b", "c"]))


def test_exclude_with_a_crs_beside_areas_without_one_says_to_give_the_areas_their_crs():
    # The fix given was "pass crs=... to Grid.regular", which Grid.from_polygons does not take.
    areas = gpd.GeoSeries([shapely.box(0, 0, 1, 1), shapely.box(1, 0, 2, 1)])
    exclude = gpd.GeoSeries([shapely.box(0, 0, 0.5, 0.5)], crs=32723)
    with pytest.raises(CRSError, match=r"exclude has CRS EPSG:32723 but the grid has no CRS; "
                                       r".*of the areas of Grid.from_polygons"):
        Grid.from_polygons(areas, exclude=exclude)


@pytest.mark.parametrize(("ids", "why"), [
    # 2**64 - 1 crashed the GeoPackage writer (OverflowError in pyogrio) after the fit
    (np.array([2**64 - 1, 5], dtype=np.uint64), "an integer beyond 64-bit signed integers"),
    # GDAL cut both at the NUL: two public ids written as one
    (["a\x00b", "a\x00c"], "text holding a NUL character"),
    ([b"a", b"b"], "a bytes"),
    ([pd.Timestamp("2020-01-01"), pd.Timestamp("2021-01-01")], "a Timestamp"),  # "lists" before
    ([True, False], "booleans"),
])
def test_area_ids_a_file_cannot_hold_are_refused_saying_why(ids, why):
    areas = gpd.GeoDataFrame({"code": ids},
                             geometry=[shapely.box(0, 0, 1, 1), shapely.box(1, 0, 2, 1)])
    with pytest.raises(GridError, match=rf"'code' holds values that are no identifier at rows "
                                        rf"\[0(, 1)?\] \({why}\); give one text or integer per "
                                        r"area, e.g. areas\['code'\].astype\(str\)"):
        Grid.from_polygons(areas, id_column="code", public_ids=True)
    fine = gpd.GeoDataFrame({"code": [2**63 - 1, -(2**63)]}, geometry=areas.geometry)
    assert Grid.from_polygons(fine, id_column="code").area_ids.tolist() == [2**63 - 1, -(2**63)]


def test_points_in_the_gap_between_areas_go_to_the_nearest_area_within_gap():
    # gap= linked the two areas across their 0.5 m sliver, but a record geocoded onto it was in
    # no cell: refused by prepare ("build a grid that covers them") or dropped without a word.
    areas = gpd.GeoDataFrame(geometry=[shapely.box(0, 0, 1000, 1000),
                                       shapely.box(1000.5, 0, 2000, 1000)], crs=32633)
    grid = Grid.from_polygons(areas, gap=1.0)
    points = [[1000.25, 500], [1000.4, 500], [1000.1, 500], [-0.5, 10], [-2.0, 10],
              [np.nan, 1.0]]
    # Equidistant: the smaller id; else the nearer; beyond gap or NaN: none.
    assert grid.locate(points).tolist() == [0, 1, 0, 0, -1, -1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        assert Grid.from_polygons(areas).locate(points[:1]).tolist() == [-1]  # no gap, no cell
    # A point strictly inside an area's excluded part stays in none, gap or not.
    lake = shapely.box(900, 400, 1000, 600)
    clipped = Grid.from_polygons(areas, gap=1.0, exclude=lake)
    assert clipped.locate([[950, 500], [1000.4, 500]]).tolist() == [-1, 1]
    frame = gpd.GeoDataFrame({"s": ["a", "b"] * 5},
                             geometry=gpd.points_from_xy([1000.25] * 10, np.linspace(1, 999, 10)),
                             crs=32633)
    assert geosynth.prepare(frame, grid, ["s"]).counts.sum(axis=1).tolist() == [10, 0]


def test_a_point_in_an_excluded_area_across_the_gap_stays_in_no_area():
    # A lake excluded across the sliver between two areas: a point in the lake but within gap
    # of an area went to it, though locate promises -1 strictly inside an excluded area.
    areas = gpd.GeoDataFrame(geometry=[shapely.box(0, 0, 100, 100),
                                       shapely.box(100.5, 0, 200, 100)], crs=32633)
    lake = shapely.box(90, 40, 110, 60)
    grid = Grid.from_polygons(areas, gap=1.0, exclude=lake)
    assert grid.locate([[100.25, 50], [95, 50], [100.25, 20]]).tolist() == [-1, -1, 0]
    # The distance is to the habitable parts: beside the lake's shore, the nearer bank's area.
    shore = Grid.from_polygons(areas, gap=1.0, exclude=shapely.box(99.0, 40, 100, 60))
    assert shore.locate([[100.3, 50]]).tolist() == [1]  # 0.2 from area 1, 1.3 from area 0
