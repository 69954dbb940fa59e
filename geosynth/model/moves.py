"""Moves of the engine beyond the full conditionals: shifts, scale moves and smooth modes.

Exact re-centring. After each ICAR field's sweep, one exact Gibbs move along the direction that
adds k to μ (or α_p) and subtracts k from the field's mean in a component (:func:`shift_move`):
the likelihood is unchanged along it, and k is drawn from its Gaussian conditional given the two
priors. Summaries report the centred field and the intercept that absorbs its mean, as the
sum-to-zero constraint of the thesis does. The moves (f_i + k, ε_i· − k) of a cell and
(μ + k, ε − k), (α_p + k, ε_·b∋p − k) leave η unchanged likewise (:func:`shift_cells_eps`,
:func:`shift_eps`).

Scale moves. Each field and its precision move jointly, f → e^u·f, τ → e^{−2u}·τ
(:func:`scale_moves`), with the intercept shifted so that the expected count is unchanged
(:func:`intercept_shift`), or with the errors ε absorbing the change; θ and each φ_·p make
several rounds of both per sweep at O(G) each, with a scale move of the field's part outside
its smooth modes in some of them (:func:`field_scale_cycle`), then the remap move
of :mod:`geosynth.model.remap`, which moves each cell by its own amount. Their proposal
scales adapt during burn-in (:mod:`geosynth.model.metropolis`). The joint smooth-mode block
move of θ and every φ_·p is in :mod:`geosynth.model.modes` (:func:`mode_moves` runs it).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from geosynth.model.conditionals import (
    component_means,
    component_sums,
    draw_tau_eps,
    icar_prior,
    icar_quadratic_parts,
    shift_cell_eta_z,
)
from geosynth.model.metropolis import scale_accept, scale_proposal
from geosynth.model.modes import (
    apply_joint_step,
    joint_mode_proposal,
    likelihood_hessian,
    mode_precision,
)
from geosynth.model.remap import remap_errors, remap_errors_slot, remap_move
from geosynth.model.state import (
    ALPHA_VAR,
    BETA_A,
    BETA_B,
    BETA_ICAR,
    EPS_A,
    EPS_B,
    LEVEL_VAR,
    MU_VAR,
    PHI_A,
    PHI_B,
    THETA_A,
    THETA_B,
    combos_of,
    level_combos_of,
)
from geosynth.samplers.rng import gamma, standard_normal, uniform
from geosynth.samplers.vexp import exp_vec, expm1_vec, fixed_order_sum, sum_of_products

__all__ = [
    "scale_beta_cell",
    "scale_eps_cell",
    "eps_exp_change",
    "mode_moves",
    "HESSIAN_REFRESH",
    "EPS_SCALE_ROUNDS",
    "eps_scale_slot",
    "error_scale_rounds",
    "error_scale_moves",
    "shift_move",
    "SCALE_ROUNDS",
    "ROUGH_EVERY",
    "smooth_rough_split",
    "field_scale_slots",
    "KIND_THETA",
    "KIND_PHI",
    "KIND_BETA",
    "NO_LEVEL",
    "intercept_shift",
    "move_intercept",
    "eps_round_sums",
    "shift_cells_eps",
    "shift_eps_draw",
    "shift_eps",
    "shift_level_intercepts",
    "shift_errors",
    "eps_round_start",
    "scale_move_eps",
    "scale_eps_sums",
    "EPS_SERIES_ORDER",
    "EPS_SERIES_TOLERANCE",
    "EPS_SQUARES",
    "EPS_LINEAR",
    "EPS_EXP_TOTAL",
    "EPS_SCALE",
    "EPS_SHIFT",
    "EPS_REACH",
    "EPS_MOMENTS",
    "EPS_ROUND_SUMS",
    "series_tail",
    "eps_series_change",
    "apply_eps_scale",
    "field_scale_cycle",
    "field_scale_cycles",
    "scale_moves",
]


@njit(cache=True, nogil=True, error_model="numpy")
def scale_beta_cell(beta, i, comp_mean, component, factor, zbar, counts, eta, expeta, apply,
                    total):
    """Cell i's part of a scale move of an ICAR β field (:func:`_scale_move_beta`).

    d = (β_i − mean of its component)·factor. ``apply`` False: return ``total`` plus the
    cell's log-likelihood change ``Σ_b c_ib·d·Z̄_ib − e^η_ib·(e^{d·Z̄_ib} − 1)``; True: move
    β_i by d and η_ib by d·Z̄_ib (exp η follows) and return ``total``.

    Parameters
    ----------
    beta : numpy.ndarray of float64, shape (G,)
        The covariate's field.
    zbar : numpy.ndarray of float64, shape (G, B)
        The covariate's cell means Z̄.
    counts : numpy.ndarray of float64, shape (G, B)
        Observed counts.
    i : int
        The cell.
    comp_mean : numpy.ndarray of float64, shape (C,)
        The field's mean in each component.
    component : numpy.ndarray of int64, shape (G,)
        Component of each cell.
    factor : float
        e^u − 1 of the move's log scale u.
    eta, expeta : numpy.ndarray of float64, shape (G, B)
        Linear predictor and its exponential.
    apply : bool
        Make the move (else measure it).
    total : float
        Running sum of the log-likelihood change.

    Returns
    -------
    float
    """
    d = (beta[i] - comp_mean[component[i]]) * factor
    if apply:
        beta[i] += d
        shift_cell_eta_z(eta, expeta, zbar, i, d)
        return total
    for b in range(eta.shape[1]):
        dz = d * zbar[i, b]
        total += counts[i, b] * dz - expeta[i, b] * math.expm1(dz)
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def scale_eps_cell(eps, i, factor, eta, expeta, apply, offset, total):
    """Cell i's part of the scale move of ε (:func:`scale_move_eps`; no centring).

    Parameters
    ----------
    eps : numpy.ndarray of float64, shape (G, B)
        The errors.
    i, factor, eta, expeta, apply
        As in :func:`scale_beta_cell`.
    offset : float
        Shift of μ that the move makes with ε (applied only).
    total : float
        Running sum of the change of Σ e^η.

    Returns
    -------
    float
    """
    if apply:  # a loop LLVM vectorises (geosynth.samplers.vexp)
        for b in range(eps.shape[1]):
            d = eps[i, b] * factor
            eps[i, b] += d
            eta[i, b] += d + offset
            expeta[i, b] = exp_vec(eta[i, b])
        return total
    for b in range(eps.shape[1]):
        total += expeta[i, b] * expm1_vec(eps[i, b] * factor)
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def eps_exp_change(eps, expeta, factor, grow):
    """Σ_ib e^η_ib·(e^{d_ib} − 1), d = ε·factor: :func:`scale_eps_cell`'s sum over every cell.

    One vectorised pass over the G·B entries into the scratch ``grow`` (same shape), then a
    sum in a fixed order (:mod:`geosynth.samplers.vexp`).
    """
    flat_eps, flat_grow = eps.reshape(-1), grow.reshape(-1)
    for k in range(flat_eps.shape[0]):
        flat_grow[k] = expm1_vec(flat_eps[k] * factor)
    return sum_of_products(expeta.reshape(-1), flat_grow)


#: Rounds of (Gibbs τ_ε, scale move of ε with μ) per sweep, but for one where the errors' remap
#: move runs with steps at least as long as this move's (:func:`error_scale_rounds`). Eight,
#: not the earlier three: on the bench's scenario at G = 1,600, τ_ε was the slowest parameter
#: (integrated autocorrelation time 7.3 sweeps, one chain of 20,000); eight rounds take it to
#: 5.4–5.9 for 0.28 ms (8 %) more a sweep, and sixteen gained nothing more (5.7)
#: (``bench/RESULTS.md``, 2026-12-04, fortieth session). The rounds then cost a measuring pass
#: each and an applying pass per accepted one; since they are measured from the moments of
#: the errors (:func:`eps_series_change`), all of them cost one pass for the moments and one
#: to apply the accepted moves: 0.15 ms against 0.5 ms at 1,600 cells (2026-12-05).
EPS_SCALE_ROUNDS = 8


#: Burn-in sweeps between refreshes of the joint mode move's likelihood Hessian.
HESSIAN_REFRESH = 16


@njit(cache=True, nogil=True, error_model="numpy")
def _refresh_mode_hessian(data, s, weight):
    """Move ``s.mode_hessian`` by ``weight`` towards the likelihood Hessian at the state."""
    fresh = np.empty_like(s.mode_hessian)
    likelihood_hessian(s.expeta, data.combo_levels, data.modes, fresh)
    for a in range(fresh.shape[0]):
        for c in range(fresh.shape[1]):
            s.mode_hessian[a, c] += weight * (fresh[a, c] - s.mode_hessian[a, c])


@njit(cache=True, nogil=True, error_model="numpy")
def mode_moves(data, s, adapt):
    """One joint block move of θ and every φ_·p along their modes (:mod:`geosynth.model.modes`).

    The smooth modes of θ and of the φ_·p are coupled through the combinations they share, so
    moving each field alone leaves them slow (the module docstring of
    :mod:`~geosynth.model.modes`). The joint Newton proposal
    (:func:`~geosynth.model.modes.joint_mode_proposal`) uses a fixed likelihood Hessian
    ``s.mode_hessian``: taken at the first sweep, then during burn-in averaged every
    :data:`HESSIAN_REFRESH` sweeps with the Hessian at the current state; frozen once draws
    are kept, so every kept sweep is an exact Metropolis–Hastings update.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state, updated in place (``s.field_work`` is scratch).
    adapt : bool
        Burn-in: the Hessian may be refreshed.
    """
    if data.modes.shape[1] == 0:  # no joint move (modes.modes_per_field)
        return
    sweeps = s.mode_hessian_sweeps
    if sweeps[0] == 0 or (adapt and sweeps[0] % HESSIAN_REFRESH == 0):
        _refresh_mode_hessian(data, s, 1.0 if sweeps[0] == 0 else 0.5)
    if adapt or sweeps[0] == 0:
        sweeps[0] += 1
    K = data.modes.shape[1]
    P = s.alpha.shape[0]
    precision = np.empty((1 + P) * K)
    level_var = data.priors[LEVEL_VAR]
    mode_precision(data.mode_eigenvalues, s.tau_theta[0], data.mode_constant_size, level_var,
                   precision[:K])
    for p in range(P):
        mode_precision(data.mode_eigenvalues, s.tau_phi[p], data.mode_constant_size, level_var,
                       precision[(1 + p) * K:(2 + p) * K])
    log_ratio = joint_mode_proposal(s.theta, s.phi, precision, s.mode_hessian, s.cell_counts,
                                    s.cell_level_counts, data.combo_levels, s.expeta,
                                    data.modes, s.rng, s.field_work)
    if math.log(uniform(s.rng)) < log_ratio:  # NaN: refused
        apply_joint_step(s.theta, s.phi, s.eta, s.expeta, data.combo_levels, s.field_work)


@njit(cache=True, nogil=True, error_model="numpy")
def shift_move(field, data, intercept_var, level_var, intercept, comp_sum, rng):
    """Exact Gibbs move along (intercept + k, field − k); return k.

    The likelihood is constant along this direction; the conditional of k is Gaussian from the
    N(0, intercept_var) prior on the intercept and the N(0, level_var) priors on the component
    means of the field.

    Parameters
    ----------
    field : numpy.ndarray of float64, shape (G,)
        The ICAR field (θ or a copy of a column of φ); k is subtracted from it in place.
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    intercept_var : float
        Prior variance of the intercept (``MU_VAR`` or ``ALPHA_VAR`` of ``data.priors``).
    level_var : float
        Prior variance of the field's mean within each component (``LEVEL_VAR``).
    intercept : float
        Current value of the intercept (μ or α_p); the caller adds k to it.
    comp_sum : numpy.ndarray of float64, shape (C,)
        Scratch, overwritten with the field's component sums before the move.
    rng : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.

    Returns
    -------
    float
        The shift k.
    """
    component_sums(field, data, comp_sum)
    n_comp = data.component_size.shape[0]
    precision = 1.0 / intercept_var + n_comp / level_var
    weighted = -intercept / intercept_var
    for c in range(n_comp):
        weighted += comp_sum[c] / data.component_size[c] / level_var
    k = weighted / precision + standard_normal(rng) / math.sqrt(precision)
    for i in range(field.shape[0]):
        field[i] -= k
    return k


#: Rounds of :func:`field_scale_cycle` per field and sweep (measured: bench/RESULTS.md,
#: 2026-11-26): eight cost ~10 % of a sweep at G = 1,600 and lifted the worst precision's
#: ESS 2.5x at G = 400, where a weakly identified field's precision set the minimum.
SCALE_ROUNDS = np.int64(8)

#: :func:`field_scale_cycle` makes its rough-part move in every ROUGH_EVERY-th round (two of
#: the eight): measured on the Berlin listings (bench/RESULTS.md, 2026-11-27, eighth session),
#: two proposals gained as much as four or eight.
ROUGH_EVERY = np.int64(4)


# once per literal (duplicate signatures, see bench/RESULTS.md); a global np.int64 is int64.
KIND_THETA, KIND_PHI, KIND_BETA = np.int64(0), np.int64(1), np.int64(2)


NO_LEVEL = np.int64(-1)  # level argument meaning "μ" / "every cell", not an α_p or φ_·p


_FIRST = np.int64(0)  # θ's level index and scale-move slot


@njit(cache=True, nogil=True, error_model="numpy")
def intercept_shift(data, s, kind, p, linear, exp_change, exp_total, factor):
    """Intercept shift δ of a scale move, and the move's log-likelihood and intercept-prior change.

    A scale move multiplies the centred field (or ε) by e^u; with it the intercept the field
    enters with (μ for θ and ε, α_p for φ_·p) moves by δ = −log(S(u)/S(0)), S the sum of e^η
    over the touched entries, so that Σ e^η — the expected count — is unchanged. Without δ
    the likelihood pins the spread of the field to the intercept (the log-normal mean
    e^{μ + σ²/2}) and the move is nearly always refused in a large step; with it the
    Poisson terms' exponential part cancels exactly and the log-likelihood changes by
    ``factor·linear + n·δ``. The map is an involution for u → −u (δ is a ratio of sums of
    e^η that a common shift leaves alone), and its Jacobian is that of the scale alone
    (triangular, unit for the intercept), so the Metropolis ratio of :func:`scale_accept`
    needs only this change plus the intercept's Normal prior.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state (read only here; :func:`move_intercept` applies δ).
    kind : int
        ``KIND_THETA`` (θ, and ε) or ``KIND_PHI``: the intercept is μ, with n the total
        count, or α_p, with n the count at level ``p``.
    p : int
        The level of φ_·p.
    linear : float
        Σ a·(x − x̄) over the touched entries: a the observed counts, x the scaled values
        (the centred field, or ε).
    exp_total : float
        S(0), the sum of e^η over the touched entries.
    exp_change : float
        S(u) − S(0), summed by the measuring pass.
    factor : float
        e^u − 1.

    Returns
    -------
    delta : float
    change : float
    """
    if kind == KIND_PHI:
        n, intercept, intercept_var = s.level_counts[p], s.alpha[p], data.priors[ALPHA_VAR]
    else:
        n, intercept, intercept_var = s.cell_counts.sum(), s.mu[0], data.priors[MU_VAR]
    delta = -math.log1p(exp_change / exp_total)
    moved = intercept + delta
    change = factor * linear + n * delta
    change -= (moved * moved - intercept * intercept) / (2.0 * intercept_var)
    return delta, change


@njit(cache=True, nogil=True, error_model="numpy")
def move_intercept(s, kind, p, delta):
    """Add ``delta`` to μ (θ, ε) or α_p (φ_·p, ``kind`` KIND_PHI); η is moved by the caller."""
    if kind == KIND_PHI:
        s.alpha[p] += delta
    else:
        s.mu[0] += delta


#: Highest power k of the series Σ_k a^k·M_k/k!, M_k = Σ_ib e^η_ib·ε_ib^k, that measures the
#: rounds of ε's scale move (:func:`eps_series_change`); a round whose truncation bound passes
#: :data:`EPS_SERIES_TOLERANCE` is measured by a pass over the entries instead.
EPS_SERIES_ORDER = 16

#: Bound of the truncated terms of :func:`eps_series_change` relative to Σ e^η: 2⁻⁵², the
#: rounding of the double-precision sum it replaces.
EPS_SERIES_TOLERANCE = 2.0 ** -52

# Slots of the sums the rounds of ε's scale move carry (eps_round_sums): Σε², Σ c·ε, Σ e^η,
# the scale g and the shift of η that the accepted rounds have yet to apply to the state
# (apply_eps_scale), max |ε| when the moments were taken, then M_k/k! for k = 0..ORDER.
EPS_SQUARES, EPS_LINEAR, EPS_EXP_TOTAL, EPS_SCALE, EPS_SHIFT, EPS_REACH, EPS_MOMENTS = range(7)

#: Length of the array of :func:`eps_round_sums`.
EPS_ROUND_SUMS = EPS_MOMENTS + EPS_SERIES_ORDER + 1

# 1/k for k = 1..ORDER (index k − 1): the moments' pass multiplies (a division by a constant
# stays a division, several times slower).
_INVERSES = 1.0 / np.arange(1.0, EPS_SERIES_ORDER + 1.0)


@njit(cache=True, nogil=True, error_model="numpy")
def eps_round_sums(s, sums):
    """Fill ``sums`` (:data:`EPS_ROUND_SUMS`) in one pass over the G·B entries of the state.

    The sums the rounds of ε's scale move need: Σε² for τ_ε's Gibbs draw, Σ c_ib·ε_ib and
    Σ e^η for the move's likelihood change (:func:`intercept_shift`), and the moments
    M_k/k! = Σ e^η_ib·ε_ib^k / k! with max |ε_ib|, from which :func:`eps_series_change`
    measures any scale of these errors without a pass. No scale or shift is pending.
    """
    squares = 0.0
    linear = 0.0
    reach = 0.0
    moments = sums[EPS_MOMENTS:]
    moments[:] = 0.0
    for i in range(s.counts.shape[0]):
        for b in range(s.counts.shape[1]):
            e = s.eps[i, b]
            squares += e * e
            linear += s.counts[i, b] * e
            reach = max(reach, abs(e))
            term = s.expeta[i, b]
            moments[0] += term
            for k in range(1, EPS_SERIES_ORDER + 1):
                term *= e * _INVERSES[k - 1]
                moments[k] += term
    sums[EPS_SQUARES] = squares
    sums[EPS_LINEAR] = linear
    sums[EPS_EXP_TOTAL] = moments[0]
    sums[EPS_SCALE] = 1.0
    sums[EPS_SHIFT] = 0.0
    sums[EPS_REACH] = reach


@njit(cache=True, nogil=True, error_model="numpy")
def scale_eps_sums(sums, factor, offset):
    """Carry :func:`eps_round_sums` through an accepted scale move ε → (1 + ``factor``)·ε.

    Σ ε² and Σ c·ε scale by (1 + factor)² and 1 + factor; Σ e^η stays put, as the intercept's
    shift δ = −log(S(u)/S(0)) keeps it (:func:`intercept_shift`). The move joins those that
    :func:`apply_eps_scale` has yet to apply: g → (1 + factor)·g, and η's shift grows by
    ``offset`` (the moments stay those of the errors the rounds began with).
    """
    grow = 1.0 + factor
    sums[EPS_SQUARES] *= grow * grow
    sums[EPS_LINEAR] *= grow
    sums[EPS_SCALE] *= grow
    sums[EPS_SHIFT] += offset


@njit(cache=True, nogil=True, error_model="numpy")
def series_tail(x):
    """Bound of Σ_{k > EPS_SERIES_ORDER} x^k/k! for x ≥ 0: x^{n+1}·e^x/(n + 1)!, n the order.

    The Lagrange remainder of e^x's Taylor polynomial of degree n (the series'
    :data:`EPS_SERIES_ORDER`).
    """
    n = EPS_SERIES_ORDER
    return math.exp((n + 1) * math.log(x) + x - math.lgamma(n + 2.0)) if x > 0.0 else 0.0


@njit(cache=True, nogil=True, error_model="numpy")
def eps_series_change(sums, factor):
    """Σ e^η·(e^{d} − 1), d = ε·factor, from the moments of :func:`eps_round_sums`; or NaN.

    With ε₀ and η₀ the errors and η the rounds began with, and the accepted rounds' pending
    scale g and shift Δ (ε = g·ε₀, η = η₀ + (g − 1)·ε₀ + Δ), the move to ε' = (1 + factor)·ε
    changes Σ e^η by e^Δ·(S(a) − S(b)) with S(x) = Σ e^{η₀}·e^{x·ε₀} = Σ_k x^k·M_k/k!,
    b = g − 1 and a = b + g·factor. Since e^Δ·S(b) = Σ e^η (the rounds keep it), the change
    is Σ e^η · (S(a) − S(b)) / S(b): the differences a^k − b^k by the recurrence
    a^k − b^k = a·(a^{k−1} − b^{k−1}) + (a − b)·b^{k−1} (no cancellation for a close to b).
    The series stops at :data:`EPS_SERIES_ORDER`; the terms it drops are at most
    Σ e^{η₀}·(T(|a|·r) + T(|b|·r)), T the tail of :func:`series_tail` and r = max |ε₀|. NaN
    when that bound passes :data:`EPS_SERIES_TOLERANCE` of S(b) (the result is Σ e^η times the
    ratio of the two series): the caller then measures the move in a pass over the entries
    (:func:`scale_move_eps`).
    """
    g = sums[EPS_SCALE]
    step = g * factor
    b = g - 1.0
    a = b + step
    moments = sums[EPS_MOMENTS:]
    at_b = moments[0]
    change = 0.0
    power_b = 1.0  # b^{k−1}
    difference = 0.0  # a^{k−1} − b^{k−1}
    for k in range(1, EPS_SERIES_ORDER + 1):
        difference = a * difference + step * power_b
        power_b *= b
        change += difference * moments[k]
        at_b += power_b * moments[k]
    reach = sums[EPS_REACH]
    dropped = moments[0] * (series_tail(abs(a) * reach) + series_tail(abs(b) * reach))
    if not dropped <= EPS_SERIES_TOLERANCE * at_b:  # NaN or inf fail too
        return np.nan
    return sums[EPS_EXP_TOTAL] * change / at_b


@njit(cache=True, nogil=True, error_model="numpy")
def apply_eps_scale(s, sums):
    """Apply the rounds' pending scale g and shift Δ to ε, η and exp η in one pass.

    ε → g·ε, η → η + (g − 1)·ε + Δ, exp η recomputed (:func:`scale_eps_cell`); ``sums`` then
    holds no pending move, and its moments are stale until :func:`eps_round_sums` runs.
    """
    factor, offset = sums[EPS_SCALE] - 1.0, sums[EPS_SHIFT]
    if factor != 0.0 or offset != 0.0:
        for i in range(s.counts.shape[0]):
            scale_eps_cell(s.eps, i, factor, s.eta, s.expeta, True, offset, 0.0)
    sums[EPS_SCALE] = 1.0
    sums[EPS_SHIFT] = 0.0


@njit(cache=True, nogil=True, error_model="numpy")
def _scale_move_beta(c, tau, shape, rate, data, s, comp_sum, slot, adapt):
    """Metropolis move (β_c − β̄_c, τ) → (e^u (β_c − β̄_c), e^{−2u} τ), u ~ N(0, sd²); return τ.

    The scale move of an ICAR β field (as :func:`field_scale_cycle` makes for θ and φ_·p,
    without an intercept: β enters η through Z̄, so no intercept keeps the expected count).
    The ICAR quadratic form and the component means are unchanged, so the log acceptance
    ratio is the change in log likelihood plus ``−2·shape·u − rate·τ·(e^{−2u} − 1)`` (the
    Gamma prior, the ICAR normalising constant τ^{(G−C)/2} and the Jacobian e^{(G−C)u − 2u}
    combine to this; :func:`scale_accept`).
    """
    field = s.beta[c]
    component_means(field, data, comp_sum)
    u, factor = scale_proposal(s, slot)
    delta_loglik = _scale_pass_beta(field, c, data, s, comp_sum, factor, False)
    accept, new_tau = scale_accept(s, slot, adapt, delta_loglik, u, tau, shape, rate)
    if not accept:
        return tau
    _scale_pass_beta(field, c, data, s, comp_sum, factor, True)
    return new_tau


@njit(cache=True, nogil=True, error_model="numpy")
def _scale_pass_beta(field, c, data, s, comp_mean, factor, apply):
    """Measure (the log-likelihood change) or make the move of :func:`_scale_move_beta`."""
    total = 0.0
    for i in range(s.counts.shape[0]):
        total = scale_beta_cell(field, i, comp_mean, data.component, factor, data.zbar[c],
                                s.counts, s.eta, s.expeta, apply, total)
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def shift_cells_eps(data, s, comp_sum, column, p):
    """Exact per-cell Gibbs moves along (θ_i + k, ε_ib − k) — or (φ_ip + k, ε_ib − k), b ∋ p.

    ``p = -1`` moves θ, otherwise the field φ_·p (``column`` holds a copy of it). The
    likelihood is unchanged and k is Gaussian given the ICAR conditional of the field and the
    N(0, 1/τ_ε) priors of the errors: this removes the strong posterior coupling between a
    cell's spatial effect and its errors (the classic slow mixing of BYM-type models).
    """
    G = s.counts.shape[0]
    tau_eps = s.tau_eps[0]
    combos = combos_of(data, p)
    if p < 0:
        field = s.theta
        tau = s.tau_theta[0]
    else:
        field = column
        tau = s.tau_phi[p]
        for i in range(G):
            field[i] = s.phi[i, p]
    component_sums(field, data, comp_sum)
    level_var = data.priors[LEVEL_VAR]
    for i in range(G):
        m, q = icar_prior(field, i, tau, level_var, comp_sum, data)
        eps_sum = 0.0
        n = combos.shape[0]
        for t in range(n):
            eps_sum += s.eps[i, combos[t]]
        precision = q + n * tau_eps
        k = (q * (m - field[i]) + tau_eps * eps_sum) / precision
        k += standard_normal(s.rng) / math.sqrt(precision)
        field[i] += k
        comp_sum[data.component[i]] += k
        if p >= 0:
            s.phi[i, p] = field[i]
        for t in range(n):
            s.eps[i, combos[t]] -= k


@njit(cache=True, nogil=True, error_model="numpy")
def shift_eps_draw(eps_total, n, tau_eps, intercept_var, intercept, rng):
    """Draw k of the move (intercept + k, ε − k) given Σε over its ``n`` errors (see below).

    Parameters
    ----------
    eps_total : float
        Σ ε_ib over the errors the move shifts.
    n : int
        Number of those errors.
    tau_eps : float
        Precision τ_ε of the errors' N(0, 1/τ_ε) priors.
    intercept_var : float
        Prior variance of the intercept (μ or α_p).
    intercept : float
        Current value of the intercept.
    rng : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.

    Returns
    -------
    float
        The shift k, drawn from its Gaussian conditional.
    """
    precision = 1.0 / intercept_var + n * tau_eps
    k = (tau_eps * eps_total - intercept / intercept_var) / precision
    return k + standard_normal(rng) / math.sqrt(precision)


@njit(cache=True, nogil=True, error_model="numpy")
def shift_eps(data, s, p, intercept_var, intercept):
    """Exact Gibbs move along (intercept + k, ε_ib − k) for the combinations b of level p.

    ``p = -1`` shifts every ε_ib against μ. The likelihood is unchanged; k is Gaussian given
    the N(0, intercept_var) prior and the N(0, 1/τ_ε) priors of the shifted errors. This lets
    a sparsely observed combination's level move with its errors instead of against them.
    Returns k.
    """
    G, B = s.counts.shape
    tau = s.tau_eps[0]
    combos = combos_of(data, p)  # every b for p < 0, summed cell by cell below
    total = 0.0
    n = 0
    if p < 0:
        for i in range(G):
            for b in range(B):
                total += s.eps[i, b]
        n = G * B
    else:
        for t in range(combos.shape[0]):
            for i in range(G):
                total += s.eps[i, combos[t]]
            n += G
    k = shift_eps_draw(total, n, tau, intercept_var, intercept, s.rng)
    if p < 0:
        for i in range(G):
            for b in range(B):
                s.eps[i, b] -= k
    else:
        for t in range(combos.shape[0]):
            for i in range(G):
                s.eps[i, combos[t]] -= k
    return k


@njit(cache=True, nogil=True, error_model="numpy")
def shift_level_intercepts(data, s, comp_sum, column):
    """Make the exact shifts (α_p + k, φ_·p − k) of :func:`shift_move`, level by level.

    The serial and the chromatic sweeps make them after φ's draws. ``column`` (shape (G,)) is
    scratch for φ's column p; ``comp_sum`` for its component sums.
    """
    G = s.counts.shape[0]
    for p in range(s.alpha.shape[0]):
        for i in range(G):
            column[i] = s.phi[i, p]
        s.alpha[p] += shift_move(
            column, data, data.priors[ALPHA_VAR], data.priors[LEVEL_VAR], s.alpha[p],
            comp_sum, s.rng,
        )
        for i in range(G):
            s.phi[i, p] = column[i]


@njit(cache=True, nogil=True, error_model="numpy")
def shift_errors(data, s, comp_sum, column):
    """Make every exact shift against the errors, after their draws.

    The per-cell shifts (θ_i + k, ε_i· − k) and, for each level p, (φ_ip + k, ε_ib − k)
    (:func:`shift_cells_eps`), then (μ + k, ε − k) and each (α_p + k, ε_ib − k)
    (:func:`shift_eps`). ``comp_sum`` and ``column`` are scratch.
    """
    shift_cells_eps(data, s, comp_sum, column, NO_LEVEL)
    for p in range(s.alpha.shape[0]):
        shift_cells_eps(data, s, comp_sum, column, p)
    s.mu[0] += shift_eps(data, s, NO_LEVEL, data.priors[MU_VAR], s.mu[0])
    for p in range(s.alpha.shape[0]):
        s.alpha[p] += shift_eps(data, s, p, data.priors[ALPHA_VAR], s.alpha[p])


@njit(cache=True, nogil=True, error_model="numpy")
def eps_round_start(data, s, r, sums):
    """Begin round ``r`` of ε's scale moves.

    Round 0 sums the state into ``sums`` (:func:`eps_round_sums`); every later round draws
    τ_ε from its Gamma conditional given the carried Σε².
    """
    if r == 0:
        eps_round_sums(s, sums)
    else:
        draw_tau_eps(data, s, sums[EPS_SQUARES])


@njit(cache=True, nogil=True, error_model="numpy")
def scale_move_eps(data, s, slot, adapt, sums):
    """Apply the scale move of :func:`field_scale_cycle` to the iid errors ε and τ_ε (no centring).

    ε ~ N(0, 1/τ_ε) iid on G·B entries: the normalising constant τ^{GB/2}, the Jacobian
    e^{GB·u − 2u} and the Gamma prior again leave ``−2·shape·u − rate·(τ' − τ)``; μ moves
    with ε so that the expected count stays put (:func:`intercept_shift`, :func:`scale_accept`).
    ``sums`` holds :func:`eps_round_sums` and is carried through an accepted move
    (:func:`scale_eps_sums`).

    The move's change of Σ e^η comes from the moments (:func:`eps_series_change`), and an
    accepted move only joins the pending scale and shift that :func:`apply_eps_scale` applies
    after the last round (:func:`error_scale_moves`): the rounds cost one pass for the moments
    and one to apply, not a pass to measure each and one to apply each accepted one. Where the
    series cannot vouch for the step (a long one, or errors far out), the pending moves are
    applied, the change is measured in a pass over the entries (:func:`eps_exp_change`,
    ``s.entry_work[0]`` its scratch) and the moments are taken afresh.
    """
    u, factor = scale_proposal(s, slot)
    exp_change = eps_series_change(sums, factor)
    measured = math.isnan(exp_change)
    if measured:
        apply_eps_scale(s, sums)
        exp_change = eps_exp_change(s.eps, s.expeta, factor, s.entry_work[0])
    offset, delta_loglik = intercept_shift(data, s, KIND_THETA, NO_LEVEL, sums[EPS_LINEAR],
                                           exp_change, sums[EPS_EXP_TOTAL], factor)
    accept, new_tau = scale_accept(s, slot, adapt, delta_loglik, u, s.tau_eps[0],
                                    data.priors[EPS_A], data.priors[EPS_B])
    if accept:
        s.tau_eps[0] = new_tau
        s.mu[0] += offset
        scale_eps_sums(sums, factor, offset)
    if measured:
        apply_eps_scale(s, sums)
        eps_round_sums(s, sums)


@njit(cache=True, nogil=True, error_model="numpy")
def smooth_rough_split(dev, modes, n_modes, smooth, rough):
    """Split ``dev`` into its projection on the first ``n_modes`` columns of ``modes`` and the rest.

    ``smooth`` = V Vᵀ dev over the smooth modes V (orthonormal columns, orthogonal to every
    component's constant), ``rough`` = dev − smooth; ``rough`` may be ``dev`` itself.

    Parameters
    ----------
    dev : numpy.ndarray of float64, shape (G,)
        A field centred in each connected component.
    modes : numpy.ndarray of float64, shape (G, K + C)
        ``ModelData.modes``.
    n_modes : int
        K, the non-constant modes.
    smooth, rough : numpy.ndarray of float64, shape (G,)
        Overwritten with the two parts.
    """
    G = dev.shape[0]
    coordinates = np.zeros(n_modes)
    for i in range(G):
        for k in range(n_modes):
            coordinates[k] += modes[i, k] * dev[i]
    for i in range(G):
        total = 0.0
        for k in range(n_modes):
            total += modes[i, k] * coordinates[k]
        smooth[i] = total
        rough[i] = dev[i] - total


@njit(cache=True, nogil=True, error_model="numpy")
def _rescale_exp_sums(exp_sum, grow, delta):
    """Apply an accepted intercept scale move to the cell sums S_i; return the new Σ S_i."""
    e_delta = math.exp(delta)
    for i in range(exp_sum.shape[0]):
        exp_sum[i] *= (1.0 + grow[i]) * e_delta
    return fixed_order_sum(exp_sum)


@njit(cache=True, nogil=True, error_model="numpy")
def _exp_change(exp_sum, grow, step_smooth, smooth, step_rough, rough):
    """Σ S_i·(e^{d_i} − 1) with d_i = step_smooth·smooth_i + step_rough·rough_i (into ``grow``).

    A vectorised pass (:mod:`geosynth.samplers.vexp`): eight to ten of these per field a sweep.
    """
    for i in range(exp_sum.shape[0]):
        grow[i] = expm1_vec(step_smooth * smooth[i] + step_rough * rough[i])
    return sum_of_products(exp_sum, grow)


@njit(cache=True, nogil=True, error_model="numpy")
def _intercept_scale_move(data, s, kind, p, slot, adapt, tau, shape, rate, sums, parts, c_s, c_r,
                          prior_terms):
    """Propose and test a scale move with the intercept of the field part c_s·sm + c_r·ro.

    The part is multiplied by e^u (u from ``slot``), the intercept moves by δ
    (:func:`intercept_shift`), and where ``prior_terms`` = (k, cs, q_s, cr, q_x) has k ≠ 0 (the
    rough-part move) the ratio gets ``−k·u − τ/2·cs·(cs·q_s·(e^{−2u} − 1) + 2·cr·q_x·(e^{−u} −
    1))`` beyond the likelihood's change.
    ``sums`` = (exp_sum, grow) per cell and ``parts`` = (sm, ro, lin_s, lin_r, exp_total) are
    those of :func:`field_scale_cycle`; on acceptance the intercept and ``exp_sum`` are moved.

    Returns
    -------
    accept : bool
    tau : float
        The new precision (unchanged if refused).
    delta : float
        The intercept's shift.
    exp_total : float
        Σ S_i after the move.
    factor : float
        e^u − 1.
    """
    exp_sum, grow = sums
    sm, ro, lin_s, lin_r, exp_total = parts
    k, prior_cs, q_s, prior_cr, q_x = prior_terms
    u, factor = scale_proposal(s, slot)
    exp_change = _exp_change(exp_sum, grow, factor * c_s, sm, factor * c_r, ro)
    delta, change = intercept_shift(data, s, kind, p, c_s * lin_s + c_r * lin_r, exp_change,
                                    exp_total, factor)
    if k != 0.0:
        change -= k * u + 0.5 * tau * prior_cs * (prior_cs * q_s * math.expm1(-2.0 * u)
                                                  + 2.0 * prior_cr * q_x * math.expm1(-u))
    accept, new_tau = scale_accept(s, slot, adapt, change, u, tau, shape, rate)
    if not accept:
        return False, tau, delta, exp_total, factor
    move_intercept(s, kind, p, delta)
    return True, new_tau, delta, _rescale_exp_sums(exp_sum, grow, delta), factor


@njit(cache=True, nogil=True, error_model="numpy")
def field_scale_cycle(field, tau, shape, rate, kind, p, data, s, comp_sum, slot, split_slot,
                      rough_slot, adapt):
    """:data:`SCALE_ROUNDS` rounds of exact updates of θ or φ_·p's scale; return τ.

    Each round: (1) the Gamma draw of τ given the field (Nunes 2018, eqs. 2.15–2.16, with the
    ICAR rank G − C); (2) the scale move with the intercept (f − f̄_c, τ, intercept) →
    (e^u (f − f̄_c), e^{−2u} τ, intercept + δ), where δ = −log(S(u)/S(0)), S the sum of e^η
    over the touched entries, keeps the expected count (:func:`intercept_shift`); (3) the
    split move (f − f̄_c, ε_ib, τ) → (e^u (f − f̄_c), ε_ib − d_i, e^{−2u} τ), d_i = (e^u − 1)
    (f_i − f̄), for the entries b the field enters: η stays put and the ratio is the priors'
    change with the errors' N(0, 1/τ_ε) log density; and in every :data:`ROUGH_EVERY`-th
    round (4) the rough-part move, (2) applied to the field's part r outside its K smoothest
    modes and component constants only: f → f − r + e^u r with τ → e^{−2u} τ and the
    intercept's δ. Moves (2)–(4) are involutions for u → −u with the Jacobian of the scale
    alone (δ is unit triangular, the shear of ε too): in (2) and (3) τ·fᵀQf is unchanged, so
    the ratio of (2) is ``factor·Σa(f − f̄) + n·δ`` plus the intercept's prior and that of (3)
    the errors' prior change; in (4) the Jacobian e^{u(G − C − K)} and the ICAR normaliser
    τ^{(G − C)/2} leave −K·u, and τ·fᵀQf changes by τ·(sᵀQs·(e^{−2u} − 1) + 2·sᵀQr·(e^{−u} −
    1)) for the smooth part s — each with the Gamma/Jacobian term of :func:`scale_accept`.
    Every update leaves the posterior invariant; (2) and (3) are the non-centred and the
    centred updates of the precision, interwoven (Yu & Meng 2011), along the two couplings that
    make a weakly identified field's precision slow: the log-normal mean e^{μ + σ²/2} and the
    split of a cell's deviation between the field and its errors. (4) moves the precision with
    the field's roughness and leaves its broad pattern (the smooth modes, which the joint mode
    move samples) in place: on the Berlin listings it lifted the worst precision's ESS by
    9–16 % (the other fields' precisions by 20–30 %) for 6–7 % more time a sweep
    (``bench/RESULTS.md``, 2026-11-27, eighth session).

    A round costs G ``expm1`` and G products, not passes over the touched entries: every
    update changes the field by a combination of its smooth and rough parts at the start, so
    the cell sums S_i = Σ_b e^η_ib over the touched b carry the scale moves with the
    intercept, and Σ part_i·E_i and the parts' cross products (E_i = Σ_b ε_ib) make the split
    move O(1). η, exp η and ε are brought up to date once, after the last round (one exp per
    cell). One round per sweep left the precision of a weakly identified field (τ_φ[y=1] at
    G = 400, posterior sd of log τ 0.8) with lag-1 autocorrelation 0.70 between thinned draws;
    the rounds let it travel its conditional given the rest of the state within one sweep
    (``bench/RESULTS.md``, 2026-11-26).

    Parameters
    ----------
    field : numpy.ndarray of float64, shape (G,)
        θ, or a copy of φ's column p (the result is also stored in ``s.phi[:, p]``).
    tau : float
        The field's precision.
    shape, rate : float
        Its Gamma prior.
    kind : int
        ``KIND_THETA`` (intercept μ, every combination) or ``KIND_PHI`` (α_p, the
        combinations holding level p).
    p : int
        The level of φ_·p (``_FIRST`` for θ).
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: the field, its intercept, η, exp η and ε are updated in place,
        ``s.rng`` advanced; ``s.cell_work`` (rows 0–3) is scratch.
    comp_sum : numpy.ndarray of float64, shape (C,)
        Scratch: the field's component means.
    slot, split_slot, rough_slot : int
        The proposal scales of moves (2), (3) and (4) in ``s.scale_log_sd``
        (:func:`scale_proposal`).
    adapt : bool
        Burn-in: tune the proposal scales.

    Returns
    -------
    float
        The new τ.
    """
    G = field.shape[0]
    combos = data.all_combos
    if kind == KIND_PHI:
        combos = level_combos_of(data, p)
    n = combos.shape[0]
    n_modes = data.mode_eigenvalues.shape[0]
    component_means(field, data, comp_sum)
    # The field is f̄ + cs·sm + cr·ro (sm, ro its smooth and rough parts at the start); the
    # errors lose as_·sm_i + ar·ro_i and η gains hs·sm_i + hr·ro_i + moved on the touched entries.
    sm, exp_sum, grow, ro = s.cell_work[0], s.cell_work[1], s.cell_work[2], s.cell_work[3]
    for i in range(G):
        ro[i] = field[i] - comp_sum[data.component[i]]
    smooth_rough_split(ro, data.modes, n_modes, sm, ro)
    lin_s, lin_r, exp_total = 0.0, 0.0, 0.0  # Σ a·sm, Σ a·ro, Σ S_i
    eps_s, eps_r = 0.0, 0.0  # Σ sm_i·E_i, Σ ro_i·E_i
    ss, sr, rr = 0.0, 0.0, 0.0  # Σ sm², Σ sm·ro, Σ ro²
    for i in range(G):
        a = s.cell_level_counts[i, p] if kind == KIND_PHI else s.cell_counts[i]
        cell_exp = 0.0
        cell_eps = 0.0
        for t in range(n):
            cell_exp += s.expeta[i, combos[t]]
            cell_eps += s.eps[i, combos[t]]
        exp_sum[i] = cell_exp
        exp_total += cell_exp
        lin_s += a * sm[i]
        lin_r += a * ro[i]
        eps_s += sm[i] * cell_eps
        eps_r += ro[i] * cell_eps
        ss += sm[i] * sm[i]
        sr += sm[i] * ro[i]
        rr += ro[i] * ro[i]
    q_s, q_x, q_r = icar_quadratic_parts(sm, ro, data)
    gibbs_shape = shape + 0.5 * (G - data.component_size.shape[0])
    half_tau_eps = 0.5 * s.tau_eps[0]
    cs, cr, hs, hr, as_, ar, moved = 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0
    changed = False
    for r in range(SCALE_ROUNDS):
        tau = gamma(s.rng, gibbs_shape, rate + 0.5 * (cs * cs * q_s + 2.0 * cs * cr * q_x
                                                       + cr * cr * q_r))
        accept, tau, delta, exp_total, factor = _intercept_scale_move(
            data, s, kind, p, slot, adapt, tau, shape, rate, (exp_sum, grow),
            (sm, ro, lin_s, lin_r, exp_total), cs, cr, (0.0, 0.0, 0.0, 0.0, 0.0))
        if accept:
            hs += factor * cs
            hr += factor * cr
            moved += delta
            cs *= 1.0 + factor
            cr *= 1.0 + factor
            changed = True
        u, factor = scale_proposal(s, split_slot)
        # Σ_i d_i·(2·E_i − n·d_i) with d_i = factor·dev_i, from the running sums.
        dev_eps = cs * eps_s + cr * eps_r
        dev_sq = cs * cs * ss + 2.0 * cs * cr * sr + cr * cr * rr
        change = factor * (2.0 * dev_eps - n * factor * dev_sq)
        accept, new_tau = scale_accept(s, split_slot, adapt, half_tau_eps * change, u, tau,
                                       shape, rate)
        if accept:
            tau = new_tau
            eps_s -= n * factor * (cs * ss + cr * sr)
            eps_r -= n * factor * (cs * sr + cr * rr)
            as_ += factor * cs
            ar += factor * cr
            cs *= 1.0 + factor
            cr *= 1.0 + factor
            changed = True
        if n_modes == 0 or r % ROUGH_EVERY != ROUGH_EVERY - 1:
            continue
        accept, tau, delta, exp_total, factor = _intercept_scale_move(
            data, s, kind, p, rough_slot, adapt, tau, shape, rate, (exp_sum, grow),
            (sm, ro, lin_s, lin_r, exp_total), 0.0, cr,
            (float(n_modes), cs, q_s, cr, q_x))
        if accept:
            hr += factor * cr
            moved += delta
            cr *= 1.0 + factor
            changed = True
    if not changed:
        return tau
    for i in range(G):
        field[i] = comp_sum[data.component[i]] + cs * sm[i] + cr * ro[i]
        if kind == KIND_PHI:
            s.phi[i, p] = field[i]
        cell_shift = hs * sm[i] + hr * ro[i] + moved
        rescale = exp_vec(cell_shift)
        cell_absorbed = as_ * sm[i] + ar * ro[i]
        for t in range(n):
            b = combos[t]
            s.eta[i, b] += cell_shift
            s.expeta[i, b] *= rescale
            s.eps[i, b] -= cell_absorbed
    return tau


@njit(cache=True, nogil=True, error_model="numpy")
def field_scale_slots(s):
    """Slots of θ's split, remap and rough-part moves in ``s.scale_log_sd``; φ_·p's follow each.

    See :func:`~geosynth.model.metropolis.scale_proposal` for the layout.
    """
    P = s.alpha.shape[0]
    split = 2 + P + s.beta.shape[0]
    remap = split + 1 + P
    return split, remap, remap + 1 + P


@njit(cache=True, nogil=True, error_model="numpy")
def field_scale_cycles(data, s, comp_sum, column, adapt):
    """Run :func:`field_scale_cycle` and the remap move for θ, then for each φ_·p.

    Each field's O(G) rounds of scale moves are followed by the
    :data:`~geosynth.model.remap.REMAP_ROUNDS` proposals of
    :func:`~geosynth.model.remap.remap_move`, which carry the field through its cell-by-cell
    conditionals to the proposed precision (the errors absorbing the change). Shared by the
    serial sweep (:func:`scale_moves`) and the chromatic one, whose θ and φ_·p scale moves are
    these serial O(G) rounds too.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state, updated in place.
    comp_sum : numpy.ndarray of float64, shape (C,)
        Scratch for the component means.
    column : numpy.ndarray of float64, shape (G,)
        Scratch for one column of φ.
    adapt : bool
        Burn-in: tune the proposal scales.
    """
    pr = data.priors
    P = s.alpha.shape[0]
    split, remap, rough = field_scale_slots(s)
    tau = field_scale_cycle(s.theta, s.tau_theta[0], pr[THETA_A], pr[THETA_B], KIND_THETA,
                            _FIRST, data, s, comp_sum, _FIRST, split, rough, adapt)
    s.tau_theta[0] = remap_move(s.theta, tau, pr[THETA_A], pr[THETA_B], data.all_combos, remap,
                                _FIRST, data, s, comp_sum, adapt)
    G = s.counts.shape[0]
    for p in range(P):
        for i in range(G):
            column[i] = s.phi[i, p]
        tau = field_scale_cycle(column, s.tau_phi[p], pr[PHI_A], pr[PHI_B], KIND_PHI, p, data,
                                s, comp_sum, 1 + p, split + 1 + p, rough + 1 + p, adapt)
        s.tau_phi[p] = remap_move(column, tau, pr[PHI_A], pr[PHI_B], level_combos_of(data, p),
                                  remap + 1 + p, 1 + p, data, s, comp_sum, adapt)
        for i in range(G):
            s.phi[i, p] = column[i]


@njit(cache=True, nogil=True, error_model="numpy")
def eps_scale_slot(s):
    """Return the slot of ε's scale move with μ in ``s.scale_log_sd`` (:func:`scale_proposal`)."""
    return 1 + s.alpha.shape[0] + s.beta.shape[0]


@njit(cache=True, nogil=True, error_model="numpy")
def error_scale_rounds(data, s, adapt):
    """Run the remap move of (ε, τ_ε); return the rounds of ε's scale move with μ to follow.

    The rounds of (τ_ε's Gibbs draw, :func:`scale_move_eps`) were made three for the Berlin
    listings, where τ_ε was the slowest precision (its ESS 71 → 246 in 2 × 4,000 sweeps, +8 %
    a sweep). The remap move (:func:`~geosynth.model.remap.remap_errors`) now runs there with
    steps three times as long as the scale move's (σ 1.2 against 0.4) and does their work
    (τ_ε's autocorrelation time 2.6 sweeps with three rounds, 2.8 with one). So one round
    follows the remap where it ran with a proposal scale at least the scale move's, and
    :data:`EPS_SCALE_ROUNDS` otherwise: where it is skipped (the bench's scenario, where three
    rounds lifted τ_ε's ESS by 40 % and eight by about 30 % more) and where it runs with shorter
    steps than the rounds make, which alone also move μ with the errors (``bench/RESULTS.md``,
    2026-11-26, 2026-11-27 and 2026-12-04).
    """
    ran = remap_errors(data, s, adapt)
    if ran and s.scale_log_sd[remap_errors_slot(s)] >= s.scale_log_sd[eps_scale_slot(s)]:
        return 1
    return EPS_SCALE_ROUNDS


@njit(cache=True, nogil=True, error_model="numpy")
def error_scale_moves(data, s, adapt):
    """Make the remap move of (ε, τ_ε), then the rounds of :func:`error_scale_rounds`.

    Each round is the scale move of ε with μ (:func:`scale_move_eps`), each after the first
    preceded by τ_ε's Gibbs draw. One pass at the start sums what the rounds need
    (:func:`eps_round_sums`), each accepted move carries the sums on (:func:`scale_eps_sums`),
    and one pass at the end applies the accepted moves to the state (:func:`apply_eps_scale`).
    """
    sums = np.empty(EPS_ROUND_SUMS)
    for r in range(error_scale_rounds(data, s, adapt)):
        eps_round_start(data, s, r, sums)
        scale_move_eps(data, s, eps_scale_slot(s), adapt, sums)
    apply_eps_scale(s, sums)


@njit(cache=True, nogil=True, error_model="numpy")
def scale_moves(data, s, comp_sum, column, adapt):
    """Scale moves of every ICAR field and of ε with its precision.

    θ and each φ_·p: the rounds of :func:`field_scale_cycle` (τ's Gibbs draw, the scale move
    with the intercept, the split move with the errors) and the remap move
    (:func:`field_scale_cycles`); each ICAR β_c·: one scale move (:func:`_scale_move_beta`);
    ε: the remap move of (ε, τ_ε) (:func:`~geosynth.model.remap.remap_errors`, which runs
    where it beats the Gibbs draw of τ_ε), then rounds of the scale move with μ
    (:func:`error_scale_moves`).
    """
    field_scale_cycles(data, s, comp_sum, column, adapt)
    pr = data.priors
    P = s.alpha.shape[0]
    for c in range(data.beta_priors.shape[0]):
        if data.beta_priors[c] == BETA_ICAR:
            s.tau_beta[c] = _scale_move_beta(c, s.tau_beta[c], pr[BETA_A], pr[BETA_B], data,
                                             s, comp_sum, 1 + P + c, adapt)
    error_scale_moves(data, s, adapt)
