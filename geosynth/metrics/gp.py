"""Bayesian spatial regression utility (Nunes 2018, §3.3, eq. 3.2).

The analyst's model is ``Y(s) = x(s)'β + δ(s) + e(s)``: δ a Gaussian process with exponential
covariance ``σ² exp(−φ d)`` and e a nugget with variance ``τ²``. Utility compares the 95%
credible intervals of (β, σ², τ², φ) fitted to the original data with those fitted to the m
releases, whose posterior draws are stacked (Zhou & Reiter 2010), as in the thesis.

Fitting. With ``α = τ²/σ²`` the covariance is ``σ² V(φ, α)``, ``V = R_φ + α I``. Under a flat
prior on β, Jeffreys' prior ``p(σ²) ∝ 1/σ²`` and discrete uniform priors on φ and α over
grids, the posterior factorises exactly:

- ``p(φ, α | y) ∝ |V|^{-1/2} |X'V⁻¹X|^{-1/2} S^{-(n-p)}``, ``S² = (y − Xβ̂)'V⁻¹(y − Xβ̂)``;
- ``σ² | φ, α, y ~ Inv-Gamma((n − p)/2, S²/2)``;
- ``β | σ², φ, α, y ~ N(β̂, σ²(X'V⁻¹X)⁻¹)``,

so draws are independent and exact (no Markov chain to converge). One eigendecomposition of
R_φ per φ serves every α (``V⁻¹ = Q diag(1/(λ + α)) Q'``), which keeps n = 2,000 within
seconds per grid value. The thesis fitted the same model by MCMC in R (spBayes); the collapsed
sampler targets the same posterior up to the discretisation of (φ, α), which is reported.

Default grids. Effective ranges ``3/φ`` (where the correlation falls to e^{−3} ≈ 0.05) from 2%
to 300% of the largest distance between the points, 16 values on a log scale (the shortest
rounded up to a power of the grid's ratio, see below): from about the
spacing of a few hundred points (shorter ranges look like a nugget) to a field whose two
farthest points still correlate at e^{−1} ≈ 0.37. Uniform priors on φ are often bounded at an
effective range of about the largest distance, which cuts off fields that vary smoothly across
the whole region; geoR's ``krige.bayes``, whose discrete prior we follow, reaches a range
parameter 1/φ of twice the largest distance (an effective range of six times it) by default.
An earlier default stopped at 70%: data simulated with an effective range of 74% (n = 400,
unit square) piled 74% of φ's posterior on that end of the grid. Nugget-to-sill ratios
``α = τ²/σ²`` from 0.01 (no nugget to speak of) to 10 (a weak spatial signal in strong noise),
12 values on a log scale; the cost is one eigendecomposition per φ, so α comes almost free.

The φ grid lies on one fixed lattice: the shortest range, 2% of the largest distance, is rounded
up to a power of the ratio ``r = 150^{1/15} ≈ 1.40`` of consecutive ranges, so the grid spans 2–2.8%
to 300–420% of the largest distance. Unrounded, every φ on the grid, hence every quantile of φ's
draws (the intervals :func:`stacked_intervals` reports), was ``3/(share · D)`` and gave away the
exact largest distance D between the confidential points, an extreme of the data; rounded, it
tells D only to within a factor r. Fits to the original and to the releases then also share
their grid values wherever their ranges overlap, so φ's discrete intervals are compared on the
same support.

The posterior of φ need not vanish at long ranges: only ``σ²φ`` is consistently estimable
(Zhang 2004), and as φ → 0 the exponential covariance tends to a linear variogram plus a
constant the flat prior on the intercept absorbs, so data that do not bound the range from
above leave mass at the grid's longest range however wide it is. :func:`gp_regression`
therefore warns (:class:`~geosynth.errors.DataWarning`) when more than
:data:`GRID_END_SHARE` of the mass of φ or α lies on an end of its grid: the interval of that
parameter is then cut off by the grid, not by the data. The smallest nugget ratio is exempt
when it is at most :data:`NEGLIGIBLE_NUGGET_RATIO`: mass there says the data are consistent
with no nugget, and the interval of τ² starts near 0 either way.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import linalg
from scipy.spatial.distance import pdist, squareform

from geosynth._random import SeedLike, as_generator
from geosynth._validation import check_int, check_probability, check_real_array, is_sequence
from geosynth.errors import DataWarning, InputError, InputTypeError, MemoryLimitError

__all__ = ["DEFAULT_RANGE_SHARES", "DEFAULT_NUGGET_RATIOS", "GRID_END_SHARE",
           "NEGLIGIBLE_NUGGET_RATIO", "MIN_NUGGET_RATIO", "GPPosterior", "gp_regression",
           "stacked_intervals"]

PARAMETERS = ("sigma2", "tau2", "phi")

#: Default effective ranges 3/φ as shares of the largest distance (module docstring).
DEFAULT_RANGE_SHARES = np.geomspace(0.02, 3.0, 16)
#: Default nugget-to-sill ratios α = τ²/σ².
DEFAULT_NUGGET_RATIOS = np.geomspace(0.01, 10.0, 12)
#: Posterior mass on an end value of the φ or α grid above which gp_regression warns.
GRID_END_SHARE = 0.05
#: A smallest nugget ratio at most this large is not warned about (module docstring).
NEGLIGIBLE_NUGGET_RATIO = 0.01
#: The smallest nugget ratio α accepted: the eigenvalues of R_φ carry rounding errors near
#: n·1e-16·n, so 1/(λ + α) on a (near) null direction of R_φ (duplicate points, long ranges) is
#: rounding below it (α = 1e-300 with duplicate points gave β ≈ -8e14 against 0.81).
MIN_NUGGET_RATIO = 1e-6


@dataclass(frozen=True)
class GPPosterior:
    """Independent posterior draws of the exponential-covariance GP regression.

    Attributes
    ----------
    beta : numpy.ndarray, shape (n_draws, p)
        Regression coefficients, columns named by ``names``.
    sigma2, tau2, phi : numpy.ndarray, shape (n_draws,)
        Partial sill, nugget and decay (``3/phi`` is the effective range).
    names : list of str
        Names of the columns of ``beta``.
    grid_mass : pandas.DataFrame
        Posterior probability of each (φ, α) grid point; mass on the grid's edge means the grid
        should be widened.
    """

    beta: np.ndarray
    sigma2: np.ndarray
    tau2: np.ndarray
    phi: np.ndarray
    names: list[str]
    grid_mass: pd.DataFrame

    def draws(self) -> pd.DataFrame:
        """All draws as one DataFrame (one column per parameter)."""
        frame = pd.DataFrame(self.beta, columns=[f"beta[{n}]" for n in self.names])
        for name in PARAMETERS:
            frame[name] = getattr(self, name)
        return frame

    def intervals(self, level: float = 0.95) -> pd.DataFrame:
        """Equal-tailed credible intervals: columns ``mean``, ``lower``, ``upper``."""
        return _intervals(self.draws(), level)


def gp_regression(
    coords: np.ndarray,
    y: np.ndarray,
    X: np.ndarray,
    names: list[str] | None = None,
    phi_grid: np.ndarray | None = None,
    nugget_grid: np.ndarray | None = None,
    n_draws: int = 2000,
    seed: SeedLike = None,
) -> GPPosterior:
    """Fit ``y = Xβ + δ + e`` with exponential covariance; return exact posterior draws.

    Parameters
    ----------
    coords : numpy.ndarray, shape (n, 2)
        Projected coordinates (distances in CRS units).
    y : numpy.ndarray, shape (n,)
        Response.
    X : numpy.ndarray, shape (n, p)
        Design matrix (include a column of ones for an intercept).
    names : list of str, optional
        Names of the columns of ``X``.
    phi_grid : numpy.ndarray, optional
        Decay values φ. Default: effective ranges 3/φ from 2% to 300% of the largest distance,
        16 values on a log scale, rounded up onto a fixed lattice so that the grid does not
        reveal that distance (see the module docstring for the choice).
    nugget_grid : numpy.ndarray, optional
        Nugget-to-sill ratios α = τ²/σ², each at least :data:`MIN_NUGGET_RATIO`. Default: 12
        values from 0.01 to 10 on a log scale.
    n_draws : int, default 2000
        Independent posterior draws.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Seed of the posterior draws.

    Returns
    -------
    GPPosterior

    Raises
    ------
    geosynth.errors.InputError
        Invalid points, response or design (not real numbers, NaN, a design that is (nearly)
        rank deficient); distances between the points that overflow; ``n_draws`` below 1 or
        above :data:`MAX_GP_DRAWS`; a grid that is not a non-empty 1-D array of distinct finite
        positive numbers, a φ grid of more than :data:`MAX_PHI_VALUES` or a nugget grid of more
        than :data:`MAX_NUGGET_VALUES` values, or a nugget ratio below
        :data:`MIN_NUGGET_RATIO`; a ``y`` that ``X``
        fits exactly; ``names`` that repeat a name.
    geosynth.errors.MemoryLimitError
        More than :data:`MAX_GP_POINTS` points.
    TypeError
        ``n_draws`` is not an integer.

    Warns
    -----
    geosynth.errors.DataWarning
        More than :data:`GRID_END_SHARE` of the posterior mass of φ or α lies on an end value of
        its grid (the smallest nugget ratio excepted when at most
        :data:`NEGLIGIBLE_NUGGET_RATIO`); the message names the grid to widen and in which
        direction.
    """
    coords, y, X, y_scale, x_scale = _scaled_inputs(coords, y, X)
    n, p = X.shape
    if names is not None and not is_sequence(names):  # 0-d array: "iteration over a 0-d array"
        raise InputTypeError(f"names must be a list of the {p} column names of X, got "
                         f"{type(names).__name__}; e.g. names=['const', 'age']")
    names = list(names) if names is not None else [f"x{k}" for k in range(p)]
    if len(names) != p:
        raise InputError(f"names has {len(names)} entries but X has {p} columns")
    labels = [f"beta[{name}]" for name in names]
    repeated = sorted({str(n) for n, label in zip(names, labels, strict=True)
                       if labels.count(label) > 1})
    if repeated:  # draws() then had two beta[a] columns, which stacked_intervals cross-joined
        raise InputError(f"names lists {repeated} more than once; give each column of X its own "
                         "name (e.g. names=['const', 'age'])")
    n_draws = check_int(n_draws, "n_draws", 1, what="posterior draws")
    if n_draws > MAX_GP_DRAWS:  # 10**13 asked for 73 TiB after every grid point was fitted
        raise InputError(f"n_draws must be at most {MAX_GP_DRAWS:,} (posterior draws), got "
                         f"{n_draws:,}; a few thousand give intervals to two digits")
    distances = squareform(pdist(coords))
    if not np.isfinite(distances).all():
        raise InputError(_OVERFLOW)
    phi_grid = (_default_phi_grid(distances) if phi_grid is None
                else _check_grid(phi_grid, "phi_grid", MAX_PHI_VALUES))
    nugget_grid = (DEFAULT_NUGGET_RATIOS.copy() if nugget_grid is None
                   else _check_grid(nugget_grid, "nugget_grid", MAX_NUGGET_VALUES,
                                    MIN_NUGGET_RATIO))
    fits = [_profile(distances, phi, y, X, nugget_grid) for phi in phi_grid]
    log_post = np.array([[f["log_post"] for f in row] for row in fits])
    mass = np.exp(log_post - log_post.max())
    mass /= mass.sum()
    _warn_grid_ends(mass, phi_grid, nugget_grid)
    rng = as_generator(seed)
    picks = rng.choice(mass.size, size=n_draws, p=mass.ravel())
    beta = np.empty((n_draws, p))
    sigma2 = np.empty(n_draws)
    for flat in np.unique(picks):
        rows = np.flatnonzero(picks == flat)
        fit = fits[flat // len(nugget_grid)][flat % len(nugget_grid)]
        s2 = fit["S2"] / rng.chisquare(n - p, size=len(rows))  # Inv-Gamma((n-p)/2, S²/2)
        z = rng.standard_normal((len(rows), p))
        beta[rows] = fit["beta_hat"] + np.sqrt(s2)[:, None] * (z @ fit["chol_cov"].T)
        sigma2[rows] = s2
    phi = phi_grid[picks // len(nugget_grid)]
    alpha = nugget_grid[picks % len(nugget_grid)]
    grid_mass = pd.DataFrame(
        [(f, a, mass[i, j]) for i, f in enumerate(phi_grid) for j, a in enumerate(nugget_grid)],
        columns=["phi", "nugget_ratio", "posterior_mass"],
    )
    beta *= y_scale / x_scale  # back to the units of y and X (exact: powers of two)
    if not np.isfinite(beta).all():
        raise InputError("β overflows float64 in the units of y and X (a column of X far "
                         "smaller than y); give that column of X in smaller units")
    sigma2 *= y_scale**2
    return GPPosterior(beta=beta, sigma2=sigma2, tau2=alpha * sigma2, phi=phi, names=names,
                       grid_mass=grid_mass)


def stacked_intervals(
    original: GPPosterior, releases: list[GPPosterior], level: float = 0.95
) -> pd.DataFrame:
    """Credible intervals from the original and from the stacked release draws.

    Zhou & Reiter (2010): with partially synthetic data, Bayesian inference fits the model to
    each release and pools the posterior draws; the combining rules of multiple imputation do
    not apply. Returns, per parameter, ``original_lower/upper``, ``synthetic_lower/upper`` and
    their geometric ``overlap`` (Nunes 2018, §3.3; :func:`~geosynth.metrics.interval_overlap`).

    Parameters
    ----------
    original : GPPosterior
        The fit to the original data.
    releases : list of GPPosterior
        The fits to each release, with the same columns of ``X`` and the same number of draws
        (their draws are pooled, each release with equal weight).
    level : float, default 0.95
        Credibility of the equal-tailed intervals, in (0, 1).

    Returns
    -------
    pandas.DataFrame
        One row per parameter (``beta[name]``, ``sigma2``, ``tau2``, ``phi``); columns
        ``original_mean``, ``original_lower``, ``original_upper``, the same with
        ``synthetic_``, and ``overlap``.

    Raises
    ------
    TypeError
        ``level`` is not a real number.
    geosynth.errors.InputError
        ``original`` or a release is not a :class:`GPPosterior`, ``releases`` is empty, a
        release's columns of ``X`` (its ``names``) are not the original's, releases hold
        different numbers of draws (each must weigh the same in the pool), or ``level`` is
        not in (0, 1).
    """
    from geosynth.metrics.utility import interval_overlap

    _check_posteriors(original, releases)
    stacked = pd.concat([r.draws() for r in releases], ignore_index=True)
    left = _intervals(original.draws(), level).add_prefix("original_")
    right = _intervals(stacked, level).add_prefix("synthetic_")
    table = left.join(right)
    table["overlap"] = interval_overlap(
        table[["original_lower", "original_upper"]].to_numpy(),
        table[["synthetic_lower", "synthetic_upper"]].to_numpy(),
    )
    return table


def _check_posteriors(original: Any, releases: Any) -> None:
    """Refuse fits that are not GPPosterior, or releases of other covariates or draw counts.

    A release without ``beta[age]`` gave the interval of the other releases alone; no release
    with it, "b has NaN bounds".
    """
    if not isinstance(original, GPPosterior):
        raise InputError(f"original must be a GPPosterior (the gp_regression fit to the original "
                         f"data), got {type(original).__name__}")
    if isinstance(releases, GPPosterior) or not isinstance(releases, Sequence):
        raise InputError(f"releases must be a list of GPPosterior (one gp_regression fit per "
                         f"release), got {type(releases).__name__}")
    if not releases:
        raise InputError("releases is empty; pass the posteriors fitted to each release")
    for k, release in enumerate(releases):
        if not isinstance(release, GPPosterior):
            raise InputError(f"releases[{k}] must be a GPPosterior, got {type(release).__name__}")
        missing = [n for n in original.names if n not in release.names]
        extra = [n for n in release.names if n not in original.names]
        if missing or extra:
            parts = ([f"lacks {missing}"] if missing else []) + (
                [f"has {extra}, which original lacks"] if extra else [])
            raise InputError(
                f"releases[{k}] {' and '.join(parts)} among the columns of X (names); fit "
                f"every release with the original's covariates, names={original.names!r}"
            )
        if len(release.sigma2) != len(releases[0].sigma2):
            # Pooled, each release weighs by its number of draws: 10,000 draws of one release
            # beside 1,000 of another made the stacked interval mostly the first one's.
            raise InputError(
                f"releases[{k}] has {len(release.sigma2):,} posterior draws but releases[0] "
                f"has {len(releases[0].sigma2):,}; the pooled draws weigh each release by its "
                "number of draws, and every release must weigh the same (Zhou & Reiter 2010): "
                "fit every release with the same n_draws"
            )


def _intervals(draws: pd.DataFrame, level: float) -> pd.DataFrame:
    level = check_probability(level, "level", hint="e.g. level=0.95")
    tail = (1 - level) / 2
    return pd.DataFrame({
        "mean": draws.mean(),
        "lower": draws.quantile(tail),
        "upper": draws.quantile(1 - tail),
    })


def _profile(distances, phi, y, X, nugget_grid):
    """Marginal log posterior of (φ, α) and the conditional moments, for every α."""
    n, p = X.shape
    # The scale of y's variation, offset-free (a constant y: its own size).
    spread = float(np.sum((y - y.mean()) ** 2)) or float(np.sum(y**2))
    eigenvalues, Q = linalg.eigh(np.exp(-phi * distances))
    eigenvalues = np.clip(eigenvalues, 0.0, None)
    Qy = Q.T @ y
    QX = Q.T @ X
    out = []
    for alpha in nugget_grid:
        w = 1.0 / (eigenvalues + alpha)
        XtVX = QX.T @ (w[:, None] * QX)
        XtVy = QX.T @ (w * Qy)
        try:
            chol = linalg.cho_factor(XtVX)
        except linalg.LinAlgError:  # numerically singular though matrix_rank passed
            raise InputError(_RANK_DEFICIENT) from None
        beta_hat = linalg.cho_solve(chol, XtVy)
        # (y − Xβ̂)ᵀ V⁻¹ (y − Xβ̂) from the residual itself: yᵀV⁻¹y − β̂ᵀXᵀV⁻¹y subtracts two
        # nearly equal numbers when y's mean is large against its spread (wrong at 1e6, NaN
        # at 1e8).
        residual = Qy - QX @ beta_hat
        S2 = float(residual @ (w * residual))
        if not S2 > _EXACT_FIT * float(w.max()) * spread:
            raise InputError("y is fitted exactly by X (no residual variation, e.g. a constant "
                             "y with an intercept): there is no spatial variance to estimate")
        log_det_V = float(np.sum(np.log(eigenvalues + alpha)))
        log_det_XtVX = 2.0 * float(np.sum(np.log(np.diag(chol[0]))))
        log_post = -0.5 * log_det_V - 0.5 * log_det_XtVX - 0.5 * (n - p) * np.log(S2)
        cov = linalg.cho_solve(chol, np.eye(p))
        try:
            chol_cov = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:  # the inverse of a nearly singular XᵀV⁻¹X: on Zen 4
            raise InputError(_RANK_DEFICIENT) from None  # (AVX-512) cho_factor passed
        out.append({"log_post": log_post, "beta_hat": beta_hat, "S2": S2,
                    "chol_cov": chol_cov})
    return out


#: The most posterior draws :func:`gp_regression` returns (β alone takes 8·p bytes each).
MAX_GP_DRAWS = 10**7
#: The most points :func:`gp_regression` fits: it holds about four dense n × n float64 matrices
#: (32·n² bytes, 0.8 GB at 5,000) and decomposes one per decay value in O(n³).
MAX_GP_POINTS = 5_000
#: The most decay values φ a grid may hold: each costs one eigendecomposition of an n × n
#: matrix (about 20 s at :data:`MAX_GP_POINTS`); 10**6 values ran for days without a message.
MAX_PHI_VALUES = 200
#: The most nugget ratios a grid may hold: each costs O(n·p²) per decay value and keeps its
#: conditional moments until the draws.
MAX_NUGGET_VALUES = 1_000
#: The powers of two (about 1e±150) a y's largest |value| may reach: σ² then stays normal.
_Y_SCALES = (2.0**-500, 2.0**500)
#: A weighted residual sum below this share of y's own spread is rounding: ``X`` fits ``y``.
_EXACT_FIT = 1e-20
#: Ratio of consecutive default effective ranges; the default φ grid lies on its powers.
_RANGE_STEP = float((DEFAULT_RANGE_SHARES[-1] / DEFAULT_RANGE_SHARES[0])
                    ** (1.0 / (DEFAULT_RANGE_SHARES.size - 1)))
_OVERFLOW = ("the distances between the points overflow float64 (coordinates near 1e154 or "
             "beyond); give the points in metres of a projected CRS")


def _check_grid(values: Any, name: str, max_size: int, minimum: float = 0.0) -> np.ndarray:
    """Return a grid of φ or α: non-empty, 1-D, at most max_size values, finite, >= minimum > 0.

    Real numbers only (:func:`check_real_array`): ``np.asarray(values, dtype=float)`` read
    ``["0.5", "1"]`` as numbers, ``[True, 2.0]`` as ``[1, 2]``, dropped imaginary parts and used
    the hidden values of a masked array.
    """
    grid = check_real_array(values, name, "a 1-D array of positive numbers")
    if grid.ndim != 1 or grid.size == 0 or not (np.isfinite(grid).all() and (grid > 0).all()):
        raise InputError(f"{name} must be a non-empty 1-D array of finite positive numbers, got "
                         f"{np.array2string(grid, threshold=8)}")
    if grid.size > max_size:
        raise InputError(f"{name} must hold at most {max_size:,} values, got {grid.size:,}; "
                         "each is fitted in turn, and a few dozen on a log scale locate the "
                         "posterior mass (a warning says when it sits on an end of the grid)")
    if np.unique(grid).size != grid.size:  # a repeated value doubled its prior weight
        raise InputError(f"{name} lists a value more than once "
                         f"({np.array2string(grid, threshold=8)}); each grid value is one "
                         "point of a uniform prior: list each once")
    if grid.min() < minimum:
        raise InputError(f"{name} values must be at least {minimum:g}, got {grid.min():g}: "
                         "smaller ratios are below the rounding error of the correlation "
                         f"matrix, so the fit would be noise; {minimum:g} already means no "
                         "nugget to speak of")
    return grid


def _default_phi_grid(distances: np.ndarray) -> np.ndarray:
    """Decays 3/range for the default ranges, on the lattice of powers of _RANGE_STEP.

    The shortest range is 2% of the largest distance rounded up to a power of the grid's ratio,
    so the grid reveals that distance (an extreme of the points) only to within the ratio.
    """
    max_distance = distances.max()
    if max_distance <= 0:
        # Coordinates 1e-300 apart are distinct, but their distances underflow to 0.
        raise InputError("all coordinates coincide (or differ by less than about 1e-154, where "
                         "their distances underflow to 0); a spatial regression needs distinct "
                         "points, in metres of a projected CRS")
    shortest = DEFAULT_RANGE_SHARES[0] * max_distance
    first = np.ceil(np.log(shortest) / np.log(_RANGE_STEP))
    ranges = _RANGE_STEP ** (first + np.arange(DEFAULT_RANGE_SHARES.size))
    if not np.isfinite(ranges).all():
        raise InputError(_OVERFLOW)
    return 3.0 / ranges


def _warn_grid_ends(mass: np.ndarray, phi_grid: np.ndarray, nugget_grid: np.ndarray) -> None:
    """Warn when an end of the φ or α grid holds more than GRID_END_SHARE of the mass."""
    ends = []
    phi_mass = mass.sum(axis=1)
    if np.unique(phi_grid).size > 1:
        ends += [(phi_mass[np.argmin(phi_grid)], "phi", "smallest", "phi_grid",
                  "smaller phi (longer effective ranges 3/phi); if the mass stays on the "
                  "longest range however far the grid reaches, the data do not bound the "
                  "range, and phi's interval is limited by the grid"),
                 (phi_mass[np.argmax(phi_grid)], "phi", "largest", "phi_grid",
                  "larger phi (shorter effective ranges)")]
    nugget_mass = mass.sum(axis=0)
    if np.unique(nugget_grid).size > 1:
        if nugget_grid.min() > NEGLIGIBLE_NUGGET_RATIO:
            ends.append((nugget_mass[np.argmin(nugget_grid)], "the nugget ratio tau2/sigma2",
                         "smallest", "nugget_grid", "smaller ratios"))
        ends.append((nugget_mass[np.argmax(nugget_grid)], "the nugget ratio tau2/sigma2",
                     "largest", "nugget_grid", "larger ratios"))
    for share, what, end, grid, direction in ends:
        if share > GRID_END_SHARE:
            warnings.warn(
                f"gp_regression: {share:.0%} of the posterior mass of {what} lies on the {end} "
                f"value of {grid}, so its credible interval is cut off by the grid; widen "
                f"{grid} towards {direction}",
                DataWarning, stacklevel=3,
            )


def _scaled_inputs(coords, y, X):
    """Check the inputs; return them with ``y`` and each column of ``X`` scaled into [-1, 1].

    The priors (flat on β, Jeffreys on σ²) make the posterior equivariant under scaling: with
    ``y = c·y'`` and column ``j`` of ``X`` = ``d_j·x'_j``, the draws of ``β_j`` are
    ``c/d_j`` times those fitted to ``(y', X')`` and those of σ² ``c²`` times. The scales are
    powers of two, so the rescaling is exact. Unscaled, a ``y`` near 1e160 overflowed its sum
    of squares (and was refused as fitted exactly by ``X``), one near 1e-300 underflowed it, and
    columns of very different sizes looked rank deficient.

    Returns
    -------
    coords, y, X : numpy.ndarray
        ``y`` and ``X`` scaled.
    y_scale : float
    x_scale : numpy.ndarray, shape (p,)

    Raises
    ------
    geosynth.errors.InputError
        Invalid inputs, or a ``y`` whose variance would overflow or underflow float64.
    """
    coords = check_real_array(coords, "coords")
    y, X = check_real_array(y, "y"), check_real_array(X, "X")
    if coords.ndim != 2 or coords.shape[1] != 2:
        raise InputError(f"coords must have shape (n, 2), got {coords.shape}")
    if y.shape != (coords.shape[0],) or X.ndim != 2 or X.shape[0] != coords.shape[0]:
        raise InputError(
            f"y must have shape (n,) and X (n, p) with n = {coords.shape[0]} rows, got "
            f"{y.shape} and {X.shape}"
        )
    n, p = X.shape
    if n <= p + 1:
        raise InputError(f"need more than p + 1 = {p + 1} points, got {n}")
    if n > MAX_GP_POINTS:  # 50,000 points asked for 80 GB before the first eigendecomposition
        raise MemoryLimitError(
            f"gp_regression got {n:,} points, more than geosynth.metrics.gp.MAX_GP_POINTS = "
            f"{MAX_GP_POINTS:,}: it decomposes dense n × n matrices (about "
            f"{32 * n * n / 2**30:,.1f} GiB, and time growing as n³ for each decay value); fit "
            "a random subsample of the points (e.g. rows = rng.choice(n, 2000, replace=False)), "
            "or raise MAX_GP_POINTS deliberately if the memory and time are available"
        )
    for name, arr in (("coords", coords), ("y", y), ("X", X)):
        if not np.all(np.isfinite(arr)):
            raise InputError(f"{name} contains NaN or inf; drop or impute those rows first")
    y_scale, x_scale = _power_of_two_scale(y), _power_of_two_scale(X, axis=0)
    if not _Y_SCALES[0] <= y_scale <= _Y_SCALES[1]:  # σ² and τ² scale as y² (inf or 0 beyond)
        raise InputError("y's largest |value| is beyond 1e150 or below 1e-150, so its variances "
                         "(σ², τ²) would overflow or underflow float64; give y in other units "
                         "(e.g. divided by a power of ten), and scale the results back")
    y, X = y / y_scale, X / x_scale
    if np.linalg.matrix_rank(X) < p:
        raise InputError(_RANK_DEFICIENT)
    return coords, y, X, float(y_scale), x_scale


def _power_of_two_scale(values: np.ndarray, axis: int | None = None) -> np.ndarray:
    """Powers of two that bring the largest ``|value|`` (per column) into [0.5, 1); 1 for 0."""
    _, exponent = np.frexp(np.max(np.abs(values), axis=axis))
    return np.ldexp(1.0, exponent)


_RANK_DEFICIENT = ("X is rank deficient; drop collinear columns (e.g. a duplicated dummy or a "
                   "second constant column)")
