"""Chromatic (graph-coloured) Gibbs kernels: the per-cell updates of θ, φ, β and ε in parallel.

The lattice is coloured so that no two neighbours share a colour (:func:`greedy_colouring`: 4
colours on a queen lattice numbered row by row, at most max degree + 1 on any graph). Given
everything else, the likelihood of cell i involves only row i of η, and the ICAR density of a
field factorises over the cells of one colour into ``N(neighbour mean, 1/(n_i·τ))`` terms, so
the cells of one colour can be drawn at once, with ``numba.prange``.

Exactness and the component-mean prior. The serial sampler also puts a N(0, ``level_var``)
prior on each field's mean within every connected component (see
:func:`geosynth.model.conditionals.icar_prior`). That term ``L_c(S_c)`` of the component sum
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
still moved by the exact shift moves of :func:`geosynth.model.sweep.sweep`.

The same correction covers the per-cell moves (θ_i + k, ε_i· − k) and (φ_ip + k, ε_ib − k),
which are drawn colour by colour in the same way.

Everything else is parallel too. The sweep's passes over the whole lattice — μ and α, the
shifts (μ, ε) and (α_p, ε), the precision sums and the scale moves of β — are reductions and
maps over cells (ε's scale moves are the serial sweep's: two passes over the entries for all
their rounds, :func:`geosynth.model.moves.error_scale_moves`); μ and every α_p are drawn from
*one* pass of the totals Σ_i exp η_ib (an earlier draw of μ or α_p' by δ just multiplies the
totals of its combinations by e^δ) and their shifts applied to η in one more pass, and
likewise for the shifts against ε with Σ_i ε_ib.
What stays serial is O(G) (component sums, the accept/reject tests) or O(1) per sweep.

Reproducibility. Each cell owns a xoshiro256** stream (row i of ``cell_streams``, (G, 4)
uint64, derived from the chain's stream by :func:`cell_streams_for`) used only for its own
draws. Work is split into blocks whose boundaries depend on the number of cells only, and
per-block partial sums are added in block order after each parallel loop, so the draws do
not depend on the number of threads or their scheduling (tested bitwise).

Layout. One parallel loop, :func:`_for_blocks`, runs every operation (a run-time code) over blocks
of cells, and the per-cell loops take plain arrays: passing the model's NamedTuples into the
parallel region cost ~20 µs per loop and ~0.5 µs per block (their arrays, ~36 then and 60 with the
chromatic work's now, are flattened into every call), which made the one-thread chromatic sweep 40%
slower than the serial one. The kernels are cached like the serial ones (numba caches
``parallel=True`` functions; a cold compile takes ~2 minutes of CPU, so paying it once per checkout
matters).

Speed. On a 2-core benchmark machine (Intel Xeon VM, ``python -m bench parallel``, B = 12)
the chromatic sweep on 2 threads costs about the serial sweep at G = 1,600 (3.8 ms) and is
1.05–1.1× faster at G = 6,400 and 25,600; one thread of it costs 15–25% more than the serial
sweep (colour-by-colour passes over strided cells, ~60 parallel loops per sweep and their
serial bookkeeping). A parallel loop costs ~4 µs on an idle machine and far more when another
process holds a core, so :func:`_for_blocks` runs a single block (≤ :data:`BLOCK` cells) on the
calling thread, and writes no array expression (numba turns each, e.g. a slice assignment, into
a parallel loop of its own: zeroing the unused rows of ``partial`` that way launched up to 63
loops per call, 1 ms per sweep at G = 9 and half the sweep's time at G = 1,600).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from geosynth.model.borrow import borrowed
from geosynth.model.coarse import coarse_shifts
from geosynth.model.conditionals import (
    component_means,
    component_sums,
    draw_beta_cell,
    draw_eps_cell,
    draw_field_cell,
    draw_precisions,
    icar_proposal_prior,
    icar_quadratic_add,
    shift_cell_eta,
    shift_cell_eta_z,
)
from geosynth.model.metropolis import scale_accept, scale_proposal
from geosynth.model.moves import (
    error_scale_moves,
    field_scale_cycles,
    mode_moves,
    scale_beta_cell,
    shift_eps_draw,
    shift_level_intercepts,
    shift_move,
)
from geosynth.model.state import (
    ALPHA_VAR,
    B_ALPHA,
    B_BETA,
    B_EPS,
    B_MU,
    B_PHI,
    B_THETA,
    BETA_A,
    BETA_B,
    BETA_ICAR,
    BETA_VAR,
    LEVEL_VAR,
    MU_VAR,
    SAMPLER_SLICE,
    UPDATE_EXACT,
    compute_eta,
    level_combos_of,
    record,
)
from geosynth.samplers.ars import ars_draw_single, new_workspace
from geosynth.samplers.family import STATUS_OK
from geosynth.samplers.rng import standard_normal, uniform

__all__ = [
    "BLOCK",
    "ChromaticWork",
    "greedy_colouring",
    "colour_classes",
    "cell_streams_for",
    "new_chromatic_work",
    "sweep_chromatic",
    "run_chunk_parallel",
]

BLOCK = 32  # cells per parallel work item (scratch is allocated once per block)

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

    Parameters
    ----------
    stream : numpy.ndarray of uint64, shape (4,)
        The chain's xoshiro256** state (read, not advanced).
    n_cells : int
        Number of cells G.

    Returns
    -------
    numpy.ndarray of uint64, shape (n_cells, 4)
        One xoshiro256** state per cell, none all-zero.
    """
    seed = np.random.SeedSequence([int(v) for v in np.asarray(stream, dtype=np.uint64)])
    states = seed.generate_state(4 * n_cells, dtype=np.uint64).reshape(n_cells, 4)
    states[~states.any(axis=1), 0] = np.uint64(1)  # the all-zero state is xoshiro's fixed point
    return states


# Operations of :func:`_for_blocks`, as np.int64 (numba types a global np.int64 as int64, a
# plain int constant as a literal, which would compile one specialisation per operation).
# Colour-class draws (``cells``: one colour class):
_OP_DRAW_FIELD = np.int64(0)  # θ or φ_·p: one-term exact draw per cell (τ, level_var)
# β_ci: multi-term ARS or slice (params: τ_β,c, β variance, ICAR?, slice?)
_OP_DRAW_BETA = np.int64(1)
# Gaussian move (f_i + k, ε_ib − k), b in combos (params: τ, level_var, τ_ε)
_OP_SHIFT_FIELD = np.int64(2)
# Passes over every cell (``cells`` = 0..G−1):
_OP_DRAW_EPS = np.int64(3)  # ε_ib, every b (params: τ_ε)
_OP_EXP_TOTALS = np.int64(4)  # partial[block, b] = Σ_i exp η_ib
_OP_EPS_TOTALS = np.int64(5)  # partial[block, b] = Σ_i ε_ib
_OP_ADD_ETA = np.int64(6)  # η_ib += aux[b] (exp η rescaled)
_OP_SUB_EPS = np.int64(7)  # ε_ib −= aux[b]
# partial[block, :] = ICAR quadratic of β_c· (obs) and Σ ε²
_OP_PRECISION_SUMS = np.int64(8)
# Δ log-likelihood of scaling β_c· about its component means (aux), and the move
_OP_SCALE_LOGLIK_BETA = np.int64(9)
_OP_SCALE_APPLY_BETA = np.int64(10)
_N_OPS = 11
_EXACT = np.int64(UPDATE_EXACT)  # the chromatic sweep draws every one-term conditional exactly
_TRUE = np.bool_(True)  # a bool argument, not Literal[bool](True): one specialisation
MAX_BLOCKS = 64  # work items per parallel loop at most (per-item cost ~0.1–0.5 µs)


@njit(cache=True, nogil=True, error_model="numpy")
def _cell_start(cells, j, field, old, values, combos, tau, level_var, indptr, indices,
                component, component_size):
    """Cell ``i = cells[j]`` of a colour-class loop: save its value, return its prior and row sum.

    Returns ``(i, x, m, q, Σ_{b in combos} values[i, b])`` with ``x = field[i]`` (also written
    to ``old[i]``) and ``(m, q)`` from :func:`geosynth.model.conditionals.icar_proposal_prior`.
    """
    i = cells[j]
    x = field[i]
    old[i] = x
    m, q = icar_proposal_prior(field, i, tau, level_var, indptr, indices, component,
                               component_size)
    total = 0.0
    for t in range(combos.shape[0]):
        total += values[i, combos[t]]
    return i, x, m, q, total


@njit(cache=True, nogil=True, error_model="numpy")
def _draw_field_cells(cells, lo, hi, field, combos, obs, eta, expeta, tau, level_var, indptr,
                      indices, component, component_size, streams, old, status):
    """θ_i or φ_ip for cells[lo:hi] (:func:`geosynth.model.conditionals.draw_field_cell`)."""
    for j in range(lo, hi):
        i = cells[j]
        old[i] = field[i]
        m, q = icar_proposal_prior(field, i, tau, level_var, indptr, indices, component,
                                   component_size)
        _, status[j] = draw_field_cell(field, i, obs[i], m, q, combos, eta, expeta, _EXACT,
                                       streams[i])


@njit(cache=True, nogil=True, error_model="numpy")
def _draw_beta_cells(cells, lo, hi, beta, zbar, czbar, eta, expeta, tau, prior_var, icar,
                     slice_sampler, indptr, indices, component, component_size, streams, old,
                     status):
    """β_i for cells[lo:hi] (:func:`geosynth.model.conditionals.draw_beta_cell`)."""
    B = eta.shape[1]
    work = new_workspace()
    wbuf = np.empty(max(B, 1))
    zbuf = np.empty(max(B, 1))
    for j in range(lo, hi):
        i = cells[j]
        old[i] = beta[i]
        if icar:
            m, q = icar_proposal_prior(beta, i, tau, prior_var, indptr, indices, component,
                                       component_size)
        else:
            m, q = 0.0, 1.0 / prior_var
        _, status[j] = draw_beta_cell(beta, i, zbar, czbar[i], m, q, slice_sampler, eta,
                                      expeta, streams[i], work, wbuf, zbuf)


@njit(cache=True, nogil=True, error_model="numpy")
def _shift_field_cells(cells, lo, hi, field, combos, eps, tau, level_var, tau_eps, indptr,
                       indices, component, component_size, streams, old, status):
    """Per-cell move (f_i + k, ε_ib − k) of :func:`geosynth.model.moves.shift_cells_eps`."""
    for j in range(lo, hi):
        i, x, m, q, eps_sum = _cell_start(cells, j, field, old, eps, combos, tau, level_var,
                                          indptr, indices, component, component_size)
        precision = q + combos.shape[0] * tau_eps
        k = (q * (m - x) + tau_eps * eps_sum) / precision
        k += standard_normal(streams[i]) / math.sqrt(precision)
        field[i] = x + k
        for t in range(combos.shape[0]):
            eps[i, combos[t]] -= k
        status[j] = STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def _draw_eps_cells(cells, lo, hi, eps, eta, expeta, counts, q, streams, status):
    """ε_ib for every b of cells[lo:hi], each cell from its own stream."""
    for j in range(lo, hi):
        i = cells[j]
        status[j] = draw_eps_cell(eps, i, counts, q, eta, expeta, _EXACT, streams[i])


@njit(cache=True, nogil=True, error_model="numpy")
def _column_totals_cells(cells, lo, hi, values, out):
    """out[b] = Σ over cells[lo:hi] of values[i, b]."""
    out[:] = 0.0
    for j in range(lo, hi):
        i = cells[j]
        for b in range(values.shape[1]):
            out[b] += values[i, b]


@njit(cache=True, nogil=True, error_model="numpy")
def _add_per_combination_cells(cells, lo, hi, values, delta, expeta, sign):
    """values[i, b] += sign·delta[b] for cells[lo:hi] (and exp η rescaled when given one)."""
    B = values.shape[1]
    rescale = expeta.shape[0] > 0
    factor = np.empty(B)
    for b in range(B):
        factor[b] = math.exp(delta[b])
    for j in range(lo, hi):
        i = cells[j]
        for b in range(B):
            if delta[b] != 0.0:
                values[i, b] += sign * delta[b]
                if rescale:
                    expeta[i, b] *= factor[b]


@njit(cache=True, nogil=True, error_model="numpy")
def _precision_sums_cells(cells, lo, hi, beta, with_beta, with_eps, eps, indptr, indices, upper,
                          out):
    """Sum β's ICAR quadratic and Σ ε² over cells[lo:hi] into ``out`` (β, ε).

    ``beta`` is one covariate's field; ``with_eps`` False leaves the ε column at 0 (the pass of
    a second ICAR β field, whose ε column the caller ignores).
    """
    out[:] = 0.0
    for j in range(lo, hi):
        i = cells[j]
        if with_beta:
            out[0] = icar_quadratic_add(beta, i, upper[i], indptr[i + 1], indices, out[0])
        if with_eps:
            for b in range(eps.shape[1]):
                out[1] += eps[i, b] * eps[i, b]


@njit(cache=True, nogil=True, error_model="numpy")
def _scale_beta_cells(cells, lo, hi, beta, comp_mean, component, factor, zbar, counts, eta,
                      expeta, apply):
    """:func:`geosynth.model.moves.scale_beta_cell` over cells[lo:hi]."""
    total = 0.0
    for j in range(lo, hi):
        total = scale_beta_cell(beta, cells[j], comp_mean, component, factor, zbar, counts, eta,
                                expeta, apply, total)
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def _block(op, cells, lo, hi, row, field, phi, combos, obs, aux, params, streams, old, status,
           eta, expeta, eps, counts, zbar, czbar, indptr, indices, upper, component,
           component_size):
    """Run operation ``op`` on cells[lo:hi] (one parallel work item); return its partial sum.

    Plain arrays only: passing the model's NamedTuples into the parallel loop cost ~20 µs per
    loop and ~0.5 µs per work item (their arrays, 60 with the chromatic work's, are flattened
    into every call). Multi-
    valued partial sums go to ``row`` (this block's row of the partial-sum matrix).
    """
    if op == _OP_DRAW_FIELD:
        _draw_field_cells(cells, lo, hi, field, combos, obs, eta, expeta, params[0], params[1],
                          indptr, indices, component, component_size, streams, old, status)
    elif op == _OP_DRAW_BETA:
        _draw_beta_cells(cells, lo, hi, field, zbar, czbar, eta, expeta, params[0], params[1],
                         params[2] > 0.0, params[3] > 0.0, indptr, indices, component,
                         component_size, streams, old, status)
    elif op == _OP_SHIFT_FIELD:
        _shift_field_cells(cells, lo, hi, field, combos, eps, params[0], params[1], params[2],
                           indptr, indices, component, component_size, streams, old, status)
    elif op == _OP_DRAW_EPS:
        _draw_eps_cells(cells, lo, hi, eps, eta, expeta, counts, params[0], streams, status)
    elif op == _OP_EXP_TOTALS:
        _column_totals_cells(cells, lo, hi, expeta, row)
        return row[0]
    elif op == _OP_EPS_TOTALS:
        _column_totals_cells(cells, lo, hi, eps, row)
        return row[0]
    elif op == _OP_ADD_ETA:
        _add_per_combination_cells(cells, lo, hi, eta, aux, expeta, 1.0)
    elif op == _OP_SUB_EPS:
        _add_per_combination_cells(cells, lo, hi, eps, aux, eta[:0], -1.0)
    elif op == _OP_PRECISION_SUMS:
        _precision_sums_cells(cells, lo, hi, obs, params[0] > 0.0, params[1] > 0.0, eps,
                              indptr, indices, upper, row)
        return row[0]
    elif op == _OP_SCALE_LOGLIK_BETA or op == _OP_SCALE_APPLY_BETA:
        return _scale_beta_cells(cells, lo, hi, field, aux, component, params[0], zbar, counts,
                                 eta, expeta, op == _OP_SCALE_APPLY_BETA)
    return 0.0


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def _for_blocks(op, cells, field, phi, combos, obs, aux, params, streams, old, status, partial,
                eta, expeta, eps, counts, zbar, czbar, indptr, indices, upper, component,
                component_size):
    """Run ``op`` over ``cells`` in at most :data:`MAX_BLOCKS` blocks on all numba threads.

    Block boundaries depend on ``len(cells)`` only, and the blocks' partial sums (row k of
    ``partial``, (MAX_BLOCKS, width) float64) are added in block order after the parallel
    loop, so results do not depend on the number of threads. Returns the sum of column 0.
    ``op`` must be a run-time integer (a literal compiles one specialisation per call site).
    The loop body is a function call (written inline, numba 0.65's parfor lowering dropped
    stores into the state's arrays).
    """
    n = cells.shape[0]
    size = max(BLOCK, (n + MAX_BLOCKS - 1) // MAX_BLOCKS)
    n_blocks = (n + size - 1) // size
    if n_blocks == 1:  # no parallel region: launching one costs more than a block's work
        partial[0, 0] = _block(op, cells, 0, n, partial[0], field, phi, combos, obs, aux,
                               params, streams, old, status, eta, expeta, eps, counts, zbar,
                               czbar, indptr, indices, upper, component, component_size)
    else:
        for blk in prange(n_blocks):
            partial[blk, 0] = _block(op, cells, blk * size, min(n, (blk + 1) * size),
                                     partial[blk], field, phi, combos, obs, aux, params, streams,
                                     old, status, eta, expeta, eps, counts, zbar, czbar, indptr,
                                     indices, upper, component, component_size)
    for blk in range(n_blocks, MAX_BLOCKS):
        for j in range(partial.shape[1]):  # a slice assignment would be a parallel region
            partial[blk, j] = 0.0
    total = 0.0
    for blk in range(n_blocks):
        total += partial[blk, 0]
    return total


class ChromaticWork(NamedTuple):
    """Scratch arrays and index sets of the chromatic sweep (allocated once per chunk)."""

    ops: np.ndarray  # int64 (_N_OPS,) run-time operation codes
    all_cells: np.ndarray  # int64 (G,) 0..G−1
    colour_ptr: np.ndarray  # int64 (n_colours + 1,)
    colour_cells: np.ndarray  # int64 (G,)
    streams: np.ndarray  # uint64 (G, 4) per-cell xoshiro256** states
    obs: np.ndarray  # float64 (G,) observed totals of the field being updated
    old: np.ndarray  # float64 (G,) values before a colour's draws
    status: np.ndarray  # int64 (G,) per-position sampler status
    partial: np.ndarray  # float64 (MAX_BLOCKS, max(B, P + 3)) per-block partial sums
    params: np.ndarray  # float64 (4,) scalar parameters of an operation
    comp_delta: np.ndarray  # float64 (C,) per-component change of a field's sum
    totals: np.ndarray  # float64 (max(B, P + 3),) column totals of ``partial``
    delta: np.ndarray  # float64 (B,) per-combination shift of η or ε
    covariate: np.ndarray  # int64 (1,) the covariate c whose Z̄ the β operations use


@njit(cache=True, nogil=True)
def new_chromatic_work(G, B, P, n_components, colour_ptr, colour_cells, streams):
    """Allocate the :class:`ChromaticWork` of a fit with G cells, B combinations, P levels.

    Parameters
    ----------
    G, B, P : int
        Numbers of cells, combinations and non-baseline levels.
    n_components : int
        Number C of connected components of the lattice.
    colour_ptr : numpy.ndarray of int64, shape (n_colours + 1,)
        CSR pointers of the colour classes (:func:`colour_classes`); kept, not copied.
    colour_cells : numpy.ndarray of int64, shape (G,)
        Cells grouped by colour (:func:`colour_classes`); kept, not copied.
    streams : numpy.ndarray of uint64, shape (G, 4)
        Per-cell xoshiro256** states (:func:`cell_streams_for`); kept and advanced in place.

    Returns
    -------
    ChromaticWork
        Scratch arrays and index sets; see the field comments of :class:`ChromaticWork`.
    """
    width = max(B, P + 3)
    return ChromaticWork(
        ops=np.arange(_N_OPS, dtype=np.int64),
        all_cells=np.arange(G, dtype=np.int64),
        colour_ptr=colour_ptr,
        colour_cells=colour_cells,
        streams=streams,
        obs=np.zeros(G),
        old=np.zeros(G),
        status=np.zeros(G, dtype=np.int64),
        partial=np.zeros((MAX_BLOCKS, width)),
        params=np.zeros(4),
        comp_delta=np.zeros(n_components),
        totals=np.zeros(width),
        delta=np.zeros(B),
        covariate=np.zeros(1, dtype=np.int64),
    )


@njit(cache=True, nogil=True, error_model="numpy")
def _launch(op, data, s, w, cells, field, combos, obs, aux):
    """:func:`_for_blocks` of operation ``op`` over ``cells``, arrays taken from the tuples.

    The β operations see the Z̄ and Σ_b c·Z̄ of covariate ``w.covariate[0]``.
    """
    c = w.covariate[0]
    return _for_blocks(w.ops[op], cells, field, s.phi, combos, obs, aux, w.params, w.streams,
                       w.old, w.status, w.partial, s.eta, s.expeta, s.eps, s.counts,
                       data.zbar[c], s.cell_czbar[c], data.indptr, data.indices, data.upper,
                       data.component, data.component_size)


@njit(cache=True, nogil=True, error_model="numpy")
def _run_all(op, data, s, w, field, combos, obs, aux):
    """:func:`_launch` over every cell."""
    return _launch(op, data, s, w, w.all_cells, field, combos, obs, aux)


@njit(cache=True, nogil=True, error_model="numpy")
def _column_totals(w, width):
    """w.totals[:width] = the column sums of the blocks' partial sums, in block order."""
    for k in range(width):
        total = 0.0
        for blk in range(MAX_BLOCKS):
            total += w.partial[blk, k]
        w.totals[k] = total


@njit(cache=True, nogil=True, error_model="numpy")
def _update_by_colour(op, data, s, w, field, combos, level_var, use_level, comp_sum):
    """Colour-by-colour update of one field with the per-component MH correction.

    ``op`` is :data:`_OP_DRAW_FIELD`, :data:`_OP_DRAW_BETA` or :data:`_OP_SHIFT_FIELD`
    (``w.params`` and ``w.obs`` already set). ``use_level``: the field has the component-mean
    prior, whose change is accepted or rejected per (colour, component) block (module
    docstring). Returns a sampler status.
    """
    n_colours = w.colour_ptr.shape[0] - 1
    if use_level:
        component_sums(field, data, comp_sum)
    for k in range(n_colours):
        cells = w.colour_cells[w.colour_ptr[k]:w.colour_ptr[k + 1]]
        _launch(op, data, s, w, cells, field, combos, w.obs, comp_sum)
        for j in range(cells.shape[0]):
            if w.status[j] != STATUS_OK:
                return w.status[j]
        if not use_level:
            continue
        if _reject_components(data, s, cells, field, level_var, comp_sum, w):
            for j in range(cells.shape[0]):
                i = cells[j]
                if math.isnan(w.comp_delta[data.component[i]]):
                    _revert_cell(op, data, s, field, combos, i, w.old[i], w.covariate[0])
        for c in range(comp_sum.shape[0]):  # the sums after this colour, for the next test
            if not math.isnan(w.comp_delta[c]):
                comp_sum[c] += w.comp_delta[c]
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def _reject_components(data, s, cells, field, level_var, comp_sum, w):
    """MH test of each component's change of sum; mark rejected ones NaN in ``w.comp_delta``.

    Returns True if any component was rejected.
    """
    w.comp_delta[:] = 0.0
    for j in range(cells.shape[0]):
        i = cells[j]
        w.comp_delta[data.component[i]] += field[i] - w.old[i]
    rejected = False
    for c in range(w.comp_delta.shape[0]):
        n_c = data.component_size[c]
        if n_c <= 1.0 or w.comp_delta[c] == 0.0:
            continue
        before = comp_sum[c]
        after = before + w.comp_delta[c]
        log_ratio = -(after * after - before * before) / (2.0 * level_var * n_c * n_c)
        if log_ratio >= 0.0 or math.log(uniform(s.rng)) < log_ratio:
            continue
        w.comp_delta[c] = math.nan
        rejected = True
    return rejected


@njit(cache=True, nogil=True, error_model="numpy")
def _revert_cell(op, data, s, field, combos, i, old, w_covariate):
    """Undo cell i's move of a rejected block (η and exp η, or ε, back in step).

    ``w_covariate``: the covariate of a β field (``ChromaticWork.covariate[0]``).
    """
    delta = field[i] - old
    field[i] = old
    if op == _OP_DRAW_FIELD:
        shift_cell_eta(s.eta, s.expeta, combos, i, -delta)
    elif op == _OP_DRAW_BETA:
        shift_cell_eta_z(s.eta, s.expeta, data.zbar[w_covariate], i, -delta)
    else:
        for t in range(combos.shape[0]):
            s.eps[i, combos[t]] += delta


@njit(cache=True, nogil=True, error_model="numpy")
def _copy_column(source, p, out):
    for i in range(out.shape[0]):
        out[i] = source[i, p]


@njit(cache=True, nogil=True, error_model="numpy")
def _store_column(column, p, target):
    for i in range(column.shape[0]):
        target[i, p] = column[i]


@njit(cache=True, nogil=True, error_model="numpy")
def _update_intercepts_parallel(data, s, w):
    """μ, then each α_p (one-term ARS), from one parallel pass of the totals Σ_i exp η_ib.

    The conditional of α_p needs ``Σ_{b∋p} Σ_i exp η_ib`` after the earlier draws; an earlier
    draw of μ or α_p' by δ multiplies the totals of its combinations by e^δ, so the totals are
    kept in step without another pass, and η takes the summed shift of each combination in
    one final pass. Returns 0 or 16·block + sampler status.
    """
    B = s.counts.shape[1]
    pr = data.priors
    _run_all(_OP_EXP_TOTALS, data, s, w, s.theta, data.all_combos, w.obs, w.obs)
    _column_totals(w, B)
    totals = w.totals[:B]
    x = s.mu[0]
    new, st = ars_draw_single(x, s.cell_counts.sum(), totals.sum() * math.exp(-x), 0.0,
                              1.0 / pr[MU_VAR], s.rng)
    if st != STATUS_OK:
        return 16 * B_MU + st
    s.mu[0] = new
    w.delta[:] = new - x
    totals *= math.exp(new - x)
    for p in range(s.alpha.shape[0]):
        combos = level_combos_of(data, p)
        total = 0.0
        for t in range(combos.shape[0]):
            total += totals[combos[t]]
        x = s.alpha[p]
        new, st = ars_draw_single(x, s.level_counts[p], total * math.exp(-x), 0.0,
                                  1.0 / pr[ALPHA_VAR], s.rng)
        if st != STATUS_OK:
            return 16 * B_ALPHA + st
        s.alpha[p] = new
        factor = math.exp(new - x)
        for t in range(combos.shape[0]):
            w.delta[combos[t]] += new - x
            totals[combos[t]] *= factor
    _run_all(_OP_ADD_ETA, data, s, w, s.theta, data.all_combos, w.obs, w.delta)
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def _update_fields_parallel(data, s, w, comp_sum, column):
    """θ, shift(μ, θ), φ_·p, shift(α, φ), each β_c· colour by colour; 0 or 16·block + status."""
    pr = data.priors
    level_var = pr[LEVEL_VAR]
    w.params[0], w.params[1] = s.tau_theta[0], level_var
    w.obs[:] = s.cell_counts
    st = _update_by_colour(_OP_DRAW_FIELD, data, s, w, s.theta, data.all_combos, level_var, _TRUE,
                           comp_sum)
    if st != STATUS_OK:
        return 16 * B_THETA + st
    s.mu[0] += shift_move(s.theta, data, pr[MU_VAR], level_var, s.mu[0], comp_sum, s.rng)
    for p in range(s.alpha.shape[0]):
        _copy_column(s.phi, p, column)
        _copy_column(s.cell_level_counts, p, w.obs)
        w.params[0], w.params[1] = s.tau_phi[p], level_var
        st = _update_by_colour(_OP_DRAW_FIELD, data, s, w, column, level_combos_of(data, p),
                               level_var, _TRUE, comp_sum)
        _store_column(column, p, s.phi)
        if st != STATUS_OK:
            return 16 * B_PHI + st
    shift_level_intercepts(data, s, comp_sum, column)
    for c in range(data.beta_priors.shape[0]):
        icar = data.beta_priors[c] == BETA_ICAR
        w.covariate[0] = c
        w.params[0], w.params[1] = s.tau_beta[c], pr[BETA_VAR]
        w.params[2] = 1.0 if icar else 0.0
        w.params[3] = 1.0 if data.beta_sampler == SAMPLER_SLICE else 0.0
        st = _update_by_colour(_OP_DRAW_BETA, data, s, w, s.beta[c], data.all_combos,
                               pr[BETA_VAR], icar, comp_sum)
        if st != STATUS_OK:
            return 16 * B_BETA + st
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def _update_eps_and_shifts_parallel(data, s, w, comp_sum, column):
    """ε, the per-cell shifts (θ_i, ε_i·) and (φ_ip, ε_ib), then shift(μ, ε), shift(α_p, ε)."""
    pr = data.priors
    level_var = pr[LEVEL_VAR]
    w.params[0] = s.tau_eps[0]
    _run_all(_OP_DRAW_EPS, data, s, w, s.theta, data.all_combos, w.obs, w.obs)
    for i in range(w.status.shape[0]):
        if w.status[i] != STATUS_OK:
            return 16 * B_EPS + w.status[i]
    w.params[0], w.params[1], w.params[2] = s.tau_theta[0], level_var, s.tau_eps[0]
    _update_by_colour(_OP_SHIFT_FIELD, data, s, w, s.theta, data.all_combos, level_var, _TRUE,
                      comp_sum)
    for p in range(s.alpha.shape[0]):
        _copy_column(s.phi, p, column)
        w.params[0], w.params[1], w.params[2] = s.tau_phi[p], level_var, s.tau_eps[0]
        _update_by_colour(_OP_SHIFT_FIELD, data, s, w, column, level_combos_of(data, p),
                          level_var, _TRUE, comp_sum)
        _store_column(column, p, s.phi)
    _shift_intercepts_eps(data, s, w)
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def _shift_intercepts_eps(data, s, w):
    """shift(μ, ε) then each shift(α_p, ε) from one pass of the totals Σ_i ε_ib.

    A shift by k subtracts k from each of the G errors of its combinations, so their totals
    drop by G·k; the summed shift of each combination is applied to ε in one final pass.
    """
    G, B = s.counts.shape
    pr = data.priors
    _run_all(_OP_EPS_TOTALS, data, s, w, s.theta, data.all_combos, w.obs, w.obs)
    _column_totals(w, B)
    totals = w.totals[:B]
    k = shift_eps_draw(totals.sum(), G * B, s.tau_eps[0], pr[MU_VAR], s.mu[0], s.rng)
    s.mu[0] += k
    w.delta[:] = k
    totals -= G * k
    for p in range(s.alpha.shape[0]):
        combos = level_combos_of(data, p)
        total = 0.0
        for t in range(combos.shape[0]):
            total += totals[combos[t]]
        k = shift_eps_draw(total, G * combos.shape[0], s.tau_eps[0], pr[ALPHA_VAR],
                            s.alpha[p], s.rng)
        s.alpha[p] += k
        for t in range(combos.shape[0]):
            w.delta[combos[t]] += k
            totals[combos[t]] -= G * k
    _run_all(_OP_SUB_EPS, data, s, w, s.theta, data.all_combos, w.obs, w.delta)


@njit(cache=True, nogil=True, error_model="numpy")
def _update_precisions_parallel(data, s, w):
    """Gamma draws of τ_ε and each ICAR τ_β (:func:`geosynth.model.conditionals.draw_precisions`).

    One parallel pass sums Σ ε² and the ICAR quadratic of the first ICAR β field; each further
    ICAR β field takes one more pass (its quadratic only).
    """
    n_covariates = data.beta_priors.shape[0]
    first = -1  # the first covariate under an ICAR prior: its quadratic joins the main pass
    for c in range(n_covariates):
        if first < 0 and data.beta_priors[c] == BETA_ICAR:
            first = c
    w.params[0] = 1.0 if first >= 0 else 0.0
    w.params[1] = 1.0
    _run_all(_OP_PRECISION_SUMS, data, s, w, s.theta, data.all_combos, s.beta[max(first, 0)],
             w.obs)
    _column_totals(w, 2)
    sums = np.zeros(1 + n_covariates)  # Σ ε², β_c· (draw_precisions' layout)
    sums[0] = w.totals[1]
    if first >= 0:
        sums[1 + first] = w.totals[0]
    for c in range(first + 1, n_covariates if first >= 0 else 0):
        if data.beta_priors[c] == BETA_ICAR:
            w.params[0], w.params[1] = 1.0, 0.0
            _run_all(_OP_PRECISION_SUMS, data, s, w, s.theta, data.all_combos, s.beta[c],
                     w.obs)
            _column_totals(w, 2)
            sums[1 + c] = w.totals[0]
    draw_precisions(data, s, sums)


@njit(cache=True, nogil=True, error_model="numpy")
def _scale_move_beta_parallel(data, s, w, c, tau, shape, rate, slot, adapt, comp_sum):
    """Make the scale move of an ICAR β_c· in parallel; return τ_β,c.

    The β scale move of the serial sweep (:func:`geosynth.model.moves.scale_moves`), its two
    passes over the cells split into blocks.
    """
    field = s.beta[c]
    component_means(field, data, comp_sum)
    u, factor = scale_proposal(s, slot)
    w.params[0] = factor
    w.params[1] = 0.0
    w.covariate[0] = c
    delta_loglik = _run_all(_OP_SCALE_LOGLIK_BETA, data, s, w, field, data.all_combos, w.obs,
                            comp_sum)
    accept, new_tau = scale_accept(s, slot, adapt, delta_loglik, u, tau, shape, rate)
    if not accept:
        return tau
    _run_all(_OP_SCALE_APPLY_BETA, data, s, w, field, data.all_combos, w.obs, comp_sum)
    return new_tau


@njit(cache=True, nogil=True, error_model="numpy")
def _scale_moves_parallel(data, s, w, comp_sum, column, adapt):
    """Scale moves of θ, φ_·p, each ICAR β_c· and ε (in rounds), in the serial order and slots.

    θ and φ_·p run :func:`geosynth.model.moves.field_scale_cycles` as the serial sweep does
    (its rounds cost O(G) each and run serially), and so does ε, whose rounds make one pass to
    take their sums and one to apply the accepted moves; the β moves measure and apply their
    passes over the cells in parallel.
    """
    field_scale_cycles(data, s, comp_sum, column, adapt)
    pr = data.priors
    P = s.alpha.shape[0]
    for c in range(data.beta_priors.shape[0]):
        if data.beta_priors[c] != BETA_ICAR:
            continue
        s.tau_beta[c] = _scale_move_beta_parallel(data, s, w, c, s.tau_beta[c], pr[BETA_A],
                                                  pr[BETA_B], 1 + P + c, adapt, comp_sum)
    # ε: the remap move, then rounds of (τ_ε's Gibbs draw, the scale move with μ) as in the
    # serial sweep, whose rounds make two passes over the entries in all.
    error_scale_moves(data, s, adapt)


@njit(cache=True, nogil=True, error_model="numpy")
def sweep_chromatic(data, s, comp_sum, column, adapt, w):
    """:func:`geosynth.model.sweep.sweep` with every per-cell block in parallel.

    Same blocks in the same order as the serial sweep: μ, α (parallel sums over the lattice),
    θ, shift(μ, θ), φ, shift(α, φ), each β_c· colour by colour (with the MH correction of the
    module docstring), the smooth-mode moves and the coarse shifts of θ and φ_·p (serial),
    ε over all cells, the per-cell shifts
    (θ_i, ε_i·) and (φ_ip, ε_ib) colour by colour, shift(μ, ε), shift(α, ε), the precisions
    and the scale moves (parallel sums).
    ``w`` is the chain's :class:`ChromaticWork`. Returns 0 or 16·block + sampler status.

    Parameters
    ----------
    data : geosynth.model.state.ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels, C
        components).
    s : geosynth.model.state.GibbsState
        The chain's state, updated in place (its ``rng`` drives the serial draws).
    comp_sum : numpy.ndarray of float64, shape (C,)
        Scratch for per-component sums.
    column : numpy.ndarray of float64, shape (G,)
        Scratch for one column of φ.
    adapt : bool
        Burn-in: tune the proposal scales of the scale moves.
    w : ChromaticWork
        The chain's scratch, colour classes and per-cell streams (advanced in place).

    Returns
    -------
    int
        0, or 16·block + sampler status as :func:`geosynth.model.sweep.sweep` returns.
    """
    st = _update_intercepts_parallel(data, s, w)
    if st != STATUS_OK:
        return st
    st = _update_fields_parallel(data, s, w, comp_sum, column)
    if st != STATUS_OK:
        return st
    mode_moves(data, s, adapt)  # serial: O(G·(1 + P)·K) flops and G·(1 + P) exps
    st = coarse_shifts(data, s)  # serial: two passes over exp η per level
    if st != STATUS_OK:
        return 16 * B_THETA + st
    st = _update_eps_and_shifts_parallel(data, s, w, comp_sum, column)
    if st != STATUS_OK:
        return st
    _update_precisions_parallel(data, s, w)
    _scale_moves_parallel(data, s, w, comp_sum, column, adapt)
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def run_chunk_parallel(data, s, n_sweeps, thin, out_scalars, out_theta, out_beta, out_eta, row,
                       keep, colour_ptr, colour_cells, cell_streams):
    """:func:`geosynth.model.sweep.run_chunk` with :func:`sweep_chromatic` sweeps.

    ``colour_ptr``, ``colour_cells``: :func:`colour_classes` of a proper colouring (int64);
    ``cell_streams``: (G, 4) uint64 per-cell streams, advanced in place. Returns
    ``(status, rows_written)``.

    Parameters
    ----------
    data : geosynth.model.state.ModelData
        The fit's read-only arrays (G cells, B combinations, P non-baseline levels).
    s : geosynth.model.state.GibbsState
        The chain's state, updated in place.
    n_sweeps : int
        Number of sweeps of this chunk.
    thin : int
        Record every ``thin``-th sweep.
    out_scalars : numpy.ndarray of float64, shape (rows, 2P + 3 + max(K, 1))
        Recorded scalars, one row per kept draw (see :func:`geosynth.model.state.record`).
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
    colour_ptr : numpy.ndarray of int64, shape (n_colours + 1,)
        CSR pointers of the colour classes.
    colour_cells : numpy.ndarray of int64, shape (G,)
        Cells grouped by colour.
    cell_streams : numpy.ndarray of uint64, shape (G, 4)
        Per-cell xoshiro256** states, advanced in place.

    Returns
    -------
    status : int
        0, or 16·block + sampler status.
    rows_written : int
        Number of rows recorded from ``row`` on.
    """
    data, s = borrowed(data), borrowed(s)  # no reference counts in the sweeps (borrow.py)
    G, B = s.counts.shape
    comp_sum = np.zeros(data.component_size.shape[0])
    column = np.empty(G)
    w = new_chromatic_work(G, B, s.alpha.shape[0], data.component_size.shape[0], colour_ptr,
                           colour_cells, cell_streams)
    compute_eta(data, s)
    written = 0
    for t in range(n_sweeps):
        status = sweep_chromatic(data, s, comp_sum, column, not keep, w)
        if status != STATUS_OK:
            return status, written
        if keep and (t + 1) % thin == 0:
            record(data, s, out_scalars, out_theta, out_beta, out_eta, row + written)
            written += 1
    return STATUS_OK, written
