"""Run time of :func:`geosynth.tune` over four cell sizes on the Berlin listings.

Issue "Choose the lattice" asks for the runtime of four cell sizes on the Berlin listings
(:func:`geosynth.datasets.berlin_listings`: 2,203 Prenzlauer Berg listings, the district
boundary as the region). Attributes: ``large`` (accommodates 3 or more; 0/1, also the coverage
outcome) and ``bedrooms_band`` (3 levels), so B = 6 combinations. Candidates: square cells of
100, 200, 400 and 800 m clipped to the district; every fit runs until converged
(``n_iter="auto"``, bulk ESS >= 400 and R-hat < 1.01 over μ, α, every τ, θ and λ, at most 900 s),
then m = 5 releases and every measure of the tuning table. Candidates run one after another
(the default thread pool has ``cpu_count // 2`` = 1 worker on 2 cores; each fit runs 2 chains
in parallel).

No peer offers this (MaskMyPy, sdcSpatial and synthpop have no lattice choice), so the table
has no ratio.

Run: ``python -m bench tune`` (records to RESULTS.md) or ``python -m bench.bench_tune``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import geosynth  # noqa: E402
from geosynth.datasets import berlin_listings  # noqa: E402

CELL_SIZES = (100, 200, 400, 800)
ATTRIBUTES = ["large", "bedrooms_band"]


def berlin_points():
    """The listings with the 0/1 ``large`` column, and the district boundary."""
    berlin = berlin_listings()
    points = berlin.points.assign(large=(berlin.points["accommodates"] >= 3).astype(int))
    return points, berlin.region


def run() -> str:
    """Tune the four cell sizes; a Markdown table of per-candidate seconds and measures."""
    points, region = berlin_points()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tuning = geosynth.tune(points, ATTRIBUTES, list(CELL_SIZES), region=region, m=5,
                               seed=2026, progress=False)
    total = time.perf_counter() - start
    table = tuning.table
    lines = [
        f"Berlin listings ({len(points):,} records, B = 6), four cell sizes, "
        "`n_iter=\"auto\"` fits (target ESS 400, R-hat < 1.01), m = 5 releases; "
        f"total **{total:.0f} s** (one candidate at a time).",
        "",
        "| cell size | cells | seconds | min ESS | max R-hat | true match rate | "
        "coverage | intensity corr. |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, row in table.iterrows():
        lines.append(
            f"| {label} | {row['n_cells']:,} | {row['seconds']:.0f} | {row['min_ess']:.0f} | "
            f"{row['max_r_hat']:.3f} | {row['true_match_rate']:.4f} | {row['coverage']:.3f} | "
            f"{row['intensity_correlation']:.3f} |")
    lines += ["", f"Recommendation at a true match rate <= 0.01: "
              f"{tuning.recommend(risk_limit=0.01).reason}."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
