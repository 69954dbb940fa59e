r"""Exact draws of the one-term family from the tangent at the current value, ARS as fallback.

Target: the one-term member of the model's family (:mod:`geosynth.samplers.family`),

.. math::

    h(x) = a x - W e^{x} - \frac{q}{2} (x - m)^2, \qquad W \ge 0,\ q > 0,

to which every scalar conditional of the Paiva model but β's collapses (μ, α_p, θ_i, φ_ip,
ε_ib). ``-W e^x`` is concave, so it lies below its tangent at any point ``x_0``; with
``w_0 = W e^{x_0}``,

.. math::

    h(x) \le a x - w_0 (1 + x - x_0) - \frac{q}{2} (x - m)^2
    \quad\Longrightarrow\quad
    x^* \sim N\!\left(m + \frac{a - w_0}{q},\ \frac{1}{q}\right),

a Gaussian envelope, and a proposal ``x*`` is accepted with probability
``exp(−w_0 (e^d − 1 − d))``, ``d = x* − x_0`` (von Neumann's rejection; the same bound as the
Gaussian envelope of :func:`geosynth.samplers.ars.ars_draw_single`, there taken at the mode).
Accepted proposals are exact draws of ``h`` for every ``x_0``, so ``x_0`` may be the current
value of a Gibbs sweep, where the engine keeps ``w_0`` as ``exp(η)``: a proposal then costs one
normal, one uniform and one ``exp`` — whose value ``e^d`` also gives ``W e^{x*}``, the caller's
new ``exp(η)`` — and no Newton search for the mode (2–4 ``exp`` per draw in ARS).

The acceptance rate falls as the likelihood's curvature ``w_0`` grows against the prior's
``q``; the tangent is tried only when ``w_0 ≤`` :data:`TANGENT_MAX_RATIO` ``· q`` (most ε_ib,
θ_i and φ_ip of a lattice whose cells hold a few records each) and at most
:data:`TANGENT_TRIES` times, then :func:`~geosynth.samplers.ars.ars_draw_single` draws. Both
branches are exact draws of ``h``, and which one runs depends on ``x_0`` only, so the output is
an exact draw whatever ``x_0`` was (a Gibbs update stays a Gibbs update).
"""

from __future__ import annotations

import math

from numba import njit

from geosynth.samplers.ars import ars_draw_single
from geosynth.samplers.family import STATUS_OK
from geosynth.samplers.rng import standard_normal, uniform

__all__ = ["TANGENT_MAX_RATIO", "TANGENT_TRIES", "tangent_draw"]

#: ``W e^{x_0} / q`` up to which the tangent envelope is tried (acceptance ≥ ~0.6 near the mode).
TANGENT_MAX_RATIO = 1.0
#: Proposals from the tangent envelope before the ARS fallback.
TANGENT_TRIES = 3
_MAX_STEP = 700.0  # e^d overflows beyond; such a proposal is rejected


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def tangent_draw(x0, a, wex, m, q, state, work, w1, ones):
    """Exact draw of ``a·x − W·e^x − q(x − m)²/2`` given ``wex`` = W·e^{x0} at the current x0.

    Parameters
    ----------
    x0 : float
        The current value (tangent point; warm start of the ARS fallback).
    a : float
        Linear coefficient (a count, or a sum of counts).
    wex : float
        ``W·e^{x0}`` (``>= 0``).
    m, q : float
        Prior mean and precision (``q >= 0``).
    state : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.
    work, w1, ones : numpy.ndarray
        Scratch of :func:`~geosynth.samplers.ars.ars_draw_single`.

    Returns
    -------
    x : float
        The draw (NaN when ``status`` is not STATUS_OK).
    wex : float
        ``W·e^x`` at the draw.
    status : int
        A ``STATUS_*`` code of :mod:`geosynth.samplers.family` (the fallback validates input).
    """
    if 0.0 <= wex <= TANGENT_MAX_RATIO * q and math.isfinite(q) and math.isfinite(x0):
        centre = m + (a - wex) / q
        sd = 1.0 / math.sqrt(q)
        for _ in range(TANGENT_TRIES):
            y = centre + sd * standard_normal(state)
            d = y - x0
            if not d < _MAX_STEP:
                continue
            grow = math.exp(d)
            gap = wex * (grow - 1.0 - d)
            u = uniform(state)
            if u <= 1.0 - gap or u <= math.exp(-gap):
                return y, wex * grow, STATUS_OK
    x, status = ars_draw_single(x0, a, wex * math.exp(-x0), m, q, state, work, w1, ones)
    if status != STATUS_OK:
        return x, math.nan, status
    return x, wex * math.exp(x - x0), STATUS_OK
