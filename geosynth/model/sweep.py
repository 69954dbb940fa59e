"""The single-site Gibbs sweep of the engine and its run loop (numba kernels).

One :func:`sweep` updates every parameter once, in the order its docstring gives, from the full
conditionals of :mod:`geosynth.model.conditionals` and the moves of :mod:`geosynth.model.moves`;
:func:`run_chunk` runs sweeps and records draws. The block sampler
(:mod:`geosynth.model.block`) reuses the parts of the sweep that it keeps through
:func:`update_intercepts`, :func:`update_beta_single_site` and :func:`update_errors`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from geosynth.model.borrow import borrowed
from geosynth.model.coarse import coarse_shifts
from geosynth.model.conditionals import (
    update_alpha,
    update_beta,
    update_eps,
    update_mu,
    update_phi,
    update_precisions,
    update_tau_eps,
    update_theta,
)
from geosynth.model.moves import (
    error_scale_moves,
    mode_moves,
    scale_moves,
    shift_errors,
    shift_level_intercepts,
    shift_move,
)
from geosynth.model.state import (
    B_ALPHA,
    B_BETA,
    B_EPS,
    B_MU,
    B_PHI,
    B_THETA,
    LEVEL_VAR,
    MU_VAR,
    compute_eta,
    record,
)
from geosynth.samplers.family import STATUS_OK

__all__ = [
    "sweep",
    "run_chunk",
    "update_intercepts",
    "update_beta_single_site",
    "update_errors",
]


@njit(cache=True, nogil=True, error_model="numpy")
def sweep(data, s, comp_sum, column, adapt=False):
    """One sweep over every parameter; return 0 or 16·block + sampler status.

    Gibbs updates (ARS, slice, Gamma and Gaussian draws) in the order μ, α, θ, shift(μ, θ), φ,
    shift(α, φ), β (each covariate's field in turn), the joint block move of θ and every φ_·p
    along their smooth modes (:func:`~geosynth.model.moves.mode_moves`), the exact shifts of
    θ and every φ_·p over nested cell aggregates
    (:func:`~geosynth.model.coarse.coarse_shifts`), ε, per-cell shift(θ_i, ε_i·) and
    shift(φ_ip, ε_ib), shift(μ, ε), shift(α, ε), τ_ε and the ICAR τ_β, followed by the scale
    moves of the ICAR fields and of ε (each round of θ's and φ_·p's begins with the Gibbs draw
    of the field's precision; θ, φ_·p and ε with their intercept, θ and φ_·p a second time
    with the errors absorbing the change, and θ, φ_·p and ε remapped through their
    conditionals; see :func:`~geosynth.model.moves.scale_moves`). Every shift
    is an exact Gibbs draw along a direction of constant likelihood. The full conditionals are
    those of Nunes (2018), §2.1.1, eqs. 2.10–2.17, and §2.2.1, eqs. 2.22–2.24 (with the ICAR
    rank correction of :mod:`geosynth.model.conditionals`).

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
        :data:`~geosynth.model.state.BLOCK_NAMES`) and ``status`` a ``STATUS_*`` code of
        :mod:`geosynth.samplers.family`; the state is then partly updated.
    """
    status = update_mu(data, s)
    if status != STATUS_OK:
        return 16 * B_MU + status
    status = update_alpha(data, s)
    if status != STATUS_OK:
        return 16 * B_ALPHA + status
    status = update_theta(data, s, comp_sum)
    if status != STATUS_OK:
        return 16 * B_THETA + status
    s.mu[0] += shift_move(
        s.theta, data, data.priors[MU_VAR], data.priors[LEVEL_VAR], s.mu[0], comp_sum, s.rng
    )
    status = update_phi(data, s, comp_sum, column)
    if status != STATUS_OK:
        return 16 * B_PHI + status
    shift_level_intercepts(data, s, comp_sum, column)
    for c in range(data.beta_priors.shape[0]):
        status = update_beta(data, s, comp_sum, c)
        if status != STATUS_OK:
            return 16 * B_BETA + status
    mode_moves(data, s, adapt)
    status = coarse_shifts(data, s)
    if status != STATUS_OK:
        return 16 * B_THETA + status
    status = update_eps(data, s)
    if status != STATUS_OK:
        return 16 * B_EPS + status
    shift_errors(data, s, comp_sum, column)
    update_precisions(data, s)
    scale_moves(data, s, comp_sum, column, adapt)
    return STATUS_OK


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

    Returns
    -------
    status : int
        0, or 16·block + sampler status (see :func:`sweep`).
    rows_written : int
        Number of rows recorded from ``row`` on.
    """
    data, s = borrowed(data), borrowed(s)  # no reference counts in the sweeps (borrow.py)
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
    status = update_mu(data, s)
    if status != STATUS_OK:
        return 16 * B_MU + status
    status = update_alpha(data, s)
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
    status = update_beta(data, s, comp_sum, c)
    if status != STATUS_OK:
        return 16 * B_BETA + status
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def update_errors(data, s, comp_sum, column, adapt):
    """Run the error part of :func:`sweep`: ε, its shifts, τ_ε and its remap and scale moves.

    Single-site draws of every ε_ib, the per-cell shifts (θ_i, ε_i·) and (φ_ip, ε_ib), the
    shifts (μ, ε) and (α_p, ε), the Gamma draw of τ_ε, then the remap move of (ε, τ_ε) and the
    rounds of its scale move with μ (:func:`~geosynth.model.moves.error_scale_moves`), in the
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
    status = update_eps(data, s)
    if status != STATUS_OK:
        return 16 * B_EPS + status
    shift_errors(data, s, comp_sum, column)
    update_tau_eps(data, s)
    error_scale_moves(data, s, adapt)
    return STATUS_OK
