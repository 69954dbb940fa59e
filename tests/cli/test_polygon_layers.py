"""Polygon files of several layers, zipped shapefiles and GeoJSON: --region-layer and its kind.

`read_polygons` read a file with gpd.read_file, which silently took the FIRST layer of a
GeoPackage holding several (a municipal GeoPackage of districts, parks and rivers).
"""

import shlex
import zipfile

import geopandas as gpd
import numpy as np
import pytest
import shapely

from geosynth import Candidate
from geosynth.cli.helpers import read_polygons
from geosynth.cli.tune import release_command
from geosynth.errors import InputError
from tests.cli.helpers import FAST, assert_refused, run

ARGS = ["--attributes", "y,x1"]


@pytest.fixture(scope="module")
def city(inputs, tmp_path_factory):
    """A municipal GeoPackage: a river (first), the city limit, four districts and schools."""
    region = gpd.read_file(inputs["region"])
    crs = region.crs
    x0, y0, x1, y1 = region.total_bounds
    xs, ys = np.linspace(x0, x1, 3), np.linspace(y0, y1, 3)
    path = tmp_path_factory.mktemp("city") / "city.gpkg"
    # The river is the first layer: a polygon reader that takes the first layer fails on it;
    # the parks are polygons, so a first-polygon-layer reader would read no-go areas as region.
    gpd.GeoDataFrame(geometry=[shapely.LineString([(x0, y0), (x1, y1)])], crs=crs).to_file(
        path, layer="rivers", engine="pyogrio")
    gpd.GeoDataFrame(geometry=[shapely.box(x0, y0, x0 + 300, y0 + 300)], crs=crs).to_file(
        path, layer="parks", engine="pyogrio")
    gpd.GeoDataFrame({"name": ["city"]}, geometry=list(region.geometry), crs=crs).to_file(
        path, layer="limite", engine="pyogrio")
    boxes = [shapely.box(xs[i], ys[j], xs[i + 1], ys[j + 1]) for j in range(2) for i in range(2)]
    gpd.GeoDataFrame({"code": list("ABCD")}, geometry=boxes, crs=crs).to_file(
        path, layer="bairros", engine="pyogrio")
    gpd.GeoDataFrame(geometry=[shapely.Point(x0 + 1, y0 + 1)], crs=crs).to_file(
        path, layer="schools", engine="pyogrio")
    return path


@pytest.fixture(scope="module")
def one_polygon_layer(inputs, tmp_path_factory):
    """A GeoPackage of a line layer (first) and the region, its only polygon layer."""
    region = gpd.read_file(inputs["region"])
    x0, y0, x1, y1 = region.total_bounds
    path = tmp_path_factory.mktemp("limit") / "limit.gpkg"
    gpd.GeoDataFrame(geometry=[shapely.LineString([(x0, y0), (x1, y1)])],
                     crs=region.crs).to_file(path, layer="roads", engine="pyogrio")
    region.to_file(path, layer="limit", engine="pyogrio")
    return path


# ---------------------------------------------------------------------- read_polygons
def test_several_polygon_layers_are_refused_naming_the_layer_option_and_the_layers(city):
    # The first layer was read: a LineString layer refused as "holds ['LineString']
    # geometries", or (first a polygon layer) the parks read as the study region.
    with pytest.raises(InputError) as caught:
        read_polygons(city, "--region")
    message = str(caught.value)
    assert message.startswith("--region city.gpkg has 5 layers: 'rivers' (LineString), "
                              "'parks' (Polygon), 'limite' (Polygon)")
    assert "'schools' (Point)" in message and "3 of them of polygons" in message
    assert "add --region-layer LAYER" in message


@pytest.mark.parametrize(("layer", "rows"), [("limite", 1), ("bairros", 4), ("parks", 1)])
def test_the_layer_option_reads_that_layer(city, layer, rows):
    frame = read_polygons(city, "--exclude", layer)
    assert len(frame) == rows
    expected = gpd.read_file(city, layer=layer)
    assert frame.geometry.geom_equals(expected.geometry).all()


def test_a_missing_layer_is_refused_naming_the_layers_there_are(city):
    with pytest.raises(InputError, match=r"^--areas-layer 'tracts': --areas city\.gpkg has 5 "
                       r"layers: 'rivers' \(LineString\), .*'schools' \(Point\), none of them "
                       r"named so; give one of those names$"):
        read_polygons(city, "--areas", "tracts")


def test_a_layer_holding_no_polygon_is_refused_as_such(city):
    with pytest.raises(InputError, match=r"--region city\.gpkg holds \['LineString'\] "
                       "geometries; give a polygon layer"):
        read_polygons(city, "--region", "rivers")


def test_the_only_polygon_layer_is_read_and_named(one_polygon_layer, inputs, capsys):
    frame = read_polygons(one_polygon_layer, "--region")
    assert frame.geometry.geom_equals(gpd.read_file(inputs["region"]).geometry).all()
    err = capsys.readouterr().err
    assert "--region limit.gpkg: read its only polygon layer 'limit' (of 2 layers; " \
        "--region-layer LAYER reads another)" in err


def test_a_layer_of_unknown_geometry_type_may_hold_polygons_so_none_is_chosen(
        one_polygon_layer, tmp_path):
    path = tmp_path / "mixed.gpkg"
    for layer in ("roads", "limit"):
        gpd.read_file(one_polygon_layer, layer=layer).to_file(path, layer=layer,
                                                              engine="pyogrio")
    frame = gpd.read_file(one_polygon_layer, layer="limit")
    mixed = gpd.GeoDataFrame(geometry=[frame.geometry[0], shapely.Point(0, 0)], crs=frame.crs)
    mixed.to_file(path, layer="drawn", engine="pyogrio")  # a generic GEOMETRY layer
    with pytest.raises(InputError, match=r"1 of them of polygons and 1 of any geometry type: "
                       r"add --region-layer LAYER"):
        read_polygons(path, "--region")


def test_many_layer_names_are_printable_and_truncated(inputs, tmp_path):
    region = gpd.read_file(inputs["region"])
    path = tmp_path / "many.gpkg"
    names = [f"layer_{k:02d}" for k in range(14)] + ["bad\x1b[2Jname" + "x" * 100]
    for name in names:
        region.to_file(path, layer=name, engine="pyogrio")
    with pytest.raises(InputError) as caught:
        read_polygons(path, "--region")
    message = str(caught.value)
    assert "\x1b" not in message and len(message) < 600
    assert "'layer_11' (Polygon) and 3 more;" in message and "layer_12" not in message
    with pytest.raises(InputError) as caught:
        read_polygons(path, "--region", "nope\x1b")
    assert "--region-layer 'nope?'" in str(caught.value) and "\x1b" not in str(caught.value)
    assert len(read_polygons(path, "--region", names[-1])) == 1


def test_a_geojson_region_is_read(inputs, tmp_path):
    path = tmp_path / "region.geojson"
    region = gpd.read_file(inputs["region"])
    region.to_file(path, engine="pyogrio")
    frame = read_polygons(path, "--region")
    assert frame.crs.equals(region.crs)
    assert frame.geometry.geom_equals(region.geometry).all()


def _zip_shapefiles(folder, frames, name):
    """Write each ``{stem: frame}`` as a shapefile and zip them all into ``name``."""
    archive = folder / name
    with zipfile.ZipFile(archive, "w") as zipped:
        for stem, frame in frames.items():
            frame.to_file(folder / f"{stem}.shp", engine="pyogrio")
            for part in folder.glob(f"{stem}.*"):
                zipped.write(part, part.name)
    return archive


def test_zipped_shapefiles_are_read_and_several_need_the_layer(inputs, city, tmp_path):
    region = gpd.read_file(inputs["region"])
    single = _zip_shapefiles(tmp_path, {"limit": region}, "limit.zip")
    assert read_polygons(single, "--region").geometry.geom_equals(region.geometry).all()
    parks = gpd.read_file(city, layer="parks")
    double = _zip_shapefiles(tmp_path, {"limit": region, "parks": parks}, "city.zip")
    with pytest.raises(InputError, match=r"--exclude city\.zip has 2 layers: .*'parks' "
                       r"\(Polygon\).*add --exclude-layer LAYER"):
        read_polygons(double, "--exclude")
    assert read_polygons(double, "--exclude", "parks").geometry.geom_equals(
        parks.geometry).all()


# ---------------------------------------------------------------------- the commands
@pytest.mark.parametrize(("options", "fragments"), [
    (["--grid", "3x3", "--region-layer", "limite"],
     ["--region-layer applies to --region only", "add --region FILE or drop --region-layer"]),
    (["--grid", "3x3", "--exclude-layer", "parks"],
     ["--exclude-layer applies to --exclude only", "add --exclude FILE"]),
    (["--grid", "3x3", "--areas-layer", "bairros"],
     ["--areas-layer applies to --areas only", "add --areas FILE or drop --areas-layer"]),
])
@pytest.mark.parametrize("command", ["release", "tune"])
def test_a_layer_option_without_its_file_is_refused_naming_both(inputs, tmp_path, command,
                                                                 options, fragments):
    if command == "tune":
        options = ["--grids" if word == "--grid" else word for word in options]
        out = ["--report", tmp_path / "t.md"]
        if "--areas-layer" in options:
            fragments = ["give --areas-layer once per --areas", "got 0 --areas and 1"]
    else:
        out = ["--out", tmp_path / "r.gpkg"]
    result = run(command, inputs["gpkg"], *ARGS, *options, *FAST, *out)
    assert_refused(result, *fragments)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["release", "tune"])
def test_commands_refuse_a_file_of_several_polygon_layers_before_the_fit(inputs, city, tmp_path,
                                                                         command):
    out = ["--out", tmp_path / "r.gpkg"] if command == "release" else \
        ["--report", tmp_path / "t.md"]
    lattice = ["--grid", "3x3"] if command == "release" else ["--grids", "3x3"]
    result = run(command, inputs["gpkg"], *ARGS, *lattice, "--region", city, *FAST, *out)
    assert_refused(result, "--region city.gpkg has 5 layers: 'rivers' (LineString), 'parks' "
                   "(Polygon), 'limite' (Polygon), 'bairros' (Polygon), 'schools' (Point); 3 "
                   "of them of polygons: add --region-layer LAYER to choose the one to read")
    assert "Fitting" not in result.output and "Tuning" not in result.output
    missing = run(command, inputs["gpkg"], *ARGS, *lattice, "--region", city,
                  "--region-layer", "limits", *FAST, *out)
    assert_refused(missing, "--region-layer 'limits': --region city.gpkg has 5 layers",
                   "none of them named so")
    assert list(tmp_path.iterdir()) == []


def test_release_reads_the_region_exclusion_and_areas_layers_given(inputs, city, tmp_path):
    clipped = run("release", inputs["gpkg"], *ARGS, "--grid", "3x3", "--region", city,
                  "--region-layer", "limite", "--exclude", city, "--exclude-layer", "parks",
                  "--drop-outside", "--seed", 1, *FAST, "--out", tmp_path / "r.gpkg")
    assert clipped.exit_code == 0, clipped.output
    assert "clipped to the region/exclusions" in clipped.output
    areal = run("release", inputs["gpkg"], *ARGS, "--areas", city, "--areas-layer", "bairros",
                "--area-id", "code", "--seed", 1, *FAST, "--out", tmp_path / "a.gpkg")
    assert areal.exit_code == 0, areal.output
    assert "Lattice: 4 areas" in areal.output


def test_release_reads_a_geojson_region(inputs, tmp_path):
    path = tmp_path / "region.geojson"
    gpd.read_file(inputs["region"]).to_file(path, engine="pyogrio")
    result = run("release", inputs["gpkg"], *ARGS, "--grid", "3x3", "--region", path,
                 "--seed", 1, *FAST, "--out", tmp_path / "r.gpkg")
    assert result.exit_code == 0, result.output
    assert "Warning: no --region" not in result.output


def test_tune_pairs_areas_layers_in_order_and_repeats_the_layers_in_the_release_command(
        inputs, city, tmp_path):
    result = run("tune", inputs["gpkg"], *ARGS, "--areas", city, "--areas-layer", "bairros",
                 "--areas", city, "--areas-layer", "limite", "--exclude", city,
                 "--exclude-layer", "parks", "--drop-outside", "--seed", 1, *FAST,
                 "--report", tmp_path / "t.md")
    assert result.exit_code == 0, result.output
    assert "city.gpkg:bairros" in result.output and "city.gpkg:limite" in result.output
    words = shlex.split(result.output.split("Release it with:\n")[1].splitlines()[0])
    layer = words[words.index("--areas-layer") + 1]
    assert layer in ("bairros", "limite") and words[words.index("--areas") + 1] == str(city)
    assert words[words.index("--exclude-layer") + 1] == "parks"


def test_tune_refuses_unpaired_areas_layers(inputs, city, tmp_path):
    result = run("tune", inputs["gpkg"], *ARGS, "--areas", city, "--areas", city,
                 "--areas-layer", "bairros", *FAST, "--report", tmp_path / "t.md")
    assert_refused(result, "give --areas-layer once per --areas, in the same order",
                   "got 2 --areas and 1 --areas-layer")
    same = run("tune", inputs["gpkg"], *ARGS, "--areas", city, "--areas-layer", "bairros",
               "--areas", city, "--areas-layer", "bairros", *FAST, "--report",
               tmp_path / "t.md")
    assert_refused(same, "--areas files need distinct names, or distinct --areas-layer")


def test_the_release_command_repeats_the_polygon_layers():
    words = shlex.split(release_command(
        "p.gpkg", ["y"], Candidate(cell_size=250.0), region="city.gpkg",
        region_layer="limite", exclude="city.gpkg", exclude_layer="parks"))
    assert words[words.index("--region") + 1:words.index("--region") + 5] == [
        "city.gpkg", "--region-layer", "limite", "--exclude"]
    assert words[words.index("--exclude-layer") + 1] == "parks"
    plain = shlex.split(release_command("p.gpkg", ["y"], Candidate(cell_size=250.0),
                                        region="city.gpkg"))
    assert "--region-layer" not in plain and "--exclude-layer" not in plain


@pytest.mark.parametrize("command", ["release", "tune"])
def test_help_shows_the_layer_options(command):
    text = " ".join(run(command, "--help").output.split())
    for option in ("--region-layer LAYER", "--exclude-layer LAYER", "--areas-layer LAYER"):
        assert option in text
    assert "With --region: the layer to read of a file of several" in text


def test_a_zipped_folder_is_read_and_a_file_that_is_no_zip_is_refused(inputs, tmp_path):
    # GDAL reads the top level of a zip: a zipped folder (city/limit.shp, macOS adding
    # __MACOSX/city/._limit.shp) was "not recognized as being in a supported file format".
    region = gpd.read_file(inputs["region"])
    region.to_file(tmp_path / "limit.shp", engine="pyogrio")
    archive = tmp_path / "city.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for part in tmp_path.glob("limit.*"):
            zipped.write(part, f"city/{part.name}")
        zipped.writestr("__MACOSX/city/._limit.shp", b"\x00\x05\x16\x07")
    frame = read_polygons(archive, "--region")
    assert frame.geometry.geom_equals(region.geometry).all()
    fake = tmp_path / "fake.zip"
    fake.write_bytes(b"not a zip archive")
    with pytest.raises(InputError, match=r"^cannot read --region fake\.zip: it is not a zip "
                       r"archive, or a damaged one .*zip the files again"):
        read_polygons(fake, "--region")


# ---------------------------------------------------------------------- one rule with read_points
def test_a_geopackage_of_points_and_a_polygon_is_read_at_its_polygon_layer(inputs, tmp_path,
                                                                           capsys):
    # The same choice read_points makes of its point layer (there with a DataWarning).
    region = gpd.read_file(inputs["region"])
    path = tmp_path / "both.gpkg"
    gpd.read_file(inputs["gpkg"]).to_file(path, layer="cases", engine="pyogrio")
    region.to_file(path, layer="limit", engine="pyogrio")
    frame = read_polygons(path, "--exclude")
    assert frame.geometry.geom_equals(region.geometry).all()
    assert ("Note: --exclude both.gpkg: read its only polygon layer 'limit' (of 2 layers; "
            "--exclude-layer LAYER reads another)") in capsys.readouterr().err
    # INPUT, the same file: its point layer, said in the command line's words.
    result = run("release", path, *ARGS, "--grid", "3x3", "--seed", 1, *FAST, "--out",
                 tmp_path / "r.gpkg")
    assert result.exit_code == 0, result.output
    assert ("Warning: both.gpkg: read its only point layer 'cases' (of 2 layers; --layer reads "
            "another)") in result.output


def test_a_geopackage_in_a_zipped_folder_is_read_as_read_points_reads_it(city, tmp_path):
    # The folder of a zipped GeoPackage was opened as a folder of shapefiles: unreadable.
    archive = tmp_path / "city.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(city, "data/city.gpkg")
    frame = read_polygons(archive, "--areas", "bairros")
    assert len(frame) == 4
    with pytest.raises(InputError, match=r"^--region city\.zip has 5 layers: 'rivers' "
                       r"\(LineString\).*add --region-layer LAYER"):
        read_polygons(archive, "--region")


def test_a_zip_of_datasets_in_two_folders_is_refused_naming_them(inputs, tmp_path):
    region = gpd.read_file(inputs["region"])
    region.to_file(tmp_path / "limit.geojson", engine="pyogrio")
    archive = tmp_path / "two.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for folder in ("2023", "2024"):
            zipped.write(tmp_path / "limit.geojson", f"{folder}/limit.geojson")
    with pytest.raises(InputError, match=r"^--region two\.zip holds 2 datasets \(\['2023/limit"
                       r"\.geojson', '2024/limit\.geojson'\]\); geosynth reads a zip holding "
                       "one"):
        read_polygons(archive, "--region")


def test_a_region_shapefile_without_dbf_or_cut_short_is_refused(inputs, tmp_path):
    # read_points's check: GDAL read the polygons up to the cut, or without their attributes.
    region = gpd.read_file(inputs["region"])
    region.to_file(tmp_path / "limit.shp", engine="pyogrio")
    archive = tmp_path / "nodbf.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for part in tmp_path.glob("limit.*"):
            if part.suffix != ".dbf":
                zipped.write(part, f"city/{part.name}")
    with pytest.raises(InputError, match=r"^city/limit\.shp in --region nodbf\.zip has no "
                       r"limit\.dbf beside it in the archive"):
        read_polygons(archive, "--region")
    shp = tmp_path / "limit.shp"
    shp.write_bytes(shp.read_bytes()[:-10])
    with pytest.raises(InputError, match=r"^--region limit\.shp is truncated: its index lists 1 "
                       r"records"):
        read_polygons(shp, "--region")


def test_a_zipped_region_whose_name_has_an_unpaired_brace_is_read(inputs, tmp_path):
    # "/vsizip/{.../city}.zip}" ended the archive at "city": "does not exist in the file system".
    region = gpd.read_file(inputs["region"])
    region.to_file(tmp_path / "limit.shp", engine="pyogrio")
    archive = tmp_path / "city}.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for part in tmp_path.glob("limit.*"):
            zipped.write(part, part.name)
    frame = read_polygons(archive, "--region")
    assert frame.geometry.geom_equals(region.geometry).all()
