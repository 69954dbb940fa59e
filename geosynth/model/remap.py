"""Precision moves that carry an ICAR field through its cell-by-cell conditionals.

The scale moves of :func:`geosynth.model.moves.field_scale_cycle` change a field's precision τ
and multiply the whole centred field by e^u: the proposal that makes a prior-dominated field
typical under the new τ. A field that the data partly identify is typical under the new τ
only if each cell moves by its own amount — a little where the data pin it, fully where the
prior does — and a common factor is then refused unless it is small (the proposal scales tune
to |u| ≈ 0.02 at G = 1,600). This move gives each cell its own amount.

Let c_ib = f_i + ε_ib over the combinations b the field enters (n of them per cell): with the
errors absorbing every change of f (ε_ib → ε_ib − (f'_i − f_i)), η and the likelihood stay
put, and f_i's full conditional given the other cells and c is Gaussian,

    q_i(τ) = n_i·τ + q_c + n·τ_ε,   m_i(τ) = (τ Σ_{j~i} f_j + q_c·(f_i − S_c) + τ_ε Σ_b c_ib) / q_i

(the ICAR conditional, the N(0, level_var) prior of the component mean S_c/n_c with
q_c = 1/(level_var·n_c²), and the errors' N(0, 1/τ_ε) priors). The move proposes
τ' = τ·e^{−2u}, u ~ N(0, σ²), and maps the cells one after another, in increasing or (with
probability 1/2) decreasing order, through the quantiles of these conditionals:

    f'_i = m_i(τ') + (q_i(τ) / q_i(τ'))^{1/2} · (f_i − m_i(τ)),

both means taken at the current values of the other cells (the cells already mapped and those
still to come). Each step is an affine bijection of one coordinate given the others, so the
map's Jacobian is Π_i (q_i(τ)/q_i(τ'))^{1/2}, and the same steps at (τ', −u) taken in the
opposite order undo it: the move is a deterministic involution on (f, τ, u, order) and the
Metropolis–Hastings ratio is the change of the log posterior of (f, τ, ε) plus the log
Jacobians of the map and of τ' = τ·e^{−2u} (Tierney 1998; Green 1995). It is the cell-by-cell
(Gauss–Seidel) form of the conditional non-centring that Knorr-Held & Rue (2002) make with a
whole-field Cholesky factor, at the cost of two passes over the lattice's edges, with the
errors folded in as the Schur complement does for Gaussian observations (here exactly: c is
fixed by the move).

Measured on the bench's scenario (B = 12, ``bench/RESULTS.md``, 2026-11-27): with two rounds
per field the integrated autocorrelation time of the precisions fell from 9–11 sweeps to
5–7 at G = 1,600 and from 11–17 to 6–10 at G = 6,400.

The errors' precision τ_ε gets the same kind of move (:func:`remap_errors`), with η moving: the
ε_ib are independent given the rest, and each is carried through the Gaussian approximation of
its own full conditional, one Newton step from ε = 0,

    q_ib(τ) = τ + w_ib,   m_ib(τ) = (y_ib − w_ib) / q_ib(τ),   w_ib = e^{η_ib − ε_ib},

ε'_ib = m_ib(τ') + (q_ib(τ)/q_ib(τ'))^{1/2}(ε_ib − m_ib(τ)). w_ib does not involve ε_ib (the
move keeps it), so the map is again an involution with Jacobian Π (q_ib(τ)/q_ib(τ'))^{1/2}, and
the ratio is exact: the likelihood's change (one ``exp`` per entry and proposal), the errors'
priors and normaliser τ^{GB/2}, and the Jacobian. Where few records fall in each entry (the
Berlin listings: 2,203 records over 2,402 cells × 11) the errors are a prior-dominated cloud
with a few entries the data pull out, and τ_ε is slow under both its Gibbs draw (pinned by the
cloud's Σε²) and the scale move with μ (pinned by the few large errors): the move takes its
integrated autocorrelation time from 17.7 to 2.5 sweeps there with two proposals a sweep, and to
4.4–5.7 with the one it makes (:data:`REMAP_ERRORS_ROUNDS`) and one round of the scale move
after it, below the slowest τ_φ's. Where the data inform every error
(the bench's scenario, ε with variance ≈ 2) the approximation at 0 is poor, the proposal scale
tunes to |u| ≈ 0.01 and the move adds nothing to τ_ε's Gibbs draw; after burn-in it is then
skipped (:func:`remap_errors`).
"""

from __future__ import annotations

import math

from numba import njit

from geosynth.model.conditionals import component_sums, icar_quadratic
from geosynth.model.metropolis import scale_accept, scale_proposal
from geosynth.model.state import EPS_A, EPS_B, LEVEL_VAR
from geosynth.samplers.rng import uniform
from geosynth.samplers.vexp import exp_vec

__all__ = [
    "REMAP_ROUNDS",
    "REMAP_ERRORS_ROUNDS",
    "REMAP_FIELD_MIN_RATIO",
    "REMAP_ERRORS_MIN_STEP",
    "REMAP_BURN_IN_SHARE",
    "remap_runs",
    "remap_errors",
    "remap_errors_slot",
    "remap_move",
]

#: Proposals of the remap move per field and sweep.
REMAP_ROUNDS = 2

#: Proposals of :func:`remap_errors` per sweep. On the Berlin listings one proposal (and one
#: round of the scale move with μ, :func:`geosynth.model.moves.error_scale_rounds`) leaves τ_ε
#: with an integrated autocorrelation time of 4.4–5.7 sweeps against 2.6 with two proposals and
#: three rounds, below the 8–9 of the slowest τ_φ either way, for 0.7 ms (11 %) less a sweep
#: (``bench/RESULTS.md``, 2026-11-27, third session).
REMAP_ERRORS_ROUNDS = 1

#: :func:`remap_errors` runs after burn-in only if its tuned proposal sd of log τ_ε, 2σ, is at
#: least this multiple of the sd of log τ_ε under its Gibbs draw given ε, (2/(G·B))^{1/2}:
#: below, its steps are too short to add much to that free draw for the move's cost (about
#: three passes of ``exp`` over G·B per proposal; on the bench's scenario 2σ is 1.5 and 1.8
#: times the Gibbs step at G = 1,600 and 6,400, on the Berlin listings 250 times).
REMAP_ERRORS_MIN_STEP = 4.0

#: :func:`remap_move` runs after burn-in only if its tuned proposal sd is at least this share of
#: that of the field's scale move (:func:`geosynth.model.moves.field_scale_cycle`): where the
#: common factor already takes steps more than twice as long, the field is prior-dominated, and
#: mapping each cell through its conditional adds little to it (on the Berlin listings the
#: scale moves of the φ_·p tune to σ ≈ 0.5, their remap moves to 0.03–0.06).
REMAP_FIELD_MIN_RATIO = 0.5

#: Share of burn-in sweeps in which a remap move whose scale is below its threshold runs
#: anyway, so that its scale keeps tuning.
REMAP_BURN_IN_SHARE = 0.1


@njit(cache=True, nogil=True, error_model="numpy")
def remap_runs(s, slot, min_log_sd, adapt):
    """Whether the remap move of ``slot`` runs this sweep (the rule of both remap moves).

    It runs when its tuned log sd is at least ``min_log_sd``; below, only in burn-in, in a
    share :data:`REMAP_BURN_IN_SHARE` of the sweeps. The scales are frozen after burn-in, so
    whether a move runs is then fixed and the kernel one fixed composition of invariant moves.
    """
    if s.scale_log_sd[slot] >= min_log_sd:
        return True
    return adapt and uniform(s.rng) < REMAP_BURN_IN_SHARE


@njit(cache=True, nogil=True, error_model="numpy")
def _map_cells(field, tau, new_tau, n, tau_eps, start, eps_sum, comp_sum, level_var, data,
               forward):
    """Map the field through the conditionals at ``tau`` to those at ``new_tau``, in place.

    Returns ``(log_jacobian, quadratic, eps_change)``: the map's log Jacobian, the new
    fᵀ(D_W − W)f (each edge added once, when its second cell is mapped) and
    Σ_i (−2 d_i E_i + n d_i²) with d_i = f_i − start_i, the change of Σ ε² of the errors that
    absorb the field's change since ``start`` (E_i = ``eps_sum[i]``, their sum at ``start``;
    c_i = E_i + n·start_i is what the move keeps).
    """
    G = field.shape[0]
    log_jacobian = 0.0
    quadratic = 0.0
    eps_change = 0.0
    base = n * tau_eps
    # q_i depends on the cell's degree and component only: runs of equal (degree, component)
    # share the divisions, the square root and the log.
    last_degree, last_component = -1, -1
    q_level, inv_from, inv_to, ratio, log_ratio = 0.0, 0.0, 0.0, 0.0, 0.0
    for k in range(G):
        i = k if forward else G - 1 - k
        c = data.component[i]
        lo, hi = data.indptr[i], data.indptr[i + 1]
        if hi - lo != last_degree or c != last_component:
            last_degree, last_component = hi - lo, c
            n_c = data.component_size[c]
            q_level = 1.0 / (level_var * n_c * n_c)
            q_from = (hi - lo) * tau + q_level + base
            q_to = (hi - lo) * new_tau + q_level + base
            inv_from, inv_to = 1.0 / q_from, 1.0 / q_to
            ratio = math.sqrt(q_from * inv_to)
            log_ratio = math.log(ratio)
        neighbours = 0.0
        for t in range(lo, hi):
            neighbours += field[data.indices[t]]
        fixed = q_level * (field[i] - comp_sum[c]) + tau_eps * (eps_sum[i] + n * start[i])
        value = (neighbours * new_tau + fixed) * inv_to + ratio * (
            field[i] - (neighbours * tau + fixed) * inv_from)
        comp_sum[c] += value - field[i]
        field[i] = value
        log_jacobian += log_ratio
        # Edges to the cells already mapped: the neighbours j < i going forward, j > i back.
        first, stop = (lo, data.upper[i]) if forward else (data.upper[i], hi)
        for t in range(first, stop):
            diff = value - field[data.indices[t]]
            quadratic += diff * diff
        d = value - start[i]
        eps_change += d * (n * d - 2.0 * eps_sum[i])
    return log_jacobian, quadratic, eps_change


@njit(cache=True, nogil=True, error_model="numpy")
def _level_sum(comp_sum, data):
    """Σ_c (S_c / n_c)²: the component means' prior, up to −1/(2·level_var)."""
    total = 0.0
    for c in range(comp_sum.shape[0]):
        mean = comp_sum[c] / data.component_size[c]
        total += mean * mean
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def remap_move(field, tau, shape, rate, combos, slot, scale_slot, data, s, comp_sum, adapt):
    """:data:`REMAP_ROUNDS` remap proposals of (τ, field) with the errors absorbing; return τ.

    Skipped where the field's scale move does better (:data:`REMAP_FIELD_MIN_RATIO`,
    :func:`remap_runs`).

    Parameters
    ----------
    field : numpy.ndarray of float64, shape (G,)
        θ, or φ's column p (the caller stores it back).
    tau : float
        The field's precision.
    shape, rate : float
        Its Gamma prior.
    combos : numpy.ndarray of int64
        The combinations the field enters: every b for θ, those holding level p for φ_·p.
    slot : int
        The proposal scale in ``s.scale_log_sd`` (log σ of u), tuned towards
        :data:`~geosynth.model.metropolis.SCALE_TARGET_ACCEPTANCE` when ``adapt``.
    scale_slot : int
        The proposal scale of the field's scale move (the reference of the skip rule).
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: ε is updated in place, ``s.rng`` advanced; ``s.cell_work`` is
        scratch.
    comp_sum : numpy.ndarray of float64, shape (C,)
        Scratch: the field's component sums.
    adapt : bool
        Burn-in: tune the proposal scale.

    Returns
    -------
    float
        The new τ.
    """
    if not remap_runs(s, slot, s.scale_log_sd[scale_slot] + math.log(REMAP_FIELD_MIN_RATIO),
                      adapt):
        return tau
    G = field.shape[0]
    n = combos.shape[0]
    rank = G - data.component_size.shape[0]
    level_var = data.priors[LEVEL_VAR]
    tau_eps = s.tau_eps[0]
    start, eps_sum, saved = s.cell_work[0], s.cell_work[1], s.cell_work[2]
    for i in range(G):
        start[i] = field[i]
        total = 0.0
        for t in range(n):
            total += s.eps[i, combos[t]]
        eps_sum[i] = total
    quadratic = icar_quadratic(field, data)
    component_sums(field, data, comp_sum)
    level = _level_sum(comp_sum, data)
    eps_change = 0.0
    moved = False
    for _ in range(REMAP_ROUNDS):
        u, _ = scale_proposal(s, slot)
        new_tau = tau * math.exp(-2.0 * u)
        forward = uniform(s.rng) < 0.5
        for i in range(G):
            saved[i] = field[i]
        log_jacobian, new_quadratic, new_eps_change = _map_cells(
            field, tau, new_tau, n, tau_eps, start, eps_sum, comp_sum, level_var, data, forward)
        new_level = _level_sum(comp_sum, data)
        # The Gamma prior and τ's Jacobian are scale_accept's; here the map's Jacobian, the
        # ICAR normaliser τ^{(G − C)/2}, its quadratic form, the component means' priors and
        # the errors' priors.
        change = (log_jacobian - rank * u
                  - 0.5 * (new_tau * new_quadratic - tau * quadratic)
                  - 0.5 * (new_level - level) / level_var
                  - 0.5 * tau_eps * (new_eps_change - eps_change))
        accept, _ = scale_accept(s, slot, adapt, change, u, tau, shape, rate)
        if accept:
            tau, quadratic, level, eps_change = new_tau, new_quadratic, new_level, new_eps_change
            moved = True
        else:
            for i in range(G):
                field[i] = saved[i]
            component_sums(field, data, comp_sum)
    if moved:
        for i in range(G):
            d = field[i] - start[i]
            for t in range(n):
                s.eps[i, combos[t]] -= d
    return tau


@njit(cache=True, nogil=True, error_model="numpy")
def _map_errors(s, tau, new_tau, rest_exp, mapped):
    """Map every ε_ib from its approximate conditional at ``tau`` to that at ``new_tau``.

    ``rest_exp`` holds w_ib = e^{η_ib − ε_ib}; the mapped values are written to ``mapped``.
    Returns ``(log_jacobian, linear, squares, exp_change)``: the map's log Jacobian,
    Σ y_ib (ε'_ib − ε_ib), Σ ε'², and Σ (e^{η'} − e^{η}).
    """
    G, B = s.counts.shape
    log_jacobian = 0.0
    linear = 0.0
    squares = 0.0
    exp_change = 0.0
    for i in range(G):
        product = 1.0
        for b in range(B):
            eps = s.eps[i, b]
            w = rest_exp[i, b]
            y = s.counts[i, b]
            q_from = tau + w
            q_to = new_tau + w
            ratio = math.sqrt(q_from / q_to)
            value = (y - w) / q_to + ratio * (eps - (y - w) / q_from)
            mapped[i, b] = value
            product *= ratio
            if not 1e-200 < product < 1e200:  # many combinations and a long step
                log_jacobian += math.log(product)
                product = 1.0
            linear += y * (value - eps)
            squares += value * value
            exp_change += w * math.exp(value) - s.expeta[i, b]
        log_jacobian += math.log(product)
    return log_jacobian, linear, squares, exp_change


@njit(cache=True, nogil=True, error_model="numpy")
def _move_errors(s, rest_exp, mapped):
    """Set ε to ``mapped``, with η and exp η (= w·e^ε) following."""
    G, B = s.counts.shape
    for i in range(G):
        for b in range(B):
            value = mapped[i, b]
            s.eta[i, b] += value - s.eps[i, b]
            s.eps[i, b] = value
            s.expeta[i, b] = rest_exp[i, b] * exp_vec(value)  # vectorised (vexp)


@njit(cache=True, nogil=True, error_model="numpy")
def remap_errors_slot(s):
    """Return the slot of :func:`remap_errors`' proposal scale: the last of ``s.scale_log_sd``."""
    return s.scale_log_sd.shape[0] - 1


@njit(cache=True, nogil=True, error_model="numpy")
def remap_errors(data, s, adapt):
    """:data:`REMAP_ERRORS_ROUNDS` remap proposals of (τ_ε, ε) with η moving; return if it ran.

    Skipped where its steps are short against those of τ_ε's Gibbs draw
    (:data:`REMAP_ERRORS_MIN_STEP`, :func:`remap_runs`); the module docstring has the move.

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays.
    s : GibbsState
        The chain's state: τ_ε, ε, η and exp η are updated in place, ``s.rng`` advanced;
        ``s.entry_work`` is scratch.
    adapt : bool
        Burn-in: tune the proposal scale (:func:`remap_errors_slot`).

    Returns
    -------
    bool
        Whether the move ran (made its proposals) in this sweep.
    """
    G, B = s.counts.shape
    slot = remap_errors_slot(s)
    gibbs_sd = math.sqrt(2.0 / (G * B))  # of log τ_ε given ε; the move's step is 2σ
    if not remap_runs(s, slot, math.log(0.5 * REMAP_ERRORS_MIN_STEP * gibbs_sd), adapt):
        return False
    rest_exp, mapped = s.entry_work[0], s.entry_work[1]
    squares = 0.0
    for i in range(G):
        for b in range(B):
            eps = s.eps[i, b]
            rest_exp[i, b] = math.exp(s.eta[i, b] - eps)  # fixed by the move
            squares += eps * eps
    tau = s.tau_eps[0]
    for _ in range(REMAP_ERRORS_ROUNDS):
        u, _ = scale_proposal(s, slot)
        new_tau = tau * math.exp(-2.0 * u)
        log_jacobian, linear, new_squares, exp_change = _map_errors(s, tau, new_tau, rest_exp,
                                                                    mapped)
        # scale_accept adds the Gamma prior and τ's Jacobian; here the map's Jacobian, the
        # normaliser τ^{GB/2} of the errors' priors, their quadratic form and the likelihood.
        change = (log_jacobian - G * B * u - 0.5 * (new_tau * new_squares - tau * squares)
                  + linear - exp_change)
        accept, _ = scale_accept(s, slot, adapt, change, u, tau, data.priors[EPS_A],
                                 data.priors[EPS_B])
        if accept:
            _move_errors(s, rest_exp, mapped)
            tau, squares = new_tau, new_squares
    s.tau_eps[0] = tau
    return True
