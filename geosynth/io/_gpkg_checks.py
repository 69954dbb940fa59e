"""Checks that a release GeoPackage holds nothing beside its layers: GeoPackage's own tables.

GDAL lists and reads only the layers registered in ``gpkg_contents``; whatever else an SQLite
file holds (tables, views, rows of the GeoPackage's own tables, the text of its schema, the
boxes of its spatial indexes) travels with the file unseen by what reads the layers. A release
is meant to be published whole, so :func:`geosynth.io.read_release` refuses any of it that
geosynth never writes, naming the table, never the content.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from pathlib import Path

import numpy as np
import pyogrio

from geosynth.errors import InputError
from geosynth.io._files import not_a_geopackage, printable

__all__ = ["EDITED", "GDAL_ERRORS", "hidden_objects", "check_gpkg_tables",
           "check_spatial_indexes"]

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
    for the metadata table), may carry text or numbers (original coordinates, record ids) that
    travel with the file unseen. The content is not quoted. The extents of the spatial layers
    are compared with their features by :func:`check_spatial_indexes`.
    """
    try:
        with contextlib.closing(_read_only(source)) as connection:
            problem = _filled_table(connection) or _contents_problem(connection, layers, kinds)
    except sqlite3.Error as err:
        raise not_a_geopackage(source, err) from None
    if problem is not None:
        raise InputError(f"{name}: its SQLite table {problem}, {_UNSEEN}, so {EDITED}")


def _filled_table(connection: sqlite3.Connection) -> str | None:
    """Describe the first table of :data:`_EMPTY_TABLES` that holds a row, or return None."""
    present = {row[0] for row in connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table in _EMPTY_TABLES:
        if table in present and connection.execute(
                f"SELECT EXISTS (SELECT 1 FROM {_quote(table)})").fetchone()[0]:
            return f"{table!r} holds rows"
    return None


def _contents_problem(connection: sqlite3.Connection, layers: list[str],
                      kinds: dict[str, str | None]) -> str | None:
    """Describe a ``gpkg_contents`` row GDAL does not write for a release, or return None."""
    rows = connection.execute(
        "SELECT table_name, (identifier IS NULL OR identifier = table_name)"
        " AND (description IS NULL OR description = '')"
        " AND (last_change GLOB ? OR last_change GLOB ?),"
        " min_x IS NULL AND min_y IS NULL AND max_x IS NULL AND max_y IS NULL"
        " FROM gpkg_contents LIMIT ?", (*_LAST_CHANGE, len(layers) + 1)).fetchall()
    if len(rows) > len(layers) or any(row[0] not in layers for row in rows):
        return "'gpkg_contents' has a row for a table that is not one of its layers"
    for table, plain, no_extent in rows:
        if not plain:
            return (f"'gpkg_contents' gives the layer {printable(table)!r} an identifier, "
                    "description or time stamp other than GDAL's (the layer name, none, the "
                    "time of writing)")
        if kinds.get(table) is None and not no_extent:
            return f"'gpkg_contents' gives the table {printable(table)!r} an extent"
    return None


def check_spatial_indexes(source: Path, name: str, layers: list[str]) -> None:
    """Refuse spatial indexes and extents of ``layers`` that are not their features' own.

    GDAL gives a spatial layer an R*Tree of its features' bounding boxes and records their
    extent in ``gpkg_contents``; other boxes there (original coordinates, their extremes) would
    travel with the file unseen. The index must be SQLite's R*Tree with GDAL's columns, well
    hold one box per feature, equal to its bounds up to SQLite's float32 rounding and found
    through its ``_rowid`` table, and nothing beside its tree (:func:`_rtree_nodes_consistent`);
    the extent is none or the features' own. SQL aggregates and arrays of the index's nodes,
    no loop over rows.
    """
    try:
        with contextlib.closing(_read_only(source)) as connection:
            for layer in layers:
                index, problem = _rtree_structure(connection, layer)
                if index is not None:
                    problem = _bounds_problem(source, layer, index, connection)
                if problem is not None:
                    raise InputError(f"{name}: {problem}, {_UNSEEN}, so {EDITED}")
    except sqlite3.Error as err:
        raise not_a_geopackage(source, err) from None


def _rtree_structure(connection: sqlite3.Connection,
                     layer: str) -> tuple[tuple[str, str, str | None] | None, str | None]:
    """Return ``(geometry column, feature id column, R*Tree or None)`` of ``layer``, and a problem.

    The first is None for a layer GDAL read without a geometry column or feature id (nothing to
    compare); the R*Tree is None when the layer has no spatial index. The problem is None when
    the index is absent or SQLite's R*Tree with GDAL's columns, else it says what is wrong.
    """
    column = connection.execute("SELECT column_name FROM gpkg_geometry_columns WHERE "
                                "table_name = ?", (layer,)).fetchone()
    fid = connection.execute("SELECT name FROM pragma_table_info(?) WHERE pk = 1",
                             (layer,)).fetchall()
    if column is None or len(fid) != 1 or not isinstance(column[0], str):
        return None, None
    rtree = f"rtree_{layer}_{column[0]}"
    found = dict(connection.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name IN (?, ?, ?, ?)",
        [rtree + end for end in _RTREE_COLUMNS]).fetchall())
    if not found:
        return (column[0], fid[0][0], None), None
    problem = (f"the spatial index of its layer {layer!r} (SQLite table {rtree!r}) is not the "
               "R*Tree GDAL writes")
    if len(found) != len(_RTREE_COLUMNS) or not _RTREE_MODULE.match(str(found.get(rtree))):
        return None, problem
    for end, expected in _RTREE_COLUMNS.items():
        columns = [row[0] for row in connection.execute(
            "SELECT name FROM pragma_table_info(?)", (rtree + end,))]
        if columns != expected:
            return None, problem
    return (column[0], fid[0][0], rtree), None


def _bounds_problem(source: Path, layer: str, index: tuple[str, str, str | None],
                    connection: sqlite3.Connection) -> str | None:
    """Compare the extent and the spatial index of ``layer`` with its features (GDAL's SQL)."""
    geometry, fid, rtree = (_quote(part) if part is not None else None for part in index)
    # One scan for the extent and the number of features (ST_MinX is NULL for no geometry).
    scan = (f"(SELECT count(ST_MinX({geometry})) AS n, min(ST_MinX({geometry})) AS min_x, "
            f"min(ST_MinY({geometry})) AS min_y, max(ST_MaxX({geometry})) AS max_x, "
            f"max(ST_MaxY({geometry})) AS max_y FROM {_quote(layer)}) e")
    same = " AND ".join(f"abs(c.{edge} - e.{edge}) <= abs(e.{edge}) * {_EXTENT_DIGITS!r} + 1e-36"
                        for edge in ("min_x", "min_y", "max_x", "max_y"))
    literal = "'" + layer.replace("'", "''") + "'"
    parts = [f"""(SELECT count(*) FROM gpkg_contents c WHERE c.table_name = {literal} AND NOT (
        c.min_x IS NULL AND c.min_y IS NULL AND c.max_x IS NULL AND c.max_y IS NULL
        OR {same})) AS wrong_extent""", "e.n AS features"]
    if rtree is not None:
        near = " AND ".join(
            f"abs(r.{bound.lower()} - ST_{bound}(f.{geometry})) <= abs(r.{bound.lower()}) * "
            f"{_RTREE_ROUNDING!r} + 1e-36" for bound in ("MinX", "MaxX", "MinY", "MaxY"))
        parts += [f"(SELECT count(*) FROM {rtree}) AS boxes",
                  f"(SELECT count(*) FROM {_quote(index[2] + '_rowid')}) AS rowids",
                  # each feature looks its box up by id, through the index's _rowid table
                  f"(SELECT count(*) FROM {_quote(layer)} f CROSS JOIN {rtree} r "
                  f"ON r.id = f.{fid} WHERE {near}) AS matching"]
    try:
        row = pyogrio.read_dataframe(source, sql=f"SELECT {', '.join(parts)} FROM {scan}")
    except GDAL_ERRORS as err:
        if rtree is None:  # GDAL read the layer itself: the index is what it cannot read
            raise not_a_geopackage(source, err) from None
        return (f"the spatial index of its layer {layer!r} (SQLite table {index[2]!r}) is not "
                "the R*Tree GDAL writes (SQLite finds it corrupt)")
    row = row.iloc[0]
    if row["wrong_extent"]:
        return (f"its SQLite table 'gpkg_contents' gives the layer {layer!r} an extent that is "
                "not its features'")
    if rtree is not None and not (
            row["features"] == row["boxes"] == row["rowids"] == row["matching"]
            and _rtree_nodes_consistent(connection, index[2])):
        return (f"the spatial index of its layer {layer!r} (SQLite table {index[2]!r}) holds "
                "other boxes than its features' bounds")
    return None


def _rtree_nodes_consistent(connection: sqlite3.Connection, rtree: str) -> bool:
    """Whether the nodes of the R*Tree ``rtree`` hold its tree and nothing more.

    The comparison of the leaves with the features leaves unread: nodes no parent reaches,
    bytes past a node's last cell (or before it, outside the root), bounding boxes of inner
    nodes wider than their children's and the ``_parent`` table. Each could carry other values.
    """
    nodes = _quote(rtree + "_node")
    parents = _quote(rtree + "_parent")
    count, extra = connection.execute(
        f"SELECT count(*), count(*) - 1 - (SELECT count(*) FROM {parents}) FROM {nodes}"
    ).fetchone()
    if extra != 0:  # one parent per node under the root
        return False
    rows = connection.execute(f"SELECT nodeno, data FROM {nodes} ORDER BY nodeno").fetchall()
    sizes = {len(data) if isinstance(data, bytes) else -1 for _, data in rows}
    size = sizes.pop() if len(sizes) == 1 else -1
    if size < 4 or (size - 4) % _RTREE_CELL.itemsize or rows[0][0] != 1:
        return False
    numbers = np.array([number for number, _ in rows], dtype=np.int64)
    raw = np.frombuffer(b"".join(data for _, data in rows), dtype=np.uint8).reshape(count, size)
    cells = raw[:, 4:].view(_RTREE_CELL)
    used = np.arange(cells.shape[1]) < (raw[:, 2].astype(np.int64) * 256 + raw[:, 3])[:, None]
    depth = int(raw[0, 0]) * 256 + int(raw[0, 1])
    slack = raw[:, 4:].reshape(count, cells.shape[1], _RTREE_CELL.itemsize)[~used]
    if raw[1:, :2].any() or slack.any() or depth > _MAX_RTREE_DEPTH:
        return False
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
            return False
        parents_of.append(np.repeat(numbers[level], used[level].sum(axis=1)))
        level = where
        reached.append(level)
    every = np.concatenate(reached)
    if len(every) != count or len(np.unique(every)) != count:
        return False
    recorded = np.array(connection.execute(
        f"SELECT nodeno, parentnode FROM {parents} ORDER BY nodeno").fetchall(),
        dtype=object).reshape(-1, 2)
    order = np.argsort(numbers[every[1:]])
    expected = np.stack([numbers[every[1:]][order], np.concatenate(parents_of)[order]], axis=1)
    return np.array_equal(recorded, expected)
