"""The thesis' Chapter 4 study: lattice size × β prior × method, next to its Tables 5–6.

Reproduces the simulation study of Nunes (2018, ch. 4): on one draw of the thesis scenario
(§3.1, n = 500, with the continuous covariate Z), the disclosure risk and utility of Paiva
releases (the model of Paiva et al. 2014 with Nunes' β·Z̄ extension, §2.2) for 5×5, 10×10 and
20×20 lattices and a normal or ICAR prior on β, next to the Naive baseline (§3.2) and donut
masking. Risk: the mean row of the matched-distance table of Algorithm 1 (§3.3) and the
Reiter–Mitra identification risk; utility: quadrant coverage (§3.3) and the Ripley's L gap. The
thesis' own figures (Tables 5 and 6 mean rows, §4.1–4.2 coverages) are printed alongside. The
output is the "Grid sweep" section of ``docs/results.md``.

Run from the repository root::

    python -m studies.grid_sweep [--quick] [--output FILE]

Runtime: about three minutes on a 2-core machine with the defaults (six fits of 8,000 sweeps,
two chains each, then the evaluation of 24 sets of five releases); ``--quick`` (400 sweeps,
100 quadrants) takes under half a minute after the one-off numba compilation. Deterministic.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import pandas as pd

from geosynth.data import prepare
from geosynth.datasets import paiva_scenario
from geosynth.evaluation import evaluate
from geosynth.lattice import Grid
from geosynth.model import PaivaModel
from geosynth.synth import donut_mask, naive_synthesize, synthesize
from studies.common import QUICK_FIT, markdown_table, sweep_main

__all__ = ["ATTRIBUTES", "THESIS_FIGURES", "grid_sweep", "sweep_markdown", "main"]

COMMAND = "python -m studies.grid_sweep"

#: The scenario's categorical attributes (the outcome y first).
ATTRIBUTES = ["y", "x1", "x2"]

#: Published figures (Nunes 2018): mean-row minimum and mean matched distances (Tables 5 and 6,
#: in thesis units = km here) and quadrant coverage (§4.1-4.2); §3.4 reports 0.725 (Paiva,
#: 10x10, no covariate) against 0.697 (Naive).
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
    depend on it.

    Parameters
    ----------
    n : int, default 500
        Records of the simulated scenario.
    sides : sequence of int, default (5, 10, 20)
        Lattice sides (``side x side`` cells over the scenario's bounds).
    beta_priors : sequence of {"normal", "icar"}
        Priors on the covariate effects β, one Paiva fit each.
    m : int, default 5
        Releases per method.
    n_iter, burn_in, thin : int
        Sweeps, burn-in and thinning of each fit (:meth:`geosynth.PaivaModel.fit`).
    donut : tuple of float, default (100.0, 500.0)
        Inner and outer radius (metres) of donut masking.
    n_quadrants : int, default 1000
        Random rectangles of the coverage measure.
    seed : int, default 2018
        Seed of the scenario; fits, releases and the evaluation derive theirs from it.

    Returns
    -------
    pandas.DataFrame
        One row per (lattice, method, β prior): mean-row min/mean matched distance
        (Algorithm 1, km), Reiter–Mitra expected match risk and true match rate, quadrant
        coverage and the Ripley's L gap (m).
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
    """Format the grid-sweep table, with the thesis figures, as a Markdown section.

    Parameters
    ----------
    table : pandas.DataFrame
        The result of :func:`grid_sweep`.
    command : str
        The command line recorded in the section.
    run : str
        How the fits were run (sweeps, burn-in, thinning), in words.

    Returns
    -------
    str
        The "Grid sweep" section of ``docs/results.md``.
    """
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
        *markdown_table(merged),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: ``python -m studies.grid_sweep [--quick] [--output FILE]``.

    Prints the Markdown section; ``--output`` also writes it (atomically).

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default ``sys.argv[1:]``).
    """
    sweep_main(argv, COMMAND, "Lattice size x beta prior x method (Nunes 2018, ch. 4)",
               lambda quick, command, run: sweep_markdown(
                   grid_sweep(**(QUICK_FIT if quick else {})), command, run))


if __name__ == "__main__":
    main()
