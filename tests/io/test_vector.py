"""Zip archives and layers, one rule for read_points and the CLI's polygon reader (io._vector).

read_points read the one dataset of a zip and refused a zipped folder of several shapefiles
(its layers, which the polygon reader read); it chose a layer of a GeoPackage only, silently,
even beside a layer of unknown geometry type (which the polygon reader refused).
"""

import warnings
import zipfile

import geopandas as gpd
import numpy as np
import pytest
import shapely

from geosynth.errors import DataWarning, InputError
from geosynth.io import LayerOption, choose_layer, read_points, vector_source
from tests.io.helpers import CRS, XMAX, XMIN, YMAX, YMIN, assert_same_points

LAYER = LayerOption("--layer", "layer")


def _zip_shapefiles(tmp_path, frames, name, folder="export/"):
    """Write each ``{stem: frame}`` as a shapefile and zip them all into ``folder`` of ``name``."""
    archive = tmp_path / name
    with zipfile.ZipFile(archive, "w") as zipped:
        for stem, frame in frames.items():
            frame.to_file(tmp_path / f"{stem}.shp", engine="pyogrio")
            for part in tmp_path.glob(f"{stem}.*"):
                zipped.write(part, f"{folder}{part.name}")
        zipped.writestr(f"__MACOSX/{folder}._{next(iter(frames))}.shp", b"\x00\x05\x16\x07")
    return archive


@pytest.fixture
def others(points):
    """Points of another kind (work places), written beside the homes."""
    moved = points.copy()
    moved.geometry = points.geometry.translate(10.0, 20.0)
    return moved


@pytest.mark.parametrize("folder", ["export/", ""])
def test_a_zipped_folder_of_two_point_shapefiles_is_read_at_the_layer_given(
        tmp_path, points, others, folder):
    path = _zip_shapefiles(tmp_path, {"homes": points, "work": others}, "two.zip", folder)
    with pytest.raises(InputError, match=r"^two.zip has 2 layers: 'homes' \(Point\), 'work' "
                       r"\(Point\); 2 of them of points: pass layer= \(CLI: --layer\) to choose "
                       r"the one to read$"):
        read_points(path)
    assert_same_points(read_points(path, layer="homes"), points)
    assert_same_points(read_points(path, layer="work"), others)
    with pytest.raises(InputError, match=r"^layer='school' \(CLI: --layer\): two.zip has 2 "
                       r"layers: 'homes' \(Point\), 'work' \(Point\), none of them named so"):
        read_points(path, layer="school")


def test_a_zipped_folder_of_points_and_polygons_is_read_at_its_point_layer(tmp_path, points):
    region = gpd.GeoDataFrame(geometry=[shapely.box(XMIN, YMIN, XMAX, YMAX)], crs=CRS)
    path = _zip_shapefiles(tmp_path, {"region": region, "homes": points}, "city.zip")
    with pytest.warns(DataWarning, match=r"city.zip: read its only point layer 'homes' \(of 2 "
                      r"layers; layer= \(CLI: --layer\) reads another\)"):
        assert_same_points(read_points(path), points)


def test_a_zipped_shapefile_is_checked_complete_in_a_folder_of_several(tmp_path, points, others):
    folder = tmp_path / "parts"
    folder.mkdir()
    _zip_shapefiles(folder, {"homes": points, "work": others}, "unused.zip")
    cut = tmp_path / "cut.zip"
    with zipfile.ZipFile(cut, "w") as zipped:
        for part in folder.glob("*.*"):
            if part.suffix != ".zip":
                data = part.read_bytes()
                zipped.writestr(f"export/{part.name}", data[:-10] if part.name == "work.shp"
                                else data)
    with pytest.raises(InputError, match=r"export/work.shp in cut.zip is truncated"):
        read_points(cut, layer="work")
    assert_same_points(read_points(cut, layer="homes"), points)  # its own files are whole


def test_a_layer_of_unknown_geometry_type_stops_the_choice_of_the_point_layer(tmp_path,
                                                                              points):
    # The only Point layer was read although the generic layer may hold the records.
    path = tmp_path / "mixed.gpkg"
    points.to_file(path, layer="records", engine="pyogrio")
    drawn = gpd.GeoDataFrame(geometry=[points.geometry[0], points.geometry[1].buffer(1.0)],
                             crs=CRS)
    drawn.to_file(path, layer="drawn", engine="pyogrio")  # a generic GEOMETRY layer
    with pytest.raises(InputError, match=r"mixed.gpkg has 2 layers: 'records' \(Point\), "
                       r"'drawn' \(Unknown\); 1 of them of points and 1 of any geometry type: "
                       r"pass layer="):
        read_points(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same_points(read_points(path, layer="records"), points)


def test_a_zip_of_shapefiles_in_two_folders_or_with_another_dataset_is_refused(tmp_path,
                                                                               points):
    points.to_file(tmp_path / "p.geojson", engine="pyogrio")
    _zip_shapefiles(tmp_path, {"homes": points}, "unused.zip")
    path = tmp_path / "mixed.zip"
    with zipfile.ZipFile(path, "w") as zipped:
        for part in tmp_path.glob("homes.*"):
            zipped.write(part, f"a/{part.name}")
        zipped.write(tmp_path / "p.geojson", "a/p.geojson")
    with pytest.raises(InputError, match=r"mixed.zip holds 2 datasets \(\[.*'a/homes.shp'.*\]\)"):
        read_points(path)


def test_the_zip_resolver_shows_at_most_ten_printable_names(tmp_path):
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as zipped:
        for k in range(12):
            zipped.writestr(f"d{k}/bad\x1b[2J{k}.geojson", b"{}")
    with pytest.raises(InputError) as caught:
        vector_source(path, "--region many.zip")
    message = str(caught.value)
    assert message.startswith("--region many.zip holds 12 datasets (")
    assert "\x1b" not in message and "d9/" in message and "d10/" not in message
    assert "'...'" in message


def test_choose_layer_names_the_option_as_asked():
    layers = np.array([["a", "Point"], ["b", "Polygon"], ["t", None]], dtype=object)
    assert choose_layer(layers, "f.gpkg", "point", LAYER, "t") == ("t", None)
    chosen, note = choose_layer(layers, "--areas f.gpkg", "polygon", LayerOption("--areas-layer"))
    assert chosen == "b"
    assert note == ("--areas f.gpkg: read its only polygon layer 'b' (of 3 layers; "
                    "--areas-layer LAYER reads another)")
    assert choose_layer(layers[:1], "f.gpkg", "polygon", LAYER) == ("a", None)  # the only one
    with pytest.raises(InputError, match=r"^--areas-layer 'x': --areas f.gpkg has 3 layers: 'a' "
                       r"\(Point\), 'b' \(Polygon\), 't' \(no geometry\), none of them named "
                       r"so; give one of those names$"):
        choose_layer(layers, "--areas f.gpkg", "polygon", LayerOption("--areas-layer"), "x")


@pytest.mark.parametrize("name", ["x}.zip", "{x.zip", "}{x.zip", "a{b}.zip"])
def test_a_zip_whose_path_has_unpaired_braces_is_read(tmp_path, points, name):
    # GDAL ends a braced archive path at the brace closing the first: "/vsizip/{.../x}.zip}"
    # opened ".../x", and an analyst's "x}.zip" was refused as not existing.
    archive = tmp_path / name
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("points.geojson", points.to_crs(4326).to_json())
    assert vector_source(archive, name).member == "points.geojson"
    got = read_points(archive)
    assert len(got) == len(points)
    np.testing.assert_allclose(got.geometry.x, points.to_crs(4326).geometry.x)
