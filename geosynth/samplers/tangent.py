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
new ``exp(η)`` — and no Newton search for the mode (2–4 ``exp`` per draw in ARS). One try of
this envelope is :func:`gaussian_tangent_try`, which also serves loops of tries over independent
conditionals that LLVM vectorises (ε's draws, :func:`geosynth.model.conditionals.update_eps`).

The acceptance rate of that envelope is about ``sqrt(q / (q + W e^x))``: it falls as the
likelihood's curvature grows against the prior's. The second envelope bounds the *prior* by its
tangent instead, at any point ``x_1``:
``−q(x − m)²/2 ≤ −q(x_1 − m)²/2 − q(x_1 − m)(x − x_1)``, so

.. math::

    h(x) \le k x - W e^{x} + \text{const}, \qquad k = a - q (x_1 - m),

the log-density of ``x = log V`` with ``V ~ Gamma(k, rate W)``; when ``k > 0`` a proposal
``x* = x_1 + log(G / (W e^{x_1}))``, ``G ~ Gamma(k, 1)``, is accepted with probability
``exp(−q (x* − x_1)²/2)``. With ``x_1`` near the mode that is about
``sqrt(W e^x / (W e^x + q))``: this envelope serves the likelihood-dominated conditionals
(θ_i and φ_ip of well-observed cells, ε_ib of a cell whose expected count exceeds τ_ε) that the
first one serves badly. ``x_1`` is one Newton step from ``x_0`` towards the mode, and
``log(W e^{x_1}) = log w_0 + x_1 − x_0`` needs no ``exp``; a proposal costs one Gamma draw
(Marsaglia & Tsang 2000: a normal and a uniform), one ``log`` and one uniform, and
``W e^{x*}`` is ``G`` itself. (With ``q = 0`` and ``a > 0`` the conditional *is* that
log-Gamma and every proposal is accepted.)

The Gaussian envelope is tried when ``w_0 ≤`` :data:`TANGENT_MAX_RATIO` ``· q``, the Gamma one
otherwise (when ``k > 0``), each at most :data:`TANGENT_TRIES` times; then
:func:`~geosynth.samplers.ars.ars_draw_single` draws. Every branch is an exact draw of ``h``,
and which one runs depends on ``x_0`` only, so the output is an exact draw whatever ``x_0``
was (a Gibbs update stays a Gibbs update).
"""

from __future__ import annotations

import math

from numba import njit

from geosynth.samplers.ars import ars_draw_single
from geosynth.samplers.family import STATUS_OK
from geosynth.samplers.rng import gamma_and_log, standard_normal, uniform
from geosynth.samplers.vexp import exp_vec

__all__ = [
    "TANGENT_MAX_RATIO",
    "TANGENT_TRIES",
    "tangent_centre",
    "gaussian_tangent_try",
    "tangent_draw",
]

#: ``W e^{x_0} / q`` up to which the Gaussian envelope is tried, the Gamma one above it (both
#: accept ~0.7 of proposals near the mode at the switch).
TANGENT_MAX_RATIO = 1.0
#: Proposals from either envelope before the ARS fallback.
TANGENT_TRIES = 3
_MAX_STEP = 700.0  # e^d overflows beyond; such a proposal is rejected


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def tangent_centre(a, wex, m, q):
    """Mean and standard deviation of the Gaussian envelope from the tangent (``q > 0``)."""
    return m + (a - wex) / q, 1.0 / math.sqrt(q)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def gaussian_tangent_try(x0, wex, centre, sd, z, u, vector):
    """One proposal of the Gaussian envelope from the tangent at ``x0``, and its verdict.

    The envelope is N(centre, sd²) with ``centre = m + (a − wex)/q`` and ``sd = 1/√q``
    (:func:`tangent_centre`); the proposal ``centre + sd·z`` is accepted when
    ``u ≤ exp(−gap)``. With ``z`` a standard normal and ``u`` an independent uniform on (0, 1),
    an accepted proposal is an exact draw of ``a·x − W·e^x − q(x − m)²/2``, and a refused one
    leaves nothing to undo (a fresh try, or any exact draw, may follow). A step beyond
    ``_MAX_STEP``, where ``e^d`` overflows, is refused.

    ``vector`` (a constant at each call site) picks how the two exponentials are computed: by
    :mod:`geosynth.samplers.vexp`, without calls or branches, for a loop of tries over
    independent conditionals that LLVM vectorises; or by libm, the second only when the
    first-order bound ``u ≤ 1 − gap`` does not already accept, for a single draw (two call-free
    ``exp`` in a dependent chain cost more than libm's one and a half: 0.55 against 1.0 ms
    for the per-entry draws of ε at 1,600 cells).

    Parameters
    ----------
    x0, wex : float
        As in :func:`tangent_draw`.
    centre, sd : float
        The envelope's mean and standard deviation (:func:`tangent_centre`).
    z, u : float
        The proposal's standard normal and the acceptance's uniform.
    vector : bool
        Compute for a vectorised loop (see above).

    Returns
    -------
    accepted : bool
    x : float
        The proposal.
    wex : float
        ``W·e^x`` at the proposal.
    """
    x = centre + sd * z
    d = x - x0
    if vector:
        grow = exp_vec(d)
        gap = wex * (grow - 1.0 - d)
        return (d < _MAX_STEP) & (u <= exp_vec(-gap)), x, wex * grow
    if not d < _MAX_STEP:  # e^d overflows; W·e^x may not, from a tiny W·e^{x0}
        return _far_try(x, d, wex, u)
    grow = math.exp(d)
    gap = wex * (grow - 1.0 - d)
    return u <= 1.0 - gap or u <= math.exp(-gap), x, wex * grow


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _far_try(x, d, wex, u):
    """Decide a proposal ``d >= 700`` above ``x0`` through logs: accepted, x, W·e^x.

    Such a proposal was refused outright, right only where ``W·e^x`` overflows: from
    ``W·e^{x0} = e^{-700}`` (``x0 = −700``, ``W = 1``) the mode lies 700 up and nearly every
    proposal there should be accepted, so the draws were those of the density cut off at
    ``x0 + 700``, mixed with the fallback's (KS D = 0.13). A proposal is refused where ``W·e^x``
    overflows (its acceptance is below ``e^{-e^{709}}``).

    The vectorised tries (``vector=True``) still refuse it: they serve ε's entries, whose
    current ``η`` would have to lie below −690 for it to matter.
    """
    if wex == 0.0:  # W = 0: the envelope is the density
        return d == d, x, 0.0
    log_new = math.log(wex) + d
    if not log_new < _MAX_STEP:
        return False, x, math.inf
    new_wex = math.exp(log_new)
    return u <= math.exp(-(new_wex - wex * (1.0 + d))), x, new_wex


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def tangent_draw(x0, a, wex, m, q, state):
    """Exact draw of ``a·x − W·e^x − q(x − m)²/2`` given ``wex`` = W·e^{x0} at the current x0.

    Parameters
    ----------
    x0 : float
        The current value (tangent point; warm start of the ARS fallback).
    a : float
        Linear coefficient (a count, or a sum of counts).
    wex : float
        ``W·e^{x0}`` (``>= 0``); 0 is taken as ``W = 0`` (a caller's ``exp(η)`` that
        underflowed is 0 in its sums too), so with ``q = 0`` the density is then improper.
    m, q : float
        Prior mean and precision (``q >= 0``).
    state : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place (the only array argument: see
        :func:`~geosynth.samplers.ars.ars_draw_single`).

    Returns
    -------
    x : float
        The draw (NaN when ``status`` is not STATUS_OK).
    wex : float
        ``W·e^x`` at the draw.
    status : int
        A ``STATUS_*`` code of :mod:`geosynth.samplers.family` (the fallback validates input).
    """
    if math.isfinite(q) and math.isfinite(x0) and math.isfinite(wex):
        if 0.0 <= wex <= TANGENT_MAX_RATIO * q and q > 0.0:
            centre, sd = tangent_centre(a, wex, m, q)
            for _ in range(TANGENT_TRIES):
                accepted, y, new_wex = gaussian_tangent_try(
                    x0, wex, centre, sd, standard_normal(state), uniform(state), False)
                if accepted:
                    return y, new_wex, STATUS_OK
        elif wex > 0.0:
            # The prior's tangent at x1, one Newton step from x0 towards the mode.
            x1 = x0 + (a - wex - q * (x0 - m)) / (wex + q)
            shape = a - q * (x1 - m)
            if shape > 0.0:
                log_w1 = math.log(wex) + (x1 - x0)  # log(W·e^{x1}) without an exp
                for _ in range(TANGENT_TRIES):
                    g, log_g = gamma_and_log(state, shape)
                    d = log_g - log_w1
                    gap = 0.5 * q * d * d
                    u = uniform(state)
                    if u <= 1.0 - gap or u <= math.exp(-gap):
                        # x1 + d, without its cancellation when q = 0: x1 = x0 + (a − wex)/wex
                        # is then 1e306 for a tiny wex, and x1 + d lost the draw (0.0 for a
                        # mode at 704.6). With q > 0 the same bits as before.
                        x = x1 + d if q > 0.0 else x0 + (log_g - math.log(wex))
                        return x, g, STATUS_OK
    x, status = ars_draw_single(x0, a, _shift(wex, -x0), m, q, state)
    if status != STATUS_OK:
        return x, math.nan, status
    return x, _shift(wex, x - x0), STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _shift(wex, d):
    """``wex·e^d`` without ``0·inf``: ``W = wex·e^{−x0}`` for ``x0 < −709``, ``W·e^x``.

    The product is kept where ``e^d`` is a normal double (the same bits as before); beyond, the
    sum of logs. ``wex = 0`` (``W = 0``, or ``W·e^{x0}`` underflowed in the caller, whose
    ``exp(η)`` is then 0) stays 0.
    """
    if wex == 0.0:
        return 0.0
    if -_MAX_STEP < d < _MAX_STEP:
        return wex * math.exp(d)
    return math.exp(math.log(wex) + d)
