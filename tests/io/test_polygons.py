"""read_polygons: the polygon reader of Python and of the CLI's --region, --exclude and --areas.

It lived in geosynth.cli.helpers, its messages naming a command-line option only, so Python
users read their region with gpd.read_file, which silently took the FIRST layer of a GeoPackage
holding several (a municipal GeoPackage of districts, parks and rivers), read a zipped folder
not at all, and left invalid polygons to a message naming no file. The command line passes its
option (``option="--region"``) and its messages are those it always gave, word for word.
"""

import warnings
import zipfile

import geopandas as gpd
import pytest
import shapely

import geosynth
from geosynth.errors import DataWarning, GridError, InputError, InputTypeError
from geosynth.io import read_polygons
from tests.io.helpers import (
    CRS,
    XMAX,
    XMIN,
    YMAX,
    YMIN,
    write_city,
    write_one_polygon_layer,
    zip_shapefiles,
)

LAYERS = ("'rivers' (LineString), 'parks' (Polygon), 'limite' (Polygon), 'bairros' (Polygon), "
          "'schools' (Point)")


@pytest.fixture(scope="module")
def region():
    """The study region: the scenario square with a margin."""
    return gpd.GeoDataFrame({"name": ["city"]},
                            geometry=[shapely.box(XMIN, YMIN, XMAX, YMAX).buffer(100)], crs=CRS)


@pytest.fixture(scope="module")
def city(region, tmp_path_factory):
    """A municipal GeoPackage: a river (first), parks, the city limit, four districts, schools."""
    return write_city(tmp_path_factory.mktemp("city") / "city.gpkg", region)


@pytest.fixture(scope="module")
def one_polygon_layer(region, tmp_path_factory):
    """A GeoPackage of a line layer (first) and the region, its only polygon layer."""
    return write_one_polygon_layer(tmp_path_factory.mktemp("limit") / "limit.gpkg", region)


# ---------------------------------------------------------------------- Python's messages
def test_it_is_public_in_geosynth_io_and_the_cli_keeps_no_copy():
    from geosynth.cli import helpers

    assert "read_polygons" in geosynth.io.__all__
    assert geosynth.io.read_polygons is read_polygons
    assert "read_polygons" not in helpers.__all__ and not hasattr(helpers, "read_polygons")


def test_several_polygon_layers_without_layer_name_the_parameter_and_the_layers(city):
    # The CLI's reader said "add --region-layer LAYER": no such thing in Python.
    with pytest.raises(InputError) as caught:
        read_polygons(city)
    assert str(caught.value) == (f"polygons city.gpkg has 5 layers: {LAYERS}; 3 of them of "
                                 "polygons: pass layer= to choose the one to read")
    with pytest.raises(InputError, match=r"^region city\.gpkg has 5 layers: .*pass layer= to "
                       r"choose the one to read$"):
        read_polygons(city, name="region")
    with pytest.raises(InputError, match=r"^city\.gpkg has 5 layers: .*pass layer="):
        read_polygons(city, name=None)


def test_a_missing_layer_names_layer_and_the_layers_there_are(city):
    with pytest.raises(InputError) as caught:
        read_polygons(city, "tracts", name="areas")
    assert str(caught.value) == (f"layer='tracts': areas city.gpkg has 5 layers: {LAYERS}, "
                                 "none of them named so; give one of those names")
    assert "--" not in str(caught.value) and "CLI" not in str(caught.value)


def test_a_layer_holding_no_polygon_is_refused_naming_the_file(city):
    with pytest.raises(InputError, match=r"^region city\.gpkg holds \['LineString'\] "
                       r"geometries; give a polygon layer \(buffer points or lines first\)$"):
        read_polygons(city, layer="rivers", name="region")


@pytest.mark.parametrize(("layer", "rows"), [("limite", 1), ("bairros", 4), ("parks", 1)])
def test_layer_reads_that_layer(city, layer, rows):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = read_polygons(city, layer=layer)
    assert len(frame) == rows
    assert isinstance(frame, gpd.GeoDataFrame) and frame.crs.equals(CRS)
    assert frame.geometry.geom_equals(gpd.read_file(city, layer=layer).geometry).all()


def test_the_only_polygon_layer_is_read_with_a_warning_at_the_caller(one_polygon_layer, region,
                                                                     capsys):
    with pytest.warns(DataWarning, match=r"^polygons limit\.gpkg: read its only polygon layer "
                      r"'limit' \(of 2 layers; layer= reads another\)$") as got:
        frame = read_polygons(one_polygon_layer)
    assert got[0].filename == __file__  # the warning points at the caller of read_polygons
    assert frame.geometry.geom_equals(region.geometry).all()
    assert capsys.readouterr().err == ""  # nothing printed: a warning only


def test_the_grid_takes_the_polygons_read(city):
    region = read_polygons(city, "limite", name="region")
    parks = read_polygons(city, "parks", name="exclude")
    x0, y0, x1, y1 = region.total_bounds
    points = gpd.GeoDataFrame(geometry=[shapely.Point(x0 + 500, y0 + 500),
                                        shapely.Point(x1 - 500, y1 - 500)], crs=CRS)
    grid = geosynth.Grid.from_points(points, cell_size=1000, region=region, exclude=parks)
    assert grid.n_cells > 0


def test_a_missing_file_names_path_or_the_option(tmp_path):
    missing = tmp_path / "nope.gpkg"
    with pytest.raises(InputError, match=r"^path '.*nope\.gpkg' does not exist"):
        read_polygons(missing)
    with pytest.raises(InputError, match=r"^--region '.*nope\.gpkg' does not exist"):
        read_polygons(missing, option="--region")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"path": None}, r"^path must be a file path \(str or pathlib.Path\), got None"),
    ({"layer": 1}, r"^layer must be a str or None, got int 1"),
    ({"name": ["region"]}, r"^name must be a str or None, got"),
    ({"option": 2}, r"^option must be a str or None, got int 2"),
])
def test_arguments_of_the_wrong_type_are_refused_by_name(one_polygon_layer, kwargs, message):
    kwargs = {"path": one_polygon_layer, **kwargs}
    with pytest.raises(InputTypeError, match=message):
        read_polygons(**kwargs)


def test_invalid_or_missing_polygons_are_refused_naming_the_file(tmp_path):
    bowtie = shapely.Polygon([(XMIN, YMIN), (XMAX, YMAX), (XMAX, YMIN), (XMIN, YMAX)])
    path = tmp_path / "bad.gpkg"
    gpd.GeoDataFrame(geometry=[bowtie], crs=CRS).to_file(path, engine="pyogrio")
    with pytest.raises(GridError, match=r"^region bad\.gpkg has invalid polygons at non-empty "
                       r"positions \[0\]"):
        read_polygons(path, name="region")
    with pytest.raises(GridError, match=r"^--region bad\.gpkg has invalid polygons"):
        read_polygons(path, option="--region")
    empty = tmp_path / "empty.gpkg"
    gpd.GeoDataFrame(geometry=[None], crs=CRS).to_file(empty, engine="pyogrio",
                                                       geometry_type="Polygon")
    with pytest.raises(InputError, match=r"^polygons empty\.gpkg has no polygon; give a polygon "
                       "layer$"):
        read_polygons(empty)


def test_zipped_shapefiles_need_layer_in_python_words(region, city, tmp_path):
    parks = gpd.read_file(city, layer="parks")
    double = zip_shapefiles(tmp_path, {"limit": region, "parks": parks}, "city.zip")
    with pytest.raises(InputError, match=r"^exclude city\.zip has 2 layers: .*'parks' "
                       r"\(Polygon\); 2 of them of polygons: pass layer= to choose"):
        read_polygons(double, name="exclude")
    assert read_polygons(double, "parks").geometry.geom_equals(parks.geometry).all()


# ---------------------------------------------------------------------- the CLI's messages
# option= gives the command line's words, which these tests pin down as they always were.
def test_several_polygon_layers_are_refused_naming_the_layer_option_and_the_layers(city):
    # The first layer was read: a LineString layer refused as "holds ['LineString']
    # geometries", or (first a polygon layer) the parks read as the study region.
    with pytest.raises(InputError) as caught:
        read_polygons(city, option="--region")
    assert str(caught.value) == (f"--region city.gpkg has 5 layers: {LAYERS}; 3 of them of "
                                 "polygons: add --region-layer LAYER to choose the one to read")


@pytest.mark.parametrize(("layer", "rows"), [("limite", 1), ("bairros", 4), ("parks", 1)])
def test_the_layer_option_reads_that_layer(city, layer, rows):
    frame = read_polygons(city, layer, option="--exclude")
    assert len(frame) == rows
    expected = gpd.read_file(city, layer=layer)
    assert frame.geometry.geom_equals(expected.geometry).all()


def test_a_missing_layer_is_refused_naming_the_layers_there_are(city):
    with pytest.raises(InputError, match=r"^--areas-layer 'tracts': --areas city\.gpkg has 5 "
                       r"layers: 'rivers' \(LineString\), .*'schools' \(Point\), none of them "
                       r"named so; give one of those names$"):
        read_polygons(city, "tracts", option="--areas")


def test_a_layer_holding_no_polygon_is_refused_as_such(city):
    with pytest.raises(InputError, match=r"^--region city\.gpkg holds \['LineString'\] "
                       r"geometries; give a polygon layer \(buffer points or lines first\)$"):
        read_polygons(city, "rivers", option="--region")


def test_the_only_polygon_layer_is_read_with_a_warning_naming_the_cli_options(
        one_polygon_layer, region, capsys):
    with pytest.warns(DataWarning) as got:
        frame = read_polygons(one_polygon_layer, option="--region")
    assert frame.geometry.geom_equals(region.geometry).all()
    assert [str(w.message) for w in got] == [
        "--region limit.gpkg: read its only polygon layer 'limit' (of 2 layers; "
        "--region-layer LAYER reads another)"]
    assert capsys.readouterr().err == ""  # the reader prints nothing: the CLI shows warnings


def test_a_layer_of_unknown_geometry_type_may_hold_polygons_so_none_is_chosen(
        one_polygon_layer, region, tmp_path):
    path = tmp_path / "mixed.gpkg"
    for layer in ("roads", "limit"):
        gpd.read_file(one_polygon_layer, layer=layer).to_file(path, layer=layer,
                                                              engine="pyogrio")
    mixed = gpd.GeoDataFrame(geometry=[region.geometry[0], shapely.Point(0, 0)], crs=CRS)
    mixed.to_file(path, layer="drawn", engine="pyogrio")  # a generic GEOMETRY layer
    with pytest.raises(InputError, match=r"1 of them of polygons and 1 of any geometry type: "
                       r"add --region-layer LAYER"):
        read_polygons(path, option="--region")
    with pytest.raises(InputError, match=r"1 of them of polygons and 1 of any geometry type: "
                       r"pass layer= to choose"):
        read_polygons(path)


def test_many_layer_names_are_printable_and_truncated(region, tmp_path):
    path = tmp_path / "many.gpkg"
    names = [f"layer_{k:02d}" for k in range(14)] + ["bad\x1b[2Jname" + "x" * 100]
    for name in names:
        region.to_file(path, layer=name, engine="pyogrio")
    with pytest.raises(InputError) as caught:
        read_polygons(path, option="--region")
    message = str(caught.value)
    assert "\x1b" not in message and len(message) < 600
    assert "'layer_11' (Polygon) and 3 more;" in message and "layer_12" not in message
    with pytest.raises(InputError) as caught:
        read_polygons(path, "nope\x1b", option="--region")
    assert "--region-layer 'nope?'" in str(caught.value) and "\x1b" not in str(caught.value)
    with pytest.raises(InputError) as caught:
        read_polygons(path, "nope\x1b")
    assert str(caught.value).startswith("layer='nope?': polygons many.gpkg has 15 layers")
    assert len(read_polygons(path, names[-1], option="--region")) == 1


def test_a_geojson_region_is_read(region, tmp_path):
    path = tmp_path / "region.geojson"
    region.to_file(path, engine="pyogrio")
    frame = read_polygons(path, option="--region")
    assert frame.crs.equals(region.crs)
    assert frame.geometry.geom_equals(region.geometry).all()


def test_zipped_shapefiles_are_read_and_several_need_the_layer(region, city, tmp_path):
    single = zip_shapefiles(tmp_path, {"limit": region}, "limit.zip")
    assert read_polygons(single, option="--region").geometry.geom_equals(region.geometry).all()
    parks = gpd.read_file(city, layer="parks")
    double = zip_shapefiles(tmp_path, {"limit": region, "parks": parks}, "city.zip")
    with pytest.raises(InputError, match=r"--exclude city\.zip has 2 layers: .*'parks' "
                       r"\(Polygon\).*add --exclude-layer LAYER"):
        read_polygons(double, option="--exclude")
    assert read_polygons(double, "parks", option="--exclude").geometry.geom_equals(
        parks.geometry).all()


def test_a_zipped_folder_is_read_and_a_file_that_is_no_zip_is_refused(region, tmp_path):
    # GDAL reads the top level of a zip: a zipped folder (city/limit.shp, macOS adding
    # __MACOSX/city/._limit.shp) was "not recognized as being in a supported file format".
    region.to_file(tmp_path / "limit.shp", engine="pyogrio")
    archive = tmp_path / "city.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for part in tmp_path.glob("limit.*"):
            zipped.write(part, f"city/{part.name}")
        zipped.writestr("__MACOSX/city/._limit.shp", b"\x00\x05\x16\x07")
    frame = read_polygons(archive, option="--region")
    assert frame.geometry.geom_equals(region.geometry).all()
    fake = tmp_path / "fake.zip"
    fake.write_bytes(b"not a zip archive")
    with pytest.raises(InputError, match=r"^cannot read --region fake\.zip: it is not a zip "
                       r"archive, or a damaged one .*zip the files again"):
        read_polygons(fake, option="--region")
    with pytest.raises(InputError, match=r"^cannot read polygons fake\.zip: it is not a zip "
                       r"archive"):
        read_polygons(fake)


# ---------------------------------------------------------------------- one rule with read_points
def test_a_geopackage_of_points_and_a_polygon_is_read_at_its_polygon_layer(region, points,
                                                                           tmp_path):
    # The same choice read_points makes of its point layer (there with a DataWarning).
    path = tmp_path / "both.gpkg"
    points.to_file(path, layer="cases", engine="pyogrio")
    region.to_file(path, layer="limit", engine="pyogrio")
    with pytest.warns(DataWarning, match=r"^--exclude both\.gpkg: read its only polygon layer "
                      r"'limit' \(of 2 layers; --exclude-layer LAYER reads another\)$"):
        frame = read_polygons(path, option="--exclude")
    assert frame.geometry.geom_equals(region.geometry).all()
    with pytest.warns(DataWarning, match=r"^exclude both\.gpkg: read its only polygon layer "
                      r"'limit' \(of 2 layers; layer= reads another\)$"):
        read_polygons(path, name="exclude")


def test_a_geopackage_in_a_zipped_folder_is_read_as_read_points_reads_it(city, tmp_path):
    # The folder of a zipped GeoPackage was opened as a folder of shapefiles: unreadable.
    archive = tmp_path / "city.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(city, "data/city.gpkg")
    frame = read_polygons(archive, "bairros", option="--areas")
    assert len(frame) == 4
    with pytest.raises(InputError, match=r"^--region city\.zip has 5 layers: 'rivers' "
                       r"\(LineString\).*add --region-layer LAYER"):
        read_polygons(archive, option="--region")


def test_a_zip_of_datasets_in_two_folders_is_refused_naming_them(region, tmp_path):
    region.to_file(tmp_path / "limit.geojson", engine="pyogrio")
    archive = tmp_path / "two.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for folder in ("2023", "2024"):
            zipped.write(tmp_path / "limit.geojson", f"{folder}/limit.geojson")
    with pytest.raises(InputError, match=r"^--region two\.zip holds 2 datasets \(\['2023/limit"
                       r"\.geojson', '2024/limit\.geojson'\]\); geosynth reads a zip holding "
                       "one"):
        read_polygons(archive, option="--region")


def test_a_region_shapefile_without_dbf_or_cut_short_is_refused(region, tmp_path):
    # read_points's check: GDAL read the polygons up to the cut, or without their attributes.
    region.to_file(tmp_path / "limit.shp", engine="pyogrio")
    archive = tmp_path / "nodbf.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for part in tmp_path.glob("limit.*"):
            if part.suffix != ".dbf":
                zipped.write(part, f"city/{part.name}")
    with pytest.raises(InputError, match=r"^city/limit\.shp in --region nodbf\.zip has no "
                       r"limit\.dbf beside it in the archive"):
        read_polygons(archive, option="--region")
    shp = tmp_path / "limit.shp"
    shp.write_bytes(shp.read_bytes()[:-10])
    with pytest.raises(InputError, match=r"^--region limit\.shp is truncated: its index lists 1 "
                       r"records"):
        read_polygons(shp, option="--region")
    with pytest.raises(InputError, match=r"^region limit\.shp is truncated"):
        read_polygons(shp, name="region")


def test_a_zipped_region_whose_name_has_an_unpaired_brace_is_read(region, tmp_path):
    # "/vsizip/{.../city}.zip}" ended the archive at "city": "does not exist in the file system".
    archive = zip_shapefiles(tmp_path, {"limit": region}, "city}.zip")
    frame = read_polygons(archive, option="--region")
    assert frame.geometry.geom_equals(region.geometry).all()


# ---------------------------------------------------------------------- barriers: lines too
def test_barriers_read_lines_or_polygons_and_choose_the_only_line_layer(city):
    # The city's rivers are its only line layer: read without layer=, said in a warning.
    with pytest.warns(DataWarning, match=r"read its only line layer 'rivers' \(of 5 layers"):
        rivers = read_polygons(city, name="barriers", lines=True)
    assert rivers.geom_type.tolist() == ["LineString"]
    parks = read_polygons(city, layer="parks", name="barriers", lines=True)
    assert parks.geom_type.tolist() == ["Polygon"]
    with pytest.raises(InputError, match=r"^barriers city\.gpkg holds \['Point'\] geometries; "
                       r"give a line or polygon layer \(buffer points first\)$"):
        read_polygons(city, layer="schools", name="barriers", lines=True)
    with pytest.raises(InputTypeError, match="lines must be True or False"):
        read_polygons(city, layer="rivers", lines="yes")
