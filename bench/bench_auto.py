"""``fit(n_iter="auto")``: what stopping when converged costs, and where fits stop.

Data: the Nunes (2018) scenario with 5 records per cell on sqrt(G) x sqrt(G) queen lattices,
B = 12 attribute combinations, the thesis' attribute-effects model, 2 chains on 2 cores.

Two tables:

- *check*: seconds of one convergence check on the largest window the default rule keeps
  (2 chains x 1,600 draws: ``16/(max_rhat − 1)`` per chain at ``max_rhat=1.01``), per group of
  parameters (:func:`geosynth.model.diagnostics.convergence_diagnostics` on float32 AR(1)
  draws of the fit's shapes), against the seconds of one sweep of both chains (a short fixed
  fit) and against arviz 0.23 (its per-parameter loop timed on 300 λ's and scaled).
- *fits*: ``fit(n_iter="auto")`` with the defaults (``target_ess=400``, ``max_rhat=1.01``,
  a draw kept every sweep to start with) and ``max_seconds``: sweeps, how it stopped, the
  worst parameter, the time of all checks and its share of the fit. With
  ``BENCH_AUTO_REFERENCE=1``, also the agreement of each stopped window with a long fixed fit
  (2 chains × 8,000 sweeps, 2,000 burn-in, seed 99, once per lattice): the mean over μ, every
  α and τ and the first 200 θ_i of z² = (mean − reference mean)² / (its Monte Carlo error² +
  the reference's), each error sd/√(bulk ESS). Near 1 when the window carries no bias.

Run: ``python -m bench auto`` (``BENCH_AUTO_SIDES=20,40`` for the fits' lattice sides,
``BENCH_AUTO_SEEDS=1`` for their chain seeds, ``BENCH_AUTO_SECONDS`` for their
``max_seconds``, default 600, ``BENCH_AUTO_REFERENCE=1`` for the agreement column).
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from bench.bench_pymc import scenario_counts
from geosynth import PaivaModel
from geosynth._compat import import_arviz
from geosynth.model.diagnostics import convergence_diagnostics

CHECK_SIDES = (40, 80)
FIT_SIDES = tuple(int(s) for s in os.environ.get("BENCH_AUTO_SIDES", "20,40").split(","))
FIT_SEEDS = tuple(int(s) for s in os.environ.get("BENCH_AUTO_SEEDS", "1").split(","))
MAX_SECONDS = float(os.environ.get("BENCH_AUTO_SECONDS", "600"))
REFERENCE = os.environ.get("BENCH_AUTO_REFERENCE", "") == "1"
REFERENCE_THETA = 200  # θ_i of the agreement column
WINDOW = 1600  # draws per chain of the largest default window
B = 12


def _draws(n_params: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, WINDOW, n_params)).astype(np.float32)
    for t in range(1, WINDOW):  # AR(1), rho 0.5: nothing depends on the values' law
        x[:, t] += 0.5 * x[:, t - 1]
    return x


def _seconds(function, *args) -> float:
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def _sweep_seconds(counts) -> float:
    PaivaModel().fit(counts, n_iter=20, burn_in=10, thin=1, seed=1, progress=False)  # compile
    n_iter = max(40, 400_000 // (counts.n_cells * B))
    seconds = _seconds(lambda: PaivaModel().fit(counts, n_iter=n_iter, burn_in=n_iter // 2,
                                                thin=1, seed=1, progress=False))
    return seconds / n_iter


def _arviz_diagnostics(az, dataset) -> None:
    az.ess(dataset, method="bulk")
    az.rhat(dataset, method="rank")


def check_table() -> str:
    az = import_arviz()
    rows = ["| G | sweep of 2 chains (s) | scalars + θ (s) | λ screen, 2,048 (s) | "
            "all G·B λ (s) | all λ in sweeps | arviz, all λ (s, scaled) |",
            "|---:|---:|---:|---:|---:|---:|---:|"]
    for side in CHECK_SIDES:
        G = side * side
        counts = scenario_counts(side * side)
        sweep = _sweep_seconds(counts)
        theta = _seconds(convergence_diagnostics, _draws(G + 9), 2)
        screen = _seconds(convergence_diagnostics, _draws(2048), 2)
        lam = _draws(G * B)
        full = _seconds(convergence_diagnostics, lam, 2)
        sample = az.convert_to_dataset({"eta": lam[:, :, :300]})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arviz = _seconds(_arviz_diagnostics, az, sample) * G * B / 300
        rows.append(f"| {G:,} | {sweep:.3f} | {theta:.2f} | {screen:.2f} | {full:.1f} | "
                    f"{full / sweep:.0f} | {arviz:,.0f} |")
    return "\n".join(rows)


def _means_and_errors(fit) -> tuple[np.ndarray, np.ndarray]:
    """Posterior means of the scalars and the first θ_i, and their errors sd/√(bulk ESS)."""
    draws = np.concatenate([fit.scalars, fit.theta[:, :, :REFERENCE_THETA]], axis=2)
    ess, _ = convergence_diagnostics(draws.astype(np.float32))
    flat = draws.reshape(-1, draws.shape[2])
    return flat.mean(axis=0), flat.std(axis=0) / np.sqrt(ess)


def _mean_z2(fit, reference: tuple[np.ndarray, np.ndarray]) -> float:
    mean, error = _means_and_errors(fit)
    return float(np.mean((mean - reference[0]) ** 2 / (error**2 + reference[1] ** 2)))


def fit_table() -> str:
    rows = ["| G | seed | stopped | sweeps/chain | thin | min ESS (where) | max R-hat (where) | "
            "fit (s) | checks | check time (s) | share |" + (" z² vs long fit |" if REFERENCE
                                                            else ""),
            "|---:|---:|---|---:|---:|---|---|---:|---:|---:|---:|" + ("---:|" if REFERENCE
                                                                      else "")]
    for side in FIT_SIDES:
        counts = scenario_counts(side * side)
        reference = None
        if REFERENCE:
            reference = _means_and_errors(PaivaModel().fit(
                counts, n_iter=8000, burn_in=2000, thin=1, seed=99, progress=False))
        rows += [_fit_row(counts, seed, reference) for seed in FIT_SEEDS]
    return "\n".join(rows)


def _fit_row(counts, seed: int, reference) -> str:
    """One auto fit's row (and its z² against ``reference``, unless None)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = PaivaModel().fit(counts, n_iter="auto", seed=seed, progress=False,
                               max_seconds=MAX_SECONDS)
    s = fit.stopping
    return (f"| {counts.n_cells:,} | {seed} | {s.reason} | {s.sweeps:,} | {s.thin} | "
            f"{s.min_ess:.0f} (`{s.worst_ess}`) | {s.max_r_hat:.3f} (`{s.worst_r_hat}`) | "
            f"{s.seconds:.0f} | {s.checks} | {s.check_seconds:.1f} | "
            f"{s.check_seconds / s.seconds:.1%} |"
            + ("" if reference is None else f" {_mean_z2(fit, reference):.2f} |"))


def run() -> str:
    return (f"One check on a full window (2 chains x {WINDOW:,} draws), 2 threads:\n\n"
            + check_table()
            + f"\n\nAuto fits (defaults, max_seconds={MAX_SECONDS:g}):\n\n" + fit_table())


if __name__ == "__main__":
    print(run())
