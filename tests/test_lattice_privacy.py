"""Issue 14, items 1 and 13: lattices built from confidential points publish no exact extreme.

``Grid.from_points`` without ``region`` snaps the bounds outward to multiples of a coarse unit
(the cell size with ``cell_size=``, a "nice" unit near the cell size with ``shape=``), so no
extreme x or y of a record appears in the bounds, in the cell polygons or in anything derived
from them; its errors say what is wrong with the points and how to give a lattice an extent.
"""

import math
import re
import warnings

import geopandas as gpd
import numpy as np
import pyproj
import pytest
import shapely
from shapely.geometry import Point, box

import geosynth.lattice as lattice_module
from geosynth import prepare
from geosynth.cli.helpers import LatticeChoice, build_grid
from geosynth.errors import CRSError, DataWarning, GridError, InputError, PrivacyLeakWarning
from geosynth.lattice import Grid, require_projected_crs

CRS = "EPSG:31983"

pytestmark = pytest.mark.filterwarnings("ignore::geosynth.errors.IsolatedCellWarning")


def random_points(seed, n=None):
    """Points at UTM scale with a random extent (metres to tens of kilometres)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 300)) if n is None else n
    scale = 10.0 ** rng.uniform(1, 4.5)
    x = 600_000 + rng.uniform(0, 1, n) * scale * rng.uniform(0.2, 1)
    y = 7_800_000 + rng.uniform(0, 1, n) * scale * rng.uniform(0.2, 1)
    return gpd.GeoSeries.from_xy(x, y, crs=CRS)


def extremes(points):
    return [float(v) for v in points.total_bounds]  # xmin, ymin, xmax, ymax


def published_values(grid):
    """Every coordinate a release derives from the lattice: bounds and cell vertices."""
    vertices = shapely.get_coordinates(grid.cells.geometry.array).ravel()
    return set(vertices.tolist()) | set(grid.bounds)


def assert_no_extreme_published(grid, points):
    xmin, ymin, xmax, ymax = extremes(points)
    assert not ({xmin, ymin, xmax, ymax} & published_values(grid))
    # every point is strictly inside the lattice, none on its outer edge
    bx0, by0, bx1, by1 = grid.bounds
    assert bx0 < xmin and by0 < ymin and bx1 > xmax and by1 > ymax
    assert (grid.locate(points) >= 0).all()


def is_multiple(value, unit):
    return math.isclose(value / unit, round(value / unit), rel_tol=0, abs_tol=1e-6)


@pytest.mark.parametrize("seed", range(40))
def test_cell_size_lattice_hides_the_extremes(seed):
    points = random_points(seed)
    rng = np.random.default_rng(1000 + seed)
    xmin, ymin, xmax, ymax = extremes(points)
    dx = float(rng.choice([1.0, 7.5, 100.0, 250.0, 333.3]))
    while max(xmax - xmin, ymax - ymin) / dx > 200:  # keep the lattice small
        dx *= 10
    dy = dx if seed % 2 else dx * 2
    pad = 0.0 if seed % 3 else float(rng.uniform(0, 50))
    grid = Grid.from_points(points, cell_size=(dx, dy), pad=pad)
    assert_no_extreme_published(grid, points)
    # semantics: cells of exactly (dx, dy); edges on whole multiples of the cell size, the
    # first strictly below the (padded) minimum and the last within one cell above the maximum
    assert grid.cell_size == (dx, dy) and grid.snap_unit == (dx, dy)
    bx0, by0, bx1, by1 = grid.bounds
    assert is_multiple(bx0, dx) and is_multiple(by0, dy)
    assert 0 < (xmin - pad) - bx0 <= dx and 0 < (ymin - pad) - by0 <= dy
    assert 0 < bx1 - (xmax + pad) <= dx * (1 + 1e-9) and 0 < by1 - (ymax + pad) <= dy * (1 + 1e-9)
    assert grid.shape == (round((by1 - by0) / dy), round((bx1 - bx0) / dx))


@pytest.mark.parametrize("seed", range(40))
def test_shape_lattice_hides_the_extremes(seed):
    points = random_points(seed)
    rng = np.random.default_rng(2000 + seed)
    shape = (int(rng.integers(1, 12)), int(rng.integers(1, 12)))
    pad = 0.0 if seed % 3 else float(rng.uniform(0, 50))
    grid = Grid.from_points(points, shape=shape, pad=pad)
    assert_no_extreme_published(grid, points)
    # semantics: exactly nrows x ncols cells; bounds on multiples of a nice unit between half
    # the nominal cell size and the nominal cell size, or a tenth of the other axis's unit if
    # that is larger; cells divide the bounds evenly
    assert grid.shape == shape
    xmin, ymin, xmax, ymax = extremes(points)
    ux, uy = grid.snap_unit
    own = []
    for unit, width, n in ((ux, xmax - xmin + 2 * pad, shape[1]), (uy, ymax - ymin + 2 * pad,
                                                                     shape[0])):
        mantissa = unit / 10.0 ** math.floor(math.log10(unit))
        assert any(math.isclose(mantissa, m) for m in (1.0, 2.0, 2.5, 5.0))
        nice = [m * 10.0**k for k in range(-3, 6) for m in (1.0, 2.0, 2.5, 5.0)]
        own.append(max(u for u in nice if u <= width / n * (1 + 1e-12)))
        assert width / n / 2 < own[-1] <= width / n
    assert (ux, uy) == pytest.approx((max(own[0], own[1] / 10), max(own[1], own[0] / 10)))
    bx0, by0, bx1, by1 = grid.bounds
    assert all(is_multiple(v, u) for v, u in ((bx0, ux), (bx1, ux), (by0, uy), (by1, uy)))
    assert grid.cell_size == pytest.approx(((bx1 - bx0) / shape[1], (by1 - by0) / shape[0]))


def test_extremes_on_the_snapping_multiples_are_still_strictly_inside():
    # integer coordinates and a cell size of 1: the extremes sit on multiples of the unit, so the
    # bounds must step one unit further out instead of publishing them
    points = gpd.GeoSeries.from_xy([3, 7, 5], [10, 12, 14], crs=CRS)
    grid = Grid.from_points(points, cell_size=1)
    assert grid.bounds == (2.0, 9.0, 8.0, 15.0)
    grid = Grid.from_points(points, shape=(2, 2))  # units 4 / 2 = 2: 10 is a multiple too
    assert grid.bounds == (2.0, 8.0, 8.0, 16.0) and grid.snap_unit == (2.0, 2.0)
    assert (grid.locate(points) >= 0).all()


def test_snapped_unit_example():
    points = gpd.GeoSeries.from_xy([1003.7, 1961.2], [2040.5, 2512.9], crs=3857)
    grid = Grid.from_points(points, cell_size=250)
    assert grid.bounds == (1000.0, 2000.0, 2000.0, 2750.0) and grid.shape == (3, 4)


def test_region_bounds_are_public_and_ignore_the_points():
    points = gpd.GeoSeries.from_xy([1.3, 4.2, 17.9], [2.2, 3.1, 9.7], crs=CRS)  # 17.9 outside
    region = box(0, 0, 10, 10)
    grid = Grid.from_points(points, cell_size=2.5, region=region)
    assert grid.bounds == (0.0, 0.0, 10.0, 10.0) and grid.snap_unit is None
    assert not (set(extremes(points)) & published_values(grid))
    assert grid.locate(points).tolist()[2] == -1
    assert Grid.regular((0, 0, 1, 1), shape=(1, 1)).snap_unit is None


def test_cli_build_grid_uses_snapped_bounds():
    points = gpd.GeoDataFrame(geometry=random_points(7))
    grid = build_grid(points, LatticeChoice(grid_shape=(4, 4)))
    assert grid.snap_unit is not None and grid.shape == (4, 4)
    assert_no_extreme_published(grid, points.geometry)
    grid = build_grid(points, LatticeChoice(cell_size=250.0))
    assert grid.snap_unit == (250.0, 250.0)
    assert_no_extreme_published(grid, points.geometry)
    grid = build_grid(points, LatticeChoice(hex_size=250.0))
    assert grid.kind == "hexagonal" and grid.snap_unit == (250.0, 250.0)
    assert_no_extreme_published(grid, points.geometry)
    region = gpd.GeoDataFrame(geometry=[box(*points.total_bounds).buffer(1000)], crs=CRS)
    assert build_grid(points, LatticeChoice(grid_shape=(4, 4)), region=region).snap_unit is None
    assert build_grid(points, LatticeChoice(hex_size=250.0), region=region).snap_unit is None


# ---------------------------------------------------------------------- messages (item 13)
@pytest.mark.parametrize(
    ("xy", "match"),
    [
        ([], r"gdf has no records, so the lattice bounds cannot be derived"),
        ([(3.0, 4.0)], r"gdf has a single record \(zero width and height\)"),
        ([(3.0, 4.0)] * 4, r"the 4 records of gdf all lie at one point"),
        ([(3.0, 4.0), (3.0, 9.0), (3.0, 5.0)],
         r"the 3 records of gdf lie on one vertical line \(zero width: they all share one x "),
        ([(3.0, 4.0), (8.0, 4.0)],
         r"the 2 records of gdf lie on one horizontal line \(zero height: .* one y coordinate"),
        # the width overflows to inf (an OverflowError deep in the snapping before)
        ([(-1e308, 0.0), (1e308, 5.0)], r"span more than 1e\+12 CRS units"),
    ],
)
def test_points_without_extent_say_what_is_wrong_and_the_fix(xy, match):
    points = gpd.GeoSeries([Point(p) for p in xy], crs=CRS)
    for kwargs in ({"shape": (2, 2)}, {"cell_size": 1.0}):
        with pytest.raises(GridError, match=match) as err:
            Grid.from_points(points, **kwargs)
        message = str(err.value)
        assert "region=" in message and "CLI: --region" in message
        assert "non-empty geometry" not in message and "pass pad > 0" not in message


def test_bad_geometries_are_named_with_their_rows():
    points = gpd.GeoSeries([Point(1, 1), Point(np.inf, 2), Point(3, 3)], crs=CRS)
    with pytest.raises(InputError, match=r"NaN or infinite coordinates \(rows \[1\]\)"):
        Grid.from_points(points, shape=(2, 2))
    points = gpd.GeoSeries([Point(1, 1), None, Point(), Point(3, 3)], crs=CRS)
    with pytest.raises(InputError, match=r"2 records have missing or empty .*rows \[1, 2\]"):
        Grid.from_points(points, shape=(2, 2))
    only_empty = gpd.GeoSeries([None, Point()], crs=CRS)
    with pytest.raises(InputError, match="missing or empty geometries"):
        Grid.from_points(only_empty, shape=(2, 2))


@pytest.mark.parametrize("crs", ["EPSG:4326", 4326, "OGC:CRS84", "EPSG:4674", "EPSG:4269"])
def test_geographic_crs_is_refused_by_every_constructor(crs):
    with pytest.raises(CRSError, match=r"is geographic \(degrees\).*projected CRS in metres"):
        Grid.regular((0, 0, 1, 1), shape=(2, 2), crs=crs)
    with pytest.raises(CRSError, match=r"is geographic.*estimate_utm_crs"):
        Grid((0, 0, 1, 1), shape=(2, 2), crs=crs)
    points = gpd.GeoSeries.from_xy([-43.9, -43.8], [-19.9, -19.8], crs=crs)
    with pytest.raises(CRSError, match=r"gdf uses the CRS .*, which is geographic"):
        Grid.from_points(points, shape=(2, 2))
    with pytest.raises(CRSError, match="geographic"):
        require_projected_crs(crs)
    require_projected_crs(None)
    require_projected_crs(CRS)


def test_a_crs_with_a_vertical_axis_or_geocentric_is_refused():
    # A compound CRS passed every step, and the release file recorded it in words GDAL does
    # not read back: the reader refused the file just written as an edited one.
    with pytest.raises(CRSError, match=r"crs EPSG:31983\+5720 has a vertical axis.*to_2d\(\).*"
                                       r"\(here EPSG:31983\)"):
        Grid.regular((0, 0, 1, 1), shape=(2, 2), crs="EPSG:31983+5720")
    points = gpd.GeoSeries.from_xy([0.0, 5.0], [0.0, 5.0], crs="EPSG:31983+5720")
    with pytest.raises(CRSError, match=r"gdf's CRS EPSG:31983\+5720 has a vertical axis"):
        Grid.from_points(points, shape=(2, 2))
    with pytest.raises(CRSError, match=r"EPSG:4978 is geocentric"):
        Grid.regular((0, 0, 1, 1), shape=(2, 2), crs="EPSG:4978")


def test_a_crs_that_distorts_lengths_where_the_lattice_lies_is_warned_about():
    # Web Mercator at 60°N scales lengths by sec(60°) = 2: cells "250 m" wide were 125 m on
    # the ground and the matched distances of the risk twice the true ones.
    oslo = pyproj.Transformer.from_crs(4326, 3857, always_xy=True).transform(10.75, 60.0)
    bounds = (oslo[0] - 5000, oslo[1] - 5000, oslo[0] + 5000, oslo[1] + 5000)
    with pytest.warns(DataWarning, match=r"EPSG:3857\) scales lengths by 2 at the lattice's "
                                         r"centre .*latitude 60\).*measure 50 m on the ground"):
        Grid.regular(bounds, cell_size=250, crs="EPSG:3857")
    with pytest.warns(DataWarning, match=r"scales lengths by 2"):
        Grid.hexagonal(bounds, cell_size=250, crs="EPSG:3857")
    # Equal-area (Mollweide): areas kept, lengths not; the smallest and largest scales over the
    # directions multiply to 1, and the areal scale alone said nothing.
    far = pyproj.Transformer.from_crs(4326, "ESRI:54009", always_xy=True).transform(150, 60)
    with pytest.warns(DataWarning, match=r"ESRI:54009\) scales lengths by") as caught:
        Grid.regular((far[0], far[1], far[0] + 1e4, far[1] + 1e4), cell_size=250,
                     crs="ESRI:54009")
    low, high = map(float, re.search(r"scales lengths by ([\d.]+) to ([\d.]+)",
                                     str(caught[0].message)).groups())
    assert low * high == pytest.approx(1, rel=5e-3) and high > 1.05
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Grid.regular((605000, 7790000, 615000, 7800000), cell_size=250, crs=CRS)  # in its zone
        Grid.regular((0, 0, 1000, 1000), cell_size=250, crs="EPSG:3857")  # at the equator


def test_units_below_the_float_resolution_are_refused():
    points = gpd.GeoSeries.from_xy([7e6, 7e6 + 1e-9], [7e6, 7e6 + 1e-9], crs=CRS)
    for kwargs in ({"shape": (3, 3)}, {"cell_size": 1e-12}):
        with pytest.raises(GridError, match="too small to be told apart"):
            Grid.from_points(points, **kwargs)


@pytest.mark.parametrize("kind", ["square", "hexagonal"])
def test_a_refused_unit_names_the_coordinates_order_of_magnitude_not_an_extreme(kind):
    # the message gave the smallest x of the records to 3 significant figures ("near 7.81e+06")
    points = gpd.GeoSeries.from_xy([7812345.6, 7812346.6], [7734567.8, 7734569.6], crs=CRS)
    with pytest.raises(GridError, match=r"too small to be told apart") as err:
        Grid.from_points(points, cell_size=1e-12, kind=kind)
    message = str(err.value)
    assert "of the order of 1e6" in message
    assert not any(text in message for text in ("7.81", "7.73", "781", "773"))


def test_an_extent_that_underflows_the_unit_is_refused_as_too_small():
    # width / ncols rounded to 0 and math.log10 raised "math domain error" (a ValueError)
    points = gpd.GeoSeries.from_xy([0.0, 5e-324], [0.0, 5e-324], crs=CRS)
    with pytest.raises(GridError, match="too small to be told apart"):
        Grid.from_points(points, shape=(2, 2))


def test_prepare_warns_when_public_bounds_are_the_records_extremes():
    # Grid.regular(gdf.total_bounds): bounds taken as public but equal to the records'
    # extremes, which every release on the lattice would then publish exactly.
    rng = np.random.default_rng(7)
    gdf = gpd.GeoDataFrame({"sex": rng.choice(["f", "m"], 60)},
                           geometry=gpd.points_from_xy(rng.uniform(0, 900, 60),
                                                       rng.uniform(0, 700, 60)), crs=CRS)
    xmin, ymin, xmax, ymax = gdf.total_bounds
    on_extremes = Grid.regular((xmin, -10.0, xmax, ymax), shape=(4, 4), crs=CRS)
    with pytest.warns(PrivacyLeakWarning, match=r"bounds xmin, xmax, ymax equal the extreme "
                                                r"coordinates of the records"):
        prepare(gdf, on_extremes, ["sex"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # bounds beyond the records, or snapped outward
        prepare(gdf, Grid.regular((-10.0, -10.0, 910.0, 710.0), shape=(4, 4), crs=CRS), ["sex"])
        prepare(gdf, Grid.from_points(gdf, shape=(4, 4)), ["sex"])


@pytest.mark.parametrize("orientation", ["pointy", "flat"])
def test_prepare_warns_when_a_hexagonal_lattice_starts_at_the_records_extremes(orientation):
    # Grid.hexagonal(gdf.total_bounds) centres its first hexagon on (xmin, ymin): a corner of
    # it has the records' extreme to every digit, in the release's grid layer. Its bounds are
    # the hexagons' outer edge, which the check compared, so nothing warned.
    rng = np.random.default_rng(8)
    gdf = gpd.GeoDataFrame({"sex": rng.choice(["f", "m"], 60)},
                           geometry=gpd.points_from_xy(rng.uniform(0, 900, 60),
                                                       rng.uniform(0, 700, 60)), crs=CRS)
    xmin, ymin = gdf.total_bounds[:2]
    grid = Grid.hexagonal(gdf.total_bounds, cell_size=100, crs=CRS, orientation=orientation)
    assert grid.origin == (xmin, ymin)
    corners = shapely.get_coordinates(grid.cells.geometry)
    assert (corners[:, 0 if orientation == "pointy" else 1]
            == (xmin if orientation == "pointy" else ymin)).any()  # published to every digit
    with pytest.warns(PrivacyLeakWarning, match=r"lattice origin xmin, ymin equal the extreme"):
        prepare(gdf, grid, ["sex"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prepare(gdf, Grid.hexagonal((-10.0, -10.0, 910.0, 710.0), cell_size=100, crs=CRS,
                                    orientation=orientation), ["sex"])
    assert Grid.regular((0.0, 0.0, 10.0, 10.0), shape=(2, 2), crs=CRS).origin is None


def test_a_narrow_axis_is_snapped_to_a_tenth_of_the_other_at_least():
    # Records along one street, 3 cm apart in x and 3 km in y: with shape=(10, 10) the x unit
    # was 2.5 mm, and the bounds gave the records' extreme x to that.
    rng = np.random.default_rng(0)
    x = 612345.678 + rng.uniform(0, 0.03, 40)
    y = 7795000 + rng.uniform(0, 3000, 40)
    points = gpd.GeoSeries.from_xy(x, y, crs="EPSG:32723")
    grid = Grid.from_points(points, shape=(10, 10))
    assert grid.snap_unit == (25.0, 250.0)
    xmin, ymin, xmax, ymax = grid.bounds
    assert xmin < x.min() and x.max() < xmax and xmax - xmin == 25.0
    assert xmin % 25.0 == 0.0 and ymin % 250.0 == 0.0
    # an ordinary aspect keeps its own units: 10 km by 5 km in 10 x 10 cells
    wx, wy = rng.uniform(100, 10_100, 50), rng.uniform(100, 5_100, 50)
    wide = gpd.GeoSeries.from_xy(wx, wy, crs="EPSG:32723")
    own = [lattice_module._nice_floor(np.ptp(v) / 10) for v in (wx, wy)]  # each axis's own
    assert Grid.from_points(wide, shape=(10, 10)).snap_unit == tuple(own)
