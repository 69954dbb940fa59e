"""Full conditionals of the Paiva et al. (2014) model, one home each (numba kernels).

Every scalar update uses the family ``a·x − Σ_j w_j·e^{z_j x} − q(x − m)²/2`` of
:mod:`geosynth.samplers.family`; with z_j = 1 the exponential terms collapse into one weight
``W = Σ exp(η − x)``, computed from the current linear predictor η, which every update keeps
current by adding its change to the (i, b) entries it touches (Nunes 2018, eqs. 2.10–2.14,
2.22–2.23). The per-cell draws (``draw_*_cell``) are shared by the serial sweep
(:mod:`geosynth.model.sweep`) and the chromatic one (:mod:`geosynth.model.parallel`); the
``update_*`` functions run them over the lattice in cell order.

Precisions are drawn from their Gamma conjugates (eqs. 2.15–2.17, 2.24) with the ICAR shape
``a + (G − C)/2``, the rank of ``D_W − W`` for C connected components. Nunes (2018) prints
``G/2``, which is right only for an improper-free rank-G precision; the ICAR precision matrix has
one zero eigenvalue per component.

Identifiability. The ICAR density is flat along per-component constants. Each ICAR field gets a
proper Normal prior (variance ``level_var``) on its mean within every component
(:func:`icar_prior`); the exact moves along those constants are in :mod:`geosynth.model.moves`.

Reference counts. numba increments and decrements the reference count of every array a
function receives, atomically, and does not prune the pair where the callee loops (a rejection
draw, a neighbour sum): per cell and entry of a sweep these pairs cost 14 % of its time
(measured with ``perf`` on 2026-11-27, G = 1,600). So the per-cell and per-entry draws take
the random stream as their only scratch array (the ARS fallback allocates its own), and
whole-field sums run as one call with the arrays read once (:func:`icar_quadratic`); the
pairs left, about 6 % of a sweep, are those of the draws' own arguments.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from geosynth.model.state import (
    ALPHA_VAR,
    BETA_A,
    BETA_B,
    BETA_ICAR,
    BETA_VAR,
    EPS_A,
    EPS_B,
    LEVEL_VAR,
    MH_EXACT_SHARE,
    MU_VAR,
    SAMPLER_SLICE,
    UPDATE_MH,
    level_combos_of,
)
from geosynth.samplers.ars import ars_draw
from geosynth.samplers.family import STATUS_OK
from geosynth.samplers.newton_mh import newton_mh_step
from geosynth.samplers.rng import (
    gamma,
    next_uint64,
    splitmix64,
    uniform,
    uniform_of,
    ziggurat_finish,
    ziggurat_layer,
)
from geosynth.samplers.slice import slice_step_unchecked
from geosynth.samplers.tangent import gaussian_tangent_try, tangent_centre, tangent_draw

__all__ = [
    "update_mu",
    "update_alpha",
    "icar_neighbours",
    "icar_prior",
    "icar_proposal_prior",
    "shift_cell_eta",
    "shift_cell_eta_z",
    "draw_field_cell",
    "draw_beta_cell",
    "draw_eps_cell",
    "icar_quadratic",
    "icar_quadratic_add",
    "icar_quadratic_parts",
    "draw_precisions",
    "draw_tau_eps",
    "component_sums",
    "component_means",
    "update_theta",
    "update_phi",
    "update_beta",
    "update_eps",
    "draw_eps_entries",
    "eps_tangent_pass",
    "finish_eps_try",
    "gather_refused_eps",
    "settle_gathered_eps",
    "EPS_RETRY_PASSES",
    "TRY_REFUSED",
    "TRY_ACCEPTED",
    "TRY_UNFINISHED",
    "update_precisions",
    "update_tau_eps",
]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _mh_update(update, rng):
    """Whether this update is a Newton-proposal MH step (else an exact draw).

    Under UPDATE_MH each update is an exact draw with probability :data:`MH_EXACT_SHARE`,
    whatever the state: a mixture of two kernels that both leave the conditional invariant, so
    the mixture does too. The exact draws rescue a value stranded far in the exponential tail
    of its conditional (after a large move of another parameter, or from the over-dispersed
    start), where one Newton step is too short for its reverse move to be likely and the MH
    step alone would almost never accept.
    """
    return update == UPDATE_MH and uniform(rng) >= MH_EXACT_SHARE


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _draw1(x0, a, wex, m, q, update, rng):
    """Update x0 under ``a·x − W·e^x − q(x − m)²/2`` given ``wex`` = W·e^{x0}.

    ``update`` is ``ModelData.scalar_update``: UPDATE_EXACT draws from the conditional exactly
    (:func:`~geosynth.samplers.tangent.tangent_draw`: tangent envelopes, ARS as the fallback);
    UPDATE_MH takes one Newton-proposal Metropolis–Hastings step
    (:mod:`geosynth.samplers.newton_mh`), except with probability :data:`MH_EXACT_SHARE`, when
    it draws exactly too (see :func:`_mh_update`). The stream is its one array argument (see
    :func:`~geosynth.samplers.ars.ars_draw_single`).
    """
    if _mh_update(update, rng):
        new, _, status = newton_mh_step(x0, a, wex, m, q, rng)
        return new, status
    new, _, status = tangent_draw(x0, a, wex, m, q, rng)
    return new, status


@njit(cache=True, nogil=True, error_model="numpy")
def update_mu(data, s):
    """Draw μ from its full conditional (Nunes 2018, eq. 2.10) and shift η by the change.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: the parameter, η and exp η are updated in place, ``s.rng`` advanced.

    Returns
    -------
    int
        ``STATUS_OK`` (0) or the sampler's failure status.
    """
    rng = s.rng
    G, B = s.counts.shape
    x = s.mu[0]
    total = 0.0
    for i in range(G):
        for b in range(B):
            total += s.expeta[i, b]
    new, status = _draw1(x, s.cell_counts.sum(), total, 0.0, 1.0 / data.priors[MU_VAR],
                         data.scalar_update, rng)
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
def update_alpha(data, s):
    """Draw each α_p in turn from its full conditional (Nunes 2018, eq. 2.11).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: the parameter, η and exp η are updated in place, ``s.rng`` advanced.

    Returns
    -------
    int
        ``STATUS_OK`` (0) or the sampler's failure status.
    """
    rng = s.rng
    G = s.counts.shape[0]
    for p in range(s.alpha.shape[0]):
        x = s.alpha[p]
        combos = level_combos_of(data, p)
        total = 0.0
        for i in range(G):
            for t in range(combos.shape[0]):
                total += s.expeta[i, combos[t]]
        new, status = _draw1(x, s.level_counts[p], total, 0.0, 1.0 / data.priors[ALPHA_VAR],
                             data.scalar_update, rng)
        if status != STATUS_OK:
            return status
        delta = new - x
        factor = math.exp(delta)
        s.alpha[p] = new
        for i in range(G):
            for t in range(combos.shape[0]):
                s.eta[i, combos[t]] += delta
                s.expeta[i, combos[t]] *= factor
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
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


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
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


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
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


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def draw_field_cell(field, i, a, m, q, combos, eta, expeta, update, rng):
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

    Returns
    -------
    tuple of (float, int)
        The change of ``field[i]`` and the sampler status (the field is unchanged unless OK).
    """
    x = field[i]
    total = 0.0
    for t in range(combos.shape[0]):
        total += expeta[i, combos[t]]
    new, status = _draw1(x, a, total, m, q, update, rng)
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
        new, status = slice_step_unchecked(x, czbar_i, wbuf[:B], zbuf[:B], m, q, rng)
    else:
        new, status = ars_draw(x, czbar_i, wbuf[:B], zbuf[:B], m, q, rng, work)
    if status != STATUS_OK:
        return 0.0, status
    beta[i] = new
    shift_cell_eta_z(eta, expeta, zbar, i, new - x)
    return new - x, STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def draw_eps_cell(eps, i, counts, q, eta, expeta, update, rng):
    """Draw ε_ib for every b of cell i (Nunes 2018, eq. 2.14); η and exp η follow.

    Parameters
    ----------
    eps : numpy.ndarray of float64, shape (G, B)
        The errors; row i is overwritten.
    counts : numpy.ndarray of float64, shape (G, B)
        Observed counts.
    q : float
        τ_ε.
    i, eta, expeta, update, rng
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
            new, wex, status = tangent_draw(x, counts[i, b], expeta[i, b], 0.0, q, rng)
        if status != STATUS_OK:
            return status
        eps[i, b] = new
        eta[i, b] += new - x
        expeta[i, b] = wex
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def icar_quadratic_add(field, i, first, stop, indices, total):
    """Return ``total`` plus Σ over t in [``first``, ``stop``) of (f_i − f_{indices[t]})².

    Given the slice of cell i's neighbours j > i (``ModelData.upper[i]`` to ``indptr[i + 1]``,
    :func:`~geosynth.model.state.upper_neighbours`) and summed over every cell, this is
    fᵀ(D_W − W)f with each edge counted once.

    Parameters
    ----------
    field : numpy.ndarray of float64, shape (G,)
        θ, a column of φ, or a β field.
    i : int
        The cell.
    first, stop : int
        The positions of its neighbours j > i in ``indices``.
    indices : numpy.ndarray of int64
        The lattice's adjacency (CSR column indices, sorted within each row).
    total : float
        The running sum the terms are added to, in order.

    Returns
    -------
    float
    """
    for t in range(first, stop):
        d = field[i] - field[indices[t]]
        total += d * d
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def draw_precisions(data, s, sums):
    """Gamma draws of τ_ε and each ICAR τ_β,c (Nunes 2018, eqs. 2.17, 2.24).

    The ICAR shape is ``a + (G − C)/2`` (module docstring). τ_θ and every τ_φ,p are not drawn
    here: the scale moves that follow in every sweep begin each field's rounds with that Gibbs
    draw (eqs. 2.15–2.16, :func:`geosynth.model.moves.field_scale_cycle`), which does not read
    the previous value, so a draw here would be discarded unused.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: the precisions are overwritten in the order above, ``s.rng``
        advanced.
    sums : numpy.ndarray of float64, shape (1 + K,)
        Σ ε², then each β_c·'s ICAR quadratic (read only under its ICAR prior).
    """
    rank = s.counts.shape[0] - data.component_size.shape[0]
    pr = data.priors
    draw_tau_eps(data, s, sums[0])
    for c in range(data.beta_priors.shape[0]):
        if data.beta_priors[c] == BETA_ICAR:
            s.tau_beta[c] = gamma(s.rng, pr[BETA_A] + 0.5 * rank, pr[BETA_B] + 0.5 * sums[1 + c])


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
def update_theta(data, s, comp_sum):
    """Draw θ cell by cell from its full conditional (Nunes 2018, eq. 2.12).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: the parameter, η and exp η are updated in place, ``s.rng`` advanced.
    comp_sum : numpy.ndarray of float64, shape (C,)
        Scratch: θ's sums per component, kept current as the cells move.

    Returns
    -------
    int
        ``STATUS_OK`` (0) or the sampler's failure status.
    """
    component_sums(s.theta, data, comp_sum)
    level_var = data.priors[LEVEL_VAR]
    for i in range(s.counts.shape[0]):
        m, q = icar_prior(s.theta, i, s.tau_theta[0], level_var, comp_sum, data)
        delta, status = draw_field_cell(s.theta, i, s.cell_counts[i], m, q, data.all_combos,
                                        s.eta, s.expeta, data.scalar_update, s.rng)
        if status != STATUS_OK:
            return status
        comp_sum[data.component[i]] += delta
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def update_phi(data, s, comp_sum, column):
    """Draw each φ_·p cell by cell from its full conditional (Nunes 2018, eq. 2.13).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: the parameter, η and exp η are updated in place, ``s.rng`` advanced.
    comp_sum : numpy.ndarray of float64, shape (C,)
        Scratch for the column's sums per component.
    column : numpy.ndarray of float64, shape (G,)
        Scratch for one column of φ.

    Returns
    -------
    int
        ``STATUS_OK`` (0) or the sampler's failure status.
    """
    G = s.counts.shape[0]
    level_var = data.priors[LEVEL_VAR]
    for p in range(s.alpha.shape[0]):
        combos = level_combos_of(data, p)
        for i in range(G):
            column[i] = s.phi[i, p]
        component_sums(column, data, comp_sum)
        for i in range(G):
            m, q = icar_prior(column, i, s.tau_phi[p], level_var, comp_sum, data)
            delta, status = draw_field_cell(column, i, s.cell_level_counts[i, p], m, q,
                                            combos, s.eta, s.expeta, data.scalar_update, s.rng)
            if status != STATUS_OK:
                return status
            s.phi[i, p] = column[i]
            comp_sum[data.component[i]] += delta
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def update_beta(data, s, comp_sum, c):
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


#: Flags of the vectorised passes of ε's draws (:func:`update_eps`), one per entry.
TRY_REFUSED, TRY_ACCEPTED, TRY_UNFINISHED = np.int8(0), np.int8(1), np.int8(2)
#: Passes over the entries the first pass refused before the rest get a scalar exact draw.
EPS_RETRY_PASSES = 3


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _eps_try(x0, a, wex, q, key, k, z):
    """Return try k of a pass given its normal ``z``: ``(accepted, x, W e^x)``.

    Its uniform is SplitMix64 output 2k + 1 of ``key``.
    """
    centre, sd = tangent_centre(a, wex, 0.0, q)
    return gaussian_tangent_try(x0, wex, centre, sd, z, uniform_of(splitmix64(key, 2 * k + 1)),
                                True)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _set_eps(eps, eta, expeta, k, new, new_wex):
    """Give flat entry k the draw ``new`` with ``W e^new`` = ``new_wex``; η follows."""
    eta[k] += new - eps[k]
    eps[k], expeta[k] = new, new_wex


@njit(cache=True, nogil=True, error_model="numpy")
def eps_tangent_pass(eps, counts, expeta, shift, q, key, n, flags):
    """One try of the Gaussian tangent envelope for each of the first ``n`` entries, vectorised.

    The entries are flat views of independent ε conditionals (``a·x − W e^x − q x²/2`` with
    ``a`` the count and ``W e^x`` = ``expeta``). Entry k's try takes its normal and uniform from
    outputs 2k and 2k + 1 of the SplitMix64 stream of ``key``
    (:func:`~geosynth.samplers.rng.splitmix64`) and its verdict from
    :func:`~geosynth.samplers.tangent.gaussian_tangent_try`; no calls or branches, so the loop
    runs on the whole vector width. Accepted entries (``flags`` TRY_ACCEPTED) take the proposal
    in ``eps`` and ``expeta`` and add its step to ``shift``; the others are left as they were,
    flagged TRY_REFUSED, or TRY_UNFINISHED when their 64 bits fell outside the ziggurat's
    rectangles (2.8 %: :func:`finish_eps_try` completes that normal draw and its try).
    """
    for k in range(n):
        x0, wex = eps[k], expeta[k]
        _, _, z, fast = ziggurat_layer(splitmix64(key, 2 * k))
        accepted, x, new_wex = _eps_try(x0, counts[k], wex, q, key, k, z)
        done = fast & accepted
        eps[k] = x if done else x0
        expeta[k] = new_wex if done else wex
        shift[k] += (x - x0) if done else 0.0
        flags[k] = TRY_ACCEPTED if done else (TRY_REFUSED if fast else TRY_UNFINISHED)


@njit(cache=True, nogil=True, error_model="numpy")
def finish_eps_try(x0, a, wex, q, key, k, rng):
    """Complete an unfinished try of :func:`eps_tangent_pass`: ``(accepted, x, W e^x)``.

    The same 64 bits give the ziggurat's ``(u, layer)``, which
    :func:`~geosynth.samplers.rng.ziggurat_finish` completes into the exact normal the try
    needed (from ``rng``); the same uniform then decides. Abandoning the try instead would
    leave the accepted proposals with the rectangles' step density rather than the normal's.
    """
    u, layer, _, _ = ziggurat_layer(splitmix64(key, 2 * k))
    return _eps_try(x0, a, wex, q, key, k, ziggurat_finish(u, layer, rng))


@njit(cache=True, nogil=True, error_model="numpy")
def gather_refused_eps(eps, counts, eta, expeta, q, key, flags, index, x, a, wex, rng):
    """Finish the unfinished tries of a pass over every entry; gather the refused entries.

    Returns their number m; ``index[:m]`` holds their flat positions, ``x``, ``a``, ``wex``
    their ε, count and ``W e^x`` (contiguous, for the next passes).
    """
    m = 0
    for k in range(eps.shape[0]):
        if flags[k] == TRY_ACCEPTED:
            continue
        if flags[k] == TRY_UNFINISHED:
            accepted, new, new_wex = finish_eps_try(eps[k], counts[k], expeta[k], q, key, k, rng)
            if accepted:
                _set_eps(eps, eta, expeta, k, new, new_wex)
                continue
        index[m] = k
        x[m], a[m], wex[m] = eps[k], counts[k], expeta[k]
        m += 1
    return m


@njit(cache=True, nogil=True, error_model="numpy")
def settle_gathered_eps(eps, eta, expeta, q, key, m, flags, index, x, a, wex, rng):
    """Write back the gathered entries a pass accepted; keep the refused ones, compacted.

    Unfinished tries are completed first (:func:`finish_eps_try`). Returns the number left.
    """
    left = 0
    for j in range(m):
        accepted = flags[j] == TRY_ACCEPTED
        new, new_wex = x[j], wex[j]
        if flags[j] == TRY_UNFINISHED:
            accepted, new, new_wex = finish_eps_try(x[j], a[j], wex[j], q, key, j, rng)
        k = index[j]
        if accepted:
            _set_eps(eps, eta, expeta, k, new, new_wex)
        else:
            index[left], x[left], a[left], wex[left] = k, x[j], a[j], wex[j]
            left += 1
    return left


@njit(cache=True, nogil=True, error_model="numpy")
def draw_eps_entries(eps, counts, eta, expeta, q, rng, work, flags, index):
    """Exact draws of independent ε conditionals over flat arrays, in vectorised passes.

    The passes of :func:`update_eps`: one try for every entry (:func:`eps_tangent_pass`),
    :data:`EPS_RETRY_PASSES` more over the refused ones, gathered contiguously
    (:func:`gather_refused_eps`, :func:`settle_gathered_eps`), then an exact draw of
    :func:`~geosynth.samplers.tangent.tangent_draw` for each entry still refused.

    Parameters
    ----------
    eps, counts, eta, expeta : numpy.ndarray of float64, shape (n,)
        The errors, their counts, η and exp η; ``eps``, ``eta`` and ``expeta`` are updated.
    q : float
        τ_ε (> 0).
    rng : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place (a key for each pass, and the exact draws).
    work : numpy.ndarray of float64, shape (4, n)
        Scratch.
    flags : numpy.ndarray of int8, shape (n,)
        Scratch.
    index : numpy.ndarray of int64, shape (n,)
        Scratch.

    Returns
    -------
    int
        ``STATUS_OK`` (0) or the sampler's failure status.
    """
    x, a, wex, steps = work[0], work[1], work[2], work[3]
    key = next_uint64(rng)
    eps_tangent_pass(eps, counts, expeta, eta, q, key, eps.shape[0], flags)
    m = gather_refused_eps(eps, counts, eta, expeta, q, key, flags, index, x, a, wex, rng)
    for _ in range(EPS_RETRY_PASSES):
        key = next_uint64(rng)
        eps_tangent_pass(x, a, wex, steps, q, key, m, flags)  # the steps are not needed
        m = settle_gathered_eps(eps, eta, expeta, q, key, m, flags, index, x, a, wex, rng)
    for j in range(m):
        k = index[j]
        new, new_wex, status = tangent_draw(eps[k], a[j], expeta[k], 0.0, q, rng)
        if status != STATUS_OK:
            return status
        _set_eps(eps, eta, expeta, k, new, new_wex)
    return STATUS_OK


@njit(cache=True, nogil=True, error_model="numpy")
def update_eps(data, s):
    """Draw every ε_ib from its full conditional (Nunes 2018, eq. 2.14).

    The G·B conditionals are independent given the rest of the state, so exact draws run as
    vectorised passes of one try each of the Gaussian tangent envelope
    (:func:`draw_eps_entries`: at the bench's 1,600 cells the first accepts about 75 % of the
    entries, each later one about half of the rest), and
    :func:`~geosynth.samplers.tangent.tangent_draw` for the entries still refused — mostly
    likelihood-dominated ones, for which it switches to the Gamma envelope. Every entry's
    result is an exact draw: each try is an independent proposal of a valid envelope, and a
    refused try leaves the entry as it was. 0.38 ms against 0.56 ms for the per-entry draws
    at 1,600 cells (``bench/RESULTS.md``, 2026-11-28, fifteenth session). Under
    UPDATE_MH, per-cell Newton-proposal steps (:func:`draw_eps_cell`).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: the parameter, η and exp η are updated in place, ``s.rng`` advanced;
        ``s.entry_work``, ``s.entry_flags`` and ``s.entry_index`` are scratch.

    Returns
    -------
    int
        ``STATUS_OK`` (0) or the sampler's failure status.
    """
    if data.scalar_update == UPDATE_MH:
        for i in range(s.counts.shape[0]):
            status = draw_eps_cell(s.eps, i, s.counts, s.tau_eps[0], s.eta, s.expeta,
                                   data.scalar_update, s.rng)
            if status != STATUS_OK:
                return status
        return STATUS_OK
    return draw_eps_entries(s.eps.reshape(-1), s.counts.reshape(-1), s.eta.reshape(-1),
                            s.expeta.reshape(-1), s.tau_eps[0], s.rng,
                            s.entry_work.reshape(4, -1), s.entry_flags, s.entry_index)


@njit(cache=True, nogil=True, error_model="numpy")
def icar_quadratic(field, data):
    """fᵀ(D_W − W)f = Σ over edges i~j (each once) of (f_i − f_j)², summed cell by cell.

    One call per field, with the adjacency arrays read from ``data`` once: a loop that passed
    arrays to a call per cell paid an atomic increment and decrement of their reference
    counts per cell, which numba does not prune around a loop in the callee (2.6× the time of
    this loop at G = 1,600, measured 2026-11-27).
    """
    indptr, indices, upper = data.indptr, data.indices, data.upper
    total = 0.0
    for i in range(field.shape[0]):
        total = icar_quadratic_add(field, i, upper[i], indptr[i + 1], indices, total)
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def icar_quadratic_parts(a, b, data):
    """``(aᵀQa, aᵀQb, bᵀQb)`` for Q = D_W − W, in one pass over the edges.

    The quadratic of a field split into two parts, f = a + b, is the sum
    ``aᵀQa + 2·aᵀQb + bᵀQb`` (the scale cycles' smooth and rough parts).
    """
    indptr, indices, upper = data.indptr, data.indices, data.upper
    aa, ab, bb = 0.0, 0.0, 0.0
    for i in range(a.shape[0]):
        for t in range(upper[i], indptr[i + 1]):  # the neighbours j > i
            j = indices[t]
            da = a[i] - a[j]
            db = b[i] - b[j]
            aa += da * da
            ab += da * db
            bb += db * db
    return aa, ab, bb


@njit(cache=True, nogil=True, error_model="numpy")
def _eps_squares(eps):
    total = 0.0
    for i in range(eps.shape[0]):
        for b in range(eps.shape[1]):
            total += eps[i, b] * eps[i, b]
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def update_precisions(data, s):
    """Draw τ_ε and each ICAR covariate's τ_β from their Gamma conditionals.

    Nunes (2018), eqs. 2.17 and 2.24, with the ICAR rank correction of this module's docstring;
    τ_θ and τ_φ are drawn by the scale moves (:func:`draw_precisions` says why).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: the precisions are overwritten, ``s.rng`` advanced.
    """
    n_covariates = data.beta_priors.shape[0]
    sums = np.zeros(1 + n_covariates)
    sums[0] = _eps_squares(s.eps)
    for c in range(n_covariates):
        if data.beta_priors[c] == BETA_ICAR:
            sums[1 + c] = icar_quadratic(s.beta[c], data)
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
