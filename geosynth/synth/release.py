"""Releases: the GeoDataFrames the synthesizers return, and their public form.

A *release* returned by :func:`~geosynth.synth.synthesize`, :func:`~geosynth.synth.naive_synthesize`
or :func:`~geosynth.synth.donut_mask` keeps the index of the confidential input, so that evaluation
code (disclosure risk, utility) can pair each synthetic record with its original in memory. That
index, and the row order, are themselves information about the confidential file: anything that
leaves the analyst's machine goes through :func:`to_public` first.

Markers in ``GeoDataFrame.attrs`` (pandas carries them through selections, copies and
re-orderings) let :func:`geosynth.io.write_release` tell the two forms apart even when the
confidential input had a default ``0 .. n-1`` index, so that the internal index looks like a
fresh one:

* :data:`LINKED_ATTR` -- set by the synthesizers whose row ``k`` is made from confidential record
  ``k`` (``synthesize``, ``naive_synthesize``, ``donut_mask``); such a frame is never written.
* :data:`PUBLIC_ATTR` -- set by :func:`to_public` (shuffled rows, fresh index).
"""

from __future__ import annotations

from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

from geosynth._random import SeedLike, as_generator
from geosynth.errors import InputError

__all__ = [
    "to_public",
    "is_linked",
    "is_public",
    "INTERNAL_PREFIX",
    "LINKED_ATTR",
    "PUBLIC_ATTR",
    "UNLINKED_METHODS",
]

#: Columns whose name starts with this prefix are bookkeeping (e.g. pandas' ``_merge``) and are
#: dropped by :func:`to_public`.
INTERNAL_PREFIX = "_"
#: ``attrs`` key (value True) of a release whose rows are aligned with the confidential input:
#: row ``k`` was made from confidential record ``k`` (the internal output of the synthesizers).
LINKED_ATTR = "geosynth_linked"
#: ``attrs`` key (value True) of the output of :func:`to_public`: rows shuffled, fresh index.
PUBLIC_ATTR = "geosynth_public"
#: Methods of :func:`make_release` whose records are drawn from noisy counts, not one per
#: confidential record (ε-DP locations, OnTheMap): their rows are not aligned with the input.
UNLINKED_METHODS = frozenset({"paiva-dp", "onthemap"})


def to_public(release: gpd.GeoDataFrame, seed: SeedLike = None) -> gpd.GeoDataFrame:
    """Return the form of a release that may be published.

    Parameters
    ----------
    release : geopandas.GeoDataFrame
        One release from :func:`~geosynth.synth.synthesize` (or a baseline).
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Randomness of the row shuffle; the same seed gives the same order.

    Returns
    -------
    geopandas.GeoDataFrame
        The rows in a random order with a fresh ``RangeIndex`` (the input order and index labels
        could link synthetic records to confidential ones), the active geometry, and the other
        columns except geometry columns other than the active one and internal columns (names
        starting with ``"_"``). ``attrs`` metadata is dropped, except the marker
        ``attrs[PUBLIC_ATTR] = True`` by which :func:`geosynth.io.write_release` knows the rows
        were shuffled. CRS and column order are kept.

    Raises
    ------
    geosynth.errors.InputError
        ``release`` is not a GeoDataFrame with an active geometry column.

    Examples
    --------
    >>> import geopandas as gpd
    >>> release = gpd.GeoDataFrame(
    ...     {"y": [1, 0]}, geometry=gpd.points_from_xy([0.5, 1.5], [0.5, 0.5]), index=[17, 3]
    ... )
    >>> public = to_public(release, seed=1)
    >>> public.index.tolist(), sorted(public["y"].tolist())
    ([0, 1], [0, 1])
    """
    check_geodataframe(release, "release")
    rng = as_generator(seed)
    geometry = release.geometry.name
    keep = [
        c
        for c in release.columns
        if c == geometry
        or not (
            isinstance(release[c].dtype, gpd.array.GeometryDtype)
            or (isinstance(c, str) and c.startswith(INTERNAL_PREFIX))
        )
    ]
    order = rng.permutation(len(release))
    public = release[keep].iloc[order].reset_index(drop=True)
    public = gpd.GeoDataFrame(public, geometry=geometry, crs=release.crs)
    public.attrs = {PUBLIC_ATTR: True}
    return public


def is_linked(frame: Any) -> bool:
    """Whether ``frame`` is marked as the internal, row-aligned output of a synthesizer.

    Parameters
    ----------
    frame : Any
        A release (anything without ``attrs`` is not marked).

    Returns
    -------
    bool
        True if ``frame.attrs[LINKED_ATTR]`` is set and ``frame`` is not the output of
        :func:`to_public`: its row ``k`` (and index label) belongs to confidential record ``k``.
    """
    attrs = getattr(frame, "attrs", None)
    return isinstance(attrs, dict) and bool(attrs.get(LINKED_ATTR)) and not is_public(frame)


def is_public(frame: Any) -> bool:
    """Whether ``frame`` is marked as the output of :func:`to_public` (shuffled, fresh index).

    Parameters
    ----------
    frame : Any
        A release.

    Returns
    -------
    bool
        True if ``frame.attrs[PUBLIC_ATTR]`` is set.
    """
    attrs = getattr(frame, "attrs", None)
    return isinstance(attrs, dict) and bool(attrs.get(PUBLIC_ATTR))


# ---------------------------------------------------------------------- shared helpers
def check_geodataframe(gdf: Any, name: str = "gdf") -> None:
    """Raise InputError unless ``gdf`` is a GeoDataFrame with an active geometry column."""
    if not isinstance(gdf, gpd.GeoDataFrame):
        raise InputError(
            f"{name} must be a geopandas.GeoDataFrame, got {type(gdf).__module__}."
            f"{type(gdf).__name__}; build one with geopandas.GeoDataFrame(df, geometry=...)"
        )
    try:
        _ = gdf.geometry.name
    except AttributeError as err:
        raise InputError(
            f"{name} has no active geometry column; set one with {name}.set_geometry(column)"
        ) from err


def make_release(
    data: pd.DataFrame,
    xy: np.ndarray,
    geometry: str,
    crs: Any,
    method: str,
    release: int,
    *,
    linked: bool | None = None,
    **attrs: Any,
) -> gpd.GeoDataFrame:
    """GeoDataFrame of the non-geometry columns ``data`` with synthetic points ``xy``.

    ``attrs`` (plus ``method`` and ``release``) go to ``GeoDataFrame.attrs["geosynth"]``.
    ``linked`` says whether row ``k`` was made from confidential record ``k`` (default: True
    unless ``method`` is one of :data:`UNLINKED_METHODS`); a linked release carries
    ``attrs[LINKED_ATTR] = True`` and is refused by :func:`geosynth.io.write_release`.
    """
    frame = data.copy()
    frame[geometry] = gpd.points_from_xy(xy[:, 0], xy[:, 1])
    out = gpd.GeoDataFrame(frame, geometry=geometry, crs=crs)
    out.attrs = {"geosynth": {"method": method, "release": release, **attrs}}
    if linked is None:
        linked = method not in UNLINKED_METHODS
    if linked:
        out.attrs[LINKED_ATTR] = True
    return out


def plain_columns(gdf: gpd.GeoDataFrame) -> list:
    """Columns of ``gdf`` that are not geometry columns."""
    return [c for c in gdf.columns if not isinstance(gdf[c].dtype, gpd.array.GeometryDtype)]
