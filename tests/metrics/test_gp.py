"""The exact collapsed sampler of the exponential-covariance GP regression (thesis eq. 3.2)."""

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import pdist, squareform

from geosynth.errors import InputError
from geosynth.metrics.gp import gp_regression, stacked_intervals

BETA = np.array([2.0, -1.5])
SIGMA2, TAU2, PHI = 1.0, 0.25, 3.0


def simulate(n, seed):
    rng = np.random.default_rng(seed)
    coords = rng.uniform(0, 1, (n, 2))
    cov = SIGMA2 * np.exp(-PHI * squareform(pdist(coords))) + TAU2 * np.eye(n)
    X = np.column_stack([np.ones(n), rng.normal(size=n)])
    y = X @ BETA + np.linalg.cholesky(cov) @ rng.standard_normal(n)
    return coords, y, X


def test_posterior_matches_brute_force_at_fixed_covariance():
    """With one grid point, β | y is the generalised-least-squares t posterior: check it."""
    coords, y, X = simulate(80, seed=1)
    post = gp_regression(coords, y, X, phi_grid=[PHI], nugget_grid=[TAU2 / SIGMA2],
                         n_draws=20_000, seed=2)
    V = np.exp(-PHI * squareform(pdist(coords))) + TAU2 / SIGMA2 * np.eye(80)
    Vi = np.linalg.inv(V)
    XtVX = X.T @ Vi @ X
    beta_hat = np.linalg.solve(XtVX, X.T @ Vi @ y)
    resid = y - X @ beta_hat
    s2 = resid @ Vi @ resid
    dof = 80 - 2
    scale = np.sqrt(np.diag(np.linalg.inv(XtVX)) * s2 / dof)
    for k in range(2):
        # Marginally β_k is Student t with n - p degrees of freedom.
        reference = stats.t(dof, loc=beta_hat[k], scale=scale[k])
        assert stats.kstest(post.beta[:, k], reference.cdf).pvalue > 0.001
    # σ² is scaled inverse chi-square: S²/σ² ~ χ²_{n-p}.
    assert stats.kstest(s2 / post.sigma2, stats.chi2(dof).cdf).pvalue > 0.001


@pytest.mark.slow
def test_recovers_known_parameters():
    coverage = []
    for seed in range(8):
        coords, y, X = simulate(250, seed=100 + seed)
        post = gp_regression(coords, y, X, names=["one", "x"], n_draws=4000, seed=seed)
        ci = post.intervals()
        coverage.append([ci.loc["beta[one]", "lower"] < BETA[0] < ci.loc["beta[one]", "upper"],
                         ci.loc["beta[x]", "lower"] < BETA[1] < ci.loc["beta[x]", "upper"]])
        assert abs(post.beta[:, 1].mean() - BETA[1]) < 0.2
    # 16 intervals at 95%: at least 13 must cover (binomial P(X <= 12) < 0.01).
    assert np.sum(coverage) >= 13


def test_stacked_intervals_of_identical_releases_equal_original():
    coords, y, X = simulate(60, seed=3)
    post = gp_regression(coords, y, X, n_draws=3000, seed=4)
    table = stacked_intervals(post, [post, post])
    np.testing.assert_allclose(table["original_lower"], table["synthetic_lower"], rtol=1e-9)
    np.testing.assert_allclose(table["original_upper"], table["synthetic_upper"], rtol=1e-9)
    np.testing.assert_allclose(table["overlap"], 1.0)
    assert set(table.index) >= {"beta[x0]", "beta[x1]", "sigma2", "tau2", "phi"}
    with pytest.raises(InputError, match=r"level must lie in \(0, 1\), got 1\.5"):
        stacked_intervals(post, [post, post], level=1.5)
    with pytest.raises(TypeError, match="level must be a real number"):
        post.intervals(level=None)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"coords": np.zeros((5, 3))}, "coords must have shape"),
        ({"y": np.zeros(4)}, "y must have shape"),
        ({"X": np.ones((10, 2))}, "rank deficient"),
        ({"y": np.r_[np.nan, np.zeros(9)]}, "NaN"),
    ],
)
def test_bad_input(kwargs, match):
    rng = np.random.default_rng(0)
    args = {"coords": rng.uniform(size=(10, 2)), "y": rng.normal(size=10),
            "X": np.column_stack([np.ones(10), rng.normal(size=10)])}
    args.update(kwargs)
    with pytest.raises(InputError, match=match):
        gp_regression(args["coords"], args["y"], args["X"])
