"""Arrays of the numba Gibbs engine: the model's data, a chain's state, codes and records.

Model (Nunes 2018, §2.1, eqs. 2.1–2.9, and §2.2, eqs. 2.19–2.21)::

    c_ib ~ Poisson(λ_ib)
    log λ_ib = η_ib = log a_i + μ + Σ_k α_k[x_k(b)] + θ_i + Σ_k φ_ik[x_k(b)] + Σ_c β_ci·Z̄_cib + ε_ib

``a_i`` is the habitable fraction of cell i (:attr:`geosynth.Grid.habitable_fraction`), a fixed
exposure (offset): 1, so ``log a_i = 0``, for every cell of a lattice neither clipped nor with
no-go areas, where the model is exactly Nunes' (2018). A cell of which a region or a no-go area
leaves a tenth expects a tenth of the records of a whole cell of the same intensity; without
the offset the ICAR prior pulled its count towards its whole neighbours', and releases put
about twice their share of points in cells less than half habitable (along coasts, lake
shores and region edges). The fields then smooth the log intensity per unit of habitable area,
as the Poisson log-linear models of disease mapping do with their expected counts. A lattice
given an exposure (an areal one its areas' habitable area or population, any one its cells'
population: :meth:`geosynth.Grid.with_exposure`) has that as ``a_i`` instead
(:attr:`geosynth.Grid.exposure`).

Attribute levels other than each attribute's baseline are numbered p = 0..P-1, so α is a vector
of length P and φ a (G, P) array; ``combo_levels[b]`` lists the p's of combination b (-1 pads).
The continuous covariates c = 0..K-1 (Nunes 2018, §5: the β extension generalises to several)
each have a field β_c· (row c of the (K, G) array β) with its own prior, Normal or ICAR
(``ModelData.beta_priors[c]``), and under ICAR its own precision τ_β,c; every β update,
precision draw and scale move takes the covariate c as an explicit loop index or argument.
Without a covariate (K = 0) the state keeps one β row of zeros, the Z̄ one (G, B) slice of zeros,
and nothing updates them.

The engine is split by idea: this module (:class:`ModelData`, read-only and shared by the
chains; :class:`GibbsState`, one chain's mutable arrays including its counts), the full
conditionals (:mod:`geosynth.model.conditionals`), the moves that keep the likelihood or the
expected count (:mod:`geosynth.model.moves`), the single-site sweep and its run loop
(:mod:`geosynth.model.sweep`), the noise-aware fit (:mod:`geosynth.model.noise_aware`), the
chromatic sweep (:mod:`geosynth.model.parallel`) and the block sampler
(:mod:`geosynth.model.block`). Kernels are plain ``@njit(cache=True, nogil=True)`` functions
over arrays (NumPy error model: no zero-division checks in the hot loops); no Python objects.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = [
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
    "BLOCK_NAMES",
    "B_MU",
    "B_ALPHA",
    "B_THETA",
    "B_PHI",
    "B_BETA",
    "B_EPS",
    "ModelData",
    "sorted_adjacency",
    "upper_neighbours",
    "model_shape",
    "CountTables",
    "GibbsState",
    "level_combos_of",
    "combos_of",
    "compute_eta",
    "refresh_count_sums",
    "record",
    "recorded_scalars",
    "scalar_columns",
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
    indices: np.ndarray  # int64, sorted within each row
    upper: np.ndarray  # int64 (G,) first t in row i with indices[t] > i (upper_neighbours)
    component: np.ndarray  # int64 (G,)
    component_size: np.ndarray  # float64 (C,)
    zbar: np.ndarray  # float64 (max(K, 1), G, B) per covariate; zeros without one (K = 0)
    priors: np.ndarray  # float64 (12,) Priors.to_array()
    beta_priors: np.ndarray  # int64 (K,) BETA_NORMAL / BETA_ICAR per covariate; (0,) without β
    beta_sampler: int  # SAMPLER_ARS / SAMPLER_SLICE
    scalar_update: int  # UPDATE_EXACT (exact draws) / UPDATE_MH (Newton-proposal MH steps)
    modes: np.ndarray  # float64 (G, K + C') smoothest eigenvectors of D_W − W, then the
    #                    constants of C' components (modes.smooth_modes, modes.joint_components,
    #                    modes.with_component_constants)
    mode_eigenvalues: np.ndarray  # float64 (K,) eigenvalues of the K smooth modes
    mode_constant_size: np.ndarray  # float64 (C',) cells of those C' components
    coarse_ptr: np.ndarray  # int64 (n_aggregates + 1,) CSR of the nested cell aggregates
    coarse_cells: np.ndarray  # int64 their cells, finest level first (model.coarse)
    log_exposure: np.ndarray  # float64 (G,) log a_i, Grid.exposure (0: a whole cell)


def sorted_adjacency(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the CSR adjacency ``(indptr, indices)`` as int64, each row's indices sorted.

    The lattices already sort them; the kernels rely on it (:func:`upper_neighbours`).
    """
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    return indptr, np.ascontiguousarray(indices[np.lexsort((indices, rows))])


def upper_neighbours(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """For each cell i, the first position t of its row with ``indices[t] > i``.

    With each row sorted (:func:`sorted_adjacency`), row i's neighbours j < i are
    ``indices[indptr[i]:upper[i]]`` and its neighbours j > i ``indices[upper[i]:indptr[i + 1]]``:
    the kernels that visit each edge once, or only the neighbours already mapped in a pass
    over the cells, take a slice instead of testing every neighbour.
    """
    G = indptr.size - 1
    rows = np.repeat(np.arange(G), np.diff(indptr))
    below = np.bincount(rows, weights=indices <= rows, minlength=G)
    return np.ascontiguousarray(indptr[:-1] + below.astype(np.int64))


def model_shape(data: ModelData) -> tuple[int, int, int]:
    """``(G, B, P)`` of ``data``: cells, combinations and non-baseline levels."""
    return data.zbar.shape[1], data.zbar.shape[2], data.level_combos_ptr.shape[0] - 1


class CountTables(NamedTuple):
    """The counts of one fit and the sums the conditionals read (G cells, B, P, K covariates).

    A chain's :class:`GibbsState` starts from a copy: an exact fit never changes it, a
    noise-aware fit redraws the counts (the latent true counts) every sweep
    (:func:`~geosynth.model.noise_aware.update_latent_counts`).
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
    scale_log_sd: np.ndarray  # float64 (5P + 7 + 2·max(K, 1),) scale moves: θ, φ_p, β_c, ε,
    #                           then the error-absorbing ones of θ and φ_p, the remap moves
    #                           of θ and φ_p, the rough-part moves of θ and φ_p, the block
    #                           updates of θ, φ_p and β_c (block.block_slot), and the
    #                           errors' remap move (metropolis.scale_proposal)
    marginal_log_sd: np.ndarray  # float64 (3 + P + K + B,): noise_aware.marginal_slot_count
    cell_work: np.ndarray  # float64 (4, G) scratch of the scale cycles
    entry_work: np.ndarray  # float64 (4, G, B) scratch of ε's draws, remap and scale moves
    entry_flags: np.ndarray  # int8 (G·B,) scratch of ε's vectorised draws (update_eps)
    entry_index: np.ndarray  # int64 (G·B,) scratch of ε's vectorised draws (update_eps)
    mode_hessian: np.ndarray  # float64 ((1 + P)(K + C), same) the joint mode move's likelihood
    #                           Hessian (moves.mode_moves), frozen after burn-in
    mode_hessian_sweeps: np.ndarray  # int64 (1,) sweeps counted for the Hessian's refreshes
    field_work: np.ndarray  # float64 (3, 1 + P, G) scratch of the joint mode move


@njit(cache=True, nogil=True, error_model="numpy")
def level_combos_of(data, p):
    """Return the combinations holding non-baseline level p (a view of ``data.level_combos``)."""
    return data.level_combos[data.level_combos_ptr[p]:data.level_combos_ptr[p + 1]]


@njit(cache=True, nogil=True, error_model="numpy")
def combos_of(data, p):
    """Return the combinations a move of level p touches: every one for ``p < 0`` (θ, μ)."""
    return data.all_combos if p < 0 else level_combos_of(data, p)


@njit(cache=True, nogil=True, error_model="numpy")
def compute_eta(data, s):
    """Recompute η and exp(η) from the parameters (removes drift of the incremental updates).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    s : GibbsState
        The chain's state; ``s.eta`` and ``s.expeta`` (float64 (G, B)) are overwritten from
        the exposure ``data.log_exposure``, μ, α, θ, φ, β (with ``data.zbar``, covariate by
        covariate) and ε.
    """
    G, B = s.counts.shape
    K = data.combo_levels.shape[1]
    n_covariates = data.beta_priors.shape[0]
    for i in range(G):
        base = data.log_exposure[i] + s.mu[0] + s.theta[i]
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


@njit(cache=True, nogil=True, error_model="numpy")
def refresh_count_sums(data, s):
    """Recompute the sums of the chain's counts that the conditionals read.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (``zbar`` and the level combinations).
    s : GibbsState
        The chain's state; ``cell_counts`` (G,), ``cell_czbar`` (max(K, 1), G),
        ``level_counts`` (P,) and ``cell_level_counts`` (G, P) are overwritten from
        ``s.counts``.
    """
    G, B = s.counts.shape
    P = s.level_counts.shape[0]
    n_covariates = data.zbar.shape[0]
    for i in range(G):
        total = 0.0
        for b in range(B):
            total += s.counts[i, b]
        s.cell_counts[i] = total
        for k in range(n_covariates):
            czbar = 0.0
            for b in range(B):
                czbar += s.counts[i, b] * data.zbar[k, i, b]
            s.cell_czbar[k, i] = czbar
    s.level_counts[:] = 0.0
    for p in range(P):
        combos = level_combos_of(data, p)
        for i in range(G):
            v = 0.0
            for t in range(combos.shape[0]):
                v += s.counts[i, combos[t]]
            s.cell_level_counts[i, p] = v
            s.level_counts[p] += v


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


def scalar_columns(data: ModelData) -> np.ndarray:
    """Columns of the kernels' scalar record that a fit reports (the τ_β of ICAR priors only)."""
    P = model_shape(data)[2]
    icar = np.flatnonzero(data.beta_priors == BETA_ICAR)
    return np.concatenate([np.arange(2 * P + 3), 2 * P + 3 + icar]).astype(np.int64)


def recorded_scalars(data: ModelData) -> int:
    """Columns of the kernels' scalar record: μ, α (P), τ_θ, τ_φ (P), τ_ε, τ_β (max(K, 1))."""
    return 2 * model_shape(data)[2] + 3 + data.zbar.shape[0]
