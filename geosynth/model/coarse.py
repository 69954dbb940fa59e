"""Exact shifts of an ICAR field over nested aggregates of cells (multigrid Gibbs moves).

Single-site updates move an ICAR field's roughest part at once and its broad trends by a random
walk of local steps; the joint move along the K smoothest modes (:mod:`geosynth.model.modes`)
covers the broadest trends, but on large lattices the scales in between — patches of tens to
thousands of cells — are left to the single-site walk. Multigrid Monte Carlo (Goodman & Sokal
1989, "Multigrid Monte Carlo method. Conceptual foundations", Phys. Rev. D 40) moves a field
by a constant over each block of a hierarchy of coarser and coarser partitions of the lattice.

Here the partitions are aggregates of the adjacency graph, nested level by level (greedy
aggregation of algebraic multigrid, Vaněk, Mandel & Brezina 1996, "Algebraic multigrid by
smoothed aggregation", Computing 56: a cell whose neighbours are all free seeds an aggregate
with them, the cells left join a neighbouring aggregate), computed once per fit from the graph
alone, so clipped lattices, holes and islands need nothing special; no aggregate spans two
connected components.

The move of field f (θ, or φ_·p on the combinations b ∋ p) over aggregate A is
f_i → f_i + k for every i ∈ A, an exact Gibbs draw of k. Its full conditional is a member of
the one-term family the engine already draws (:func:`geosynth.samplers.tangent.tangent_draw`):
the likelihood gives ``Y k − W (e^k − 1)`` with ``Y = Σ_{i∈A} Σ_b y_ib`` and
``W = Σ_{i∈A} Σ_b e^{η_ib}`` (b over the combinations f enters); the ICAR prior changes only on
the edges (i, j) leaving A, ``−τ/2 Σ (f_i + k − f_j)²``, and the N(0, level_var) prior of the
component mean (sum S_c over n_c cells) by ``−(S_c + n_A k)² / (2 level_var n_c²)`` —
together a Gaussian in k. θ and every φ_·p are shifted in turn over one aggregate before the
next: one pass over the aggregate's rows of exp η gives the per-combination sums
``Σ_{i∈A} e^{η_ib}``, each draw rescales the sums of the combinations it moves (so the next
field's conditional is exact given it), and one pass applies every field's shift to η and
exp η. A level thus costs two passes over exp η and 1 + P + B exps per aggregate, whatever P.

Measured on the bench's scenario (B = 12, 2 chains × 8,000 sweeps, ``bench/RESULTS.md``,
2026-11-26): at G = 6,400 (levels of 9, 81 and 729 cells) the minimum bulk ESS of θ_i rose
from 541 to 1,157 and that of λ_ib from 828 to 1,124 for +9 % per sweep (1.5 ms); the same
shifts made field by field cost four times as much. At G = 1,600 the precisions set the
minimum and the moves are neutral there.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy import sparse

from geosynth.model.state import LEVEL_VAR
from geosynth.samplers.family import STATUS_OK
from geosynth.samplers.tangent import tangent_draw

__all__ = ["MIN_AGGREGATES", "coarse_aggregates", "coarse_shifts"]

#: Coarsening stops before a level with fewer aggregates than this: the broadest scales are
#: the smooth modes' (:mod:`geosynth.model.modes`).
MIN_AGGREGATES = 8


def _aggregate_once(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """One level of greedy aggregation of a graph; return each node's aggregate (0..n_agg−1)."""
    n = indptr.shape[0] - 1
    agg = np.full(n, -1, dtype=np.int64)
    n_agg = 0
    for i in range(n):  # seeds: a node whose neighbours are all free takes them
        nbrs = indices[indptr[i]:indptr[i + 1]]
        if agg[i] < 0 and np.all(agg[nbrs] < 0):
            agg[i] = n_agg
            agg[nbrs] = n_agg
            n_agg += 1
    for i in range(n):  # the rest join a neighbouring aggregate (or seed their own)
        if agg[i] >= 0:
            continue
        nbrs = indices[indptr[i]:indptr[i + 1]]
        taken = nbrs[agg[nbrs] >= 0]
        if taken.size:
            agg[i] = agg[taken[0]]
        else:
            agg[i] = n_agg
            agg[nbrs[agg[nbrs] < 0]] = n_agg
            n_agg += 1
    return agg


def coarse_aggregates(indptr: np.ndarray, indices: np.ndarray,
                      min_aggregates: int = MIN_AGGREGATES) -> tuple[np.ndarray, np.ndarray]:
    """Nested aggregates of a lattice's cells, finest level first (module docstring).

    Parameters
    ----------
    indptr, indices : numpy.ndarray of int64
        The lattice's adjacency (CSR, symmetric).
    min_aggregates : int, default MIN_AGGREGATES
        Stop coarsening before a level with fewer aggregates.

    Returns
    -------
    ptr : numpy.ndarray of int64, shape (n_aggregates + 1,)
        CSR pointers: aggregate a holds ``cells[ptr[a]:ptr[a + 1]]``; aggregates of one cell
        are left out (the single-site updates move those).
    cells : numpy.ndarray of int64
        The cells of every aggregate, level after level.
    """
    G = indptr.shape[0] - 1
    owner = np.arange(G, dtype=np.int64)  # each cell's node in the current graph
    graph = sparse.csr_matrix((np.ones(indices.shape[0]), indices, indptr), shape=(G, G))
    members = []
    while graph.shape[0] > 1:
        agg = _aggregate_once(graph.indptr.astype(np.int64), graph.indices.astype(np.int64))
        n_agg = int(agg.max()) + 1
        if n_agg < min_aggregates or n_agg == graph.shape[0]:
            break
        owner = agg[owner]
        order = np.argsort(owner, kind="stable")
        counts = np.bincount(owner, minlength=n_agg)
        keep = counts >= 2
        starts = np.concatenate([[0], np.cumsum(counts)])
        for a in np.flatnonzero(keep):
            members.append(order[starts[a]:starts[a + 1]])
        to_agg = sparse.csr_matrix((np.ones(agg.shape[0]), (np.arange(agg.shape[0]), agg)),
                                   shape=(agg.shape[0], n_agg))
        graph = (to_agg.T @ graph @ to_agg).tocsr()
        graph.setdiag(0)
        graph.eliminate_zeros()
    ptr = np.concatenate([[0], np.cumsum([len(m) for m in members], dtype=np.int64)])
    ptr = ptr.astype(np.int64)
    cells = (np.concatenate(members) if members else np.empty(0)).astype(np.int64)
    return ptr, cells


@njit(cache=True, nogil=True, error_model="numpy")
def _aggregate_sums(cells, mark, stamp, expeta, cell_counts, cell_level_counts, theta, phi,
                    indptr, indices, exp_sums, y_totals, edge_sums):
    """One pass over an aggregate's cells: Σ_i e^η_ib per b, the fields' counts and edge sums.

    ``y_totals[f]`` and ``edge_sums[f]`` are for field f (0: θ, 1 + p: φ_·p): the counts the
    field sees and Σ over edges (i ∈ A, j ∉ A) of f_i − f_j. Returns the number of those edges.
    This helper and :func:`_draw_shifts`, called once per aggregate, take the arrays they read
    rather than ``data`` and ``s``: numba increments and decrements the reference count of
    every array of an argument at each call (atomically), 46 arrays for the two tuples.
    """
    P = phi.shape[1]
    for t in range(cells.shape[0]):
        mark[cells[t]] = stamp
    exp_sums[:] = 0.0
    y_totals[:] = 0.0
    edge_sums[:] = 0.0
    edges = 0.0
    for t in range(cells.shape[0]):
        i = cells[t]
        for b in range(exp_sums.shape[0]):
            exp_sums[b] += expeta[i, b]
        y_totals[0] += cell_counts[i]
        for p in range(P):
            y_totals[1 + p] += cell_level_counts[i, p]
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            if mark[j] != stamp:
                edges += 1.0
                edge_sums[0] += theta[i] - theta[j]
                for p in range(P):
                    edge_sums[1 + p] += phi[i, p] - phi[j, p]
    return edges


@njit(cache=True, nogil=True, error_model="numpy")
def _field_combos(data):
    """Return the combinations each field enters, flat, and their offsets (θ: all; φ_·p: p's).

    Field f's are ``combos[ptr[f]:ptr[f + 1]]``: f = 0 is θ, f = 1 + p is φ_·p
    (:func:`~geosynth.model.state.level_combos_of`).
    """
    B = data.all_combos.shape[0]
    combos = np.concatenate((data.all_combos, data.level_combos))
    ptr = np.empty(data.level_combos_ptr.shape[0] + 1, dtype=np.int64)
    ptr[0] = 0
    ptr[1:] = B + data.level_combos_ptr
    return combos, ptr


@njit(cache=True, nogil=True, error_model="numpy")
def _draw_shifts(field_combos, field_ptr, taus, rng, q_level, c, n_a, edges, exp_sums, y_totals,
                 edge_sums, comp_sums, steps, eta_shift):
    """Draw each field's shift k_f over the aggregate in turn (θ, then φ_·1…φ_·P).

    Each draw conditions on the earlier ones through ``exp_sums``, which it rescales;
    ``steps[f]`` gets k_f and ``eta_shift[b]`` the summed change of η_·b. Returns a status.
    ``taus[f]`` is field f's precision, ``q_level`` the aggregate's level-prior precision.
    """
    eta_shift[:] = 0.0
    for f in range(steps.shape[0]):
        tau = taus[f]
        combos = field_combos[field_ptr[f]:field_ptr[f + 1]]
        weight = 0.0
        for u in range(combos.shape[0]):
            weight += exp_sums[combos[u]]
        q = tau * edges + q_level
        m = -(tau * edge_sums[f] + q_level * comp_sums[f, c] / n_a) / q
        k, _, status = tangent_draw(0.0, y_totals[f], weight, m, q, rng)
        if status != STATUS_OK:
            return status
        steps[f] = k
        comp_sums[f, c] += n_a * k
        factor = math.exp(k)
        for u in range(combos.shape[0]):
            exp_sums[combos[u]] *= factor
            eta_shift[combos[u]] += k
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def coarse_shifts(data, s):
    """Shift θ and every φ_·p over each aggregate of every level, finest first (module docstring).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (the aggregates in ``coarse_ptr``/``coarse_cells``).
    s : GibbsState
        The chain's state: θ, φ, η and exp η updated in place, ``s.rng`` advanced.

    Returns
    -------
    int
        A ``STATUS_*`` code of :mod:`geosynth.samplers.family` (the fields stay consistent with
        η up to the failed aggregate).
    """
    G, B = s.counts.shape
    P = s.alpha.shape[0]
    mark = np.full(G, -1, dtype=np.int64)
    exp_sums, eta_shift, factors = np.empty(B), np.empty(B), np.empty(B)
    y_totals, edge_sums, steps = np.empty(1 + P), np.empty(1 + P), np.empty(1 + P)
    comp_sums = np.zeros((1 + P, data.component_size.shape[0]))
    for i in range(G):
        c = data.component[i]
        comp_sums[0, c] += s.theta[i]
        for p in range(P):
            comp_sums[1 + p, c] += s.phi[i, p]
    field_combos, field_ptr = _field_combos(data)
    taus = np.empty(1 + P)
    taus[0] = s.tau_theta[0]
    taus[1:] = s.tau_phi
    level_var = data.priors[LEVEL_VAR]
    for a in range(data.coarse_ptr.shape[0] - 1):
        cells = data.coarse_cells[data.coarse_ptr[a]:data.coarse_ptr[a + 1]]
        edges = _aggregate_sums(cells, mark, a, s.expeta, s.cell_counts, s.cell_level_counts,
                                s.theta, s.phi, data.indptr, data.indices, exp_sums, y_totals,
                                edge_sums)
        c = data.component[cells[0]]
        n_a = float(cells.shape[0])
        n_c = data.component_size[c]
        q_level = n_a * n_a / (level_var * n_c * n_c)
        status = _draw_shifts(field_combos, field_ptr, taus, s.rng, q_level, c, n_a, edges,
                              exp_sums, y_totals, edge_sums, comp_sums, steps, eta_shift)
        if status != STATUS_OK:
            return status
        for b in range(B):
            factors[b] = math.exp(eta_shift[b])
        for t in range(cells.shape[0]):
            i = cells[t]
            s.theta[i] += steps[0]
            for p in range(P):
                s.phi[i, p] += steps[1 + p]
            for b in range(B):
                s.eta[i, b] += eta_shift[b]
                s.expeta[i, b] *= factors[b]
    return STATUS_OK
