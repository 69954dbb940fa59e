r"""Bayesian inference on ε-DP synthetic counts (Charest 2011; Marcolin 2018, §2.6).

An agency releases ``M`` synthetic tables of the confidential counts ``x`` drawn by the
Dirichlet-Multinomial synthesizer of Abowd and Vilhuber (2008)
(:class:`geosynth.dp.DirichletMultinomialSynthesizer`). Charest (2011) showed that Rubin's
combining rules are biased on such releases and proposed to analyse them with the synthesizer
inside the model. For ``k`` categories (Marcolin 2018, eqs. of §2.6.1 and §2.6.2)::

    p    ~ Dirichlet(γ)                    prior of the confidential proportions
    x    ~ Multinomial(n, p)               confidential counts (latent)
    p̃_m ~ Dirichlet(α + x)                m = 1..M, the synthesizer
    x̃_m ~ Multinomial(ñ, p̃_m)             observed synthetic tables

With ``k = 2`` this is the Beta-Binomial model of Charest (2011). :func:`charest_posterior`
draws from the posterior of ``(p, x)`` given the ``x̃_m``; :func:`charest_moments` returns its
exact means and variances without sampling. Analysing a release is post-processing, so an
ordinary ``seed`` is fine here (no :class:`~geosynth.errors.PrivacyLeakWarning`).

The collapsed posterior factorises
----------------------------------
Integrating ``p̃_m`` out, ``x̃_m | x`` is Dirichlet-multinomial, and integrating ``p`` out,
``x`` is Dirichlet-multinomial under the prior. With ``A = Σ α_i``,

.. math::

    π(x \mid \tilde x) \propto \prod_i \frac{Γ(γ_i + x_i)}{x_i!}
        \prod_m \frac{Γ(A + n)}{Γ(A + n + \tilde n)}
        \prod_i \frac{Γ(α_i + x_i + \tilde x_{mi})}{Γ(α_i + x_i)},
    \qquad p \mid x, \tilde x \sim \text{Dirichlet}(γ + x).

Because ``Σ_i (α_i + x_i) = A + n`` whatever ``x``, the ``Γ(A + n)`` terms are constant and
``π(x | x̃) ∝ ∏_i f_i(x_i)`` on ``{x : Σ x_i = n}``: a product of per-category factors under a
single sum constraint. Its normaliser is the k-fold convolution ``(f_1 * … * f_k)(n)``, computed
in log space in ``O(k n²)``; the marginal pmf of every ``x_i`` (hence the exact posterior mean
and variance of every ``p_i``) follows from forward and backward partial convolutions, and
*independent* draws of ``x`` follow by backward sampling, category by category, in
``O(k log n)`` per draw from a table of conditional CDFs (``O(n + k)`` without the table, for
large ``n``; :mod:`geosynth.dp.inference_kernels`).

Methods
-------
``"exact"`` (what ``"auto"`` uses whenever ``k (n + 1)² ≤ 5·10⁸``, i.e. ``n`` up to ~7900 with
``k = 8``): independent draws from the exact posterior by the convolution above. No burn-in, no
tuning, effective sample size equal to the number of draws; ``burn_in`` and ``thin`` only set
how many draws are returned (the same number an MCMC run of those settings keeps). Marcolin
(2018) enumerated ``x`` only for ``k = 2`` and concluded that for ``k > 2`` "there is no
possibility" of exact Gibbs (§3.1.3): the factorisation removes that obstacle, since the
``C(n + k − 1, k − 1)`` compositions (≈ 1.2·10¹⁰ for SUSEP) never need to be listed.

``"mh"`` (any ``k``; what ``"auto"`` uses beyond that size): a collapsed Metropolis chain on the
compositions of ``n``. One iteration makes ``k`` proposals; each moves ``s`` units (``s``
uniform on ``1..S``) from a random category ``i`` to a random other category ``j`` and is
accepted with probability ``min(1, π(x') / π(x))``, which needs four look-ups in the table of
``log f_i``. Why this sampler: (i) the proposal is symmetric (the reverse move picks ``(j, i)``
and the same ``s``), so detailed balance holds with the plain Metropolis ratio; (ii) unit moves
between any two categories connect every composition of ``n`` to every other, so the chain is
irreducible, and moves that would make a count negative are rejected, so it is aperiodic;
(iii) ``p`` and ``p̃`` are integrated out, so ``x`` is not tied to a current ``p``, ``p̃``
(which in the thesis' scheme are themselves drawn given ``x`` and slow the chain down); ``p`` is
drawn from ``Dirichlet(γ + x)`` only at the recorded iterations. ``S`` (start: ``step`` or
``max(1, n // 4k)``) is adapted every 50 iterations of the burn-in towards an acceptance rate of
0.35 and frozen afterwards, so the recorded chain is time-homogeneous and π-invariant.

``"gibbs"`` (``k = 2``): Marcolin's Algorithm 3 with ``p̃`` integrated out: ``p | x`` is Beta and
``x | p, x̃ ∝ Binomial(x; n, p) ∏_m DirMult(x̃_m; ñ, α + x)`` is drawn exactly by enumerating
``x = 0..n`` in log space.

``"mhl"`` (``k = 2``): Marcolin's Algorithm 4 as printed (``p``, ``p̃_m`` explicit, Gibbs for both;
``x' = x + U{−L..L}`` accepted by Metropolis; ``L = step``, default 11, the thesis' choice for
an acceptance rate near 45%). Proposals outside ``0..n`` are rejected, which keeps the proposal
symmetric at the borders.

``"adaptive"`` (any ``k``): Marcolin's Algorithm 6 (``p``, ``p̃_m`` explicit; independence
proposal ``x' ~ Multinomial(n, β)``, ``β`` the mean of the last 500 ``p`` draws), corrected as
listed below; adaptation is confined to the burn-in. It keeps the posterior invariant but mixes
poorly in the tails: the multinomial proposal is lighter-tailed than the posterior of ``x``, so
a chain that reaches the tails stays there, and arviz's ESS does not show it. On Charest's
scenario (x̃ = 35, n = ñ = 100, ε = 2; exact sd of ``x_0`` 8.14, ``P(x_0 ≥ 45)`` = 0.052) two
chains of 400,000 iterations gave sd 7.50 and 7.56 and ``P(x_0 ≥ 45)`` 0.036 and 0.027, with
ESS above 2,000 (measured 2026-11-29, chain seeds 3 and 4). Use it to reproduce the thesis;
``"auto"`` never picks it, and ``"mh"`` gets sd 8.13 and 0.0517 there.

Every method refuses, before computing, a run of more than :data:`MAX_WORK` elementary steps
(``"exact"`` about ``k (n + 1)²``, the MCMC methods ``chains · n_iter`` times their cost per
iteration): ``thin`` reduces the draws kept, not the iterations run.

Typos in Marcolin (2018) corrected here
---------------------------------------
1. §2.5.1, Definição 3: "``α_i ≤ ñ / exp(ε − 1)``, α usually the largest such value" must read
   ``α_i ≥ ñ / (e^ε − 1)``, the smallest such value (see :mod:`geosynth.dp.synthesizers`);
   ch. 4 uses the misprinted ``α = 107/e ≈ 39.37`` where ``16.75`` gives ε = 2.
2. Joint density of §2.6.1 and eq. (2.7): the prior factor ``(1 − p)^{γ_2}`` must be
   ``(1 − p)^{γ_2 − 1}``, and the Beta normaliser ``Γ(α_1 + α_2 + n) / (Γ(α_1 + x) +
   Γ(α_2 + n − x))`` has a *product* ``Γ(α_1 + x) Γ(α_2 + n − x)`` in the denominator (also in
   the definition of ``B^{-1}`` under Algorithm 3).
3. Algorithm 3, line 5 enumerates ``x = 1..n``; ``x = 0`` has positive probability, so
   ``x = 0..n``.
4. Algorithms 4, 5 and 6 accept the candidate "if ``τ ≤ u``"; it is accepted if ``u ≤ τ``,
   ``u ~ U(0, 1)`` (as printed, good moves would be rejected).
5. §2.6.2, the full conditional of ``p̃`` and line 4 of Algorithms 5 and 6:
   ``Dirichlet(γ + x + x̃)`` must be ``Dirichlet(α + x + x̃_m)``, one draw per table ``m``
   (``x̃`` is data, so the superscript ``(t − 1)`` on it is spurious too).
6. §2.6.2, ``q(x) = f(x | p, p̃, x̃)``: the ``p̃`` factors and ``Γ(α_i + x_i)^{-1}`` must be
   raised to a product over all ``M`` tables, ``∏_m ∏_i p̃_mi^{α_i + x_i − 1} / Γ(α_i + x_i)``.
7. Algorithms 5 and 6 propose ``x^cand ~ Multinomial(β)``: the size is missing,
   ``Multinomial(n, β)``.
8. Algorithm 6 re-estimates ``β`` every 500 iterations for the whole run without diminishing
   adaptation; the recorded chain is then not a Markov chain with the posterior as invariant
   law (Roberts and Rosenthal 2007). Here ``β`` is adapted during burn-in only.

Replication of the thesis' tables
---------------------------------
Measured with 1000 synthetic releases per setting (``tests/dp/test_inference.py`` repeats them
with 150-200 releases and tolerances from the spread over releases).

* Tables 3.1-3.2 (Charest's scenario ``x = 30``, ``n = ñ = 100``, ε = 2 over ``M`` tables,
  ``α = ñ / (e^{ε/M} − 1)``, ``γ = (1, 1)``): the average posterior mean is 0.310, 0.306, 0.310,
  0.328 for ``M = 1, 2, 5, 10`` (thesis, Gibbs row: 0.3105, 0.3043, 0.3116, 0.3334) and its
  variance over releases 0.0061, 0.0073, 0.0124, 0.0164 (Table 3.2: 0.0063, 0.0068, 0.0124,
  0.0156; Table 3.2 is that spread, not the posterior variance, whose average is 0.0082 at
  ``M = 1``). Table 3.5 at ε = 0.1 (0.4891; ours 0.488) confirms that ch. 3 used the correct α.
* §3.1.1: ``"mhl"`` with ``L = 11`` accepts 45% of the proposals with that α; the thesis'
  0.464 is reproduced (0.465) with the misprinted ``α = ñ/e``, so that study seems to have used
  the formula of typo 1.
* Table 4.3 (SUSEP, ``α = 39.37`` per category, ``γ = 0.5``, ``M = 1``) is **not** reproduced.
  The average posterior means are 0.162, 0.088, 0.180, 0.079, 0.146, 0.107, 0.153, 0.084
  (cells 26-35 M, 26-35 F, 36-45 M, …, 55+ F) against the thesis' 0.1885, 0.0573, 0.2203,
  0.0375, 0.1679, 0.0951, 0.1853, 0.0480: χ² ≈ 1000 on 8 cells with the thesis' own
  1000-release error included. With
  ``8 · 39.37 = 315`` prior pseudo-counts against ``n = 107`` the synthetic table says little
  about ``x`` and every posterior mean is pulled towards ``1/8``; the thesis' bias pattern
  (small cells up, Table 4.4) is reproduced, 3-5 times larger. The thesis' numbers are closest
  to the exact posterior with ``α_i ≈ 4-5``: reading 39.37 as the *total* concentration
  (``α_i = 39.37/8``) reproduces every cell of Table 4.3 within 0.008 (tested), though no
  single α fits them exactly; its Algorithm 6 accepts about 1% of its proposals on this problem (ESS
  ≈ 25 out of 20,000 draws), so its averages carry a large Monte Carlo error.

References
----------
Abowd, J. M. and Vilhuber, L. (2008). How protective are synthetic data? *Privacy in Statistical
Databases (PSD 2008)*, 239-246.

Charest, A.-S. (2011). How can we analyze differentially-private synthetic datasets? *Journal of
Privacy and Confidentiality* 2(2).

Marcolin, G. (2018). Differential privacy em dados sintéticos binários e categóricos (thesis),
§2.6, ch. 3 and ch. 4.

Roberts, G. O. and Rosenthal, J. S. (2007). Coupling and ergodicity of adaptive Markov chain
Monte Carlo algorithms. *Journal of Applied Probability* 44(2), 458-475.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from geosynth._random import check_seed
from geosynth._validation import (
    MAX_CHAINS,
    check_choice,
    check_int,
    check_probability,
    check_real_array,
    describe_value,
)
from geosynth.dp import inference_kernels as kernels
from geosynth.dp.synthesizers import MAX_COUNT, check_alpha, check_counts
from geosynth.errors import InputError, MemoryLimitError
from geosynth.samplers.rng import make_streams

__all__ = [
    "METHODS",
    "MAX_TABLE_BYTES",
    "MAX_DRAW_BYTES",
    "MAX_WORK",
    "CharestPosterior",
    "CharestMoments",
    "charest_posterior",
    "charest_moments",
]

METHODS = ("auto", "exact", "mh", "gibbs", "mhl", "adaptive")
#: Largest release table (k × (n + 1) float64) a posterior is computed with: 2 GiB.
MAX_TABLE_BYTES = 2**31
#: Largest set of draws (chains × kept draws × k, an int64 count and a float64 proportion
#: each) a posterior returns: 2 GiB. n_iter=10**15 asked numpy for 14 PiB.
MAX_DRAW_BYTES = 2**31
#: Most elementary steps (one term of a log-space convolution, one entry of a sampler's
#: per-iteration work) a posterior or its moments may take, about 20 minutes: explicit
#: method="exact" at n = 10**8 (allowed by the table limit) would have run for years, and
#: n_iter=10**15 with a large thin passed the draws limit and looped for ever.
MAX_WORK = 1e11
EXACT_AUTO_LIMIT = 5e8  # k·(n+1)² above which "auto" switches from "exact" to "mh"
CDF_TABLE_LIMIT = 2**22  # entries of the (k-1, n+1, n+1) table that speeds up "exact" (32 MiB)
MHL_DEFAULT_STEP = 11  # Marcolin (2018, §3.1.1): L = 11 gives ~46% acceptance
ADAPT_EVERY = 500  # Marcolin (2018), Algorithm 6: β is re-estimated every 500 iterations


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True, eq=False)
class CharestMoments:
    """Exact posterior moments of the Charest model (no sampling).

    Attributes
    ----------
    mean : numpy.ndarray of float64, shape (k,)
        ``E[p_i | x̃]``.
    variance : numpy.ndarray of float64, shape (k,)
        ``Var[p_i | x̃]``.
    x_pmf : numpy.ndarray of float64, shape (k, n + 1)
        ``P(x_i = v | x̃)`` for ``v = 0..n``.
    categories : tuple
        Category labels.
    """

    mean: np.ndarray
    variance: np.ndarray
    x_pmf: np.ndarray
    categories: tuple

    @property
    def x_mean(self) -> np.ndarray:
        """Posterior mean of the latent counts, shape (k,)."""
        return self.x_pmf @ np.arange(self.x_pmf.shape[1])


@dataclass(frozen=True, eq=False)
class CharestPosterior:
    """Posterior draws of the Charest model and their summaries.

    Attributes
    ----------
    draws : numpy.ndarray of float64, shape (n_draws, k)
        Draws of ``p`` (rows sum to 1), chains one after the other.
    x_draws : numpy.ndarray of int64, shape (n_draws, k)
        Draws of the latent confidential counts ``x`` (rows sum to ``n``), aligned with
        ``draws``.
    chains : int
        Number of chains; chain ``c`` is rows ``c·n_draws/chains`` to ``(c+1)·n_draws/chains``.
    method : str
        The sampler used (``"exact"``, ``"mh"``, ``"gibbs"``, ``"mhl"`` or ``"adaptive"``).
    acceptance_rate : float or None
        Post-burn-in acceptance rate of the Metropolis step over all chains (None for
        ``"exact"`` and ``"gibbs"``). ``"mhl"`` counts a proposal equal to the current ``x``
        (step 0 of the window ``U{−L..L}``) as accepted.
    step : int or None
        Largest shift ``S`` of ``"mh"`` after burn-in adaptation (of the last chain), or ``L``
        of ``"mhl"``.
    n, n_synth : int
        Confidential and synthetic totals.
    alpha, prior : numpy.ndarray of float64, shape (k,)
        Synthesizer prior ``α`` and prior ``γ`` of ``p``.
    synthetic_counts : numpy.ndarray of int64, shape (M, k)
        The synthetic tables analysed.
    categories : tuple
        Category labels (DataFrame columns, or ``(0, …, k − 1)``; ``("success", "failure")`` for
        binary input).
    """

    draws: np.ndarray
    x_draws: np.ndarray
    chains: int
    method: str
    acceptance_rate: float | None
    step: int | None
    n: int
    n_synth: int
    alpha: np.ndarray
    prior: np.ndarray
    synthetic_counts: np.ndarray
    categories: tuple

    @property
    def p(self) -> np.ndarray:
        """Draws of the success probability (binary model only), shape (n_draws,)."""
        if self.draws.shape[1] != 2:
            raise AttributeError(
                f"p is the success probability of the binary model; this posterior has "
                f"{self.draws.shape[1]} categories, use draws[:, i]"
            )
        return self.draws[:, 0]

    @property
    def n_draws(self) -> int:
        """Number of draws over all chains."""
        return self.draws.shape[0]

    def chain_draws(self) -> np.ndarray:
        """Draws of ``p`` split by chain, shape (chains, n_draws / chains, k)."""
        return self.draws.reshape(self.chains, -1, self.draws.shape[1])

    @property
    def mean(self) -> np.ndarray:
        """Posterior mean of ``p``, shape (k,), Rao-Blackwellised.

        ``E[p | x̃] = E[E[p | x] | x̃] = (γ + E[x | x̃]) / (Σγ + n)``, averaged over ``x_draws``:
        the same expectation as ``draws.mean(axis=0)`` with a smaller Monte Carlo error.
        """
        return (self.prior + self.x_draws.mean(axis=0)) / (self.prior.sum() + self.n)

    @property
    def variance(self) -> np.ndarray:
        """Posterior variance of ``p``, shape (k,), Rao-Blackwellised.

        ``Var[p_i] = E[Var(p_i | x)] + Var(E[p_i | x])`` with ``p | x ~ Dirichlet(γ + x)``,
        written as :func:`charest_moments` writes it: the spread of ``γ_i + x_i`` lost ``x`` in
        the rounding of a large prior (2e-28 for the exact 1.25e-151 at γ = 1e150) and
        ``total**2`` overflowed (NaN from γ = 1e154).
        """
        total = self.prior.sum() + self.n
        x = self.x_draws.astype(np.float64)
        share = (self.prior + x) / total  # E[p_i | x]
        rest = ((self.prior.sum() - self.prior) + (self.n - x)) / total  # 1 − share, exactly
        within = (share * rest).mean(axis=0) / (total + 1.0)
        return within + x.var(axis=0) / total / total

    def hpd(self, level: float = 0.95) -> np.ndarray:
        """Highest posterior density interval of each ``p_i`` from the draws.

        Parameters
        ----------
        level : float, default 0.95
            Credibility, in (0, 1).

        Returns
        -------
        numpy.ndarray of float64, shape (k, 2)
            Lower and upper bound per category: the shortest interval holding
            ``ceil(level · n_draws)`` draws (unimodal posteriors; Chen and Shao 1999).

        Raises
        ------
        geosynth.errors.InputError
            ``level`` is not in (0, 1).
        """
        level = check_probability(level, "level", hint="e.g. level=0.95")
        ordered = np.sort(self.draws, axis=0)
        size = ordered.shape[0]
        inside = min(max(math.ceil(float(level) * size), 1), size)
        widths = ordered[inside - 1 :] - ordered[: size - inside + 1]
        start = np.argmin(widths, axis=0)
        columns = np.arange(ordered.shape[1])
        return np.column_stack([ordered[start, columns], ordered[start + inside - 1, columns]])

    def ess(self) -> np.ndarray:
        """Effective sample size of each ``p_i`` (arviz rank-normalised bulk ESS), shape (k,)."""
        from geosynth._compat import import_arviz

        arviz = import_arviz()
        by_chain = self.chain_draws()
        return np.array(
            [
                float(arviz.ess(np.ascontiguousarray(by_chain[:, :, i])))
                for i in range(by_chain.shape[2])
            ]
        )

    def summary(self, level: float = 0.95) -> pd.DataFrame:
        """Posterior summary per category.

        Parameters
        ----------
        level : float, default 0.95
            Credibility of the HPD interval.

        Returns
        -------
        pandas.DataFrame
            One row per category (index ``category``) with columns ``mean``, ``sd``,
            ``hpd_lower``, ``hpd_upper`` (of ``p``), ``x_mean`` (posterior mean of the latent
            count) and ``ess``.
        """
        bounds = self.hpd(level)
        frame = pd.DataFrame(
            {
                "mean": self.mean,
                "sd": np.sqrt(self.variance),
                "hpd_lower": bounds[:, 0],
                "hpd_upper": bounds[:, 1],
                "x_mean": self.x_draws.mean(axis=0),
                "ess": self.ess(),
            },
            index=pd.Index(list(self.categories), name="category", tupleize_cols=False),
        )
        return frame

    def __repr__(self) -> str:
        rate = ""
        if self.acceptance_rate is not None:
            rate = f", acceptance_rate={self.acceptance_rate:.3f}"
        means = np.array2string(self.mean, precision=4, separator=", ")
        return (
            f"CharestPosterior(method={self.method!r}, n_draws={self.n_draws}, "
            f"chains={self.chains}, mean={means}{rate})"
        )


# ---------------------------------------------------------------------------- validation
@dataclass(frozen=True, eq=False)
class _Problem:
    """Validated inputs: tables (M, k), totals and per-category priors."""

    tables: np.ndarray
    n: int
    n_synth: int
    alpha: np.ndarray
    prior: np.ndarray
    categories: tuple
    binary_input: bool


#: Largest total ``Σγ`` of the prior of ``p``: beyond it the gammas of ``p | x`` sum to inf (all
#: draws of ``p`` were 0) and so do the moments' totals (every posterior mean was 0).
MAX_PRIOR_TOTAL = np.finfo(np.float64).max / 4


def _per_category(values: Any, k: int, name: str) -> np.ndarray:
    a = check_alpha(values, name)  # also refuses masked, complex and text values
    if a.size == 1:
        return np.full(k, a[0])
    if a.size != k:
        raise InputError(
            f"{name} has {a.size} values but the synthetic tables have {k} categories; give a "
            f"scalar or one value per category"
        )
    return a


def _validate(synthetic_counts: Any, n: Any, n_synth: Any, alpha: Any, prior: Any) -> _Problem:
    n = _check_total(n, "n")
    n_synth = _check_total(n_synth, "n_synth")
    categories: tuple | None = None
    values = synthetic_counts
    if isinstance(synthetic_counts, pd.DataFrame):
        categories = tuple(synthetic_counts.columns)
        if len(set(categories)) != len(categories):
            raise InputError(
                "synthetic_counts has duplicate column labels; give each category one column "
                "(rename or sum the duplicated ones)"
            )
        values = synthetic_counts.to_numpy()
    elif isinstance(synthetic_counts, pd.Series):
        values = synthetic_counts.to_numpy()
    # Masked entries were read through the mask, text and bools as numbers.
    check_real_array(values, "synthetic_counts", "an array of counts")
    if np.ndim(values) == 0:  # one binary table given as a number
        values = [values]
    ndim = np.ndim(values)
    if ndim == 1:
        successes = check_counts(values, "synthetic_counts", ndim=1)
        too_big = successes > n_synth
        if too_big.any():
            raise InputError(
                f"synthetic_counts given as a 1-D array are the synthetic successes of the "
                f"binary model, one per table, so each must be <= n_synth={n_synth}; got "
                f"{successes[too_big][:5].tolist()} at positions "
                f"{np.flatnonzero(too_big)[:5].tolist()}. Pass one table of k categories as "
                f"shape (1, k)"
            )
        tables = np.column_stack([successes, n_synth - successes])
        binary_input = True
        categories = ("success", "failure")
    elif ndim == 2:
        tables = check_counts(values, "synthetic_counts", ndim=2)
        binary_input = False
        if tables.shape[1] < 2:
            raise InputError(
                f"synthetic_counts has {tables.shape[1]} category; give tables of shape (M, k) "
                f"with k >= 2, or a 1-D array of binary successes"
            )
        sums = tables.sum(axis=1)
        wrong = sums != n_synth
        if wrong.any():
            raise InputError(
                f"every synthetic table must sum to n_synth={n_synth}; rows "
                f"{np.flatnonzero(wrong)[:5].tolist()} sum to {sums[wrong][:5].tolist()}. Check "
                f"n_synth (the size ñ of each synthetic table) or the orientation (rows = tables)"
            )
    else:
        raise InputError(
            f"synthetic_counts must be a 1-D array of binary successes (one per table) or a "
            f"2-D array of shape (M, k), got {ndim}-D"
        )
    k = tables.shape[1]
    table_bytes = 8 * k * (n + 1.0)  # the release table R[i, v], v = 0..n, of every method
    if table_bytes > MAX_TABLE_BYTES:
        raise MemoryLimitError(
            f"n={n:,} with k={k} categories needs a table of {table_bytes / 2**30:.1f} GiB "
            f"(k × (n + 1) float64), more than geosynth.dp.inference.MAX_TABLE_BYTES "
            f"({MAX_TABLE_BYTES / 2**30:g} GiB); check n (the confidential total), or raise the "
            "limit deliberately"
        )
    if categories is None:
        categories = tuple(range(k))
    alpha = _per_category(alpha, k, "alpha")
    prior = _per_category(prior, k, "prior")
    if prior.max() > MAX_PRIOR_TOTAL / k:  # Σγ <= k max γ: the sum itself cannot overflow
        raise InputError(
            f"prior (max {prior.max():.3g} over {k} categories) can sum beyond "
            f"{MAX_PRIOR_TOTAL:.3g}, where the draws and moments of p overflow; a prior of "
            f"1e300 already fixes p at its mean: give every prior value at most "
            f"{MAX_PRIOR_TOTAL / k:.3g}"
        )
    return _Problem(
        tables=np.ascontiguousarray(tables, dtype=np.int64),
        n=n,
        n_synth=n_synth,
        alpha=alpha,
        prior=prior,
        categories=categories,
        binary_input=binary_input,
    )


def _check_total(value: Any, name: str) -> int:
    """Return ``n`` or ``n_synth`` as an int from 1 to ``MAX_COUNT`` (10**30 overflowed)."""
    value = check_int(value, name)
    if value > MAX_COUNT:
        raise InputError(
            f"{name} is beyond 2**62, which int64 counts cannot carry; pass the number of "
            "records of a table"
        )
    return value


def _check_work(work: float, what: str, fix: str) -> None:
    """Refuse a computation of more than :data:`MAX_WORK` elementary steps."""
    if work > MAX_WORK:
        raise InputError(
            f"{what} needs about {work:.2g} elementary steps, more than "
            f"geosynth.dp.inference.MAX_WORK ({MAX_WORK:.0e}, about 20 minutes); {fix}"
        )


def _sampler_work(method: str, problem: _Problem, chains: int, n_iter: int, n_keep: int) -> float:
    """Elementary steps of a posterior run: the tables plus every chain's iterations."""
    n_tables, k = problem.tables.shape
    width = problem.n + 1.0
    work = n_tables * k * width  # release_log_table
    if method == "exact":
        work += k * width**2  # forward sums (and the CDF table)
        if (k - 1) * width**2 > CDF_TABLE_LIMIT:  # a linear walk per category and draw
            work += chains * n_keep * k * width
        return work
    per_iteration = {"mh": k, "gibbs": width, "mhl": n_tables,
                     "adaptive": width + n_tables * k}[method]
    return work + chains * float(n_iter) * per_iteration


def _resolve_method(method: Any, k: int, n: int) -> str:
    method = check_choice(method, "method", METHODS)
    if method == "auto":
        return "exact" if k * (n + 1.0) ** 2 <= EXACT_AUTO_LIMIT else "mh"
    if method in ("gibbs", "mhl") and k != 2:
        raise InputError(
            f"method={method!r} is the binary (Beta-Binomial) sampler of Marcolin (2018) and needs "
            f"k = 2 categories, got k = {k}; use method='exact' or 'mh' for k > 2"
        )
    return method


def _proportional_start(tables: np.ndarray, n: int) -> np.ndarray:
    """Composition of ``n`` proportional to the synthetic totals (largest remainder)."""
    share = tables.sum(axis=0) / tables.sum()
    raw = share * n
    x = np.floor(raw).astype(np.int64)
    short = n - int(x.sum())
    if short > 0:
        x[np.argsort(-(raw - x), kind="stable")[:short]] += 1
    return x


# ---------------------------------------------------------------------------- public API
def charest_moments(
    synthetic_counts: Any, n: int, n_synth: int, alpha: Any, prior: Any = 1.0
) -> CharestMoments:
    """Exact posterior means and variances of ``p`` given synthetic tables (no sampling).

    Uses the factorisation of the collapsed posterior described in :mod:`geosynth.dp.inference`
    (forward and backward log-space convolutions, ``O(k n²)`` time, ``O(k n)`` memory).

    Parameters
    ----------
    synthetic_counts, n, n_synth, alpha, prior
        As in :func:`charest_posterior`.

    Returns
    -------
    CharestMoments

    Raises
    ------
    TypeError, geosynth.errors.InputError
        As :func:`charest_posterior`; also more than :data:`MAX_WORK` steps (about
        ``3 k (n + 1)²``).

    Examples
    --------
    >>> moments = charest_moments([35], n=100, n_synth=100, alpha=15.65)
    >>> round(float(moments.mean[0]), 4)
    0.3136
    """
    problem = _validate(synthetic_counts, n, n_synth, alpha, prior)
    n_tables, k = problem.tables.shape
    _check_work((n_tables + 3.0 * (problem.n + 1)) * k * (problem.n + 1), "the exact moments",
                "check n (the confidential total)")
    table = kernels.collapsed_log_table(
        kernels.release_log_table(problem.tables, problem.n, problem.alpha), problem.prior
    )
    forward = kernels.forward_log_sums(table)
    backward = kernels.backward_log_sums(table)
    pmf = np.exp(kernels.log_marginals(table, forward, backward))
    pmf /= pmf.sum(axis=1, keepdims=True)
    v = np.arange(problem.n + 1, dtype=np.float64)
    ex = pmf @ v
    var_x = np.einsum("kv,kv->k", pmf, (v[None, :] - ex[:, None]) ** 2)
    # Total variance over x: Var p_k = E[a(A - a)] / (A²(A + 1)) + Var x_k / A² with a = α_k + x_k
    # and A = Σα + n, i.e. (m (A - E a) + Var x_k) / (A (A + 1)) with m = E a / A. Written so
    # that no square of a prior (overflowing beyond 1e154) and no difference of large numbers
    # (A - E a comes from the other categories' priors and n - E x_k) appears.
    total = problem.prior.sum() + problem.n
    mean = (problem.prior + ex) / total
    rest = (problem.prior.sum() - problem.prior) + (problem.n - ex)
    variance = (mean * rest + var_x) / total / (total + 1.0)
    return CharestMoments(mean=mean, variance=variance, x_pmf=pmf, categories=problem.categories)


def charest_posterior(
    synthetic_counts: Any,
    n: int,
    n_synth: int,
    alpha: Any,
    prior: Any = 1.0,
    method: str = "auto",
    n_iter: int = 20000,
    burn_in: int = 5000,
    thin: int = 1,
    chains: int = 1,
    seed: Any = None,
    *,
    step: int | None = None,
) -> CharestPosterior:
    """Posterior of the confidential proportions given ε-DP synthetic counts (Charest 2011).

    Parameters
    ----------
    synthetic_counts : array-like of int or pandas.Series / DataFrame
        Either a 1-D array of the synthetic successes ``x̃_m`` of ``M`` binary tables
        (Beta-Binomial model; one number for one table), or an ``(M, k)`` array of ``M``
        synthetic tables of ``k >= 2`` categories, each row summing to ``n_synth``
        (Dirichlet-Multinomial model; a DataFrame's columns name the categories). A 1-D array
        is *always* read as binary successes: pass one table of ``k`` categories as shape
        ``(1, k)``.
    n : int
        Total ``n`` of the confidential counts (public in Charest's setting).
    n_synth : int
        Size ``ñ`` of each synthetic table.
    alpha : float or array-like of float
        Prior ``α`` of the synthesizer, a scalar or one value per category (for the binary
        model ``(α_1, α_2)``). For ``M`` tables released at total ε it is
        ``ñ / (e^(ε/M) − 1)`` (:func:`geosynth.dp.dirichlet_alpha`).
    prior : float or array-like of float, default 1.0
        Dirichlet prior ``γ`` of ``p``; ``1.0`` is the uniform prior (Beta(1, 1) for the binary
        model), ``0.5`` the Jeffreys-like prior of Marcolin's ch. 4.
    method : {"auto", "exact", "mh", "gibbs", "mhl", "adaptive"}, default "auto"
        Sampler, see :mod:`geosynth.dp.inference`. ``"auto"`` draws independently from the exact
        posterior (``"exact"``) unless ``k (n + 1)² > 5·10⁸``, then uses ``"mh"``. ``"gibbs"``
        and ``"mhl"`` need ``k = 2``.
    n_iter : int, default 20000
        Iterations per chain, burn-in included (the thesis' "chains of 30000 with burn-in
        10000" is ``n_iter=30000, burn_in=10000``).
    burn_in : int, default 5000
        Iterations discarded at the start of each chain (``0 <= burn_in < n_iter``).
    thin : int, default 1
        Keep every ``thin``-th iteration after burn-in. Each chain keeps
        ``ceil((n_iter − burn_in) / thin)`` draws; ``"exact"`` returns that many independent
        draws per chain.
    chains : int, default 1
        Independent chains, each with its own random stream.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Seed of the sampler's streams; the same seed gives the same draws. Inference on a
        release is post-processing, so seeding does not weaken privacy.
    step : int, optional
        ``"mh"``: initial largest shift ``S`` (adapted during burn-in; default
        ``max(1, n // 4k)``). ``"mhl"``: the window half-width ``L`` (default 11). Ignored by the
        other methods.

    Returns
    -------
    CharestPosterior

    Raises
    ------
    TypeError
        An argument has the wrong type (e.g. a float ``n``, a string ``seed``).
    geosynth.errors.InputError
        Negative or fractional counts; binary successes above ``n_synth``; tables that do not
        sum to ``n_synth``; fewer than two categories; non-positive ``n``, ``n_synth``,
        ``alpha`` or ``prior``, or a per-category value of the wrong length; a ``prior`` that
        can sum beyond :data:`MAX_PRIOR_TOTAL` (about 4.5e307); an unknown method,
        or ``"gibbs"``/``"mhl"`` with ``k > 2``; ``n_iter`` above 2**62;
        ``burn_in >= n_iter``, ``thin < 1``,
        ``chains`` outside 1 to 1,024, ``step`` outside 1 to ``max(n, 11)``; ``n`` or ``n_synth``
        beyond 2**62; duplicate DataFrame column labels; masked entries; a run of more than
        :data:`MAX_WORK` elementary steps (``"exact"``: about ``k (n + 1)²``; the MCMC
        methods: ``chains · n_iter`` times ``k``, ``n``, ``M`` or ``n + M k`` per iteration).
    geosynth.errors.MemoryLimitError
        The draws would take more than :data:`MAX_DRAW_BYTES`, or the release table more than
        :data:`MAX_TABLE_BYTES`.

    Examples
    --------
    Charest's (2011) scenario, one binary table released at ε = 2:

    >>> post = charest_posterior([35], n=100, n_synth=100, alpha=100 / (np.e**2 - 1), seed=1)
    >>> post.method, post.draws.shape
    ('exact', (15000, 2))
    >>> round(float(post.mean[0]), 2)
    0.31
    """
    problem = _validate(synthetic_counts, n, n_synth, alpha, prior)
    n_iter = check_int(n_iter, "n_iter")
    if n_iter > MAX_COUNT:  # 10**400 overflowed len(range(...)) before the work was checked
        raise InputError(f"n_iter must be at most 2**62, got {describe_value(n_iter)}: every "
                         "iteration is at least one step, and a run may take "
                         f"geosynth.dp.inference.MAX_WORK ({MAX_WORK:.0e}); lower n_iter")
    burn_in = check_int(burn_in, "burn_in", 0)
    thin = check_int(thin, "thin")
    chains = check_int(chains, "chains")
    if chains > MAX_CHAINS:  # 10**12 made streams until the memory ran out
        raise InputError(f"chains must be at most {MAX_CHAINS:,}, got {chains:,}")
    if burn_in >= n_iter:
        raise InputError(
            f"burn_in={burn_in} must be smaller than n_iter={n_iter} (n_iter counts the burn-in)"
        )
    if step is not None:
        step = check_int(step, "step")
        if step > max(problem.n, MHL_DEFAULT_STEP):  # 10**30 reached numba as a non-integer
            raise InputError(
                f"step must be at most max(n, {MHL_DEFAULT_STEP}): a larger shift moves more than "
                "the whole total and is always rejected; pass a smaller step or omit it"
            )
    check_seed(seed)
    k = problem.tables.shape[1]
    method = _resolve_method(method, k, problem.n)
    n_keep = len(range(burn_in, n_iter, thin))
    _check_work(_sampler_work(method, problem, chains, n_iter, n_keep),
                f"method={method!r} with n_iter={n_iter:,} and chains={chains}",
                "check n (the confidential total), or use method='mh'" if method == "exact" else
                "lower n_iter or chains (thin does not shorten a chain), or use method='exact'")
    draw_bytes = 16 * chains * n_keep * k
    if draw_bytes > MAX_DRAW_BYTES:
        raise MemoryLimitError(
            f"{chains} chain(s) x {n_keep:,} kept draws x {k} categories need "
            f"{draw_bytes / 2**30:.3g} GiB of draws, more than "
            f"geosynth.dp.inference.MAX_DRAW_BYTES ({MAX_DRAW_BYTES / 2**30:g} GiB); lower "
            "n_iter or chains, or raise thin"
        )
    streams = make_streams(seed, chains)
    x_all = np.empty((chains, n_keep, k), dtype=np.int64)
    p_all = np.empty((chains, n_keep, k), dtype=np.float64)
    accepted = proposed = 0
    used_step: int | None = None
    release_table = kernels.release_log_table(problem.tables, problem.n, problem.alpha)
    if method in ("exact", "mh"):
        table = kernels.collapsed_log_table(release_table, problem.prior)
    if method == "exact":
        forward = kernels.forward_log_sums(table)
        if (k - 1) * (problem.n + 1) ** 2 <= CDF_TABLE_LIMIT:
            cdf = kernels.conditional_cdf_table(table, forward)
        else:
            cdf = np.empty((0, 0, 0))
        for c in range(chains):
            kernels.sample_exact(table, forward, cdf, problem.prior, streams[c], x_all[c], p_all[c])
    elif method == "mh":
        used_step = step if step is not None else max(1, problem.n // (4 * k))
        start = _proportional_start(problem.tables, problem.n)
        for c in range(chains):
            acc, prop, final = kernels.run_pair_mh(
                table,
                problem.prior,
                start.copy(),
                n_iter,
                burn_in,
                thin,
                used_step,
                streams[c],
                x_all[c],
                p_all[c],
            )
            accepted += acc
            proposed += prop
        used_step = int(final)
    elif method == "gibbs":
        x0 = int(_proportional_start(problem.tables, problem.n)[0])
        for c in range(chains):
            kernels.run_binary_gibbs(
                release_table,
                problem.prior,
                x0,
                n_iter,
                burn_in,
                thin,
                streams[c],
                x_all[c],
                p_all[c],
            )
    elif method == "mhl":
        used_step = step if step is not None else MHL_DEFAULT_STEP
        x0 = int(_proportional_start(problem.tables, problem.n)[0])
        successes = np.ascontiguousarray(problem.tables[:, 0])
        for c in range(chains):
            acc, prop = kernels.run_binary_mhl(
                successes,
                problem.n,
                problem.n_synth,
                problem.alpha,
                problem.prior,
                x0,
                used_step,
                n_iter,
                burn_in,
                thin,
                streams[c],
                x_all[c],
                p_all[c],
            )
            accepted += acc
            proposed += prop
    else:  # adaptive
        start = _proportional_start(problem.tables, problem.n)
        for c in range(chains):
            acc, prop = kernels.run_adaptive_mh(
                problem.tables,
                problem.n,
                problem.alpha,
                problem.prior,
                start.copy(),
                n_iter,
                burn_in,
                thin,
                ADAPT_EVERY,
                streams[c],
                x_all[c],
                p_all[c],
            )
            accepted += acc
            proposed += prop
    rate = accepted / proposed if method in ("mh", "mhl", "adaptive") and proposed else None
    return CharestPosterior(
        draws=p_all.reshape(chains * n_keep, k),
        x_draws=x_all.reshape(chains * n_keep, k),
        chains=chains,
        method=method,
        acceptance_rate=rate,
        step=used_step,
        n=problem.n,
        n_synth=problem.n_synth,
        alpha=problem.alpha,
        prior=problem.prior,
        synthetic_counts=problem.tables,
        categories=problem.categories,
    )
