"""Normalise the ``seed`` argument accepted by every random function.

Every public function that draws random numbers takes ``seed`` and passes it through
:func:`check_seed` (directly, or via :func:`as_generator`, :func:`root_seed_sequence` or
:func:`geosynth.samplers.rng.make_streams`), so a bad seed is refused with one message naming
the parameter, wherever it is given.
"""

from __future__ import annotations

import numpy as np

from geosynth._validation import describe_value, int_hint, is_integer
from geosynth.errors import InputError, InputTypeError

__all__ = ["as_generator", "check_seed", "root_seed_sequence", "SeedLike"]

SeedLike = int | np.random.Generator | np.random.SeedSequence | None

_ALLOWED = "None, an int >= 0, a numpy SeedSequence or a numpy Generator"


def check_seed(seed: object, name: str = "seed") -> SeedLike:
    """Return ``seed`` unchanged after checking that it is a valid seed.

    Parameters
    ----------
    seed : object
        The value given for the parameter.
    name : str, default "seed"
        Name of the parameter, used in the error messages.

    Returns
    -------
    None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``seed`` itself (never converted, so valid seeds give exactly the same streams).

    Raises
    ------
    TypeError
        ``seed`` is a bool, a float, a string, a NumPy timedelta or any other type (the message
        names ``name`` and quotes no list or array).
    geosynth.errors.InputError
        ``seed`` is a negative integer.
    """
    if seed is None or isinstance(seed, np.random.Generator | np.random.SeedSequence):
        return seed
    if not is_integer(seed):
        hint = int_hint(seed, name, 0, 42)
        if isinstance(seed, str) and seed.strip().isdecimal():
            hint = f"; pass the number itself, {name}={int(seed.strip())}"
        raise InputTypeError(f"{name} must be {_ALLOWED}, got {describe_value(seed)}{hint}")
    if seed < 0:
        raise InputError(
            f"{name} must be {_ALLOWED}; got the negative int {int(seed)}: pass a non-negative "
            f"int such as {name}={abs(int(seed))}, or omit it for a fresh random seed"
        )
    return seed


def as_generator(seed: SeedLike = None, name: str = "seed") -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``seed``.

    Parameters
    ----------
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` draws fresh OS entropy; an int >= 0 or SeedSequence seeds a new PCG64 generator;
        a Generator is returned unchanged (so callers can thread one stream through several
        calls).
    name : str, default "seed"
        Name of the parameter in error messages.

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    TypeError, geosynth.errors.InputError
        As :func:`check_seed`.
    """
    seed = check_seed(seed, name)
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def root_seed_sequence(seed: SeedLike, name: str = "seed") -> np.random.SeedSequence:
    """Return the :class:`numpy.random.SeedSequence` that work items are spawned from.

    Parameters
    ----------
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` uses fresh OS entropy; a SeedSequence is copied (spawning from the copy
        leaves the caller's untouched, so the same SeedSequence gives the same streams every
        time, as an int does); a Generator is advanced to draw 126 bits of entropy (two draws
        below 2**63; the same draws as ever, so the same Generator gives the same streams).
    name : str, default "seed"
        Name of the parameter in error messages.

    Returns
    -------
    numpy.random.SeedSequence

    Raises
    ------
    TypeError, geosynth.errors.InputError
        As :func:`check_seed`.
    """
    seed = check_seed(seed, name)
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(seed.integers(0, 2**63, size=2).tolist())
    if isinstance(seed, np.random.SeedSequence):
        # spawn() advances n_children_spawned: spawning from the caller's object made a second
        # fit with the same SeedSequence draw other streams
        return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key,
                                      pool_size=seed.pool_size,
                                      n_children_spawned=seed.n_children_spawned)
    return np.random.SeedSequence(seed)
