"""Zip archives and layers, one rule for read_points and read_polygons (io._vector).

read_points read the one dataset of a zip and refused a zipped folder of several shapefiles
(its layers, which the polygon reader read); it chose a layer of a GeoPackage only, silently,
even beside a layer of unknown geometry type (which the polygon reader refused).
"""

import struct
import tracemalloc
import warnings
import zipfile
import zlib

import geopandas as gpd
import inflate64
import numpy as np
import pytest
import shapely

from geosynth.errors import DataWarning, InputError
from geosynth.io import (
    LayerOption,
    _vector,
    choose_layer,
    read_points,
    read_polygons,
    vector_source,
)
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


def test_a_truncated_flatgeobuf_is_said_to_hold_no_layer(tmp_path):
    # GDAL opens a partial copy of a FlatGeobuf and lists no layer: pyogrio's read_info raised
    # a bare IndexError ("index 0 is out of bounds"), a traceback in the command line.
    from geosynth.io import read_points, read_polygons

    whole = tmp_path / "a.fgb"
    gpd.GeoDataFrame({"y": [1, 2]}, geometry=gpd.points_from_xy([0.0, 1.0], [0.0, 1.0]),
                     crs="EPSG:31983").to_file(whole, driver="FlatGeobuf", engine="pyogrio")
    partial = tmp_path / "partial.fgb"
    partial.write_bytes(whole.read_bytes()[:300])
    for read, shown in ((read_points, "partial.fgb"), (read_polygons, "polygons partial.fgb")):
        with pytest.raises(InputError, match=rf"^{shown} holds no layer GDAL can read: it may "
                                             r"be damaged or truncated"):
            read(partial)


def test_a_layer_parameter_without_a_command_line_option_is_named_alone():
    # read_polygons serves Python callers; the command line passes its own option to it, so
    # its Python messages have no "(CLI: ...)" note to name (there are three layer options).
    python = LayerOption(None, "layer")
    assert python.given("x") == "layer='x'"
    assert python.advice() == "pass layer="
    layers = np.array([["a", "Polygon"], ["b", "Polygon"]], dtype=object)
    with pytest.raises(InputError, match=r"^f.gpkg has 2 layers: 'a' \(Polygon\), 'b' "
                       r"\(Polygon\); 2 of them of polygons: pass layer= to choose the one to "
                       r"read$"):
        choose_layer(layers, "f.gpkg", "polygon", python)
    assert choose_layer(layers[:1].tolist() + [["t", "LineString"]], "f.gpkg", "polygon",
                        python)[1] == ("f.gpkg: read its only polygon layer 'a' (of 2 layers; "
                                       "layer= reads another)")
    assert LAYER.given("x") == "layer='x' (CLI: --layer)"  # read_points' words unchanged


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


# ------------------------------------------------------------------------------ zip bombs
# GDAL inflated a member until its compressed data ended and pyogrio loaded it whole: a small
# archive could fill the memory. It read an encrypted member as if it were not, read a stored
# member whose bytes no longer matched its CRC-32 without a word, and said only
# "cpl_unzOpenCurrentFile() failed" of a bzip2 member or of headers that disagree.

def _padded_geojson(points, spaces):
    """The points as GeoJSON with ``spaces`` blanks before its last brace (still valid JSON)."""
    text = points.to_crs(4326).to_json().encode()
    return text[:-1] + b" " * spaces + text[-1:]


def _zip_one(path, name, data, method=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression=method) as zipped:
        zipped.writestr(name, data)
    return path


def _patch(path, **fields):
    """Rewrite fields of the one member's local header and (unless ``local_only``) directory.

    ``fields``: ``flags``, ``method`` (2 bytes), ``crc``, ``packed``, ``size`` (4 bytes); the
    local header is at offset 0, the directory entry at the last ``PK\\x01\\x02``.
    """
    central_only = fields.pop("central_only", False)
    data = bytearray(path.read_bytes())
    central = data.rfind(b"PK\x01\x02")
    offsets = {"flags": (6, 8, "<H"), "method": (8, 10, "<H"), "crc": (14, 16, "<I"),
               "packed": (18, 20, "<I"), "size": (22, 24, "<I")}
    for field, value in fields.items():
        local, in_directory, form = offsets[field]
        places = [central + in_directory] + ([] if central_only else [local])
        for offset in places:
            struct.pack_into(form, data, offset, value)
    path.write_bytes(bytes(data))
    return path


def test_a_zip_member_larger_than_the_limit_is_refused_before_gdal(tmp_path, points,
                                                                   monkeypatch):
    monkeypatch.setattr(_vector, "MAX_ZIP_BYTES", 1024**2)
    body = _padded_geojson(points, 2 * 1024**2)
    path = _zip_one(tmp_path / "big.zip", "data/p.geojson", body)
    with pytest.raises(InputError, match=r"^data/p.geojson in big.zip declares more than 1.0 MiB "
                       r"\(1,048,576 bytes\) uncompressed, more than geosynth reads from a zip "
                       r"archive \(a zip bomb fills the memory\): check the archive; if it is "
                       r"the data you meant, unzip it and pass the file itself$"):
        read_points(path)
    monkeypatch.setattr(_vector, "MAX_ZIP_BYTES", len(body))
    assert len(read_points(path)) == len(points)  # at the limit


def test_the_files_of_a_zipped_shapefile_count_together(tmp_path, points, monkeypatch):
    path = _zip_shapefiles(tmp_path, {"homes": points}, "set.zip")
    with zipfile.ZipFile(path) as zipped:
        sizes = {info.filename: info.file_size for info in zipped.infolist()
                 if info.filename.startswith("export/")}
    assert len(sizes) >= 4  # .shp, .shx, .dbf, .prj (and .cpg)
    limit = sum(sizes.values()) - 1  # each one below
    monkeypatch.setattr(_vector, "MAX_ZIP_BYTES", limit)
    largest = max(sizes, key=sizes.get)
    shown = f"{limit:,} bytes" if limit < 1024 else rf"{limit / 1024:.1f} KiB \({limit:,} bytes\)"
    with pytest.raises(InputError, match=rf"^the {len(sizes)} files of shapefiles read in "
                       rf"set.zip \(the largest {largest}\) declare more than {shown} "
                       "uncompressed"):
        read_points(path)
    monkeypatch.setattr(_vector, "MAX_ZIP_BYTES", sum(sizes.values()))  # __MACOSX not counted
    assert_same_points(read_points(path), points)


def test_a_small_zip_of_65_mib_compressed_a_thousand_times_is_refused_as_a_bomb(tmp_path,
                                                                                points):
    # At the module's own limits: 65 MiB of blanks deflate to about 65 kB.
    path = tmp_path / "bomb.zip"
    text = points.to_crs(4326).to_json().encode()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        with zipped.open("p.geojson", "w") as member:
            member.write(text[:-1])
            for _ in range(65):
                member.write(b" " * 1024**2)
            member.write(text[-1:])
    assert path.stat().st_size < 1024**2
    with pytest.raises(InputError, match=r"^p.geojson in bomb.zip declares more than 250 times "
                       r"its compressed size uncompressed \(and over 64.0 MiB \(67,108,864 "
                       r"bytes\)\), where GIS data compress less than 50 times: it looks like "
                       r"a zip bomb\. Check the archive; if it is the data you meant, unzip it "
                       r"and pass the file itself$"):
        read_points(path)


def test_a_zipped_shapefile_with_a_blank_dbf_is_no_bomb(tmp_path, points, monkeypatch):
    # A .dbf of blank or constant fields deflates ~1000x, as zeros do: the ratio is that of
    # the shapefile's files together (their .shp of coordinates compresses little).
    monkeypatch.setattr(_vector, "MIN_ZIP_RATIO_BYTES", 0)
    rng = np.random.default_rng(0)
    many = gpd.GeoDataFrame({"note": [""] * 20_000}, geometry=gpd.points_from_xy(
        rng.uniform(XMIN, XMAX, 20_000), rng.uniform(YMIN, YMAX, 20_000)), crs=CRS)
    path = tmp_path / "blank.zip"
    many.to_file(tmp_path / "blank.shp", engine="pyogrio")
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        for part in tmp_path.glob("blank.*"):
            if part.suffix != ".zip":
                zipped.write(part, part.name)
        dbf = zipped.getinfo("blank.dbf")
    assert dbf.file_size > _vector.MAX_ZIP_RATIO * dbf.compress_size
    assert len(read_points(path)) == len(many)


@pytest.mark.parametrize("lie", ["more", "disagree", "cut", "crc"])
def test_a_zip_member_whose_headers_lie_is_refused(tmp_path, points, lie):
    body = _padded_geojson(points, 5 * 1024**2)
    method = zipfile.ZIP_STORED if lie == "crc" else zipfile.ZIP_DEFLATED
    path = _zip_one(tmp_path / "lie.zip", "p.geojson", body, method)
    with zipfile.ZipFile(path) as zipped:
        packed = zipped.getinfo("p.geojson").compress_size
    if lie == "more":  # declares 1000 bytes (and their CRC-32): GDAL inflated all 5 MB
        _patch(path, size=1000, crc=zlib.crc32(body[:1000]))
        with zipfile.ZipFile(path) as zipped:
            assert len(zipped.read("p.geojson")) == 1000  # Python's zipfile saw no lie
        reason = "it holds more data than the archive declares"
    elif lie == "disagree":  # GDAL: "cpl_unzOpenCurrentFile() failed"
        _patch(path, size=1000, central_only=True)
        reason = "its own header and the archive's directory disagree"
    elif lie == "cut":
        _patch(path, packed=packed // 2)
        reason = "it is cut short"
    else:  # a digit of a stored coordinate changed: GDAL read the wrong point
        data = bytearray(path.read_bytes())
        at = data.index(b"coordinates") + 20
        data[at] = ord("1") if data[at] != ord("1") else ord("2")
        path.write_bytes(bytes(data))
        reason = r"its data do not match their checksum \(CRC-32\)"
    with pytest.raises(InputError, match=rf"^p.geojson in lie.zip is damaged or crafted: "
                       rf"{reason}.*; copy or zip the files again \(an archive still refused "
                       r"after a fresh copy may be a zip bomb\)$"):
        read_points(path)


def _assert_geojson_read(path, points):
    """``read_points(path)`` gives back the points of :func:`_padded_geojson` (via EPSG:4326)."""
    got = read_points(path).to_crs(CRS)
    np.testing.assert_allclose(shapely.get_coordinates(got.geometry.values),
                               shapely.get_coordinates(points.geometry), atol=1e-6)
    assert got["y"].tolist() == points["y"].tolist()


def _zip_deflate64(path, name, data):
    """Zip ``data`` as ``name`` compressed with Deflate64 (method 9, which zipfile cannot write).

    The Deflate64 stream is stored, then its headers say method 9 with the data's size and CRC.
    """
    deflater = inflate64.Deflater()
    packed = deflater.deflate(data) + deflater.flush()
    _zip_one(path, name, packed, zipfile.ZIP_STORED)
    return _patch(path, method=9, crc=zlib.crc32(data), size=len(data))


def test_a_deflate64_member_is_inflated_to_be_checked_and_then_read(tmp_path, points):
    # Windows' zip folders write Deflate64, which GDAL reads and Python's zlib cannot inflate:
    # it was checked by its declared sizes only, so a crafted header let a bomb through.
    path = _zip_deflate64(tmp_path / "win.zip", "p.geojson", _padded_geojson(points, 100_000))
    with zipfile.ZipFile(path) as zipped:
        info = zipped.getinfo("p.geojson")
    assert info.compress_type == 9 and info.compress_size < info.file_size / 10
    _assert_geojson_read(path, points)


@pytest.mark.parametrize("lie", ["more", "cut", "crc", "corrupt"])
def test_a_deflate64_member_whose_data_are_not_as_declared_is_refused(tmp_path, points, lie):
    body = _padded_geojson(points, 5 * 1024**2)
    path = _zip_deflate64(tmp_path / "lie.zip", "p.geojson", body)
    with zipfile.ZipFile(path) as zipped:
        packed = zipped.getinfo("p.geojson").compress_size
    if lie == "more":  # declares 1000 bytes: GDAL would inflate all 5 MB
        _patch(path, size=1000, crc=zlib.crc32(body[:1000]))
        reason = "it holds more data than the archive declares"
    elif lie == "cut":
        _patch(path, packed=packed // 2)
        reason = "it is cut short"
    elif lie == "crc":
        _patch(path, crc=zlib.crc32(body) ^ 1)
        reason = r"its data do not match their checksum \(CRC-32\)"
    else:  # the first block's type made 3, which Deflate64 reserves
        data = bytearray(path.read_bytes())
        data[data.index(b"p.geojson") + len("p.geojson")] |= 0b110
        path.write_bytes(bytes(data))
        reason = "its compressed data are corrupt"
    with pytest.raises(InputError, match=rf"^p.geojson in lie.zip is damaged or crafted: "
                       rf"{reason}"):
        read_points(path)


def test_a_deflate64_bomb_is_inflated_in_bounded_steps(tmp_path, monkeypatch):
    # Deflate64 packs 256 MiB of zeros into ~10 kB (its matches reach 65,538 bytes) and
    # inflate64 takes no output limit: fed 128 bytes a call, no call returns more than 3.7 MB.
    monkeypatch.setattr(_vector, "MAX_ZIP_RATIO", 10**9)  # let the check inflate it all
    path = _zip_deflate64(tmp_path / "zeros.zip", "p.geojson", bytes(256 * 1024**2))
    assert path.stat().st_size < 20_000
    tracemalloc.start()
    try:
        assert vector_source(path, "zeros.zip").member == "p.geojson"  # as declared: it passes
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024**2


def _zip_with_many_files(path, points, files):
    """Zip the points as ``p.geojson`` beside ``files`` empty text files."""
    with zipfile.ZipFile(path, "w") as zipped:
        zipped.writestr("p.geojson", _padded_geojson(points, 0))
        for k in range(files):
            zipped.writestr(f"notes/{k:06d}.txt", b"")
    return path


def _refuse_zipfile(*args, **kwargs):
    raise AssertionError("zipfile read the archive's directory")


def test_an_archive_listing_too_many_files_is_refused_before_zipfile_reads_it(
        tmp_path, points, monkeypatch):
    # zipfile builds an object of every entry (572 bytes each) before any check: a 100 MB
    # archive of a million empty files would take some 570 MB.
    path = _zip_with_many_files(tmp_path / "many.zip", points, 2000)  # 2000 x 63 bytes
    monkeypatch.setattr(_vector, "MAX_ZIP_DIRECTORY_BYTES", 100_000)
    with monkeypatch.context() as patched:
        patched.setattr(_vector.zipfile, "ZipFile", _refuse_zipfile)
        with pytest.raises(InputError, match=r"^many.zip lists more files than geosynth reads "
                           r"from a zip archive \(its directory takes more than 97.7 KiB \(100,000 "
                           r"bytes\); "
                           r"GIS data take a few files\): unzip it and pass the dataset "
                           r"itself$"):
            read_points(path)
    monkeypatch.setattr(_vector, "MAX_ZIP_DIRECTORY_BYTES", 200_000)
    _assert_geojson_read(path, points)


@pytest.mark.parametrize("comment", [b"", b"exported by hand"])  # last 22 bytes; searched
def test_the_zip64_end_record_is_what_counts_when_the_classic_one_understates(
        tmp_path, points, monkeypatch, comment):
    # Past 65,535 files zipfile writes a Zip64 end record and reads its directory size from
    # it: a classic end record patched to say 0 bytes must not hide the directory.
    path = _zip_with_many_files(tmp_path / "zip64.zip", points, 65_536)
    data = bytearray(path.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    assert data[end - 20:end - 16] == b"PK\x06\x07"  # zipfile wrote the Zip64 records
    directory = struct.unpack_from("<I", data, end + 12)[0]
    struct.pack_into("<I", data, end + 12, 0)
    struct.pack_into("<H", data, end + 20, len(comment))
    path.write_bytes(bytes(data) + comment)
    with zipfile.ZipFile(path) as zipped:
        assert len(zipped.infolist()) == 65_537  # zipfile reads the whole directory
    monkeypatch.setattr(_vector, "MAX_ZIP_DIRECTORY_BYTES", directory - 1)
    with pytest.raises(InputError, match=r"^zip64.zip lists more files than geosynth reads"):
        read_points(path)
    monkeypatch.setattr(_vector, "MAX_ZIP_DIRECTORY_BYTES", directory)
    _assert_geojson_read(path, points)


@pytest.mark.parametrize("flags", [{"flags": 0x1}, {"flags": 0x1, "method": 99}])
def test_an_encrypted_zip_member_is_refused_with_a_printable_name(tmp_path, points, flags):
    # GDAL read a member flagged encrypted as if it were not (its ciphertext as data).
    name = "data\x1b[2J/p.geojson"
    path = _patch(_zip_one(tmp_path / "secret.zip", name, _padded_geojson(points, 0),
                           zipfile.ZIP_STORED), **flags)
    with pytest.raises(InputError, match=r"^data\?\[2J/p.geojson in secret.zip is encrypted "
                       r"\(password-protected\), which geosynth does not read: unzip it with "
                       "its password and pass the file itself, or zip it again without a "
                       "password$"):
        read_points(path)


@pytest.mark.parametrize(("method", "name"), [(zipfile.ZIP_BZIP2, "bzip2"),
                                              (zipfile.ZIP_LZMA, "LZMA")])
def test_a_zip_member_compressed_as_gdal_cannot_read_is_refused(tmp_path, points, method,
                                                                name):
    path = _zip_one(tmp_path / "odd.zip", "p.geojson", _padded_geojson(points, 0), method)
    with pytest.raises(InputError, match=rf"^p.geojson in odd.zip is compressed with {name} "
                       rf"\(zip method {method}\), which GDAL cannot read in a zip archive: zip "
                       r"it again with the usual compression \(Deflate, any zip tool's "
                       r"default\), or unzip it and pass the file itself$"):
        read_points(path)


def test_a_zip_inside_a_zip_is_refused_naming_it(tmp_path, points):
    inner = _zip_one(tmp_path / "inner.zip", "p.geojson", _padded_geojson(points, 0))
    outer = tmp_path / "outer.zip"
    with zipfile.ZipFile(outer, "w") as zipped:
        zipped.write(inner, "data/inner.zip")
        zipped.writestr("readme.txt", b"points")
    with pytest.raises(InputError, match=r"^outer.zip holds no dataset geosynth reads but a zip "
                       r"archive \(\['data/inner.zip'\]\); geosynth does not open a zip inside "
                       r"a zip: unzip outer.zip and pass the archive inside it$"):
        read_points(outer)


def test_the_polygon_reader_refuses_a_zip_bomb_naming_its_option(tmp_path, monkeypatch):
    monkeypatch.setattr(_vector, "MAX_ZIP_BYTES", 1024**2)
    region = gpd.GeoDataFrame(geometry=[shapely.box(XMIN, YMIN, XMAX, YMAX)], crs=CRS)
    path = _zip_one(tmp_path / "city.zip", "city.geojson", _padded_geojson(region, 2 * 1024**2))
    with pytest.raises(InputError, match=r"^city.geojson in --region city.zip declares more "
                       r"than 1.0 MiB"):
        read_polygons(path, option="--region")
    monkeypatch.setattr(_vector, "MAX_ZIP_BYTES", 4 * 1024**2)
    assert len(read_polygons(path, option="--region")) == 1
