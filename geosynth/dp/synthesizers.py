r"""Differentially private synthetic counts: Dirichlet-Multinomial and Beta-Binomial synthesizers.

Abowd and Vilhuber (2008) release a synthetic table of counts drawn from the posterior predictive
distribution of the confidential counts ``x = (x_1, ..., x_k)`` (``n = Σ x_i``) under a Dirichlet
prior ``α`` (Marcolin 2018, §2.5, Algorithms 1 and 2)::

    p̃ ~ Dirichlet(α + x)
    x̃ ~ Multinomial(ñ, p̃)

With two categories this is the Beta-Binomial synthesizer, ``p̃ ~ Beta(α_1 + x, α_2 + n - x)``,
``x̃ ~ Binomial(ñ, p̃)``.

Privacy guarantee
-----------------
The release is ε-differentially private if and only if

.. math:: \min_i \alpha_i \ge \frac{\tilde n}{e^{\varepsilon} - 1},
          \quad\text{i.e.}\quad \varepsilon = \ln\left(1 + \frac{\tilde n}{\min_i \alpha_i}\right).

Marcolin (2018, §2.5.1, Definição 3) prints ``α_i ≤ ñ / exp(ε − 1)``: that is a typo twice over
(α is a *lower* bound -- more prior mass means more privacy -- and the exponent is ``e^ε − 1``,
not ``e^(ε−1)``). Its SUSEP example (ch. 4) uses the misprinted value ``α = 107 / e ≈ 39.37`` at
``ε = 2``, whereas ``107 / (e² − 1) ≈ 16.75`` suffices; ``α = 39.37`` actually guarantees
``ε = ln(1 + 107 / 39.37) ≈ 1.31``, so the thesis' release is *more* private than it states.

Derivation. Integrating ``p̃`` out, the output has the Dirichlet-multinomial pmf (``A = Σ α_i``)

.. math:: P(\tilde x \mid x) = \frac{\tilde n!}{\prod_i \tilde x_i!}
          \frac{\Gamma(A + n)}{\Gamma(A + n + \tilde n)}
          \prod_i \frac{\Gamma(\alpha_i + x_i + \tilde x_i)}{\Gamma(\alpha_i + x_i)}.

*Replace-one neighbours* (one record moves from category ``l`` to ``j``: ``x = x' + e_j - e_l``,
same ``n``). The ``A + n`` terms cancel and ``Γ(a + 1 + t) / Γ(a + 1) · Γ(a) / Γ(a + t) =
(a + t) / a``, so

.. math:: \frac{P(\tilde x \mid x)}{P(\tilde x \mid x')}
          = \frac{\alpha_j + x'_j + \tilde x_j}{\alpha_j + x'_j}
            \cdot \frac{\alpha_l + x_l}{\alpha_l + x_l + \tilde x_l}
          \le 1 + \frac{\tilde x_j}{\alpha_j + x'_j} \le 1 + \frac{\tilde n}{\min_i \alpha_i},

with equality at ``x'_j = 0``, ``x̃_j = ñ`` (then ``x̃_l = 0``): the bound is attained, hence
"if and only if".

*Add/remove-one neighbours with ñ fixed* (``x' = x + e_j``). Then

.. math:: \frac{P(\tilde x \mid x')}{P(\tilde x \mid x)}
          = \frac{A + n}{A + n + \tilde n} \cdot \frac{\alpha_j + x_j + \tilde x_j}{\alpha_j + x_j}
          < 1 + \frac{\tilde n}{\alpha_j},
   \qquad
   \frac{P(\tilde x \mid x)}{P(\tilde x \mid x')} \le \frac{A + n + \tilde n}{A + n}
          \le 1 + \frac{\tilde n}{A} < 1 + \frac{\tilde n}{\min_i \alpha_i},

so the same ε holds (not attained). This needs ``ñ`` to be fixed and public: the default
``ñ = n`` (the thesis' choice) publishes ``n`` exactly, which is only private under *bounded* DP
(replace-one neighbours, ``n`` public). When ``n`` is confidential, pass a public ``n_synth``
(or release a noisy ``n`` first, as :class:`geosynth.dp.onthemap.OnTheMapSynthesizer` does).

Several releases
----------------
``m`` synthetic tables from the same data compose sequentially, so following Charest (2011) (as
in Marcolin 2018, §2.5.2) each release gets ``ε / m`` and ``α`` is computed at ``ε / m``:
``α = ñ / (e^(ε/m) − 1)``. Each call of ``sample`` is a new release of ``m`` tables and spends
``ε`` again.

References
----------
Abowd, J. M. and Vilhuber, L. (2008). How protective are synthetic data? *Privacy in Statistical
Databases*, 239-246.

Charest, A.-S. (2011). How can we analyze differentially-private synthetic datasets? *Journal of
Privacy and Confidentiality* 2.

Machanavajjhala, A., Kifer, D., Abowd, J., Gehrke, J. and Vilhuber, L. (2008). Privacy: theory
meets practice on the map. *ICDE 2008*, 277-286.

Marcolin, A. F. (2018). *Métodos estatísticos de proteção de dados confidenciais sob a condição
de differential privacy*. Master's dissertation, Departamento de Estatística, UFMG; §2.5 and
ch. 4.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from geosynth._messages import caller_stacklevel
from geosynth._random import SeedLike, check_seed
from geosynth._validation import (
    as_rectangular_array,
    check_epsilon,
    check_int,
    check_m,
    check_real_array,
    describe_value,
    refuse_masked,
)
from geosynth.data import check_declared, domain_codes
from geosynth.dp._randomness import private_generator
from geosynth.dp.accountant import check_accountant, deepcopy_sharing_budget
from geosynth.errors import (
    DataWarning,
    InputError,
    InputTypeError,
    MemoryLimitError,
    PrivacyLeakWarning,
)

__all__ = [
    "prior_scale",
    "dirichlet_alpha",
    "dirichlet_epsilon",
    "DirichletMultinomialSynthesizer",
    "BetaBinomialSynthesizer",
    "check_alpha",
    "check_counts",
    "counts_on_categories",
    "draw_dirichlet_multinomial",
    "FixedParameter",
    "MAX_COUNT",
    "MAX_TABLES",
    "MAX_SAMPLE_BYTES",
    "finite_alpha",
]

# Relative slack when comparing an explicit alpha with the bound an epsilon implies, so that
# alpha = dirichlet_alpha(eps, n) round-trips despite floating-point rounding.
_RTOL = 1e-12


class FixedParameter:
    """A synthesizer's privacy parameter: set by the synthesizer itself, read-only to its users.

    The prior (α) and the accountant's charge are computed from ``epsilon``, ``m`` and ``ñ``
    when the synthesizer is built or fitted. Assigning ``synth.m = 10`` afterwards drew ten
    tables from a prior calibrated for one, each as private as the one, while the charge and
    the release's metadata still said ``epsilon``: ten times the loss claimed. The synthesizer
    stores the value under ``_<name>``.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.private = f"_{name}"

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        try:
            return getattr(obj, self.private)
        except AttributeError:
            raise AttributeError(
                f"{type(obj).__name__}.{self.name} is set by fit(); call fit first"
            ) from None

    def __set__(self, obj: Any, value: Any) -> None:
        raise AttributeError(
            f"{type(obj).__name__}.{self.name} is fixed: the prior and the privacy charge were "
            f"calibrated for it; build a new {type(obj).__name__} with the {self.name} you want"
        )


# ---------------------------------------------------------------------- the epsilon <-> alpha map
#: The largest ε whose e^ε is a finite float (math.expm1 overflows above it).
_MAX_EPSILON = math.log(np.finfo(np.float64).max)

#: Largest count, total or synthetic table size accepted (NumPy's multinomial and int64 sums
#: need room): 2**62 records are no dataset of people.
MAX_COUNT = 2**62


#: Largest number of synthetic tables of one sample (each is ``k`` int64; tests of the
#: sampling distribution draw 10**5 and more).
MAX_TABLES = 10**7

#: Largest sample (``m × k`` entries, 24 bytes each: the Dirichlet draws and the int64 tables)
#: :meth:`DirichletMultinomialSynthesizer.sample` may allocate: 2 GiB. ``m = 10**7`` tables of
#: ``10**4`` categories asked NumPy for 745 GiB after the accountant had been charged.
MAX_SAMPLE_BYTES = 2**31

#: A concentration total above which normalising Dirichlet gammas can overflow (their sum is
#: about the total): ``Generator.dirichlet`` then returned all-zero proportions, and the
#: multinomial put all ``ñ`` records in the last category.
_GAMMA_SUM_LIMIT = 2.0**1000


def _check_size(value: Any, name: str, minimum: int = 1) -> int:
    """Return an int ``minimum <= value <= MAX_COUNT`` (``n``, ``n_synth``)."""
    value = check_int(value, name, minimum)
    if value > MAX_COUNT:
        raise InputError(
            f"{name}={value} is beyond 2**62, which int64 counts and NumPy's multinomial cannot "
            f"carry; pass the number of records (at most {MAX_COUNT})"
        )
    return value


def dirichlet_alpha(epsilon: float, n_synth: int) -> float:
    """Smallest Dirichlet prior that makes one synthetic table of size ``n_synth`` ε-DP.

    Parameters
    ----------
    epsilon : float
        Privacy loss of the release, ``> 0`` and finite.
    n_synth : int
        Size ``ñ`` of the synthetic table, ``>= 1``.

    Returns
    -------
    float
        ``ñ / (e^ε − 1)``; every ``α_i`` must be at least this (Abowd and Vilhuber 2008; the
        thesis' "α ≤ ñ / exp(ε − 1)" is a typo, see the module docstring).

    Raises
    ------
    TypeError
        ``epsilon`` is not a real number or ``n_synth`` not an int.
    geosynth.errors.InputError
        ``epsilon`` is not positive and finite or overflows ``e^ε`` (above about 709.8), or
        ``n_synth < 1``.

    Examples
    --------
    >>> round(dirichlet_alpha(2.0, 107), 2)
    16.75
    """
    epsilon = check_epsilon(epsilon)
    return _alpha_bound(_check_size(n_synth, "n_synth"), epsilon)


def _alpha_bound(n_synth: int, epsilon: float, name: str = "epsilon") -> float:
    """``ñ / (e^ε − 1)`` for a checked ``n_synth``; ``name`` is how messages call ``epsilon``."""
    return finite_alpha(n_synth / prior_scale(epsilon, name), epsilon, n_synth, name)


def finite_alpha(alpha: float, epsilon: float, n_synth: int, name: str = "epsilon",
                 scale: float = 1.0) -> float:
    """Return ``alpha`` if it is a finite float, else refuse ``epsilon`` as too small.

    Parameters
    ----------
    alpha : float
        The prior ``ñ / (e^ε − 1)`` (or a multiple of it).
    epsilon : float
        The ε of one table it was computed from.
    n_synth : int
        ``ñ`` (for the message).
    name : str, default "epsilon"
        How the caller's parameter is called.
    scale : float, default 1.0
        ``alpha`` over ``ñ / (e^ε − 1)``: the largest-to-smallest ratio of the prior weights
        (:func:`geosynth.dp.onthemap.onthemap_alpha`), so that the smallest ε the message
        advises keeps ``alpha`` itself finite (advised from ``ñ`` alone, it was 1e100 times too
        small under weights 1 and 1e100, and refused again).

    Returns
    -------
    float

    Raises
    ------
    geosynth.errors.InputError
        ``alpha`` overflowed to infinity: a Dirichlet of infinite concentration has no draws
        (it used to fail with NumPy's "pvals contains NaNs" after the budget was spent).
    """
    if math.isfinite(alpha):
        return alpha
    smallest = math.log1p(n_synth * scale / (np.finfo(np.float64).max / 2.0**10))
    raise InputError(
        f"{name}={epsilon:g} is so small that the Dirichlet prior ñ/(e^ε − 1) with "
        f"n_synth={n_synth} overflows to infinity (the table would be pure prior); use "
        f"{name} >= {smallest:.3g}"
    )


def prior_scale(epsilon: float, name: str = "epsilon") -> float:
    """Return ``e^ε − 1``, the denominator of the Dirichlet bound ``ñ / (e^ε − 1)``.

    Parameters
    ----------
    epsilon : float
        The ε of one synthetic table (checked by the caller).
    name : str, default "epsilon"
        How the caller's parameter is called, for the message.

    Returns
    -------
    float

    Raises
    ------
    geosynth.errors.InputError
        ``e^ε`` overflows (ε above about 709.78): the prior would underflow to 0, and a prior
        of 0 is no privacy at all (a cell without records could never receive one).
    """
    if epsilon > _MAX_EPSILON:
        raise InputError(f"{name}={epsilon:g} makes the prior ñ/(e^ε − 1) underflow to 0 "
                         f"(e^ε overflows above ε ≈ {_MAX_EPSILON:g}): that is no privacy at "
                         "all; use an ε below it")
    if not epsilon > 0.0:  # e.g. epsilon / m underflowed to 0: the prior would be infinite
        raise InputError(f"{name}={epsilon!r} is not > 0 (a tiny epsilon divided by m "
                         "underflows to 0), so the prior ñ/(e^ε − 1) is infinite; use a larger "
                         "epsilon or a smaller m")
    return math.expm1(epsilon)


def dirichlet_epsilon(alpha: float | np.ndarray, n_synth: int) -> float:
    """Privacy loss ``ln(1 + ñ / min α)`` of one Dirichlet-Multinomial synthetic table.

    Parameters
    ----------
    alpha : float or array-like of float
        The Dirichlet prior (a scalar or one value per category), positive and finite.
    n_synth : int
        Size ``ñ`` of the synthetic table, ``>= 1``.

    Returns
    -------
    float
        The ε the release guarantees (tight for replace-one neighbours).

    Raises
    ------
    TypeError
        ``alpha`` is not numeric or ``n_synth`` not an int.
    geosynth.errors.InputError
        ``alpha`` is empty, not positive or not finite, or ``n_synth < 1``.

    Examples
    --------
    The SUSEP release of Marcolin (2018, ch. 4) used ``α = 39.37`` with ``ñ = 107``:

    >>> round(dirichlet_epsilon(39.37, 107), 3)
    1.313
    """
    a = check_alpha(alpha)
    n_synth = _check_size(n_synth, "n_synth")
    return math.log1p(n_synth / float(a.min()))


# ---------------------------------------------------------------------- validation helpers
def check_alpha(alpha: Any, name: str = "alpha") -> np.ndarray:
    """Return a Dirichlet prior ``alpha`` as a 1-D float64 array of positive finite values.

    Parameters
    ----------
    alpha : float or array-like of float
        A scalar (one category) or one value per category.
    name : str, default "alpha"
        Name of the parameter, used in the messages.

    Returns
    -------
    numpy.ndarray of float64, shape (k,)

    Raises
    ------
    TypeError
        ``alpha`` is (or holds) a bool, text, None or another non-number
        (:func:`geosynth._validation.check_real_array`).
    geosynth.errors.InputError
        ``alpha`` is ragged, masked, empty, not 1-D, or holds values that are not positive and
        finite.
    """
    # Masked entries were read through the mask and [True, 2.5] became [1.0, 2.5].
    a = np.atleast_1d(check_real_array(alpha, name, "a number or an array of numbers"))
    if a.ndim != 1 or a.size == 0:
        raise InputError(f"{name} must be a number or a non-empty 1-D array, got shape {a.shape}")
    bad = ~np.isfinite(a) | (a <= 0)
    if bad.any():
        raise InputError(
            f"{name} must be positive and finite, got {a[bad][:5].tolist()} at positions "
            f"{np.flatnonzero(bad)[:5].tolist()}"
        )
    return a


def check_counts(counts: Any, name: str = "counts", ndim: int = 1) -> np.ndarray:
    """Return ``counts`` as an int64 array of non-negative integers with ``ndim`` dimensions.

    Floats are accepted when they are whole numbers (``3.0``).

    Parameters
    ----------
    counts : array-like, pandas.Series or pandas.DataFrame
        The counts given.
    name : str, default "counts"
        Name of the parameter, used in the messages.
    ndim : int, default 1
        Number of dimensions the array must have.

    Returns
    -------
    numpy.ndarray of int64

    Raises
    ------
    TypeError
        Booleans or non-numeric data.
    geosynth.errors.InputError
        NaN, infinite, fractional or negative values, values beyond 2**62 (also Python ints
        beyond the float range), a wrong number of dimensions, or no entries.
    """
    values = counts.to_numpy() if isinstance(counts, pd.Series | pd.DataFrame) else counts
    refuse_masked(values, name)
    try:
        a = as_rectangular_array(values, name)
    except TypeError as err:
        raise InputError(f"{name} must be an array of counts, got {type(counts).__name__}") from err
    if a.dtype.kind == "b":
        raise InputTypeError(f"{name} must hold integer counts, got booleans; use .astype(int)")
    if a.dtype.kind == "O":
        try:
            a = a.astype(np.float64)
        except OverflowError:  # an int such as 10**400: float() overflowed unchecked
            raise InputError(f"{name} has value(s) beyond 2**62; counts of people are far "
                             "smaller: check the input") from None
        except (TypeError, ValueError) as err:
            raise InputTypeError(
                f"{name} must hold integer counts, got non-numeric values") from err
    if a.dtype.kind not in "iuf":
        raise InputTypeError(f"{name} must hold integer counts, got dtype {a.dtype}")
    if a.ndim != ndim:
        raise InputError(
            f"{name} must be a {ndim}-D array of counts, got {a.ndim}-D (shape {a.shape})"
        )
    if a.size == 0:
        raise InputError(f"{name} is empty; give at least one category")
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a)
        if bad.any():
            raise InputError(
                f"{name} has {int(bad.sum())} NaN or infinite value(s) at positions "
                f"{np.argwhere(bad)[:5].tolist()}; counts must be finite integers"
            )
        frac = a != np.round(a)
        if frac.any():  # positions, not values: the counts are the confidential data
            raise InputError(
                f"{name} has {int(frac.sum())} non-integer value(s) at positions "
                f"{np.argwhere(frac)[:5].tolist()}; counts must be whole numbers"
            )
    if (a < 0).any():
        raise InputError(
            f"{name} has {int((a < 0).sum())} negative value(s) at positions "
            f"{np.argwhere(a < 0)[:5].tolist()}; counts must be >= 0"
        )
    # Before the cast: 1e30 or a uint64 above 2**63 wrapped to a negative int64 silently.
    huge = a > MAX_COUNT
    if huge.any():
        raise InputError(
            f"{name} has value(s) beyond 2**62 at positions {np.argwhere(huge)[:5].tolist()}; "
            "counts of people are far smaller: check the input"
        )
    total = float(a.sum(dtype=np.float64))
    if total > MAX_COUNT:
        raise InputError(
            f"{name} sums to more than 2**62, which int64 totals cannot carry; counts of "
            "people are far smaller: check the input"
        )
    return a.astype(np.int64)


def counts_on_categories(
    counts: Any, categories: Any = None, where: str = "DirichletMultinomialSynthesizer"
) -> tuple[np.ndarray, pd.Index | None]:
    """Return the counts per public category and the release's column labels.

    Parameters
    ----------
    counts : array-like of int or pandas.Series
        Confidential counts (:func:`check_counts`).
    categories : list or pandas.Index, optional
        Public categories (:func:`geosynth.data.check_declared`).
    where : str
        Who asks, for the warnings.

    Returns
    -------
    x : numpy.ndarray of int64, shape (k,)
        Counts per category.
    labels : pandas.Index or None
        The column labels: ``categories``, else a Series' index, else None.

    Raises
    ------
    geosynth.errors.InputError
        Invalid counts or categories, or an array whose length is not the number of categories;
        an InputTypeError for ``categories`` given as a 0-d array.

    Warns
    -----
    PrivacyLeakWarning
        A Series without ``categories``: its labels are published as they are.
    DataWarning
        Counts under labels outside ``categories`` were dropped.
    """
    is_series = isinstance(counts, pd.Series)
    x = check_counts(counts)
    if categories is None:
        if not is_series:
            return x, None
        warnings.warn(
            f"{where}: the categories are the labels of the counts' index and are published as "
            "the release's columns; ε covers the counts only, so a label known only from the data "
            "(value_counts() lists the categories that have records) is disclosed. Pass "
            "categories=[...] with the public categories",
            PrivacyLeakWarning,
            stacklevel=caller_stacklevel(),
        )
        if isinstance(counts.index, pd.MultiIndex):
            if counts.index.has_duplicates:
                raise InputError("the index of counts (the categories) lists a label more than "
                                 "once; give each category once")
        else:  # two columns 'a', or one named NaN
            check_declared(list(counts.index), "the index of counts (the categories)")
        return x, counts.index.copy()
    if isinstance(categories, np.ndarray) and categories.ndim == 0:
        # list() of a 0-d array raised "iteration over a 0-d array" in check_declared
        raise InputTypeError(f"categories must be a list of labels (or a 1-D array or a "
                             f"pandas.Index), got {describe_value(categories)}; e.g. "
                             "categories=['a', 'b']")
    declared = check_declared(categories, "categories")
    labels = (categories.copy() if isinstance(categories, pd.Index)
              else pd.Index(declared, dtype=object, tupleize_cols=False))
    if not is_series:
        if x.shape[0] != len(declared):
            raise InputError(
                f"counts has {x.shape[0]} values but categories lists {len(declared)}; give "
                "one count per category, in their order (or the counts as a Series labelled by "
                "category)"
            )
        return x, labels
    codes = domain_codes(declared, counts.index.to_numpy(dtype=object))
    kept = codes >= 0
    on_categories = np.zeros(len(declared), dtype=np.int64)
    np.add.at(on_categories, codes[kept], x[kept])
    dropped = int(x[~kept].sum())
    if dropped:
        warnings.warn(
            f"{where}: dropped {dropped} record(s) counted under labels outside categories; "
            "they are not synthesized. Under differential privacy a dropped record costs no "
            "privacy, and this warning, for you only, is not part of any release",
            DataWarning,
            stacklevel=caller_stacklevel(),
        )
    return on_categories, labels


# ---------------------------------------------------------------------- the kernel
def draw_dirichlet_multinomial(
    rng: np.random.Generator,
    alpha: np.ndarray,
    counts: np.ndarray,
    n_synth: int,
    size: int,
) -> np.ndarray:
    """Draw ``size`` independent tables ``x̃ ~ Multinomial(ñ, p̃)``, ``p̃ ~ Dirichlet(α + x)``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Randomness (from :func:`~geosynth.dp._randomness.private_generator` for a release).
    alpha : numpy.ndarray of float64, shape (k,)
        Positive prior.
    counts : numpy.ndarray of int64, shape (k,)
        Confidential counts ``x``.
    n_synth : int
        Size ``ñ >= 0`` of each table; ``0`` gives zeros without drawing.
    size : int
        Number of tables.

    Returns
    -------
    numpy.ndarray of int64, shape (size, k)
    """
    k = alpha.shape[0]
    if n_synth == 0:
        return np.zeros((size, k), dtype=np.int64)
    concentration = alpha + counts
    if concentration.max() < _GAMMA_SUM_LIMIT / k:  # then the gammas' sum is finite
        # Generator.dirichlet switches to a stick-breaking Beta algorithm for small
        # concentrations, so tiny alphas (large epsilon) do not underflow to an all-zero vector.
        p = rng.dirichlet(concentration, size=size)
    else:
        # A huge prior (tiny epsilon, or an explicit alpha near 1e306 with many categories):
        # the gammas' sum overflowed to inf in Generator.dirichlet, its proportions were all 0
        # and every table was (0, ..., 0, ñ). The same normalised gammas, each scaled by the
        # largest concentration before they are summed.
        gammas = rng.standard_gamma(concentration, size=(size, k)) / concentration.max()
        p = gammas / gammas.sum(axis=1, keepdims=True)
    return rng.multinomial(n_synth, p).astype(np.int64)


# ---------------------------------------------------------------------- the synthesizers
class DirichletMultinomialSynthesizer:
    """ε-DP synthetic counts ``x̃ ~ Multinomial(ñ, Dirichlet(α + x))`` (Abowd and Vilhuber 2008).

    Parameters
    ----------
    epsilon : float, optional
        Total privacy loss of one call of :meth:`sample` (all ``m`` tables together). Each table
        is drawn at ``ε / m``. Give ``epsilon``, ``alpha`` or both.
    n_synth : int, optional
        Size ``ñ`` of each synthetic table. Default: ``n``, the total of the confidential counts
        (Marcolin 2018), which publishes ``n`` and is therefore private only if ``n`` is public
        (bounded DP); pass a public value otherwise.
    m : int, default 1
        Number of synthetic tables per release (Charest 2011).
    alpha : float or array-like of float, optional
        Explicit Dirichlet prior, a scalar or one value per category. Default: the smallest
        prior that gives ``epsilon``, ``ñ / (e^(ε/m) − 1)`` in every category
        (:func:`dirichlet_alpha`). With an explicit ``alpha`` the guaranteed
        ``ε = m · ln(1 + ñ / min α)`` is reported in :attr:`epsilon`; if ``epsilon`` is also given,
        ``alpha`` must be large enough for it.
    accountant : object, optional
        A budget accountant (e.g. :class:`geosynth.dp.accountant.Accountant`); :meth:`sample`
        calls ``accountant.spend(epsilon, 0.0, label=...)`` before drawing, so a
        :class:`~geosynth.errors.BudgetExceededError` leaves nothing drawn.

    Attributes
    ----------
    alpha, epsilon, epsilon_per_release, n, n_synth, m
        Read-only (:class:`FixedParameter`): the prior and the charge are calibrated for them.
    alpha : numpy.ndarray of float64, shape (k,)
        The prior per category (after :meth:`fit`).
    epsilon : float
        Guaranteed total ε of one call of :meth:`sample` (the ``m`` tables together).
    epsilon_per_release : float
        ε of each of the ``m`` tables, ``ln(1 + ñ / min α)``.
    n : int
        Total of the confidential counts.
    n_synth : int
        Size ``ñ`` of each synthetic table.
    m : int
        Number of synthetic tables per :meth:`sample`.
    categories : pandas.Index or None
        Category labels when fitted on a pandas Series.

    Raises
    ------
    TypeError
        A parameter has the wrong type.
    geosynth.errors.InputError
        Neither ``epsilon`` nor ``alpha`` given, or a parameter value is invalid.

    Notes
    -----
    The guarantee (derived in :mod:`geosynth.dp.synthesizers`) holds for replace-one neighbours
    and for add/remove-one neighbours provided ``ñ`` is fixed and public. It covers the synthetic
    counts only: the category labels and ``k`` are taken to be public, so declare them with
    ``fit(counts, categories=[...])`` rather than reading them off the data.

    Examples
    --------
    The SUSEP collisions of Marcolin (2018, Table 4.1) at ε = 2:

    >>> import warnings
    >>> synth = DirichletMultinomialSynthesizer(2.0).fit([21, 6, 24, 2, 19, 10, 21, 4])
    >>> round(float(synth.alpha[0]), 2), synth.n_synth
    (16.75, 107)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # a seed makes the release non-private (tests only)
    ...     int(synth.sample(seed=1).sum())
    107
    """

    _n_categories: int | None = None  # a fixed number of categories (2 for Beta-Binomial)
    alpha = FixedParameter()
    epsilon = FixedParameter()
    epsilon_per_release = FixedParameter()
    n = FixedParameter()
    n_synth = FixedParameter()
    m = FixedParameter()

    def __init__(
        self,
        epsilon: float | None = None,
        *,
        n_synth: int | None = None,
        m: int = 1,
        alpha: float | np.ndarray | None = None,
        accountant: Any = None,
    ) -> None:
        if epsilon is None and alpha is None:
            raise InputError(
                "give epsilon (the alpha is then the smallest that achieves it) or an explicit "
                "alpha (its epsilon is then reported), or both"
            )
        self._epsilon_requested = None if epsilon is None else check_epsilon(epsilon)
        self._alpha_given = None if alpha is None else check_alpha(alpha)
        self._n_synth_given = None if n_synth is None else _check_size(n_synth, "n_synth")
        self._m = check_m(m, "synthetic tables", MAX_TABLES)
        check_accountant(accountant)
        self.accountant = accountant
        self._counts: np.ndarray | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> DirichletMultinomialSynthesizer:
        """Return a deep copy that shares the accountant (one budget for both).

        A copy with a ledger of its own released the same records again while each ledger
        showed one spend (:func:`~geosynth.dp.accountant.deepcopy_sharing_budget`).
        """
        return deepcopy_sharing_budget(self, memo)

    # ------------------------------------------------------------------ fitting
    def fit(self, counts: Any, categories: Any = None) -> DirichletMultinomialSynthesizer:
        """Store the confidential counts and compute the prior and the guaranteed ε.

        Parameters
        ----------
        counts : array-like of int or pandas.Series
            Non-negative integer counts per category, 1-D with at least two categories. Whole
            floats (``3.0``) are accepted. A Series' index labels the categories, and
            :meth:`sample` then returns a DataFrame with those labels as columns.
            All-zero counts are accepted when ``n_synth`` is given.
        categories : list or pandas.Index, optional
            The public categories, in the order of the release's columns (a MultiIndex for
            crossed attributes). A Series' counts are then summed onto them by label: a category
            the Series lacks counts 0, and counts under a label outside them are dropped (a
            :class:`~geosynth.errors.DataWarning` for you says how many records). An array's
            counts must then be one per category, in their order. Without it, the labels of a
            Series are taken to be public, and a :class:`~geosynth.errors.PrivacyLeakWarning`
            says so: a Series from ``value_counts()`` lists only the categories that have
            records, and its columns would publish which ones do, outside the guarantee.

        Returns
        -------
        DirichletMultinomialSynthesizer
            ``self``.

        Raises
        ------
        TypeError
            ``counts`` is boolean or non-numeric.
        geosynth.errors.InputError
            ``counts`` is not 1-D, has fewer than two categories (or not exactly two for the
            Beta-Binomial), NaN, infinite, fractional or negative values; it sums to 0 and no
            ``n_synth`` was given; ``alpha`` has the wrong length, is too small for
            ``epsilon``, or so small that ``ln(1 + ñ / min α)`` overflows (no privacy);
            ``categories`` is not a list of distinct labels, or an array's counts are not one
            per category.
        geosynth.errors.MemoryLimitError
            ``m`` tables of ``k`` categories would take more than :data:`MAX_SAMPLE_BYTES`.

        Warns
        -----
        PrivacyLeakWarning
            ``counts`` is a Series and no ``categories`` were given, or no ``n_synth``.
        DataWarning
            Counts under labels outside ``categories`` were dropped.
        """
        x, labels = counts_on_categories(counts, categories, type(self).__name__)
        self._set_counts(x, labels)
        return self

    def _set_counts(self, x: np.ndarray, labels: pd.Index | None) -> None:
        k = x.shape[0]
        if self._n_categories is not None and k != self._n_categories:
            raise InputError(
                f"{type(self).__name__} needs exactly {self._n_categories} category counts, got "
                f"{k}; use DirichletMultinomialSynthesizer for more categories"
            )
        if k < 2:
            raise InputError(
                f"counts has {k} category; a synthetic table needs at least two categories"
            )
        sample_bytes = 24.0 * self.m * k
        if sample_bytes > MAX_SAMPLE_BYTES:  # refused here, before sample() charges anything
            raise MemoryLimitError(
                f"m={self.m:,} synthetic tables of {k:,} categories need "
                f"{sample_bytes / 2**30:.3g} GiB, more than "
                f"geosynth.dp.synthesizers.MAX_SAMPLE_BYTES ({MAX_SAMPLE_BYTES / 2**30:g} GiB); "
                "make fewer tables m per release"
            )
        n = int(x.sum())
        if self._n_synth_given is None and n == 0:
            raise InputError(
                "counts sum to 0, so the default n_synth = n would be 0; pass a public n_synth"
            )
        if self._n_synth_given is None:
            warnings.warn(
                f"{type(self).__name__}: no n_synth, so every synthetic table sums to the "
                "confidential number of records n exactly; ε then holds only for replace-one "
                "neighbours (bounded DP: n public). Pass a public n_synth (or one released with "
                "its own noise) unless n is already published",
                PrivacyLeakWarning,
                stacklevel=caller_stacklevel(),
            )
        n_synth = n if self._n_synth_given is None else self._n_synth_given
        alpha, eps_release = self._prior(k, n_synth)
        self._counts = x
        self.categories = labels
        self._n = n
        self._n_synth = n_synth
        self._alpha = alpha
        self._epsilon_per_release = eps_release
        if self._alpha_given is None:
            self._epsilon = self._epsilon_requested
        else:
            self._epsilon = self.m * eps_release

    def _prior(self, k: int, n_synth: int) -> tuple[np.ndarray, float]:
        """Per-category prior (k,) and the ε of one table."""
        eps = self._epsilon_requested
        if self._alpha_given is None:
            eps_release = eps / self.m
            return np.full(k, _alpha_bound(n_synth, eps_release, "epsilon / m")), eps_release
        a = self._alpha_given
        if a.size == 1:
            a = np.full(k, a[0])
        elif a.size != k:
            raise InputError(
                f"alpha has {a.size} values but counts has {k} categories; give a scalar or one "
                "value per category"
            )
        eps_release = dirichlet_epsilon(a, n_synth)
        if eps_release > _MAX_EPSILON:  # ñ / min α overflowed: the tables were the counts
            raise InputError(
                f"alpha (min {a.min():.3g}) is so small that with n_synth={n_synth} one table's "
                f"epsilon ln(1 + ñ/min α) is {eps_release:g}: no privacy at all (an epsilon "
                f"above {_MAX_EPSILON:.6g} is refused too); pass epsilon instead of alpha, or an "
                "alpha near ñ/(e^ε − 1) for the epsilon you want"
            )
        if eps is not None:
            needed = n_synth / prior_scale(eps / self.m, "epsilon / m")
            if a.min() < needed * (1 - _RTOL):
                raise InputError(
                    f"alpha (min {a.min():.6g}) is too small for epsilon={eps:g}: with "
                    f"n_synth={n_synth} and m={self.m}, every alpha must be >= ñ/(e^(ε/m) − 1) "
                    f"= {needed:.6g}; alpha={a.min():.6g} only guarantees epsilon="
                    f"{self.m * eps_release:.6g}. Raise alpha or epsilon, or give only one of them"
                )
        return a.copy(), eps_release

    # ------------------------------------------------------------------ sampling
    def sample(self, seed: SeedLike = None) -> np.ndarray | pd.DataFrame:
        """Draw a release of ``m`` synthetic tables; spends :attr:`epsilon` on the accountant.

        Parameters
        ----------
        seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
            ``None`` (the only choice for a release) draws fresh OS entropy. A seed makes the
            noise reproducible and the output not private; it issues a
            :class:`~geosynth.errors.PrivacyLeakWarning` and is for tests only.

        Returns
        -------
        numpy.ndarray of int64, shape (m, k), or pandas.DataFrame
            Row ``r`` is synthetic table ``r`` and sums to ``n_synth``. When fitted on a Series,
            a DataFrame with the category labels as columns and a RangeIndex over releases.

        Raises
        ------
        TypeError, geosynth.errors.InputError
            Called before :meth:`fit`, or an invalid ``seed``; nothing is spent.
        geosynth.errors.BudgetExceededError
            Raised by the accountant; nothing is drawn.

        Warns
        -----
        PrivacyLeakWarning
            A ``seed`` was given.
        """
        if self._counts is None:
            raise InputError(f"{type(self).__name__} is not fitted; call fit(counts) first")
        check_seed(seed)  # a bad seed raised from the generator after the spend
        if self.accountant is not None:
            self.accountant.spend(self.epsilon, 0.0, label=f"{type(self).__name__}.sample")
        rng = private_generator(seed, where=f"{type(self).__name__}.sample")
        tables = draw_dirichlet_multinomial(rng, self.alpha, self._counts, self.n_synth, self.m)
        if self.categories is None:
            return tables
        return pd.DataFrame(tables, columns=self.categories, index=pd.RangeIndex(self.m))

    def fit_sample(self, counts: Any, seed: SeedLike = None) -> np.ndarray | pd.DataFrame:
        """:meth:`fit` then :meth:`sample`; see those methods.

        Parameters
        ----------
        counts : array-like of int or pandas.Series
            Confidential counts per category.
        seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
            ``None`` for a release; a seed for tests only (warns).

        Returns
        -------
        numpy.ndarray of int64, shape (m, k), or pandas.DataFrame
        """
        return self.fit(counts).sample(seed)

    def __repr__(self) -> str:
        eps = getattr(self, "epsilon", self._epsilon_requested)
        return f"{type(self).__name__}(epsilon={eps!r}, m={self.m})"


class BetaBinomialSynthesizer(DirichletMultinomialSynthesizer):
    """ε-DP synthetic binary counts ``x̃ ~ Binomial(ñ, Beta(α_1 + x, α_2 + n − x))``.

    The two-category case of :class:`DirichletMultinomialSynthesizer` (Abowd and Vilhuber 2008;
    Marcolin 2018, §2.5.2, Algorithm 2); same parameters, attributes and guarantee.

    Parameters
    ----------
    epsilon : float, optional
        Total ε of one :meth:`sample` (``ε / m`` per table).
    n_synth : int, optional
        Size ``ñ`` of each synthetic table (default ``n``; see the parent class).
    m : int, default 1
        Number of synthetic tables per release.
    alpha : float or array-like of two floats, optional
        Explicit prior ``(α_1, α_2)``.
    accountant : object, optional
        Budget accountant charged by :meth:`sample`.

    Examples
    --------
    >>> synth = BetaBinomialSynthesizer(1.0, n_synth=50).fit(12, n=40)
    >>> synth.n, synth.n_synth, round(float(synth.alpha[0]), 3)
    (40, 50, 29.099)
    """

    _n_categories = 2

    def fit(
        self, counts: Any, n: int | None = None, categories: Any = None
    ) -> BetaBinomialSynthesizer:
        """Store the confidential counts as successes ``x`` of ``n`` or as two category counts.

        Parameters
        ----------
        counts : int or array-like of two ints or pandas.Series
            With ``n``: the number of successes ``x`` (``0 <= x <= n``). Without: the counts of
            the two categories, ``(x, n − x)``.
        n : int, optional
            Number of trials.
        categories : list of two labels or pandas.Index, optional
            The public labels of the two categories (success first when ``n`` is given); see
            :meth:`DirichletMultinomialSynthesizer.fit`.

        Returns
        -------
        BetaBinomialSynthesizer
            ``self``; :meth:`sample` returns (m, 2) tables whose column 0 holds the synthetic
            successes ``x̃`` and column 1 ``ñ − x̃``.

        Raises
        ------
        TypeError
            ``counts`` or ``n`` has the wrong type.
        geosynth.errors.InputError
            Invalid counts (see :meth:`DirichletMultinomialSynthesizer.fit`) or ``x > n``.
        """
        if n is None:
            return super().fit(counts, categories)
        n = _check_size(n, "n", 0)
        refuse_masked(counts, "counts")  # np.atleast_1d dropped the mask
        x = check_counts(np.atleast_1d(counts), "counts")
        if x.size != 1:  # neither the counts nor n quoted: they are the confidential data
            raise InputError(f"with n given, counts must be one number of successes, got "
                             f"{x.size} numbers; pass the successes x alone, or the two "
                             "category counts (x, n − x) without n")
        if n < x[0]:
            raise InputError("the successes (counts) exceed the number of trials n; check "
                             "that counts is the number of successes among the n trials")
        both, labels = counts_on_categories(np.array([x[0], n - x[0]], dtype=np.int64),
                                            categories, type(self).__name__)
        self._set_counts(both, labels)
        return self
