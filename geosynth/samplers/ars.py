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
    STATUS_MODE_FAILED,
    STATUS_OK,
    STATUS_TOO_MANY_REJECTIONS,
    check_family,
    find_mode_full,
    log_density_derivatives,
)
from geosynth.samplers.rng import standard_exponential, uniform

__all__ = ["MAX_ABSCISSAE", "MAX_REJECTIONS", "new_workspace", "ars_draw", "ars_sample"]

MAX_ABSCISSAE = 24  # the last column of the mass row holds the hull reference
MAX_REJECTIONS = 10_000
_INITIAL_SPREAD = 1.3  # k in mode ± k / sqrt(-h''(mode))
_SLOPE_TOLERANCE = 1e-12


def new_workspace() -> np.ndarray:
    """Allocate the (5, MAX_ABSCISSAE) float64 scratch array :func:`ars_draw` needs."""
    return np.empty((5, MAX_ABSCISSAE), dtype=np.float64)


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def _outer_abscissa(mode, spread, sign, a, w, z, m, q):
    """Abscissa mode + sign·spread, widened until the slope points back to the mode."""
    for _ in range(60):
        x = mode + sign * spread
        h, dh, _ = log_density_derivatives(x, a, w, z, m, q)
        if sign * dh < 0.0 and math.isfinite(h):
            return x, h, dh, True
        spread *= 2.0
    return x, h, dh, False


@njit(cache=True)
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


@njit(cache=True)
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
        A ``STATUS_*`` code of :mod:`geosynth.samplers.family`.
    """
    status = check_family(a, w, z, m, q)
    if status != STATUS_OK:
        return math.nan, status
    k, status = _initial_abscissae(x0, a, w, z, m, q, work)
    if status != STATUS_OK:
        return math.nan, status
    x, status, _, _ = _draw_from_hull(a, w, z, m, q, state, work, k, _build_hull(work, k))
    return x, status


@njit(cache=True)
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
        if k < MAX_ABSCISSAE - 1 and math.isfinite(h) and math.isfinite(dh):
            k = _insert(work, k, x, h, dh)
            total = _build_hull(work, k)
    return math.nan, STATUS_TOO_MANY_REJECTIONS, k, total


@njit(cache=True)
def ars_sample(size, a, w, z, m, q, state):
    """Draw ``size`` independent values from one density, reusing (and refining) its hull.

    Returns ``(draws, status)``; on failure ``draws`` holds the values drawn before it.
    """
    out = np.empty(size, dtype=np.float64)
    status = check_family(a, w, z, m, q)
    if status != STATUS_OK:
        return out[:0], status
    work = np.empty((5, MAX_ABSCISSAE), dtype=np.float64)
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
