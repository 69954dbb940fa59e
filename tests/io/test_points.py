"""read_points: GeoPackage, GeoParquet, shapefile and CSV files, and what is refused."""

import json
import sys
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pyproj
import pytest
import shapely

from geosynth.cli.messages import cli_message
from geosynth.errors import CRSError, DataWarning, InputError, InputTypeError
from geosynth.io import read_points
from tests.io.helpers import CRS, XMAX, XMIN, YMAX, YMIN, assert_same_points


def test_read_points_geopackage(tmp_path, points):
    path = tmp_path / "points.gpkg"
    points.to_file(path, layer="records", engine="pyogrio")
    assert_same_points(read_points(path), points)


def test_read_points_geopackage_layers(tmp_path, points):
    path = tmp_path / "points.gpkg"
    points.to_file(path, layer="records", engine="pyogrio")
    points.to_file(path, layer="more_records", engine="pyogrio")
    with pytest.raises(InputError, match=r"2 layers: 'records' \(Point\), 'more_records' "
                       r"\(Point\); 2 of them of points: pass layer="):
        read_points(path)
    assert_same_points(read_points(path, layer="records"), points)
    with pytest.raises(InputError, match=r"layer='nope'.*has 2 layers: 'records' \(Point\).*"
                       r"none of them named so"):
        read_points(path, layer="nope")


def test_read_points_geopackage_picks_the_only_point_layer(tmp_path, points):
    # It was picked silently (read_polygons said so): now both say so.
    path = tmp_path / "points.gpkg"
    points.to_file(path, layer="records", engine="pyogrio")
    region = gpd.GeoDataFrame(geometry=[shapely.box(XMIN, YMIN, XMAX, YMAX)], crs=CRS)
    region.to_file(path, layer="region", engine="pyogrio")
    with pytest.warns(DataWarning, match=r"^points.gpkg: read its only point layer 'records' "
                      r"\(of 2 layers; layer= \(CLI: --layer\) reads another\)$") as got:
        assert_same_points(read_points(path), points)
    assert got[0].filename == __file__  # the warning points at the caller of read_points
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same_points(read_points(path, layer="records"), points)  # chosen: no warning


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


def test_geoparquet_index_of_ids_comes_back_as_row_numbers(tmp_path, points):
    pytest.importorskip("pyarrow")
    # geopandas writes a frame's own index into the file: patient ids would then label the
    # rows in every message that names rows.
    path = tmp_path / "points.parquet"
    points.set_axis([f"PATIENT-{k:05d}" for k in range(len(points))]).to_parquet(path)
    back = read_points(path)
    pd.testing.assert_index_equal(back.index, pd.RangeIndex(len(points)))
    assert not any("PATIENT" in str(c) for c in back.columns)


def _tampered_parquet(tmp_path, points, change):
    """A GeoParquet file of ``points`` whose arrow table ``change(table, geo)`` rewrites."""
    import json

    import pyarrow.parquet as pq

    good, bad = tmp_path / "good.parquet", tmp_path / "bad.parquet"
    points.to_parquet(good)
    table = pq.read_table(good)
    metadata = dict(table.schema.metadata)
    geo = json.loads(metadata[b"geo"])
    table = change(table, geo)
    metadata[b"geo"] = json.dumps(geo).encode()
    pq.write_table(table.replace_schema_metadata(metadata), bad)
    return bad


def test_a_parquet_file_without_geometry_gets_a_fix_not_pandas_advice(tmp_path, points):
    # geopandas' own text: "Missing geo metadata ... Use pandas.read_parquet/read_feather".
    pytest.importorskip("pyarrow")
    path = tmp_path / "plain.parquet"
    pd.DataFrame(points.drop(columns="geometry")).to_parquet(path)
    message = r"plain.parquet is a Parquet file without geometry \(no GeoParquet 'geo' metadata"
    with pytest.raises(InputError, match=message + r"\): save the points") as err:
        read_points(path)
    assert "read_parquet" not in str(err.value)


def test_tampered_geoparquet_gives_clear_errors(tmp_path, points):
    pa = pytest.importorskip("pyarrow")

    def bad_crs(table, geo):
        geo["columns"]["geometry"]["crs"] = "NOT A CRS"
        return table

    def bad_wkb(table, geo):
        column = table.schema.get_field_index("geometry")
        return table.set_column(column, "geometry",
                                pa.array([b"\x01\x01\x00"] * len(table), pa.binary()))

    with pytest.raises(CRSError, match="bad.parquet records a CRS that pyproj cannot read"):
        read_points(_tampered_parquet(tmp_path, points, bad_crs))
    with pytest.raises(InputError, match="cannot read the GeoParquet file bad.parquet"):
        read_points(_tampered_parquet(tmp_path, points, bad_wkb))


def test_read_points_geoparquet_without_pyarrow(tmp_path, monkeypatch):
    path = tmp_path / "points.parquet"
    path.write_bytes(b"PAR1 not really")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    monkeypatch.setattr(pyogrio, "list_drivers", lambda **kwargs: {})
    with pytest.raises(ImportError, match=r"pip install pyarrow.*ogr2ogr points.gpkg"):
        read_points(path)


def test_the_ogr2ogr_advice_without_pyarrow_quotes_the_file_names(tmp_path, monkeypatch):
    # Unquoted, "my points (1).parquet" made the pasted command a shell syntax error, and a
    # name holding ";" ran a second command.
    import shlex

    path = tmp_path / "my points (1);x.parquet"
    path.write_bytes(b"PAR1 not really")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setattr(pyogrio, "list_drivers", lambda **kwargs: {})
    with pytest.raises(ImportError) as caught:
        read_points(path)
    command = str(caught.value).split("e.g. ")[1]
    assert shlex.split(command) == ["ogr2ogr", "my points (1);x.gpkg", "my points (1);x.parquet"]


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


def test_a_csv_file_starting_with_a_comment_line_is_explained(tmp_path):
    # The bundled data/susep_collisions.csv starts with "# Ford Fusion collisions ...": read as
    # the header, it gave "has no column 'lon'; its columns are ['# Ford Fusion ...', ...]".
    path = tmp_path / "points.csv"
    path.write_text("# Collisions by driver, Belo Horizonte, 2011\nlon,lat,sex\n1,2,f\n")
    with pytest.raises(InputError, match=r"x='lon': points.csv has no column 'lon'; its first "
                                         r"line starts with '#', a comment line.*remove the "
                                         r"comment lines") as caught:
        read_points(path, x="lon", y="lat", crs=CRS)
    assert "Collisions" not in str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "missing"),
    [({}, "x=, y=, crs="), ({"x": "east", "y": "north"}, "crs="), ({"crs": CRS, "y": "n"}, "x=")],
)
def test_read_points_csv_needs_x_y_crs(tmp_path, kwargs, missing):
    path = tmp_path / "points.csv"
    path.write_text("east,north\n1,2\n")
    with pytest.raises(InputError, match=rf"--x, --y, --crs\); missing: {missing}$") as caught:
        read_points(path, **kwargs)
    # parameters the command line names as options: "missing: crs" was left as is
    shown = cli_message(str(caught.value))
    assert shown.endswith("missing: " + ", ".join(f"--{name}" for name in
                                                  missing.replace("=", "").split(", ")))


def test_a_csv_column_named_geometry_is_not_silently_replaced(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("east,north,geometry\n1,2,kitchen\n3,4,garden\n")
    with pytest.raises(InputError, match="column named 'geometry' besides x='east'"):
        read_points(path, x="east", y="north", crs=CRS)


def test_read_points_csv_bad_columns(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("east,north,y\n1,2,0\nabc,3,1\n4,,1\n")
    with pytest.raises(InputError, match=r"x='lon'.*no column 'lon'.*\['east', 'north', 'y'\]"):
        read_points(path, x="lon", y="north", crs=CRS)
    with pytest.raises(InputError,
                       match=r"x='east'.*1 non-numeric values \(rows \[1\]; counted from 0"):
        read_points(path, x="east", y="north", crs=CRS)
    path.write_text("east,north,y\n1,2,0\n3,,1\n")
    with pytest.raises(InputError,
                       match=r"y='north'.*1 missing values \(rows \[1\]; counted from 0"):
        read_points(path, x="east", y="north", crs=CRS)
    with pytest.raises(InputError, match="two different columns"):
        read_points(path, x="east", y="east", crs=CRS)
    with pytest.raises(CRSError, match="not a valid CRS"):
        read_points(path, x="east", y="north", crs="EPSG:nonsense")


def test_read_points_bad_files(tmp_path, points):
    with pytest.raises(InputError, match="does not exist"):
        read_points(tmp_path / "absent.gpkg")
    # a loop of links was "does not exist; check the file name"
    (tmp_path / "a.gpkg").symlink_to(tmp_path / "b.gpkg")
    (tmp_path / "b.gpkg").symlink_to(tmp_path / "a.gpkg")
    with pytest.raises(InputError, match="is a symbolic link to a file that does not exist "
                                         r"\(or a loop of links\)"):
        read_points(tmp_path / "a.gpkg")
    text = tmp_path / "points.txt"
    text.write_text("x")
    with pytest.raises(InputError, match=r"unknown extension '.txt'.*\.csv.*\.gpkg"):
        read_points(text)
    broken = tmp_path / "broken.gpkg"
    broken.write_bytes(b"not a geopackage")
    with pytest.raises(InputError, match=r"broken.gpkg is not a GeoPackage \(or is damaged\)"):
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
    with pytest.raises(InputError, match=r"layer='records' applies to files of several layers "
                       r"only \(a GeoPackage, or a zip of shapefiles in one folder\), but "
                       r"points.csv is a CSV file, which holds one; omit layer"):
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




# ---------------------------------------------------------------------- misleading messages (#13)
def test_read_points_csv_with_only_a_header_has_no_records(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("east,north,y\n")
    with pytest.raises(InputError, match=r"points.csv has no records \(only a header line\)"):
        read_points(path, x="east", y="north", crs=CRS)
    path.write_text("")
    with pytest.raises(InputError, match="points.csv is empty: no header line and no records"):
        read_points(path, x="east", y="north", crs=CRS)


def test_read_points_geopackage_without_records(tmp_path, points):
    path = tmp_path / "points.gpkg"
    points.iloc[:0].to_file(path, layer="records", engine="pyogrio")
    with pytest.raises(InputError, match=r"points.gpkg has no records.*layer \(CLI: --layer\)"):
        read_points(path)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "it is empty \\(0 bytes\\)"),
        (b"id,x,y\n1,2,3\n", "it is not an SQLite database"),
        (b"SQLite format 3\x00" + bytes(40), "it is cut short"),
    ],
)
def test_read_points_empty_or_garbage_geopackage(tmp_path, content, reason):
    path = tmp_path / "points.gpkg"
    path.write_bytes(content)
    with pytest.raises(InputError, match=rf"points.gpkg is not a GeoPackage \(or is damaged\): "
                                         rf"{reason}") as caught:
        read_points(path)
    assert "<DRIVER>" not in str(caught.value)


def test_read_points_truncated_geopackage(tmp_path, points):
    whole = tmp_path / "whole.gpkg"
    many = gpd.GeoDataFrame(
        {"y": range(3000)}, geometry=gpd.points_from_xy(range(3000), range(3000)), crs=CRS
    )
    many.to_file(whole, layer="records", engine="pyogrio")
    data = whole.read_bytes()
    path = tmp_path / "cut.gpkg"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"cut.gpkg is not a GeoPackage \(or is damaged\): its "
                                         r"database is damaged \(truncated or corrupt\)") as caught:
        read_points(path)
    assert "sqlite" not in str(caught.value).lower() and "SELECT" not in str(caught.value)


def test_read_points_csv_with_duplicate_column_names(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("east,north,gender,age,gender\n1,2,f,30,m\n")
    with pytest.raises(InputError, match=r"several columns named 'gender' \(pandas would silently "
                                         r"rename the copies, e.g. to 'gender.1'\)"):
        read_points(path, x="east", y="north", crs=CRS)


def test_row_numbers_say_what_they_count(tmp_path, points):
    path = tmp_path / "points.csv"
    path.write_text("east,north\n1,2\n3,x\n")
    with pytest.raises(InputError, match=r"rows \[1\]; counted from 0: row i is line i \+ 2"):
        read_points(path, x="east", y="north", crs=CRS)
    gpkg = tmp_path / "mixed.gpkg"
    mixed = points.copy()
    mixed.geometry = [points.geometry[0], points.geometry[1].buffer(1.0), points.geometry[2]]
    mixed.to_file(gpkg, engine="pyogrio")
    with pytest.raises(InputError, match=r"rows \[1\]; counted from 0 in file order; they are not "
                                         r"GeoPackage fids"):
        read_points(gpkg)


def test_layer_messages_name_the_cli_option(tmp_path, points):
    path = tmp_path / "points.gpkg"
    points.to_file(path, layer="records", engine="pyogrio")
    points.to_file(path, layer="more", engine="pyogrio")
    with pytest.raises(InputError, match=r"pass layer= \(CLI: --layer\) to choose the one to "
                       "read"):
        read_points(path)
    with pytest.raises(InputError, match=r"layer='nope' \(CLI: --layer\)"):
        read_points(path, layer="nope")


def test_read_points_for_a_dp_release_refuses_nothing_on_values(tmp_path):
    # A refusal that one record could trigger would disclose it: check_values=False passes
    # such records on, and prepare(levels=...) drops them.
    from geosynth import Grid, prepare
    from geosynth.errors import DataWarning

    path = tmp_path / "points.csv"
    path.write_text("east,north,y\n1,2,0\nabc,3,1\n4,,1\n")
    points = read_points(path, x="east", y="north", crs=CRS, check_values=False)
    assert len(points) == 3
    grid = Grid.regular((0, 0, 10, 10), shape=(2, 2), crs=CRS)
    with pytest.warns(DataWarning, match="2 without a usable point geometry"):
        counts = prepare(points, grid, ["y"], levels={"y": [0, 1]})
    assert counts.counts.sum() == 1 and list(counts.record_index) == [0]
    path.write_text("east,north,y\n")
    assert len(read_points(path, x="east", y="north", crs=CRS, check_values=False)) == 0
    gpkg = tmp_path / "shapes.gpkg"
    shapes = gpd.GeoDataFrame({"y": [0]}, geometry=[shapely.box(0, 0, 1, 1)], crs=CRS)
    shapes.to_file(gpkg, engine="pyogrio")
    assert len(read_points(gpkg, check_values=False)) == 1


def test_a_truncated_shapefile_is_named_as_such(tmp_path, points):
    # GDAL read it without error, the records past the cut without geometry.
    path = tmp_path / "points.shp"
    points.to_file(path)
    assert len(read_points(path)) == len(points)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 10])
    with pytest.raises(InputError, match=r"points.shp is truncated: its index lists 3 records"):
        read_points(path)
    with pytest.raises(InputError, match="truncated"):
        read_points(path, check_values=False)  # a fact of the file, not of the values


@pytest.mark.parametrize("check_values", [True, False])
def test_a_shapefile_without_its_dbf_is_refused(tmp_path, points, check_values):
    # GDAL read the geometries alone: the attributes surfaced later as columns not in the file.
    path = tmp_path / "points.shp"
    points.to_file(path, engine="pyogrio")
    (tmp_path / "points.dbf").unlink()
    with pytest.raises(InputError, match=r"points.shp has no points.dbf beside it, which holds "
                                         r"the records' attributes; copy the shapefile again"):
        read_points(path, check_values=check_values)


@pytest.mark.parametrize("check_values", [True, False])
def test_a_csv_header_one_name_short_is_refused_not_read_with_ids_as_row_labels(
    tmp_path, check_values
):
    # pandas takes the unnamed first column (here patient IDs) as the index: the IDs then named
    # rows in every later message ("rows ['PAT0007']"), e.g. on the terminal of the CLI.
    path = tmp_path / "points.csv"
    path.write_text("east,north,y\nPAT0001,1,2,0\nPAT0002,3,4,1\n")
    with pytest.raises(InputError, match="more fields in its records than names") as caught:
        read_points(path, x="east", y="north", crs=CRS, check_values=check_values)
    assert "PAT" not in str(caught.value)
    path.write_text("east,north,y\n9001,1,2,0\n9002,3,4,1\n")  # integer IDs: a RangeIndex
    with pytest.raises(InputError, match="more fields in its records than names"):
        read_points(path, x="east", y="north", crs=CRS, check_values=check_values)


def test_a_record_of_many_more_fields_than_names_is_refused_from_the_dropped_fields(
        tmp_path, monkeypatch):
    # pandas built a row index of the extra fields before the refusal: a 4 MB line of 2
    # million fields took 7 minutes. Read with index_col=False, the extra fields are dropped
    # with a ParserWarning, which is the refusal: no row index is built.
    path = tmp_path / "points.csv"
    path.write_text("x,y\n" + ",".join(["1"] * 50_000) + "\n")
    read_csv = pd.read_csv
    monkeypatch.setattr(pd, "read_csv", lambda *a, **k: read_csv(*a, **k) if k.get(
        "nrows") == 1 or k.get("index_col") is False else pytest.fail(f"read with {k}"))
    with pytest.raises(InputError, match="more fields in its records than names"):
        read_points(path, x="x", y="y", crs=CRS)


def test_a_csv_column_without_a_name_is_refused(tmp_path):
    # It came back as 'Unnamed: 0', which no --attributes or levels file could name.
    path = tmp_path / "points.csv"
    path.write_text(",east,north\nA,1,2\nB,3,4\n")
    with pytest.raises(InputError, match=r"has no name for column\(s\) 1 of its header line"):
        read_points(path, x="east", y="north", crs=CRS)


def test_infinite_or_overflowing_csv_coordinates_are_refused(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("east,north,y\n1,2,0\ninf,3,1\n1e400,4,1\n")
    with pytest.raises(InputError, match=r"x='east'.*2 infinite or overflowing values "
                       r"\(rows \[1, 2\]; counted from 0"):
        read_points(path, x="east", y="north", crs=CRS)
    # Under DP (check_values=False) nothing is refused on values: prepare drops them.
    points = read_points(path, x="east", y="north", crs=CRS, check_values=False)
    assert len(points) == 3 and points.geometry.x.tolist()[0] == 1.0


def test_a_csv_that_is_not_utf8_is_refused_without_quoting_its_bytes(tmp_path):
    path = tmp_path / "points.csv"
    path.write_bytes(b"east,north,y\n1,2,caf\xe9\n")
    with pytest.raises(InputError, match="is not UTF-8 text") as caught:
        read_points(path, x="east", y="north", crs=CRS)
    assert "0xe9" not in str(caught.value) and "position" not in str(caught.value)


@pytest.mark.parametrize("check_values", [True, False])
def test_a_csv_without_header_line_is_refused_without_quoting_its_first_record(
    tmp_path, check_values
):
    # Without a header line pandas reads the first record as column names, and the message
    # listed them: "its columns are ['605100.5', '7790200.25', 'PAT0007']".
    path = tmp_path / "points.csv"
    path.write_text("605100.5,7790200.25,PAT0007\n606000.0,7791000.0,PAT0008\n")
    with pytest.raises(InputError, match=r"x='east'.*no column 'east'.*2 number\(s\) where "
                       r"column names belong.*no header line") as caught:
        read_points(path, x="east", y="north", crs=CRS, check_values=check_values)
    for value in ("605100", "7790200", "PAT0007"):
        assert value not in str(caught.value)


def test_a_semicolon_or_tab_separated_csv_gets_a_hint(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("east;north;y\n1,5;2,5;0\n")  # decimal commas: more fields than names
    with pytest.raises(InputError, match=r"more fields in its records.*header line holds ';' "
                       r"where sep=',' was expected: pass sep=';' \(CLI: --sep\) and "
                       r"decimal=','"):
        read_points(path, x="east", y="north", crs=CRS)
    path.write_text("east\tnorth\ty\n1.5\t2.5\t0\n")
    with pytest.raises(InputError, match=r"no column 'east'; its columns are \['east\?north\?y'\]"
                       r"; the header line holds '\\t' \(a tab\) where sep=',' was expected: "
                       r"pass sep='\\t' \(CLI: --sep\)$"):
        read_points(path, x="east", y="north", crs=CRS)
    assert len(read_points(path, x="east", y="north", crs="EPSG:4326", sep="\t")) == 1
    path.write_text("east,north,y\n1.5,2.5,0\n")  # a comma-separated file read with sep=";"
    with pytest.raises(InputError, match=r"holds ',' where sep=';' was expected: pass sep=','"):
        read_points(path, x="east", y="north", crs=CRS, sep=";")
    path.write_text("east,north,y\n1.5,2.5,0\n")
    with pytest.raises(InputError, match=r"its columns are \['east', 'north', 'y'\]$"):
        read_points(path, x="lon", y="north", crs=CRS)


def test_true_false_coordinates_are_not_read_as_one_and_zero(tmp_path):
    # pandas reads a column of True/False as bool, and to_numeric made it 1.0/0.0.
    path = tmp_path / "points.csv"
    path.write_text("east,north,y\nTrue,2,0\nFalse,3,1\n")
    with pytest.raises(InputError, match=r"x='east'.*2 non-numeric values \(rows \[0, 1\]"):
        read_points(path, x="east", y="north", crs=CRS)
    points = read_points(path, x="east", y="north", crs=CRS, check_values=False)
    assert points.geometry.x.isna().all() and points.geometry.y.tolist() == [2.0, 3.0]


def test_reader_errors_carry_no_chained_traceback(tmp_path):
    # "raise ... from err" printed GDAL's and pyproj's tracebacks under the message.
    path = tmp_path / "points.shp"
    path.write_bytes(b"\x00" * 50)
    path.with_suffix(".dbf").write_bytes(b"\x00" * 50)
    with pytest.raises(InputError, match="cannot read points.shp: ") as caught:
        read_points(path)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    csv = tmp_path / "points.csv"
    csv.write_text("east,north\n1,2\n")
    with pytest.raises(CRSError, match="not a valid CRS") as caught:
        read_points(csv, x="east", y="north", crs="EPSG:nonsense")
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_headerless_csv_repeating_a_value_is_not_quoted_as_repeated_names(tmp_path):
    # The first record "5,5,7,0" read as a header "repeated" the name '5': a record's value.
    path = tmp_path / "points.csv"
    path.write_text("5,5,7,0\n1,2,3,4\n")
    with pytest.raises(InputError, match="repeats a name in its first line, which holds a "
                       "number.*no header line") as caught:
        read_points(path, x="east", y="north", crs=CRS)
    assert "'5'" not in str(caught.value)


def test_a_headerless_csv_repeating_a_text_value_is_not_quoted(tmp_path):
    # The first record "5,6,F,F" read as a header repeated the name 'F' (a record's sex,
    # diagnosis code...), quoted because 'F' is no number; its numbers show it is a record.
    path = tmp_path / "points.csv"
    path.write_text("5,6,F,F\n1,2,M,M\n")
    with pytest.raises(InputError, match="repeats a name in its first line, which holds a "
                       "number.*no header line") as caught:
        read_points(path, x="east", y="north", crs=CRS)
    assert "'F'" not in str(caught.value)


@pytest.mark.parametrize(("error", "match"), [
    (PermissionError(13, "Permission denied"), "cannot read the CSV file points.csv: "
                                               "Permission denied"),
    (MemoryError(), "points.csv is too large to read into memory"),
])
def test_csv_read_failures_are_input_errors(tmp_path, monkeypatch, error, match):
    # pandas' PermissionError / MemoryError came out raw, with its traceback.
    path = tmp_path / "points.csv"
    path.write_text("east,north\n1,2\n")

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(pd, "read_csv", fail)
    with pytest.raises(InputError, match=match) as caught:
        read_points(path, x="east", y="north", crs=CRS)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_an_existing_target_is_named_without_its_control_characters(tmp_path):
    from geosynth.io._files import check_target

    target = tmp_path / "out\x1b[2J.gpkg"
    target.write_text("")
    with pytest.raises(InputError, match=r"out\?\[2J\.gpkg exists; pass overwrite=True") as caught:
        check_target(target, overwrite=False)
    assert "\x1b" not in str(caught.value)
    check_target(target, overwrite=True)


# ---------------------------------------------------------------- columns the reader would lose


@pytest.mark.parametrize("suffix", [".gpkg", ".parquet"])
def test_an_attribute_named_geometry_beside_the_geometry_column_is_refused(
    tmp_path, points, suffix
):
    # The GeoPackage default geometry column is 'geom': an attribute 'geometry' was replaced
    # by the points without a word (GeoParquet kept both under confusable names).
    path = tmp_path / f"points{suffix}"
    frame = points.rename_geometry("geom")
    frame["geometry"] = ["a", "b", "c"]
    if suffix == ".gpkg":
        frame.to_file(path, engine="pyogrio")
    else:
        frame.to_parquet(path)
    with pytest.raises(InputError, match=rf"points{suffix} has an attribute column named "
                                         r"'geometry' besides its geometry column 'geom'.*rename"):
        read_points(path)
    with pytest.raises(InputError, match="attribute column named 'geometry'"):
        read_points(path, check_values=False)  # the file's layout, not its values


def _rename_dbf_field(path, old: bytes, new: bytes) -> None:
    """Rename a field of a shapefile's .dbf in place (names are 11 bytes, NUL-padded)."""
    raw = bytearray(path.read_bytes())
    at = raw.find(old.ljust(11, b"\x00"))
    assert at > 0
    raw[at:at + 11] = new.ljust(11, b"\x00")
    path.write_bytes(bytes(raw))


def test_a_shapefile_field_named_geometry_is_refused(tmp_path, points):
    path = tmp_path / "points.shp"
    points.to_file(path, engine="pyogrio")
    _rename_dbf_field(path.with_suffix(".dbf"), b"x1", b"geometry")
    with pytest.raises(InputError, match=r"points.shp has an attribute column named 'geometry' "
                                         r"besides its geometry column;"):
        read_points(path)


def test_a_shapefile_naming_two_fields_alike_is_refused(tmp_path, points):
    # GDAL looks fields up by name: both columns 'y' came back with the values of one of them.
    path = tmp_path / "points.shp"
    points.to_file(path, engine="pyogrio")
    _rename_dbf_field(path.with_suffix(".dbf"), b"x1", b"y")
    with pytest.raises(InputError, match=r"points.shp has several attribute fields named 'y'; "
                                         r".*give each field its own name"):
        read_points(path)


# ---------------------------------------------------------------- arguments and DP messages


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"x": ["east"], "y": "north"}, r"x must be a str or None, got list"),
    ({"x": "east", "y": 1}, r"y must be a str or None, got int 1"),
    ({"x": "east", "y": "north", "check_values": "no"}, r"check_values must be True or False"),
    ({"x": "east", "y": "north", "check_values": None}, r"check_values must be True or False"),
])
def test_arguments_of_the_wrong_type_are_refused_naming_them(tmp_path, kwargs, match):
    # check_values=None silently meant "check nothing"; x=[...] crashed with "unhashable type".
    path = tmp_path / "points.csv"
    path.write_text("east,north\n1,2\n")
    with pytest.raises(TypeError, match=match):
        read_points(path, crs=CRS, **kwargs)


def test_a_truncated_shapefile_under_dp_names_no_record_count(tmp_path):
    # The index's record count and the file's size both tell the number of records, which a
    # differentially private release protects; the terminal output of a failed run gets pasted.
    n = 1234
    frame = gpd.GeoDataFrame({"y": [0] * n},
                             geometry=gpd.points_from_xy([XMIN + 1.0] * n, [YMIN + 1.0] * n),
                             crs=CRS)
    path = tmp_path / "points.shp"
    frame.to_file(path, engine="pyogrio")
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 10])
    with pytest.raises(InputError, match="points.shp is truncated") as caught:
        read_points(path, check_values=False)
    text = str(caught.value)
    sizes = {str(n), f"{n:,}", str(len(raw) - 10), f"{len(raw) - 10:,}", str(len(raw)),
             f"{len(raw):,}"}
    assert not any(size in text for size in sizes), text
    with pytest.raises(InputError, match=f"its index lists {n} records"):
        read_points(path)


@pytest.mark.parametrize(("name", "kwargs"), [
    ("points\x1b[2J.txt", {}),  # unknown extension
    ("points\x1b[2J.csv", {}),  # x, y and crs missing
    ("points\x1b[2J.csv", {"x": "east", "y": "north", "crs": CRS, "layer": "a"}),
    ("points\x1b[2J.gpkg", {"x": "east"}),
])
def test_messages_name_the_file_without_its_control_characters(tmp_path, name, kwargs):
    # A file name is printed by the CLI: an escape sequence in it could rewrite the terminal.
    path = tmp_path / name
    path.write_text("east,north\n1,2\n")
    with pytest.raises(InputError, match=r"points\?\[2J\.") as caught:
        read_points(path, **kwargs)
    assert "\x1b" not in str(caught.value)


# ---------------------------------------------------------------- text and column types


def _shapefile_with_latin1_bytes(tmp_path, points, field_name=False):
    """A shapefile whose .cpg says UTF-8 but whose .dbf holds a CP1252 'é' (a value or a name)."""
    path = tmp_path / "points.shp"
    points.to_file(path, engine="pyogrio")
    dbf = path.with_suffix(".dbf")
    raw = bytearray(dbf.read_bytes())
    at = raw.find(b"x1".ljust(11, b"\x00")) if field_name else raw.find(b"b", raw.find(b"\r"))
    raw[at] = 0xE9
    dbf.write_bytes(bytes(raw))
    return path


@pytest.mark.parametrize("field_name", [False, True])
def test_text_not_in_the_declared_encoding_is_an_input_error_quoting_no_byte(
    tmp_path, points, field_name
):
    # pyogrio's UnicodeDecodeError came out raw, quoting the byte and its offset in the file.
    path = _shapefile_with_latin1_bytes(tmp_path, points, field_name)
    assert path.with_suffix(".cpg").read_text().upper().replace("-", "") == "UTF8"
    for check_values in (True, False):
        with pytest.raises(InputError, match=r"cannot read points.shp: some of its field names "
                           r"or text values are not utf-8 text.*\.cpg file names the wrong "
                           r"encoding") as caught:
            read_points(path, check_values=check_values)
        assert "0xe9" not in str(caught.value) and "position" not in str(caught.value)
        assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_geopackage_text_value_that_is_not_utf8_is_an_input_error(tmp_path, points):
    import sqlite3

    path = tmp_path / "points.gpkg"
    points.to_file(path, layer="records", engine="pyogrio", SPATIAL_INDEX="NO")
    with sqlite3.connect(path) as connection:  # a value written by a tool ignoring the standard
        connection.execute("UPDATE records SET x1 = CAST(X'6de9' AS TEXT) WHERE fid = 2")
    connection.close()
    with pytest.raises(InputError, match=r"points.gpkg: some of its field names or text values "
                       r"are not utf-8 text.*GeoPackage text is UTF-8") as caught:
        read_points(path)
    assert "0xe9" not in str(caught.value)


def test_a_csv_column_gets_one_type_from_all_its_values(tmp_path):
    # pandas inferred types chunk by chunk: codes that were numbers up to row 262144 came back
    # as ints there and as strings after it, so one level was two ('7' and 7), with a
    # DtypeWarning that named no file.
    n = 270_000
    codes = [str(i % 50) for i in range(n)]
    codes[-1] = "A7"
    frame = pd.DataFrame({"east": 600_000 + np.arange(n) % 5_000,
                          "north": 7_790_000 + np.arange(n) // 5_000, "zone": codes})
    path = tmp_path / "points.csv"
    frame.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = read_points(path, x="east", y="north", crs=CRS)
    assert got["zone"].map(type).nunique() == 1
    assert got["zone"].nunique() == 51


@pytest.mark.parametrize("crs", [np.array([1, 0]), pd.Series(["EPSG:31983"]), True])
def test_a_crs_that_is_an_array_or_a_flag_is_refused_by_name(tmp_path, crs):
    # An array or a Series raised NumPy's "truth value of an array is ambiguous" in pyproj.
    path = tmp_path / "points.csv"
    path.write_text("east,north\n1,2\n")
    with pytest.raises(InputTypeError, match=r"^crs must be a pyproj.CRS"):
        read_points(path, x="east", y="north", crs=crs)


@pytest.mark.parametrize(("x", "y"), [("lon", "lat"), ("north", "east")])
def test_coordinates_far_outside_the_crs_area_of_use_are_refused(tmp_path, x, y):
    # Degrees read as EPSG:31983 metres (the South Pole, in UTM 23S) and swapped eastings and
    # northings were read, and released on a lattice of meaningless cells, without a word.
    rng = np.random.default_rng(0)
    lon, lat = rng.uniform(-44.0, -43.9, 30), rng.uniform(-19.95, -19.87, 30)
    east, north = pyproj.Transformer.from_crs(4326, 31983, always_xy=True).transform(lon, lat)
    path = tmp_path / "points.csv"
    pd.DataFrame({"lon": lon, "lat": lat, "east": east, "north": north}).to_csv(path, index=False)
    assert len(read_points(path, x="east", y="north", crs="EPSG:31983")) == 30
    assert len(read_points(path, x="lon", y="lat", crs="EPSG:4326")) == 30
    with pytest.raises(CRSError, match=r"points.csv: its points lie far outside the area where "
                       r"EPSG:31983 is used \(Brazil - between 48°W and 42°W") as caught:
        read_points(path, x=x, y=y, crs="EPSG:31983")
    assert "-19.9" not in str(caught.value) and "-43.9" not in str(caught.value)


# ---------------------------------------------------------------- GeoJSON, FlatGeobuf, zip


def _write_zip(path, files):
    """A zip archive at ``path`` holding ``files``: {name inside the archive: file or bytes}."""
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            data = content if isinstance(content, bytes) else content.read_bytes()
            archive.writestr(name, data)
    return path


def _shapefile_parts(tmp_path, points, stem="points"):
    folder = tmp_path / f"shp_{stem}"
    folder.mkdir()
    points.to_file(folder / f"{stem}.shp", engine="pyogrio")
    return {p.name: p for p in folder.iterdir()}


@pytest.mark.parametrize("suffix", [".geojson", ".json"])
def test_read_points_geojson_comes_back_in_wgs84(tmp_path, points, suffix):
    # RFC 7946: GeoJSON is longitude/latitude in WGS 84; the points are not reprojected, and a
    # lattice then refuses them (as any geographic CRS) asking for a projected CRS.
    from geosynth import Grid

    path = tmp_path / f"points{suffix}"
    wgs84 = points.to_crs(4326)
    pyogrio.write_dataframe(wgs84, path, driver="GeoJSON")
    got = read_points(path)
    assert got.crs.equals(pyproj.CRS("EPSG:4326"))
    np.testing.assert_allclose(shapely.get_coordinates(got.geometry.values),
                               shapely.get_coordinates(wgs84.geometry), rtol=0, atol=1e-12)
    assert got["x1"].tolist() == ["a", "b", "a"] and got["y"].tolist() == [0, 1, 1]
    pd.testing.assert_index_equal(got.index, pd.RangeIndex(3))
    with pytest.raises(CRSError, match="geographic"):
        Grid.from_points(got, shape=(2, 2))
    back = shapely.get_coordinates(got.to_crs(CRS).geometry.values)
    np.testing.assert_allclose(back, shapely.get_coordinates(points.geometry), rtol=0, atol=1e-3)


def test_read_points_geojson_with_a_crs_member_keeps_it(tmp_path, points):
    path = tmp_path / "points.geojson"
    points.to_file(path, driver="GeoJSON", engine="pyogrio")  # GDAL writes the legacy member
    assert_same_points(read_points(path), points)
    assert_same_points(read_points(path, crs=CRS), points)


def test_geojson_metres_read_as_degrees_are_refused_without_quoting_them(tmp_path):
    # GDAL reads a GeoJSON without a "crs" member in EPSG:4326 whatever its numbers: UTM metres
    # came back as "degrees" and crs= could not correct them.
    path = tmp_path / "points.geojson"
    features = [{"type": "Feature", "properties": {"y": 0},
                 "geometry": {"type": "Point", "coordinates": [605100.5, 7790200.25]}}]
    import json

    path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    with pytest.raises(CRSError, match=r"points.geojson: its points lie outside the range of "
                       r"degrees .*RFC 7946.*ogr2ogr -a_srs EPSG:<code> points.gpkg "
                       r"points.geojson") as caught:
        read_points(path)
    assert "605100" not in str(caught.value) and "7790200" not in str(caught.value)
    assert len(read_points(path, check_values=False)) == 1  # a refusal on values: not under DP


@pytest.mark.parametrize("suffix", [".csv", ".gpkg", ".shp"])
def test_metres_declared_as_degrees_are_refused_in_every_format(tmp_path, suffix):
    # Only GeoJSON was checked: a CSV read with crs="EPSG:4326" over UTM metres, or a
    # GeoPackage declaring it, went on to the lattice, which asked to project the "degrees".
    path = tmp_path / f"points{suffix}"
    frame = gpd.GeoDataFrame({"y": [0, 1]}, crs="EPSG:4326",
                             geometry=gpd.points_from_xy([60.5, 605100.5], [-19.9, 7790200.25]))
    if suffix == ".csv":
        frame.assign(east=frame.geometry.x, north=frame.geometry.y).drop(
            columns="geometry").to_csv(path, index=False)
        options, fix = {"x": "east", "y": "north", "crs": "EPSG:4326"}, r"give crs= .*--crs"
    else:
        frame.to_file(path, engine="pyogrio")
        saved = "points_fixed.gpkg" if suffix == ".gpkg" else "points.gpkg"
        options, fix = {}, rf"ogr2ogr -a_srs EPSG:<code> {saved} points{suffix}"
    with pytest.raises(CRSError, match=rf"points{suffix}: its points lie outside the range of "
                       rf"degrees .* of EPSG:4326, the (crs given|CRS the file declares): .*"
                       + fix) as caught:
        read_points(path, **options)
    assert "605100" not in str(caught.value) and "7790200" not in str(caught.value)
    assert len(read_points(path, check_values=False, **options)) == 2  # not under DP
    frame.geometry = gpd.points_from_xy([60.5, 179.9], [-19.9, -89.9], crs="EPSG:4326")
    frame.to_file(tmp_path / "degrees.gpkg", engine="pyogrio")  # degrees: read
    assert len(read_points(tmp_path / "degrees.gpkg")) == 2


def test_a_geographic_crs_in_grads_is_not_judged_in_degrees(tmp_path):
    # NTF (Paris) counts latitudes in grads: 95 gr is a valid latitude (85.5 degrees).
    path = tmp_path / "grads.gpkg"
    gpd.GeoDataFrame({"y": [0]}, geometry=gpd.points_from_xy([2.0], [95.0]),
                     crs="EPSG:4807").to_file(path, engine="pyogrio")
    assert pyproj.CRS("EPSG:4807").axis_info[0].unit_name == "grad"
    assert len(read_points(path)) == 1


def test_read_points_geojson_and_flatgeobuf_get_the_same_checks(tmp_path, points):
    mixed = points.copy()
    mixed.geometry = [points.geometry[0], points.geometry[1].buffer(1.0), points.geometry[2]]
    for suffix, kind in ((".geojson", "GeoJSON"), (".fgb", "FlatGeobuf")):
        path = tmp_path / f"mixed{suffix}"
        mixed.to_file(path, engine="pyogrio")
        with pytest.raises(InputError, match=r"1 non-point geometries.*rows \[\d\]; "
                           r"counted from 0 in (the order of the file's features|file order)"):
            read_points(path)
        with pytest.raises(InputError, match=rf"layer='a' applies to files of several layers "
                           rf"only .*, but mixed{suffix} is a {kind} file, which holds one"):
            read_points(path, layer="a")
        with pytest.raises(InputError, match="x and y name the coordinate columns of a CSV"):
            read_points(path, x="east", y="north")
    xy = shapely.get_coordinates(points.geometry)
    swapped = points.set_geometry(gpd.points_from_xy(xy[:, 1], xy[:, 0], crs=CRS))
    swapped.to_file(tmp_path / "swapped.fgb", engine="pyogrio")  # northings as eastings
    with pytest.raises(CRSError, match="far outside the area where EPSG:31983 is used"):
        read_points(tmp_path / "swapped.fgb")


def test_read_points_flatgeobuf(tmp_path, points):
    path = tmp_path / "points.fgb"
    points.to_file(path, engine="pyogrio", SPATIAL_INDEX="NO")
    assert_same_points(read_points(path), points)
    # With its spatial index (GDAL's default) the file stores the features along a Hilbert
    # curve: "file order" is that order, as the row meaning says.
    points.to_file(path, engine="pyogrio")
    got = read_points(path)
    assert sorted(got["z"].tolist()) == sorted(points["z"].tolist())
    mixed = points.copy()
    mixed.geometry = [points.geometry[0], points.geometry[1].buffer(1.0), points.geometry[2]]
    mixed.to_file(path, engine="pyogrio")
    with pytest.raises(InputError, match=r"counted from 0 in file order, which for a "
                       r"FlatGeobuf with a spatial index is along a Hilbert curve"):
        read_points(path)


def test_read_points_zipped_shapefile(tmp_path, points):
    # As mailed: a folder inside the archive and macOS's resource forks beside the files.
    parts = _shapefile_parts(tmp_path, points)
    files = {f"export/{name}": path for name, path in parts.items()}
    files.update({f"__MACOSX/export/._{name}": b"\x00\x05\x16\x07" for name in parts})
    files["export/readme.txt"] = b"points of 2024"
    path = _write_zip(tmp_path / "points.zip", files)
    got = read_points(path)
    assert_same_points(got, points)
    pd.testing.assert_index_equal(got.index, pd.RangeIndex(3))


def test_read_points_zipped_geopackage_and_geojson(tmp_path, points):
    gpkg = tmp_path / "p.gpkg"
    points.to_file(gpkg, layer="records", engine="pyogrio")
    points.to_file(gpkg, layer="more", engine="pyogrio")
    path = _write_zip(tmp_path / "gpkg.zip", {"p.gpkg": gpkg})
    with pytest.raises(InputError, match=r"gpkg.zip has 2 layers: .* pass layer="):
        read_points(path)
    assert_same_points(read_points(path, layer="records"), points)
    geojson = tmp_path / "p.geojson"
    points.to_file(geojson, driver="GeoJSON", engine="pyogrio")
    path = _write_zip(tmp_path / "json.zip", {"p.geojson": geojson})
    assert_same_points(read_points(path), points)
    with pytest.raises(InputError, match="layer='records' applies to files of several layers "
                       r"only .*, but json.zip holds a GeoJSON file, which holds one; omit layer"):
        read_points(path, layer="records")


def test_a_zip_with_two_datasets_or_none_is_refused_naming_them(tmp_path, points):
    files = {f"a/{name}": p for name, p in _shapefile_parts(tmp_path, points, "homes").items()}
    files.update({f"b/{name}": p for name, p in _shapefile_parts(tmp_path, points, "work").items()})
    path = _write_zip(tmp_path / "two.zip", files)
    with pytest.raises(InputError, match=r"two.zip holds 2 datasets \(\['a/homes.shp', "
                       r"'b/work.shp'\]\); geosynth reads a zip holding one"):
        read_points(path)
    path = _write_zip(tmp_path / "none.zip", {"readme.txt": b"x", "points.csv": b"x,y\n1,2\n"})
    with pytest.raises(InputError, match=r"none.zip holds no dataset geosynth reads \(a \.shp, "
                       r"\.gpkg, \.geojson, \.json, \.fgb file\); it holds \['readme.txt', "
                       r"'points.csv'\]"):
        read_points(path)
    empty = _write_zip(tmp_path / "empty.zip", {})
    with pytest.raises(InputError, match="empty.zip holds no dataset.*it holds nothing"):
        read_points(empty)
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(InputError, match="cannot read broken.zip: it is not a zip archive"):
        read_points(broken)


@pytest.mark.parametrize("check_values", [True, False])
def test_a_zipped_shapefile_without_dbf_or_cut_short_is_refused(tmp_path, points, check_values):
    parts = _shapefile_parts(tmp_path, points)
    without = _write_zip(tmp_path / "nodbf.zip",
                         {n: p for n, p in parts.items() if not n.endswith(".dbf")})
    with pytest.raises(InputError, match=r"points.shp in nodbf.zip has no points.dbf beside it "
                       r"in the archive"):
        read_points(without, check_values=check_values)
    files = dict(parts)
    files["points.shp"] = parts["points.shp"].read_bytes()[:-10]
    cut = _write_zip(tmp_path / "cut.zip", files)
    shown = "its index lists 3 records" if check_values else "it is shorter than its index"
    with pytest.raises(InputError, match=rf"points.shp in cut.zip is truncated: {shown}"):
        read_points(cut, check_values=check_values)


# ---------------------------------------------------------------- CSV: sep, decimal, encoding


def test_a_european_csv_is_read_with_sep_decimal_and_encoding(tmp_path, points):
    # Excel in Brazil, France or Germany saves ";"-separated CP1252 text with decimal commas.
    xy = shapely.get_coordinates(points.geometry)
    frame = pd.DataFrame({"leste": xy[:, 0], "norte": xy[:, 1], "y": points["y"],
                          "x1": ["São Paulo", "Jundiaí", "São Paulo"], "z": points["z"]})
    path = tmp_path / "casos.csv"
    frame.to_csv(path, sep=";", decimal=",", encoding="latin-1", index=False)
    assert b"605100,5;7790200,25" in path.read_bytes()
    got = read_points(path, x="leste", y="norte", crs=CRS, sep=";", decimal=",",
                      encoding="latin-1")
    np.testing.assert_array_equal(shapely.get_coordinates(got.geometry.values), xy)
    assert got["z"].tolist() == [1.5, 2.5, 3.5] and got["z"].dtype == np.float64
    assert got["x1"].tolist() == ["São Paulo", "Jundiaí", "São Paulo"]
    assert got["y"].tolist() == [0, 1, 1]
    # Read as UTF-8 (the default), the same file is refused naming the way out.
    with pytest.raises(InputError, match=r"is not UTF-8 text; .*encoding='cp1252'.*--encoding"):
        read_points(path, x="leste", y="norte", crs=CRS, sep=";", decimal=",")


def test_decimal_commas_under_dp_keep_the_other_coordinates(tmp_path):
    # A column with one value that is not a number stays text: each value is read with the
    # decimal comma, and only the bad one loses its coordinate.
    path = tmp_path / "points.csv"
    path.write_text("east;north;y\n1,5;2,5;0\nabc;3,5;1\n4,5;1.5;0\n")
    got = read_points(path, x="east", y="north", crs=CRS, sep=";", decimal=",",
                      check_values=False)
    assert got.geometry.x.tolist()[0::2] == [1.5, 4.5] and np.isnan(got.geometry.x[1])
    assert got.geometry.y.tolist()[:2] == [2.5, 3.5] and np.isnan(got.geometry.y[2])
    with pytest.raises(InputError, match=r"x='east'.*1 non-numeric values \(rows \[1\];.*with "
                       r"',' as the decimal mark"):
        read_points(path, x="east", y="north", crs=CRS, sep=";", decimal=",")


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"sep": None}, InputTypeError, r"^sep must be a str, got NoneType None$"),
    ({"decimal": 1}, InputTypeError, r"^decimal must be a str, got int 1$"),
    ({"encoding": b"utf-8"}, InputTypeError, r"^encoding must be a str, got bytes"),
    ({"sep": ";;"}, InputError, r"^sep=';;' must be one character \(2 characters\)"),
    ({"sep": "\\t"}, InputError, r"sep='\\\\t' must be one character.*a tab is the one character"),
    ({"sep": ""}, InputError, r"^sep='' must be one character \(0 characters\)"),
    ({"decimal": ",."}, InputError, r"^decimal=',.' must be one character.*\(CLI: --decimal\)$"),
    ({"sep": '"'}, InputError, r"^sep='\"' cannot be a digit, the quote"),
    ({"decimal": "1"}, InputError, r"^decimal='1' cannot be a digit"),
    # a sign or an exponent's e as the decimal mark read "-46.5" and "1e3" as other numbers
    ({"decimal": "-", "sep": ";"}, InputError, r"^decimal='-' cannot be .*a sign"),
    ({"decimal": "e", "sep": ";"}, InputError, r"^decimal='e' cannot be .*the exponent's e"),
    ({"sep": ";", "decimal": ";"}, InputError, r"^sep and decimal must differ, got ';' for both"),
    ({"decimal": ","}, InputError, r"^sep and decimal must differ, got ',' for both; .*"
                                   r"pass sep=';' and decimal=','"),
    ({"encoding": "latin-9000"}, InputError, r"^encoding='latin-9000' is not a text encoding "
                                             r"Python knows; .*\(CLI: --encoding\)$"),
    ({"encoding": "hex"}, InputError, r"^encoding='hex' is not a text encoding"),
])
def test_csv_options_are_checked_naming_them(tmp_path, kwargs, error, match):
    path = tmp_path / "points.csv"
    path.write_text("east,north\n1,2\n")
    with pytest.raises(error, match=match):
        read_points(path, x="east", y="north", crs=CRS, **kwargs)


@pytest.mark.parametrize(("kwargs", "shown"), [
    ({"sep": ";"}, r"sep=';' applies to CSV files only, but points.gpkg is a GeoPackage file; "
                   r"omit sep \(CLI: --sep\)$"),
    ({"sep": ";", "encoding": "cp1252"}, r"sep=';', encoding='cp1252' apply to CSV files "
                                         r"only.*omit sep, encoding \(CLI: --sep, --encoding\)"),
    ({"na_values": []}, r"^na_values=\[\] applies to CSV files only, but points.gpkg is a "
                        r"GeoPackage file; omit na_values \(CLI: --na-values\)$"),
    ({"sep": ";", "na_values": ("NA",)}, r"sep=';', na_values=\['NA'\] apply to CSV files "
                                         r"only.*\(CLI: --sep, --na-values\)$"),
])
def test_csv_options_for_another_format_are_refused(tmp_path, points, kwargs, shown):
    path = tmp_path / "points.gpkg"
    points.to_file(path, layer="records", engine="pyogrio")
    with pytest.raises(InputError, match=shown):
        read_points(path, **kwargs)
    assert_same_points(read_points(path, sep=",", decimal=".", encoding="UTF8",
                                   na_values=None), points)


def test_a_csv_not_in_the_given_encoding_names_it_without_quoting_bytes(tmp_path):
    path = tmp_path / "points.csv"
    path.write_bytes("east,north,y\n1,2,café\n".encode())
    with pytest.raises(InputError, match=r"points.csv: it is not ascii text "
                       r"\(encoding='ascii'\); pass the encoding it is saved in") as caught:
        read_points(path, x="east", y="north", crs=CRS, encoding="ascii")
    assert "0xc3" not in str(caught.value) and "position" not in str(caught.value)
    assert read_points(path, x="east", y="north", crs="EPSG:4326")["y"].tolist() == ["café"]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_csv_read_as_utf16_does_not_quote_the_whole_file_as_a_column_name(tmp_path,
                                                                          encoding):
    # A UTF-8 file of an even length read as UTF-16 decodes to one line of CJK characters:
    # one column name holding the whole file, which the message listed (17 KB). Encoded back
    # to UTF-16 it is every record, coordinates included.
    path = tmp_path / "points.csv"
    rows = "".join(f"{500_000 + 7.25 * k:.2f},{7_800_000 + 3.5 * k:.2f},{k % 3}\n"
                   for k in range(40))
    text = "east,north,y\n" + rows
    path.write_bytes((text + "\n" * (len(text) % 2)).encode())
    with pytest.raises(InputError, match=r"no column 'east'; its first line does not read as "
                       r"column names with encoding .*not quoted here.*--encoding") as caught:
        read_points(path, x="east", y="north", crs=CRS, encoding=encoding)
    assert len(str(caught.value)) < 400
    assert "500007.25" not in str(caught.value).encode(encoding, "replace").decode("ascii",
                                                                                  "replace")


def test_a_utf8_byte_order_mark_is_skipped_or_named(tmp_path):
    # Excel's "CSV UTF-8" starts with a byte-order mark: read as UTF-8 it is skipped (as
    # before); read as CP1252 the first column was named 'ï»¿east' and "not found".
    path = tmp_path / "points.csv"
    path.write_bytes(b"\xef\xbb\xbfeast,north\n1,2\n")
    for encoding in ("utf-8", "UTF8", "utf-8-sig"):
        got = read_points(path, x="east", y="north", crs="EPSG:4326", encoding=encoding)
        assert got.geometry.x.tolist() == [1.0]
    with pytest.raises(InputError, match=r"no column 'east'.*starts with the byte-order mark "
                       r"of UTF-8 text, read here as cp1252: pass encoding='utf-8'"):
        read_points(path, x="east", y="north", crs="EPSG:4326", encoding="cp1252")
    utf16 = tmp_path / "utf16.csv"
    utf16.write_bytes("east\tnorth\tz\n1,5\t2\tcafé\n".encode("utf-16"))  # Excel's "Unicode text"
    got = read_points(utf16, x="east", y="north", crs="EPSG:4326", sep="\t", decimal=",",
                      encoding="utf-16")
    assert got.geometry.x.tolist() == [1.5] and got["z"].tolist() == ["café"]


# ---------------------------------------------------------------- CSV: missing-value words


def _namibia_csv(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("x,y,country,age\n0.5,0.5,NA,30\n1.5,0.5,DE,40\n")
    return path


def _no_data_warning(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        return read_points(path, x="x", y="y", crs="EPSG:3857", **kwargs)


def test_namibia_stays_na_with_na_values_empty_and_is_warned_of_by_default(tmp_path):
    # pandas read the country code NA (Namibia) as missing without a word: prepare then
    # refused the column for a NaN the file does not hold.
    path = _namibia_csv(tmp_path)
    with pytest.warns(DataWarning, match=r"^column 'country' of points.csv: 1 value\(s\) "
                      r"written 'NA' \(pandas' default missing-value words\) were read as "
                      r"missing; .*pass na_values=\[\] to keep them as text") as caught:
        got = read_points(path, x="x", y="y", crs="EPSG:3857")
    assert len(caught) == 1
    assert got["country"].isna().tolist() == [True, False]
    kept = _no_data_warning(path, na_values=[])
    assert kept["country"].tolist() == ["NA", "DE"] and kept["age"].tolist() == [30, 40]
    assert _no_data_warning(path, na_values=())["country"].tolist() == ["NA", "DE"]


def test_missing_words_are_warned_of_per_text_column_never_quoted_under_dp(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("x,y,country,age,flag,note\n"
                    "0.5,0.5,NA,NA,True,\n"
                    "1.5,0.5,None,40,NA,ok\n"
                    "2.5,0.5,null,,False,\n"
                    "3.5,0.5,n/a,1,True,NULL\n"
                    "4.5,0.5,None,1,True,ok\n")
    with pytest.warns(DataWarning) as caught:
        got = read_points(path, x="x", y="y", crs="EPSG:3857")
    messages = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    # One warning per text column; none for the numbers (NA is a missing age) or True/False.
    assert len(messages) == 2
    country, note = messages
    assert country.startswith("column 'country' of points.csv: 5 value(s) written 'None', ")
    assert "and 1 other word(s)" in country
    assert note.startswith("column 'note' of points.csv: 1 value(s) written 'NULL' (")
    assert got["age"].isna().tolist() == [True, False, True, False, False]
    assert got["note"].isna().sum() == 3  # two empty fields (no warning) and NULL
    with pytest.warns(DataWarning) as caught:
        read_points(path, x="x", y="y", crs="EPSG:3857", check_values=False)
    messages = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    # Under DP every column is text (a type from the values would tell them): each is judged.
    columns = ("country", "age", "flag", "note")
    assert len(messages) == len(columns)
    for message, column in zip(messages, columns, strict=True):
        assert message.startswith(f"column {column!r} of points.csv: values written as pandas'")
        assert "na_values=[]" in message
        # No count and no word of the records (the list 'NA, None, null, ...' is pandas').
        assert not any(char.isdigit() for char in message)
        assert "NULL" not in message and "n/a" not in message and "written 'N" not in message


def test_a_column_of_missing_words_only_is_warned_of(tmp_path):
    # Every record from Namibia: pandas read a column of numbers that are all missing.
    path = tmp_path / "points.csv"
    path.write_text("x,y,country\n0.5,0.5,NA\n1.5,0.5,NA\n")
    with pytest.warns(DataWarning, match=r"column 'country' of points.csv: 2 value\(s\) "
                      r"written 'NA' "):
        read_points(path, x="x", y="y", crs="EPSG:3857")
    assert _no_data_warning(path, na_values=[])["country"].tolist() == ["NA", "NA"]


def test_na_values_lists_the_only_missing_words(tmp_path):
    # Natural Earth writes a missing ISO code as -99; SAS and Stata exports write ".".
    path = tmp_path / "points.csv"
    path.write_text("x,y,country,age,code\n"
                    "0.5,0.5,-99,.,01\n"
                    "1.5,0.5,NA,40,-99\n"
                    "2.5,0.5,.,,02\n"
                    "3.5,0.5,DE,50,\n")
    got = _no_data_warning(path, na_values=["-99", "."])
    assert got["country"].tolist()[1::2] == ["NA", "DE"]
    assert got["country"].isna().tolist() == [True, False, True, False]
    assert got["age"].dtype == np.float64 and got["age"].isna().tolist() == [True, False, True,
                                                                              False]
    # Codes with leading zeros are read again as text with the same missing words.
    assert got["code"].tolist()[0::2] == ["01", "02"]
    assert got["code"].isna().tolist() == [False, True, False, True]
    only = _no_data_warning(path, na_values=["."])
    assert only["country"].tolist()[:2] == ["-99", "NA"]


@pytest.mark.parametrize(("na_values", "match"), [
    ("NA", r"^na_values must be a list or tuple of str, got str 'NA': a bare str is ambiguous "
           r".*pass a list, e.g. na_values=\['NA'\]"),
    ("NA, n/a", r"^na_values must be a list or tuple of str.*e.g. na_values=\['NA', 'n/a'\]"),
    ("", r"^na_values must be a list or tuple of str, got str '': .*na_values=\[\] for only "
         r"empty fields$"),
    ({"NA"}, r"^na_values must be a list or tuple of str \(or None\), got set of length 1"),
    (pd.Series(["NA"]), r"^na_values must be a list or tuple of str \(or None\), got Series"),
    (["NA", -99], r"^na_values\[1\] must be a str, the word as written in the file, got int "
                  r"-99; pass e.g. na_values=\['-99'\]$"),
    ([None], r"^na_values\[0\] must be a str.*got NoneType None"),
])
def test_na_values_of_another_type_are_refused_naming_the_fix(tmp_path, na_values, match):
    path = _namibia_csv(tmp_path)
    with pytest.raises(InputTypeError, match=match):
        read_points(path, x="x", y="y", crs="EPSG:3857", na_values=na_values)


# ---------------------------------------------------------------- CSV: codes with leading zeros


def test_csv_codes_with_leading_zeros_are_kept_as_text(tmp_path):
    # pandas read "01" as 1: CEP/ZIP and district codes lost their zeros, and "01" and "1" were
    # one level.
    path = tmp_path / "points.csv"
    path.write_text("east,north,district,cep,sign,plain,share,missing\n"
                    "1,2,01,01310100,-01,0,0.5,007\n"
                    "3,4,1,04538133,2,10,1.25,\n"
                    "5,6,0450,20040002,3,-3,0,NA\n")
    with pytest.warns(DataWarning, match=r"column 'missing' of points.csv: 1 value\(s\) written "
                      r"'NA'"):  # a column of codes is text: NA may be one
        got = read_points(path, x="east", y="north", crs="EPSG:4326")
    assert got["district"].tolist() == ["01", "1", "0450"]
    assert got["district"].nunique() == 3
    assert got["cep"].tolist() == ["01310100", "04538133", "20040002"]
    assert got["sign"].tolist() == ["-01", "2", "3"]
    assert got["plain"].tolist() == [0, 10, -3] and got["plain"].dtype == np.int64
    assert got["share"].tolist() == [0.5, 1.25, 0.0] and got["share"].dtype == np.float64
    assert got["missing"].iloc[0] == "007" and got["missing"].iloc[1:].isna().all()


def test_csv_leading_zero_rule_under_decimal_commas(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("east;north;share;code\n1,5;2,5;0,5;01,5\n3,5;4,5;0;2\n")
    got = read_points(path, x="east", y="north", crs="EPSG:4326", sep=";", decimal=",")
    assert got["share"].tolist() == [0.5, 0.0]
    assert got["code"].tolist() == ["01,5", "2"]  # as written: a code, not 1.5
    assert got.geometry.x.tolist() == [1.5, 3.5]


def test_csv_coordinates_with_leading_zeros_are_numbers(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("east,north\n01.5,002\n3,4\n")
    got = read_points(path, x="east", y="north", crs="EPSG:4326")
    assert got.geometry.x.tolist() == [1.5, 3.0] and got.geometry.y.tolist() == [2.0, 4.0]


def test_a_utf16_csv_without_byte_order_mark_names_the_byte_order(tmp_path):
    # Python's 'utf-16' needs a byte-order mark: a file saved without one was "not utf-16
    # text", with 'utf-8' or 'cp1252' as the fix.
    path = tmp_path / "points.csv"
    path.write_bytes("east,north\n1,2\n".encode("utf-16-le"))
    with pytest.raises(InputError, match=r"not utf-16 text with a byte-order mark.*"
                       r"encoding='utf-16-le' \(Windows\) or 'utf-16-be'"):
        read_points(path, x="east", y="north", crs="EPSG:4326", encoding="utf-16")
    got = read_points(path, x="east", y="north", crs="EPSG:4326", encoding="utf-16-le")
    assert got.geometry.x.tolist() == [1.0]


def test_csv_code_columns_are_found_without_pythons_regex_per_value(tmp_path, monkeypatch):
    # The leading-zero pattern used \s, which pandas' pyarrow strings cannot match: every
    # value of every numeric column went through Python's re (7 s for 10⁶ rows of 4 columns).
    pytest.importorskip("pyarrow")
    from pandas.core.strings import object_array

    path = tmp_path / "points.csv"
    path.write_text("east,north,code,n\n1,2,01,5\n3,4,\v07,6\n5,6, 2,-0\n")
    if not hasattr(pd.read_csv(path, dtype=str)["code"].array, "_pa_array"):
        pytest.skip("this pandas reads CSV text as Python objects")

    if not hasattr(object_array.ObjectStringArrayMixin, "_str_contains"):
        pytest.skip("this pandas matches text elsewhere")

    def python_regex(*args, **kwargs):
        raise AssertionError("matched value by value in Python")

    monkeypatch.setattr(object_array.ObjectStringArrayMixin, "_str_contains", python_regex)
    got = read_points(path, x="east", y="north", crs="EPSG:4326")
    assert got["code"].tolist() == ["01", "\v07", " 2"]  # every value as written
    assert got["n"].tolist() == [5, 6, 0] and got["n"].dtype == np.int64


def test_gdal_warnings_quoting_a_coordinate_are_replaced(tmp_path):
    # GDAL's warning for a malformed GeoJSON point quoted its coordinate, passed on by pyogrio
    # as a RuntimeWarning and printed by the command line, under --epsilon too.
    path = tmp_path / "points.geojson"
    path.write_text('{"type": "FeatureCollection", "features": ['
                    '{"type": "Feature", "properties": {"a": 1}, "geometry": '
                    '{"type": "Point", "coordinates": [-46.123456]}}, '
                    '{"type": "Feature", "properties": {"a": 2}, "geometry": '
                    '{"type": "Point", "coordinates": [-46.5, -23.5]}}]}')
    for check_values, count in ((True, "1 problem(s)"), (False, "problems")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = read_points(path, check_values=check_values)
        assert len(got) == 2 and got.geometry.iloc[1].x == -46.5
        shown = [str(w.message) for w in caught]
        assert not any("46.12" in text for text in shown), shown
        assert [w.category for w in caught] == [DataWarning]
        assert f"GDAL reported {count} reading it (not quoted" in shown[0]
        assert caught[0].filename == __file__


@pytest.mark.parametrize(("text", "decimal"), [("7.654,3;2,5", ","), ("7,654.3;2.5", ".")])
def test_coordinates_with_thousands_separators_are_not_sent_to_the_other_decimal_mark(
        tmp_path, text, decimal):
    # "1.234,5" under decimal=',' was refused "(for '.' pass decimal='.')": not a number under
    # '.' either. The value itself is not quoted.
    path = tmp_path / "points.csv"
    path.write_text(f"east;north\n{text}\n3;4\n")
    with pytest.raises(InputError, match=r"x='east'.*1 non-numeric values.*hold both '\.' and "
                       r"',', as numbers with thousands separators do") as caught:
        read_points(path, x="east", y="north", crs=CRS, sep=";", decimal=decimal)
    assert "pass decimal" not in str(caught.value) and "654" not in str(caught.value)


def test_a_headerless_csv_with_decimal_commas_is_not_quoted(tmp_path):
    # Its first record read as the header: "-46,512" was no number to pandas, so the
    # "no column" message listed the names, the record's coordinates among them.
    path = tmp_path / "points.csv"
    path.write_text("-46,512;-23,5;F\n3;4;M\n")
    with pytest.raises(InputError, match=r"no column 'east'; its first line holds 2 number\(s\) "
                       r"where column names belong") as caught:
        read_points(path, x="east", y="north", crs="EPSG:4326", sep=";", decimal=",")
    assert "512" not in str(caught.value) and "'F'" not in str(caught.value)


def test_a_csv_parser_error_under_dp_gives_no_line_number(tmp_path):
    # "Expected 2 fields in line 4, saw 3": a bad last line told the number of records,
    # which a DP release protects by its noisy size.
    path = tmp_path / "points.csv"
    path.write_text("east,north\n1,2\n3,4\n5,6,7\n")
    with pytest.raises(InputError, match=r"Expected 2 fields in line 4, saw 3$"):
        read_points(path, x="east", y="north", crs="EPSG:4326")
    with pytest.raises(InputError, match=r"Expected N fields in line N, saw N \(numbers not "
                       r"shown when values are not checked") as caught:
        read_points(path, x="east", y="north", crs="EPSG:4326", check_values=False)
    assert not any(char.isdigit() for char in str(caught.value))


def test_under_dp_a_geojsons_columns_are_text_whatever_its_values(tmp_path):
    # GDAL types a GeoJSON column by all its values: 1s and 2s as integers (refused against the
    # declared levels ["1", "2"]), the same with one record's "x" as text (released), with one
    # 2.5 as reals whose 1s read "1.0" (all 60 others dropped); dates as timestamps. Under DP
    # each value is read as its own text, so one record changes one count, never the others'.
    import geosynth

    rng = np.random.default_rng(0)
    xy = rng.uniform([XMIN, YMIN], [XMAX, YMAX], (40, 2))
    grid = geosynth.Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(2, 2), crs=CRS)
    groups = [int(v) for v in rng.integers(1, 3, 40)]
    days = [f"2020-01-0{v}" for v in groups]
    levels = {"grp": ["1", "2"], "day": ["2020-01-01", "2020-01-02"]}
    counted = {}
    for name, first in (("numbers", groups[0]), ("text", "x"), ("real", 2.5)):
        path = tmp_path / f"{name}.geojson"
        features = [{"type": "Feature", "geometry": {"type": "Point", "coordinates": list(p)},
                     "properties": {"grp": g, "day": d}}
                    for p, g, d in zip(xy.tolist(), [first, *groups[1:]], days, strict=True)]
        path.write_text(json.dumps({"type": "FeatureCollection", "features": features,
                                    "crs": {"type": "name", "properties": {"name": CRS}}}))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # pyogrio's "Could not parse column" said it
            points = read_points(path, check_values=False)
        assert all(isinstance(v, str) for v in points["grp"]), points["grp"].tolist()[:3]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for attribute in levels:
                counted[name, attribute] = geosynth.prepare(
                    points, grid, [attribute], levels={attribute: levels[attribute]}).counts
    assert counted["numbers", "grp"].sum() == 40 and counted["numbers", "day"].sum() == 40
    for other in ("text", "real"):  # the first record alone is dropped
        assert counted[other, "grp"].sum() == 39
        assert np.abs(counted["numbers", "grp"] - counted[other, "grp"]).sum() == 1
    # With values checked (no DP), the file's own types are kept.
    assert read_points(tmp_path / "numbers.geojson")["grp"].dtype.kind == "i"
