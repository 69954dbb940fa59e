import copy
import dataclasses
import json
import os
import stat
import struct
import sys
import warnings
from datetime import datetime

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pyproj
import pytest
import rasterio
import shapely
from rasterio.transform import Affine

import geosynth
from geosynth import Grid, PaivaFit, PaivaModel, Priors, prepare, synthesize, to_public
from geosynth.errors import CRSError, DataWarning, InputError, PrivacyLeakWarning
from geosynth.io import (
    ID_COLUMNS,
    audit_path,
    combination_labels,
    read_points,
    read_release,
    write_intensity_geotiff,
    write_release,
)

CRS = "EPSG:31983"
# Distinctive seeds, so their decimal strings cannot occur in a GeoPackage by chance.
FIT_SEED = 604_817_339
SYNTH_SEED = 918_273_645
PUBLIC_SEEDS = [731_950_482, 731_950_483]
# The scenario square: 10 km in EPSG:31983 starting at (605000, 7790000); 8 x 8 cells of 1250 m.
XMIN, YMIN, XMAX, YMAX = 605_000.0, 7_790_000.0, 615_000.0, 7_800_000.0


# ---------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def confidential():
    """300 scenario records with string ids that a leak would make visible."""
    data = geosynth.datasets.paiva_scenario(n=300, seed=11).data
    data.index = pd.Index([f"rec-{i:05d}" for i in range(17, 17 + len(data))], name="record_id")
    return data


@pytest.fixture(scope="module")
def fitted(confidential):
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(8, 8), crs=CRS)
    counts = prepare(confidential, grid, attributes=["y", "x1", "x2"], continuous="z")
    fit = PaivaModel().fit(
        counts, n_iter=60, burn_in=20, thin=2, chains=1, seed=FIT_SEED, progress=False
    )
    internal = synthesize(fit, confidential, m=2, seed=SYNTH_SEED)
    public = [to_public(r, seed=s) for r, s in zip(internal, PUBLIC_SEEDS, strict=True)]
    return fit, internal, public


@pytest.fixture
def points():
    xy = np.array([[605_100.5, 7_790_200.25], [606_000.0, 7_791_000.0], [607_500.75, 7_795_001.0]])
    return gpd.GeoDataFrame(
        {"y": [0, 1, 1], "x1": ["a", "b", "a"], "z": [1.5, 2.5, 3.5]},
        geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]),
        crs=CRS,
    )


def assert_same_points(got, expected):
    assert isinstance(got, gpd.GeoDataFrame)
    assert got.crs is not None and got.crs.equals(pyproj.CRS(CRS))
    np.testing.assert_array_equal(
        shapely.get_coordinates(got.geometry.values), shapely.get_coordinates(expected.geometry)
    )
    for column in ["y", "x1", "z"]:
        assert got[column].tolist() == expected[column].tolist()


def public_like(n=4, **columns):
    frame = gpd.GeoDataFrame(
        {"y": np.arange(n) % 2, **columns},
        geometry=gpd.points_from_xy(XMIN + 10.0 * np.arange(n), np.full(n, YMIN + 5.0)),
        crs=CRS,
    )
    return frame


# ---------------------------------------------------------------------- read_points
def test_read_points_geopackage(tmp_path, points):
    path = tmp_path / "points.gpkg"
    points.to_file(path, layer="records", engine="pyogrio")
    assert_same_points(read_points(path), points)


def test_read_points_geopackage_layers(tmp_path, points):
    path = tmp_path / "points.gpkg"
    points.to_file(path, layer="records", engine="pyogrio")
    points.to_file(path, layer="more_records", engine="pyogrio")
    with pytest.raises(InputError, match=r"2 layers .* pass layer="):
        read_points(path)
    assert_same_points(read_points(path, layer="records"), points)
    with pytest.raises(InputError, match=r"layer='nope'.*no such layer.*records"):
        read_points(path, layer="nope")


def test_read_points_geopackage_picks_the_only_point_layer(tmp_path, points):
    path = tmp_path / "points.gpkg"
    points.to_file(path, layer="records", engine="pyogrio")
    region = gpd.GeoDataFrame(geometry=[shapely.box(XMIN, YMIN, XMAX, YMAX)], crs=CRS)
    region.to_file(path, layer="region", engine="pyogrio")
    assert_same_points(read_points(path), points)


def test_read_points_shapefile(tmp_path, points):
    path = tmp_path / "points.shp"
    points.to_file(path, engine="pyogrio")
    assert_same_points(read_points(path), points)


@pytest.mark.filterwarnings("ignore:'crs' was not provided:UserWarning")
def test_read_points_shapefile_without_crs_takes_crs(tmp_path, points):
    path = tmp_path / "points.shp"
    points.set_crs(None, allow_override=True).to_file(path, engine="pyogrio")
    assert read_points(path).crs is None
    assert_same_points(read_points(path, crs=CRS), points)


def test_read_points_geoparquet(tmp_path, points):
    pytest.importorskip("pyarrow")
    path = tmp_path / "points.parquet"
    points.to_parquet(path)
    assert_same_points(read_points(path), points)


def test_read_points_geoparquet_without_pyarrow(tmp_path, monkeypatch):
    path = tmp_path / "points.parquet"
    path.write_bytes(b"PAR1 not really")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    monkeypatch.setattr(pyogrio, "list_drivers", lambda **kwargs: {})
    with pytest.raises(ImportError, match=r"pip install pyarrow.*ogr2ogr points.gpkg"):
        read_points(path)


def test_read_points_csv(tmp_path, points):
    path = tmp_path / "points.csv"
    xy = shapely.get_coordinates(points.geometry)
    frame = pd.DataFrame({"east": xy[:, 0], "y": points["y"], "x1": points["x1"]})
    frame["north"] = xy[:, 1]
    frame["z"] = points["z"]
    frame.to_csv(path, index=False)
    got = read_points(path, x="east", y="north", crs=CRS)
    assert_same_points(got, points)
    assert "east" not in got.columns and "north" not in got.columns


@pytest.mark.parametrize(
    ("kwargs", "missing"),
    [({}, "x, y, crs"), ({"x": "east", "y": "north"}, "crs"), ({"crs": CRS, "y": "n"}, "x")],
)
def test_read_points_csv_needs_x_y_crs(tmp_path, kwargs, missing):
    path = tmp_path / "points.csv"
    path.write_text("east,north\n1,2\n")
    with pytest.raises(InputError, match=rf"--x, --y, --crs\); missing: {missing}$"):
        read_points(path, **kwargs)


def test_read_points_csv_bad_columns(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("east,north,y\n1,2,0\nabc,3,1\n4,,1\n")
    with pytest.raises(InputError, match=r"x='lon'.*no column 'lon'.*\['east', 'north', 'y'\]"):
        read_points(path, x="lon", y="north", crs=CRS)
    with pytest.raises(InputError, match=r"x='east'.*1 non-numeric values \(rows \[1\]\)"):
        read_points(path, x="east", y="north", crs=CRS)
    path.write_text("east,north,y\n1,2,0\n3,,1\n")
    with pytest.raises(InputError, match=r"y='north'.*1 missing values \(rows \[1\]\)"):
        read_points(path, x="east", y="north", crs=CRS)
    with pytest.raises(InputError, match="two different columns"):
        read_points(path, x="east", y="east", crs=CRS)
    with pytest.raises(CRSError, match="not a valid CRS"):
        read_points(path, x="east", y="north", crs="EPSG:nonsense")


def test_read_points_bad_files(tmp_path, points):
    with pytest.raises(InputError, match="does not exist"):
        read_points(tmp_path / "absent.gpkg")
    text = tmp_path / "points.txt"
    text.write_text("x")
    with pytest.raises(InputError, match=r"unknown extension '.txt'.*\.csv.*\.gpkg"):
        read_points(text)
    broken = tmp_path / "broken.gpkg"
    broken.write_bytes(b"not a geopackage")
    with pytest.raises(InputError, match="cannot read broken.gpkg"):
        read_points(broken)
    with pytest.raises(InputError, match="is a directory"):
        read_points(tmp_path)


def test_read_points_bad_arguments(tmp_path, points):
    gpkg = tmp_path / "points.gpkg"
    points.to_file(gpkg, layer="records", engine="pyogrio")
    with pytest.raises(InputError, match=r"x and y name the coordinate columns of a CSV"):
        read_points(gpkg, x="east", y="north")
    csv = tmp_path / "points.csv"
    csv.write_text("east,north\n1,2\n")
    with pytest.raises(InputError, match="layer='records' applies to GeoPackage files only"):
        read_points(csv, x="east", y="north", crs=CRS, layer="records")
    with pytest.raises(CRSError, match=r"crs='EPSG:4326' contradicts the CRS.*EPSG:31983"):
        read_points(gpkg, crs="EPSG:4326")
    assert_same_points(read_points(gpkg, crs=CRS), points)


def test_read_points_refuses_non_points(tmp_path, points):
    path = tmp_path / "polygons.gpkg"
    polygons = points.copy()
    polygons.geometry = points.buffer(5.0)
    polygons.to_file(path, engine="pyogrio")
    with pytest.raises(InputError, match=r"3 non-point geometries \(\['Polygon'\].*explode"):
        read_points(path)
    table = tmp_path / "table.gpkg"
    pyogrio.write_dataframe(pd.DataFrame({"a": [1]}), table, layer="t")
    with pytest.raises(InputError, match="has no geometry column"):
        read_points(table)


# ---------------------------------------------------------------------- write/read release
def test_release_round_trip(tmp_path, fitted):
    fit, _, public = fitted
    path = tmp_path / "release.gpkg"
    seeds = {"fit": FIT_SEED, "synthesize": SYNTH_SEED, "to_public": PUBLIC_SEEDS}
    before = datetime.now().astimezone()
    assert write_release(path, public, fit=fit, include_intensity=True, seeds=seeds) == path

    layers = pyogrio.list_layers(path)
    assert layers[:, 0].tolist() == ["synthetic_1", "synthetic_2", "grid", "metadata"]
    assert layers[:, 1].tolist() == ["Point", "Point", "Polygon", None]

    got = read_release(path)
    assert got.layers == ["synthetic_1", "synthetic_2", "grid", "metadata"]
    assert got.m == 2
    for release, expected in zip(got.releases, public, strict=True):
        assert release.crs.equals(pyproj.CRS(CRS))
        assert len(release) == len(expected) == 300
        assert list(release.columns) == ["y", "x1", "x2", "z", "geometry"]
        assert isinstance(release.index, pd.RangeIndex)
        np.testing.assert_array_equal(
            shapely.get_coordinates(release.geometry.values),
            shapely.get_coordinates(expected.geometry.values),
        )
        for column in ["y", "x1", "x2"]:
            assert release[column].tolist() == expected[column].tolist()
        np.testing.assert_allclose(release["z"], expected["z"], rtol=0, atol=0)

    labels = combination_labels(fit.counts)
    assert labels[0] == "y=0,x1=1,x2=1" and labels[-1] == "y=1,x1=2,x2=3"
    grid = got.grid
    assert grid.crs.equals(pyproj.CRS(CRS)) and len(grid) == 64
    assert grid["cell_id"].tolist() == list(range(64))
    lam = fit.posterior_mean_lambda()
    for b, label in enumerate(labels):
        np.testing.assert_allclose(grid[f"lambda_{label}"], lam[:, b], rtol=1e-12)

    meta = got.metadata
    assert meta["format"] == "geosynth-release" and meta["format_version"] == 1
    assert meta["geosynth_version"] == geosynth.__version__
    created = datetime.fromisoformat(meta["created_utc"])
    assert created.utcoffset().total_seconds() == 0
    assert (created - before).total_seconds() > -2
    assert meta["crs"] == "EPSG:31983"
    assert meta["m"] == 2 and meta["layers"] == ["synthetic_1", "synthetic_2"]
    assert meta["n_records"] == [300, 300]
    assert meta["method"] == "paiva"
    assert meta["lattice"]["shape"] == [8, 8]
    assert meta["lattice"]["cell_size"] == [1250.0, 1250.0]
    assert meta["lattice"]["bounds"] == [XMIN, YMIN, XMAX, YMAX]
    assert meta["lattice"]["contiguity"] == "queen" and meta["lattice"]["n_cells"] == 64
    assert meta["model"]["name"] == "PaivaModel" and meta["model"]["effects"] == "attribute"
    assert meta["model"]["attributes"] == ["y", "x1", "x2"]
    assert meta["model"]["continuous"] == "z" and meta["model"]["combinations"] == labels
    assert meta["model"]["draws_per_chain"] == 20 and meta["model"]["thin"] == 2
    assert meta["priors"] == Priors().to_dict()
    assert meta["epsilon"] is None and meta["ledger"] is None
    assert meta["intensity"].startswith("grid columns lambda_")

    # the metadata layer is key/value text, each value a JSON document
    table = pyogrio.read_dataframe(path, layer="metadata")
    assert list(table.columns) == ["key", "value"]
    assert table["key"].tolist() == list(meta)
    assert all(
        json.loads(text) == meta[key]
        for key, text in zip(table["key"], table["value"], strict=True)
    )

    # seeds: in the private audit file, nowhere in the GeoPackage
    audit = audit_path(path)
    assert audit.name == "release.gpkg.audit.json"
    record = json.loads(audit.read_text())
    assert record["seeds"] == seeds and record["release"] == "release.gpkg"
    import hashlib

    assert record["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert stat.S_IMODE(os.stat(audit).st_mode) == 0o600
    raw = path.read_bytes()
    for seed in [FIT_SEED, SYNTH_SEED, *PUBLIC_SEEDS]:
        assert str(seed).encode() not in raw
        assert struct.pack("<q", seed) not in raw and struct.pack("<d", float(seed)) not in raw
    assert "seed" not in json.dumps(meta).lower()


def _all_layers(path):
    return {
        name: pyogrio.read_dataframe(path, layer=name) for name in pyogrio.list_layers(path)[:, 0]
    }


def test_release_file_does_not_leak_the_confidential_data(tmp_path, confidential, fitted):
    fit, _, public = fitted
    path = tmp_path / "release.gpkg"
    write_release(path, public, fit=fit, include_intensity=True)

    original_xy = shapely.get_coordinates(confidential.geometry.values)
    original_pairs = {tuple(p) for p in original_xy.tolist()}
    original_values = set(original_xy.ravel().tolist())
    original_labels = set(confidential.index)
    layers = _all_layers(path)
    assert set(layers) == {"synthetic_1", "synthetic_2", "grid", "metadata"}
    for name, frame in layers.items():
        if isinstance(frame, gpd.GeoDataFrame):
            xy = shapely.get_coordinates(frame.geometry.values)
            assert not original_pairs & {tuple(p) for p in xy.tolist()}, name
            assert not original_values & set(xy.ravel().tolist()), name
        for column in frame.columns:
            values = frame[column]
            if column != "geometry" and pd.api.types.is_numeric_dtype(values):
                assert not original_values & set(values.tolist()), (name, column)
            if pd.api.types.is_object_dtype(values) and column != "geometry":
                text = " ".join(map(str, values.tolist()))
                assert "rec-" not in text, (name, column)
                assert not any(label in text for label in original_labels)
        if name.startswith("synthetic_"):
            assert not {str(c).lower() for c in frame.columns} & ID_COLUMNS
    # nothing in the raw bytes either: no index label, no original coordinate as a double
    raw = path.read_bytes()
    assert b"rec-" not in raw and b"record_id" not in raw
    for value in original_values:
        assert struct.pack("<d", value) not in raw
        assert struct.pack(">d", value) not in raw


def test_writer_drops_the_index_of_an_internal_release(tmp_path, confidential, fitted):
    _, internal, _ = fitted
    assert internal[0].index.equals(confidential.index)  # the fixture is really internal
    path = tmp_path / "internal.gpkg"
    with pytest.warns(PrivacyLeakWarning, match="non-default index.*to_public"):
        write_release(path, internal)
    raw = path.read_bytes()
    assert b"rec-" not in raw and b"record_id" not in raw
    assert read_release(path).releases[0].index.equals(pd.RangeIndex(300))

    refused = tmp_path / "refused.gpkg"
    with pytest.raises(InputError, match="internal output of synthesize"):
        write_release(refused, internal, original_index=confidential.index)
    assert not refused.exists()


@pytest.mark.parametrize("column", ["cell", "cell_id", "record_cell", "index", "level_0", "CELL"])
def test_writer_refuses_identifier_columns(tmp_path, column):
    path = tmp_path / "release.gpkg"
    release = public_like(**{column: [3, 1, 2, 0]})
    with pytest.raises(InputError, match=rf"release 1 \(synthetic_1\) has a column '{column}'"):
        write_release(path, [release])
    assert not path.exists()


def test_writer_refuses_reset_index_and_internal_columns(tmp_path, fitted):
    _, internal, _ = fitted
    path = tmp_path / "release.gpkg"
    with pytest.raises(InputError, match="has a column 'record_id', the name of the original"):
        write_release(path, [internal[0].reset_index()], original_index=internal[0].index)
    with pytest.raises(InputError, match="has a column 'index'"):
        write_release(path, [internal[0].reset_index(drop=True).reset_index()])
    with pytest.raises(InputError, match="internal column '_merge'"):
        write_release(path, [public_like(_merge=["both"] * 4)])
    second = public_like()
    second["other"] = second.geometry.buffer(1.0)
    with pytest.raises(InputError, match="second geometry column 'other'"):
        write_release(path, [second])
    assert not path.exists()


def test_writer_refuses_columns_of_original_labels(tmp_path, confidential, fitted):
    _, _, public = fitted
    path = tmp_path / "release.gpkg"
    leaky = public[0].copy()
    leaky["ref"] = np.random.default_rng(0).permutation(confidential.index.to_numpy())
    with pytest.raises(InputError, match="column 'ref' are distinct labels of the original"):
        write_release(path, [public[1], leaky], original_index=confidential.index)
    assert not path.exists()
    # the ordinary public releases pass the same check
    write_release(path, public, original_index=confidential.index)
    assert read_release(path).m == 2


def test_writer_validates_its_arguments(tmp_path, fitted):
    fit, _, public = fitted
    path = tmp_path / "release.gpkg"
    with pytest.raises(InputError, match=r"list of GeoDataFrames.*\[release\]"):
        write_release(path, public[0])
    with pytest.raises(InputError, match="releases is empty"):
        write_release(path, [])
    with pytest.raises(InputError, match=r"release 2 \(synthetic_2\) must be a geopandas"):
        write_release(path, [public[0], pd.DataFrame(public[1])])
    with pytest.raises(CRSError, match="release 2 has CRS EPSG:3857"):
        write_release(path, [public[0], public[1].to_crs("EPSG:3857")])
    other_grid = Grid.regular((0, 0, 10, 10), shape=(2, 2), crs="EPSG:3857")
    with pytest.raises(CRSError, match="the grid has CRS EPSG:3857"):
        write_release(path, public, grid=other_grid)
    with pytest.raises(InputError, match="is not the lattice of fit"):
        write_release(path, public, fit=fit, grid=Grid.regular((0, 0, 8, 8), (8, 8), crs=CRS))
    with pytest.raises(InputError, match="include_intensity=True needs fit="):
        write_release(path, public, include_intensity=True)
    with pytest.raises(InputError, match="fit must be the geosynth.PaivaFit"):
        write_release(path, public, fit="fit")
    with pytest.raises(InputError, match=r"metadata\['m'\] is computed by write_release"):
        write_release(path, public, metadata={"m": 3})
    with pytest.raises(InputError, match=r"metadata has a seed \('seed'\).*seeds="):
        write_release(path, public, metadata={"run": {"seed": SYNTH_SEED}})
    with pytest.raises(InputError, match=r"metadata\['when'\] of type object cannot be"):
        write_release(path, public, metadata={"when": object()})
    with pytest.raises(InputError, match="seeds must be a dict"):
        write_release(path, public, seeds=SYNTH_SEED)
    with pytest.raises(InputError, match=r"seeds\['synthesize'\] is a numpy Generator"):
        write_release(path, public, seeds={"synthesize": np.random.default_rng(1)})
    assert not path.exists() and not audit_path(path).exists()


def test_metadata_records_epsilon_and_ledger(tmp_path):
    ledger = {"budget": {"epsilon": 2.0, "delta": 0.0}, "spent": {"epsilon": 1.5, "delta": 0.0}}
    dp_release = public_like()
    dp_release.attrs = {"geosynth": {"method": "paiva-dp", "epsilon": 1.5, "ledger": ledger}}
    path = tmp_path / "dp.gpkg"
    write_release(path, [dp_release])
    meta = read_release(path).metadata
    assert meta["method"] == "paiva-dp" and meta["epsilon"] == 1.5 and meta["ledger"] == ledger
    assert (
        meta["lattice"] is None
        and meta["model"] is None
        and "grid" not in read_release(path).layers
    )

    given = {"ledger": ledger, "note": ("a", np.int64(2), np.float64(np.inf))}
    write_release(path, [public_like()], metadata=given, overwrite=True)
    meta = read_release(path).metadata
    assert meta["ledger"] == ledger and meta["epsilon"] == 1.5
    assert meta["note"] == ["a", 2, "inf"] and meta["method"] is None


def test_writer_refuses_to_overwrite(tmp_path):
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like()], seeds={"synthesize": 1})
    before = path.read_bytes()
    audit_before = audit_path(path).read_bytes()
    with pytest.raises(InputError, match=r"release.gpkg exists; .*\(CLI: --overwrite\)"):
        write_release(path, [public_like(6)], seeds={"synthesize": 2})
    assert path.read_bytes() == before and audit_path(path).read_bytes() == audit_before

    write_release(path, [public_like(6)], overwrite=True)
    assert len(read_release(path).releases[0]) == 6
    assert not audit_path(path).exists()  # the stale audit of the replaced release is gone

    lone = tmp_path / "lone.gpkg"
    audit_path(lone).write_text("{}")
    with pytest.raises(InputError, match=r"lone.gpkg.audit.json exists.*--overwrite"):
        write_release(lone, [public_like()], seeds={"synthesize": 1})
    assert not lone.exists()


@pytest.mark.parametrize("existing", [False, True])
def test_failed_write_leaves_no_partial_file(tmp_path, monkeypatch, existing):
    path = tmp_path / "release.gpkg"
    if existing:
        write_release(path, [public_like()], seeds={"synthesize": 1})
    listing = sorted(p.name for p in tmp_path.iterdir())
    contents = {name: (tmp_path / name).read_bytes() for name in listing}

    real = pyogrio.write_dataframe
    calls = []

    def fail_on_third_layer(frame, target, **kwargs):
        calls.append(kwargs["layer"])
        if len(calls) == 3:
            raise RuntimeError("disk full")
        real(frame, target, **kwargs)

    monkeypatch.setattr(pyogrio, "write_dataframe", fail_on_third_layer)
    with pytest.raises(RuntimeError, match="disk full"):
        write_release(
            path, [public_like(5), public_like(5)], seeds={"synthesize": 2}, overwrite=True
        )
    assert calls == ["synthetic_1", "synthetic_2", "metadata"]
    assert sorted(p.name for p in tmp_path.iterdir()) == listing
    assert {name: (tmp_path / name).read_bytes() for name in listing} == contents


def test_read_release_errors(tmp_path, points):
    with pytest.raises(InputError, match="does not exist"):
        read_release(tmp_path / "absent.gpkg")
    other = tmp_path / "other.gpkg"
    points.to_file(other, layer="records", engine="pyogrio")
    with pytest.raises(InputError, match=r"not a geosynth release.*\['records'\]"):
        read_release(other)
    broken = tmp_path / "broken.gpkg"
    broken.write_bytes(b"garbage")
    with pytest.raises(InputError, match="cannot read broken.gpkg"):
        read_release(broken)
    edited = tmp_path / "edited.gpkg"
    points.to_file(edited, layer="synthetic_1", engine="pyogrio")
    pyogrio.write_dataframe(
        pd.DataFrame({"key": ["m"], "value": ["two"]}), edited, layer="metadata"
    )
    with pytest.raises(InputError, match="metadata value of 'm' is not JSON"):
        read_release(edited)


def test_read_release_orders_layers_numerically(tmp_path):
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like(n) for n in range(2, 13)])
    got = read_release(path)
    assert [len(r) for r in got.releases] == list(range(2, 13))
    assert got.layers[:11] == [f"synthetic_{k}" for k in range(1, 12)]


# ---------------------------------------------------------------------- GeoTIFF
def test_geotiff_round_trip(tmp_path, fitted):
    fit, _, _ = fitted
    path = tmp_path / "intensity.tif"
    assert fit.to_geotiff(path) == path
    lam = fit.posterior_mean_lambda()
    labels = combination_labels(fit.counts)
    with rasterio.open(path) as src:
        assert src.count == lam.shape[1] == 12
        assert src.descriptions == tuple(labels)
        assert src.tags(1) == {"y": "0", "x1": "1", "x2": "1"}
        assert pyproj.CRS.from_wkt(src.crs.to_wkt()).equals(pyproj.CRS(CRS))
        assert src.transform == Affine(1250.0, 0.0, XMIN, 0.0, -1250.0, YMAX)
        assert (src.width, src.height) == (8, 8)
        assert src.dtypes == ("float32",) * 12
        assert np.isnan(src.nodata)
        bands = src.read()
    # cell 0 is lattice row 0 (south), column 0: the last raster row; cell 56 (row 7) the first
    grid = fit.grid
    assert (grid.cell_row[0], grid.cell_col[0]) == (0, 0)
    assert (grid.cell_row[56], grid.cell_col[56]) == (7, 0)
    assert not np.allclose(lam[0], lam[56])  # so a missing flip would be caught
    np.testing.assert_array_equal(bands[:, 7, 0], lam[0].astype(np.float32))
    np.testing.assert_array_equal(bands[:, 0, 0], lam[56].astype(np.float32))
    np.testing.assert_array_equal(
        bands[:, 7 - grid.cell_row, grid.cell_col], lam.T.astype(np.float32)
    )


def _fake_fit(counts, values):
    """A PaivaFit with one draw whose intensity is ``values`` (G, B)."""
    eta = np.log(values).astype(np.float32)[None, None]
    G = values.shape[0]
    return PaivaFit(
        model=PaivaModel(),
        counts=counts,
        scalar_names=[],
        scalars=np.zeros((1, 1, 0)),
        theta=np.zeros((1, 1, G), np.float32),
        beta=None,
        eta=eta,
    )


def test_geotiff_of_a_clipped_grid_has_nan_outside(tmp_path, confidential):
    region = shapely.Polygon([(XMIN, YMIN), (XMAX, YMIN), (XMIN, YMAX)])  # south-west triangle
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(4, 5), crs=CRS, region=region)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        counts = prepare(confidential, grid, attributes=["y"], outside="drop")
    values = np.column_stack([np.arange(1.0, grid.n_cells + 1), 100 + np.arange(grid.n_cells)])
    fit = _fake_fit(counts, values)
    path = write_intensity_geotiff(fit, tmp_path / "clipped.tif")
    with rasterio.open(path) as src:
        assert src.descriptions == ("y=0", "y=1")
        assert src.transform == Affine(2000.0, 0.0, XMIN, 0.0, -2500.0, YMAX)
        bands = src.read()
    assert bands.shape == (2, 4, 5)
    kept = np.zeros((4, 5), dtype=bool)
    kept[3 - grid.cell_row, grid.cell_col] = True
    assert 0 < kept.sum() == grid.n_cells < 20
    assert np.isnan(bands[:, ~kept]).all() and np.isfinite(bands[:, kept]).all()
    assert np.isnan(bands[:, 0, 4]).all()  # north-east corner, outside the triangle
    lam = fit.posterior_mean_lambda()
    np.testing.assert_allclose(bands[:, 3 - grid.cell_row, grid.cell_col], lam.T, rtol=1e-6)
    np.testing.assert_allclose(bands[0, 3, 0], 1.0, rtol=1e-6)  # cell 0, south-west


def test_geotiff_refuses_non_regular_lattices(tmp_path, fitted):
    fit, _, _ = fitted
    path = tmp_path / "intensity.tif"
    not_a_grid = dataclasses.replace(fit, counts=dataclasses.replace(fit.counts, grid=object()))
    with pytest.raises(InputError, match="lattice is a object, not a regular geosynth.Grid"):
        write_intensity_geotiff(not_a_grid, path)
    uneven = copy.copy(fit.grid)
    edges = np.array(fit.grid.bounds[0] + 1250.0 * np.arange(9))
    edges[3] += 400.0
    uneven._xedges = edges
    irregular = dataclasses.replace(fit, counts=dataclasses.replace(fit.counts, grid=uneven))
    with pytest.raises(InputError, match="is not regular"):
        write_intensity_geotiff(irregular, path)
    with pytest.raises(InputError, match="fit must be the geosynth.PaivaFit"):
        write_intensity_geotiff(fit.counts, path)
    assert not path.exists()


def test_geotiff_refuses_to_overwrite_and_is_atomic(tmp_path, fitted, monkeypatch):
    fit, _, _ = fitted
    path = tmp_path / "intensity.tif"
    path.write_bytes(b"old")
    with pytest.raises(InputError, match=r"intensity.tif exists.*--overwrite"):
        fit.to_geotiff(path)
    assert path.read_bytes() == b"old"

    real_open = rasterio.open
    created = []

    def broken_open(target, mode="r", **kwargs):
        dataset = real_open(target, mode, **kwargs)  # the temporary file now exists
        dataset.close()
        created.append(target)
        raise rasterio.errors.RasterioIOError("no space left")

    with monkeypatch.context() as patch:
        patch.setattr(rasterio, "open", broken_open)
        with pytest.raises(rasterio.errors.RasterioIOError, match="no space"):
            fit.to_geotiff(path, overwrite=True)
    assert len(created) == 1 and created[0].parent.parent == tmp_path
    assert not created[0].exists()
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["intensity.tif"]
    fit.to_geotiff(path, overwrite=True)
    with rasterio.open(path) as src:
        assert src.count == 12
