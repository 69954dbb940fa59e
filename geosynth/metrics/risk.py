"""Disclosure-risk measures for synthetic locations.

Three families, from the least to the most informed intruder:

* **Unlinked distances** (:func:`distance_risk`): Nunes (2018, §3.3, Algorithm 1, Tables 4–6).
  Within each attribute combination, original and synthetic points are paired greedily by
  distance (:func:`geosynth.metrics.greedy_match`) and the minimum and mean matched distance are
  reported; small distances mean synthetic points sit close to real people.
* **Linked records** (:func:`displacement`, :func:`spatial_k_anonymity`,
  :func:`k_anonymity_summary`): when a release keeps the records (partially synthetic data,
  rows aligned by index), each synthetic point can be compared with its own original location,
  as geomasking evaluations do (MaskMyPy).
* **Identification** (:func:`identification_risk`): the Reiter & Mitra (2009) measures for an
  intruder who knows a target's attributes and true grid cell and matches them against the m
  releases.

All functions take the original points and the releases as GeoDataFrames of points in one
projected CRS; ``releases`` is a GeoDataFrame or a list of them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
from numba import njit

from geosynth._messages import describe_rows as _rows
from geosynth._validation import check_bool, check_choice, check_real_array, is_sequence
from geosynth.errors import CRSError, InputError, InputTypeError
from geosynth.metrics.matching import (
    as_columns,
    as_releases,
    check_columns,
    check_frames,
    check_level_types,
    frame_xy,
    greedy_match_distances,
    pair_distance,
    select_rank,
)
from geosynth.synth.release import is_public

if TYPE_CHECKING:
    from geosynth.lattice import Grid

__all__ = [
    "IdentificationRisk",
    "MEAN_LABEL",
    "check_grid_type",
    "check_has_rows",
    "check_mean_label",
    "check_same_crs",
    "combination_codes",
    "split_by_code",
    "nanmean_rows",
    "nanmin_rows",
    "with_mean_row",
    "distance_risk",
    "displacement",
    "spatial_k_anonymity",
    "k_anonymity_summary",
    "identification_risk",
]

_SHOW = 5
#: Label of the mean row of the per-combination tables (:func:`with_mean_row`).
MEAN_LABEL = "mean"
# Spatial k-anonymity counts points on the circle; the radius is widened by this relative amount
# so that rounding never drops the record's own original point (at exactly the displacement).
_BALL_RTOL = 1e-9
# Points per leaf of the counting kd-tree (fastest of 16-128 at 10^6 points), and the fewest
# circles worth a thread pool.
_BALL_LEAF = 64
_BALL_THREADED = 20_000
# Match probabilities within this relative distance of the maximum count as tied (they are sums
# of at most m fractions 1/F, exact up to rounding).
_TIE_RTOL = 1e-10


# --------------------------------------------------------------------------- distance risk


def distance_risk(
    original: gpd.GeoDataFrame,
    releases: gpd.GeoDataFrame | Sequence[gpd.GeoDataFrame],
    by: str | Sequence[str],
    mean_row: bool = True,
) -> pd.DataFrame:
    """Minimum and mean greedy-matched distance per attribute combination (Nunes 2018, Tables 4–6).

    For each combination of the ``by`` columns and each release, the original and synthetic
    points of that combination are matched by Algorithm 1 (:func:`greedy_match_distances`), and
    the minimum and the mean of the ``min(n_orig, n_synth)`` matched distances are taken. Both are
    then averaged over the releases.

    Parameters
    ----------
    original : GeoDataFrame
        Confidential points with the ``by`` columns.
    releases : GeoDataFrame or sequence of GeoDataFrame
        The m synthetic releases, with the ``by`` columns, in the CRS of ``original``.
    by : str or sequence of str
        Attribute columns defining the combinations (the thesis' ``b``).
    mean_row : bool, default True
        Append a row labelled ``"mean"`` (``("mean", "", ...)`` for several ``by`` columns) with
        the unweighted mean of each column over the combinations, as the "Média" row of the
        thesis tables. The first ``by`` column must then have no level ``"mean"``
        (:func:`check_mean_label`).

    Returns
    -------
    pandas.DataFrame
        One row per combination present in ``original`` (sorted; indexed by the ``by`` values,
        a MultiIndex for several columns) with columns

        * ``n_original`` -- original points of the combination;
        * ``n_synthetic`` -- synthetic points, averaged over releases;
        * ``min_distance``, ``mean_distance`` -- minimum and mean matched distance, averaged over
          the releases in which the combination has at least one synthetic point (NaN if none);
        * ``worst_min_distance``, ``worst_mean_distance`` -- the smallest of those minima and of
          those means over the releases: an intruder holds every release, and one release of
          the records' own locations among four moved 500 m showed a ``min_distance`` of
          9.6 m and a ``mean_distance`` of 434 m, where these give 0 and 0.

        Combinations present only in releases are ignored. With ``mean_row`` every column is
        float (the mean row averages the counts too).

    Raises
    ------
    TypeError
        ``mean_row`` is not a bool.
    geosynth.errors.InputError
        Inputs are not GeoDataFrames of valid points, ``original`` has no rows, ``by`` is not a
        column name or a list of them, a ``by`` column is missing or has missing values, holds
        text in a release where it holds numbers in ``original`` (or back: no combination could
        match, and every distance came out NaN), or (with ``mean_row``) the first ``by``
        column has a level ``"mean"``.
    geosynth.errors.CRSError
        CRSs differ, or the CRS is geographic.

    Notes
    -----
    Nunes' "Média" row is the plain mean of the combination rows (e.g. Table 4, Paiva method:
    the mean of the twelve minima 0.0343, ..., 0.0462 is 0.1318), which is what ``mean_row``
    reproduces. Averaging per-release minima and means over releases is our reading of the
    thesis, which reports one number per combination for m = 5 releases.
    """
    mean_row = check_bool(mean_row, "mean_row")
    releases = as_releases(releases)
    check_frames(original, releases)
    cols = as_columns(by, "by")
    frames = [original, *releases]
    names = ["original"] + [f"releases[{k}]" for k in range(len(releases))]
    for frame, name in zip(frames, names, strict=True):
        check_columns(frame, cols, name, "by column")
    check_level_types(frames, names, cols, "by column")
    if mean_row:
        check_mean_label(original, cols, "by column", "or pass mean_row=False")
    check_has_rows(original, "distance_risk")
    xys = [frame_xy(frame, name) for frame, name in zip(frames, names, strict=True)]
    codes, keys = combination_codes(frames, cols)
    present = np.unique(codes[0])
    groups = [split_by_code(c, len(keys)) for c in codes]
    m = len(releases)
    n_syn = np.zeros((present.size, m))
    minima = np.full((present.size, m), np.nan)
    means = np.full((present.size, m), np.nan)
    for row, combo in enumerate(present):
        orig = xys[0][groups[0][combo]]
        for ell in range(m):
            synth = xys[ell + 1][groups[ell + 1][combo]]
            n_syn[row, ell] = synth.shape[0]
            if synth.shape[0]:
                d = greedy_match_distances(orig, synth)
                minima[row, ell] = d[0]  # matched in non-decreasing order
                means[row, ell] = d.mean()
    table = pd.DataFrame(
        {
            "n_original": np.array([groups[0][c].size for c in present], dtype=np.int64),
            "n_synthetic": n_syn.mean(axis=1),
            "min_distance": nanmean_rows(minima),
            "mean_distance": nanmean_rows(means),
            "worst_min_distance": nanmin_rows(minima),
            "worst_mean_distance": nanmin_rows(means),
        },
        index=keys[present],
    )
    return with_mean_row(table) if mean_row else table


# --------------------------------------------------------------------------- linked records


def displacement(original: gpd.GeoDataFrame, release: gpd.GeoDataFrame) -> pd.Series:
    """Distance from each record's original location to its synthetic location.

    Records are linked by index label (the worst case for partially synthetic releases, where
    rows are the original records).

    Parameters
    ----------
    original : GeoDataFrame
        Confidential points with a unique index.
    release : GeoDataFrame
        One synthetic release holding exactly the index labels of ``original`` (in any order),
        in the same CRS.

    Returns
    -------
    pandas.Series of float64
        Named ``"displacement"``, indexed like ``original``.

    Raises
    ------
    geosynth.errors.InputError
        ``release`` is not one GeoDataFrame (e.g. a list of releases), invalid points,
        duplicated index labels, or index labels present on one side only.
    geosynth.errors.CRSError
        CRSs differ, or the CRS is geographic.

    Examples
    --------
    >>> import geopandas as gpd
    >>> o = gpd.GeoDataFrame(geometry=gpd.points_from_xy([0, 10], [0, 0]), index=["a", "b"])
    >>> s = gpd.GeoDataFrame(geometry=gpd.points_from_xy([13, 3], [4, 4]), index=["b", "a"])
    >>> displacement(o, s).tolist()
    [5.0, 5.0]
    """
    _check_one_release(release, "displacement")
    check_frames(original, [release], name="release")
    xy0 = frame_xy(original, "original")
    xy1 = _aligned_xy(original, release, "release")
    return pd.Series(pair_distance(xy0, xy1), index=original.index, name="displacement")


def _check_one_release(release: Any, where: str) -> None:
    """Refuse anything but one GeoDataFrame: a list of m releases kept only the first."""
    if not isinstance(release, gpd.GeoDataFrame):
        raise InputError(
            f"release must be one geopandas.GeoDataFrame, got {type(release).__name__}; "
            f"{where} measures one release: call it once per release, e.g. "
            f"[{where}(original, r) for r in releases]"
        )


def spatial_k_anonymity(
    original: gpd.GeoDataFrame,
    release: gpd.GeoDataFrame,
    population: gpd.GeoDataFrame | gpd.GeoSeries | None = None,
) -> pd.Series:
    """Spatial k-anonymity of each synthetic point, as MaskMyPy computes it from address points.

    ``k`` is the number of population points inside the circle centred on the synthetic point
    with radius equal to the record's displacement (:func:`displacement`): an intruder who knows
    how far points moved cannot tell the true location from the other ``k - 1`` candidates.

    Parameters
    ----------
    original : GeoDataFrame
        Confidential points with a unique index.
    release : GeoDataFrame
        One release with the same index labels (records linked by index), same CRS.
    population : GeoDataFrame or GeoSeries, optional
        Candidate locations (e.g. address points). Default: the original points themselves.

    Returns
    -------
    pandas.Series of int64
        Named ``"k_anonymity"``, indexed like ``original``.

    Raises
    ------
    geosynth.errors.InputError
        ``release`` is not one GeoDataFrame, invalid points or index labels (see
        :func:`displacement`).
    geosynth.errors.CRSError
        CRSs differ, or the CRS is geographic.

    Notes
    -----
    Points on the circle count (MaskMyPy joins address points that *intersect* the buffer), so
    with the default population the record's own original point always counts and ``k >= 1``;
    to make that robust to rounding the radius is widened by a relative ``1e-9``. A record whose
    synthetic point equals its original point gets ``k`` = the number of population points at
    that exact location.

    Examples
    --------
    Three originals on a line; the record at 0 is released at 1 (displacement 1), so the circle
    of radius 1 around 1 holds the originals at 0 and 2 but not 5:

    >>> import geopandas as gpd
    >>> o = gpd.GeoDataFrame(geometry=gpd.points_from_xy([0, 2, 5], [0, 0, 0]))
    >>> s = gpd.GeoDataFrame(geometry=gpd.points_from_xy([1, 2, 5], [0, 0, 0]))
    >>> spatial_k_anonymity(o, s).tolist()
    [2, 1, 1]
    """
    _check_one_release(release, "spatial_k_anonymity")
    d = displacement(original, release).to_numpy()
    xy1 = _aligned_xy(original, release, "release")
    if population is None:
        pop = frame_xy(original, "original")
    else:
        if not isinstance(population, gpd.GeoDataFrame | gpd.GeoSeries):
            raise InputError(
                f"population must be a GeoDataFrame or GeoSeries of points, got "
                f"{type(population).__name__}"
            )
        check_same_crs(original, population, "population")
        pop = frame_xy(population, "population")
    if pop.shape[0] == 0 or xy1.shape[0] == 0:
        k = np.zeros(xy1.shape[0], dtype=np.int64)
    else:
        k = _circle_counts(pop, xy1, d * (1.0 + _BALL_RTOL))
    return pd.Series(k, index=original.index, name="k_anonymity")


def _circle_counts(points: np.ndarray, centres: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Count the ``points`` in each closed circle, exactly as a point-by-point test would.

    Point ``p`` is in the circle of centre ``c`` and radius ``r`` when
    ``(p_x - c_x)**2 + (p_y - c_y)**2 <= r * r`` in float64, the test of
    ``scipy.spatial.cKDTree.query_ball_point(..., return_length=True)``.

    Parameters
    ----------
    points : numpy.ndarray, shape (n, 2)
        Finite coordinates, n >= 1.
    centres : numpy.ndarray, shape (m, 2)
        Finite circle centres.
    radius : numpy.ndarray, shape (m,)
        Finite radii >= 0.

    Returns
    -------
    numpy.ndarray of int64, shape (m,)

    Notes
    -----
    A kd-tree keeps the count and the bounding box of the points of each node, so a node whose
    box lies inside a circle adds its count without visiting its points, and only the leaves
    crossing the circle are tested point by point: about ``sqrt(n)`` work per circle instead of
    the ``k`` points in it (a large share of n when releases move points kilometres). The
    shortcuts are exact, not approximate: ``fl(p_x - c_x)`` is monotone in ``p_x`` and squares
    and sums round monotonically, so the test evaluated at a box's farthest corner bounds the
    tests of all its points from above, and at its nearest point from below.
    """
    tree = _ball_tree(np.ascontiguousarray(points, dtype=np.float64), _BALL_LEAF)
    xy = np.ascontiguousarray(centres, dtype=np.float64)
    r = np.ascontiguousarray(radius, dtype=np.float64)
    order = _locality_order(xy, r)
    out = np.zeros(xy.shape[0], dtype=np.int64)
    workers = os.cpu_count() or 1
    if workers == 1 or xy.shape[0] < _BALL_THREADED:
        _ball_counts(*tree, xy, r, order, out, 0, xy.shape[0])
        return out
    # Contiguous runs of the locality order share the tree nodes they visit (cache).
    bounds = np.linspace(0, xy.shape[0], 4 * workers + 1).astype(np.int64)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda i: _ball_counts(*tree, xy, r, order, out, bounds[i],
                                             bounds[i + 1]), range(bounds.size - 1)))
    return out


def _locality_order(xy: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Order circles by radius band, then along a Morton curve: neighbours cross the same leaves.

    Only the speed depends on it (3x at 10^6 circles, from cache reuse), not the counts.
    """
    n = xy.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    lo = xy.min(axis=0)
    span = float(np.max(xy.max(axis=0) - lo))
    cells = np.zeros(xy.shape, dtype=np.uint64)
    if span > 0:
        cells = np.minimum((xy - lo) / span * 65535.0, 65535.0).astype(np.uint64)
    code = _spread_bits(cells[:, 0]) | (_spread_bits(cells[:, 1]) << np.uint64(1))
    bands = int(np.ceil(n ** (1 / 3)))
    band = np.empty(n, dtype=np.int64)
    band[np.argsort(r, kind="stable")] = np.arange(n) * bands // n
    return np.lexsort((code, band))


def _spread_bits(v: np.ndarray) -> np.ndarray:
    """Interleave zeros between the 16 low bits of ``v`` (one axis of a Morton code)."""
    for shift, mask in ((8, 0x00FF00FF), (4, 0x0F0F0F0F), (2, 0x33333333), (1, 0x55555555)):
        v = (v | (v << np.uint64(shift))) & np.uint64(mask)
    return v


@njit(cache=True, nogil=True)
def _ball_tree(xy, leaf_size):  # pragma: no cover - numba
    """Median-split kd-tree: points in leaf order, node ranges, first child, bounding boxes.

    Returns ``(x, y, lo, hi, child, box)``: node ``i`` holds points ``lo[i]:hi[i]`` of the
    reordered ``x, y``; its children are ``child[i]`` and ``child[i] + 1`` (-1 for a leaf);
    ``box[i]`` = (xmin, xmax, ymin, ymax) over its points (coordinates of actual points).
    """
    n = xy.shape[0]
    perm = np.arange(n)
    cap = 2 * (2 * n // leaf_size + 1) + 1
    lo = np.empty(cap, np.int64)
    hi = np.empty(cap, np.int64)
    child = np.full(cap, -1, np.int64)
    box = np.empty((cap, 4))
    todo = np.empty(cap, np.int64)
    lo[0], hi[0], todo[0] = 0, n, 0
    n_nodes, sp = 1, 1
    while sp > 0:
        sp -= 1
        node = todo[sp]
        x0, x1, y0, y1 = np.inf, -np.inf, np.inf, -np.inf
        for k in range(lo[node], hi[node]):
            x0 = min(x0, xy[perm[k], 0])
            x1 = max(x1, xy[perm[k], 0])
            y0 = min(y0, xy[perm[k], 1])
            y1 = max(y1, xy[perm[k], 1])
        box[node, 0], box[node, 1], box[node, 2], box[node, 3] = x0, x1, y0, y1
        if hi[node] - lo[node] <= leaf_size:
            continue
        mid = (lo[node] + hi[node]) // 2
        select_rank(perm, xy, 0 if x1 - x0 >= y1 - y0 else 1, lo[node], hi[node], mid)
        c = n_nodes
        n_nodes += 2
        lo[c], hi[c], lo[c + 1], hi[c + 1] = lo[node], mid, mid, hi[node]
        child[node] = c
        todo[sp], todo[sp + 1] = c, c + 1
        sp += 2
    x = np.empty(n)
    y = np.empty(n)
    for k in range(n):
        x[k] = xy[perm[k], 0]
        y[k] = xy[perm[k], 1]
    return x, y, lo[:n_nodes].copy(), hi[:n_nodes].copy(), child[:n_nodes].copy(), box[:n_nodes]


@njit(cache=True, nogil=True)
def _ball_count(x, y, lo, hi, child, box, qx, qy, r2, stack):  # pragma: no cover - numba
    """Points with ``(x - qx)**2 + (y - qy)**2 <= r2``; see :func:`_circle_counts` (exactness)."""
    count = 0
    stack[0] = 0
    sp = 1
    while sp > 0:
        sp -= 1
        node = stack[sp]
        a = box[node, 0] - qx
        b = box[node, 1] - qx
        c = box[node, 2] - qy
        d = box[node, 3] - qy
        fx = max(abs(a), abs(b))  # farthest corner: every point's test is at most this
        fy = max(abs(c), abs(d))
        if fx * fx + fy * fy <= r2:
            count += hi[node] - lo[node]
            continue
        nx = a if a > 0.0 else (b if b < 0.0 else 0.0)  # nearest point of the box
        ny = c if c > 0.0 else (d if d < 0.0 else 0.0)
        if nx * nx + ny * ny > r2:
            continue
        if child[node] < 0:
            for k in range(lo[node], hi[node]):
                dx = x[k] - qx
                dy = y[k] - qy
                count += dx * dx + dy * dy <= r2
            continue
        stack[sp] = child[node]
        stack[sp + 1] = child[node] + 1
        sp += 2
    return count


@njit(cache=True, nogil=True)
def _ball_counts(x, y, lo, hi, child, box, xy, r, order, out, start, stop):  # pragma: no cover
    """``out[i]`` = points in circle i, for i in ``order[start:stop]``."""
    stack = np.empty(128, np.int64)  # a depth-first stack never exceeds the tree depth + 1
    for j in range(start, stop):
        i = order[j]
        out[i] = _ball_count(x, y, lo, hi, child, box, xy[i, 0], xy[i, 1], r[i] * r[i], stack)


def k_anonymity_summary(
    k: pd.Series | np.ndarray, thresholds: Sequence[int] = (5, 25)
) -> pd.Series:
    """Summarise spatial k-anonymity: share of records below each threshold, and k's spread.

    Parameters
    ----------
    k : Series or array-like of int
        Output of :func:`spatial_k_anonymity`.
    thresholds : sequence of int, default (5, 25)
        Values of k to report the share below.

    Returns
    -------
    pandas.Series
        ``n``, ``k_min``, ``k_median``, ``k_mean`` and ``share_below_<t>`` (share of records with
        ``k < t``, i.e. ``1 -`` MaskMyPy's ``k_satisfaction(t)``) for each threshold.

    Raises
    ------
    TypeError
        ``k`` holds something other than real numbers (booleans, text, complex numbers).
    geosynth.errors.InputError
        ``k`` is empty, not 1-d, has missing values or values that are not counts (negative,
        fractional, infinite), ``thresholds`` is not a sequence, or a threshold is not a
        positive integer.

    Examples
    --------
    >>> float(k_anonymity_summary([1, 4, 5, 30])["share_below_5"])
    0.5
    """
    values = _k_values(k)
    if not is_sequence(thresholds):  # a 0-d array raised "iteration over a 0-d array"
        raise InputTypeError(f"thresholds must be a sequence of positive integers, got "
                         f"{type(thresholds).__name__}; e.g. thresholds=(5, 25) or (5,)")
    out = {
        "n": float(values.size),
        "k_min": float(values.min()),
        "k_median": float(np.median(values)),
        "k_mean": float(values.mean()),
    }
    for t in thresholds:
        if isinstance(t, bool) or not isinstance(t, int | np.integer) or t < 1:
            raise InputError(f"thresholds must be positive integers, got {t!r}")
        out[f"share_below_{int(t)}"] = float(np.mean(values < t))
    return pd.Series(out, name="k_anonymity")


def _k_values(k: Any) -> np.ndarray:
    """Return ``k`` as a float array after checking it holds counts (whole numbers >= 0)."""
    values = check_real_array(k, "k", "an array of k-anonymity counts (spatial_k_anonymity output)")
    if values.ndim != 1 or values.size == 0:
        raise InputError(
            f"k must be a non-empty 1-d array of k-anonymity values (spatial_k_anonymity output), "
            f"got shape {values.shape}"
        )
    if np.isnan(values).any():
        raise InputError("k has missing values; pass the output of spatial_k_anonymity")
    bad = ~(np.isfinite(values) & (values >= 0) & (values == np.round(values)))
    if bad.any():
        raise InputError(
            f"k must hold counts of candidate locations (whole numbers >= 0), but "
            f"{int(bad.sum())} values are negative, fractional or infinite; pass the output of "
            "spatial_k_anonymity"
        )
    return values


# --------------------------------------------------------------------------- identification


@dataclass(frozen=True)
class IdentificationRisk:
    """Identification-disclosure measures of Reiter & Mitra (2009).

    Attributes
    ----------
    expected_match_risk : float
        ``Σ_j T_j / c_j``: the expected number of targets the intruder identifies correctly
        when picking at random among the ``c_j`` records tied at the highest match probability.
    true_match_rate : float
        ``Σ_j [c_j T_j = 1] / N``: share of targets matched uniquely and correctly.
    false_match_rate : float
        ``Σ_j [c_j (1 - T_j) = 1] / s``: share of the ``s`` unique matches that are wrong (NaN
        when ``s = 0``).
    n_records : int
        N, the number of records (every record is a target).
    n_unique_matches : int
        s, the number of targets with ``c_j = 1``.
    n_true_unique_matches : int
        ``Σ_j [c_j T_j = 1]``.
    n_unique_attributes : int
        Records whose attribute combination is unique in the original data; they are always
        true unique matches (see :func:`identification_risk`).
    records : pandas.DataFrame
        One row per record (index of ``original``): ``cell`` (true cell), ``n_candidates``
        (records sharing its attributes), ``max_probability``, ``c``, ``true_match`` (T),
        ``unique_match`` (``c == 1``), ``unique_attributes``. Confidential (the index and true
        cell of every record): left out of the repr, and never to be published.
    """

    expected_match_risk: float
    true_match_rate: float
    false_match_rate: float
    n_records: int
    n_unique_matches: int
    n_true_unique_matches: int
    n_unique_attributes: int
    # Not in the repr: a printed result (a log, a ticket) would show every record's id and cell.
    records: pd.DataFrame = field(repr=False)

    def summary(self) -> pd.Series:
        """Return the scalar measures as a Series.

        Returns
        -------
        pandas.Series
        """
        return pd.Series(
            {
                "expected_match_risk": self.expected_match_risk,
                "true_match_rate": self.true_match_rate,
                "false_match_rate": self.false_match_rate,
                "n_records": self.n_records,
                "n_unique_matches": self.n_unique_matches,
                "n_true_unique_matches": self.n_true_unique_matches,
                "n_unique_attributes": self.n_unique_attributes,
            },
            name="identification_risk",
        )


def identification_risk(
    original: gpd.GeoDataFrame,
    releases: gpd.GeoDataFrame | Sequence[gpd.GeoDataFrame],
    attributes: str | Sequence[str],
    grid: Grid,
    weighting: str = "reiter_mitra",
) -> IdentificationRisk:
    """Reiter & Mitra (2009) identification risk for an intruder who knows attributes and cell.

    The intruder knows, for each target record j, its attributes and the grid cell of its true
    location, and can link records across the m releases (worst case: records aligned by index,
    as in partially synthetic data where only locations are synthesised). A record r *matches*
    target j in release l if r has j's attributes and r's synthetic point in release l falls in
    j's true cell. The match probability of record r for target j is

    * ``weighting="reiter_mitra"`` (default): ``(1/m) Σ_l [r matches j in l] / F_jl``, where
      ``F_jl`` is the number of records matching j in release l (Reiter & Mitra 2009: in each
      release the intruder picks uniformly among the matching records);
    * ``weighting="share"``: ``(1/m) Σ_l [r matches j in l]``, the share of releases in which r
      matches.

    ``c_j`` is the number of records with j's attributes tied at the highest probability and
    ``T_j = 1`` if j is one of them. If no record ever falls in j's cell, every record with j's
    attributes ties at probability 0, so ``c_j`` is their number and ``T_j = 1``.

    Parameters
    ----------
    original : GeoDataFrame
        Confidential points with the attribute columns and a unique index.
    releases : GeoDataFrame or sequence of GeoDataFrame
        The m releases, each holding exactly the index labels of ``original``. Attribute columns
        may be omitted; if present they must equal the original values (only locations are
        synthesised).
    attributes : str or sequence of str
        Attribute columns the intruder knows.
    grid : geosynth.lattice.Grid
        The lattice whose cells the intruder knows; points are located with ``grid.locate``.
        Synthetic points outside the grid match no target.
    weighting : {"reiter_mitra", "share"}, default "reiter_mitra"
        How releases are combined into a match probability (see above).

    Returns
    -------
    IdentificationRisk
        Expected match risk, true match rate, false match rate and per-record details.

    Raises
    ------
    geosynth.errors.InputError
        Invalid points, attributes or index labels, an original point outside the grid, a
        release whose attributes differ from the original's, or a bad ``weighting``.
    geosynth.errors.CRSError
        CRSs differ between the inputs or from the grid (inputs without a CRS and a grid with
        one included).

    Notes
    -----
    Definitions (Reiter & Mitra 2009; also Drechsler & Reiter 2008): with N records,
    expected match risk ``= Σ_j T_j / c_j``; true match rate ``= Σ_j K_j / N`` with
    ``K_j = [c_j T_j = 1]``; false match rate ``= Σ_j F_j / s`` with ``F_j = [c_j (1 - T_j) = 1]``
    and ``s`` the number of targets with ``c_j = 1``. Probabilities within a relative ``1e-10``
    of the maximum count as tied (they are sums of fractions ``1/F`` and can differ in the last
    bits).

    **Synthesising locations alone does not protect records with a unique attribute
    combination**: such a record is the only candidate for itself, so ``c_j = 1`` and
    ``T_j = 1`` whatever its synthetic locations are. ``n_unique_attributes`` counts them; they
    need attribute coarsening or suppression.
    """
    if not isinstance(weighting, str):  # an array raised "truth value ... is ambiguous"
        check_choice(weighting, "weighting", ("reiter_mitra", "share"))
    if weighting not in ("reiter_mitra", "share"):
        raise InputError(f'weighting must be "reiter_mitra" or "share", got {weighting!r}')
    releases = as_releases(releases)
    check_frames(original, releases, projected=False)
    _check_grid(grid, original)
    cols = as_columns(attributes, "attributes")
    check_columns(original, cols, "original", "attribute")
    _check_index(original, "original")
    xy0 = frame_xy(original, "original")
    n, m = xy0.shape[0], len(releases)
    if n == 0:
        raise InputError("original has no rows; identification risk needs at least one record")
    cell0 = np.asarray(grid.locate(xy0), dtype=np.int64)
    outside = cell0 < 0
    if outside.any():
        raise InputError(
            f"{int(outside.sum())} original points are in no grid cell "
            f"({_rows(original.index, outside)}); the intruder's knowledge is a cell, so use a "
            "grid covering every original point (e.g. Grid.from_points(original, ...))"
        )
    cells = np.empty((n, m), dtype=np.int64)
    for ell, release in enumerate(releases):
        name = f"releases[{ell}]"
        xy = _aligned_xy(original, release, name)
        _check_same_attributes(original, release, cols, name)
        cells[:, ell] = grid.locate(xy)
    combo = original[cols].groupby(cols, sort=True, observed=True).ngroup().to_numpy()
    n_candidates = np.bincount(combo)[combo]
    n_cells = int(grid.n_cells)

    # One entry per (record, release) whose synthetic point is in a cell; key = (combo, cell).
    rec = np.repeat(np.arange(n, dtype=np.int64), m)
    rel = np.tile(np.arange(m, dtype=np.int64), n)
    cell = cells.ravel()
    inside = cell >= 0
    entries = pd.DataFrame(
        {
            "key": combo[rec[inside]] * n_cells + cell[inside],
            "release": rel[inside],
            "r": rec[inside],
        }
    )
    if weighting == "reiter_mitra":
        f = entries.groupby(["release", "key"], sort=False)["r"].transform("size").to_numpy()
        entries["w"] = 1.0 / f
    else:
        entries["w"] = 1.0
    scores = entries.groupby(["key", "r"], sort=True)["w"].sum() / m
    best = scores.groupby(level="key").transform("max")
    tied = scores >= best * (1.0 - _TIE_RTOL)
    c_key = tied.groupby(level="key").sum()
    best_key = best.groupby(level="key").first()

    target_key = combo * n_cells + cell0
    has = np.isin(target_key, c_key.index.to_numpy())
    c = n_candidates.astype(np.int64).copy()
    c[has] = c_key.reindex(target_key[has]).to_numpy()
    max_prob = np.zeros(n)
    max_prob[has] = best_key.reindex(target_key[has]).to_numpy()
    true_match = np.ones(n, dtype=bool)
    pairs = pd.MultiIndex.from_arrays([target_key[has], np.flatnonzero(has)])
    true_match[has] = tied.reindex(pairs, fill_value=False).to_numpy()

    unique = c == 1
    s = int(unique.sum())
    true_unique = int((unique & true_match).sum())
    false_unique = int((unique & ~true_match).sum())
    records = pd.DataFrame(
        {
            "cell": cell0,
            "n_candidates": n_candidates.astype(np.int64),
            "max_probability": max_prob,
            "c": c,
            "true_match": true_match,
            "unique_match": unique,
            "unique_attributes": n_candidates == 1,
        },
        index=original.index,
    )
    return IdentificationRisk(
        expected_match_risk=float(np.sum(true_match / c)),
        true_match_rate=true_unique / n,
        false_match_rate=false_unique / s if s else float("nan"),
        n_records=n,
        n_unique_matches=s,
        n_true_unique_matches=true_unique,
        n_unique_attributes=int((n_candidates == 1).sum()),
        records=records,
    )


# --------------------------------------------------------------------------- helpers


def combination_codes(
    frames: list[pd.DataFrame], cols: list[str]
) -> tuple[list[np.ndarray], pd.Index]:
    """Joint combination codes of ``cols`` over several frames, and the sorted combinations.

    Parameters
    ----------
    frames : list of pandas.DataFrame
        The original and the releases.
    cols : list of str
        The attribute columns.

    Returns
    -------
    codes : list of numpy.ndarray
        One int array per frame: the code 0..K-1 of each row's combination.
    keys : pandas.Index
        The K combinations in sorted order (code k is ``keys[k]``).

    Raises
    ------
    geosynth.errors.InputError
        The columns' values cannot be compared across the frames (mixed dtypes).
    """
    stacked = pd.concat([f[cols] for f in frames], ignore_index=True)
    try:
        grouped = stacked.groupby(cols, sort=True, observed=True)
        codes = grouped.ngroup().to_numpy()
        keys = grouped.size().index
    except TypeError as err:
        raise InputError(
            f"the values of {cols} cannot be compared across original and releases ({err}); "
            "give the columns the same dtype in every frame"
        ) from err
    bounds = np.cumsum([0] + [len(f) for f in frames])
    return [codes[bounds[k] : bounds[k + 1]] for k in range(len(frames))], keys


def nanmean_rows(values: np.ndarray) -> np.ndarray:
    """Mean of each row over its non-NaN entries; NaN (without a warning) for all-NaN rows.

    Parameters
    ----------
    values : numpy.ndarray, shape (k, m)

    Returns
    -------
    numpy.ndarray, shape (k,)
    """
    ok = ~np.isnan(values)
    count = ok.sum(axis=1)
    total = np.where(ok, values, 0.0).sum(axis=1)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def nanmin_rows(values: np.ndarray) -> np.ndarray:
    """Minimum of each row of a (k, m) array over its non-NaN entries, as :func:`nanmean_rows`.

    NaN (without a warning) for all-NaN rows.
    """
    ok = ~np.isnan(values)
    least = np.where(ok, values, np.inf).min(axis=1, initial=np.inf)
    return np.where(ok.any(axis=1), least, np.nan)


def split_by_code(codes: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """Row positions of each code 0..n_groups-1 (stable).

    Parameters
    ----------
    codes : numpy.ndarray of int
        One code per row, in ``[0, n_groups)``.
    n_groups : int
        Number of codes.

    Returns
    -------
    list of numpy.ndarray
        ``n_groups`` arrays of row positions, each in increasing order.
    """
    order = np.argsort(codes, kind="stable")
    edges = np.searchsorted(codes[order], np.arange(n_groups + 1))
    return [order[edges[g] : edges[g + 1]] for g in range(n_groups)]


def with_mean_row(table: pd.DataFrame) -> pd.DataFrame:
    """Append the unweighted column means (NaN skipped) as a row labelled "mean".

    The "mean" row of the per-combination tables of :func:`distance_risk` and
    :func:`geosynth.metrics.ripley_distance` (and of :func:`geosynth.evaluate`, which combines
    per-release tables). With a MultiIndex the label is ``("mean", "", ...)``.

    Parameters
    ----------
    table : pandas.DataFrame
        Numeric columns; the result has them as float64.

    Returns
    -------
    pandas.DataFrame
        ``table`` with one more row.

    Raises
    ------
    geosynth.errors.InputError
        A row of ``table`` is labelled ``"mean"`` already (in the first level of a MultiIndex),
        so the mean row could not be told from it.
    """
    first = table.index.get_level_values(0)
    if (first.astype(object) == MEAN_LABEL).any():
        raise InputError(
            f"the table has a combination labelled {MEAN_LABEL!r}, the label of its mean row; "
            "rename that level of the first attribute in the original and the releases"
        )
    means = table.mean(axis=0, skipna=True).to_frame().T
    if isinstance(table.index, pd.MultiIndex):
        label = (MEAN_LABEL,) + ("",) * (table.index.nlevels - 1)
        means.index = pd.MultiIndex.from_tuples([label], names=table.index.names)
    else:
        means.index = pd.Index([MEAN_LABEL], name=table.index.name)
    out = pd.concat([table.astype({c: float for c in table.columns}), means])
    return out


def check_mean_label(frame: pd.DataFrame, cols: list[str], role: str, hint: str = "") -> None:
    """Refuse a level ``"mean"`` in the first of ``cols``: the label of the tables' mean row.

    The mean row is labelled ``"mean"`` (``("mean", "", ...)`` under several columns), so a
    combination whose first level is ``"mean"`` would share its label: ``table.loc["mean"]``
    gave both rows. Checked before any measure, so the refusal comes at once.

    Parameters
    ----------
    frame : pandas.DataFrame
        The original records (the tables have a row per combination of ``frame``).
    cols : list of str
        The columns that define the combinations (checked present).
    role : str
        What the columns are, for the message (e.g. ``"by column"``).
    hint : str, default ""
        Another way out, appended to the message (e.g. ``"or pass mean_row=False"``).

    Raises
    ------
    geosynth.errors.InputError
        ``frame[cols[0]]`` has the level ``"mean"``.
    """
    if (frame[cols[0]].astype(object) == MEAN_LABEL).any():
        raise InputError(
            f"{role} {cols[0]!r} has a level {MEAN_LABEL!r}, the label of the tables' mean row, "
            "so the two rows could not be told apart; rename the level in the original and the "
            f"releases (e.g. gdf[{cols[0]!r}].replace({MEAN_LABEL!r}, 'mean level'))"
            + (f", {hint}" if hint else "")
        )


def _check_index(frame: pd.DataFrame, name: str) -> None:
    dup = frame.index.duplicated()
    if dup.any():
        raise InputError(
            f"{name} has {int(dup.sum())} duplicated index labels ({_rows(frame.index, dup)}); "
            "records are linked by index, so give every record a unique label "
            f"({name}.reset_index(drop=True) if the order is the link)"
        )


def _aligned_xy(original: pd.DataFrame, release: gpd.GeoDataFrame, name: str) -> np.ndarray:
    """Coordinates of ``release`` reordered to the index of ``original`` (same label set).

    A public release (:func:`geosynth.to_public`, or a DP one) is refused: its rows are shuffled
    and its fresh RangeIndex pairs record k with an unrelated row k of a default-indexed
    ``original``, which gave displacement and spatial k-anonymity numbers without a word.
    """
    if is_public(release):
        raise InputError(
            f"{name} is a public release (geosynth.to_public or a DP release): its rows are "
            "shuffled and no longer belong to the records of original, and this measure links "
            "each record to its synthetic point by index; pass the internal output of "
            "geosynth.synthesize (before to_public)"
        )
    _check_index(original, "original")
    _check_index(release, name)
    missing = original.index.difference(release.index, sort=False)
    extra = release.index.difference(original.index, sort=False)
    if len(missing) or len(extra):
        parts = []
        if len(missing):
            parts.append(
                f"{len(missing)} original labels missing from {name} "
                f"(e.g. {missing[:_SHOW].tolist()})"
            )
        if len(extra):
            parts.append(
                f"{len(extra)} labels of {name} not in original (e.g. {extra[:_SHOW].tolist()})"
            )
        raise InputError(
            f"records are linked by index, but {' and '.join(parts)}; give each release the "
            "index of the original records"
        )
    xy = frame_xy(release, name)
    return xy[release.index.get_indexer(original.index)]


def _check_same_attributes(
    original: pd.DataFrame, release: pd.DataFrame, cols: list[str], name: str
) -> None:
    present = [c for c in cols if c in release.columns]
    if not present:
        return
    check_columns(release, present, name, "attribute")  # one column each, no missing values
    aligned = release.loc[original.index, present]
    for column in present:
        differ = ~(aligned[column].to_numpy() == original[column].to_numpy())
        if differ.any():
            raise InputError(
                f"attribute {column!r} of {name} differs from the original in "
                f"{int(differ.sum())} records ({_rows(original.index, differ)}); "
                "identification_risk assumes only locations are synthesised: drop the column "
                "from the release or pass the original attribute values"
            )


def check_has_rows(original: pd.DataFrame, where: str) -> None:
    """Refuse an ``original`` without rows: its table was only a mean row of NaN.

    Parameters
    ----------
    original : pandas.DataFrame
        The confidential records.
    where : str
        The measure, named in the message.

    Raises
    ------
    geosynth.errors.InputError
        ``original`` has no rows.
    """
    if len(original) == 0:
        raise InputError(
            f"original has no rows, so {where} has no combination to measure; pass the "
            "confidential points the releases were made from"
        )


def check_grid_type(grid: Any) -> None:
    """Refuse a ``grid`` that is not a lattice (no ``locate``, ``n_cells`` and ``crs``).

    Parameters
    ----------
    grid : Any
        The ``grid`` argument of a measure.

    Raises
    ------
    geosynth.errors.InputError
        ``grid`` lacks ``locate``, ``n_cells`` or ``crs`` (e.g. None).
    """
    if not all(hasattr(grid, a) for a in ("locate", "n_cells", "crs")):
        raise InputError(
            f"grid must be a geosynth.lattice.Grid, got {type(grid).__name__}; build one with "
            "Grid.regular(bounds, shape=..., crs=...) or Grid.from_points(original, ...)"
        )


def _check_grid(grid: Any, original: gpd.GeoDataFrame) -> None:
    """Refuse a non-lattice ``grid``, or ``original`` without the grid's CRS (none at all too).

    A frame without a CRS next to a grid with one may hold coordinates in other units: every
    point then fell outside the cells or into the wrong ones, silently.
    """
    check_grid_type(grid)
    if original.crs is None and grid.crs is not None:
        raise CRSError(
            f"original has no CRS while the grid uses {grid.crs.to_string()}; if the "
            "coordinates are already in that CRS use original.set_crs(grid.crs), otherwise set "
            "the true CRS and reproject with original.to_crs(grid.crs)"
        )
    if grid.crs is not None and not original.crs.equals(grid.crs, ignore_axis_order=True):
        raise CRSError(
            f"original has CRS {original.crs.to_string()} but the grid has "
            f"{grid.crs.to_string()}; reproject with original.to_crs(grid.crs)"
        )


def check_same_crs(original: Any, other: Any, name: str, ref: str = "original") -> None:
    """Refuse two frames whose CRSs differ (one without a CRS next to one with a CRS too).

    Parameters
    ----------
    original : GeoDataFrame or GeoSeries
        The reference frame.
    other : GeoDataFrame or GeoSeries
        The frame checked against it.
    name : str
        How the caller calls ``other``, for the message.
    ref : str, default "original"
        How the caller calls ``original``, for the message.

    Raises
    ------
    geosynth.errors.CRSError
        The CRSs differ.
    """
    a, b = original.crs, other.crs
    if (a is None) != (b is None) or (a is not None and not a.equals(b, ignore_axis_order=True)):
        raise CRSError(
            f"{name} has CRS {None if b is None else b.to_string()} but {ref} has "
            f"{None if a is None else a.to_string()}; reproject with {name}.to_crs({ref}.crs)"
        )

