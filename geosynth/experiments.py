"""Studies behind ``docs/results.md``: risk and utility tables in one command each.

- ``python -m geosynth.experiments [grid]``: the thesis' Chapter 4 study, lattice size × β prior
  × method (:func:`grid_sweep`).
- ``python -m geosynth.experiments epsilon``: ε-DP releases of the thesis scenario over
  ε ∈ {0.5, 1, 2, 4, 8} next to the non-DP fit (:func:`epsilon_sweep`).

Each prints its Markdown section; ``--output FILE`` writes it atomically.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from geosynth._atomic import atomic_path
from geosynth.data import prepare
from geosynth.datasets import paiva_scenario
from geosynth.evaluation import evaluate
from geosynth.lattice import Grid
from geosynth.model import PaivaModel
from geosynth.synth import donut_mask, naive_synthesize, synthesize

__all__ = ["grid_sweep", "epsilon_sweep", "THESIS_FIGURES"]

ATTRIBUTES = ["y", "x1", "x2"]

# Published figures (Nunes 2018): mean-row minimum and mean matched distances (Tables 5 and 6,
# in thesis units = km here) and quadrant coverage (§4.1-4.2); §3.4 reports 0.725 (Paiva,
# 10x10, no covariate) against 0.697 (Naive).
THESIS_FIGURES = pd.DataFrame(
    [
        ("5x5", "normal", 0.0973, 1.1723, 0.730),
        ("10x10", "normal", 0.0655, 1.0441, 0.676),
        ("20x20", "normal", 0.0373, 0.9950, 0.737),
        ("5x5", "icar", 0.1045, 1.3727, 0.665),
        ("10x10", "icar", 0.1108, 1.6251, 0.746),
        ("20x20", "icar", 0.0770, 1.6909, 0.668),
    ],
    columns=["lattice", "beta_prior", "thesis_min_distance_km", "thesis_mean_distance_km",
             "thesis_coverage"],
)


def grid_sweep(
    n: int = 500,
    sides: Sequence[int] = (5, 10, 20),
    beta_priors: Sequence[str] = ("normal", "icar"),
    m: int = 5,
    n_iter: int = 8000,
    burn_in: int = 2000,
    thin: int = 6,
    donut: tuple[float, float] = (100.0, 500.0),
    n_quadrants: int = 1000,
    seed: int = 2018,
) -> pd.DataFrame:
    """Risk and utility of Paiva, Naive and donut releases over lattices and β priors.

    One simulated data set (:func:`~geosynth.datasets.paiva_scenario` with Z); for each
    lattice ``side x side`` and β prior, the Paiva model is fitted and ``m`` releases drawn;
    the Naive baseline uses the same lattice and donut masking (radii in metres) does not
    depend on it. Each row: mean-row min/mean matched distance (Algorithm 1, km), Reiter–Mitra
    expected match risk and true match rate, quadrant coverage and the Ripley's L gap (m).
    """
    scenario = paiva_scenario(n=n, seed=seed)
    data = scenario.data
    rows = []
    donut_releases = donut_mask(data, donut[0], donut[1], m=m, seed=seed + 1)
    for side in sides:
        grid = Grid.regular(scenario.bounds, shape=(side, side), crs=scenario.crs)
        counts = prepare(data, grid, attributes=ATTRIBUTES, continuous="z")
        methods = {("naive", "-"): naive_synthesize(data, grid, m=m, seed=seed + side)}
        for prior in beta_priors:
            fit = PaivaModel(beta_prior=prior).fit(
                counts, n_iter=n_iter, burn_in=burn_in, thin=thin, seed=seed + side,
                progress=False)
            methods[("paiva", prior)] = synthesize(fit, data, m=m, seed=seed + 2 * side)
        methods[("donut", "-")] = donut_releases
        for (method, prior), releases in methods.items():
            rows.append(_row(f"{side}x{side}", method, prior, data, releases, grid,
                             n_quadrants, seed))
    return pd.DataFrame(rows)


def _row(lattice, method, prior, data, releases, grid, n_quadrants, seed) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate(data, releases, grid, ATTRIBUTES, outcome="y",
                          n_quadrants=n_quadrants, seed=seed)
    distance = result.tables["distance_risk"].iloc[-1]
    risk = result.tables["identification_risk"]["value"]
    return {
        "lattice": lattice,
        "method": method,
        "beta_prior": prior,
        "min_distance_km": distance["min_distance"] / 1000.0,
        "mean_distance_km": distance["mean_distance"] / 1000.0,
        "expected_match_risk": risk["expected_match_risk"],
        "true_match_rate": risk["true_match_rate"],
        "coverage": result.tables["coverage"]["mean_overlap"].iloc[0],
        "ripley_l_gap_m": result.tables["pattern"]["sup_l_difference"].iloc[-1],
    }


def sweep_markdown(table: pd.DataFrame, command: str, run: str) -> str:
    """Format the grid-sweep table, with the thesis figures, as a Markdown section."""
    merged = table.merge(THESIS_FIGURES, on=["lattice", "beta_prior"], how="left")
    lines = [
        "## Grid sweep: lattice size x beta prior x method (Nunes 2018, ch. 4)",
        "",
        f"Produced by `{command}`. Thesis scenario (n = 500, with Z), m = 5 releases; Paiva "
        f"fits: {run}, 2 chains. Distances "
        "are the mean row of the Algorithm 1 table in km (the thesis' units); coverage is the "
        "mean geometric overlap over random rectangles (§3.3); donut radii 100-500 m. "
        "The thesis columns are its Tables 5-6 mean rows and §4 coverages (its data set is "
        "another draw of the same scenario, so agreement is in magnitude, not digits).",
        "",
        "```",
        merged.to_string(index=False, float_format=lambda v: f"{v:.3f}"),
        "```",
        "",
    ]
    return "\n".join(lines)


EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
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
    Paiva fit of the exact counts with the DP releases' model (combination effects; partially
    synthetic releases) and the Naive baseline. For
    each ε, ``repeats`` independent DP releases (:func:`geosynth.dp.dp_release`, add/remove
    neighbours, the public domain of the attributes; noise from fresh OS entropy, so the digits
    vary from run to run) and the mean of their rows.

    Each row: release size, the L1 error of the synthetic cell totals relative to n (utility of
    the spatial distribution), the Algorithm 1 min/mean matched distance (km), quadrant coverage
    of the proportion of y (§3.3), the Ripley's L gap (m) and, for the linkable non-DP releases,
    the Reiter–Mitra expected match risk. ``dp_seed`` (tests only) makes the DP runs
    reproducible, with a :class:`~geosynth.errors.PrivacyLeakWarning`.
    """
    from geosynth.dp.locations import dp_release

    scenario = paiva_scenario(n=n, seed=seed)
    data = scenario.data
    grid = Grid.regular(scenario.bounds, shape=(side, side), crs=scenario.crs)
    counts = prepare(data, grid, attributes=DP_ATTRIBUTES)
    fit_args = {"n_iter": n_iter, "burn_in": burn_in, "thin": thin, "progress": False}
    # The reference uses the model the DP releases use (combination effects), so the rows differ
    # by the privacy noise only.
    fit = PaivaModel(effects="combination").fit(counts, seed=seed, **fit_args)
    rows = [
        _dp_row("paiva (no DP)", float("inf"), data, synthesize(fit, data, m=m, seed=seed),
                grid, counts, n_quadrants, seed, linked=True),
        _dp_row("naive (no DP)", float("inf"), data,
                naive_synthesize(data, grid, m=m, seed=seed + 1), grid, counts, n_quadrants,
                seed, linked=True),
    ]
    levels = {"y": [0, 1], "x1": [1, 2], "x2": [1, 2, 3]}  # the scenario's public domain
    for epsilon in epsilons:
        runs = []
        for repeat in range(repeats):
            run_seed = None if dp_seed is None else dp_seed + repeat + int(100 * epsilon)
            result = dp_release(counts, epsilon, m, levels=levels, seed=run_seed, **fit_args)
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
    """Format the ε-sweep table as a Markdown section."""
    lines = [
        "## ε-DP synthetic locations: risk and utility versus ε (thesis scenario)",
        "",
        f"Produced by `{command}`. Thesis scenario (n = 500, attributes y, x1, x2, no Z), "
        f"10x10 lattice, m = 5 releases; fits: {run}, 2 chains. DP rows: geometric noise on "
        "every (cell, combination) count (add/remove-one neighbours, the whole release costs "
        "ε), noise-aware fit with combination effects (the reference uses the same model on the "
        "exact counts), records and attributes drawn from the posterior; mean of the "
        "repeats (fresh OS entropy: digits change between runs). `cell_l1_error` is "
        "Σ_i |synthetic_i − original_i| / n over the cell totals; distances are the Algorithm 1 "
        "mean row in km; coverage is the mean interval overlap of the proportion of y over "
        "random rectangles (§3.3); `expected_match_risk` needs linkable records, which a DP "
        "release does not have. ε = inf marks the non-DP references.",
        "",
        "```",
        table.to_string(index=False, float_format=lambda v: f"{v:.3f}"),
        "```",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry: ``python -m geosynth.experiments [grid|epsilon] [--output FILE]``."""
    parser = argparse.ArgumentParser(prog="python -m geosynth.experiments")
    parser.add_argument("study", nargs="?", default="grid", choices=["grid", "epsilon"],
                        help="grid: lattice x prior x method; epsilon: ε-DP sweep")
    parser.add_argument("--output", help="write the Markdown section to this file")
    parser.add_argument("--quick", action="store_true", help="short runs (for smoke tests)")
    args = parser.parse_args(argv)
    kwargs = {"n_iter": 400, "burn_in": 200, "thin": 2, "n_quadrants": 100} if args.quick else {}
    command = ("python -m geosynth.experiments" + ("" if args.study == "grid" else " epsilon")
               + (" --quick" if args.quick else ""))
    run = ("400 sweeps, 200 burn-in, thin 2 (quick)" if args.quick
           else "8,000 sweeps, 2,000 burn-in, thin 6 (the defaults)")
    if args.study == "epsilon":
        if args.quick:
            kwargs |= {"epsilons": (1.0, 8.0), "repeats": 1, "m": 2}
        text = epsilon_markdown(epsilon_sweep(**kwargs), command, run)
    else:
        text = sweep_markdown(grid_sweep(**kwargs), command, run)
    if args.output:
        with atomic_path(args.output) as tmp:
            tmp.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
