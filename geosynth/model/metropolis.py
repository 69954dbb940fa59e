"""The Metropolis step shared by the scale moves: the proposal of u and the test of (field, τ).

A scale move changes a precision τ to τ·e^{−2u} with u ~ N(0, σ²) and the field with it
(:mod:`geosynth.model.moves`, :mod:`geosynth.model.remap`, the chromatic sweep's
:mod:`geosynth.model.parallel`); σ of each move lives in a slot of the state's
``scale_log_sd`` and is tuned during burn-in by a Robbins–Monro step towards
:data:`SCALE_TARGET_ACCEPTANCE` (0.44, the optimum of a one-dimensional random walk; Gelman,
Roberts & Gilks 1996).
"""

from __future__ import annotations

import math

from numba import njit

from geosynth.samplers.rng import standard_normal, uniform

__all__ = ["SCALE_TARGET_ACCEPTANCE", "SCALE_ADAPT_GAIN", "scale_proposal", "scale_accept"]

SCALE_TARGET_ACCEPTANCE = 0.44


SCALE_ADAPT_GAIN = 0.05


@njit(cache=True, nogil=True, error_model="numpy")
def scale_proposal(s, slot):
    """Draw the log scale u ~ N(0, sd²) of a scale move; return ``(u, e^u − 1)``.

    Parameters
    ----------
    s : GibbsState
        The chain's state: ``s.scale_log_sd`` (float64 (5P + 7 + 2·max(K, 1),)) gives log sd,
        ``s.rng`` (uint64 (4,)) is advanced.
    slot : int
        Index into ``s.scale_log_sd``: 0 for θ, 1 + p for φ_·p, 1 + P + c for β_c·, and
        1 + P + max(K, 1) for ε, then 2 + P + max(K, 1) for θ's error-absorbing move
        (the split move of :func:`geosynth.model.moves.field_scale_cycle`) and
        3 + P + max(K, 1) + p for φ_·p's, then 3 + 2P + max(K, 1) for θ's remap move
        (:func:`geosynth.model.remap.remap_move`) and 4 + 2P + max(K, 1) + p for φ_·p's, then
        4 + 3P + max(K, 1) for θ's rough-part move (:func:`geosynth.model.moves.field_scale_cycle`)
        and 5 + 3P + max(K, 1) + p for φ_·p's, then the block sampler's log(F − 1),
        5 + 4P + max(K, 1) for θ, 6 + 4P + max(K, 1) + p for φ_·p and 6 + 5P + max(K, 1) + c
        for β_c· (:func:`geosynth.model.block.block_slot`), and last, 6 + 5P + 2·max(K, 1),
        ε's remap move (:func:`geosynth.model.remap.remap_errors`).

    Returns
    -------
    u : float
        The log scale.
    factor : float
        ``e^u − 1`` (``expm1``), the relative change of the scaled values.
    """
    u = math.exp(s.scale_log_sd[slot]) * standard_normal(s.rng)
    return u, math.expm1(u)


@njit(cache=True, nogil=True, error_model="numpy")
def scale_accept(s, slot, adapt, delta_loglik, u, tau, shape, rate):
    """Metropolis test of a scale move given its log-likelihood change; ``(accept, new τ)``.

    The log acceptance ratio is ``Δ log L − 2·shape·u − rate·(τ' − τ)`` with τ' = τ·e^{−2u}:
    the Gamma(shape, rate) prior's change plus the Jacobian e^{−2u} of τ → τ' give
    ``−2·shape·u − rate·(τ' − τ)``, and ``delta_loglik`` carries every other change (the
    likelihood's, and the field's prior and Jacobian where they do not cancel). During burn-in
    (``adapt``) the proposal log-sd of ``slot`` moves towards :data:`SCALE_TARGET_ACCEPTANCE`.

    Parameters
    ----------
    s : GibbsState
        The chain's state: ``s.rng`` (uint64 (4,)) is advanced, and ``s.scale_log_sd``
        (float64 (5P + 7 + 2·max(K, 1),)) adapted when ``adapt``.
    slot : int
        Index into ``s.scale_log_sd`` (see :func:`scale_proposal`).
    adapt : bool
        Burn-in: tune the proposal scale of ``slot``.
    delta_loglik : float
        Change of the log likelihood under the proposed move.
    u : float
        The proposal's log scale, from :func:`scale_proposal`.
    tau : float
        Current precision of the scaled field.
    shape, rate : float
        Gamma(shape, rate) prior of the precision.

    Returns
    -------
    accept : bool
        Whether the move is accepted.
    new_tau : float
        The proposed precision τ·e^{−2u} (the caller keeps it only if ``accept``).
    """
    new_tau = tau * math.exp(-2.0 * u)
    log_ratio = delta_loglik - 2.0 * shape * u - rate * (new_tau - tau)
    accept = math.log(uniform(s.rng)) < log_ratio
    if adapt:
        hit = 1.0 if accept else 0.0
        s.scale_log_sd[slot] += SCALE_ADAPT_GAIN * (hit - SCALE_TARGET_ACCEPTANCE)
    return accept, new_tau
