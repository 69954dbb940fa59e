"""Berlin listings: ESS per second of the worst precision, this sampler against an earlier one.

Issue 16's real-data target: on the Berlin listings at a lattice of at least 2,000 cells, the
effective draws per second of the worst-mixing precision (τ_θ, a τ_φ or τ_ε) at least 10×
those of the sampler when the issue was filed. Both samplers run in the same run on the same
machine: the earlier one from a detached ``git worktree`` of :data:`BASELINE` (the last commit
of ``main`` before the issue's first merge), each in its own process.

Data: the 2,203 Prenzlauer Berg AirBnB listings that libpysal ships
(:func:`geosynth.datasets.berlin_listings`), attributes ``accommodates_band`` (4 levels) ×
``bedrooms_band`` (3), B = 12 combinations, on a square lattice clipped to the neighbourhood
(``--cell-size``, default 70 m: about 2,300 habitable cells, queen adjacency). Fit: the default
``PaivaModel()`` of each version (attribute effects, no β), 2 chains on the 2 cores, the
first quarter of the sweeps burn-in and every later sweep kept. Timed from the call of ``fit``
after a short fit of the same data has compiled (or loaded) the kernels. ESS is arviz's bulk
ESS.

The worst of seven precisions' ESS is a noisy low extreme (the earlier sampler's ~100
effective draws especially), so each sampler runs once per seed (``--seeds``, default five),
the seeds' fits one after another in one process, and the ratio is that of the two samplers'
mean ESS per second over the seeds, with its standard error by the delta method from the
seeds' spread (each seed's rows are printed too).

Run: ``python -m bench berlin`` (``BENCH_BERLIN_ARGS="--sweeps 4000 --ref <commit>"``), or
``python -m bench.bench_berlin --help``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench._stats import ratio_of_means, seed_list

ROOT = Path(__file__).resolve().parent.parent
#: main just before the first merge of issue 16 (7c4480f, 2026-11-24): "today's sampler".
BASELINE = "163b64b"
TARGET = 10.0

PROBE = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import numpy as np
import arviz as az
from geosynth import Grid, PaivaModel, prepare
from geosynth.datasets import berlin_listings

cell, sweeps = float(sys.argv[1]), int(sys.argv[2])
seeds = [int(x) for x in sys.argv[3].split(",")]
points, region = berlin_listings()
grid = Grid.regular(region.total_bounds, cell_size=cell, crs=region.crs, region=region)
counts = prepare(points, grid, attributes=["accommodates_band", "bedrooms_band"])
model = PaivaModel()
model.fit(counts, n_iter=20, burn_in=10, thin=1, chains=2, seed=0, progress=False)
for seed in seeds:
    start = time.perf_counter()
    fit = model.fit(counts, n_iter=sweeps, burn_in=sweeps // 4, thin=1, chains=2, seed=seed,
                    progress=False)
    seconds = time.perf_counter() - start
    scalars = {name: np.asarray(fit.scalar(name), dtype=float) for name in fit.scalar_names}
    ess = {name: float(az.ess(x, method="bulk")) for name, x in scalars.items()}
    rhat = {name: float(az.rhat(x)) for name, x in scalars.items()}
    theta = az.ess(az.convert_to_dataset(np.asarray(fit.theta, dtype=float)), method="bulk")
    eta = np.asarray(fit.eta, dtype=float).reshape(fit.eta.shape[0], fit.eta.shape[1], -1)
    lam = az.ess(az.convert_to_dataset(eta), method="bulk")
    print("JSON" + json.dumps({
        "seed": seed, "cells": int(counts.counts.shape[0]),
        "combinations": int(counts.counts.shape[1]), "seconds": seconds, "ess": ess,
        "rhat": rhat, "theta_min": float(theta["x"].values.min()),
        "lambda_min": float(lam["x"].values.min()),
    }), flush=True)
    del fit, scalars, eta, theta, lam
"""


def measure(source: Path, cell_size: float, sweeps: int,
            seeds: tuple[int, ...]) -> list[dict]:
    """Run :data:`PROBE` with geosynth imported from ``source``; return one result per seed."""
    env = {**os.environ, "PYTHONPATH": str(source), "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", PROBE, str(cell_size), str(sweeps),
                           ",".join(map(str, seeds))],
                          capture_output=True, text=True, cwd=source, env=env, timeout=7200)
    if proc.returncode != 0:
        raise RuntimeError(f"Berlin probe ({source}) failed:\n{proc.stderr[-3000:]}")
    return [json.loads(x[4:]) for x in proc.stdout.splitlines() if x.startswith("JSON")]


def worst_precision(result: dict) -> tuple[str, float]:
    """The precision (τ_θ, a τ_φ or τ_ε) with the smallest bulk ESS in one fit, and that ESS."""
    taus = {k: v for k, v in result["ess"].items() if k.startswith("tau")}
    name = min(taus, key=taus.get)
    return name, taus[name]


def run(argv: list[str] | None = None) -> str:
    """The table as Markdown (``argv`` as on the command line; default ``BENCH_BERLIN_ARGS``)."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_berlin")
    parser.add_argument("--ref", default=BASELINE, help="git commit of the earlier sampler")
    parser.add_argument("--cell-size", type=float, default=70.0, help="cell side in metres")
    parser.add_argument("--sweeps", type=int, default=4000, help="sweeps per chain")
    parser.add_argument("--seeds", type=seed_list, default=(1, 2, 3, 4, 5),
                        help="comma-separated seeds, one fit of each sampler per seed "
                             "(default 1,2,3,4,5)")
    args = parser.parse_args(shlex.split(os.environ.get("BENCH_BERLIN_ARGS", ""))
                             if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="geosynth-baseline-") as folder:
        worktree = Path(folder) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(worktree),
                        args.ref], cwd=ROOT, check=True)
        try:
            results = {f"{args.ref} (issue filed)": measure(worktree, args.cell_size,
                                                            args.sweeps, args.seeds)}
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT,
                           check=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    results[f"{head} (this tree)"] = measure(ROOT, args.cell_size, args.sweeps, args.seeds)
    return format_table(results, args.sweeps, args.cell_size)


def format_table(results: dict[str, list[dict]], sweeps: int, cell_size: float) -> str:
    """Markdown: one row per sampler and seed, then the ratio of the mean ESS per second."""
    rows = ["| sampler | seed | cells × B | seconds | worst precision (ESS) | its ESS/s | max "
            "R-hat (scalars) | min ESS scalars / θ / λ |",
            "| --- | ---: | --- | ---: | --- | ---: | ---: | --- |"]
    rates = {}
    for label, fits in results.items():
        rates[label] = []
        for r in fits:
            name, ess = worst_precision(r)
            rates[label].append(ess / r["seconds"])
            rows.append(f"| {label} | {r['seed']} | {r['cells']:,} × {r['combinations']} | "
                        f"{r['seconds']:.0f} | {name} ({ess:.0f}) | {rates[label][-1]:.2f} | "
                        f"{max(r['rhat'].values()):.3f} | {min(r['ess'].values()):.0f} / "
                        f"{r['theta_min']:.0f} / {r['lambda_min']:.0f} |")
    (base_label, base), (label, rate) = list(rates.items())[0], list(rates.items())[-1]
    ratio, se = ratio_of_means(rate, base)
    # One seed a side leaves the spread unknown: ratio_of_means's 0 is no standard error.
    error = (f" ± {se:.1f}** (standard error)" if min(len(rate), len(base)) > 1
             else "** (one seed: no standard error)")
    return (f"2 chains × {sweeps:,} sweeps (the first {sweeps // 4:,} burn-in), cell "
            f"{cell_size:g} m; target: ratio ≥ {TARGET:g}×.\n\n" + "\n".join(rows)
            + f"\n\nMean ESS/s of the worst precision over {len(rate)} seeds: "
            f"{np.mean(base):.2f} ({base_label}), {np.mean(rate):.2f} ({label}); "
            f"**ratio {ratio:.1f}×{error}.")


if __name__ == "__main__":
    print(run(sys.argv[1:]))
