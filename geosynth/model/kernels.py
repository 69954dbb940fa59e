"""Numba Gibbs kernels of the Paiva et al. (2014) intensity model with the β extension.

Model (Nunes 2018, §2.1, eqs. 2.1–2.9, and §2.2, eqs. 2.19–2.21)::

    c_ib ~ Poisson(λ_ib)
    log λ_ib = η_ib = μ + Σ_k α_k[x_k(b)] + θ_i + Σ_k φ_ik[x_k(b)] + Σ_c β_ci·Z̄_cib + ε_ib

Attribute levels other than each attribute's baseline are numbered p = 0..P-1, so α is a vector
of length P and φ a (G, P) array; ``combo_levels[b]`` lists the p's of combination b (-1 pads).
The continuous covariates c = 0..K-1 (Nunes 2018, §5: the β extension generalises to several)
each have a field β_c· (row c of the (K, G) array β) with its own prior, Normal or ICAR
(``ModelData.beta_priors[c]``), and under ICAR its own precision τ_β,c; every β update,
precision draw and scale move takes the covariate c as an explicit loop index or argument.
Without a covariate (K = 0) the state keeps one β row of zeros, the Z̄ one (G, B) slice of zeros,
and nothing updates them.

Every scalar update uses the family ``a·x − Σ_j w_j·e^{z_j x} − q(x − m)²/2`` of
:mod:`geosynth.samplers.family`; with z_j = 1 the exponential terms collapse into one weight
``W = Σ exp(η − x)``, computed from the current linear predictor η, which every update keeps
current by adding its change to the (i, b) entries it touches (eqs. 2.10–2.14, 2.22–2.23).
Precisions are drawn from their Gamma conjugates (eqs. 2.15–2.17, 2.24) with the ICAR shape
``a + (G − C)/2``, the rank of ``D_W − W`` for C connected components. Nunes (2018) prints
``G/2``, which is right only for an improper-free rank-G precision; the ICAR precision matrix has
one zero eigenvalue per component.

Identifiability and exact re-centring. The ICAR density is flat along per-component constants.
Each ICAR field gets a proper Normal prior (variance ``level_var``) on its mean within every
component, and after each field's sweep one exact Gibbs move along the direction that adds k to
μ (or α_p) and subtracts k from the whole field: the likelihood is unchanged along it, and k is
drawn from its Gaussian conditional given the two priors. Summaries report the centred field and
the intercept that absorbs its mean, as the sum-to-zero constraint of the thesis does.

Kernels are plain ``@njit(cache=True, nogil=True)`` functions over arrays (NumPy error model: no
zero-division checks in the hot loops); no Python objects.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from geosynth.model.modes import mode_move
from geosynth.samplers.ars import ars_draw, ars_draw_single
from geosynth.samplers.family import STATUS_OK
from geosynth.samplers.newton_mh import newton_mh_step
from geosynth.samplers.rng import gamma, standard_normal, uniform
from geosynth.samplers.slice import slice_step

__all__ = [
    "ModelData",
    "CountTables",
    "GibbsState",
    "model_shape",
    "BLOCK_NAMES",
    "BETA_NONE",
    "BETA_NORMAL",
    "BETA_ICAR",
    "SAMPLER_ARS",
    "SAMPLER_SLICE",
    "UPDATE_EXACT",
    "UPDATE_MH",
    "MH_EXACT_SHARE",
    "MU_VAR",
    "ALPHA_VAR",
    "LEVEL_VAR",
    "BETA_VAR",
    "THETA_A",
    "THETA_B",
    "PHI_A",
    "PHI_B",
    "EPS_A",
    "EPS_B",
    "BETA_A",
    "BETA_B",
    "B_MU",
    "B_ALPHA",
    "B_THETA",
    "B_PHI",
    "B_BETA",
    "B_EPS",
    "compute_eta",
    "sweep",
    "run_chunk",
    "run_chunk_noise_aware",
    "update_latent_counts",
    "draw_latent_count",
    "latent_log_marginal",
    "marginal_moves",
    "component_means",
    "component_sums",
    "shift_move",
    "shift_eps_draw",
    "scale_proposal",
    "scale_accept",
    "scale_terms",
    "eps_scale_terms",
    "move_intercept",
    "KIND_THETA",
    "KIND_PHI",
    "KIND_BETA",
    "NO_LEVEL",
    "intercept_shift",
    "split_scale_move",
    "record",
    "update_tau_eps",
    "icar_neighbours",
    "icar_prior",
    "icar_proposal_prior",
    "icar_quadratic_add",
    "shift_cell_eta",
    "shift_cell_eta_z",
    "draw_field_cell",
    "draw_beta_cell",
    "draw_eps_cell",
    "draw_precisions",
    "draw_tau_eps",
    "scale_field_cell",
    "scale_beta_cell",
    "scale_eps_cell",
    "update_intercepts",
    "update_beta_single_site",
    "update_errors",
    "mode_moves",
]

BETA_NONE, BETA_NORMAL, BETA_ICAR = 0, 1, 2
SAMPLER_ARS, SAMPLER_SLICE = 0, 1
UPDATE_EXACT, UPDATE_MH = 0, 1  # ModelData.scalar_update: how the one-term conditionals move
MH_EXACT_SHARE = 0.1  # UPDATE_MH: share of updates drawn exactly anyway (see _mh_update)

# Indices into ModelData.priors (Priors.to_array(), float64 (12,)): the Normal prior variances
# of μ, α, the ICAR fields' component means and β, then the Gamma (shape A, rate B) priors of
# τ_θ, τ_φ, τ_ε and τ_β.
MU_VAR, ALPHA_VAR, LEVEL_VAR, BETA_VAR = 0, 1, 2, 3
THETA_A, THETA_B, PHI_A, PHI_B, EPS_A, EPS_B, BETA_A, BETA_B = 4, 5, 6, 7, 8, 9, 10, 11

# Block codes B_*, indices into BLOCK_NAMES, reported in a sweep's failure status
# (status = 16 * block + sampler status).
BLOCK_NAMES = ("mu", "alpha", "theta", "phi", "beta", "epsilon")
B_MU, B_ALPHA, B_THETA, B_PHI, B_BETA, B_EPS = 0, 1, 2, 3, 4, 5


class ModelData(NamedTuple):
    """Read-only arrays of one fit (shapes: G cells, B combinations, P non-baseline levels).

    Shared by every chain and never written: :func:`geosynth.model.fit.build_model_data` marks
    each array read-only, so a kernel that assigned to one would not compile. The counts, which
    a noise-aware chain redraws, live in the chain's :class:`GibbsState`.
    """

    combo_levels: np.ndarray  # int64 (B, K), p per attribute or -1 at the baseline
    level_combos_ptr: np.ndarray  # int64 (P + 1,) CSR: combinations having level p
    level_combos: np.ndarray  # int64
    all_combos: np.ndarray  # int64 (B,) 0..B-1: the combinations θ and β touch
    indptr: np.ndarray  # int64 (G + 1,) adjacency CSR
    indices: np.ndarray  # int64
    component: np.ndarray  # int64 (G,)
    component_size: np.ndarray  # float64 (C,)
    zbar: np.ndarray  # float64 (max(K, 1), G, B) per covariate; zeros without one (K = 0)
    priors: np.ndarray  # float64 (12,) Priors.to_array()
    beta_priors: np.ndarray  # int64 (K,) BETA_NORMAL / BETA_ICAR per covariate; (0,) without β
    beta_sampler: int  # SAMPLER_ARS / SAMPLER_SLICE
    scalar_update: int  # UPDATE_EXACT (ARS draws) / UPDATE_MH (Newton-proposal MH steps)
    modes: np.ndarray  # float64 (G, K) smoothest eigenvectors of D_W − W (modes.smooth_modes)
    mode_eigenvalues: np.ndarray  # float64 (K,)


def model_shape(data: ModelData) -> tuple[int, int, int]:
    """``(G, B, P)`` of ``data``: cells, combinations and non-baseline levels."""
    return data.zbar.shape[1], data.zbar.shape[2], data.level_combos_ptr.shape[0] - 1


class CountTables(NamedTuple):
    """The counts of one fit and the sums the conditionals read (G cells, B, P, K covariates).

    A chain's :class:`GibbsState` starts from a copy: an exact fit never changes it, a
    noise-aware fit redraws the counts (the latent true counts) every sweep
    (:func:`update_latent_counts`).
    """

    counts: np.ndarray  # float64 (G, B)
    cell_counts: np.ndarray  # float64 (G,)   Σ_b c_ib
    level_counts: np.ndarray  # float64 (P,)  Σ_i Σ_{b∋p} c_ib
    cell_level_counts: np.ndarray  # float64 (G, P)
    cell_czbar: np.ndarray  # float64 (max(K, 1), G)  Σ_b c_ib Z̄_cib


class GibbsState(NamedTuple):
    """Mutable state of one chain; kernels update the arrays in place.

    The first five fields are the chain's copy of the :class:`CountTables`.
    """

    counts: np.ndarray  # float64 (G, B); a noise-aware chain's current latent counts
    cell_counts: np.ndarray  # float64 (G,)
    level_counts: np.ndarray  # float64 (P,)
    cell_level_counts: np.ndarray  # float64 (G, P)
    cell_czbar: np.ndarray  # float64 (max(K, 1), G)
    mu: np.ndarray  # (1,)
    alpha: np.ndarray  # (P,)
    theta: np.ndarray  # (G,)
    phi: np.ndarray  # (G, P)
    beta: np.ndarray  # (max(K, 1), G): row c is covariate c's field
    eps: np.ndarray  # (G, B)
    tau_theta: np.ndarray  # (1,)
    tau_phi: np.ndarray  # (P,)
    tau_eps: np.ndarray  # (1,)
    tau_beta: np.ndarray  # (max(K, 1),) one per covariate (updated under its ICAR prior only)
    eta: np.ndarray  # (G, B) linear predictor
    expeta: np.ndarray  # (G, B) exp(eta), kept in step so conditionals need no exp per term
    rng: np.ndarray  # uint64 (4,) xoshiro256** stream
    work: np.ndarray  # float64 (5, MAX_ABSCISSAE) ARS scratch
    wbuf: np.ndarray  # float64 (max(B, 1),) weights scratch
    zbuf: np.ndarray  # float64 (max(B, 1),) exponents scratch
    ones: np.ndarray  # float64 (1,) = [1.0]
    w1: np.ndarray  # float64 (1,) weight scratch of the one-term ARS
    scale_log_sd: np.ndarray  # float64 (2P + 3 + max(K, 1),) scale moves: θ, φ_p, β_c, ε,
    #                           then the error-absorbing ones of θ and φ_p
    marginal_log_sd: np.ndarray  # float64 (P + 3,) noise-aware moves: μ, α_p, θ_i, ε_ib
    mode_work: np.ndarray  # float64 (4, G) scratch of the smooth-mode moves


@njit(cache=True, nogil=True, error_model="numpy")
def compute_eta(data, s):
    """Recompute η and exp(η) from the parameters (removes drift of the incremental updates).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    s : GibbsState
        The chain's state; ``s.eta`` and ``s.expeta`` (float64 (G, B)) are overwritten from
        μ, α, θ, φ, β (with ``data.zbar``, covariate by covariate) and ε.
    """
    G, B = s.counts.shape
    K = data.combo_levels.shape[1]
    n_covariates = data.beta_priors.shape[0]
    for i in range(G):
        base = s.mu[0] + s.theta[i]
        for b in range(B):
            v = base + s.eps[i, b]
            for k in range(K):
                p = data.combo_levels[b, k]
                if p >= 0:
                    v += s.alpha[p] + s.phi[i, p]
            for c in range(n_covariates):
                v += s.beta[c, i] * data.zbar[c, i, b]
            s.eta[i, b] = v
            s.expeta[i, b] = math.exp(v)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _mh_update(update, rng):
    """Whether this update is a Newton-proposal MH step (else an exact ARS draw).

    Under UPDATE_MH each update is an exact draw with probability :data:`MH_EXACT_SHARE`,
    whatever the state: a mixture of two kernels that both leave the conditional invariant, so
    the mixture does too. The exact draws rescue a value stranded far in the exponential tail
    of its conditional (after a large move of another parameter, or from the over-dispersed
    start), where one Newton step is too short for its reverse move to be likely and the MH
    step alone would almost never accept.
    """
    return update == UPDATE_MH and uniform(rng) >= MH_EXACT_SHARE


@njit(cache=True, nogil=True, error_model="numpy")
def _draw1(x0, a, wex, m, q, update, rng, work, w1, ones):
    """Update x0 under ``a·x − W·e^x − q(x − m)²/2`` given ``wex`` = W·e^{x0}.

    ``update`` is ``ModelData.scalar_update``: UPDATE_EXACT draws from the conditional by ARS;
    UPDATE_MH takes one Newton-proposal Metropolis–Hastings step
    (:mod:`geosynth.samplers.newton_mh`), except with probability :data:`MH_EXACT_SHARE`, when
    it draws by ARS (see :func:`_mh_update`). Arrays are passed as locals: faster.
    """
    if _mh_update(update, rng):
        new, _, status = newton_mh_step(x0, a, wex, m, q, rng)
        return new, status
    return ars_draw_single(x0, a, wex * math.exp(-x0), m, q, rng, work, w1, ones)


@njit(cache=True, nogil=True, error_model="numpy")
def _update_mu(data, s):
    rng, work, w1, ones = s.rng, s.work, s.w1, s.ones
    G, B = s.counts.shape
    x = s.mu[0]
    total = 0.0
    for i in range(G):
        for b in range(B):
            total += s.expeta[i, b]
    new, status = _draw1(x, s.cell_counts.sum(), total, 0.0, 1.0 / data.priors[MU_VAR],
                         data.scalar_update, rng, work, w1, ones)
    if status != STATUS_OK:
        return status
    delta = new - x
    factor = math.exp(delta)
    s.mu[0] = new
    for i in range(G):
        for b in range(B):
            s.eta[i, b] += delta
            s.expeta[i, b] *= factor
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def _update_alpha(data, s):
    rng, work, w1, ones = s.rng, s.work, s.w1, s.ones
    G = s.counts.shape[0]
    for p in range(s.alpha.shape[0]):
        x = s.alpha[p]
        lo, hi = data.level_combos_ptr[p], data.level_combos_ptr[p + 1]
        total = 0.0
        for i in range(G):
            for t in range(lo, hi):
                total += s.expeta[i, data.level_combos[t]]
        new, status = _draw1(x, s.level_counts[p], total, 0.0, 1.0 / data.priors[ALPHA_VAR],
                             data.scalar_update, rng, work, w1, ones)
        if status != STATUS_OK:
            return status
        delta = new - x
        factor = math.exp(delta)
        s.alpha[p] = new
        for i in range(G):
            for t in range(lo, hi):
                s.eta[i, data.level_combos[t]] += delta
                s.expeta[i, data.level_combos[t]] *= factor
    return STATUS_OK


# ----------------------------------------------------------------------------------------
# Per-cell conditionals: the one home of each draw, used by the serial sweep (cells in order,
# the chain's stream) and by the chromatic sweep of :mod:`geosynth.model.parallel` (cells of
# one colour in parallel, one stream per cell). Plain arrays only: the chromatic sweep calls
# them inside its parallel loops.


@njit(cache=True, nogil=True, error_model="numpy")
def icar_neighbours(field, i, tau, indptr, indices):
    """Canonical parameters of the ICAR conditional of ``field[i]`` given its neighbours.

    The ICAR prior makes f_i | f_{-i} ~ N(neighbour mean, 1/(n_i·τ)) (Besag, York & Mollié
    1991); in canonical form the linear term is b = τ·Σ_{j~i} f_j and the precision q = n_i·τ.

    Parameters
    ----------
    field : numpy.ndarray of float64, shape (G,)
        θ, a column of φ, or a β field.
    i : int
        The cell.
    tau : float
        The field's precision.
    indptr, indices : numpy.ndarray of int64
        The lattice's adjacency (CSR).

    Returns
    -------
    tuple of (float, float)
        ``(b, q)``.
    """
    lo, hi = indptr[i], indptr[i + 1]
    neighbour_sum = 0.0
    for t in range(lo, hi):
        neighbour_sum += field[indices[t]]
    return neighbour_sum * tau, (hi - lo) * tau


@njit(cache=True, nogil=True, error_model="numpy")
def icar_prior(field, i, tau, level_var, comp_sum, data):
    """Mean and precision of the full prior conditional of field[i] (the serial sweep's).

    The ICAR conditional (:func:`icar_neighbours`) times the N(0, level_var) prior on the
    component mean S_c / n_c, which contributes precision 1/(level_var·n_c²) about
    −(S_c − field[i]).

    Parameters
    ----------
    field : numpy.ndarray of float64, shape (G,)
        θ, a column of φ, or a β field.
    i : int
        The cell.
    tau : float
        The field's precision.
    level_var : float
        Prior variance of the field's mean in each component.
    comp_sum : numpy.ndarray of float64, shape (C,)
        Current Σ of the field over each component (:func:`component_sums`).
    data : ModelData
        The fit's read-only arrays.

    Returns
    -------
    tuple of (float, float)
        ``(m, q)``.
    """
    b, q_icar = icar_neighbours(field, i, tau, data.indptr, data.indices)
    c = data.component[i]
    n_c = data.component_size[c]
    q_level = 1.0 / (level_var * n_c * n_c)
    m_level = -(comp_sum[c] - field[i])
    q = q_icar + q_level
    return (b + q_level * m_level) / q, q


@njit(cache=True, nogil=True, error_model="numpy")
def icar_proposal_prior(field, i, tau, level_var, indptr, indices, component, component_size):
    """Mean and precision of cell i's chromatic proposal prior: the ICAR conditional alone.

    The chromatic sweep leaves the component-mean prior to its per-component correction. In a
    singleton component the cell is its component, so its level prior N(0, level_var) stays
    in and the draw is an exact Gibbs draw (:func:`icar_prior` with S_c − f_i = 0, n_i = 0).

    Parameters
    ----------
    field, i, tau, level_var
        As in :func:`icar_prior`.
    indptr, indices : numpy.ndarray of int64
        The lattice's adjacency (CSR).
    component : numpy.ndarray of int64, shape (G,)
        Component of each cell.
    component_size : numpy.ndarray of float64, shape (C,)
        Cells per component.

    Returns
    -------
    tuple of (float, float)
        ``(m, q)``.
    """
    if component_size[component[i]] <= 1.0:
        return 0.0, 1.0 / level_var
    b, q = icar_neighbours(field, i, tau, indptr, indices)
    return b / q, q


@njit(cache=True, nogil=True, error_model="numpy")
def shift_cell_eta(eta, expeta, combos, i, delta):
    """η_ib += delta for b in ``combos`` (exp η rescaled).

    Parameters
    ----------
    eta, expeta : numpy.ndarray of float64, shape (G, B)
        Linear predictor and its exponential, updated in place.
    combos : numpy.ndarray of int64
        The combinations the change touches.
    i : int
        The cell.
    delta : float
        The change.
    """
    factor = math.exp(delta)
    for t in range(combos.shape[0]):
        b = combos[t]
        eta[i, b] += delta
        expeta[i, b] *= factor


@njit(cache=True, nogil=True, error_model="numpy")
def shift_cell_eta_z(eta, expeta, zbar, i, delta):
    """η_ib += delta·Z̄_ib for every b (exp η recomputed).

    Parameters
    ----------
    eta, expeta : numpy.ndarray of float64, shape (G, B)
        Linear predictor and its exponential, updated in place.
    zbar : numpy.ndarray of float64, shape (G, B)
        One covariate's cell means Z̄.
    i : int
        The cell.
    delta : float
        The change of β_i.
    """
    for b in range(eta.shape[1]):
        eta[i, b] += delta * zbar[i, b]
        expeta[i, b] = math.exp(eta[i, b])


@njit(cache=True, nogil=True, error_model="numpy")
def draw_field_cell(field, i, a, m, q, combos, eta, expeta, update, rng, work, w1, ones):
    """Draw θ_i or φ_ip from ``a·x − W·e^x − q(x − m)²/2`` (Nunes 2018, eqs. 2.12–2.13).

    W = Σ_{b in combos} e^{η_ib − x}, from the current η; η and exp η follow the draw.

    Parameters
    ----------
    field : numpy.ndarray of float64, shape (G,)
        θ or a copy of φ's column p; ``field[i]`` is overwritten.
    i : int
        The cell.
    a : float
        The observed count the term multiplies (the cell's total, or its total at level p).
    m, q : float
        Prior mean and precision (:func:`icar_prior` or :func:`icar_proposal_prior`).
    combos : numpy.ndarray of int64
        The combinations the field enters (every b for θ, those holding level p for φ_·p).
    eta, expeta : numpy.ndarray of float64, shape (G, B)
        Linear predictor and its exponential, updated in place.
    update : int
        UPDATE_EXACT or UPDATE_MH (see :func:`_draw1`).
    rng : numpy.ndarray of uint64, shape (4,)
        The stream the draw advances.
    work, w1, ones : numpy.ndarray
        ARS scratch.

    Returns
    -------
    tuple of (float, int)
        The change of ``field[i]`` and the sampler status (the field is unchanged unless OK).
    """
    x = field[i]
    total = 0.0
    for t in range(combos.shape[0]):
        total += expeta[i, combos[t]]
    new, status = _draw1(x, a, total, m, q, update, rng, work, w1, ones)
    if status != STATUS_OK:
        return 0.0, status
    delta = new - x
    field[i] = new
    shift_cell_eta(eta, expeta, combos, i, delta)
    return delta, STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def draw_beta_cell(beta, i, zbar, czbar_i, m, q, slice_sampler, eta, expeta, rng, work, wbuf,
                   zbuf):
    """Draw β_i of one covariate (Nunes 2018, eqs. 2.22–2.23); η and exp η follow.

    The conditional ``czbar_i·x − Σ_b e^{η_ib − β_i Z̄_ib}·e^{Z̄_ib x} − q(x − m)²/2``, by slice
    sampling or ARS.

    Parameters
    ----------
    beta : numpy.ndarray of float64, shape (G,)
        The covariate's field; ``beta[i]`` is overwritten.
    i : int
        The cell.
    zbar : numpy.ndarray of float64, shape (G, B)
        The covariate's cell means Z̄.
    czbar_i : float
        Σ_b c_ib Z̄_ib of the cell.
    m, q : float
        Prior mean and precision (Normal prior: 0 and 1/variance; ICAR: as for θ).
    slice_sampler : bool
        Slice sampling (else ARS).
    eta, expeta : numpy.ndarray of float64, shape (G, B)
        Linear predictor and its exponential, updated in place.
    rng : numpy.ndarray of uint64, shape (4,)
        The stream the draw advances.
    work, wbuf, zbuf : numpy.ndarray
        Scratch (ARS, and weights and exponents of at least B entries).

    Returns
    -------
    tuple of (float, int)
        The change of ``beta[i]`` and the sampler status (β unchanged unless OK).
    """
    B = eta.shape[1]
    x = beta[i]
    for b in range(B):
        zbuf[b] = zbar[i, b]
        wbuf[b] = math.exp(eta[i, b] - x * zbar[i, b])
    if slice_sampler:
        new, status = slice_step(x, czbar_i, wbuf[:B], zbuf[:B], m, q, rng)
    else:
        new, status = ars_draw(x, czbar_i, wbuf[:B], zbuf[:B], m, q, rng, work)
    if status != STATUS_OK:
        return 0.0, status
    beta[i] = new
    shift_cell_eta_z(eta, expeta, zbar, i, new - x)
    return new - x, STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def draw_eps_cell(eps, i, counts, q, eta, expeta, update, rng, work, w1, ones):
    """Draw ε_ib for every b of cell i (Nunes 2018, eq. 2.14); η and exp η follow.

    Parameters
    ----------
    eps : numpy.ndarray of float64, shape (G, B)
        The errors; row i is overwritten.
    counts : numpy.ndarray of float64, shape (G, B)
        Observed counts.
    q : float
        τ_ε.
    i, eta, expeta, update, rng, work, w1, ones
        As in :func:`draw_field_cell`.

    Returns
    -------
    int
        The sampler status (entries after a failed one are left unchanged).
    """
    for b in range(eps.shape[1]):
        x = eps[i, b]
        if _mh_update(update, rng):  # exp(η) at the new value comes with the step
            new, wex, status = newton_mh_step(x, counts[i, b], expeta[i, b], 0.0, q, rng)
        else:
            new, status = ars_draw_single(x, counts[i, b], expeta[i, b] * math.exp(-x), 0.0, q,
                                          rng, work, w1, ones)
            wex = math.exp(eta[i, b] + (new - x))
        if status != STATUS_OK:
            return status
        eps[i, b] = new
        eta[i, b] += new - x
        expeta[i, b] = wex
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def icar_quadratic_add(field, i, indptr, indices, total):
    """Return ``total`` plus Σ over the neighbours j > i of cell i of (f_i − f_j)².

    Summed over every cell, this is fᵀ(D_W − W)f with each edge counted once.

    Parameters
    ----------
    field : numpy.ndarray of float64, shape (G,)
        θ, a column of φ, or a β field.
    i : int
        The cell.
    indptr, indices : numpy.ndarray of int64
        The lattice's adjacency (CSR).
    total : float
        The running sum the terms are added to, in order.

    Returns
    -------
    float
    """
    for t in range(indptr[i], indptr[i + 1]):
        j = indices[t]
        if j > i:
            d = field[i] - field[j]
            total += d * d
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def draw_precisions(data, s, sums):
    """Gamma draws of τ_θ, every τ_φ,p, τ_ε and each ICAR τ_β,c (eqs. 2.15–2.17, 2.24).

    The ICAR shape is ``a + (G − C)/2`` (module docstring).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: the precisions are overwritten in the order above, ``s.rng``
        advanced.
    sums : numpy.ndarray of float64, shape (2 + P + K,)
        The ICAR quadratic of θ, of each φ_·p, Σ ε², then each β_c·'s quadratic (read only
        under its ICAR prior).
    """
    G = s.counts.shape[0]
    P = s.alpha.shape[0]
    rank = G - data.component_size.shape[0]
    pr = data.priors
    s.tau_theta[0] = gamma(s.rng, pr[THETA_A] + 0.5 * rank, pr[THETA_B] + 0.5 * sums[0])
    for p in range(P):
        s.tau_phi[p] = gamma(s.rng, pr[PHI_A] + 0.5 * rank, pr[PHI_B] + 0.5 * sums[1 + p])
    draw_tau_eps(data, s, sums[1 + P])
    for c in range(data.beta_priors.shape[0]):
        if data.beta_priors[c] == BETA_ICAR:
            s.tau_beta[c] = gamma(s.rng, pr[BETA_A] + 0.5 * rank,
                                  pr[BETA_B] + 0.5 * sums[2 + P + c])


@njit(cache=True, nogil=True, error_model="numpy")
def draw_tau_eps(data, s, eps_squares):
    """Draw τ_ε from its Gamma conditional given Σ ε² (Nunes 2018, eq. 2.17).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: ``s.tau_eps`` is overwritten, ``s.rng`` advanced.
    eps_squares : float
        Σ_ib ε_ib².
    """
    G, B = s.counts.shape
    pr = data.priors
    s.tau_eps[0] = gamma(s.rng, pr[EPS_A] + 0.5 * G * B, pr[EPS_B] + 0.5 * eps_squares)


@njit(cache=True, nogil=True, error_model="numpy")
def scale_field_cell(field, i, comp_mean, component, factor, combos, eta, expeta, apply,
                     offset, total):
    """Cell i's part of a scale move of θ or φ_·p (:func:`_scale_move`).

    d = (f_i − mean of its component)·factor. ``apply`` False: return ``total`` plus the
    cell's change of Σ e^η, ``(e^d − 1)·Σ_{b in combos} e^η_ib``; True: move f_i by d and
    η_ib by d + ``offset`` (the intercept's shift; exp η follows) and return ``total``.

    Parameters
    ----------
    field : numpy.ndarray of float64, shape (G,)
        θ or a copy of φ's column p.
    i : int
        The cell.
    comp_mean : numpy.ndarray of float64, shape (C,)
        The field's mean in each component.
    component : numpy.ndarray of int64, shape (G,)
        Component of each cell.
    factor : float
        e^u − 1 of the move's log scale u.
    combos : numpy.ndarray of int64
        The combinations the field enters.
    eta, expeta : numpy.ndarray of float64, shape (G, B)
        Linear predictor and its exponential.
    apply : bool
        Make the move (else measure it).
    offset : float
        Shift of the intercept that the move makes with the field (applied only).
    total : float
        Running sum of the change of Σ e^η.

    Returns
    -------
    float
    """
    d = (field[i] - comp_mean[component[i]]) * factor
    if apply:
        field[i] += d
        shift_cell_eta(eta, expeta, combos, i, d + offset)
        return total
    exp_sum = 0.0
    for t in range(combos.shape[0]):
        exp_sum += expeta[i, combos[t]]
    return total + exp_sum * math.expm1(d)


@njit(cache=True, nogil=True, error_model="numpy")
def scale_beta_cell(beta, i, comp_mean, component, factor, zbar, counts, eta, expeta, apply,
                    total):
    """Cell i's part of a scale move of an ICAR β field (see :func:`scale_field_cell`).

    The log-likelihood change is ``Σ_b c_ib·d·Z̄_ib − e^η_ib·(e^{d·Z̄_ib} − 1)``.

    Parameters
    ----------
    beta : numpy.ndarray of float64, shape (G,)
        The covariate's field.
    zbar : numpy.ndarray of float64, shape (G, B)
        The covariate's cell means Z̄.
    counts : numpy.ndarray of float64, shape (G, B)
        Observed counts.
    i, comp_mean, component, factor, eta, expeta, apply, total
        As in :func:`scale_field_cell`.

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
    """Cell i's part of the scale move of ε (:func:`_scale_move_eps`; no centring).

    Parameters
    ----------
    eps : numpy.ndarray of float64, shape (G, B)
        The errors.
    i, factor, eta, expeta, apply, offset, total
        As in :func:`scale_field_cell`.

    Returns
    -------
    float
    """
    for b in range(eps.shape[1]):
        d = eps[i, b] * factor
        if apply:
            eps[i, b] += d
            eta[i, b] += d + offset
            expeta[i, b] = math.exp(eta[i, b])
        else:
            total += expeta[i, b] * math.expm1(d)
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def component_sums(field, data, out):
    """Write the sum of ``field`` over each connected component into ``out``.

    Parameters
    ----------
    field : numpy.ndarray of float64, shape (G,)
        One value per cell (θ, a column of φ, or β).
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    out : numpy.ndarray of float64, shape (C,)
        Overwritten with Σ_{i in c} field[i] for every component c (``data.component``).
    """
    out[:] = 0.0
    for i in range(field.shape[0]):
        out[data.component[i]] += field[i]


@njit(cache=True, nogil=True, error_model="numpy")
def component_means(field, data, out):
    """out[c] = mean of ``field`` over connected component c (the centre of a scale move)."""
    component_sums(field, data, out)
    for c in range(out.shape[0]):
        out[c] /= data.component_size[c]


@njit(cache=True, nogil=True, error_model="numpy")
def _update_theta(data, s, comp_sum):
    component_sums(s.theta, data, comp_sum)
    level_var = data.priors[LEVEL_VAR]
    for i in range(s.counts.shape[0]):
        m, q = icar_prior(s.theta, i, s.tau_theta[0], level_var, comp_sum, data)
        delta, status = draw_field_cell(s.theta, i, s.cell_counts[i], m, q, data.all_combos,
                                        s.eta, s.expeta, data.scalar_update, s.rng, s.work,
                                        s.w1, s.ones)
        if status != STATUS_OK:
            return status
        comp_sum[data.component[i]] += delta
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def _update_phi(data, s, comp_sum, column):
    G = s.counts.shape[0]
    level_var = data.priors[LEVEL_VAR]
    for p in range(s.alpha.shape[0]):
        combos = data.level_combos[data.level_combos_ptr[p]:data.level_combos_ptr[p + 1]]
        for i in range(G):
            column[i] = s.phi[i, p]
        component_sums(column, data, comp_sum)
        for i in range(G):
            m, q = icar_prior(column, i, s.tau_phi[p], level_var, comp_sum, data)
            delta, status = draw_field_cell(column, i, s.cell_level_counts[i, p], m, q,
                                            combos, s.eta, s.expeta, data.scalar_update, s.rng,
                                            s.work, s.w1, s.ones)
            if status != STATUS_OK:
                return status
            s.phi[i, p] = column[i]
            comp_sum[data.component[i]] += delta
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def mode_moves(data, s, column):
    """Block moves of θ and of each φ_·p along their smooth modes (:mod:`geosynth.model.modes`).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (``data.modes``, ``data.mode_eigenvalues``).
    s : GibbsState
        The chain's state, updated in place (``s.mode_work`` is scratch).
    column : numpy.ndarray of float64, shape (G,)
        Scratch for one column of φ.
    """
    G = s.counts.shape[0]
    observed = s.mode_work[3]
    observed[:] = s.cell_counts
    mode_move(s.theta, s.tau_theta[0], observed, data.all_combos, s.eta, s.expeta, data.modes,
              data.mode_eigenvalues, s.rng, s.mode_work)
    for p in range(s.alpha.shape[0]):
        for i in range(G):
            column[i] = s.phi[i, p]
            observed[i] = s.cell_level_counts[i, p]
        combos = data.level_combos[data.level_combos_ptr[p]:data.level_combos_ptr[p + 1]]
        if mode_move(column, s.tau_phi[p], observed, combos, s.eta, s.expeta, data.modes,
                     data.mode_eigenvalues, s.rng, s.mode_work):
            for i in range(G):
                s.phi[i, p] = column[i]


@njit(cache=True, nogil=True, error_model="numpy")
def _update_beta(data, s, comp_sum, c):
    """β_c·, the field of covariate ``c``, cell by cell (Nunes 2018, eqs. 2.22–2.23)."""
    beta = s.beta[c]
    icar = data.beta_priors[c] == BETA_ICAR
    if icar:
        component_sums(beta, data, comp_sum)
    for i in range(s.counts.shape[0]):
        if icar:
            m, q = icar_prior(beta, i, s.tau_beta[c], data.priors[BETA_VAR], comp_sum, data)
        else:
            m, q = 0.0, 1.0 / data.priors[BETA_VAR]
        delta, status = draw_beta_cell(beta, i, data.zbar[c], s.cell_czbar[c, i], m, q,
                                       data.beta_sampler == SAMPLER_SLICE, s.eta, s.expeta,
                                       s.rng, s.work, s.wbuf, s.zbuf)
        if status != STATUS_OK:
            return status
        if icar:
            comp_sum[data.component[i]] += delta
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def _update_eps(data, s):
    for i in range(s.counts.shape[0]):
        status = draw_eps_cell(s.eps, i, s.counts, s.tau_eps[0], s.eta, s.expeta,
                               data.scalar_update, s.rng, s.work, s.w1, s.ones)
        if status != STATUS_OK:
            return status
    return STATUS_OK


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


SCALE_TARGET_ACCEPTANCE = 0.44
SCALE_ADAPT_GAIN = 0.05
# np.int64, not int: numba types an int constant argument as a literal and compiles the callee
# once per literal (duplicate signatures, see bench/RESULTS.md); a global np.int64 is int64.
KIND_THETA, KIND_PHI, KIND_BETA = np.int64(0), np.int64(1), np.int64(2)
NO_LEVEL = np.int64(-1)  # level argument meaning "μ" / "every cell", not an α_p or φ_·p
_FIRST = np.int64(0)  # θ's level index and scale-move slot


@njit(cache=True, nogil=True, error_model="numpy")
def scale_proposal(s, slot):
    """Draw the log scale u ~ N(0, sd²) of a scale move; return ``(u, e^u − 1)``.

    Parameters
    ----------
    s : GibbsState
        The chain's state: ``s.scale_log_sd`` (float64 (2P + 3 + max(K, 1),)) gives log sd,
        ``s.rng`` (uint64 (4,)) is advanced.
    slot : int
        Index into ``s.scale_log_sd``: 0 for θ, 1 + p for φ_·p, 1 + P + c for β_c·, and
        1 + P + max(K, 1) for ε, then 2 + P + max(K, 1) for θ's error-absorbing move
        (:func:`split_scale_move`) and 3 + P + max(K, 1) + p for φ_·p's.

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

    The log acceptance ratio is ``Δ log L − 2·shape·u − rate·(τ' − τ)`` with τ' = τ·e^{−2u}
    (see :func:`_scale_move`). During burn-in (``adapt``) the proposal log-sd of ``slot``
    moves towards :data:`SCALE_TARGET_ACCEPTANCE`.

    Parameters
    ----------
    s : GibbsState
        The chain's state: ``s.rng`` (uint64 (4,)) is advanced, and ``s.scale_log_sd``
        (float64 (2P + 3 + max(K, 1),)) adapted when ``adapt``.
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


@njit(cache=True, nogil=True, error_model="numpy")
def scale_terms(field, comp_mean, kind, p, data, s):
    """``(Σ_i a_i·(f_i − f̄), Σ e^η)`` over what a scale move of θ or φ_·p touches.

    ``a_i`` is the observed count of the touched entries of cell i (θ_i: the cell's count;
    φ_ip: its count at level p) and f − f̄ the centred field. Both sums are what
    :func:`intercept_shift` needs.

    Parameters
    ----------
    field : numpy.ndarray of float64, shape (G,)
        θ or a copy of φ's column p.
    comp_mean : numpy.ndarray of float64, shape (C,)
        The field's mean in each component.
    kind : int
        ``KIND_THETA`` or ``KIND_PHI``.
    p : int
        The level of φ_·p.
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state (its counts and exp η are read).

    Returns
    -------
    linear : float
    exp_total : float
    """
    G = s.counts.shape[0]
    linear = 0.0
    exp_total = 0.0
    combos = data.all_combos
    if kind == KIND_PHI:
        combos = data.level_combos[data.level_combos_ptr[p]:data.level_combos_ptr[p + 1]]
    for i in range(G):
        a = s.cell_level_counts[i, p] if kind == KIND_PHI else s.cell_counts[i]
        linear += a * (field[i] - comp_mean[data.component[i]])
        for t in range(combos.shape[0]):
            exp_total += s.expeta[i, combos[t]]
    return linear, exp_total


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
    linear, exp_total : float
        From :func:`scale_terms`.
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


@njit(cache=True, nogil=True, error_model="numpy")
def eps_scale_terms(data, s):
    """``(Σ c_ib·ε_ib, Σ e^η_ib)``: :func:`scale_terms` for the scale move of ε."""
    linear = 0.0
    exp_total = 0.0
    for i in range(s.counts.shape[0]):
        for b in range(s.counts.shape[1]):
            linear += s.counts[i, b] * s.eps[i, b]
            exp_total += s.expeta[i, b]
    return linear, exp_total


@njit(cache=True, nogil=True, error_model="numpy")
def _scale_move(field, tau, shape, rate, kind, p, data, s, comp_sum, slot, adapt):
    """Metropolis move (f − f̄_c, τ) → (e^u (f − f̄_c), e^{−2u} τ), u ~ N(0, sd²); return τ.

    The ICAR quadratic form and the component means are unchanged, so the log acceptance
    ratio is the change in log likelihood plus ``−2·shape·u − rate·τ·(e^{−2u} − 1)`` (the
    Gamma prior, the ICAR normalising constant τ^{(G−C)/2} and the Jacobian e^{(G−C)u − 2u}
    combine to this). θ and φ_·p move with their intercept (μ, α_p) so that the expected count
    stays put (:func:`intercept_shift`). The move is exact; it breaks the strong posterior
    dependence between an ICAR field and its precision, which single-site Gibbs updates
    cannot (the "funnel"). During burn-in (``adapt``) the proposal sd is tuned towards 44%
    acceptance. ``p`` is the level of φ_·p, or for β (``kind`` :data:`KIND_BETA`) the
    covariate c of the field β_c·.
    """
    component_means(field, data, comp_sum)
    u, factor = scale_proposal(s, slot)
    offset = 0.0
    if kind == KIND_BETA:
        delta_loglik = _scale_pass(field, kind, p, data, s, comp_sum, factor, False, offset)
    else:
        linear, exp_total = scale_terms(field, comp_sum, kind, p, data, s)
        exp_change = _scale_pass(field, kind, p, data, s, comp_sum, factor, False, offset)
        offset, delta_loglik = intercept_shift(data, s, kind, p, linear, exp_change,
                                               exp_total, factor)
    accept, new_tau = scale_accept(s, slot, adapt, delta_loglik, u, tau, shape, rate)
    if not accept:
        return tau
    _scale_pass(field, kind, p, data, s, comp_sum, factor, True, offset)
    if kind != KIND_BETA:
        move_intercept(s, kind, p, offset)
    return new_tau


@njit(cache=True, nogil=True, error_model="numpy")
def _scale_pass(field, kind, p, data, s, comp_mean, factor, apply, offset):
    """Measure or make the scale move of :func:`_scale_move`.

    Measuring returns the log-likelihood change for β, the change of Σ e^η for θ and φ_·p.
    """
    combos = data.all_combos
    if kind == KIND_PHI:
        combos = data.level_combos[data.level_combos_ptr[p]:data.level_combos_ptr[p + 1]]
    total = 0.0
    for i in range(s.counts.shape[0]):
        if kind == KIND_BETA:
            total = scale_beta_cell(field, i, comp_mean, data.component, factor,
                                    data.zbar[p], s.counts, s.eta, s.expeta, apply, total)
            continue
        total = scale_field_cell(field, i, comp_mean, data.component, factor, combos, s.eta,
                                 s.expeta, apply, offset, total)
        if apply and kind == KIND_PHI:
            s.phi[i, p] = field[i]
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def _shift_cells_eps(data, s, comp_sum, column, p):
    """Exact per-cell Gibbs moves along (θ_i + k, ε_ib − k) — or (φ_ip + k, ε_ib − k), b ∋ p.

    ``p = -1`` moves θ, otherwise the field φ_·p (``column`` holds a copy of it). The
    likelihood is unchanged and k is Gaussian given the ICAR conditional of the field and the
    N(0, 1/τ_ε) priors of the errors: this removes the strong posterior coupling between a
    cell's spatial effect and its errors (the classic slow mixing of BYM-type models).
    """
    G, B = s.counts.shape
    tau_eps = s.tau_eps[0]
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
        n = 0
        if p < 0:
            for b in range(B):
                eps_sum += s.eps[i, b]
            n = B
        else:
            for t in range(data.level_combos_ptr[p], data.level_combos_ptr[p + 1]):
                eps_sum += s.eps[i, data.level_combos[t]]
                n += 1
        precision = q + n * tau_eps
        k = (q * (m - field[i]) + tau_eps * eps_sum) / precision
        k += standard_normal(s.rng) / math.sqrt(precision)
        field[i] += k
        comp_sum[data.component[i]] += k
        if p < 0:
            for b in range(B):
                s.eps[i, b] -= k
        else:
            s.phi[i, p] = field[i]
            for t in range(data.level_combos_ptr[p], data.level_combos_ptr[p + 1]):
                s.eps[i, data.level_combos[t]] -= k


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
def _shift_eps(data, s, p, intercept_var, intercept):
    """Exact Gibbs move along (intercept + k, ε_ib − k) for the combinations b of level p.

    ``p = -1`` shifts every ε_ib against μ. The likelihood is unchanged; k is Gaussian given
    the N(0, intercept_var) prior and the N(0, 1/τ_ε) priors of the shifted errors. This lets
    a sparsely observed combination's level move with its errors instead of against them.
    Returns k.
    """
    G, B = s.counts.shape
    tau = s.tau_eps[0]
    total = 0.0
    n = 0
    if p < 0:
        for i in range(G):
            for b in range(B):
                total += s.eps[i, b]
        n = G * B
    else:
        for t in range(data.level_combos_ptr[p], data.level_combos_ptr[p + 1]):
            for i in range(G):
                total += s.eps[i, data.level_combos[t]]
            n += G
    k = shift_eps_draw(total, n, tau, intercept_var, intercept, s.rng)
    if p < 0:
        for i in range(G):
            for b in range(B):
                s.eps[i, b] -= k
    else:
        for t in range(data.level_combos_ptr[p], data.level_combos_ptr[p + 1]):
            for i in range(G):
                s.eps[i, data.level_combos[t]] -= k
    return k


@njit(cache=True, nogil=True, error_model="numpy")
def _icar_quadratic(field, data):
    """θᵀ(D_W − W)θ = Σ over edges i~j (each once) of (θ_i − θ_j)²."""
    total = 0.0
    for i in range(field.shape[0]):
        total = icar_quadratic_add(field, i, data.indptr, data.indices, total)
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def _eps_squares(eps):
    total = 0.0
    for i in range(eps.shape[0]):
        for b in range(eps.shape[1]):
            total += eps[i, b] * eps[i, b]
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def _update_precisions(data, s, column):
    P = s.alpha.shape[0]
    n_covariates = data.beta_priors.shape[0]
    sums = np.zeros(2 + P + n_covariates)
    sums[0] = _icar_quadratic(s.theta, data)
    for p in range(P):
        for i in range(s.counts.shape[0]):
            column[i] = s.phi[i, p]
        sums[1 + p] = _icar_quadratic(column, data)
    sums[1 + P] = _eps_squares(s.eps)
    for c in range(n_covariates):
        if data.beta_priors[c] == BETA_ICAR:
            sums[2 + P + c] = _icar_quadratic(s.beta[c], data)
    draw_precisions(data, s, sums)


@njit(cache=True, nogil=True, error_model="numpy")
def update_tau_eps(data, s):
    """Draw τ_ε from its Gamma conditional (Nunes 2018, eq. 2.17).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    s : GibbsState
        The chain's state: ``s.tau_eps`` is overwritten, ``s.rng`` advanced.
    """
    draw_tau_eps(data, s, _eps_squares(s.eps))


@njit(cache=True, nogil=True, error_model="numpy")
def _scale_move_eps(data, s, slot, adapt):
    """Apply the scale move of :func:`_scale_move` to the iid errors ε and τ_ε (no centring).

    ε ~ N(0, 1/τ_ε) iid on G·B entries: the normalising constant τ^{GB/2}, the Jacobian
    e^{GB·u − 2u} and the Gamma prior again leave ``−2·shape·u − rate·(τ' − τ)``; μ moves
    with ε so that the expected count stays put (:func:`intercept_shift`).
    """
    u, factor = scale_proposal(s, slot)
    linear, exp_total = eps_scale_terms(data, s)
    exp_change = 0.0
    for i in range(s.counts.shape[0]):
        exp_change = scale_eps_cell(s.eps, i, factor, s.eta, s.expeta, False, 0.0, exp_change)
    offset, delta_loglik = intercept_shift(data, s, KIND_THETA, NO_LEVEL, linear, exp_change,
                                           exp_total, factor)
    accept, new_tau = scale_accept(s, slot, adapt, delta_loglik, u, s.tau_eps[0],
                                    data.priors[EPS_A], data.priors[EPS_B])
    if accept:
        s.tau_eps[0] = new_tau
        s.mu[0] += offset
        for i in range(s.counts.shape[0]):
            scale_eps_cell(s.eps, i, factor, s.eta, s.expeta, True, offset, 0.0)


@njit(cache=True, nogil=True, error_model="numpy")
def split_scale_move(field, tau, shape, rate, p, data, s, comp_sum, slot, adapt):
    """Scale move of (f − f̄_c, τ) with the errors taking up the change: η stays put; return τ.

    (f − f̄_c, ε_ib, τ) → (e^u (f − f̄_c), ε_ib − d_i, e^{−2u} τ) with d_i = (e^u − 1)(f_i − f̄),
    for the entries b the field enters. The likelihood is unchanged, so the ratio is that of
    :func:`_scale_move`'s priors plus the change of the errors' N(0, 1/τ_ε) log density; the
    map is an involution for u → −u with the Jacobian of the scale alone (the shear of ε is
    unit triangular). It moves the split of a cell's deviation between its structured and its
    unstructured part, the direction along which a weakly identified field's precision is slow.
    No exp: the move costs one pass over the touched entries. ``p`` is −1 for θ.
    """
    component_means(field, data, comp_sum)
    u, factor = scale_proposal(s, slot)
    combos = data.all_combos
    if p >= 0:
        combos = data.level_combos[data.level_combos_ptr[p]:data.level_combos_ptr[p + 1]]
    n = combos.shape[0]
    change = 0.0
    for i in range(field.shape[0]):
        d = (field[i] - comp_sum[data.component[i]]) * factor
        eps_sum = 0.0
        for t in range(n):
            eps_sum += s.eps[i, combos[t]]
        change += d * (2.0 * eps_sum - n * d)
    change *= 0.5 * s.tau_eps[0]
    accept, new_tau = scale_accept(s, slot, adapt, change, u, tau, shape, rate)
    if not accept:
        return tau
    for i in range(field.shape[0]):
        d = (field[i] - comp_sum[data.component[i]]) * factor
        field[i] += d
        for t in range(n):
            s.eps[i, combos[t]] -= d
        if p >= 0:
            s.phi[i, p] = field[i]
    return new_tau


@njit(cache=True, nogil=True, error_model="numpy")
def _scale_moves(data, s, comp_sum, column, adapt):
    """Scale moves of every ICAR field and of ε with its precision.

    Two per field, each exact and each breaking one posterior coupling of the precision: the
    log-normal one between a field's spread and its intercept (:func:`_scale_move`, with
    :func:`intercept_shift`), and the split of each cell's deviation between the field and its
    errors (:func:`split_scale_move`). Same cost per sweep; the gain in ESS is measured in
    ``bench/RESULTS.md`` (2026-11-24, "scale moves that keep the expected count").
    """
    pr = data.priors
    s.tau_theta[0] = _scale_move(s.theta, s.tau_theta[0], pr[THETA_A], pr[THETA_B],
                                 KIND_THETA, _FIRST, data, s, comp_sum, _FIRST, adapt)
    P = s.alpha.shape[0]
    split = 2 + P + s.beta.shape[0]
    s.tau_theta[0] = split_scale_move(s.theta, s.tau_theta[0], pr[THETA_A], pr[THETA_B],
                                      NO_LEVEL, data, s, comp_sum, split, adapt)
    G = s.counts.shape[0]
    for p in range(s.alpha.shape[0]):
        for i in range(G):
            column[i] = s.phi[i, p]
        s.tau_phi[p] = _scale_move(column, s.tau_phi[p], pr[PHI_A], pr[PHI_B],
                                   KIND_PHI, p, data, s, comp_sum, 1 + p, adapt)
        s.tau_phi[p] = split_scale_move(column, s.tau_phi[p], pr[PHI_A], pr[PHI_B],
                                        p, data, s, comp_sum, split + 1 + p, adapt)
    for c in range(data.beta_priors.shape[0]):
        if data.beta_priors[c] == BETA_ICAR:
            s.tau_beta[c] = _scale_move(s.beta[c], s.tau_beta[c], pr[BETA_A], pr[BETA_B],
                                        KIND_BETA, c, data, s, comp_sum, 1 + P + c,
                                        adapt)
    _scale_move_eps(data, s, 1 + P + s.beta.shape[0], adapt)


@njit(cache=True, nogil=True, error_model="numpy")
def sweep(data, s, comp_sum, column, adapt=False):
    """One sweep over every parameter; return 0 or 16·block + sampler status.

    Gibbs updates (ARS, slice, Gamma and Gaussian draws) in the order μ, α, θ, shift(μ, θ), φ,
    shift(α, φ), β (each covariate's field in turn), the block moves of θ and each φ_·p along
    their smooth modes (:func:`mode_moves`), ε, per-cell shift(θ_i, ε_i·) and
    shift(φ_ip, ε_ib), shift(μ, ε), shift(α, ε), precisions, followed by the scale moves of
    the ICAR fields and of ε (θ, φ_·p and ε with their intercept, θ and φ_·p a second time with
    the errors absorbing the change; see :func:`_scale_moves`). Every shift is an exact Gibbs
    draw along a direction of constant likelihood. The full conditionals are those of Nunes
    (2018), §2.1.1, eqs. 2.10–2.17, and §2.2.1, eqs. 2.22–2.24 (with the ICAR rank correction
    of the module docstring).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    s : GibbsState
        The chain's state, updated in place.
    comp_sum : numpy.ndarray of float64, shape (C,)
        Scratch for per-component sums.
    column : numpy.ndarray of float64, shape (G,)
        Scratch for one column of φ.
    adapt : bool, default False
        Burn-in: tune the proposal scales of the scale moves.

    Returns
    -------
    int
        ``STATUS_OK`` (0), or ``16 * block + status`` with ``block`` a ``B_*`` code (index into
        :data:`BLOCK_NAMES`) and ``status`` a ``STATUS_*`` code of
        :mod:`geosynth.samplers.family`; the state is then partly updated.
    """
    status = _update_mu(data, s)
    if status != STATUS_OK:
        return 16 * B_MU + status
    status = _update_alpha(data, s)
    if status != STATUS_OK:
        return 16 * B_ALPHA + status
    status = _update_theta(data, s, comp_sum)
    if status != STATUS_OK:
        return 16 * B_THETA + status
    s.mu[0] += shift_move(
        s.theta, data, data.priors[MU_VAR], data.priors[LEVEL_VAR], s.mu[0], comp_sum, s.rng
    )
    status = _update_phi(data, s, comp_sum, column)
    if status != STATUS_OK:
        return 16 * B_PHI + status
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
    for c in range(data.beta_priors.shape[0]):
        status = _update_beta(data, s, comp_sum, c)
        if status != STATUS_OK:
            return 16 * B_BETA + status
    mode_moves(data, s, column)
    status = _update_eps(data, s)
    if status != STATUS_OK:
        return 16 * B_EPS + status
    _shift_cells_eps(data, s, comp_sum, column, NO_LEVEL)
    for p in range(s.alpha.shape[0]):
        _shift_cells_eps(data, s, comp_sum, column, p)
    s.mu[0] += _shift_eps(data, s, NO_LEVEL, data.priors[MU_VAR], s.mu[0])
    for p in range(s.alpha.shape[0]):
        s.alpha[p] += _shift_eps(data, s, p, data.priors[ALPHA_VAR], s.alpha[p])
    _update_precisions(data, s, column)
    _scale_moves(data, s, comp_sum, column, adapt)
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def record(data, s, out_scalars, out_theta, out_beta, out_eta, row):
    """Write the identified summaries of the current state into row ``row`` of the outputs.

    Scalars: [μ + mean θ, α_p + mean φ_p (P), τ_θ, τ_φ (P), τ_ε, τ_β (max(K, 1))].

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    s : GibbsState
        The chain's state (read only).
    out_scalars : numpy.ndarray of float64, shape (rows, 2P + 3 + max(K, 1))
        Row ``row`` receives the scalars above.
    out_theta : numpy.ndarray of float32 or float64, shape (rows, G)
        Row ``row`` receives θ − mean θ.
    out_beta : numpy.ndarray of float32 or float64, shape (rows, max(K, 1), G)
        Row ``row`` receives β, one field per covariate.
    out_eta : numpy.ndarray of float32 or float64, shape (rows, G, B)
        Row ``row`` receives η.
    row : int
        Output row to write.
    """
    G = s.theta.shape[0]
    P = s.alpha.shape[0]
    theta_mean = s.theta.mean()
    out_scalars[row, 0] = s.mu[0] + theta_mean
    for p in range(P):
        phi_mean = 0.0
        for i in range(G):
            phi_mean += s.phi[i, p]
        out_scalars[row, 1 + p] = s.alpha[p] + phi_mean / G
        out_scalars[row, 2 + P + p] = s.tau_phi[p]
    out_scalars[row, 1 + P] = s.tau_theta[0]
    out_scalars[row, 2 + 2 * P] = s.tau_eps[0]
    for c in range(s.tau_beta.shape[0]):
        out_scalars[row, 3 + 2 * P + c] = s.tau_beta[c]
    B = s.eta.shape[1]
    for i in range(G):
        out_theta[row, i] = s.theta[i] - theta_mean
        for c in range(s.beta.shape[0]):
            out_beta[row, c, i] = s.beta[c, i]
        for b in range(B):
            out_eta[row, i, b] = s.eta[i, b]


LATENT_TAIL = 37.0  # stop enumerating where p(c) < e^-37·p(mode) (≈ 1e-16 relative mass)


@njit(cache=True, nogil=True, error_model="numpy")
def _latent_increment(c, eta, noisy, inv_scale):
    """Return log p(c + 1) − log p(c), p(c) ∝ Poisson(c; e^η)·exp(−|c̃ − c|·inv_scale)."""
    if c + 1.0 <= noisy:
        return eta - math.log(c + 1.0) + inv_scale
    return eta - math.log(c + 1.0) - inv_scale


@njit(cache=True, nogil=True, error_model="numpy")
def _latent_mode(eta, noisy, inv_scale):
    """Mode of the (discrete log-concave) latent-count conditional: the first c with inc(c) ≤ 0."""
    cap = 1e12
    low = math.ceil(min(math.exp(min(eta + inv_scale, 27.0)) - 1.0, cap))
    if noisy >= 1.0 and low <= noisy - 1.0:
        c = max(0.0, low)
    else:
        c = max(max(noisy, 0.0), math.ceil(min(math.exp(min(eta - inv_scale, 27.0)) - 1.0, cap)))
    # Guard against rounding at the region boundaries: walk to the exact first non-positive step.
    while c > 0.0 and _latent_increment(c - 1.0, eta, noisy, inv_scale) <= 0.0:
        c -= 1.0
    while _latent_increment(c, eta, noisy, inv_scale) > 0.0:
        c += 1.0
    return c


@njit(cache=True, nogil=True, error_model="numpy")
def _latent_mass(eta, noisy, inv_scale, mode):
    """Mass of the latent-count conditional relative to the mode, and the first c above it."""
    total = 1.0
    lp = 0.0
    c = mode
    while True:
        lp += _latent_increment(c, eta, noisy, inv_scale)
        c += 1.0
        if lp < -LATENT_TAIL:
            break
        total += math.exp(lp)
    hi = c
    lp = 0.0
    c = mode
    while c > 0.0:
        lp -= _latent_increment(c - 1.0, eta, noisy, inv_scale)
        c -= 1.0
        if lp < -LATENT_TAIL:
            break
        total += math.exp(lp)
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
    mode = _latent_mode(eta, noisy, inv_scale)
    total, _ = _latent_mass(eta, noisy, inv_scale, mode)
    log_mode = mode * eta - math.exp(eta) - math.lgamma(mode + 1.0) \
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
    mode = _latent_mode(eta, noisy, inv_scale)
    total, hi = _latent_mass(eta, noisy, inv_scale, mode)
    # Invert the CDF in the order of _latent_mass: mode, upwards, then downwards.
    u = uniform(rng) * total
    acc = 1.0
    if u < acc:
        return mode
    lp = 0.0
    c = mode
    while c + 1.0 < hi:
        lp += _latent_increment(c, eta, noisy, inv_scale)
        c += 1.0
        acc += math.exp(lp)
        if u < acc:
            return c
    lp = 0.0
    c = mode
    while c > 0.0:
        lp -= _latent_increment(c - 1.0, eta, noisy, inv_scale)
        c -= 1.0
        acc += math.exp(lp)
        if u < acc:
            return c
    return mode  # u landed in the rounding slack of ``total``


MARGINAL_TARGET_ACCEPTANCE = 0.44
# Slots of marginal_log_sd (α_p uses slot 3 + p); np.int64 for one specialisation (see _KIND_*).
_M_MU, _M_THETA, _M_EPS = np.int64(0), np.int64(1), np.int64(2)


@njit(cache=True, nogil=True, error_model="numpy")
def _marginal_shift(data, s, noisy, inv_scale, delta, p, i, lm, lm_new):
    """Change in Σ log m(η_ib) when η_ib += delta over the (i, b) touched by one parameter.

    ``p = -1, i = -1``: every (i, b) (μ); ``p >= 0``: the combinations of level p (α_p);
    ``i >= 0``: the combinations of cell i (θ_i). ``lm`` caches log m at the current η; the
    proposed values are written to ``lm_new`` (same (i, b) positions) for the caller to keep
    on acceptance.
    """
    G, B = s.counts.shape
    total = 0.0
    rows_lo, rows_hi = (0, G) if i < 0 else (i, i + 1)
    for r in range(rows_lo, rows_hi):
        if p < 0:
            for b in range(B):
                e = s.eta[r, b]
                if abs(e + delta) > ETA_LIMIT:
                    return -math.inf
                v = latent_log_marginal(e + delta, noisy[r, b], inv_scale)
                lm_new[r, b] = v
                total += v - lm[r, b]
        else:
            for t in range(data.level_combos_ptr[p], data.level_combos_ptr[p + 1]):
                b = data.level_combos[t]
                e = s.eta[r, b]
                if abs(e + delta) > ETA_LIMIT:
                    return -math.inf
                v = latent_log_marginal(e + delta, noisy[r, b], inv_scale)
                lm_new[r, b] = v
                total += v - lm[r, b]
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def _apply_shift(data, s, delta, p, i, lm, lm_new):
    """Add ``delta`` to η (rescale exp η, keep log m) over the (i, b) of _marginal_shift."""
    G, B = s.counts.shape
    factor = math.exp(delta)
    rows_lo, rows_hi = (0, G) if i < 0 else (i, i + 1)
    for r in range(rows_lo, rows_hi):
        if p < 0:
            for b in range(B):
                s.eta[r, b] += delta
                s.expeta[r, b] *= factor
                lm[r, b] = lm_new[r, b]
        else:
            for t in range(data.level_combos_ptr[p], data.level_combos_ptr[p + 1]):
                b = data.level_combos[t]
                s.eta[r, b] += delta
                s.expeta[r, b] *= factor
                lm[r, b] = lm_new[r, b]


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
def marginal_moves(data, s, noisy, inv_scale, comp_sum, adapt, lm, lm_new):
    """Random-walk Metropolis moves of μ, α, θ and ε with the true counts integrated out.

    Alternating "draw c | λ" and "draw λ | c" mixes slowly when the noise is large: the counts
    follow λ and λ follows the counts, so the level of a combination random-walks. These moves
    target the posterior of the parameters given the *released* counts, whose likelihood
    ``m(η) = Σ_c Poisson(c; e^η)·DL(c̃ − c)`` is computed by enumeration
    (:func:`latent_log_marginal`); the caller redraws c | λ right after them, so the pair of
    steps leaves the joint posterior invariant (a partially collapsed Gibbs scheme). Proposal
    scales are tuned towards 44% acceptance during burn-in. ``lm`` and ``lm_new`` are (G, B)
    scratch arrays (log m at the current and at the proposed η).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    s : GibbsState
        The chain's state; μ, α, θ, ε, η, exp η and ``s.marginal_log_sd`` (float64 (P + 3,))
        are updated in place.
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
    sd = math.exp(s.marginal_log_sd[_M_MU])
    delta = sd * standard_normal(s.rng)
    x = s.mu[0]
    log_ratio = _marginal_shift(data, s, noisy, inv_scale, delta, NO_LEVEL, NO_LEVEL, lm,
                                lm_new) - ((x + delta) ** 2 - x * x) / (2.0 * pr[MU_VAR])
    hit = math.log(uniform(s.rng)) < log_ratio
    if hit:
        s.mu[0] = x + delta
        _apply_shift(data, s, delta, NO_LEVEL, NO_LEVEL, lm, lm_new)
    _adapt(s, _M_MU, 1.0 if hit else 0.0, adapt)
    for p in range(s.alpha.shape[0]):
        sd = math.exp(s.marginal_log_sd[3 + p])
        delta = sd * standard_normal(s.rng)
        x = s.alpha[p]
        log_ratio = _marginal_shift(data, s, noisy, inv_scale, delta, p, NO_LEVEL, lm, lm_new) \
            - ((x + delta) ** 2 - x * x) / (2.0 * pr[ALPHA_VAR])
        hit = math.log(uniform(s.rng)) < log_ratio
        if hit:
            s.alpha[p] = x + delta
            _apply_shift(data, s, delta, p, NO_LEVEL, lm, lm_new)
        _adapt(s, 3 + p, 1.0 if hit else 0.0, adapt)
    # θ_i: ICAR conditional prior.
    component_sums(s.theta, data, comp_sum)
    sd = math.exp(s.marginal_log_sd[_M_THETA])
    accepted = 0.0
    for i in range(G):
        x = s.theta[i]
        m, q = icar_prior(s.theta, i, s.tau_theta[0], pr[LEVEL_VAR], comp_sum, data)
        delta = sd * standard_normal(s.rng)
        log_ratio = _marginal_shift(data, s, noisy, inv_scale, delta, NO_LEVEL, i, lm, lm_new) \
            - 0.5 * q * ((x + delta - m) ** 2 - (x - m) ** 2)
        if math.log(uniform(s.rng)) < log_ratio:
            s.theta[i] = x + delta
            comp_sum[data.component[i]] += delta
            _apply_shift(data, s, delta, NO_LEVEL, i, lm, lm_new)
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
            if abs(e + delta) > ETA_LIMIT:
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
    P = s.level_counts.shape[0]
    n_covariates = data.zbar.shape[0]
    for i in range(G):
        total = 0.0
        for b in range(B):
            c = draw_latent_count(s.eta[i, b], noisy[i, b], inv_scale, s.rng)
            s.counts[i, b] = c
            total += c
        s.cell_counts[i] = total
        for k in range(n_covariates):
            czbar = 0.0
            for b in range(B):
                czbar += s.counts[i, b] * data.zbar[k, i, b]
            s.cell_czbar[k, i] = czbar
    s.level_counts[:] = 0.0
    for p in range(P):
        for i in range(G):
            v = 0.0
            for t in range(data.level_combos_ptr[p], data.level_combos_ptr[p + 1]):
                v += s.counts[i, data.level_combos[t]]
            s.cell_level_counts[i, p] = v
            s.level_counts[p] += v


@njit(cache=True, nogil=True, error_model="numpy")
def run_chunk(data, s, n_sweeps, thin, out_scalars, out_theta, out_beta, out_eta, row, keep):
    """Run ``n_sweeps`` sweeps; after sweep t record if ``keep`` and (t + 1) % thin == 0.

    Chunks that do not keep draws are burn-in: there the scale moves tune their proposals.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    s : GibbsState
        The chain's state, updated in place.
    n_sweeps : int
        Number of sweeps of this chunk.
    thin : int
        Record every ``thin``-th sweep.
    out_scalars : numpy.ndarray of float64, shape (rows, 2P + 3 + max(K, 1))
        Recorded scalars, one row per kept draw (see :func:`record`).
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

    Returns
    -------
    status : int
        0, or 16·block + sampler status (see :func:`sweep`).
    rows_written : int
        Number of rows recorded from ``row`` on.
    """
    G = s.counts.shape[0]
    comp_sum = np.zeros(data.component_size.shape[0])
    column = np.empty(G)
    compute_eta(data, s)
    written = 0
    for t in range(n_sweeps):
        status = sweep(data, s, comp_sum, column, not keep)
        if status != STATUS_OK:
            return status, written
        if keep and (t + 1) % thin == 0:
            record(data, s, out_scalars, out_theta, out_beta, out_eta, row + written)
            written += 1
    return STATUS_OK, written


@njit(cache=True, nogil=True, error_model="numpy")
def run_chunk_noise_aware(data, s, n_sweeps, thin, out_scalars, out_theta, out_beta, out_eta,
                          row, keep, noisy, inv_scale, out_totals):
    """Run :func:`run_chunk` for a noise-aware fit of the released counts ``noisy``.

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
        Recorded scalars, one row per kept draw (see :func:`record`).
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
        0, or 16·block + sampler status (see :func:`sweep`).
    rows_written : int
        Number of rows recorded from ``row`` on.
    """
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


# Entry points of the block sampler (geosynth.model.block), which replaces the single-site
# updates of the ICAR fields and keeps these; same conditionals, same kernels, one home each.


@njit(cache=True, nogil=True, error_model="numpy")
def update_intercepts(data, s):
    """Single-site draws of μ, then of every α_p (as in :func:`sweep`); return a status.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    s : GibbsState
        The chain's state, updated in place.

    Returns
    -------
    int
        0, or ``16 * block + status`` (see :func:`sweep`).
    """
    status = _update_mu(data, s)
    if status != STATUS_OK:
        return 16 * B_MU + status
    status = _update_alpha(data, s)
    if status != STATUS_OK:
        return 16 * B_ALPHA + status
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def update_beta_single_site(data, s, comp_sum, c):
    """Single-site draws of every β_ic of covariate ``c`` (as in :func:`sweep`); return a status.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    s : GibbsState
        The chain's state, updated in place.
    comp_sum : numpy.ndarray of float64, shape (C,)
        Scratch for per-component sums.
    c : int
        The covariate.

    Returns
    -------
    int
        0, or ``16 * B_BETA + status`` (see :func:`sweep`).
    """
    status = _update_beta(data, s, comp_sum, c)
    if status != STATUS_OK:
        return 16 * B_BETA + status
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def update_errors(data, s, comp_sum, column, adapt):
    """Run the error part of :func:`sweep`: ε, its shifts, τ_ε and its scale move.

    Single-site draws of every ε_ib, the per-cell shifts (θ_i, ε_i·) and (φ_ip, ε_ib), the
    shifts (μ, ε) and (α_p, ε), the Gamma draw of τ_ε and the scale move of (ε, τ_ε), in the
    order of :func:`sweep`.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    s : GibbsState
        The chain's state, updated in place.
    comp_sum : numpy.ndarray of float64, shape (C,)
        Scratch for per-component sums.
    column : numpy.ndarray of float64, shape (G,)
        Scratch for one column of φ.
    adapt : bool
        Burn-in: tune the proposal scale of the scale move.

    Returns
    -------
    int
        0, or ``16 * B_EPS + status`` (see :func:`sweep`).
    """
    status = _update_eps(data, s)
    if status != STATUS_OK:
        return 16 * B_EPS + status
    _shift_cells_eps(data, s, comp_sum, column, NO_LEVEL)
    for p in range(s.alpha.shape[0]):
        _shift_cells_eps(data, s, comp_sum, column, p)
    s.mu[0] += _shift_eps(data, s, NO_LEVEL, data.priors[MU_VAR], s.mu[0])
    for p in range(s.alpha.shape[0]):
        s.alpha[p] += _shift_eps(data, s, p, data.priors[ALPHA_VAR], s.alpha[p])
    update_tau_eps(data, s)
    _scale_move_eps(data, s, 1 + s.alpha.shape[0] + s.beta.shape[0], adapt)
    return STATUS_OK
