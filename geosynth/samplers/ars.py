"""Adaptive rejection sampling (Gilks & Wild 1992) for the log-concave family of :mod:`.family`.

Tangent-based ARS using the derivative: the upper hull is the piecewise-linear envelope of
tangents to ``h = log f`` at the abscissae, the lower squeeze is the chord between neighbouring
abscissae, and every point at which ``h`` had to be evaluated after a failed squeeze test joins
the abscissae (up to :data:`MAX_ABSCISSAE`).

Numerical care, all in log space:

- hull values stay logs; only differences from the hull's maximum are exponentiated (with
  ``expm1`` for segment widths), so masses never overflow for large counts, the known bug of
  public ARS implementations that exponentiate hull values directly;
- tangents whose slopes are nearly equal are intersected at the midpoint of their abscissae
  rather than by dividing by a vanishing slope difference;
- the initial abscissae bracket the mode at ``mode ± k/√(−h''(mode))`` so the hull is proper on
  the whole real line, and are widened until the outer slopes have the right signs;
- rejections are capped (:data:`MAX_REJECTIONS`); the kernel returns a status instead of looping.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from geosynth.samplers.family import (
    MODE_TOLERANCE,
    STATUS_BAD_ARRAYS,
    STATUS_IMPROPER,
    STATUS_INVALID,
    STATUS_MODE_FAILED,
    STATUS_OK,
    STATUS_TOO_MANY_REJECTIONS,
    check_family,
    find_mode_full,
    log_density_derivatives,
    weighted_exp,
)
from geosynth.samplers.rng import standard_exponential, standard_normal, uniform

__all__ = [
    "MAX_ABSCISSAE",
    "MAX_REJECTIONS",
    "new_workspace",
    "ars_draw",
    "ars_draw_single",
    "ars_sample",
]

MAX_ABSCISSAE = 24  # the last column of the mass row holds the hull reference
MAX_REJECTIONS = 10_000
_INITIAL_SPREAD = 1.3  # k in mode ± k / sqrt(-h''(mode))
_SLOPE_TOLERANCE = 1e-12
GAUSSIAN_ENVELOPE_MIN_SHARE = 0.5  # q / (−h''(mode)) above which the Gaussian envelope is tried
GAUSSIAN_ENVELOPE_TRIES = 4
_MAX_OUTER_BISECTIONS = 2200  # halvings from a spread of ~1e300 down to a ulp of the mode


@njit(cache=True)
def new_workspace() -> np.ndarray:
    """Allocate the (5, MAX_ABSCISSAE) float64 scratch array :func:`ars_draw` needs.

    Compiled, so the kernels that allocate their own scratch call it too.
    """
    return np.empty((5, MAX_ABSCISSAE), dtype=np.float64)


@njit(cache=True, inline="always", error_model="numpy")
def _segment_mass(peak, slope, left, right):
    """∫_left^right exp(u(x) − ref) dx for the linear u of one hull segment.

    ``peak`` is ``max u − ref`` over the segment (at its upper end), so ``exp(peak) ≤ 1`` and
    nothing overflows; the factor ``(1 − e^{−|slope|·L})/|slope|`` uses ``expm1``.
    """
    if math.isinf(left) or math.isinf(right):
        return math.exp(peak) / abs(slope)
    length = right - left
    if slope == 0.0:
        return math.exp(peak) * length
    return math.exp(peak) * (-math.expm1(-abs(slope) * length)) / abs(slope)


@njit(cache=True, inline="always", error_model="numpy")
def _sample_segment(state, slope, left, right):
    """Inverse-CDF draw from density ∝ exp(slope·x) on [left, right]."""
    u = uniform(state)
    if slope > 0.0:
        if math.isinf(left):
            return right + math.log(u) / slope
        return right + math.log1p(u * math.expm1(-slope * (right - left))) / slope
    if slope < 0.0:
        if math.isinf(right):
            return left + math.log(u) / slope
        return left + math.log1p(u * math.expm1(slope * (right - left))) / slope
    return left + u * (right - left)


# Rows of the (5, MAX_ABSCISSAE) workspace: abscissae, h, h', tangent intersections, masses.
_X, _H, _DH, _Z, _MASS = 0, 1, 2, 3, 4


@njit(cache=True, error_model="numpy")
def _insert(work, k, x, h, dh):
    """Insert (x, h, h') into the first k sorted abscissae; return the new count."""
    pos = k
    while pos > 0 and work[_X, pos - 1] > x:
        work[_X, pos] = work[_X, pos - 1]
        work[_H, pos] = work[_H, pos - 1]
        work[_DH, pos] = work[_DH, pos - 1]
        pos -= 1
    work[_X, pos] = x
    work[_H, pos] = h
    work[_DH, pos] = dh
    return k + 1


@njit(cache=True, error_model="numpy")
def _build_hull(work, k):
    """Fill tangent intersections and segment masses; return the hull's total mass.

    Masses are relative to ``exp(ref)``, ``ref`` being the hull's maximum, so they lie in
    [0, ∞) without overflow however large h is (work in log space, exponentiate differences).
    """
    for j in range(k - 1):
        d_left = work[_DH, j]
        d_right = work[_DH, j + 1]
        x_left = work[_X, j]
        x_right = work[_X, j + 1]
        if d_left - d_right > _SLOPE_TOLERANCE * (1.0 + abs(d_left) + abs(d_right)):
            zj = (work[_H, j + 1] - work[_H, j] - x_right * d_right + x_left * d_left) / (
                d_left - d_right
            )
            # Rounding can push the intersection outside [x_j, x_{j+1}]; clamp it.
            work[_Z, j] = min(max(zj, x_left), x_right)
        else:
            work[_Z, j] = 0.5 * (x_left + x_right)
    # Peak of each segment: the tangent at the segment's upper end (uphill side).
    ref = -math.inf
    for j in range(k):
        dh = work[_DH, j]
        if dh > 0.0:
            end = work[_Z, j] if j < k - 1 else work[_X, j]
        elif j > 0:
            end = work[_Z, j - 1]
        else:
            end = work[_X, j]
        peak = work[_H, j] + dh * (end - work[_X, j])
        work[_MASS, j] = peak
        ref = max(ref, peak)
    total = 0.0
    for j in range(k):
        left = -math.inf if j == 0 else work[_Z, j - 1]
        right = math.inf if j == k - 1 else work[_Z, j]
        mass = _segment_mass(work[_MASS, j] - ref, work[_DH, j], left, right)
        work[_MASS, j] = mass
        total += mass
    work[_MASS, MAX_ABSCISSAE - 1] = ref
    return total


@njit(cache=True, inline="always", error_model="numpy")
def _outer_abscissa(mode, spread, sign, a, w, z, m, q):
    """Abscissa mode + sign·spread, widened until the slope points back to the mode.

    A widening that lands where the density is not finite (an exponential term overflows: a
    flat prior, ``q = 1e-12``, gives a spread of 10⁶ and e^x = inf there) stays there for
    every wider spread, so the search then bisects the spread between the last one whose slope
    did not point back yet and that one (the density is finite, with the right slope, on an
    interval between them). Before 2026-12 it kept doubling and reported STATUS_MODE_FAILED
    for such proper densities; where a widening stays finite nothing has changed.
    """
    near = 0.0
    for _ in range(60):
        x = mode + sign * spread
        h, dh, _ = log_density_derivatives(x, a, w, z, m, q)
        if sign * dh < 0.0 and math.isfinite(h):
            return x, h, dh, True
        if not (math.isfinite(h) and math.isfinite(dh)):
            break
        near = spread
        spread *= 2.0
    else:
        return x, h, dh, False
    far = spread
    for _ in range(_MAX_OUTER_BISECTIONS):
        middle = 0.5 * (near + far)
        if not near < middle < far:
            break
        x = mode + sign * middle
        h, dh, _ = log_density_derivatives(x, a, w, z, m, q)
        if not (math.isfinite(h) and math.isfinite(dh)):
            far = middle
        elif sign * dh < 0.0:
            return x, h, dh, True
        else:
            near = middle
    return x, h, dh, False


@njit(cache=True, error_model="numpy")
def _initial_abscissae(x0, a, w, z, m, q, work):
    """Fill three abscissae around the mode; return (count, status)."""
    mode, h, dh, curvature, status = find_mode_full(x0, a, w, z, m, q)
    if status != STATUS_OK:
        return 0, status
    spread = _INITIAL_SPREAD / math.sqrt(curvature) if curvature > 0.0 else 1.0
    x_lo, h_lo, dh_lo, ok_lo = _outer_abscissa(mode, spread, -1.0, a, w, z, m, q)
    x_hi, h_hi, dh_hi, ok_hi = _outer_abscissa(mode, spread, 1.0, a, w, z, m, q)
    if not (ok_lo and ok_hi and math.isfinite(h)):
        return 0, STATUS_MODE_FAILED
    work[_X, 0], work[_H, 0], work[_DH, 0] = x_lo, h_lo, dh_lo
    work[_X, 1], work[_H, 1], work[_DH, 1] = mode, h, dh
    work[_X, 2], work[_H, 2], work[_DH, 2] = x_hi, h_hi, dh_hi
    return 3, STATUS_OK


@njit(cache=True, inline="always", error_model="numpy")
def _arrays_fit(state, work):
    """Whether ``state`` and ``work`` are large enough for the kernels' unchecked indexing."""
    return state.shape[0] >= 4 and work.shape[0] >= 5 and work.shape[1] >= MAX_ABSCISSAE


@njit(cache=True, error_model="numpy")
def ars_draw(x0, a, w, z, m, q, state, work):
    """Draw one value from the family by adaptive rejection sampling.

    Parameters
    ----------
    x0 : float
        Starting point of the mode search (the current value in a Gibbs sweep: a warm start).
    a : float
        Linear coefficient (sum of counts, or of counts × Z̄).
    w, z : numpy.ndarray of float64, shape (J,)
        Weights ``w_j >= 0`` and exponents ``z_j`` of the exponential terms.
    m, q : float
        Prior mean and precision (``q >= 0``).
    state : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.
    work : numpy.ndarray of float64, shape (5, MAX_ABSCISSAE)
        Scratch space from :func:`new_workspace`.

    Returns
    -------
    x : float
        The draw (NaN when ``status`` is not STATUS_OK).
    status : int
        A ``STATUS_*`` code of :mod:`geosynth.samplers.family`: STATUS_BAD_ARRAYS when
        ``state``, ``work``, ``w`` or ``z`` has the wrong shape (numba does not check indices,
        so a smaller array would be written past its end).
    """
    if not _arrays_fit(state, work):
        return math.nan, STATUS_BAD_ARRAYS
    status = check_family(a, w, z, m, q)
    if status != STATUS_OK:
        return math.nan, status
    k, status = _initial_abscissae(x0, a, w, z, m, q, work)
    if status != STATUS_OK:
        return math.nan, status
    x, status, _, _ = _draw_from_hull(a, w, z, m, q, state, work, k, _build_hull(work, k))
    return x, status


@njit(cache=True, error_model="numpy")
def _draw_from_hull(a, w, z, m, q, state, work, k, total):
    """Rejection loop on an initialised hull; return (x, status, k, total) with the grown hull."""
    for _ in range(MAX_REJECTIONS):
        # Choose a hull segment with probability ∝ its mass, then a point inside it.
        target = uniform(state) * total
        seg = 0
        running = work[_MASS, 0]
        while running < target and seg < k - 1:
            seg += 1
            running += work[_MASS, seg]
        left = -math.inf if seg == 0 else work[_Z, seg - 1]
        right = math.inf if seg == k - 1 else work[_Z, seg]
        x = _sample_segment(state, work[_DH, seg], left, right)
        if not math.isfinite(x):
            continue
        upper = work[_H, seg] + work[_DH, seg] * (x - work[_X, seg])
        log_u = -standard_exponential(state)
        # Squeeze test on the chord between the abscissae around x.
        if work[_X, 0] <= x <= work[_X, k - 1]:
            j = 0
            while work[_X, j + 1] < x:
                j += 1
            x_left, x_right = work[_X, j], work[_X, j + 1]
            width = x_right - x_left
            if width > 0.0:
                lower = ((x_right - x) * work[_H, j] + (x - x_left) * work[_H, j + 1]) / width
                if log_u <= lower - upper:
                    return x, STATUS_OK, k, total
        h, dh, _ = log_density_derivatives(x, a, w, z, m, q)
        if log_u <= h - upper:
            return x, STATUS_OK, k, total
        if k < MAX_ABSCISSAE - 1:
            if not (math.isfinite(h) and math.isfinite(dh)):
                x, h, dh = _finite_towards_hull(x, work, k, a, w, z, m, q)
            if math.isfinite(h) and math.isfinite(dh):
                k = _insert(work, k, x, h, dh)
                total = _build_hull(work, k)
    return math.nan, STATUS_TOO_MANY_REJECTIONS, k, total


@njit(cache=True, error_model="numpy")
def _finite_towards_hull(x, work, k, a, w, z, m, q):
    """Find a point between ``x`` and the nearest abscissa where ``h`` and ``h'`` are finite.

    A rejected point where an exponential term overflows (``h = −inf``) cannot join the
    abscissae, and the hull's tail beyond the last one stays as it was: on a density cut off by
    an overflow far out in a flat tail (``w = 1e-300``, ``q = 2e-12``: a half-normal of sd
    7·10⁵ on the left, nothing beyond x ≈ 660 on the right) the tail's tangent barely falls,
    nearly every proposal lands beyond the cut, and the rejection budget ran out. Halving the
    way back to the nearest abscissa finds a finite point whose tangent closes the tail. Returns
    ``(x, h, h')``, with non-finite values when no such point is found.
    """
    anchor = work[_X, k - 1] if x > work[_X, k - 1] else work[_X, 0]
    h, dh = math.nan, math.nan
    for _ in range(_MAX_OUTER_BISECTIONS):
        middle = 0.5 * (anchor + x)
        if middle == anchor or middle == x or not math.isfinite(middle):
            break
        x = middle
        h, dh, _ = log_density_derivatives(x, a, w, z, m, q)
        if math.isfinite(h) and math.isfinite(dh):
            break
    return x, h, dh


@njit(cache=True, error_model="numpy")
def ars_sample(size, a, w, z, m, q, state):
    """Draw ``size`` independent values from one density, reusing (and refining) its hull.

    Returns ``(draws, status)``; on failure ``draws`` holds the values drawn before it.

    Parameters
    ----------
    size : int
        Number of draws.
    a, w, z, m, q
        Family parameters, as in :func:`ars_draw` (``w``, ``z``: float64 (J,)).
    state : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.

    Returns
    -------
    draws : numpy.ndarray of float64, shape (size,)
        Independent draws (shorter when ``status`` is not STATUS_OK).
    status : int
        A ``STATUS_*`` code of :mod:`geosynth.samplers.family`.
    """
    out = np.empty(size, dtype=np.float64)
    if state.shape[0] < 4:
        return out[:0], STATUS_BAD_ARRAYS
    status = check_family(a, w, z, m, q)
    if status != STATUS_OK:
        return out[:0], status
    work = new_workspace()
    x0 = m if q > 0.0 else 0.0
    k, status = _initial_abscissae(x0, a, w, z, m, q, work)
    if status != STATUS_OK:
        return out[:0], status
    total = _build_hull(work, k)
    for i in range(size):
        x, status, k, total = _draw_from_hull(a, w, z, m, q, state, work, k, total)
        if status != STATUS_OK:
            return out[:i], status
        out[i] = x
    return out, STATUS_OK


@njit(cache=True, error_model="numpy")
def _single_term(x, a, weight, m, q):
    """h, h', h'' of the one-term family ``a·x − weight·e^x − q(x − m)²/2``."""
    e = weighted_exp(weight, x) if weight > 0.0 else 0.0
    d = x - m
    return a * x - e - 0.5 * q * d * d, a - e - q * d, -e - q


@njit(cache=True, error_model="numpy")
def _intersection(x_left, h_left, d_left, x_right, h_right, d_right):
    if d_left - d_right > _SLOPE_TOLERANCE * (1.0 + abs(d_left) + abs(d_right)):
        z = (h_right - h_left - x_right * d_right + x_left * d_left) / (d_left - d_right)
        return min(max(z, x_left), x_right)
    return 0.5 * (x_left + x_right)


@njit(cache=True, error_model="numpy")
def _gaussian_envelope_draw(x, h, dh, a, weight, m, q, state):
    """Rejection from the Gaussian envelope that strong log-concavity gives; (y, accepted).

    ``h'' ≤ −q`` everywhere, so ``h(y) ≤ h(x) + h'(x)(y − x) − q(y − x)²/2`` for any ``x``: a
    N(x + h'(x)/q, 1/q) envelope. Its acceptance rate is about ``sqrt(q / −h''(mode))``, high
    when the prior curvature dominates (most ε_ib, and θ_i or φ_ip of sparsely observed cells).
    After a few failures the caller switches to ARS; stopping rejection sampling at a fixed
    number of tries and then drawing exactly by other means leaves the output exact.
    """
    sd = 1.0 / math.sqrt(q)
    centre = x + dh / q
    for _ in range(GAUSSIAN_ENVELOPE_TRIES):
        y = centre + sd * standard_normal(state)
        h_y, _, _ = _single_term(y, a, weight, m, q)
        d = y - x
        envelope = h + dh * d - 0.5 * q * d * d
        if -standard_exponential(state) <= h_y - envelope:
            return y, True
    return math.nan, False


@njit(cache=True, error_model="numpy")
def _one_term_arrays(weight):
    """Return ``[weight]``, ``[1.0]`` and a workspace: :func:`ars_draw` for one term ``W·e^x``."""
    return np.full(1, weight), np.ones(1), new_workspace()


@njit(cache=True, error_model="numpy")
def ars_draw_single(x0, a, weight, m, q, state):
    """:func:`ars_draw` specialised to one exponential term, ``a·x − weight·e^x − q(x − m)²/2``.

    Every conditional of the model but β's has this form once its terms are collapsed into one
    weight (z_j = 1). When the prior precision ``q`` carries at least
    :data:`GAUSSIAN_ENVELOPE_MIN_SHARE` of the curvature at the mode, the first envelope is the
    Gaussian of :func:`_gaussian_envelope_draw`; otherwise (or if it keeps rejecting) the
    common ARS path — Newton to the mode, three abscissae, a three-segment hull, one squeeze
    or density test — runs on scalars with no array traffic, about twice as fast as the
    general kernel. A rejection (about 12% of draws) or any numerical trouble hands
    over to the general kernel, with the abscissae found so far; the draws have the same
    distribution either way (tested against the exact CDF).

    Its only array argument is the stream: the general kernel's scratch is allocated on that
    rare path (:func:`_one_term_arrays`). Each array argument costs an atomic reference-count
    increment and decrement per call that numba cannot prune in a loop, and this draw runs
    once per cell or entry of a sweep (all such pairs together took 14 % of the model
    sampler's sweep, measured 2026-11-27: :mod:`geosynth.model.conditionals`).

    Parameters
    ----------
    x0 : float
        Warm start of the mode search (the current value in a Gibbs sweep).
    a : float
        Linear coefficient (a count, or a sum of counts).
    weight : float
        The collapsed weight ``W ≥ 0`` of the one exponential term.
    m, q : float
        Prior mean and precision (``q >= 0``).
    state : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.

    Returns
    -------
    x : float
        The draw (NaN when ``status`` is not STATUS_OK).
    status : int
        A ``STATUS_*`` code of :mod:`geosynth.samplers.family`.
    """
    if not (math.isfinite(a) and math.isfinite(weight) and math.isfinite(m) and math.isfinite(q)):
        return math.nan, STATUS_INVALID
    if q < 0.0 or weight < 0.0:
        return math.nan, STATUS_INVALID
    if not (q > 0.0 or (weight > 0.0 and a > 0.0)):
        return math.nan, STATUS_IMPROPER
    x = x0
    h, dh, d2h = _single_term(x, a, weight, m, q)
    converged = False
    for _ in range(30):
        if not (math.isfinite(dh) and d2h < 0.0):
            break
        step = -dh / d2h
        if abs(step) * math.sqrt(-d2h) <= MODE_TOLERANCE:
            converged = True
            break
        x += step
        h, dh, d2h = _single_term(x, a, weight, m, q)
    if not converged or not math.isfinite(h):
        w1, ones, work = _one_term_arrays(weight)
        return ars_draw(x0, a, w1, ones, m, q, state, work)
    if q >= GAUSSIAN_ENVELOPE_MIN_SHARE * -d2h:
        y, accepted = _gaussian_envelope_draw(x, h, dh, a, weight, m, q, state)
        if accepted:
            return y, STATUS_OK
    spread = _INITIAL_SPREAD / math.sqrt(-d2h)
    x_lo = x - spread
    h_lo, dh_lo, _ = _single_term(x_lo, a, weight, m, q)
    x_hi = x + spread
    h_hi, dh_hi, _ = _single_term(x_hi, a, weight, m, q)
    if not (dh_lo > 0.0 > dh_hi and math.isfinite(h_lo) and math.isfinite(h_hi)):
        w1, ones, work = _one_term_arrays(weight)
        return ars_draw(x0, a, w1, ones, m, q, state, work)
    z0 = _intersection(x_lo, h_lo, dh_lo, x, h, dh)
    z1 = _intersection(x, h, dh, x_hi, h_hi, dh_hi)
    peak0 = h_lo + dh_lo * (z0 - x_lo)
    peak1 = h + dh * ((z1 if dh > 0.0 else z0) - x)
    peak2 = h_hi + dh_hi * (z1 - x_hi)
    ref = max(peak0, max(peak1, peak2))
    mass0 = _segment_mass(peak0 - ref, dh_lo, -math.inf, z0)
    mass1 = _segment_mass(peak1 - ref, dh, z0, z1)
    mass2 = _segment_mass(peak2 - ref, dh_hi, z1, math.inf)
    target = uniform(state) * (mass0 + mass1 + mass2)
    if target < mass0:
        y = _sample_segment(state, dh_lo, -math.inf, z0)
        upper = h_lo + dh_lo * (y - x_lo)
    elif target < mass0 + mass1:
        y = _sample_segment(state, dh, z0, z1)
        upper = h + dh * (y - x)
    else:
        y = _sample_segment(state, dh_hi, z1, math.inf)
        upper = h_hi + dh_hi * (y - x_hi)
    log_u = -standard_exponential(state)
    if x_lo <= y <= x:
        lower = ((x - y) * h_lo + (y - x_lo) * h) / (x - x_lo)
    elif x < y <= x_hi:
        lower = ((x_hi - y) * h + (y - x) * h_hi) / (x_hi - x)
    else:
        lower = -math.inf
    if math.isfinite(y) and log_u <= lower - upper:
        return y, STATUS_OK
    h_y, dh_y, _ = _single_term(y, a, weight, m, q)
    if math.isfinite(y) and log_u <= h_y - upper:
        return y, STATUS_OK
    # Rejected: continue with the general hull, refined by the rejected point.
    w1, ones, work = _one_term_arrays(weight)
    work[_X, 0], work[_H, 0], work[_DH, 0] = x_lo, h_lo, dh_lo
    work[_X, 1], work[_H, 1], work[_DH, 1] = x, h, dh
    work[_X, 2], work[_H, 2], work[_DH, 2] = x_hi, h_hi, dh_hi
    k = 3
    if math.isfinite(y) and math.isfinite(h_y) and math.isfinite(dh_y):
        k = _insert(work, k, y, h_y, dh_y)
    y, status, _, _ = _draw_from_hull(a, w1, ones, m, q, state, work, k, _build_hull(work, k))
    return y, status
