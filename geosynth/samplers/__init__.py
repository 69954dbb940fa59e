"""Numba samplers for the scalar full conditionals of the Paiva model.

Every conditional belongs to one log-concave family (see :mod:`geosynth.samplers.family`)::

    log f(x) = a·x − Σ_j w_j·exp(z_j·x) − q·(x − m)²/2

and is drawn either by adaptive rejection sampling (:mod:`.ars`, independent exact draws) or by
slice sampling (:mod:`.slice`, a Markov transition). :func:`sample_conditional` is the
convenience entry point; the Gibbs engine calls the kernels :func:`ars_draw` and
:func:`slice_step` directly with explicit random streams from :func:`make_streams`.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

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
]


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
        states of a slice-sampling chain (Neal 2003), ``thin`` transitions apart.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Seed of the random stream; the same seed gives the same draws.
    thin : int, default 5
        Slice transitions between returned draws (ignored by ARS).

    Returns
    -------
    numpy.ndarray of float64, shape (size,)

    Raises
    ------
    InputError
        If the arguments have the wrong shape or an invalid ``method``/``size``/``thin``.
    SamplerError
        If the density is invalid (NaN, inf, negative ``w`` or ``q``) or improper, or a sampler
        exhausts its budget. Nothing loops forever.

    Examples
    --------
    >>> from geosynth.samplers import sample_conditional
    >>> x = sample_conditional(a=12.0, w=[3.0, 1.5], z=1.0, m=0.0, q=1.0, size=1000, seed=1)
    >>> x.shape
    (1000,)
    """
    w_arr, z_arr = _as_terms(w, z)
    if method not in ("ars", "slice"):
        raise InputError(f"method must be 'ars' or 'slice', got {method!r}")
    if int(size) != size or size < 0:
        raise InputError(f"size must be a non-negative integer, got {size!r}")
    if int(thin) != thin or thin < 1:
        raise InputError(f"thin must be a positive integer, got {thin!r}")
    state = make_streams(seed, 1)[0]
    args = (float(a), w_arr, z_arr, float(m), float(q))
    if method == "ars":
        draws, status = ars_sample(int(size), *args, state)
    else:
        draws, status = slice_sample(int(size), *args, state, int(thin))
    if status != STATUS_OK:
        raise SamplerError(f"sample_conditional(method={method!r}): {STATUS_MESSAGES[status]}")
    return draws


def _as_terms(w, z) -> tuple[np.ndarray, np.ndarray]:
    w_arr = np.ascontiguousarray(np.atleast_1d(np.asarray(w, dtype=np.float64)))
    z_arr = np.asarray(z, dtype=np.float64)
    if z_arr.ndim == 0:
        z_arr = np.full_like(w_arr, float(z_arr))
    z_arr = np.ascontiguousarray(np.atleast_1d(z_arr))
    if w_arr.ndim != 1 or z_arr.shape != w_arr.shape:
        raise InputError(
            f"w and z must be 1-d arrays of the same length (or z a scalar), got shapes "
            f"{w_arr.shape} and {z_arr.shape}"
        )
    return w_arr, z_arr
