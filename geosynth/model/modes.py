"""Block moves of an ICAR field along its smoothest modes, where single-site updates are slow.

Single-site Gibbs updates of an ICAR field move its high-frequency part quickly and its
low-frequency part — the broad spatial trend — slowly: each θ_i is pinned by its neighbours,
so a trend changes by a random walk of small local steps. Measured on the bench's scenario
(G = 1,600, B = 12, 2 × 3,000 kept sweeps), the bulk ESS of the projection of θ on the
eigenvectors of the ICAR structure matrix Q = D_W − W is ~120–200 for the five smoothest modes
and ~6,000 for the roughest; the smooth modes set the minimum ESS of θ_i, of λ_ib, and (through
the field's shape) of the level effects.

The move here is a block update of θ and of every φ_·p at once, each restricted to the span of
its K smoothest modes (the K eigenvectors of Q with the smallest non-zero eigenvalues) and the
constant of each connected component (:func:`with_component_constants`; of the largest
:func:`joint_components` where there are many): f → f + V z_f for
each field f, drawn from the Gaussian approximation of the conditional of z = (z_θ, z_φ·1, …)
at the current state — a Newton step, as in the block updates of Knorr-Held & Rue (2002, §3)
and Rue & Held (2005, §4.4.1) — and accepted by Metropolis–Hastings
(:func:`joint_mode_proposal`). The constant's prior is the N(0, level_var) prior of the
component's mean (:func:`mode_precision`), the modes' that of the ICAR along them: the ICAR
quadratic form changes by ``2 zᵀΛVᵀf + zᵀΛz``.

Why jointly: θ and φ_·p enter the same combinations, so their trends are confounded. Moving
each field alone along its modes (the engine's move until 2026-11) left θ's smooth coordinates
with lag-10 autocorrelation ~0.5 on the bench's scenario at G = 1,600, where a half to two
thirds of their posterior variance was explained by the φ_·p's coordinates; with the joint move
the bulk ESS of θ's four smoothest coordinates went from 80–145 to 660–1,160 in 4,000 sweeps
(``bench/RESULTS.md``, 2026-11-26).

Why a fixed matrix: a Newton proposal whose covariance is the Hessian at the current state needs
the Hessian again at the proposed state for the reverse move, O(G·(1 + P)²·K²) flops twice per
move. The proposal ``N(z; H⁻¹g(f), H⁻¹)`` with ``H = H_lik + diag(prior precisions)`` and a
likelihood part ``H_lik`` that the move does not change needs only the gradient at both ends
(O(G·(1 + P)·K)): the ratio is exact for any such H. The engine takes ``H_lik`` at the state's
current exp η during burn-in (:func:`likelihood_hessian`, refreshed every few sweeps by
:func:`~geosynth.model.moves.mode_moves`) and freezes it when draws are kept; the prior
part follows the current precisions, which the move does not change either. The likelihood is
evaluated from one ``exp`` per cell and field: e^{Δη_ib} is the product of the fields' e^{V z_f}
over the fields combination b enters.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy import sparse
from scipy.sparse.linalg import eigsh

from geosynth.samplers.rng import standard_normal

__all__ = [
    "N_MODES",
    "smooth_modes",
    "with_component_constants",
    "joint_components",
    "mode_precision",
    "field_exp_sums",
    "likelihood_hessian",
    "joint_mode_proposal",
    "modes_per_field",
    "MAX_JOINT_DIMENSION",
    "apply_joint_step",
]

N_MODES = 12  # modes per field; the slow ones of the bench's lattices (module docstring)
#: Largest dimension ``D = (1 + P)·(K + C')`` of :func:`joint_mode_proposal` (K modes and C'
#: component constants per field) that :func:`modes_per_field` and :func:`joint_components`
#: allow (beyond it by one constant a field at most): its dense Cholesky costs ``D³/3`` flops
#: a sweep and its Hessian ``G·D²``. With the 12 modes of every field, an attribute of 200
#: levels made D = 2,400: 7 s a sweep on 25 cells, and a fit that never reached its first
#: progress update (nor heard Ctrl-C); a lattice of 144 islands with five levels' fields made
#: D = 936 from the constants alone: 54 ms a sweep on 576 cells.
MAX_JOINT_DIMENSION = 240
_DENSE_UP_TO = 600  # cells: below this, all eigenvectors by dense eigh (exact and cheap)


def modes_per_field(n_levels: int) -> int:
    """Return the modes per field K of a model of ``n_levels`` φ fields.

    :data:`N_MODES`, fewer where ``(1 + n_levels)·K`` would exceed
    :data:`MAX_JOINT_DIMENSION` (the component constants, :func:`joint_components`, share what
    is left), and 0 — no joint move — where one mode and one constant a field would
    (``n_levels`` ≥ 120; with 1 + P fields the move's cost grows as (1 + P)³: 48 ms a sweep at
    P = 400 and 0.4 s at P = 800 with one mode and one constant a field). Any K gives an exact
    Metropolis–Hastings move; fewer modes move the slow directions of each field less, which
    matters little beside 20 or more levels' fields sharing the cells.
    """
    per_field = MAX_JOINT_DIMENSION // (1 + int(n_levels))
    return 0 if per_field < 2 else min(N_MODES, per_field)


def smooth_modes(indptr: np.ndarray, indices: np.ndarray, n_modes: int = N_MODES
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Return the smoothest non-constant eigenvectors of the ICAR structure matrix Q = D_W − W.

    Parameters
    ----------
    indptr, indices : numpy.ndarray of int64
        The lattice's adjacency (CSR, symmetric, unit weights).
    n_modes : int, default N_MODES
        How many modes to return at most (fewer when the lattice has fewer non-constant
        modes).

    Returns
    -------
    modes : numpy.ndarray of float64, shape (G, K)
        Orthonormal columns (as ``numpy.linalg.eigh`` returns them), each orthogonal to the
        constant of every connected component.
    eigenvalues : numpy.ndarray of float64, shape (K,)
        Their eigenvalues, increasing, all > 0.

    Notes
    -----
    Q is block diagonal over the connected components, so its spectrum is the union of theirs:
    each component with more than one cell gives its smoothest ``n_modes`` eigenpairs (its one
    zero eigenvalue, the constant, dropped), and the smallest of all of them are kept (ties in
    the order of the components). Up to 600 cells a component's eigenpairs come from
    ``numpy.linalg.eigh``; above, from ``scipy.sparse.linalg.eigsh`` in shift-invert mode
    around a small negative shift (Q + s I is positive definite), started from a fixed vector so
    that the modes — and hence the draws of a seeded fit — are the same in every run. Asked of
    the whole lattice at once, eigsh needed one eigenpair more per component: 25 s for a lattice
    of 5,600 cells and 801 components (a coastline's islands), and it cannot return more than
    G − 2.
    """
    G = indptr.shape[0] - 1
    adjacency = sparse.csr_matrix((np.ones(indices.shape[0]), indices, indptr), shape=(G, G))
    structure = sparse.diags(np.asarray(adjacency.sum(axis=1)).ravel()) - adjacency
    n_components, component = sparse.csgraph.connected_components(adjacency, directed=False)
    wanted = min(n_modes, G - n_components)
    if wanted <= 0:
        return np.zeros((G, 0)), np.zeros(0)
    if n_components == 1:
        values, vectors = _nonconstant_eigenpairs(structure.tocsc(), wanted)
        return np.ascontiguousarray(vectors), np.ascontiguousarray(values)
    # Cells grouped by component (increasing within each): every block is contiguous in Q's
    # permutation, and each component's vectors stay (n_c, k) until the smallest are chosen.
    order = np.argsort(component, kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(component, minlength=n_components))])
    grouped = structure.tocsr()[order][:, order].tocsr()
    found = []
    for c in np.flatnonzero(np.diff(starts) >= 2):
        lo, hi = starts[c], starts[c + 1]
        values, vectors = _nonconstant_eigenpairs(grouped[lo:hi, lo:hi].tocsc(),
                                                  min(wanted, hi - lo - 1))
        found.extend((value, lo, hi, vectors[:, k]) for k, value in enumerate(values))
    chosen = sorted(range(len(found)), key=lambda j: found[j][0])[:wanted]  # stable: ties in order
    modes = np.zeros((G, len(chosen)))
    for column, j in enumerate(chosen):
        _, lo, hi, vector = found[j]
        modes[order[lo:hi], column] = vector
    return modes, np.array([found[j][0] for j in chosen])


def _nonconstant_eigenpairs(structure: sparse.csc_matrix, wanted: int
                            ) -> tuple[np.ndarray, np.ndarray]:
    """Return the ``wanted`` smallest non-zero eigenpairs of a connected lattice's Q, increasing."""
    n = structure.shape[0]
    if n <= _DENSE_UP_TO:
        values, vectors = np.linalg.eigh(structure.toarray())
    else:
        start = np.random.default_rng(0).standard_normal(n)
        values, vectors = eigsh(structure, k=min(wanted + 1, n - 2), sigma=-1e-3, which="LM",
                                v0=start)
        order = np.argsort(values)
        values, vectors = values[order], vectors[:, order]
    scale = max(float(values[-1]), 1.0)
    keep = np.flatnonzero(values > 1e-9 * scale)[:wanted]
    return values[keep], vectors[:, keep]


def with_component_constants(modes: np.ndarray, component: np.ndarray, n_components: int,
                             kept: np.ndarray | None = None) -> np.ndarray:
    """Append to ``modes`` the unit-norm constant of each connected component (or of ``kept``).

    Parameters
    ----------
    modes : numpy.ndarray of float64, shape (G, K)
        From :func:`smooth_modes` (orthogonal to every component's constant).
    component : numpy.ndarray of int64, shape (G,)
        Component of each cell.
    n_components : int
        Number of components C.
    kept : numpy.ndarray of int64, shape (C',), optional
        The components whose constants to append, increasing (:func:`joint_components`); all
        C by default.

    Returns
    -------
    numpy.ndarray of float64, shape (G, K + C')
        The modes, then column K + j = 1/sqrt(n_c) on the cells of component c = kept[j], 0
        elsewhere: still orthonormal.
    """
    kept = np.arange(n_components) if kept is None else np.asarray(kept, dtype=np.int64)
    sizes = np.bincount(component, minlength=n_components)
    column = np.full(n_components, -1)
    column[kept] = np.arange(kept.shape[0])
    rows = np.flatnonzero(column[component] >= 0)
    constants = np.zeros((modes.shape[0], kept.shape[0]))
    constants[rows, column[component[rows]]] = 1.0 / np.sqrt(sizes[component[rows]])
    return np.ascontiguousarray(np.hstack([modes, constants]))


def joint_components(component_size: np.ndarray, n_levels: int, n_modes: int) -> np.ndarray:
    """Return the components whose constants the joint mode move carries, increasing.

    Every component while C fits the budget ``min(N_MODES, max(1, MAX_JOINT_DIMENSION //
    (1 + n_levels) − n_modes))`` a field; beyond it the largest (ties to the lower index); none
    without a joint move (:func:`modes_per_field`). Any subset keeps the move
    exact: it is a Metropolis–Hastings move along the span of the columns, and the prior stays
    diagonal in their coordinates (the constants are in the ICAR structure's null space). The
    others' constants still move each sweep: with eight or more components the multigrid
    aggregates (:mod:`geosynth.model.coarse`) coarsen until each component is one aggregate,
    whose exact shift moves that component's mean field by field. The joint move's cost grows
    as the cube of its dimension (:data:`MAX_JOINT_DIMENSION`), and every cell's row of the
    modes is dense, so each constant column costs G more products in each of its passes.

    Parameters
    ----------
    component_size : numpy.ndarray, shape (C,)
        Cells in each component.
    n_levels : int
        P, the φ fields besides θ.
    n_modes : int
        K, the smooth modes a field (:func:`modes_per_field`).

    Returns
    -------
    numpy.ndarray of int64, shape (C',)
    """
    sizes = np.asarray(component_size)
    per_field = MAX_JOINT_DIMENSION // (1 + int(n_levels))
    if per_field < 2:  # no joint move (modes_per_field)
        return np.zeros(0, dtype=np.int64)
    budget = min(N_MODES, max(1, per_field - int(n_modes)))
    if sizes.shape[0] <= budget:
        return np.arange(sizes.shape[0], dtype=np.int64)
    largest = np.argsort(-sizes, kind="stable")[:budget]
    return np.sort(largest).astype(np.int64)


@njit(cache=True, nogil=True, error_model="numpy")
def mode_precision(eigenvalues, tau, constant_size, level_var, out):
    """Prior precisions of the coordinates of :func:`with_component_constants`' columns.

    Mode k (k < K): τλ_k, the ICAR prior along the eigenvector. Constant j of component c
    (column K + j, coordinate sqrt(n_c)·mean_c): 1/(n_c·level_var), the N(0, level_var) prior
    of the component's mean; the ICAR density is flat along it.

    Parameters
    ----------
    eigenvalues : numpy.ndarray of float64, shape (K,)
        From :func:`smooth_modes`.
    tau : float
        The field's ICAR precision.
    constant_size : numpy.ndarray of float64, shape (C',)
        Cells in each component whose constant is a column (``ModelData.mode_constant_size``).
    level_var : float
        Prior variance of a component's mean.
    out : numpy.ndarray of float64, shape (K + C',)
        Overwritten with the precisions.
    """
    K = eigenvalues.shape[0]
    for k in range(K):
        out[k] = tau * eigenvalues[k]
    for j in range(constant_size.shape[0]):
        out[K + j] = 1.0 / (constant_size[j] * level_var)


@njit(cache=True, nogil=True, error_model="numpy")
def _cholesky(a):
    """Lower Cholesky factor of the D × D matrix whose lower triangle is ``a``, in place.

    Returns ``Σ log L_kk`` (half the log-determinant), or NaN if ``a`` is not positive
    definite. Hand-written: inside the sweep D is the joint move's dimension, at most about
    :data:`MAX_JOINT_DIMENSION` (65 on the bench's lattice, where a LAPACK call's overhead and
    contiguity copies cost more than the arithmetic).
    """
    K = a.shape[0]
    half_log_det = 0.0
    for j in range(K):
        d = a[j, j]
        for m in range(j):
            d -= a[j, m] * a[j, m]
        if not d > 0.0:
            return math.nan
        d = math.sqrt(d)
        a[j, j] = d
        half_log_det += math.log(d)
        for i in range(j + 1, K):
            v = a[i, j]
            for m in range(j):
                v -= a[i, m] * a[j, m]
            a[i, j] = v / d
    return half_log_det


@njit(cache=True, nogil=True, error_model="numpy")
def _solve(chol, rhs, out):
    """Out = (L Lᵀ)⁻¹ rhs for the lower factor ``chol``."""
    K = chol.shape[0]
    for i in range(K):
        v = rhs[i]
        for m in range(i):
            v -= chol[i, m] * out[m]
        out[i] = v / chol[i, i]
    for i in range(K - 1, -1, -1):
        v = out[i]
        for m in range(i + 1, K):
            v -= chol[m, i] * out[m]
        out[i] = v / chol[i, i]


@njit(cache=True, nogil=True, error_model="numpy")
def _log_proposal(chol, half_log_det, mean, point):
    """Return log N(point; mean, (L Lᵀ)⁻¹) but its constant (``Σ log L_kk − ½‖Lᵀ(x − m)‖²``)."""
    K = chol.shape[0]
    total = 0.0
    for k in range(K):
        v = 0.0
        for m in range(k, K):
            v += chol[m, k] * (point[m] - mean[m])
        total += v * v
    return half_log_det - 0.5 * total


@njit(cache=True, nogil=True, error_model="numpy")
def _draw_gaussian(chol, mean, rng, out):
    """Out = mean + L⁻ᵀ ξ, ξ ~ N(0, I): a draw of N(mean, (L Lᵀ)⁻¹) for the lower factor L."""
    K = chol.shape[0]
    for k in range(K):
        out[k] = standard_normal(rng)
    for i in range(K - 1, -1, -1):
        v = out[i]
        for m in range(i + 1, K):
            v -= chol[m, i] * out[m]
        out[i] = v / chol[i, i]
    for k in range(K):
        out[k] += mean[k]




@njit(cache=True, nogil=True, error_model="numpy")
def _combo_fields(combo_levels):
    """Fields each combination enters: 0 (θ) and 1 + p for each of its levels p; and how many."""
    B, L = combo_levels.shape
    fields = np.zeros((B, L + 1), dtype=np.int64)
    counts = np.ones(B, dtype=np.int64)
    for b in range(B):
        for k in range(L):
            p = combo_levels[b, k]
            if p >= 0:
                fields[b, counts[b]] = 1 + p
                counts[b] += 1
    return fields, counts


@njit(cache=True, nogil=True, error_model="numpy")
def field_exp_sums(expeta, combo_levels, out):
    """Fill ``out`` (1 + P, G): row 0 Σ_b e^{η_ib}, row 1 + p Σ over the b holding level p.

    Parameters
    ----------
    expeta : numpy.ndarray of float64, shape (G, B)
        exp η.
    combo_levels : numpy.ndarray of int64, shape (B, L)
        Levels of each combination (``ModelData.combo_levels``).
    out : numpy.ndarray of float64, shape (1 + P, G)
        Overwritten.
    """
    G, B = expeta.shape
    fields, n_fields = _combo_fields(combo_levels)
    for f in range(out.shape[0]):
        for i in range(G):
            out[f, i] = 0.0
    for i in range(G):
        for b in range(B):
            for a in range(n_fields[b]):
                out[fields[b, a], i] += expeta[i, b]


@njit(cache=True, nogil=True, error_model="numpy")
def likelihood_hessian(expeta, combo_levels, modes, out):
    """Fill ``out`` with the Poisson likelihood's Hessian in the joint mode coordinates.

    Coordinate ``f·K + k`` moves field f (0: θ, 1 + p: φ_·p) along column k of ``modes``;
    entry ``(f·K + k, g·K + m)`` is ``Σ_i V_ik V_im Σ_{b ∋ f, g} e^{η_ib}`` (the combinations
    both fields enter). O(G·(1 + P)²·K²) flops.

    Parameters
    ----------
    expeta : numpy.ndarray of float64, shape (G, B)
        exp η at the state the Hessian is taken at.
    combo_levels : numpy.ndarray of int64, shape (B, L)
        Levels of each combination.
    modes : numpy.ndarray of float64, shape (G, K)
        The directions (``ModelData.modes``).
    out : numpy.ndarray of float64, shape ((1 + P)·K, (1 + P)·K)
        Overwritten (both triangles).
    """
    G, B = expeta.shape
    K = modes.shape[1]
    F = out.shape[0] // K
    fields, n_fields = _combo_fields(combo_levels)
    pair = np.zeros((F, F))
    out[:] = 0.0
    for i in range(G):
        pair[:] = 0.0
        for b in range(B):
            v = expeta[i, b]
            for a in range(n_fields[b]):
                for c in range(n_fields[b]):
                    pair[fields[b, a], fields[b, c]] += v
        for f in range(F):
            for g in range(f, F):
                e = pair[f, g]
                if e == 0.0:
                    continue
                for k in range(K):
                    w = e * modes[i, k]
                    for m in range(K if g > f else k + 1):
                        out[f * K + k, g * K + m] += w * modes[i, m]
    for f in range(F):
        for k in range(K):
            for m in range(k):  # the diagonal blocks' upper triangles
                out[f * K + m, f * K + k] = out[f * K + k, f * K + m]
        for g in range(f + 1, F):
            for k in range(K):
                for m in range(K):
                    out[g * K + m, f * K + k] = out[f * K + k, g * K + m]


@njit(cache=True, nogil=True, error_model="numpy")
def _joint_gradient(modes, cell_counts, cell_level_counts, sums, precision, coords, out):
    """Gradient of the log conditional of the joint coordinates at the state of ``sums``."""
    G, K = modes.shape
    F = sums.shape[0]
    for d in range(F * K):
        out[d] = -precision[d] * coords[d]
    for i in range(G):
        for f in range(F):
            observed = cell_counts[i] if f == 0 else cell_level_counts[i, f - 1]
            residual = observed - sums[f, i]
            for k in range(K):
                out[f * K + k] += modes[i, k] * residual


@njit(cache=True, nogil=True, error_model="numpy")
def joint_mode_proposal(theta, phi, precision, hessian, cell_counts, cell_level_counts,
                        combo_levels, expeta, modes, rng, work):
    """Propose θ → θ + V z_0, φ_·p → φ_·p + V z_{1+p} jointly; return the log MH ratio.

    The proposal is the Newton step of the log conditional of z = (z_0, …, z_P) at the
    current state with a fixed matrix ``H = hessian + diag(precision)`` and the Gaussian
    ``N(z; H⁻¹g, H⁻¹)`` around it — a position-dependent mean with a covariance the move does
    not change, so the reverse proposal needs only the gradient at the proposed state. The
    ratio is exact for any fixed ``hessian``; the engine freezes the likelihood's Hessian
    (:func:`likelihood_hessian`) after burn-in. The steps V z_f are left in ``work[1]`` and
    their exponentials in ``work[2]`` (:func:`apply_joint_step` applies them).

    Parameters
    ----------
    theta : numpy.ndarray of float64, shape (G,)
    phi : numpy.ndarray of float64, shape (G, P)
        The fields (read).
    precision : numpy.ndarray of float64, shape ((1 + P)·K,)
        Prior precision of each coordinate (:func:`mode_precision` per field, with its τ).
    hessian : numpy.ndarray of float64, shape ((1 + P)·K, (1 + P)·K)
        The likelihood part of H (any symmetric positive semi-definite matrix that does not
        depend on the fields being moved).
    cell_counts, cell_level_counts : numpy.ndarray of float64, shapes (G,) and (G, P)
        Observed (or a noise-aware chain's latent) counts per cell, and per cell and level.
    combo_levels : numpy.ndarray of int64, shape (B, L)
        Levels of each combination.
    expeta : numpy.ndarray of float64, shape (G, B)
        exp η at the current state.
    modes : numpy.ndarray of float64, shape (G, K)
        The directions.
    rng : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.
    work : numpy.ndarray of float64, shape (3, 1 + P, G)
        Scratch: field exp sums, steps, exponentials of the steps.

    Returns
    -------
    float
        ``log π(new) − log π(old) + log q(−z | new) − log q(z | old)``; NaN if H is not
        positive definite (refused).
    """
    G, K = modes.shape
    F = work.shape[1]
    D = F * K
    B = expeta.shape[1]
    sums, step, exp_step = work[0], work[1], work[2]
    chol = hessian.copy()
    for d in range(D):
        chol[d, d] += precision[d]
    half_log_det = _cholesky(chol)
    if math.isnan(half_log_det):
        return math.nan
    coords = np.zeros(D)
    for i in range(G):
        for k in range(K):
            coords[k] += modes[i, k] * theta[i]
            for f in range(1, F):
                coords[f * K + k] += modes[i, k] * phi[i, f - 1]
    field_exp_sums(expeta, combo_levels, sums)
    gradient = np.empty(D)
    mean = np.empty(D)
    z = np.empty(D)
    _joint_gradient(modes, cell_counts, cell_level_counts, sums, precision, coords, gradient)
    _solve(chol, gradient, mean)
    _draw_gaussian(chol, mean, rng, z)
    log_ratio = -_log_proposal(chol, half_log_det, mean, z)
    for d in range(D):  # the ICAR (and component-mean) priors along the modes
        log_ratio -= 0.5 * precision[d] * z[d] * (2.0 * coords[d] + z[d])
    for f in range(F):
        for i in range(G):
            v = 0.0
            for k in range(K):
                v += modes[i, k] * z[f * K + k]
            step[f, i] = v
            exp_step[f, i] = math.exp(v)
            log_ratio += (cell_counts[i] if f == 0 else cell_level_counts[i, f - 1]) * v
    fields, n_fields = _combo_fields(combo_levels)
    for f in range(F):
        for i in range(G):
            sums[f, i] = 0.0
    for i in range(G):
        for b in range(B):
            factor = 1.0
            for a in range(n_fields[b]):
                factor *= exp_step[fields[b, a], i]
            new = expeta[i, b] * factor
            log_ratio -= new - expeta[i, b]
            for a in range(n_fields[b]):
                sums[fields[b, a], i] += new
    for d in range(D):
        coords[d] += z[d]
        z[d] = -z[d]
    _joint_gradient(modes, cell_counts, cell_level_counts, sums, precision, coords, gradient)
    _solve(chol, gradient, mean)
    return log_ratio + _log_proposal(chol, half_log_det, mean, z)


@njit(cache=True, nogil=True, error_model="numpy")
def apply_joint_step(theta, phi, eta, expeta, combo_levels, work):
    """Apply the steps :func:`joint_mode_proposal` left in ``work`` to the fields, η and exp η."""
    G, B = eta.shape
    F = work.shape[1]
    step, exp_step = work[1], work[2]
    fields, n_fields = _combo_fields(combo_levels)
    for i in range(G):
        theta[i] += step[0, i]
        for f in range(1, F):
            phi[i, f - 1] += step[f, i]
        for b in range(B):
            factor = 1.0
            shift = 0.0
            for a in range(n_fields[b]):
                factor *= exp_step[fields[b, a], i]
                shift += step[fields[b, a], i]
            eta[i, b] += shift
            expeta[i, b] *= factor
