"""Block (GMRF) sampler: each ICAR field drawn as one block, jointly with its precision.

Single-site Gibbs updates of an ICAR field mix slowly when neighbours are strongly coupled, and
the field and its precision τ are strongly dependent a posteriori (the "funnel"), so τ mixes
worst of all. Here every ICAR field x (θ, every φ_·p and β under the ICAR prior) is updated
jointly with its precision by the one-block scheme of Knorr-Held & Rue (2002), "On block
updating in Markov random field models for disease mapping", Scand. J. Statist. 29, §3–4, and
Rue & Held (2005), *Gaussian Markov Random Fields*, §4.1–4.2:

1. propose τ* = τ·f with π(f) ∝ 1 + 1/f on [1/F, F] (a proposal whose ratio
   q(τ | τ*)/q(τ* | τ) is 1);
2. propose x* from the Gaussian (GMRF) approximation of the full conditional of x at τ*,
   N(m, H⁻¹), built by ``NEWTON_STEPS`` Newton steps from the current x:
   ``H = τ*Q + diag(h(x_k)) + Σ_c q_c 1_c 1_cᵀ`` with ``h`` the likelihood's curvature at the
   expansion point x_k and ``x_{k+1} = H⁻¹(∇ log L(x_k) + h(x_k)·x_k)``;
3. accept (τ*, x*) jointly with the Metropolis–Hastings ratio of the full conditional of
   (x, τ), the reverse proposal density being the approximation at τ built in the same way
   from x*.

The approximation is a fixed function of its starting point, so the ratio is exact for any
number of Newton steps; more steps give a better proposal (higher acceptance) for more
factorisations. The component-mean prior N(0, level_var) on each connected component
(:func:`geosynth.model.conditionals.icar_prior`) is in the target exactly and in the proposal
too: islands (components of one cell) through the diagonal, each larger component c by the
rank-one term q_c 1_c 1_cᵀ (q_c = 1/(level_var·n_c²)) handled by the Woodbury identity (Rue &
Held 2005, §2.3.3). Components are disjoint blocks of Q, so the Woodbury system is diagonal:
one extra solve per factorisation gives A⁻¹u_c for every component at once, A = τQ + diag(h).

The likelihood of θ given everything else needs only W_i = Σ_b exp(η_ib − θ_i), so a Newton
step costs G exps (not G·B); likewise φ_·p with its combinations. β's likelihood is a sum over
b of terms exp(z_ib β_i), so its steps cost G·B exps.

μ, α, ε (and β under the Normal prior) keep the single-site and conjugate updates of
:mod:`geosynth.model.sweep` (:func:`~geosynth.model.sweep.update_intercepts`,
:func:`~geosynth.model.sweep.update_errors`, the exact shift moves). The proposal parameter F
of each field is tuned during burn-in towards 44% acceptance (stored in the state's
``scale_log_sd``, in the field's slot of :func:`block_slot`, as log(F − 1)); after burn-in it is
fixed.

Measured (Nunes 2018 scenario, 5 records per cell, B = 12, G = 400, 2 chains of 2,000 sweeps,
min bulk ESS/s over μ, α, every τ, θ and λ): single-site ``gibbs`` 5.6; this sampler with the
single-site sweep kept (``HYBRID``) 1.5; with the block moves replacing the single-site field
updates 0.07 (the τ's had ESS 2–7). With ε in the model the field's conditional is far from
Gaussian: at fixed τ (F = 1) only 20–60% of block proposals were accepted at G = 100 with 2
Newton steps (up to ~90% for some φ with 8 steps), and each costs two sparse factorisations
per Newton step (2 ms at G = 1,600, 21 ms at G = 6,400). Hence ``HYBRID = True`` and
``NEWTON_STEPS = 2``; the sampler is correct (SBC, two-sample agreement) but not faster.

The sparse factorisations are those of :mod:`geosynth.model.gmrf` (numba LDLᵀ over a
fill-reducing ordering computed once per fit). Normals come from the chain's xoshiro256**
stream, so the same seed gives the same draws whatever the number of threads.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from geosynth.model.borrow import borrowed
from geosynth.model.gmrf import (
    SparsePattern,
    build_pattern,
    fill_matrix,
    ldl_draw,
    ldl_log_det,
    ldl_numeric,
    ldl_solve,
)
from geosynth.model.metropolis import SCALE_ADAPT_GAIN, SCALE_TARGET_ACCEPTANCE
from geosynth.model.moves import shift_move
from geosynth.model.state import (
    ALPHA_VAR,
    BETA_A,
    BETA_B,
    BETA_ICAR,
    BETA_VAR,
    LEVEL_VAR,
    MU_VAR,
    PHI_A,
    PHI_B,
    THETA_A,
    THETA_B,
    compute_eta,
    record,
)
from geosynth.model.sweep import sweep, update_beta_single_site, update_errors, update_intercepts
from geosynth.samplers.family import STATUS_OK
from geosynth.samplers.rng import standard_normal, uniform

__all__ = [
    "BlockStructure",
    "BlockWork",
    "build_block_structure",
    "block_settings",
    "new_block_work",
    "block_slot",
    "gaussian_approximation",
    "block_update",
    "block_sweep",
    "run_chunk_block",
    "NEWTON_STEPS",
    "KIND_THETA",
    "KIND_PHI",
    "KIND_BETA",
    "KIND_GAUSSIAN",
]

KIND_THETA, KIND_PHI, KIND_BETA, KIND_GAUSSIAN = 0, 1, 2, 3
# Newton steps of each GMRF approximation (forward and reverse): measured, see bench_samplers.
NEWTON_STEPS = 2
# Sign of the reverse proposal density in the MH ratio: 1. Tests set −1 (a planted error that
# the calibration tests must catch) through block_settings; never change it otherwise.
PROPOSAL_SIGN = 1.0
# Each block sweep starts with a whole single-site sweep (True) or replaces the single-site
# updates of the fields (False): measured, see the module docstring.
HYBRID = True
LOG_F_RANGE = (math.log(1e-3), math.log(20.0))
# Status of a failed factorisation (never returned: such a proposal is rejected).
STATUS_NOT_POSITIVE = 1


class BlockStructure(NamedTuple):
    """Read-only arrays of the block sampler for one lattice (shared by the chains)."""

    pattern: SparsePattern
    component: np.ndarray  # int64 (G,) component of the cell at each permuted position
    big: np.ndarray  # bool (C,) components of two or more cells (Woodbury terms)


class BlockWork(NamedTuple):
    """Per-chain scratch of the block updates (vectors in the permuted order)."""

    a_val: np.ndarray  # float64 (nnz_a,)
    l_idx: np.ndarray  # int64 (nnz_l,)
    l_val: np.ndarray  # float64 (nnz_l,)
    pivots: np.ndarray  # float64 (G,) D of L D Lᵀ
    y: np.ndarray  # float64 (G,) factorisation scratch
    stack: np.ndarray  # int64 (G,)
    flag: np.ndarray  # int64 (G,)
    l_count: np.ndarray  # int64 (G,)
    counts: np.ndarray  # float64 (G,) field's counts (θ, φ) per position
    weight: np.ndarray  # float64 (G,) W = Σ_b exp(η_ib − x_i) per position
    current: np.ndarray  # float64 (G,) current field
    proposal: np.ndarray  # float64 (G,) proposed field
    point: np.ndarray  # float64 (G,) Newton expansion point
    mean: np.ndarray  # float64 (G,) mean of the approximation
    curvature: np.ndarray  # float64 (G,)
    gradient: np.ndarray  # float64 (G,)
    diag: np.ndarray  # float64 (G,)
    solved: np.ndarray  # float64 (G,) A⁻¹u for every component at once
    tmp: np.ndarray  # float64 (G,)
    comp_a: np.ndarray  # float64 (C,) per-component scratch
    comp_b: np.ndarray  # float64 (C,)
    schur: np.ndarray  # float64 (C,) 1 + u_cᵀ A⁻¹ u_c
    zperm: np.ndarray  # float64 (G, B) Z̄ in the permuted order (β), or (0, 0)
    vbuf: np.ndarray  # float64 (G, B) exp(η_ib − z_ib β_i) (β), or (0, 0)
    cbuf: np.ndarray  # float64 (G, B) counts in the permuted order (β), or (0, 0)


def build_block_structure(data) -> BlockStructure:
    """Order the lattice and analyse the sparsity of its ICAR precision once per fit.

    Parameters
    ----------
    data : ModelData
        The fit's arrays (:func:`geosynth.model.fit.build_model_data`).

    Returns
    -------
    BlockStructure
        The symbolic factorisation and the permuted component labels.
    """
    pattern = build_pattern(data.indptr, data.indices)
    return BlockStructure(
        pattern=pattern,
        component=np.ascontiguousarray(data.component[pattern.perm]),
        big=data.component_size >= 2,
    )


def block_settings(data) -> tuple:
    """Return the block sampler's extra arguments of :func:`run_chunk_block` for ``data``.

    Parameters
    ----------
    data : ModelData
        The fit's arrays.

    Returns
    -------
    tuple
        ``(BlockStructure, NEWTON_STEPS, PROPOSAL_SIGN, HYBRID)``.
    """
    return build_block_structure(data), NEWTON_STEPS, PROPOSAL_SIGN, HYBRID


@njit(cache=True, nogil=True)
def new_block_work(data, st):
    """Allocate the per-chain scratch of the block updates.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (G cells, B combinations).
    st : BlockStructure
        The lattice's symbolic factorisation.

    Returns
    -------
    BlockWork
        Zeroed scratch arrays.
    """
    G, B = data.zbar.shape[1], data.zbar.shape[2]
    C = data.component_size.shape[0]
    nnz_l = st.pattern.l_ptr[G]
    nnz_a = st.pattern.a_row.shape[0]
    gb = (G, B) if np.any(data.beta_priors == BETA_ICAR) else (0, 0)
    return BlockWork(
        np.zeros(nnz_a), np.zeros(nnz_l, dtype=np.int64), np.zeros(nnz_l), np.ones(G),
        np.zeros(G), np.zeros(G, dtype=np.int64), np.zeros(G, dtype=np.int64),
        np.zeros(G, dtype=np.int64), np.zeros(G), np.zeros(G), np.zeros(G), np.zeros(G),
        np.zeros(G), np.zeros(G), np.zeros(G), np.zeros(G), np.zeros(G), np.zeros(G),
        np.zeros(G), np.zeros(C), np.zeros(C), np.ones(C), np.zeros(gb), np.zeros(gb),
        np.zeros(gb),
    )


@njit(cache=True, nogil=True, error_model="numpy")
def _likelihood_terms(kind, x, w, grad, curv):
    """Log likelihood of field ``x`` (permuted) given the rest; gradient, curvature into arrays.

    θ, φ: Σ c_k x_k − W_k e^{x_k}; β: Σ_b c z x − V e^{z x}; KIND_GAUSSIAN (tests):
    Σ c_k x_k − W_k x_k²/2 (a Gaussian likelihood).
    """
    n = x.shape[0]
    total = 0.0
    if kind == KIND_BETA:
        B = w.zperm.shape[1]
        for k in range(n):
            g = 0.0
            h = 0.0
            for b in range(B):
                z = w.zperm[k, b]
                e = w.vbuf[k, b] * math.exp(z * x[k])
                g += z * (w.cbuf[k, b] - e)
                h += z * z * e
                total += w.cbuf[k, b] * z * x[k] - e
            grad[k] = g
            curv[k] = h
    elif kind == KIND_GAUSSIAN:
        for k in range(n):
            grad[k] = w.counts[k] - w.weight[k] * x[k]
            curv[k] = w.weight[k]
            total += w.counts[k] * x[k] - 0.5 * w.weight[k] * x[k] * x[k]
    else:
        for k in range(n):
            e = w.weight[k] * math.exp(x[k])
            grad[k] = w.counts[k] - e
            curv[k] = e
            total += w.counts[k] * x[k] - e
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def _log_likelihood(kind, x, w):
    """Log likelihood of field ``x`` (permuted) given the rest (see _likelihood_terms)."""
    return _likelihood_terms(kind, x, w, w.gradient, w.curvature)


@njit(cache=True, nogil=True, error_model="numpy")
def _woodbury_solve(st, w, q_sqrt, x):
    """Replace ``x`` = A⁻¹b by H⁻¹b, H = A + Σ_c u_c u_cᵀ (u_c = √q_c·1_c, c large)."""
    comp = st.component
    w.comp_a[:] = 0.0
    for k in range(x.shape[0]):
        w.comp_a[comp[k]] += x[k]
    for k in range(x.shape[0]):
        c = comp[k]
        if st.big[c]:
            x[k] -= w.solved[k] * q_sqrt[c] * w.comp_a[c] / w.schur[c]


@njit(cache=True, nogil=True, error_model="numpy")
def _level_precisions(data, level_var, q_sqrt):
    """√q_c = 1/(√level_var·n_c) of every component's mean prior into ``q_sqrt``."""
    for c in range(q_sqrt.shape[0]):
        q_sqrt[c] = 1.0 / (math.sqrt(level_var) * data.component_size[c])


@njit(cache=True, nogil=True, error_model="numpy")
def gaussian_approximation(data, st, w, kind, tau, level_var, q_sqrt, start, n_steps):
    """GMRF approximation N(``w.mean``, H⁻¹) of a field's full conditional at precision τ.

    Runs ``n_steps`` Newton steps from ``start`` (permuted order); on return ``w``'s factor
    holds A = τQ + diag(h) of the last expansion point and ``w.solved``/``w.schur`` its
    Woodbury terms, so that H = A + Σ_c q_c 1_c 1_cᵀ over components of two or more cells
    (islands' q_c is in the diagonal).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    st : BlockStructure
        The lattice's symbolic factorisation.
    w : BlockWork
        Scratch; ``w.counts``/``w.weight`` (θ, φ) or ``w.vbuf``/``w.cbuf``/``w.zperm`` (β)
        describe the likelihood.
    kind : int
        ``KIND_THETA``, ``KIND_PHI``, ``KIND_BETA`` or ``KIND_GAUSSIAN``.
    tau : float
        Precision of the ICAR prior.
    level_var : float
        Prior variance of the field's mean within each component.
    q_sqrt : numpy.ndarray of float64, shape (C,)
        √q_c per component (:func:`_level_precisions`).
    start : numpy.ndarray of float64, shape (G,)
        First expansion point (permuted order); not modified.
    n_steps : int
        Newton steps (>= 1), each one factorisation.

    Returns
    -------
    bool
        False if a matrix was not numerically positive definite (the proposal is refused).
    """
    n = start.shape[0]
    comp = st.component
    point = w.point
    point[:] = start
    for _ in range(n_steps):
        _likelihood_terms(kind, point, w, w.gradient, w.curvature)
        for k in range(n):
            c = comp[k]
            h = w.curvature[k]
            w.diag[k] = h if st.big[c] else h + q_sqrt[c] * q_sqrt[c]
            w.mean[k] = w.gradient[k] + h * point[k]
        fill_matrix(st.pattern, tau, w.diag, w.a_val)
        if not ldl_numeric(st.pattern, w.a_val, w.l_idx, w.l_val, w.pivots, w.y, w.stack,
                           w.flag, w.l_count):
            return False
        for k in range(n):
            c = comp[k]
            w.solved[k] = q_sqrt[c] if st.big[c] else 0.0
        ldl_solve(st.pattern, w.l_idx, w.l_val, w.pivots, w.solved)
        w.schur[:] = 1.0
        for k in range(n):
            c = comp[k]
            if st.big[c]:
                w.schur[c] += q_sqrt[c] * w.solved[k]
        ldl_solve(st.pattern, w.l_idx, w.l_val, w.pivots, w.mean)
        _woodbury_solve(st, w, q_sqrt, w.mean)
        point[:] = w.mean
    return True


@njit(cache=True, nogil=True, error_model="numpy")
def _approximation_log_density(st, w, tau, q_sqrt, x):
    """Log N(x; w.mean, H⁻¹) up to the constant −(G/2)·log 2π (H of the last approximation)."""
    n = x.shape[0]
    comp = st.component
    pattern = st.pattern
    for k in range(n):
        w.tmp[k] = x[k] - w.mean[k]
    quad = 0.0
    for k in range(n):
        for p in range(pattern.a_ptr[k], pattern.a_ptr[k + 1]):
            i = pattern.a_row[p]
            if i == k:
                quad += w.a_val[p] * w.tmp[k] * w.tmp[k]
            else:
                quad += 2.0 * w.a_val[p] * w.tmp[i] * w.tmp[k]
    w.comp_a[:] = 0.0
    for k in range(n):
        w.comp_a[comp[k]] += w.tmp[k]
    log_det = ldl_log_det(w.pivots)
    for c in range(w.comp_a.shape[0]):
        if st.big[c]:
            quad += q_sqrt[c] * q_sqrt[c] * w.comp_a[c] * w.comp_a[c]
            log_det += math.log(w.schur[c])
    return 0.5 * log_det - 0.5 * quad


@njit(cache=True, nogil=True, error_model="numpy")
def _draw_approximation(st, w, q_sqrt, rng, out):
    """Draw ``out`` ~ N(w.mean, H⁻¹) (Woodbury correction of an N(0, A⁻¹) draw)."""
    n = out.shape[0]
    comp = st.component
    for k in range(n):
        out[k] = standard_normal(rng)
    ldl_draw(st.pattern, w.l_idx, w.l_val, w.pivots, out)
    w.comp_a[:] = 0.0
    for k in range(n):
        w.comp_a[comp[k]] += out[k]
    for c in range(w.comp_b.shape[0]):
        w.comp_b[c] = standard_normal(rng) if st.big[c] else 0.0
    for k in range(n):
        c = comp[k]
        if st.big[c]:
            out[k] -= w.solved[k] * (q_sqrt[c] * w.comp_a[c] - w.comp_b[c]) / w.schur[c]
        out[k] += w.mean[k]


@njit(cache=True, nogil=True, error_model="numpy")
def _prior_terms(st, x, q_sqrt, comp_scratch):
    """xᵀQx (ICAR form, each edge once) and Σ_c q_c (Σ_{k∈c} x_k)² for field ``x`` (permuted)."""
    pattern = st.pattern
    icar = 0.0
    for k in range(x.shape[0]):
        for p in range(pattern.a_ptr[k], pattern.a_ptr[k + 1]):
            if pattern.a_offdiag[p] != 0.0:
                d = x[pattern.a_row[p]] - x[k]
                icar += d * d
    comp_scratch[:] = 0.0
    for k in range(x.shape[0]):
        comp_scratch[st.component[k]] += x[k]
    level = 0.0
    for c in range(comp_scratch.shape[0]):
        level += q_sqrt[c] * q_sqrt[c] * comp_scratch[c] * comp_scratch[c]
    return icar, level


@njit(cache=True, nogil=True, error_model="numpy")
def _draw_factor(big_f, rng):
    """Draw f from π(f) ∝ 1 + 1/f on [1/F, F] (a mixture of uniform and log-uniform)."""
    width = big_f - 1.0 / big_f
    log_width = 2.0 * math.log(big_f)
    if uniform(rng) * (width + log_width) < width:
        return 1.0 / big_f + width * uniform(rng)
    return math.exp(-math.log(big_f) + log_width * uniform(rng))


@njit(cache=True, nogil=True, error_model="numpy")
def block_update(data, st, w, kind, tau, shape, rate, level_var, q_sqrt, n_steps, rng, log_f,
                 sign):
    """Joint MH update of (τ, field) (Knorr-Held & Rue 2002); return ``(accepted, τ)``.

    On entry ``w.current`` holds the field (permuted) and the likelihood terms are set in
    ``w`` (see :func:`gaussian_approximation`); on acceptance ``w.proposal`` holds the new
    field. ``log_f`` is log(F − 1) of the τ proposal (F = τ's largest relative step).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    st : BlockStructure
        The lattice's symbolic factorisation.
    w : BlockWork
        Scratch holding the current field and the likelihood terms.
    kind : int
        ``KIND_*`` of the field.
    tau : float
        Current precision.
    shape, rate : float
        Gamma(shape, rate) prior of τ.
    level_var : float
        Prior variance of the field's mean within each component.
    q_sqrt : numpy.ndarray of float64, shape (C,)
        √q_c per component.
    n_steps : int
        Newton steps of each approximation.
    rng : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.
    log_f : float
        log(F − 1) of the τ proposal; F = 1 fixes τ (a pure field block update).
    sign : float
        1.0; −1.0 flips the sign of the reverse proposal density in the MH ratio (a planted
        error for the calibration tests: never use it otherwise).

    Returns
    -------
    accepted : bool
        Whether (τ*, x*) was accepted.
    tau : float
        The new τ (the old one if rejected).
    """
    G = w.current.shape[0]
    rank = G - data.component_size.shape[0]
    big_f = 1.0 + math.exp(log_f)
    f = _draw_factor(big_f, rng) if log_f > -30.0 else 1.0
    tau_new = tau * f
    # Forward: approximation at τ* from the current field; draw x* and its density.
    if not gaussian_approximation(data, st, w, kind, tau_new, level_var, q_sqrt, w.current,
                                  n_steps):
        return False, tau
    _draw_approximation(st, w, q_sqrt, rng, w.proposal)
    log_forward = _approximation_log_density(st, w, tau_new, q_sqrt, w.proposal)
    u = uniform(rng)
    # Reverse: approximation at τ from x*, evaluated at the current field.
    if not gaussian_approximation(data, st, w, kind, tau, level_var, q_sqrt, w.proposal,
                                  n_steps):
        return False, tau
    log_reverse = _approximation_log_density(st, w, tau, q_sqrt, w.current)
    loglik_new = _log_likelihood(kind, w.proposal, w)
    loglik_old = _log_likelihood(kind, w.current, w)
    icar_new, level_new = _prior_terms(st, w.proposal, q_sqrt, w.comp_a)
    icar_old, level_old = _prior_terms(st, w.current, q_sqrt, w.comp_a)
    log_ratio = (loglik_new - loglik_old
                 + (0.5 * rank + shape - 1.0) * math.log(f) - rate * (tau_new - tau)
                 - 0.5 * (tau_new * icar_new - tau * icar_old) - 0.5 * (level_new - level_old)
                 + sign * log_reverse - log_forward)
    if math.log(u) < log_ratio:
        return True, tau_new
    return False, tau


@njit(cache=True, nogil=True, error_model="numpy")
def block_slot(s, kind, p):
    """Slot in ``s.scale_log_sd`` of the block update's log(F − 1) for θ (p unused), φ_·p or β_p.

    The block updates' own slots, after the rough-part moves' (layout in
    :func:`~geosynth.model.metropolis.scale_proposal`). Until 2026-12 they reused the slots of
    the single-site sweep's scale moves with the intercept (0, 1 + p, 1 + P + c), which the
    hybrid sweep tunes as log σ of u in the same burn-in: one value tuned towards two meanings.
    """
    P = s.alpha.shape[0]
    first = 5 + 4 * P + s.beta.shape[0]
    if kind == KIND_THETA:
        return first
    if kind == KIND_PHI:
        return first + 1 + p
    return first + 1 + P + p


@njit(cache=True, nogil=True, error_model="numpy")
def _adapt_log_f(s, slot, accepted, adapt):
    """Robbins–Monro step of log(F − 1) towards SCALE_TARGET_ACCEPTANCE during burn-in."""
    if adapt:
        hit = 1.0 if accepted else 0.0
        v = s.scale_log_sd[slot] + SCALE_ADAPT_GAIN * (hit - SCALE_TARGET_ACCEPTANCE)
        s.scale_log_sd[slot] = min(max(v, LOG_F_RANGE[0]), LOG_F_RANGE[1])


@njit(cache=True, nogil=True, error_model="numpy")
def _field_block(data, st, w, s, kind, p, q_sqrt, adapt, n_steps, sign):
    """Run :func:`block_update` for θ (p = −1), φ_·p or β of covariate p; apply an acceptance."""
    G, B = s.counts.shape
    perm = st.pattern.perm
    pr = data.priors
    slot = block_slot(s, kind, p)
    if kind == KIND_THETA:
        tau, shape, rate, level_var = s.tau_theta[0], pr[THETA_A], pr[THETA_B], pr[LEVEL_VAR]
    elif kind == KIND_PHI:
        tau, shape, rate, level_var = s.tau_phi[p], pr[PHI_A], pr[PHI_B], pr[LEVEL_VAR]
    else:
        tau, shape, rate, level_var = s.tau_beta[p], pr[BETA_A], pr[BETA_B], pr[BETA_VAR]
    _level_precisions(data, level_var, q_sqrt)
    lo, hi = (data.level_combos_ptr[p], data.level_combos_ptr[p + 1]) \
        if kind == KIND_PHI else (0, 0)
    for k in range(G):
        i = perm[k]
        if kind == KIND_THETA:
            x = s.theta[i]
            total = 0.0
            for b in range(B):
                total += s.expeta[i, b]
            w.counts[k] = s.cell_counts[i]
            w.weight[k] = total * math.exp(-x)
        elif kind == KIND_PHI:
            x = s.phi[i, p]
            total = 0.0
            for t in range(lo, hi):
                total += s.expeta[i, data.level_combos[t]]
            w.counts[k] = s.cell_level_counts[i, p]
            w.weight[k] = total * math.exp(-x)
        else:
            x = s.beta[p, i]
            for b in range(B):
                z = data.zbar[p, i, b]
                w.zperm[k, b] = z
                w.cbuf[k, b] = s.counts[i, b]
                w.vbuf[k, b] = math.exp(s.eta[i, b] - z * x)
        w.current[k] = x
    log_f = s.scale_log_sd[slot]
    accepted, tau_new = block_update(data, st, w, kind, tau, shape, rate, level_var, q_sqrt,
                                     n_steps, s.rng, log_f, sign)
    _adapt_log_f(s, slot, accepted, adapt)
    if not accepted:
        return
    for k in range(G):
        i = perm[k]
        delta = w.proposal[k] - w.current[k]
        if kind == KIND_THETA:
            s.theta[i] = w.proposal[k]
            factor = math.exp(delta)
            for b in range(B):
                s.eta[i, b] += delta
                s.expeta[i, b] *= factor
        elif kind == KIND_PHI:
            s.phi[i, p] = w.proposal[k]
            factor = math.exp(delta)
            for t in range(lo, hi):
                b = data.level_combos[t]
                s.eta[i, b] += delta
                s.expeta[i, b] *= factor
        else:
            s.beta[p, i] = w.proposal[k]
            for b in range(B):
                s.eta[i, b] += delta * data.zbar[p, i, b]
                s.expeta[i, b] = math.exp(s.eta[i, b])
    if kind == KIND_THETA:
        s.tau_theta[0] = tau_new
    elif kind == KIND_PHI:
        s.tau_phi[p] = tau_new
    else:
        s.tau_beta[p] = tau_new


@njit(cache=True, nogil=True, error_model="numpy")
def block_sweep(data, st, w, s, comp_sum, column, q_sqrt, adapt, n_steps, sign, hybrid):
    """One sweep of the block sampler; return 0 or 16·block + sampler status.

    Order: μ, α (single site), (τ_θ, θ) block, shift(μ, θ), for each p: (τ_φp, φ_·p) block and
    shift(α_p, φ_·p), then β (ICAR: (τ_β, β) block; Normal: single site), then ε with its
    shifts, τ_ε and the (ε, τ_ε) scale move (:func:`geosynth.model.sweep.update_errors`).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C components).
    st : BlockStructure
        The lattice's symbolic factorisation.
    w : BlockWork
        The chain's scratch (:func:`new_block_work`).
    s : GibbsState
        The chain's state, updated in place.
    comp_sum : numpy.ndarray of float64, shape (C,)
        Scratch for per-component sums.
    column : numpy.ndarray of float64, shape (G,)
        Scratch for one column of φ.
    q_sqrt : numpy.ndarray of float64, shape (C,)
        Scratch for √q_c.
    adapt : bool
        Burn-in: tune the τ proposals and the ε scale move.
    n_steps : int
        Newton steps per GMRF approximation.
    sign : float
        1.0 (see :func:`block_update`).
    hybrid : bool
        Start with a whole single-site sweep (:func:`geosynth.model.sweep.sweep`) instead
        of the single-site updates of μ, α, β and ε alone.

    Returns
    -------
    int
        ``STATUS_OK`` (0) or ``16 * block + status`` (see :func:`geosynth.model.sweep.sweep`).
    """
    G = s.counts.shape[0]
    pr = data.priors
    if hybrid:
        status = sweep(data, s, comp_sum, column, adapt)
    else:
        status = update_intercepts(data, s)
    if status != STATUS_OK:
        return status
    _field_block(data, st, w, s, KIND_THETA, -1, q_sqrt, adapt, n_steps, sign)
    s.mu[0] += shift_move(s.theta, data, pr[MU_VAR], pr[LEVEL_VAR], s.mu[0], comp_sum, s.rng)
    for p in range(s.alpha.shape[0]):
        _field_block(data, st, w, s, KIND_PHI, p, q_sqrt, adapt, n_steps, sign)
        for i in range(G):
            column[i] = s.phi[i, p]
        delta = shift_move(column, data, pr[ALPHA_VAR], pr[LEVEL_VAR], s.alpha[p], comp_sum,
                           s.rng)
        s.alpha[p] += delta
        for i in range(G):
            s.phi[i, p] = column[i]
    for c in range(data.beta_priors.shape[0]):
        if data.beta_priors[c] == BETA_ICAR:
            _field_block(data, st, w, s, KIND_BETA, c, q_sqrt, adapt, n_steps, sign)
        elif not hybrid:
            status = update_beta_single_site(data, s, comp_sum, c)
            if status != STATUS_OK:
                return status
    if hybrid:
        return STATUS_OK
    return update_errors(data, s, comp_sum, column, adapt)


@njit(cache=True, nogil=True, error_model="numpy")
def run_chunk_block(data, s, n_sweeps, thin, out_scalars, out_theta, out_beta, out_eta, row,
                    keep, st, n_steps, sign, hybrid):
    """Run ``n_sweeps`` block sweeps; record as :func:`geosynth.model.sweep.run_chunk` does.

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
        Record draws; False marks a burn-in chunk (the proposals tune).
    st : BlockStructure
        The lattice's symbolic factorisation (:func:`build_block_structure`).
    n_steps : int
        Newton steps per GMRF approximation (:data:`NEWTON_STEPS`).
    sign : float
        1.0 (see :func:`block_update`).
    hybrid : bool
        Start every sweep with a whole single-site sweep (:data:`HYBRID`).

    Returns
    -------
    status : int
        0, or 16·block + sampler status.
    rows_written : int
        Number of rows recorded from ``row`` on.
    """
    data, s = borrowed(data), borrowed(s)  # no reference counts in the sweeps (borrow.py)
    G = s.counts.shape[0]
    C = data.component_size.shape[0]
    comp_sum = np.zeros(C)
    q_sqrt = np.zeros(C)
    column = np.empty(G)
    w = new_block_work(data, st)
    compute_eta(data, s)
    written = 0
    for t in range(n_sweeps):
        status = block_sweep(data, st, w, s, comp_sum, column, q_sqrt, not keep, n_steps, sign,
                             hybrid)
        if status != STATUS_OK:
            return status, written
        if keep and (t + 1) % thin == 0:
            record(data, s, out_scalars, out_theta, out_beta, out_eta, row + written)
            written += 1
    return STATUS_OK, written
