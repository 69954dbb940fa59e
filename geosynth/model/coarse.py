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
``W = Σ_{i∈A} Σ_b e^{η_ib}``; the ICAR prior changes only on the edges (i, j) leaving A,
``−τ/2 Σ (f_i + k − f_j)²``, and the N(0, level_var) prior of the component mean (sum S_c over
n_c cells) by ``−(S_c + n_A k)² / (2 level_var n_c²)`` — together a Gaussian in k. A level costs
one pass over the touched entries of exp η (read to sum, multiplied by e^k after the draw) and
one exp per aggregate.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy import sparse

from geosynth.model.conditionals import component_sums
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
    sizes, members = [], []
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
            sizes.append(counts[a])
        to_agg = sparse.csr_matrix((np.ones(agg.shape[0]), (np.arange(agg.shape[0]), agg)),
                                   shape=(agg.shape[0], n_agg))
        graph = (to_agg.T @ graph @ to_agg).tocsr()
        graph.setdiag(0)
        graph.eliminate_zeros()
    ptr = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
    cells = (np.concatenate(members) if members else np.empty(0)).astype(np.int64)
    return ptr, cells


@njit(cache=True, nogil=True, error_model="numpy")
def _shift_aggregate(field, cells, tau, level_var, comp_sum, combos, y_total, data, s, mark,
                     stamp):
    """Draw and apply the shift k of ``field`` over ``cells`` (one aggregate); return a status."""
    for t in range(cells.shape[0]):
        mark[cells[t]] = stamp
    edges = 0.0
    edge_sum = 0.0  # Σ over leaving edges of (f_i − f_j)
    exp_total = 0.0
    for t in range(cells.shape[0]):
        i = cells[t]
        for e in range(data.indptr[i], data.indptr[i + 1]):
            j = data.indices[e]
            if mark[j] != stamp:
                edges += 1.0
                edge_sum += field[i] - field[j]
        for u in range(combos.shape[0]):
            exp_total += s.expeta[i, combos[u]]
    c = data.component[cells[0]]
    n_c = data.component_size[c]
    n_a = float(cells.shape[0])
    q_level = n_a * n_a / (level_var * n_c * n_c)
    q = tau * edges + q_level
    m = -(tau * edge_sum + q_level * comp_sum[c] / n_a) / q
    k, _, status = tangent_draw(0.0, y_total, exp_total, m, q, s.rng, s.work, s.w1, s.ones)
    if status != STATUS_OK:
        return status
    factor = math.exp(k)
    for t in range(cells.shape[0]):
        i = cells[t]
        field[i] += k
        for u in range(combos.shape[0]):
            b = combos[u]
            s.eta[i, b] += k
            s.expeta[i, b] *= factor
    comp_sum[c] += n_a * k
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def coarse_shifts(data, s, comp_sum):
    """Shift θ over each aggregate of every level, finest first (module docstring).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (the aggregates in ``coarse_ptr``/``coarse_cells``).
    s : GibbsState
        The chain's state: θ, η and exp η updated in place, ``s.rng`` advanced.
    comp_sum : numpy.ndarray of float64, shape (C,)
        Scratch for θ's component sums.

    Returns
    -------
    int
        A ``STATUS_*`` code of :mod:`geosynth.samplers.family` (θ stays consistent with η
        up to the failed aggregate).
    """
    mark = np.full(s.theta.shape[0], -1, dtype=np.int64)
    level_var = data.priors[LEVEL_VAR]
    component_sums(s.theta, data, comp_sum)
    for a in range(data.coarse_ptr.shape[0] - 1):
        cells = data.coarse_cells[data.coarse_ptr[a]:data.coarse_ptr[a + 1]]
        y_total = 0.0
        for t in range(cells.shape[0]):
            y_total += s.cell_counts[cells[t]]
        status = _shift_aggregate(s.theta, cells, s.tau_theta[0], level_var, comp_sum,
                                  data.all_combos, y_total, data, s, mark, a)
        if status != STATUS_OK:
            return status
    return STATUS_OK
