"""ε-DP synthetic locations of the thesis scenario: risk and utility against ε.

Puts the ε-differentially private release pipeline (:func:`geosynth.dp.dp_release`: geometric
noise on every (cell, combination) count, a noise-aware fit, records drawn from the posterior)
next to the non-DP Paiva fit of the same model and the Naive baseline of Nunes (2018, §3.2), on
the thesis scenario (§3.1, n = 500, attributes y, x1, x2, no Z) and a 10×10 lattice, for
ε ∈ {0.5, 1, 2, 4, 8}. Utility: the L1 error of the synthetic cell totals, the matched distances
of Algorithm 1, quadrant coverage (§3.3) and the Ripley's L gap. This is our study, not a table
of a paper; the output is the "ε-DP synthetic locations" section of ``docs/results.md``.

Run from the repository root::

    python -m studies.epsilon_sweep [--quick] [--output FILE]

Runtime: 10-15 minutes on a 2-core machine with the defaults (one exact and fifteen
noise-aware fits of 8,000 sweeps, two chains each, at about a minute per ε-DP release);
``--quick`` (ε ∈ {1, 8}, one repeat, 400 sweeps) takes under half a minute after the one-off
numba compilation. The DP noise comes from fresh OS entropy, so the digits change from run to
run.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from geosynth.data import prepare
from geosynth.datasets import paiva_scenario
from geosynth.dp import dp_model, dp_release
from geosynth.evaluation import evaluate
from geosynth.lattice import Grid
from geosynth.synth import naive_synthesize, synthesize
from studies.common import QUICK_FIT, markdown_table, sweep_main

__all__ = ["EPSILONS", "DP_ATTRIBUTES", "epsilon_sweep", "epsilon_markdown", "main"]

COMMAND = "python -m studies.epsilon_sweep"

#: The privacy levels of the sweep.
EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
#: The scenario's categorical attributes (a DP release refuses continuous variables).
DP_ATTRIBUTES = ["y", "x1", "x2"]


def epsilon_sweep(
    n: int = 500,
    side: int = 10,
    epsilons: Sequence[float] = EPSILONS,
    repeats: int = 3,
    m: int = 5,
    n_iter: int = 8000,
    burn_in: int = 2000,
    thin: int = 6,
    n_quadrants: int = 1000,
    seed: int = 2018,
    dp_seed: int | None = None,
) -> pd.DataFrame:
    """Risk and utility of ε-DP location releases against the non-DP fit and the Naive baseline.

    The thesis scenario (:func:`~geosynth.datasets.paiva_scenario`, attributes y, x1, x2, no Z:
    a DP release refuses continuous variables) on a ``side x side`` lattice. Reference rows: the
    Paiva fit of the exact counts with the DP releases' model (:func:`geosynth.dp.dp_model`;
    partially synthetic releases) and the Naive baseline. For each ε, ``repeats`` independent
    DP releases (:func:`geosynth.dp.dp_release`, add/remove neighbours, the public domain of the
    attributes; noise from fresh OS entropy, so the digits vary from run to run) and the mean of
    their rows.

    Parameters
    ----------
    n : int, default 500
        Records of the simulated scenario.
    side : int, default 10
        Lattice side (``side x side`` cells over the scenario's bounds).
    epsilons : sequence of float, default :data:`EPSILONS`
        Privacy levels; each DP release spends one of them in full.
    repeats : int, default 3
        Independent DP releases per ε, averaged.
    m : int, default 5
        Synthetic data sets per release.
    n_iter, burn_in, thin : int
        Sweeps, burn-in and thinning of every fit.
    n_quadrants : int, default 1000
        Random rectangles of the coverage measure.
    seed : int, default 2018
        Seed of the scenario, the reference fit, the Naive releases and the evaluation.
    dp_seed : int, optional
        Tests only: makes the DP runs reproducible, with a
        :class:`~geosynth.errors.PrivacyLeakWarning`. Default: fresh OS entropy.

    Returns
    -------
    pandas.DataFrame
        One row per reference and per ε: release size, the L1 error of the synthetic cell
        totals relative to n (utility of the spatial distribution), the Algorithm 1 min/mean
        matched distance (km), quadrant coverage of the proportion of y (§3.3), the Ripley's L
        gap (m) and, for the linkable non-DP releases, the Reiter–Mitra expected match risk.
    """
    scenario = paiva_scenario(n=n, seed=seed)
    data = scenario.data
    grid = Grid.regular(scenario.bounds, shape=(side, side), crs=scenario.crs)
    counts = prepare(data, grid, attributes=DP_ATTRIBUTES)
    fit_args = {"n_iter": n_iter, "burn_in": burn_in, "thin": thin, "progress": False}
    # The reference uses the model the DP releases use (dp_model: combination effects, the DP
    # priors), so the rows differ by the privacy noise only.
    fit = dp_model().fit(counts, seed=seed, **fit_args)
    rows = [
        _dp_row("paiva (no DP)", float("inf"), data, synthesize(fit, data, m=m, seed=seed),
                grid, counts, n_quadrants, seed, linked=True),
        _dp_row("naive (no DP)", float("inf"), data,
                naive_synthesize(data, grid, m=m, seed=seed + 1), grid, counts, n_quadrants,
                seed, linked=True),
    ]
    levels = {"y": [0, 1], "x1": [1, 2], "x2": [1, 2, 3]}  # the scenario's public domain
    on_domain = prepare(data, grid, attributes=DP_ATTRIBUTES, levels=levels)
    for epsilon in epsilons:
        runs = []
        for repeat in range(repeats):
            run_seed = None if dp_seed is None else dp_seed + repeat + int(100 * epsilon)
            result = dp_release(on_domain, epsilon, m, seed=run_seed, **fit_args)
            runs.append(_dp_row("paiva-dp", epsilon, data, result.releases, grid, counts,
                                n_quadrants, seed, linked=False))
        rows.append(pd.DataFrame(runs).mean(numeric_only=True).to_dict()
                    | {"method": "paiva-dp", "repeats": repeats})
    columns = ["method", "epsilon", "repeats", "n_release", "cell_l1_error", "min_distance_km",
               "mean_distance_km", "coverage", "ripley_l_gap_m", "expected_match_risk"]
    return pd.DataFrame(rows).reindex(columns=columns)


def _dp_row(method, epsilon, data, releases, grid, counts, n_quadrants, seed, linked) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate(data, releases, grid, DP_ATTRIBUTES, outcome="y",
                          n_quadrants=n_quadrants, seed=seed, linked=linked)
    original = counts.counts.sum(axis=1)
    errors = []
    for release in releases:
        cells = grid.locate(np.column_stack([release.geometry.x, release.geometry.y]))
        synthetic = np.bincount(cells[cells >= 0], minlength=grid.n_cells)
        errors.append(np.abs(synthetic - original).sum() / counts.n_records)
    distance = result.tables["distance_risk"].iloc[-1]
    risk = (result.tables["identification_risk"]["value"]["expected_match_risk"] if linked
            else np.nan)
    return {
        "method": method,
        "epsilon": epsilon,
        "repeats": 1,
        "n_release": float(np.mean([len(r) for r in releases])),
        "cell_l1_error": float(np.mean(errors)),
        "min_distance_km": distance["min_distance"] / 1000.0,
        "mean_distance_km": distance["mean_distance"] / 1000.0,
        "coverage": result.tables["coverage"]["mean_overlap"].iloc[0],
        "ripley_l_gap_m": result.tables["pattern"]["sup_l_difference"].iloc[-1],
        "expected_match_risk": risk,
    }


def epsilon_markdown(table: pd.DataFrame, command: str, run: str) -> str:
    """Format the ε-sweep table as a Markdown section.

    Parameters
    ----------
    table : pandas.DataFrame
        The result of :func:`epsilon_sweep`.
    command : str
        The command line recorded in the section.
    run : str
        How the fits were run (sweeps, burn-in, thinning), in words.

    Returns
    -------
    str
        The "ε-DP synthetic locations" section of ``docs/results.md``.
    """
    lines = [
        "## ε-DP synthetic locations: risk and utility versus ε (thesis scenario)",
        "",
        f"Produced by `{command}`. Thesis scenario (n = 500, attributes y, x1, x2, no Z), "
        f"10x10 lattice, m = 5 releases; fits: {run}, 2 chains. DP rows: geometric noise on "
        "every (cell, combination) count (add/remove-one neighbours, the whole release costs "
        "ε), noise-aware fit of the DP default model (`geosynth.dp.dp_model()`: combination "
        "effects, N(0, 2²) priors on the effects and the fields' means; the reference fits the "
        "same model to the exact counts), records and attributes drawn from the posterior; mean "
        "of the repeats (fresh OS entropy: digits change between runs). `cell_l1_error` is "
        "Σ_i |synthetic_i − original_i| / n over the cell totals; distances are the Algorithm 1 "
        "mean row in km; coverage is the mean interval overlap of the proportion of y over "
        "random rectangles (§3.3); `expected_match_risk` needs linkable records, which a DP "
        "release does not have. ε = inf marks the non-DP references.",
        "",
        *markdown_table(table),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: ``python -m studies.epsilon_sweep [--quick] [--output FILE]``.

    Prints the Markdown section; ``--output`` also writes it (atomically).

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default ``sys.argv[1:]``).
    """
    quick_fit = {**QUICK_FIT, "epsilons": (1.0, 8.0), "repeats": 1, "m": 2}
    sweep_main(argv, COMMAND, "ε-DP synthetic locations of the thesis scenario versus ε",
               lambda quick, command, run: epsilon_markdown(
                   epsilon_sweep(**(quick_fit if quick else {})), command, run))


if __name__ == "__main__":
    main()
