"""Numba samplers for the scalar full conditionals of the Paiva model.

Every conditional belongs to one log-concave family (see :mod:`geosynth.samplers.family`)::

    log f(x) = a·x − Σ_j w_j·exp(z_j·x) − q·(x − m)²/2

and is drawn either by adaptive rejection sampling (:mod:`.ars`, independent exact draws) or by
slice sampling (:mod:`.slice`, a Markov transition). :func:`sample_conditional` is the
convenience entry point. The Gibbs engine calls the kernels directly with explicit random
streams from :func:`make_streams`: :func:`~geosynth.samplers.tangent.tangent_draw` (exact draws
from tangent envelopes, :func:`~geosynth.samplers.ars.ars_draw_single` as their fallback) for
the one-term conditionals, :func:`ars_draw` or
:func:`~geosynth.samplers.slice.slice_step_unchecked` for β, and
:func:`~geosynth.samplers.newton_mh.newton_mh_step` under ``sampler="mh"``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from geosynth._validation import check_choice, check_int, check_real, check_real_array
from geosynth.errors import InputError, SamplerError
from geosynth.samplers.ars import ars_draw, ars_sample, new_workspace
from geosynth.samplers.family import STATUS_MESSAGES, STATUS_OK, log_density
from geosynth.samplers.libm import bind_glibc_math
from geosynth.samplers.rng import make_streams
from geosynth.samplers.slice import slice_sample, slice_step

# Before any kernel of the package is compiled or loaded (importing a module links none).
bind_glibc_math()

__all__ = [
    "sample_conditional",
    "make_streams",
    "ars_draw",
    "slice_step",
    "new_workspace",
    "log_density",
    "MAX_SAMPLE_SIZE",
    "MAX_SLICE_TRANSITIONS",
]


#: The most draws one :func:`sample_conditional` call returns (800 MB of float64).
MAX_SAMPLE_SIZE = 10**8
#: The most slice transitions (``size × thin``) one call runs: the default thin at the largest
#: size, a few minutes (thin=10**9 for one draw ran for minutes, 2**70 failed in numba).
MAX_SLICE_TRANSITIONS = 5 * MAX_SAMPLE_SIZE


def sample_conditional(
    a: float,
    w,
    z,
    m: float,
    q: float,
    size: int = 1,
    method: Literal["ars", "slice"] = "ars",
    seed=None,
    thin: int = 5,
) -> np.ndarray:
    """Draw from ``f(x) ∝ exp(a·x − Σ_j w_j·exp(z_j·x) − q·(x − m)²/2)``.

    Parameters
    ----------
    a : float
        Linear coefficient: the sum of counts (times Z̄ for a β conditional).
    w : array_like of float, shape (J,)
        Non-negative weights of the exponential terms.
    z : array_like of float, shape (J,) or scalar
        Exponents of the exponential terms (1 for μ, α, θ, φ, ε; Z̄ for β). A scalar is
        broadcast to the shape of ``w``.
    m : float
        Prior mean (ICAR neighbour mean, or 0).
    q : float
        Prior precision, ``q >= 0``.
    size : int, default 1
        Number of draws.
    method : {"ars", "slice"}, default "ars"
        ``"ars"`` returns independent exact draws (Gilks & Wild 1992). ``"slice"`` returns the
        states of a slice-sampling chain (Neal 2003, doubling procedure), ``thin`` transitions
        apart.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Seed of the random stream; the same seed gives the same draws.
    thin : int, default 5
        Slice transitions between returned draws (ignored by ARS).

    Returns
    -------
    numpy.ndarray of float64, shape (size,)

    Raises
    ------
    TypeError
        If ``a``, ``m`` or ``q`` is not a real number, ``size`` or ``thin`` not an int (a bool,
        a float, None, a string, ...), or ``w``/``z`` not numeric (also booleans, strings or
        dates); the message names it.
    InputError
        If a value is out of range: ``a``, ``m``, ``q``, some ``w_j`` or ``z_j`` NaN or
        infinite, ``q < 0`` or some ``w_j < 0`` (not log-concave), ``w`` and ``z`` of
        different shapes, ``size < 0`` or above :data:`MAX_SAMPLE_SIZE`, ``thin < 1``, for
        ``method="slice"`` ``size × thin`` above :data:`MAX_SLICE_TRANSITIONS`, or a
        ``method`` other than ``"ars"``/``"slice"`` (an InputTypeError if it is no str, e.g.
        an array). The message
        names the parameter (and the index ``j``).
    SamplerError
        If the density is improper (``q = 0`` and a tail that does not vanish), or a sampler
        exhausts its budget. Nothing loops forever.

    Examples
    --------
    >>> from geosynth.samplers import sample_conditional
    >>> x = sample_conditional(a=12.0, w=[3.0, 1.5], z=1.0, m=0.0, q=1.0, size=1000, seed=1)
    >>> x.shape
    (1000,)
    """
    a = _finite(a, "a", "the sum of the counts")
    m = _finite(m, "m", "the prior mean")
    q = _finite(q, "q", "the prior precision: 0 for a flat prior")
    if q < 0.0:
        raise InputError(f"q must be >= 0, got {q!r}: it is the prior precision (1/variance); "
                         "pass q=0 for a flat prior")
    w_arr, z_arr = _as_terms(w, z)
    method = check_choice(method, "method", ("ars", "slice"))
    size = check_int(size, "size", 0, what="number of draws")
    if size > MAX_SAMPLE_SIZE:  # 10**12 failed in numba with a bare MemoryError
        raise InputError(f"size must be at most {MAX_SAMPLE_SIZE:,} draws, got {size:,}; draw "
                         "in batches, each with its own seed")
    thin = check_int(thin, "thin", 1, what="slice transitions between draws")
    if method == "slice" and size * thin > MAX_SLICE_TRANSITIONS:
        raise InputError(f"size × thin must be at most {MAX_SLICE_TRANSITIONS:,} slice "
                         f"transitions, got {size:,} × {thin:,}; pass a smaller thin (a slice "
                         "chain on a log-concave density mixes within a few transitions) or "
                         "draw in batches, each with its own seed")
    state = make_streams(seed, 1)[0]
    args = (a, w_arr, z_arr, m, q)
    if method == "ars":
        draws, status = ars_sample(size, *args, state)
    else:
        draws, status = slice_sample(size, *args, state, thin)
    if status != STATUS_OK:
        raise SamplerError(f"sample_conditional(method={method!r}): {STATUS_MESSAGES[status]}")
    return draws


def _finite(value: Any, name: str, what: str) -> float:
    """``value`` as a float, after checking that it is a finite real number."""
    number = check_real(value, name)
    if not math.isfinite(number):
        raise InputError(f"{name} must be a finite number, got {number!r} ({name} is {what}); "
                         "check it for NaN or an overflow")
    return number


def _as_terms(w, z) -> tuple[np.ndarray, np.ndarray]:
    w_arr = np.ascontiguousarray(np.atleast_1d(check_real_array(w, "w")))
    z_arr = check_real_array(z, "z")
    if z_arr.ndim == 0:
        z_arr = np.full_like(w_arr, float(z_arr))
    z_arr = np.ascontiguousarray(np.atleast_1d(z_arr))
    if w_arr.ndim != 1 or z_arr.shape != w_arr.shape:
        raise InputError(
            f"w and z must be 1-d arrays of the same length (or z a scalar), got shapes "
            f"{w_arr.shape} and {z_arr.shape}"
        )
    bad = np.flatnonzero(~np.isfinite(w_arr) | (w_arr < 0.0))
    if bad.size:
        j = int(bad[0])
        why = ("a negative weight makes the density not log-concave" if w_arr[j] < 0.0
               else "check it for NaN or an overflow")
        raise InputError(
            f"w[{j}] must be finite and >= 0, got {float(w_arr[j])!r}: the weights are "
            f"exponentials (exp of the rest of the linear predictor); {why}"
        )
    bad = np.flatnonzero(~np.isfinite(z_arr))
    if bad.size:
        j = int(bad[0])
        raise InputError(f"z[{j}] must be finite, got {float(z_arr[j])!r}; check it for NaN or "
                         "an overflow")
    return w_arr, z_arr
