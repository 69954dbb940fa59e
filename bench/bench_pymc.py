"""Same model, same data, same priors: geosynth's Gibbs sampler against PyMC (pm.ICAR, NUTS).

Data: the Nunes (2018) scenario with 5 records per cell on sqrt(G) x sqrt(G) lattices over the
study square, attributes y, x1, x2 (B = 12 combinations, P = 4 non-baseline levels), the
default :class:`geosynth.PaivaModel` (attribute effects, no β) and :class:`geosynth.Priors`.
Both samplers run 2 chains on the 2 cores; times exclude compilation (numba: a warm-up fit;
PyMC: ``sampling_time`` of the trace, after the pytensor functions are built). PyMC runs in a
subprocess with OPENBLAS/OMP/MKL_NUM_THREADS=1, or its two chain processes stall on the BLAS
thread pools.

The PyMC model (see :func:`_pymc_model`) is geosynth's model written on its identified
coordinates. geosynth puts on each ICAR field f (θ and every φ_·p) the ICAR density with
precision τ times a N(0, ``level_var``) prior on the field's mean. With one connected component
(a regular lattice) that prior factorises exactly into f = f_c + m·1 with the centred field
f_c ~ ICAR(τ) on the sum-to-zero subspace (normaliser τ^{(G−1)/2}) and m ~ N(0, level_var)
independent of it. The likelihood sees only μ + m_θ and α_p + m_φp, so integrating out the
non-identified split gives the identified intercept μ* = μ + mean θ ~ N(0, mu_var + level_var)
and level effects α*_p = α_p + mean φ_p ~ N(0, alpha_var + level_var): exactly the quantities
geosynth records as ``mu`` and ``alpha[...]``. In PyMC the centred fields are
``pm.ICAR(W=dense adjacency, sigma=1)`` divided by sqrt(τ) (non-centred). pm.ICAR's own
``sigma`` is left at 1 because its logp omits the −(G−1)·log σ normaliser, so a free sigma
would put the wrong prior on τ; its soft sum-to-zero term (``zero_sum_stdev`` = 0.001, i.e.
mean of the field ~ N(0, 0.001²)) stands in for the hard constraint. The remaining mean of
θ (≤ 0.001/sqrt(τ_θ)) is added back: μ is reported as μ* + mean θ and θ centred, as geosynth
does. ε_ib = z_ib / sqrt(τ_ε), z ~ N(0, 1) (non-centred: the counts are ~0.4 per (i, b)).
Gamma priors Gamma(shape, rate) on τ_θ, τ_φp, τ_ε as in Priors.

Columns: wall seconds of sampling; min bulk ESS over μ, τ_θ, every θ_i and every λ_ib divided
by those seconds; the ratio geosynth/PyMC of min ESS/s; agreement checks — the correlation of
the two posterior-mean λ (G·B values) and |Δμ| over the Monte Carlo se of the difference.

Run: ``python -m bench pymc`` (needs the ``bench`` extra: ``pip install "pymc>=5.10"``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

SIDES = tuple(int(s) for s in os.environ.get("BENCH_PYMC_SIDES", "10,20,40").split(","))
# (draws, tune) per chain of PyMC NUTS. One logp+gradient costs ~0.24 ms at G = 100 and
# ~0.6 ms at G = 400 on one core, and NUTS needs ~250 of them per draw on this posterior (mean
# tree depth 8 at G = 100, 400+400 draws), more while tuning; so the runs are kept short and
# G = 1600 is capped by PYMC_TIMEOUT.
PYMC_DRAWS = {10: (300, 300), 20: (150, 150), 40: (100, 100)}
PYMC_TIMEOUT = 900  # seconds per lattice before the PyMC row is reported as capped
GIBBS = {"n_iter": 8000, "burn_in": 2000, "thin": 6}  # the fit() defaults: 1,000 draws/chain
SINGLE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
ROOT = Path(__file__).resolve().parent.parent


def _counts(side: int):
    from geosynth import Grid, prepare
    from geosynth.datasets import paiva_scenario

    scenario = paiva_scenario(n=5 * side * side, seed=2014)
    grid = Grid.regular(scenario.bounds, shape=(side, side), crs=scenario.crs)
    return prepare(scenario.data, grid, attributes=["y", "x1", "x2"])


def min_bulk_ess(groups: dict[str, np.ndarray]) -> dict[str, float]:
    """Minimum bulk ESS of each group of draws, arrays shaped (chains, draws, ...)."""
    import arviz as az

    out = {}
    for name, draws in groups.items():
        flat = draws.reshape(draws.shape[0], draws.shape[1], -1).astype(np.float64)
        ess = az.ess(az.convert_to_dataset({"x": flat}), method="bulk")["x"].values
        out[name] = float(np.nanmin(ess))
    return out


def _mcse_mean(draws: np.ndarray) -> float:
    import arviz as az

    return float(az.mcse(az.convert_to_dataset({"x": draws}), method="mean")["x"].values)


# ------------------------------------------------------------------------------------------
# PyMC worker (subprocess with single-threaded BLAS)
# ------------------------------------------------------------------------------------------


def _pymc_model(counts, W, membership, priors):
    """Build geosynth's default PaivaModel in PyMC on the identified coordinates (see module)."""
    import pymc as pm
    import pytensor.tensor as pt

    G, B = counts.shape
    P = membership.shape[1]
    pr = priors
    with pm.Model() as model:
        mu = pm.Normal("mu_star", 0.0, np.sqrt(pr["mu_var"] + pr["level_var"]))
        alpha = pm.Normal("alpha_star", 0.0, np.sqrt(pr["alpha_var"] + pr["level_var"]), shape=P)
        tau_theta = pm.Gamma("tau_theta", alpha=pr["theta_shape"], beta=pr["theta_rate"])
        tau_phi = pm.Gamma("tau_phi", alpha=pr["phi_shape"], beta=pr["phi_rate"], shape=P)
        tau_eps = pm.Gamma("tau_eps", alpha=pr["eps_shape"], beta=pr["eps_rate"])
        theta_raw = pm.ICAR("theta_raw", W=W, sigma=1.0)
        theta = theta_raw / pt.sqrt(tau_theta)
        phi_cols = []
        for p in range(P):
            raw = pm.ICAR(f"phi_raw_{p}", W=W, sigma=1.0)
            phi_cols.append(raw / pt.sqrt(tau_phi[p]))
        phi = pt.stack(phi_cols, axis=1)  # (G, P)
        z = pm.Normal("z_eps", 0.0, 1.0, shape=(G, B))
        eta = (mu + pt.dot(membership, alpha)[None, :] + theta[:, None]
               + pt.dot(phi, membership.T) + z / pt.sqrt(tau_eps))
        pm.Poisson("c", mu=pt.exp(eta), observed=counts)
    return model


def _pymc_worker(in_path: str, out_path: str) -> None:
    import pymc as pm

    inp = np.load(in_path)
    counts, W, membership = inp["counts"], inp["W"], inp["membership"]
    priors = json.loads(str(inp["priors"]))
    draws, tune = int(inp["draws"]), int(inp["tune"])
    model = _pymc_model(counts, W, membership, priors)
    start = time.perf_counter()
    with model:
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=2, random_seed=2014,
                          progressbar=False, compute_convergence_checks=False)
    total = time.perf_counter() - start
    post = idata.posterior
    tau_theta = post["tau_theta"].values
    theta = post["theta_raw"].values / np.sqrt(tau_theta)[..., None]
    theta_mean = theta.mean(axis=-1)
    mu = post["mu_star"].values + theta_mean
    theta_c = theta - theta_mean[..., None]
    alpha = post["alpha_star"].values
    tau_phi = post["tau_phi"].values
    P = membership.shape[1]
    phi = np.stack([post[f"phi_raw_{p}"].values / np.sqrt(tau_phi[..., p])[..., None]
                    for p in range(P)], axis=-1)  # (c, d, G, P)
    eta = (post["mu_star"].values[..., None, None] + (alpha @ membership.T)[..., None, :]
           + theta[..., None] + phi @ membership.T
           + post["z_eps"].values / np.sqrt(post["tau_eps"].values)[..., None, None])
    lam = np.exp(eta)
    ess = min_bulk_ess({"mu": mu, "tau_theta": tau_theta, "theta": theta_c, "lambda": lam})
    np.savez(
        out_path,
        seconds=float(post.attrs.get("sampling_time", total)), total_seconds=total,
        ess=json.dumps(ess), mu_mean=mu.mean(), mu_mcse=_mcse_mean(mu),
        tau_theta_mean=tau_theta.mean(), mean_lambda=lam.mean(axis=(0, 1)),
        divergences=int(idata.sample_stats["diverging"].values.sum()),
    )


# ------------------------------------------------------------------------------------------
# Driver
# ------------------------------------------------------------------------------------------


def _pymc_inputs(counts, model):
    from geosynth.model.fit import build_model_data

    data, _ = build_model_data(counts, model)
    G, B = data.counts.shape
    W = np.zeros((G, G))
    for i in range(G):
        W[i, data.indices[data.indptr[i]:data.indptr[i + 1]]] = 1.0
    P = int(data.level_combos_ptr.shape[0] - 1)
    membership = np.zeros((B, P))
    for k in range(data.combo_levels.shape[1]):
        has = data.combo_levels[:, k] >= 0
        membership[np.flatnonzero(has), data.combo_levels[has, k]] = 1.0
    return data.counts, W, membership


def _run_pymc(side: int, counts, model) -> dict | None:
    c, W, membership = _pymc_inputs(counts, model)
    draws, tune = PYMC_DRAWS[side]
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        np.savez(inp, counts=c, W=W, membership=membership, draws=draws, tune=tune,
                 priors=json.dumps(model.priors.to_dict()))
        env = {**os.environ, **SINGLE_THREAD}
        try:
            subprocess.run([sys.executable, "-m", "bench.bench_pymc", "--worker", inp, out],
                           env=env, cwd=ROOT, check=True, timeout=PYMC_TIMEOUT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except subprocess.TimeoutExpired:
            return None
        result = dict(np.load(out))
    result["ess"] = json.loads(str(result["ess"]))
    result["draws"], result["tune"] = draws, tune
    return result


def _run_geosynth(counts, model) -> dict:
    start = time.perf_counter()
    fit = model.fit(counts, chains=2, n_jobs=2, seed=2014, progress=False, **GIBBS)
    seconds = time.perf_counter() - start
    mu = fit.scalar("mu")
    ess = min_bulk_ess({"mu": mu, "tau_theta": fit.scalar("tau_theta"), "theta": fit.theta,
                        "lambda": np.exp(fit.eta.astype(np.float64))})
    return {"seconds": seconds, "ess": ess, "mu_mean": float(mu.mean()),
            "mu_mcse": _mcse_mean(mu), "tau_theta_mean": float(fit.scalar("tau_theta").mean()),
            "mean_lambda": fit.posterior_mean_lambda()}


def _worst(ess: dict) -> tuple[str, float]:
    name = min(ess, key=ess.get)
    return name, ess[name]


def run() -> str:
    """Fit each lattice with both samplers; return a Markdown table."""
    from geosynth import PaivaModel

    warnings.filterwarnings("ignore", category=FutureWarning)
    model = PaivaModel()
    model.fit(_counts(10), n_iter=20, burn_in=10, chains=1, seed=0, progress=False)  # compile
    lines = [
        "| G | B | geosynth s (sweeps) | PyMC s (draws+tune) | geosynth min ESS/s (worst) | "
        "PyMC min ESS/s (worst) | ratio geosynth/PyMC | corr(mean λ) | μ geosynth / PyMC | "
        "\\|Δμ\\| / MC se | τ_θ geosynth / PyMC | PyMC divergences |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for side in SIDES:
        counts = _counts(side)
        G, B = counts.counts.shape
        gs = _run_geosynth(counts, model)
        pm_res = _run_pymc(side, counts, model)
        g_name, g_ess = _worst(gs["ess"])
        g_rate = g_ess / gs["seconds"]
        head = (f"| {G:,} | {B} | {gs['seconds']:.1f} ({GIBBS['n_iter']:,}) | ")
        if pm_res is None:
            draws, tune = PYMC_DRAWS[side]
            lines.append(head + f"> {PYMC_TIMEOUT} ({draws}+{tune}, capped: not finished) | "
                         f"{g_rate:.1f} ({g_name}) | – | – | – | {gs['mu_mean']:.3f} / – | – | "
                         f"{gs['tau_theta_mean']:.2f} / – | – |")
            continue
        p_name, p_ess = _worst(pm_res["ess"])
        p_rate = p_ess / float(pm_res["seconds"])
        corr = np.corrcoef(gs["mean_lambda"].ravel(), pm_res["mean_lambda"].ravel())[0, 1]
        se = np.hypot(gs["mu_mcse"], float(pm_res["mu_mcse"]))
        dmu = abs(gs["mu_mean"] - float(pm_res["mu_mean"])) / se
        lines.append(
            head + f"{float(pm_res['seconds']):.1f} ({pm_res['draws']}+{pm_res['tune']}) | "
            f"{g_rate:.1f} ({g_name}) | {p_rate:.2f} ({p_name}) | {g_rate / p_rate:.1f} | "
            f"{corr:.4f} | {gs['mu_mean']:.3f} / {float(pm_res['mu_mean']):.3f} | {dmu:.2f} | "
            f"{gs['tau_theta_mean']:.2f} / {float(pm_res['tau_theta_mean']):.2f} | "
            f"{int(pm_res['divergences'])} |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        "Both: 2 chains on 2 cores. geosynth: fit() defaults (8,000 sweeps, 2,000 burn-in, "
        "thin 6: 1,000 draws/chain), wall time of fit(). PyMC: default NUTS, sampling_time "
        "(compilation excluded). min ESS over μ (= μ + mean θ), τ_θ, every centred θ_i and every "
        "λ_ib. See the module docstring for how the ICAR mean priors were matched.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        _pymc_worker(sys.argv[2], sys.argv[3])
    else:
        print(run())
