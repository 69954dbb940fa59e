"""Utility measures: combining rules, interval overlap, quadrant coverage and Ripley's K.

* :func:`combine_partially_synthetic` and :func:`combine_fully_synthetic` -- inference from m
  synthetic data sets (Reiter 2003; Raghunathan, Reiter & Rubin 2003; Reiter 2002). The thesis
  (Nunes 2018, eqs. 3.3–3.5) uses the partially synthetic rules for its proportions.
* :func:`interval_overlap` -- how much two confidence intervals agree: the thesis' geometric
  mean of the two covered proportions, or Karr et al. (2006)'s average.
* :func:`quadrant_coverage` -- Nunes (2018, §3.3): random rectangles not aligned with the cells,
  the proportion of ``outcome == 1`` inside them estimated on the original (Wald interval) and on
  the releases (combining rules), and the mean overlap of the two intervals over rectangles
  (the thesis' "taxa de cobertura", 0.665–0.746 in §4).
* :func:`ripley_k` and :func:`ripley_distance` -- spatial-pattern utility: Ripley's K and
  L functions with edge correction for a rectangular window, and the largest gap between the
  original and synthetic L functions per attribute combination.
* :func:`intensity_fidelity` -- original against synthetic counts per cell of one lattice
  (correlation, L1 distance of the shares): releases made on different lattices compared on a
  common one.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import geopandas as gpd
import numpy as np
import pandas as pd
from scipy import stats
from scipy.spatial import cKDTree

from geosynth._messages import describe_rows, list_positions
from geosynth._random import SeedLike, as_generator
from geosynth._validation import (
    MAX_CONTINUOUS,
    check_bool,
    check_int,
    check_probability,
    check_real,
    check_real_array,
    check_unique_columns,
    describe_value,
    is_sequence,
)
from geosynth.data import check_crs
from geosynth.errors import InputError, InputTypeError
from geosynth.lattice import require_projected_crs
from geosynth.metrics.matching import (
    as_columns,
    as_releases,
    as_xy,
    check_columns,
    check_frames,
    check_level_types,
    frame_xy,
)
from geosynth.metrics.risk import (
    check_grid_type,
    check_has_rows,
    check_mean_label,
    check_same_crs,
    combination_codes,
    nanmean_rows,
    split_by_code,
    with_mean_row,
)
from geosynth.synth.release import release_info

if TYPE_CHECKING:
    from geosynth.lattice import Grid

__all__ = [
    "as_bounds",
    "CombinedEstimate",
    "combine_partially_synthetic",
    "combine_fully_synthetic",
    "interval_overlap",
    "continuous_utility",
    "IntensityFidelity",
    "intensity_fidelity",
    "is_binary",
    "non_binary",
    "binary_outcome",
    "QuadrantCoverage",
    "quadrant_coverage",
    "RipleyK",
    "ripley_k",
    "ripley_distance",
    "original_l_functions",
    "MAX_QUADRANTS",
    "check_n_quadrants",
    "MIN_POINTS",
    "MAX_DATA_SIZE",
    "MAX_K_POINTS",
    "k_subsample",
    "RULES",
    "check_rules",
    "check_release_rules",
    "combining_rules",
]

# Elements per boolean (rectangles x points) block in quadrant_coverage.
_BLOCK = 2**22
# Pairs per chunk when enumerating point pairs for Ripley's K.
_PAIR_CHUNK = 2**22
# Rectangles drawn per accepted rectangle before quadrant_coverage gives up.
_MAX_DRAWS_PER_QUADRANT = 200
#: The most rectangles quadrant_coverage draws (their table holds ~10 numbers each).
MAX_QUADRANTS = 10**7
#: Default of quadrant_coverage's ``min_points``: original points every rectangle holds.
MIN_POINTS = 20
#: The largest data set size combine_fully_synthetic takes: 2**62 records are no data set of
#: people, and the ratio of two sizes up to it stays a normal float.
MAX_DATA_SIZE = 2**62
#: Default ``max_points`` of :func:`ripley_distance`: each K function from at most this many
#: points. Measured on 30,000 clustered points (40 clusters of SD 30 in a 1,000 m square, the
#: isotropic correction): all of them 119 s; 10,000 took 13.8 s, 5,000 3.7 s, with a largest
#: gap in L of 1.1 and 0.9 m against all of them (L reaches 280 m), where a poor synthesis
#: leaves tens of metres.
MAX_K_POINTS = 5_000


# --------------------------------------------------------------------------- combining rules


class CombinedEstimate(NamedTuple):
    """Point estimate, variance, degrees of freedom and interval from m synthetic data sets.

    Floats for one estimand; arrays for a batch (``q`` of shape ``(m, ...)``).

    Attributes
    ----------
    estimate : float or numpy.ndarray
        ``q̄_m``, the mean of the per-release estimates.
    variance : float or numpy.ndarray
        Total variance ``T`` of ``q̄_m``.
    df : float or numpy.ndarray
        Degrees of freedom of the t reference distribution (``inf``: normal).
    lower, upper : float or numpy.ndarray
        Interval ``q̄_m ∓ t_{df, (1+level)/2} sqrt(T)``.
    """

    estimate: Any
    variance: Any
    df: Any
    lower: Any
    upper: Any


def combine_partially_synthetic(q: Any, u: Any, level: float = 0.95) -> CombinedEstimate:
    """Combine estimates from m partially synthetic data sets (Reiter 2003).

    With ``q̄_m = Σ q_l / m``, ``b_m = Σ (q_l - q̄_m)² / (m - 1)`` and ``ū_m = Σ u_l / m``, the
    variance of ``q̄_m`` is ``T_p = b_m / m + ū_m`` and ``(Q - q̄_m) / sqrt(T_p)`` has a t
    distribution with ``ν_p = (m - 1) (1 + m ū_m / b_m)²`` degrees of freedom (Nunes 2018,
    eqs. 3.3–3.5).

    Parameters
    ----------
    q : array-like, shape (m,) or (m, ...)
        Point estimate from each release (axis 0 runs over releases; further axes are a batch of
        estimands).
    u : array-like, same shape as ``q``
        Estimated variance of each ``q``.
    level : float, default 0.95
        Confidence level of the interval.

    Returns
    -------
    CombinedEstimate
        ``(estimate, variance, df, lower, upper)``; floats when ``q`` is 1-d.

    Raises
    ------
    TypeError
        ``q`` or ``u`` holds something other than real numbers (booleans, text, complex
        numbers, None), or ``level`` is not a real number.
    geosynth.errors.InputError
        Fewer than 2 releases, shapes differ, non-finite values or values beyond
        ``MAX_CONTINUOUS`` in absolute value, negative variances, masked entries, or a level
        outside (0, 1).

    Notes
    -----
    When ``b_m = 0`` the degrees of freedom are infinite (the limit of ``ν_p``) and the interval
    is normal; with ``b_m = ū_m = 0`` the interval is the single point ``q̄_m``.

    The thesis (Nunes 2018, §3.3) attributes these rules to Raghunathan, Reiter & Rubin (2003),
    but its ``T_m = b_m / m + ū_m`` and ``ν_m`` are Reiter's (2003) rules for partially
    synthetic data; Raghunathan et al.'s are the fully synthetic ones
    (:func:`combine_fully_synthetic`). The formulas are right for the thesis' releases, which
    keep the records' attributes; the citation is not.

    Examples
    --------
    q = (1, 2, 3), u = (1, 1, 1): q̄ = 2, b = 1, ū = 1, T = 1/3 + 1 = 4/3,
    ν = 2 (1 + 3)² = 32.

    >>> r = combine_partially_synthetic([1.0, 2.0, 3.0], [1.0, 1.0, 1.0])
    >>> r.estimate, round(r.variance, 12), r.df
    (2.0, 1.333333333333, 32.0)
    """
    qa, ua, level = _check_qu(q, u, level)
    est, var, df = _partial(qa, ua)
    return _finish(est, var, df, level, scalar=qa.ndim == 1)


def combine_fully_synthetic(
    q: Any,
    u: Any,
    level: float = 0.95,
    n_synthetic: int | None = None,
    n_original: int | None = None,
) -> CombinedEstimate:
    """Combine estimates from m fully synthetic data sets (Raghunathan, Reiter & Rubin 2003).

    ``T_f = (1 + 1/m) b_m - ū_m`` with ``ν_f = (m - 1) (1 - m ū_m / ((m + 1) b_m))²`` degrees of
    freedom. ``T_f`` can be negative; then Reiter's (2002) non-negative adjustment
    ``T_f* = (n_syn / n) ū_m`` is used (see Notes).

    Parameters
    ----------
    q : array-like, shape (m,) or (m, ...)
        Point estimate from each release (axis 0 runs over releases).
    u : array-like, same shape as ``q``
        Estimated variance of each ``q``.
    level : float, default 0.95
        Confidence level.
    n_synthetic, n_original : int, optional
        Sizes of each synthetic data set and of the original data, for the adjustment; give both
        or neither (default ratio 1).

    Returns
    -------
    CombinedEstimate
        ``(estimate, variance, df, lower, upper)``; floats when ``q`` is 1-d.

    Raises
    ------
    TypeError
        As :func:`combine_partially_synthetic`, or a size that is not an int.
    geosynth.errors.InputError
        As :func:`combine_partially_synthetic`, or only one of ``n_synthetic``/``n_original``,
        or a size < 1 or above :data:`MAX_DATA_SIZE`.

    Notes
    -----
    Reiter (2002, "Satisfying disclosure restrictions with synthetic data sets") proposes
    ``T_f* = max(0, T_f) + δ (n_syn / n) ū_m`` with ``δ = 1`` when ``T_f < 0``. We also apply
    the adjustment when ``T_f = 0`` (a zero variance would give a zero-width interval), i.e.
    ``T = (n_syn / n) ū_m`` whenever ``T_f <= 0``. ``ν_f`` is derived for ``T_f > 0`` and is
    meaningless after the adjustment, so adjusted intervals use the normal reference
    (``df = inf``): the adjusted variance is the within-release variance of one data set of
    size n, treated as known. That choice is ours.

    Examples
    --------
    q = (1, 2, 3), u = (0.5, 0.5, 0.5): b = 1, ū = 0.5, T_f = (4/3)·1 - 0.5 = 5/6,
    ν_f = 2 (1 - 3·0.5 / (4·1))² = 2 (5/8)² = 0.78125.

    >>> r = combine_fully_synthetic([1.0, 2.0, 3.0], [0.5, 0.5, 0.5])
    >>> round(r.variance, 12), r.df
    (0.833333333333, 0.78125)
    """
    qa, ua, level = _check_qu(q, u, level)
    if (n_synthetic is None) != (n_original is None):
        raise InputError(
            "give both n_synthetic and n_original (sizes of each synthetic data set and of the "
            "original data) or neither"
        )
    ratio = 1.0
    if n_synthetic is not None:
        ratio = _check_size(n_synthetic, "n_synthetic") / _check_size(n_original, "n_original")
    est, var, df = _full(qa, ua, ratio)
    return _finish(est, var, df, level, scalar=qa.ndim == 1)


def _check_size(value: Any, name: str) -> int:
    """Return a data set's size after checking it is an int in [1, MAX_DATA_SIZE].

    10**400 records raised Python's OverflowError in ``n_synthetic / n_original``, and as
    ``n_original`` made the ratio 0.0: a zero variance, a point interval.
    """
    size = check_int(value, name)
    if size > MAX_DATA_SIZE:
        # bit_length, not digits: str() of an int beyond 4,300 digits raises ValueError
        raise InputError(f"{name} must be at most {MAX_DATA_SIZE:,} (2**62) records, got a "
                         f"{size.bit_length()}-bit number; pass the number of records")
    return size


def _check_qu(q: Any, u: Any, level: Any) -> tuple[np.ndarray, np.ndarray, float]:
    qa = check_real_array(q, "q", "an array of estimates, one per release along axis 0")
    ua = check_real_array(u, "u", "an array of the estimates' variances, shaped like q")
    if qa.shape != ua.shape:
        raise InputError(f"q and u must have the same shape, got {qa.shape} and {ua.shape}")
    if qa.ndim == 0 or qa.shape[0] < 2:
        raise InputError(
            f"q must hold one estimate per release along axis 0 with at least 2 releases, got "
            f"shape {qa.shape}; the between-release variance b_m needs m >= 2"
        )
    if not (np.isfinite(qa).all() and np.isfinite(ua).all()):
        raise InputError("q and u must be finite; drop releases where the estimate is undefined")
    _check_magnitude(qa, "q", "estimates")
    _check_magnitude(ua, "u", "variances")
    if (ua < 0).any():
        raise InputError("u holds variances and must be >= 0")
    return qa, ua, check_probability(level, "level", hint="e.g. level=0.95")


def _check_magnitude(values: np.ndarray, name: str, what: str) -> None:
    """Refuse finite values beyond ``MAX_CONTINUOUS``: their squares and sums overflow to inf."""
    if (np.abs(values) > MAX_CONTINUOUS).any():
        raise InputError(
            f"{name} has {what} above {MAX_CONTINUOUS:g} in absolute value, where squares and "
            f"differences overflow to inf; express {name} in larger units"
        )


def _partial(qa: np.ndarray, ua: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reiter (2003) rules along axis 0; NaN inputs propagate."""
    m = qa.shape[0]
    est = qa.mean(axis=0)
    b = qa.var(axis=0, ddof=1)
    ubar = ua.mean(axis=0)
    var = b / m + ubar
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # b -> 0: ν -> inf
        df = (m - 1) * (1.0 + m * ubar / b) ** 2
    df = np.where(b == 0, np.inf, df)  # the limit b -> 0 (also when ubar = 0)
    return est, var, df


def _full(
    qa: np.ndarray, ua: np.ndarray, ratio: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Raghunathan, Reiter & Rubin (2003) rules along axis 0, with Reiter's (2002) adjustment.

    ``ratio`` is ``n_syn / n`` of the adjustment (a scalar or one per estimate); NaN inputs
    propagate.
    """
    m = qa.shape[0]
    est = qa.mean(axis=0)
    b = qa.var(axis=0, ddof=1)
    ubar = ua.mean(axis=0)
    t_f = (1.0 + 1.0 / m) * b - ubar
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # adjusted below
        df = (m - 1) * (1.0 - m * ubar / ((m + 1) * b)) ** 2
    adjust = t_f <= 0
    var = np.where(adjust, ratio * ubar, t_f)
    df = np.where(adjust, np.inf, df)
    return est, var, df


#: Degrees of freedom below which the t quantile is taken as infinite (:func:`_finish`).
_TINY_DF = 0.01


def _finish(
    est: np.ndarray, var: np.ndarray, df: np.ndarray, level: float, scalar: bool
) -> CombinedEstimate:
    quantile = stats.t.ppf(0.5 + level / 2, df)
    # The quantile grows without bound as ν -> 0 (past 1e128 at ν = 0.01 for level 0.95), but
    # SciPy's stops growing there (6.7e3 at ν = 1e-300) and is NaN at ν = 0, which the fully
    # synthetic ν reaches when 1 - m·ū/((m+1)·b) rounds to 0: an infinite interval instead.
    quantile = np.where(df < _TINY_DF, np.inf, quantile)
    with np.errstate(invalid="ignore"):  # inf * 0 where var = 0: a point interval, below
        half = quantile * np.sqrt(var)
    half = np.where(var == 0, 0.0, half)  # a point interval, whatever the quantile
    out = (est, var, df, est - half, est + half)
    if scalar:
        return CombinedEstimate(*(float(v) for v in out))
    return CombinedEstimate(*(np.asarray(v, dtype=np.float64) for v in out))


# --------------------------------------------------------------------------- interval overlap


def interval_overlap(a: Any, b: Any, kind: str = "geometric") -> Any:
    """Agreement of two intervals, 1 for identical intervals and <= 0 for disjoint ones.

    Let ``o = min(U_a, U_b) - max(L_a, L_b)`` be the signed overlap length (negative for
    disjoint intervals) and ``p_a = o / (U_a - L_a)``, ``p_b = o / (U_b - L_b)`` the proportions
    of each interval covered by the other.

    * ``kind="geometric"`` (Nunes 2018, §3.3): ``sqrt(max(p_a, 0) · max(p_b, 0))``, the geometric
      mean of the two covered proportions; in [0, 1], 0 for disjoint or touching intervals.
    * ``kind="karr"`` (Karr et al. 2006): ``(p_a + p_b) / 2``, i.e.
      ``o / (2 (U_a - L_a)) + o / (2 (U_b - L_b))``; negative for disjoint intervals, the more
      negative the farther apart.

    Parameters
    ----------
    a, b : array-like, shape (2,) or (..., 2)
        Intervals as ``(lower, upper)`` pairs; batches broadcast against each other.
    kind : {"geometric", "karr"}, default "geometric"
        The measure.

    Returns
    -------
    float or numpy.ndarray
        A float for two single intervals, otherwise an array of the broadcast batch shape.

    Raises
    ------
    TypeError
        Bounds that are not real numbers (booleans, text, complex numbers).
    geosynth.errors.InputError
        Not ``(lower, upper)`` pairs, NaN or infinite bounds or bounds beyond
        ``MAX_CONTINUOUS`` in absolute value, ``lower > upper``, batches of ``a`` and ``b``
        that do not broadcast, or an unknown ``kind``.

    Notes
    -----
    A zero-length interval ``[c, c]`` counts as covered (proportion 1) if ``c`` lies in the other
    (closed) interval and not at all (proportion 0) otherwise, in both kinds; so two equal points
    give 1 and, for ``"karr"``, a point outside the other interval gives a non-positive value
    instead of minus infinity.

    Examples
    --------
    ``[0, 2]`` and ``[1, 4]`` overlap on ``[1, 2]``: half of the first and a third of the second
    are covered, so the geometric mean is sqrt(1/6) and Karr's measure (1/2 + 1/3)/2 = 5/12.

    >>> a, b = (0, 2), (1, 4)
    >>> round(interval_overlap(a, b), 6), round(interval_overlap(a, b, "karr"), 6)
    (0.408248, 0.416667)
    >>> interval_overlap((0, 1), (0, 1)), interval_overlap((0, 1), (2, 3), "karr")
    (1.0, -1.0)
    """
    _check_kind(kind)
    la, ua = _bounds(a, "a")
    lb, ub = _bounds(b, "b")
    try:
        np.broadcast_shapes(la.shape, lb.shape)
    except ValueError:  # NumPy's "operands could not be broadcast together" named neither
        raise InputError(f"a and b hold batches of {la.shape} and {lb.shape} intervals, which "
                         "do not broadcast; pass one interval per pair (the same batch shape) "
                         "or a single interval for either") from None
    value = _overlap(la, ua, lb, ub, kind)
    if np.ndim(value) == 0:
        return float(value)
    return value


def _check_kind(kind: Any) -> None:
    """Refuse an overlap measure other than the two names (an array raised NumPy's error)."""
    if not isinstance(kind, str) or kind not in ("geometric", "karr"):
        raise InputError(f'kind must be "geometric" or "karr", got {kind!r}')


def _overlap(la: np.ndarray, ua: np.ndarray, lb: np.ndarray, ub: np.ndarray,
             kind: str) -> np.ndarray:
    """Overlap of checked intervals ``[la, ua]`` and ``[lb, ub]`` (:func:`interval_overlap`).

    An unbounded second interval (``quadrant_coverage``'s fully synthetic rules with ν_f near
    0) is taken at its limit: it covers the first, and none of it is covered (geometric 0,
    Karr 1/2).
    """
    over = np.minimum(ua, ub) - np.maximum(la, lb)
    pa = _covered(over, la, ua, lb, ub)
    with np.errstate(invalid="ignore"):
        pb = np.where(np.isinf(ub - lb), 0.0, _covered(over, lb, ub, la, ua))
    if kind == "geometric":
        return np.sqrt(np.maximum(pa, 0.0) * np.maximum(pb, 0.0))
    return (pa + pb) / 2


def _bounds(x: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    arr = check_real_array(x, name, "(lower, upper) pairs of numbers")
    if arr.ndim == 0 or arr.shape[-1] != 2:
        raise InputError(
            f"{name} must be a (lower, upper) pair or an array of shape (..., 2), got shape "
            f"{arr.shape}"
        )
    lower, upper = arr[..., 0], arr[..., 1]
    if np.isnan(arr).any():
        raise InputError(f"{name} has NaN bounds; drop undefined intervals first")
    if not np.isfinite(arr).all():  # [-inf, inf] against itself gave NaN, [0, inf] 0.5
        raise InputError(f"{name} has infinite bounds, whose covered share is undefined; "
                         "drop unbounded intervals first")
    _check_magnitude(arr, name, "bounds")
    if (lower > upper).any():
        raise InputError(f"{name} has intervals with lower > upper; pass (lower, upper) pairs")
    return lower, upper


def _covered(
    over: np.ndarray, lo: np.ndarray, hi: np.ndarray, lo2: np.ndarray, hi2: np.ndarray
) -> np.ndarray:
    """Signed proportion of [lo, hi] covered by [lo2, hi2] (point intervals: 1 inside, 0 not)."""
    length = hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        p = over / length
    point = length == 0
    return np.where(point, ((lo >= lo2) & (lo <= hi2)).astype(float), p)


# --------------------------------------------------------------------------- quadrant coverage


@dataclass(frozen=True)
class QuadrantCoverage:
    """Result of :func:`quadrant_coverage`.

    Attributes
    ----------
    mean_overlap : float
        Mean interval overlap over the rectangles where it is defined (the thesis' coverage
        rate).
    n_quadrants : int
        Number of rectangles drawn (all hold at least ``min_points`` original points).
    n_undefined : int
        Rectangles without a combined interval because some release has no point inside;
        excluded from ``mean_overlap``.
    kind : str
        The overlap measure (see :func:`interval_overlap`).
    level : float
        Confidence level of the intervals.
    rules : str
        Combining rules of the releases, ``"partial"`` or ``"full"``.
    quadrants : pandas.DataFrame
        One row per rectangle: ``x0, y0, x1, y1``; ``n_original, p_original, lower_original,
        upper_original`` (Wald); ``n_synthetic`` (mean over releases), ``p_synthetic,
        variance_synthetic, df_synthetic, lower_synthetic, upper_synthetic`` (combining rules);
        ``overlap``. Confidential (exact counts and proportions of the original in small
        rectangles): left out of the repr.
    """

    mean_overlap: float
    n_quadrants: int
    n_undefined: int
    kind: str
    level: float
    rules: str
    quadrants: pd.DataFrame = field(repr=False)  # the original's proportion per rectangle


def quadrant_coverage(
    original: gpd.GeoDataFrame,
    releases: gpd.GeoDataFrame | Sequence[gpd.GeoDataFrame],
    outcome: str,
    n_quadrants: int = 1000,
    seed: SeedLike = None,
    min_points: int = MIN_POINTS,
    bounds: Any = None,
    level: float = 0.95,
    kind: str = "geometric",
    rules: str | None = None,
) -> QuadrantCoverage:
    """Interval overlap of a proportion over random rectangles (Nunes 2018, §3.3).

    Each rectangle has corners drawn uniformly within ``bounds`` (two uniform x's and two uniform
    y's, sorted), so rectangles are not aligned with grid cells; rectangles holding fewer than
    ``min_points`` original points are redrawn. In each rectangle (closed, boundary included):

    * original data: ``p̂ = (# outcome == 1) / n`` with the Wald interval
      ``p̂ ∓ z sqrt(p̂ (1 - p̂) / n)``;
    * releases: ``q_l`` and ``u_l = q_l (1 - q_l) / n_l`` per release, combined with
      :func:`combine_partially_synthetic` (thesis eqs. 3.3–3.5), or for fully synthetic
      releases with :func:`combine_fully_synthetic` (``rules="full"``);

    and the overlap of the two intervals is measured with :func:`interval_overlap`. The result's
    ``mean_overlap`` is the thesis' coverage rate.

    Parameters
    ----------
    original : GeoDataFrame
        Confidential points with the ``outcome`` column.
    releases : GeoDataFrame or sequence of GeoDataFrame
        The m >= 2 releases with the ``outcome`` column, in the CRS of ``original``.
    outcome : str
        Binary column (0/1 or bool).
    n_quadrants : int, default 1000
        Number of rectangles (the thesis uses 1000).
    seed : None, int, SeedSequence or Generator
        Randomness of the rectangles (see :func:`geosynth._random.as_generator`).
    min_points : int, default 20
        Minimum number of original points in a rectangle, so the Wald interval is not
        degenerate too often.
    bounds : tuple of 4 floats or Grid, optional
        ``(xmin, ymin, xmax, ymax)`` of the region to draw corners in, or a Grid (its bounds).
        Default: the bounds of the original points.
    level : float, default 0.95
        Confidence level.
    kind : {"geometric", "karr"}, default "geometric"
        Overlap measure; the thesis uses the geometric mean.
    rules : {"partial", "full"}, optional
        Combining rules of the releases (None, the default: taken from the releases' records,
        :func:`check_release_rules`; ``"partial"`` is refused for releases made with ε):
        ``"partial"`` (Reiter 2003) for releases that
        synthesize the locations and keep the records' attributes, as
        :func:`geosynth.synthesize` and the baselines do; ``"full"`` (Raghunathan, Reiter &
        Rubin 2003) for releases in which every value is synthetic, such as the ε-DP releases
        of :func:`geosynth.dp.dp_release`. The partial rules' variance ``ū_m + b_m/m`` is far
        below the full rules' ``(1 + 1/m) b_m - ū_m`` when the releases vary much, so applied
        to fully synthetic releases they give intervals too narrow. The adjustment of a
        non-positive ``T_f`` uses each rectangle's ``n_syn / n`` (mean synthetic over original
        points).

    Returns
    -------
    QuadrantCoverage

    Raises
    ------
    TypeError
        ``n_quadrants`` or ``min_points`` is not an int, or ``level`` not a real number.
    geosynth.errors.InputError
        Invalid frames, a missing or non-binary ``outcome``, fewer than 2 releases, bad
        parameters, ``min_points`` above the number of original points within ``bounds``
        (refused before any rectangle is drawn), or too few rectangles reach ``min_points``
        (after 200 draws per requested rectangle).
    geosynth.errors.CRSError
        CRSs differ (a Grid as ``bounds`` included).

    Notes
    -----
    The Wald interval is not clipped to [0, 1]. When ``p̂`` is 0 or 1 the interval is a point,
    and :func:`interval_overlap` scores 1 only if the synthetic interval is the same point: the
    point's share covered is 1 but the synthetic interval's share covered is 0, so the geometric
    mean is 0 (Karr's measure 0.5). This is the limit of the thesis' definition (§3.3, which
    leaves the 0/0 open), and it lowers ``mean_overlap`` where the outcome is all 0 or all 1
    in a rectangle. A rectangle in which some release has no point has no combined interval:
    its overlap is NaN and it is left out of ``mean_overlap`` (counted in ``n_undefined``).
    Releases identical to the original give ``b_m = 0`` (up to rounding of the variance), a
    normal interval equal to the Wald interval, and overlap 1 to within rounding.
    """
    releases = as_releases(releases)
    check_frames(original, releases, projected=False)
    if len(releases) < 2:
        raise InputError(
            "quadrant_coverage needs at least 2 releases (the combining rules use the "
            "between-release variance); pass the list of m synthetic GeoDataFrames"
        )
    n_quadrants = check_n_quadrants(n_quadrants)
    min_points = check_int(min_points, "min_points")
    level = check_probability(level, "level", hint="e.g. level=0.95")
    _check_kind(kind)
    rules = check_release_rules(releases, rules)
    xy0 = frame_xy(original, "original")
    y0 = binary_outcome(original, outcome, "original")
    synth = []
    for k, release in enumerate(releases):
        name = f"releases[{k}]"
        synth.append((frame_xy(release, name), binary_outcome(release, outcome, name)))
    box = as_bounds(bounds, xy0, "bounds", original, "original")
    _check_min_points(xy0, box, min_points, bounds is None)
    rng = as_generator(seed)

    rects, n0, s0 = _draw_rectangles(rng, box, xy0, y0, n_quadrants, min_points)
    m = len(releases)
    n_syn = np.empty((m, n_quadrants))
    q = np.empty((m, n_quadrants))
    for ell, (xy, y) in enumerate(synth):
        n_l, s_l = _rect_counts(xy, y, rects)
        n_syn[ell] = n_l
        with np.errstate(divide="ignore", invalid="ignore"):
            q[ell] = np.where(n_l > 0, s_l / n_l, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = q * (1 - q) / n_syn
    if rules == "full":
        with np.errstate(divide="ignore", invalid="ignore"):
            est, var, df = _full(q, u, n_syn.mean(axis=0) / n0)
    else:
        est, var, df = _partial(q, u)
    syn = _finish(est, var, df, level, scalar=False)

    p0 = s0 / n0
    z = stats.norm.ppf(0.5 + level / 2)
    half0 = z * np.sqrt(p0 * (1 - p0) / n0)
    # NaN where some release has no point in the rectangle; an unbounded interval (the full
    # rules with ν_f near 0, t quantiles beyond float64) is defined, at its limit.
    defined = ~np.isnan(syn.lower)
    overlap = np.full(n_quadrants, np.nan)
    overlap[defined] = _overlap(p0[defined] - half0[defined], p0[defined] + half0[defined],
                                syn.lower[defined], syn.upper[defined], kind)
    table = pd.DataFrame(
        {
            "x0": rects[:, 0],
            "y0": rects[:, 1],
            "x1": rects[:, 2],
            "y1": rects[:, 3],
            "n_original": n0,
            "p_original": p0,
            "lower_original": p0 - half0,
            "upper_original": p0 + half0,
            "n_synthetic": n_syn.mean(axis=0),
            "p_synthetic": syn.estimate,
            "variance_synthetic": syn.variance,
            "df_synthetic": syn.df,
            "lower_synthetic": syn.lower,
            "upper_synthetic": syn.upper,
            "overlap": overlap,
        }
    )
    return QuadrantCoverage(
        mean_overlap=float(overlap[defined].mean()) if defined.any() else float("nan"),
        n_quadrants=n_quadrants,
        n_undefined=int((~defined).sum()),
        kind=kind,
        level=level,
        rules=rules,
        quadrants=table,
    )


#: The combining rules :func:`quadrant_coverage` and :func:`geosynth.evaluate` take.
RULES = ("partial", "full")


def check_rules(rules: Any) -> str:
    """Return ``rules`` after checking it names combining rules (:data:`RULES`).

    Parameters
    ----------
    rules : str
        ``"partial"`` or ``"full"``.

    Returns
    -------
    str

    Raises
    ------
    geosynth.errors.InputError
        Anything else.
    """
    if not isinstance(rules, str) or rules not in RULES:
        raise InputError(
            f'rules must be "partial" (locations synthesized, attributes kept) or "full" (every '
            f"value synthetic, e.g. ε-DP releases), got {rules!r}"
        )
    return rules


def combining_rules(epsilon: float | None) -> str:
    """Return the combining rules of the coverage table for a release made with ``epsilon``.

    A Paiva release (``epsilon`` None) keeps the original attributes and makes the locations
    synthetic: the partially synthetic rules (Reiter 2003). Every value of an ε-DP release is
    synthetic: the fully synthetic rules (Raghunathan, Reiter & Rubin 2003).

    Parameters
    ----------
    epsilon : float or None
        The release's ε (None: not differentially private).

    Returns
    -------
    str
        ``"partial"`` or ``"full"``, the ``rules`` of :func:`geosynth.evaluate`.
    """
    return "partial" if epsilon is None else "full"


def check_release_rules(releases: Sequence[gpd.GeoDataFrame], rules: object) -> str:
    """Return the combining rules for ``releases``: ``rules`` checked against their records.

    Each release's record (:func:`geosynth.synth.release.release_info`) says whether it was
    made with ε; :func:`combining_rules` maps that to the rules. ``rules=None`` takes them
    from the records (``"partial"`` for releases without one). The partially synthetic rules
    are refused for ε-DP releases: they take the attributes as kept, so their intervals leave
    out the between-release variance of fully synthetic data and look better than they are
    (a mean CI overlap of 0.89 against 0.53 under the right rules, in a test). The fully
    synthetic rules are allowed for any release: they are the conservative choice.

    Parameters
    ----------
    releases : sequence of GeoDataFrame
        The releases.
    rules : {"partial", "full"} or None
        The rules asked for.

    Returns
    -------
    str
        ``"partial"`` or ``"full"``.

    Raises
    ------
    geosynth.errors.InputError
        ``rules`` is not one of them; some releases are ε-DP and others are not; or
        ``rules="partial"`` for ε-DP releases.
    """
    if rules is not None:
        rules = check_rules(rules)
    recorded = [combining_rules(None if info is None else info.epsilon)
                for info in map(release_info, releases)]
    full = [i for i, kind in enumerate(recorded) if kind == "full"]
    if full and len(full) < len(recorded):
        others = [i for i in range(len(recorded)) if i not in full]
        raise InputError(
            f"releases {list_positions(full)} were made with epsilon (differentially private) and "
            f"releases {list_positions(others)} without: their combining rules differ; evaluate "
            "each set of releases apart"
        )
    if rules == "partial" and full:
        raise InputError(
            'rules="partial" for releases made with epsilon: every value of an ε-DP release '
            "is synthetic, and the partially synthetic rules would understate the intervals' "
            'width; pass rules="full", or leave rules=None to take them from the releases'
        )
    return rules if rules is not None else ("full" if full else "partial")


def _check_min_points(
    xy: np.ndarray, box: tuple[float, float, float, float], min_points: int, whole: bool
) -> None:
    """Refuse a ``min_points`` no rectangle inside ``box`` can reach, before drawing any.

    Drawing first took 200 rectangles per requested one (9 s at 1,000) to fail the same way.
    """
    xmin, ymin, xmax, ymax = box
    inside = (xy[:, 0] >= xmin) & (xy[:, 0] <= xmax) & (xy[:, 1] >= ymin) & (xy[:, 1] <= ymax)
    n = int(inside.sum())
    if n >= min_points:
        return
    where = "" if whole else " within bounds"
    if n == 0:  # only when bounds is given: the points' own box holds them all
        raise InputError("bounds holds none of the original points, so no rectangle can hold "
                         "min_points of them; pass bounds that cover the original points")
    raise InputError(
        f"min_points={min_points} is more than the number of original points{where} ({n}), so "
        f"no rectangle can hold min_points of them; pass min_points={n} or less"
        + ("" if whole else ", or wider bounds")
    )


#: Most rectangles drawn per batch: 2**20 take 32 MiB; 2·n_quadrants at the cap of 10**7 took
#: over a gigabyte (the default of 1000 rectangles draws batches of 2000, unchanged).
_MAX_RECTANGLE_BATCH = 2**20


def _draw_rectangles(
    rng: np.random.Generator,
    box: tuple[float, float, float, float],
    xy: np.ndarray,
    y: np.ndarray,
    n_quadrants: int,
    min_points: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw rectangles until n_quadrants hold >= min_points points; return them and counts."""
    xmin, ymin, xmax, ymax = box
    kept_rects, kept_n, kept_s = [], [], []
    n_kept = n_drawn = 0
    batch = min(max(2 * n_quadrants, 64), _MAX_RECTANGLE_BATCH)
    while n_kept < n_quadrants:
        if n_drawn >= _MAX_DRAWS_PER_QUADRANT * n_quadrants:
            raise InputError(
                f"only {n_kept} of {n_drawn} random rectangles hold at least min_points="
                f"{min_points} original points; lower min_points, or request fewer quadrants"
            )
        xs = np.sort(rng.uniform(xmin, xmax, size=(batch, 2)), axis=1)
        ys = np.sort(rng.uniform(ymin, ymax, size=(batch, 2)), axis=1)
        rects = np.column_stack([xs[:, 0], ys[:, 0], xs[:, 1], ys[:, 1]])
        n, s = _rect_counts(xy, y, rects)
        ok = n >= min_points
        kept_rects.append(rects[ok])
        kept_n.append(n[ok])
        kept_s.append(s[ok])
        n_kept += int(ok.sum())
        n_drawn += batch
    rects = np.concatenate(kept_rects)[:n_quadrants]
    return rects, np.concatenate(kept_n)[:n_quadrants], np.concatenate(kept_s)[:n_quadrants]


def _rect_counts(
    xy: np.ndarray, success: np.ndarray, rects: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Points and successes in each closed rectangle ``(x0, y0, x1, y1)``, in blocks.

    Points are sorted by x once, so each rectangle only tests the points of its x-range slice
    (found by binary search); rectangles are processed in blocks of at most ``_BLOCK``
    (rectangle, point) tests over the union of their slices.
    """
    order = np.argsort(xy[:, 0], kind="stable")
    xs = xy[order, 0]
    ys = xy[order, 1]
    ss = success[order]
    start = np.searchsorted(xs, rects[:, 0], side="left")
    stop = np.searchsorted(xs, rects[:, 2], side="right")
    counts = np.zeros(rects.shape[0], dtype=np.int64)
    hits = np.zeros(rects.shape[0], dtype=np.int64)
    k = 0
    while k < rects.shape[0]:
        lo, hi = start[k], stop[k]
        j = k + 1
        while j < rects.shape[0]:  # grow the block while the tests fit
            lo2, hi2 = min(lo, start[j]), max(hi, stop[j])
            if (j + 1 - k) * (hi2 - lo2) > _BLOCK:
                break
            lo, hi = lo2, hi2
            j += 1
        block = rects[k:j]
        xb, yb, sb = xs[lo:hi], ys[lo:hi], ss[lo:hi]
        inside = (xb >= block[:, 0:1]) & (xb <= block[:, 2:3])
        inside &= (yb >= block[:, 1:2]) & (yb <= block[:, 3:4])
        counts[k:j] = np.count_nonzero(inside, axis=1)
        hits[k:j] = np.count_nonzero(inside & sb, axis=1)
        k = j
    return counts, hits


def is_binary(values: pd.Series) -> bool:
    """Whether a column can be a coverage outcome: booleans, or numbers that are all 0 or 1.

    Parameters
    ----------
    values : pandas.Series

    Returns
    -------
    bool
    """
    if values.dtype == bool:
        return True
    return bool(pd.api.types.is_numeric_dtype(values.dtype)
                and np.isin(values.to_numpy(), (0, 1)).all())


def binary_outcome(frame: pd.DataFrame, column: str, name: str) -> np.ndarray:
    """Return the outcome ``column`` of ``frame`` as booleans, refusing a non-binary one.

    Parameters
    ----------
    frame : pandas.DataFrame
        The records.
    column : str
        The outcome column: booleans, or numbers that are all 0 or 1.
    name : str
        How the caller's frame is called, for the messages.

    Returns
    -------
    numpy.ndarray of bool

    Raises
    ------
    geosynth.errors.InputError
        ``column`` is missing or not binary (the message shows some of its other values).
    """
    check_columns(frame, [column], name, "outcome column")
    values = frame[column].to_numpy()
    if values.dtype == bool:
        return values
    found = non_binary(frame[column])
    if found is not None:
        raise InputError(
            f"outcome column {column!r} of {name} must be binary (0/1 or bool), but it has "
            f"{found}; recode it, e.g. (gdf[{column!r}] == level).astype(int)"
        )
    return values.astype(bool)


def check_n_quadrants(n_quadrants: Any) -> int:
    """Return the number of random rectangles of :func:`quadrant_coverage` as an int.

    Parameters
    ----------
    n_quadrants : object
        The value given.

    Returns
    -------
    int

    Raises
    ------
    geosynth.errors.InputTypeError
        Not an int (a float, NaN, a string; :func:`geosynth._validation.check_int`).
    geosynth.errors.InputError
        Below 1 or above :data:`MAX_QUADRANTS`.
    """
    n_quadrants = check_int(n_quadrants, "n_quadrants")
    if n_quadrants > MAX_QUADRANTS:
        raise InputError(f"n_quadrants={n_quadrants:,} is above {MAX_QUADRANTS:,} rectangles, "
                         "beyond what the coverage estimate needs (the thesis uses 1,000)")
    return n_quadrants


def non_binary(values: pd.Series) -> str | None:
    """Say why a column is no coverage outcome (:func:`is_binary`), or None if it is one.

    No value is shown: they are the confidential data's (the smallest, as text, would be its
    extremes), and the message may be pasted into a ticket.

    Parameters
    ----------
    values : pandas.Series

    Returns
    -------
    str or None
        E.g. ``"dtype float64 and 3 other distinct value(s)"``.
    """
    if is_binary(values):
        return None
    array = values.to_numpy()
    other = int(pd.unique(array[~np.isin(array, (0, 1))]).size)
    found = f"{other:,} other distinct value(s)" if other else "values 0/1 of no number type"
    return f"dtype {values.dtype} and {found}"


def as_bounds(
    bounds: Any, xy: np.ndarray, name: str, frame: Any = None, frame_name: str = "points"
) -> tuple[float, float, float, float]:
    """Rectangle ``(xmin, ymin, xmax, ymax)`` from a 4-tuple, a Grid, or the points' extent.

    Parameters
    ----------
    bounds : None, sequence of 4 floats or Grid
        The rectangle; None: the bounding box of ``xy``.
    xy : numpy.ndarray, shape (n, 2)
        The points (used only when ``bounds`` is None).
    name : str
        The parameter's name in error messages.
    frame : GeoDataFrame or GeoSeries, optional
        The points' frame: a Grid given as ``bounds`` must share its CRS.
    frame_name : str, default "points"
        How the caller calls ``frame``, for the messages.

    Returns
    -------
    tuple of 4 floats

    Raises
    ------
    TypeError
        An item of ``bounds`` is not a real number (text such as ``"0"``, a bool, complex).
    geosynth.errors.InputError
        Not four finite numbers, a coordinate beyond ``MAX_CONTINUOUS`` in absolute value, an
        empty or degenerate rectangle, or no points to derive it.
    geosynth.errors.CRSError
        ``bounds`` is a Grid in another CRS than ``frame``, or ``frame`` has no CRS while the
        Grid has one.
    """
    if bounds is None:
        if xy.shape[0] == 0:
            raise InputError(f"{name} cannot be derived from zero points; pass it explicitly")
        values = (*xy.min(axis=0), *xy.max(axis=0))
        if not np.all(xy.max(axis=0) > xy.min(axis=0)):
            # No coordinates in the message: they would be the confidential points' own.
            raise InputError(
                f"{name} cannot be derived from the points: they all share one x or one y "
                f"coordinate (a single record, or records geocoded to one place); pass {name} "
                "explicitly"
            )
    elif hasattr(bounds, "bounds") and hasattr(bounds, "locate"):
        if isinstance(frame, gpd.GeoDataFrame | gpd.GeoSeries):  # arrays carry no CRS
            check_crs(frame, bounds, frame_name)
        values = tuple(bounds.bounds)
    else:
        values = _four_numbers(bounds, name)
    if len(values) != 4 or not all(math.isfinite(float(v)) for v in values):
        raise InputError(
            f"{name} must be four finite numbers (xmin, ymin, xmax, ymax) or a Grid, got {bounds!r}"
        )
    xmin, ymin, xmax, ymax = (float(v) for v in values)
    if max(abs(v) for v in (xmin, ymin, xmax, ymax)) > MAX_CONTINUOUS:
        raise InputError(f"{name} has a coordinate above {MAX_CONTINUOUS:g} in absolute value, "
                         "where its area overflows; check the CRS and the units")
    if not (xmin < xmax and ymin < ymax):
        raise InputError(
            f"{name} must satisfy xmin < xmax and ymin < ymax, got {(xmin, ymin, xmax, ymax)}"
        )
    return xmin, ymin, xmax, ymax


def _four_numbers(bounds: Any, name: str) -> tuple[float, ...]:
    """Return the numbers of a ``bounds`` sequence (none for a non-sequence or text).

    Each is checked with :func:`check_real`: ``float()`` read ``"0"`` and ``True`` as numbers.
    """
    if isinstance(bounds, str | bytes) or not np.iterable(bounds):
        return ()
    items = list(bounds)
    if len(items) != 4:
        return ()
    return tuple(check_real(v, f"{name}[{k}]") for k, v in enumerate(items))


# --------------------------------------------------------------------------- Ripley's K


class RipleyK(NamedTuple):
    """Ripley's K and L functions on a set of radii.

    Attributes
    ----------
    r : numpy.ndarray
        Radii.
    k : numpy.ndarray
        Edge-corrected ``K(r)`` (``πr²`` for a homogeneous Poisson process); NaN for fewer
        than 2 points.
    l : numpy.ndarray
        ``L(r) = sqrt(K(r) / π)`` (``r`` under complete spatial randomness).
    """

    r: np.ndarray
    k: np.ndarray
    l: np.ndarray  # noqa: E741 - the standard name of the function


def ripley_k(points: Any, window: Any, radii: Any = None, correction: str = "isotropic",
             max_points: int | None = None) -> RipleyK:
    """Ripley's K function with edge correction for a rectangular window.

    ``K̂(r) = |W| / (n (n - 1)) Σ_{i ≠ j} w_ij [d_ij <= r]`` with the edge-correction weights

    * ``"isotropic"`` (Ripley 1976): ``w_ij = 1 / e(x_i, d_ij)``, where ``e(x, d)`` is the
      fraction of the circle of radius d centred at x that lies inside the window;
    * ``"translation"`` (Ohser & Stoyan 1981): ``w_ij = |W| / ((a - |dx_ij|)(b - |dy_ij|))`` for
      an ``a × b`` window, the inverse share of the window that the translated window overlaps;
    * ``"none"``: ``w_ij = 1`` (biased low near the edges; for comparison only).

    Pairs within the largest radius come from :class:`scipy.spatial.cKDTree`, in chunks.

    Parameters
    ----------
    points : array-like (n, 2), GeoSeries or GeoDataFrame
        Points, all inside the window.
    window : tuple of 4 floats, Grid or None
        The rectangular observation window ``(xmin, ymin, xmax, ymax)`` (a Grid gives its
        bounds; a clipped region's shape is not used). None: the points' bounding box, whose
        size error messages then do not show (it is the confidential points' extent).
    radii : array-like, optional
        Increasing radii in ``[0, min(a, b) / 2]``. Default: 51 radii from 0 to ``min(a, b) / 4``
        (Ripley's rule of thumb); without ``window``, to that rounded down to a power of
        2^(1/4), so that the radii do not give the points' extent back.
    correction : {"isotropic", "translation", "none"}, default "isotropic"
        Edge correction.
    max_points : int, optional
        Estimate from at most this many of the points (:func:`k_subsample`) when there are
        more: the cost grows with the square of the points within the largest radius. None
        (default): all of them.

    Returns
    -------
    RipleyK
        ``(r, k, l)``; ``k`` and ``l`` are NaN with fewer than two points (no pair to count),
        which :func:`ripley_distance` reads as "no estimate" for a rare combination.

    Raises
    ------
    geosynth.errors.InputError
        Invalid points, window, radii or correction, or points outside the window.
    geosynth.errors.CRSError
        ``points`` is a GeoSeries/GeoDataFrame in degrees, or in another CRS than a Grid given
        as ``window``.

    Notes
    -----
    ``K̂`` is ``(1 / (λ̂² |W|)) Σ_{i ≠ j} w_ij [d_ij <= r]`` with ``λ̂² = n (n - 1) / |W|²``, the
    unbiased estimator of ``λ²`` (spatstat's default), rather than ``n² / |W|²``, which exceeds
    it by the factor ``n / (n - 1)``. Isotropic weights: for a point at distances ``d_e`` from
    the four edges, the arc of the circle outside edge e subtends ``2 α_e`` with
    ``α_e = arccos(min(d_e / r, 1))``, and the arcs of two adjacent edges overlap by
    ``max(0, α_e + α_f - π/2)`` (positive exactly when the corner is inside the circle); arcs of
    opposite edges never overlap, so
    ``e = 1 - (Σ 2α_e - Σ_corners overlap) / (2π)`` by inclusion–exclusion. For radii up to half
    the shorter side, ``e >= 1/4``.

    Why not PySAL's ``pointpats`` (issue 19; pointpats 2.5.5, measured on the 2-core machine,
    51 radii, uniform points in the unit square, CPU seconds): ``pointpats.distance_statistics.k``
    and ``l`` have no edge correction (any ``edge_correction`` but None raises
    NotImplementedError), take no window (``|W|`` is the points' bounding box, which makes
    ``K̂`` depend on where the extreme points fall) and divide by ``n²``; their K equals ours
    with ``correction="none"`` times ``(A_bbox / |W|)(n - 1) / n`` (tested to 1e-12 on the
    thesis scenario in ``tests/metrics/test_ripley_pointpats.py``, with the corrected
    estimators bounded by it). They compare all ``n(n - 1)/2`` distances (``pdist``) with every
    radius: 0.004 s against our 0.010 s (isotropic; 0.006 s translation) at n = 500, 0.63 s
    against 0.61 s (0.40 s) at n = 5,000, and at n = 50,000 a MemoryError (9.3 GiB of distances,
    then a 59 GiB boolean array) where ours, pairs within the largest radius from a kd-tree in
    chunks, takes 69 s (35 s) in under 1 GB. pointpats stays the test oracle; its edge
    corrections (pysal/pointpats pull request 211, not released) could replace ours later.

    Examples
    --------
    Four points on the corners of a unit square, inside a 2 × 2 window, without edge
    correction: at r = 1 each point has two neighbours (the diagonal √2 is beyond r), i.e. 8
    ordered pairs, so K̂(1) = |W| / (n (n - 1)) · 8 = 4 / 12 · 8 = 8/3.

    >>> pts = [[0.5, 0.5], [1.5, 0.5], [0.5, 1.5], [1.5, 1.5]]
    >>> ripley_k(pts, (0, 0, 2, 2), radii=[0.0, 1.0], correction="none").k.tolist()
    [0.0, 2.6666666666666665]
    """
    xy = as_xy(points, "points")
    if getattr(points, "crs", None) is not None:
        require_projected_crs(points.crs, "points")
    box = as_bounds(window, xy, "window", points)
    xmin, ymin, xmax, ymax = box
    a, b = xmax - xmin, ymax - ymin
    if not a * b > 0:  # K̂ is |W| times a pair sum: 0 for every r, then a ZeroDivisionError
        # No sides in the message: a window derived from the points is their extent.
        raise InputError("window's area underflows float64 (sides below about 1e-154); give "
                         "the points and the window in metres of a projected CRS")
    r = _radii(radii, min(a, b), derived=window is None)
    _check_correction(correction)
    _check_inside(xy, box, "points")
    sample = k_subsample(xy.shape[0], max_points)
    if not isinstance(sample, slice):  # sampled in (x, y) order: the same points whatever the
        xy = xy[np.lexsort((xy[:, 1], xy[:, 0]))]  # rows' order (the sample is by position)
    xy = xy[sample]
    n = xy.shape[0]
    if n < 2:
        k = np.full(r.size, np.nan)
        return RipleyK(r, k, k.copy())
    sums = np.zeros(r.size)
    rmax = float(r[-1])
    tree = cKDTree(xy)
    for idx in _pair_chunks(tree, xy, rmax):
        pairs = cKDTree(xy[idx]).sparse_distance_matrix(tree, rmax, output_type="ndarray")
        i = idx[pairs["i"]]
        j = pairs["j"]
        keep = i != j
        i, j = i[keep], j[keep]
        dx = xy[j, 0] - xy[i, 0]
        dy = xy[j, 1] - xy[i, 1]
        d = np.sqrt(dx * dx + dy * dy)
        keep = d <= rmax
        i, dx, dy, d = i[keep], dx[keep], dy[keep], d[keep]
        if correction == "isotropic":
            w = 1.0 / _inside_fraction(xy[i, 0], xy[i, 1], d, box)
        elif correction == "translation":
            w = (a * b) / ((a - np.abs(dx)) * (b - np.abs(dy)))
        else:
            w = np.ones(d.size)
        sums += np.bincount(np.searchsorted(r, d, side="left"), weights=w, minlength=r.size + 1)[
            : r.size
        ]
    k = (a * b) / (n * (n - 1)) * np.cumsum(sums)
    return RipleyK(r, k, np.sqrt(k / math.pi))


def k_subsample(n: int, max_points: int | None) -> np.ndarray | slice:
    """Which of ``n`` points a K function is estimated from: all, or ``max_points`` of them.

    A simple random sample without replacement, drawn by a generator seeded with ``n`` and
    ``max_points`` only: each ordered pair of points is in it with probability ``k (k − 1) /
    (n (n − 1))``, which the ``1 / (k (k − 1))`` of :func:`ripley_k` cancels, so the thinned
    ``K̂(r)`` is unbiased for the one of all ``n`` points (for a point process, K is
    invariant under independent thinning; Illian et al. 2008, *Statistical Analysis and
    Modelling of Spatial Point Patterns*, §4.3). The sample is independent of the points'
    locations and the same for every call with the same ``n``, so a table of K gaps stays a
    function of its data (equal whether releases are evaluated together or one at a time);
    :func:`ripley_k` takes the positions of the points in ``(x, y)`` order, so the rows' order
    does not matter either.
    The price is variance: ``K̂`` of 5,000 of 30,000 points varies more than that of all of
    them, but far less than the gap a poor synthesis leaves (:data:`MAX_K_POINTS`); all of a
    million would take hours (119 s at 30,000 clustered points, growing with the square).

    Parameters
    ----------
    n : int
        Number of points.
    max_points : int or None
        At least 2; None: no limit.

    Returns
    -------
    numpy.ndarray of int64 (sorted positions) or slice
        ``slice(None)`` when all points are used.

    Raises
    ------
    TypeError
        ``max_points`` is not an int or None.
    geosynth.errors.InputError
        ``max_points < 2``.
    """
    max_points = _check_max_points(max_points)
    if max_points is None or n <= max_points:
        return slice(None)
    rng = np.random.default_rng([n, max_points])
    return np.sort(rng.choice(n, size=max_points, replace=False))


def _check_max_points(max_points: Any) -> int | None:
    """Return ``max_points`` (None or an int >= 2) of :func:`k_subsample`, or raise."""
    if max_points is None:
        return None
    return check_int(max_points, "max_points", minimum=2,
                     hint="a K function needs pairs of points; pass None for no limit")


def _pair_chunks(tree: cKDTree, xy: np.ndarray, rmax: float) -> list[np.ndarray]:
    """Split the points into runs whose pairs within ``rmax`` number about ``_PAIR_CHUNK``.

    The pairs are counted per point first (O(n) memory): sizing the runs by the number of
    neighbours expected under complete spatial randomness put every point of a cluster in a
    small part of the window into one run, and 6,000 such points took 2.3 GB (n² pairs).
    """
    cumulative = np.cumsum(tree.query_ball_point(xy, rmax, return_length=True))
    chunks, start, done = [], 0, 0
    while start < xy.shape[0]:
        stop = max(start + 1, int(np.searchsorted(cumulative, done + _PAIR_CHUNK, "right")))
        chunks.append(np.arange(start, stop))
        start, done = stop, int(cumulative[stop - 1])
    return chunks


def _check_inside(xy: np.ndarray, box: tuple[float, float, float, float], name: str) -> None:
    """Refuse points outside the closed window ``box``, naming ``name`` and their rows."""
    xmin, ymin, xmax, ymax = box
    outside = ~((xy[:, 0] >= xmin) & (xy[:, 0] <= xmax) & (xy[:, 1] >= ymin) & (xy[:, 1] <= ymax))
    if outside.any():
        raise InputError(
            f"{name} has {int(outside.sum())} point(s) outside the window {box} (positions "
            f"{np.flatnonzero(outside)[:5].tolist()}); pass a window that contains every point "
            "or drop the points outside it"
        )


def _inside_fraction(
    px: np.ndarray, py: np.ndarray, d: np.ndarray, box: tuple[float, float, float, float]
) -> np.ndarray:
    """Fraction of the circle (centre (px, py), radius d) inside the rectangle ``box``."""
    xmin, ymin, xmax, ymax = box
    left, right, bottom, top = (_edge_angle(dist, d)
                                for dist in (px - xmin, xmax - px, py - ymin, ymax - py))
    half_pi = math.pi / 2
    outside = 2.0 * (left + right + bottom + top)
    for e, f in ((left, bottom), (left, top), (right, bottom), (right, top)):
        outside -= np.maximum(0.0, e + f - half_pi)
    return 1.0 - outside / (2.0 * math.pi)


def _edge_angle(dist: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Half the angle of the circle of radius ``d`` beyond an edge ``dist`` away (0 if none).

    ``arccos(dist / d)`` where the circle crosses the edge (``dist < d``), else 0, as
    ``arccos(min(dist / d, 1))`` is: computed for those pairs only (most are far from every
    edge), it took a third of the time of :func:`geosynth.evaluate` over all of them.
    """
    out = np.zeros(d.size)
    cross = dist < d
    out[cross] = np.arccos(dist[cross] / d[cross])
    return out


def _check_correction(correction: Any) -> None:
    if not isinstance(correction, str) or correction not in ("isotropic", "translation", "none"):
        raise InputError(
            f'correction must be "isotropic", "translation" or "none", got {correction!r}'
        )


def _radii(radii: Any, short_side: float, derived: bool = False) -> np.ndarray:
    """Check ``radii`` (default: 51 up to a quarter of ``short_side``).

    With ``derived`` (a window taken from the points' extent) the message on a radius beyond
    half the shorter side does not show that half: it is the confidential points' extent. So
    the default radii do not either: they end at a quarter of it rounded down to a power of
    :data:`_RADII_RATIO` (``k.r[-1] * 4`` gave the side of the points' box to every digit, on
    the x axis of any published L plot).
    """
    if radii is None:
        top = short_side / 4
        if derived and top > 0:
            top = _RADII_RATIO ** math.floor(math.log(top, _RADII_RATIO))
        return np.linspace(0.0, top, 51)
    r = check_real_array(radii, "radii", "a 1-d array of distances")
    if r.ndim != 1 or r.size == 0 or not np.isfinite(r).all():
        raise InputError(f"radii must be a non-empty 1-d array of finite numbers, got shape "
                         f"{r.shape}{'' if np.isfinite(r).all() else ' with NaN or inf'}")
    if (r < 0).any() or (np.diff(r) <= 0).any():
        raise InputError("radii must be non-negative and strictly increasing")
    if r[-1] > short_side / 2:
        side = "" if derived else f" ({short_side / 2:g})"
        hint = (". The window is the points' bounding box, whose size this message does not "
                "show: pass window explicitly, or smaller radii") if derived else ""
        raise InputError(
            f"radii must not exceed half the shorter window side{side}; edge corrections are "
            f"unreliable beyond it (got max radius {r[-1]:g}){hint}"
        )
    return r


# The largest default radius of a window derived from the points is a power of this ratio.
_RADII_RATIO = 2 ** 0.25


def ripley_distance(
    original: gpd.GeoDataFrame,
    releases: gpd.GeoDataFrame | Sequence[gpd.GeoDataFrame],
    by: str | Sequence[str] | None = None,
    window: Any = None,
    radii: Any = None,
    correction: str = "isotropic",
    mean_row: bool = True,
    max_points: int | None = MAX_K_POINTS,
    reference: Mapping[Any, np.ndarray] | None = None,
) -> pd.DataFrame:
    """Largest gap between original and synthetic Ripley's L functions, per combination.

    For each combination of the ``by`` columns (or all points), ``sup_r |L_orig(r) - L_l(r)|``
    over ``radii`` is computed for each release l (:func:`ripley_k`) and averaged over releases.
    0 means the synthetic points reproduce the original clustering at every scale; the value is
    in distance units (L is a distance).

    Parameters
    ----------
    original : GeoDataFrame
        Confidential points (with the ``by`` columns).
    releases : GeoDataFrame or sequence of GeoDataFrame
        The m releases, in the CRS of ``original``.
    by : str or sequence of str, optional
        Attribute columns; default: one row for all points, labelled ``"all"``.
    window : tuple of 4 floats or Grid, optional
        Rectangular window shared by all the K functions. Default: the bounding box of all
        points of ``original`` and ``releases``.
    radii : array-like, optional
        Radii (see :func:`ripley_k`); default 51 radii up to a quarter of the window's shorter
        side, derived or given (not rounded as :func:`ripley_k`'s of a derived window: the
        radii are not in this table).
    correction : {"isotropic", "translation", "none"}, default "isotropic"
        Edge correction.
    mean_row : bool, default True
        Append the unweighted mean over combinations as a row labelled ``"mean"``; the first
        ``by`` column must then have no level ``"mean"``.
    max_points : int or None, default :data:`MAX_K_POINTS`
        Each K function of a combination with more points is estimated from this many of them
        (:func:`k_subsample`; ``n_original`` and ``n_synthetic`` still count them all). None:
        every point, at a cost growing with the square of their number.
    reference : mapping, optional
        The original's L function of each combination (:func:`original_l_functions` with the
        same ``by``, ``window``, ``radii``, ``correction`` and ``max_points``), computed once
        when one original is compared with releases one at a time (:func:`geosynth.evaluate`
        recomputed it for every release: 40 % of its time with 36 combinations and m = 5).
        A combination it lacks is computed here.

    Returns
    -------
    pandas.DataFrame
        Columns ``n_original``, ``n_synthetic`` (mean over releases) and ``sup_l_difference``
        (mean over the releases with at least 2 points of the combination; NaN if none, or if
        the original has fewer than 2).

    Raises
    ------
    TypeError
        ``mean_row`` is not a bool.
    geosynth.errors.InputError
        Invalid frames, columns, window, radii or correction, an ``original`` without rows,
        points outside the window, a ``by`` column holding text in a release where it holds
        numbers in ``original`` (or back), or (with ``mean_row``) a level ``"mean"`` in the
        first ``by`` column.
    geosynth.errors.CRSError
        CRSs differ or are geographic.
    """
    mean_row = check_bool(mean_row, "mean_row")
    releases = as_releases(releases)
    check_frames(original, releases)
    check_has_rows(original, "ripley_distance")
    frames = [original, *releases]
    names = ["original"] + [f"releases[{k}]" for k in range(len(releases))]
    xys = [frame_xy(f, name) for f, name in zip(frames, names, strict=True)]
    derived = window is None
    window = as_bounds(window, np.concatenate(xys), "window", original, "original")
    _check_correction(correction)  # before any K is computed
    _check_max_points(max_points)  # before any K is computed
    _radii(radii, min(window[2] - window[0], window[3] - window[1]), derived)
    for xy, name in zip(xys, names, strict=True):  # ripley_k named neither frame nor row
        _check_inside(xy, window, name)
    if by is None:
        codes = [np.zeros(len(f), dtype=np.int64) for f in frames]
        keys = pd.Index(["all"])
    else:
        cols = as_columns(by, "by")
        for f, name in zip(frames, names, strict=True):
            check_columns(f, cols, name, "by column")
        check_level_types(frames, names, cols, "by column")
        if mean_row:
            check_mean_label(original, cols, "by column", "or pass mean_row=False")
        codes, keys = combination_codes(frames, cols)
    groups = [split_by_code(c, len(keys)) for c in codes]
    present = np.unique(codes[0])
    m = len(releases)
    gaps = np.full((present.size, m), np.nan)
    n_syn = np.zeros((present.size, m))
    for row, combo in enumerate(present):
        base = (reference[keys[combo]] if reference is not None and keys[combo] in reference
                else ripley_k(xys[0][groups[0][combo]], window, radii, correction, max_points).l)
        for ell in range(m):
            pts = xys[ell + 1][groups[ell + 1][combo]]
            n_syn[row, ell] = pts.shape[0]
            if pts.shape[0] >= 2 and not np.isnan(base).any():
                other = ripley_k(pts, window, radii, correction, max_points)
                gaps[row, ell] = np.max(np.abs(base - other.l))
    table = pd.DataFrame(
        {
            "n_original": np.array([groups[0][c].size for c in present], dtype=np.int64),
            "n_synthetic": n_syn.mean(axis=1),
            "sup_l_difference": nanmean_rows(gaps),
        },
        index=keys[present],
    )
    return with_mean_row(table) if mean_row else table


def original_l_functions(
    original: gpd.GeoDataFrame,
    by: str | Sequence[str] | None,
    window: tuple[float, float, float, float],
    radii: Any = None,
    correction: str = "isotropic",
    max_points: int | None = MAX_K_POINTS,
) -> dict[Any, np.ndarray]:
    """Return the original's L function per combination (:func:`ripley_distance`'s reference).

    Parameters
    ----------
    original : GeoDataFrame
        Confidential points (with the ``by`` columns), inside ``window``.
    by, window, radii, correction, max_points
        As for :func:`ripley_distance`; ``window`` is required (the one shared with the
        releases).

    Returns
    -------
    dict
        Combination (as :func:`ripley_distance` labels its rows; ``"all"`` without ``by``) to
        its L function at the radii, float64.
    """
    xy = frame_xy(original, "original")
    if by is None:
        return {"all": ripley_k(xy, window, radii, correction, max_points).l}
    cols = as_columns(by, "by")
    check_columns(original, cols, "original", "by column")
    codes, keys = combination_codes([original], cols)
    groups = split_by_code(codes[0], len(keys))
    return {keys[c]: ripley_k(xy[groups[c]], window, radii, correction, max_points).l
            for c in np.unique(codes[0])}


# --------------------------------------------------------------------------- intensity fidelity
class IntensityFidelity(NamedTuple):
    """Original against synthetic counts per cell of one lattice (:func:`intensity_fidelity`).

    Attributes
    ----------
    correlation : float
        Pearson correlation of the original counts and the synthetic counts (mean over
        releases) per cell; larger is better, 1 at most. NaN when either is constant (e.g. a
        lattice of one cell).
    l1 : float
        ``Σ_i |o_i/n_o − s_i/n_s| + |o_out/n_o − s_out/n_s|``, the L1 distance of the two
        distributions of points over the cells and the outside of the lattice, with ``n_o``,
        ``n_s`` all the points (twice their total-variation distance): 0 for the same shares, 2
        when no cell holds both; smaller is better. A point outside the lattice is mass in the
        wrong place: a release fitted on a coarser lattice, whose bounds snap outward to its
        own cells, spread 16-19 % of its points beyond the finest lattice, and dropping them
        (the shares renormalised over the rest) favoured the coarse lattice. NaN when either
        side has no point.
    original : numpy.ndarray of float64, shape (G,)
        Original points per cell: confidential, so the repr shows only their number.
    synthetic : numpy.ndarray of float64, shape (G,)
        Synthetic points per cell, mean over releases.
    original_outside : float
        Original points outside the lattice (confidential, like ``original``).
    synthetic_outside : float
        Synthetic points outside the lattice, mean over releases.
    """

    correlation: float
    l1: float
    original: np.ndarray
    synthetic: np.ndarray
    original_outside: float = 0.0
    synthetic_outside: float = 0.0

    def __repr__(self) -> str:
        """Show the two measures, not the counts: the original's are confidential per cell."""
        return (f"IntensityFidelity(correlation={self.correlation!r}, l1={self.l1!r}, "
                f"original=<{self.original.size} counts>, "
                f"synthetic=<{self.synthetic.size} counts>)")


def intensity_fidelity(original: Any, releases: Any, grid: Grid) -> IntensityFidelity:
    """How well releases reproduce the original counts per cell of ``grid``.

    Releases fitted on different lattices are comparable on one common lattice (for
    :func:`geosynth.tune`, the finest candidate's); points outside the lattice count as one
    more place in ``l1`` (mass in the wrong place), not in ``correlation``, which compares the
    cells.

    Parameters
    ----------
    original : GeoDataFrame, GeoSeries or array-like of shape (n, 2)
        The original points.
    releases : sequence of GeoDataFrame, GeoSeries or (n_l, 2) arrays
        The m releases (in the CRS of ``grid``); one GeoDataFrame, GeoSeries or (n, 2) array
        is one release.
    grid : geosynth.Grid
        The lattice the counts are taken on.

    Returns
    -------
    IntensityFidelity

    Raises
    ------
    geosynth.errors.InputError
        ``grid`` is not a lattice, ``original`` has no points or none in a cell of ``grid``,
        ``releases`` is empty or not a list of data sets (an InputTypeError), or points are
        invalid (:func:`as_xy`).
    geosynth.errors.CRSError
        A frame's CRS is not the grid's (its points would fall outside every cell, silently),
        or, on a grid without a CRS, the frames' CRSs differ.
    """
    check_grid_type(grid)
    one = isinstance(releases, gpd.GeoDataFrame | gpd.GeoSeries) or (
        isinstance(releases, np.ndarray) and releases.ndim == 2)  # one release, not a list
    if not (one or is_sequence(releases) or getattr(releases, "ndim", None) == 3):
        raise InputTypeError(  # None raised "'NoneType' object is not iterable"
            f"releases must be a list of synthetic data sets (GeoDataFrames, GeoSeries or (n, 2) "
            f"arrays), got {describe_value(releases)}"
        )
    sets = [releases] if one else list(releases)
    if not sets:
        raise InputError("releases is empty; pass the m synthetic data sets")
    named = [(original, "original"), *((r, f"releases[{k}]") for k, r in enumerate(sets))]
    frames = [(points, name) for points, name in named  # arrays carry no CRS
              if isinstance(points, gpd.GeoDataFrame | gpd.GeoSeries)]
    for points, name in frames:
        check_crs(points, grid, name)
    if grid.crs is None:  # no grid CRS to compare with: the frames must share theirs
        for points, name in frames[1:]:
            check_same_crs(frames[0][0], points, name, frames[0][1])
    original_xy = as_xy(original, "original")
    if not len(original_xy):  # nothing to compare with: every measure was NaN
        raise InputError("original has no points; pass the confidential points the releases "
                         "were made from")
    binned = _counts_per_cell(grid, original_xy)  # the last bin: outside the lattice
    if binned[:-1].sum() == 0:  # both sides all outside: l1 was 0.0, a perfect score
        raise InputError(
            f"none of the original points lies in a cell of grid "
            f"(bounds {tuple(round(float(b), 3) for b in grid.bounds)}); pass the lattice "
            "that covers them, in their CRS"
        )
    synthetic_binned = np.mean([_counts_per_cell(grid, as_xy(r, f"releases[{k}]"))
                                for k, r in enumerate(sets)], axis=0)
    counts, synthetic = binned[:-1], synthetic_binned[:-1]
    correlation = np.nan
    if counts.std() > 0 and synthetic.std() > 0:
        correlation = float(np.corrcoef(counts, synthetic)[0, 1])
    l1 = np.nan
    if binned.sum() > 0 and synthetic_binned.sum() > 0:
        l1 = float(np.abs(binned / binned.sum() - synthetic_binned / synthetic_binned.sum()).sum())
    return IntensityFidelity(correlation, l1, counts, synthetic, float(binned[-1]),
                             float(synthetic_binned[-1]))


def _counts_per_cell(grid: Grid, xy: np.ndarray) -> np.ndarray:
    """Points per cell, and in a last bin the points outside the lattice (G + 1 bins)."""
    cells = grid.locate(xy)
    return np.bincount(np.where(cells >= 0, cells, grid.n_cells),
                       minlength=grid.n_cells + 1).astype(np.float64)


def continuous_utility(original: Any, releases: Any, columns: str | Sequence[str],
                       level: float = 0.95, rules: str | None = None) -> pd.DataFrame:
    """Agreement of the continuous columns' means, SDs and correlations with the original's.

    A release's continuous values follow the cell means of Nunes (2018, eq. 2.27), with their
    between-cell spread and, for several columns, their between-cell correlation
    (:func:`geosynth.synth.paiva.synthesis_correlation`): the records' own spread and
    relations can differ, and an analysis of them should see by how much. Over all records
    (never per combination: the values of a rare one are few people's):

    * ``mean[<column>]``: the mean, with the original's t interval and the releases'
      combined interval (``rules``; each release's variance of its mean ``s²/n``);
    * ``sd[<column>]``: the SD (the releases' mean SD; no interval);
    * ``corr[<a>,<b>]`` for each pair: Pearson's correlation, intervals on Fisher's
      ``atanh`` scale (variance ``1/(n − 3)``) mapped back.

    Parameters
    ----------
    original : GeoDataFrame or DataFrame
        The confidential records, with ``columns``.
    releases : sequence of DataFrame
        Two or more releases with ``columns``.
    columns : sequence of str
        The continuous columns.
    level : float, default 0.95
        Confidence level of the intervals.
    rules : {"partial", "full"}, optional
        :func:`combine_partially_synthetic` or :func:`combine_fully_synthetic`; None (the
        default) takes them from the releases' records (:func:`check_release_rules`).

    Returns
    -------
    pandas.DataFrame
        One row per estimand, columns ``original``, ``synthetic``, ``lower_original``,
        ``upper_original``, ``lower_synthetic``, ``upper_synthetic`` and ``overlap``
        (:func:`interval_overlap`, geometric; NaN for the SDs). A correlation that a
        release cannot have (a constant column in it) leaves the combined estimate, its
        interval and the overlap NaN, and the original's (NaN too when its own column is
        constant).

    Raises
    ------
    geosynth.errors.InputError
        Fewer than 2 releases, ``columns`` empty or listing a column twice, a column missing
        or holding missing or infinite values, or fewer than 4 records in ``original`` or a
        release.
    TypeError
        A column holds text, booleans or other objects than numbers.
    """
    columns = as_columns(columns, "columns")
    releases = list(releases)
    rules = check_release_rules(releases, rules)
    if len(releases) < 2:
        raise InputError("continuous_utility needs 2 or more releases to combine, got "
                         f"{len(releases)}")
    frames = [original, *releases]
    values = []
    for frame, name in zip(frames, ["original"] + [f"releases[{k}]" for k in range(
            len(releases))], strict=True):
        if len(frame) < 4:
            raise InputError(f"{name} has {len(frame)} records; the intervals need 4 or more")
        values.append(_continuous_values(frame, columns, name))
    sizes = np.array([v.shape[0] for v in values])
    t = stats.t.ppf((1 + level) / 2, sizes[0] - 1)
    rows = {}
    for k, column in enumerate(columns):
        means = np.array([v[:, k].mean() for v in values])
        var_means = np.array([v[:, k].var(ddof=1) for v in values]) / sizes
        rows[f"mean[{column}]"] = _with_overlap(_compared(means, var_means, t, level, rules,
                                                          sizes))
        sds = [v[:, k].std(ddof=1) for v in values]
        rows[f"sd[{column}]"] = (sds[0], float(np.mean(sds[1:])), *[np.nan] * 5)
    if len(columns) > 1:
        with np.errstate(invalid="ignore", divide="ignore"):  # a constant column: no r
            correlations = [np.corrcoef(v, rowvar=False) for v in values]
    z = stats.norm.ppf((1 + level) / 2)
    for a, b in itertools.combinations(range(len(columns)), 2):
        label = f"corr[{columns[a]},{columns[b]}]"
        fisher = np.arctanh(np.clip([r[a, b] for r in correlations], -1 + 1e-15, 1 - 1e-15))
        if not np.isfinite(fisher).all():
            rows[label] = _original_correlation(fisher[0], sizes[0], z)
            continue
        rows[label] = _with_overlap(np.tanh(_compared(fisher, 1.0 / (sizes - 3.0), z, level,
                                                      rules, sizes)))
    return pd.DataFrame.from_dict(rows, orient="index", columns=[
        "original", "synthetic", "lower_original", "upper_original", "lower_synthetic",
        "upper_synthetic", "overlap"])


def _original_correlation(fisher: float, size: int, critical: float) -> tuple[float, ...]:
    """Return a correlation's row when a release's is undefined (a constant column in it).

    The original's r and interval stand; the combined ones and the overlap are NaN. One
    release with a constant column blanked the original's r and interval too.
    """
    if not np.isfinite(fisher):
        return (np.nan,) * 7
    lower, upper = np.tanh(_original_interval(fisher, 1.0 / (size - 3.0), critical))
    return (float(np.tanh(fisher)), np.nan, float(lower), float(upper), np.nan, np.nan, np.nan)


def _continuous_values(frame: pd.DataFrame, columns: list[str], name: str) -> np.ndarray:
    """Return ``columns`` of ``frame`` as a float64 matrix, refusing text and non-finite values.

    A NaN in the original made its mean NaN and the overlap NaN without a word (a release's
    was refused by the combining rules); text raised NumPy's bare ValueError.
    """
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"{name} lacks the continuous column(s) {missing}")
    check_unique_columns(frame, name, columns)
    matrix = []
    for column in columns:
        values = check_real_array(frame[column], f"continuous column {column!r} of {name}",
                                  "a column of numbers")
        bad = ~np.isfinite(values)
        if bad.any():
            raise InputError(
                f"continuous column {column!r} of {name} has {int(bad.sum())} missing or "
                f"infinite values ({describe_rows(frame.index, bad)}); drop those rows or "
                "impute the values first"
            )
        matrix.append(values)
    return np.column_stack(matrix)


def _compared(estimates: np.ndarray, variances: np.ndarray, critical: float, level: float,
              rules: str, sizes: np.ndarray) -> np.ndarray:
    """Return a row of :func:`continuous_utility`'s estimates and intervals, not its overlap.

    ``estimates``, ``variances`` and ``sizes`` hold the original's first, then each
    release's; the original's interval is ``± critical`` standard errors. Returns the
    original's estimate, the combined one, the original's interval and the combined interval
    (unbounded when the fully synthetic rules' ν_f is near 0). Reiter's (2002) adjustment took
    the first release's size for every release's: with DP releases of different sizes, the
    interval's width followed whichever release came first.
    """
    if rules == "partial":
        combined = combine_partially_synthetic(estimates[1:], variances[1:], level)
    else:  # n_syn / n with the releases' mean size (their total over m originals' sizes)
        m = len(sizes) - 1
        combined = combine_fully_synthetic(estimates[1:], variances[1:], level,
                                           n_synthetic=int(sizes[1:].sum()),
                                           n_original=int(sizes[0]) * m)
    return np.array([estimates[0], combined.estimate,
                     *_original_interval(estimates[0], variances[0], critical), combined.lower,
                     combined.upper])


def _original_interval(estimate: float, variance: float, critical: float) -> tuple[float, float]:
    """Return the original's interval, ``estimate ± critical`` standard errors."""
    half = critical * math.sqrt(variance)
    return estimate - half, estimate + half


def _with_overlap(row: np.ndarray) -> tuple[float, ...]:
    """Return ``row`` (of :func:`_compared`) with the geometric overlap of its two intervals.

    The overlap is taken on the intervals shown: a correlation's were computed on Fisher's
    atanh scale and shown as r, and its overlap, taken before the back-transform, was not that
    of the intervals in the row (0.421 against 0.409). An unbounded combined interval (the fully
    synthetic rules' ν_f near 0) is taken at its limit (:func:`_overlap`); the public
    :func:`interval_overlap` refuses one, and ``rules="full"`` raised on such releases.
    """
    (overlap,) = _overlap(row[[2]], row[[3]], row[[4]], row[[5]], "geometric")
    return (*(float(value) for value in row), float(overlap))
