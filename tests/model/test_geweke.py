"""Geweke's (2004) "getting it right" test of every sweep the engine runs.

A successive-conditional simulator alternates one sweep of the engine given the counts with a
fresh draw of the counts given the parameters, c ~ Poisson(exp η) (for a noise-aware fit also
the released counts, c̃ = c + discrete Laplace noise). Each half leaves the joint law of the
parameters and the data invariant when the sweep leaves the posterior invariant; the chain's
stationary law is then that joint law, so the marginal of every parameter is its prior, known
in closed form. For each tracked quantity x with prior CDF F, u = F(x) must be U(0, 1): we
compare the mean and variance of u with 1/2 and 1/12 over ~10⁵ sweeps, in z units of the Monte
Carlo standard error of independent chains (:func:`arviz.mcse`). u is bounded, so a rare
excursion into a prior's tail cannot dominate the average as it does for moments of x.

This checks each kernel's invariance more directly than SBC: every move of a sweep (Gibbs
draws, MH corrections, shifts, scale and mode moves, coarse shifts, the chromatic blocks, the
GMRF block proposals, the noise-aware collapsed moves and latent counts) runs ~10⁵ times
against an exact target. Two planted errors must fail the same test: a precision drawn with
the Gamma shape of a full-rank field, and a noise-aware fit told the wrong noise scale.

Prior marginals (Paiva et al. 2014 with the level priors of ``conditionals.icar_prior``):

- μ ~ N(0, ``mu_var``), α ~ N(0, ``alpha_var``); the mean of each ICAR field over the (one)
  component ~ N(0, ``level_var``), so μ + mean θ ~ N(0, ``mu_var`` + ``level_var``).
- τ ~ Gamma(shape a, rate r).
- The centred part of an ICAR field given τ is N(0, H Q⁺ H / τ), with Q = D − W the lattice's
  ICAR structure and H the centring matrix; over τ ~ Gamma(a, r) a cell's centred value v is
  Student-t with 2a degrees of freedom and scale √(v_ii·r/a) (v_ii the diagonal of H Q⁺ H).
- ε_ib ~ N(0, 1/τ_ε): Student-t with 2a_ε degrees of freedom and scale √(r_ε/a_ε).
- β under its Normal prior: β_i iid N(0, ``beta_var``): mean β ~ N(0, ``beta_var``/G) and
  β_0 − mean β ~ N(0, ``beta_var``·(1 − 1/G)). Under its ICAR prior as θ above.
"""

from __future__ import annotations

import geopandas as gpd
import numba
import numpy as np
import pytest
from arviz import mcse
from numba import njit
from scipy import stats

from geosynth import Grid, PaivaModel, Priors
from geosynth.data import prepare
from geosynth.model.block import block_settings, run_chunk_block
from geosynth.model.conditionals import icar_quadratic
from geosynth.model.fit import build_model_data
from geosynth.model.noise_aware import run_chunk_noise_aware, update_latent_counts
from geosynth.model.parallel import (
    cell_streams_for,
    colour_classes,
    greedy_colouring,
    run_chunk_parallel,
)
from geosynth.model.runner import initial_state
from geosynth.model.state import (
    BETA_ICAR,
    BETA_NORMAL,
    SAMPLER_ARS,
    SAMPLER_SLICE,
    THETA_A,
    THETA_B,
    recorded_scalars,
    refresh_count_sums,
)
from geosynth.model.sweep import run_chunk
from geosynth.samplers.rng import gamma, make_streams
from tests.model.test_sbc import cell_counts

pytestmark = pytest.mark.slow

# Level variances of 0.25 keep the counts moderate (e^η below ~50 at 3 sd). With unit variances
# the chains made rare, long excursions into huge counts, where the posterior is tight and a
# sweep moves little: the MCSE then missed them (|z| up to 6 on one chain, 4.3 on four).
PRIORS = Priors(mu_var=0.25, alpha_var=0.25, level_var=0.25, beta_var=0.25, theta_shape=4.0,
                theta_rate=2.0, phi_shape=4.0, phi_rate=2.0, eps_shape=4.0, eps_rate=1.0,
                beta_shape=4.0, beta_rate=2.0)
BURN_IN = 2_000
NOISE_SCALE = 1.0  # discrete Laplace scale b of the noise-aware fit (ε = 1, add/remove)
# |z| bound: over two seeds of every case here (~600 z's) the largest was 2.9; the planted errors
# give 23-25 and 9.
Z_LIMIT = 5.0
# Independent chains per kernel (own seeds, starts and tuning): their spread enters the MCSE.
CHAINS = 4

STATISTICS = ("mu", "alpha", "tau_theta", "tau_phi", "tau_eps", "mean_theta", "theta_0",
              "mean_phi", "phi_mid", "eps_00", "eps_mid", "mu + mean_theta", "mean_beta",
              "beta_0", "tau_beta", "alpha_y", "tau_phi_y", "phi_y_0", "mean_beta_z2",
              "beta_z2_0", "tau_beta_z2")


@njit(cache=True)
def seed_counts_generator(seed):
    """Seed numba's own generator, which :func:`redraw_data` uses."""
    np.random.seed(seed)


@njit(cache=True)
def redraw_data(data, s, noisy, inv_scale):
    """Draw the counts given the state, c ~ Poisson(exp η), and their sums the sweep reads.

    With ``inv_scale`` > 0 also the released counts c̃ = c + discrete Laplace(1/inv_scale).
    """
    G, B = s.counts.shape
    p_geometric = 1.0 - np.exp(-inv_scale)
    for i in range(G):
        for b in range(B):
            c = float(np.random.poisson(np.exp(s.eta[i, b])))
            s.counts[i, b] = c
            if inv_scale > 0.0:
                noisy[i, b] = c + np.random.geometric(p_geometric) \
                    - np.random.geometric(p_geometric)
    refresh_count_sums(data, s)


@njit(cache=True)
def track(s, out, t):
    """Write row t of the tracked quantities (order of :data:`STATISTICS`)."""
    G = s.theta.shape[0]
    mid = G // 2
    mean_theta = s.theta.mean()
    mean_phi = s.phi[:, 0].mean()
    mean_beta = s.beta[0].mean()
    last = s.alpha.shape[0] - 1  # the second attribute's level when there are two
    k = s.beta.shape[0] - 1  # the second covariate when there are two
    mean_beta_k = s.beta[k].mean()
    out[t, :] = (s.mu[0], s.alpha[0], s.tau_theta[0], s.tau_phi[0], s.tau_eps[0], mean_theta,
                 s.theta[0] - mean_theta, mean_phi, s.phi[mid, 0] - mean_phi, s.eps[0, 0],
                 s.eps[mid, 1], s.mu[0] + mean_theta, mean_beta, s.beta[0, 0] - mean_beta,
                 s.tau_beta[0], s.alpha[last], s.tau_phi[last],
                 s.phi[0, last] - s.phi[:, last].mean(), mean_beta_k,
                 s.beta[k, 0] - mean_beta_k, s.tau_beta[k])


@njit(cache=True)
def wrong_tau_theta(data, s):
    """The planted error: τ_θ redrawn with shape a + G/2, ignoring the ICAR rank deficiency."""
    shape = data.priors[THETA_A] + 0.5 * s.theta.shape[0]
    rate = data.priors[THETA_B] + 0.5 * icar_quadratic(s.theta, data)
    s.tau_theta[0] = gamma(s.rng, shape, rate)


def prior_laws(grid, beta, two_attributes=False):
    """The exact prior marginal (a frozen ``scipy.stats`` law) of each of :data:`STATISTICS`."""
    p = PRIORS
    G = grid.n_cells
    adjacency = grid.adjacency.toarray()
    centring = np.eye(G) - 1.0 / G
    icar = centring @ np.linalg.pinv(np.diag(adjacency.sum(axis=1)) - adjacency) @ centring

    def scaled_t(variance, shape, rate):  # N(0, variance/τ) with τ ~ Gamma(shape, rate)
        return stats.t(df=2.0 * shape, scale=np.sqrt(variance * rate / shape))

    def precision(shape, rate):
        return stats.gamma(shape, scale=1.0 / rate)

    mid = G // 2
    laws = {
        "mu": stats.norm(0.0, np.sqrt(p.mu_var)),
        "alpha": stats.norm(0.0, np.sqrt(p.alpha_var)),
        "tau_theta": precision(p.theta_shape, p.theta_rate),
        "tau_phi": precision(p.phi_shape, p.phi_rate),
        "tau_eps": precision(p.eps_shape, p.eps_rate),
        "mean_theta": stats.norm(0.0, np.sqrt(p.level_var)),
        "theta_0": scaled_t(icar[0, 0], p.theta_shape, p.theta_rate),
        "mean_phi": stats.norm(0.0, np.sqrt(p.level_var)),
        "phi_mid": scaled_t(icar[mid, mid], p.phi_shape, p.phi_rate),
        "eps_00": scaled_t(1.0, p.eps_shape, p.eps_rate),
        "eps_mid": scaled_t(1.0, p.eps_shape, p.eps_rate),
        "mu + mean_theta": stats.norm(0.0, np.sqrt(p.mu_var + p.level_var)),
    }
    if two_attributes:
        laws["alpha_y"] = laws["alpha"]
        laws["tau_phi_y"] = laws["tau_phi"]
        laws["phi_y_0"] = scaled_t(icar[0, 0], p.phi_shape, p.phi_rate)
    for suffix, prior in zip(("", "_z2"), beta.split("+") if beta else (), strict=False):
        if prior == "icar":
            laws[f"mean_beta{suffix}"] = stats.norm(0.0, np.sqrt(p.level_var))
            laws[f"beta{suffix}_0"] = scaled_t(icar[0, 0], p.beta_shape, p.beta_rate)
            laws[f"tau_beta{suffix}"] = precision(p.beta_shape, p.beta_rate)
        else:
            laws[f"mean_beta{suffix}"] = stats.norm(0.0, np.sqrt(p.beta_var / G))
            laws[f"beta{suffix}_0"] = stats.norm(0.0, np.sqrt(p.beta_var * (1.0 - 1.0 / G)))
    return laws


def starting_counts(grid, rng, two_attributes):
    """Counts to start from: attribute x ∈ {a, b} (B = 2), and y ∈ {c, d} (B = 4) if asked."""
    if not two_attributes:
        return cell_counts(grid, rng.poisson(1.0, (grid.n_cells, 2)))
    n = 4 * grid.n_cells
    x0, y0, x1, y1 = grid.bounds
    points = gpd.GeoDataFrame(
        {"x": rng.choice(["a", "b"], n), "y": rng.choice(["c", "d"], n)},
        geometry=gpd.points_from_xy(rng.uniform(x0, x1, n), rng.uniform(y0, y1, n)),
        crs=grid.crs)
    return prepare(points, grid, ["x", "y"], levels={"x": ["a", "b"], "y": ["c", "d"]})


def geweke_chain(kernel, n_sweeps, seed, *, side=3, beta=None, beta_sampler="slice",
                 two_attributes=False, planted=False, drawn_noise_scale=NOISE_SCALE):
    """Run the successive-conditional simulator on a side × side queen lattice.

    Return the grid and the tracked draws. One attribute (B = 2) or, with ``two_attributes``,
    two (B = 4: levels x=b and y=d, each with its α, φ and τ_φ).

    ``kernel`` is ``"gibbs"``, ``"mh"``, ``"block"``, ``"chromatic"``, ``"noise-aware"`` or
    ``"noise-aware+mh"`` (the noise-aware fit with ``sampler="mh"``);
    ``beta`` adds one covariate with a ``"normal"`` or ``"icar"`` prior, or two
    (``"icar+normal"``), each with standard normal Z̄ (fixed); ``planted`` follows each sweep
    by :func:`wrong_tau_theta`. ``drawn_noise_scale`` is the scale of the noise the harness
    draws (the noise-aware fit assumes :data:`NOISE_SCALE`).
    """
    grid = Grid.regular((0.0, 0.0, 100.0 * side, 100.0 * side), shape=(side, side),
                        crs="EPSG:3857")
    rng = np.random.default_rng(seed)
    start = starting_counts(grid, rng, two_attributes)
    noise_aware = kernel.startswith("noise-aware")
    sampler = kernel.removeprefix("noise-aware+") if kernel in ("mh", "block", "noise-aware+mh") \
        else "gibbs"
    data, tables, _ = build_model_data(start, PaivaModel(priors=PRIORS, sampler=sampler))
    if beta is not None:
        kinds = beta.split("+")
        zbar = rng.normal(0.0, 1.0, (len(kinds), grid.n_cells, data.zbar.shape[2]))
        priors = np.array([BETA_ICAR if kind == "icar" else BETA_NORMAL for kind in kinds])
        for array in (zbar, priors):
            array.setflags(write=False)
        data = data._replace(zbar=zbar, beta_priors=priors, beta_sampler={
            "slice": SAMPLER_SLICE, "ars": SAMPLER_ARS}[beta_sampler])
        tables = tables._replace(cell_czbar=np.zeros((len(kinds), grid.n_cells)))
    s = initial_state(data, tables, make_streams(seed, 1)[0])
    refresh_count_sums(data, s)  # Σ_b c·Z̄ of the covariates installed above
    G, B = s.counts.shape
    outputs = (np.zeros((1, recorded_scalars(data))), np.zeros((1, G), np.float32),
               np.zeros((1, s.beta.shape[0], G), np.float32), np.zeros((1, G, B), np.float32))
    noisy = start.counts.astype(float)
    inv_scale = 1.0 / NOISE_SCALE if noise_aware else 0.0
    if kernel == "block":
        extra = block_settings(data)
        step = lambda keep: run_chunk_block(data, s, 1, 1, *outputs, 0, keep, *extra)  # noqa: E731
    elif kernel == "chromatic":  # one thread: same draws (test_parallel), 3× faster at G = 9
        colours = colour_classes(greedy_colouring(data.indptr, data.indices))
        streams = cell_streams_for(s.rng, G)
        step = lambda keep: run_chunk_parallel(  # noqa: E731
            data, s, 1, 1, *outputs, 0, keep, *colours, streams)
    elif noise_aware:
        totals = np.zeros((1, B))
        update_latent_counts(data, s, noisy, inv_scale)
        step = lambda keep: run_chunk_noise_aware(  # noqa: E731
            data, s, 1, 1, *outputs, 0, keep, noisy, inv_scale, totals)
    else:
        step = lambda keep: run_chunk(data, s, 1, 1, *outputs, 0, keep)  # noqa: E731
    seed_counts_generator(seed)
    draws = np.zeros((n_sweeps, len(STATISTICS)))
    threads = numba.get_num_threads()
    numba.set_num_threads(1 if kernel == "chromatic" else threads)
    try:
        for t in range(BURN_IN + n_sweeps):
            status, _ = step(t >= BURN_IN)
            assert status == 0, status
            if planted:
                wrong_tau_theta(data, s)
            redraw_data(data, s, noisy, inv_scale and 1.0 / drawn_noise_scale)
            if t >= BURN_IN:
                track(s, draws, t - BURN_IN)
    finally:
        numba.set_num_threads(threads)
    return grid, draws


def z_scores(grid, draws, beta, two_attributes=False):
    """z of the mean and variance of each statistic's prior PIT u = F(x) against U(0, 1)'s.

    ``draws``: (chains, sweeps, statistics); the MCSE is arviz's over all chains.
    """
    scores = {}
    for name, law in prior_laws(grid, beta, two_attributes).items():
        u = law.cdf(draws[..., STATISTICS.index(name)])
        squared = (u - 0.5) ** 2
        scores[name] = ((u.mean() - 0.5) / mcse(u, method="mean")[0],
                        (squared.mean() - 1.0 / 12.0) / mcse(squared, method="mean")[0])
    return scores


def assert_prior_recovered(grid, draws, beta=None, two_attributes=False):
    scores = z_scores(grid, draws, beta, two_attributes)
    bad = {name: z for name, z in scores.items() if max(abs(z[0]), abs(z[1])) > Z_LIMIT}
    assert not bad, f"marginals off their prior (z of the PIT mean, of its variance): {bad}"


def geweke_draws(kernel, n_sweeps, seed, *, chains=CHAINS, **options):
    """:func:`geweke_chain` run ``chains`` times (seeds ``seed``, ``seed + 1``, …), n_sweeps in all.

    Return the grid and the draws, (chains, n_sweeps // chains, statistics).
    """
    runs = [geweke_chain(kernel, n_sweeps // chains, seed + c, **options) for c in range(chains)]
    return runs[0][0], np.stack([draws for _, draws in runs])


@pytest.mark.parametrize(("kernel", "side", "n_sweeps", "beta", "beta_sampler"), [
    ("gibbs", 3, 200_000, None, "slice"),
    ("block", 3, 100_000, "icar", "slice"),
    ("gibbs", 8, 100_000, None, "slice"),  # 8 × 8: the coarse shifts run (none below 8 aggregates)
    ("mh", 3, 200_000, None, "slice"),
    ("block", 3, 100_000, None, "slice"),
    ("gibbs", 3, 150_000, "icar", "slice"),
    ("gibbs", 3, 150_000, "normal", "ars"),
    ("gibbs", 3, 150_000, "icar+normal", "slice"),  # two covariates (Nunes 2018, §5)
    ("noise-aware", 3, 300_000, None, "slice"),
    ("noise-aware+mh", 3, 300_000, None, "slice"),  # the noise-aware fit's MH updates
    ("chromatic", 3, 30_000, "icar", "slice"),
])
def test_sweep_leaves_the_joint_law_invariant(kernel, side, n_sweeps, beta, beta_sampler):
    grid, draws = geweke_draws(kernel, n_sweeps, seed=2004, side=side, beta=beta,
                               beta_sampler=beta_sampler)
    assert_prior_recovered(grid, draws, beta)


def test_geweke_catches_a_precision_drawn_with_the_wrong_shape():
    grid, draws = geweke_draws("gibbs", 50_000, seed=2004, planted=True)
    scores = z_scores(grid, draws, None)
    assert abs(scores["tau_theta"][0]) > 2 * Z_LIMIT, scores["tau_theta"]


def test_sweep_with_two_attributes_leaves_the_joint_law_invariant():
    """Two attributes (B = 4): each level's α, φ and τ_φ act on two of the four combinations."""
    grid, draws = geweke_draws("gibbs", 150_000, seed=2004, two_attributes=True)
    assert_prior_recovered(grid, draws, two_attributes=True)


def test_geweke_catches_a_noise_aware_fit_told_the_wrong_scale():
    """Released counts with noise of scale 1.25 (ε = 0.8) fitted as if ε were 1: fails."""
    grid, draws = geweke_draws("noise-aware", 50_000, seed=2004, drawn_noise_scale=1.25)
    scores = z_scores(grid, draws, None)
    assert max(abs(z) for pair in scores.values() for z in pair) > Z_LIMIT, scores
