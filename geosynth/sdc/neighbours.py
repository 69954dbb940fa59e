"""Neighbourhood resampling of Matloff & Tendick: release each value from a nearby record.

:func:`neighbour_resample` implements the statistical disclosure limitation method of Matloff &
Tendick ("A Method for Avoiding Data Disclosure While Automatically Preserving Multivariate
Relations", undated manuscript, §2 and §4) as their R function ``nbrs(z, eps, modprop, wts)``
(``Neighbors.R`` in github.com/matloff/statdb) does it: every variable is scaled to mean 0
and standard deviation 1 (R's ``scale``: sample SD, ``ddof=1``) and multiplied by its weight; the
neighbours of record ``i`` are the *other* original records at Euclidean distance strictly less
than ``eps`` from it in that space; and each selected record gets every variable from a neighbour
drawn uniformly and independently per variable (sampling with replacement). As ``eps`` shrinks
the released joint distribution tends to the original one (the paper's theorem, §3), although
the variables of one released record are drawn independently.

Every released value is a real value of some other record. With ``k`` neighbours and ``V``
variables all ``V`` come from the same neighbour with probability ``k**(1 - V)`` (more when
some neighbours are identical records): the record is then released as an exact copy of that
other record in every resampled variable (with ``include_coordinates``, location included). A
:class:`~geosynth.errors.PrivacyLeakWarning` gives the count
(:attr:`NeighbourResampleInfo.n_whole_copies`); larger ``eps`` or ``min_neighbours`` make it
rarer.

Where we differ from the R code
-------------------------------
* Categorical variables (object, string, category and bool columns, and any listed in
  ``categorical=``) enter the distance as full one-hot dummies, each scaled like a numeric
  variable and multiplied by the variable's weight, exactly as R's ``nbrs`` would treat dummies
  coded by hand. But the *value* of a categorical variable is drawn whole from one neighbour, so
  a released record always holds exactly one level; in R two dummies of one factor are drawn from
  different neighbours and can both come out 1 (or all 0).
* Records are selected either as the paper states (each with probability ``modprop``,
  ``selection="bernoulli"``) or as the R code does (a simple random sample of
  ``floor(n * modprop)`` records, ``selection="exact"``).
* A selected record is resampled only when it has at least ``min_neighbours`` (default 2)
  *distinct* neighbours: neighbours identical to each other in every variable count once (its
  own twins, identical to it, count once too). In the paper and in R a record with a single
  neighbour takes every variable from it, so it is released as an exact copy of another record
  (a certain disclosure, location included with coordinates); so does a record whose neighbours
  are all copies of one record, and a record whose only neighbours are its own twins is
  released with its own values. Here such records are handled like records without
  neighbours. ``min_neighbours=1`` gives the paper's method.
* A selected record with fewer than ``min_neighbours`` distinct neighbours is either released
  unchanged (``no_neighbours="keep"``) or dropped (``"suppress"``); R sets one without
  neighbours to ``NA``. Both warn with the count.
* Records released as an exact copy of another record (every variable drawn from the same
  neighbour) are counted, with a warning; R does not report them.
* A constant variable (SD 0) contributes nothing to the distance; R's ``scale`` would make it NaN.
* A categorical column that identifies records (the rules of :func:`geosynth.prepare`: nearly
  one level per record, many records alone in their level, or every record alone) is refused:
  its records have no neighbour, so every one of them would be released unchanged, ID included.
  So is an integer column whose values are nearly all distinct (over 90 %), or that is named
  like an ID by the same rules (``patient_id``): resampled as a number it would release real
  IDs, each a neighbour's. Integers that repeat (age in years, counts) pass, however many
  levels they have. A float column of whole numbers that are all distinct is refused too (an
  ID stored as floats, e.g. read from a CSV with a blank cell); other float columns are not
  checked.
* ``weights`` maps column names to factors (R: ``wts = c(columns, factors)``).
* Neighbours are found with :class:`scipy.spatial.cKDTree`, not an ``n x n`` distance matrix.
  Records with identical values (after scaling) are collapsed to one point carrying their
  multiplicity, and records are split into blocks by their combination of categorical levels
  (within a block the categorical part of the distance is 0, between two blocks it is a
  constant), so the trees only hold the numeric variables. Every candidate pair is then checked
  against the strict bound ``d^2 < eps^2`` with one formula, whichever search found it.

Spatial variables
-----------------
With ``include_coordinates=True`` on a :class:`geopandas.GeoDataFrame` of points, the ``x`` and
``y`` coordinates become two more variables: they count in the distance (scaled like the others;
``weights={<geometry column>: w}`` weights both) and each is drawn from its own neighbour, so a
released point is ``(x_a, y_b)`` for two neighbours ``a`` and ``b`` of the record it replaces. It
is therefore within ``eps`` of the replaced record *along each scaled axis* and within
``sqrt(2) * eps`` in the scaled ``(x, y)`` plane. Each coordinate is a neighbour's exact
coordinate, so the released point is a real location whenever ``a`` and ``b`` are the same
record (or share a coordinate), which for a record with ``k`` neighbours happens with
probability at least ``1/k`` (one half with two neighbours). Locations are recombined, not
perturbed. Such records are counted (:attr:`NeighbourResampleInfo.n_location_copies`) and a
:class:`~geosynth.errors.PrivacyLeakWarning` gives the count.
Records that ``modprop`` does not select keep their true location; a
:class:`~geosynth.errors.PrivacyLeakWarning` gives their count.
Without it the geometry is carried over unchanged, like every column not listed in ``columns``:
such columns neither count in the distance nor are resampled, so a released record still shows
its true location next to resampled attributes; a :class:`~geosynth.errors.PrivacyLeakWarning`
names every geometry column copied unchanged (the active one without it, any other always).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from scipy import sparse
from scipy.spatial import cKDTree

from geosynth._messages import describe_rows as _rows
from geosynth._points import at_locations, refuse_z
from geosynth._random import SeedLike, as_generator
from geosynth._validation import (
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_probability,
    check_unique_columns,
    describe_value,
    is_sequence,
)
from geosynth.data import describe_identifier, identifying_levels
from geosynth.errors import (
    DataWarning,
    InputError,
    InputTypeError,
    MemoryLimitError,
    PrivacyLeakWarning,
)
from geosynth.lattice import polygon_union
from geosynth.synth.release import LINKED_ATTR, ReleaseInfo, set_release_info

__all__ = ["NeighbourResampleInfo", "neighbour_resample", "MAX_NEIGHBOUR_PAIRS",
           "MAX_PLACEMENT_DRAWS"]

#: Largest estimated number of neighbour pairs (between distinct scaled value vectors) that
#: :func:`neighbour_resample` will materialise (each costs about 50 bytes at peak). Larger
#: requests raise :class:`~geosynth.errors.MemoryLimitError` before the search; lower ``eps`` or
#: raise this deliberately.
MAX_NEIGHBOUR_PAIRS = 50_000_000
#: Rounds in which :func:`neighbour_resample` draws again the x and y of a resampled point that
#: fell outside its ``region`` (or inside ``exclude``), before it takes one neighbour's point.
MAX_PLACEMENT_DRAWS = 100

# Blocks by categorical combination are used while there are at most this many combinations and
# this many pairs of combinations within eps; otherwise one tree holds the one-hot dummies too.
_MAX_GROUPS = 2048
_MAX_CROSS_BLOCKS = 20_000
# Query radii are inflated by this factor; the strict test d^2 < eps^2 is applied afterwards.
_INFLATE = 1.0 + 1e-9
# Largest eps and weight: squared distances in the scaled space (|scaled value| <= sqrt(n), so
# (2 sqrt(n) * weight)^2 per variable) and eps^2 must stay finite, or scipy's trees overflow.
_MAX_FACTOR = 1e100
# Pairs per chunk of the exact distance check (bounds temporary memory).
_FILTER_CHUNK = 1 << 22
# Blocks whose pair count could exceed this are sampled to estimate their pair count.
_ESTIMATE_ABOVE = 1_000_000
_ESTIMATE_SAMPLE = 256


@dataclass(frozen=True, eq=False)
class NeighbourResampleInfo:
    """What :func:`neighbour_resample` did; returned with ``return_info=True``.

    Its repr shows the counts only: the per-record arrays tell which released rows are real.

    Attributes
    ----------
    n_records : int
        Number of input records.
    n_selected : int
        Number of records selected for resampling (``modprop``, ``selection``).
    n_without_neighbours : int
        Selected records with fewer than ``min_neighbours`` distinct neighbours (by default: no
        neighbour, or only copies of one record), so not resampled: released unchanged
        (``no_neighbours="keep"``) or dropped (``"suppress"``).
    n_suppressed : int
        Records dropped from the release (``n_without_neighbours`` with ``"suppress"``, else 0).
    mean_neighbours : float
        Mean number of neighbours over *all* input records, selected or not (describes
        ``eps``).
    selected : numpy.ndarray of bool, shape (n_records,)
        True for the selected records, in input row order (read-only).
    n_neighbours : numpy.ndarray of int64, shape (n_records,)
        Number of neighbours (other records within ``eps``) of every input record, in input row
        order (read-only).
    n_distinct_neighbours : numpy.ndarray of int64, shape (n_records,)
        Number of distinct neighbours of every input record: its neighbours with records
        identical in every resampled variable counted once (read-only). A selected record is
        resampled when it has at least ``min_neighbours``.
    min_neighbours : int
        The ``min_neighbours`` used.
    n_whole_copies : int
        Resampled records released equal, in every resampled variable (the location included
        with ``include_coordinates``), to an original record: another's, or their own. All
        drawn from one neighbour, or from neighbours that share values. With a single
        variable this is every resampled record.
    n_location_copies : int
        Resampled records (with ``include_coordinates``) released at the exact location of an
        original record: ``x`` and ``y`` drawn from the same record, or from records sharing a
        coordinate. 0 without ``include_coordinates``.
    """

    n_records: int
    n_selected: int
    n_without_neighbours: int
    n_suppressed: int
    mean_neighbours: float
    # Not in the repr: a printed info (a log, a notebook) would say which released rows are
    # real records, unchanged because not selected or without enough neighbours.
    selected: np.ndarray = field(repr=False)
    n_neighbours: np.ndarray = field(repr=False)
    n_distinct_neighbours: np.ndarray = field(repr=False)
    min_neighbours: int
    n_whole_copies: int
    n_location_copies: int = 0


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------



def _is_categorical_dtype(dtype: Any) -> bool:
    return (
        isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_bool_dtype(dtype)
        or pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
    )


def _is_numeric_dtype(dtype: Any) -> bool:
    return (
        pd.api.types.is_numeric_dtype(dtype)
        and not pd.api.types.is_bool_dtype(dtype)
        and not pd.api.types.is_complex_dtype(dtype)
    )


def _as_name_list(value: Any, name: str) -> list[Hashable]:
    """``value`` as a list of column names: one name, or a flat list, tuple, Index or 1-d array.

    A 0-d array raised "iteration over a 0-d array"; it, a Series and other unhashable values
    are refused by type and size only (they may hold confidential values).
    """
    if is_sequence(value):
        names = list(value)
        unhashable = [v for v in names if not isinstance(v, Hashable)]
        if unhashable:  # `in df.columns` raised "TypeError: unhashable type: 'list'"
            raise InputError(f"{name} must be a column name or a flat list of column names, got "
                             f"{unhashable[0]!r} among them; e.g. {name}=['age', 'sex']")
        return names
    if isinstance(value, Hashable):
        return [value]
    raise InputTypeError(f"{name} must be a column name or a flat list of column names, got "
                         f"{describe_value(value)}; e.g. {name}=['age', 'sex']")


def _check_factor(value: Any, name: str, *, hint: str, too_large: str) -> float:
    """Return ``eps`` or a weight as a float: finite, > 0 and at most ``_MAX_FACTOR``."""
    number = check_positive(value, name, hint=hint)
    if number > _MAX_FACTOR:
        raise InputError(
            f"{name} must be at most {_MAX_FACTOR:g} (squared distances in the scaled space must "
            f"stay finite), got {number!r}; {too_large}"
        )
    return number


def _check_scalars(
    df: Any,
    eps: Any,
    modprop: Any,
    no_neighbours: Any,
    selection: Any,
    include_coordinates: Any,
) -> None:
    if not isinstance(df, pd.DataFrame):
        raise InputError(
            f"df must be a pandas DataFrame or geopandas GeoDataFrame, got "
            f"{type(df).__module__}.{type(df).__name__}; build one with pandas.DataFrame(...)"
        )
    if len(df) == 0:
        raise InputError("df has no rows; neighbour_resample needs at least one record")
    check_unique_columns(df, "df")
    _check_factor(
        eps, "eps", hint="pass the neighbourhood radius in scaled units, e.g. eps=0.3",
        too_large="any eps above the largest distance between two records already makes every "
        "record a neighbour of every other",
    )
    check_probability(modprop, "modprop", zero=True, one=True,
                      hint="pass the proportion of records to resample, e.g. modprop=0.2")
    check_choice(no_neighbours, "no_neighbours", ("keep", "suppress"))
    check_choice(selection, "selection", ("bernoulli", "exact"))
    check_bool(include_coordinates, "include_coordinates")


def _geometry_name(df: pd.DataFrame) -> Hashable | None:
    if not isinstance(df, gpd.GeoDataFrame):
        return None
    try:
        return df.geometry.name
    except AttributeError:  # GeoDataFrame without an active geometry column
        return None


def _check_columns(
    df: pd.DataFrame,
    columns: Any,
    categorical: Any,
    include_coordinates: bool,
    geometry_name: Hashable | None,
) -> tuple[list[Hashable], set[Hashable]]:
    """Return the variable columns and the subset treated as categorical."""
    if include_coordinates and geometry_name is None:
        raise InputError(
            "include_coordinates=True needs a geopandas GeoDataFrame with an active point "
            "geometry column; build one with geopandas.GeoDataFrame(df, geometry=...)"
        )
    available = [c for c in df.columns if c != geometry_name]
    if columns is None:
        cols = available
    else:
        cols = _as_name_list(columns, "columns")
        duplicated = sorted({str(c) for c in cols if cols.count(c) > 1})
        if duplicated:
            raise InputError(f"columns lists {duplicated} more than once; name each column once")
        for c in cols:
            if geometry_name is not None and c == geometry_name:
                raise InputError(
                    f"columns lists the geometry column {c!r}; resample point coordinates with "
                    "include_coordinates=True instead"
                )
            if c not in df.columns:
                raise InputError(f"column {c!r} is not in df; available columns: {available}")
    if not cols and not include_coordinates:
        raise InputError(
            "no variables to resample: df has no columns besides the geometry; name columns= "
            "or pass include_coordinates=True"
        )
    explicit = [] if categorical is None else _as_name_list(categorical, "categorical")
    for c in explicit:
        if c not in cols:
            raise InputError(
                f"categorical column {c!r} is not among the resampled columns {cols}; add it to "
                "columns= or drop it from categorical="
            )
    cats = set(explicit)
    for c in cols:
        dtype = df[c].dtype
        if _is_categorical_dtype(dtype):
            cats.add(c)
        elif c not in cats and not _is_numeric_dtype(dtype):
            raise InputError(
                f"column {c!r} has dtype {dtype}, which is neither numeric nor categorical; "
                f"convert it (e.g. df[{c!r}].astype('category')) or leave it out of columns="
            )
    for c in cols:  # first: a NaN among distinct whole numbers was counted as one more value
        bad = df[c].isna().to_numpy(dtype=bool)
        if bad.any():
            raise InputError(
                f"column {c!r} has {int(bad.sum())} missing (NaN) values "
                f"({_rows(df.index, bad)}); drop those rows, e.g. df.dropna(subset=[{c!r}]), "
                "or fill them"
            )
    for c in cols:
        _check_not_identifying(df[c], c, c in cats)
        if c not in cats:
            values = df[c].to_numpy(dtype=np.float64)
            bad = ~np.isfinite(values)
            if bad.any():
                raise InputError(
                    f"column {c!r} has {int(bad.sum())} infinite values "
                    f"({_rows(df.index, bad)}); drop or replace them"
                )
    return cols, cats


def _check_not_identifying(values: pd.Series, name: Hashable, categorical: bool) -> None:
    """Refuse a categorical or integer column whose values identify records (an ID).

    Categorical columns by the rules of :func:`geosynth.data.identifying_levels` (their
    levels, and their name as :func:`geosynth.prepare` judges it); integer and whole-number
    float columns as :func:`geosynth.data.describe_identifier` says.
    Other float columns are not checked: a continuous measurement is distinct for every record
    without being an identifier.
    """
    if categorical:
        described = identifying_levels(values, name)
        if described is not None:
            raise InputError(
                f"categorical column {name!r} has {described}: an identifier. Its records have "
                "no neighbour, so they would be released unchanged (or suppressed); drop it "
                "from columns= (an ID) or coarsen it into groups"
            )
        return
    found = describe_identifier(values, name)
    if found is None:
        return
    kind, described = found
    raise InputError(
        f"{kind} column {name!r} has {described}: an identifier. Resampled as a number, every "
        "released value would be a real one (a neighbour's ID), and the IDs would define the "
        "neighbours; drop it from columns= (an ID), or coarsen it into groups (e.g. pd.cut) and "
        "pass it in categorical="
    )


def _check_weights(weights: Any, variables: list[Hashable]) -> dict[Hashable, float]:
    if weights is None:
        return {}
    if not isinstance(weights, Mapping):
        raise InputError(
            f"weights must be a dict mapping column names to positive factors, e.g. "
            f"{{'sex': 0.5}}, got {type(weights).__name__}"
        )
    out: dict[Hashable, float] = {}
    for key, value in weights.items():
        if key not in variables:
            raise InputError(
                f"weights names {key!r}, which is not a resampled variable; weights may name "
                f"{variables}"
            )
        out[key] = _check_factor(
            value, f"weight of {key!r}", hint="to leave a column out of the distance and the "
            "resampling, drop it from columns=", too_large="only the ratios of the weights to "
            "each other and to eps matter: divide every weight and eps by the largest weight",
        )
    return out


def _point_xy(df: gpd.GeoDataFrame) -> np.ndarray:
    geoms = df.geometry.to_numpy()
    missing = shapely.is_missing(geoms) | shapely.is_empty(geoms)
    if missing.any():
        raise InputError(
            f"{int(missing.sum())} records have missing or empty geometries "
            f"({_rows(df.index, missing)}); drop them before resampling coordinates"
        )
    not_point = shapely.get_type_id(geoms) != 0
    if not_point.any():
        raise InputError(
            f"{int(not_point.sum())} geometries are not points ({_rows(df.index, not_point)}); "
            "include_coordinates needs one Point per record: use gdf.representative_point()"
        )
    refuse_z(df, "df", "include_coordinates resamples 2-D points")
    xy = shapely.get_coordinates(geoms)
    bad = ~np.isfinite(xy).all(axis=1)
    if bad.any():
        raise InputError(
            f"{int(bad.sum())} points have NaN or infinite coordinates ({_rows(df.index, bad)}); "
            "drop or fix them"
        )
    return xy


# --------------------------------------------------------------------------------------------
# Scaled representation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scaled:
    """Numeric part (n, dc) and categorical codes (n, kc) of the scaled, weighted variables."""

    numeric: np.ndarray  # float64 (n, dc), C-contiguous
    codes: np.ndarray  # int64 (n, kc)
    cat_w2: np.ndarray  # float64 (kc,) squared weights
    cat_inv_s2: list[np.ndarray]  # per categorical: 1 / SD^2 of each level's dummy (0 if SD 0)
    cat_mean: list[np.ndarray]  # per categorical: mean of each level's dummy
    cat_sd: list[np.ndarray]  # per categorical: SD of each level's dummy


def _scale(values: np.ndarray, weight: float) -> np.ndarray:
    """Centre, divide by the sample SD (``ddof=1``) and multiply by ``weight``; SD 0 -> zeros.

    The values are first divided by the power of two just above their largest magnitude. That
    is exact and leaves the result unchanged bit for bit (unless the values span some 300 orders
    of magnitude), but keeps the squares of huge values (``1e200``) from overflowing and those of
    tiny ones (``1e-200``) from underflowing: an SD of inf or 0 would make the variable look
    constant, and it would silently stop counting in the distance.
    """
    n = values.shape[0]
    values = np.ldexp(values, -int(np.frexp(np.abs(values).max())[1]))
    mean = values.mean()
    sd = values.std(ddof=1) if n > 1 else 0.0
    if sd == 0.0:
        return np.zeros(n)
    return (values - mean) / sd * weight


def _scaled_variables(
    df: pd.DataFrame,
    numeric_vars: list[tuple[np.ndarray, float]],
    cat_vars: list[Hashable],
    weights: dict[Hashable, float],
) -> _Scaled:
    """Scale ``(values, weight)`` numeric variables and code the categorical columns."""
    n = len(df)
    numeric = np.empty((n, len(numeric_vars)), dtype=np.float64)
    for k, (values, weight) in enumerate(numeric_vars):
        numeric[:, k] = _scale(values, weight)
    codes = np.empty((n, len(cat_vars)), dtype=np.int64)
    w2 = np.empty(len(cat_vars))
    inv_s2, means, sds = [], [], []
    for k, name in enumerate(cat_vars):
        code, _ = pd.factorize(df[name], sort=False)
        codes[:, k] = code
        counts = np.bincount(code).astype(np.float64)
        p = counts / n
        sd = np.sqrt(p * (1.0 - p) * n / (n - 1)) if n > 1 else np.zeros_like(p)
        with np.errstate(divide="ignore"):
            inv = np.where(sd > 0, 1.0 / np.where(sd > 0, sd, 1.0) ** 2, 0.0)
        w2[k] = weights.get(name, 1.0) ** 2
        inv_s2.append(inv)
        means.append(p)
        sds.append(sd)
    return _Scaled(np.ascontiguousarray(numeric), codes, w2, inv_s2, means, sds)


def _categorical_sq(scaled: _Scaled, ci: np.ndarray, cj: np.ndarray) -> np.ndarray:
    """Squared one-hot distance between code rows ``ci`` and ``cj`` (broadcasting, (..., kc)).

    For one categorical with levels ``a != b`` the scaled, weighted one-hot dummies differ in two
    coordinates: ``w^2 (1/s_a^2 + 1/s_b^2)``; equal levels contribute 0.
    """
    shape = np.broadcast_shapes(ci.shape[:-1], cj.shape[:-1])
    out = np.zeros(shape)
    for k in range(ci.shape[-1]):
        a, b = ci[..., k], cj[..., k]
        inv = scaled.cat_inv_s2[k]
        out += np.where(a != b, scaled.cat_w2[k] * (inv[a] + inv[b]), 0.0)
    return out


def _one_hot(scaled: _Scaled, codes: np.ndarray) -> np.ndarray:
    """Scaled, weighted one-hot dummies of ``codes`` (m, kc) for the single-tree search."""
    blocks = []
    for k in range(codes.shape[1]):
        sd, mean = scaled.cat_sd[k], scaled.cat_mean[k]
        keep = np.flatnonzero(sd > 0)
        if keep.size == 0:
            continue
        dummy = (codes[:, k, None] == keep[None, :]).astype(np.float64)
        blocks.append((dummy - mean[keep]) / sd[keep] * math.sqrt(scaled.cat_w2[k]))
    return np.hstack(blocks) if blocks else np.zeros((codes.shape[0], 0))


# --------------------------------------------------------------------------------------------
# Neighbour graph on distinct points
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Graph:
    """Neighbours between distinct scaled points, as CSR with record multiplicities as weights."""

    inverse: np.ndarray  # (n,) distinct point of each record
    representative: np.ndarray  # (U,) a record of each distinct point
    indptr: np.ndarray  # (U + 1,)
    indices: np.ndarray  # (nnz,) neighbouring distinct points
    cum_weight: np.ndarray | None  # (nnz,) running record count; None if all points are single
    start_weight: np.ndarray | None  # (U,) running record count before each row
    degree: np.ndarray  # (U,) int64 number of neighbouring records of a record at each point


def _distinct(scaled: _Scaled) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Collapse equal records: (inverse, representative, multiplicity, group start offsets).

    Distinct points come out sorted so that points sharing their categorical codes are
    contiguous; ``group_starts`` holds the first point of each categorical combination.
    """
    n = scaled.numeric.shape[0]
    key = np.hstack([scaled.codes.view(np.uint64), scaled.numeric.view(np.uint64)])
    if key.shape[1] == 0:
        key = np.zeros((n, 1), dtype=np.uint64)
    order = np.lexsort(key.T[::-1])  # first column most significant: codes group together
    ordered = key[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    starts = np.flatnonzero(new)
    uid = np.cumsum(new) - 1
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = uid
    representative = order[starts]
    multiplicity = np.diff(np.append(starts, n))
    kc = scaled.codes.shape[1]
    ucodes = ordered[starts, :kc]
    gnew = np.ones(len(starts), dtype=bool)
    if len(starts) > 1:
        gnew[1:] = np.any(ucodes[1:] != ucodes[:-1], axis=1) if kc else False
    return inverse, representative, multiplicity, np.flatnonzero(gnew)


def _close(
    ux: np.ndarray, i: np.ndarray, j: np.ndarray, csq: float | np.ndarray, eps2: float
) -> np.ndarray:
    """Mask of candidate pairs with ``d^2 = csq + |ux[i] - ux[j]|^2 < eps^2``.

    The one formula of every search path, so both paths find exactly the same pairs; ``csq`` is
    the categorical part (:func:`_categorical_sq`), a scalar for a block or one value per pair.
    """
    keep = np.empty(i.size, dtype=bool)
    for s in range(0, i.size, _FILTER_CHUNK):
        diff = ux[i[s : s + _FILTER_CHUNK]] - ux[j[s : s + _FILTER_CHUNK]]
        diff *= diff
        part = csq if np.ndim(csq) == 0 else csq[s : s + _FILTER_CHUNK]
        keep[s : s + _FILTER_CHUNK] = part + diff.sum(axis=1) < eps2
    return keep


def _estimate(tree: cKDTree, points: np.ndarray, r: float, bound: float, self_join: bool) -> float:
    """Pairs a block will yield: ``bound`` if small, else a fixed-seed sample estimate."""
    if bound <= _ESTIMATE_ABOVE:
        return bound
    rng = np.random.default_rng(0)  # internal: must not consume the caller's stream
    m = points.shape[0]
    sample = points[rng.choice(m, size=min(m, _ESTIMATE_SAMPLE), replace=False)]
    counts = np.asarray(tree.query_ball_point(sample, r, return_length=True), dtype=float)
    if self_join:
        return m * max(counts.mean() - 1.0, 0.0) / 2.0
    return m * counts.mean()


def _check_estimate(total: float, eps: float) -> None:
    if total > MAX_NEIGHBOUR_PAIRS:
        raise MemoryLimitError(
            f"eps={eps!r} gives about {total:,.0f} neighbour pairs, more than "
            f"geosynth.sdc.neighbours.MAX_NEIGHBOUR_PAIRS = {MAX_NEIGHBOUR_PAIRS:,}; nothing was "
            "allocated. Use a smaller eps (or smaller weights on the coarse variables), or raise "
            "MAX_NEIGHBOUR_PAIRS deliberately if the memory (about 50 bytes a pair) is available"
        )


def _pairs_blocked(
    scaled: _Scaled, ux: np.ndarray, uc: np.ndarray, gstart: np.ndarray, eps: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """Pairs (i < j or cross-block) of distinct points within eps, one tree per combination.

    Returns None when there are too many combinations (or close pairs of them) for blocks.
    """
    n_groups = gstart.size
    if n_groups > _MAX_GROUPS:
        return None
    eps2 = eps * eps
    bounds = np.append(gstart, ux.shape[0])
    combos = uc[gstart]
    csq = _categorical_sq(scaled, combos[:, None, :], combos[None, :, :])  # (G, G)
    gi, gj = np.nonzero(np.triu(csq < eps2, k=1))
    dc = ux.shape[1]
    if dc == 0:  # every combination is one distinct point
        return gstart[gi], gstart[gj]
    if gi.size > _MAX_CROSS_BLOCKS:
        return None
    sizes = np.diff(bounds)
    trees = [cKDTree(ux[bounds[g] : bounds[g + 1]]) for g in range(n_groups)]
    r_in = eps * _INFLATE
    radii = np.sqrt(np.maximum(eps2 - csq[gi, gj], 0.0)) * _INFLATE
    total = sum(
        _estimate(trees[g], trees[g].data, r_in, sizes[g] * (sizes[g] - 1) / 2, True)
        for g in range(n_groups)
        if sizes[g] > 1
    )
    total += sum(
        _estimate(trees[h], trees[g].data, r, float(sizes[g]) * sizes[h], False)
        for g, h, r in zip(gi.tolist(), gj.tolist(), radii.tolist(), strict=True)
    )
    _check_estimate(total, eps)
    parts_i, parts_j = [np.empty(0, np.int64)], [np.empty(0, np.int64)]

    def add(i: np.ndarray, j: np.ndarray, csq_block: float) -> None:
        keep = _close(ux, i, j, csq_block, eps2)
        parts_i.append(i[keep])
        parts_j.append(j[keep])

    for g in range(n_groups):
        if sizes[g] > 1:
            p = trees[g].query_pairs(r_in, output_type="ndarray")
            add(p[:, 0] + bounds[g], p[:, 1] + bounds[g], 0.0)
    for g, h, r in zip(gi.tolist(), gj.tolist(), radii.tolist(), strict=True):
        m = trees[g].sparse_distance_matrix(trees[h], r, output_type="ndarray")
        add(m["i"] + bounds[g], m["j"] + bounds[h], csq[g, h])
    return np.concatenate(parts_i), np.concatenate(parts_j)


def _pairs_single_tree(
    scaled: _Scaled, ux: np.ndarray, uc: np.ndarray, eps: float
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs i < j of distinct points within eps from one tree over numeric + one-hot columns."""
    embedded = np.hstack([ux, _one_hot(scaled, uc)])
    if embedded.shape[1] == 0:  # every variable constant: a single distinct point
        return np.empty(0, np.int64), np.empty(0, np.int64)
    tree = cKDTree(embedded)
    r = eps * _INFLATE
    m = embedded.shape[0]
    _check_estimate(_estimate(tree, embedded, r, m * (m - 1) / 2, True), eps)
    p = tree.query_pairs(r, output_type="ndarray")
    i, j = p[:, 0].astype(np.int64), p[:, 1].astype(np.int64)
    keep = np.empty(i.size, dtype=bool)
    for s in range(0, i.size, _FILTER_CHUNK):
        a, b = i[s : s + _FILTER_CHUNK], j[s : s + _FILTER_CHUNK]
        csq = _categorical_sq(scaled, uc[a], uc[b])
        keep[s : s + _FILTER_CHUNK] = _close(ux, a, b, csq, eps * eps)
    return i[keep], j[keep]


def _neighbour_graph(scaled: _Scaled, eps: float, blocked: bool = True) -> _Graph:
    """Neighbour graph of the records: distinct points, their pairs within eps, as CSR."""
    inverse, representative, multiplicity, gstart = _distinct(scaled)
    ux = scaled.numeric[representative]
    uc = scaled.codes[representative]
    pairs = _pairs_blocked(scaled, ux, uc, gstart, eps) if blocked else None
    if pairs is None:
        pairs = _pairs_single_tree(scaled, ux, uc, eps)
    n_points = representative.size
    index_dtype = np.int32 if n_points < np.iinfo(np.int32).max else np.int64
    i, j = (p.astype(index_dtype, copy=False) for p in pairs)
    dup = np.flatnonzero(multiplicity > 1).astype(index_dtype)  # same-point records are neighbours
    rows = np.concatenate([i, j, dup])
    cols = np.concatenate([j, i, dup])
    del i, j
    if dup.size:  # entries carry the number of records behind them (minus the record itself)
        count = multiplicity.astype(np.int32 if inverse.size < 2**31 else np.int64)
        data = np.concatenate([count[cols[: rows.size - dup.size]], count[dup] - 1])
    else:
        data = np.ones(rows.size, dtype=np.int8)
    coo = sparse.coo_array((data, (rows, cols)), shape=(n_points, n_points))
    del rows, cols, data
    coo.has_canonical_format = True  # no duplicate entries by construction: skip summing them
    csr = coo.tocsr()
    # Each row in the order of the distinct points (canonical: sorted by their values), not in
    # the order the search found the pairs: a draw picks the k-th entry of a row, so the
    # release must depend on the data and the seed only, not on which search path ran
    # (_MAX_GROUPS) or on the pair order of scipy's trees.
    csr.sort_indices()
    del coo
    indptr = csr.indptr.astype(np.int64, copy=False)
    if not dup.size:
        return _Graph(inverse, representative, indptr, csr.indices, None, None, np.diff(indptr))
    cum = np.cumsum(csr.data, dtype=np.int64)
    padded = np.concatenate([[0], cum])
    start = padded[indptr[:-1]]
    degree = padded[indptr[1:]] - start
    return _Graph(inverse, representative, indptr, csr.indices, cum, start, degree)


def _check_area(df: pd.DataFrame, region: Any, exclude: Any,
                xy: np.ndarray | None) -> tuple[Any, Any] | None:
    """Return ``(region, exclude)`` as prepared unions in ``df``'s CRS, or None for neither."""
    if region is None and exclude is None:
        return None
    if xy is None:
        raise InputError("region and exclude bound the resampled coordinates; pass "
                         "include_coordinates=True, or leave them out")
    area = (polygon_union(region, "region", df.crs), polygon_union(exclude, "exclude", df.crs))
    if not _in_area(area, xy).any():
        raise InputError("no record's point lies in region (less exclude), so no resampled "
                         "point could; check that they cover the records, in df's CRS")
    return area


def _in_area(area: tuple[Any, Any], xy: np.ndarray) -> np.ndarray:
    """Mask of the points in ``region`` (on its edge too) and not inside ``exclude``."""
    region, exclude = area
    inside = np.ones(len(xy), dtype=bool) if region is None else shapely.intersects_xy(
        region, xy[:, 0], xy[:, 1])
    if exclude is not None:
        inside &= ~shapely.contains_xy(exclude, xy[:, 0], xy[:, 1])
    return inside


def _within_area(area: tuple[Any, Any], graph: _Graph, movers: np.ndarray, drawn: np.ndarray,
                 xy: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw again, from their neighbours, the x and y of ``movers``' points outside ``area``.

    Up to :data:`MAX_PLACEMENT_DRAWS` rounds; a point still outside then takes both coordinates
    of one neighbour in the area (its own point where none is).
    """
    drawn = drawn.copy()
    outside = np.flatnonzero(~_in_area(area, drawn))
    for _ in range(MAX_PLACEMENT_DRAWS):
        if not outside.size:
            return drawn
        sources = _draw_sources(graph, movers[outside], 2, rng)
        drawn[outside] = np.column_stack([xy[sources[:, 0], 0], xy[sources[:, 1], 1]])
        outside = outside[~_in_area(area, drawn[outside])]
    in_area = _in_area(area, xy)
    for row in outside:
        candidates = _draw_sources(graph, np.full(MAX_PLACEMENT_DRAWS, movers[row]), 1, rng)[:, 0]
        fitting = candidates[in_area[candidates]]
        drawn[row] = xy[fitting[0]] if fitting.size else xy[movers[row]]
    return drawn


def _draw_sources(
    graph: _Graph, records: np.ndarray, n_variables: int, rng: np.random.Generator
) -> np.ndarray:
    """Source record (n_records_selected, n_variables) of each variable of each record.

    Each entry is a uniform draw, independently per variable, from the records within eps of
    the record (records with no neighbour must be excluded by the caller).
    """
    point = graph.inverse[records]
    degree = graph.degree[point]
    u = rng.random((records.size, n_variables))
    offset = np.minimum(np.floor(u * degree[:, None]).astype(np.int64), degree[:, None] - 1)
    # Where every neighbouring point holds one record the offset is the entry itself; elsewhere
    # find the entry whose running record count passes the offset.
    first = graph.indptr[point]
    entry = first[:, None] + offset
    weighted = np.flatnonzero(graph.indptr[point + 1] - first != degree)
    if weighted.size:
        start = graph.start_weight[point[weighted]]
        entry[weighted] = np.searchsorted(
            graph.cum_weight, start[:, None] + offset[weighted], side="right"
        )
    return graph.representative[graph.indices[entry]]


def _copies_of_records(original: pd.DataFrame, released: pd.DataFrame) -> np.ndarray:
    """Mask of the rows of ``released`` equal in every column to some row of ``original``.

    Judged on the values (64-bit row hashes), not on where they were drawn from: counting the
    rows whose every variable came from one neighbour missed rows drawn from several
    neighbours that share values (a categorical level, a repeated number), which equal
    another record, or the record itself, just the same (246 counted of 626 in a test).
    """
    known = pd.util.hash_pandas_object(original, index=False).to_numpy()
    drawn = pd.util.hash_pandas_object(released, index=False).to_numpy()
    return np.isin(drawn, known)


def _warn_lost_categories(df: pd.DataFrame, out: pd.DataFrame) -> None:
    """Warn about categorical columns whose dtype lists categories that only left records held.

    A categorical keeps every category of its dtype after the rows holding them are gone, so a
    category held only by suppressed records, or only by records whose value was resampled
    away, is still published in the dtype (a rare diagnosis tells that a record with it is in
    the data). Counts only: the message names the columns, never a category.
    """
    lost = {}
    for name in df.columns:
        if isinstance(df[name].dtype, pd.CategoricalDtype):
            held_before = np.unique(df[name].cat.codes.to_numpy())
            held_after = np.unique(out[name].cat.codes.to_numpy())
            n_lost = np.setdiff1d(held_before[held_before >= 0], held_after).size
            if n_lost:
                lost[name] = n_lost
    if lost:
        described = ", ".join(f"{name!r} ({k})" for name, k in lost.items())
        warnings.warn(
            f"categorical column(s) {described} list categories that no released record holds "
            "but suppressed or resampled records did; the dtype still publishes them, telling "
            "that such a record is in the data. Drop them before publishing, e.g. "
            "out[column] = out[column].cat.remove_unused_categories()",
            PrivacyLeakWarning,
            stacklevel=3,
        )


def _warn_location_copies(n_copies: int, n_resampled: int) -> None:
    """Warn that ``n_copies`` resampled points are the exact location of an original record."""
    warnings.warn(
        f"{n_copies} of {n_resampled} resampled records are released at the exact location of "
        "an original record (x and y drawn from the same neighbour, or from neighbours sharing "
        "a coordinate; probability at least 1/k for a record with k neighbours): the release "
        "shows real locations. Increase eps or min_neighbours to make it rarer, or leave "
        "include_coordinates=False and place points with a synthesizer instead",
        PrivacyLeakWarning,
        stacklevel=3,
    )


def _warn_unselected_locations(n_unselected: int, n: int, modprop: float) -> None:
    """Warn that ``n_unselected`` records not selected keep their true location.

    With ``include_coordinates`` a record that ``modprop`` does not select is released
    unchanged, its point included: a true location that no other warning counted (with
    ``modprop=0`` the release was a silent copy of every location). Counts only.
    """
    if n_unselected == 0:
        return
    warnings.warn(
        f"{n_unselected} of {n} records were not selected for resampling "
        f"(modprop={float(modprop):g}) and are released unchanged, at their true location. "
        "Pass modprop=1 to resample every record's coordinates",
        PrivacyLeakWarning,
        stacklevel=3,
    )


def _warn_unchanged_geometries(out: pd.DataFrame, resampled: Hashable | None) -> None:
    """Warn that geometry columns other than ``resampled`` show the records' true locations.

    Such a column (the active geometry without ``include_coordinates``, or any other geometry
    column) is copied unchanged, like every column not resampled; but a point is where a
    patient lives, so the release would publish every record's true location beside its
    resampled attributes. Counts only: the message names the columns, never a location.
    """
    shown = {}
    for name in out.columns:
        if name != resampled and isinstance(out[name].dtype, gpd.array.GeometryDtype):
            geoms = np.asarray(out[name].array, dtype=object)
            present = int((~(shapely.is_missing(geoms) | shapely.is_empty(geoms))).sum())
            if present:
                shown[name] = present
    if shown:
        described = ", ".join(f"{name!r} ({k} of {len(out)} records)" for name, k in shown.items())
        warnings.warn(
            f"geometry column(s) {described} are copied unchanged: the release shows the true "
            "location of those records beside their resampled attributes. Resample the active "
            "geometry's coordinates with include_coordinates=True, and drop any other geometry "
            "column before publishing",
            PrivacyLeakWarning,
            stacklevel=3,
        )


# What becomes of a selected record without enough neighbours, by no_neighbours.
_UNRESAMPLED = {"keep": "released unchanged", "suppress": "dropped from the release"}


def _warn_too_few(
    lonely: np.ndarray,
    n_neighbours: np.ndarray,
    n_selected: int,
    eps: float,
    min_neighbours: int,
    no_neighbours: str,
) -> None:
    """Warn about the selected records (mask ``lonely``) with fewer than min_neighbours.

    Counts only: warnings end up in logs and terminals, and row labels (often record IDs) or
    positions would say which released rows are real records.
    """
    n_lonely = int(lonely.sum())
    n_none = int((lonely & (n_neighbours == 0)).sum())
    action = f"{_UNRESAMPLED[no_neighbours]} (no_neighbours={no_neighbours!r})" + (
        "" if no_neighbours == "suppress" else ", a disclosure risk")
    warnings.warn(
        f"{n_lonely} of {n_selected} selected records have fewer than "
        f"min_neighbours={min_neighbours} other records within eps={eps!r} that differ from "
        f"each other ({n_none} have none; records identical in every variable count once; "
        f"return_info=True gives them: info.selected & (info.n_distinct_neighbours < "
        f"{min_neighbours})); they were {action}. Increase eps or lower the weights of "
        "coarse variables"
        + ("" if no_neighbours == "suppress" else ", or pass no_neighbours='suppress'"),
        # Released unchanged, they are the records themselves: a disclosure, not a data issue.
        DataWarning if no_neighbours == "suppress" else PrivacyLeakWarning,
        stacklevel=3,
    )


def _warn_whole_copies(
    copies: np.ndarray, n_resampled: int, n_variables: int, location: bool
) -> None:
    """Warn about resampled records (mask ``copies``) released as a copy of another record."""
    warnings.warn(
        f"{int(copies.sum())} of {n_resampled} resampled records are an exact copy of an "
        f"original record (another's, or their own) in all {n_variables} resampled variables"
        + (" (the location included)" if location else "")
        + ": every variable was drawn from the same neighbour (with probability "
        f"k**(1 - {n_variables}) for a record with k distinct neighbours), or from neighbours "
        "that share values. Increase eps or min_neighbours to make it rarer",
        PrivacyLeakWarning,
        stacklevel=3,
    )


def _as_baseline(out: pd.DataFrame) -> pd.DataFrame:
    """Mark ``out`` as the row-aligned output of the neighbour baseline, and return it.

    Its points are records' true locations, so :func:`geosynth.io.write_release` and the public
    review maps refuse it, even after :func:`geosynth.to_public`; the record replaces the
    input's ``attrs``.
    """
    out.attrs = {}
    set_release_info(out, ReleaseInfo(method="neighbour"))
    out.attrs[LINKED_ATTR] = True
    return out


# --------------------------------------------------------------------------------------------
# Public function
# --------------------------------------------------------------------------------------------


@overload
def neighbour_resample(
    df: pd.DataFrame,
    eps: float,
    modprop: float = ...,
    weights: Mapping[Hashable, float] | None = ...,
    columns: Sequence[Hashable] | None = ...,
    categorical: Sequence[Hashable] | None = ...,
    no_neighbours: Literal["keep", "suppress"] = ...,
    min_neighbours: int = ...,
    selection: Literal["bernoulli", "exact"] = ...,
    include_coordinates: bool = ...,
    seed: SeedLike = ...,
    return_info: Literal[False] = ...,
    region: Any = ...,
    exclude: Any = ...,
) -> pd.DataFrame: ...


@overload
def neighbour_resample(
    df: pd.DataFrame,
    eps: float,
    modprop: float = ...,
    weights: Mapping[Hashable, float] | None = ...,
    columns: Sequence[Hashable] | None = ...,
    categorical: Sequence[Hashable] | None = ...,
    no_neighbours: Literal["keep", "suppress"] = ...,
    min_neighbours: int = ...,
    selection: Literal["bernoulli", "exact"] = ...,
    include_coordinates: bool = ...,
    seed: SeedLike = ...,
    *,
    return_info: Literal[True],
    region: Any = ...,
    exclude: Any = ...,
) -> tuple[pd.DataFrame, NeighbourResampleInfo]: ...


def neighbour_resample(
    df: pd.DataFrame,
    eps: float,
    modprop: float = 1.0,
    weights: Mapping[Hashable, float] | None = None,
    columns: Sequence[Hashable] | None = None,
    categorical: Sequence[Hashable] | None = None,
    no_neighbours: Literal["keep", "suppress"] = "keep",
    min_neighbours: int = 2,
    selection: Literal["bernoulli", "exact"] = "bernoulli",
    include_coordinates: bool = False,
    seed: SeedLike = None,
    return_info: bool = False,
    region: Any = None,
    exclude: Any = None,
) -> pd.DataFrame | tuple[pd.DataFrame, NeighbourResampleInfo]:
    """Release each selected record with every variable drawn from a random neighbour.

    Matloff & Tendick (§2): scale every variable to mean 0 and SD 1 (``ddof=1``), multiply it by
    its weight, and for each selected record draw each variable independently from a record
    chosen uniformly among the *other* original records at distance ``< eps`` (see the module
    docstring for categorical variables, coordinates and the differences from the R code). A
    selected record needs ``min_neighbours`` such records, distinct from each other, to be
    resampled.

    Parameters
    ----------
    df : pandas.DataFrame or geopandas.GeoDataFrame
        The confidential records; not modified.
    eps : float
        Neighbourhood radius (> 0, at most 1e100) in the scaled, weighted space. Two records
        differing only in one unweighted numeric variable are neighbours when they differ by less
        than ``eps`` standard deviations of it. Smaller ``eps`` keeps the joint distribution
        closer to the original but leaves more records without neighbours.
    modprop : float, default 1.0
        Proportion ``q`` of records to resample, in [0, 1]. ``0`` returns a copy of ``df``.
    weights : dict, optional
        Factor (> 0, at most 1e100) multiplying each named scaled variable (every dummy of a
        categorical; with ``include_coordinates``, the geometry column's name weights both ``x``
        and ``y``). Unnamed variables have weight 1. Factors below 1 stop coarse variables
        (dummies, small integers) from dominating the distance, as in the paper's ``wts``.
    columns : list of column names, optional
        The variables: they define the distance and are resampled. Default: every column except
        the geometry. Other columns are copied unchanged (they do not count in the distance).
    categorical : list of column names, optional
        Columns of ``columns`` to treat as categorical although numeric (e.g. integer codes).
        Object, string, category and bool columns are always categorical.
    no_neighbours : {"keep", "suppress"}, default "keep"
        What happens to a selected record with fewer than ``min_neighbours`` distinct other
        records within ``eps``: released unchanged (a disclosure risk) or dropped from the
        release. A warning gives the count: a :class:`~geosynth.errors.PrivacyLeakWarning`
        when they are kept, a :class:`~geosynth.errors.DataWarning` when suppressed.
    min_neighbours : int, default 2
        Fewest distinct neighbours (>= 1) a selected record needs to be resampled, neighbours
        identical to each other in every variable counting once; with fewer it is handled by
        ``no_neighbours``. With one neighbour (or several copies of one record) every variable
        would come from it, an exact copy of another record; ``1`` is the paper's method. A
        record with ``k`` distinct neighbours is still copied whole with probability at least
        ``k**(1 - V)`` for ``V`` variables.
    selection : {"bernoulli", "exact"}, default "bernoulli"
        Select each record independently with probability ``modprop`` (the paper) or a simple
        random sample of exactly ``floor(n * modprop)`` records (the R code).
    include_coordinates : bool, default False
        Make the ``x`` and ``y`` of a GeoDataFrame's point geometries two more variables: they
        count in the distance, are resampled independently, and the released geometry is rebuilt
        from the new coordinates (CRS kept). Otherwise the geometry is copied unchanged (true
        locations: a :class:`~geosynth.errors.PrivacyLeakWarning` says so). A point's ``x`` and
        ``y`` come from two records, so it can fall outside a concave study area or inside a
        no-go area (15 of 400 points left an L-shaped region): pass ``region``/``exclude``.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random stream (:func:`geosynth._random.as_generator`).
    return_info : bool, default False
        Also return a :class:`NeighbourResampleInfo`.
    region, exclude : GeoDataFrame, GeoSeries, shapely geometry or sequence of polygons, optional
        With ``include_coordinates``: the study area and its no-go areas, as
        :meth:`geosynth.Grid.regular` takes them (reprojected to ``df``'s CRS). A resampled point
        outside ``region`` or inside ``exclude`` has its ``x`` and ``y`` drawn again from the
        record's neighbours, up to :data:`MAX_PLACEMENT_DRAWS` times (the released coordinates
        then follow the method's distribution given the area); one still outside takes both
        coordinates of one neighbour inside the area, a real location (counted by the warning
        of location copies).

    Returns
    -------
    pandas.DataFrame or geopandas.GeoDataFrame
        Same type, columns, dtypes and index as ``df``, in the same row order; with
        ``no_neighbours="suppress"`` the selected records with fewer than ``min_neighbours``
        distinct neighbours are missing. Categorical columns keep the categories of their
        dtype, also those held only by records suppressed or resampled away (a
        :class:`~geosynth.errors.PrivacyLeakWarning` then names the columns). Its ``attrs``
        mark it as the row-aligned output of a baseline (method ``"neighbour"``): its points
        are records' true locations, so :func:`geosynth.io.write_release` and public review
        maps refuse it, also after :func:`geosynth.to_public`.
    NeighbourResampleInfo
        Only with ``return_info=True``.

    Raises
    ------
    TypeError
        ``eps``, ``modprop``, a weight or ``min_neighbours`` of the wrong type (a bool, a string,
        a float ``min_neighbours``, ...), ``return_info`` that is not a bool, ``no_neighbours``
        or ``selection`` that is not a str (e.g. an array), or ``columns``/``categorical`` that
        is neither a name nor a flat list of names (e.g. a 0-d array).
    geosynth.errors.InputError
        Bad parameter, missing column, unsupported dtype, NaN or infinite values in a variable,
        a categorical or integer variable that identifies records (an ID), no rows, (with
        ``include_coordinates``) missing, empty, non-point or 3-D geometries, or ``region``/
        ``exclude`` without ``include_coordinates``, or leaving no record's point in the area
        (:class:`~geosynth.errors.GridError`, :class:`~geosynth.errors.CRSError` for invalid
        polygons or a CRS that does not match, as :class:`geosynth.Grid` raises).
    geosynth.errors.MemoryLimitError
        ``eps`` would give more than :data:`MAX_NEIGHBOUR_PAIRS` neighbour pairs.

    Warns
    -----
    geosynth.errors.DataWarning
        Some selected records had fewer than ``min_neighbours`` distinct neighbours within
        ``eps`` and were suppressed.
    geosynth.errors.PrivacyLeakWarning
        Some selected records had fewer than ``min_neighbours`` distinct neighbours and were
        released unchanged (``no_neighbours="keep"``); some resampled records are an exact copy
        of an original record (another's, or their own) in every resampled
        variable (not given when only one variable is resampled: each value is then one
        neighbour's, which is the method); or, with ``include_coordinates``, some are released
        at the exact location of an original record, or some were not selected
        (``modprop < 1``) and keep their true location; or a categorical column's dtype lists a
        category that only suppressed or resampled records held; or a geometry column is
        copied unchanged (without ``include_coordinates``, or not the active geometry), so the
        release shows true locations.

    Examples
    --------
    >>> import pandas as pd
    >>> from geosynth.sdc import neighbour_resample
    >>> df = pd.DataFrame({"age": [30, 31, 30, 31, 50, 51, 50, 51], "sex": list("ffffmmmm")})
    >>> out = neighbour_resample(df, eps=1.0, seed=1)
    >>> bool(out["sex"].eq(df["sex"]).all())  # "f" and "m" are never within eps
    True
    """
    _check_scalars(df, eps, modprop, no_neighbours, selection, include_coordinates)
    return_info = check_bool(return_info, "return_info")
    min_neighbours = check_int(min_neighbours, "min_neighbours", 1,
                               hint="pass 2 or more so no record is copied from its only neighbour")
    geometry_name = _geometry_name(df)
    cols, cats = _check_columns(df, columns, categorical, bool(include_coordinates), geometry_name)
    variables = list(cols) + ([geometry_name] if include_coordinates else [])
    weights_ = _check_weights(weights, variables)
    xy = _point_xy(df) if include_coordinates else None
    area = _check_area(df, region, exclude, xy)
    rng = as_generator(seed)
    n = len(df)
    # No record could be resampled (all kept or dropped); the default 2 is kept on tiny frames.
    if min_neighbours > max(n - 1, 2):
        raise InputError(
            f"min_neighbours={min_neighbours} is more than the {n - 1:,} other records a record "
            f"can have as neighbours, so every record would be {_UNRESAMPLED[no_neighbours]}; "
            "pass a smaller min_neighbours (2 or more)"
        )

    if selection == "exact":
        selected = np.zeros(n, dtype=bool)
        selected[rng.choice(n, size=math.floor(n * modprop), replace=False)] = True
    else:
        selected = rng.random(n) < modprop

    resampled = geometry_name if include_coordinates else None
    if include_coordinates:
        _warn_unselected_locations(int(n - selected.sum()), n, modprop)
    if not selected.any() and not return_info:
        _warn_unchanged_geometries(df, resampled)
        return _as_baseline(df.copy())

    numeric_cols = [c for c in cols if c not in cats]
    cat_cols = [c for c in cols if c in cats]
    numeric_vars = [(df[c].to_numpy(dtype=np.float64), weights_.get(c, 1.0)) for c in numeric_cols]
    if xy is not None:
        w_xy = weights_.get(geometry_name, 1.0)
        numeric_vars += [(xy[:, 0].copy(), w_xy), (xy[:, 1].copy(), w_xy)]
    scaled = _scaled_variables(df, numeric_vars, cat_cols, weights_)
    graph = _neighbour_graph(scaled, float(eps))
    n_neighbours = graph.degree[graph.inverse]
    # Distinct neighbouring points (a record's twins are one entry, its own point): one of k
    # copies of the same record is no choice at all.
    n_distinct = np.diff(graph.indptr)[graph.inverse]

    chosen = np.flatnonzero(selected)
    lonely_mask = selected & (n_distinct < min_neighbours)
    lonely = np.flatnonzero(lonely_mask)
    movers = chosen[n_distinct[chosen] >= min_neighbours]
    # One source record per (record, variable): the columns in order, then x and y.
    n_variables = len(cols) + (2 if xy is not None else 0)
    sources = _draw_sources(graph, movers, n_variables, rng)

    out = df.copy()
    for k, name in enumerate(cols if movers.size else []):
        source = np.arange(n)
        source[movers] = sources[:, k]
        # positional take keeps the dtype exactly (object stays object, categories are kept)
        out[name] = df[name].iloc[source].set_axis(df.index)
    n_location_copies = 0
    if xy is not None and movers.size:
        new_xy = xy.copy()
        new_xy[movers, 0] = xy[sources[:, -2], 0]
        new_xy[movers, 1] = xy[sources[:, -1], 1]
        if area is not None:
            new_xy[movers] = _within_area(area, graph, movers, new_xy[movers], xy, rng)
        out[geometry_name] = gpd.GeoSeries(
            gpd.points_from_xy(new_xy[:, 0], new_xy[:, 1]), index=df.index, crs=df.crs
        )
        n_location_copies = int(at_locations(new_xy[movers], xy).sum())

    if lonely.size:
        _warn_too_few(lonely_mask, n_neighbours, chosen.size, eps, min_neighbours,
                      no_neighbours)
    copies = np.zeros(n, dtype=bool)
    if movers.size:  # columns by position: x and y cannot clash with a column's name
        variables = df[cols].set_axis(range(len(cols)), axis=1).reset_index(drop=True)
        released = out[cols].iloc[movers].set_axis(range(len(cols)), axis=1)
        released = released.reset_index(drop=True)
        if xy is not None:
            variables[len(cols)], variables[len(cols) + 1] = xy[:, 0], xy[:, 1]
            released[len(cols)] = new_xy[movers, 0]
            released[len(cols) + 1] = new_xy[movers, 1]
        copies[movers[_copies_of_records(variables, released)]] = True
    if n_variables > 1 and copies.any():
        _warn_whole_copies(copies, movers.size, n_variables, xy is not None)
    # With the coordinates alone, a location copy is a whole copy (warned above) unless its x
    # and y came from different records sharing a coordinate.
    if n_location_copies and (n_variables > 2 or n_location_copies > copies.sum()):
        _warn_location_copies(n_location_copies, movers.size)
    n_suppressed = 0
    if no_neighbours == "suppress" and lonely.size:
        out = out.iloc[~lonely_mask]
        n_suppressed = int(lonely.size)
    _warn_lost_categories(df, out)
    _warn_unchanged_geometries(out, resampled)
    _as_baseline(out)

    if not return_info:
        return out
    selected.setflags(write=False)
    n_neighbours = np.asarray(n_neighbours, dtype=np.int64)
    n_neighbours.setflags(write=False)
    n_distinct = np.asarray(n_distinct, dtype=np.int64)
    n_distinct.setflags(write=False)
    info = NeighbourResampleInfo(
        n_records=n,
        n_selected=int(chosen.size),
        n_without_neighbours=int(lonely.size),
        n_suppressed=n_suppressed,
        mean_neighbours=float(n_neighbours.mean()),
        selected=selected,
        n_neighbours=n_neighbours,
        n_distinct_neighbours=n_distinct,
        min_neighbours=min_neighbours,
        n_whole_copies=int(copies.sum()),
        n_location_copies=n_location_copies,
    )
    return out, info
