r"""One Metropolis–Hastings step with a Newton (IWLS) Gaussian proposal, one exponential term.

Target: the one-term member of the model's family (:mod:`geosynth.samplers.family`),

.. math::

    h(x) = a x - W e^{x} - \frac{q}{2} (x - m)^2, \qquad W \ge 0,\ q > 0,

to which every scalar conditional of the Paiva model but β's collapses (μ, α_p, θ_i, φ_ip,
ε_ib). From the current ``x`` the proposal is the Gaussian of one Newton step on ``h``,

.. math::

    x^* \sim N\!\left(x + \frac{h'(x)}{H(x)},\ \frac{1}{H(x)}\right), \qquad
    H(x) = -h''(x) = W e^{x} + q,

the iteratively reweighted least squares proposal of Gamerman (1997, *Sampling from the posterior
distribution in generalized linear mixed models*, Statistics and Computing 7, eq. 6), accepted
with the Metropolis–Hastings ratio that includes the reverse proposal density. ``h`` is concave
with ``H ≥ q > 0``, so the proposal is always proper, and where ``h`` is close to quadratic (the
usual case: a Gaussian prior times a Poisson likelihood of a few counts) almost every proposal
is accepted.

Why it exists: an exact ARS draw of such a conditional costs 0.2–0.3 µs (a Newton search for the
mode, an envelope, a test); this step costs one ``exp``, one ``log``, a normal and an
exponential variate, and the caller passes ``W·e^x`` at the current point (which the engine keeps
as ``exp(η)``), so no ``exp`` is spent on it. A sweep of the model was dominated by the G·B errors
ε_ib, and the step made it about three times cheaper than ARS draws did. The engine's exact
draws of ε are now vectorised passes of a tangent envelope, and ``sampler="mh"`` is no cheaper
a sweep (``bench/RESULTS.md``). The chain has the same stationary distribution (a
Metropolis-within-Gibbs step leaves the conditional invariant).
"""

from __future__ import annotations

import math

from numba import njit

from geosynth.samplers.family import STATUS_INVALID, STATUS_OK
from geosynth.samplers.rng import standard_exponential, standard_normal

__all__ = ["newton_mh_step"]


@njit(cache=True, nogil=True, error_model="numpy")
def newton_mh_step(x, a, wex, m, q, state):
    """One Metropolis–Hastings step on ``a·x − W·e^x − q(x − m)²/2`` from ``x``.

    Parameters
    ----------
    x : float
        Current value.
    a : float
        Linear coefficient (a count, or a sum of counts).
    wex : float
        ``W·e^x`` at the current ``x`` (the exponential term's value there, ``>= 0``).
    m, q : float
        Prior mean and precision (``q > 0``).
    state : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.

    Returns
    -------
    x : float
        The new value: the proposal if accepted, else ``x`` itself (NaN on invalid input).
    wex : float
        ``W·e^x`` at the new value (so the caller needs no ``exp`` to keep its state).
    status : int
        STATUS_OK, or STATUS_INVALID for a non-finite argument, ``wex < 0`` or ``q <= 0``.
    """
    if not (math.isfinite(x) and math.isfinite(a) and math.isfinite(wex) and math.isfinite(m)
            and q > 0.0 and math.isfinite(q)) or wex < 0.0:
        return math.nan, math.nan, STATUS_INVALID
    curvature = wex + q
    mean = x + (a - wex - q * (x - m)) / curvature
    proposal = mean + standard_normal(state) / math.sqrt(curvature)
    step = proposal - x
    wex_new = wex * math.exp(step)
    if not math.isfinite(wex_new):
        standard_exponential(state)  # keep the stream's use per step fixed
        return x, wex, STATUS_OK
    curvature_new = wex_new + q
    mean_back = proposal + (a - wex_new - q * (proposal - m)) / curvature_new
    d_old, d_new = x - m, proposal - m
    log_target = a * step - (wex_new - wex) - 0.5 * q * (d_new * d_new - d_old * d_old)
    back, forth = x - mean_back, proposal - mean
    log_proposal = (0.5 * math.log(curvature_new / curvature)
                    - 0.5 * curvature_new * back * back + 0.5 * curvature * forth * forth)
    if standard_exponential(state) > -(log_target + log_proposal):
        return proposal, wex_new, STATUS_OK
    return x, wex, STATUS_OK
