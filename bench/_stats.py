"""Seeds and statistics shared by the benchmarks that repeat a run over seeds."""

from __future__ import annotations

import argparse

import numpy as np


def seed_list(text: str) -> tuple[int, ...]:
    """Parse ``--seeds``: distinct comma-separated integers >= 0 (an argparse ``type``)."""
    try:
        seeds = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"seeds are comma-separated integers, got {text!r}") from None
    if not seeds or any(x < 0 for x in seeds) or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"seeds are distinct integers >= 0, got {text!r}")
    return seeds


def ratio_of_means(rates, base_rates) -> tuple[float, float]:
    """mean(rates) / mean(base_rates) and its standard error by the delta method.

    Each list holds one tool's ESS per second over independent runs (seeds); the two tools'
    runs pair nothing, so the squared relative errors of the two means add. A list of one run
    contributes no error term (its spread is unknown, not zero).

    Parameters
    ----------
    rates, base_rates : sequence of float
        The two tools' measurements.

    Returns
    -------
    tuple of (float, float)
        The ratio and its standard error.
    """
    a, b = np.asarray(rates, dtype=float), np.asarray(base_rates, dtype=float)
    ratio = a.mean() / b.mean()
    rel2 = sum(x.var(ddof=1) / (x.size * x.mean() ** 2) for x in (a, b) if x.size > 1)
    return float(ratio), float(ratio * np.sqrt(rel2))
