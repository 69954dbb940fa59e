"""Normalise the ``seed`` argument accepted by every random function."""

from __future__ import annotations

import numpy as np

__all__ = ["as_generator", "SeedLike"]

SeedLike = int | np.random.Generator | np.random.SeedSequence | None


def as_generator(seed: SeedLike = None) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``seed``.

    Parameters
    ----------
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` draws fresh OS entropy; an int or SeedSequence seeds a new PCG64 generator; a
        Generator is returned unchanged (so callers can thread one stream through several calls).

    Returns
    -------
    numpy.random.Generator
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, (int, np.integer, np.random.SeedSequence)):
        return np.random.default_rng(seed)
    raise TypeError(
        f"seed must be None, an int, a numpy SeedSequence or a numpy Generator, "
        f"got {type(seed).__name__}"
    )
