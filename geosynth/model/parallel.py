"""Chromatic (graph-coloured) Gibbs kernels: the per-cell updates of θ, φ, β and ε in parallel.

The lattice is coloured so that no two neighbours share a colour (:func:`greedy_colouring`: 4
colours on a queen lattice numbered row by row, at most max degree + 1 on any graph). Given
everything else, the likelihood of cell i involves only row i of η, and the ICAR density of a
field factorises over the cells of one colour into ``N(neighbour mean, 1/(n_i·τ))`` terms, so
the cells of one colour can be drawn at once, with ``numba.prange``.

Exactness and the component-mean prior. The serial sampler also puts a N(0, ``level_var``)
prior on each field's mean within every connected component (see
:func:`geosynth.model.kernels._icar_prior`). That term ``L_c(S_c)`` of the component sum
``S_c`` couples *all* cells of a component, so same-coloured cells are not conditionally
independent through it. We keep the scheme exact with one Metropolis–Hastings correction per
(colour, component) block K: every cell of K is drawn in parallel from its conditional
*without* the level term, ``π_i(x) ∝ lik_i(x)·N(x; neighbour mean, 1/(n_i τ))``; this is an
independence proposal for the block whose target is ``∏ π_i(θ_i) · L_c(S_c)``, so the
acceptance ratio is ``L_c(S_c') / L_c(S_c)`` (the change of the component sum only). The
blocks of different components are conditionally independent, so each is accepted or rejected
on its own (one uniform of the chain's stream each); a rejected block reverts its cells.
Because ``level_var·n_c²`` is large, ``S_c`` barely moves and the acceptance is ≈ 1. For a
singleton component the level term involves the one cell only; it stays in the cell's
conditional (an exact Gibbs draw, no correction). The component-mean direction itself is
still moved by the exact shift moves of :func:`geosynth.model.kernels.sweep`.

Reproducibility. Each cell owns a xoshiro256** stream (row i of ``cell_streams``, (G, 4)
uint64, derived from the chain's stream by :func:`cell_streams_for`) used only for its own
draws, and all reductions run serially after the parallel loops, so the draws do not depend
on the number of threads or their scheduling. ARS / slice scratch is allocated per block of
:data:`BLOCK` cells inside the parallel loop (its contents never carry over between draws).

The parallel kernels are compiled with ``parallel=True`` and are not cached (numba cannot
cache them reliably); the serial sampler is :func:`geosynth.model.kernels.run_chunk`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from geosynth.model.kernels import (
    _ALPHA_VAR,
    _B_ALPHA,
    _B_BETA,
    _B_EPS,
    _B_MU,
    _B_PHI,
    _B_THETA,
    _BETA_VAR,
    _LEVEL_VAR,
    _MU_VAR,
    BETA_ICAR,
    BETA_NONE,
    SAMPLER_SLICE,
    _component_sums,
    _icar_prior,
    _record,
    _scale_moves,
    _shift_cells_eps,
    _shift_eps,
    _shift_move,
    _update_alpha,
    _update_mu,
    _update_precisions,
    compute_eta,
)
from geosynth.samplers.ars import MAX_ABSCISSAE, ars_draw, ars_draw_single
from geosynth.samplers.family import STATUS_OK
from geosynth.samplers.rng import uniform
from geosynth.samplers.slice import slice_step

__all__ = [
    "BLOCK",
    "greedy_colouring",
    "colour_classes",
    "cell_streams_for",
    "sweep_chromatic",
    "run_chunk_parallel",
]

BLOCK = 32  # cells per parallel work item (scratch is allocated once per block)

_FIELD_THETA, _FIELD_PHI, _FIELD_BETA = 0, 1, 2


@njit(cache=True, nogil=True)
def greedy_colouring(indptr, indices):
    """Colour a graph greedily in cell order: each cell gets the smallest colour unused nearby.

    Parameters
    ----------
    indptr : numpy.ndarray of int64, shape (G + 1,)
        CSR row pointers of the adjacency.
    indices : numpy.ndarray of int64
        CSR column indices (neighbours of each cell).

    Returns
    -------
    numpy.ndarray of int64, shape (G,)
        Colour of each cell, 0..n_colours − 1. Proper (no two neighbours share a colour), at most
        max degree + 1 colours; 4 on a queen (and 2 on a rook) lattice numbered row by row.
    """
    G = indptr.shape[0] - 1
    colour = np.full(G, -1, dtype=np.int64)
    max_degree = 0
    for i in range(G):
        max_degree = max(max_degree, indptr[i + 1] - indptr[i])
    used = np.full(max_degree + 2, -1, dtype=np.int64)  # used[c] == i: colour c taken near i
    for i in range(G):
        for t in range(indptr[i], indptr[i + 1]):
            c = colour[indices[t]]
            if c >= 0:
                used[c] = i
        c = 0
        while used[c] == i:
            c += 1
        colour[i] = c
    return colour


def colour_classes(colour: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group cells by colour as CSR: ``(colour_ptr (n_colours + 1,), colour_cells (G,))``, int64.

    Cells of one colour are listed in increasing order.
    """
    colour = np.asarray(colour, dtype=np.int64)
    order = np.argsort(colour, kind="stable").astype(np.int64)
    sizes = np.bincount(colour, minlength=int(colour.max(initial=-1)) + 1)
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), order


def cell_streams_for(stream: np.ndarray, n_cells: int) -> np.ndarray:
    """Per-cell xoshiro256** states (n_cells, 4) uint64 derived from a chain's stream (4,).

    One :meth:`numpy.random.SeedSequence.generate_state` call seeded by the chain's state (the
    hashed output of SeedSequence, as :func:`geosynth.samplers.rng.make_streams` uses per
    child, but without spawning G children in Python: 0.4 s at G = 6,400).
    """
    seed = np.random.SeedSequence([int(v) for v in np.asarray(stream, dtype=np.uint64)])
    states = seed.generate_state(4 * n_cells, dtype=np.uint64).reshape(n_cells, 4)
    states[~states.any(axis=1), 0] = np.uint64(1)  # the all-zero state is xoshiro's fixed point
    return states


@njit(nogil=True, error_model="numpy")
def _local_prior(field, i, tau, level_var, comp_sum, data):
    """Prior part of cell i's proposal: ICAR only, plus the level term in a singleton component."""
    if data.component_size[data.component[i]] <= 1.0:
        return _icar_prior(field, i, tau, level_var, comp_sum, data)
    lo, hi = data.indptr[i], data.indptr[i + 1]
    neighbour_sum = 0.0
    for t in range(lo, hi):
        neighbour_sum += field[data.indices[t]]
    return neighbour_sum / (hi - lo), (hi - lo) * tau


@njit(nogil=True, error_model="numpy", parallel=True)
def _draw_class(data, s, kind, p, field, cells, tau, level_var, comp_sum, cell_streams, old,
                status):
    """Draw every cell of one colour class of ``field`` (θ, φ_·p or β) in parallel.

    ``field`` is a contiguous (G,) view or copy of the field (for φ a column copy; the caller
    writes it back into ``s.phi``). Old values go to ``old``; per-cell statuses to ``status``
    (indexed by position in ``cells``). The loop body is a function call (see
    :func:`_update_eps_parallel`).
    """
    n = cells.shape[0]
    n_blocks = (n + BLOCK - 1) // BLOCK
    for blk in prange(n_blocks):
        _draw_block(data, s, kind, p, field, cells, blk * BLOCK, min(n, (blk + 1) * BLOCK), tau,
                    level_var, comp_sum, cell_streams, old, status)


@njit(nogil=True, error_model="numpy")
def _draw_block(data, s, kind, p, field, cells, lo, hi, tau, level_var, comp_sum, cell_streams,
                old, status):
    """Draw the cells ``cells[lo:hi]`` of one colour class (one parallel work item)."""
    B = data.counts.shape[1]
    work = np.empty((5, MAX_ABSCISSAE))
    w1 = np.empty(1)
    ones = np.ones(1)
    wbuf = np.empty(max(B, 1))
    zbuf = np.empty(max(B, 1))
    for j in range(lo, hi):
        i = cells[j]
        rng = cell_streams[i]
        x = field[i]
        old[i] = x
        m, q = _local_prior(field, i, tau, level_var, comp_sum, data)
        if kind == _FIELD_BETA:
            for b in range(B):
                zbuf[b] = data.zbar[i, b]
                wbuf[b] = math.exp(s.eta[i, b] - x * data.zbar[i, b])
            if data.beta_prior != BETA_ICAR:
                m, q = 0.0, 1.0 / data.priors[_BETA_VAR]
            if data.beta_sampler == SAMPLER_SLICE:
                new, st = slice_step(x, data.cell_czbar[i], wbuf[:B], zbuf[:B], m, q, rng)
            else:
                new, st = ars_draw(x, data.cell_czbar[i], wbuf[:B], zbuf[:B], m, q, rng,
                                   work)
        else:
            total = 0.0
            if kind == _FIELD_THETA:
                for b in range(B):
                    total += s.expeta[i, b]
                a = data.cell_counts[i]
            else:
                for t in range(data.level_combos_ptr[p], data.level_combos_ptr[p + 1]):
                    total += s.expeta[i, data.level_combos[t]]
                a = data.cell_level_counts[i, p]
            total *= math.exp(-x)
            new, st = ars_draw_single(x, a, total, m, q, rng, work, w1, ones)
        status[j] = st
        if st != STATUS_OK:
            continue
        field[i] = new
        _shift_row(data, s, kind, p, i, new - x)


@njit(nogil=True, error_model="numpy")
def _shift_row(data, s, kind, p, i, delta):
    """Add field change ``delta`` of cell i to its η entries (and keep exp η in step)."""
    B = data.counts.shape[1]
    if kind == _FIELD_THETA:
        factor = math.exp(delta)
        for b in range(B):
            s.eta[i, b] += delta
            s.expeta[i, b] *= factor
    elif kind == _FIELD_PHI:
        factor = math.exp(delta)
        for t in range(data.level_combos_ptr[p], data.level_combos_ptr[p + 1]):
            b = data.level_combos[t]
            s.eta[i, b] += delta
            s.expeta[i, b] *= factor
    else:
        for b in range(B):
            s.eta[i, b] += delta * data.zbar[i, b]
            s.expeta[i, b] = math.exp(s.eta[i, b])


@njit(nogil=True, error_model="numpy")
def _update_field_chromatic(data, s, kind, p, field, tau, level_var, colour_ptr, colour_cells,
                            cell_streams, comp_sum, comp_delta, old, status):
    """Colour-by-colour update of one field with the per-component MH correction.

    ``kind`` and ``p`` must reach this function as run-time integers (not literals), or numba
    compiles one specialisation per call site (the parallel ones take seconds each). Returns a
    sampler status.
    """
    use_level = kind != _FIELD_BETA or data.beta_prior == BETA_ICAR  # component-mean prior
    n_colours = colour_ptr.shape[0] - 1
    n_comp = data.component_size.shape[0]
    for k in range(n_colours):
        cells = colour_cells[colour_ptr[k]:colour_ptr[k + 1]]
        if use_level:
            _component_sums(field, data, comp_sum)
        _draw_class(data, s, kind, p, field, cells, tau, level_var, comp_sum, cell_streams, old,
                    status)
        for j in range(cells.shape[0]):
            if status[j] != STATUS_OK:
                return status[j]
        if not use_level:
            continue
        comp_delta[:] = 0.0
        for j in range(cells.shape[0]):
            i = cells[j]
            comp_delta[data.component[i]] += field[i] - old[i]
        for c in range(n_comp):
            n_c = data.component_size[c]
            if n_c <= 1.0 or comp_delta[c] == 0.0:
                continue
            before = comp_sum[c]
            after = before + comp_delta[c]
            log_ratio = -(after * after - before * before) / (2.0 * level_var * n_c * n_c)
            if log_ratio >= 0.0 or math.log(uniform(s.rng)) < log_ratio:
                continue
            comp_delta[c] = math.nan  # rejected: revert this component's cells below
        for j in range(cells.shape[0]):
            i = cells[j]
            if math.isnan(comp_delta[data.component[i]]):
                delta = old[i] - field[i]
                field[i] = old[i]
                _shift_row(data, s, kind, p, i, delta)
    return STATUS_OK


@njit(nogil=True, error_model="numpy")
def _eps_block(data, s, cell_streams, status, lo, hi):
    """Draw ε_ib for the cells lo..hi − 1 (one parallel work item), each from its own stream."""
    B = data.counts.shape[1]
    q = s.tau_eps[0]
    eps, eta, expeta, counts = s.eps, s.eta, s.expeta, data.counts
    work = np.empty((5, MAX_ABSCISSAE))
    w1 = np.empty(1)
    ones = np.ones(1)
    for i in range(lo, hi):
        rng = cell_streams[i]
        status[i] = STATUS_OK
        for b in range(B):
            x = eps[i, b]
            weight = expeta[i, b] * math.exp(-x)
            new, st = ars_draw_single(x, counts[i, b], weight, 0.0, q, rng, work, w1, ones)
            if st != STATUS_OK:
                status[i] = st
                break
            eps[i, b] = new
            eta[i, b] += new - x
            expeta[i, b] = math.exp(eta[i, b])


@njit(nogil=True, error_model="numpy", parallel=True)
def _update_eps_parallel(data, s, cell_streams, status):
    """ε_ib | η are independent across (i, b): one work item per block of cells.

    The loop body is a function call: written inline, numba 0.65's parfor lowering dropped the
    stores into the state's arrays (``s.eps[i, b] = …``); the call keeps them.
    """
    G = data.counts.shape[0]
    n_blocks = (G + BLOCK - 1) // BLOCK
    for blk in prange(n_blocks):
        _eps_block(data, s, cell_streams, status, blk * BLOCK, min(G, (blk + 1) * BLOCK))


@njit(nogil=True, error_model="numpy")
def sweep_chromatic(data, s, comp_sum, column, adapt, colour_ptr, colour_cells, cell_streams):
    """:func:`geosynth.model.kernels.sweep` with chromatic parallel θ, φ, β and ε updates.

    Same order of blocks and the same serial moves (μ, α, shifts, precisions, scale moves) as
    the serial sweep; θ, φ_·p and β are updated colour by colour (:func:`_draw_class`, with
    the MH correction of the module docstring), ε over cells in parallel. Returns 0 or
    16·block + sampler status.
    """
    G = data.counts.shape[0]
    n_comp = data.component_size.shape[0]
    comp_delta = np.empty(n_comp)
    old = np.empty(G)
    status = np.zeros(G, dtype=np.int64)
    pr = data.priors
    # Field codes as run-time integers: literal arguments would compile a parallel kernel per
    # call site (see _update_field_chromatic).
    code = np.arange(3)
    theta_kind, phi_kind, beta_kind, zero = code[_FIELD_THETA], code[_FIELD_PHI], \
        code[_FIELD_BETA], code[0]
    st = _update_mu(data, s)
    if st != STATUS_OK:
        return 16 * _B_MU + st
    st = _update_alpha(data, s)
    if st != STATUS_OK:
        return 16 * _B_ALPHA + st
    st = _update_field_chromatic(data, s, theta_kind, zero, s.theta, s.tau_theta[0],
                                 pr[_LEVEL_VAR], colour_ptr, colour_cells, cell_streams,
                                 comp_sum, comp_delta, old, status)
    if st != STATUS_OK:
        return 16 * _B_THETA + st
    s.mu[0] += _shift_move(s.theta, data, pr[_MU_VAR], pr[_LEVEL_VAR], s.mu[0], comp_sum, s.rng)
    for p in range(s.alpha.shape[0]):
        for i in range(G):
            column[i] = s.phi[i, p]
        st = _update_field_chromatic(data, s, phi_kind, p, column, s.tau_phi[p],
                                     pr[_LEVEL_VAR], colour_ptr, colour_cells, cell_streams,
                                     comp_sum, comp_delta, old, status)
        for i in range(G):
            s.phi[i, p] = column[i]
        if st != STATUS_OK:
            return 16 * _B_PHI + st
    for p in range(s.alpha.shape[0]):
        for i in range(G):
            column[i] = s.phi[i, p]
        s.alpha[p] += _shift_move(column, data, pr[_ALPHA_VAR], pr[_LEVEL_VAR], s.alpha[p],
                                  comp_sum, s.rng)
        for i in range(G):
            s.phi[i, p] = column[i]
    if data.beta_prior != BETA_NONE:
        st = _update_field_chromatic(data, s, beta_kind, zero, s.beta, s.tau_beta[0],
                                     pr[_BETA_VAR], colour_ptr, colour_cells, cell_streams,
                                     comp_sum, comp_delta, old, status)
        if st != STATUS_OK:
            return 16 * _B_BETA + st
    _update_eps_parallel(data, s, cell_streams, status)
    for i in range(G):
        if status[i] != STATUS_OK:
            return 16 * _B_EPS + status[i]
    _shift_cells_eps(data, s, comp_sum, column, -1)
    for p in range(s.alpha.shape[0]):
        _shift_cells_eps(data, s, comp_sum, column, p)
    s.mu[0] += _shift_eps(data, s, -1, pr[_MU_VAR], s.mu[0])
    for p in range(s.alpha.shape[0]):
        s.alpha[p] += _shift_eps(data, s, p, pr[_ALPHA_VAR], s.alpha[p])
    _update_precisions(data, s, column)
    _scale_moves(data, s, comp_sum, column, adapt)
    return STATUS_OK


@njit(nogil=True, error_model="numpy")
def run_chunk_parallel(data, s, n_sweeps, thin, out_scalars, out_theta, out_beta, out_eta, row,
                       keep, colour_ptr, colour_cells, cell_streams):
    """:func:`geosynth.model.kernels.run_chunk` with :func:`sweep_chromatic` sweeps.

    ``colour_ptr``, ``colour_cells``: :func:`colour_classes` of a proper colouring (int64);
    ``cell_streams``: (G, 4) uint64 per-cell streams, advanced in place. Returns
    ``(status, rows_written)``.
    """
    G = data.counts.shape[0]
    comp_sum = np.zeros(data.component_size.shape[0])
    column = np.empty(G)
    compute_eta(data, s)
    written = 0
    for t in range(n_sweeps):
        status = sweep_chromatic(data, s, comp_sum, column, not keep, colour_ptr, colour_cells,
                                 cell_streams)
        if status != STATUS_OK:
            return status, written
        if keep and (t + 1) % thin == 0:
            _record(data, s, out_scalars, out_theta, out_beta, out_eta, row + written)
            written += 1
    return STATUS_OK, written
