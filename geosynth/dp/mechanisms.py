"""Differentially private noise mechanisms: Laplace, geometric, Gaussian and exponential.

Each mechanism releases a noisy version of a statistic whose *sensitivity* (the most one
individual can change it) the caller states; the noise is calibrated so that the release is
ε-differentially private (Laplace, geometric, exponential) or (ε, δ)-differentially private
(Gaussian) [DR14]_. Post-processing a release (rounding, clipping to zero, plotting, feeding it
to a model) is free: it cannot weaken the guarantee and costs no budget [DR14]_.

Where the noise comes from
--------------------------
A release (``seed=None``) draws its noise from OpenDP's samplers. They work on exact rational
arithmetic and so resist the attack of [Mir12]_, which recovers the true value from the pattern
of representable floating-point outputs of a naive ``numpy`` inverse-CDF Laplace sampler.
OpenDP's samplers cannot be seeded by design. OpenDP's own privacy map must certify the ε (or
zCDP ρ) claimed; if it does not, a :class:`~geosynth.errors.SamplerError` is raised before
anything is spent or drawn.

A ``seed`` is accepted only so that tests are reproducible: it switches to NumPy draws of the
same distribution and issues a :class:`~geosynth.errors.PrivacyLeakWarning`, because anyone
who knows the seed can replay and subtract the noise (and NumPy's floating-point samplers are
the kind [Mir12]_ attacks). Never pass a seed for a published release.

Noise that does not fit the output type
---------------------------------------
A small ε makes a large scale ``sensitivity / epsilon``. The integer mechanism
(:func:`geometric`) refuses a scale above :data:`MAX_INTEGER_NOISE_SCALE` (about 1.6e14): beyond
it the noise exceeds 2**52 with probability above 2**-39 per value and int64 outputs would
saturate, silently (``geometric(3, sensitivity=1, epsilon=1e-300)`` used to return
9223372036854775807); it also refuses counts beyond ±2**62, which leave no room for the noise.
The float mechanisms refuse a scale (or σ) above :data:`MAX_FLOAT_NOISE_SCALE` (float max / 2**12)
and values beyond float max / 4, so ``x + noise`` stays finite, and refuse a non-finite output.
They also refuse integers beyond 2**53 that float64 does not hold (it rounds them, so
neighbouring counts could lie further apart than the sensitivity) and values where float64's spacing
exceeds the sensitivity (the noise would be rounded away: ``laplace(2**60 + 129, ...)``
returned ``2**60 + 256`` exactly, every time).
Every refusal happens before the accountant is charged and names ``epsilon``, ``sensitivity``,
the scale and the smallest ε that works. Noise of such scale leaves nothing of the statistic
anyway.

Budget accounting
-----------------
Every mechanism takes optional ``accountant`` and ``label`` keywords. With an accountant (see
:class:`geosynth.dp.accountant.Accountant`), ``accountant.spend(epsilon, delta, label=...)`` is
called after validation (of every argument, ``seed`` included) and *before* any noise is
drawn, so a refused spend (:class:`~geosynth.errors.BudgetExceededError`) releases nothing and
a refused argument spends nothing.

References
----------
.. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy",
   Foundations and Trends in Theoretical Computer Science 9(3-4), 2014.
.. [Mir12] I. Mironov, "On Significance of the Least Significant Bits for Differential
   Privacy", ACM CCS 2012.
"""

from __future__ import annotations

import math
import numbers
import sys
import warnings
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, Protocol, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from geosynth._messages import caller_stacklevel
from geosynth._random import SeedLike, check_seed
from geosynth._validation import (
    as_rectangular_array,
    check_epsilon,
    check_optional_str,
    check_positive,
    check_probability,
    check_real_array,
    inexact_integers,
    is_integer,
    refuse_masked,
)
from geosynth.dp._randomness import private_generator
from geosynth.dp.accountant import check_accountant
from geosynth.errors import (
    InputError,
    InputTypeError,
    MemoryLimitError,
    PrivacyLeakWarning,
    SamplerError,
)

__all__ = [
    "MAX_FLOAT_NOISE_SCALE",
    "ROUNDING_MARGIN",
    "MAX_VALUE_BYTES",
    "MAX_INTEGER_NOISE_SCALE",
    "EXPONENTIAL_EPSILON",
    "NEARLY_EXACT_SHARE",
    "LARGE_DELTA",
    "warn_if_nearly_exact",
    "laplace",
    "geometric",
    "gaussian",
    "exponential",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
]

#: OpenDP's noise granularity 2**k for floats: 2**-1074 is the spacing of subnormal doubles, so
#: every float input is already on the grid and is not rounded (no sensitivity inflation).
_FLOAT_GRANULARITY_K = -1074

#: Largest noise scale ``sensitivity / epsilon`` of :func:`geometric`: at this scale the noise
#: exceeds 2**52 in absolute value with probability at most 2 exp(-2**52 / scale) = 2**-39 per
#: value, leaving int64 (2**63) a margin of 2**11 for the count itself.
MAX_INTEGER_NOISE_SCALE = 2.0**52 / (40.0 * math.log(2.0))

#: :func:`geometric` warns when a count is published exactly (noise 0) with at least this
#: probability, ``tanh(ε / 2Δ)``: from ε/Δ ≈ 7.6 on.
NEARLY_EXACT_SHARE = 0.999

#: :func:`gaussian` warns when ``delta`` exceeds this: δ bounds the probability that the
#: (ε, δ) guarantee fails outright, and a mechanism that publishes a random share δ of the
#: records exactly is (0, δ)-DP. The usual advice is δ far below 1/n (Dwork & Roth 2014, §2.3).
LARGE_DELTA = 1e-3

#: Largest |count| :func:`geometric` accepts: room for 2**62 of noise above it in int64.
_MAX_INTEGER_VALUE = 2**62

#: Largest sensitivity of :func:`geometric`: OpenDP takes it as an int64.
_MAX_INTEGER_SENSITIVITY = 2**63 - 1

#: Largest noise scale (Laplace ``b``, Gaussian σ, exponential-mechanism Gumbel scale) of the
#: float mechanisms: noise beyond 2**10 scales (float max / 4) has probability below e**-1024.
MAX_FLOAT_NOISE_SCALE = sys.float_info.max / 2.0**12
#: The float mechanisms calibrate the noise of exact numbers they convert (``Decimal``,
#: ``Fraction``, ``longdouble``) to ``sensitivity * (1 + ROUNDING_MARGIN)``: the margin covers
#: their rounding to doubles, and values whose rounding could exceed it are refused
#: (:func:`_check_representable`). Their noise is 0.0015 % larger.
ROUNDING_MARGIN = 2.0**-16
#: The ε :func:`exponential` takes: OpenDP certifies its loss as ρ = ε²/8 in zCDP, a float64
#: that underflows to 0 below about 4e-154 and overflows above about 4e154 (a raw
#: ZeroDivisionError or OverflowError). Far inside both: at ε = 1e-150 the choice is uniform to
#: within 1e-149 of a score range, and at ε = 1e150 it is the best-scored candidate.
EXPONENTIAL_EPSILON = (1e-150, 1e150)

#: Largest |x| the float mechanisms accept, so that x + noise stays below float max.
_MAX_FLOAT_VALUE = sys.float_info.max / 4.0

#: The most bytes of the 8-byte (float64 or int64) copy of the values (or scores) one mechanism
#: call makes: 2 GiB, as the synthesizers' ``MAX_SAMPLE_BYTES`` and the posterior's
#: ``MAX_DRAW_BYTES``. ``laplace(np.ones(10**9, np.int8), ...)`` raised a bare MemoryError
#: asking for 7.45 GiB. Larger inputs are refused before any budget is spent.
MAX_VALUE_BYTES = 2**31

_C = TypeVar("_C")


class _Spender(Protocol):
    """Anything with the ``spend`` method of :class:`geosynth.dp.accountant.Accountant`."""

    def spend(
        self, epsilon: float, delta: float = 0.0, label: str | None = None
    ) -> Any:  # pragma: no cover - protocol
        """Record a spend of ``(epsilon, delta)`` or raise ``BudgetExceededError``."""
        ...


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _check_sensitivity(sensitivity: Any, norm: str) -> float:
    return check_positive(
        sensitivity,
        "sensitivity",
        hint=f"pass the largest {norm} change one individual can make to the statistic "
        "(e.g. sensitivity=1 for a count)",
    )


def _check_delta(delta: Any) -> float:
    return check_probability(
        delta, "delta", hint="choose it much smaller than 1/(number of individuals), e.g. "
        "delta=1e-6",
    )


def _check_noise_scale(
    scale: float, limit: float, *, where: str, sensitivity: float, epsilon: float,
    what: str = "noise scale sensitivity/epsilon", smallest: float | None = None,
    reason: str,
) -> None:
    """Refuse a noise scale that is not finite or exceeds ``limit`` (nothing is spent yet).

    ``smallest`` is the smallest epsilon that works for this sensitivity, when it has a closed
    form (scale = sensitivity / epsilon); otherwise the message asks for a larger epsilon.
    """
    if math.isfinite(scale) and 0.0 < scale <= limit:
        return
    shown = f"{scale:.3g}" if math.isfinite(scale) else str(scale)
    fix = (f"use epsilon >= {_round_up(smallest)} for sensitivity={sensitivity:g}"
           if smallest is not None and math.isfinite(smallest) and smallest > 0
           else "use a larger epsilon (or a smaller sensitivity)")
    if scale == 0.0:
        raise InputError(
            f"{where}: epsilon={epsilon!r} with sensitivity={sensitivity!r} gives a {what} of 0 "
            "(the quotient underflows); use a smaller epsilon or a larger sensitivity"
        )
    raise InputError(
        f"{where}: epsilon={epsilon!r} with sensitivity={sensitivity!r} gives a {what} of "
        f"{shown}, above the {limit:.3g} that {reason}; noise that large leaves nothing of the "
        f"statistic. {fix[0].upper()}{fix[1:]} (a larger epsilon is less private), or release a "
        "coarser statistic"
    )


def _round_up(value: float | None, digits: int = 2) -> str:
    """Format ``value`` with ``digits`` significant digits, rounded up (never below it)."""
    if value is None or not math.isfinite(value) or value <= 0:
        return repr(value)
    exponent = math.floor(math.log10(value)) - digits + 1
    rounded = math.ceil(value / 10.0**exponent) * 10.0**exponent
    if rounded < value:  # float error of the power of ten
        rounded = math.nextafter(rounded, math.inf)
    return f"{rounded:.{digits}g}"


def _check_float_values(values: NDArray[np.float64], name: str, where: str) -> None:
    big = np.abs(values) > _MAX_FLOAT_VALUE
    if big.any():
        raise InputError(
            f"{where}: {name} has {int(big.sum())} values beyond ±{_MAX_FLOAT_VALUE:.3g} at "
            f"{_describe_positions(big.ravel())}; x + noise would overflow to infinity. "
            "Rescale the statistic (e.g. report it in thousands)"
        )


def _check_finite_output(noisy: NDArray[np.float64], where: str) -> None:
    if not np.all(np.isfinite(noisy)):  # pragma: no cover - excluded by the scale limits
        raise SamplerError(
            f"{where}: the noisy output is not finite; use a larger epsilon (smaller noise)"
        )


def _spacing(magnitudes: NDArray[np.float64]) -> NDArray[np.float64]:
    """Return ``np.spacing`` of non-negative ``magnitudes``, float64's largest value included.

    NumPy's spacing of the largest double overflows to ∞ (with an overflow warning, an
    exception under a strict filter) where the doubles below it are 2**971 apart: a score of
    ``sys.float_info.max`` was refused as "spacing exceeds sensitivity=1e300".
    """
    with np.errstate(over="ignore"):
        spacing = np.spacing(magnitudes)
    return np.where(magnitudes == sys.float_info.max, 2.0**971, spacing)


def _describe_positions(bad: NDArray[np.bool_], limit: int = 5) -> str:
    positions = np.flatnonzero(bad)
    shown = ", ".join(str(int(i)) for i in positions[:limit])
    more = positions.size - limit
    return f"positions [{shown}]" + (f" and {more} more" if more > 0 else "")


def _check_copy_bytes(x: Any, name: str) -> None:
    """Refuse an array whose 8-byte copy exceeds :data:`MAX_VALUE_BYTES`, before copying it.

    The size is read from the array (or pandas object) itself, without converting it; a list
    is converted by NumPy in any case (and, as Python objects, already takes more memory).
    """
    size = getattr(x, "size", None)
    if is_integer(size) and 8 * size > MAX_VALUE_BYTES:
        raise MemoryLimitError(
            f"{name} has {int(size):,} values, whose 8-byte copy would take "
            f"{8 * size / 2**30:.3g} GiB, more than geosynth.dp.mechanisms.MAX_VALUE_BYTES "
            f"({MAX_VALUE_BYTES / 2**30:g} GiB); nothing was charged: add noise to it in parts "
            "(their privacy losses add up unless they concern disjoint records)"
        )


def _as_real_array(
    x: Any, name: str
) -> tuple[NDArray[np.float64], bool, NDArray[np.bool_]]:
    """Return ``x`` as a float64 array, whether it was a scalar, and its inexact integers."""
    _check_copy_bytes(x, name)
    array = check_real_array(x, name, "a real number or an array of real numbers")
    bad = ~np.isfinite(array)
    if bad.any():
        raise InputError(
            f"{name} has {int(bad.sum())} non-finite values (NaN or ±inf) at "
            f"{_describe_positions(bad.ravel())}; drop or impute them before adding noise"
        )
    return array, array.ndim == 0, inexact_integers(x)


def _check_representable(
    values: NDArray[np.float64], inexact: NDArray[np.bool_], sensitivity: float, name: str,
    where: str, *, converted: bool = False, norm: str = "l1",
) -> float:
    """Refuse values that float64 holds too coarsely; return the sensitivity to calibrate to.

    The noise is drawn on a grid far finer than any double and ``x + noise`` is rounded to the
    nearest double, so the guarantee holds for the doubles given: ``sensitivity`` bounds how
    far the doubles of two neighbouring datasets lie apart, as OpenDP's ``d_in`` does. Where
    they are the analyst's float64 arithmetic on a statistic, its rounding is part of that
    bound (near ``2**50`` two statistics 0.3 apart can round to doubles 0.5 apart). Three
    failures lie before the noise, and each would publish the statistic with less noise than
    it needs, or none (Mironov 2012's point, at the input):

    * an integer beyond 2**53 that float64 does not hold is rounded when converted
      (``2**60 + 129`` becomes ``2**60 + 256``): refused;
    * where the doubles around ``x`` are spaced wider than ``sensitivity`` (a sum near 1e17
      with sensitivity 1), no float64 statistic can change by at most ``sensitivity`` and the
      noise is rounded away: refused;
    * exact numbers converted here (``converted``: a ``Decimal``, a ``Fraction``, a
      ``longdouble``; decided by their type, never their values) move by up to half the
      spacing there, so neighbours ``Δ`` apart may lie ``spacing(|x| + Δ)`` further apart,
      each value (a ``Decimal`` of ``2**53 + 1`` with sensitivity 2 had its likelihood ratio
      doubled). Their noise is calibrated to ``Δ (1 + ROUNDING_MARGIN)``, whatever the values
      (a margin read off the values' own spacing made the scale differ between neighbours on
      either side of a power of two, a leak of its own), and values whose rounding could
      exceed it are refused: the sum of ``spacing(|x| + Δ)`` over the values (for an L1
      sensitivity; their root sum of squares for L2, their maximum for a maximum) above
      ``ROUNDING_MARGIN Δ``.

    Returns
    -------
    float
        The sensitivity the noise is calibrated to.
    """
    if inexact.any():
        raise InputError(
            f"{where}: {name} has {int(inexact.sum())} integers beyond 2**53 at "
            f"{_describe_positions(inexact.ravel())} that float64 cannot hold exactly "
            "(neighbouring counts would lie further apart than the sensitivity); use "
            "geosynth.dp.mechanisms.geometric for integer statistics, or subtract a public "
            "offset first"
        )
    coarse = _spacing(np.abs(values)) > sensitivity
    if coarse.any():
        raise InputError(
            f"{where}: {name} has {int(coarse.sum())} values at "
            f"{_describe_positions(coarse.ravel())} where float64's spacing exceeds "
            f"sensitivity={sensitivity:g}: no float64 statistic there can change by at most "
            "the sensitivity, so the stated guarantee cannot hold (and noise below the spacing "
            "is rounded away, publishing the value exactly); subtract a public offset (e.g. a "
            "published reference total) before adding noise, or use a larger sensitivity"
        )
    if not converted:
        return sensitivity
    spacing = _spacing(np.minimum(np.abs(values) + sensitivity, sys.float_info.max))
    top = float(spacing.max()) if spacing.size else 0.0
    widening = {"l1": float(spacing.sum()), "linf": top,
                "l2": top * math.sqrt(float(np.sum((spacing / top) ** 2))) if top else 0.0}[norm]
    if widening > ROUNDING_MARGIN * sensitivity:
        raise InputError(
            f"{where}: {name} holds exact numbers (Decimal, Fraction or longdouble) that "
            "float64 rounds by more, in all, than the noise covers for "
            f"sensitivity={sensitivity:g} (2**-16 of it): rounding could move neighbouring "
            "statistics further apart than the sensitivity; subtract a public offset first, "
            "or pass float64 values and a sensitivity that bounds their change"
        )
    return sensitivity * (1.0 + ROUNDING_MARGIN)


def _rounds_on_conversion(x: Any) -> bool:
    """Whether ``x`` holds numbers that float64 may round: by their type, never their values.

    A ``longdouble`` array, or objects other than Python and NumPy ints and floats (a
    ``Decimal``, a ``Fraction``, a ``longdouble`` scalar). Ints beyond 2**53 are judged apart
    (:func:`geosynth._validation.inexact_integers`).
    """
    given = np.asarray(x, dtype=object) if isinstance(x, list | tuple) else np.asarray(x)
    if given.dtype.kind in "fc":
        return given.dtype.itemsize > 8
    if given.dtype.kind != "O":
        return False
    exact = (int, float, np.integer, np.float64, np.float32, np.float16)
    return any(not isinstance(value, exact) or isinstance(value, np.longdouble)
               for value in given.flat)


def _as_int_array(x: Any, name: str) -> tuple[NDArray[np.int64], bool]:
    """Return ``x`` as an int64 array (integral floats accepted) and whether it was a scalar."""
    if isinstance(x, str | bytes):
        raise InputTypeError(f"{name} must be an integer or an array of integers, got str")
    refuse_masked(x, name)  # np.asarray reads the values under the mask
    _check_copy_bytes(x, name)
    array = as_rectangular_array(x, name)
    if array.dtype.kind == "O" and array.size and all(is_integer(v) for v in array.flat):
        # Python ints beyond 64 bits (or an object array of ints): int64 if they fit.
        outside = np.array([not -(2**63) <= v < 2**63 for v in array.flat])
        if outside.any():
            raise InputError(
                f"{name} has values outside the int64 range at {_describe_positions(outside)}"
            )
        array = array.astype(np.int64)
    if array.dtype.kind == "b" or array.dtype.kind not in "iuf":
        raise InputTypeError(
            f"{name} must be an integer or an array of integers, "
            f"got {type(x).__name__} of dtype {array.dtype}"
        )
    if array.dtype.kind == "f":
        bad = ~np.isfinite(array) | (array != np.round(array))
        if bad.any():
            raise InputError(
                f"{name} must hold integers (counts), but {int(bad.sum())} values at "
                f"{_describe_positions(bad.ravel())} are not whole numbers; round them first or "
                "use laplace() for real-valued statistics"
            )
    limit = np.iinfo(np.int64)
    if array.dtype.kind == "f":  # float(limit.max) is 2**63, which the cast below overflowed
        too_big = (array >= 2.0**63) | (array < -(2.0**63))
    else:
        too_big = (array > limit.max) | (array < limit.min)
    if np.any(too_big):
        raise InputError(
            f"{name} has values outside the int64 range at "
            f"{_describe_positions(np.asarray(too_big).ravel())}"
        )
    array = array.astype(np.int64)
    huge = (array > _MAX_INTEGER_VALUE) | (array < -_MAX_INTEGER_VALUE)
    if np.any(huge):
        raise InputError(
            f"{name} has values beyond ±2**62 at {_describe_positions(np.asarray(huge).ravel())}, "
            "which leave no room in int64 for the noise; counts that large are not counts of "
            "people: check the input"
        )
    return array, array.ndim == 0


def _float_at_most(value: Fraction) -> float:
    """Return the largest float that is <= the exact rational ``value``."""
    number = float(value)
    if Fraction(number) > value:
        number = math.nextafter(number, -math.inf)
    return number


def _spend(
    accountant: _Spender | None, epsilon: float, delta: float, label: str | None, where: str
) -> None:
    if accountant is not None:
        accountant.spend(epsilon, delta, label=where if label is None else label)


# --------------------------------------------------------------------------------------------
# OpenDP
# --------------------------------------------------------------------------------------------


def _opendp() -> Any:
    """Import ``opendp.prelude`` with the ``contrib`` features enabled (lazily: it is slow)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def _calibrate(
    build: Callable[[float], Any], scale: float, d_in: Any, limit: float, where: str
) -> Any:
    """Build an OpenDP measurement whose own privacy map certifies ``map(d_in) <= limit``.

    OpenDP rounds its privacy maps up, so ``scale = sensitivity / epsilon`` can map to
    ``epsilon`` plus one unit in the last place; the scale is then nudged up (a relative change
    of ~1e-16, invisible in the noise) until OpenDP itself certifies the claimed loss.

    Raises
    ------
    geosynth.errors.SamplerError
        If OpenDP still certifies more than ``limit`` after 50 nudges (its privacy map then
        disagrees with the textbook one). It is raised before the accountant is charged and
        before any noise is drawn: a release whose loss exceeds the ε it is charged and
        labelled with is never made (a warning let it through under the default filters).
    """
    measurement = build(scale)
    loss = measurement.map(d_in)
    for _ in range(50):
        if loss <= limit:
            return measurement
        scale = math.nextafter(scale * (loss / limit), math.inf)
        measurement = build(scale)
        loss = measurement.map(d_in)
    if loss <= limit:
        return measurement
    raise SamplerError(
        f"{where}: OpenDP certifies a privacy loss of {loss!r} for this noise, above the "
        f"{limit!r} requested, so nothing was spent or released; the installed opendp's "
        "privacy map disagrees with the textbook one: install the opendp version geosynth is "
        "tested with (0.16)"
    )


def _float_vector_space(dp: Any, metric: str) -> tuple[Any, Any]:
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    distance = dp.l1_distance(T=float) if metric == "l1" else dp.l2_distance(T=float)
    return domain, distance


def _release_shape(values: list[Any], shape: tuple[int, ...], dtype: type) -> NDArray[Any]:
    return np.asarray(values, dtype=dtype).reshape(shape)


# --------------------------------------------------------------------------------------------
# Laplace
# --------------------------------------------------------------------------------------------


def laplace(
    x: ArrayLike,
    *,
    sensitivity: float,
    epsilon: float,
    seed: SeedLike = None,
    accountant: _Spender | None = None,
    label: str | None = None,
) -> float | NDArray[np.float64]:
    r"""Add Laplace noise of scale ``sensitivity / epsilon`` to ``x`` (ε-DP).

    The Laplace mechanism [DR14]_ (Def. 3.3, Thm. 3.6) releases
    :math:`x + Z`, :math:`Z \sim \mathrm{Lap}(b)`, density :math:`e^{-|z|/b} / (2b)` with
    :math:`b = \Delta_1 / \varepsilon`; it is ε-differentially private when :math:`\Delta_1`
    bounds the L1 change of ``x`` (the whole array) when one individual is added or removed.

    Parameters
    ----------
    x : float or array_like of float
        The confidential statistic(s). An array is noised as one vector; ``sensitivity`` is its
        L1 sensitivity (e.g. 1 for a histogram of counts where each person is in one cell).
    sensitivity : float
        L1 sensitivity :math:`\Delta_1 > 0`.
    epsilon : float
        Privacy-loss parameter ε > 0.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` for a release (OpenDP's exact sampler). Anything else draws reproducible NumPy
        noise (``Generator.laplace``) and warns with :class:`PrivacyLeakWarning`: tests only.
    accountant : geosynth.dp.accountant.Accountant, optional
        Charged ``(epsilon, 0)`` before noise is drawn.
    label : str, optional
        Ledger label for the accountant (default ``"laplace"``).

    Returns
    -------
    float or numpy.ndarray
        A float for scalar ``x``, else a float64 array of the shape of ``x``.

    Raises
    ------
    TypeError
        If ``x`` is not real-valued or a parameter has the wrong type.
    geosynth.errors.InputError
        If ``x`` has NaN/inf, values beyond float max / 4, integers beyond 2**53 that
        float64 does not hold, or values where float64's spacing exceeds ``sensitivity``;
        ``epsilon`` or ``sensitivity`` is not finite and > 0, or the scale
        ``sensitivity / epsilon`` exceeds
        :data:`MAX_FLOAT_NOISE_SCALE` (the message gives the smallest ε that works). Nothing is
        charged then.
    geosynth.errors.MemoryLimitError
        The 8-byte copy of the values would exceed :data:`MAX_VALUE_BYTES`; nothing is charged.
    geosynth.errors.BudgetExceededError
        From ``accountant``, before any noise is drawn.

    Notes
    -----
    OpenDP (``make_laplace`` on floats with granularity :math:`2^{-1074}`) samples a discrete
    Laplace on the grid :math:`2^{-1074}\mathbb{Z}` exactly and rounds ``x + noise`` to the
    nearest double. The grid is the spacing of subnormal doubles, so inputs are not rounded and
    OpenDP's privacy map is exactly :math:`\Delta_1/b`; the final rounding is post-processing.
    ``sensitivity`` bounds the change of the doubles given (their rounding included, as
    OpenDP's ``d_in``); exact numbers converted here (``Decimal``, ``Fraction``,
    ``longdouble``) get :data:`ROUNDING_MARGIN` more, for their rounding
    (:func:`_check_representable`), a correction the textbook calibration does not make.
    The distribution differs from the continuous Laplace only below double precision. The
    scale is nudged up by at most a few ulps so that OpenDP's own (upward-rounded) privacy map
    certifies ``<= epsilon``. OpenDP's exact sampler costs tens of microseconds per value.

    References
    ----------
    .. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy",
       2014, Sec. 3.3.
    .. [Mir12] I. Mironov, "On Significance of the Least Significant Bits for Differential
       Privacy", ACM CCS 2012.

    Examples
    --------
    >>> from geosynth.dp.mechanisms import laplace
    >>> noisy_count = laplace(42.0, sensitivity=1.0, epsilon=0.5)
    """
    values, scalar, inexact = _as_real_array(x, "x")
    sensitivity = _check_sensitivity(sensitivity, "L1")
    epsilon = check_epsilon(epsilon)
    check_optional_str(label, "label")
    check_accountant(accountant)
    check_seed(seed)  # a bad seed is refused before the spend
    _check_float_values(values, "x", "laplace")
    _check_noise_scale(
        sensitivity / epsilon, MAX_FLOAT_NOISE_SCALE, where="laplace", sensitivity=sensitivity,
        epsilon=epsilon, smallest=sensitivity / MAX_FLOAT_NOISE_SCALE,
        reason="float64 noise can carry",
    )
    sensitivity = _check_representable(values, inexact, sensitivity, "x", "laplace",
                                       converted=_rounds_on_conversion(x), norm="l1")
    scale = sensitivity / epsilon

    if seed is None:
        dp = _opendp()
        domain, distance = _float_vector_space(dp, "l1")
        measurement = _calibrate(
            lambda b: dp.m.make_laplace(domain, distance, scale=b, k=_FLOAT_GRANULARITY_K),
            scale,
            sensitivity,
            epsilon,
            "laplace",
        )
        _spend(accountant, epsilon, 0.0, label, "laplace")
        noisy = _release_shape(measurement(values.ravel().tolist()), values.shape, float)
    else:
        _spend(accountant, epsilon, 0.0, label, "laplace")
        rng = private_generator(seed, where="laplace")
        noisy = values + rng.laplace(0.0, scale, size=values.shape)
    _check_finite_output(noisy, "laplace")
    return float(noisy) if scalar else noisy


# --------------------------------------------------------------------------------------------
# Geometric (discrete Laplace)
# --------------------------------------------------------------------------------------------


def warn_if_nearly_exact(
    epsilon: float,
    sensitivity: int,
    n_counts: int | None,
    where: str,
    *,
    name: str = "epsilon",
    what: str = "count",
    fix: str = "Use a smaller epsilon",
) -> None:
    """Warn when the geometric mechanism would publish nearly every count exactly.

    A count gets noise 0 with probability ``(1 − α)/(1 + α) = tanh(ε / 2Δ)``, ``α = e^{−ε/Δ}``.
    From :data:`NEARLY_EXACT_SHARE` on, the release is the exact counts in all but name,
    whatever ε it states. The share depends on ε and Δ only (public), so the warning comes
    before any spend: under an error filter nothing is charged.

    Parameters
    ----------
    epsilon : float
        Privacy-loss parameter ε > 0.
    sensitivity : int
        L1 sensitivity Δ.
    n_counts : int or None
        Number of counts released, for the expected number that get any noise (None: not
        known yet).
    where : str
        The caller named in the message (``"geometric"``, ``"dp_counts"``, ...).
    name : str, default "epsilon"
        The parameter holding ε, in the message (``"epsilon_totals"``).
    what : str, default "count"
        What a count is, in the message (``"combination total"``).
    fix : str, default "Use a smaller epsilon"
        The fix, in the message; the ε below which most counts get noise follows it.

    Warns
    -----
    PrivacyLeakWarning
        ``tanh(ε / 2Δ) >= NEARLY_EXACT_SHARE``.
    """
    exact = math.tanh(epsilon / (2.0 * sensitivity))
    if exact < NEARLY_EXACT_SHARE:
        return
    noised = ("" if n_counts is None else
              f": about {(1.0 - exact) * n_counts:.3g} of the {n_counts:,} {what}s get any noise")
    warnings.warn(
        f"{where}: {name}={epsilon:g} (sensitivity {sensitivity:g}) leaves each {what} exact "
        f"with probability {exact:.6g}{noised}, so the release publishes them exactly in all "
        f"but name. {fix}: below {2.0 * sensitivity * math.atanh(0.5):.3g} most {what}s get "
        "noise",
        PrivacyLeakWarning, stacklevel=caller_stacklevel(),
    )


def geometric(
    x_int: ArrayLike,
    *,
    sensitivity: int,
    epsilon: float,
    seed: SeedLike = None,
    accountant: _Spender | None = None,
    label: str | None = None,
) -> int | NDArray[np.int64]:
    r"""Add two-sided geometric (discrete Laplace) noise to integer counts (ε-DP).

    The geometric mechanism [GRS09]_ releases :math:`x + K` with
    :math:`P(K = k) = \frac{1 - \alpha}{1 + \alpha}\,\alpha^{|k|}`,
    :math:`\alpha = e^{-\varepsilon/\Delta}`, i.e. :math:`P(k) \propto e^{-\varepsilon|k|/\Delta}`
    (scale :math:`\Delta/\varepsilon`). It is the integer analogue of :func:`laplace`: outputs
    stay integers and the mechanism is ε-DP for inputs whose L1 change is at most Δ.

    Parameters
    ----------
    x_int : int or array_like of int
        Confidential counts. Integral floats (``3.0``) are accepted; other floats are refused.
    sensitivity : int
        L1 sensitivity Δ, a positive integer (integer counts change by whole numbers).
    epsilon : float
        Privacy-loss parameter ε > 0.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` for a release (OpenDP's exact discrete Laplace sampler). Anything else draws
        the difference of two NumPy geometric variables (same distribution, reproducible) and
        warns with :class:`PrivacyLeakWarning`: tests only.
    accountant : geosynth.dp.accountant.Accountant, optional
        Charged ``(epsilon, 0)`` before noise is drawn.
    label : str, optional
        Ledger label for the accountant (default ``"geometric"``).

    Returns
    -------
    int or numpy.ndarray
        An int for scalar input, else an int64 array of the input's shape.

    Raises
    ------
    TypeError
        If ``x_int`` is not numeric or a parameter has the wrong type.
    geosynth.errors.InputError
        If ``x_int`` has non-integer values or values beyond ±2**62, ``sensitivity`` is not a
        positive integer, ``epsilon`` is not finite and > 0, or the scale
        ``sensitivity / epsilon`` exceeds :data:`MAX_INTEGER_NOISE_SCALE` (about 1.6e14: the
        int64 output would saturate; the message gives the smallest ε that works). Nothing is
        charged then.
    geosynth.errors.MemoryLimitError
        The 8-byte copy of the values would exceed :data:`MAX_VALUE_BYTES`; nothing is charged.
    geosynth.errors.BudgetExceededError
        From ``accountant``, before any noise is drawn.

    Warns
    -----
    PrivacyLeakWarning
        A ``seed`` is given (tests only), or ε is so large that a count is published exactly
        with probability at least :data:`NEARLY_EXACT_SHARE` (:func:`warn_if_nearly_exact`),
        before any spend.

    Notes
    -----
    OpenDP's ``make_laplace`` on ``i64`` vectors samples this distribution exactly (Canonne,
    Kamath and Steinke's discrete Laplace sampler). Sums that would overflow int64 would
    saturate at its limits, which is why the scale is capped at :data:`MAX_INTEGER_NOISE_SCALE`
    and counts at ±2**62: within them, saturation has probability below 2**-39 per value.

    References
    ----------
    .. [GRS09] A. Ghosh, T. Roughgarden and M. Sundararajan, "Universally Utility-Maximizing
       Privacy Mechanisms", STOC 2009.
    .. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014.

    Examples
    --------
    >>> from geosynth.dp.mechanisms import geometric
    >>> noisy_counts = geometric([3, 0, 12], sensitivity=1, epsilon=1.0)
    """
    values, scalar = _as_int_array(x_int, "x_int")
    if isinstance(sensitivity, numbers.Real) and not isinstance(sensitivity, bool | np.bool_) \
            and not is_integer(sensitivity):  # float(10**400) raised OverflowError
        if math.isfinite(float(sensitivity)) and float(sensitivity) != round(float(sensitivity)):
            raise InputError(
                f"sensitivity must be a positive integer for geometric(), got {sensitivity!r}; "
                "integer counts change by whole numbers, so round the bound down"
            )
    delta_1 = _check_sensitivity(sensitivity, "L1")
    # The exact integer for OpenDP's privacy map: float(2**53 + 1) is 2**53, so the noise was
    # calibrated for a smaller sensitivity than stated.
    d_in = int(sensitivity) if is_integer(sensitivity) else int(delta_1)
    if d_in > _MAX_INTEGER_SENSITIVITY:  # OpenDP raised a bare ValueError, the seeded path ran
        raise InputError(
            f"sensitivity must be at most 2**63 - 1 for geometric() (OpenDP's integer noise is "
            f"int64), got {sensitivity!r}; no count of people changes by that much: check the bound"
        )
    epsilon = check_epsilon(epsilon)
    check_optional_str(label, "label")
    check_accountant(accountant)
    check_seed(seed)  # a bad seed is refused before the spend
    scale = delta_1 / epsilon
    _check_noise_scale(
        scale, MAX_INTEGER_NOISE_SCALE, where="geometric", sensitivity=int(delta_1),
        epsilon=epsilon, smallest=delta_1 / MAX_INTEGER_NOISE_SCALE,
        reason="int64 counts can carry (the noise would exceed 2**52 with probability above "
        "2**-39 and the output would saturate)",
    )

    warn_if_nearly_exact(epsilon, d_in, values.size, "geometric" if label is None else label)
    if seed is None:
        dp = _opendp()
        domain = dp.vector_domain(dp.atom_domain(T="i64"))
        distance = dp.l1_distance(T="i64")
        measurement = _calibrate(
            lambda b: dp.m.make_laplace(domain, distance, scale=b),
            scale,
            d_in,
            epsilon,
            "geometric",
        )
        _spend(accountant, epsilon, 0.0, label, "geometric")
        noisy = _release_shape(measurement(values.ravel().tolist()), values.shape, np.int64)
    else:
        _spend(accountant, epsilon, 0.0, label, "geometric")
        rng = private_generator(seed, where="geometric")
        # Difference of two iid Geometric(p) variables, p = 1 - alpha: P(k) ∝ alpha**|k|.
        p = -math.expm1(-epsilon / delta_1)
        noise = rng.geometric(p, size=values.shape) - rng.geometric(p, size=values.shape)
        noisy = values + noise.astype(np.int64)
    return int(noisy) if scalar else noisy


# --------------------------------------------------------------------------------------------
# Gaussian
# --------------------------------------------------------------------------------------------


#: Bound on the relative rounding error of one step of :func:`_gaussian_delta` (a few ulps).
_ROUNDING = 4.0 * sys.float_info.epsilon


def _gaussian_delta(ratio: float, epsilon: float) -> float:
    """Return an upper bound of δ(ε) of the Gaussian mechanism with σ/Δ = ``ratio`` [BW18]_.

    δ = Φ(U) − e^ε Φ(L), U = Δ/(2σ) − εσ/Δ, L = −Δ/(2σ) − εσ/Δ (Thm. 8), evaluated in log
    space so that neither e^ε overflows nor the difference of two tiny tails cancels, as
    Φ(U)·(1 − exp(ε + log Φ(L) − log Φ(U))). Every rounding is taken against privacy: U is
    raised and L lowered by the rounding of their terms, and the exponent lowered by that of
    the logarithms. Evaluated as it stands, where ε ≪ δ < 1e-16 the two log-CDFs agreed to the
    last bit and δ came out 0: ``analytic_gaussian_sigma(1, 1e-20, 1e-25)`` returned a σ whose
    true δ was 6e8 times the δ asked for. There the bound is conservative (a larger σ); where
    the exponent is well conditioned (every usual ε and δ) it moves δ by about 1e-15.
    """
    half, scaled = 0.5 / ratio, epsilon * ratio
    slack = _ROUNDING * (half + scaled)
    upper, lower = half - scaled + slack, -half - scaled - slack
    log_upper = float(special.log_ndtr(upper))
    if log_upper == -math.inf:  # δ <= Φ(upper) = 0; -inf - -inf was NaN, stopping the search
        return 0.0
    log_lower = float(special.log_ndtr(lower))
    exponent = epsilon + log_lower - log_upper
    exponent -= _ROUNDING * (epsilon + abs(log_lower) + abs(log_upper))
    return math.exp(log_upper) * -math.expm1(min(exponent, 0.0)) * (1.0 + _ROUNDING)


def _warn_if_large_delta(delta: float) -> None:
    if delta > LARGE_DELTA:
        warnings.warn(
            f"gaussian: delta={delta!r} is above {LARGE_DELTA:g}: delta is the probability "
            "that the guarantee fails outright (an (epsilon, delta)-DP release may publish a "
            "share delta of the records exactly); choose delta far below 1/(number of "
            "individuals), e.g. delta=1e-6",
            PrivacyLeakWarning,
            stacklevel=caller_stacklevel(),
        )


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    r"""Return the smallest σ making Gaussian noise (ε, δ)-DP: the analytic Gaussian mechanism.

    Balle and Wang [BW18]_ (Thm. 8) show that :math:`x + N(0, \sigma^2 I)` is
    (ε, δ)-differentially private for L2 sensitivity Δ if and only if

    .. math::

        \Phi\left(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\right)
        - e^{\varepsilon}\,\Phi\left(-\frac{\Delta}{2\sigma}
        - \frac{\varepsilon\sigma}{\Delta}\right) \le \delta .

    The left side decreases in σ, so the exact threshold is found by bisection on
    :math:`\log(\sigma/\Delta)` down to adjacent doubles. The left side is evaluated with the
    tails' logarithms (``scipy.special.log_ndtr``) and every rounding error bounded against
    privacy, so the returned σ satisfies the exact condition, not only its floating-point
    value (which cancelled to 0 where ε ≪ δ < 1e-16; there σ is now conservative).

    The classic calibration :math:`\sigma = \Delta\sqrt{2\ln(1.25/\delta)}/\varepsilon`
    ([DR14]_, Thm. A.1, see :func:`classic_gaussian_sigma`) is only proven for ε < 1 and is
    always larger than the analytic σ there; the analytic σ is valid for every ε > 0.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity Δ > 0.
    epsilon : float
        ε > 0 (any size).
    delta : float
        δ in (0, 1).

    Returns
    -------
    float
        The noise standard deviation σ (``inf`` if it exceeds the float range).

    Raises
    ------
    TypeError
        If a parameter is not a real number.
    geosynth.errors.InputError
        If a parameter is out of range, or σ underflows to 0 (a huge ε with a tiny
        sensitivity).

    References
    ----------
    .. [BW18] B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for Differential
       Privacy: Analytical Calibration and Optimal Denoising", ICML 2018.
    .. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014.

    Examples
    --------
    >>> from geosynth.dp.mechanisms import analytic_gaussian_sigma
    >>> round(analytic_gaussian_sigma(1.0, 1.0, 1e-5), 3)
    3.731
    """
    sensitivity = _check_sensitivity(sensitivity, "L2")
    epsilon = check_epsilon(epsilon)
    delta = _check_delta(delta)
    lo = hi = 1.0  # bracket of sigma / sensitivity: delta(lo) > target >= delta(hi)
    while _gaussian_delta(hi, epsilon) > delta:
        hi *= 2.0
    while _gaussian_delta(lo, epsilon) <= delta:
        lo /= 2.0
    for _ in range(2000):
        mid = math.sqrt(lo * hi)
        if not lo < mid < hi:
            break
        if _gaussian_delta(mid, epsilon) <= delta:
            hi = mid
        else:
            lo = mid
    sigma = hi * sensitivity
    if sigma == 0.0:  # the ratio times a tiny sensitivity underflows; sigma / 0 raised below
        raise InputError(
            f"epsilon={epsilon!r} with sensitivity={sensitivity!r} and delta={delta!r} gives a "
            f"noise standard deviation sigma of {hi:.3g} * sensitivity, which underflows to 0; "
            "use a smaller epsilon or a larger sensitivity"
        )
    while _gaussian_delta(sigma / sensitivity, epsilon) > delta:  # undo rounding of the product
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def classic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    r"""Return the classic Gaussian-mechanism σ = Δ √(2 ln(1.25/δ)) / ε (valid for ε < 1 only).

    This is [DR14]_ Thm. A.1, kept for comparison: :func:`analytic_gaussian_sigma` is smaller
    and is what :func:`gaussian` uses.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity Δ > 0.
    epsilon : float
        ε in (0, 1); the theorem does not hold for ε ≥ 1.
    delta : float
        δ in (0, 1).

    Returns
    -------
    float
        σ.

    Raises
    ------
    geosynth.errors.InputError
        If ``epsilon >= 1`` or a parameter is out of range.

    References
    ----------
    .. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy",
       2014, Appendix A.
    """
    sensitivity = _check_sensitivity(sensitivity, "L2")
    epsilon = check_epsilon(epsilon)
    delta = _check_delta(delta)
    if epsilon >= 1.0:
        raise InputError(
            f"epsilon must be < 1 for the classic Gaussian bound, got {epsilon!r}; use "
            "analytic_gaussian_sigma(), which is valid for every epsilon"
        )
    # log(1.25) - log(delta), not log(1.25 / delta): the quotient overflowed to inf (and sigma
    # with it) for a subnormal delta.
    return sensitivity * math.sqrt(2.0 * (math.log(1.25) - math.log(delta))) / epsilon


def gaussian(
    x: ArrayLike,
    *,
    sensitivity: float,
    epsilon: float,
    delta: float,
    seed: SeedLike = None,
    accountant: _Spender | None = None,
    label: str | None = None,
) -> float | NDArray[np.float64]:
    r"""Add Gaussian noise calibrated by the analytic Gaussian mechanism ((ε, δ)-DP).

    Releases :math:`x + N(0, \sigma^2 I)` with
    ``sigma = analytic_gaussian_sigma(sensitivity, epsilon, delta)``, the smallest σ that
    makes the release (ε, δ)-DP for L2 sensitivity Δ [BW18]_. It is smaller than the classic
    :math:`\Delta\sqrt{2\ln(1.25/\delta)}/\varepsilon` of [DR14]_ (Thm. A.1), which moreover
    only holds for ε < 1.

    Parameters
    ----------
    x : float or array_like of float
        Confidential statistic(s); an array is noised as one vector.
    sensitivity : float
        L2 sensitivity Δ > 0 of the whole vector.
    epsilon : float
        ε > 0.
    delta : float
        δ in (0, 1).
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` for a release (OpenDP's exact sampler). Anything else draws reproducible NumPy
        normals and warns with :class:`PrivacyLeakWarning`: tests only.
    accountant : geosynth.dp.accountant.Accountant, optional
        Charged ``(epsilon, delta)`` before noise is drawn.
    label : str, optional
        Ledger label for the accountant (default ``"gaussian"``).

    Returns
    -------
    float or numpy.ndarray
        A float for scalar ``x``, else a float64 array of the shape of ``x``.

    Raises
    ------
    TypeError
        If ``x`` is not real-valued or a parameter has the wrong type.
    geosynth.errors.InputError
        If ``x`` has NaN/inf or values beyond float max / 4, integers beyond 2**53 that
        float64 does not hold, or values where float64's spacing exceeds ``sensitivity``; a
        parameter is out of
        range, or σ exceeds :data:`MAX_FLOAT_NOISE_SCALE`. Nothing is charged then.
    geosynth.errors.MemoryLimitError
        The 8-byte copy of the values would exceed :data:`MAX_VALUE_BYTES`; nothing is charged.
    geosynth.errors.BudgetExceededError
        From ``accountant``, before any noise is drawn.

    Warns
    -----
    geosynth.errors.PrivacyLeakWarning
        When ``delta`` exceeds :data:`LARGE_DELTA` (1e-3), or ``seed`` is given.

    Notes
    -----
    OpenDP's ``make_gaussian`` samples a *discrete* Gaussian (Canonne, Kamath and Steinke
    2020) on the grid :math:`2^{-1074}\mathbb{Z}` exactly and rounds the sum to the nearest
    double (post-processing). OpenDP accounts for it in zero-concentrated DP: it certifies
    :math:`\rho = \Delta^2/(2\sigma^2)`, which we check (nudging σ up by a few ulps if its
    upward rounding requires). The (ε, δ) claim rests on the exact privacy profile of the
    continuous Gaussian [BW18]_; on a grid of spacing :math:`2^{-1074}`, vastly finer than σ,
    the discrete Gaussian's profile differs from it by far less than double precision, so no
    warning is issued. (OpenDP's generic zCDP → (ε, δ) conversion would certify a larger δ,
    because it holds for every ρ-zCDP mechanism, not just the Gaussian.)

    References
    ----------
    .. [BW18] B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for Differential
       Privacy: Analytical Calibration and Optimal Denoising", ICML 2018.
    .. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014.

    Examples
    --------
    >>> from geosynth.dp.mechanisms import gaussian
    >>> noisy = gaussian([10.0, 20.0], sensitivity=1.0, epsilon=1.0, delta=1e-6)
    """
    values, scalar, inexact = _as_real_array(x, "x")
    sensitivity = _check_sensitivity(sensitivity, "L2")
    epsilon = check_epsilon(epsilon)
    delta = _check_delta(delta)
    check_optional_str(label, "label")
    check_accountant(accountant)
    check_seed(seed)  # a bad seed is refused before the spend
    _check_float_values(values, "x", "gaussian")
    sigma = analytic_gaussian_sigma(sensitivity, epsilon, delta)
    _check_noise_scale(
        sigma, MAX_FLOAT_NOISE_SCALE, where="gaussian", sensitivity=sensitivity, epsilon=epsilon,
        what=f"noise standard deviation sigma (delta={delta!r})",
        reason="float64 noise can carry",
    )
    calibrated = _check_representable(values, inexact, sensitivity, "x", "gaussian",
                                      converted=_rounds_on_conversion(x), norm="l2")
    sigma *= calibrated / sensitivity  # the analytic σ is proportional to Δ
    sensitivity = calibrated
    _warn_if_large_delta(delta)

    if seed is None:
        dp = _opendp()
        domain, distance = _float_vector_space(dp, "l2")
        rho = _float_at_most(Fraction(sensitivity) ** 2 / (2 * Fraction(sigma) ** 2))
        measurement = _calibrate(
            lambda s: dp.m.make_gaussian(domain, distance, scale=s, k=_FLOAT_GRANULARITY_K),
            sigma,
            sensitivity,
            rho,
            "gaussian",
        )
        _spend(accountant, epsilon, delta, label, "gaussian")
        noisy = _release_shape(measurement(values.ravel().tolist()), values.shape, float)
    else:
        _spend(accountant, epsilon, delta, label, "gaussian")
        rng = private_generator(seed, where="gaussian")
        noisy = values + rng.normal(0.0, sigma, size=values.shape)
    _check_finite_output(noisy, "gaussian")
    return float(noisy) if scalar else noisy


# --------------------------------------------------------------------------------------------
# Exponential
# --------------------------------------------------------------------------------------------


def exponential(
    candidates: Sequence[_C] | NDArray[Any],
    scores: ArrayLike,
    *,
    sensitivity: float,
    epsilon: float,
    seed: SeedLike = None,
    accountant: _Spender | None = None,
    label: str | None = None,
) -> _C:
    r"""Choose one candidate with probability ∝ exp(ε q(r) / (2Δq)): the exponential mechanism.

    The exponential mechanism [MT07]_ ([DR14]_ Sec. 3.4) selects candidate :math:`r` with

    .. math:: P(r) = \frac{\exp(\varepsilon q(r) / (2\Delta_q))}
              {\sum_{r'} \exp(\varepsilon q(r') / (2\Delta_q))},

    where :math:`q(r)` is the score (utility) of ``r`` on the confidential data and
    :math:`\Delta_q` bounds how much any single score can change when one individual is added
    or removed. It is ε-DP.

    Parameters
    ----------
    candidates : sequence
        The possible outputs (any objects; public, not data-dependent).
    scores : array_like of float
        One finite score per candidate, higher is better.
    sensitivity : float
        Δq > 0, the largest change of any one score between neighbouring datasets.
    epsilon : float
        ε > 0.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` for a release (OpenDP). Anything else draws the choice reproducibly with
        NumPy (Gumbel-max: the arg max of ``scores / scale`` plus NumPy Gumbel noise) and
        warns with :class:`PrivacyLeakWarning`: tests only.
    accountant : geosynth.dp.accountant.Accountant, optional
        Charged ``(epsilon, 0)`` before the choice is drawn.
    label : str, optional
        Ledger label for the accountant (default ``"exponential"``).

    Returns
    -------
    object
        The chosen element of ``candidates``.

    Raises
    ------
    TypeError
        If ``candidates`` is not a sequence, ``scores`` is not numeric, or a parameter has the
        wrong type.
    geosynth.errors.InputError
        If there are no candidates, ``candidates`` and ``scores`` differ in length, a score is
        NaN/inf, an integer beyond 2**53 or where float64's spacing exceeds ``sensitivity``
        (as for :func:`laplace`), ``epsilon`` / ``sensitivity`` is not finite and > 0, or the
        Gumbel scale
        ``2 * sensitivity / epsilon`` is 0 or exceeds :data:`MAX_FLOAT_NOISE_SCALE`.
    geosynth.errors.MemoryLimitError
        The 8-byte copy of the values would exceed :data:`MAX_VALUE_BYTES`; nothing is charged.
    geosynth.errors.BudgetExceededError
        From ``accountant``, before anything is drawn.

    Notes
    -----
    OpenDP's report-noisy-max ``make_noisy_max`` with the ``zero_concentrated_divergence``
    measure adds Gumbel noise of scale :math:`s` to each score and reports the arg max, sampled
    exactly with lazily refined arbitrary-precision Gumbel variables. By the Gumbel-max trick
    its selection probabilities are exactly :math:`\propto e^{q(r)/s}`, so we pass
    :math:`s = 2\Delta_q/\varepsilon`. OpenDP expresses the loss of this mechanism in zCDP as
    :math:`\rho = \varepsilon^2/8` (the bound of Cesar and Rogers 2021 for the exponential
    mechanism); we check that OpenDP's map gives at most that, which is equivalent to
    :math:`2\Delta_q/s \le \varepsilon`, and the pure ε-DP of this distribution is [MT07]_.
    Do not use OpenDP's ``max_divergence`` variant (nor the deprecated
    ``make_report_noisy_max_gumbel``, which in 0.16 maps to it): it adds exponential noise
    (permute-and-flip), an ε-DP selection rule with *different* probabilities.

    References
    ----------
    .. [MT07] F. McSherry and K. Talwar, "Mechanism Design via Differential Privacy",
       FOCS 2007.
    .. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014.

    Examples
    --------
    >>> from geosynth.dp.mechanisms import exponential
    >>> colour = exponential(["brown", "blond", "red"], [2, 0, 1], sensitivity=1, epsilon=1.0)
    """
    if isinstance(candidates, str | bytes) or not (
        isinstance(candidates, Sequence | np.ndarray) or hasattr(candidates, "iloc")
    ):  # a dict was indexed by key (KeyError), a set not at all
        raise InputTypeError(
            "candidates must be a sequence (list, tuple or array) of possible outputs, "
            f"got {type(candidates).__name__}"
        )
    if isinstance(candidates, np.ndarray) and candidates.ndim == 0:  # len() raised TypeError
        raise InputTypeError(
            "candidates must be a sequence (list, tuple or array) of possible outputs, got a "
            "0-dimensional array; wrap a single candidate in a list"
        )
    _check_copy_bytes(scores, "scores")
    score_array = check_real_array(scores, "scores")
    if score_array.ndim != 1:
        raise InputError(
            f"scores must be one-dimensional (one score per candidate), got shape "
            f"{score_array.shape}"
        )
    n_candidates = len(candidates)
    if n_candidates == 0:
        raise InputError("candidates is empty; pass at least one possible output")
    if score_array.size != n_candidates:
        raise InputError(
            f"candidates and scores must have the same length, got {n_candidates} candidates "
            f"and {score_array.size} scores; pass one score per candidate"
        )
    bad = ~np.isfinite(score_array)
    if bad.any():
        raise InputError(
            f"scores has {int(bad.sum())} NaN or infinite values at "
            f"{_describe_positions(bad)}; give every candidate a finite score"
        )
    sensitivity = _check_sensitivity(sensitivity, "absolute")
    epsilon = check_epsilon(epsilon)
    check_optional_str(label, "label")
    check_accountant(accountant)
    check_seed(seed)  # a bad seed is refused before the spend
    _check_noise_scale(
        2.0 * sensitivity / epsilon, MAX_FLOAT_NOISE_SCALE, where="exponential",
        sensitivity=sensitivity, epsilon=epsilon, what="Gumbel scale 2*sensitivity/epsilon",
        smallest=2.0 * sensitivity / MAX_FLOAT_NOISE_SCALE, reason="float64 scores can carry",
    )
    # Scores near 2**60 are 256 apart as doubles: a score that one record moves by 1 moved by
    # 0 or 256, and the choice went from a coin flip to certain (ε = ∞); laplace refused them.
    sensitivity = _check_representable(score_array, inexact_integers(scores), sensitivity,
                                       "scores", "exponential",
                                       converted=_rounds_on_conversion(scores), norm="linf")
    scale = 2.0 * sensitivity / epsilon
    low, high = EXPONENTIAL_EPSILON
    if not low <= epsilon <= high:  # ρ = ε²/8 underflowed to 0 (ZeroDivisionError) or overflowed
        raise InputError(
            f"exponential: epsilon={epsilon!r} is outside [{low:g}, {high:g}], where its privacy "
            "loss in zCDP (rho = epsilon**2 / 8) is a float64 OpenDP can certify; a smaller "
            "epsilon gives a uniform choice and a larger one the best-scored candidate, so "
            "give an epsilon in that range"
        )

    if seed is None:
        dp = _opendp()
        domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
        distance = dp.linf_distance(T=float, monotonic=False)
        rho = _float_at_most(Fraction(epsilon) ** 2 / 8)
        measurement = _calibrate(
            lambda s: dp.m.make_noisy_max(
                domain, distance, dp.zero_concentrated_divergence(), scale=s
            ),
            scale,
            sensitivity,
            rho,
            "exponential",
        )
        _spend(accountant, epsilon, 0.0, label, "exponential")
        index = int(measurement(score_array.tolist()))
    else:
        _spend(accountant, epsilon, 0.0, label, "exponential")
        rng = private_generator(seed, where="exponential")
        # Gumbel-max trick, as OpenDP: argmax(q / scale + Gumbel) ~ softmax(q / scale). The
        # maximum is subtracted first (softmax does not change): q / scale overflowed to inf
        # for scores near 1.7e308, and ties of inf always went to the first candidate.
        shifted = (score_array - score_array.max()) / scale
        index = int(np.argmax(shifted + rng.gumbel(size=n_candidates)))
    if hasattr(candidates, "iloc"):  # pandas Series / Index: by position, not by label
        return candidates.iloc[index]
    return candidates[index]
