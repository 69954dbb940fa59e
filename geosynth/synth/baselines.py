"""Baseline releases to compare the Paiva et al. (2014) synthesizer with.

* :func:`naive_synthesize` -- the "Naive" method of Nunes (2018, §3.2): every record gets a point
  drawn uniformly inside its *own* cell (its habitable geometry), with no model.
* :func:`donut_mask` -- donut geomasking, the standard used by health agencies (Hampton et al.
  2010; MaskMyPy's ``Donut``): each point is displaced in a uniformly random direction by a
  distance between ``r_min`` and ``r_max``, uniform in *area* over the annulus.

Both keep every non-geometry column of the input (a baseline moves locations only) and the input
index, so that :func:`geosynth.evaluate` can measure them beside a synthesizer's releases; they
are for that comparison, not for publication (:func:`geosynth.io.write_release` refuses them,
after :func:`geosynth.synth.to_public` too: each keeps every record's values and moves its point
within its cell or a few hundred metres). Drop columns that identify records before calling
them, or pass ``columns``; a column that repeats the x or y of
the points (``easting``, ``northing``), or their longitude or latitude, is refused. Neither
ever returns a point at the exact location of an original record: such a draw is made again.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import re
import warnings
from collections.abc import Sequence
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyproj

from geosynth._messages import caller_stacklevel, describe_rows
from geosynth._points import (
    at_locations,
    metres_per_unit,
    point_coordinates,
    refuse_z,
    text_numbers,
)
from geosynth._random import SeedLike, as_generator
from geosynth._validation import check_m, check_real, check_unique_columns, is_sequence
from geosynth.data import check_crs, describe_identifier, identifying_levels
from geosynth.errors import CRSError, DataWarning, InputError, InputTypeError, SamplerError
from geosynth.lattice import Grid
from geosynth.synth.placement import (
    PixelTable,
    check_grid,
    check_pixel_table,
    place,
    unweighted_note,
)
from geosynth.synth.release import ReleaseInfo, check_geodataframe, make_release, plain_columns

__all__ = ["naive_synthesize", "donut_mask"]


def naive_synthesize(
    gdf: gpd.GeoDataFrame,
    grid: Grid,
    m: int = 5,
    seed: SeedLike = None,
    weights: PixelTable | None = None,
    columns: Sequence[str] | None = None,
) -> list[gpd.GeoDataFrame]:
    """Naive releases: a uniform point inside each record's own cell (Nunes 2018, §3.2).

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        Confidential points in the grid CRS (projected).
    grid : geosynth.lattice.Grid
        The lattice; "inside the cell" means inside the cell's habitable geometry.
    m : int, default 5
        Number of releases.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Randomness; the same seed gives the same releases.
    weights : PixelTable, optional
        Raster of non-negative weights in the grid CRS to place points within the cell in
        proportion to (see :func:`geosynth.synth.place_in_cells`), read for ``grid`` by
        :func:`geosynth.rasters.read_weights` (:func:`geosynth.naive_synthesize` takes the
        raster's path itself); default uniform.
    columns : sequence of str, optional
        Non-geometry columns to keep; default all of them.

    Returns
    -------
    list of geopandas.GeoDataFrame
        ``m`` releases with the index, row order, ``columns`` and CRS of ``gdf`` and synthetic
        points as geometry; ``attrs["geosynth"]`` names the method and release number.

    Raises
    ------
    geosynth.errors.InputError
        ``gdf`` is not a GeoDataFrame of valid 2-D points (no rows, missing, empty, non-point or
        3-D geometries, duplicated column names); ``grid`` is not a Grid; points lie in no
        cell (as in :func:`geosynth.prepare`: outside the lattice or region, or inside an
        excluded area); bad ``m``, ``columns`` or ``weights``; a kept column identifies records
        (an ID, by its values or its name and levels) or repeats the x or y of the points
        (e.g. ``easting``) or their longitude or latitude.
    geosynth.errors.CRSError
        ``gdf`` is not in the grid CRS, or is in degrees.
    geosynth.errors.SamplerError
        Points keep landing on original locations (a cell spans only a few float64 values).

    Notes
    -----
    The cell of every record is public in a naive release (the synthetic point lies in it), so
    the cell-level risk measures of Paiva et al. (2014) do not apply; Nunes (2018, §3.3) compares
    distances to the nearest original point instead. A point that lands exactly on an original
    record's location (possible only where float64 holds few values in a cell) is drawn again.
    """
    rng = as_generator(seed)
    check_geodataframe(gdf)
    check_grid(grid)
    m = check_m(m)
    keep = _check_columns(gdf, columns)
    xy = _check_points(gdf)
    _refuse_coordinate_columns(gdf, keep, xy)
    _refuse_identifiers(gdf, keep)
    check_crs(gdf, grid)
    cells = _cells_of(gdf, grid, xy)
    table = check_pixel_table(weights, grid)
    data = pd.DataFrame(gdf[keep]).copy()
    geometry = gdf.geometry.name
    note = unweighted_note(table, cells)
    if note is not None:  # once, not once per release (or per redraw)
        warnings.warn(note, DataWarning, stacklevel=caller_stacklevel())

    def draw(rows: np.ndarray) -> np.ndarray:
        return place(grid, cells[rows], rng, table, warn=False)

    return [
        make_release(
            data,
            _away_from_originals(draw, xy, "naive_synthesize"),
            geometry,
            gdf.crs,
            ReleaseInfo(method="naive", release=release, weighted=table is not None),
        )
        for release in range(m)
    ]


def donut_mask(
    gdf: gpd.GeoDataFrame,
    r_min: float,
    r_max: float,
    m: int = 5,
    seed: SeedLike = None,
    columns: Sequence[str] | None = None,
) -> list[gpd.GeoDataFrame]:
    """Donut geomasking: move each point a random distance in ``[r_min, r_max]``.

    Each point is displaced in a direction uniform on ``[0, 2π)`` by a distance
    ``r = sqrt(U)`` with ``U ~ Uniform(r_min², r_max²)``, so the masked point is uniform over
    the annulus (the donut) around the original: uniform in *area*, not in radius. This is the
    donut method of health-data geomasking (Hampton et al. 2010) as in MaskMyPy.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        Confidential points in a projected CRS (or with no CRS, distances then being in the
        coordinate units).
    r_min : float
        Smallest displacement, ``0 <= r_min < r_max``, in CRS units (metres).
    r_max : float
        Largest displacement.
    m : int, default 5
        Number of releases.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Randomness; the same seed gives the same releases.
    columns : sequence of str, optional
        Non-geometry columns to keep; default all of them.

    Returns
    -------
    list of geopandas.GeoDataFrame
        ``m`` releases with the index, row order, ``columns`` and CRS of ``gdf`` and masked
        points as geometry. Masked points may leave the study area; no grid is involved.

    Raises
    ------
    geosynth.errors.InputError
        ``gdf`` is not a GeoDataFrame of valid 2-D points (as for :func:`naive_synthesize`);
        ``r_min``/``r_max`` are not finite numbers with ``0 <= r_min < r_max``; ``r_max`` below
        1e-9 of the largest coordinate (float64 could not move the points) or beyond
        :data:`MAX_DONUT_METRES` (half the Earth's circumference, in the CRS unit); bad ``m`` or
        ``columns``; a kept column identifies records (as for :func:`naive_synthesize`) or
        repeats the x or y, longitude or latitude of the points.
    geosynth.errors.CRSError
        ``gdf`` is in a geographic CRS (degrees).
    geosynth.errors.SamplerError
        Masked points keep landing on original locations.

    Examples
    --------
    >>> import geopandas as gpd
    >>> gdf = gpd.GeoDataFrame(geometry=gpd.points_from_xy([0.0, 100.0], [0.0, 0.0]),
    ...                        crs="EPSG:31983")
    >>> (release,) = donut_mask(gdf, 50, 250, m=1, seed=1)
    >>> d = release.distance(gdf)
    >>> bool(((d >= 50) & (d <= 250)).all())
    True
    """
    rng = as_generator(seed)
    check_geodataframe(gdf)
    m = check_m(m)
    r_min, r_max = _check_radii(r_min, r_max)
    keep = _check_columns(gdf, columns)
    xy = _check_points(gdf)
    _refuse_coordinate_columns(gdf, keep, xy)
    _refuse_identifiers(gdf, keep)
    _check_resolution(r_max, xy)
    if gdf.crs is not None and gdf.crs.is_geographic:
        raise CRSError(
            f"gdf uses the geographic CRS {gdf.crs.to_string()} (degrees), where r_min and r_max "
            "have no fixed length; reproject to a projected CRS in metres with "
            "gdf.to_crs(gdf.estimate_utm_crs())"
        )
    _check_radius_span(r_max, gdf.crs)
    data = pd.DataFrame(gdf[keep]).copy()
    geometry = gdf.geometry.name

    def draw(rows: np.ndarray) -> np.ndarray:
        angle = rng.uniform(0.0, 2.0 * math.pi, rows.size)
        # r_max·√U(r_min²/r_max², 1): r_max² underflowed to 0 for r_max < 1e-162
        radius = r_max * np.sqrt(rng.uniform((r_min / r_max) ** 2, 1.0, rows.size))
        return xy[rows] + radius[:, None] * np.column_stack([np.cos(angle), np.sin(angle)])

    releases = []
    for release in range(m):
        moved = _away_from_originals(draw, xy, "donut_mask")
        info = ReleaseInfo(method="donut", release=release,
                           parameters={"r_min": r_min, "r_max": r_max})
        releases.append(make_release(data, moved, geometry, gdf.crs, info))
    return releases


# ---------------------------------------------------------------------- original points
def _away_from_originals(draw: Any, xy: np.ndarray, where: str) -> np.ndarray:
    """Points ``draw(rows)`` for every record, none at the location of an original record.

    Rows that land exactly on an original point (float64 cannot tell them apart where the
    coordinates are large for the cell size or radius) are drawn again. The redraw changes
    the law only on a set of measure zero; with the same seed the result is the same.

    Parameters
    ----------
    draw : callable
        ``draw(rows)`` returns the points (len(rows), 2) of the records ``rows`` (int64 array).
    xy : numpy.ndarray of float64, shape (n, 2)
        The original points.
    where : str
        The calling function, for the error.

    Returns
    -------
    numpy.ndarray of float64, shape (n, 2)

    Raises
    ------
    geosynth.errors.SamplerError
        Some record keeps landing on original points (its cell or radius spans only a few
        float64 values).
    """
    out = draw(np.arange(xy.shape[0]))
    for redraws in range(_MAX_REDRAWS + 1):
        again = np.flatnonzero(at_locations(out, xy))
        if again.size == 0:
            return out
        if redraws < _MAX_REDRAWS:
            out[again] = draw(again)
    raise SamplerError(
        f"{where} kept drawing {again.size} point(s) exactly on original records' locations "
        f"after {_MAX_REDRAWS} draws: at these coordinates float64 holds only a few values "
        "within a cell (or radius); use larger cells (or radii), or coordinates with a nearer "
        "origin (a projected CRS in metres)"
    )


# ---------------------------------------------------------------------- validation
def _cells_of(gdf: gpd.GeoDataFrame, grid: Grid, xy: np.ndarray) -> np.ndarray:
    """Cell of every point, refusing points in no cell."""
    cells = grid.locate(xy)
    outside = cells < 0
    if outside.any():
        raise InputError(
            f"{int(outside.sum())} of {len(gdf)} points fall in no grid cell (outside the lattice "
            f"or region, or inside an excluded area): {describe_rows(gdf.index, outside)}; drop "
            "them (e.g. gdf[grid.locate(gdf.geometry) >= 0]) or build a grid that covers them"
        )
    return cells


def _check_points(gdf: gpd.GeoDataFrame) -> np.ndarray:
    """Coordinates (n, 2) of at least one 2-D point per record (:func:`point_coordinates`)."""
    if len(gdf) == 0:
        raise InputError("gdf has no rows; a baseline needs at least one record")
    xy = point_coordinates(gdf, "gdf")
    refuse_z(gdf, "gdf", "the baselines move 2-D points")
    return xy


def _refuse_coordinate_columns(gdf: gpd.GeoDataFrame, keep: list, xy: np.ndarray) -> None:
    """Refuse a kept column that repeats a coordinate of the original points.

    The release would publish the original location next to the synthetic one. Refused: a
    column whose every present value agrees to 1e-6 of it (float32 copies, and metres rounded
    at the scale of a UTM easting, agree to that) with the x or y of the points (``easting``),
    or, for a projected CRS, to 1e-6 or 1e-5 degrees (about a metre) with their longitude or
    latitude (the ``lon``/``lat`` of a CSV whose points were projected, :func:`_degrees`).
    """
    numeric = _numeric_columns(gdf, keep)
    if not numeric:
        return
    references = [("x", xy[:, 0], 0.0), ("y", xy[:, 1], 0.0)]
    if any(np.abs(v[~np.isnan(v)]).max() <= 180.0 for _, v in numeric):
        references += _degrees(gdf.crs, xy)
    for column, v in numeric:
        present = ~np.isnan(v)
        copies = [label for label, coordinate, atol in references
                  if np.allclose(v[present], coordinate[present], rtol=_COORDINATE_RTOL,
                                 atol=atol)]
        lines = [label for label, coordinate, _ in references[:2]
                 if _mostly_affine(v[present], coordinate[present])]
        if copies or lines:
            raise InputError(
                f"column {column!r} of gdf holds the {(copies or lines)[0]} coordinate of the "
                "original points (or a linear function of it, in other units or offset, for "
                "most records): the release would publish every record's true location next "
                "to its synthetic one; drop it, or leave it out of columns="
            )


def _mostly_affine(values: np.ndarray, coordinate: np.ndarray) -> bool:
    """Whether most ``values`` are ``a·coordinate + b`` to within a few metres of it.

    A copy of the easting in kilometres (``x / 1000`` to 3 decimals), the northing in feet
    with an offset, or the easting with one record changed, passed the copy check (every
    value equal to the coordinate) and came out beside the synthetic points. ``a`` is the
    median slope between records half the sorted coordinates apart and ``b`` the median
    offset, so a few changed records do not move them; the column is refused when at least
    :data:`_AFFINE_SHARE` of the records lie within :data:`_COORDINATE_METRES` (or
    :data:`_EXTENT_SHARE` of the coordinates' extent, if less) of the line, in coordinate
    units, and at least :data:`_AFFINE_MIN_RECORDS` of them. A column that merely follows the
    coordinate with scatter of tens of metres or more is kept.
    """
    if values.size < _AFFINE_MIN_RECORDS:
        return False
    order = np.argsort(coordinate, kind="stable")
    half = values.size // 2
    run = coordinate[order[half:]] - coordinate[order[:values.size - half]]
    rise = values[order[half:]] - values[order[:values.size - half]]
    apart = run > 0
    if not apart.any():
        return False
    slope = float(np.median(rise[apart] / run[apart]))
    if not np.isfinite(slope) or slope == 0.0:
        return False
    offset = float(np.median(values - slope * coordinate))
    extent = float(coordinate.max() - coordinate.min())
    tolerance = min(_COORDINATE_METRES, _EXTENT_SHARE * extent)
    with np.errstate(over="ignore", invalid="ignore"):
        off_line = np.abs(values - slope * coordinate - offset) / abs(slope)
    on_line = off_line <= tolerance
    return bool(on_line.mean() >= _AFFINE_SHARE and on_line.sum() >= _AFFINE_MIN_RECORDS)


def _numeric_columns(gdf: gpd.GeoDataFrame, keep: list) -> list[tuple[Any, np.ndarray]]:
    """``(column, float64 values)`` of the kept columns that hold numbers, one per reading.

    Real-valued columns as they are; a text, object or categorical column in every reading
    of :func:`_readings` under which most of its present values are numbers (the others NaN):
    the easting as text ("300261.61", "300,261.61", "300.261,61", "300261.61 m"), as
    ``Decimal`` objects or as a categorical came out beside the synthetic point.
    """
    numeric = []
    for column in keep:
        series = gdf[column]
        dtype = series.dtype
        if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_object_dtype(dtype) or \
                pd.api.types.is_string_dtype(dtype):
            numeric += [(column, v) for v in _readings(series.to_numpy(dtype=object))
                        if np.isfinite(v).sum() >= 0.5 * series.notna().sum() > 0]
            continue
        if not pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(
            dtype
        ) or pd.api.types.is_complex_dtype(dtype):
            continue
        v = series.to_numpy(dtype=np.float64, na_value=np.nan)
        if not np.isnan(v).all():
            numeric.append((column, v))
    return numeric


#: A space or apostrophe between digit groups ("300 261,61", "300'261.61"): removed for a
#: second reading of a text, as :func:`~geosynth._points.text_numbers` splits numbers at spaces.
_GROUP_SEPARATOR = re.compile(r"(?<=\d)[' \u00a0\u202f](?=\d{3}(?!\d))")
#: The numbers of one value tried as a coordinate, by position ("POINT (x y)": x, y).
_POSITIONS = 3


def _readings(objects: np.ndarray) -> list[np.ndarray]:
    """Read objects as numbers, every way a coordinate may hide in them.

    Numbers (``Decimal``, ``Fraction``, NumPy scalars) as they are; a text by each of its
    first :data:`_POSITIONS` numbers in each reading of
    :func:`~geosynth._points.text_numbers` ("POINT (x y)", "x=…", "300,261.61", a decimal
    comma, a unit after it), with spaces between digit groups as thousands separators too;
    bytes as text; a tuple, list, array or point by its first numbers. Anything else is NaN.
    One array per (position, reading), without repeats.
    """
    readings: dict[tuple[int, int], np.ndarray] = {}
    for k, value in enumerate(objects):
        for key, number in _value_numbers(value):
            readings.setdefault(key, np.full(objects.size, np.nan))[k] = number
    kept: list[np.ndarray] = []
    for values in readings.values():
        if not any(np.array_equal(values, other, equal_nan=True) for other in kept):
            kept.append(values)
    return kept


def _value_numbers(value: Any) -> list[tuple[tuple[int, int], float]]:
    """Return the ``((position, reading), number)`` pairs of one object (:func:`_readings`)."""
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("latin-1")
    if isinstance(value, numbers.Number) and not isinstance(value, bool | np.bool_):
        with contextlib.suppress(TypeError, ValueError, OverflowError):  # complex: none
            return [((0, 0), float(value))]  # a Decimal is a Number, not a Real
        return []
    if isinstance(value, str):
        texts = dict.fromkeys([value, _GROUP_SEPARATOR.sub("", value)])
        found = [found for text in texts for found in text_numbers(text)]
        return [((position, reading), number) for reading, numbers_read in enumerate(found)
                for position, number in enumerate(numbers_read[:_POSITIONS])]
    pairs = []
    for position, part in enumerate(_sequence_parts(value)[:_POSITIONS]):
        pairs += [((position, key[1]), number) for key, number in _value_numbers(part)
                  if key[0] == 0]
    return pairs


def _sequence_parts(value: Any) -> list[Any]:
    """Return the elements of a tuple, list or array, or a point's coordinates; else none."""
    if isinstance(value, tuple | list | np.ndarray):
        return list(np.ravel(np.asarray(value, dtype=object)))
    coords = getattr(value, "coords", None)
    if coords is not None:
        with contextlib.suppress(Exception):  # an empty or odd geometry: none
            return list(coords[0])
    return []


def _degrees(crs: Any, xy: np.ndarray) -> list[tuple[str, np.ndarray, float]]:
    """Longitude and latitude of projected points, in WGS 84 and in the CRS's own datum.

    Records read from a CSV of ``lon``/``lat`` and projected (``gdf.to_crs``) carry those
    columns along; both datums are tried because the CSV's is usually WGS 84 and the shift to
    another datum can exceed a metre. Empty for no CRS or a geographic one (its x and y are
    the degrees) and for a CRS that cannot be transformed.
    """
    if crs is None or not crs.is_projected:
        return []
    targets = [pyproj.CRS.from_epsg(4326)]
    if crs.geodetic_crs is not None and not crs.geodetic_crs.equals(targets[0]):
        targets.append(crs.geodetic_crs)
    references = []
    for target in targets:
        try:
            transformer = pyproj.Transformer.from_crs(crs, target, always_xy=True)
            lon, lat = transformer.transform(xy[:, 0], xy[:, 1])
        except pyproj.exceptions.ProjError:
            continue
        references += [("longitude", np.asarray(lon, dtype=np.float64), _DEGREE_ATOL),
                       ("latitude", np.asarray(lat, dtype=np.float64), _DEGREE_ATOL)]
    return references


def _check_columns(gdf: gpd.GeoDataFrame, columns: Sequence[str] | None) -> list:
    check_unique_columns(gdf, "gdf")
    available = [c for c in plain_columns(gdf) if c != gdf.geometry.name]
    if columns is None:
        return available
    if isinstance(columns, str):
        chosen = [columns]
    elif is_sequence(columns):  # a 0-d array raised "iteration over a 0-d array"
        chosen = list(columns)
    else:
        raise InputTypeError(
            f"columns must be a list of column names of gdf, got {type(columns).__name__}; "
            f"e.g. columns={available[:2]}"
        )
    missing = [c for c in chosen if not _is_available(c, available)]
    if missing:
        raise InputError(
            f"columns {missing} are not non-geometry columns of gdf; available: {available}"
        )
    if len(set(chosen)) != len(chosen):
        raise InputError(f"columns lists a column more than once: {chosen}")
    return chosen


def _refuse_identifiers(gdf: gpd.GeoDataFrame, keep: list) -> None:
    """Refuse a kept column whose values (or name, with its levels) identify records.

    Numbers as :func:`geosynth.data.describe_identifier` judges them, other columns by
    :func:`geosynth.data.identifying_levels`: the rules of :func:`geosynth.sdc.neighbour_resample`
    and :func:`geosynth.prepare`. A ``patient_id`` was kept silently, each synthetic point
    carrying its record's ID.
    """
    for column in keep:
        values = gdf[column]
        numeric = (pd.api.types.is_numeric_dtype(values.dtype)
                   and not pd.api.types.is_bool_dtype(values.dtype))
        if numeric:
            found = describe_identifier(values, column)
            described = None if found is None else found[1]
        else:
            described = identifying_levels(values, column)
        if described is not None:
            others = [c for c in keep if c != column]
            raise InputError(
                f"column {column!r} of gdf has {described}: an identifier, which each synthetic "
                f"point would carry from its record; leave it out: columns={others!r}"
            )


def _is_available(column: Any, available: list) -> bool:
    """Whether ``column`` names one of ``available`` (False for an unhashable entry)."""
    try:
        return column in available
    except (TypeError, ValueError):  # e.g. an array, whose == gives no single truth value
        return False


def _check_radii(r_min: Any, r_max: Any) -> tuple[float, float]:
    numbers_ = []
    for name, value in (("r_min", r_min), ("r_max", r_max)):
        try:
            number = check_real(value, name)  # an int beyond the float range gives inf
        except TypeError:
            number = math.nan
        if not math.isfinite(number):
            shown = repr(value) if len(repr(value)) <= 60 else f"{type(value).__name__} of " \
                f"{len(repr(value))} characters"
            raise InputError(f"{name} must be a finite number (CRS units), got {shown}")
        numbers_.append(number)
    r_min, r_max = numbers_
    if not 0 <= r_min < r_max:
        raise InputError(
            f"donut radii must satisfy 0 <= r_min < r_max, got r_min={r_min!r}, "
            f"r_max={r_max!r}; r_min is the smallest displacement, r_max the largest"
        )
    return float(r_min), float(r_max)


def _check_radius_span(r_max: float, crs: Any) -> None:
    """Refuse an ``r_max`` beyond :data:`MAX_DONUT_METRES` (in the CRS's linear unit).

    ``r_max=2**63`` put masked points at ±8.5e18 m, silently. Without a CRS the coordinate
    unit is taken as the metre.
    """
    limit = MAX_DONUT_METRES / metres_per_unit(crs)
    if r_max > limit:
        unit = "CRS units" if crs is None else f"CRS units ({crs.axis_info[0].unit_name})"
        raise InputError(
            f"r_max={r_max:g} is beyond {limit:g} {unit} ({MAX_DONUT_METRES:g} m, half the "
            "Earth's circumference: no two places are farther apart); give the displacement in "
            "the CRS units, e.g. r_min=50, r_max=250 metres"
        )


def _check_resolution(r_max: float, xy: np.ndarray) -> None:
    """Refuse an ``r_max`` too small to move the points in float64 (they would stay put).

    The message gives the largest coordinate's order of magnitude only: to six digits it was
    the extreme x or y of a confidential record.
    """
    largest = float(np.abs(xy).max()) if xy.size else 0.0
    if r_max < _MIN_RELATIVE_RADIUS * largest:
        magnitude = 10.0 ** math.floor(math.log10(largest))
        raise InputError(
            f"r_max={r_max!r} is below {_MIN_RELATIVE_RADIUS:g} times the largest absolute "
            f"coordinate of gdf (of the order of {magnitude:.0e}): at that size float64 cannot "
            "move the points reliably, and some would be released at their original location; "
            "give r_min and r_max in the CRS units (metres), e.g. r_min=50, r_max=250"
        )


#: The largest donut radius, in metres: half the Earth's circumference (20,004 km), farther
#: than any two places on Earth; geomasking moves points by tens to thousands of metres
#: (Hampton et al. 2010). Beyond it (r_max=2**63 put points at ±8.5e18 m) r_max is a mistake.
MAX_DONUT_METRES = 2.0e7
#: Most rounds of redrawing points that land on an original location (each round redraws only
#: those; one is rare, a second rarer still unless float64 holds few values in a cell).
_MAX_REDRAWS = 100
#: Relative agreement with a coordinate that makes a kept column a copy of it.
_COORDINATE_RTOL = 1e-6
#: A kept column on a line ``a·x + b`` (or y) to within this many coordinate units (metres in
#: a projected CRS) for :data:`_AFFINE_SHARE` of the records gives their location away
#: (:func:`_mostly_affine`); never more than :data:`_EXTENT_SHARE` of the points' extent.
_COORDINATE_METRES = 10.0
_EXTENT_SHARE = 1e-2
_AFFINE_SHARE = 0.5
#: ... and at least this many of them: a line through two of three to six values of an
#: honest column (an age present for 4 records of 1,000) took "most" of them 1-4 % of the time.
_AFFINE_MIN_RECORDS = 10
#: Absolute agreement (degrees, about 1.1 m) with a longitude or latitude that does too: near
#: the equator or the prime meridian 1e-6 of the value missed a lat/lon rounded to 5 decimals.
_DEGREE_ATOL = 1e-5
#: The smallest r_max relative to the coordinates: float64 resolves 2.2e-16 of a coordinate,
#: so a displacement 1e-9 of it keeps seven digits of its size.
_MIN_RELATIVE_RADIUS = 1e-9
