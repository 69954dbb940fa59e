"""Reading confidential point records: GeoPackage, GeoParquet, shapefile, GeoJSON, ... files.

GeoPackage, GeoParquet, shapefile, GeoJSON, FlatGeobuf, zip and CSV files are read: vector
files through pyogrio (GDAL), the one dataset (or one folder of shapefiles) of a ``.zip``
archive through GDAL's ``/vsizip/`` without unpacking it (:mod:`geosynth.io._vector`, shared
with :func:`geosynth.io.read_polygons`), CSV files through pandas with their separator, decimal
mark, encoding and missing-value words as options.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import shlex
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pyproj
import shapely

from geosynth._messages import describe_rows
from geosynth._validation import check_bool, check_optional_str, describe_value
from geosynth.errors import CRSError, DataWarning, InputError, InputTypeError
from geosynth.io._files import (
    POINT_TYPE,
    existing_file,
    geopackage_problem,
    not_a_geopackage,
    printable,
)
from geosynth.io._vector import (
    LayerOption,
    VectorSource,
    check_shapefile_complete,
    choose_layer,
    vector_source,
)
from geosynth.lattice import parse_crs

__all__ = ["read_points"]

# What the row numbers of messages mean, per format (read_points returns a RangeIndex).
_ROW_MEANING = {
    "CSV": "counted from 0: row i is line i + 2 of the file",
    "GeoPackage": "counted from 0 in file order; they are not GeoPackage fids",
    "shapefile": "counted from 0 in file order",
    "GeoParquet": "counted from 0 in file order",
    "GeoJSON": "counted from 0 in the order of the file's features; they are not feature ids",
    "FlatGeobuf": "counted from 0 in file order, which for a FlatGeobuf with a spatial index "
                  "is along a Hilbert curve, not the order the features were written in",
}
_FORMATS = {
    ".gpkg": "GeoPackage",
    ".parquet": "GeoParquet",
    ".geoparquet": "GeoParquet",
    ".shp": "shapefile",
    ".geojson": "GeoJSON",
    ".json": "GeoJSON",
    ".fgb": "FlatGeobuf",
    ".zip": "zip",
    ".csv": "CSV",
}
#: How messages name the layer option of read_points.
_LAYER = LayerOption("--layer", "layer")
#: The CSV options and their defaults (given for another format they are refused).
_CSV_DEFAULTS = {"sep": ",", "decimal": ".", "encoding": "utf-8", "na_values": None}
#: How many of the missing-value words read in a text column a warning names.
_WORDS_SHOWN = 3
#: A number written with a leading zero ("01", "-007", "0450"): a code, kept as text. The
#: spaces are those pandas skips before a number, spelt out: with ``\s`` pandas matched in
#: Python, value by value (7 s for 10⁶ rows of 4 numeric columns), not in pyarrow.
_LEADING_ZERO = r"^[ \t\n\v\f\r]*[+-]?0[0-9]"


def read_points(
    path: str | os.PathLike,
    *,
    x: str | None = None,
    y: str | None = None,
    crs: Any = None,
    layer: str | None = None,
    sep: str = ",",
    decimal: str = ".",
    encoding: str = "utf-8",
    na_values: Sequence[str] | None = None,
    check_values: bool = True,
) -> gpd.GeoDataFrame:
    r"""Read confidential point records from a point file (GeoPackage, CSV, GeoJSON, ...).

    GeoPackage, GeoParquet, shapefile, GeoJSON, FlatGeobuf, zip or CSV files are read.

    Parameters
    ----------
    path : str or os.PathLike
        ``.gpkg``, ``.parquet`` (or ``.geoparquet``), ``.shp``, ``.geojson`` (or ``.json``),
        ``.fgb``, ``.zip`` or ``.csv`` file (the format is chosen by the extension). A ``.zip``
        archive must hold exactly one ``.gpkg``, ``.geojson``, ``.json`` or ``.fgb`` dataset,
        or shapefiles (each ``.shp`` with its ``.shx``, ``.dbf``, ``.prj``) all in one folder,
        which is read as if unpacked: several shapefiles are its layers (``__MACOSX`` and
        hidden files are ignored). GeoJSON
        coordinates are longitudes and latitudes in WGS 84 (RFC 7946): such points come back
        in EPSG:4326, as GDAL reads them (unless the file names another CRS in a legacy
        ``crs`` member); like any geographic CRS, they are refused by :class:`geosynth.Grid`
        and :func:`geosynth.prepare`, which need a projected CRS in metres: reproject them,
        e.g. ``points.to_crs(points.estimate_utm_crs())``.
    x, y : str, optional
        CSV only: names of the columns holding the coordinates. They become the point geometry
        and are not kept as attribute columns.
    crs : pyproj.CRS or str or int, optional
        CSV: the CRS of the coordinates (required). Other formats: the CRS of a file that has
        none; it must agree with the file's own CRS if the file has one.
    layer : str, optional
        The layer to read of a file of layers: a GeoPackage, or a ``.zip`` of a GeoPackage or
        of shapefiles in one folder (each shapefile a layer, named as the file without
        ``.shp``); other formats hold one layer. May be omitted when the file has one layer,
        or one layer of points and none of unknown geometry type: that layer is read, with a
        :class:`~geosynth.errors.DataWarning` saying so.
    sep : str, default ","
        CSV only: the one character separating the fields of a record, e.g. ``";"`` for the
        CSV files of European spreadsheets or ``"\t"`` (a tab) for tab-separated files.
    decimal : str, default "."
        CSV only: the one character marking decimals in numbers, e.g. ``","`` (with
        ``sep=";"``); it applies to the coordinates and to numeric attribute columns.
    encoding : str, default "utf-8"
        CSV only: the text encoding of the file, any codec Python knows (``"cp1252"``,
        ``"latin-1"``, ``"utf-16"``...). With UTF-8 a byte-order mark at the start of the file
        is skipped.
    na_values : list or tuple of str, optional
        CSV only: the words that mean a missing value, besides empty fields, which always do;
        each matches a whole field as written (``"n/a"`` is not ``"N/A"``), in every column.
        None (the default): pandas' default words (listed under Returns). ``[]``: only empty
        fields, so that ``NA`` (Namibia's country code), ``None`` or ``null`` stay text;
        ``["-99"]`` or ``["."]`` for files that write a missing value so (a word that is a
        number also matches that number written otherwise, ``-99.0``, as pandas matches; a
        number column holding a word not listed is read as text). A bare str is refused: pass
        a list, e.g. ``["NA"]``.
    check_values : bool, default True
        False for a differentially private release (CLI ``--epsilon``): refuse nothing that
        depends on the records' values, since that refusal would itself disclose them. A file
        with no records is then read as an empty frame, non-Point geometries are passed
        through and missing, non-numeric or infinite CSV coordinates become points without
        finite coordinates; ``geosynth.prepare(..., levels=...)`` drops such records. A CSV
        or GeoJSON file's attribute columns are then all read as text, whatever they hold (the
        types pandas or GDAL infer follow the records' values), and ``prepare`` matches the
        declared numbers and booleans to the text values that read as them. Formats with a
        schema (GeoPackage, shapefile, FlatGeobuf, GeoParquet) keep their declared types.

    Returns
    -------
    geopandas.GeoDataFrame
        One row per record, attribute columns as in the file, point geometry, and a
        ``RangeIndex``: row ``i`` is the ``i``-th record of the file counted from 0 (for a CSV
        file, line ``i + 2``; for a GeoPackage, in file order, which is not its ``fid``). Missing
        or empty geometries are passed through (:func:`geosynth.prepare` reports them with their
        rows).

        CSV attribute columns: a column whose values are all numbers (or missing) is read as
        numbers, ``True``/``False`` as booleans, any other as text. A column holding a number
        written with a leading zero (``"01"``, ``"007"``, ``"-01"``, ``"0450"``: postal,
        district or ICD codes) is kept as text, every value as written, so that ``"01"`` and
        ``"1"`` stay two levels and no zero is lost (``"0"``, ``"0.5"``, or ``"0,5"`` with
        ``decimal=","``, are numbers). Missing values are the empty fields and, with
        ``na_values=None``, pandas' default missing-value words, in every column: ``NA``,
        ``N/A``, ``n/a``, ``NaN``, ``nan``, ``-NaN``, ``-nan``, ``NULL``, ``null``, ``None``,
        ``<NA>``, ``#N/A``, ``#N/A N/A``, ``#NA``, ``1.#IND``, ``-1.#IND``, ``1.#QNAN``,
        ``-1.#QNAN`` (so a country code ``NA``, Namibia, is read as missing, with a warning);
        with ``na_values`` given, only the empty fields and its words.

    Warns
    -----
    geosynth.errors.DataWarning
        A file of several layers was read at its only point layer, no ``layer`` given; or GDAL
        warned while reading the file (e.g. a malformed coordinate): its warnings, which may
        quote a record's values, are replaced by one that quotes none (and, with
        ``check_values=False``, does not count them); or, with ``na_values=None``, some
        values of a CSV text column (or of a column left with no value) were pandas' default
        missing-value words, read as missing: one warning per column names it, the words and
        their number, and the fix ``na_values=[]`` (with ``check_values=False`` only the
        column and the fix: the words and their number depend on the records).

    Raises
    ------
    geosynth.errors.InputError
        The file does not exist or cannot be read, a ``.gpkg`` file is not a GeoPackage or is
        damaged, a shapefile is truncated or lacks its ``.dbf``, a ``.zip`` file is not a zip
        archive or holds no dataset or several (other than shapefiles of one folder), a CSV file is
        not text in ``encoding`` or a GeoPackage or shapefile holds text that is not in the encoding
        it declares (e.g. a ``.cpg`` saying UTF-8 over a CP1252 ``.dbf``), the extension is not one
        of the above, the file has no records (e.g. a CSV file with only its header), a CSV file has
        two columns of the same name or records with more fields than its header line names, a CSV
        is read without ``x``, ``y`` and ``crs``, an ``x``/``y`` column is missing or holds
        non-numeric, missing or infinite values,
        ``x``/``y``/``sep``/``decimal``/``encoding``/``na_values`` are given for a format they do
        not apply to, ``layer`` for a format of one layer, ``sep`` or ``decimal`` is not one
        character (or is a digit, a quote or a line break) or both are the same, ``encoding`` is not
        a text encoding Python knows, the layer is missing or ambiguous (the message names every
        layer with its geometry type), or a geometry is not a Point. No message quotes a record's
        values: an ``x``/``y`` column is named, its bad rows counted, and a CSV header line that
        looks like a record (a file without header) is not repeated. A file whose attribute column
        is named ``geometry`` besides its geometry column, or (a shapefile) that names two fields
        alike, is refused: the reader would drop or overwrite that column's values.
    geosynth.errors.CRSError
        ``crs`` is not a valid CRS or contradicts the file's CRS; the points lie far outside
        the area of use of their projected CRS, or beyond the range of degrees of their
        geographic CRS: their numbers are another CRS's.
    ImportError
        A GeoParquet file is read without the optional package ``pyarrow``.
    TypeError
        ``x``, ``y`` or ``layer`` is not a str (or None), ``sep``, ``decimal`` or ``encoding``
        is not a str, ``na_values`` is not None or a list or tuple of str (a bare str is
        refused too: is ``"NA,n/a"`` one word or two?), or ``check_values`` is not a bool (a
        :class:`geosynth.errors.InputTypeError`).

    Examples
    --------
    >>> points = read_points("listings.csv", x="lon", y="lat", crs="EPSG:4326")  # doctest: +SKIP
    >>> points = read_points("casos.csv", x="x", y="y", crs="EPSG:31983", sep=";",
    ...                      decimal=",", encoding="cp1252")  # doctest: +SKIP
    >>> countries = read_points("visits.csv", x="x", y="y", crs="EPSG:3857",
    ...                         na_values=[])  # doctest: +SKIP
    """
    for name, value in (("x", x), ("y", y), ("layer", layer)):
        check_optional_str(value, name)
    check_values = check_bool(check_values, "check_values")
    options = _csv_options(sep, decimal, encoding, na_values)
    source = existing_file(path)
    dataset = _dataset(source)
    kind = _FORMATS[dataset.suffix]
    what = f"{printable(source.name)} {'holds' if dataset.zipped else 'is'} a {kind} file"
    _refuse_options_of_other_formats(what, dataset.layered, kind, layer, options)
    if kind == "CSV":
        gdf = _read_csv(source, x, y, crs, options, check_values)
    else:
        if x is not None or y is not None:
            raise InputError(
                f"x and y name the coordinate columns of a CSV file, but {what} with its own "
                "geometry; omit x and y "
                "(CLI: --x/--y)"
            )
        gdf = _read_parquet(source) if kind == "GeoParquet" else _read_ogr(
            source, dataset, layer, check_values)
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
            + (" and layer (CLI: --layer)" if dataset.layered else "")
        )
    _check_point_types(gdf, source, kind)
    _check_area_of_use(gdf, source)
    _check_degrees(gdf, source, kind)
    return gdf


class _CsvOptions(NamedTuple):
    sep: str
    decimal: str
    encoding: str
    #: The words read as missing besides empty fields; None: pandas' default words.
    na_values: tuple[str, ...] | None = None


def _csv_options(sep: Any, decimal: Any, encoding: Any, na_values: Any = None) -> _CsvOptions:
    """Check ``sep``, ``decimal``, ``encoding`` and ``na_values`` (types, then values)."""
    for name, value in (("sep", sep), ("decimal", decimal), ("encoding", encoding)):
        if not isinstance(value, str):
            raise InputTypeError(f"{name} must be a str, got {describe_value(value)}")
    words = _na_words(na_values)
    for name, value in (("sep", sep), ("decimal", decimal)):
        _check_csv_character(name, value)
    if sep == decimal:
        raise InputError(f"sep and decimal must differ, got {sep!r} for both; for a file such "
                         "as '1,5;2,5' pass sep=';' and decimal=',' (CLI: --sep ';' "
                         "--decimal ',')")
    try:
        codecs.lookup(encoding)
        "a".encode(encoding)  # refuses codecs that are not text encodings ('hex', 'zlib')
    except UnicodeError:  # a text encoding without "a"
        pass
    except LookupError:
        raise InputError(f"encoding={printable(encoding)!r} is not a text encoding Python "
                         "knows; pass the file's encoding, e.g. 'utf-8', 'cp1252' or "
                         "'latin-1' (CLI: --encoding)") from None
    return _CsvOptions(sep, decimal, encoding, words)


def _na_words(na_values: Any) -> tuple[str, ...] | None:
    """Check ``na_values``: None, or a list or tuple of str (returned as a tuple, no repeats).

    A bare str is refused: pandas takes ``"NA"`` as one word, but ``"NA,n/a"`` (the command
    line's spelling) would then be one word too, matching nothing.
    """
    if na_values is None:
        return None
    if isinstance(na_values, str):
        example = [word.strip() for word in na_values.split(",") if word.strip()]
        fix = (f"pass a list, e.g. na_values={repr([printable(w) for w in example])[:80]} "
               "(na_values=[]: only empty fields)" if example else
               "pass a list: na_values=[] for only empty fields")
        raise InputTypeError(
            f"na_values must be a list or tuple of str, got {describe_value(na_values)}: a "
            f"bare str is ambiguous (one word, or several?); {fix}"
        )
    if not isinstance(na_values, (list, tuple)):
        raise InputTypeError(
            f"na_values must be a list or tuple of str (or None), got "
            f"{describe_value(na_values)}; pass e.g. na_values=['NA', '-99'], or na_values=[] "
            "to read only empty fields as missing"
        )
    for index, word in enumerate(na_values):
        if not isinstance(word, str):
            written = (str(word) if isinstance(word, (int, float)) and not isinstance(
                word, bool) else "NA")
            raise InputTypeError(
                f"na_values[{index}] must be a str, the word as written in the file, got "
                f"{describe_value(word)}; pass e.g. na_values=[{printable(written)[:40]!r}]"
            )
    return tuple(dict.fromkeys(na_values))


def _check_csv_character(name: str, value: str) -> None:
    """Refuse a ``sep`` or ``decimal`` that is not one character a CSV number can sit beside."""
    if len(value) != 1:
        tab = " (a tab is the one character '\\t')" if value in ("\\t", "tab", "TAB") else ""
        raise InputError(f"{name}={printable(value)!r} must be one character "
                         f"({len(value)} characters){tab}; e.g. {name}="
                         f"{_CSV_EXAMPLES[name]} (CLI: --{name})")
    number_mark = name == "decimal" and (value.isspace() or value in "+-eE")
    if value.isdigit() or value in "\"\r\n" or number_mark:
        # a sign or an exponent's e as the decimal mark made "-46.5" or "1e3" other numbers
        what = ("a digit, a sign, the exponent's e, the quote '\"', a line break or a space"
                if name == "decimal" else "a digit, the quote '\"' or a line break")
        raise InputError(f"{name}={value!r} cannot be {what}; e.g. "
                         f"{name}={_CSV_EXAMPLES[name]} (CLI: --{name})")


_CSV_EXAMPLES = {"sep": "',' or ';' or '\\t'", "decimal": "'.' or ','"}


def _refuse_options_of_other_formats(what: str, layered: bool, kind: str, layer: str | None,
                                     options: _CsvOptions) -> None:
    """Refuse ``layer`` for a file of one layer, CSV options for a non-CSV file.

    ``what`` says what the file is (``"points.zip holds a shapefile file"``); ``layered``
    whether its format holds layers (:attr:`VectorSource.layered`).
    """
    if layer is not None and not layered:
        raise InputError(
            f"layer={printable(layer)!r} applies to files of several layers only (a GeoPackage, "
            f"or a zip of shapefiles in one folder), but {what}, which holds one; omit layer"
        )
    given = [name for name, default in _CSV_DEFAULTS.items()
             if _normal(name, getattr(options, name)) != _normal(name, default)]
    if given and kind != "CSV":
        shown = ", ".join(f"{name}={_shown_option(name, getattr(options, name))}"
                          for name in given)
        raise InputError(
            f"{shown} appl{'ies' if len(given) == 1 else 'y'} to CSV files only, but {what}; "
            f"omit {', '.join(given)} (CLI: "
            f"{', '.join('--' + name.replace('_', '-') for name in given)})"
        )


def _normal(name: str, value: Any) -> Any:
    """Return an encoding by its codec's name ('UTF8' is 'utf-8'), other options as given."""
    return codecs.lookup(value).name if name == "encoding" else value


def _shown_option(name: str, value: Any) -> str:
    """Show a CSV option's value for a message: ``';'``, or ``['NA', '-99']`` for na_values."""
    if name == "na_values":
        return repr([printable(word) for word in value])
    return repr(printable(value))


def _dataset(source: Path) -> VectorSource:
    """Return what to read of ``source`` by its extension: the file, or the dataset in a zip."""
    suffix = source.suffix.lower()
    if suffix not in _FORMATS:
        raise InputError(
            f"cannot read {printable(source.name)}: unknown extension "
            f"{printable(source.suffix)!r}; geosynth reads points from "
            f"{', '.join(sorted(set(_FORMATS)))} files (the format is chosen by the extension)"
        )
    return vector_source(source, printable(source.name))


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
    xy = _finite_coordinates(gdf)
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


def _finite_coordinates(gdf: gpd.GeoDataFrame) -> np.ndarray:
    """Return the points' (x, y) of finite coordinates, (n, 2): what the CRS checks judge."""
    xy = shapely.get_coordinates(np.asarray(gdf.geometry.array, dtype=object))
    return xy[np.isfinite(xy).all(axis=1)]


def _check_degrees(gdf: gpd.GeoDataFrame, source: Path, kind: str) -> None:
    """Refuse points beyond the range of degrees of their geographic CRS: another CRS's numbers.

    GDAL reads a GeoJSON file without a ``crs`` member in EPSG:4326 (RFC 7946), whatever its
    numbers: the UTM metres of ``GeoDataFrame.to_json()`` came back as degrees, and ``crs=``
    could not correct them (it contradicted the file's EPSG:4326). A CSV read with
    ``crs="EPSG:4326"``, or a GeoPackage or shapefile declaring it, over metres was refused
    only by the lattice, as a geographic CRS to project: projecting the "degrees" gave
    meaningless places or infinities. A CRS whose axes are not in degrees (grads, radians)
    is not judged. No coordinate is shown.
    """
    crs = gdf.crs
    if crs is None or not crs.is_geographic:
        return
    if any(axis.unit_name != "degree" for axis in crs.axis_info[:2]):
        return
    xy = _finite_coordinates(gdf)
    if not ((np.abs(xy[:, 0]) > 180) | (np.abs(xy[:, 1]) > 90)).any():
        return
    name = printable(source.name)
    declared = printable(crs.to_string())
    if kind == "CSV":
        declared += ", the crs given"
        fix = ("give crs= the CRS the x and y columns are in (CLI: --crs), e.g. the projected "
               "CRS of metres they were written in")
    else:
        declared += (", the CRS of a GeoJSON file that names none (RFC 7946)"
                     if kind == "GeoJSON" else ", the CRS the file declares")
        saved = printable(source.stem) + (
            "_fixed.gpkg" if source.suffix.lower() == ".gpkg" else ".gpkg")
        fix = (f"save the file with the CRS its coordinates are in, e.g. ogr2ogr -a_srs "
               f"EPSG:<code> {shlex.quote(saved)} {shlex.quote(name)}, and read that GeoPackage")
    raise CRSError(
        f"{name}: its points lie outside the range of degrees (|longitude| <= 180, "
        f"|latitude| <= 90) of {declared}: their numbers are another CRS's (e.g. metres); "
        f"{fix}"
    )


def _read_csv(source: Path, x: str | None, y: str | None, crs: Any, options: _CsvOptions,
              check_values: bool = True) -> gpd.GeoDataFrame:
    missing = [name for name, value in (("x", x), ("y", y), ("crs", crs)) if value is None]
    if missing:
        raise InputError(
            f"reading the CSV file {printable(source.name)} needs the names of its coordinate "
            "columns and their CRS: pass x=, y= and crs= (CLI: --x, --y, --crs); missing: "
            f"{', '.join(f'{name}=' for name in missing)}"
        )
    if x == y:
        raise InputError(f"x and y must name two different columns (CLI: --x, --y), got {x!r} "
                         "for both")
    crs_obj = _as_crs(crs)
    frame = _load_csv(source, options, check_values)
    coordinates = {name: _csv_coordinates(frame, source, name, column, options, check_values)
                   for name, column in (("x", x), ("y", y))}
    attributes = frame.drop(columns=[x, y])
    if "geometry" in attributes.columns:
        raise InputError(
            f"{printable(source.name)} has a column named 'geometry' besides x={x!r} and "
            f"y={y!r}; the points built from x and y would replace it: rename the column (or, "
            "if it holds the geometry as text, convert the file to a GeoPackage)"
        )
    if check_values:  # under DP every attribute is text already
        attributes = _keep_codes_as_text(source, attributes, options)
    if options.na_values is None:
        _warn_missing_words(source, frame, attributes, options, check_values)
    return gpd.GeoDataFrame(
        attributes,
        geometry=gpd.points_from_xy(coordinates["x"], coordinates["y"]),
        crs=crs_obj,
    )


def _load_csv(source: Path, options: _CsvOptions, check_values: bool = True) -> pd.DataFrame:
    """Read a CSV file whole, after checking its layout (header names, fields per record)."""
    header = _read_csv_text(source, options, header=None, nrows=1, dtype=str,
                            keep_default_na=False)
    # The whole column's type from all its values: in chunks (low_memory) a column of
    # codes with a letter past the first chunk came back as ints, then strings ('7' and 7).
    # Under DP every column is text: a type from the values would tell them (one record
    # "unknown" made a column of codes text), and geosynth.prepare reads the declared levels'
    # numbers and booleans from the text.
    typed = {} if check_values else {"dtype": str}
    # index_col=False: records with more fields than names made pandas build a row index of
    # the extra fields first (a 4 MB line of 2 million fields took 7 minutes to be refused);
    # it now drops them with a ParserWarning, which is the refusal.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pd.errors.ParserWarning)
        frame = _read_csv_text(source, options, check_values=check_values,
                               decimal=options.decimal, low_memory=False, index_col=False,
                               **typed, **_na_arguments(options))
    for caught_warning in caught:
        if "Length of header" in str(caught_warning.message):
            raise _more_fields_than_names(source, frame, options)
        warnings.warn(caught_warning.message, caught_warning.category, stacklevel=2)
    _check_csv_layout(source, header.iloc[0].tolist() if len(header) else [])
    return frame


def _read_csv_text(source: Path, options: _CsvOptions, check_values: bool = True,
                   **kwargs: Any) -> pd.DataFrame:
    """``pd.read_csv`` of ``source`` with ``options``, its failures as InputErrors.

    pandas' parser errors name the line of the bad record ("Expected 2 fields in line 4"): for
    a last line, the number of records. Without ``check_values`` (a DP release) no number of
    them is shown.
    """
    name = printable(source.name)
    try:
        return pd.read_csv(source, sep=options.sep, encoding=options.encoding, **kwargs)
    except pd.errors.EmptyDataError:
        raise InputError(f"the CSV file {name} is empty: no header line and no records") from None
    except UnicodeError:
        # The codec's message quotes a byte of the file (and its offset): say only what is wrong.
        raise InputError(_not_in_encoding(name, options.encoding)) from None
    except pd.errors.ParserError as err:
        reason = printable(str(err).strip())[:200]
        if not check_values:
            reason = (re.sub(r"\d+", "N", reason) + " (numbers not shown when values are not "
                      "checked, e.g. under --epsilon: a line number tells how many records "
                      "precede it)")
        raise InputError(f"cannot read the CSV file {name}: {reason}") from None
    except MemoryError:
        raise InputError(f"the CSV file {name} is too large to read into memory; convert it to "
                         "a GeoPackage or GeoParquet file of points, or read it on a machine "
                         "with more memory") from None
    except OSError as err:  # permissions, a file removed or unreadable after the checks
        raise InputError(f"cannot read the CSV file {name}: "
                         f"{printable(err.strerror or type(err).__name__)}") from None


def _not_in_encoding(name: str, encoding: str) -> str:
    """Return the message for a CSV file that is not text in ``encoding`` (no byte of it quoted)."""
    codec = codecs.lookup(encoding).name
    if codec in ("utf-16", "utf-32"):
        return (f"cannot read the CSV file {name}: it is not {printable(encoding)} text with a "
                "byte-order mark, which that encoding needs at the start of the file; pass "
                f"the byte order it is saved in, e.g. encoding='{codec}-le' (Windows) or "
                f"'{codec}-be' (CLI: --encoding), or check that this is the right file")
    if codec == "utf-8":
        return (f"cannot read the CSV file {name}: it is not UTF-8 text; save it as UTF-8 CSV, "
                "or pass the encoding it is saved in, e.g. encoding='cp1252' for a Windows "
                "(Excel) file (CLI: --encoding); or check that this is the right file")
    return (f"cannot read the CSV file {name}: it is not {printable(encoding)} text "
            f"(encoding={printable(encoding)!r}); pass the encoding it is saved in, e.g. "
            "'utf-8' or 'cp1252' (CLI: --encoding)")


def _keep_codes_as_text(source: Path, attributes: pd.DataFrame,
                        options: _CsvOptions) -> pd.DataFrame:
    """Return ``attributes`` with numeric columns of codes written with leading zeros as text.

    pandas read "01", "007" and "0450" as the numbers 1, 7 and 450: postal and district codes
    lost their zeros, and "01" and "1" became one level. The numeric columns are read again
    as written, and a column holding such a number is kept as that text.
    """
    numeric = [column for column in attributes.columns
               if pd.api.types.is_numeric_dtype(attributes[column].dtype)
               and not pd.api.types.is_bool_dtype(attributes[column].dtype)]
    if not numeric:
        return attributes
    text = _read_csv_text(source, options, usecols=numeric, dtype=str, low_memory=False,
                          **_na_arguments(options))
    codes = [column for column in numeric
             if text[column].str.contains(_LEADING_ZERO, regex=True, na=False).any()]
    if not codes:
        return attributes
    attributes = attributes.copy()
    for column in codes:
        attributes[column] = text[column].to_numpy()
    return attributes


def _na_arguments(options: _CsvOptions) -> dict[str, Any]:
    """``pd.read_csv``'s missing-value arguments for ``options.na_values`` (None: pandas' own)."""
    if options.na_values is None:
        return {}
    # Without keep_default_na, pandas reads no field as missing unless told: "" is the empty one.
    return {"keep_default_na": False, "na_values": ["", *options.na_values]}


def _warn_missing_words(source: Path, frame: pd.DataFrame, attributes: pd.DataFrame,
                        options: _CsvOptions, check_values: bool) -> None:
    """Warn, one warning per column, of text read as missing as pandas' default NA words.

    ``NA`` (Namibia), ``None`` or ``null`` in a text column became missing values without a
    word, then ``prepare`` refused them as NaN in a file that holds none. Text columns (and
    columns left without any value) holding missing values are read again as written; numeric
    columns are not judged: there ``NA`` is a missing number. ``frame`` is the file as read
    (its columns in file order), ``attributes`` its attribute columns as returned. With
    ``check_values=False`` (a DP release) the warning names only the column and the fix: the
    words and their number depend on the records.
    """
    judged = [column for column in attributes.columns
              if _is_text_or_empty(attributes[column]) and attributes[column].isna().any()]
    if not judged:
        return
    positions = sorted(frame.columns.get_loc(column) for column in judged)
    raw = _read_csv_text(source, options, check_values=check_values, usecols=positions,
                         dtype=str, na_filter=False, low_memory=False)
    name = printable(source.name)
    for index, position in enumerate(positions):
        column = frame.columns[position]
        written = raw.iloc[:, index].to_numpy(dtype=object)
        words = written[attributes[column].isna().to_numpy() & (written != "")]
        if len(words) == 0:
            continue
        shown = f"column {printable(column)!r} of {name}"
        if check_values:
            counts = pd.Series(words, dtype=object).value_counts()
            listed = ", ".join(repr(printable(word)) for word in counts.index[:_WORDS_SHOWN])
            if len(counts) > _WORDS_SHOWN:
                listed += f" and {len(counts) - _WORDS_SHOWN} other word(s)"
            found = (f"{shown}: {len(words)} value(s) written {listed} (pandas' default "
                     "missing-value words) were read as missing")
        else:
            found = (f"{shown}: values written as pandas' default missing-value words (NA, "
                     "None, null, ...) were read as missing (which and how many not shown when "
                     "values are not checked)")
        warnings.warn(f"{found}; if they are text (e.g. NA, the country code of Namibia), "
                      "pass na_values=[] to keep them as text, or list in na_values only the "
                      "words that mean missing (CLI: --na-values)", DataWarning, stacklevel=4)


def _is_text_or_empty(values: pd.Series) -> bool:
    """Whether a column read from CSV holds text (not True/False), or no value at all."""
    if values.isna().all():
        return True
    return pd.api.types.is_string_dtype(values.dtype) and pd.api.types.infer_dtype(
        values, skipna=True) == "string"


def _more_fields_than_names(source: Path, frame: pd.DataFrame,
                            options: _CsvOptions) -> InputError:
    """Return the refusal of records with more fields than the header line has names.

    pandas silently takes the first column(s), often a record ID, as row labels, which would
    then name rows in messages. Judged before any value is looked at (it is the file's layout).
    """
    return InputError(
        f"the CSV file {printable(source.name)} has more fields in its records than names in "
        "its header line (pandas would take the first column, e.g. record IDs, as row "
        "labels); give every column a name in the header line (in Python, write the file "
        f"with DataFrame.to_csv(index=False)){_separator_hint(frame.columns, options)}"
    )


def _check_csv_layout(source: Path, names: list) -> None:
    """Refuse unnamed or repeated names in the header line.

    Records with more fields than names are refused as they are read (index_col=False drops
    the extra fields with a ParserWarning): no row index is built of them.
    """
    unnamed = [k + 1 for k, name in enumerate(names) if not str(name).strip()]
    if unnamed:  # pandas named it 'Unnamed: 0', which no option or levels file could match
        raise InputError(
            f"the CSV file {printable(source.name)} has no name for column(s) "
            f"{', '.join(map(str, unnamed[:5]))} of its header line (counted from 1); give "
            "every column a name"
        )
    repeated = sorted({name for name in names if names.count(name) > 1})
    # A first record read as the header repeats its text values too ('F', 'F'): the whole line
    # is judged, not the repeated names alone.
    if repeated and _looks_like_a_record(names):
        raise InputError(
            f"the CSV file {printable(source.name)} repeats a name in its first line, which "
            "holds a number where column names belong (not repeated here: they may be a "
            "record's values); if the file has no header line, add one naming every column"
        )
    if repeated:
        raise InputError(
            f"the CSV file {printable(source.name)} has several columns named "
            f"{', '.join(repr(printable(name)) for name in repeated)} (pandas would silently "
            f"rename the copies, e.g. to {printable(repeated[0]) + '.1'!r}); give every column "
            "its own name in the header line"
        )


def _csv_coordinates(frame: pd.DataFrame, source: Path, name: str, column: str,
                     options: _CsvOptions, check_values: bool) -> np.ndarray:
    """Return coordinate column ``column`` as float64 after its checks (``name``: x or y)."""
    if column not in frame.columns:
        raise InputError(
            f"{name}={column!r}: {printable(source.name)} has no column {column!r}; "
            f"{_describe_header(frame.columns, options)}"
        )
    raw = frame[column]
    values = _numbers(raw, options.decimal)
    where = f"{name}={column!r}: column {column!r} of {printable(source.name)} has"
    not_numeric = (values.isna() & raw.notna()).to_numpy()
    if not_numeric.any() and check_values:
        raise InputError(f"{where} {int(not_numeric.sum())} non-numeric values "
                         f"({_csv_rows(frame.index, not_numeric)}); coordinates must be numbers"
                         f"{_decimal_hint(options, raw[not_numeric])}")
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


def _decimal_hint(options: _CsvOptions, bad: pd.Series) -> str:
    """Say which decimal mark numbers are read with, and how to read the other usual one.

    Numbers with thousands separators (``1.234,5``, ``1,234.5``) are read with neither mark:
    for them, the other mark was the wrong fix. No value of ``bad`` is quoted.
    """
    shown = f" with {options.decimal!r} as the decimal mark"
    text = bad.astype(str)
    if (text.str.contains(".", regex=False) & text.str.contains(",", regex=False)).any():
        return (f"{shown}; some hold both '.' and ',', as numbers with thousands separators "
                "do ('1.234,5' or '1,234.5'), which are not read: save the coordinates "
                "without digit grouping (in a spreadsheet, a number format without the "
                "thousands separator)")
    other = "','" if options.decimal == "." else "'.'"
    return f"{shown} (for {other} pass decimal={other})"


def _numbers(raw: pd.Series, decimal: str = ".") -> pd.Series:
    """Return the numbers of a coordinate column, NaN where a value is none (True/False too).

    pandas converts a column of numbers written with ``decimal``; a column it kept as text
    (some value is not a number) is converted value by value with the same decimal mark, so
    that under ``check_values=False`` one bad value does not make the others missing.
    """
    if pd.api.types.is_bool_dtype(raw.dtype):  # pandas reads "True"/"False" as bool, not 1/0
        return pd.Series(np.nan, index=raw.index)
    if decimal != "." and not pd.api.types.is_numeric_dtype(raw.dtype):
        text = raw.astype(str)
        # "1.5" is not a number when the decimal mark is "," (it may be 1.5 or 15).
        dotted = text.str.contains(".", regex=False, na=False).to_numpy(dtype=bool)
        raw = text.str.replace(decimal, ".", regex=False).mask(dotted, "")
    return pd.to_numeric(raw, errors="coerce")


def _describe_header(columns: pd.Index, options: _CsvOptions) -> str:
    """Describe the CSV header's column names for a message, unless it looks like a record.

    A file without a header line has its first record read as column names: listing them
    would print that record's coordinates (and ID) in the message.
    """
    names = [str(name) for name in columns]
    if names and names[0].lstrip().startswith("#"):  # a comment line read as the header
        return ("its first line starts with '#', a comment line, which is read as the header "
                "(not quoted here); remove the comment lines so that the first line names the "
                "columns")
    if _misread_header(names, options):
        return (f"its first line does not read as column names with encoding "
                f"{options.encoding!r} ({len(names)} name(s), one of them holding line breaks "
                "of the file or too long for a name; not quoted here: it may hold records); "
                "pass the file's encoding and separator (CLI: --encoding, --sep)")
    if _looks_like_a_record(names):
        count = int(_number_like(names).sum())
        return (f"its first line holds {count} number(s) where column names belong (not "
                "repeated here: they may be a record's values); if the file has no header "
                "line, add one naming every column")
    return (f"its columns are {[printable(name) for name in names]}"
            f"{_separator_hint(columns, options)}{_bom_hint(names, options)}")


#: A header name longer than this is not quoted in messages (:func:`_misread_header`).
_MAX_NAME_CHARS = 100


def _misread_header(names: list[str], options: _CsvOptions) -> bool:
    """Whether the header was not read as names: a name spans lines of the file, or is huge.

    A UTF-8 file read as UTF-16 decodes to one line of CJK characters: the whole file became
    one column name, and the message quoted it (17 KB); its UTF-16 bytes are the file's,
    every record included. Encoded back, such a name holds the file's line breaks.
    """
    for name in names:
        if len(name) > _MAX_NAME_CHARS:
            return True
        raw = name.encode(options.encoding, errors="replace")
        if b"\n" in raw or b"\r" in raw:
            return True
    return False


def _looks_like_a_record(names: list) -> bool:
    """Whether header names hold a number, as a first record read as the header does."""
    return bool(_number_like(names).any())


def _number_like(names: list) -> np.ndarray:
    """Which ``names`` are numbers, written with either decimal mark or digit grouping.

    Whatever ``decimal`` the file is read with: the coordinate ``-46,5`` of a first record read
    as the header under ``decimal=","`` was no number to pandas, and was quoted.
    """
    text = pd.Series([str(name) for name in names], dtype=object)
    plain = pd.to_numeric(text, errors="coerce").notna()
    ungrouped = pd.to_numeric(text.str.replace(r"[.,\s]", "", regex=True), errors="coerce")
    return (plain | ungrouped.notna()).to_numpy(dtype=bool)


_SEPARATORS = {";": "';'", "\t": "'\\t' (a tab)", ",": "','", "|": "'|'"}


def _separator_hint(columns: pd.Index, options: _CsvOptions) -> str:
    """Return a hint for a file whose fields are separated by another character than ``sep``."""
    found = [char for char in _SEPARATORS if char != options.sep
             and any(char in str(name) for name in columns)]
    if len(columns) > 1:  # split by sep already: a comma in a name is likely part of it
        found = [char for char in found if char != ","]
    if not found:
        return ""
    char = found[0]
    decimal = (" and decimal=',' (CLI: --decimal ',') if its numbers have decimal commas"
               if char == ";" and options.decimal == "." else "")
    return (f"; the header line holds {_SEPARATORS[char]} where sep={options.sep!r} was "
            f"expected: pass sep={_SEPARATORS[char].split(' ')[0]} (CLI: --sep){decimal}")


def _bom_hint(names: list[str], options: _CsvOptions) -> str:
    """Hint at a UTF-8 file read in another encoding (its byte-order mark became 'ï»¿')."""
    if names and names[0].startswith("\u00ef\u00bb\u00bf"):
        return ("; the file starts with the byte-order mark of UTF-8 text, read here as "
                f"{printable(options.encoding)}: pass encoding='utf-8' (CLI: --encoding)")
    return ""


def _read_parquet(source: Path) -> gpd.GeoDataFrame:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        if "Parquet" in pyogrio.list_drivers(read=True):
            return _read_ogr(source, VectorSource(source, source.suffix.lower()), None)
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
        if "Missing geo metadata" in str(err):  # geopandas' advice was pandas.read_parquet
            raise InputError(
                f"{printable(source.name)} is a Parquet file without geometry (no GeoParquet "
                "'geo' metadata): save the points with their geometry as GeoParquet or a "
                "GeoPackage, or their coordinates as columns of a CSV file read with x= and y= "
                "(in Python, GeoDataFrame.to_parquet writes GeoParquet)"
            ) from None
        raise InputError(f"cannot read the GeoParquet file {printable(source.name)}: "
                         f"{printable(str(err))[:200]}") from None
    # geopandas stores a frame's own index (e.g. patient ids) in the file and restores it; rows
    # are counted from 0 as in every other format, and no id reaches a message.
    return gdf.reset_index(drop=True)


def _read_ogr(source: Path, dataset: VectorSource, layer: str | None,
              check_values: bool = True) -> gpd.GeoDataFrame | pd.DataFrame:
    """Read ``dataset`` (``source`` itself, or its member) through pyogrio, after its checks.

    A shapefile is checked complete (:func:`geosynth.io._vector.check_shapefile_complete`),
    a plain GeoPackage to be one, and the layer to read chosen by
    :func:`geosynth.io._vector.choose_layer` (warning when it picks the only point layer).
    """
    geopackage = dataset.suffix == ".gpkg"
    if geopackage and not dataset.zipped:
        problem = geopackage_problem(source)
        if problem is not None:
            raise not_a_geopackage(source, problem)
    shown = printable(source.name)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            layer, note = choose_layer(pyogrio.list_layers(dataset.path), shown, "point",
                                       _LAYER, layer)
            check_shapefile_complete(source, dataset, shown, layer, check_values)
            info = pyogrio.read_info(dataset.path, layer=layer)
            _check_field_names(source, [str(name) for name in info["fields"]],
                               info["geometry_name"] if info["geometry_type"] is not None
                               else None)
            as_text = not check_values and dataset.suffix in _TYPED_BY_VALUES
            frame = pyogrio.read_dataframe(dataset.path, layer=layer,
                                           **(_text_schema(info) if as_text else {}))
    except UnicodeDecodeError as err:
        raise _not_text(source, dataset, err.encoding) from None
    except (pyogrio.errors.DataSourceError, pyogrio.errors.DataLayerError) as err:
        if geopackage and not dataset.zipped:
            raise not_a_geopackage(source, err) from None
        where = f"{printable(dataset.member)} in {shown}" if dataset.member else shown
        raise InputError(
            f"cannot read {where}: {printable(str(err).split(';')[0])[:200]}"
        ) from None
    if note is not None:
        warnings.warn(note, DataWarning, stacklevel=3)
    if as_text:  # "Could not parse column 'v' as JSON": said of a column of mixed values
        caught = [w for w in caught if not str(w.message).startswith("Could not parse column")]
    _warn_unquoted(caught, shown, check_values)
    return frame


#: Formats whose column types GDAL infers from the values (GeoJSON has no schema): under DP
#: one record's value decided the type, and the type whether the release was made.
_TYPED_BY_VALUES = (".geojson", ".json")


def _text_schema(info: dict) -> dict[str, str]:
    """GDAL's ``OGR_SCHEMA`` open option that reads every field of the layer as text.

    For a DP release (``check_values=False``), as a CSV file's columns are read. GDAL types a
    GeoJSON column from all its values: 1s and 2s became integers, refused against declared
    levels ``["1", "2"]``, the same with one record's ``"x"`` text, and released; one value
    2.5 made a column of reals whose 1s read ``"1.0"`` and matched no level; dates became
    timestamps. As text each value is its own JSON literal (``1``, ``1.0``, ``2.5``,
    ``true``, ``2020-01-01``), whatever the others hold, and ``prepare`` reads it as the
    declared numbers and booleans.
    """
    fields = [{"name": str(name), "type": "String"} for name in info["fields"]]
    schema = {"layers": [{"name": info["layer_name"], "schemaType": "Patch", "fields": fields}]}
    return {"OGR_SCHEMA": json.dumps(schema)}


def _warn_unquoted(caught: list[warnings.WarningMessage], shown: str,
                   check_values: bool) -> None:
    """Pass on the warnings ``caught`` while reading, GDAL's replaced by one that quotes none.

    pyogrio passes GDAL's warnings on as RuntimeWarnings, which quote what GDAL could not read:
    a record's coordinates (``Invalid coord dimension for '[ -46.123456 ]'``) or a field's
    value. Their number is not given when values are not checked (a DP release): it counts
    records.
    """
    gdal = [w for w in caught if issubclass(w.category, RuntimeWarning)
            and "pyogrio" in Path(w.filename).parts]
    for w in caught:
        if w not in gdal:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if gdal:
        count = f"{len(gdal)} problem(s)" if check_values else "problems"
        warnings.warn(f"{shown}: GDAL reported {count} reading it (not quoted: GDAL's messages "
                      "may quote records' values, e.g. a malformed coordinate); a record it "
                      "could not read comes back without geometry or without that value: "
                      "check the file, e.g. with ogrinfo", DataWarning, stacklevel=4)


def _not_text(source: Path, dataset: VectorSource, encoding: str) -> InputError:
    """Return the error for a file whose field names or values are not ``encoding`` text.

    The codec's own message quotes a byte of the file and its offset: not repeated.
    """
    fix = ("if its .cpg file names the wrong encoding, write the right one into it (e.g. "
           "CP1252), or save the layer again as a GeoPackage"
           if dataset.suffix == ".shp" else "save the layer again from data read with "
           f"the right encoding ({_FORMATS[dataset.suffix]} text is UTF-8)")
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
            "Point per record: split MultiPoints into points and replace polygons by a point "
            "inside each (in Python, gdf.explode() and gdf.representative_point()), and save "
            "the file again"
        )


