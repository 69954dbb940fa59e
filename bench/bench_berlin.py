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
``PaivaModel()`` of each version (attribute effects, no β), 2 chains on the 2 cores, the same
seed, the first quarter of the sweeps burn-in and every later sweep kept. Timed from the call
of ``fit`` after a short fit of the same data has compiled (or loaded) the kernels. ESS is
arviz's bulk ESS.

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
points, region = berlin_listings()
grid = Grid.regular(region.total_bounds, cell_size=cell, crs=region.crs, region=region)
counts = prepare(points, grid, attributes=["accommodates_band", "bedrooms_band"])
model = PaivaModel()
model.fit(counts, n_iter=20, burn_in=10, thin=1, chains=2, seed=0, progress=False)
start = time.perf_counter()
fit = model.fit(counts, n_iter=sweeps, burn_in=sweeps // 4, thin=1, chains=2, seed=1,
                progress=False)
seconds = time.perf_counter() - start
ess = {name: float(az.ess(np.asarray(fit.scalar(name), dtype=float), method="bulk"))
       for name in fit.scalar_names}
rhat = {name: float(az.rhat(np.asarray(fit.scalar(name), dtype=float)))
        for name in fit.scalar_names}
theta = az.ess(az.convert_to_dataset(np.asarray(fit.theta, dtype=float)), method="bulk")
eta = np.asarray(fit.eta, dtype=float).reshape(fit.eta.shape[0], fit.eta.shape[1], -1)
lam = az.ess(az.convert_to_dataset(eta), method="bulk")
print("JSON" + json.dumps({
    "cells": int(counts.counts.shape[0]), "combinations": int(counts.counts.shape[1]),
    "seconds": seconds, "ess": ess, "rhat": rhat,
    "theta_min": float(theta["x"].values.min()), "lambda_min": float(lam["x"].values.min()),
}))
"""


def measure(source: Path, cell_size: float, sweeps: int) -> dict:
    """Run :data:`PROBE` with geosynth imported from ``source``; return its results."""
    env = {**os.environ, "PYTHONPATH": str(source), "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", PROBE, str(cell_size), str(sweeps)],
                          capture_output=True, text=True, cwd=source, env=env, timeout=7200)
    if proc.returncode != 0:
        raise RuntimeError(f"Berlin probe ({source}) failed:\n{proc.stderr[-3000:]}")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("JSON"))
    return json.loads(line[4:])


def _worst_precision(result: dict) -> tuple[str, float]:
    taus = {k: v for k, v in result["ess"].items() if k.startswith("tau")}
    name = min(taus, key=taus.get)
    return name, taus[name]


def run(argv: list[str] | None = None) -> str:
    """The table as Markdown (``argv`` as on the command line; default ``BENCH_BERLIN_ARGS``)."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_berlin")
    parser.add_argument("--ref", default=BASELINE, help="git commit of the earlier sampler")
    parser.add_argument("--cell-size", type=float, default=70.0, help="cell side in metres")
    parser.add_argument("--sweeps", type=int, default=4000, help="sweeps per chain")
    args = parser.parse_args(shlex.split(os.environ.get("BENCH_BERLIN_ARGS", ""))
                             if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="geosynth-baseline-") as folder:
        worktree = Path(folder) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(worktree),
                        args.ref], cwd=ROOT, check=True)
        try:
            results = {f"{args.ref} (issue filed)": measure(worktree, args.cell_size,
                                                            args.sweeps)}
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT,
                           check=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    results[f"{head} (this tree)"] = measure(ROOT, args.cell_size, args.sweeps)
    rows = ["| sampler | cells × B | seconds | worst precision (ESS) | its ESS/s | max R-hat "
            "(scalars) | min ESS scalars / θ / λ | ratio |",
            "| --- | --- | ---: | --- | ---: | ---: | --- | ---: |"]
    base = None
    for label, r in results.items():
        name, ess = _worst_precision(r)
        rate = ess / r["seconds"]
        base = rate if base is None else base
        rows.append(f"| {label} | {r['cells']:,} × {r['combinations']} | {r['seconds']:.0f} | "
                    f"{name} ({ess:.0f}) | {rate:.2f} | {max(r['rhat'].values()):.3f} | "
                    f"{min(r['ess'].values()):.0f} / {r['theta_min']:.0f} / "
                    f"{r['lambda_min']:.0f} | {rate / base:.1f}× |")
    return (f"2 chains × {args.sweeps:,} sweeps (the first {args.sweeps // 4:,} burn-in), "
            f"cell {args.cell_size:g} m; target: ratio ≥ {TARGET:g}×.\n\n" + "\n".join(rows))


if __name__ == "__main__":
    print(run(sys.argv[1:]))
