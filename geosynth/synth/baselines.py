"""Baseline releases to compare the Paiva et al. (2014) synthesizer with.

* :func:`naive_synthesize` -- the "Naive" method of Nunes (2018, §3.2): every record gets a point
  drawn uniformly inside its *own* cell (its habitable geometry), with no model.
* :func:`donut_mask` -- donut geomasking, the standard used by health agencies (Hampton et al.
  2010; MaskMyPy's ``Donut``): each point is displaced in a uniformly random direction by a
  distance between ``r_min`` and ``r_max``, uniform in *area* over the annulus.

Both keep every non-geometry column of the input (a baseline moves locations only) and the input
index; publish them through :func:`geosynth.synth.to_public` like any release. Drop columns that
identify records or hold original coordinates before calling them, or pass ``columns``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

from geosynth._messages import describe_rows
from geosynth._points import point_coordinates
from geosynth._random import SeedLike, as_generator
from geosynth._validation import check_m
from geosynth.data import check_crs
from geosynth.errors import CRSError, InputError
from geosynth.lattice import Grid
from geosynth.synth.placement import PixelTable, WeightsLike, check_grid, place
from geosynth.synth.release import ReleaseInfo, check_geodataframe, make_release, plain_columns

__all__ = ["naive_synthesize", "donut_mask"]


def naive_synthesize(
    gdf: gpd.GeoDataFrame,
    grid: Grid,
    m: int = 5,
    seed: SeedLike = None,
    weights: WeightsLike = None,
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
    weights : str, os.PathLike or rasterio dataset, optional
        Raster of non-negative weights in the grid CRS to place points within the cell in
        proportion to (see :func:`geosynth.synth.place_in_cells`); default uniform.
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
        ``gdf`` is not a GeoDataFrame of valid points; ``grid`` is not a Grid; points lie in no
        cell (as in :func:`geosynth.prepare`: outside the lattice or region, or inside an
        excluded area); bad ``m``, ``columns`` or ``weights``.
    geosynth.errors.CRSError
        ``gdf`` (or ``weights``) is not in the grid CRS, or ``gdf`` is in degrees.

    Notes
    -----
    The cell of every record is public in a naive release (the synthetic point lies in it), so
    the cell-level risk measures of Paiva et al. (2014) do not apply; Nunes (2018, §3.3) compares
    distances to the nearest original point instead.
    """
    rng = as_generator(seed)
    check_geodataframe(gdf)
    check_grid(grid)
    m = check_m(m)
    keep = _check_columns(gdf, columns)
    xy = point_coordinates(gdf, "gdf")
    check_crs(gdf, grid)
    cells = grid.locate(xy)
    outside = cells < 0
    if outside.any():
        raise InputError(
            f"{int(outside.sum())} of {len(gdf)} points fall in no grid cell (outside the lattice "
            f"or region, or inside an excluded area): {describe_rows(gdf.index, outside)}; drop "
            "them (e.g. gdf[grid.locate(gdf.geometry) >= 0]) or build a grid that covers them"
        )
    table = None if weights is None else PixelTable.from_raster(weights, grid)
    data = pd.DataFrame(gdf[keep]).copy()
    geometry = gdf.geometry.name
    return [
        make_release(
            data,
            place(grid, cells, rng, table),
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
        ``gdf`` is not a GeoDataFrame of valid points; ``r_min``/``r_max`` are not finite numbers
        with ``0 <= r_min < r_max``; ``r_max`` below 1e-9 of the largest coordinate (float64
        could not move the points); bad ``m`` or ``columns``.
    geosynth.errors.CRSError
        ``gdf`` is in a geographic CRS (degrees).

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
    xy = point_coordinates(gdf, "gdf")
    _check_resolution(r_max, xy)
    if gdf.crs is not None and gdf.crs.is_geographic:
        raise CRSError(
            f"gdf uses the geographic CRS {gdf.crs.to_string()} (degrees), where r_min and r_max "
            "have no fixed length; reproject to a projected CRS in metres with "
            "gdf.to_crs(gdf.estimate_utm_crs())"
        )
    data = pd.DataFrame(gdf[keep]).copy()
    geometry = gdf.geometry.name
    n = len(gdf)
    releases = []
    for release in range(m):
        angle = rng.uniform(0.0, 2.0 * math.pi, n)
        # r_max·√U(r_min²/r_max², 1): r_max² underflowed to 0 for r_max < 1e-162
        radius = r_max * np.sqrt(rng.uniform((r_min / r_max) ** 2, 1.0, n))
        moved = xy + radius[:, None] * np.column_stack([np.cos(angle), np.sin(angle)])
        info = ReleaseInfo(method="donut", release=release,
                           parameters={"r_min": r_min, "r_max": r_max})
        releases.append(make_release(data, moved, geometry, gdf.crs, info))
    return releases


# ---------------------------------------------------------------------- validation
def _check_columns(gdf: gpd.GeoDataFrame, columns: Sequence[str] | None) -> list:
    available = [c for c in plain_columns(gdf) if c != gdf.geometry.name]
    if columns is None:
        return available
    chosen = [columns] if isinstance(columns, str) else list(columns)
    missing = [c for c in chosen if c not in available]
    if missing:
        raise InputError(
            f"columns {missing} are not non-geometry columns of gdf; available: {available}"
        )
    if len(set(chosen)) != len(chosen):
        raise InputError(f"columns lists a column more than once: {chosen}")
    return chosen


def _check_radii(r_min: Any, r_max: Any) -> tuple[float, float]:
    for name, value in (("r_min", r_min), ("r_max", r_max)):
        if (
            isinstance(value, bool)
            or not isinstance(value, numbers.Real)
            or not math.isfinite(value)
        ):
            raise InputError(f"{name} must be a finite number (CRS units), got {value!r}")
    if not 0 <= r_min < r_max:
        raise InputError(
            f"donut radii must satisfy 0 <= r_min < r_max, got r_min={r_min!r}, "
            f"r_max={r_max!r}; r_min is the smallest displacement, r_max the largest"
        )
    if r_max > _MAX_RADIUS:  # r² overflows; no map is that large anyway
        raise InputError(f"r_max={r_max!r} is beyond {_MAX_RADIUS:g} CRS units (the radii are "
                         "squared); give the displacement in metres of a projected CRS")
    return float(r_min), float(r_max)


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


#: The largest donut radius: r² stays finite with room, and it is 10⁸⁶ times Earth's size.
_MAX_RADIUS = 1e100
#: The smallest r_max relative to the coordinates: float64 resolves 2.2e-16 of a coordinate,
#: so a displacement 1e-9 of it keeps seven digits of its size.
_MIN_RELATIVE_RADIUS = 1e-9
