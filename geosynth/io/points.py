"""Reading confidential point records: GeoPackage, GeoParquet, shapefile or CSV files."""

from __future__ import annotations

import os
import shlex
import struct
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pyproj
import shapely

from geosynth._messages import describe_rows
from geosynth._validation import check_bool, check_optional_str
from geosynth.errors import CRSError, InputError
from geosynth.io._files import (
    POINT_TYPE,
    existing_file,
    geopackage_problem,
    not_a_geopackage,
    printable,
)
from geosynth.lattice import parse_crs

__all__ = ["read_points"]

# What the row numbers of messages mean, per format (read_points returns a RangeIndex).
_ROW_MEANING = {
    "CSV": "counted from 0: row i is line i + 2 of the file",
    "GeoPackage": "counted from 0 in file order; they are not GeoPackage fids",
    "shapefile": "counted from 0 in file order",
    "GeoParquet": "counted from 0 in file order",
}
_FORMATS = {
    ".gpkg": "GeoPackage",
    ".parquet": "GeoParquet",
    ".geoparquet": "GeoParquet",
    ".shp": "shapefile",
    ".csv": "CSV",
}


def read_points(
    path: str | os.PathLike,
    *,
    x: str | None = None,
    y: str | None = None,
    crs: Any = None,
    layer: str | None = None,
    check_values: bool = True,
) -> gpd.GeoDataFrame:
    """Read confidential point records from a GeoPackage, GeoParquet, shapefile or CSV file.

    Parameters
    ----------
    path : str or os.PathLike
        ``.gpkg``, ``.parquet`` (or ``.geoparquet``), ``.shp`` or ``.csv`` file (the format is
        chosen by the extension).
    x, y : str, optional
        CSV only: names of the columns holding the coordinates. They become the point geometry
        and are not kept as attribute columns.
    crs : pyproj.CRS or str or int, optional
        CSV: the CRS of the coordinates (required). Other formats: the CRS of a file that has
        none; it must agree with the file's own CRS if the file has one.
    layer : str, optional
        GeoPackage only: the layer to read. May be omitted when the file has one layer, or one
        point layer.
    check_values : bool, default True
        False for a differentially private release (CLI ``--epsilon``): refuse nothing that
        depends on the records' values, since that refusal would itself disclose them. A file
        with no records is then read as an empty frame, non-Point geometries are passed
        through and missing, non-numeric or infinite CSV coordinates become points without
        finite coordinates; ``geosynth.prepare(..., levels=...)`` drops such records.

    Returns
    -------
    geopandas.GeoDataFrame
        One row per record, attribute columns as in the file, point geometry, and a
        ``RangeIndex``: row ``i`` is the ``i``-th record of the file counted from 0 (for a CSV
        file, line ``i + 2``; for a GeoPackage, in file order, which is not its ``fid``). Missing
        or empty geometries are passed through (:func:`geosynth.prepare` reports them with their
        rows).

    Raises
    ------
    geosynth.errors.InputError
        The file does not exist or cannot be read, a ``.gpkg`` file is not a GeoPackage or is
        damaged, a shapefile is truncated or lacks its ``.dbf``, a CSV file is not UTF-8 or a
        GeoPackage or shapefile holds text that is not in the encoding it declares (e.g. a
        ``.cpg`` saying UTF-8 over a CP1252 ``.dbf``), the extension is not one of
        the above, the file has no records (e.g. a CSV file with only its header), a CSV file
        has two columns of the same name or records with more fields than its header line
        names, a CSV is read without ``x``, ``y`` and
        ``crs``, an ``x``/``y`` column is missing or holds non-numeric, missing or infinite
        values, ``x``/``y``/``layer`` are given for a format they do not apply to,
        the layer is missing or ambiguous, or a geometry is not a Point. No message quotes
        a record's values: an ``x``/``y`` column is named, its bad rows counted, and a CSV
        header line that looks like a record (a file without header) is not repeated.
        A file whose attribute column is named ``geometry`` besides its geometry column, or
        (a shapefile) that names two fields alike, is refused: the reader would drop or
        overwrite that column's values.
    geosynth.errors.CRSError
        ``crs`` is not a valid CRS or contradicts the file's CRS.
    ImportError
        A GeoParquet file is read without the optional package ``pyarrow``.
    TypeError
        ``x``, ``y`` or ``layer`` is not a str (or None), or ``check_values`` is not a bool.

    Examples
    --------
    >>> points = read_points("listings.csv", x="lon", y="lat", crs="EPSG:4326")  # doctest: +SKIP
    """
    for name, value in (("x", x), ("y", y), ("layer", layer)):
        check_optional_str(value, name)
    check_values = check_bool(check_values, "check_values")
    source = existing_file(path)
    suffix = source.suffix.lower()
    if suffix not in _FORMATS:
        raise InputError(
            f"cannot read {printable(source.name)}: unknown extension "
            f"{printable(source.suffix)!r}; geosynth reads points from "
            f"{', '.join(sorted(set(_FORMATS)))} files (the format is chosen by the extension)"
        )
    kind = _FORMATS[suffix]
    if layer is not None and kind != "GeoPackage":
        raise InputError(
            f"layer={printable(layer)!r} applies to GeoPackage files only, but "
            f"{printable(source.name)} is a {kind} file; omit layer"
        )
    if kind == "CSV":
        gdf = _read_csv(source, x, y, crs, check_values)
    else:
        if x is not None or y is not None:
            raise InputError(
                "x and y name the coordinate columns of a CSV file, but "
                f"{printable(source.name)} is a {kind} file with its own geometry; omit x and y "
                "(CLI: --x/--y)"
            )
        if suffix == ".shp":
            _check_shapefile_complete(source, check_values)
        gdf = _read_parquet(source) if kind == "GeoParquet" else _read_ogr(source, layer)
        if not isinstance(gdf, gpd.GeoDataFrame):
            raise InputError(
                f"{printable(source.name)} has no geometry column; save the records as points, "
                "or as a CSV file read with x=, y= and crs="
            )
        if gdf.geometry.name != "geometry" and "geometry" in gdf.columns:
            _refuse_geometry_attribute(source, gdf.geometry.name)
        gdf = _assign_crs(gdf, crs, source)
    if not check_values:
        return gdf
    if len(gdf) == 0:
        where = f" (layer {printable(layer)!r})" if layer is not None else ""
        raise InputError(
            f"{printable(source.name)}{where} has no records"
            + (" (only a header line)" if kind == "CSV" else "")
            + "; geosynth needs the confidential points: check that this is the right file"
            + (" and layer (CLI: --layer)" if kind == "GeoPackage" else "")
        )
    _check_point_types(gdf, source, kind)
    _check_area_of_use(gdf, source)
    return gdf


#: Degrees beyond a projected CRS's area of use within which points are still taken as in it
#: (a study region may straddle a UTM zone's edge).
AREA_OF_USE_MARGIN = 5.0


def _check_area_of_use(gdf: gpd.GeoDataFrame, source: Path) -> None:
    """Refuse points far outside the area of use of their projected CRS: another CRS's numbers.

    Longitudes and latitudes read as UTM metres (EPSG:31983 at x = -44, y = -19.9: the South
    Pole) or swapped eastings and northings made a lattice and a release of meaningless
    cells, without a word. Only the corners of the points' extent are projected back; the
    message shows none of them (they are the records' extremes).
    """
    crs = gdf.crs
    area = None if crs is None or not crs.is_projected else crs.area_of_use
    if area is None:
        return
    xy = shapely.get_coordinates(np.asarray(gdf.geometry.array, dtype=object))
    xy = xy[np.isfinite(xy).all(axis=1)]
    if xy.size == 0:
        return
    (x0, y0), (x1, y1) = xy.min(axis=0), xy.max(axis=0)
    to_degrees = pyproj.Transformer.from_crs(crs, 4326, always_xy=True)
    lon, lat = (np.asarray(v) for v in to_degrees.transform([x0, x1, x0, x1], [y0, y0, y1, y1],
                                                            errcheck=False))
    west, south, east, north = area.bounds
    margin = AREA_OF_USE_MARGIN
    outside = ~(np.isfinite(lon) & np.isfinite(lat)) | (lat < south - margin) | (
        lat > north + margin)
    if west <= east:  # an area across the antimeridian is not judged by longitude
        outside |= (lon < west - margin) | (lon > east + margin)
    if outside.any():
        raise CRSError(
            f"{printable(source.name)}: its points lie far outside the area where "
            f"{printable(crs.to_string())} is used ({printable(area.name.rstrip('.'))}), so their "
            "coordinates are not in that CRS: longitudes and latitudes given as metres, x and "
            "y swapped, or another CRS's numbers; give the CRS the coordinates are really in "
            "(CLI: --crs, --x/--y)"
        )


def _read_csv(source: Path, x: str | None, y: str | None, crs: Any,
              check_values: bool = True) -> gpd.GeoDataFrame:
    missing = [name for name, value in (("x", x), ("y", y), ("crs", crs)) if value is None]
    if missing:
        raise InputError(
            f"reading the CSV file {printable(source.name)} needs the names of its coordinate "
            "columns and their CRS: pass x=, y= and crs= (CLI: --x, --y, --crs); missing: "
            f"{', '.join(missing)}"
        )
    if x == y:
        raise InputError(f"x and y must name two different columns (CLI: --x, --y), got {x!r} "
                         "for both")
    crs_obj = _as_crs(crs)
    frame = _load_csv(source)
    coordinates = {name: _csv_coordinates(frame, source, name, column, check_values)
                   for name, column in (("x", x), ("y", y))}
    attributes = frame.drop(columns=[x, y])
    if "geometry" in attributes.columns:
        raise InputError(
            f"{printable(source.name)} has a column named 'geometry' besides x={x!r} and "
            f"y={y!r}; the points built from x and y would replace it: rename the column (or, "
            "if it holds the geometry as text, convert the file to a GeoPackage)"
        )
    return gpd.GeoDataFrame(
        attributes,
        geometry=gpd.points_from_xy(coordinates["x"], coordinates["y"]),
        crs=crs_obj,
    )


def _load_csv(source: Path) -> pd.DataFrame:
    """Read a CSV file whole, after checking its layout (header names, fields per record)."""
    name = printable(source.name)
    try:
        header = pd.read_csv(source, header=None, nrows=1, dtype=str, keep_default_na=False)
        # The whole column's type from all its values: in chunks (low_memory) a column of
        # codes with a letter past the first chunk came back as ints, then strings ('7' and 7).
        frame = pd.read_csv(source, low_memory=False)
    except pd.errors.EmptyDataError:
        raise InputError(f"the CSV file {name} is empty: no header line and no records") from None
    except UnicodeDecodeError:
        # The codec's message quotes a byte of the file (and its offset): say only what is wrong.
        raise InputError(
            f"cannot read the CSV file {name}: it is not UTF-8 text; save it as UTF-8 CSV (or "
            "check that this is the right file)"
        ) from None
    except pd.errors.ParserError as err:
        raise InputError(f"cannot read the CSV file {name}: {printable(str(err))[:200]}") from None
    except MemoryError:
        raise InputError(f"the CSV file {name} is too large to read into memory; convert it to "
                         "a GeoPackage or GeoParquet file of points, or read it on a machine "
                         "with more memory") from None
    except OSError as err:  # permissions, a file removed or unreadable after the checks
        raise InputError(f"cannot read the CSV file {name}: "
                         f"{printable(err.strerror or type(err).__name__)}") from None
    _check_csv_layout(source, header.iloc[0].tolist() if len(header) else [], frame)
    return frame


def _check_csv_layout(source: Path, names: list, frame: pd.DataFrame) -> None:
    """Refuse records with more fields than the header names, and repeated column names."""
    if not frame.index.equals(pd.RangeIndex(len(frame))):
        # A header line with fewer names than the records have fields: pandas silently takes the
        # first column(s), often a record ID, as row labels, which would then name rows in
        # messages. Checked before any value is looked at (it is the file's layout).
        raise InputError(
            f"the CSV file {printable(source.name)} has more fields in its records than names in "
            "its header line (pandas would take the first column, e.g. record IDs, as row "
            "labels); give every column a name in the header line, e.g. write the file with "
            f"DataFrame.to_csv(index=False){_separator_hint(frame.columns)}"
        )
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated and _looks_like_a_record(repeated):
        raise InputError(
            f"the CSV file {printable(source.name)} repeats a number in its first line, where "
            "column names belong (not repeated here: they may be a record's values); if the "
            "file has no header line, add one naming every column"
        )
    if repeated:
        raise InputError(
            f"the CSV file {printable(source.name)} has several columns named "
            f"{', '.join(repr(printable(name)) for name in repeated)} (pandas would silently "
            f"rename the copies, e.g. to {printable(repeated[0]) + '.1'!r}); give every column "
            "its own name in the header line"
        )


def _csv_coordinates(frame: pd.DataFrame, source: Path, name: str, column: str,
                     check_values: bool) -> np.ndarray:
    """Return coordinate column ``column`` as float64 after its checks (``name``: x or y)."""
    if column not in frame.columns:
        raise InputError(
            f"{name}={column!r}: {printable(source.name)} has no column {column!r}; "
            f"{_describe_header(frame.columns)}"
        )
    raw = frame[column]
    values = _numbers(raw)
    where = f"{name}={column!r}: column {column!r} of {printable(source.name)} has"
    not_numeric = (values.isna() & raw.notna()).to_numpy()
    if not_numeric.any() and check_values:
        raise InputError(f"{where} {int(not_numeric.sum())} non-numeric values "
                         f"({_csv_rows(frame.index, not_numeric)}); coordinates must be numbers")
    absent = values.isna().to_numpy()
    if absent.any() and check_values:
        raise InputError(f"{where} {int(absent.sum())} missing values "
                         f"({_csv_rows(frame.index, absent)}); drop those records or fill in "
                         "their coordinates")
    coordinates = values.to_numpy(dtype=np.float64)
    infinite = np.isinf(coordinates)
    if infinite.any() and check_values:  # "inf", or a number beyond ±1.8e308 ("1e400")
        raise InputError(f"{where} {int(infinite.sum())} infinite or overflowing values "
                         f"({_csv_rows(frame.index, infinite)}); coordinates must be finite "
                         "numbers: drop those records or fix their coordinates")
    return coordinates


def _numbers(raw: pd.Series) -> pd.Series:
    """Return the numbers of a coordinate column, NaN where a value is none (True/False too)."""
    if pd.api.types.is_bool_dtype(raw.dtype):  # pandas reads "True"/"False" as bool, not 1/0
        return pd.Series(np.nan, index=raw.index)
    return pd.to_numeric(raw, errors="coerce")


def _describe_header(columns: pd.Index) -> str:
    """Describe the CSV header's column names for a message, unless it looks like a record.

    A file without a header line has its first record read as column names: listing them
    would print that record's coordinates (and ID) in the message.
    """
    names = [str(name) for name in columns]
    if _looks_like_a_record(names):
        count = int(pd.to_numeric(pd.Series(names, dtype=object), errors="coerce").notna().sum())
        return (f"its first line holds {count} number(s) where column names belong (not "
                "repeated here: they may be a record's values); if the file has no header "
                "line, add one naming every column")
    return f"its columns are {[printable(name) for name in names]}{_separator_hint(columns)}"


def _looks_like_a_record(names: list) -> bool:
    """Whether header names hold a number, as a first record read as the header does."""
    return bool(pd.to_numeric(pd.Series(names, dtype=object), errors="coerce").notna().any())


def _separator_hint(columns: pd.Index) -> str:
    """Return a hint for a file whose fields are separated by ';' or tabs (one column)."""
    if any(separator in str(name) for name in columns for separator in (";", "\t")):
        return ("; the header line holds ';' or tabs: geosynth reads comma-separated files "
                "(with '.' as the decimal point), so save the file as such")
    return ""


def _check_shapefile_complete(source: Path, check_values: bool = True) -> None:
    """Refuse a .shp shorter than its .shx index says (a copy or download cut short).

    GDAL reads such a file without error, the records past the cut without geometry: they
    were then refused as records to drop, or (under ``--epsilon``) dropped, with no word that
    the file itself was incomplete. A shapefile without its ``.dbf`` is refused too: GDAL
    reads the geometries alone, and the missing attributes would surface only as columns that
    are not in the file. With ``check_values`` False (a differentially private release) the
    messages give no number of records or bytes: both tell how many records the file holds,
    which the release's noisy size protects.
    """
    if not any(source.with_suffix(s).is_file() for s in (".dbf", ".DBF")):
        raise InputError(f"{printable(source.name)} has no {printable(source.stem)}.dbf beside "
                         "it, which holds the records' attributes; copy the shapefile again "
                         "(all of its files: .shp, .shx, .dbf and .prj)")
    index = source.with_suffix(".shx")
    if not index.is_file():
        index = source.with_suffix(".SHX")
    if not index.is_file():
        return  # GDAL rebuilds a missing index (SHAPE_RESTORE_SHX) or says so itself
    with open(index, "rb") as handle:  # the header and the last entry, not the whole index
        header = handle.read(100)
        if len(header) < 100:
            return
        n_words = struct.unpack(">i", header[24:28])[0]
        n_records = max(0, (2 * n_words - 100) // 8)
        if n_records == 0:
            return
        handle.seek(100 + 8 * (n_records - 1))
        last = handle.read(8)
    if len(last) < 8:
        indexes = f"it indexes {n_records} records" if check_values else "it lists records"
        raise InputError(f"{printable(index.name)} is truncated: {indexes} but ends early; copy "
                         "the shapefile again (all of its files)")
    offset, length = struct.unpack(">ii", last)
    needed = 2 * (offset + length) + 8  # the last record's header (8 bytes) and content
    if source.stat().st_size < needed:
        sizes = (f"its index lists {n_records} records, which need {needed:,} bytes, but the "
                 f"file has {source.stat().st_size:,}" if check_values else
                 "it is shorter than its index (.shx) says (sizes not shown when values are "
                 "not checked, e.g. under --epsilon: they tell the number of records)")
        raise InputError(f"{printable(source.name)} is truncated: {sizes}; copy the shapefile "
                         "again (all of its files)")


def _read_parquet(source: Path) -> gpd.GeoDataFrame:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        if "Parquet" in pyogrio.list_drivers(read=True):
            return _read_ogr(source, None)
        raise ImportError(
            f"reading the GeoParquet file {printable(source.name)} needs the optional package "
            "pyarrow (pip install pyarrow); or convert the file to a GeoPackage, e.g. "
            f"ogr2ogr {shlex.quote(printable(source.stem) + '.gpkg')} "
            f"{shlex.quote(printable(source.name))}"
        ) from None
    try:
        gdf = gpd.read_parquet(source)
    except pyproj.exceptions.CRSError as err:
        raise CRSError(f"the GeoParquet file {printable(source.name)} records a CRS that pyproj "
                       f"cannot read ({printable(str(err))[:200]}); repair it, e.g. with "
                       "gdf.set_crs(..., allow_override=True) and to_parquet") from None
    except (ValueError, OSError, shapely.errors.ShapelyError) as err:
        raise InputError(f"cannot read the GeoParquet file {printable(source.name)}: "
                         f"{printable(str(err))[:200]}") from None
    # geopandas stores a frame's own index (e.g. patient ids) in the file and restores it; rows
    # are counted from 0 as in every other format, and no id reaches a message.
    return gdf.reset_index(drop=True)


def _read_ogr(source: Path, layer: str | None) -> gpd.GeoDataFrame | pd.DataFrame:
    geopackage = source.suffix.lower() == ".gpkg"
    if geopackage:
        problem = geopackage_problem(source)
        if problem is not None:
            raise not_a_geopackage(source, problem)
    try:
        layers = pyogrio.list_layers(source)
        if geopackage:
            layer = _choose_layer(source, layers, layer)
        info = pyogrio.read_info(source, layer=layer)
        _check_field_names(source, [str(name) for name in info["fields"]],
                           info["geometry_name"] if info["geometry_type"] is not None else None)
        return pyogrio.read_dataframe(source, layer=layer)
    except UnicodeDecodeError as err:
        raise _not_text(source, err.encoding) from None
    except (pyogrio.errors.DataSourceError, pyogrio.errors.DataLayerError) as err:
        if geopackage:
            raise not_a_geopackage(source, err) from None
        raise InputError(
            f"cannot read {printable(source.name)}: {printable(str(err).split(';')[0])[:200]}"
        ) from None


def _not_text(source: Path, encoding: str) -> InputError:
    """Return the error for a file whose field names or values are not ``encoding`` text.

    The codec's own message quotes a byte of the file and its offset: not repeated.
    """
    fix = ("if its .cpg file names the wrong encoding, write the right one into it (e.g. "
           "CP1252), or save the layer again as a GeoPackage"
           if source.suffix.lower() == ".shp" else "save the layer again from data read with "
           "the right encoding (GeoPackage text is UTF-8)")
    return InputError(
        f"cannot read {printable(source.name)}: some of its field names or text values are not "
        f"{printable(encoding)} text, the encoding it declares; {fix}"
    )


def _check_field_names(source: Path, fields: list[str], geometry: str | None) -> None:
    """Refuse attribute fields that the reader would drop or overwrite, before reading them.

    GDAL looks a field up by its name, so of two fields named alike (possible in a
    shapefile's .dbf) both columns came back with the values of the last one; and an attribute
    field named ``geometry`` next to the geometry column (whose GeoPackage default name is
    ``geom``) was replaced by the geometry without a word. ``geometry`` is the name of the
    layer's geometry column (``""`` in a shapefile), None if it has none.
    """
    repeated = sorted({name for name in fields if fields.count(name) > 1})
    if repeated:
        raise InputError(
            f"{printable(source.name)} has several attribute fields named "
            f"{', '.join(repr(printable(name)) for name in repeated)}; the reader would give "
            "every copy the values of one of them: give each field its own name (e.g. in "
            "QGIS, Layer Properties > Fields) and save the file again"
        )
    if geometry is not None and "geometry" in fields:
        _refuse_geometry_attribute(source, geometry)


def _refuse_geometry_attribute(source: Path, geometry: str) -> None:
    """Refuse an attribute column named ``geometry`` beside a geometry column of another name."""
    shown = f" {printable(geometry)!r}" if geometry else ""
    raise InputError(
        f"{printable(source.name)} has an attribute column named 'geometry' besides its "
        f"geometry column{shown}; "
        "the points are returned in a column named 'geometry', which would replace it (or "
        "stand beside it): rename that attribute column and save the file again"
    )


def _choose_layer(source: Path, layers: np.ndarray, layer: str | None) -> str:
    names = [str(name) for name in layers[:, 0]]
    if layer is not None:
        if layer not in names:
            raise InputError(
                f"layer={printable(layer)!r} (CLI: --layer): {printable(source.name)} has no such "
                f"layer; its layers are {[printable(name) for name in names]}"
            )
        return layer
    points = [str(n) for n, kind in layers if kind is not None and "point" in str(kind).lower()]
    if len(names) == 1:
        return names[0]
    if len(points) == 1:
        return points[0]
    raise InputError(
        f"{printable(source.name)} has {len(names)} layers "
        f"({[printable(name) for name in names]}) and {len(points)} of them hold points; pass "
        "layer= (CLI: --layer) to choose one"
    )


def _assign_crs(gdf: gpd.GeoDataFrame, crs: Any, source: Path) -> gpd.GeoDataFrame:
    if crs is None:
        return gdf
    crs_obj = _as_crs(crs)
    if gdf.crs is None:
        return gdf.set_crs(crs_obj)
    if not gdf.crs.equals(crs_obj, ignore_axis_order=True):
        raise CRSError(
            f"crs={crs!r} contradicts the CRS of {printable(source.name)} "
            f"({gdf.crs.to_string()}); omit crs to use the file's CRS, or reproject the file first"
        )
    return gdf


def _as_crs(crs: Any) -> pyproj.CRS:
    """Parse ``crs`` by :func:`geosynth.lattice.parse_crs`, the fix naming the CLI option.

    An array or Series given for ``crs`` raised NumPy's "truth value of an array is ambiguous"
    ValueError inside pyproj; ``parse_crs`` refuses it (an InputTypeError) by its type.
    """
    try:
        return parse_crs(crs)
    except CRSError as err:
        reason = err.__cause__ if err.__cause__ is not None else err
        raise CRSError(
            f"crs={crs!r} is not a valid CRS ({printable(str(reason))[:200]}); pass e.g. "
            "'EPSG:31983' (CLI: --crs)"
        ) from None


def _csv_rows(index: pd.Index, bad: np.ndarray) -> str:
    """``describe_rows`` for a CSV file, saying how rows map to lines of the file."""
    return f"{describe_rows(index, bad)}; {_ROW_MEANING['CSV']}"


def _check_point_types(gdf: gpd.GeoDataFrame, source: Path, kind: str) -> None:
    geoms = np.asarray(gdf.geometry.array, dtype=object)
    type_id = shapely.get_type_id(geoms)
    wrong = (type_id != POINT_TYPE) & (type_id != -1)
    if wrong.any():
        kinds = sorted({shapely.geometry.base.GEOMETRY_TYPES[k] for k in type_id[wrong].tolist()})
        raise InputError(
            f"{printable(source.name)} has {int(wrong.sum())} non-point geometries ({kinds}; "
            f"{describe_rows(gdf.index, wrong)}; {_ROW_MEANING[kind]}); geosynth needs one "
            "Point per record: split MultiPoints with gdf.explode() or replace polygons by "
            "gdf.representative_point(), and save the file again"
        )


