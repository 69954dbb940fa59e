"""Normalise the ``seed`` argument accepted by every random function."""

from __future__ import annotations

import numpy as np

__all__ = ["as_generator", "spawn_seeds", "SeedLike"]

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


def spawn_seeds(seed: SeedLike, n: int) -> list[np.random.SeedSequence]:
    """Return ``n`` independent child seeds of ``seed`` (one per release or task).

    Work item ``k`` draws with ``numpy.random.default_rng(spawn_seeds(seed, n)[k])``, so its
    randomness does not depend on the order in which items run (or on which machine).

    Parameters
    ----------
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` uses fresh OS entropy; a Generator is advanced to derive the parent seed.
    n : int
        Number of children.

    Returns
    -------
    list of numpy.random.SeedSequence
    """
    if isinstance(seed, np.random.Generator):
        seed = np.random.SeedSequence(seed.integers(0, 2**63, size=2).tolist())
    elif not isinstance(seed, np.random.SeedSequence):
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise TypeError(
                f"seed must be None, an int, a numpy SeedSequence or a numpy Generator, "
                f"got {type(seed).__name__}"
            )
        seed = np.random.SeedSequence(seed)
    return seed.spawn(n)
