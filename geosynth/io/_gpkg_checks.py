"""Checks that a release GeoPackage holds nothing beside its layers: GeoPackage's own tables.

GDAL lists and reads only the layers registered in ``gpkg_contents``; whatever else an SQLite
file holds (tables, views, rows of the GeoPackage's own tables, the text of its schema, the
boxes of its spatial indexes) travels with the file unseen by what reads the layers. A release
is meant to be published whole, so :func:`geosynth.io.read_release` refuses any of it that
geosynth never writes, naming the table, never the content.

Not read: the unused bytes inside a page (between its cell pointers and its cells, and its
freeblocks), where SQLite itself leaves a few bytes of genuine files non-zero. Text written
there passes, as would data in the low-order digits of the synthetic coordinates, which no
check can tell from their values: these checks find what a reader of the layers would miss,
not what a publisher set on hiding data puts in.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyogrio
import pyproj

from geosynth.errors import InputError
from geosynth.io._files import not_a_geopackage, printable

__all__ = ["EDITED", "GDAL_ERRORS", "hidden_objects", "check_gpkg_tables",
           "check_column_types", "check_spatial_indexes", "check_unread_room", "stored_columns"]

#: The end of every refusal of a file changed after :func:`geosynth.io.write_release`.
EDITED = "the file was edited after it was written: do not publish it, and write the release again"
#: The exceptions pyogrio raises for a file GDAL cannot read.
GDAL_ERRORS = (pyogrio.errors.DataSourceError, pyogrio.errors.DataLayerError, RuntimeError)


# Tables of the GeoPackage standard and of SQLite itself, which hold no layer's data.
_GEOPACKAGE_TABLES = frozenset({
    "gpkg_spatial_ref_sys", "gpkg_contents", "gpkg_ogr_contents", "gpkg_geometry_columns",
    "gpkg_tile_matrix_set", "gpkg_tile_matrix", "gpkg_extensions", "gpkg_data_columns",
    "gpkg_data_column_constraints", "gpkg_metadata", "gpkg_metadata_reference",
    "sqlite_sequence", "sqlite_stat1", "sqlite_stat4",
})


def hidden_objects(source: Path, layers: list[str]) -> list[str]:
    """Return the tables and views of ``source`` that are neither a layer nor GeoPackage's own.

    GDAL lists only the layers registered in ``gpkg_contents``: a table added beside them (the
    original coordinates, record ids) was read as a valid release and published with it, and
    a view is SQL that runs when it is read. Each is named ``"table 'x'"`` or ``"view 'x'"``.
    """
    rtree = {f"rtree_{layer}_geom{end}" for layer in layers  # a layer's spatial index
             for end in _RTREE_COLUMNS}
    try:
        with contextlib.closing(_read_only(source)) as connection:
            rows = connection.execute(
                "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view')"
            ).fetchall()
    except sqlite3.Error as err:
        raise not_a_geopackage(source, err) from None
    return [
        f"{kind} {printable(table)!r}" for kind, table in rows
        if kind == "view" or not (table in layers or table in _GEOPACKAGE_TABLES
                                  or table in rtree)
    ]


# GeoPackage tables a release leaves empty (GDAL creates some of them, geosynth fills none):
# their rows (metadata documents, column titles and descriptions, tiles) travel with the file,
# unseen by whatever lists or reads its layers.
_EMPTY_TABLES = ("gpkg_metadata", "gpkg_metadata_reference", "gpkg_data_columns",
                 "gpkg_data_column_constraints", "gpkg_tile_matrix_set", "gpkg_tile_matrix")
# gpkg_contents.last_change as GDAL writes it: "2024-05-01T12:00:00.123Z" (or without the
# milliseconds).
_DAY_TIME = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]"
_LAST_CHANGE = (f"{_DAY_TIME}Z", f"{_DAY_TIME}.[0-9][0-9][0-9]Z")
_UNSEEN = "which geosynth never writes (what reads the layers does not show it)"
# The spatial index GDAL gives a layer: SQLite's R*Tree ``rtree_<layer>_<geometry>`` and the
# three tables behind it, with these columns.
_RTREE_COLUMNS = {"": ["id", "minx", "maxx", "miny", "maxy"], "_node": ["nodeno", "data"],
                  "_parent": ["nodeno", "parentnode"], "_rowid": ["rowid", "nodeno"]}
_RTREE_MODULE = re.compile(r"^\s*CREATE\s+VIRTUAL\s+TABLE\s.*\sUSING\s+rtree\s*\(", re.I | re.S)
# A cell of an R*Tree node: a node or feature id, then minx, maxx, miny, maxy in float32.
_RTREE_CELL = np.dtype([("id", ">i8"), ("box", ">f4", (4,))])
# SQLite stores the boxes in float32 rounded outwards: this close (relative) to the bounds.
_RTREE_ROUNDING = 2.0**-22
_MAX_RTREE_DEPTH = 64
# GDAL writes the extent in gpkg_contents as decimal text, its last digit rounded.
_EXTENT_DIGITS = 1e-12


# The GeoPackage's ids in the SQLite header: application_id "GPKG", user_version 1.2 to 1.4.
_GPKG_APPLICATION_ID = 0x47504B47
_GPKG_VERSIONS = frozenset({10200, 10201, 10300, 10400})
# Columns of the GeoPackage's own tables (GeoPackage 1.4, annex C; ``definition_12_063`` and
# ``epoch`` of the CRS WKT extension) and of SQLite's.
_GPKG_COLUMNS = {
    "gpkg_spatial_ref_sys": frozenset({"srs_name", "srs_id", "organization",
                                       "organization_coordsys_id", "definition", "description",
                                       "definition_12_063", "epoch"}),
    "gpkg_contents": frozenset({"table_name", "data_type", "identifier", "description",
                                "last_change", "min_x", "min_y", "max_x", "max_y", "srs_id"}),
    "gpkg_ogr_contents": frozenset({"table_name", "feature_count"}),
    "gpkg_geometry_columns": frozenset({"table_name", "column_name", "geometry_type_name",
                                        "srs_id", "z", "m"}),
    "gpkg_tile_matrix_set": frozenset({"table_name", "srs_id", "min_x", "min_y", "max_x",
                                       "max_y"}),
    "gpkg_tile_matrix": frozenset({"table_name", "zoom_level", "matrix_width", "matrix_height",
                                   "tile_width", "tile_height", "pixel_x_size", "pixel_y_size"}),
    "gpkg_extensions": frozenset({"table_name", "column_name", "extension_name", "definition",
                                  "scope"}),
    "gpkg_data_columns": frozenset({"table_name", "column_name", "name", "title",
                                    "description", "mime_type", "constraint_name"}),
    "gpkg_data_column_constraints": frozenset({"constraint_name", "constraint_type", "value",
                                               "min", "min_is_inclusive", "max",
                                               "max_is_inclusive", "description"}),
    "gpkg_metadata": frozenset({"id", "md_scope", "md_standard_uri", "mime_type", "metadata"}),
    "gpkg_metadata_reference": frozenset({"reference_scope", "table_name", "column_name",
                                          "row_id_value", "timestamp", "md_file_id",
                                          "md_parent_id"}),
    "sqlite_sequence": frozenset({"name", "seq"}),
    "sqlite_stat1": frozenset({"tbl", "idx", "stat"}),
    "sqlite_stat4": frozenset({"tbl", "idx", "neq", "nlt", "ndlt", "sample"}),
}
# The columns of a spatial index and its tables (:data:`_RTREE_COLUMNS`).
_RTREE_NAMES = frozenset(column for columns in _RTREE_COLUMNS.values() for column in columns)
# The row gpkg_extensions holds for each spatial index, after its table and column.
_RTREE_EXTENSION = ("gpkg_rtree_index", "http://www.geopackage.org/spec120/#extension_rtree",
                    "write-only")
# GDAL's default rows of gpkg_spatial_ref_sys, and its row for layers without a CRS: srs_id ->
# name, organization, code, description, definition (None: WGS 84's, as the PROJ at hand
# writes it).
_DEFAULT_SYSTEMS = {
    -1: ("Undefined Cartesian SRS", "NONE", -1, "undefined Cartesian coordinate reference system",
         "undefined"),
    0: ("Undefined geographic SRS", "NONE", 0, "undefined geographic coordinate reference system",
        "undefined"),
    4326: ("WGS 84 geodetic", "EPSG", 4326,
           "longitude/latitude coordinates in decimal degrees on the WGS 84 spheroid", None),
    99999: ("Undefined SRS", "GDAL", 99999, "Custom undefined coordinate reference system",
            'LOCAL_CS["Undefined SRS",LOCAL_DATUM["unknown",32767],UNIT["unknown",0],'
            'AXIS["Easting",EAST],AXIS["Northing",NORTH]]'),
}
# SQL tokens: comments, 'literals', "names" (also `x` and [x]), numbers, words, anything else.
_SQL_TOKEN = re.compile(r"""--[^\n]*|/\*.*?(?:\*/|$)|'(?:[^']|'')*'?|"(?:[^"]|"")*"?"""
                        r"""|`(?:[^`]|``)*`?|\[[^\]]*\]?|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?"""
                        r"""|\.[0-9]+|[A-Za-z_][A-Za-z0-9_$]*|\S""", re.S)
# SQL words of the schema GDAL writes for a release (the GeoPackage tables, layers of every
# column kind, spatial indexes and their triggers, the feature-count triggers).
_SQL_WORDS = frozenset("""
    ABORT AFTER AND AUTOINCREMENT BEFORE BEGIN BLOB BOOLEAN CONSTRAINT CREATE DATE DATETIME
    DEFAULT DELETE DOUBLE EACH END FLOAT FOR FOREIGN FROM IN INSERT INTEGER INTO ISNULL KEY
    LOWER MEDIUMINT NEW NOT NOTNULL NULL OF OLD ON OR PRIMARY RAISE REAL REFERENCES REPLACE ROW
    RTREE SELECT SET SMALLINT STRFTIME ST_ISEMPTY ST_MAXX ST_MAXY ST_MINX ST_MINY TABLE TEXT
    TINYINT TRIGGER UNIQUE UPDATE USING VALUES VIRTUAL WHEN WHERE
    GEOMETRY POINT MULTIPOINT POLYGON MULTIPOLYGON
    FK_GC_R_SRS_ID FK_GC_SRS FK_GC_TN FK_GTMS_SRS FK_GTMS_TABLE_NAME FK_TMM_TABLE_NAME GE_TCE
    PK_GEOM_COLS PK_TTM UK_GC_TABLE_NAME
""".split())
# The columns of gpkg_tile_matrix whose values GDAL's triggers constrain, and their messages.
_TILE_MATRIX_COLUMNS = ("zoom_level", "matrix_width", "matrix_height", "pixel_x_size",
                        "pixel_y_size")
_SQL_LITERALS = frozenset({"", "now", "%Y-%m-%dT%H:%M:%fZ"} | {
    f"{action} on table 'gpkg_tile_matrix' violates constraint: {column} {rule}"
    for action in ("insert", "update")
    for column, rule in zip(_TILE_MATRIX_COLUMNS, ("cannot be less than 0",
                                                   "cannot be less than 1",
                                                   "cannot be less than 1",
                                                   "must be greater than 0",
                                                   "must be greater than 0"), strict=True)})
# EPSG codes GDAL gives well-known units and the Greenwich meridian in WKT1 where PROJ gives none
# (metre, foot, US survey foot, radian, degree, grad; Greenwich).
_UNIT_CODES = frozenset({"9001", "9002", "9003", "9101", "9122", "9105", "8901"})
# WKT tokens: "strings", numbers and words.
_WKT_TOKEN = re.compile(r'"(?:[^"]|"")*"|[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?'
                        r"|[A-Za-z_][A-Za-z0-9_]*")


def _read_only(source: Path) -> sqlite3.Connection:
    """Open the SQLite database ``source`` read-only."""
    return sqlite3.connect(f"{source.absolute().as_uri()}?mode=ro", uri=True)


def _quote(identifier: str) -> str:
    """Return ``identifier`` quoted for SQL (names come from the file)."""
    return '"' + identifier.replace('"', '""') + '"'


def check_gpkg_tables(source: Path, name: str, layers: list[str],
                      kinds: dict[str, str | None]) -> None:
    """Refuse data in the GeoPackage's own tables where geosynth writes none.

    Rows of :data:`_EMPTY_TABLES`, and ``gpkg_contents`` rows other than GDAL's for the layers
    of a release (identifier: the layer name; no description; the time of writing; no extent
    for the metadata table; its data type), may carry text or numbers (original coordinates,
    record ids) that travel with the file unseen. The content is not quoted. The extents of the
    spatial layers are compared with their features by :func:`check_spatial_indexes`, the rest
    of the file by :func:`check_unread_room`.
    """
    _refuse(source, name, lambda connection: _filled_table(connection)
            or _contents_problem(connection, layers, kinds))


# The values each column type GDAL declares holds (SQLite's ``typeof``), and the range of its
# integers (BOOLEAN, and GDAL's narrower integer types): declared type -> (storage classes,
# smallest, largest, what the message says). SQLite keeps any value in any column (text in an
# INTEGER column when it is no number) and GDAL converts what it reads: "7a" in an INTEGER
# column was read as 7, 1.5 as 1, "abc" in a REAL column as 0.0, 7 in a BOOLEAN one as True.
_COLUMN_TYPES = {
    "INTEGER": (("integer",), None, None, "integers"),
    "MEDIUMINT": (("integer",), -(2**31), 2**31 - 1, "32-bit integers"),
    "SMALLINT": (("integer",), -(2**15), 2**15 - 1, "16-bit integers"),
    "TINYINT": (("integer",), -(2**7), 2**7 - 1, "8-bit integers"),
    "BOOLEAN": (("integer",), 0, 1, "0 or 1 (false or true)"),
    "REAL": (("real",), None, None, "numbers"),
    "FLOAT": (("real",), None, None, "numbers"),
    "DOUBLE": (("real",), None, None, "numbers"),
    "TEXT": (("text",), None, None, "text"),
    "DATE": (("text",), None, None, "dates as text"),
    "DATETIME": (("text",), None, None, "date-times as text"),
    "BLOB": (("blob",), None, None, "binary data"),
}


def stored_columns(source: Path, layer: str) -> list[str]:
    """Return the columns of ``layer``'s table other than its feature id and its geometry.

    What GDAL reads is compared with them: a column named as the geometry GDAL gives back
    (``geometry`` beside a geometry column ``geom``) is replaced by the points when read, so
    its values travel with the file unseen by :func:`~geosynth.io.read_release` and
    ``geosynth inspect``.
    """
    try:
        with contextlib.closing(_read_only(source)) as connection:
            geometry = connection.execute("SELECT column_name FROM gpkg_geometry_columns WHERE "
                                          "table_name = ?", (layer,)).fetchone()
            rows = connection.execute("SELECT name, pk FROM pragma_table_info(?)",
                                      (layer,)).fetchall()
    except sqlite3.Error as err:
        raise not_a_geopackage(source, err) from None
    skipped = None if geometry is None else geometry[0]
    return [str(column) for column, key in rows if not key and column != skipped]


def check_column_types(source: Path, name: str, layers: list[str]) -> None:
    """Refuse a value of a layer's column that is not of the column's declared type.

    An edit such as ``UPDATE synthetic_1 SET y = '7a'`` keeps text in an INTEGER column
    (SQLite allows it), which GDAL reads as another value (7, a NaN, or a record that
    ``geosynth evaluate`` drops) than SQLite and other readers see. Every column GDAL writes
    is checked (its geometry column by the layer's own checks), with one scan of each layer;
    NULL is every type's missing value. The message names the layer, the column and the
    number of such values, never a value.
    """
    try:
        with contextlib.closing(_read_only(source)) as connection:
            for layer in layers:
                problem = _typed_layer_problem(connection, layer)
                if problem is not None:
                    raise InputError(f"{name}: {problem}, so {EDITED}")
    except sqlite3.Error as err:
        raise not_a_geopackage(source, err) from None


def _typed_layer_problem(connection: sqlite3.Connection, layer: str) -> str | None:
    """Describe the first column of ``layer`` holding values not of its type, or return None."""
    geometry = connection.execute("SELECT column_name FROM gpkg_geometry_columns WHERE "
                                  "table_name = ?", (layer,)).fetchone()
    columns, tests = [], []
    for column, declared, key in connection.execute(
            "SELECT name, type, pk FROM pragma_table_info(?)", (layer,)).fetchall():
        if key or (geometry is not None and column == geometry[0]):
            continue  # the feature id (SQLite's rowid: an integer) and the geometry
        base = str(declared).split("(")[0].strip().upper()
        classes, low, high, _ = _COLUMN_TYPES.get(base, ((), None, None, ""))
        quoted = _quote(column)
        wrong = f"typeof({quoted}) NOT IN ('null', {', '.join(repr(c) for c in classes)})" \
            if classes else f"typeof({quoted}) != 'null'"
        if low is not None:
            wrong += f" OR ({quoted} NOT BETWEEN {low} AND {high} AND typeof({quoted}) = 'integer')"
        columns.append((column, declared, base))
        tests.append(f"coalesce(sum({wrong}), 0)")
    if not tests:
        return None
    counts = connection.execute(f"SELECT {', '.join(tests)} FROM {_quote(layer)}").fetchone()
    for (column, declared, base), count in zip(columns, counts, strict=True):
        if count:
            wanted = _COLUMN_TYPES[base][3] if base in _COLUMN_TYPES else "values GDAL reads"
            return (f"its layer {printable(layer)!r} holds {count} value(s) in its column "
                    f"{printable(column)!r} (declared {printable(str(declared))[:20]}) that are "
                    f"not {wanted}, which GDAL reads as other values")
    return None


def check_unread_room(source: Path, name: str, layers: list[str],
                      kinds: dict[str, str | None], crs: str | None) -> None:
    """Refuse data where no reader of the layers looks: schema, bookkeeping rows, header.

    Run after every other check of a release, whose messages say more. Each of these may carry
    text or numbers (original coordinates, record ids) that travel with the file unseen: rows
    of the bookkeeping tables that are not GDAL's for the layers
    (:func:`_bookkeeping_problem`); coordinate reference systems other than the release's
    (:func:`_reference_systems_problem`, ``crs`` is the metadata's); SQL of the schema with
    words, names, literals or comments GDAL never writes, such as triggers, indexes or columns
    added beside the layers (:func:`_schema_problem`); and a header, free pages or bytes past
    the database beyond what SQLite and GDAL write (:func:`_file_problem`). The content is not
    quoted.
    """
    _refuse(source, name, lambda connection: _schema_problem(connection, layers)
            or _bookkeeping_problem(connection, layers, kinds)
            or _reference_systems_problem(connection, crs)
            or _file_problem(source, connection))


def _refuse(source: Path, name: str,
            problem_of: Callable[[sqlite3.Connection], str | None]) -> None:
    """Raise the refusal of a release whose SQLite database ``problem_of`` finds a problem in."""
    try:
        with contextlib.closing(_read_only(source)) as connection:
            problem = problem_of(connection)
    except sqlite3.Error as err:
        raise not_a_geopackage(source, err) from None
    if problem is not None:
        raise InputError(f"{name}: {problem}, {_UNSEEN}, so {EDITED}")


def _table_names(connection: sqlite3.Connection) -> set[str]:
    """Return the names of the tables of the database."""
    return {row[0] for row in connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}


def _filled_table(connection: sqlite3.Connection) -> str | None:
    """Describe the first table of :data:`_EMPTY_TABLES` that holds a row, or return None."""
    present = _table_names(connection)
    for table in _EMPTY_TABLES:
        if table in present and connection.execute(
                f"SELECT EXISTS (SELECT 1 FROM {_quote(table)})").fetchone()[0]:
            return f"its SQLite table {table!r} holds rows"
    return None


def _contents_problem(connection: sqlite3.Connection, layers: list[str],
                      kinds: dict[str, str | None]) -> str | None:
    """Describe a ``gpkg_contents`` row GDAL does not write for a release, or return None."""
    rows = connection.execute(
        "SELECT table_name, (identifier IS NULL OR identifier = table_name)"
        " AND (description IS NULL OR description = '')"
        " AND (last_change GLOB ? OR last_change GLOB ?),"
        " min_x IS NULL AND min_y IS NULL AND max_x IS NULL AND max_y IS NULL, data_type"
        " FROM gpkg_contents LIMIT ?", (*_LAST_CHANGE, len(layers) + 1)).fetchall()
    table = "its SQLite table 'gpkg_contents'"
    if len(rows) > len(layers) or any(row[0] not in layers for row in rows):
        return f"{table} has a row for a table that is not one of its layers"
    for layer, plain, no_extent, data_type in rows:
        shown = printable(layer)
        if not plain:
            return (f"{table} gives the layer {shown!r} an identifier, description or time "
                    "stamp other than GDAL's (the layer name, none, the time of writing)")
        if kinds.get(layer) is None and not no_extent:
            return f"{table} gives the table {shown!r} an extent"
        if data_type != ("attributes" if kinds.get(layer) is None else "features"):
            return f"{table} gives the layer {shown!r} a data type other than GDAL's"
    return None


def _file_problem(source: Path, connection: sqlite3.Connection) -> str | None:
    """Describe room for data in the SQLite file outside its tables, or return None.

    The header's GeoPackage ids (``application_id`` ``GPKG``, ``user_version`` of a GeoPackage
    version), its reserved bytes and the bytes reserved at the end of each page, free pages (a
    deleted table's data stays in them), pages on no free list that no table reads (SQLite's
    integrity check), and bytes past the database's last page are read by no table.
    """
    (application,) = connection.execute("PRAGMA application_id").fetchone()
    (version,) = connection.execute("PRAGMA user_version").fetchone()
    (pages,) = connection.execute("PRAGMA page_count").fetchone()
    (page_size,) = connection.execute("PRAGMA page_size").fetchone()
    (free,) = connection.execute("PRAGMA freelist_count").fetchone()
    with open(source, "rb") as file:
        header = file.read(100)
    if application != _GPKG_APPLICATION_ID or version not in _GPKG_VERSIONS:
        return "its SQLite header gives other GeoPackage ids than GDAL's"
    if header[20] != 0 or any(header[72:92]):
        return "its SQLite header reserves bytes that SQLite leaves empty"
    if free:
        return f"its SQLite file holds {free} free pages (the data of deleted rows or tables)"
    if source.stat().st_size != pages * page_size:
        return "its SQLite file holds bytes past its last page"
    # Pages no table reads and the free list does not count (a dropped table's, its header's
    # free-list count zeroed) passed the count above; SQLite's own check finds them.
    (verdict,) = connection.execute("PRAGMA integrity_check(1)").fetchone()
    if verdict != "ok":
        return ("its SQLite file fails SQLite's integrity check: pages that no table reads "
                "(a deleted table's data) or damage")
    return None


def _schema_problem(connection: sqlite3.Connection, layers: list[str]) -> str | None:
    """Describe SQL in the schema that GDAL does not write for a release, or return None.

    Triggers and indexes must be GDAL's (the spatial-index and feature-count triggers of each
    layer, the GeoPackage's own on ``gpkg_tile_matrix`` and SQLite's automatic indexes), the
    GeoPackage's own tables must have their standard columns, and the SQL of every object may
    use only SQL words GDAL writes, the names of the tables and their columns, the literals of
    GDAL's constraints, the numbers 0 and 1 and no comment: text anywhere else in the schema
    (a column's default, a trigger's body, a comment) travels with the file unseen.
    """
    objects = connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    tables = {name for kind, name, _, _ in objects if kind == "table"}
    columns: set[str] = set()
    for table in tables:
        found = [row[0] for row in connection.execute("SELECT name FROM pragma_table_info(?)",
                                                      (table,))]
        standard = _GPKG_COLUMNS.get(table)
        if standard is not None and not set(found) <= standard:
            return f"its SQLite table {table!r} has columns the GeoPackage standard does not"
        if table in layers or standard is not None:
            columns.update(found)
    geometry = dict(connection.execute("SELECT table_name, column_name FROM "
                                       "gpkg_geometry_columns").fetchall())
    names = {name for _, name, _, _ in objects} | columns | set(_RTREE_NAMES)
    for kind, name, table, sql in objects:
        on = f"on its table {printable(table)!r}"  # tables are checked: names are not
        if kind != "table" and not _own_trigger_or_index(kind, name, table, sql, tables,
                                                         geometry.get(table)):
            return f"its SQLite schema holds {'an' if kind == 'index' else 'a'} {kind} {on} that " \
                   "GDAL never writes"
        if sql is not None and not _plain_sql(sql, names):
            return (f"the SQL of its SQLite {kind} {on} holds words, numbers or comments GDAL "
                    "never writes")
    return None


def _own_trigger_or_index(kind: str, name: str, table: str, sql: str | None,
                          tables: set[str], geometry: str | None) -> bool:
    """Whether the trigger or index ``name`` on ``table`` is one GDAL or SQLite creates.

    ``geometry`` is the table's geometry column (None if it has none).
    """
    if table not in tables:
        return False
    if kind == "index":
        return sql is None and re.fullmatch(rf"sqlite_autoindex_{re.escape(table)}_[0-9]+",
                                            name) is not None
    if kind != "trigger":
        return False
    spatial = f"rtree_{table}_{geometry}_" if geometry is not None else None
    if spatial is not None and name.startswith(spatial):
        return re.fullmatch(r"insert|update[1-7]|delete", name[len(spatial):]) is not None
    if table == "gpkg_tile_matrix":  # the GeoPackage's own constraints
        pattern = rf"gpkg_tile_matrix_(?:{'|'.join(_TILE_MATRIX_COLUMNS)})_(?:insert|update)"
    else:
        pattern = rf"trigger_(?:insert|delete)_feature_count_{re.escape(table)}"
    return re.fullmatch(pattern, name) is not None


def _plain_sql(sql: str, names: set[str]) -> bool:
    """Whether every token of ``sql`` is a word, name, literal or number GDAL writes."""
    for token in _SQL_TOKEN.findall(sql):
        first = token[0]
        if token.startswith(("--", "/*")):
            return False
        if first == "'":
            if token[1:-1].replace("''", "'") not in names | _SQL_LITERALS:
                return False
        elif first in "\"`[":
            if token[1:-1].replace(first * 2, first) not in names:
                return False
        elif first.isdigit() or (first == "." and len(token) > 1):
            if token not in ("0", "1"):
                return False
        elif (first.isalpha() or first == "_") and token.upper() not in _SQL_WORDS \
                and token not in names:
            return False
    return True


def _layer_rows(connection: sqlite3.Connection, layer: str) -> tuple[int, int | None]:
    """Return the number of rows of ``layer`` and its largest feature id (None if empty)."""
    fid = connection.execute("SELECT name FROM pragma_table_info(?) WHERE pk = 1",
                             (layer,)).fetchone()
    key = _quote(fid[0]) if fid is not None else "rowid"
    return connection.execute(f"SELECT count(*), max({key}) FROM {_quote(layer)}").fetchone()


def _bookkeeping_problem(connection: sqlite3.Connection, layers: list[str],
                         kinds: dict[str, str | None]) -> str | None:
    """Describe a row of GDAL's and SQLite's bookkeeping tables that a release does not hold.

    ``gpkg_ogr_contents`` (each layer's feature count), ``sqlite_sequence`` (each layer's last
    feature id), ``gpkg_geometry_columns`` and ``gpkg_extensions`` (one geometry column and one
    spatial index per spatial layer) hold at most one row per layer, with these values; a row
    for another table, a second row or another number could be anything.
    ``sqlite_stat1``/``sqlite_stat4`` (written by ``ANALYZE``, which GDAL does not run for a
    release) must be empty.
    """
    counts = {layer: _layer_rows(connection, layer) for layer in layers}
    present = _table_names(connection)
    for stat in ("sqlite_stat1", "sqlite_stat4"):
        if stat in present and _rows(connection, stat, "*", 0) is None:
            return f"its SQLite table {stat!r} holds rows"
    feature_counts = _rows(connection, "gpkg_ogr_contents", "table_name, feature_count",
                           len(layers)) if "gpkg_ogr_contents" in present else []
    if feature_counts is None or any(layer not in counts or count not in (None, counts[layer][0])
                                     for layer, count in feature_counts):
        return ("its SQLite table 'gpkg_ogr_contents' holds a row that is not a layer's "
                "feature count")
    sequence = _rows(connection, "sqlite_sequence", "name, seq", len(layers)) \
        if "sqlite_sequence" in present else []
    if sequence is None or len({layer for layer, _ in sequence}) < len(sequence) or any(
            layer not in counts or last != (counts[layer][1] or 0) for layer, last in sequence):
        return ("its SQLite table 'sqlite_sequence' holds a row that is not a layer's last "
                "feature id")
    spatial = {layer for layer in layers if kinds.get(layer) is not None}
    geometry = _rows(connection, "gpkg_geometry_columns", "table_name, column_name",
                     len(spatial))
    if geometry is None or not {table for table, _ in geometry} <= spatial:
        return ("its SQLite table 'gpkg_geometry_columns' has a row for a table that is not "
                "one of its spatial layers")
    extensions = _rows(connection, "gpkg_extensions", "table_name, column_name, "
                       "extension_name, definition, scope", len(geometry)) \
        if "gpkg_extensions" in present else []
    if extensions is None or not {tuple(row) for row in extensions} <= {
            (table, column, *_RTREE_EXTENSION) for table, column in geometry}:
        return ("its SQLite table 'gpkg_extensions' has a row other than the spatial index of "
                "a layer")
    return None


def _rows(connection: sqlite3.Connection, table: str, columns: str,
          most: int) -> list[tuple[Any, ...]] | None:
    """Return the rows of ``table`` (its ``columns``), or None if it has more than ``most``."""
    rows = connection.execute(f"SELECT {columns} FROM {_quote(table)} LIMIT ?",
                              (most + 1,)).fetchall()
    return rows if len(rows) <= most else None


def _reference_systems_problem(connection: sqlite3.Connection, crs: str | None) -> str | None:
    """Describe a ``gpkg_spatial_ref_sys`` row other than GDAL's for the release's ``crs``.

    GDAL writes its three default rows (undefined Cartesian, undefined geographic, WGS 84) and
    one row for the layers' CRS: its name, authority and code, or ``unknown``, ``NONE`` and the
    row's id, no description; or GDAL's own "Undefined SRS" for layers without a CRS. A row
    used by no layer, a description, a name or words and numbers in a definition that the CRS
    itself does not have (compared as WKT tokens, so other versions of PROJ may format it
    differently) could carry anything.
    """
    used = {row[0] for row in connection.execute(
        "SELECT srs_id FROM gpkg_contents UNION SELECT srs_id FROM gpkg_geometry_columns")}
    parsed = _parsed_crs(crs)
    expected = _crs_tokens(parsed) if parsed is not None else None
    authority = parsed.to_authority() if parsed is not None else None
    # what GDAL records as organization and code: the CRS's authority, or NONE and the row id
    recorded = {(authority[0], int(authority[1]))} if authority and authority[1].isdigit() \
        else set()
    table = "its SQLite table 'gpkg_spatial_ref_sys'"
    rows = _rows(connection, "gpkg_spatial_ref_sys", "srs_id, srs_name, organization, "
                 "organization_coordsys_id, definition, description",
                 len(used | set(_DEFAULT_SYSTEMS)))
    if rows is None:
        return f"{table} has a row no layer uses"
    for srs_id, srs_name, organization, code, definition, description in rows:
        if srs_id in _DEFAULT_SYSTEMS:
            *fields, default = _DEFAULT_SYSTEMS[srs_id]
            if [srs_name, organization, code, description] != fields or not (
                    definition == default if default is not None
                    else _wkt_tokens(definition) <= _wgs84_tokens()):
                return f"{table} changes GDAL's row for {fields[0]}"
            continue
        if srs_id not in used:
            return f"{table} has a row no layer uses"
        if description not in (None, "") or expected is None or not isinstance(definition, str):
            return f"{table} describes the layers' CRS in other words than GDAL's"
        names = {word.strip('"') for word in expected if word.startswith('"')}
        if (srs_name not in names | {"unknown"}
                or (organization, code) not in recorded | {("NONE", srs_id)}
                or not _wkt_tokens(definition) <= expected):
            return f"{table} describes the layers' CRS in other words than GDAL's"
    return None


@functools.cache
def _wgs84_tokens() -> set[str]:
    """Tokens of GDAL's WGS 84 row: EPSG:4326's, and the axes GDAL writes in WKT1."""
    return _crs_tokens(pyproj.CRS("EPSG:4326")) | {"AXIS", "NORTH", "EAST", '"Latitude"',
                                                   '"Longitude"'}


def _wkt_tokens(text: Any) -> set[str]:
    """Return the quoted strings, numbers and words of the WKT ``text`` (a NUL for no text)."""
    return set(_WKT_TOKEN.findall(text)) if isinstance(text, str) else {"\0"}


def _parsed_crs(crs: str | None) -> pyproj.CRS | None:
    """Return the metadata's ``crs`` parsed by pyproj, or None (none, or not a CRS)."""
    try:
        return pyproj.CRS(crs) if crs is not None else None
    except pyproj.exceptions.CRSError:
        return None


def _crs_tokens(parsed: pyproj.CRS) -> set[str]:
    """Tokens of a CRS written as WKT1 (GDAL's GeoPackage definition) and WKT2."""
    texts = [parsed.to_wkt(version) for version in ("WKT1_GDAL", "WKT2_2019")]
    tokens = set().union(*(_wkt_tokens(text) for text in texts if text)) | _UNIT_CODES
    return tokens | {f'"{word}"' for word in tokens if not word.startswith('"')}


def check_spatial_indexes(
    source: Path, name: str, layers: list[str],
    bounds: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> None:
    """Refuse spatial indexes and extents of ``layers`` that are not their features' own.

    GDAL gives a spatial layer an R*Tree of its features' bounding boxes and records their
    extent in ``gpkg_contents``; other boxes there (original coordinates, their extremes) would
    travel with the file unseen. The index must be SQLite's R*Tree with GDAL's columns, hold
    one box per feature, equal to its bounds up to SQLite's float32 rounding, a ``_rowid``
    table that finds each box's node, and nothing beside its tree (:func:`_rtree_leaves`);
    the extent is none or the features' own (:func:`_bounds_problem`: arrays of the features'
    bounds and of the index's nodes, no loop over rows). An empty layer has no extent.

    ``bounds`` maps a layer to the feature ids and bounds ``(4, n)`` of all its features as
    GDAL reads them (:func:`pyogrio.read_bounds`'s result), when the caller read them already
    (e.g. from the points it read); the other layers' are read here.
    """
    known = {} if bounds is None else bounds
    try:
        with contextlib.closing(_read_only(source)) as connection:
            for layer in layers:
                compare, rtree, problem = _rtree_structure(connection, layer)
                if compare:
                    problem = _bounds_problem(source, layer, rtree, connection,
                                              known.get(layer))
                if problem is not None:
                    raise InputError(f"{name}: {problem}, {_UNSEEN}, so {EDITED}")
    except sqlite3.Error as err:
        raise not_a_geopackage(source, err) from None


def _rtree_structure(connection: sqlite3.Connection,
                     layer: str) -> tuple[bool, str | None, str | None]:
    """Return whether ``layer`` has bounds to compare, its R*Tree (or None) and a problem.

    Nothing is compared for a layer GDAL read without a geometry column or feature id; the
    R*Tree is None when the layer has no spatial index. The problem is None when the index is
    absent or SQLite's R*Tree with GDAL's columns, else it says what is wrong.
    """
    column = connection.execute("SELECT column_name FROM gpkg_geometry_columns WHERE "
                                "table_name = ?", (layer,)).fetchone()
    fid = connection.execute("SELECT name FROM pragma_table_info(?) WHERE pk = 1",
                             (layer,)).fetchall()
    if column is None or len(fid) != 1 or not isinstance(column[0], str):
        return False, None, None
    rtree = f"rtree_{layer}_{column[0]}"
    found = dict(connection.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name IN (?, ?, ?, ?)",
        [rtree + end for end in _RTREE_COLUMNS]).fetchall())
    if not found:
        return True, None, None
    problem = (f"the spatial index of its layer {layer!r} (SQLite table {rtree!r}) is not the "
               "R*Tree GDAL writes")
    if len(found) != len(_RTREE_COLUMNS) or not _RTREE_MODULE.match(str(found.get(rtree))):
        return False, None, problem
    for end, expected in _RTREE_COLUMNS.items():
        columns = [row[0] for row in connection.execute(
            "SELECT name FROM pragma_table_info(?)", (rtree + end,))]
        if columns != expected:
            return False, None, problem
    return True, rtree, None


def _bounds_problem(source: Path, layer: str, rtree: str | None,
                    connection: sqlite3.Connection,
                    known: tuple[np.ndarray, np.ndarray] | None = None) -> str | None:
    """Compare the extent and the spatial index of ``layer`` with its features' bounds.

    The features' bounds come from GDAL (``known``, the ids and bounds of the features the
    caller read, else :func:`pyogrio.read_bounds`, as ``ST_MinX`` & co. read them; null and
    empty geometries have none); the index's boxes from its nodes (:func:`_rtree_leaves`),
    compared in arrays: the rules SQL over the features applied, which took most of the
    reading of a large release.
    """
    try:
        fids, bounds = pyogrio.read_bounds(source, layer=layer) if known is None else known
    except GDAL_ERRORS as err:
        raise not_a_geopackage(source, err) from None
    located = np.isfinite(bounds).all(axis=0)
    fids, bounds = np.asarray(fids, dtype=np.int64)[located], bounds[:, located]
    extent = connection.execute("SELECT min_x, min_y, max_x, max_y FROM gpkg_contents WHERE "
                                "table_name = ?", (layer,)).fetchone()
    if extent is not None and not all(edge is None for edge in extent) and not _same_extent(
            extent, bounds):
        return (f"its SQLite table 'gpkg_contents' gives the layer {layer!r} an extent that is "
                "not its features'")
    if rtree is None:
        return None
    named = f"the spatial index of its layer {layer!r} (SQLite table {rtree!r})"
    leaves = _rtree_leaves(connection, rtree)
    if leaves is None:
        return f"{named} holds other boxes than its features' bounds"
    order = np.argsort(leaves[0], kind="stable")
    ids, boxes, nodes = (part[order] for part in leaves)
    if not _rowids_match(connection, rtree, ids, nodes):
        return f"{named} is not the R*Tree GDAL writes (its _rowid table is not its tree's)"
    where = np.minimum(np.searchsorted(ids, fids), max(len(ids) - 1, 0))
    if len(ids) != len(fids) or (len(ids) and not (
            np.array_equal(ids[where], fids) and (np.diff(ids) > 0).all())):
        return f"{named} holds other boxes than its features' bounds"
    features = bounds[[0, 2, 1, 3]].T  # minx, maxx, miny, maxy: the index's columns
    near = np.abs(boxes[where] - features) <= np.abs(boxes[where]) * _RTREE_ROUNDING + 1e-36
    if not near.all():
        return f"{named} holds other boxes than its features' bounds"
    return None


def _same_extent(extent: tuple[Any, ...], bounds: np.ndarray) -> bool:
    """Whether ``gpkg_contents``' extent is that of the features' ``bounds`` (4, n)."""
    if bounds.shape[1] == 0 or not all(isinstance(edge, int | float) for edge in extent):
        return False
    found = (bounds[0].min(), bounds[1].min(), bounds[2].max(), bounds[3].max())
    return all(abs(edge - value) <= abs(value) * _EXTENT_DIGITS + 1e-36
               for edge, value in zip(extent, found, strict=True))


def _rowids_match(connection: sqlite3.Connection, rtree: str, ids: np.ndarray,
                  nodes: np.ndarray) -> bool:
    """Whether the ``_rowid`` table of ``rtree`` maps each leaf cell's id to its node, only.

    ``ids`` (sorted) and ``nodes``: the leaf cells' ids and node numbers. Only rows of
    integers are loaded (SQL's ``typeof``, not a loop over rows): text or reals where SQLite
    keeps integers leave fewer rows than the table has.
    """
    table = _quote(rtree + "_rowid")
    (count,) = connection.execute(f"SELECT count(*) FROM {table}").fetchone()
    if count != len(ids):
        return False
    rows = connection.execute(
        f"SELECT rowid, nodeno FROM {table} WHERE typeof(rowid) = 'integer' AND "
        "typeof(nodeno) = 'integer' ORDER BY rowid").fetchall()
    recorded = np.array(rows, dtype=np.int64).reshape(-1, 2)
    return np.array_equal(recorded, np.stack([ids, nodes], axis=1))


def _rtree_leaves(connection: sqlite3.Connection,
                  rtree: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Return the cells of the leaves of the R*Tree ``rtree``, or None if it holds more.

    The nodes must hold the tree and nothing more: no node that no parent reaches, no bytes
    past a node's last cell (or before it, outside the root), no inner box wider than its
    children's, a ``_parent`` table that is the tree's. Each could carry other values.

    Returns
    -------
    tuple of numpy.ndarray or None
        The leaf cells' ids (int64), boxes ``(n, 4)`` (minx, maxx, miny, maxy as float64) and
        node numbers.
    """
    nodes = _quote(rtree + "_node")
    parents = _quote(rtree + "_parent")
    count, extra = connection.execute(
        f"SELECT count(*), count(*) - 1 - (SELECT count(*) FROM {parents}) FROM {nodes}"
    ).fetchone()
    if extra != 0:  # one parent per node under the root
        return None
    rows = connection.execute(f"SELECT nodeno, data FROM {nodes} ORDER BY nodeno").fetchall()
    sizes = {len(data) if isinstance(data, bytes) else -1 for _, data in rows}
    size = sizes.pop() if len(sizes) == 1 else -1
    if size < 4 or (size - 4) % _RTREE_CELL.itemsize or rows[0][0] != 1:
        return None
    numbers = np.array([number for number, _ in rows], dtype=np.int64)
    raw = np.frombuffer(b"".join(data for _, data in rows), dtype=np.uint8).reshape(count, size)
    cells = raw[:, 4:].view(_RTREE_CELL)
    used = np.arange(cells.shape[1]) < (raw[:, 2].astype(np.int64) * 256 + raw[:, 3])[:, None]
    depth = int(raw[0, 0]) * 256 + int(raw[0, 1])
    slack = raw[:, 4:].reshape(count, cells.shape[1], _RTREE_CELL.itemsize)[~used]
    if raw[1:, :2].any() or slack.any() or depth > _MAX_RTREE_DEPTH:
        return None
    boxes = cells["box"].astype(np.float64)
    low = np.where(used[..., None], boxes, np.inf).min(axis=1)
    high = np.where(used[..., None], boxes, -np.inf).max(axis=1)
    union = np.stack([low[:, 0], high[:, 1], low[:, 2], high[:, 3]], axis=1)
    level = np.zeros(1, dtype=np.int64)
    reached, parents_of = [level], [np.zeros(0, dtype=np.int64)]
    for _ in range(depth):
        children = cells["id"][level][used[level]]
        where = np.minimum(np.searchsorted(numbers, children), count - 1)
        if not (numbers[where] == children).all() or not np.array_equal(
                boxes[level][used[level]], union[where]):
            return None
        parents_of.append(np.repeat(numbers[level], used[level].sum(axis=1)))
        level = where
        reached.append(level)
    every = np.concatenate(reached)
    if len(every) != count or len(np.unique(every)) != count:
        return None
    recorded = np.array(connection.execute(
        f"SELECT nodeno, parentnode FROM {parents} ORDER BY nodeno").fetchall(),
        dtype=object).reshape(-1, 2)
    order = np.argsort(numbers[every[1:]])
    expected = np.stack([numbers[every[1:]][order], np.concatenate(parents_of)[order]], axis=1)
    if not np.array_equal(recorded, expected):
        return None
    leaf = used[level]
    return (cells["id"][level][leaf].astype(np.int64), boxes[level][leaf],
            np.repeat(numbers[level], leaf.sum(axis=1)))
