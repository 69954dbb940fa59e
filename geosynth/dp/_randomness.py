"""Randomness for differentially private releases.

A known seed lets an intruder replay the noise of a release and subtract it, so every random draw
that touches confidential data in DP mode comes from fresh OS entropy. A ``seed`` is accepted only
so tests can be reproducible; it triggers a :class:`~geosynth.errors.PrivacyLeakWarning` and must
never be used for a published release (nor written into one).
"""

from __future__ import annotations

import secrets
import warnings

import numpy as np

from geosynth._messages import caller_stacklevel
from geosynth._random import SeedLike, as_generator, check_seed
from geosynth.errors import PrivacyLeakWarning
from geosynth.synth.release import NOISE_OS_ENTROPY, NOISE_SEEDED

__all__ = ["after_noise_generator", "noise_source", "private_generator", "private_seed",
           "warn_seeded"]


def noise_source(seed: SeedLike) -> str:
    """Return what a release records of its DP noise's source (``ReleaseInfo.noise``).

    Parameters
    ----------
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        The ``seed`` the noise was drawn with.

    Returns
    -------
    str
        ``"os-entropy"`` for ``None``, else ``"seeded"``: the release then states its ε without
        having it, and its file says so.
    """
    return NOISE_OS_ENTROPY if seed is None else NOISE_SEEDED


def warn_seeded(where: str) -> None:
    """Issue the :class:`PrivacyLeakWarning` for a seeded DP computation in ``where``.

    The warning points at the first line outside geosynth (the public function that was given
    the seed may be reached through others, e.g. ``geosynth.synthesize(counts, epsilon=...)``).

    Parameters
    ----------
    where : str
        Name of the calling function, first in the message.
    """
    warnings.warn(
        f"{where}: a seed was given, so the privacy noise is reproducible and the output is NOT "
        "differentially private (anyone who knows the seed can replay and remove the noise). "
        "Use seeds only in tests; omit seed for a release.",
        PrivacyLeakWarning,
        stacklevel=caller_stacklevel(),
    )


def private_generator(seed: SeedLike = None, *, where: str = "DP release") -> np.random.Generator:
    """Return a NumPy generator fed by fresh OS entropy, or by ``seed`` with a warning.

    Parameters
    ----------
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` (the only choice for a release): a generator seeded from ``secrets``/OS entropy.
        Anything else: that generator, after a :class:`PrivacyLeakWarning`.
    where : str
        Name of the calling function, for the warning.

    Returns
    -------
    numpy.random.Generator
    """
    if seed is None:
        return np.random.default_rng(np.random.SeedSequence(secrets.randbits(128)))
    seed = check_seed(seed)
    warn_seeded(where)
    return as_generator(seed)


def after_noise_generator(noise: np.random.Generator, seed: SeedLike) -> np.random.Generator:
    """Return the generator of what follows a mechanism's noise: shuffles, placed points.

    Points placed within their cells publish the generator's outputs (a point's offset in a
    box of public bounds is a uniform draw, to 53 bits): drawn from the generator of the noise,
    they showed the state that had drawn it, and PCG64 is not a cryptographic generator. The
    noise's generator is therefore never used for what is published after it.

    Parameters
    ----------
    noise : numpy.random.Generator
        The generator that drew the noise (:func:`private_generator`).
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        The noise's ``seed``: ``None`` gives a generator of fresh OS entropy, independent of
        ``noise``; a seed (tests only, warned about already) a child spawned from ``noise``,
        so that the same seed gives the same releases.

    Returns
    -------
    numpy.random.Generator
    """
    if seed is None:
        return np.random.default_rng(np.random.SeedSequence(secrets.randbits(128)))
    return noise.spawn(1)[0]


def private_seed(seed: SeedLike = None, *, where: str = "DP release") -> int:
    """Return an integer seed for a numba kernel: fresh OS entropy, or ``seed`` with a warning.

    Parameters
    ----------
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` draws 63 random bits from the OS; an int is returned after a
        :class:`PrivacyLeakWarning`; a Generator or SeedSequence gives 63 bits drawn from it.
    where : str
        Name of the calling function, for the warning.

    Returns
    -------
    int

    Raises
    ------
    TypeError, geosynth.errors.InputError
        As :func:`geosynth._random.check_seed` (a bool, a float, a string, a negative int).
    """
    if seed is None:
        return secrets.randbits(63)
    seed = check_seed(seed)
    warn_seeded(where)
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, 2**63 - 1))
    if isinstance(seed, np.random.SeedSequence):
        return int(seed.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
    return int(seed)
