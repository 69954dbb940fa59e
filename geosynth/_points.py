"""Validated coordinates of point geometries, shared by every public entry point."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import shapely

from geosynth._messages import describe_rows
from geosynth.errors import InputError

__all__ = ["at_locations", "point_coordinates", "refuse_z", "usable_points"]


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
