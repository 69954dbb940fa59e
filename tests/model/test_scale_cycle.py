"""The scale cycles of θ and φ_·p (geosynth.model.moves.field_scale_cycle): the rough-part move.

The rough-part move scales a field's part outside its K smoothest modes and component constants
together with the precision (τ → τe^{−2u}) and the intercept; its ratio has two terms no other
move has: −K·u (the Jacobian of the scaled subspace against the ICAR normaliser) and the
change of τ times the smooth part's ICAR energy. Checked by its stationary law: on a small
lattice (20 cells in two components, K = 12 modes), a chain of exact single-site draws of μ,
θ_i and ε_ib with Gibbs draws of τ_θ (the reference) and the same chain with the cycle instead
of the Gibbs draw — the cycle's other moves made inert by a proposal scale of e^{−50}, so τ_θ
moves by its Gibbs draws and the rough-part move alone — must give log τ_θ and μ the same law
(two-sample KS on thinned draws). Against a reference whose τ_θ target carries a τ^{1/2} tilt
(a planted error the size of a wrong Jacobian term) the same test rejects, so it has the power
to see such an error; leaving out the −K·u term fails it too (checked on a scratch copy).
"""

import numpy as np
import pytest
from numba import njit
from scipy import stats

from geosynth.model.conditionals import icar_quadratic, update_eps, update_mu, update_theta
from geosynth.model.moves import (
    KIND_THETA,
    field_scale_cycle,
    field_scale_slots,
    smooth_rough_split,
)
from geosynth.model.state import THETA_A, THETA_B, compute_eta
from geosynth.samplers.rng import gamma, make_streams
from tests.model.lattices import split_lattice_chain

THIN = 40
DRAWS = 4000


def _case(seed):
    data, state, _ = split_lattice_chain(seed)
    compute_eta(data, state)
    return data, state


def _slots(state):
    """Slots of θ's whole-field, split and rough-part moves."""
    split, _, rough = field_scale_slots(state)
    return 0, split, rough


@njit
def _chain(data, s, comp_sum, n_draws, thin, cycle, tilt, slots, out):
    """Exact draws of μ, θ_i, ε_ib, then τ_θ's Gibbs draw (tilted by τ^tilt) or the cycle."""
    shape, rate = data.priors[THETA_A], data.priors[THETA_B]
    gibbs_shape = shape + 0.5 * (s.theta.shape[0] - data.component_size.shape[0]) + tilt
    for row in range(n_draws):
        for _ in range(thin):
            update_mu(data, s)
            update_theta(data, s, comp_sum)
            update_eps(data, s)
            if cycle:
                s.tau_theta[0] = field_scale_cycle(
                    s.theta, s.tau_theta[0], shape, rate, KIND_THETA, 0, data, s, comp_sum,
                    slots[0], slots[1], slots[2], False)
            else:
                q = icar_quadratic(s.theta, data)
                s.tau_theta[0] = gamma(s.rng, gibbs_shape, rate + 0.5 * q)
        out[row, 0] = np.log(s.tau_theta[0])
        out[row, 1] = s.mu[0] + np.mean(s.theta)


def _draws(cycle, tilt, seed):
    data, state = _case(3)
    state.rng[:] = make_streams(seed, 1)[0]
    slots = np.array(_slots(state), dtype=np.int64)
    state.scale_log_sd[slots[0]] = state.scale_log_sd[slots[1]] = -50.0  # u ≈ 0: no move
    state.scale_log_sd[slots[2]] = np.log(0.5)
    comp_sum = np.zeros(data.component_size.shape[0])
    warm = np.empty((50, 2))
    _chain(data, state, comp_sum, 50, THIN, cycle, tilt, slots, warm)
    out = np.empty((DRAWS, 2))
    _chain(data, state, comp_sum, DRAWS, THIN, cycle, tilt, slots, out)
    return out


@pytest.fixture(scope="module")
def with_rough_move():
    return _draws(True, 0.0, 11)


@pytest.mark.parametrize("tilt", [0.0, 0.5])
def test_rough_part_move_keeps_the_law_of_the_precision(with_rough_move, tilt):
    reference = _draws(False, tilt, 12)
    for k, name in enumerate(["log tau_theta", "mu + mean theta"]):
        for draws in (with_rough_move, reference):  # thinned draws are nearly independent
            lag1 = np.corrcoef(draws[1:, k], draws[:-1, k])[0, 1]
            assert abs(lag1) < 0.15, (name, lag1)
    p_value = stats.ks_2samp(with_rough_move[:, 0], reference[:, 0]).pvalue
    if tilt:
        assert p_value < 1e-4, p_value
    else:
        assert p_value > 1e-3, p_value
        assert stats.ks_2samp(with_rough_move[:, 1], reference[:, 1]).pvalue > 1e-3


def test_rough_part_move_changes_the_precision_and_keeps_eta_in_step():
    data, state = _case(5)
    slots = _slots(state)
    state.scale_log_sd[slots[0]] = state.scale_log_sd[slots[1]] = -50.0
    state.scale_log_sd[slots[2]] = np.log(0.5)
    comp_sum = np.zeros(data.component_size.shape[0])
    taus = []
    for _ in range(200):
        state.tau_theta[0] = field_scale_cycle(
            state.theta, state.tau_theta[0], data.priors[THETA_A], data.priors[THETA_B],
            KIND_THETA, 0, data, state, comp_sum, *slots, False)
        taus.append(state.tau_theta[0])
    eta, expeta = state.eta.copy(), state.expeta.copy()
    compute_eta(data, state)
    np.testing.assert_allclose(eta, state.eta, atol=1e-9)
    np.testing.assert_allclose(expeta, state.expeta, rtol=1e-9)
    assert np.std(np.log(taus)) > 0.05  # the rough-part move does move τ


def test_smooth_rough_split_is_the_orthogonal_projection_on_the_modes():
    data, state = _case(5)
    K = data.mode_eigenvalues.shape[0]
    dev = np.random.default_rng(0).normal(size=state.theta.shape[0])
    for c in range(data.component_size.shape[0]):  # centred in each component
        dev[data.component == c] -= dev[data.component == c].mean()
    smooth, rough = np.empty_like(dev), dev.copy()
    smooth_rough_split(rough, data.modes, K, smooth, rough)
    modes = data.modes[:, :K]
    np.testing.assert_allclose(smooth, modes @ (modes.T @ dev), atol=1e-12)
    np.testing.assert_allclose(smooth + rough, dev, atol=1e-12)
    np.testing.assert_allclose(data.modes.T @ rough, 0.0, atol=1e-10)
