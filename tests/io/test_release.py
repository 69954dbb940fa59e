"""write_release / read_release: what a release file holds, how it is written, what is refused."""

import hashlib
import json
import os
import sqlite3
import stat
import struct
import warnings
from datetime import datetime

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pyproj
import pytest
import shapely

import geosynth
from geosynth import (
    Grid,
    PaivaFit,
    PaivaModel,
    Priors,
    ReleaseInfo,
    donut_mask,
    naive_synthesize,
    prepare,
    synthesize,
    to_public,
)
from geosynth._atomic import AtomicOutputs, remove_stale_staging
from geosynth.data import labels_of
from geosynth.dp import Accountant, dp_counts, dp_release
from geosynth.dp.locations import NoisyCounts
from geosynth.errors import CRSError, InputError, InputTypeError, PrivacyLeakWarning
from geosynth.io import (
    ID_COLUMNS,
    audit_path,
    info_from_metadata,
    metadata_from_info,
    printable,
    read_release,
    verify_audit,
    write_release,
)
from geosynth.synth.release import (
    COLUMNS_ATTR,
    LINKED_ATTR,
    POINTS_ATTR,
    PUBLIC_ATTR,
    column_digest,
    points_record,
    record_columns,
    release_info,
    set_release_info,
)
from tests.io.helpers import (
    CRS,
    FIT_SEED,
    PUBLIC_SEEDS,
    SYNTH_SEED,
    XMAX,
    XMIN,
    YMAX,
    YMIN,
    all_layers,
    drop_layer,
    metadata_value,
    names,
    public_like,
    run_killed,
    set_metadata,
    sql,
    with_record,
)


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

    labels = fit.counts.combination_labels()
    assert labels[0] == "y=0,x1=1,x2=1" and labels[-1] == "y=1,x1=2,x2=3"
    grid = got.grid
    assert grid.crs.equals(pyproj.CRS(CRS)) and len(grid) == 64
    assert grid["cell_id"].tolist() == list(range(64))
    lam = fit.posterior_mean_lambda()
    for b, label in enumerate(labels):
        np.testing.assert_allclose(grid[f"lambda_{label}"], lam[:, b], rtol=1e-12)

    meta = got.metadata
    assert meta["format"] == "geosynth-release" and meta["format_version"] == 3
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
    assert meta["lattice"]["bounds_snap_unit"] is None  # public bounds given to Grid.regular
    assert meta["model"]["name"] == "PaivaModel" and meta["model"]["effects"] == "attribute"
    assert meta["model"]["attributes"] == ["y", "x1", "x2"]
    assert meta["model"]["continuous"] == "z" and meta["model"]["combinations"] == labels
    assert meta["model"]["draws_per_chain"] == 20 and meta["model"]["thin"] == 2
    assert meta["priors"] == Priors().to_dict()
    assert meta["epsilon"] is None and meta["ledger"] is None
    assert meta["intensity"].startswith("grid columns lambda_")
    assert meta["notes"] is None and meta["size"] is None
    # the last row marks the file complete and lists every layer
    assert list(meta)[-1] == "complete"
    assert meta["complete"] == {"layers": got.layers, "n_layers": 4}
    assert got.audit == audit_path(path)  # present and verified

    # the metadata is one record: it reads back as a ReleaseInfo that gives the table again
    info = got.info
    assert info.method == "paiva" and info.m == 2 and info.n_records == (300, 300)
    assert info.crs == "EPSG:31983" and info.lattice == meta["lattice"]
    assert info.model == meta["model"] and info.priors == Priors().to_dict()
    assert info.epsilon is None and info.release is None
    assert metadata_from_info(info) == meta
    assert info_from_metadata(meta) == info

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
    assert record["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert stat.S_IMODE(os.stat(audit).st_mode) == 0o600
    raw = path.read_bytes()
    for seed in [FIT_SEED, SYNTH_SEED, *PUBLIC_SEEDS]:
        assert str(seed).encode() not in raw
        assert struct.pack("<q", seed) not in raw and struct.pack("<d", float(seed)) not in raw
    assert "seed" not in json.dumps(meta).lower()


# ---------------------------------------------------------------------- limits
def test_limits_of_the_releases_are_recorded_in_the_file(tmp_path, confidential, fitted):
    """A file of releases drawn truncated did not say so: its users took them as untruncated."""
    fit, _, unlimited = fitted
    low = float(np.floor(confidential["z"].min()))
    internal = synthesize(fit, confidential, m=2, seed=SYNTH_SEED, limits={"z": (low, None)})
    public = [to_public(r, seed=s) for r, s in zip(internal, PUBLIC_SEEDS, strict=True)]
    path = write_release(tmp_path / "limited.gpkg", public, fit=fit)
    got = read_release(path)
    meta = got.metadata
    assert meta["limits"] == {"z": [low, None]} and meta["format_version"] == 4
    keys = list(meta)
    assert keys[keys.index("priors") + 1] == "limits"
    assert got.info.parameters == {"limits": {"z": [low, None]}}
    assert metadata_from_info(got.info) == meta and info_from_metadata(meta) == got.info
    assert metadata_value(path, "limits") == {"z": [low, None]}
    # Releases without limits: the file is as before, version 3 without the key.
    plain = read_release(write_release(tmp_path / "plain.gpkg", unlimited, fit=fit)).metadata
    assert "limits" not in plain and plain["format_version"] == 3


def limited_release(path, limits=None, n=(4, 5)):
    frames = [public_like(k, z=np.linspace(1.0, 2.0, k)) for k in n]
    for frame in frames:
        frame.attrs["geosynth"] = {"method": "paiva",
                                   "limits": limits or {"z": [0.0, None]}}
    return write_release(path, frames)


def test_releases_drawn_with_other_limits_are_not_written_together(tmp_path):
    frames = [public_like(4, z=np.ones(4)) for _ in range(3)]
    frames[0].attrs["geosynth"] = {"method": "paiva", "limits": {"z": [0.0, None]}}
    frames[1].attrs["geosynth"] = {"method": "paiva", "limits": {"z": [0.0, 5.0]}}
    frames[2].attrs["geosynth"] = {"method": "paiva"}
    for pair in (frames[:2], frames[::2]):
        with pytest.raises(InputError, match=r"the releases record different limits"):
            write_release(tmp_path / "mixed.gpkg", pair)
    assert not (tmp_path / "mixed.gpkg").exists()


def test_limits_of_a_column_the_file_does_not_hold_are_not_written(tmp_path):
    frame = public_like(4, z=np.ones(4))
    frame.attrs["geosynth"] = {"method": "paiva", "limits": {"z": [0.0, None], "w": [0, 1]}}
    meta = read_release(write_release(tmp_path / "r.gpkg", [frame])).metadata
    assert meta["limits"] == {"z": [0.0, None]}
    dropped = frame.drop(columns="z")
    meta = read_release(write_release(tmp_path / "r.gpkg", [dropped], overwrite=True)).metadata
    assert "limits" not in meta and meta["format_version"] == 3


@pytest.mark.parametrize(("limits", "message"), [
    ({"z": [5, 1]}, r"metadata 'limits'\['z'\] = \(5, 1\) is empty.*geosynth never "
                    r"writes such limits, so the file was edited"),
    ({"z": [None, None]}, r"metadata 'limits'\['z'\] has two open ends"),
    ({"z": [0, 10**400]}, r"metadata 'limits'\['z'\]\[1\] must be a finite number, got inf"),
    ({"z": ["a", 1]}, r"metadata 'limits.z\[0\]' must be a number, got text"),
    ({"z": [0]}, r"metadata 'limits.z' must have 2 items, got 1"),
    ([0, 1], r"metadata 'limits' must be an object, got a list"),
    ({}, r"metadata 'limits' must be a non-empty dict"),
    ({"age": [0, 120]}, r"its metadata 'limits' name columns \['age'\] that its releases "
                        r"do not have"),
])
def test_absurd_limits_in_a_file_are_refused(tmp_path, limits, message):
    path = limited_release(tmp_path / "release.gpkg")
    assert read_release(path).info.parameters == {"limits": {"z": [0.0, None]}}
    set_metadata(path, "limits", limits)
    with pytest.raises(InputError, match=r"^release.gpkg: " + message):
        read_release(path)


def test_limits_in_a_file_of_an_older_format_version_are_refused(tmp_path):
    path = limited_release(tmp_path / "release.gpkg")
    set_metadata(path, "format_version", 3)
    with pytest.raises(InputError, match=r"its metadata has 'limits', which release format "
                                         r"version 3 does not have, so the file was edited"):
        read_release(path)


def test_release_file_does_not_leak_the_confidential_data(tmp_path, confidential, fitted):
    fit, _, public = fitted
    path = tmp_path / "release.gpkg"
    # The intensity is no record, but it follows the exact counts: said when it is written.
    with pytest.warns(PrivacyLeakWarning, match=r"^the grid layer of release.gpkg holds the "
                      r"posterior mean intensity of a fit of the exact counts: rounded, it "
                      r"equals the confidential count of \d+% of the \(cell, combination\)"):
        write_release(path, public, fit=fit, include_intensity=True)

    original_xy = shapely.get_coordinates(confidential.geometry.values)
    original_pairs = {tuple(p) for p in original_xy.tolist()}
    original_values = set(original_xy.ravel().tolist())
    original_labels = set(confidential.index)
    layers = all_layers(path)
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


def test_writer_refuses_the_internal_output_of_synthesize(tmp_path, confidential, fitted):
    _, internal, _ = fitted
    assert internal[0].index.equals(confidential.index)  # the fixture is really internal
    path = tmp_path / "internal.gpkg"
    for original_index in (None, confidential.index):
        with pytest.raises(InputError, match=r"internal output of geosynth.synthesize.*"
                                             r"geosynth.to_public\(release\)"):
            write_release(path, internal, original_index=original_index)
    assert names(tmp_path) == []


@pytest.mark.parametrize("rows", [slice(0, 0), slice(0, 150)])
def test_writer_refuses_a_release_short_of_the_fits_records(tmp_path, fitted, rows):
    """A release filtered to nothing (or to half) by mistake was published without a word:
    every release of an exact-count fit holds one point per record."""
    fit, _, public = fitted
    cut = [public[0], public[1].iloc[rows]]
    with pytest.raises(InputError, match=rf"release 2 \(synthetic_2\) has {rows.stop:,} "
                                         r"points, not the 300 records of fit's counts"):
        write_release(tmp_path / "short.gpkg", cut, fit=fit)
    assert names(tmp_path) == []


def test_writer_drops_a_non_default_index_with_a_warning(tmp_path):
    release = public_like()
    release.index = ["rec-a", "rec-b", "rec-c", "rec-d"]
    path = tmp_path / "release.gpkg"
    with pytest.warns(PrivacyLeakWarning, match="non-default index.*to_public"):
        write_release(path, [release])
    assert b"rec-" not in path.read_bytes()
    assert read_release(path).releases[0].index.equals(pd.RangeIndex(4))

    refused = tmp_path / "refused.gpkg"
    with pytest.raises(InputError, match=r"indexed by labels of the original index"):
        write_release(refused, [release], original_index=release.index)
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


@pytest.mark.parametrize("convert", [list, lambda column: column.astype(object)],
                         ids=["list", "astype-object"])
def test_writer_refuses_geometries_in_a_column_of_objects(tmp_path, confidential, convert):
    # A column of shapely points without the geometry dtype (a list assigned after to_public)
    # was written as text: the original locations in a published release.
    release = public_like()
    release["home"] = convert(confidential.geometry.iloc[: len(release)].reset_index(drop=True))
    path = tmp_path / "release.gpkg"
    with pytest.raises(InputError, match="second geometry column 'home'"):
        write_release(path, [release])
    assert not path.exists()


def test_writer_refuses_geometries_written_as_text(tmp_path, confidential):
    release = public_like()
    release["home"] = confidential.geometry.iloc[: len(release)].to_wkt().to_numpy()
    with pytest.raises(InputError, match="second geometry column 'home'"):
        write_release(tmp_path / "release.gpkg", [release])
    assert not (tmp_path / "release.gpkg").exists()


_COORDINATE_FORMS = {
    "lists": lambda xy: [[x, y] for x, y in xy],
    "tuples": lambda xy: [(x, y) for x, y in xy],
    "dicts": lambda xy: [{"x": x, "y": y} for x, y in xy],
    "text": lambda xy: [f"{x} {y}" for x, y in xy],
    "tuple-text": lambda xy: [str((x, y)) for x, y in xy],
}


@pytest.mark.parametrize("form", list(_COORDINATE_FORMS))
def test_writer_refuses_coordinates_in_other_forms(tmp_path, confidential, form):
    # Lists, dicts or text of the original coordinates were written (the lists as text) and
    # drawn on public maps: only shapely geometries, WKT, WKB and GeoJSON were caught.
    release = public_like()
    xy = shapely.get_coordinates(confidential.geometry.iloc[: len(release)])
    release["home"] = _COORDINATE_FORMS[form](xy)
    with pytest.raises(InputError, match="second geometry column 'home', or coordinates"):
        write_release(tmp_path / "release.gpkg", [release])
    assert not (tmp_path / "release.gpkg").exists()
    assert "home" not in geosynth.to_public(release, seed=1).columns


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
    rook = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(8, 8), crs=CRS, contiguity="rook")
    assert rook.n_cells == fit.grid.n_cells and rook.bounds == fit.grid.bounds  # same cells
    with pytest.raises(InputError, match="is not the lattice of fit"):  # but other neighbours
        write_release(path, public, fit=fit, grid=rook)
    with pytest.raises(InputError, match="include_intensity=True needs fit="):
        write_release(path, public, include_intensity=True)
    with pytest.raises(InputError, match="fit must be the geosynth.PaivaFit"):
        write_release(path, public, fit="fit")
    with pytest.raises(InputError, match=r"metadata\['m'\] is computed by write_release"):
        write_release(path, public, metadata={"m": 3})
    # (releases made elsewhere: a ledger on Paiva's releases contradicts how they were made)
    with pytest.raises(InputError, match=r"metadata\['ledger'\] has the key 'seed'.*seeds="):
        write_release(path, [public_like()], metadata={"ledger": {"seed": SYNTH_SEED}})
    with pytest.raises(InputError, match=r"metadata\['ledger'\]\['when'\] of type object cannot"):
        write_release(path, [public_like()], metadata={"ledger": {"when": object()}})
    with pytest.raises(InputError, match="seeds must be a dict"):
        write_release(path, public, seeds=SYNTH_SEED)
    with pytest.raises(InputError, match=r"seeds\['synthesize'\] is a numpy Generator"):
        write_release(path, public, seeds={"synthesize": np.random.default_rng(1)})
    assert not path.exists() and not audit_path(path).exists()


def test_a_grid_of_the_same_cells_in_another_region_is_not_the_fits(tmp_path, confidential):
    # Same cells, neighbours and clipping, but other habitable fractions: the grid layer would
    # publish them beside a fit made on the first region (the old check compared cells only).
    def clipped(corner_share):
        corner = shapely.box(XMIN, YMIN, XMIN + (XMAX - XMIN) * corner_share,
                             YMIN + (YMAX - YMIN) * corner_share)
        return Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(8, 8), crs=CRS, exclude=corner)

    grid = clipped(1 / 16)
    fit = PaivaModel().fit(prepare(confidential, grid, attributes=["y"]), n_iter=20, burn_in=10,
                           chains=1, seed=FIT_SEED, progress=False)
    public = [to_public(r, seed=1) for r in synthesize(fit, confidential, m=1, seed=SYNTH_SEED)]
    other = clipped(1 / 20)
    assert other.n_cells == grid.n_cells and (other.adjacency != grid.adjacency).nnz == 0
    path = tmp_path / "release.gpkg"
    with pytest.raises(InputError, match="is not the lattice of fit"):
        write_release(path, public, fit=fit, grid=other)
    write_release(path, public, fit=fit, grid=clipped(1 / 16))  # built again: the fit's


def test_a_release_on_areas_with_z_coordinates_reads_back(tmp_path, confidential):
    # Areas exported from a 3-D source kept their z in the cells: the grid layer held 3-D
    # polygons, and read_release refused the file just written as edited ("do not publish it").
    step_x, step_y = (XMAX - XMIN) / 4, (YMAX - YMIN) / 4
    areas = gpd.GeoSeries([shapely.force_3d(shapely.box(XMIN + i * step_x, YMIN + j * step_y,
                                                        XMIN + (i + 1) * step_x,
                                                        YMIN + (j + 1) * step_y), 812.0)
                           for i in range(4) for j in range(4)], crs=CRS)
    assert shapely.has_z(np.asarray(areas.array)).all()
    grid = Grid.from_polygons(areas)
    fit = PaivaModel().fit(prepare(confidential, grid, attributes=["y"]), n_iter=20, burn_in=10,
                           chains=1, seed=FIT_SEED, progress=False)
    public = [to_public(r, seed=1) for r in synthesize(fit, confidential, m=1, seed=SYNTH_SEED)]
    path = tmp_path / "release.gpkg"
    write_release(path, public, fit=fit)
    cells = read_release(path).grid
    assert len(cells) == 16 and not shapely.has_z(np.asarray(cells.geometry.array)).any()


def test_a_dp_release_is_not_refused_by_the_number_of_records(tmp_path):
    # A DP release of two points with zones 0 and 5 was refused beside an input of 6 rows (its
    # values "distinct labels of the original index") and written beside one of 5: after the
    # budget was spent, whether anything was published told the number of records.
    ledger = {"budget": {"epsilon": 1.0, "delta": 0.0}, "spent": {"epsilon": 1.0, "delta": 0.0}}
    release = public_like(n=2, zone=[0, 5])
    release.attrs["geosynth"] = {"method": "paiva-dp", "epsilon": 1.0, "ledger": ledger}
    for n_records in (5, 6):
        write_release(tmp_path / f"dp{n_records}.gpkg", [release],
                      original_index=pd.RangeIndex(n_records))
    exact = public_like(n=2, zone=[0, 5])  # not DP: its rows may be records, and are checked
    with pytest.raises(InputError, match="distinct labels of the original index"):
        write_release(tmp_path / "exact.gpkg", [exact], original_index=pd.RangeIndex(6))


def test_releases_read_from_a_file_are_not_written_with_a_fit(tmp_path, fitted):
    # Their file's record passed the check that a synthesizer drew them, yet names no fit.
    fit, _, public = fitted
    read = read_release(write_release(tmp_path / "release.gpkg", public, fit=fit)).releases
    with pytest.raises(InputError, match=r"release 1 \(synthetic_1\) was read from a release "
                                         r"file, which does not say which fit drew it"):
        write_release(tmp_path / "again.gpkg", read, fit=fit)
    write_release(tmp_path / "again.gpkg", read)


def test_releases_read_from_a_dp_file_and_another_cannot_share_a_file(tmp_path):
    # Read releases carry their file's record: written together, the last record won and the
    # plain releases were labelled epsilon-DP (or, the other way round, refused as edited).
    ledger = {"budget": {"epsilon": 2.0, "delta": 0.0}, "spent": {"epsilon": 1.5, "delta": 0.0}}
    dp_release = public_like()
    dp_release.attrs = {"geosynth": {"method": "paiva-dp", "epsilon": 1.5, "ledger": ledger}}
    write_release(tmp_path / "dp.gpkg", [with_record(dp_release)])
    plain = public_like()
    plain.attrs = {**plain.attrs, "geosynth": {"method": "paiva"}}
    write_release(tmp_path / "plain.gpkg", [plain])
    dp, other = (read_release(tmp_path / name).releases for name in ("dp.gpkg", "plain.gpkg"))
    assert release_info(dp[0]).epsilon == 1.5 and release_info(other[0]).epsilon is None
    for mixed in (other + dp, dp + other):
        with pytest.raises(InputError, match=r"the releases were made in different ways"):
            write_release(tmp_path / "mixed.gpkg", mixed)
    assert not (tmp_path / "mixed.gpkg").exists()
    write_release(tmp_path / "again.gpkg", dp)  # one way: the record as read
    assert read_release(tmp_path / "again.gpkg").metadata["epsilon"] == 1.5


def test_metadata_records_epsilon_and_ledger(tmp_path):
    ledger = {"budget": {"epsilon": 2.0, "delta": 0.0}, "spent": {"epsilon": 1.5, "delta": 0.0}}
    dp_release = public_like()
    dp_release.attrs = {"geosynth": {"method": "paiva-dp", "epsilon": 1.5, "ledger": ledger}}
    path = tmp_path / "dp.gpkg"
    write_release(path, [with_record(dp_release)])
    meta = read_release(path).metadata
    assert meta["method"] == "paiva-dp" and meta["epsilon"] == 1.5 and meta["ledger"] == ledger
    assert (
        meta["lattice"] is None
        and meta["model"] is None
        and "grid" not in read_release(path).layers
    )

    uncapped = {"budget": {"epsilon": np.float64(np.inf), "delta": 0.0}, "version": np.int64(1),
                "spent": ledger["spent"]}
    write_release(path, [public_like()], metadata={"ledger": uncapped}, notes="a test",
                  overwrite=True)
    meta = read_release(path).metadata
    assert meta["ledger"]["spent"] == ledger["spent"] and meta["epsilon"] == 1.5
    assert meta["ledger"]["budget"]["epsilon"] == "inf" and meta["ledger"]["version"] == 1
    assert meta["method"] is None and meta["notes"] == "a test"
    # The ledger has the keys of Accountant.to_dict(): an added one is not published.
    with pytest.raises(InputError, match=r"metadata 'ledger' has unknown fields \['extra'\]"):
        write_release(path, [public_like()], metadata={"ledger": {**ledger, "extra": ("a", 2)}},
                      overwrite=True)


@pytest.mark.parametrize("point", ["POINT EMPTY", "POINT (nan nan)", "POINT Z (1 2 3)",
                                   "POINT M (1 2 3)", "LINESTRING (0 0, 1 1)"])
def test_a_release_point_is_one_finite_x_y_pair(tmp_path, point):
    release = public_like(3)
    release.loc[1, "geometry"] = shapely.from_wkt(point)
    path = tmp_path / "release.gpkg"
    with pytest.raises(InputError, match=r"release 1 \(synthetic_1\) has 1 missing, empty, "
                                         r"non-finite, 3-D \(Z/M\) or non-point geometries "
                                         r"\(rows \[1\]\)"):
        write_release(path, [release])
    assert not path.exists()


@pytest.mark.parametrize("claim", [{"epsilon": 0.5}, {"method": "paiva-dp"},
                                   {"ledger": {"spent": {"epsilon": 0.5, "delta": 0.0}}}])
def test_metadata_cannot_claim_a_privacy_the_releases_do_not_have(tmp_path, fitted, claim):
    # The releases of an exact fit published "epsilon 0.5" when the caller said so.
    fit, _, public = fitted
    path = tmp_path / "release.gpkg"
    key = next(iter(claim))
    with pytest.raises(InputError, match=rf"metadata\['{key}'\] = .* contradicts how these "
                                         "releases were made"):
        write_release(path, public, fit=fit, metadata=claim)
    assert not path.exists()
    write_release(path, public, fit=fit, metadata={"method": "paiva"})  # agreeing: fine
    assert read_release(path).metadata["epsilon"] is None


@pytest.mark.parametrize("noise", [None, "os-entropy", "seeded"])
def test_a_differentially_private_release_takes_no_seeds(tmp_path, noise):
    # The CLI wrote a seeded DP release's seed to the audit file beside it: whoever read it
    # could replay the noise. No seed may sit beside a DP release, whatever its noise.
    metadata = {"method": "paiva-dp", "epsilon": 1.5, **({} if noise is None else
                                                          {"noise": noise})}
    path = tmp_path / "dp.gpkg"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # "seeded" warns too
        with pytest.raises(InputError, match=r"seeds= for dp.gpkg, a differentially private "
                           r"release \(epsilon 1.5\).*drop seeds"):
            write_release(path, [public_like()], metadata=metadata, seeds={"synthesize": 3})
    assert list(tmp_path.iterdir()) == []
    write_release(path, [public_like()], metadata={"method": "paiva-dp", "epsilon": 1.5})
    assert not audit_path(path).exists()


def test_metadata_given_as_a_release_info_writes_the_same_table(tmp_path):
    ledger = {"spent": {"epsilon": 1.5, "delta": 0.0}}
    given = {"method": "paiva-dp", "epsilon": 1.5, "n_public": 4, "ledger": ledger}
    as_dict, as_info = tmp_path / "dict.gpkg", tmp_path / "info.gpkg"
    write_release(as_dict, [public_like()], metadata=given, notes="n")
    info = ReleaseInfo(**given, notes="n", release=3, neighbours="replace", m=7, crs="x")
    write_release(as_info, [public_like()], metadata=info)
    tables = [pyogrio.read_dataframe(path, layer="metadata") for path in (as_dict, as_info)]
    for table in tables:
        table.loc[table["key"] == "created_utc", "value"] = "when"
    pd.testing.assert_frame_equal(*tables)  # the fields the writer computes are its own
    assert read_release(as_info).info.n_public == 4
    with pytest.raises(InputError, match=r"ReleaseInfo.epsilon must be a number > 0"):
        write_release(tmp_path / "bad.gpkg", [public_like()], metadata=ReleaseInfo(epsilon=-1.0))
    with pytest.raises(InputError, match="metadata must be a dict of str keys or a ReleaseInfo"):
        write_release(tmp_path / "bad.gpkg", [public_like()], metadata=[("method", "x")])


@pytest.mark.filterwarnings("ignore::geosynth.errors.DataWarning")  # 8 records: mostly noise
def _noise_aware_fit(noisy):
    eta = np.zeros((1, 2, 4, 2), dtype=np.float32)
    return PaivaFit(model=PaivaModel(), counts=noisy, scalar_names=[],
                    scalars=np.zeros((1, 2, 0)), theta=np.zeros((1, 2, 4), dtype=np.float32),
                    beta=None, eta=eta, noise_scale=noisy.noise_scale)


def _drawn_like(method="paiva-dp"):
    """A public-looking release with the record a synthesizer leaves (fit= needs one)."""
    frame = public_like()
    set_release_info(frame, ReleaseInfo(method=method))
    return frame


def test_a_fit_of_counts_noised_elsewhere_is_written_as_external(tmp_path):
    """Counts geosynth did not noise: the file says "external", and metadata cannot upgrade it."""
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(2, 2), crs=CRS)
    counts = prepare(public_like(8), grid, attributes=["y"], levels={"y": [0, 1]})
    drawn = dp_counts(counts, 1.0)
    by_hand = NoisyCounts(counts=np.array(drawn.counts), combos=drawn.combos,
                          attributes=drawn.attributes, levels=drawn.levels, grid=grid,
                          epsilon=1.0, sensitivity=1, neighbours="add-remove")
    fit = _noise_aware_fit(by_hand)
    path = tmp_path / "external.gpkg"
    with pytest.raises(InputError, match=r"metadata\['noise'\] = 'os-entropy' contradicts how "
                                         r"these releases were made \(noise 'external'\)"):
        write_release(path, [_drawn_like()], fit=fit, metadata={"noise": "os-entropy"})
    write_release(path, [_drawn_like()], fit=fit)
    info = read_release(path).info
    assert (info.noise, info.epsilon) == ("external", 1.0)


def test_a_noise_aware_fit_gives_its_epsilon_and_ledger(tmp_path):
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(2, 2), crs=CRS)
    counts = prepare(public_like(8), grid, attributes=["y"], levels={"y": [0, 1]})
    accountant = Accountant(1.0)
    with pytest.warns(PrivacyLeakWarning):
        fit = _noise_aware_fit(dp_counts(counts, 1.0, accountant, seed=3))
    path = tmp_path / "dp.gpkg"
    # the releases record no noise; the fit's seeded noise is said on writing and reading
    with pytest.warns(PrivacyLeakWarning, match="dp.gpkg is written with .* noise was drawn "
                                                "from a seed .* not differentially private"):
        write_release(path, [_drawn_like()], fit=fit)
    with pytest.warns(PrivacyLeakWarning, match="dp.gpkg holds .* noise was drawn from a seed"):
        info = read_release(path).info
    assert info.method == "paiva-dp" and info.epsilon == 1.0 and info.noise == "seeded"
    assert info.ledger == accountant.to_dict()
    assert info.model["noise_scale"] == 1.0
    # ε × noise scale is the sensitivity, a whole number: an ε edited down is found out
    set_metadata(path, "epsilon", 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(InputError, match=r"dp.gpkg: its metadata states epsilon 0.1, but its "
                                             r"model's noise scale 1 is sensitivity/epsilon"):
            read_release(path)


def test_a_seeded_release_cannot_be_written_as_private(tmp_path):
    """Seeded DP noise can be replayed: the file says so, and metadata cannot deny it."""
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(2, 2), crs=CRS)
    counts = prepare(public_like(8), grid, attributes=["y"], levels={"y": [0, 1]})
    with pytest.warns(PrivacyLeakWarning):
        seeded = _noise_aware_fit(dp_counts(counts, 1.0, seed=3))
    path = tmp_path / "dp.gpkg"
    with pytest.raises(InputError, match=r"metadata\['noise'\] = 'os-entropy' contradicts how "
                                         r"these releases were made \(noise 'seeded'\)"):
        write_release(path, [_drawn_like()], fit=seeded, metadata={"noise": "os-entropy"})
    with pytest.raises(InputError, match=r"metadata\['noise'\] must be one of \['external', "
                                         r"'os-entropy', 'seeded'\], got 'none'"):
        write_release(path, [_drawn_like()], fit=seeded, metadata={"noise": "none"})
    with pytest.raises(InputError, match="method 'paiva', made without differential privacy, "
                                         "and an epsilon, a noise or a ledger"):
        write_release(path, [public_like()], metadata={"method": "paiva", "noise": "seeded"})
    assert not path.exists()

    fresh = _noise_aware_fit(dp_counts(counts, 1.0))  # OS entropy: no warning anywhere
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        write_release(path, [_drawn_like()], fit=fresh)
        assert read_release(path).info.noise == "os-entropy"
    set_metadata(path, "noise", "replayed")
    with pytest.raises(InputError, match="metadata noise is 'replayed', not one of"):
        read_release(path, check_audit=False)
    set_metadata(path, "noise", "seeded")
    set_metadata(path, "method", "paiva")
    with pytest.raises(InputError, match="yet states an epsilon, a noise or a privacy ledger"):
        read_release(path, check_audit=False)


def test_a_version_2_file_without_noise_reads(tmp_path):
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like()], metadata={"epsilon": 1.0})
    set_metadata(path, "format_version", 2)
    got = read_release(path, check_audit=False)
    assert "noise" not in got.metadata and got.info.noise is None and got.info.epsilon == 1.0


def test_an_infinite_epsilon_reads_back(tmp_path):
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like()], metadata={"epsilon": float("inf")})
    got = read_release(path)
    assert got.metadata["epsilon"] == "inf" and got.info.epsilon == float("inf")
    assert metadata_from_info(got.info) == got.metadata


# ---------------------------------------------------------------------- ledger and size schema
@pytest.fixture(scope="module")
def dp_results():
    """Real ε-DP releases under the three size rules, one charged to a shared accountant with an
    uncapped budget and a parallel block (every part of Accountant.to_dict())."""
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(2, 2), crs=CRS)
    counts = prepare(public_like(8), grid, attributes=["y"], levels={"y": [0, 1]})
    accountant = Accountant(float("inf"))
    with accountant.parallel(label="regions"):
        accountant.spend(0.25, label="another release")
    run = {"m": 1, "levels": {"y": [0, 1]}, "n_iter": 60, "burn_in": 20, "thin": 2,
           "chains": 1, "progress": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", geosynth.errors.DataWarning)  # 8 records: mostly noise
        return [dp_release(counts, 1.0, accountant=accountant, **run),
                dp_release(counts, 1.0, n_public=8, **run),
                dp_release(counts, 1.0, max_records=5, **run)]


def test_the_ledger_and_size_geosynth_writes_read_back(tmp_path, dp_results):
    rules = [(result.info.size["rule"], result.info.size.get("cap_from"))
             for result in dp_results]
    assert rules == [("dp-estimate", "noisy total + 5 sd"), ("n_public", None),
                     ("dp-estimate", "max_records")]
    assert [block["composition"] for block in dp_results[0].info.ledger["blocks"]] == ["parallel"]
    for k, result in enumerate(dp_results):
        path = tmp_path / f"dp{k}.gpkg"
        write_release(path, result.releases, metadata=result.info)
        info = read_release(path).info
        assert info.ledger == json.loads(json.dumps(result.info.ledger))  # "inf": a JSON text
        assert info.size == result.info.size


@pytest.mark.parametrize(("key", "spoil", "message"), [
    ("ledger", lambda v: {**v, "certified_by": "IRB 2024"},
     r"'ledger' has unknown fields \['certified_by'\]"),
    ("ledger", lambda v: {**v, "spent": {**v["spent"], "note": "x"}},
     r"'ledger.spent' has unknown fields \['note'\]"),
    ("ledger", lambda v: {**v, "ledger": [{**v["ledger"][0], "approved": True}]},
     r"'ledger.ledger\[0\]' has unknown fields \['approved'\]"),
    ("ledger", lambda v: {**v, "spent": {"epsilon": -1.0, "delta": 0.0}},
     r"'ledger.spent.epsilon' must be a number >= 0, got a number -1.0"),
    ("ledger", lambda v: {**v, "spent": {"epsilon": "0.1", "delta": 0.0}},
     r"'ledger.spent.epsilon' must be a number >= 0, got text"),
    ("ledger", lambda v: {**v, "budget": {"epsilon": 1.0, "delta": 2}},
     r"'ledger.budget.delta' must be a number from 0 to 1"),
    ("ledger", lambda v: {**v, "version": True}, r"'ledger.version' must be an integer >= 0"),
    ("ledger", lambda v: {**v, "format": "my ledger"}, r"'ledger.format' must be one of"),
    ("ledger", lambda v: {**v, "blocks": [{**v["blocks"][0], "composition": "serial"}]},
     r"'ledger.blocks\[0\].composition' must be one of \['sequential', 'parallel'\]"),
    ("ledger", lambda v: {k: w for k, w in v.items() if k != "ledger"} | {"ledger": {}},
     r"'ledger.ledger' must be a list"),
    ("size", lambda v: {**v, "reviewed": "yes"}, r"'size' has unknown fields \['reviewed'\]"),
    ("size", lambda v: {**v, "rule": "exact"},
     r"'size.rule' must be one of \['dp-estimate', 'n_public'\], got text"),
    ("size", lambda v: {**v, "cap": "31"}, r"'size.cap' must be an integer >= 0, got text"),
    ("size", lambda v: {**v, "cap_from": "the true total"}, r"'size.cap_from' must be one of"),
    ("size", lambda v: {"rule": "n_public"}, r"'size' has missing fields \['n_public'\]"),
    ("size", lambda v: [v], r"'size' must be an object, got a list"),
])
def test_a_ledger_or_size_edited_by_hand_is_refused_by_key(tmp_path, dp_results, key, spoil,
                                                             message):
    """Both were any JSON object: a key added to the file was read, and printed by inspect."""
    path = tmp_path / "dp.gpkg"
    write_release(path, dp_results[0].releases, metadata=dp_results[0].info)
    assert not audit_path(path).exists()  # no audit file: the schema is the only check
    set_metadata(path, key, spoil(metadata_value(path, key)))
    with pytest.raises(InputError, match=rf"dp.gpkg: metadata {message}.*was edited"):
        read_release(path)


@pytest.mark.parametrize(("metadata", "message"), [
    ({"ledger": {"spent": {"epsilon": 1.0, "delta": 0.0}, "approved_by": "IRB"}},
     r"metadata 'ledger' has unknown fields \['approved_by'\].*Accountant"),
    ({"ledger": {"spent": {"epsilon": np.nan, "delta": 0.0}}},
     r"metadata 'ledger.spent.epsilon' must be a number >= 0, got null"),
    ({"size": {"rule": "n_public", "n_public": 4, "checked": True}},
     r"metadata 'size' has unknown fields \['checked'\].*'rule': 'n_public'"),
    ({"size": {"rule": "n_public", "n_public": "4"}},
     r"metadata 'size.n_public' must be an integer >= 0, got text"),
    ({"ledger": {"spent": [1.0]}}, r"metadata 'ledger.spent' must be an object, got a list"),
])
def test_a_ledger_or_size_outside_the_schema_is_not_written(tmp_path, metadata, message):
    path = tmp_path / "release.gpkg"
    with pytest.raises(InputError, match=message):
        write_release(path, [public_like()], metadata=metadata)
    assert names(tmp_path) == []


def test_a_ledger_that_spent_nothing_states_no_epsilon(tmp_path):
    """ε was taken from the ledger's spent total: 0 was written, and the file did not read."""
    path = tmp_path / "release.gpkg"
    ledger = {"spent": {"epsilon": 0.0, "delta": 0.0}}
    write_release(path, [public_like()], metadata={"ledger": ledger})
    info = read_release(path).info
    assert info.epsilon is None and info.ledger == ledger


def test_a_number_beyond_the_float_range_is_refused(tmp_path):
    """json reads 1e999 as inf, past the refusal of NaN and Infinity: ε read as infinite."""
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like()], metadata={"epsilon": 1.0})
    sql(path, ("UPDATE metadata SET value = '1e999' WHERE key = 'epsilon'", ()))
    with pytest.raises(InputError, match=r"the metadata value of 'epsilon' is not valid \(1e999 "
                                         r"is beyond the range of a float\)"):
        read_release(path)


def test_metadata_from_info_needs_the_file_fields():
    with pytest.raises(InputError, match="needs m and n_records"):
        metadata_from_info(ReleaseInfo(method="paiva"))
    with pytest.raises(InputError, match="must be a geosynth ReleaseInfo"):
        metadata_from_info({"method": "paiva"})


def test_writer_refuses_to_overwrite(tmp_path):
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like()], seeds={"synthesize": 1})
    before = path.read_bytes()
    audit_before = audit_path(path).read_bytes()
    with pytest.raises(InputError, match=r"release.gpkg exists; .*\(CLI: --overwrite\)"):
        write_release(path, [public_like(6)], seeds={"synthesize": 2})
    assert path.read_bytes() == before and audit_path(path).read_bytes() == audit_before

    write_release(path, [public_like(6)], overwrite=True)
    got = read_release(path)
    assert len(got.releases[0]) == 6
    # the audit file of the replaced release was replaced in the same transaction by one that
    # records no seeds and the SHA-256 of the new release
    record = json.loads(audit_path(path).read_text())
    assert record["seeds"] is None and got.audit == audit_path(path)
    assert record["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert stat.S_IMODE(os.stat(audit_path(path)).st_mode) == 0o600

    lone = tmp_path / "lone.gpkg"
    audit_path(lone).write_text("{}")
    for seeds in ({"synthesize": 1}, None):  # an audit file is never silently removed
        with pytest.raises(InputError, match=r"lone.gpkg.audit.json exists.*--overwrite"):
            write_release(lone, [public_like()], seeds=seeds)
    assert not lone.exists() and audit_path(lone).read_text() == "{}"


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
        if len(calls) == 3:  # what GDAL says when the disk fills up
            raise pyogrio.errors.FeatureError("failed to write: database or disk is full")
        real(frame, target, **kwargs)

    monkeypatch.setattr(pyogrio, "write_dataframe", fail_on_third_layer)
    with pytest.raises(OSError, match=r"cannot write .*release.gpkg: GDAL failed on layer "
                                      r"metadata \(.*disk is full\); check the free space"):
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
    with pytest.raises(InputError, match=r"broken.gpkg is not a GeoPackage \(or is damaged\)"):
        read_release(broken)
    edited = tmp_path / "edited.gpkg"
    points.to_file(edited, layer="synthetic_1", engine="pyogrio")
    pyogrio.write_dataframe(
        pd.DataFrame({"key": ["m"], "value": ["two"]}), edited, layer="metadata"
    )
    with pytest.raises(InputError, match="metadata value of 'm' is not valid .*not JSON"):
        read_release(edited)


def test_read_release_orders_layers_numerically(tmp_path):
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like(n) for n in range(2, 13)])
    got = read_release(path)
    assert [len(r) for r in got.releases] == list(range(2, 13))
    assert got.layers[:11] == [f"synthetic_{k}" for k in range(1, 12)]
    assert got.metadata["complete"]["n_layers"] == 12




# ---------------------------------------------------------------------- linkable output (#3)
def test_synthesize_output_of_a_default_index_input_is_refused(tmp_path, make_scenario_counts):
    """Row k of the internal output is record k; with a 0..n-1 input index it looks fresh."""
    scenario, grid, counts = make_scenario_counts(n=80, seed=4, shape=(4, 4), attributes=["y"])
    data = scenario.data  # the scenario's records carry the default index 0..n-1
    fit = PaivaModel().fit(counts, n_iter=40, burn_in=10, chains=1, seed=1, progress=False)
    (internal,) = synthesize(fit, data, m=1, seed=2)
    assert internal.index.equals(pd.RangeIndex(80))  # indistinguishable from a fresh index
    assert (internal["y"].to_numpy() == data["y"].to_numpy()).all()  # row k is record k
    (naive,) = naive_synthesize(data, grid, m=1, seed=3, columns=["y"])
    path = tmp_path / "release.gpkg"
    for release in (internal, internal.reset_index(drop=True)[["y", "geometry"]], naive):
        for original_index in (None, data.index):
            with pytest.raises(InputError, match=r"internal output of geosynth.synthesize"):
                write_release(path, [release], original_index=original_index)
    # a frame rebuilt without the marker, same length and order as the input: still refused
    rebuilt = gpd.GeoDataFrame(pd.DataFrame(internal), geometry="geometry", crs=internal.crs)
    rebuilt.attrs = {}
    for frame in (rebuilt, rebuilt.iloc[:-1].reset_index(drop=True)):  # a row dropped too
        with pytest.raises(InputError, match=r"has a default 0..n-1 index and is not the output "
                                             r"of geosynth.to_public.*original_index"):
            write_release(path, [frame], original_index=data.index)
    assert names(tmp_path) == []
    # the public form passes, and so does a DP release of the same size (drawn from noise)
    write_release(path, [to_public(internal, seed=5)], original_index=data.index)
    dp_like = public_like(80)
    dp_like.attrs = {"geosynth": {"method": "paiva-dp", "epsilon": 1.0}}
    write_release(tmp_path / "dp.gpkg", [with_record(dp_like)], original_index=data.index)
    assert read_release(path).m == 1
    # without original_index the unmarked frame (a file round trip drops attrs) is refused for
    # its columns, of which nothing records what they hold, and its points alone warned of
    with pytest.raises(InputError, match=r"release 1 \(synthetic_1\) holds no record of the "
                                         r"columns its synthesizer made .*record_columns"):
        write_release(tmp_path / "unchecked.gpkg", [rebuilt])
    with pytest.warns(PrivacyLeakWarning, match=r"not marked as shuffled by geosynth.to_public"
                                                r".*pass geosynth.to_public\(release\)"):
        write_release(tmp_path / "unchecked.gpkg", [rebuilt[["geometry"]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither the public form nor a DP release is
        write_release(tmp_path / "public.gpkg", [to_public(rebuilt[["geometry"]], seed=6)],
                      metadata={"method": "paiva"})  # rebuilt: its record is gone too
        write_release(tmp_path / "dp2.gpkg", [dp_like])


def test_the_public_form_of_a_baseline_is_refused(tmp_path, make_scenario_counts):
    # Naive keeps each record in its own cell, donut next to its own point, and both keep every
    # column of the input by default (an ID they now refuse; a record's other values they
    # keep): comparison only, never a release.
    scenario, grid, _ = make_scenario_counts(n=80, seed=4, shape=(4, 4), attributes=["y"])
    (naive,) = naive_synthesize(scenario.data, grid, m=1, seed=3)
    (donut,) = donut_mask(scenario.data, 10.0, 50.0, m=1, seed=3)
    for method, release in (("naive", naive), ("donut", donut)):
        public = to_public(release, seed=1)
        with pytest.raises(InputError, match=rf"release 1 \(synthetic_1\) was made by the "
                                             rf"{method} baseline.*not for publication"):
            write_release(tmp_path / "release.gpkg", [public])
    assert names(tmp_path) == []


def test_points_of_unknown_origin_are_warned_of(tmp_path, make_scenario_counts):
    # to_public(original) passed every check: the file held every confidential point exactly.
    scenario, grid, _ = make_scenario_counts(n=80, seed=4, shape=(4, 4), attributes=["y"])
    with pytest.raises(InputError, match=r"holds no record of the columns"):  # its y too
        write_release(tmp_path / "leak.gpkg", [to_public(scenario.data[["y", "geometry"]])],
                      grid=grid)
    original = to_public(scenario.data[["geometry"]], seed=1)
    with pytest.warns(PrivacyLeakWarning, match=r"leak.gpkg: nothing records how its points "
                                                r"were made .*pass fit="):
        write_release(tmp_path / "leak.gpkg", [original], grid=grid)
    # releases of a geosynth synthesizer keep their method through to_public: no warning
    fit = PaivaModel().fit(make_scenario_counts(n=80, seed=4, shape=(4, 4),
                                                attributes=["y"])[2],
                           n_iter=40, burn_in=10, chains=1, seed=1, progress=False)
    public = [to_public(r, seed=2) for r in synthesize(fit, scenario.data, m=1, seed=2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        write_release(tmp_path / "made.gpkg", public, grid=grid)
    assert read_release(tmp_path / "made.gpkg").metadata["method"] == "paiva"
    # fit= named the method: the original points were written as the fit's, with no warning
    with pytest.raises(InputError, match=r"release 2 \(synthetic_2\) carries no record of the "
                                         r"synthesizer .*pass geosynth.to_public\(r\)"):
        write_release(tmp_path / "fit.gpkg",
                      [*public, with_record(to_public(scenario.data[["y", "geometry"]], seed=1))],
                      fit=fit)
    assert not (tmp_path / "fit.gpkg").exists()
    # the record survives what an analyst does to a release: select, rename, reproject
    edited = public[0][["y", "geometry"]].rename(columns={"y": "y"}).to_crs(grid.crs)
    write_release(tmp_path / "edited.gpkg", [edited], fit=fit)


def test_to_public_marks_its_output_and_read_release_too(tmp_path, fitted):
    _, internal, public = fitted
    assert internal[0].attrs[LINKED_ATTR] is True
    # the marker of shuffled rows, how the points were made (no release number or draw), and
    # the columns the synthesizer made (the model's attributes and continuous column), each
    # with the digest of its values, which the shuffle keeps
    made = {c: column_digest(internal[0][c]) for c in ["y", "x1", "x2", "z"]}
    assert public[0].attrs == {PUBLIC_ATTR: True, "geosynth": {"method": "paiva"},
                               COLUMNS_ATTR: made, POINTS_ATTR: points_record(internal[0])}
    assert internal[0].attrs[COLUMNS_ATTR] == made
    path = tmp_path / "release.gpkg"
    write_release(path, public)
    again = read_release(path).releases  # a published file can be written again
    write_release(tmp_path / "copy.gpkg", again, original_index=pd.RangeIndex(300))


# ---------------------------------------------------------------------- seeds in metadata (#4)
def test_metadata_with_generator_state_and_seed_notes_is_refused(tmp_path):
    path = tmp_path / "release.gpkg"
    with pytest.raises(InputError, match=r"metadata\['rng_state'\]: the release metadata "
                                         r"follows geosynth's schema.*allowed keys: data, "
                                         r"epsilon, ledger, method, n_public, noise, size; "
                                         r"put free "
                                         r"text in notes="):
        write_release(path, [public_like()], metadata={"rng_state": 123456789, "notes": "seed=42"})
    with pytest.raises(InputError, match=r"metadata\['notes'\] is computed.*pass free text as "
                                         r"notes="):
        write_release(path, [public_like()], metadata={"notes": "seed=42"})
    with pytest.raises(InputError, match=r"notes contains 'seed=4', which looks like a seed"):
        write_release(path, [public_like()], notes="seed=42")
    assert names(tmp_path) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"notes": "made with rng state: 7"}, r"notes contains 'rng state: 7'"),
        ({"notes": "run state=7"}, r"notes contains 'state=7'"),
        ({"notes": "Random_State=3"}, r"notes contains 'Random_State=3'"),
        ({"notes": "entropy 99"}, r"notes contains 'entropy 9'"),
        ({"notes": f"run {SYNTH_SEED} of the study"}, r"notes contains one of the seeds given"),
        ({"metadata": {"data": f"sample {SYNTH_SEED}"}}, r"metadata\['data'\] contains one of"),
        ({"metadata": {"ledger": {"budget": {"epsilon": SYNTH_SEED}}}},
         r"metadata\['ledger'\]\['budget'\]\['epsilon'\] holds one of the seeds"),
        ({"metadata": {"ledger": {"rows": [{"spawn_key": [1]}]}}},
         r"metadata\['ledger'\]\['rows'\]\[0\] has the key 'spawn_key'"),
        ({"metadata": {"ledger": {"bit_generator": "PCG64"}}}, r"has the key 'bit_generator'"),
        ({"metadata": {"method": "paiva seed 5"}}, r"metadata\['method'\] contains 'seed 5'"),
    ],
)
def test_seeds_are_found_in_values_not_only_in_key_names(tmp_path, kwargs, message):
    path = tmp_path / "release.gpkg"
    with pytest.raises(InputError, match=message + r".*must not be published.*seeds="):
        write_release(path, [public_like()], seeds={"synthesize": SYNTH_SEED}, **kwargs)
    assert names(tmp_path) == []


def test_metadata_values_are_type_checked_and_ordinary_notes_pass(tmp_path):
    path = tmp_path / "release.gpkg"
    for metadata, message in [
        ({"epsilon": "1"}, r"metadata\['epsilon'\] must be a number > 0"),
        ({"epsilon": -1.0}, r"metadata\['epsilon'\] must be a number > 0"),
        ({"method": 3}, r"metadata\['method'\] must be a str"),
        ({"ledger": [1]}, r"metadata\['ledger'\] must be a dict"),
        ({"n_public": 2.5}, r"metadata\['n_public'\] must be an int >= 0"),
        ({3: "x"}, r"metadata keys must be str"),
    ]:
        with pytest.raises(InputError, match=message):
            write_release(path, [public_like()], metadata=metadata)
    with pytest.raises(InputError, match=r"notes must be a str"):
        write_release(path, [public_like()], notes=["x"])
    notes = "Stops of 2019 in district 4 (United States 2019); 12 of 300 states were dropped."
    write_release(path, [public_like()], notes=notes, seeds={"synthesize": 7},
                  metadata={"data": "police stops, 2019", "n_public": 4})
    meta = read_release(path).metadata
    assert meta["notes"] == notes and meta["data"] == "police stops, 2019"
    assert meta["n_public"] == 4


# ---------------------------------------------------------------------- audit file mode (#5)
def test_audit_file_is_created_0600_even_when_killed_before_the_commit(tmp_path):
    """A kill after the audit file is written but before the commit leaves it 0600 in 0700."""
    run_killed("""
    from geosynth._atomic import AtomicOutputs
    AtomicOutputs.commit = lambda self: os._exit(9)
    write_release("release.gpkg", [public_like()], seeds={"synthesize": 918273645})
    """, cwd=tmp_path, umask=0)
    [folder] = [p for p in tmp_path.iterdir() if p.name.startswith(".release.gpkg.audit.json.")]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    staged = folder / "release.gpkg.audit.json"
    assert json.loads(staged.read_text())["seeds"] == {"synthesize": 918273645}
    assert stat.S_IMODE(staged.stat().st_mode) == 0o600
    assert not (tmp_path / "release.gpkg").exists()


# ---------------------------------------------------------------------- leftovers (#10)
def test_a_killed_write_leaves_nothing_usable_and_the_next_write_cleans_up(tmp_path):
    run_killed("""
    import pyogrio
    real = pyogrio.write_dataframe
    def die_before_metadata(frame, path, layer, **kwargs):
        if layer == "metadata":
            os._exit(9)
        real(frame, path, layer=layer, **kwargs)
    pyogrio.write_dataframe = die_before_metadata
    write_release("release.gpkg", [public_like(5), public_like(6)], seeds={"synthesize": 3})
    """, cwd=tmp_path)
    assert not (tmp_path / "release.gpkg").exists()
    assert not audit_path(tmp_path / "release.gpkg").exists()
    leftovers = [p for p in tmp_path.iterdir() if "geosynth-staging" in p.name]
    assert leftovers
    [partial] = [p for p in tmp_path.rglob("release.gpkg") if p.stat().st_size > 0]
    assert pyogrio.list_layers(partial)[:, 0].tolist() == ["synthetic_1", "synthetic_2"]
    # the partial file, even under the old-style temporary name, is refused
    old_style = tmp_path / ".release-k3x_9q2a.gpkg"
    old_style.write_bytes(partial.read_bytes())
    journal = tmp_path / ".release-k3x_9q2a.gpkg-journal"
    journal.write_bytes(b"")
    with pytest.raises(InputError, match=r"has SQLite's \.release-k3x_9q2a.gpkg-journal beside"):
        read_release(old_style)  # before anything opens it (it would replay the journal)
    journal.rename(tmp_path / "aside")
    with pytest.raises(InputError, match=r"\.release-k3x_9q2a.gpkg is incomplete or not a "
                                         r"geosynth release: it has no metadata table"):
        read_release(old_style)
    (tmp_path / "aside").rename(journal)
    unrelated = tmp_path / ".other-k3x_9q2a.gpkg"
    unrelated.write_bytes(b"keep")

    # The next write removes the staging folder of the killed one, and nothing that only looks
    # like a temporary: files named like the old single-file writer's may be the user's own
    # (".release-20240101.gpkg", a dated backup).
    write_release(tmp_path / "release.gpkg", [public_like()], seeds={"synthesize": 3})
    assert names(tmp_path) == [".other-k3x_9q2a.gpkg", ".release-k3x_9q2a.gpkg",
                               ".release-k3x_9q2a.gpkg-journal", "release.gpkg",
                               "release.gpkg.audit.json"]
    assert read_release(tmp_path / "release.gpkg").m == 1


def test_a_file_without_the_complete_entry_is_refused(tmp_path):
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like(), public_like()])
    sql(path, "DELETE FROM metadata WHERE key = 'complete'")
    with pytest.raises(InputError, match=r"release.gpkg is incomplete or not a geosynth release: "
                                         r"its metadata has no 'complete' entry"):
        read_release(path)
    write_release(path, [public_like()], overwrite=True)
    sql(path, ("INSERT INTO metadata (key, value) VALUES (?, ?)", ("data", '"late"')))
    with pytest.raises(InputError, match=r"the 'complete' entry is not the last row"):
        read_release(path)
    write_release(path, [public_like()], overwrite=True)
    set_metadata(path, "format_version", 1)  # geosynth 0.1 wrote no mark of completeness
    with pytest.raises(InputError, match=r"its format version is 1, not 3 \(releases of "
                                         r"geosynth 0.1"):
        read_release(path)
    set_metadata(path, "format_version", 5)  # 4 records limits
    with pytest.raises(InputError, match=r"format version 5; this geosynth reads version 4: "
                                         r"upgrade geosynth"):
        read_release(path)


def test_a_release_file_created_meanwhile_is_not_replaced(tmp_path, monkeypatch):
    """The final step refuses a target that appeared during the write (no --overwrite)."""
    path = tmp_path / "release.gpkg"
    real = pyogrio.write_dataframe

    def another_run_finishes_first(frame, target, layer, **kwargs):
        real(frame, target, layer=layer, **kwargs)
        if layer == "metadata" and not path.exists():
            path.write_bytes(b"the other run's release")

    monkeypatch.setattr(pyogrio, "write_dataframe", another_run_finishes_first)
    with pytest.raises(InputError, match=r"release.gpkg was created by another process"):
        write_release(path, [public_like()], seeds={"synthesize": 3})
    assert path.read_bytes() == b"the other run's release"
    assert names(tmp_path) == ["release.gpkg"]


# ---------------------------------------------------------------------- audit and release (#11)
def test_kill_between_audit_and_release_is_detected(tmp_path):
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like(4)], seeds={"synthesize": 1})
    old_release = path.read_bytes()
    run_killed("""
    real = os.replace
    def die_before_the_release(source, target):
        if str(target).endswith("release.gpkg"):
            os._exit(9)
        real(source, target)
    os.replace = die_before_the_release
    write_release("release.gpkg", [public_like(7)], seeds={"synthesize": 2}, overwrite=True)
    """, cwd=tmp_path)
    # the audit file was moved first: the old release stands beside the new audit file
    assert path.read_bytes() == old_release
    assert len(read_release(path, check_audit=False).releases[0]) == 4
    with pytest.raises(InputError, match=r"the audit file release.gpkg.audit.json does not belong "
                                         r"to this release: a write of release.gpkg was killed "
                                         r"while .* write the release again, .*do not move or "
                                         r"delete either file"):
        read_release(path)
    with pytest.raises(InputError, match="does not belong to this release"):
        verify_audit(path)
    # "move it away, and write the release again" lost the earlier release's seeds, which
    # waited in the dead writer's staging folder; the next write of the file puts them back
    remove_stale_staging(path)
    assert json.loads(audit_path(path).read_text())["seeds"] == {"synthesize": 1}
    assert len(read_release(path).releases[0]) == 4


def test_kill_before_a_new_release_leaves_its_audit_file_alone(tmp_path):
    # Without an older release, the kill leaves the (private) audit file and no release: the
    # seeds are not lost, nothing is published, and a plain rerun is refused, naming the file.
    path = tmp_path / "release.gpkg"
    run_killed("""
    real = os.link
    def die_before_the_release(source, target, **kwargs):
        if str(target).endswith("release.gpkg"):
            os._exit(9)
        real(source, target, **kwargs)
    os.link = die_before_the_release
    write_release("release.gpkg", [public_like(7)], seeds={"synthesize": 2})
    """, cwd=tmp_path)
    assert not path.exists()
    assert json.loads(audit_path(path).read_text())["seeds"] == {"synthesize": 2}
    with pytest.raises(InputError, match=r"release.gpkg.audit.json exists"):
        write_release(path, [public_like(7)], seeds={"synthesize": 2})


@pytest.mark.parametrize("seeds", ["abc", [1, 2], 7])
def test_an_audit_file_whose_seeds_are_no_mapping_is_damaged(tmp_path, seeds):
    # Edited by hand, its SHA-256 still the release's: inspect said it held the seeds.
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like(4)], seeds={"synthesize": 3})
    record = json.loads(audit_path(path).read_text())
    assert verify_audit(path)["seeds"] == {"synthesize": 3}
    audit_path(path).write_text(json.dumps({**record, "seeds": seeds}))
    with pytest.raises(InputError, match=r"release.gpkg.audit.json is damaged or not a geosynth "
                                         r"audit file.*\(its seeds are not a mapping"):
        verify_audit(path)


@pytest.mark.parametrize("kind", ["device", "pipe"])
def test_an_audit_file_that_is_no_regular_file_is_refused_at_once(tmp_path, kind):
    # Its size is 0 to stat(): an unbounded read would fill the memory (/dev/zero) or wait
    # forever for a writer (a pipe).
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like(4)])
    if kind == "device":
        audit_path(path).symlink_to("/dev/zero")
    else:
        os.mkfifo(audit_path(path))
    with pytest.raises(InputError, match=r"release.gpkg.audit.json is damaged or not a geosynth "
                                         r"audit file.*not a regular file \(a pipe or a device"):
        verify_audit(path)
    os.mkfifo(tmp_path / "pipe.gpkg")
    with pytest.raises(InputError, match=r"pipe.gpkg' is not a regular file"):
        read_release(tmp_path / "pipe.gpkg")


def test_audit_file_of_another_release_is_detected(tmp_path):
    first, second = tmp_path / "a.gpkg", tmp_path / "b.gpkg"
    write_release(first, [public_like(4)], seeds={"synthesize": 1})
    write_release(second, [public_like(5)], seeds={"synthesize": 2})
    assert verify_audit(first)["seeds"] == {"synthesize": 1}
    audit_path(second).write_bytes(audit_path(first).read_bytes())
    with pytest.raises(InputError, match=r"b.gpkg.audit.json does not belong to this release"):
        read_release(second)
    audit_path(second).write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match=r"b.gpkg.audit.json is damaged or not a geosynth audit"):
        read_release(second)
    audit_path(second).unlink()
    assert read_release(second).audit is None and verify_audit(second) is None


def test_write_release_into_the_callers_transaction(tmp_path):
    """outputs=: staged (audit first, then release), moved by the caller's commit."""
    path, report = tmp_path / "release.gpkg", tmp_path / "report.md"
    with AtomicOutputs() as outputs:
        outputs.add(report, private=True).write_text("internal")
        write_release(path, [public_like()], seeds={"synthesize": 3}, outputs=outputs)
        assert outputs.targets == [report, audit_path(path), path]
        assert not path.exists()  # nothing is in place before the caller commits
    assert read_release(path).audit == audit_path(path)
    assert stat.S_IMODE(audit_path(path).stat().st_mode) == 0o600

    other = tmp_path / "other.gpkg"
    with pytest.raises(KeyboardInterrupt), AtomicOutputs() as outputs:
        write_release(other, [public_like()], seeds={"synthesize": 3}, outputs=outputs)
        raise KeyboardInterrupt  # e.g. the caller's next output fails or Ctrl-C
    assert names(tmp_path) == ["release.gpkg", "release.gpkg.audit.json", "report.md"]

    with AtomicOutputs() as outputs:  # a failed write_release leaves nothing to commit
        with pytest.raises(InputError, match="internal column"):
            write_release(other, [public_like(_x=[1, 2, 3, 4])], outputs=outputs)
    with AtomicOutputs() as outputs, pytest.raises(InputError, match="--overwrite"):
        write_release(path, [public_like()], outputs=outputs)
    with AtomicOutputs() as outputs, pytest.raises(InputError, match="the outputs decide"):
        write_release(other, [public_like()], overwrite=True, outputs=outputs)
    assert names(tmp_path) == ["release.gpkg", "release.gpkg.audit.json", "report.md"]


# ---------------------------------------------------------------------- tampered files (#12)
@pytest.fixture
def release_of_three(tmp_path):
    path = tmp_path / "release.gpkg"
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(5, 5), crs=CRS)
    write_release(path, [public_like(4), public_like(5), public_like(6)], grid=grid,
                  metadata={"method": "paiva"})
    assert read_release(path).m == 3
    return path


def _rename_key_column(path):
    sql(path, "ALTER TABLE metadata RENAME COLUMN key TO name")


def _nest_deeply(path):
    sql(path, ("UPDATE metadata SET value = ? WHERE key = 'notes'",
               ("[" * 200_000 + "]" * 200_000,)))


def _non_spatial_second_release(path):
    drop_layer(path, "synthetic_2")
    pyogrio.write_dataframe(pd.DataFrame({"y": [0, 1, 0, 1, 0]}), path, layer="synthetic_2")


def _second_release_in_3d(path):
    drop_layer(path, "synthetic_2")
    frame = public_like(5)
    frame.geometry = gpd.points_from_xy(frame.geometry.x, frame.geometry.y, np.arange(5.0))
    pyogrio.write_dataframe(frame, path, layer="synthetic_2")


def _duplicate_key(path):
    sql(path, "INSERT INTO metadata (key, value) VALUES ('m', '2')")


def _empty_release(path):
    sql(path, "DELETE FROM synthetic_2")


def _stray_layer(path):
    pyogrio.write_dataframe(public_like(3), path, layer="synthetic_01")


def _attributes_as_text(path):
    set_metadata(path, "model", {
        "name": "PaivaModel", "beta_prior": None, "beta_sampler": "slice",
        "effects": "attribute", "chains": 1, "draws_per_chain": 10, "burn_in": 5, "thin": 1,
        "noise_scale": None, "attributes": "y", "continuous": None, "combinations": ["y=0"],
    })


def _model(**changes):
    """A model description of the schema, with ``changes``."""
    return {
        "name": "PaivaModel", "beta_prior": None, "beta_sampler": "slice",
        "effects": "attribute", "chains": 1, "draws_per_chain": 10, "burn_in": 5, "thin": 1,
        "noise_scale": None, "attributes": ["y"], "continuous": None,
        "combinations": ["y=0", "y=1"],
        **changes,
    }


def _covariate_not_a_name(path):
    set_metadata(path, "model", _model(continuous=["z1", 2], beta_prior=["normal", "icar"]))


def _covariates_as_number(path):
    set_metadata(path, "model", _model(continuous=3))


def _wrong_type(path):
    set_metadata(path, "n_records", [4, "5", 6])


def _no_grid_rows(path):
    sql(path, "DELETE FROM grid")


def _grid_in_degrees(path):
    grid = pyogrio.read_dataframe(path, layer="grid").set_crs("EPSG:4326", allow_override=True)
    drop_layer(path, "grid")
    pyogrio.write_dataframe(grid, path, layer="grid")


def _grid_of_points(path):
    grid = pyogrio.read_dataframe(path, layer="grid")
    grid.geometry = grid.geometry.centroid
    drop_layer(path, "grid")
    pyogrio.write_dataframe(grid, path, layer="grid")


def _grid_with_z(path):
    """Each cell given a Z value by hand (a count per cell would travel unchecked)."""
    grid = pyogrio.read_dataframe(path, layer="grid")
    grid.geometry = shapely.force_3d(np.asarray(grid.geometry.array), z=7.0)
    drop_layer(path, "grid")
    pyogrio.write_dataframe(grid, path, layer="grid")


def _grid_column_added(name):
    """A column the writer never gives the grid layer (record ids, coordinates), added by hand."""
    def tamper(path):
        sql(path, f"ALTER TABLE grid ADD COLUMN {name} TEXT")
    return tamper


def _column_added(name):
    """A column the writer refuses, added to the second release by hand (no audit file here)."""
    def tamper(path):
        sql(path, f"ALTER TABLE synthetic_2 ADD COLUMN {name} TEXT")
    return tamper


def _retyped(column):
    """The second release rewritten with ``column`` as text, as a spreadsheet round trip does."""
    def tamper(path):
        frame = pyogrio.read_dataframe(path, layer="synthetic_2")
        frame[column] = frame[column].astype(str)
        pyogrio.write_dataframe(frame, path, layer="synthetic_2")
    return tamper


def _third_without(column):
    def tamper(path):
        frame = pyogrio.read_dataframe(path, layer="synthetic_3").drop(columns=column)
        pyogrio.write_dataframe(frame, path, layer="synthetic_3")
    return tamper


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        # A layer whose attribute became text shared no combination with the original, and
        # evaluate measured it as holding no record of any (exit 0, half of the data used).
        (_retyped("y"), r"release.gpkg: its release layers differ: column 'y' is numeric in "
                        r"'synthetic_1' but text in 'synthetic_2'; geosynth writes every release "
                        r"layer with the same columns and column kinds, so the file was edited "
                        r"after it was written: do not publish it, and write the release again$"),
        (_column_added("note"), r"its release layers differ: 'synthetic_2' has \['note'\], "
                                r"which 'synthetic_1' lacks; .* was edited after it was written"),
        (_third_without("y"), r"its release layers differ: 'synthetic_3' lacks \['y'\]; .*"
                              r"edited after it was written"),
        (_rename_key_column, r"its metadata table has columns \['name', 'value'\] instead of "
                             r"key, value"),
        (_nest_deeply, r"metadata value of 'notes' is not valid \(it is nested more than 32"),
        (_non_spatial_second_release, r"its layer 'synthetic_2' is a table, not a point layer"),
        (_second_release_in_3d, r"its layer 'synthetic_2' has 5 missing, empty, non-finite, 3-D"),
        (lambda path: drop_layer(path, "metadata"), r"incomplete.*it has no metadata table"),
        (lambda path: drop_layer(path, "synthetic_3"),
         r"its metadata lists 5 layers and \['synthetic_3'\] are missing"),
        (_duplicate_key, r"the metadata key 'm' appears 2 times"),
        (_empty_release, r"its layer 'synthetic_2' has 0 rows but its metadata records 5"),
        (_stray_layer, r"it has layers that the release does not list: \['synthetic_01'\].*only "
                       r"synthetic_1 .. synthetic_3 are releases"),
        (_attributes_as_text, r"metadata 'model.attributes' must be a list, got text \"y\""),
        (_wrong_type, r"metadata 'n_records\[1\]' must be an integer >= 0, got text \"5\""),
        (_covariate_not_a_name, r"metadata 'model.continuous\[1\]' must be text, got a number 2"),
        (_covariates_as_number, r"metadata 'model.continuous' must be text, got a number 3"),
        (lambda path: set_metadata(path, "format", "other"), r"is not a geosynth release: its "
                                                             r"metadata format is \"other\""),
        (lambda path: set_metadata(path, "m", 2), r"its metadata says m = 2"),
        (lambda path: set_metadata(path, "m", 10**10), r"its metadata says m = 10000000000"),
        (lambda path: set_metadata(path, "epsilon", 0.5),
         r"method 'paiva', made without differential privacy, yet states an epsilon"),
        (lambda path: set_metadata(path, "model", _model(noise_scale=1.0)),
         r"its model was fitted to noisy counts \(noise_scale\), a differentially private "
         r"release, yet its metadata says method 'paiva'"),
        (lambda path: set_metadata(path, "crs", "EPSG:4326"),
         r"its layer 'synthetic_1' is in EPSG:31983, but its metadata records EPSG:4326"),
        (_no_grid_rows, r"its grid layer has 0 cells but its metadata records 25"),
        (_grid_in_degrees, r"its grid layer is in EPSG:4326, but its releases in EPSG:31983"),
        (_grid_of_points, r"its grid layer has 25 cells that are not polygons"),
        (_grid_with_z, r"its grid layer has 25 cells with Z or M coordinates, which geosynth "
                       r"never writes"),
        (_grid_column_added("record_index"), r"release.gpkg: its grid layer has columns "
                                             r"\['record_index'\], which geosynth never writes "
                                             r"there, so the file was edited after it was"),
        (_grid_column_added("x_original"), r"its grid layer has columns \['x_original'\]"),
        (lambda path: sql(path, "INSERT INTO metadata (key, value) VALUES ('extra', '1')"),
         r"the 'complete' entry is not the last row"),
        (_column_added("original_index"), r"release.gpkg: its layer 'synthetic_2' has a column "
                                          r"'original_index', which identifies records.*was "
                                          r"edited after it was written: do not publish it"),
        (_column_added("_x"), r"its layer 'synthetic_2' has an internal column '_x'"),
    ],
)
def test_tampered_release_files_are_refused_with_one_message(release_of_three, tamper, message):
    tamper(release_of_three)
    with pytest.raises(InputError, match=message) as caught:
        read_release(release_of_three)
    assert "\n" not in str(caught.value)


def test_control_characters_from_the_file_are_not_echoed(release_of_three):
    pyogrio.write_dataframe(public_like(2), release_of_three, layer="evil\x1b[2J\x9b1m")
    with pytest.raises(InputError, match=r"'evil\?\[2J\?1m'") as caught:
        read_release(release_of_three)
    assert not set("\x1b\x9b") & set(str(caught.value))
    assert printable("a\x1b[31mb\x07c\x7fd\u202ee\n") == "a?[31mb?c?d?e?"


def test_an_empty_release_layer_recorded_as_empty_is_read(tmp_path):
    """An ε-DP release may hold no records; the metadata says so and the file is consistent."""
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like(3), public_like(0)])
    got = read_release(path)
    assert [len(r) for r in got.releases] == [3, 0] and got.metadata["n_records"] == [3, 0]


def test_releases_of_other_columns_are_refused_before_writing(tmp_path):
    # The reader refuses such a file as edited; the writer must not make one.
    path = tmp_path / "release.gpkg"
    for second, match in [(public_like(3).assign(y=["0", "1", "0"]),
                           r"column 'y' is numeric in release 1 \(synthetic_1\) but text in "
                           r"release 2 \(synthetic_2\)"),
                          (public_like(3, z=[1.5, 2.5, 3.5]),
                           r"release 2 \(synthetic_2\) has \['z'\], which release 1 "
                           r"\(synthetic_1\) lacks")]:
        with pytest.raises(InputError, match=rf"the releases differ in their columns: {match}; "
                                             r"the releases of one file must have the same "
                                             r"columns of the same kinds"):
            write_release(path, [public_like(3), second])
        assert not path.exists()
    # Numbers stored as int in one release and as float in another are one kind.
    write_release(path, [public_like(3), with_record(public_like(3).assign(y=[0.0, 1.0, 0.5]))])
    assert [len(r) for r in read_release(path).releases] == [3, 3]


def test_an_empty_release_layer_is_not_compared_by_the_types_of_its_columns(tmp_path):
    # pandas types an empty column as it likes ([] is float): the layer holds no value.
    path = tmp_path / "release.gpkg"
    empty = public_like(0, kind=[])
    assert empty["kind"].dtype.kind == "f"
    write_release(path, [public_like(3, kind=["a", "b", "a"]), empty])
    got = read_release(path)
    assert [len(r) for r in got.releases] == [3, 0]
    assert list(got.releases[1].columns) == ["y", "kind", "geometry"]


@pytest.mark.parametrize(("continuous", "beta_prior"),
                         [("z", "icar"), (["z1", "z2"], ["normal", "icar"]), (None, None)])
def test_model_metadata_holds_one_covariate_or_a_list(release_of_three, continuous, beta_prior):
    """Files of one continuous column (a str, as before) and of several (a list) both read."""
    set_metadata(release_of_three, "model", _model(continuous=continuous, beta_prior=beta_prior))
    model = read_release(release_of_three).metadata["model"]
    assert model["continuous"] == continuous and model["beta_prior"] == beta_prior


@pytest.mark.parametrize(
    ("columns", "match"),
    [
        ({"Y": [1, 0, 1]}, r"columns 'y' and 'Y', which a GeoPackage \(SQLite\) takes for one"),
        ({"geom": [1, 2, 3]}, r"a column 'geom', a name the GeoPackage layer uses for itself"),
        ({"FID": [1, 2, 3]}, r"a column 'FID', which identifies records"),
        ({"Cell ID": [1, 2, 3]}, r"a column 'Cell ID', which identifies records"),
        ({" record-index ": [1, 2, 3]}, r"a column ' record-index ', which identifies records"),
        ({"c": np.array([1j, 2, 3])}, r"column 'c' holds complex numbers"),
        ({"u": np.array([2**64 - 1, 1, 2], dtype=np.uint64)}, r"column 'u' holds integers beyond"),
        # Cut at the NUL, "zone\x00north" and "zone\x00south" were read back as one level.
        ({"g": np.array(["zone\x00north", "zone\x00south", "zone\x00south"], dtype=object)},
         r"column 'g' has 3 text value\(s\) holding a NUL character"),
        ({"a\x00b": [1, 0, 1]}, r"a column name 'a\\x00b' holding a NUL character"),
        # a file name decoded with surrogateescape: a bare UnicodeEncodeError of pyarrow
        ({"g": pd.Series(["a\udcff", "b", "c"], dtype=object)}, r"text that is not UTF-8"),
        # pyogrio's NotImplementedError named no column
        ({"d": pd.to_timedelta([1, 2, 3], unit="D")}, r"column 'd' holds durations"),
    ],
)
def test_columns_a_geopackage_cannot_hold_are_refused_before_writing(tmp_path, columns, match):
    # GDAL failed on them mid-write, with advice to check the free space, or raw errors.
    path = tmp_path / "release.gpkg"
    with pytest.raises(InputError, match=match):
        write_release(path, [public_like(3, **columns)])
    assert not path.exists()


def test_a_folder_of_the_path_that_is_a_file_is_named(tmp_path):
    (tmp_path / "cases.gpkg").write_bytes(b"the user's data")
    with pytest.raises(InputError, match=r"cases.gpkg is a file, not a folder"):
        write_release(tmp_path / "cases.gpkg" / "rel.gpkg", [public_like()], overwrite=True)
    assert (tmp_path / "cases.gpkg").read_bytes() == b"the user's data"



def test_lattice_gap_is_recorded_and_files_written_before_it_still_read(release_of_three):
    lattice = metadata_value(release_of_three, "lattice")
    assert lattice["kind"] == "square" and lattice["gap"] is None  # only areal lattices have one
    older = {key: value for key, value in lattice.items()
             if key not in ("gap", "cut_links", "exposure")}
    set_metadata(release_of_three, "lattice", older)
    assert "gap" not in read_release(release_of_three).metadata["lattice"]
    set_metadata(release_of_three, "lattice", {**lattice, "gap": "2 m"})
    with pytest.raises(InputError, match=r"metadata 'lattice.gap' must be a number, got text"):
        read_release(release_of_three)


def test_links_cut_by_barriers_are_recorded_and_files_written_before_them_still_read(
        release_of_three):
    lattice = metadata_value(release_of_three, "lattice")
    assert lattice["cut_links"] == 0  # a lattice as built
    before = {key: value for key, value in lattice.items() if key not in ("cut_links",
                                                                         "exposure")}
    set_metadata(release_of_three, "lattice", before)
    assert "cut_links" not in read_release(release_of_three).metadata["lattice"]
    set_metadata(release_of_three, "lattice", {**lattice, "cut_links": 1.5})
    with pytest.raises(InputError, match=r"metadata 'lattice.cut_links' must be an integer"):
        read_release(release_of_three)


def test_the_exposure_is_recorded_and_files_written_before_it_still_read(release_of_three):
    lattice = metadata_value(release_of_three, "lattice")
    assert lattice["exposure"] == "habitable fraction"
    before = {key: value for key, value in lattice.items() if key != "exposure"}
    set_metadata(release_of_three, "lattice", before)
    assert "exposure" not in read_release(release_of_three).metadata["lattice"]
    set_metadata(release_of_three, "lattice", {**lattice, "exposure": 1})
    with pytest.raises(InputError, match=r"metadata 'lattice.exposure' must be"):
        read_release(release_of_three)


# ---------------------------------------------------------------------- seeds spelled otherwise
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"metadata": {"size": {str(SYNTH_SEED): 1}}},
         r"metadata\['size'\] has a key that is one of the seeds"),
        ({"metadata": {"size": {"rule": [["seed", 42]]}}},
         r"metadata\['size'\]\['rule'\]\[0\]\[0\] is 'seed' followed by a number"),
        ({"metadata": {"ledger": {"rows": ["rng_seed", "42"]}}}, r"is 'rng_seed' followed by"),
        ({"notes": "run 918,273,645"}, r"notes contains one of the seeds given"),
        ({"notes": "run 918_273_645"}, r"notes contains one of the seeds given"),
        ({"notes": "run 918 273 645"}, r"notes contains one of the seeds given"),
        ({"notes": f"run {hex(SYNTH_SEED)}"}, r"notes contains one of the seeds given"),
        ({"notes": "run 9.18273645e8"}, r"notes contains one of the seeds given"),
        ({"metadata": {"size": {"ｓｅｅｄ": 5}}}, r"has the key 'ｓｅｅｄ', which names a seed"),
        ({"metadata": {"size": {"s\u0435ed": 5}}}, r"which names a seed"),  # Cyrillic е
        ({"notes": "se\u200bed=42"}, r"notes contains 'seed=4'"),
        ({"notes": "seéd: 42"}, r"notes contains 'seed: 4'"),
        ({"notes": "the seed was 42"}, r"notes contains 'seed was 4'"),
        ({"notes": "random seed set to 7"}, r"notes contains 'seed set to 7'"),
        ({"notes": "seeded with 42"}, r"notes contains 'seeded with 4'"),
        ({"notes": "we used 42 as the seed"}, r"notes contains '2 as the seed'"),
    ],
)
def test_seeds_in_other_spellings_are_found(tmp_path, kwargs, message):
    path = tmp_path / "release.gpkg"
    with pytest.raises(InputError, match=message + r".*must not be published.*seeds="):
        write_release(path, [public_like()], seeds={"synthesize": SYNTH_SEED}, **kwargs)
    assert names(tmp_path) == []


def test_ordinary_text_with_numbers_is_not_taken_for_a_seed(tmp_path):
    notes = ("Seed bank survey of 2019: 100 seedlings, 918 273 plots, sizes 1.5e3 m2 "
             "(United States 2019, seeding 2020)")
    size = {"rule": "n_public", "n_public": 4}
    write_release(tmp_path / "release.gpkg", [public_like()], notes=notes,
                  seeds={"synthesize": SYNTH_SEED}, metadata={"size": size})
    assert read_release(tmp_path / "release.gpkg").metadata["notes"] == notes
    # A pair that is no seed is not taken for one: it is refused as a size, not as a seed.
    with pytest.raises(InputError, match=r"metadata 'size.rule' must be one of \['dp-estimate', "
                                         r"'n_public'\], got a list \[\"n\", 4\]; pass"):
        write_release(tmp_path / "other.gpkg", [public_like()], seeds={"synthesize": SYNTH_SEED},
                      metadata={"size": {"rule": ["n", 4]}})


# ---------------------------------------------------------------------- repeated labels
@pytest.mark.parametrize(
    "spoil",
    [
        lambda labels: np.r_[labels[:-1], labels[:1]],  # one label twice
        lambda labels: np.r_[labels[:-1], [None]],  # one row missing
        lambda labels: np.r_[labels[:-2], ["n/a", "n/a"]],  # a few other values
        lambda labels: labels[np.random.default_rng(1).integers(0, len(labels), len(labels))],
    ],
)
def test_columns_of_original_labels_with_repeats_or_gaps_are_refused(tmp_path, confidential,
                                                                     fitted, spoil):
    _, _, public = fitted
    leaky = public[0].copy()
    labels = np.random.default_rng(0).permutation(confidential.index.to_numpy())[:len(leaky)]
    leaky["ref"] = spoil(labels)
    path = tmp_path / "release.gpkg"
    with pytest.raises(InputError, match=r"column 'ref' are distinct labels of the original "
                                         r"index \(original_index\) \(\d+ of them in 300 rows"):
        write_release(path, [public[1], leaky], original_index=confidential.index)
    assert not path.exists()


def test_integer_labels_spelled_as_text_are_refused_and_integer_values_pass(tmp_path):
    path = tmp_path / "release.gpkg"
    original = pd.Index(range(1017, 1117), name="record_id")
    leaky = public_like(n=50, ref=[str(label) for label in original[:50]])
    with pytest.raises(InputError, match=r"column 'ref' are distinct labels"):
        write_release(path, [leaky], original_index=original)
    # an integer attribute whose values happen to be row numbers of a default index (age
    # bands: ages in years over 50 rows would single out rows, as prepare refuses them)
    bands = np.random.default_rng(2).integers(0, 9, 50)
    write_release(path, [public_like(n=50, age_band=bands)], original_index=pd.RangeIndex(300))
    assert read_release(path).releases[0]["age_band"].tolist() == bands.tolist()


def test_writer_names_columns_labelled_by_other_than_text_and_a_bad_original_index(tmp_path):
    # pyogrio's AttributeError ('int' object has no attribute 'encode') and pandas' TypeError
    # (Index(...) must be called with a collection).
    path = tmp_path / "release.gpkg"
    for label in (7, ("y", "a")):
        release = public_like()
        release[label] = 1
        with_record(release)
        with pytest.raises(InputError, match=r"a column labelled .* but a GeoPackage names its "
                                             r"columns by text; rename it"):
            write_release(path, [release])
    with pytest.raises(InputError, match="original_index must be the index of the "
                                         "confidential records"):
        write_release(path, [public_like()], original_index="abc")
    assert not path.exists()


def test_writer_without_fit_refuses_columns_whose_values_single_out_rows(tmp_path):
    # record=np.arange(n) under a neutral name was written: after to_public it still tied each
    # synthetic point to one record. With fit= only the model's columns pass, which prepare
    # checked; floats (synthetic continuous values) are distinct by nature.
    path = tmp_path / "release.gpkg"
    rng = np.random.default_rng(4)
    for column in (np.arange(40), [f"r{k}" for k in range(40)], rng.integers(0, 90, 40)):
        with pytest.raises(InputError, match=r"column 'record' single out its rows .* pass "
                                             r"fit="):
            write_release(path, [public_like(n=40, record=column)])
        assert not path.exists()
    write_release(path, [public_like(n=40, z=rng.normal(size=40), band=np.arange(40) % 4)])
    with pytest.raises(InputError, match="column 'Unnamed: 0', which identifies records"):
        write_release(tmp_path / "other.gpkg", [public_like(n=4, **{"Unnamed: 0": range(4)})])


# ---------------------------------------------------------------------- hidden SQLite objects
def _hidden_table(path):
    """Original coordinates in a table GDAL does not list as a layer."""
    sql(path, "CREATE TABLE originals (record_id TEXT, x REAL, y REAL)",
        "INSERT INTO originals VALUES ('rec-00017', 605123.25, 7790456.5)")


def _metadata_as_view(path):
    sql(path, "ALTER TABLE metadata RENAME TO metadata_rows",
        "CREATE VIEW metadata AS SELECT * FROM metadata_rows")


def _rows_added(path):
    """800,000 rows more in the first release (its metadata still records 4)."""
    sql(path, "DROP TRIGGER IF EXISTS rtree_synthetic_1_geom_insert",
        "INSERT INTO synthetic_1 (geom, y) SELECT geom, y FROM synthetic_1, "
        "(WITH RECURSIVE c(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM c LIMIT 200000) "
        "SELECT k FROM c)")


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (_hidden_table, r"release.gpkg holds the SQLite table 'originals', which no layer lists "
                        r"and geosynth never writes .* was edited after it was written"),
        (lambda path: sql(path, "CREATE VIEW v AS SELECT 1"), r"holds the SQLite view 'v'"),
        (_metadata_as_view, r"holds the SQLite table 'metadata_rows', view 'metadata'"),
        (_rows_added, r"its layer 'synthetic_1' has more than 4 rows but its metadata records 4"),
    ],
)
def test_tables_views_and_rows_the_layers_do_not_account_for_are_refused(release_of_three,
                                                                        tamper, message):
    tamper(release_of_three)
    with pytest.raises(InputError, match=message) as caught:
        read_release(release_of_three)
    assert "\n" not in str(caught.value)


def test_a_staging_refusal_names_the_path_once(tmp_path):
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like()])
    (tmp_path / "release.gpkg-wal").write_bytes(b"")
    with pytest.raises(InputError, match=r"^\S*release.gpkg has SQLite's release.gpkg-wal") as err:
        write_release(path, [public_like()], overwrite=True)
    assert str(err.value).count(str(path)) == 1


# ---------------------------------------------------------------------- GeoPackage tables
SECRET = "rec-00017 605123.25 7790456.5"


def _gpkg_metadata(path):
    sql(path, "CREATE TABLE IF NOT EXISTS gpkg_metadata (id INTEGER PRIMARY KEY AUTOINCREMENT, "
              "md_scope TEXT NOT NULL DEFAULT 'dataset', md_standard_uri TEXT NOT NULL, "
              "mime_type TEXT NOT NULL DEFAULT 'text/xml', metadata TEXT NOT NULL DEFAULT '')",
        ("INSERT INTO gpkg_metadata (md_standard_uri, metadata) VALUES ('x', ?)", (SECRET,)))


def _gpkg_metadata_reference(path):
    sql(path, "CREATE TABLE IF NOT EXISTS gpkg_metadata_reference (reference_scope TEXT NOT NULL,"
              " table_name TEXT, column_name TEXT, row_id_value INTEGER, timestamp DATETIME, "
              "md_file_id INTEGER NOT NULL, md_parent_id INTEGER)",
        ("INSERT INTO gpkg_metadata_reference VALUES ('row', 'synthetic_1', NULL, 1, ?, 1, NULL)",
         (SECRET,)))


def _gpkg_data_columns(path):
    sql(path, "CREATE TABLE IF NOT EXISTS gpkg_data_columns (table_name TEXT NOT NULL, "
              "column_name TEXT NOT NULL, name TEXT, title TEXT, description TEXT, mime_type "
              "TEXT, constraint_name TEXT)",
        ("INSERT INTO gpkg_data_columns VALUES ('synthetic_1', 'y', 'y', 'y', ?, NULL, NULL)",
         (SECRET,)))


def _rtree_aux_column(path):
    """The spatial index rebuilt with an extra column for each box."""
    with sqlite3.connect(path) as connection:
        triggers = [row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'rtree_%'")]
    connection.close()
    sql(path, *[f'DROP TRIGGER "{trigger}"' for trigger in triggers])
    sql(path, "CREATE VIRTUAL TABLE t USING rtree(id, minx, maxx, miny, maxy, +note)",
        ("INSERT INTO t SELECT *, ? FROM rtree_synthetic_1_geom", (SECRET,)),
        "DROP TABLE rtree_synthetic_1_geom", "ALTER TABLE t RENAME TO rtree_synthetic_1_geom")


def _node_bytes(path, nodeno, offset, payload):
    """Write ``payload`` into the bytes of R*Tree node ``nodeno`` of synthetic_1 at ``offset``."""
    with sqlite3.connect(path) as connection:
        (data,) = connection.execute("SELECT data FROM rtree_synthetic_1_geom_node WHERE "
                                     "nodeno = ?", (nodeno,)).fetchone()
        data = data[:offset] + payload + data[offset + len(payload):]
        connection.execute("UPDATE rtree_synthetic_1_geom_node SET data = ? WHERE nodeno = ?",
                           (data, nodeno))
    connection.close()


_INDEX = r"the spatial index of its layer 'synthetic_1' \(SQLite table 'rtree_synthetic_1_geom'\)"


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (_gpkg_metadata, r"its SQLite table 'gpkg_metadata' holds rows"),
        (_gpkg_metadata_reference, r"its SQLite table 'gpkg_metadata_reference' holds rows"),
        (_gpkg_data_columns, r"its SQLite table 'gpkg_data_columns' holds rows"),
        (lambda path: sql(path, ("UPDATE gpkg_contents SET description = ? WHERE table_name = "
                                 "'synthetic_2'", (SECRET,))),
         r"its SQLite table 'gpkg_contents' gives the layer 'synthetic_2' an identifier, "
         r"description or time stamp other than GDAL's"),
        (lambda path: sql(path, ("UPDATE gpkg_contents SET identifier = ? WHERE table_name = "
                                 "'metadata'", (SECRET,))),
         r"'gpkg_contents' gives the layer 'metadata' an identifier"),
        (lambda path: sql(path, ("INSERT INTO gpkg_contents (table_name, data_type, identifier) "
                                 "VALUES (?, 'tiles', 'x')", (SECRET,))),
         r"'gpkg_contents' has a row for a table that is not one of its layers"),
        (lambda path: sql(path, "UPDATE gpkg_contents SET min_x = 605123.25 WHERE table_name = "
                                "'synthetic_1'"),
         r"its SQLite table 'gpkg_contents' gives the layer 'synthetic_1' an extent that is "
         r"not its features'"),
        (lambda path: sql(path, "UPDATE gpkg_contents SET max_y = 7790456.5 WHERE table_name = "
                                "'grid'"), r"gives the layer 'grid' an extent"),
        (lambda path: sql(path, "UPDATE rtree_synthetic_1_geom SET minx = 605123.25, maxx = "
                                "605123.25, miny = 7790456.5, maxy = 7790456.5 WHERE id = 2"),
         _INDEX + r" holds other boxes than its features' bounds"),
        (lambda path: sql(path, "INSERT INTO rtree_synthetic_1_geom VALUES "
                                "(99, 605123.25, 605123.25, 7790456.5, 7790456.5)"),
         _INDEX + r" holds other boxes"),
        (lambda path: sql(path, "UPDATE rtree_synthetic_1_geom_rowid SET nodeno = 605123 WHERE "
                                "rowid = 3"), _INDEX + r" is not the R\*Tree GDAL writes"),
        # the same node number as text or a real (read as the same integer by NumPy)
        (lambda path: sql(path, "UPDATE rtree_synthetic_1_geom_rowid SET nodeno = "
                                "CAST(nodeno AS TEXT) WHERE rowid = 3"),
         _INDEX + r" is not the R\*Tree GDAL writes"),
        (lambda path: sql(path, "UPDATE rtree_synthetic_1_geom_rowid SET nodeno = nodeno + 0.0 "
                                "WHERE rowid = 3"), _INDEX + r" is not the R\*Tree GDAL writes"),
        (lambda path: sql(path, "INSERT INTO rtree_synthetic_1_geom_node VALUES "
                                "(2, zeroblob(1228))"), _INDEX + r" holds other boxes"),
        (lambda path: _node_bytes(path, 1, 1000, b"rec-00017"), _INDEX + r" holds other boxes"),
        (lambda path: _node_bytes(path, 1, 0, b"\x00\x07"),  # a depth the tree does not have
         _INDEX + r" holds other boxes"),
        (_rtree_aux_column, _INDEX + r" is not the R\*Tree GDAL writes"),
    ],
)
def test_data_in_the_geopackage_tables_geosynth_leaves_alone_is_refused(release_of_three,
                                                                        tamper, message):
    tamper(release_of_three)
    assert _unseen_and_unquoted(_refusal(release_of_three, message))


def _refusal(path, message):
    """Return read_release's refusal of ``path``, which must match ``message``."""
    with pytest.raises(InputError, match=message) as caught:
        read_release(path)
    return str(caught.value)


def _unseen_and_unquoted(text):
    """Whether a refusal says the data is unseen and edited in, one line quoting none of it."""
    hidden = ("rec-", "605123", "7790456", "rec_00017")
    return ("\n" not in text and "release.gpkg" in text and not any(h in text for h in hidden)
            and "which geosynth never writes" in text and "edited after it was written" in text)


def _many_points(n, seed):
    rng = np.random.default_rng(seed)
    frame = public_like(n)
    frame.geometry = gpd.points_from_xy(rng.uniform(XMIN, XMAX, n), rng.uniform(YMIN, YMAX, n),
                                        crs=CRS)
    return with_record(frame)


@pytest.fixture
def release_of_many(tmp_path):
    """A release whose spatial index has inner nodes (and coordinates that are not float32)."""
    path = tmp_path / "release.gpkg"
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(12, 12), crs=CRS)
    write_release(path, [_many_points(3000, 1), _many_points(40, 2), public_like(0)], grid=grid)
    assert [len(r) for r in read_release(path).releases] == [3000, 40, 0]
    return path


def _inner_cell(path):
    """Offset of the maxx of the first cell of the root, an inner node of synthetic_1."""
    with sqlite3.connect(path) as connection:
        (data,) = connection.execute("SELECT data FROM rtree_synthetic_1_geom_node WHERE "
                                     "nodeno = 1").fetchone()
    connection.close()
    assert struct.unpack(">H", data[:2])[0] >= 1  # the root is not a leaf
    return data, 4 + 8 + 4


def _loosen_inner_box(path):
    data, offset = _inner_cell(path)
    (maxx,) = struct.unpack(">f", data[offset:offset + 4])
    _node_bytes(path, 1, offset, struct.pack(">f", maxx + 123.25))


@pytest.mark.parametrize(
    "tamper",
    [_loosen_inner_box,
     lambda path: sql(path, "UPDATE rtree_synthetic_1_geom_parent SET parentnode = 605123 "
                            "WHERE nodeno = (SELECT max(nodeno) FROM "
                            "rtree_synthetic_1_geom_parent)")],
)
def test_inner_nodes_of_the_spatial_index_must_be_its_own(release_of_many, tamper):
    tamper(release_of_many)
    with pytest.raises(InputError, match=_INDEX + r" holds other boxes than its features'") as err:
        read_release(release_of_many)
    assert "605123" not in str(err.value)


def test_the_release_layers_are_read_once_their_bounds_from_their_points(release_of_many,
                                                                         monkeypatch):
    # read_release compared the spatial indexes with pyogrio.read_bounds, which read every
    # release layer through GDAL a second time (about half the reading of a large release).
    # A point's bounds are its x and y, as GDAL gives them:
    releases = read_release(release_of_many).releases
    for k, release in enumerate(releases, start=1):
        fids, bounds = pyogrio.read_bounds(release_of_many, layer=f"synthetic_{k}")
        xy = shapely.get_coordinates(np.asarray(release.geometry.array))
        assert np.array_equal(bounds, xy[:, [0, 1, 0, 1]].T)
        assert np.array_equal(fids, np.arange(1, len(release) + 1))
    real, read = pyogrio.read_bounds, []

    def recorded(path, layer=None, **kwargs):
        read.append(layer)
        return real(path, layer=layer, **kwargs)

    monkeypatch.setattr(pyogrio, "read_bounds", recorded)
    again = read_release(release_of_many).releases
    assert read == ["grid"]
    for release, before in zip(again, releases, strict=True):
        assert isinstance(release.index, pd.RangeIndex) and release.index.name is None
        pd.testing.assert_frame_equal(release, before)


def _layer_content(path, layer):
    """What the GeoPackage at ``path`` holds for ``layer``: its schema, its rows (with their
    SQLite types), its spatial index and its rows of the GeoPackage's tables (no time stamp)."""
    with sqlite3.connect(path) as connection:
        def rows(query, *parameters):
            return [tuple((type(value).__name__, value) for value in row)
                    for row in connection.execute(query, parameters)]

        rtree = f"rtree_{layer}_geom"
        content = {
            "schema": rows("SELECT type, name, sql FROM sqlite_master WHERE tbl_name IN (?, ?) "
                           "ORDER BY name", layer, rtree),
            "rows": rows(f'SELECT * FROM "{layer}" ORDER BY fid'),
            "contents": rows("SELECT table_name, data_type, identifier, description, min_x, "
                             "min_y, max_x, max_y, srs_id FROM gpkg_contents WHERE "
                             "table_name = ?", layer),
            "geometry": rows("SELECT * FROM gpkg_geometry_columns WHERE table_name = ?", layer),
            "count": rows("SELECT * FROM gpkg_ogr_contents WHERE table_name = ?", layer),
            "extensions": rows("SELECT * FROM gpkg_extensions WHERE table_name = ?", layer),
        }
        for end in ("_node", "_parent", "_rowid"):
            content[end] = rows(f'SELECT * FROM "{rtree}{end}" ORDER BY 1')
    connection.close()
    return content


@pytest.mark.parametrize("object_column", [False, True])
def test_release_layers_hold_what_gdal_writes_feature_by_feature(tmp_path, monkeypatch,
                                                                  object_column):
    # write_release hands release layers of NumPy numbers and booleans to GDAL through Arrow
    # (faster); the file must be the one pyogrio writes feature by feature. Arrow would write
    # integers held as objects as INTEGER where feature by feature writes TEXT.
    rng = np.random.default_rng(5)
    release = _many_points(500, 3)
    release["x1"] = rng.integers(-3, 3, 500).astype(np.int8)
    # uint32 beyond int32, a few levels (distinct values would single out rows)
    release["x2"] = rng.choice(np.array([0, 2**31, 2**32 - 1], dtype=np.uint32), 500)
    release["z"] = np.where(rng.random(500) < 0.2, np.nan, rng.normal(size=500))
    release["w"] = rng.normal(size=500).astype(np.float32)
    release["b"] = rng.random(500) < 0.5
    if object_column:
        release["x1"] = release["x1"].astype(object)
    fast, plain = tmp_path / "fast.gpkg", tmp_path / "plain.gpkg"
    arrow = []
    real = pyogrio.write_dataframe

    def recorded(frame, target, **kwargs):
        arrow.append(bool(kwargs.get("use_arrow")))
        real(frame, target, **kwargs)

    monkeypatch.setattr(pyogrio, "write_dataframe", recorded)
    with_record(release)
    write_release(fast, [release, with_record(release.iloc[:7])])

    def feature_by_feature(frame, target, **kwargs):
        real(frame, target, **{**kwargs, "use_arrow": False})

    monkeypatch.setattr(pyogrio, "write_dataframe", feature_by_feature)
    write_release(plain, [release, with_record(release.iloc[:7])])
    for layer in ("synthetic_1", "synthetic_2"):
        assert _layer_content(fast, layer) == _layer_content(plain, layer)
    declared = {row[1][1]: row[2][1] for row in _layer_content(fast, "synthetic_1")["schema"]}
    declared = declared["synthetic_1"]
    assert ('"x1" TEXT' if object_column else '"x1" SMALLINT') in declared
    assert '"x2" INTEGER' in declared and '"w" FLOAT' in declared and '"b" BOOLEAN' in declared
    if pyogrio.__gdal_version__ >= (3, 8, 0):  # the fast path is taken where it is the same
        assert arrow == [not object_column] * 2 + [False]  # the releases, not the metadata
    read_release(fast)


# ---------------------------------------------------------------------- room no reader looks at
def _append_bytes(path):
    with open(path, "ab") as file:
        file.write(SECRET.encode())


def _header_bytes(path):
    with open(path, "r+b") as file:
        file.seek(72)  # "reserved for expansion", which SQLite leaves zero
        file.write(SECRET.encode()[:20])


def _deleted_table(path):
    """A table of secrets created and dropped again: its pages stay in the file, free."""
    sql(path, "CREATE TABLE t (note TEXT)",
        ("INSERT INTO t SELECT ? || value FROM generate_series(1, 2000)", (SECRET,))
        if sqlite3.sqlite_version_info >= (3, 41) else
        ("INSERT INTO t WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n "
         "WHERE k < 2000) SELECT ? || k FROM n", (SECRET,)),
        "DROP TABLE t")


def _orphaned_pages(path):
    """A dropped table's pages taken off the free list (its count in the header zeroed): they
    stay in the file, counted by no free list, and the free-page check passed."""
    _deleted_table(path)
    with open(path, "r+b") as file:
        file.seek(32)  # the first free-list trunk page and the number of free pages
        file.write(bytes(8))


def _analyze(path):
    sql(path, "ANALYZE", ("INSERT INTO sqlite_stat1 VALUES ('grid', NULL, ?)", (SECRET,)))


_TRIGGER_BODY = "AFTER UPDATE ON synthetic_1 BEGIN SELECT {}; END"
_ROOM = [
    (lambda path: sql(path, 'CREATE TRIGGER "rtree_synthetic_1_geom_update1" '
                            + _TRIGGER_BODY.format(f"'{SECRET}'")),
     r"the SQL of its SQLite trigger on its table 'synthetic_1' holds words, numbers"),
    (lambda path: sql(path, 'CREATE TRIGGER "rtree_synthetic_1_geom_update1" '
                            + _TRIGGER_BODY.format("605123.25")),
     r"the SQL of its SQLite trigger on its table 'synthetic_1' holds words"),
    (lambda path: sql(path, 'CREATE TRIGGER "rtree_synthetic_1_geom_update1" '
                            + _TRIGGER_BODY.format("1 /* rec-00017 */")),
     r"the SQL of its SQLite trigger on its table 'synthetic_1' holds words"),
    (lambda path: sql(path, 'CREATE TRIGGER "rec_00017_605123" ' + _TRIGGER_BODY.format("1")),
     r"its SQLite schema holds a trigger on its table 'synthetic_1' that GDAL never writes"),
    (lambda path: sql(path, 'CREATE TRIGGER "rtree_synthetic_1_605123_insert" '
                            + _TRIGGER_BODY.format("1")),
     r"its SQLite schema holds a trigger on its table 'synthetic_1'"),
    (lambda path: sql(path, 'CREATE INDEX "rec_00017_605123" ON synthetic_1 (y)'),
     r"its SQLite schema holds an index on its table 'synthetic_1' that GDAL never writes"),
    (lambda path: sql(path, "ALTER TABLE gpkg_extensions ADD COLUMN rec_00017_605123 TEXT"),
     r"its SQLite table 'gpkg_extensions' has columns the GeoPackage standard does not"),
    (lambda path: sql(path, "ALTER TABLE gpkg_spatial_ref_sys ADD COLUMN epoch DOUBLE "
                            "DEFAULT 605123.25"),
     r"the SQL of its SQLite table on its table 'gpkg_spatial_ref_sys' holds words"),
    (lambda path: sql(path, "UPDATE gpkg_ogr_contents SET feature_count = 605123 WHERE "
                            "table_name = 'grid'"),
     r"its SQLite table 'gpkg_ogr_contents' holds a row that is not a layer's feature count"),
    (lambda path: sql(path, "UPDATE sqlite_sequence SET seq = 605123 WHERE name = 'metadata'"),
     r"its SQLite table 'sqlite_sequence' holds a row that is not a layer's last feature id"),
    (lambda path: sql(path, ("INSERT INTO gpkg_extensions VALUES ('synthetic_1', 'y', "
                             "'gpkg_rtree_index', ?, 'write-only')", (SECRET,))),
     r"its SQLite table 'gpkg_extensions' has a row other than the spatial index of a layer"),
    (_analyze, r"its SQLite table 'sqlite_stat1' holds rows"),
    (lambda path: sql(path, ("INSERT INTO gpkg_spatial_ref_sys VALUES ('x', 605123, 'NONE', "
                             "605123, ?, NULL)", (SECRET,))),
     r"its SQLite table 'gpkg_spatial_ref_sys' has a row no layer uses"),
    (lambda path: sql(path, ("UPDATE gpkg_spatial_ref_sys SET description = ? WHERE srs_id = "
                             "31983", (SECRET,))),
     r"'gpkg_spatial_ref_sys' describes the layers' CRS in other words than GDAL's"),
    (lambda path: sql(path, ("UPDATE gpkg_spatial_ref_sys SET definition = replace(definition,"
                             " 'UTM zone 23S\"', ?) WHERE srs_id = 31983",
                             (f'UTM zone 23S {SECRET}"',))),
     r"'gpkg_spatial_ref_sys' describes the layers' CRS in other words than GDAL's"),
    (lambda path: sql(path, ("UPDATE gpkg_spatial_ref_sys SET definition = replace(definition,"
                             " 'AXIS[\"Latitude\",NORTH]', ?) WHERE srs_id = 4326",
                             (f'AXIS["{SECRET}",NORTH]',))),
     r"its SQLite table 'gpkg_spatial_ref_sys' changes GDAL's row for WGS 84 geodetic"),
    (lambda path: sql(path, "PRAGMA user_version = 605123"),
     r"its SQLite header gives other GeoPackage ids than GDAL's"),
    (_header_bytes, r"its SQLite header reserves bytes that SQLite leaves empty"),
    (_deleted_table, r"its SQLite file holds \d+ free pages \(the data of deleted rows"),
    (_orphaned_pages, r"its SQLite file fails SQLite's integrity check: pages that no table"),
    (_append_bytes, r"its SQLite file holds bytes past its last page"),
]


@pytest.mark.parametrize(("tamper", "message"), _ROOM)
def test_data_where_no_reader_of_the_layers_looks_is_refused(release_of_three, tamper, message):
    tamper(release_of_three)
    assert _unseen_and_unquoted(_refusal(release_of_three, message))


@pytest.mark.parametrize("suffix", ["-wal", "-journal"])
def test_a_release_with_sqlite_journals_beside_it_is_refused_unopened(release_of_three, suffix):
    # GDAL replays a -wal into the file on opening it: the checks read pages the file does not
    # hold, and the read changed the file it checked.
    before = release_of_three.read_bytes()
    journal = release_of_three.with_name(release_of_three.name + suffix)
    journal.write_bytes(b"")
    with pytest.raises(InputError, match=rf"release.gpkg has SQLite's release.gpkg{suffix} "
                                         r"beside it: a program \(such as QGIS\) has it open"):
        read_release(release_of_three)
    assert release_of_three.read_bytes() == before
    journal.unlink()
    assert read_release(release_of_three).m == 3


def test_a_release_in_a_crs_without_authority_reads(tmp_path):
    """GDAL records such a CRS as 'unknown' (organization NONE), with EPSG codes of its units."""
    crs = pyproj.CRS("+proj=tmerc +lon_0=-45.5 +k=0.9996 +x_0=500000 +y_0=10000000 "
                     "+ellps=GRS80 +units=m")
    path = tmp_path / "release.gpkg"
    frame = with_record(public_like(4).set_crs(crs, allow_override=True))
    write_release(path, [frame, frame])
    assert read_release(path).releases[0].crs == crs
    sql(path, ("UPDATE gpkg_spatial_ref_sys SET definition = replace(definition, "
               "'PROJCS[\"unknown\"', ?) WHERE srs_id >= 100000", (f'PROJCS["{SECRET}"',)))
    with pytest.raises(InputError, match="describes the layers' CRS in other words"):
        read_release(path)


def test_a_repeated_bookkeeping_row_is_refused(release_of_three):
    # sqlite_sequence has no key: a row repeated past a limit of one per layer was never read.
    sql(path := release_of_three,
        *["INSERT INTO sqlite_sequence SELECT * FROM sqlite_sequence WHERE name = 'grid'"] * 5,
        ("INSERT INTO sqlite_sequence VALUES (?, 605123)", (SECRET,)))
    with pytest.raises(InputError, match="'sqlite_sequence' holds a row that is not a layer"):
        read_release(path)


def test_an_empty_layer_has_no_extent(tmp_path):
    # SQL compared the extent with NULL bounds of no feature, which let any numbers pass.
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like(4), public_like(0)])
    sql(path, "UPDATE gpkg_contents SET min_x = 605123.25, min_y = 7790456.5, max_x = 605123.25,"
              " max_y = 7790456.5 WHERE table_name = 'synthetic_2'")
    assert _unseen_and_unquoted(_refusal(
        path, r"'gpkg_contents' gives the layer 'synthetic_2' an extent that is not its features'"))


@pytest.mark.parametrize("flag", [None, 0, [], "no", np.array([True, False]),
                                  pd.Series([True])])
def test_read_release_refuses_a_check_audit_that_is_not_a_bool(tmp_path, flag):
    # None, 0 and [] silently skipped the audit check, "no" turned it on, and an array or a
    # Series raised NumPy's "truth value of an array is ambiguous".
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like()], seeds={"synthesize": 1})
    with pytest.raises(InputTypeError, match="check_audit must be True or False"):
        read_release(path, check_audit=flag)
    assert read_release(path, check_audit=np.True_).audit == audit_path(path)
    assert read_release(path, check_audit=False).audit is None


@pytest.mark.parametrize("call", [
    lambda: write_release(None, [public_like()]),
    lambda: verify_audit(None),
    lambda: audit_path(1),
    lambda: read_release(b"release.gpkg"),
])
def test_paths_that_are_not_paths_are_refused_by_name(call):
    # pathlib raised a bare TypeError ("expected str, bytes or os.PathLike object").
    with pytest.raises(InputTypeError, match=r"^path must be a file path \(str or pathlib.Path\)"):
        call()


@pytest.mark.parametrize("seeds, where", [
    ({"fit": float("nan")}, r"seeds\['fit'\]"),
    ({"fit": 1.5}, r"seeds\['fit'\]"),
    ({"fit": np.float64(3.0)}, r"seeds\['fit'\]"),
    ({"fit": True}, r"seeds\['fit'\]"),
    ({"fit": "42"}, r"seeds\['fit'\]"),
    ({"fit": -1}, r"seeds\['fit'\]"),
    ({"fit": [1, 2.5]}, r"seeds\['fit'\]\[1\]"),
    ({"run": {"fit": float("inf")}}, r"seeds\['run'\]\['fit'\]"),
])
def test_write_release_refuses_seeds_that_are_no_seeds(tmp_path, seeds, where):
    # A NaN seed was written to the audit file as null, a float as a number no generator takes.
    path = tmp_path / "release.gpkg"
    with pytest.raises(InputTypeError, match=where + " must be None, an int >= 0"):
        write_release(path, [public_like()], seeds=seeds)
    assert not path.exists() and not audit_path(path).exists()


def test_write_release_keeps_the_seeds_it_accepts(tmp_path):
    path = tmp_path / "release.gpkg"
    seeds = {"fit": 3, "public": np.int64(4), "spawned": [1, 2], "none": None,
             "sequence": np.random.SeedSequence(5), "array": np.array([6, 7])}
    write_release(path, [public_like()], seeds=seeds)
    recorded = json.loads(audit_path(path).read_text())["seeds"]
    assert recorded["fit"] == 3 and recorded["spawned"] == [1, 2] and recorded["array"] == [6, 7]


# ---------------------------------------------------------------------- identifiers, model columns
@pytest.mark.parametrize("column", ["id", "patient_id", "patientId", "id_paciente", "patient_no",
                                    "case_number", "uuid", "AreaKey", "OBJECTID"])
def test_writer_refuses_columns_named_like_identifiers(tmp_path, column):
    # Only index, fid, cell_id and the like were refused: id, patient_id, patient_no, uuid
    # were written without a word.
    path = tmp_path / "release.gpkg"
    with pytest.raises(InputError, match=rf"release 1 \(synthetic_1\) has a column '{column}', "
                                         r"which identifies records.*drop it.*if it is an "
                                         r"attribute the model released, pass fit="):
        write_release(path, [public_like(4, **{column: [3, 1, 2, 0]})])
    assert not path.exists()


def test_ordinary_attribute_names_are_not_taken_for_identifiers(tmp_path):
    # Whole words only: idade is Portuguese for age, valid and width hold no identifier.
    columns = {"idade": [30, 41, 52, 63], "valid": [True, False, True, True],
               "width": [1.0, 2.0, 3.0, 4.0], "key_stage": [1, 2, 2, 3],
               "num_rooms": [1, 2, 3, 4], "NU_IDADE_N": [4030, 4041, 4052, 4063]}
    path = tmp_path / "release.gpkg"
    write_release(path, [public_like(4, **columns)], metadata={"method": "paiva"})
    assert list(read_release(path).releases[0].columns) == ["y", *columns, "geometry"]


def test_writer_given_a_fit_refuses_columns_its_model_does_not_release(tmp_path, fitted,
                                                                       confidential):
    # fit= says which columns the model releases; the original x and a patient number were
    # published beside them.
    fit, _, public = fitted
    path = tmp_path / "release.gpkg"
    added = public[0].assign(orig_x=confidential.geometry.x.to_numpy(),
                             patient=np.arange(len(public[0])))
    with pytest.raises(InputError, match=r"release 1 \(synthetic_1\) has columns \['orig_x', "
                                         r"'patient'\] that the model of fit does not release "
                                         r"\(its attributes and continuous columns: \['x1', "
                                         r"'x2', 'y', 'z'\]\).*drop them"):
        write_release(path, [added, public[1]], fit=fit)
    with pytest.raises(InputError, match=r"has a column 'patient_no', which identifies records"):
        write_release(path, [public[0].assign(patient_no=1), public[1]], fit=fit)
    assert not path.exists()
    write_release(path, [public[0][["y", "geometry"]], public[1][["y", "geometry"]]], fit=fit)
    assert read_release(path).m == 2  # fewer columns than the model releases: nothing added


def test_writer_without_a_fit_refuses_columns_the_synthesizer_did_not_make(tmp_path, fitted,
                                                                           confidential):
    # Without fit= only names were checked: the records' values of z, merged back beside the
    # synthetic ones under a plain name, were published, extremes included. The release's own
    # record of the columns it was made with now stands in for the model.
    _, internal, public = fitted
    assert set(public[0].attrs[COLUMNS_ATTR]) == {"y", "x1", "x2", "z"}
    path = tmp_path / "release.gpkg"
    merged = public[0].copy()
    merged["income"] = confidential["z"].to_numpy()  # an assignment keeps attrs
    with pytest.raises(InputError, match=r"release 1 \(synthetic_1\) has columns \['income'\] "
                                         r"that the synthesizer that made it did not make \(it "
                                         r"made \['x1', 'x2', 'y', 'z'\]\).*drop them"):
        write_release(path, [merged, public[1]])
    # Added before to_public, or by assign(): the record comes along all the same.
    early = to_public(internal[0].assign(source_z=confidential["z"].to_numpy()), seed=1)
    with pytest.raises(InputError, match=r"has columns \['source_z'\] that the synthesizer"):
        write_release(path, [early, public[1]])
    assert not path.exists()
    # A label of the release the analyst adds on purpose, recorded, is written.
    labelled = [with_record(frame.assign(batch="2026-12")) for frame in public]
    write_release(path, labelled)
    assert list(read_release(path).releases[0]["batch"].unique()) == ["2026-12"]


@pytest.mark.parametrize("with_fit", [False, True])
def test_the_records_values_written_over_a_synthetic_column_are_refused(tmp_path, fitted,
                                                                        confidential, with_fit):
    # A red team wrote the records' own z (a planted 98765 among them), shuffled, over the
    # synthetic z: names pass, so the file and a public map published every original value.
    fit, _, public = fitted
    planted = confidential["z"].to_numpy().copy()
    planted[7] = 98765.0
    shuffled = np.random.default_rng(3).permutation(planted)
    path = tmp_path / "release.gpkg"
    options = {"fit": fit} if with_fit else {"grid": fit.grid}
    overwritten = public[0].copy()
    overwritten["z"] = shuffled  # or assign(z=...): the record comes along either way
    for release in (overwritten, public[0].assign(z=public[0]["z"].round(1))):
        with pytest.raises(InputError, match=r"release 1 \(synthetic_1\) has values in \['z'\] "
                                             r"that are not, as a whole, those its synthesizer "
                                             r"drew.*records' own values"):
            write_release(path, [release, public[1]], **options)
    assert not path.exists()
    # The shuffle of to_public, a reprojection and a selection of columns keep the digest.
    kept = to_public(public[0], seed=9).to_crs(fit.grid.crs)[["z", "y", "geometry"]]
    write_release(path, [kept, public[1][["z", "y", "geometry"]]], **options)
    assert read_release(path).releases[0]["z"].max() < 98765.0


def test_the_records_points_under_a_releases_record_are_refused(tmp_path, fitted, confidential):
    # A red team copied a public release's attrs onto the confidential frame (Paiva keeps each
    # record's attributes, so every column digest matched), or set a release's geometry to the
    # records' points: both were written with fit=, every record's location exact.
    fit, _, public = fitted
    forged = confidential[["y", "x1", "x2", "z", "geometry"]].sample(frac=1.0, random_state=2)
    forged = forged.reset_index(drop=True)
    forged.attrs = dict(public[0].attrs)
    forged["z"] = public[0]["z"].to_numpy()  # the synthetic values: every digest matches
    swapped = public[0].copy()
    swapped.geometry = confidential.geometry.sample(frac=1.0, random_state=3).to_numpy()
    for release in (forged, swapped):
        with pytest.raises(InputError, match=r"release 1 \(synthetic_1\) has points that are "
                                             r"not, as a whole, those its synthesizer drew.*"
                                             r"records' own locations"):
            write_release(tmp_path / "release.gpkg", [release, public[1]], fit=fit)
    # Reprojected, they cannot be compared with the record: refused, with the way out.
    with pytest.raises(InputError, match=r"has its points in another CRS than the one its "
                                         r"synthesizer drew them in.*reproject the published "
                                         r"file afterwards"):
        write_release(tmp_path / "release.gpkg", [public[0].to_crs(4326)])
    assert not (tmp_path / "release.gpkg").exists()


def test_recording_columns_again_does_not_approve_an_overwritten_column(tmp_path, fitted,
                                                                        confidential):
    # The message on an unrecorded column advises record_columns; it re-recorded every column,
    # so the records' own z written over the synthetic one was approved along with the label.
    fit, _, public = fitted
    overwritten = public[0].copy()
    overwritten["z"] = confidential["z"].to_numpy()
    overwritten["note"] = "v1"
    record_columns(overwritten)  # records note; z keeps the digest of the values drawn
    with pytest.raises(InputError, match=r"has values in \['z'\] that are not, as a whole"):
        write_release(tmp_path / "release.gpkg", [overwritten], grid=fit.grid)
    assert not (tmp_path / "release.gpkg").exists()


@pytest.mark.parametrize("combine", ["merge", "join", "concat"])
def test_a_release_whose_record_a_merge_dropped_is_refused(tmp_path, fitted, confidential,
                                                           combine):
    # pandas drops attrs in merge, join and concat: the red team's per-combination maximum of
    # a confidential column merged into a release was written with no error (and, given a
    # metadata method, no warning). Without the record nothing says what a column holds.
    fit, _, public = fitted
    top = confidential.groupby(["y", "x1", "x2"], as_index=False)["z"].max()
    frame = public[0].drop(columns="z")
    extra = pd.DataFrame({"income": confidential["z"].to_numpy()[:len(frame)]})
    combined = {"merge": lambda: frame.merge(top, on=["y", "x1", "x2"]),
                "join": lambda: frame.join(extra),
                "concat": lambda: pd.concat([frame, extra], axis=1)}[combine]()
    assert COLUMNS_ATTR not in combined.attrs
    for options in ({"metadata": {"method": "paiva"}}, {"fit": fit}):
        for release in (combined, to_public(gpd.GeoDataFrame(combined), seed=8)):
            with pytest.raises(InputError, match=r"release 1 \(synthetic_1\) (holds no record of "
                                                 r"the columns its synthesizer made.*merge|has "
                                                 r"columns \['income'\] that the model of fit)"):
                write_release(tmp_path / "release.gpkg", [release], **options)
    assert not (tmp_path / "release.gpkg").exists()


@pytest.mark.parametrize("record", ["y", ["y"], {"y": 1}, 5])
def test_an_altered_record_of_the_columns_is_refused(tmp_path, fitted, record):
    _, internal, public = fitted
    altered, early = public[0].copy(), internal[0].copy()
    altered.attrs[COLUMNS_ATTR] = early.attrs[COLUMNS_ATTR] = record
    with pytest.raises(InputError, match=r"attrs\['geosynth_columns'\] must map each column a "
                                         r"synthesizer made to the digest.*record_columns"):
        write_release(tmp_path / "release.gpkg", [altered])
    with pytest.raises(InputError, match=r"attrs\['geosynth_columns'\] must map each column"):
        to_public(early)
    assert not (tmp_path / "release.gpkg").exists()


def test_a_model_attribute_named_like_an_identifier_is_written_with_its_fit(tmp_path,
                                                                          confidential):
    # An attribute of few levels named like an identifier (Brazil's ID_MUNICIP, a municipality
    # code) is the model's: written given fit=, read back, refused without it.
    data = confidential.rename(columns={"x1": "ID_MUNICIP"})
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(4, 4), crs=CRS)
    counts = prepare(data, grid, attributes=["y", "ID_MUNICIP"])
    fit = PaivaModel().fit(counts, n_iter=30, burn_in=10, chains=1, seed=1, progress=False)
    public = [to_public(r, seed=2) for r in synthesize(fit, data, m=1, seed=3)]
    path = tmp_path / "release.gpkg"
    write_release(path, public, fit=fit)
    assert "ID_MUNICIP" in read_release(path).releases[0].columns
    with pytest.raises(InputError, match=r"has a column 'ID_MUNICIP', which identifies records"
                                         r".*pass fit="):
        write_release(tmp_path / "without_fit.gpkg", public)


def test_read_release_refuses_an_identifier_the_model_does_not_release(release_of_three):
    # The model of the file releases y; a patient_id added by hand was read as a release column.
    set_metadata(release_of_three, "model", _model())
    _column_added("patient_id")(release_of_three)
    with pytest.raises(InputError, match=r"its layer 'synthetic_2' has a column 'patient_id', "
                                         r"which identifies records.*was edited"):
        read_release(release_of_three)


def test_read_release_lets_through_a_model_attribute_named_like_an_identifier(tmp_path):
    path = tmp_path / "release.gpkg"
    frames = [public_like(4, ID_MUNICIP=[1, 2, 1, 2])]
    with pytest.raises(InputError, match=r"column 'ID_MUNICIP', which identifies records"):
        write_release(path, frames, metadata={"method": "paiva"})
    write_release(path, [with_record(f.rename(columns={"ID_MUNICIP": "m"})) for f in frames],
                  metadata={"method": "paiva"})
    sql(path, 'ALTER TABLE synthetic_1 RENAME COLUMN "m" TO "ID_MUNICIP"')
    with pytest.raises(InputError, match=r"column 'ID_MUNICIP', which identifies records"):
        read_release(path)
    set_metadata(path, "model", _model(attributes=["y", "ID_MUNICIP"], combinations=[
        "y=0,ID_MUNICIP=1", "y=1,ID_MUNICIP=2"]))
    assert list(read_release(path).releases[0].columns) == ["y", "ID_MUNICIP", "geometry"]


# ---------------------------------------------------------------------- lattice and value types
def _lattice_changed(**changes):
    def tamper(path):
        set_metadata(path, "lattice", {**metadata_value(path, "lattice"), **changes})
    return tamper


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (_lattice_changed(shape=[10**12, 5]), r"has the shape 1000000000000 x 5 of cells .* "
                                              r"which do not span its bounds"),
        (_lattice_changed(shape=[10**12, 5], cell_size=[2000.0, 1e-8]),
         r"has the shape 1000000000000 x 5, but its grid layer has 25 cells and is not clipped"),
        (_lattice_changed(shape=[5, 6], cell_size=[2000.0 * 5 / 6, 2000.0]),
         r"has the shape 5 x 6, but its grid layer has 25 cells and is not clipped"),
        (_lattice_changed(shape=[4, 5], cell_size=[2000.0, 2500.0]),
         r"has the shape 4 x 5, but its grid layer has 25 cells"),
        (_lattice_changed(shape=[5, 6], cell_size=[2000.0 * 5 / 6, 2000.0], is_clipped=True),
         r"has the shape 5 x 6 of cells .*, but 25 cells of its grid layer lie outside their "
         r"places"),
        (_lattice_changed(shape=None), r"gives a square lattice no shape or cell size"),
        (_lattice_changed(kind="triangular"), r"names the lattice kind 'triangular'"),
    ],
)
def test_a_lattice_that_disagrees_with_its_grid_layer_is_refused(release_of_three, tamper,
                                                                 message):
    # shape [10**12, 5] beside 25 cells and a grid layer of 25 rows was read and printed.
    tamper(release_of_three)
    with pytest.raises(InputError, match=rf"release.gpkg: its metadata 'lattice' (?:{message})"
                                         r".*was edited after it was written"):
        read_release(release_of_three)


@pytest.mark.parametrize("orientation", ["pointy", "flat"])
def test_a_hexagonal_lattice_is_checked_against_its_grid_layer(tmp_path, orientation):
    path = tmp_path / "release.gpkg"
    grid = Grid.hexagonal((XMIN, YMIN, XMAX, YMAX), cell_size=1500.0, orientation=orientation,
                          crs=CRS)
    write_release(path, [public_like(4)], grid=grid, metadata={"method": "paiva"})
    # Flat-top hexagons' row 0 is the westernmost column ("the southernmost row" was written).
    layer = gpd.read_file(path, layer="grid")
    first = shapely.centroid(layer.geometry[layer["row"] == 0])
    row_order = read_release(path).metadata["lattice"]["row_order"]
    if orientation == "flat":
        assert row_order.startswith("flat-top hexagons in odd-q offset columns: row 0 is the "
                                    "westernmost column")
        assert np.ptp(first.x) < 1e-6 < np.ptp(first.y)
    else:
        assert row_order.startswith("pointy-top hexagons in odd-r offset rows")
        assert np.ptp(first.y) < 1e-6 < np.ptp(first.x)
    rows, cols = read_release(path).metadata["lattice"]["shape"]
    set_metadata(path, "lattice", {**metadata_value(path, "lattice"), "shape": [rows + 5, cols]})
    with pytest.raises(InputError, match=rf"has the shape {rows + 5} x {cols}, but its grid "
                                         r"layer has cells in rows 0\.\.\d+ .* not clipped"):
        read_release(path)


def _edit_values(path, statement):
    """Run an UPDATE on a layer, as GDAL's SQL or a database browser would (its R*Tree
    triggers call SpatiaLite-style functions, which plain sqlite3 lacks)."""
    with sqlite3.connect(path) as connection:
        for function in ("ST_IsEmpty", "ST_MinX", "ST_MaxX", "ST_MinY", "ST_MaxY"):
            connection.create_function(function, 1, lambda geometry: 0)
        connection.execute(statement)
    connection.close()


@pytest.fixture
def typed_release(tmp_path):
    path = tmp_path / "release.gpkg"
    frame = public_like(4, z=[0.5, 1.5, 2.5, 3.5], kind=["a", "b", "a", "c"],
                        flag=[True, False, True, True])
    write_release(path, [frame, frame], metadata={"method": "paiva"})
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("UPDATE synthetic_1 SET y = '7a' WHERE fid = 1", r"column 'y' \(declared INTEGER\) that "
                                                          r"are not integers"),
        ("UPDATE synthetic_2 SET y = 1.5 WHERE fid = 2", r"'synthetic_2' holds 1 value\(s\) in "
                                                         r"its column 'y'"),
        ("UPDATE synthetic_1 SET z = 'abc' WHERE fid > 1",
         r"holds 3 value\(s\) in its column 'z' \(declared REAL\) that are not numbers"),
        ("UPDATE synthetic_1 SET kind = X'00' WHERE fid = 1", r"column 'kind' \(declared TEXT\) "
                                                              r"that are not text"),
        ("UPDATE synthetic_1 SET flag = 7 WHERE fid = 1", r"column 'flag' \(declared BOOLEAN\) "
                                                          r"that are not 0 or 1"),
        ("UPDATE grid SET n_neighbours = 'x' WHERE fid = 1", r"'grid' holds 1 value"),
    ],
)
def test_values_not_of_their_column_type_are_refused(typed_release, edit, message):
    # SQLite keeps text in an INTEGER column, and GDAL read '7a' as 7, 'abc' as 0.0 and a flag
    # of 7 as True: evaluate then counted other records than the file holds.
    if "grid" in edit:
        write_release(typed_release, [public_like(4)], overwrite=True, metadata={"method": "paiva"},
                      grid=Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(2, 2), crs=CRS))
    _edit_values(typed_release, edit)
    with pytest.raises(InputError, match=rf"release.gpkg: its layer .*{message}.*GDAL reads as "
                                         r"other values, so the file was edited after it was "
                                         r"written"):
        read_release(typed_release)


def test_missing_and_converted_values_of_a_column_type_are_read(typed_release):
    # NULL is every type's missing value; SQLite stores '5' in a TEXT column as text.
    _edit_values(typed_release, "UPDATE synthetic_1 SET y = NULL, z = 4, kind = 5 WHERE fid = 1")
    first = read_release(typed_release).releases[0]
    assert first["kind"].tolist()[0] == "5" and first["z"].tolist()[0] == 4.0


# ---------------------------------------------------------------------- values never drawn
@pytest.fixture
def release_with_limits(tmp_path, fitted, confidential):
    fit = fitted[0]
    drawn = synthesize(fit, confidential, m=2, seed=SYNTH_SEED, limits={"z": (0.0, 200.0)})
    path = tmp_path / "release.gpkg"
    write_release(path, [to_public(r, seed=k) for k, r in enumerate(drawn)], fit=fit)
    return path


def _rewritten(path, edit, out):
    """Write every layer of ``path`` again with GDAL to ``out``, ``edit`` applied to synthetic_1.

    A consistent GeoPackage: its tables, extents and spatial indexes are GDAL's own, so only
    the values can tell the edit.
    """
    layers = all_layers(path)
    layers["synthetic_1"] = edit(layers["synthetic_1"])
    for layer, frame in layers.items():
        pyogrio.write_dataframe(frame, out, layer=layer, append=out.exists())
    return out


def _moved_far(frame):
    frame = frame.copy()
    frame.geometry = frame.geometry.translate(1e6, 0.0)  # as an extreme record would be
    return frame


def _value_set(column, value):
    def edit(frame):
        frame = frame.copy()
        frame[column] = frame[column].astype(np.float64)  # a numeric column still
        frame.loc[0, column] = value
        return frame
    return edit


def _numbered(frame):
    frame = frame.copy()
    frame["fid"] = np.random.default_rng(0).permutation(len(frame)) * 7 + 10017  # record ids
    return frame


def _beside_the_geometry(frame):
    frame = frame.rename_geometry("location")
    frame["geometry"] = frame.geometry.x + 0.5  # read back as the points: never seen
    return frame


@pytest.mark.parametrize(("edit", "message"), [
    (_moved_far, r"layer synthetic_1 has points outside its grid layer"),
    (_numbered, r"layer 'synthetic_1' has feature ids other than 1 to \d+, which geosynth "
                r"writes"),
    (_beside_the_geometry, r"layer 'synthetic_1' has columns \['geometry'\] that GDAL does "
                           r"not read back"),
    (_value_set("z", np.nan), r"layer synthetic_1 has missing values in \['z'\]"),
    (_value_set("y", np.nan), r"layer synthetic_1 has missing values in \['y'\]"),
    (_value_set("z", 1e300), r"layer synthetic_1 has values of 'z' outside its metadata "
                             r"'limits'"),
    (lambda frame: frame.assign(x1=frame["x1"].where(frame.index != 0, 99)),
     r"layer synthetic_1 has 1 combination\(s\) of attribute levels that its model did not "
     r"fit"),
], ids=["far-point", "feature-ids", "hidden-column", "null-z", "null-attribute",
         "z-beyond-limits", "unfitted-level"])
def test_values_geosynth_never_draws_are_refused_as_edited(release_with_limits, edit, message):
    # Each passed read_release, inspect and evaluate: the checks read the tables, not the values.
    assert read_release(release_with_limits).metadata["limits"] == {"z": [0.0, 200.0]}
    folder = release_with_limits.parent
    assert read_release(_rewritten(release_with_limits, lambda frame: frame,
                                   folder / "same.gpkg")).m == 2
    with pytest.raises(InputError, match=message + r".*, so the file was edited after it was "
                                                   r"written"):
        read_release(_rewritten(release_with_limits, edit, folder / "edited.gpkg"))


def test_a_column_named_as_the_read_geometry_is_refused_before_writing(tmp_path, fitted):
    # Written beside the geometry column "geom", it was read back as the points: its values
    # (here the points' x) were in the published file, unseen by read_release and inspect.
    # (With fit= the model's columns are checked first, and without it the record of the
    # columns the synthesizer made: made here to list it.)
    _, _, public = fitted
    hidden = [frame.rename_geometry("location") for frame in public]
    for frame in hidden:
        frame["geometry"] = frame.geometry.x
        with_record(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # no fit: nothing says how made
        with pytest.raises(InputError, match=r"has a column 'geometry', a name the GeoPackage "
                                             r"layer uses for itself"):
            write_release(tmp_path / "hidden.gpkg", hidden)
    assert names(tmp_path) == []


@pytest.mark.parametrize(("edit", "message"), [
    (lambda frame: frame.assign(z=frame["z"].where(frame.index != 0)),
     r"release 1 \(synthetic_1\) has missing values in \['z'\]"),
    (lambda frame: frame.assign(z=frame["z"].where(frame.index != 0, 500.0)),
     r"release 1 \(synthetic_1\) has values of 'z' outside its metadata 'limits'"),
    (lambda frame: frame.assign(x1=frame["x1"].where(frame.index != 0, 99)),
     r"release 1 \(synthetic_1\) has 1 combination\(s\) of attribute levels that its model "
     r"did not fit"),
], ids=["missing", "beyond-limits", "unfitted-level"])
def test_values_the_reader_refuses_are_refused_before_writing(tmp_path, fitted, confidential,
                                                              edit, message):
    # Written without a word, then refused by read_release as an edited file.
    fit = fitted[0]
    drawn = synthesize(fit, confidential, m=2, seed=SYNTH_SEED, limits={"z": (0.0, 200.0)})
    public = [to_public(r, seed=k) for k, r in enumerate(drawn)]
    public[0] = edit(public[0])
    with pytest.raises(InputError, match=message + r".*a reader would take the file for an "
                                                   r"edited one"):
        write_release(tmp_path / "r.gpkg", public, fit=fit)
    assert names(tmp_path) == []


def test_a_seed_in_the_text_of_a_crs_is_not_published(tmp_path):
    # A CRS without an authority code is published as its WKT (name and remarks included),
    # which the seed scan did not read: the seed went into the file four times.
    seed = 918273645
    base = pyproj.CRS("+proj=tmerc +lat_0=0 +lon_0=-44.3 +k=0.99991 +x_0=500000 "
                      "+y_0=10000000 +ellps=GRS80 +units=m +no_defs").to_json_dict()
    named = pyproj.CRS.from_json_dict({**base, "name": f"local grid (seed {seed})"})
    assert named.to_authority() is None
    frame = with_record(gpd.GeoDataFrame({"y": np.arange(30) % 2},
                                         geometry=gpd.points_from_xy(10.0 * np.arange(30),
                                                                     np.zeros(30)),
                                         crs=named))
    with pytest.raises(InputError, match=r"the releases' CRS \(its WKT is published\).*seeds "
                                         r"must not be published"):
        write_release(tmp_path / "r.gpkg", [to_public(frame, seed=1)],
                      metadata={"method": "paiva"}, seeds={"synthesize": seed})
    assert names(tmp_path) == []
    # Its parameters are numbers a seed may equal by chance (a false easting of 500000).
    plain = frame.set_crs(pyproj.CRS.from_json_dict(base), allow_override=True)
    write_release(tmp_path / "r.gpkg", [to_public(plain, seed=1)],
                  metadata={"method": "paiva"}, seeds={"synthesize": 500000})


def test_releases_beyond_the_grid_are_refused_before_writing(tmp_path, fitted):
    # written, then refused by the reader as an edited file
    fit, _, public = fitted
    far = Grid.regular((0.0, 0.0, 10.0, 10.0), shape=(2, 2), crs=CRS)
    with pytest.raises(InputError, match=r"release 1 \(synthetic_1\) has points outside the "
                                         r"cells of the grid.*pass the grid"):
        write_release(tmp_path / "far.gpkg", public, grid=far)
    assert names(tmp_path) == []


def test_provenance_goes_to_the_audit_file_only(tmp_path):
    # The seeds alone did not say which inputs and options made a release.
    path = tmp_path / "release.gpkg"
    provenance = {"inputs": {"INPUT": {"/data/cases.gpkg": "ab" * 32}}, "options": {"m": 2}}
    write_release(path, [public_like()], metadata={"epsilon": 1.0}, provenance=provenance)
    audit = json.loads(audit_path(path).read_text())
    assert audit["provenance"] == provenance and audit["seeds"] is None
    assert stat.S_IMODE(audit_path(path).stat().st_mode) == 0o600
    assert b"cases.gpkg" not in path.read_bytes()
    assert verify_audit(path)["provenance"] == provenance
    with pytest.raises(InputError, match="provenance must be a mapping"):
        write_release(tmp_path / "other.gpkg", [public_like()], metadata={"epsilon": 1.0},
                      provenance=["cases.gpkg"])


def test_a_level_of_minus_zero_reads_back_as_its_combination(tmp_path):
    # A level -0.0 (rounding a small negative value) was labelled "-0.0"; the GeoPackage stores
    # 0.0, and the file geosynth wrote was refused as edited (a combination not fitted).
    frame = public_like(4, a=np.array([-0.0, 1.0, -0.0, 1.0])).drop(columns="y")
    assert labels_of(frame, ["a"]) == ["a=0.0", "a=1.0", "a=0.0", "a=1.0"]
    path = tmp_path / "release.gpkg"
    write_release(path, [frame], metadata={"method": "paiva"})
    set_metadata(path, "model", _model(attributes=["a"], combinations=["a=0.0", "a=1.0"]))
    assert read_release(path).m == 1


def test_combinations_differing_only_in_case_are_refused_with_the_intensity(tmp_path,
                                                                           confidential):
    # lambda_c=A and lambda_c=a are one column of a GeoPackage: GDAL failed mid-write with
    # "Error adding field".
    data = confidential.assign(c=np.where(confidential["y"] == 1, "A", "a"))
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(4, 4), crs=CRS)
    counts = prepare(data, grid, attributes=["c"])
    fit = PaivaModel().fit(counts, n_iter=40, burn_in=20, chains=1, seed=1, progress=False)
    public = [to_public(r, seed=1) for r in synthesize(fit, data, m=1, seed=2)]
    with pytest.raises(InputError, match=r"combinations 'c=A' and 'c=a' differ only in case"):
        write_release(tmp_path / "r.gpkg", public, fit=fit, include_intensity=True)
    assert names(tmp_path) == []
    write_release(tmp_path / "r.gpkg", public, fit=fit)  # without the intensity columns


def test_a_column_added_to_a_release_of_a_recorded_model_is_refused(tmp_path,
                                                                     make_scenario_counts):
    # orig_x, holding the records' eastings, added to a release whose metadata records its
    # model: inspect only warned and evaluate read it without a word. The writer refuses any
    # column the model does not release, so a file holding one was edited.
    scenario, _, counts = make_scenario_counts(n=80, seed=4, shape=(4, 4), attributes=["y"])
    fit = PaivaModel().fit(counts, n_iter=40, burn_in=10, chains=1, seed=1, progress=False)
    public = [to_public(r, seed=2) for r in synthesize(fit, scenario.data, m=1, seed=2)]
    path = tmp_path / "release.gpkg"
    write_release(path, public, fit=fit)
    assert read_release(path).metadata["model"] is not None
    sql(path, "ALTER TABLE synthetic_1 ADD COLUMN orig_x REAL")
    with pytest.raises(InputError, match=r"its layer 'synthetic_1' has columns \['orig_x'\] "
                                         r"that the model its metadata records does not release"
                                         r".*the file was edited after it was written"):
        read_release(path)


def test_a_release_written_again_with_source_date_epoch_is_the_same_to_the_byte(
        tmp_path, fitted, monkeypatch):
    # Written twice from the same data and seeds, the files differed only in the times of
    # writing (created_utc, GDAL's gpkg_contents.last_change): a reproduction could not be
    # checked against the audit file's SHA-256.
    import hashlib
    import sqlite3
    import time

    fit, _, public = fitted
    seeds = {"fit": FIT_SEED}
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    digests, audits = [], []
    for name in ("a", "b"):
        path = tmp_path / name / "release.gpkg"
        path.parent.mkdir()
        write_release(path, public, fit=fit, seeds=seeds)
        digests.append(hashlib.sha256(path.read_bytes()).hexdigest())
        audits.append(json.loads(audit_path(path).read_text()))
        time.sleep(1.1)  # a second apart: the clock would show
    assert digests[0] == digests[1] == audits[0]["sha256"] == audits[1]["sha256"]
    assert read_release(tmp_path / "a" / "release.gpkg").metadata["created_utc"] == \
        "2023-11-14T22:13:20+00:00"
    with sqlite3.connect(tmp_path / "a" / "release.gpkg") as connection:
        dates = connection.execute("SELECT DISTINCT last_change FROM gpkg_contents").fetchall()
    connection.close()
    assert dates == [("2023-11-14T22:13:20.000Z",)]
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(InputError, match=r"SOURCE_DATE_EPOCH is 'yesterday', not a whole number"):
        write_release(tmp_path / "c.gpkg", public, fit=fit)
    assert not (tmp_path / "c.gpkg").exists()


# ---------------------------------------------------------------------- paths GDAL misreads
def test_a_path_with_a_bang_is_refused_and_leaves_the_file_it_names_alone(tmp_path,
                                                                          monkeypatch):
    # pyogrio read "r!cases.gpkg" as the member cases.gpkg of an archive "r": the release was
    # added, in place and with no overwrite, to the existing cases.gpkg (the input, say).
    monkeypatch.chdir(tmp_path)
    cases = write_release(tmp_path / "cases.gpkg", [public_like(4)])
    before = cases.read_bytes()
    for target in ("r!cases.gpkg", str(tmp_path / "r!cases.gpkg"), "sub/release!.gpkg"):
        with pytest.raises(InputError, match="holds a '!'.*rename the file"):
            write_release(target, [public_like(5)])
        with pytest.raises(InputError, match="holds a '!'"):
            read_release(target)
    assert cases.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.gpkg"]


def test_a_leading_space_or_a_url_scheme_reads_the_file_named(tmp_path, monkeypatch):
    # " r.gpkg" was read as r.gpkg (pyogrio drops the space) and "s3:r.gpkg" as an S3 object.
    monkeypatch.chdir(tmp_path)
    write_release(tmp_path / "r.gpkg", [public_like(4)])
    for name, n in ((" r.gpkg", 6), ("s3:r.gpkg", 7)):
        write_release(name, [public_like(n)])
        assert len(read_release(name).releases[0]) == n
    assert len(read_release("r.gpkg").releases[0]) == 4


@pytest.mark.parametrize(("name", "fix"), [("r.kml", "r.gpkg"), ("r.gpkg.zip", "r.gpkg"),
                                         ("release", "release.gpkg"), ("r.csv", "r.gpkg")])
def test_a_release_file_is_named_gpkg(tmp_path, name, fix):
    # GDAL took r.kml for KML and rewrote it with each layer: a release of one layer was
    # committed, with its audit file, as written.
    with pytest.raises(InputError, match=rf"must end in \.gpkg.*name it {fix}$"):
        write_release(tmp_path / name, [public_like(4)])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("finer", ["400us", "100ns"])
def test_date_times_finer_than_a_millisecond_are_refused(tmp_path, finer):
    # GDAL stores milliseconds: levels 08:00:00 and 08:00:00.0004 were written as one; .0001
    # and .0002 were read back as an edited file.
    start = pd.Timestamp("2020-03-01 08:00:00", tz="UTC")
    when = [start, start + pd.Timedelta(finer), start, start + pd.Timedelta("2ms")]
    with pytest.raises(InputError, match=r"'when' has 1 date/time value\(s\) finer than a "
                                         r"millisecond.*dt\.round\('ms'\)"):
        write_release(tmp_path / "r.gpkg", [public_like(4, when=when)])
    assert list(tmp_path.iterdir()) == []
    whole = [start, start + pd.Timedelta("1ms"), start, start + pd.Timedelta("2ms")]
    read = read_release(write_release(tmp_path / "r.gpkg", [public_like(4, when=whole)]))
    assert read.releases[0]["when"].nunique() == 3


def test_a_release_in_a_folder_named_like_a_url_is_written_there(tmp_path, monkeypatch):
    # pyogrio read the staged path "file:sub/.r.gpkg.geosynth-staging-.../r.gpkg" as a URL,
    # "sub/...", and the write failed after all the work.
    monkeypatch.chdir(tmp_path)
    for folder in ("file:sub", "s3:sub"):
        write_release(f"{folder}/r.gpkg", [public_like(4)])
        assert (tmp_path / folder / "r.gpkg").is_file()
        assert len(read_release(f"{folder}/r.gpkg").releases[0]) == 4
    assert not (tmp_path / "sub").exists()
