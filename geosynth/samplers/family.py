r"""The log-concave family shared by every scalar full conditional of the Paiva model.

.. math::

    \log f(x) = a x - \sum_j w_j e^{z_j x} - \frac{q}{2} (x - m)^2

with ``a`` the sum of counts (times Z̄ for β), ``w_j ≥ 0`` the exponentiated rest of the linear
predictor, ``z_j`` = 1 (or Z̄_ib for β) and ``q ≥ 0`` the prior precision about ``m`` (n_i·τ about
the ICAR neighbour mean, 1/v for a Normal prior, τ_ε for ε). Every term is concave in ``x`` for
any real ``z_j`` (``e^{z x}`` is convex), so ``f`` is log-concave; see Nunes (2018), §2.1.1,
eqs. 2.10–2.14, and §2.2.1, eqs. 2.22–2.23.

Kernels take plain float64 arrays and scalars, return status codes instead of raising (numba
cannot raise rich exceptions), and never allocate.
"""

from __future__ import annotations

import math

from numba import njit

__all__ = [
    "STATUS_OK",
    "STATUS_INVALID",
    "STATUS_IMPROPER",
    "STATUS_MODE_FAILED",
    "STATUS_TOO_MANY_REJECTIONS",
    "STATUS_SLICE_BUDGET",
    "STATUS_BAD_ARRAYS",
    "STATUS_MESSAGES",
    "check_family",
    "weighted_exp",
    "log_density",
    "log_density_derivatives",
    "find_mode",
    "find_mode_full",
    "find_mode_bracketed",
]

STATUS_OK = 0
STATUS_INVALID = 1
STATUS_IMPROPER = 2
STATUS_MODE_FAILED = 3
STATUS_TOO_MANY_REJECTIONS = 4
STATUS_SLICE_BUDGET = 5
STATUS_BAD_ARRAYS = 6

STATUS_MESSAGES = {
    STATUS_INVALID: "a, m and q must be finite, q >= 0, and every w_j finite and >= 0 with z_j "
    "finite; check the counts and the current state for NaN or inf",
    STATUS_IMPROPER: "the density is improper (it does not vanish in one tail): with q = 0 the "
    "right tail needs some w_j > 0 with z_j > 0 (or a < 0) and the left tail some w_j > 0 with "
    "z_j < 0 (or a > 0); give the parameter a proper prior (q > 0)",
    STATUS_MODE_FAILED: "the mode search did not converge; the density is numerically degenerate "
    "(extreme a, w, z, m or q)",
    STATUS_TOO_MANY_REJECTIONS: "adaptive rejection sampling exceeded its rejection budget",
    STATUS_SLICE_BUDGET: "slice sampling exceeded its shrinkage budget",
    STATUS_BAD_ARRAYS: "an array argument has the wrong shape: w and z must have the same length, "
    "state must be a uint64 row of length 4 (make_streams) and work a (5, MAX_ABSCISSAE) array "
    "(new_workspace)",
}

# Doublings of the bracket: from 1/√(−h'') ≥ 1e-154 to ~1e308 with room (the first step is that
# tiny for huge w_j, e.g. w = 1e120, whose mode lies 276 from x0 = 0).
_MAX_BRACKET_STEPS = 2100
_MAX_NEWTON_STEPS = 100
_MAX_HALVING_STEPS = 4400  # ~2,100 halvings, each after a Newton step, span the doubles
MODE_TOLERANCE = 0.1  # posterior sd: ARS only needs abscissae on both sides of the mode


@njit(cache=True, inline="always", error_model="numpy")
def check_family(a, w, z, m, q):
    """Return STATUS_OK if (a, w, z, m, q) define a proper log-concave density, else a status.

    Parameters
    ----------
    a : float
        Linear coefficient (sum of counts, or of counts × Z̄).
    w : numpy.ndarray of float64, shape (J,)
        Weights ``w_j`` of the exponential terms.
    z : numpy.ndarray of float64, shape (J,)
        Exponents ``z_j`` of the exponential terms.
    m : float
        Prior mean.
    q : float
        Prior precision.

    Returns
    -------
    int
        STATUS_OK; STATUS_BAD_ARRAYS when ``w`` and ``z`` differ in length; STATUS_INVALID
        for a non-finite value, ``q < 0`` or some ``w_j < 0``; STATUS_IMPROPER when ``q = 0``
        and the density does not vanish in both tails.
    """
    if z.shape[0] != w.shape[0]:  # the kernels read z[j] for every j of w, unchecked
        return STATUS_BAD_ARRAYS
    if not (math.isfinite(a) and math.isfinite(m) and math.isfinite(q)) or q < 0.0:
        return STATUS_INVALID
    right_vanishes = a < 0.0
    left_vanishes = a > 0.0
    for j in range(w.shape[0]):
        if not (math.isfinite(w[j]) and math.isfinite(z[j])) or w[j] < 0.0:
            return STATUS_INVALID
        if w[j] > 0.0:
            if z[j] > 0.0:
                right_vanishes = True
            elif z[j] < 0.0:
                left_vanishes = True
    if q > 0.0 or (right_vanishes and left_vanishes):
        return STATUS_OK
    return STATUS_IMPROPER


@njit(cache=True, inline="always", error_model="numpy")
def weighted_exp(w, zx):
    """``w·e^{zx}`` for ``w > 0``, through logs where ``e^{zx}`` alone overflows.

    A tiny weight moves a proper density's mode beyond ``zx = 709.78``: ``w·exp(zx)`` was
    ``inf`` there (``w = 1e-303``, ``a = 1e6``: mode 711.5), so the slice sampler drew from the
    density cut off at 709.78, silently, and ARS failed its mode search. The same bits as
    ``w·exp(zx)`` wherever that is finite.
    """
    e = math.exp(zx)
    if e < math.inf:
        return w * e
    return math.exp(math.log(w) + zx)


@njit(cache=True, error_model="numpy")
def log_density(x, a, w, z, m, q):
    """Unnormalised log density at ``x`` (``-inf`` where a term overflows).

    Parameters
    ----------
    x : float
        Where to evaluate.
    a : float
        Linear coefficient (sum of counts, or of counts × Z̄).
    w : numpy.ndarray of float64, shape (J,)
        Weights ``w_j`` of the exponential terms.
    z : numpy.ndarray of float64, shape (J,)
        Exponents ``z_j`` of the exponential terms.
    m : float
        Prior mean.
    q : float
        Prior precision.

    Returns
    -------
    float
        ``a·x − Σ_j w_j e^{z_j x} − q(x − m)²/2`` (terms with ``w_j = 0`` skipped).
    """
    d = x - m
    h = a * x - 0.5 * q * d * d
    for j in range(w.shape[0]):
        if w[j] > 0.0:
            h -= weighted_exp(w[j], z[j] * x)
    return h


@njit(cache=True, inline="always", error_model="numpy")
def log_density_derivatives(x, a, w, z, m, q):
    """Return ``(h, h', h'')`` at ``x``: log density and its first two derivatives.

    Parameters
    ----------
    x : float
        Where to evaluate.
    a : float
        Linear coefficient (sum of counts, or of counts × Z̄).
    w : numpy.ndarray of float64, shape (J,)
        Weights ``w_j`` of the exponential terms.
    z : numpy.ndarray of float64, shape (J,)
        Exponents ``z_j`` of the exponential terms.
    m : float
        Prior mean.
    q : float
        Prior precision.

    Returns
    -------
    h, dh, d2h : float
        The unnormalised log density (as :func:`log_density`) and its first and second
        derivatives in ``x``.
    """
    d = x - m
    h = a * x - 0.5 * q * d * d
    dh = a - q * d
    d2h = -q
    for j in range(w.shape[0]):
        if w[j] > 0.0:
            e = weighted_exp(w[j], z[j] * x)
            h -= e
            dh -= z[j] * e
            d2h -= z[j] * z[j] * e
    return h, dh, d2h


@njit(cache=True, error_model="numpy")
def find_mode(x0, a, w, z, m, q):
    """Locate the mode; return ``(mode, -h''(mode), status)`` (see :func:`find_mode_full`).

    Parameters
    ----------
    x0 : float
        Warm start of the search.
    a : float
        Linear coefficient (sum of counts, or of counts × Z̄).
    w : numpy.ndarray of float64, shape (J,)
        Weights ``w_j`` of the exponential terms.
    z : numpy.ndarray of float64, shape (J,)
        Exponents ``z_j`` of the exponential terms.
    m : float
        Prior mean.
    q : float
        Prior precision.

    Returns
    -------
    mode : float
    curvature : float
        ``-h''(mode) > 0``.
    status : int
        STATUS_OK or STATUS_MODE_FAILED.
    """
    x, _, _, curvature, status = find_mode_full(x0, a, w, z, m, q)
    return x, curvature, status


@njit(cache=True, error_model="numpy")
def find_mode_full(x0, a, w, z, m, q):
    """Locate the mode: damped Newton steps on h', with a bracketing fallback.

    Newton from the warm start ``x0`` (the current value inside a Gibbs sweep) converges in two
    or three steps for this family; it stops once the step is below ``MODE_TOLERANCE`` posterior
    standard deviations, which is all ARS and slice sampling need. If Newton fails (non-finite
    values or no convergence), :func:`find_mode_bracketed` grows a bracket and bisects.

    Parameters
    ----------
    x0 : float
        Warm start of the Newton steps.
    a : float
        Linear coefficient (sum of counts, or of counts × Z̄).
    w : numpy.ndarray of float64, shape (J,)
        Weights ``w_j`` of the exponential terms.
    z : numpy.ndarray of float64, shape (J,)
        Exponents ``z_j`` of the exponential terms.
    m : float
        Prior mean.
    q : float
        Prior precision.

    Returns
    -------
    mode : float
    h, dh : float
        Log density and its derivative at ``mode`` (saves the caller an evaluation).
    curvature : float
        ``-h''(mode) > 0``.
    status : int
        STATUS_OK or STATUS_MODE_FAILED.
    """
    x = x0
    h, dh, d2h = log_density_derivatives(x, a, w, z, m, q)
    if not (math.isfinite(dh) and d2h < 0.0 and math.isfinite(d2h)):
        x = m if q > 0.0 else 0.0
        h, dh, d2h = log_density_derivatives(x, a, w, z, m, q)
    for _ in range(_MAX_NEWTON_STEPS // 4):
        if not (math.isfinite(dh) and d2h < 0.0 and math.isfinite(d2h)):
            break
        step = -dh / d2h
        if abs(step) * math.sqrt(-d2h) <= MODE_TOLERANCE:
            return x, h, dh, -d2h, STATUS_OK
        for _ in range(60):  # damp steps that land where the density overflows
            h, dh_new, d2h_new = log_density_derivatives(x + step, a, w, z, m, q)
            if math.isfinite(dh_new) and math.isfinite(d2h_new):
                break
            step *= 0.5
        x += step
        dh, d2h = dh_new, d2h_new
    x, curvature, status = find_mode_bracketed(x0, a, w, z, m, q)
    h, dh, _ = log_density_derivatives(x, a, w, z, m, q)
    return x, h, dh, curvature, status


@njit(cache=True, error_model="numpy")
def find_mode_bracketed(x0, a, w, z, m, q):
    """Locate the mode by safeguarded Newton steps on h' (monotone decreasing), slowly but surely.

    A bracket ``[lo, hi]`` with ``h'(lo) > 0 > h'(hi)`` is grown geometrically from ``x0``;
    Newton steps that leave the bracket (or are not finite) are replaced by bisection. Where an
    exponential term overflows (``h' = −inf`` far right of a ``z_j > 0`` term, ``+inf`` far
    left of a ``z_j < 0`` one) the sign still says which way the mode is, so a start there
    (``m = 1e6``) steps towards it with steps of 1, 2, 4, ...

    Parameters
    ----------
    x0 : float
        Where the bracket starts.
    a : float
        Linear coefficient (sum of counts, or of counts × Z̄).
    w : numpy.ndarray of float64, shape (J,)
        Weights ``w_j`` of the exponential terms.
    z : numpy.ndarray of float64, shape (J,)
        Exponents ``z_j`` of the exponential terms.
    m : float
        Prior mean.
    q : float
        Prior precision.

    Returns
    -------
    mode : float
    curvature : float
        ``-h''(mode) > 0``.
    status : int
        STATUS_OK or STATUS_MODE_FAILED.
    """
    x = x0
    h, dh, d2h = log_density_derivatives(x, a, w, z, m, q)
    if not math.isfinite(dh) or d2h >= 0.0 or not math.isfinite(d2h):
        x = m if q > 0.0 else 0.0
        h, dh, d2h = log_density_derivatives(x, a, w, z, m, q)
        if math.isnan(dh):
            return x, 1.0, STATUS_MODE_FAILED
    if dh == 0.0:
        return x, max(-d2h, 1e-300), STATUS_OK
    # Grow a bracket in the uphill direction.
    step = 1.0 / math.sqrt(-d2h) if d2h < 0.0 and math.isfinite(d2h) else 1.0
    lo = x
    hi = x
    if dh > 0.0:
        for _ in range(_MAX_BRACKET_STEPS):
            hi = x + step
            _, dhi, _ = log_density_derivatives(hi, a, w, z, m, q)
            if dhi < 0.0 or math.isnan(dhi):  # +inf: still left of a z_j < 0 term's overflow
                break
            lo = hi
            step *= 2.0
        else:
            return x, 1.0, STATUS_MODE_FAILED
    else:
        for _ in range(_MAX_BRACKET_STEPS):
            lo = x - step
            _, dlo, _ = log_density_derivatives(lo, a, w, z, m, q)
            if dlo > 0.0:
                break
            if math.isnan(dlo):
                return x, 1.0, STATUS_MODE_FAILED
            hi = lo
            step *= 2.0
        else:
            return x, 1.0, STATUS_MODE_FAILED
    # Newton inside the bracket, bisection as the safeguard.
    x = 0.5 * (lo + hi) if not (lo < x < hi) else x
    for k in range(_MAX_NEWTON_STEPS + _MAX_HALVING_STEPS):
        h, dh, d2h = log_density_derivatives(x, a, w, z, m, q)
        if not math.isfinite(dh):
            if dh > 0.0:
                lo = x  # far left of a z_j < 0 term
            else:
                hi = x  # far right of a z_j > 0 term (or both: NaN)
        elif dh > 0.0:
            lo = x
        elif dh < 0.0:
            hi = x
        else:
            return x, -d2h, STATUS_OK
        newton = x - dh / d2h if (math.isfinite(dh) and d2h < 0.0) else math.nan
        # Newton creeps by ~1/z_j a step down an overflowing exponential (from 700 to the mode
        # 14 of m = 1e6); past its budget every other step bisects, halving the bracket.
        halve = k >= _MAX_NEWTON_STEPS and k % 2 == 1
        x_new = newton if lo < newton < hi and not halve else 0.5 * (lo + hi)
        if abs(x_new - x) <= 1e-10 * (1.0 + abs(x)) or hi - lo <= 1e-12 * (1.0 + abs(x)):
            _, _, d2h = log_density_derivatives(x_new, a, w, z, m, q)
            return x_new, -d2h, STATUS_OK
        x = x_new
    return x, -d2h, STATUS_MODE_FAILED
