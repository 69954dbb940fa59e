"""Constants and builders shared by the tests of geosynth.io."""

import json
import sqlite3
import subprocess
import sys
import textwrap
import zipfile

import geopandas as gpd
import numpy as np
import pyogrio
import pyproj
import shapely

from geosynth.synth.release import COLUMNS_ATTR, POINTS_ATTR, PUBLIC_ATTR, record_columns

CRS = "EPSG:31983"
# Distinctive seeds, so their decimal strings cannot occur in a GeoPackage by chance.
FIT_SEED = 604_817_339
SYNTH_SEED = 918_273_645
PUBLIC_SEEDS = [731_950_482, 731_950_483]
# The scenario square: 10 km in EPSG:31983 starting at (605000, 7790000); 8 x 8 cells of 1250 m.
XMIN, YMIN, XMAX, YMAX = 605_000.0, 7_790_000.0, 615_000.0, 7_800_000.0


def with_record(frame):
    """``frame`` with its columns and points recorded anew as made, after an edit by hand."""
    frame.attrs.pop(COLUMNS_ATTR, None)
    frame.attrs.pop(POINTS_ATTR, None)
    record_columns(frame)
    return frame


def public_like(n=4, **columns):
    """A small public-looking release (fresh index, as from to_public; columns recorded)."""
    frame = gpd.GeoDataFrame(
        {"y": np.arange(n) % 2, **columns},
        geometry=gpd.points_from_xy(XMIN + 10.0 * np.arange(n), np.full(n, YMIN + 5.0)),
        crs=CRS,
    )
    frame.attrs = {PUBLIC_ATTR: True}
    record_columns(frame)
    return frame


def assert_same_points(got, expected):
    assert isinstance(got, gpd.GeoDataFrame)
    assert got.crs is not None and got.crs.equals(pyproj.CRS(CRS))
    np.testing.assert_array_equal(
        shapely.get_coordinates(got.geometry.values), shapely.get_coordinates(expected.geometry)
    )
    for column in ["y", "x1", "z"]:
        assert got[column].tolist() == expected[column].tolist()


def all_layers(path):
    return {
        name: pyogrio.read_dataframe(path, layer=name) for name in pyogrio.list_layers(path)[:, 0]
    }


def names(folder):
    return sorted(p.name for p in folder.iterdir())


# ---------------------------------------------------------------------- tampering with sqlite3
def sql(path, *statements):
    """Run SQL statements ``(text, parameters)`` or ``text`` on the GeoPackage at ``path``."""
    with sqlite3.connect(path) as connection:
        for statement in statements:
            text, parameters = (statement, ()) if isinstance(statement, str) else statement
            connection.execute(text, parameters)
    connection.close()


def set_metadata(path, key, value):
    """Replace the JSON value of metadata ``key``."""
    sql(path, ("UPDATE metadata SET value = ? WHERE key = ?", (json.dumps(value), key)))


def metadata_value(path, key):
    with sqlite3.connect(path) as connection:
        (text,) = connection.execute("SELECT value FROM metadata WHERE key = ?", (key,)).fetchone()
    connection.close()
    return json.loads(text)


def drop_layer(path, layer):
    """Remove a layer and its GeoPackage bookkeeping, as a crash or an editor might."""
    with sqlite3.connect(path) as connection:
        for table in ("gpkg_contents", "gpkg_geometry_columns", "gpkg_extensions"):
            connection.execute(f"DELETE FROM {table} WHERE table_name = ?", (layer,))
        connection.execute(f'DROP TABLE IF EXISTS "rtree_{layer}_geom"')
        connection.execute(f'DROP TABLE "{layer}"')
    connection.close()


# ---------------------------------------------------------------------- killed processes
def run_killed(script, cwd, umask=None):
    """Run ``SUBPROCESS_PRELUDE`` and ``script`` in a fresh interpreter that ends by os._exit(9)."""
    prelude = "import os\n" + (f"os.umask({umask:#o})\n" if umask is not None else "")
    result = subprocess.run(
        [sys.executable, "-c", prelude + SUBPROCESS_PRELUDE + textwrap.dedent(script)],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 9, result.stderr
    return result


#: Python source that defines ``public_like`` and the constants in a subprocess.
SUBPROCESS_PRELUDE = """
import geopandas as gpd
import numpy as np

import geosynth
from geosynth.io import write_release

def public_like(n=4):
    frame = gpd.GeoDataFrame(
        {"y": np.arange(n) % 2},
        geometry=gpd.points_from_xy(605_000.0 + 10.0 * np.arange(n), np.full(n, 7_790_005.0)),
        crs="EPSG:31983",
    )
    frame.attrs = {geosynth.synth.release.PUBLIC_ATTR: True}
    geosynth.synth.release.record_columns(frame)
    return frame
"""


def write_city(path, region):
    """Write a municipal GeoPackage at ``path``: a river (first), parks, the city limit
    (``region``, layer 'limite'), four districts ('bairros') and schools; return ``path``.

    The river is the first layer: a polygon reader that takes the first layer fails on it; the
    parks are polygons, so a first-polygon-layer reader would read no-go areas as the region.
    """
    crs = region.crs
    x0, y0, x1, y1 = region.total_bounds
    xm, ym = (x0 + x1) / 2, (y0 + y1) / 2
    gpd.GeoDataFrame(geometry=[shapely.LineString([(x0, y0), (x1, y1)])], crs=crs).to_file(
        path, layer="rivers", engine="pyogrio")
    gpd.GeoDataFrame(geometry=[shapely.box(x0, y0, x0 + 300, y0 + 300)], crs=crs).to_file(
        path, layer="parks", engine="pyogrio")
    region.to_file(path, layer="limite", engine="pyogrio")
    boxes = [shapely.box(*corner) for corner in ((x0, y0, xm, ym), (xm, y0, x1, ym),
                                                 (x0, ym, xm, y1), (xm, ym, x1, y1))]
    gpd.GeoDataFrame({"code": list("ABCD")}, geometry=boxes, crs=crs).to_file(
        path, layer="bairros", engine="pyogrio")
    gpd.GeoDataFrame(geometry=[shapely.Point(x0 + 1, y0 + 1)], crs=crs).to_file(
        path, layer="schools", engine="pyogrio")
    return path


def write_one_polygon_layer(path, region):
    """Write a GeoPackage of a line layer ('roads', first) and ``region`` ('limit'), its only
    polygon layer, at ``path``; return ``path``."""
    x0, y0, x1, y1 = region.total_bounds
    gpd.GeoDataFrame(geometry=[shapely.LineString([(x0, y0), (x1, y1)])],
                     crs=region.crs).to_file(path, layer="roads", engine="pyogrio")
    region.to_file(path, layer="limit", engine="pyogrio")
    return path


def zip_shapefiles(folder, frames, name):
    """Write each ``{stem: frame}`` as a shapefile in ``folder`` and zip them all into ``name``."""
    archive = folder / name
    with zipfile.ZipFile(archive, "w") as zipped:
        for stem, frame in frames.items():
            frame.to_file(folder / f"{stem}.shp", engine="pyogrio")
            for part in folder.glob(f"{stem}.*"):
                zipped.write(part, part.name)
    return archive
