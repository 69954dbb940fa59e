"""Univariate slice sampling (Neal 2003, §4: doubling and shrinkage) for :mod:`.family`.

One call is one Markov transition ``x0 → x1`` that leaves the target density invariant:

1. draw the slice level ``log y = h(x0) − E`` with ``E ~ Exponential(1)``;
2. place an interval of width ``w`` *at random* around ``x0`` (``L = x0 − w·U``, ``R = L + w``);
   a deterministically centred interval biases the chain (Neal 2003, §4.1, a bug in several
   public implementations);
3. double it, on a side chosen at random each time, until both ends are outside the slice
   (at most :data:`MAX_DOUBLINGS` times; Neal's Fig. 4);
4. shrink towards ``x0`` until a point inside the slice passes Neal's acceptance test (Fig. 6:
   the doubling from that point would have found the same interval).

The width ``w`` must not depend on ``x0``: the interval-finding step must be as likely to find
an interval from ``x1`` as from ``x0`` (Neal 2003, §4.1, eq. 4.4 and after), or the chain
leaves the target. Until 2026-11 the width was ``width_factor/√(−h''(x0))``, the curvature at
the *current* point; on log Gamma(0.5) (``h = 0.5x − e^x``) that chain's mean was −1.905 against
the exact −1.964 and its variance 4.75 against 4.93, in every seed, and with a prior
(``q = 0.3``, ``m = 2``) −0.192 against −0.201. Now it is ``width_factor/√(−h''(x̂))`` at the
mode ``x̂``, searched from a start that does not depend on the state either
(:func:`slice_width`). The doubling makes up for a width far from the target's scale in a few
steps (a log Gamma(10⁻⁶), whose sd is 10⁶, from a width of 2,000: nine doublings).

The sampler works on the whole real line. Nunes (2018, §2.2.1, eqs. 2.25–2.26) moved β to a logit
scale only because the slice sampler used there (R's MfUSampler) needed a bounded support; ours
grows its interval from the current point, so no transform (and no Jacobian term) is used.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from geosynth.samplers.family import (
    STATUS_BAD_ARRAYS,
    STATUS_INVALID,
    STATUS_OK,
    STATUS_SLICE_BUDGET,
    check_family,
    find_mode,
    log_density,
)
from geosynth.samplers.rng import standard_exponential, uniform

__all__ = [
    "WIDTH_FACTOR",
    "MAX_DOUBLINGS",
    "MAX_SHRINK",
    "BURN_IN",
    "slice_step",
    "slice_step_unchecked",
    "slice_transition",
    "slice_width",
    "slice_sample",
]

WIDTH_FACTOR = 2.0
MAX_DOUBLINGS = 64  # the interval grows up to 2^64 widths
MAX_SHRINK = 2000  # ~1,500 halvings span the doubles
BURN_IN = 20


@njit(cache=True, error_model="numpy")
def slice_width(a, w, z, m, q):
    """Return the initial width of every transition on this density (independent of the state).

    ``WIDTH_FACTOR/√(−h''(x̂))`` at the mode ``x̂``, searched from ``m`` (``q > 0``) or 0, never
    from the current state: the curvature at the mode is the posterior's own scale, where that
    at ``m`` can be 10¹²⁰ times too large (a huge weight) and the interval would never grow to
    the target.

    Parameters
    ----------
    a, w, z, m, q
        Family parameters, as in :func:`geosynth.samplers.ars.ars_draw`.

    Returns
    -------
    width : float
    status : int
        STATUS_OK, or the mode search's failure.
    """
    _, curvature, status = find_mode(m if q > 0.0 else 0.0, a, w, z, m, q)
    return _width_at(curvature), status


@njit(cache=True, inline="always", error_model="numpy")
def _width_at(curvature):
    """``WIDTH_FACTOR/√curvature`` (``WIDTH_FACTOR`` where the curvature is 0 or not finite)."""
    if curvature > 0.0 and math.isfinite(curvature):
        return WIDTH_FACTOR / math.sqrt(curvature)
    return WIDTH_FACTOR


@njit(cache=True, error_model="numpy")
def slice_step(x0, a, w, z, m, q, state):
    """One slice-sampling transition from ``x0``, after checking the density and the arrays.

    Parameters
    ----------
    x0 : float
        Current value (must have finite log density).
    a, w, z, m, q
        Family parameters, as in :func:`geosynth.samplers.ars.ars_draw`.
    state : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.

    Returns
    -------
    x : float
        The next state of the chain (``x0`` itself when ``status`` is not STATUS_OK).
    status : int
        A ``STATUS_*`` code of :mod:`geosynth.samplers.family`, as :func:`~.ars.ars_draw`
        returns for the same density (:func:`~.family.check_family`); STATUS_INVALID also
        when the log density at ``x0`` is not finite, STATUS_BAD_ARRAYS for a short ``state``.
    """
    if state.shape[0] < 4:
        return x0, STATUS_BAD_ARRAYS
    status = check_family(a, w, z, m, q)
    if status != STATUS_OK:
        return x0, status
    if not math.isfinite(log_density(x0, a, w, z, m, q)):
        return x0, STATUS_INVALID
    return slice_step_unchecked(x0, a, w, z, m, q, state)


@njit(cache=True, error_model="numpy")
def slice_step_unchecked(x0, a, w, z, m, q, state):
    """:func:`slice_step` without its checks, for callers that validated the density.

    The Gibbs engine (:func:`geosynth.model.conditionals.draw_beta_cell`) calls it once per
    transition on densities that are valid by construction (:func:`slice_sample` finds the width
    once and calls :func:`slice_transition`); a non-log-concave (some ``w_j < 0``) or improper (``q
    < 0``) density would be drawn from silently here.

    Parameters
    ----------
    x0, a, w, z, m, q, state
        As in :func:`slice_step`.

    Returns
    -------
    x : float
        The next state of the chain (``x0`` itself when ``status`` is not STATUS_OK).
    status : int
        STATUS_OK, STATUS_SLICE_BUDGET, or the mode search's failure (:func:`slice_width`).
    """
    width, status = slice_width(a, w, z, m, q)
    if status != STATUS_OK:
        return x0, status
    return slice_transition(x0, a, w, z, m, q, state, width)


@njit(cache=True, error_model="numpy")
def slice_transition(x0, a, w, z, m, q, state, width):
    """One transition from ``x0`` with initial width ``width``: doubling, shrinkage, test.

    Parameters
    ----------
    x0, a, w, z, m, q, state
        As in :func:`slice_step`.
    width : float
        Initial width, the same for every state (:func:`slice_width`).

    Returns
    -------
    x : float
    status : int
        STATUS_OK or STATUS_SLICE_BUDGET (then ``x0``).
    """
    log_y = log_density(x0, a, w, z, m, q) - standard_exponential(state)
    # A width below the spacing of doubles at x0 froze the chain: left and right rounded to x0,
    # the interval never grew, and x0 was returned as a draw, STATUS_OK, forever (a nearly
    # flat density, whose width was set at a far-off mode estimate).
    width = max(width, abs(x0) * 2.0**-40)
    left = x0 - width * uniform(state)
    right = left + width
    if not left < right:
        return x0, STATUS_SLICE_BUDGET
    h_left = log_density(left, a, w, z, m, q)
    h_right = log_density(right, a, w, z, m, q)
    for _ in range(MAX_DOUBLINGS):
        if h_left <= log_y and h_right <= log_y:
            break
        if uniform(state) < 0.5:
            left -= right - left
            h_left = log_density(left, a, w, z, m, q)
        else:
            right += right - left
            h_right = log_density(right, a, w, z, m, q)
    low, high = left, right
    for _ in range(MAX_SHRINK):
        x1 = low + uniform(state) * (high - low)
        if log_density(x1, a, w, z, m, q) > log_y and _accepts(
                x0, x1, left, right, width, log_y, a, w, z, m, q):
            return x1, STATUS_OK
        if x1 < x0:
            low = x1
        else:
            high = x1
    return x0, STATUS_SLICE_BUDGET


@njit(cache=True, error_model="numpy")
def _accepts(x0, x1, left, right, width, log_y, a, w, z, m, q):
    """Tell whether doubling from ``x1`` would find ``[left, right]`` (Neal 2003, Fig. 6).

    Halve the interval towards ``x1``; once ``x0`` and ``x1`` fall in different halves, reject
    if both ends of the half holding ``x1`` are outside the slice (the doubling from ``x1``
    would have stopped there).

    When ``width`` is below the spacing of the doubles at ``x1`` (a density narrower than that
    spacing: ``m = 1``, ``q = 1e32``), two neighbouring doubles cannot be halved: the middle
    rounds to the end that would move, the interval stays as it was and the loop never ended
    (before 2026-12, a hang). Halving stops there and ``x1``, inside the slice, is accepted;
    every halving that can split its interval runs as before.
    """
    differ = False
    while right - left > 1.1 * width:
        middle = 0.5 * (left + right)
        if (x0 < middle) != (x1 < middle):
            differ = True
        before_left, before_right = left, right
        if x1 < middle:
            right = middle
        else:
            left = middle
        if differ and log_density(left, a, w, z, m, q) <= log_y \
                and log_density(right, a, w, z, m, q) <= log_y:
            return False
        if left == before_left and right == before_right:
            return True  # neighbouring doubles: no halving can split them
    return True


@njit(cache=True, error_model="numpy")
def slice_sample(size, a, w, z, m, q, state, thin):
    """Run a slice-sampling chain from the mode and keep every ``thin``-th state.

    Slice sampling is a Markov chain, so consecutive draws are correlated; ``thin`` transitions
    separate the returned values. The chain starts at the mode (in the bulk of a log-concave
    density) and discards :data:`BURN_IN` transitions before the first kept value.

    Parameters
    ----------
    size : int
        Number of values to keep.
    a, w, z, m, q
        Family parameters, as in :func:`geosynth.samplers.ars.ars_draw` (``w``, ``z``:
        float64 (J,)).
    state : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.
    thin : int
        Transitions between kept values (>= 1).

    Returns
    -------
    draws : numpy.ndarray of float64, shape (size,)
        The kept states (shorter when ``status`` is not STATUS_OK).
    status : int
        A ``STATUS_*`` code of :mod:`geosynth.samplers.family`.
    """
    out = np.empty(size, dtype=np.float64)
    if state.shape[0] < 4:
        return out[:0], STATUS_BAD_ARRAYS
    status = check_family(a, w, z, m, q)
    if status != STATUS_OK:
        return out[:0], status
    x, curvature, status = find_mode(m if q > 0.0 else 0.0, a, w, z, m, q)
    if status != STATUS_OK:
        return out[:0], status
    width = _width_at(curvature)  # slice_width's: the same mode search, done once
    for _ in range(BURN_IN):
        x, status = slice_transition(x, a, w, z, m, q, state, width)
        if status != STATUS_OK:
            return out[:0], status
    for i in range(size):
        for _ in range(thin):
            x, status = slice_transition(x, a, w, z, m, q, state, width)
            if status != STATUS_OK:
                return out[:i], status
        out[i] = x
    return out, STATUS_OK
