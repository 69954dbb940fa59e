"""How heavy-noise DP fits mix: the slowest scalars, and the two modes of a field's precision.

Data: the thesis scenario (Nunes 2018, §3.1; ``paiva_scenario(n=5000, seed=1)``) on a 40 × 40
lattice, attributes y, x1, x2 (12 combinations, 0.26 records a count), released with
``dp_counts(..., epsilon, seed=s)`` (ε = 0.5: discrete Laplace noise of sd 2.8) and fitted by
the DP default model (:func:`geosynth.dp.dp_model`) with 2 chains × 2,000 sweeps (500 burn-in,
chain seed s).

One row per noise seed: seconds of the fit, the minimum bulk ESS and maximum R-hat over μ, the
α's and the τ's (arviz's definitions, by
:func:`geosynth.model.diagnostics.convergence_diagnostics`), the slowest scalar, the share of
each chain's kept draws where the slowest field precision τ_φ is above 1 (``flat share``; the
field is then flat, else rough: ``bench/RESULTS.md``, 2026-11-29, twenty-first session), and
Σ|fitted − true| of the combinations' posterior mean totals. A precision whose chains disagree
on the flat share has not mixed between its two modes.

Run: ``python -m bench dp_mixing`` (``BENCH_DP_MIXING_SEEDS=1,2,3``,
``BENCH_DP_MIXING_EPSILON=0.5``, ``BENCH_DP_MIXING_SIDE=40``, ``BENCH_DP_MIXING_SWEEPS=2000``).
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings
from dataclasses import dataclass

import numpy as np

from bench._stats import seed_list
from bench.bench_pymc import scenario_counts
from geosynth.dp import dp_counts, dp_model
from geosynth.errors import PrivacyLeakWarning
from geosynth.model.diagnostics import convergence_diagnostics

RECORDS, SCENARIO_SEED = 5000, 1
FLAT = 1.0  # a field precision above this is the flat mode (rough ≈ 0.2, flat ≈ 6–8)


@dataclass(frozen=True)
class MixingRow:
    """One noise seed's fit: time, the slowest scalar and how its precision's modes mix."""

    seed: int
    seconds: float
    min_ess: float
    worst: str
    max_rhat: float
    flat_share: tuple[float, ...]  # of the slowest τ_φ's kept draws, per chain
    total_error: float


def release_counts(side: int):
    """The exact counts of the thesis scenario on a ``side`` × ``side`` lattice, on its domain."""
    return scenario_counts(side * side, records=RECORDS, seed=SCENARIO_SEED,
                           levels={"y": [0, 1], "x1": [1, 2], "x2": [1, 2, 3]})


def flat_share(draws: np.ndarray, threshold: float = FLAT) -> tuple[float, ...]:
    """Share of each chain's draws (rows of ``draws``) above ``threshold``."""
    return tuple(float(s) for s in (np.asarray(draws) > threshold).mean(axis=1))


def measure(counts, epsilon: float, seed: int, sweeps: int) -> MixingRow:
    """Release ``counts`` with ε-DP noise drawn at ``seed``, fit the DP default, summarise."""
    with warnings.catch_warnings():
        # The bench draws the noise with a seed on purpose, to repeat a release.
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        noisy = dp_counts(counts, epsilon, seed=seed)
        start = time.perf_counter()
        fit = dp_model().fit(noisy, n_iter=sweeps, burn_in=sweeps // 4, chains=2, seed=seed,
                             progress=False)
    seconds = time.perf_counter() - start
    names = fit.scalar_names
    diagnostics = convergence_diagnostics(fit.scalars)
    ess = dict(zip(names, diagnostics.ess_bulk, strict=True))
    worst = min(names, key=ess.__getitem__)
    slowest_field = min((name for name in names if name.startswith("tau_phi")),
                        key=ess.__getitem__)
    totals = fit.posterior_mean_lambda().sum(axis=0)
    return MixingRow(
        seed=seed, seconds=seconds, min_ess=float(ess[worst]), worst=worst,
        max_rhat=float(diagnostics.r_hat.max()),
        flat_share=flat_share(fit.scalar(slowest_field)),
        total_error=float(np.abs(totals - counts.counts.sum(axis=0)).sum()),
    )


def format_table(rows: list[MixingRow], side: int, epsilon: float, sweeps: int) -> str:
    """The rows as a Markdown table with the run's settings."""
    lines = [
        f"DP default model, thesis scenario on {side} × {side} cells, ε = {epsilon}, "
        f"2 chains × {sweeps} sweeps ({sweeps // 4} burn-in)",
        "",
        "| noise seed | fit s | min ESS (where) | max R-hat | flat share of the slowest "
        "τ_φ, per chain | Σ\\|fitted − true\\| totals |",
        "| ---: | ---: | --- | ---: | --- | ---: |",
    ]
    for row in rows:
        shares = " / ".join(f"{share:.2f}" for share in row.flat_share)
        lines.append(f"| {row.seed} | {row.seconds:.1f} | {row.min_ess:.0f} (`{row.worst}`) | "
                     f"{row.max_rhat:.3f} | {shares} | {row.total_error:,.0f} |")
    return "\n".join(lines)


def _env_number(name: str, default: str, kind: type, low: float, what: str):
    text = os.environ.get(name, default)
    try:
        value = kind(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= low):
        raise SystemExit(f"{name}={text!r}: give {what}")
    return value


def parse_options() -> tuple[tuple[int, ...], float, int, int]:
    """Seeds, ε, lattice side and sweeps from the ``BENCH_DP_MIXING_*`` environment variables.

    Raises
    ------
    SystemExit
        Naming the variable and what it takes (``python -m bench`` calls this before any
        benchmark runs).
    """
    try:
        seeds = seed_list(os.environ.get("BENCH_DP_MIXING_SEEDS", "1,2,3"))
    except argparse.ArgumentTypeError as error:
        raise SystemExit(f"BENCH_DP_MIXING_SEEDS: {error}") from None
    epsilon = _env_number("BENCH_DP_MIXING_EPSILON", "0.5", float, math.ulp(0.0),
                          "a finite ε > 0, e.g. 0.5")
    side = _env_number("BENCH_DP_MIXING_SIDE", "40", int, 2, "an integer side >= 2, e.g. 40")
    sweeps = _env_number("BENCH_DP_MIXING_SWEEPS", "2000", int, 200,
                         "an integer >= 200 of sweeps per chain, e.g. 2000")
    return seeds, epsilon, side, sweeps


def run() -> str:
    seeds, epsilon, side, sweeps = parse_options()
    counts = release_counts(side)
    measure(counts, epsilon, seeds[0], 200)  # compile (or load) the kernels outside the timings
    rows = [measure(counts, epsilon, seed, sweeps) for seed in seeds]
    return format_table(rows, side, epsilon, sweeps)


if __name__ == "__main__":
    print(run())
