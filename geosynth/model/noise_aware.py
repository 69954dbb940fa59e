"""Noise-aware fit of counts released with discrete Laplace noise (numba kernels).

The true counts c of a release c̃ = c + noise are latent: each sweep draws the parameters given
c (the sweep of :mod:`geosynth.model.sweep`), then moves μ, α, θ and ε with c integrated out
(:func:`marginal_moves`; the marginal likelihood of one entry is :func:`latent_log_marginal`),
then draws c given λ (:func:`update_latent_counts`, exact enumeration in
:func:`draw_latent_count`). The chain's counts live in its state
(:class:`geosynth.model.state.GibbsState`), never in the shared read-only data.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from geosynth.model.borrow import borrowed
from geosynth.model.conditionals import component_sums, icar_prior
from geosynth.model.metropolis import SCALE_ADAPT_GAIN
from geosynth.model.state import (
    ALPHA_VAR,
    LEVEL_VAR,
    MU_VAR,
    compute_eta,
    level_combos_of,
    record,
    refresh_count_sums,
)
from geosynth.model.sweep import sweep
from geosynth.samplers.family import STATUS_OK
from geosynth.samplers.rng import standard_normal, uniform

__all__ = [
    "LATENT_TAIL",
    "latent_log_marginal",
    "draw_latent_count",
    "MARGINAL_TARGET_ACCEPTANCE",
    "MARGINAL_LOG_SD_RANGE",
    "ETA_LIMIT",
    "marginal_slot_count",
    "level_move_slot",
    "combination_move_slot",
    "level_move",
    "combination_move",
    "marginal_moves",
    "update_latent_counts",
    "run_chunk_noise_aware",
]


LATENT_TAIL = 37.0  # stop enumerating where p(c) < e^-37·p(mode) (≈ 1e-16 relative mass)


@njit(cache=True, nogil=True, error_model="numpy")
def _latent_steps(eta, inv_scale):
    """Return (e^{η + 1/b}, e^{η − 1/b}), the steps of p(c) ∝ Poisson(c; e^η)·e^{−|c̃ − c|/b}.

    p(c + 1)/p(c) = e^{η}/(c + 1)·e^{±1/b}: the first where c + 1 ≤ c̃ (the noise's factor
    grows towards c̃), the second above. The walks below multiply these ratios instead of
    summing logs: no ``exp`` or ``log`` per term.
    """
    return math.exp(eta + inv_scale), math.exp(eta - inv_scale)


@njit(cache=True, nogil=True, error_model="numpy")
def _step_up(c, noisy, below, above):
    """e^{η ± 1/b} of the step from c to c + 1: p(c + 1)/p(c) is this over c + 1."""
    return below if c + 1.0 <= noisy else above


# 1/k and log k! for k < _RECIPROCALS: the walks' divisions by c + 1 become products off their
# dependency chain (a division's latency is three to four products'), and the mode's log k! a
# look-up; 32 KiB each, kept in the L1 cache.
_RECIPROCALS = 4096
_RECIPROCAL = 1.0 / np.maximum(np.arange(_RECIPROCALS, dtype=np.float64), 1.0)


_LOG_FACTORIAL = np.array([math.lgamma(k + 1.0) for k in range(_RECIPROCALS)])


@njit(cache=True, nogil=True, error_model="numpy")
def _log_factorial(k):
    """Return log k! for a whole k ≥ 0 (float64): from the table where it holds k."""
    if k < _RECIPROCALS:
        return _LOG_FACTORIAL[int(k)]
    return math.lgamma(k + 1.0)


@njit(cache=True, nogil=True, error_model="numpy")
def _reciprocal(k):
    """Return 1/k for a whole k ≥ 1 (float64): from the table where it holds k."""
    if k < _RECIPROCALS:
        return _RECIPROCAL[int(k)]
    return 1.0 / k


@njit(cache=True, nogil=True, error_model="numpy")
def _next_term(term, c, noisy, below, above):
    """p(c + 1)/p(mode) from ``term`` = p(c)/p(mode): products, no ``exp`` or ``log``."""
    return term * (_step_up(c, noisy, below, above) * _reciprocal(c + 1.0))


@njit(cache=True, nogil=True, error_model="numpy")
def _previous_term(term, c, noisy, inv_below, inv_above):
    """p(c − 1)/p(mode) from ``term`` = p(c)/p(mode) (c ≥ 1; the steps' reciprocals given)."""
    return term * (c * (inv_below if c <= noisy else inv_above))


# The mode's first guess caps the steps at e^27 (λ ≈ 5e11), where a count's walk is already
# ~7e5 terms long; the walks below correct the guess exactly.
_MODE_GUESS_CAP = math.exp(27.0)


@njit(cache=True, nogil=True, error_model="numpy")
def _latent_mode(noisy, below, above):
    """Return the mode of the (discrete log-concave) latent-count conditional.

    The first c whose step up p(c + 1)/p(c) is at most 1 (``below``, ``above`` from
    :func:`_latent_steps`).
    """
    cap = 1e12
    low = math.ceil(min(min(below, _MODE_GUESS_CAP) - 1.0, cap))
    if noisy >= 1.0 and low <= noisy - 1.0:
        c = max(0.0, low)
    else:
        c = max(max(noisy, 0.0), math.ceil(min(min(above, _MODE_GUESS_CAP) - 1.0, cap)))
    # Guard against rounding at the region boundaries: walk to the exact first step ≤ 1.
    while c > 0.0 and _step_up(c - 1.0, noisy, below, above) <= c:
        c -= 1.0
    while _step_up(c, noisy, below, above) > c + 1.0:
        c += 1.0
    return c


@njit(cache=True, nogil=True, error_model="numpy")
def _latent_mass(noisy, below, above, mode):
    """Mass of the latent-count conditional relative to the mode, and the first c above it.

    The terms p(c)/p(mode) are walked outwards from the mode by their ratios
    (:func:`_next_term`, :func:`_previous_term`), two products each, until one falls
    below e^{−LATENT_TAIL}; away from the mode of a log-concave p every ratio is ≤ 1, so the
    walk neither overflows nor stops early.
    """
    tail = math.exp(-LATENT_TAIL)
    total = 1.0
    term = 1.0
    c = mode
    while True:
        term = _next_term(term, c, noisy, below, above)
        c += 1.0
        if term < tail:
            break
        total += term
    hi = c
    term = 1.0
    c = mode
    inv_below, inv_above = 1.0 / below, 1.0 / above
    while c > 0.0:
        term = _previous_term(term, c, noisy, inv_below, inv_above)
        c -= 1.0
        if term < tail:
            break
        total += term
    return total, hi


@njit(cache=True, nogil=True, error_model="numpy")
def latent_log_marginal(eta, noisy, inv_scale):
    """Return log Σ_c Poisson(c; e^η)·exp(−|c̃ − c|/b), the likelihood of c̃ given η.

    Up to the constant normaliser of the noise distribution; same enumeration as
    :func:`draw_latent_count`.

    Parameters
    ----------
    eta : float
        Log intensity η of the cell and combination.
    noisy : float
        The released count c̃.
    inv_scale : float
        1/b, the inverse scale of the discrete Laplace noise.

    Returns
    -------
    float
        The log marginal likelihood of c̃.
    """
    below, above = _latent_steps(eta, inv_scale)
    mode = _latent_mode(noisy, below, above)
    total, _ = _latent_mass(noisy, below, above, mode)
    log_mode = mode * eta - math.exp(eta) - _log_factorial(mode) \
        - inv_scale * abs(noisy - mode)
    return log_mode + math.log(total)


@njit(cache=True, nogil=True, error_model="numpy")
def draw_latent_count(eta, noisy, inv_scale, rng):
    """Draw c ≥ 0 from p(c) ∝ Poisson(c; e^η) · exp(−|c̃ − c| / b) by exact enumeration.

    The discrete Laplace (two-sided geometric) mechanism releases c̃ = c + noise with
    P(noise = k) ∝ e^{−|k|/b}; this is the full conditional of the true count c given the
    intensity and the released c̃. Both factors are log-concave in c, so p is unimodal: the
    kernel finds the mode in closed form and enumerates outwards until the relative mass drops
    below e^{−37} on each side (the window adapts to √λ and to b), then inverts the CDF.

    Parameters
    ----------
    eta : float
        Log intensity η (clamped to ±(ETA_LIMIT + 5); NaN counts as 0).
    noisy : float
        The released count c̃.
    inv_scale : float
        1/b, the inverse scale of the discrete Laplace noise.
    rng : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.

    Returns
    -------
    float
        The drawn count c (a whole number ≥ 0, as float64).
    """
    if not abs(eta) <= ETA_LIMIT + 5.0:  # also catches NaN: a diverged chain must not hang
        eta = min(max(eta, -ETA_LIMIT - 5.0), ETA_LIMIT + 5.0) if eta == eta else 0.0
    below, above = _latent_steps(eta, inv_scale)
    mode = _latent_mode(noisy, below, above)
    total, hi = _latent_mass(noisy, below, above, mode)
    # Invert the CDF in the order of _latent_mass: mode, upwards, then downwards.
    u = uniform(rng) * total
    acc = 1.0
    if u < acc:
        return mode
    term = 1.0
    c = mode
    while c + 1.0 < hi:
        term = _next_term(term, c, noisy, below, above)
        c += 1.0
        acc += term
        if u < acc:
            return c
    term = 1.0
    c = mode
    inv_below, inv_above = 1.0 / below, 1.0 / above
    while c > 0.0:
        term = _previous_term(term, c, noisy, inv_below, inv_above)
        c -= 1.0
        acc += term
        if u < acc:
            return c
    return mode  # u landed in the rounding slack of ``total``


MARGINAL_TARGET_ACCEPTANCE = 0.44


# Slots of s.marginal_log_sd: μ, θ's cells, ε's entries, then α_p for every level p, the level
# move of every attribute k and the errors' move of every combination b (marginal_slot_count).
_M_MU, _M_THETA, _M_EPS = 0, 1, 2
_M_LEVELS = 3


# _marginal_shift's and _apply_shift's cell index for the moves that touch every cell.
_EVERY_CELL = -1


@njit(cache=True, nogil=True, error_model="numpy")
def level_move_slot(n_levels, k):
    """Slot of attribute k's :func:`level_move` in ``s.marginal_log_sd`` (P = ``n_levels``)."""
    return _M_LEVELS + n_levels + k


@njit(cache=True, nogil=True, error_model="numpy")
def combination_move_slot(n_levels, n_attributes, b):
    """Slot of combination b's :func:`combination_move` in ``s.marginal_log_sd``."""
    return level_move_slot(n_levels, n_attributes) + b


def marginal_slot_count(n_levels: int, n_attributes: int, n_combos: int) -> int:
    """Length of ``GibbsState.marginal_log_sd``: the proposal scales of :func:`marginal_moves`."""
    return combination_move_slot(n_levels, n_attributes, n_combos)


@njit(cache=True, nogil=True, error_model="numpy")
def _marginal_shift(s, noisy, inv_scale, delta, combos, i, lm, lm_new):
    """Change in Σ log m(η_ib) when η_ib += delta over the (i, b) touched by one move.

    The combinations ``combos`` of every cell (``i = _EVERY_CELL``: μ, α_p, the level and the
    combination moves) or of cell ``i`` (θ_i). ``lm`` caches log m at the current η; the
    proposed values are written to ``lm_new`` (same (i, b) positions) for the caller to keep on
    acceptance.
    """
    G = s.counts.shape[0]
    total = 0.0
    rows_lo, rows_hi = (0, G) if i < 0 else (i, i + 1)
    for r in range(rows_lo, rows_hi):
        for t in range(combos.shape[0]):
            b = combos[t]
            e = s.eta[r, b]
            # Out of the box from either end: a move into it from outside was accepted by the
            # usual ratio while its reverse was always refused, which broke detailed balance
            # (the sweep draws η without the limit). Refused both ways, the move is the
            # identity outside the box and an exact Metropolis step inside it.
            if abs(e) > ETA_LIMIT or abs(e + delta) > ETA_LIMIT:
                return -math.inf
            v = latent_log_marginal(e + delta, noisy[r, b], inv_scale)
            lm_new[r, b] = v
            total += v - lm[r, b]
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def _apply_shift(s, delta, combos, i, lm, lm_new):
    """Add ``delta`` to η (rescale exp η, keep log m) over the (i, b) of _marginal_shift."""
    G = s.counts.shape[0]
    factor = math.exp(delta)
    rows_lo, rows_hi = (0, G) if i < 0 else (i, i + 1)
    for r in range(rows_lo, rows_hi):
        for t in range(combos.shape[0]):
            b = combos[t]
            s.eta[r, b] += delta
            s.expeta[r, b] *= factor
            lm[r, b] = lm_new[r, b]


@njit(cache=True, nogil=True, error_model="numpy")
def level_move(data, s, noisy, inv_scale, k, adapt, lm, lm_new):
    """Random-walk Metropolis move along the ridge of μ and attribute k's level effects.

    (μ, α_p for every level p of attribute k) → (μ + δ, α_p − δ): only the combinations at the
    attribute's baseline level change, by δ. Under heavy noise the baseline's count is weakly
    identified and the posterior of μ and the α_p runs along this line (μ + α_p nearly fixed
    for each level p), which single-parameter moves cross a step at a time: on the Berlin
    listings at ε = 1 μ's ESS was 21 in 2 × 1,500 draws (``bench/RESULTS.md``, 2026-11-29).
    The proposal is a translation (unit Jacobian) and symmetric; the ratio is the marginal
    likelihood's change on the baseline's combinations with the N(0, var) priors' change.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (``combo_levels`` says which levels belong to attribute k).
    s : GibbsState
        The chain's state: μ, α, η, exp η and the move's proposal scale
        (:func:`level_move_slot` of ``s.marginal_log_sd``) are updated in place.
    noisy : numpy.ndarray of float64, shape (G, B)
        The released counts c̃.
    inv_scale : float
        1/b, the inverse scale of the discrete Laplace noise.
    k : int
        The attribute (column of ``combo_levels``).
    adapt : bool
        Burn-in: tune the proposal scale.
    lm, lm_new : numpy.ndarray of float64, shape (G, B)
        log m at the current η (kept up to date) and scratch.
    """
    pr = data.priors
    slot = level_move_slot(s.alpha.shape[0], k)
    delta = _shift_step(s, slot)
    levels = data.combo_levels[:, k]  # < 0: the attribute's baseline level
    members = np.unique(levels[levels >= 0])
    x = s.mu[0]
    log_prior = -((x + delta) ** 2 - x * x) / (2.0 * pr[MU_VAR])
    for p in members:
        a = s.alpha[p]
        log_prior -= ((a - delta) ** 2 - a * a) / (2.0 * pr[ALPHA_VAR])
    if _shift_test(s, noisy, inv_scale, delta, np.flatnonzero(levels < 0), log_prior, slot,
                   adapt, lm, lm_new):
        s.mu[0] = x + delta
        for p in members:
            s.alpha[p] -= delta


MARGINAL_LOG_SD_RANGE = (math.log(1e-3), math.log(2.0))


ETA_LIMIT = 25.0  # |η| beyond which a noise-aware proposal is refused (λ outside e^±25)


@njit(cache=True, nogil=True, error_model="numpy")
def _adapt(s, slot, rate, adapt):
    """Robbins–Monro step of a proposal log-sd, kept in MARGINAL_LOG_SD_RANGE.

    Where the released counts say little (e.g. negative c̃ far from any λ), the marginal
    likelihood is flat, every proposal is accepted, and an unbounded scale would grow without
    limit; the cap keeps the random walk on the scale of the ICAR and error variances.
    """
    if adapt:
        v = s.marginal_log_sd[slot] + SCALE_ADAPT_GAIN * (rate - MARGINAL_TARGET_ACCEPTANCE)
        s.marginal_log_sd[slot] = min(max(v, MARGINAL_LOG_SD_RANGE[0]), MARGINAL_LOG_SD_RANGE[1])


@njit(cache=True, nogil=True, error_model="numpy")
def _shift_step(s, slot):
    """Draw the random walk's step δ ~ N(0, e^{2·marginal_log_sd[slot]})."""
    return math.exp(s.marginal_log_sd[slot]) * standard_normal(s.rng)


@njit(cache=True, nogil=True, error_model="numpy")
def _shift_test(s, noisy, inv_scale, delta, combos, log_prior, slot, adapt, lm, lm_new):
    """Metropolis test of η += δ over the combinations ``combos`` of every cell; return the hit.

    ``log_prior`` is the priors' change of the move. On acceptance η, exp η and ``lm`` are
    moved (the caller moves the parameters); the proposal scale of ``slot`` adapts either way.
    The one test of the moves of μ, each α_p, :func:`level_move` and :func:`combination_move`.
    """
    log_ratio = _marginal_shift(s, noisy, inv_scale, delta, combos, _EVERY_CELL, lm, lm_new) \
        + log_prior
    hit = math.log(uniform(s.rng)) < log_ratio
    if hit:
        _apply_shift(s, delta, combos, _EVERY_CELL, lm, lm_new)
    _adapt(s, slot, 1.0 if hit else 0.0, adapt)
    return hit


@njit(cache=True, nogil=True, error_model="numpy")
def combination_move(data, s, noisy, inv_scale, b, adapt, lm, lm_new):
    """Random-walk Metropolis move of the errors of combination b together: ε_ib += δ for all i.

    The model has no effect per combination, so a combination whose count departs from its
    levels' product is fitted by its errors' mean. The exact sweep draws that mean given the
    latent counts, which under heavy noise follow it; here it moves under the released counts'
    marginal likelihood. Target: that likelihood on combination b's entries times the errors'
    N(0, 1/τ_ε) priors, whose change is −τ_ε/2·(2δ·Σ_i ε_ib + G·δ²).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: ε, η, exp η and the move's proposal scale
        (:func:`combination_move_slot` of ``s.marginal_log_sd``) are updated in place.
    noisy : numpy.ndarray of float64, shape (G, B)
        The released counts c̃.
    inv_scale : float
        1/b, the inverse scale of the discrete Laplace noise.
    b : int
        The combination.
    adapt : bool
        Burn-in: tune the proposal scale.
    lm, lm_new : numpy.ndarray of float64, shape (G, B)
        log m at the current η (kept up to date) and scratch.
    """
    G = s.counts.shape[0]
    slot = combination_move_slot(s.alpha.shape[0], data.combo_levels.shape[1], b)
    delta = _shift_step(s, slot)
    eps_sum = 0.0
    for i in range(G):
        eps_sum += s.eps[i, b]
    log_prior = -(0.5 * s.tau_eps[0] * delta * (2.0 * eps_sum + G * delta))
    if _shift_test(s, noisy, inv_scale, delta, data.all_combos[b:b + 1], log_prior, slot, adapt,
                   lm, lm_new):
        for i in range(G):
            s.eps[i, b] += delta


@njit(cache=True, nogil=True, error_model="numpy")
def marginal_moves(data, s, noisy, inv_scale, comp_sum, adapt, lm, lm_new):
    """Random-walk Metropolis moves of μ, α, θ and ε with the true counts integrated out.

    Alternating "draw c | λ" and "draw λ | c" mixes slowly when the noise is large: the counts
    follow λ and λ follows the counts, so the level of a combination random-walks. These moves
    (μ; each α_p; per attribute, μ against its levels' α_p, :func:`level_move`; each θ_i; each
    ε_ib; per combination, its errors together, :func:`combination_move`) target the posterior
    of the parameters given the *released* counts, whose likelihood ``m(η) = Σ_c Poisson(c;
    e^η)·DL(c̃ − c)`` is computed by enumeration (:func:`latent_log_marginal`); the caller
    redraws c | λ right after them, so the pair of steps leaves the joint posterior invariant
    (a partially collapsed Gibbs scheme). Proposal scales are tuned towards 44% acceptance
    during burn-in. ``lm`` and ``lm_new`` are (G, B)
    scratch arrays (log m at the current and at the proposed η).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    s : GibbsState
        The chain's state; μ, α, θ, ε, η, exp η and ``s.marginal_log_sd`` (float64
        (:func:`marginal_slot_count`,)) are updated in place.
    noisy : numpy.ndarray of float64, shape (G, B)
        The released counts c̃.
    inv_scale : float
        1/b, the inverse scale of the discrete Laplace noise.
    comp_sum : numpy.ndarray of float64, shape (C,)
        Scratch for θ's component sums.
    adapt : bool
        Burn-in: tune the proposal scales.
    lm, lm_new : numpy.ndarray of float64, shape (G, B)
        Scratch: log m at the current and at the proposed η.
    """
    G, B = s.counts.shape
    pr = data.priors
    for i in range(G):
        for b in range(B):
            lm[i, b] = latent_log_marginal(s.eta[i, b], noisy[i, b], inv_scale)
    # μ and α_p: N(0, var) priors.
    delta = _shift_step(s, _M_MU)
    x = s.mu[0]
    if _shift_test(s, noisy, inv_scale, delta, data.all_combos,
                   -(((x + delta) ** 2 - x * x) / (2.0 * pr[MU_VAR])), _M_MU, adapt, lm, lm_new):
        s.mu[0] = x + delta
    for p in range(s.alpha.shape[0]):
        delta = _shift_step(s, _M_LEVELS + p)
        x = s.alpha[p]
        if _shift_test(s, noisy, inv_scale, delta, level_combos_of(data, p),
                       -(((x + delta) ** 2 - x * x) / (2.0 * pr[ALPHA_VAR])), _M_LEVELS + p,
                       adapt, lm, lm_new):
            s.alpha[p] = x + delta
    for k in range(data.combo_levels.shape[1]):
        level_move(data, s, noisy, inv_scale, k, adapt, lm, lm_new)
    # θ_i: ICAR conditional prior.
    component_sums(s.theta, data, comp_sum)
    sd = math.exp(s.marginal_log_sd[_M_THETA])
    accepted = 0.0
    for i in range(G):
        x = s.theta[i]
        m, q = icar_prior(s.theta, i, s.tau_theta[0], pr[LEVEL_VAR], comp_sum, data)
        delta = sd * standard_normal(s.rng)
        log_ratio = _marginal_shift(s, noisy, inv_scale, delta, data.all_combos, i, lm, lm_new) \
            - 0.5 * q * ((x + delta - m) ** 2 - (x - m) ** 2)
        if math.log(uniform(s.rng)) < log_ratio:
            s.theta[i] = x + delta
            comp_sum[data.component[i]] += delta
            _apply_shift(s, delta, data.all_combos, i, lm, lm_new)
            accepted += 1.0
    _adapt(s, _M_THETA, accepted / G, adapt)
    # ε_ib: N(0, 1/τ_ε) priors.
    sd = math.exp(s.marginal_log_sd[_M_EPS])
    tau = s.tau_eps[0]
    accepted = 0.0
    for i in range(G):
        for b in range(B):
            x = s.eps[i, b]
            delta = sd * standard_normal(s.rng)
            e = s.eta[i, b]
            if abs(e) > ETA_LIMIT or abs(e + delta) > ETA_LIMIT:  # as in _marginal_shift
                continue
            proposed = latent_log_marginal(e + delta, noisy[i, b], inv_scale)
            log_ratio = proposed - lm[i, b] - 0.5 * tau * ((x + delta) ** 2 - x * x)
            if math.log(uniform(s.rng)) < log_ratio:
                s.eps[i, b] = x + delta
                s.eta[i, b] = e + delta
                s.expeta[i, b] = math.exp(e + delta)
                lm[i, b] = proposed
                accepted += 1.0
    _adapt(s, _M_EPS, accepted / (G * B), adapt)
    for b in range(B):
        combination_move(data, s, noisy, inv_scale, b, adapt, lm, lm_new)


@njit(cache=True, nogil=True, error_model="numpy")
def update_latent_counts(data, s, noisy, inv_scale):
    """Gibbs step of the true counts given the noisy release (noise-aware fit).

    Overwrites the chain's counts ``s.counts`` with draws of :func:`draw_latent_count` and
    refreshes the sums derived from them.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: η (float64 (G, B)) is read, ``s.rng`` advanced; ``counts``
        (float64 (G, B)), ``cell_counts`` (G,), ``cell_czbar`` (max(K, 1), G),
        ``level_counts`` (P,) and ``cell_level_counts`` (G, P) are overwritten.
    noisy : numpy.ndarray of float64, shape (G, B)
        The released counts c̃.
    inv_scale : float
        1/b, the inverse scale of the discrete Laplace noise.
    """
    G, B = s.counts.shape
    for i in range(G):
        for b in range(B):
            s.counts[i, b] = draw_latent_count(s.eta[i, b], noisy[i, b], inv_scale, s.rng)
    refresh_count_sums(data, s)


@njit(cache=True, nogil=True, error_model="numpy")
def run_chunk_noise_aware(data, s, n_sweeps, thin, out_scalars, out_theta, out_beta, out_eta,
                          row, keep, noisy, inv_scale, out_totals):
    """Run :func:`~geosynth.model.sweep.run_chunk` for a noise-aware fit of the counts ``noisy``.

    Each sweep is followed by :func:`marginal_moves` and a redraw of the latent true counts
    (:func:`update_latent_counts`; the caller draws them once before the first chunk), and the
    per-combination totals of the latent counts are recorded in ``out_totals``. A separate
    kernel so that exact fits do not compile the latent-count code.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state, updated in place; its counts are the current latent counts.
    n_sweeps : int
        Number of sweeps of this chunk.
    thin : int
        Record every ``thin``-th sweep.
    out_scalars : numpy.ndarray of float64, shape (rows, 2P + 3 + max(K, 1))
        Recorded scalars, one row per kept draw (see :func:`~geosynth.model.state.record`).
    out_theta : numpy.ndarray of float32, shape (rows, G)
        Recorded centred θ.
    out_beta : numpy.ndarray of float32, shape (rows, max(K, 1), G)
        Recorded β, one field per covariate.
    out_eta : numpy.ndarray of float32, shape (rows, G, B)
        Recorded η.
    row : int
        First output row this chunk writes.
    keep : bool
        Record draws; False marks a burn-in chunk, whose sweeps tune the proposal scales.
    noisy : numpy.ndarray of float64, shape (G, B)
        The released (noisy) counts c̃.
    inv_scale : float
        1/b, the inverse scale of the discrete Laplace noise.
    out_totals : numpy.ndarray of float64, shape (rows, B)
        Per-combination totals of the latent counts, one row per kept draw.

    Returns
    -------
    status : int
        0, or 16·block + sampler status (see :func:`~geosynth.model.sweep.sweep`).
    rows_written : int
        Number of rows recorded from ``row`` on.
    """
    data, s = borrowed(data), borrowed(s)  # no reference counts in the sweeps (borrow.py)
    G, B = s.counts.shape
    comp_sum = np.zeros(data.component_size.shape[0])
    column = np.empty(G)
    lm = np.empty((G, B))
    lm_new = np.empty((G, B))
    compute_eta(data, s)
    written = 0
    for t in range(n_sweeps):
        status = sweep(data, s, comp_sum, column, not keep)
        if status != STATUS_OK:
            return status, written
        # Parameters with c integrated out, then c | λ: fresh for the next sweep and the record.
        marginal_moves(data, s, noisy, inv_scale, comp_sum, not keep, lm, lm_new)
        update_latent_counts(data, s, noisy, inv_scale)
        if keep and (t + 1) % thin == 0:
            record(data, s, out_scalars, out_theta, out_beta, out_eta, row + written)
            for b in range(B):
                v = 0.0
                for i in range(G):
                    v += s.counts[i, b]
                out_totals[row + written, b] = v
            written += 1
    return STATUS_OK, written
