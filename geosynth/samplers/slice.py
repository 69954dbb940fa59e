"""Univariate slice sampling (Neal 2003, §4: stepping out and shrinkage) for :mod:`.family`.

One call is one Markov transition ``x0 → x1`` that leaves the target density invariant:

1. draw the slice level ``log y = h(x0) − E`` with ``E ~ Exponential(1)``;
2. place an interval of width ``w`` *at random* around ``x0`` (``L = x0 − w·U``, ``R = L + w``);
   a deterministically centred interval biases the chain (Neal 2003, §4.1, a bug in several
   public implementations);
3. step out by ``w`` on each side within a budget of ``max_steps`` steps split at random between
   the two sides (Neal's Fig. 3);
4. shrink towards ``x0`` until a point inside the slice is found.

The width comes from the curvature at the current point, ``w = width_factor/√(−h''(x0))``, so
the interval adapts to the scale of the conditional without tuning; where ``h''(x0)`` is exactly
0 (``q = 0`` and every exponential term underflowed, a pure ``e^{a x}`` tail) it comes from the
slope, ``width_factor/|h'(x0)|``. Where the curvature is tiny but not 0 the width can be
enormous; shrinkage halves it about once per rejected point, so :data:`MAX_SHRINK` allows
enough of them to come down from any width a double can hold.

The sampler works on the whole real line. Nunes (2018, §2.2.1, eqs. 2.25–2.26) moved β to a logit
scale only because the slice sampler used there (R's MfUSampler) needed a bounded support; ours
steps out from the current point, so no transform (and no Jacobian term) is used.
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
    log_density_derivatives,
)
from geosynth.samplers.rng import standard_exponential, uniform

__all__ = [
    "WIDTH_FACTOR",
    "MAX_STEP_OUT",
    "MAX_SHRINK",
    "BURN_IN",
    "slice_step",
    "slice_step_unchecked",
    "slice_sample",
]

WIDTH_FACTOR = 2.0
MAX_STEP_OUT = 32
MAX_SHRINK = 2000  # ~1,500 halvings span the doubles; a rare path (200 failed, a = 1e-6)
BURN_IN = 20


@njit(cache=True, inline="always", error_model="numpy")
def _width(dh, d2h):
    """Width of the initial interval from ``h'`` and ``h''`` at the current point.

    ``WIDTH_FACTOR/√(−h'')`` wherever the density is curved. ``h''`` is exactly 0 only with
    ``q = 0`` where every ``e^{z_j x}`` term has underflowed: the density is ``e^{a x}`` there,
    an exponential tail of scale ``1/|h'|``, which may be far wider than any fixed width (with
    ``a = 1e-6`` the target's sd is 1e6 and 32 step-outs of width 2 cross 64 of it). The width
    sets the scale of the stepping out (Neal 2003, §4.1), so it must match the target's.
    """
    if d2h < 0.0:
        return WIDTH_FACTOR / math.sqrt(-d2h)
    if dh != 0.0 and math.isfinite(dh):
        return WIDTH_FACTOR / abs(dh)
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

    The Gibbs engine (:func:`geosynth.model.conditionals.draw_beta_cell`) and
    :func:`slice_sample` call it once per transition on densities that are valid by
    construction; a non-log-concave (some ``w_j < 0``) or improper (``q < 0``) density would
    be drawn from silently here.

    Parameters
    ----------
    x0, a, w, z, m, q, state
        As in :func:`slice_step`.

    Returns
    -------
    x : float
        The next state of the chain (``x0`` itself when ``status`` is not STATUS_OK).
    status : int
        STATUS_OK or STATUS_SLICE_BUDGET.
    """
    h0, dh, d2h = log_density_derivatives(x0, a, w, z, m, q)
    log_y = h0 - standard_exponential(state)
    width = _width(dh, d2h)
    left = x0 - width * uniform(state)
    right = left + width
    steps_left = int(MAX_STEP_OUT * uniform(state))
    steps_right = MAX_STEP_OUT - 1 - steps_left
    while steps_left > 0 and log_density(left, a, w, z, m, q) > log_y:
        left -= width
        steps_left -= 1
    while steps_right > 0 and log_density(right, a, w, z, m, q) > log_y:
        right += width
        steps_right -= 1
    for _ in range(MAX_SHRINK):
        x1 = left + uniform(state) * (right - left)
        if log_density(x1, a, w, z, m, q) > log_y:
            return x1, STATUS_OK
        if x1 < x0:
            left = x1
        else:
            right = x1
    return x0, STATUS_SLICE_BUDGET


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
    x, _, status = find_mode(m if q > 0.0 else 0.0, a, w, z, m, q)
    if status != STATUS_OK:
        return out[:0], status
    for _ in range(BURN_IN):
        x, status = slice_step_unchecked(x, a, w, z, m, q, state)
        if status != STATUS_OK:
            return out[:0], status
    for i in range(size):
        for _ in range(thin):
            x, status = slice_step_unchecked(x, a, w, z, m, q, state)
            if status != STATUS_OK:
                return out[:i], status
        out[i] = x
    return out, STATUS_OK
