"""Polygon files of several layers, zipped shapefiles and GeoJSON: --region-layer and its kind.

The reader read a file with gpd.read_file, which silently took the FIRST layer of a GeoPackage
holding several (a municipal GeoPackage of districts, parks and rivers). It is
geosynth.io.read_polygons (tested in tests/io/test_polygons.py), which the commands call with
their option: here, that their messages are those they always gave, word for word.
"""

import shlex

import geopandas as gpd
import pytest

from geosynth import Candidate
from geosynth.cli.tune import release_command
from tests.cli.helpers import FAST, assert_refused, run
from tests.io.helpers import write_city, write_one_polygon_layer, zip_shapefiles

ARGS = ["--attributes", "y,x1"]


@pytest.fixture(scope="module")
def city(inputs, tmp_path_factory):
    """A municipal GeoPackage: a river (first), parks, the city limit, four districts, schools."""
    return write_city(tmp_path_factory.mktemp("city") / "city.gpkg",
                      gpd.read_file(inputs["region"]))


@pytest.fixture(scope="module")
def one_polygon_layer(inputs, tmp_path_factory):
    """A GeoPackage of a line layer (first) and the region, its only polygon layer."""
    return write_one_polygon_layer(tmp_path_factory.mktemp("limit") / "limit.gpkg",
                                   gpd.read_file(inputs["region"]))


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


def test_release_warns_of_an_exclusion_far_from_every_cell_naming_the_option(inputs, tmp_path):
    far = gpd.read_file(inputs["region"]).translate(1e6, 1e6)  # as if in another CRS
    path = tmp_path / "lakes.gpkg"
    gpd.GeoDataFrame(geometry=far).to_file(path, engine="pyogrio")
    result = run("release", inputs["gpkg"], *ARGS, "--grid", "3x3", "--exclude", path,
                 "--seed", 1, *FAST, "--out", tmp_path / "r.gpkg")
    assert result.exit_code == 0, result.output
    assert "Warning: the excluded areas" in result.output
    assert "check that --exclude and the grid share a CRS, or drop --exclude" in result.output


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


@pytest.mark.parametrize(("case", "message"), [
    ("region-rivers", "Error: --region city.gpkg holds ['LineString'] geometries; give a polygon "
     "layer (buffer points or lines first)\n"),
    ("areas-tracts", "Error: --areas-layer 'tracts': --areas city.gpkg has 5 layers: 'rivers' "
     "(LineString), 'parks' (Polygon), 'limite' (Polygon), 'bairros' (Polygon), 'schools' "
     "(Point), none of them named so; give one of those names\n"),
    ("exclude-zip", "Error: --exclude city.zip has 2 layers: 'limit' (Polygon), 'parks' "
     "(Polygon); 2 of them of polygons: add --exclude-layer LAYER to choose the one to read\n"),
    ("region-fake-zip", "Error: cannot read --region fake.zip: it is not a zip archive, or a "
     "damaged one or cut short; copy or zip the files again\n"),
])
def test_the_commands_give_the_readers_messages_word_for_word(inputs, city, tmp_path, case,
                                                              message):
    # The reader moved to geosynth.io, whose Python messages say layer=: the commands pass
    # their option and keep their words.
    folder = tmp_path / "in"
    folder.mkdir()
    if case == "region-rivers":
        options = ["--grid", "3x3", "--region", city, "--region-layer", "rivers"]
    elif case == "areas-tracts":
        options = ["--areas", city, "--areas-layer", "tracts"]
    elif case == "exclude-zip":
        region = gpd.read_file(inputs["region"])
        parks = gpd.read_file(city, layer="parks")
        archive = zip_shapefiles(folder, {"limit": region, "parks": parks}, "city.zip")
        options = ["--grid", "3x3", "--exclude", archive]
    else:
        fake = folder / "fake.zip"
        fake.write_bytes(b"not a zip archive")
        options = ["--grid", "3x3", "--region", fake]
    out = tmp_path / "out"
    result = run("release", inputs["gpkg"], *ARGS, *options, *FAST, "--out", out / "r.gpkg")
    assert_refused(result)
    assert result.output.endswith(message), result.output
    assert "layer=" not in result.output and "polygons " not in result.output
    assert not out.exists()


def test_release_warns_of_the_only_polygon_layer_it_read_as_of_the_point_layer(
        inputs, one_polygon_layer, tmp_path):
    # The note of the polygon reader stays a "Note:" on stderr (Python's is a DataWarning);
    # INPUT, a file of points and a polygon, is read at its point layer, as read_points says.
    path = tmp_path / "both.gpkg"
    gpd.read_file(inputs["gpkg"]).to_file(path, layer="cases", engine="pyogrio")
    gpd.read_file(inputs["region"]).to_file(path, layer="limit", engine="pyogrio")
    result = run("release", path, *ARGS, "--grid", "3x3", "--region", one_polygon_layer,
                 "--seed", 1, *FAST, "--out", tmp_path / "r.gpkg")
    assert result.exit_code == 0, result.output
    assert ("Warning: --region limit.gpkg: read its only polygon layer 'limit' (of 2 layers; "
            "--region-layer LAYER reads another)\n") in result.output
    assert "layer=" not in result.output
    assert ("Warning: both.gpkg: read its only point layer 'cases' (of 2 layers; --layer reads "
            "another)") in result.output
