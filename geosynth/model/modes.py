"""Block moves of an ICAR field along its smoothest modes, where single-site updates are slow.

Single-site Gibbs updates of an ICAR field move its high-frequency part quickly and its
low-frequency part — the broad spatial trend — slowly: each θ_i is pinned by its neighbours,
so a trend changes by a random walk of small local steps. Measured on the bench's scenario
(G = 1,600, B = 12, 2 × 3,000 kept sweeps), the bulk ESS of the projection of θ on the
eigenvectors of the ICAR structure matrix Q = D_W − W is ~120–200 for the five smoothest modes
and ~6,000 for the roughest; the smooth modes set the minimum ESS of θ_i, of λ_ib, and (through
the field's shape) of the level effects.

The move here is a block update of the field restricted to the span of its K smoothest modes
(the K eigenvectors of Q with the smallest non-zero eigenvalues): f → f + V z, z ∈ R^K, drawn
from the Gaussian approximation of the conditional of z at the current state — one Newton step
on ``τΛ + Vᵀ diag(E) V`` (Λ the eigenvalues, E_i = Σ_b e^{η_ib} over the entries the field
enters), as in the block updates of Knorr-Held & Rue (2002, §3) and Rue & Held (2005, §4.4.1) —
and accepted by Metropolis–Hastings with the reverse proposal from the proposed state. The
modes are orthogonal to each component's constant, so the component means (and their priors)
do not move, and the ICAR quadratic form changes by ``2 zᵀΛVᵀf + zᵀΛz``. Along smooth modes the
likelihood aggregates many cells, so the Gaussian approximation is close and the move is
accepted often; it costs O(G·K²) flops and G exps, no factorisation of a G × G matrix.

The engine moves each field along its smooth modes *and* the constant of each connected
component (:func:`with_component_constants`), whose prior is the N(0, level_var) prior of the
component's mean (:func:`mode_precision`). The constant moves the field's level, and with it
the identified intercept μ + mean θ (or α_p + mean φ_·p), jointly with the broad trend: on the
bench's scenario at G = 1,600 the identified μ correlated −0.45 with θ's fourth smoothest mode
(the data weigh the cells by their intensity, the summary by their number), and the joint move
lifted the ESS of μ from 534 to ~1,000 and of the worst α_p from 741 to ~1,240 (2 × 8,000
sweeps; ``bench/RESULTS.md``, 2026-11-26). The exact shift move (μ + k, θ − k) then splits
the level between the intercept and the field (:mod:`geosynth.model.moves`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy import sparse
from scipy.sparse.linalg import eigsh

from geosynth.samplers.rng import standard_normal, uniform

__all__ = [
    "N_MODES",
    "smooth_modes",
    "with_component_constants",
    "mode_precision",
    "mode_proposal",
    "mode_move",
]

N_MODES = 12  # modes per field; the slow ones of the bench's lattices (module docstring)
_DENSE_UP_TO = 600  # cells: below this, all eigenvectors by dense eigh (exact and cheap)


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
    Up to 600 cells every eigenpair comes from ``numpy.linalg.eigh``; above, the smallest are
    found by ``scipy.sparse.linalg.eigsh`` in shift-invert mode around a small negative shift
    (Q + s I is positive definite), started from a fixed vector so that the modes — and hence
    the draws of a seeded fit — are the same in every run. The null space (one constant per
    component) is dropped by its eigenvalue.
    """
    G = indptr.shape[0] - 1
    adjacency = sparse.csr_matrix((np.ones(indices.shape[0]), indices, indptr), shape=(G, G))
    structure = sparse.diags(np.asarray(adjacency.sum(axis=1)).ravel()) - adjacency
    n_components = sparse.csgraph.connected_components(adjacency, directed=False)[0]
    wanted = min(n_modes, G - n_components)
    if wanted <= 0:
        return np.zeros((G, 0)), np.zeros(0)
    if G <= _DENSE_UP_TO:
        values, vectors = np.linalg.eigh(structure.toarray())
    else:
        start = np.random.default_rng(0).standard_normal(G)
        values, vectors = eigsh(structure.tocsc(), k=min(wanted + n_components, G - 2),
                                sigma=-1e-3, which="LM", v0=start)
        order = np.argsort(values)
        values, vectors = values[order], vectors[:, order]
    scale = max(float(values[-1]), 1.0)
    keep = np.flatnonzero(values > 1e-9 * scale)[:wanted]
    return np.ascontiguousarray(vectors[:, keep]), np.ascontiguousarray(values[keep])


def with_component_constants(modes: np.ndarray, component: np.ndarray,
                             n_components: int) -> np.ndarray:
    """Append to ``modes`` the unit-norm constant of each connected component.

    Parameters
    ----------
    modes : numpy.ndarray of float64, shape (G, K)
        From :func:`smooth_modes` (orthogonal to every component's constant).
    component : numpy.ndarray of int64, shape (G,)
        Component of each cell.
    n_components : int
        Number of components C.

    Returns
    -------
    numpy.ndarray of float64, shape (G, K + C)
        The modes, then column K + c = 1/sqrt(n_c) on component c's cells, 0 elsewhere: still
        orthonormal.
    """
    constants = np.zeros((modes.shape[0], n_components))
    sizes = np.bincount(component, minlength=n_components)
    constants[np.arange(modes.shape[0]), component] = 1.0 / np.sqrt(sizes[component])
    return np.ascontiguousarray(np.hstack([modes, constants]))


@njit(cache=True, nogil=True, error_model="numpy")
def mode_precision(eigenvalues, tau, component_size, level_var, out):
    """Prior precisions of the coordinates of :func:`with_component_constants`' columns.

    Mode k (k < K): τλ_k, the ICAR prior along the eigenvector. Constant of component c
    (column K + c, coordinate sqrt(n_c)·mean_c): 1/(n_c·level_var), the N(0, level_var) prior
    of the component's mean; the ICAR density is flat along it.

    Parameters
    ----------
    eigenvalues : numpy.ndarray of float64, shape (K,)
        From :func:`smooth_modes`.
    tau : float
        The field's ICAR precision.
    component_size : numpy.ndarray of float64, shape (C,)
        Cells in each component.
    level_var : float
        Prior variance of a component's mean.
    out : numpy.ndarray of float64, shape (K + C,)
        Overwritten with the precisions.
    """
    K = eigenvalues.shape[0]
    for k in range(K):
        out[k] = tau * eigenvalues[k]
    for c in range(component_size.shape[0]):
        out[K + c] = 1.0 / (component_size[c] * level_var)


@njit(cache=True, nogil=True, error_model="numpy")
def _newton(modes, precision, coords, observed, exp_sum, hessian, gradient):
    """Fill the Hessian ``diag(precision) + Vᵀ diag(E) V`` and the gradient at z = 0.

    Of the log conditional of z; ``precision`` is each coordinate's prior precision (τλ_k for
    a mode, :func:`mode_precision`).
    """
    G, K = modes.shape
    for k in range(K):
        gradient[k] = -precision[k] * coords[k]
        for m in range(k + 1):
            hessian[k, m] = 0.0
        hessian[k, k] = precision[k]
    for i in range(G):
        residual = observed[i] - exp_sum[i]
        row = modes[i]
        for k in range(K):
            vk = row[k]
            gradient[k] += vk * residual
            weighted = vk * exp_sum[i]
            for m in range(k + 1):
                hessian[k, m] += weighted * row[m]


@njit(cache=True, nogil=True, error_model="numpy")
def _cholesky(a):
    """Lower Cholesky factor of the K × K matrix whose lower triangle is ``a``, in place.

    Returns ``Σ log L_kk`` (half the log-determinant), or NaN if ``a`` is not positive
    definite. Hand-written: K ≤ 16 inside the sweep, where a LAPACK call's overhead and
    contiguity copies cost more than the arithmetic.
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
def _approximation(modes, precision, coords, observed, exp_sum, hessian, gradient, mean):
    """Gaussian approximation N(mean, (L Lᵀ)⁻¹) of the conditional of z at z = 0.

    Leaves the Cholesky factor L of the Newton matrix in ``hessian`` and the Newton step in
    ``mean``; returns ``Σ log L_kk``, NaN if the matrix is not positive definite.
    """
    _newton(modes, precision, coords, observed, exp_sum, hessian, gradient)
    half_log_det = _cholesky(hessian)
    if not math.isnan(half_log_det):
        _solve(hessian, gradient, mean)
    return half_log_det


@njit(cache=True, nogil=True, error_model="numpy")
def mode_proposal(field, precision, observed, combos, expeta, modes, rng, work):
    """Propose the move f → f + V z of :func:`mode_move`; return its log Metropolis–Hastings ratio.

    The step V z is left in ``work[1]`` and its exponential in ``work[2]``; the ratio is
    ``log π(f + Vz) − log π(f) + log q(−z | f + Vz) − log q(z | f)`` (NaN if a Newton matrix is
    not positive definite, which cannot happen for τ > 0 but is refused rather than trusted).
    Parameters as in :func:`mode_move`.
    """
    G, K = modes.shape
    exp_sum, step, exp_step = work[0], work[1], work[2]
    hessian = np.empty((K, K))
    gradient = np.empty(K)
    coords = np.zeros(K)
    mean = np.empty(K)
    z = np.empty(K)
    for i in range(G):
        total = 0.0
        for t in range(combos.shape[0]):
            total += expeta[i, combos[t]]
        exp_sum[i] = total
        for k in range(K):
            coords[k] += modes[i, k] * field[i]
    half_log_det = _approximation(modes, precision, coords, observed, exp_sum, hessian,
                                  gradient, mean)
    if math.isnan(half_log_det):
        return math.nan
    # z = mean + L^{-T} ξ: solve Lᵀ x = ξ.
    for k in range(K):
        z[k] = standard_normal(rng)
    for i in range(K - 1, -1, -1):
        v = z[i]
        for m in range(i + 1, K):
            v -= hessian[m, i] * z[m]
        z[i] = v / hessian[i, i]
    for k in range(K):
        z[k] += mean[k]
    log_ratio = -_log_proposal(hessian, half_log_det, mean, z)
    # Log-likelihood and ICAR prior change of f → f + V z.
    for k in range(K):
        log_ratio -= 0.5 * precision[k] * z[k] * (2.0 * coords[k] + z[k])
    for i in range(G):
        v = 0.0
        for k in range(K):
            v += modes[i, k] * z[k]
        step[i] = v
        exp_step[i] = math.exp(v)
        log_ratio += observed[i] * v - exp_sum[i] * (exp_step[i] - 1.0)
        exp_sum[i] *= exp_step[i]
    # Reverse proposal: from the proposed state, the move −z.
    for k in range(K):
        coords[k] += z[k]
    half_log_det = _approximation(modes, precision, coords, observed, exp_sum, hessian,
                                  gradient, mean)
    if math.isnan(half_log_det):
        return math.nan
    for k in range(K):
        z[k] = -z[k]
    return log_ratio + _log_proposal(hessian, half_log_det, mean, z)


@njit(cache=True, nogil=True, error_model="numpy")
def mode_move(field, precision, observed, combos, eta, expeta, modes, rng, work):
    """One Metropolis–Hastings block move of ``field`` along its smooth modes; return accepted.

    Parameters
    ----------
    field : numpy.ndarray of float64, shape (G,)
        θ or a copy of a column of φ, updated in place if the move is accepted.
    precision : numpy.ndarray of float64, shape (K,)
        Prior precision of each coordinate z_k (:func:`mode_precision`).
    observed : numpy.ndarray of float64, shape (G,)
        Observed count of each cell over ``combos``.
    combos : numpy.ndarray of int64
        The combinations the field enters.
    eta, expeta : numpy.ndarray of float64, shape (G, B)
        Linear predictor and its exponential, moved with the field.
    modes : numpy.ndarray of float64, shape (G, K)
        Orthonormal directions of the move: :func:`smooth_modes`, or those with the component
        constants of :func:`with_component_constants`.
    rng : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.
    work : numpy.ndarray of float64, shape (4, G)
        Scratch; rows 0–2 are overwritten (``observed`` may be row 3).

    Returns
    -------
    bool
        Whether the move was accepted.
    """
    if modes.shape[1] == 0:
        return False
    log_ratio = mode_proposal(field, precision, observed, combos, expeta, modes, rng, work)
    if not math.log(uniform(rng)) < log_ratio:  # NaN: refused
        return False
    step, exp_step = work[1], work[2]
    for i in range(field.shape[0]):
        field[i] += step[i]
        for t in range(combos.shape[0]):
            b = combos[t]
            eta[i, b] += step[i]
            expeta[i, b] *= exp_step[i]
    return True
