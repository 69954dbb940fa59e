"""The exact collapsed sampler of the exponential-covariance GP regression (thesis eq. 3.2)."""

import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import pdist, squareform

import geosynth.metrics.gp as gp_module
from geosynth.errors import DataWarning, InputError, InputTypeError, MemoryLimitError
from geosynth.metrics.gp import (
    DEFAULT_RANGE_SHARES,
    GRID_END_SHARE,
    gp_regression,
    stacked_intervals,
)

BETA = np.array([2.0, -1.5])
SIGMA2, TAU2, PHI = 1.0, 0.25, 3.0


def simulate(n, seed, phi=PHI):
    rng = np.random.default_rng(seed)
    coords = rng.uniform(0, 1, (n, 2))
    cov = SIGMA2 * np.exp(-phi * squareform(pdist(coords))) + TAU2 * np.eye(n)
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
@pytest.mark.filterwarnings("ignore::geosynth.errors.DataWarning")  # φ's long-range end
def test_recovers_known_parameters():
    """The true β in posterior sd units over 8 data sets: Σ z² ~ χ²(16), on both sides (at
    least 13 of 16 intervals covering passed posteriors three times too wide)."""
    z = []
    for seed in range(8):
        coords, y, X = simulate(250, seed=100 + seed)
        post = gp_regression(coords, y, X, names=["one", "x"], n_draws=4000, seed=seed)
        z.extend((post.beta.mean(axis=0) - BETA) / post.beta.std(axis=0))
        assert abs(post.beta[:, 1].mean() - BETA[1]) < 0.2
    assert 1e-3 < stats.chi2(len(z)).cdf(np.sum(np.square(z))) < 1 - 1e-3


@pytest.mark.filterwarnings("ignore::geosynth.errors.DataWarning")  # 60 points bound little
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


@pytest.fixture(scope="module")
def fits():
    """One data set fitted under the names (const, age), (age, const) and (const, income)."""
    rng = np.random.default_rng(0)
    coords = rng.uniform(0, 1000, (40, 2))
    x = rng.normal(size=40)
    y = 1 + 2 * x + rng.normal(size=40)
    X = np.column_stack([np.ones(40), x])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # 40 points bound the range little
        return {names: gp_regression(coords, y, X if names[0] == "const" else X[:, ::-1],
                                     names=list(names), n_draws=1000, seed=1)
                for names in [("const", "age"), ("age", "const"), ("const", "income")]}


def test_stacked_intervals_refuse_releases_fitted_with_other_covariates(fits):
    original, reordered, other = (fits[("const", "age")], fits[("age", "const")],
                                  fits[("const", "income")])
    table = stacked_intervals(original, [reordered, reordered])  # other order: the same columns
    assert table.loc["beta[age]", "overlap"] > 0.8
    # A release without beta[age] gave an interval of the other release alone; no release with
    # it, "b has NaN bounds".
    for releases, number in (([original, other], 1), ([other, other], 0)):
        with pytest.raises(InputError, match=rf"releases\[{number}\] lacks \['age'\] and has "
                                             r"\['income'\], which original lacks.*"
                                             r"names=\['const', 'age'\]"):
            stacked_intervals(original, releases)


@pytest.mark.parametrize(("original", "releases", "match"), [
    (None, [1], "original must be a GPPosterior .*got NoneType"),
    ("fit", None, "releases must be a list of GPPosterior .*got NoneType"),
    ("fit", "fit", "releases must be a list of GPPosterior .*got GPPosterior"),
    ("fit", [], "releases is empty"),
    ("fit", ["fit", 3], r"releases\[1\] must be a GPPosterior, got int"),
])
def test_stacked_intervals_name_a_wrong_argument(fits, original, releases, match):
    # None gave AttributeError: 'NoneType' object has no attribute 'draws'.
    fit = fits[("const", "age")]
    swap = lambda value: fit if value == "fit" else value  # noqa: E731
    releases = [swap(r) for r in releases] if isinstance(releases, list) else swap(releases)
    with pytest.raises(InputError, match=match):
        stacked_intervals(swap(original), releases, level=0.9)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"names": 3}, "names must be a list of the 2 column names of X, got int"),
        ({"coords": np.zeros((5, 3))}, "coords must have shape"),
        ({"y": np.zeros(4)}, "y must have shape"),
        ({"X": np.ones((10, 2))}, "rank deficient"),
        ({"y": np.r_[np.nan, np.zeros(9)]}, "NaN"),
        ({"y": np.full(10, 3.0)}, "y is fitted exactly by X"),
        ({"n_draws": 0}, "n_draws"),
        ({"phi_grid": [1.0, np.nan]}, "phi_grid must be a non-empty 1-D array of finite"),
        ({"phi_grid": []}, "phi_grid must be a non-empty"),
        ({"nugget_grid": [[0.1, 1.0]]}, "nugget_grid must be a non-empty 1-D"),
        ({"nugget_grid": [np.inf]}, "nugget_grid must be a non-empty 1-D array of finite"),
        # 73 TiB asked for only after every grid point was fitted
        ({"n_draws": 10**13}, r"n_draws must be at most 10,000,000"),
        ({"nugget_grid": [True]}, "nugget_grid must be a 1-D array of positive numbers, got "
                                  "list of dtype bool"),
        ({"phi_grid": [1.0, 2.0, 1.0]}, r"phi_grid lists a value more than once"),
        # one eigendecomposition per value, without a message: 10**6 values ran for days
        ({"phi_grid": np.geomspace(1e-3, 1e3, 201)}, r"^phi_grid must hold at most 200 values, "
                                                     r"got 201"),
        ({"nugget_grid": np.geomspace(1e-3, 1e3, 1001)}, r"^nugget_grid must hold at most "
                                                         r"1,000 values, got 1,001"),
        # scipy's "array must not contain infs or NaNs" from the eigensolver
        ({"coords": np.random.default_rng(1).uniform(size=(10, 2)) * 1e160},
         "distances between the points overflow"),
        # NumPy's ValueError / OverflowError
        ({"coords": [[1.0, 2.0], [3.0]] * 5}, r"^coords is a ragged sequence"),
        ({"y": [10**400] * 10}, r"^y must be finite, got an int beyond the float range"),
        # matrix_rank passed, then cho_factor's LinAlgError "leading minor not positive definite"
        ({"X": np.column_stack([np.ones(10), 1 + 1e-12 * np.random.default_rng(2).normal(
            size=10)])}, r"^X is rank deficient"),
        # σ² ~ 1e320: was refused as "fitted exactly by X" (its sum of squares overflowed)
        ({"y": np.random.default_rng(3).normal(size=10) * 1e160}, r"^y's largest \|value\| is "
                                                                  r"beyond 1e150"),
        ({"y": np.random.default_rng(3).normal(size=10) * 1e-300}, "or below 1e-150"),
        ({"y": np.random.default_rng(3).normal(size=10) * 1e100,  # β ~ 1e400
          "X": np.column_stack([np.ones(10), 1e-300 * np.arange(10)])}, r"^β overflows"),
        # 1/(λ + α) is rounding on R_φ's null directions: β came out near -8e14 (duplicates)
        ({"nugget_grid": [1e-300, 0.1]}, r"^nugget_grid values must be at least 1e-06, got"),
        # two beta[a] columns: stacked_intervals cross-joined them into four rows, pairing the
        # intercept's interval with the slope's (overlap 0.84 where the fits were identical)
        ({"names": ["a", "a"]}, r"^names lists \['a'\] more than once"),
        ({"names": [1, "1"]}, r"^names lists \['1'\] more than once"),
        # distinct points whose distances underflow to 0 were said to coincide
        ({"coords": np.random.default_rng(1).uniform(size=(10, 2)) * 1e-300},
         r"^all coordinates coincide \(or differ by less than about 1e-154"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(InputError, match=match):
        regression_with(**kwargs)


def regression_with(**kwargs):
    """gp_regression on 10 random points, with ``kwargs`` replacing its arguments."""
    rng = np.random.default_rng(0)
    args = {"coords": rng.uniform(size=(10, 2)), "y": rng.normal(size=10),
            "X": np.column_stack([np.ones(10), rng.normal(size=10)]), **kwargs}
    return gp_regression(args.pop("coords"), args.pop("y"), args.pop("X"), **args)


def test_a_large_mean_of_y_leaves_the_posterior_of_the_covariance_unchanged():
    # With an intercept, y + c has the same posterior of (φ, α); the residual sum was computed
    # as a difference of two sums near c², wrong at c = 1e6 and NaN at 1e8.
    coords, y, X = simulate(40, seed=5)
    base = gp_regression(coords, y, X, n_draws=10, seed=1).grid_mass["posterior_mass"]
    for offset in (1e6, 1e8):
        shifted = gp_regression(coords, y + offset, X, n_draws=10, seed=1)
        np.testing.assert_allclose(shifted.grid_mass["posterior_mass"], base, atol=1e-6)


@pytest.mark.parametrize(("y_scale", "x_scale"), [(1e140, 1.0), (1e-140, 1.0), (1.0, 1e200),
                                                   (3e-100, 1e-150)])
def test_the_units_of_y_and_x_scale_the_draws_and_nothing_else(y_scale, x_scale):
    # Flat prior on β and Jeffreys' on σ²: y·c and column x·d give β·c/d and σ²·c², the same
    # (φ, α). A column at 1e200 beside the intercept looked rank deficient; the scales of y
    # reach the bounds of the check below (σ² within float64).
    coords, y, X = simulate(40, seed=6)
    base = gp_regression(coords, y, X, n_draws=200, seed=3)
    scaled = gp_regression(coords, y * y_scale, X * [1.0, x_scale], n_draws=200, seed=3)
    np.testing.assert_allclose(scaled.beta, base.beta * [y_scale, y_scale / x_scale],
                               rtol=1e-9)
    np.testing.assert_allclose(scaled.sigma2, base.sigma2 * y_scale**2, rtol=1e-9)
    np.testing.assert_allclose(scaled.tau2, base.tau2 * y_scale**2, rtol=1e-9)
    np.testing.assert_array_equal(scaled.phi, base.phi)


def _end_shares(post, column):
    mass = post.grid_mass.groupby(column)["posterior_mass"].sum().sort_index()
    return mass.iloc[0], mass.iloc[-1]


def test_default_grid_reaches_effective_ranges_beyond_the_region():
    """An effective range of 74% of the largest distance (true φ = 3 on the unit square).

    The old default (ranges up to 70%) put 74% of φ's mass on its end and its interval
    excluded the true φ; the default now reaches 3 times the largest distance. The posterior
    still leans on the longest range (these data do not bound it), which the warning says.
    """
    coords, y, X = simulate(400, seed=5)
    with pytest.warns(DataWarning, match=r"phi_grid towards smaller phi .*do not bound"):
        post = gp_regression(coords, y, X, n_draws=4000, seed=1)
    largest = pdist(coords).max()
    ranges = 3.0 / post.grid_mass["phi"].unique()
    # 2% and 300% of the largest distance, rounded up by less than one step of the grid
    step = (3.0 / 0.02) ** (1 / 15)
    assert 0.02 * largest <= ranges.min() < 0.02 * largest * step
    assert 3.0 * largest <= ranges.max() < 3.0 * largest * step
    interval = post.intervals().loc["phi"]
    assert interval["lower"] < PHI < interval["upper"]
    assert _end_shares(post, "phi")[0] < 0.5


def test_warns_when_the_posterior_piles_on_a_grid_end():
    coords, y, X = simulate(150, seed=7)
    largest = pdist(coords).max()
    short_ranges = 3.0 / (np.geomspace(0.02, 0.1, 5) * largest)  # all far below the true 74%
    with pytest.warns(DataWarning) as caught:
        post = gp_regression(coords, y, X, phi_grid=short_ranges, nugget_grid=[2.0, 5.0, 10.0],
                             n_draws=500, seed=1)
    messages = " ".join(str(w.message) for w in caught)
    assert "phi lies on the smallest value of phi_grid" in messages
    assert "widen phi_grid towards smaller phi" in messages
    assert "nugget ratio tau2/sigma2 lies on the smallest value of nugget_grid" in messages
    assert "widen nugget_grid towards smaller ratios" in messages
    assert _end_shares(post, "phi")[0] > GRID_END_SHARE
    assert _end_shares(post, "nugget_ratio")[0] > GRID_END_SHARE


def test_no_warning_when_the_grid_holds_the_posterior():
    """Effective range 3/15 = 20% of the region's side, 300 points: the data bound φ."""
    coords, y, X = simulate(300, seed=0, phi=15.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        post = gp_regression(coords, y, X, n_draws=500, seed=1)
    assert max(_end_shares(post, "phi")) < GRID_END_SHARE
    assert _end_shares(post, "nugget_ratio")[1] < GRID_END_SHARE
    interval = post.intervals().loc["phi"]
    assert interval["lower"] < 15.0 < interval["upper"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        # NumPy's ValueError quoted a value ("could not convert string to float: '0 kg'")
        ({"y": [f"{v} kg" for v in range(10)]}, r"^y must be an array of real numbers, got list "
                                                r"of dtype <U4$"),
        # the imaginary part was dropped with a warning
        ({"coords": np.ones((10, 2)) * (1 + 1j)}, r"^coords must be an array of real numbers"),
    ],
)
def test_inputs_that_are_not_real_numbers_are_refused_without_their_values(kwargs, match):
    with pytest.raises(TypeError, match=match):
        regression_with(n_draws=10, seed=0, **kwargs)


def small_problem():
    """25 points, correlated covariates and a 4 x 3 grid over which the posterior mass spreads."""
    rng = np.random.default_rng(0)
    n = 25
    coords = rng.uniform(0, 1, (n, 2))
    x = rng.normal(size=n)
    X = np.column_stack([np.ones(n), 2 + x, 3 + x + 0.5 * rng.normal(size=n)])
    cov = np.exp(-3.0 * squareform(pdist(coords))) + 0.3 * np.eye(n)
    y = X @ [1.0, 2.0, -1.0] + np.linalg.cholesky(cov) @ rng.standard_normal(n)
    return coords, y, X, np.array([0.5, 2.0, 6.0, 20.0]), np.array([0.05, 0.3, 1.5])


def dense_posterior(coords, y, X, phi_grid, nugget_grid):
    """The posterior of (φ, α) and the conditional moments, by dense linear algebra.

    Integrating β (flat) and σ² (Jeffreys) out of N(y; Xβ, σ²V) leaves the restricted
    likelihood of the error contrasts z = K'y, K an orthonormal basis of the complement of X's
    columns (Harville 1974): z ~ N(0, σ² K'VK), so p(φ, α | y) ∝ |K'VK|^{-1/2} q^{-(n-p)/2}
    with q = z'(K'VK)⁻¹z. The sampler's formula, |V|^{-1/2} |X'V⁻¹X|^{-1/2} S^{-(n-p)}, is
    the same quantity written without K; the two are computed independently here.
    """
    from scipy import linalg

    n, p = X.shape
    distances = squareform(pdist(coords))
    K = linalg.null_space(X.T)
    z = K.T @ y
    log_post, moments = [], []
    for phi in phi_grid:
        for alpha in nugget_grid:
            V = np.exp(-phi * distances) + alpha * np.eye(n)
            KVK = K.T @ V @ K
            q = z @ np.linalg.solve(KVK, z)
            log_post.append(-0.5 * np.linalg.slogdet(KVK)[1] - 0.5 * (n - p) * np.log(q))
            Vi = np.linalg.inv(V)
            XtVX_inv = np.linalg.inv(X.T @ Vi @ X)
            beta_hat = XtVX_inv @ X.T @ Vi @ y
            resid = y - X @ beta_hat
            moments.append((phi, alpha, beta_hat, XtVX_inv, float(resid @ Vi @ resid)))
    mass = np.exp(np.array(log_post) - max(log_post))
    return mass / mass.sum(), moments


@pytest.mark.filterwarnings("ignore::geosynth.errors.DataWarning")  # the grid is narrow
def test_grid_mass_equals_the_restricted_likelihood_of_error_contrasts():
    coords, y, X, phi_grid, nugget_grid = small_problem()
    post = gp_regression(coords, y, X, phi_grid=phi_grid, nugget_grid=nugget_grid, n_draws=10,
                         seed=0)
    mass, _ = dense_posterior(coords, y, X, phi_grid, nugget_grid)
    assert mass.max() < 0.5  # spread over the grid, so a wrong weight would show
    np.testing.assert_allclose(post.grid_mass["posterior_mass"], mass, rtol=1e-9)
    np.testing.assert_array_equal(post.grid_mass["phi"], np.repeat(phi_grid, 3))
    np.testing.assert_array_equal(post.grid_mass["nugget_ratio"], np.tile(nugget_grid, 4))


@pytest.mark.filterwarnings("ignore::geosynth.errors.DataWarning")  # the grid is narrow
def test_draws_follow_the_exact_mixture_posterior():
    """Every parameter's draws against its exact marginal posterior, a mixture over the grid.

    Given (φ, α): β_k is Student t with n - p df about β̂_k, scale sqrt(S² [(X'V⁻¹X)⁻¹]_kk /
    (n - p)); σ² is S²/χ²_{n-p}, so P(σ² <= s) = P(χ²_{n-p} >= S²/s); τ² = α σ². The grid
    weights are those of dense_posterior. φ's draws fall on the grid in proportion to its mass.
    """
    coords, y, X, phi_grid, nugget_grid = small_problem()
    n, p = X.shape
    post = gp_regression(coords, y, X, phi_grid=phi_grid, nugget_grid=nugget_grid,
                         n_draws=20_000, seed=1)
    mass, moments = dense_posterior(coords, y, X, phi_grid, nugget_grid)
    dof = n - p

    def mixture(cdf):
        return lambda x: sum(w * cdf(x, *m) for w, m in zip(mass, moments, strict=True))

    # Each β_k, and Σ_k β_k, whose spread depends on the correlations of the β_k.
    for c in [*np.eye(p), np.ones(p)]:
        cdf = mixture(lambda x, phi, alpha, b, cov, s2, c=c: stats.t.cdf(
            x, dof, loc=c @ b, scale=np.sqrt(c @ cov @ c * s2 / dof)))
        assert stats.kstest(post.beta @ c, cdf).pvalue > 0.001
    sigma2_cdf = mixture(lambda x, phi, alpha, b, c, s2: stats.chi2.sf(s2 / x, dof))
    assert stats.kstest(post.sigma2, sigma2_cdf).pvalue > 0.001
    tau2_cdf = mixture(lambda x, phi, alpha, b, c, s2: stats.chi2.sf(alpha * s2 / x, dof))
    assert stats.kstest(post.tau2, tau2_cdf).pvalue > 0.001
    counts = [np.sum(post.phi == phi) for phi in phi_grid]
    expected = mass.reshape(len(phi_grid), -1).sum(axis=1) * len(post.phi)
    assert stats.chisquare(counts, expected).pvalue > 0.001
    # The posterior means against the mixture's (t means β̂; σ² mean S²/(n - p - 2)).
    beta_mean = sum(w * m[2] for w, m in zip(mass, moments, strict=True))
    beta_sd = post.beta.std(axis=0) / np.sqrt(len(post.phi))
    np.testing.assert_array_less(np.abs(post.beta.mean(axis=0) - beta_mean), 5 * beta_sd)


@pytest.mark.filterwarnings("ignore::geosynth.errors.DataWarning")  # 40 points bound little
def test_stacked_intervals_refuse_releases_with_different_numbers_of_draws():
    # The pooled draws weigh each release by its number of draws: 10,000 draws of one release
    # beside 1,000 of another made the stacked interval mostly the first release's.
    coords, y, X = simulate(40, seed=8)
    many = gp_regression(coords, y, X, n_draws=2000, seed=1)
    few = gp_regression(coords, y + 5.0, X, n_draws=200, seed=2)
    with pytest.raises(InputError, match=r"releases\[1\] has 200 posterior draws but "
                                         r"releases\[0\] has 2,000.*same n_draws"):
        stacked_intervals(many, [many, few])
    assert len(stacked_intervals(many, [few, few])) == 5  # the original's count may differ


def test_intervals_at_the_true_covariance_have_their_frequentist_coverage():
    """Known (φ, α): the flat and Jeffreys priors give exact intervals for β and σ².

    Given V, the posterior of β_k is the GLS t distribution and that of σ² is S²/χ²_{n-p},
    whose equal-tailed intervals are the classical ones; so over 400 data sets simulated with
    β = (2, -1.5), σ² = 1, τ² = 0.25, φ = 3, the 90% intervals cover the truth 90% of the
    time (SD 1.5%; 4 SD = 6%).
    """
    covered = []
    for seed in range(400):
        coords, y, X = simulate(20, seed=1000 + seed)
        ci = gp_regression(coords, y, X, phi_grid=[PHI], nugget_grid=[TAU2 / SIGMA2],
                           n_draws=2000, seed=seed).intervals(level=0.9)
        covered.append([ci.loc[name, "lower"] < truth < ci.loc[name, "upper"]
                        for name, truth in (("beta[x0]", BETA[0]), ("beta[x1]", BETA[1]),
                                            ("sigma2", SIGMA2), ("tau2", TAU2))])
    np.testing.assert_allclose(np.mean(covered, axis=0), 0.9, atol=0.06)


def test_more_points_than_the_dense_matrices_allow_are_refused_before_any_work(monkeypatch):
    # Every point entered dense n × n matrices: 50,000 points asked for ~80 GB and hours of
    # eigendecompositions before anything said why.
    rng = np.random.default_rng(0)
    monkeypatch.setattr(gp_module, "MAX_GP_POINTS", 40)
    coords = rng.uniform(0, 100, (41, 2))
    y, X = rng.normal(size=41), np.column_stack([np.ones(41), rng.normal(size=41)])
    with pytest.raises(MemoryLimitError, match=r"41 points, more than .*MAX_GP_POINTS = 40"):
        gp_regression(coords, y, X, n_draws=10, seed=1)
    post = gp_regression(coords[:40], y[:40], X[:40], n_draws=10, seed=1)  # at the cap: fitted
    assert post.beta.shape == (10, 2)


@pytest.mark.parametrize(
    ("grid", "error", "match"),
    [
        # np.asarray(grid, dtype=float) read text as numbers, True as 1, dropped imaginary parts
        (["0.5", "2"], TypeError, r"^phi_grid must be a 1-D array of positive numbers, got list "
                                  r"of dtype <U3$"),
        ([True, 2.0], TypeError, r"^phi_grid must be a 1-D array of positive numbers, got list "
                                 r"holding bool entries$"),
        (np.array([1 + 1j, 2.0]), TypeError, r"^phi_grid must be a 1-D array of positive "
                                             r"numbers, got ndarray of dtype complex128$"),
        # and fitted the hidden value of a masked entry
        (np.ma.masked_array([1.0, 2.0], [True, False]), InputError,
         r"^phi_grid is a masked array with masked entries"),
    ],
)
def test_grids_hold_real_numbers_only(grid, error, match):
    with pytest.raises(error, match=match) as caught:
        regression_with(phi_grid=grid, n_draws=10, seed=0)
    assert isinstance(caught.value, InputError)  # as the grids' other refusals


@pytest.mark.filterwarnings("ignore::geosynth.errors.DataWarning")  # 40 points bound little
def test_default_phi_grid_does_not_reveal_the_largest_distance():
    """The default φ grid was 3/(share · D): every φ, and so φ's interval, gave D exactly.

    D, the largest distance between the confidential points, is an extreme of the data. Scale
    the points so that 2% of D falls at 30% and at 70% (on a log scale) of one step of the
    grid's lattice: the two grids must be identical, and D must not be recoverable from them.
    """
    coords, y, X = simulate(40, seed=9)
    step = (DEFAULT_RANGE_SHARES[-1] / DEFAULT_RANGE_SHARES[0]) ** (1 / 15)
    grids = []
    for where in (0.3, 0.7):
        # 2% of the scaled D is step ** (12 + where): strictly inside one lattice cell
        scale = step ** (12 + where) / (DEFAULT_RANGE_SHARES[0] * pdist(coords).max())
        post = gp_regression(coords * scale, y, X, n_draws=10, seed=1)
        grids.append(np.sort(post.grid_mass["phi"].unique()))
        largest = pdist(coords * scale).max()
        for share in (DEFAULT_RANGE_SHARES[0], DEFAULT_RANGE_SHARES[-1]):
            assert not np.isclose(3.0 / (share * grids[-1]), largest, rtol=1e-3).any()
    np.testing.assert_allclose(grids[0], grids[1], rtol=1e-12)
    assert len(grids[0]) == 16


@pytest.mark.parametrize("names", [np.array(1.0), np.array("x"), 5])
def test_names_that_are_no_list_are_a_type_error(names):
    # list(np.array(1.0)) raised "iteration over a 0-d array".
    coords, y, X = simulate(10, 0)
    with pytest.raises(InputTypeError, match=r"^names must be a list of the 2 column names"):
        gp_regression(coords, y, X, names=names)
