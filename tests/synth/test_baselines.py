"""Baselines: the Naive method (Nunes 2018, §3.2) and donut geomasking."""

import math
import warnings
from decimal import Decimal

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from scipy import stats
from shapely.geometry import Point, box

import geosynth.synth.baselines as baselines
from geosynth import Grid
from geosynth.errors import (
    CRSError,
    DataWarning,
    InputError,
    InputTypeError,
    IsolatedCellWarning,
    SamplerError,
)
from geosynth.rasters import read_weights
from geosynth.synth import donut_mask, naive_synthesize
from tests.synth.helpers import CRS, from_origin, make_points, write_raster

ALPHA = 1e-3


def clipped_grid():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        return Grid.regular(
            (0, 0, 120, 90),
            shape=(6, 8),
            crs=CRS,
            region=Point(60, 45).buffer(50),
            exclude=[Point(40, 40).buffer(12), box(80, 0, 95, 50)],
        )


def xy_of(gdf):
    return shapely.get_coordinates(gdf.geometry.array)


# ---------------------------------------------------------------------- naive
@pytest.mark.parametrize("clipped", [False, True])
def test_naive_keeps_every_record_in_its_cell(clipped):
    grid = clipped_grid() if clipped else Grid.regular((0, 0, 120, 90), shape=(6, 8), crs=CRS)
    gdf = make_points(3000, seed=3)
    gdf = gdf[grid.locate(gdf.geometry) >= 0]
    original = grid.locate(gdf.geometry)
    releases = naive_synthesize(gdf, grid, m=3, seed=1)
    assert len(releases) == 3
    for release in releases:
        cells = grid.locate(release.geometry)
        np.testing.assert_array_equal(cells, original)
        x, y = release.geometry.x.to_numpy(), release.geometry.y.to_numpy()
        assert shapely.contains_xy(np.asarray(grid.habitable_geometry)[cells], x, y).all()
        assert release.index.equals(gdf.index)
        assert list(release.columns) == list(gdf.columns)
        pd.testing.assert_frame_equal(
            pd.DataFrame(release.drop(columns="geometry")),
            pd.DataFrame(gdf.drop(columns="geometry")),
        )
        assert release.crs == gdf.crs
        assert release.attrs["geosynth"]["method"] == "naive"
        assert set(map(tuple, xy_of(release))).isdisjoint(map(tuple, xy_of(gdf)))


def test_naive_is_uniform_in_the_cell():
    grid = Grid.regular((0, 0, 100, 100), shape=(2, 2), crs=CRS)
    gdf = gpd.GeoDataFrame(
        geometry=gpd.points_from_xy(np.full(4000, 60.0), np.full(4000, 80.0)), crs=CRS
    )
    (release,) = naive_synthesize(gdf, grid, m=1, seed=2)
    xy = xy_of(release)
    assert stats.kstest(xy[:, 0], stats.uniform(50, 50).cdf).pvalue > ALPHA
    assert stats.kstest(xy[:, 1], stats.uniform(50, 50).cdf).pvalue > ALPHA


def test_naive_is_uniform_over_the_habitable_part_of_a_clipped_cell():
    # One cell whose south-west quarter is excluded: "inside the cell" is the L-shaped
    # habitable geometry, so each of its twelve 25 x 25 blocks gets 1/12 of the points and the
    # excluded four get none, wherever in the cell the records are.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)  # a single cell has no neighbour
        grid = Grid.regular((0, 0, 100, 100), shape=(1, 1), crs=CRS,
                            exclude=[box(0, 0, 50, 50)])
    n = 6000
    gdf = gpd.GeoDataFrame(geometry=gpd.points_from_xy(np.full(n, 99.0), np.full(n, 1.0)),
                           crs=CRS)
    (release,) = naive_synthesize(gdf, grid, m=1, seed=4)
    xy = xy_of(release)
    block = np.floor(xy[:, 0] / 25).astype(int) * 4 + np.floor(xy[:, 1] / 25).astype(int)
    counts = np.bincount(block, minlength=16).reshape(4, 4)
    assert counts[:2, :2].sum() == 0
    habitable = np.ones((4, 4), dtype=bool)
    habitable[:2, :2] = False
    assert stats.chisquare(counts[habitable]).pvalue > ALPHA


def test_naive_accepts_a_generator():
    grid = Grid.regular((0, 0, 120, 90), shape=(3, 4), crs=CRS)
    gdf = make_points(100, seed=1)
    by_int = naive_synthesize(gdf, grid, m=2, seed=7)
    rng = np.random.default_rng(7)
    by_generator = naive_synthesize(gdf, grid, m=2, seed=rng)
    for a, b in zip(by_int, by_generator, strict=True):
        np.testing.assert_array_equal(xy_of(a), xy_of(b))
    # the stream moves on: a second call with the same Generator gives other points
    (again,) = naive_synthesize(gdf, grid, m=1, seed=rng)
    assert not np.array_equal(xy_of(again), xy_of(by_generator[0]))


def test_naive_reproducible_and_columns():
    grid = Grid.regular((0, 0, 120, 90), shape=(3, 4), crs=CRS)
    gdf = make_points(200, seed=1)
    a = naive_synthesize(gdf, grid, m=2, seed=7, columns=["a", "z"])
    b = naive_synthesize(gdf, grid, m=2, seed=7, columns=["a", "z"])
    c = naive_synthesize(gdf, grid, m=2, seed=8, columns=["a", "z"])
    assert list(a[0].columns) == ["a", "z", "geometry"]
    for ra, rb, rc in zip(a, b, c, strict=True):
        assert ra.geometry.geom_equals_exact(rb.geometry, 0).all()
        assert not rc.geometry.geom_equals_exact(ra.geometry, 0).all()
    assert not a[0].geometry.geom_equals_exact(a[1].geometry, 0).all()


def test_naive_with_weights(tmp_path):
    grid = Grid.regular((0, 0, 100, 100), shape=(2, 2), crs=CRS)
    values = np.zeros((4, 4))
    values[::2, ::2] = 1.0  # the north-west pixel of each cell
    path = write_raster(tmp_path / "w.tif", values, from_origin(0, 100, 25, 25))
    gdf = make_points(500, bounds=(0, 0, 100, 100), seed=2)
    (release,) = naive_synthesize(gdf, grid, m=1, seed=1, weights=read_weights(path, grid))
    np.testing.assert_array_equal(grid.locate(release.geometry), grid.locate(gdf.geometry))
    xy = xy_of(release)
    assert ((xy[:, 0] % 50 < 25) & (xy[:, 1] % 50 >= 25)).all()


def test_naive_warns_once_about_cells_without_weight(tmp_path):
    grid = Grid.regular((0, 0, 100, 100), shape=(2, 2), crs=CRS)
    values = np.zeros((4, 4))
    values[0, 0] = 1.0  # only the north-west cell has weight
    path = write_raster(tmp_path / "w.tif", values, from_origin(0, 100, 25, 25))
    gdf = make_points(200, bounds=(0, 0, 100, 100), seed=2)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        releases = naive_synthesize(gdf, grid, m=3, seed=1, weights=read_weights(path, grid))
    notes = [w for w in record if issubclass(w.category, DataWarning)]
    assert len(notes) == 1  # was one per release
    assert "3 cell(s) are covered by no pixel of positive weight" in str(notes[0].message)
    for release in releases:
        np.testing.assert_array_equal(grid.locate(release.geometry), grid.locate(gdf.geometry))


def test_naive_refuses_points_outside_the_grid():
    grid = clipped_grid()
    gdf = make_points(300, seed=3)
    with pytest.raises(InputError, match="points fall in no grid cell"):
        naive_synthesize(gdf, grid, m=1)


def test_naive_validation():
    grid = Grid.regular((0, 0, 120, 90), shape=(3, 4), crs=CRS)
    gdf = make_points(50, seed=1)
    with pytest.raises(CRSError, match="differs from the grid CRS"):
        naive_synthesize(gdf.to_crs("EPSG:32723"), grid)
    with pytest.raises(CRSError, match="geographic"):
        naive_synthesize(gdf.to_crs("EPSG:4326"), grid)
    with pytest.raises(InputError, match="grid must be a geosynth.lattice.Grid"):
        naive_synthesize(gdf, "grid")
    with pytest.raises(InputError, match="gdf must be a geopandas.GeoDataFrame"):
        naive_synthesize(pd.DataFrame(gdf), grid)
    with pytest.raises(InputError, match=r"columns \['nope'\]"):
        naive_synthesize(gdf, grid, columns=["a", "nope"])
    with pytest.raises(InputError, match="m \\(number of releases\\)"):
        naive_synthesize(gdf, grid, m=0)
    empty = gdf.copy()
    empty.loc[3, "geometry"] = None
    with pytest.raises(InputError, match="missing or empty geometries"):
        naive_synthesize(empty, grid)


# ---------------------------------------------------------------------- donut
def donut_input(n=4000, crs=CRS):
    rng = np.random.default_rng(5)
    x, y = rng.uniform(0, 1000, n), rng.uniform(0, 1000, n)
    return gpd.GeoDataFrame(
        {"a": rng.integers(0, 3, n)},
        geometry=gpd.points_from_xy(x, y),
        crs=crs,
        index=pd.Index(rng.permutation(n) + 100),
    )


@pytest.mark.parametrize(("r_min", "r_max"), [(50.0, 250.0), (0.0, 10.0)])
def test_donut_distances_uniform_in_area(r_min, r_max):
    gdf = donut_input()
    releases = donut_mask(gdf, r_min, r_max, m=2, seed=3)
    d2_all = []
    for release in releases:
        delta = xy_of(release) - xy_of(gdf)
        r = np.hypot(delta[:, 0], delta[:, 1])
        assert ((r >= r_min - 1e-9) & (r <= r_max + 1e-9)).all()
        d2 = r**2
        d2_all.append(d2)
        uniform_area = stats.uniform(r_min**2, r_max**2 - r_min**2)
        assert stats.kstest(d2, uniform_area.cdf).pvalue > ALPHA
        # Uniform in *radius* is a different law, and the test tells them apart.
        assert stats.kstest(r, stats.uniform(r_min, r_max - r_min).cdf).pvalue < ALPHA
        angle = np.mod(np.arctan2(delta[:, 1], delta[:, 0]), 2 * math.pi)
        assert stats.kstest(angle, stats.uniform(0, 2 * math.pi).cdf).pvalue > ALPHA
    assert not np.allclose(d2_all[0], d2_all[1])


def test_donut_moves_every_point_at_tiny_radii_and_refuses_radii_float64_cannot_resolve():
    # r_max² underflowed to 0 below 1e-162: every "masked" point was its original
    gdf = gpd.GeoDataFrame(geometry=gpd.points_from_xy([0.0, 1e-300, -2e-300], [0.0, 0.0, 0.0]),
                           crs=CRS)
    for r_min, r_max in [(0.0, 1e-200), (1e-170, 1e-160)]:
        (release,) = donut_mask(gdf, r_min, r_max, m=1, seed=1)
        r = np.hypot(*(xy_of(release) - xy_of(gdf)).T)
        assert ((r >= r_min * (1 - 1e-12)) & (r <= r_max * (1 + 1e-12)) & (r > 0)).all()
    far = donut_input(50)
    far.geometry = far.geometry.translate(500_000.0, 7_000_000.0)
    with pytest.raises(InputError, match=r"r_max=1e-06 is below 1e-09 times the largest "
                                         r"absolute coordinate of gdf \(of the order of "
                                         r"1e\+06\).*released at their original location") as err:
        donut_mask(far, 0.0, 1e-6, m=1, seed=1)
    # The message names no record's coordinate (the largest was an extreme of the records).
    largest = np.abs(xy_of(far)).max()
    assert f"{largest:.6g}" not in str(err.value) and f"{largest:.3g}" not in str(err.value)
    (release,) = donut_mask(far, 0.0, 0.01, m=1, seed=1)
    assert (np.hypot(*(xy_of(release) - xy_of(far)).T) > 0).all()


def test_donut_keeps_columns_index_and_crs():
    gdf = donut_input(100)
    (release,) = donut_mask(gdf, 1, 2, m=1, seed=1)
    assert release.index.equals(gdf.index)
    assert list(release.columns) == ["a", "geometry"]
    assert release.crs == gdf.crs
    assert release.attrs["geosynth"] == {
        "method": "donut",
        "release": 0,
        "r_min": 1.0,
        "r_max": 2.0,
    }
    (only_geometry,) = donut_mask(gdf, 1, 2, m=1, seed=1, columns=[])
    assert list(only_geometry.columns) == ["geometry"]


def test_donut_reproducible_by_seed():
    gdf = donut_input(100)
    a = donut_mask(gdf, 5, 10, m=2, seed=9)
    b = donut_mask(gdf, 5, 10, m=2, seed=9)
    c = donut_mask(gdf, 5, 10, m=2, seed=10)
    for ra, rb, rc in zip(a, b, c, strict=True):
        np.testing.assert_array_equal(xy_of(ra), xy_of(rb))
        assert not np.array_equal(xy_of(ra), xy_of(rc))


def test_donut_without_crs_is_accepted():
    gdf = donut_input(10, crs=None)
    (release,) = donut_mask(gdf, 1, 2, m=1, seed=0)
    assert release.crs is None


@pytest.mark.parametrize(
    ("r_min", "r_max", "match"),
    [
        (-1, 5, "0 <= r_min < r_max"),
        (5, 5, "0 <= r_min < r_max"),
        (6, 5, "0 <= r_min < r_max"),
        (0, math.inf, "r_max must be a finite number"),
        (math.nan, 5, "r_min must be a finite number"),
        ("1", 5, "r_min must be a finite number"),
        (True, 5, "r_min must be a finite number"),
        (0, 1e200, r"r_max=1e\+200 is beyond 2e\+07 CRS units \(metre\)"),  # r² overflowed
        (0, 10**400, "r_max must be a finite number"),  # an OverflowError escaped
    ],
)
def test_donut_radii_validation(r_min, r_max, match):
    with pytest.raises(InputError, match=match):
        donut_mask(donut_input(10), r_min, r_max)


def test_donut_refuses_geographic_crs():
    gdf = donut_input(10).to_crs("EPSG:4326")
    with pytest.raises(CRSError, match="geographic CRS"):
        donut_mask(gdf, 10, 100)


def test_donut_validation_of_inputs():
    with pytest.raises(InputError, match="gdf must be a geopandas.GeoDataFrame"):
        donut_mask([Point(0, 0)], 1, 2)
    lines = gpd.GeoDataFrame(geometry=[shapely.LineString([(0, 0), (1, 1)])], crs=CRS)
    with pytest.raises(InputError, match="not points"):
        donut_mask(lines, 1, 2)
    with pytest.raises(InputError, match="m \\(number of releases\\)"):
        donut_mask(donut_input(10), 1, 2, m=-2)


# ---------------------------------------------------------------------- both baselines
BASELINES = {
    "naive": lambda gdf, **kw: naive_synthesize(
        gdf, Grid.regular((0, 0, 120, 90), shape=(3, 4), crs=CRS), m=1, seed=1, **kw
    ),
    "donut": lambda gdf, **kw: donut_mask(gdf, 1.0, 5.0, m=1, seed=1, **kw),
}


@pytest.mark.parametrize("method", sorted(BASELINES))
def test_baselines_refuse_empty_frames_z_coordinates_and_bad_columns(method):
    run = BASELINES[method]
    gdf = make_points(50, seed=1)
    with pytest.raises(InputError, match="gdf has no rows"):  # m empty releases came back
        run(gdf.iloc[:0])
    with_z = gdf.set_geometry(gpd.points_from_xy(gdf.geometry.x, gdf.geometry.y, gdf["z"]))
    with pytest.raises(InputError, match=r"gdf has 50 points with a z coordinate.*force_2d"):
        run(with_z)  # z was dropped silently
    with pytest.raises(InputError, match=r"columns must be a list of column names of gdf, "
                                         r"got int"):
        run(gdf, columns=5)  # TypeError: 'int' object is not iterable
    twice = gpd.GeoDataFrame(pd.concat([gdf[["a"]], gdf[["a", "geometry"]]], axis=1), crs=CRS)
    with pytest.raises(InputError, match=r"gdf has several columns named \['a'\]"):
        run(twice)  # AttributeError: 'DataFrame' object has no attribute 'dtype'


@pytest.mark.parametrize("method", sorted(BASELINES))
def test_baselines_refuse_columns_that_repeat_the_coordinates(method):
    # A CSV's easting/northing carried along published each true location beside the
    # synthetic one.
    run = BASELINES[method]
    gdf = make_points(80, seed=2)
    x, y = gdf.geometry.x.to_numpy(), gdf.geometry.y.to_numpy()
    copies = {
        "easting": x,
        "northing_f32": y.astype(np.float32),  # a float32 copy agrees to about 1e-7
        "x_missing": np.where(np.arange(80) % 7 == 0, np.nan, x),
    }
    for name, values in copies.items():
        label = "y" if name.startswith("northing") else "x"
        with pytest.raises(InputError, match=rf"column '{name}' of gdf holds the {label} "
                                             r"coordinate of the original points") as err:
            run(gdf.assign(**{name: values}))
        assert f"{x[0]:.4g}" not in str(err.value) and f"{y[0]:.4g}" not in str(err.value)
        # the fix the message names works
        (release,) = run(gdf.assign(**{name: values}), columns=["a", "z"])
        assert list(release.columns) == ["a", "z", "geometry"]
    # a column that merely tracks x (0.05 x with scatter of 50 m of x) is kept
    scatter = np.random.default_rng(0).normal(0.0, 50.0, 80)
    (release,) = run(gdf.assign(near=0.05 * (x + scatter)))
    assert "near" in release.columns


@pytest.mark.parametrize("method", ["naive", "donut"])
def test_baselines_refuse_coordinates_in_other_units_offset_text_or_partly_changed(method):
    """Each of these came out beside the synthetic point, every record's location in it."""
    run = BASELINES[method]
    gdf = make_points(80, seed=2)
    x, y = gdf.geometry.x.to_numpy(), gdf.geometry.y.to_numpy()
    one_changed = x.copy()
    one_changed[3] = 0.0
    copies = {
        "x_km": ("x", np.round(x / 1000.0, 3)),  # kilometres to the metre
        "y_feet": ("y", y * 3.28084 + 1000.0),  # feet, offset
        "x_one_changed": ("x", one_changed),
        "x_text": ("x", np.array([f"{value:.2f}" for value in x], dtype=object)),
        "x_thousands": ("x", np.array([f"{1000 * value:,.1f}" for value in x], dtype=object)),
        "x_decimal_comma": ("x", np.array([f"{value:.2f}".replace(".", ",") for value in x],
                                          dtype=object)),
        "x_with_unit": ("x", np.array([f"{value:.2f} m" for value in x], dtype=object)),
        "x_categorical": ("x", pd.Categorical(np.round(x, 2))),
        "x_decimal": ("x", np.array([Decimal(f"{value:.3f}") for value in x], dtype=object)),
        "x_in_wkt": ("x", np.array([f"POINT ({a:.2f} {b:.2f})" for a, b in zip(x, y,
                                                                             strict=True)],
                                   dtype=object)),
        "x_in_pairs": ("x", np.array([(a, b) for a, b in zip(x, y, strict=True)] + [None],
                                     dtype=object)[:-1]),
        "x_labelled": ("x", np.array([f"E{value:.2f}" for value in x], dtype=object)),
        "x_bytes": ("x", np.array([f"x={value:.2f}".encode() for value in x], dtype=object)),
        "y_noisy": ("y", y + np.random.default_rng(1).normal(0.0, 1.0, 80)),  # to a metre
    }
    for name, (label, values) in copies.items():
        with pytest.raises(InputError, match=rf"column '{name}' of gdf holds the {label} "
                                             r"coordinate of the original points \(or a linear"):
            run(gdf.assign(**{name: values}))
    # a text column that is not numbers, and a code column, are kept
    codes = np.random.default_rng(2).integers(1, 4, 80)
    (release,) = run(gdf.assign(label=[f"site {k % 5}" for k in range(80)], code=codes))
    assert {"label", "code"} <= set(release.columns)


@pytest.mark.parametrize("method", ["naive", "donut"])
def test_baselines_refuse_a_column_that_identifies_records(method):
    # A patient_id was kept silently: each synthetic point carried its record's ID.
    run = BASELINES[method]
    gdf = make_points(80, seed=2)
    identifiers = {
        "patient_id": np.arange(1000, 1080),  # an integer ID
        "record": np.arange(80).astype(np.float64),  # one stored as floats after a join
        "case_ref": [f"C-{k:04d}" for k in range(80)],  # a text ID
        "nhs_number": np.repeat(np.arange(40), 2),  # by its name: two visits each
    }
    for name, values in identifiers.items():
        with pytest.raises(InputError, match=rf"column '{name}' of gdf has .*: an identifier"
                                             r".*leave it out: columns=\['a', 'c', 'other', "
                                             r"'z'\]"):
            run(gdf.assign(**{name: values}))
        (release,) = run(gdf.assign(**{name: values}), columns=["a", "c", "other", "z"])
        assert name not in release.columns
    # measurements are kept: an income in whole units that repeats, a continuous one
    rng = np.random.default_rng(3)
    kept = gdf.assign(income=rng.integers(10, 40, 80) * 1000, weight=rng.normal(70, 9, 80))
    (release,) = run(kept)
    assert {"income", "weight"} <= set(release.columns)


@pytest.mark.parametrize("method", ["naive", "donut"])
def test_baselines_keep_an_honest_column_present_for_a_few_records(method):
    # A line through two of three to six values of an honest column (an age at death present
    # for 4 records of 80) took "most" of them, 1-4 % of the time: the column was refused.
    run = BASELINES[method]
    gdf = make_points(80, seed=2)
    rng = np.random.default_rng(5)
    for trial in range(40):
        present = rng.choice(80, size=4, replace=False)
        ages = np.full(80, np.nan)
        ages[present] = rng.integers(40, 95, 4)
        (release,) = run(gdf.assign(age_at_death=ages))
        assert "age_at_death" in release.columns, trial


def lon_lat_points(n, lon0, lat0, utm, seed):
    """Points made from WGS 84 lon/lat and projected to ``utm``, the degrees kept as columns
    rounded to 5 decimals (about a metre)."""
    rng = np.random.default_rng(seed)
    lon, lat = lon0 + rng.uniform(0, 0.01, n), lat0 + rng.uniform(0, 0.01, n)
    frame = pd.DataFrame({"lon": np.round(lon, 5), "lat": np.round(lat, 5),
                          "age": rng.integers(0, 90, n)})
    points = gpd.points_from_xy(lon, lat)
    return gpd.GeoDataFrame(frame, geometry=points, crs="EPSG:4326").to_crs(utm)


@pytest.mark.parametrize("method", ["naive", "donut"])
@pytest.mark.parametrize(("lon0", "lat0", "utm"), [(-46.6, -23.5, CRS),
                                                   (3.0, 0.0, "EPSG:32631")])  # near 0 degrees
def test_baselines_refuse_the_longitude_and_latitude_of_the_points(method, lon0, lat0, utm):
    # Points built from a CSV's lon/lat and projected keep those columns: the release, and its
    # to_public form, published every record's true location in degrees.
    gdf = lon_lat_points(120, lon0, lat0, utm, seed=3)
    xmin, ymin, xmax, ymax = gdf.total_bounds
    grid = Grid.regular((xmin - 1, ymin - 1, xmax + 1, ymax + 1), shape=(3, 3), crs=utm)
    run = {"naive": lambda g, **kw: naive_synthesize(g, grid, m=1, seed=1, **kw),
           "donut": lambda g, **kw: donut_mask(g, 1.0, 5.0, m=1, seed=1, **kw)}[method]
    for name, label in (("lon", "longitude"), ("lat", "latitude")):
        with pytest.raises(InputError, match=rf"column '{name}' of gdf holds the {label} "
                                             r"coordinate of the original points") as err:
            run(gdf, columns=[name, "age"])
        assert f"{gdf[name].iloc[0]:.3f}" not in str(err.value)
    (release,) = run(gdf, columns=["age"])
    assert list(release.columns) == ["age", "geometry"]
    # a column of degrees that are not the points' (each record's workplace, say) is kept
    rng = np.random.default_rng(4)
    elsewhere = gdf.assign(lon=np.round(lon0 + rng.uniform(0, 0.01, len(gdf)), 5),
                           lat=np.round(lat0 + rng.uniform(0, 0.01, len(gdf)), 5))
    (release,) = run(elsewhere)
    assert {"lon", "lat"} <= set(release.columns)


def test_redraws_stop_with_a_clear_error_when_only_original_locations_remain():
    # A point drawn exactly on an original location is drawn again. The lattice and the donut
    # radii keep cells and radii above 1e-9 of the coordinates, so through them it is a
    # ~1e-13 event; the redraw makes "no original location" exact. Tested on a planted draw.
    xy = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    calls = []

    def draw_hitting_row_1_once(rows):
        calls.append(rows.tolist())
        out = xy[rows] + 0.5
        if len(calls) == 1:
            out[rows == 1] = xy[0]  # lands on *another* record's location
        return out

    out = baselines._away_from_originals(draw_hitting_row_1_once, xy, "f")
    assert calls == [[0, 1, 2], [1]]
    np.testing.assert_array_equal(out, xy + 0.5)
    with pytest.raises(SamplerError, match=r"f kept drawing 3 point\(s\) exactly on original "
                                           r"records' locations after 100 draws"):
        baselines._away_from_originals(lambda rows: xy[rows], xy, "f")


@pytest.mark.parametrize("method", ["naive", "donut"])
def test_columns_given_a_0d_array_is_a_type_error(method):
    # list(np.array("a")) raised "iteration over a 0-d array".
    gdf = donut_input(20)
    with pytest.raises(InputTypeError, match=r"^columns must be a list of column names of gdf"):
        if method == "naive":
            naive_synthesize(gdf, Grid.regular(gdf.total_bounds, shape=(2, 2), crs=CRS),
                             m=1, columns=np.array(1.0))
        else:
            donut_mask(gdf, 1, 2, m=1, columns=np.array(1.0))


@pytest.mark.parametrize(("crs", "r_max", "unit"), [
    (CRS, 2**63, "metre"), (CRS, 2.0e7 + 1, "metre"), ("EPSG:2277", 7e7, "US survey foot"),
    (None, 1e8, "CRS units"),
])
def test_donut_radius_beyond_half_the_earth_is_refused(crs, r_max, unit):
    # r_max=2**63 was accepted: masked points at ±8.5e18 m.
    with pytest.raises(InputError, match=rf"r_max=.* is beyond .*{unit}\)? \(2e\+07 m, half "):
        donut_mask(donut_input(20, crs=crs), 10, r_max, m=1)


def test_donut_radius_up_to_half_the_earth_is_accepted():
    (release,) = donut_mask(donut_input(20), 10, 2.0e7, m=1, seed=1)
    assert len(release) == 20
