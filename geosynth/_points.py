"""Validated coordinates of point geometries, and columns that hold locations.

Shared by every public entry point: :func:`point_coordinates` reads the records' points, and
:func:`holds_geometries` finds locations hidden in other columns, which :func:`geosynth.prepare`
refuses as attributes and the release writers refuse as columns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from geosynth._messages import describe_rows
from geosynth.errors import InputError

__all__ = [
    "at_locations",
    "holds_coordinates",
    "holds_coordinates_within",
    "holds_encoded_geometries",
    "holds_geometries",
    "location_code_within",
    "metric_coordinates",
    "near_copies",
    "log_chance_of_as_many",
    "metres_per_unit",
    "levels_hold_locations",
    "point_coordinates",
    "refuse_z",
    "text_numbers",
    "usable_points",
]


#: The test of near copies of the records (:func:`near_copies`, for public maps and
#: :func:`geosynth.evaluate`): radius of a near point and of the context that estimates the
#: chance of one (metres), the bound of the placement density near a record over its average
#: in the context, and the chance of judging a synthetic release a copy.
NEAR_M = 0.1
NEAR_RADII = (NEAR_M, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001, 1e-4, 1e-5, 1e-6)  # near_copies
CONTEXT_M = 10.0
BORDER_FACTOR = 4.0
NEAR_ALPHA = 1e-9
EARTH_RADIUS_M = 6_371_008.8  # mean radius (IUGG)


def point_coordinates(frame: gpd.GeoDataFrame | gpd.GeoSeries, name: str = "gdf") -> np.ndarray:
    """Return the float64 ``(n, 2)`` coordinates of present, non-empty, finite points.

    Parameters
    ----------
    frame : geopandas.GeoDataFrame or geopandas.GeoSeries
        Records with one Point geometry each.
    name : str, default "gdf"
        How the caller's argument is called, for the error messages.

    Returns
    -------
    numpy.ndarray of float64, shape (n, 2)
        x and y of every record, in ``frame``'s order.

    Raises
    ------
    geosynth.errors.InputError
        Naming ``name``, the offending rows and the fix, for a missing geometry column, one
        that holds other values than geometries, missing/empty or non-point geometries, and
        NaN or infinite coordinates.
    """
    try:
        geoms = np.asarray(frame.geometry.array, dtype=object)
    except AttributeError as err:
        raise InputError(
            f"{name} has no active geometry column; set one with {name}.set_geometry(column)"
        ) from err
    index = frame.index
    try:
        type_id = shapely.get_type_id(geoms)
    except TypeError:  # a pandas DataFrame's "geometry" column of text or numbers
        raise InputError(
            f"{name}'s geometry column holds values that are not geometries; pass a "
            f"GeoDataFrame of Point geometries, e.g. geopandas.GeoDataFrame({name}, "
            "geometry=geopandas.points_from_xy(x, y))"
        ) from None
    missing = (type_id == -1) | shapely.is_empty(geoms)
    if missing.any():
        raise InputError(
            f"{name}: {int(missing.sum())} records have missing or empty geometries "
            f"({describe_rows(index, missing)}); drop them, e.g. "
            f"{name}[~({name}.geometry.isna() | {name}.geometry.is_empty)]"
        )
    not_point = type_id != 0
    if not_point.any():
        kinds = sorted(set(shapely.get_type_id(geoms[not_point]).tolist()))
        names = sorted({shapely.geometry.base.GEOMETRY_TYPES[k] for k in kinds})
        raise InputError(
            f"{name} has {int(not_point.sum())} non-point geometries, which are not points "
            f"({names}; {describe_rows(index, not_point)}); pass one Point per record: use "
            "gdf.explode() for MultiPoints or gdf.representative_point() for polygons"
        )
    xy = _xy(geoms)
    bad = ~np.isfinite(xy).all(axis=1)
    if bad.any():
        raise InputError(
            f"{name} has {int(bad.sum())} points with NaN or infinite coordinates "
            f"({describe_rows(index, bad)}); drop or fix them"
        )
    return xy


def usable_points(frame: gpd.GeoDataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Mark the records with a present, non-empty Point of finite coordinates; refuse nothing.

    The tolerant twin of :func:`point_coordinates`, for a preparation whose success must not
    depend on the records' values (:func:`geosynth.prepare` with ``levels=``): the caller
    drops the records it does not mark.

    Parameters
    ----------
    frame : geopandas.GeoDataFrame
        Records, one geometry each (its active geometry column must exist).

    Returns
    -------
    usable : numpy.ndarray of bool, shape (n,)
        True for a present, non-empty Point with finite x and y.
    xy : numpy.ndarray of float64, shape (n, 2)
        The coordinates (NaN where not usable).
    """
    geoms = np.asarray(frame.geometry.array, dtype=object)
    point = (shapely.get_type_id(geoms) == 0) & ~shapely.is_empty(geoms)
    xy = np.full((len(geoms), 2), np.nan)
    xy[point] = _xy(geoms[point])
    usable = point & np.isfinite(xy).all(axis=1)
    xy[~usable] = np.nan
    return usable, xy


def refuse_z(frame: gpd.GeoDataFrame | gpd.GeoSeries, name: str, why: str) -> None:
    """Refuse points with a z coordinate, which the caller would ignore (``why``).

    Parameters
    ----------
    frame : geopandas.GeoDataFrame or geopandas.GeoSeries
        Records with one Point geometry each (checked by :func:`point_coordinates`).
    name : str
        How the caller's argument is called, for the message.
    why : str
        What ignores z, e.g. ``"the measures use planar distances"``.

    Raises
    ------
    geosynth.errors.InputError
        Naming ``name``, the rows and the fix.
    """
    has_z = shapely.has_z(np.asarray(frame.geometry.array, dtype=object))
    if has_z.any():
        raise InputError(
            f"{name} has {int(has_z.sum())} points with a z coordinate "
            f"({describe_rows(frame.index, has_z)}); {why} and would ignore it: drop it first, "
            f"e.g. {name}.set_geometry({name}.force_2d())"
        )


def at_locations(points: np.ndarray, locations: np.ndarray) -> np.ndarray:
    """Mask of the ``points`` (m, 2) that coincide exactly with one of the ``locations`` (n, 2).

    The one exact test of whole points (both coordinates equal), e.g. of released points
    against the original records': each point is read as the complex number ``x + iy``, so the
    test is one :func:`numpy.isin` (sort-based) rather than an ``m x n`` comparison.

    Parameters
    ----------
    points, locations : numpy.ndarray of float64, shape (m, 2) and (n, 2)

    Returns
    -------
    numpy.ndarray of bool, shape (m,)
    """
    return np.isin(_as_complex(points), _as_complex(locations))


def _as_complex(xy: np.ndarray) -> np.ndarray:
    out = np.empty(xy.shape[0], dtype=np.complex128)
    out.real, out.imag = xy[:, 0], xy[:, 1]
    return out


def _xy(geoms: np.ndarray) -> np.ndarray:
    """Return the x and y of point geometries, float64 (n, 2)."""
    return np.column_stack([shapely.get_x(geoms), shapely.get_y(geoms)]).reshape(-1, 2)


def holds_geometries(values: pd.Series) -> bool:
    """Whether ``values`` is a geometry column, with or without its dtype, or encodes geometries.

    Parameters
    ----------
    values : pandas.Series
        A column of a release.

    Returns
    -------
    bool
        True for a geometry dtype, for an ``object`` column holding a shapely geometry, for a
        column of text or bytes holding a non-empty geometry as WKT (or EWKT), WKB (bytes or
        hex text) or GeoJSON (:func:`holds_encoded_geometries`), and for a column holding
        coordinates in another form (:func:`holds_coordinates`).

    Notes
    -----
    A list of shapely points assigned to a column (``release["home"] = list(gdf.geometry)``),
    or a geometry column passed through ``apply`` or ``astype(object)``, has dtype ``object``:
    it was kept, and published the points it holds (the confidential locations). So was their
    text (``release["home"] = gdf.geometry.to_wkt()``, ``.to_wkb()``, ``.to_json()``).
    """
    if isinstance(values.dtype, gpd.array.GeometryDtype):
        return True
    if values.dtype == object and shapely.is_geometry(values.to_numpy()).any():
        return True
    weights = None
    if values.dtype == object or isinstance(values.dtype, pd.StringDtype | pd.CategoricalDtype):
        try:  # the rules read values and their counts: each distinct text is parsed once
            counted = values.value_counts(dropna=True, sort=False)
        except TypeError:  # unhashable values (lists, dicts): holds_coordinates says so
            counted = None
        if counted is not None:  # 2.6 s for a million rows of three levels, 1 ms so
            values = pd.Series(counted.index.to_numpy(dtype=object), dtype=object)
            weights = counted.to_numpy(dtype=np.int64)
    return holds_encoded_geometries(values) or holds_coordinates(values, weights)


def holds_coordinates(values: pd.Series, weights: np.ndarray | None = None) -> bool:
    """Whether ``values`` holds coordinates as containers or as text of two to four numbers.

    Parameters
    ----------
    values : pandas.Series
        A column of a release.
    weights : numpy.ndarray of int, optional
        The records each row stands for (a table of counts: a row per cell and level); by
        default one each. The rule below counts records, not rows.

    Returns
    -------
    bool
        True when a value is a list, tuple, dict, set or array (``[x, y]``, ``{"x": x}``: a
        release column holds scalars), or when most rows hold text of two to four numbers
        separated by commas, semicolons or spaces, bracketed or not (``"605123.2 7790456.5"``,
        ``"(605123.2, 7790456.5)"``, also as ``str`` writes a tuple of NumPy floats,
        ``"(np.float64(605123.2), np.float64(7790456.5))"``) and most of those texts are
        distinct, as one location per
        record is. An attribute whose few levels read ``"1 2"`` is not.

    Notes
    -----
    Probing the writers as an attacker would: a column of ``[x, y]`` lists, of
    ``{"x": x, "y": y}`` dicts, of ``f"{x} {y}"`` or ``str((x, y))`` text was written to the
    release file (the lists as their text) and drawn on public maps; only shapely geometries,
    WKT, WKB and GeoJSON were caught.
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype(object)
    elif not (values.dtype == object or isinstance(values.dtype, pd.StringDtype)):
        return False
    present = values.notna().to_numpy(dtype=bool)
    items = values.to_numpy(dtype=object)[present]
    if any(isinstance(v, list | tuple | dict | set | frozenset | np.ndarray) for v in items):
        return True
    counts = (np.ones(items.size, dtype=np.int64) if weights is None
              else np.asarray(weights, dtype=np.int64)[present])
    is_text = np.fromiter((isinstance(v, str) for v in items), bool, items.size)
    texts = pd.Series(items[is_text], dtype=object)
    texts = texts.str.replace(_NUMPY_SCALAR, r"\1", regex=True)  # str((x, y)) of NumPy floats
    numeric = texts.str.fullmatch(_COORDINATE_TEXT).to_numpy(dtype=bool)
    n_numeric = int(counts[is_text][numeric].sum())
    return (2 * n_numeric > int(counts.sum()) >= 2
            and 2 * texts[numeric].nunique() > n_numeric)


def holds_coordinates_within(
    values: pd.Series,
    bounds: tuple[float, float, float, float],
    weights: np.ndarray | None = None,
    fewer_than: int = 3,
    degrees: tuple[float, float, float, float] | None = None,
) -> bool:
    """Whether a text value of ``values`` reads as a location inside the records' box.

    :func:`holds_coordinates` asks most rows to be such text; a column holding a record's own
    ``"603184.8, 7794484.0"`` in a few rows (and ``"north"`` in the others) passed, and the
    release published those records' locations to 0.1 m as levels of the attribute. Here one
    distinct text is enough when two numbers in a row of it, in either order (read with a
    decimal point and thousands commas, and with a decimal comma: ``"600016,5; 7790580,3"``;
    ``"x=600016.5, y=7790580.3"``, ``"600016.5E 7790580.3N"``, ``"6.000165e+05 ..."``, a
    hyphen between them, and the text of a dict of NumPy floats too), lie inside

    * ``bounds`` (the lattice's box: every counted record's location is in it), or
    * ``degrees`` (the same box in longitude and latitude), both with 3 decimals or more
      (about 100 m): a home's latitude and longitude beside data in metres,

    however many records hold the text where no label's numbers fall in the box (its x or y
    range :data:`LABELS_BELOW` or farther from 0, as UTM eastings are; and the degrees box): a
    household's ``"332519 7390639"``, five records each, went into the release. Near the
    origin of a local CRS, where labels' numbers fall in the box, only when few records hold
    the text, as one person's location is (or a small household's): fewer than
    ``fewer_than`` for whole numbers, fewer than :data:`DECIMAL_FEWER_THAN` when both have
    decimals. Labels many records share pass there: ``"18 64"``, ``"3.5 to 4.0 m"``, an income
    band ``"5,000 - 10,000"`` (a comma before ``000`` reads as a thousands separator; before
    other three digits, as either: ``"52,520; 13,405"`` is a latitude and longitude).

    Parameters
    ----------
    values : pandas.Series
        An attribute column (any dtype: only text is read).
    bounds : (xmin, ymin, xmax, ymax)
        The box the records' locations lie in.
    weights : numpy.ndarray of int, optional
        The records each row stands for (a table of counts); by default one each.
    fewer_than : int, default 3
        Whole numbers held by this many records or more are a level, not a location.
    degrees : (west, south, east, north), optional
        ``bounds`` in longitude and latitude.

    Returns
    -------
    bool
    """
    values, texts = _distinct_texts(values)
    far = _far_from_origin(bounds)
    limits = {text: _located(text, bounds, degrees, far) for text in texts
              if _DIGIT_PAIR.search(text)}
    limits = {text: limit for text, limit in limits.items() if limit is not None}
    if not limits:
        return False
    limit = {"whole": fewer_than, "decimal": DECIMAL_FEWER_THAN, "far": np.inf}
    held = _records_holding(values, limits, weights)
    return any(n < limit[limits[text]] for text, n in held.items())


def _distinct_texts(values: pd.Series) -> tuple[pd.Series, list[str]]:
    """``values`` as objects (categories too) and its distinct texts; none for other dtypes."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype(object)
    elif not (values.dtype == object or isinstance(values.dtype, pd.StringDtype)):
        return values, []
    distinct = values.value_counts(dropna=True, sort=False).index.to_numpy(dtype=object)
    return values, [v for v in distinct if isinstance(v, str)]


def _records_holding(values: pd.Series, texts: Iterable[str],
                     weights: np.ndarray | None) -> pd.Series:
    """Count the records (``weights`` each row, by default one) holding each of ``texts``."""
    rows = values.isin(list(texts)).to_numpy(dtype=bool)
    counts = np.ones(rows.sum(), dtype=np.int64) if weights is None else \
        np.asarray(weights)[rows]
    return pd.Series(counts).groupby(values[rows].to_numpy(dtype=object)).sum()


#: :func:`holds_coordinates_within` reads a text of two numbers with decimals inside the box as
#: a location when fewer records than this hold it (a household at one GPS fix).
DECIMAL_FEWER_THAN = 10


def _located(text: str, bounds: tuple[float, float, float, float],
             degrees: tuple[float, float, float, float] | None, far: bool) -> str | None:
    """``"far"``, ``"decimal"``, ``"whole"`` or None: how ``text`` reads as a location in a box.

    :func:`holds_coordinates_within` gives the rules; ``far``: :func:`_far_from_origin` of
    ``bounds``.
    """
    found = None
    for numbers in _number_readings(text):
        for (a, da), (b, db) in zip(numbers, numbers[1:], strict=False):
            for x, y in ((a, b), (b, a)):
                if _inside(x, y, bounds):
                    if far:
                        return "far"
                    if da and db:
                        return "decimal"
                    found = "whole"
                if degrees is not None and da >= 3 and db >= 3 and _inside(x, y, degrees):
                    return "far"
    return found


#: A box whose x or y range lies this far from 0 (or farther) holds no label's numbers: every
#: UTM easting (166,000 to 834,000) does, and a label of two numbers of six digits or more
#: that fall in it (an age band, a year range, a postcode) is no label.
LABELS_BELOW = 100_000.0


def _far_from_origin(box: tuple[float, float, float, float]) -> bool:
    """Whether two numbers inside ``box`` cannot be a label's (:data:`LABELS_BELOW`)."""
    return (min(abs(box[0]), abs(box[2])) >= LABELS_BELOW and box[0] * box[2] > 0
            or min(abs(box[1]), abs(box[3])) >= LABELS_BELOW and box[1] * box[3] > 0)


def _inside(x: float, y: float, box: tuple[float, float, float, float]) -> bool:
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def text_numbers(text: str) -> list[list[float]]:
    """Return the numbers of ``text`` in each of its readings (decimal point, decimal comma).

    The reader of :func:`holds_coordinates_within` (``"x=600016.5, y=7790580.3"``,
    ``"POINT (x y)"``, ``"300,261.61"``, ``"600016,5; 7790580,3"``), for other checks of
    coordinates hidden in text.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of list of float
        One list of numbers, in order, per reading.
    """
    return [[value for value, _ in reading] for reading in _number_readings(text)]


def _number_readings(text: str) -> list[list[tuple[float, int]]]:
    """Return the numbers of ``text`` with their decimals, read with a decimal point and comma.

    A comma before exactly three digits is a thousands separator in both readings. A number
    with one such comma and no other separator (``"52,520"``) is read a third way too, as a
    decimal comma, unless its three digits are ``000`` (``"5,000"`` is a label's round figure;
    ``"52,520; 13,405"`` is a home's latitude and longitude to about 100 m).
    """
    text = _HYPHEN_BETWEEN.sub(" ", _NUMPY_SCALAR.sub(r"\1", text))
    point = _THOUSANDS_COMMA.sub("", text)
    readings = [point]
    if _DECIMAL_COMMA.search(point):
        readings.append(_DECIMAL_COMMA.sub(".", _THOUSANDS_POINT.sub("", point)))
    if _AMBIGUOUS_COMMA.search(text):
        readings.append(_THOUSANDS_COMMA.sub("", _AMBIGUOUS_COMMA.sub(r"\1.\2", text)))
    return [[_number(*parts) for parts in _NUMBER_PARTS.findall(reading)]
            for reading in readings]


def _number(whole: str, fraction: str, exponent: str) -> tuple[float, int]:
    """Return the value of a number's parts and its decimals (after the exponent)."""
    value = float(f"{whole}{fraction}e{exponent or 0}")
    decimals = max(len(fraction) - 1 if fraction else 0, 0) - int(exponent or 0)
    return value, max(decimals, 0)


def location_code_within(values: pd.Series, degrees: tuple[float, float, float, float],
                         weights: np.ndarray | None = None) -> str | None:
    """Name the location code a rare text of ``values`` is, inside ``degrees``; else None.

    Geohashes of 7 characters or more (153 m or finer) holding a digit (words spelt with the
    geohash letters alone, "western", decoded inside a country's box) and Open Location Codes
    ("plus codes", ``"588MC9X8+QH"``: 14 m) whose cell's centre lies inside ``degrees`` (the
    records' box in longitude and latitude), and H3 cell ids (``"8928308280fffff"``) of
    resolution 9 or finer (about 170 m; not located: decoding one needs the H3 library), each
    held by fewer than
    :data:`DECIMAL_FEWER_THAN` records: a home's location, published verbatim as a level. A
    shared code of a coarse cell is an area's label, as a postcode is.

    Parameters
    ----------
    values : pandas.Series
        An attribute column (only text is read).
    degrees : (west, south, east, north)
        The records' box in degrees.
    weights : numpy.ndarray of int, optional
        The records each row stands for; by default one each.

    Returns
    -------
    str or None
        ``"a geohash"``, ``"a plus code"`` or ``"an H3 cell id"``.
    """
    values, texts = _distinct_texts(values)
    kinds = {text: _code_kind(text.strip().lower(), degrees) for text in texts
             if 7 <= len(text.strip()) <= 20}
    kinds = {text: kind for text, kind in kinds.items() if kind is not None}
    if not kinds:
        return None
    held = _records_holding(values, kinds, weights)
    rare = [kinds[text] for text, n in held.items() if n < DECIMAL_FEWER_THAN]
    return rare[0] if rare else None


def _code_kind(code: str, degrees: tuple[float, float, float, float]) -> str | None:
    """Which location code ``code`` (lower case) is, when it is one inside ``degrees``."""
    if _GEOHASH_CODE.fullmatch(code) and any(c.isdigit() for c in code):  # not "western"
        return "a geohash" if _inside(*_geohash_centre(code), degrees) else None
    if _PLUS_CODE.fullmatch(code):
        return "a plus code" if _inside(*_plus_code_centre(code), degrees) else None
    if _H3_CELL.fullmatch(code) and int(code[1], 16) >= 9:
        return "an H3 cell id"
    return None


def _geohash_centre(code: str) -> tuple[float, float]:
    """Longitude and latitude of the centre of a geohash's cell (bits alternate, x first)."""
    box = [[-180.0, 180.0], [-90.0, 90.0]]
    axis = 0
    for character in code:
        value = _GEOHASH_DIGITS.index(character)
        for bit in (16, 8, 4, 2, 1):
            middle = sum(box[axis]) / 2
            box[axis][0 if value & bit else 1] = middle
            axis = 1 - axis
    return sum(box[0]) / 2, sum(box[1]) / 2


def _plus_code_centre(code: str) -> tuple[float, float]:
    """Longitude and latitude of the centre of a full plus code's cell (its first 10 digits)."""
    digits = code.replace("+", "").upper()[:10]
    lon, lat, size = -180.0, -90.0, 20.0
    for k in range(0, len(digits) - 1, 2):
        lat += _PLUS_CODE_DIGITS.index(digits[k]) * size
        lon += _PLUS_CODE_DIGITS.index(digits[k + 1]) * size
        size /= 20.0
    return lon + 10.0 * size, lat + 10.0 * size


_GEOHASH_DIGITS = "0123456789bcdefghjkmnpqrstuvwxyz"
_GEOHASH_CODE = re.compile(r"[0-9b-hjkmnp-z]{7,12}")
_PLUS_CODE_DIGITS = "23456789CFGHJMPQRVWX"
_PLUS_CODE = re.compile(r"[2-9cfghjmpqrvwx]{8}\+[2-9cfghjmpqrvwx]{2,7}")
_H3_CELL = re.compile(r"8[0-9a-f]{14}")


def holds_encoded_geometries(values: pd.Series) -> bool:
    """Whether ``values`` holds a non-empty geometry written as WKT, WKB or GeoJSON.

    Parameters
    ----------
    values : pandas.Series
        A column of text (``object``, ``string`` or categorical) or bytes.

    Returns
    -------
    bool
        True when a value (a category, for a categorical column) parses with shapely as a
        non-empty geometry: WKT or EWKT text (``"POINT (605123.2 7790456.5)"``), WKB bytes or
        their hex text, or GeoJSON text. Text that only looks like one (``"Point (of
        interest)"``) is not.
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = pd.Series(values.cat.categories)
    elif not (values.dtype == object or isinstance(values.dtype, pd.StringDtype)):
        return False
    items = values.dropna().to_numpy(dtype=object)
    is_text = np.fromiter((isinstance(v, str) for v in items), bool, len(items))
    is_bytes = np.fromiter((isinstance(v, bytes | bytearray) for v in items), bool, len(items))
    texts = pd.Series(items[is_text], dtype=object)
    wkt = texts[texts.str.match(_WKT_START)].str.replace(_SRID, "", regex=True).to_numpy()
    hex_wkb = texts[texts.str.fullmatch(_HEX_WKB)].to_numpy()
    geojson = texts[texts.str.match(_GEOJSON_START)].to_numpy()
    blobs = np.array([bytes(v) for v in items[is_bytes]], dtype=object)
    parsed = [
        shapely.from_wkt(wkt, on_invalid="ignore"),
        shapely.from_wkb(np.concatenate([hex_wkb, blobs]), on_invalid="ignore"),
        shapely.from_geojson(geojson, on_invalid="ignore"),
    ]
    return any(bool((~shapely.is_missing(g) & ~shapely.is_empty(g)).any()) for g in parsed
               if len(g))


# The start of a non-empty geometry in WKT or EWKT, of WKB as hex text (a byte-order byte and a
# type: 21 bytes at least, a point), and of GeoJSON; candidates that shapely then parses.
_WKT_START = re.compile(
    r"\s*(?:SRID=-?\d+\s*;\s*)?(?:MULTI)?(?:POINT|LINESTRING|POLYGON|CURVE|SURFACE)|"
    r"\s*(?:SRID=-?\d+\s*;\s*)?(?:GEOMETRYCOLLECTION|CIRCULARSTRING|COMPOUNDCURVE|"
    r"CURVEPOLYGON|TRIANGLE|TIN|POLYHEDRALSURFACE)", re.IGNORECASE)
# EWKT's prefix, which GEOS's WKT reader refuses.
_SRID = re.compile(r"^\s*SRID=-?\d+\s*;", re.IGNORECASE)
_HEX_WKB = re.compile(r"\s*0[01](?:[0-9A-Fa-f]{2}){20,}\s*")
_GEOJSON_START = re.compile(r"\s*\{.*\"coordinates\"", re.DOTALL)
# Two to four numbers separated by commas, semicolons or spaces, in brackets or not.
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_NUMBER_RE = re.compile(_NUMBER)
# The readings of holds_coordinates_within: a number's whole part and its fraction.
_NUMBER_PARTS = re.compile(r"([-+]?\d+)(\.\d+)?(?:[eE]([-+]?\d+))?")
_HYPHEN_BETWEEN = re.compile(r"(?<=\d)-(?=\d)")
_DIGIT_PAIR = re.compile(r"\d\D+\d")
_THOUSANDS_COMMA = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_THOUSANDS_POINT = re.compile(r"(?<=\d)\.(?=\d{3}(?!\d))")
_DECIMAL_COMMA = re.compile(r"(?<=\d),(?=\d)")
_AMBIGUOUS_COMMA = re.compile(r"(?<![\d.,])([-+]?\d+),(?!000)(\d{3})(?!\d|[.,]\d)")
_NUMPY_SCALAR = re.compile(r"(?:np|numpy)\.\w+\(([^()]*)\)")
_COORDINATE_TEXT = re.compile(
    rf"\s*[\[(]?\s*{_NUMBER}(?:\s*[,;]\s*|\s+){_NUMBER}(?:(?:\s*[,;]\s*|\s+){_NUMBER}){{0,2}}"
    r"\s*[\])]?\s*")


def levels_hold_locations(levels: list) -> bool:
    """Whether the distinct levels of an attribute are locations.

    Shapely geometries, their WKT, WKB or GeoJSON (:func:`holds_encoded_geometries`), or
    containers of two to four real numbers (``(x, y)`` tuples). Not text of numbers:
    :func:`holds_coordinates` tells coordinates from labels such as ``"1,5"`` (a decimal comma)
    or ``"18 64"`` (an age band) by most *rows* being distinct, which every list of distinct
    levels is.

    Parameters
    ----------
    levels : list
        The distinct values of an attribute.

    Returns
    -------
    bool
    """
    values = pd.Series(levels, dtype=object)
    if shapely.is_geometry(values.to_numpy()).any() or holds_encoded_geometries(values):
        return True
    return any(isinstance(v, list | tuple | np.ndarray) and 2 <= len(v) <= 4
               and all(isinstance(c, int | float | np.number) and not isinstance(c, bool)
                       for c in v) for v in levels)


def metric_coordinates(xy: np.ndarray, crs: Any) -> np.ndarray:
    """Coordinates in metres: projected ones scaled by their unit; lon/lat on a sphere, 3-D.

    Longitude and latitude become points on a sphere of the Earth's mean radius, whose chord
    lengths are the distances (to 0.5 % of the ellipsoid's, at any scale below a kilometre).
    Without a CRS the coordinates are taken as metres.
    """
    if crs is None:
        return xy
    if crs.is_geographic:
        lon, lat = np.radians(xy[:, 0]), np.radians(xy[:, 1])
        return EARTH_RADIUS_M * np.column_stack(
            [np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)])
    return xy * metres_per_unit(crs)


def metres_per_unit(crs: Any) -> float:
    """Metres in one unit of ``crs``: its axis unit, a degree of latitude, 1 without a CRS."""
    if crs is None:
        return 1.0
    if crs.is_geographic:
        return EARTH_RADIUS_M * np.pi / 180.0
    factor = crs.axis_info[0].unit_conversion_factor if crs.axis_info else None
    return float(factor) if factor else 1.0


def log_chance_of_as_many(k: int, mean: float) -> float:
    """Return the log of the Chernoff bound on ``P(K >= k)`` for a sum ``K`` of Bernoullis.

    ``exp(-μ) (eμ/k)^k`` for a mean ``μ`` below ``k`` (0 otherwise: no evidence).
    """
    if k <= mean:
        return 0.0
    return -mean + k + k * np.log(mean / k) if mean > 0 else -np.inf


def near_copies(points: np.ndarray, records: np.ndarray) -> tuple[int, float, float]:
    """Count the ``points`` near ``records`` if too many for chance, at :data:`NEAR_RADII`.

    ``k`` points lie within ``r`` of one of the distinct record locations ``records`` (both
    in metres). Under independent placement, uniform within cells or pixels at least
    ``R = CONTEXT_M`` wide, ``k`` is a sum of independent Bernoulli variables whose mean is at
    most ``μ = c (r/R)² P_R`` in expectation (``c = BORDER_FACTOR``, ``P_R`` the number of
    (point, record) pairs closer than ``R``; see :func:`geosynth.maps.review_map`, Notes).
    The points are judged a copy when the Chernoff bound ``P(k' >= k) <= exp(-μ) (eμ/k)^k``
    is below ``NEAR_ALPHA / len(NEAR_RADII)`` at one of the radii ``r`` (a union bound over
    them). The finer radii catch a few records moved by a centimetre among synthetic points
    (3 of 200 were within 0.1 m where chance put 0.05, which passed at 0.1 m alone), and one
    record moved by a micrometre where fewer than about 1,000 (point, record) pairs are
    within 10 m (at 1 mm, a single point never passed).

    Returns
    -------
    (int, float, float)
        ``(k, μ, r)`` at the first radius at which the points are judged a copy, else
        ``(0, μ, NEAR_M)``.
    """
    from scipy.spatial import cKDTree

    if len(points) == 0 or len(records) == 0:
        return 0, 0.0, NEAR_M
    tree = cKDTree(records)
    distance, _ = tree.query(points, distance_upper_bound=NEAR_M)
    pairs = float(cKDTree(points).count_neighbors(tree, CONTEXT_M))
    alpha = np.log(NEAR_ALPHA / len(NEAR_RADII))
    for radius in NEAR_RADII:
        near = int((distance <= radius).sum())
        expected = BORDER_FACTOR * (radius / CONTEXT_M) ** 2 * pairs
        if log_chance_of_as_many(near, expected) < alpha:
            return near, expected, radius
    return 0, BORDER_FACTOR * (NEAR_M / CONTEXT_M) ** 2 * pairs, NEAR_M
