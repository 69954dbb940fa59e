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
by those seconds (the worst group and its ESS in brackets); the ratio geosynth/PyMC of min
ESS/s; the agreement checks and their verdict (``pass`` / ``FAIL``):

* corr(mean λ) > 0.99 — the correlation of the two posterior means of λ over the G·B cells
  (issue 9's bound). The cells' posterior means differ far more than their Monte Carlo error,
  so the two samplers gave 0.9997–0.9998 at G = 100, 400 and 1,600; a wrong ICAR scale, prior
  or linear predictor in either moves whole regions and drops it. Correlation is blind to a
  common shift or scale, which is what the μ check is for.
* |Δμ| / MC se < 3 — Δμ is the difference of the two posterior means of μ = μ + mean θ and
  se = sqrt(mcse_geosynth² + mcse_PyMC²), each mcse from its own chains' bulk ESS (arviz).
  The two estimates are independent, so if both samplers target the same posterior Δμ/se is
  approximately N(0, 1) (a t with tens of degrees of freedom, since the mcse is itself
  estimated from a few hundred draws): |Δμ| > 3 se then happens with probability ≈ 0.3–0.5 %
  per lattice, < 2 % for the three lattices together. With μ's ESS ~500–1,000 (geosynth) and a
  few hundred (PyMC), se ≈ 0.07 posterior sd, so the check flags a disagreement in μ of
  ~0.2 posterior sd or more.

PyMC run length (``PYMC_DRAWS``): NUTS's default 1:1 tune:draws ratio, 500 + 500 per chain at
every G, all of it inside ``sampling_time`` (geosynth's time likewise includes its burn-in).
Shorter runs do not give a usable minimum: a 200 + 200 probe at G = 1,600 left min bulk ESS 30
(θ; 165 from 500 + 500), and the earlier 100 + 100 there is shorter still. Even from 2 × 500
draws the minimum over thousands of parameters is a low, noisy extreme, so the ratios are good
to tens of per cent, not to the digit. Costs measured with the 2 cores shared by 4–8 other
jobs (pessimistic): 358 s of sampling at G = 100 (NUTS tree depth ~8), 128 s at G = 400 (a
lighter moment) and 399 s at G = 1,600 (tree depth ~6: ~140 leapfrog steps per iteration while
tuning, ~60 after, at several ms each); the pymc section took ~7, ~3 and ~11.5 min for one
lattice each there, so ~20–25 min loaded for all three and roughly half that on an idle machine.

The PyMC peer lives in its own virtualenv: pymc pins pytensor, and pytensor pins numba ≤ 0.65.1,
while geosynth is benchmarked on its own numba (0.68 at the time of writing), so the two cannot
share an environment and pymc is deliberately not an extra of this package. ``make bench``
creates ``.venv-pymc`` (``python3 -m venv`` + ``pip install "pymc>=5.10,<6"``; arviz and numpy
come with it, and the worker imports nothing else — not geosynth) behind a stamp file and
passes its interpreter as ``BENCH_PYMC_PYTHON``. Without that variable the worker runs under
``sys.executable`` when pymc imports there, else under ``.venv-pymc/bin/python`` when it exists;
with no peer at all the table says so in every PyMC column and its note says how to get one.
pytensor's "could not link to a BLAS installation" warning (pip wheels) is harmless here: the
only dense products are (G × 4)(4 × 12) and smaller, and go through NumPy's own BLAS.

Run: ``make bench`` (all benchmarks), or ``make .venv-pymc/.installed-stamp`` once and then
``python -m bench pymc``; ``BENCH_PYMC_SIDES=10,20`` limits the lattice sides.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

SIDES = tuple(int(s) for s in os.environ.get("BENCH_PYMC_SIDES", "10,20,40").split(","))
# (draws, tune) per chain of PyMC NUTS: see "PyMC run length" in the module docstring.
PYMC_DRAWS = {10: (500, 500), 20: (500, 500), 40: (500, 500)}
# Seconds per lattice before the PyMC row is reported as capped: ~3x the sampling time measured
# with the 2 cores shared by 4-8 other jobs (~6-7 min at every G, compilation included).
PYMC_TIMEOUT = 1200
CORR_MIN = 0.99  # agreement: corr(mean λ) must exceed this
DMU_MAX = 3.0  # agreement: |Δμ| / MC se must stay below this (justified in the docstring)
GIBBS = {"n_iter": 8000, "burn_in": 2000, "thin": 6}  # the fit() defaults: 1,000 draws/chain
SINGLE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
PEER_ENV = "BENCH_PYMC_PYTHON"
PEER_HINT = (
    "run `make bench` (it creates .venv-pymc with `pip install \"pymc>=5.10,<6\"`), or "
    "`make .venv-pymc/.installed-stamp` and rerun, or set BENCH_PYMC_PYTHON to a Python that "
    "has pymc (not the geosynth venv: pymc's pytensor pins numba <= 0.65.1)"
)
_PROBE = (
    "import importlib.metadata as m, json, arviz, pymc\n"
    "v = {}\n"
    "for n in ('pymc', 'pytensor', 'arviz', 'numpy', 'numba'):\n"
    "    try:\n"
    "        v[n] = m.version(n)\n"
    "    except m.PackageNotFoundError:\n"
    "        pass\n"
    "print(json.dumps(v))\n"
)
ROOT = Path(__file__).resolve().parent.parent
PEER_VENV_PYTHON = ROOT / ".venv-pymc" / "bin" / "python"


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


def find_peer() -> tuple[str | None, dict | str]:
    """The interpreter to run the PyMC worker under, and its package versions (or why none).

    ``BENCH_PYMC_PYTHON`` when set (and then only it), else ``sys.executable`` when pymc is
    importable there, else ``.venv-pymc/bin/python`` when it exists. Each candidate is probed
    by importing pymc and arviz in it.
    """
    explicit = os.environ.get(PEER_ENV)
    if explicit:
        candidates = [os.path.abspath(explicit)]  # abspath: a venv's python is a symlink
    else:
        candidates = [str(PEER_VENV_PYTHON)]
        if importlib.util.find_spec("pymc") is not None:
            candidates.insert(0, sys.executable)
    problems = []
    for python in candidates:
        if not os.access(python, os.X_OK):
            problems.append(f"{python} does not exist")
            continue
        try:
            proc = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True,
                                  timeout=600, cwd=ROOT, env={**os.environ, **SINGLE_THREAD})
        except subprocess.TimeoutExpired:
            problems.append(f"{python} did not import pymc within 600 s")
            continue
        if proc.returncode == 0:
            return python, json.loads(proc.stdout.strip().splitlines()[-1])
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        problems.append(f"{python} cannot import pymc ({tail})")
    if not explicit and len(candidates) == 1:
        problems.insert(0, f"pymc is not importable in {sys.executable}")
    return None, "; ".join(problems)


def _run_pymc(python: str, side: int, counts, model) -> dict:
    c, W, membership = _pymc_inputs(counts, model)
    draws, tune = PYMC_DRAWS[side]
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        np.savez(inp, counts=c, W=W, membership=membership, draws=draws, tune=tune,
                 priors=json.dumps(model.priors.to_dict()))
        env = {**os.environ, **SINGLE_THREAD}
        # Own session, so that a timeout ends the worker's chain processes with it.
        proc = subprocess.Popen([python, "-m", "bench.bench_pymc", "--worker", inp, out],
                                env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=PYMC_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"status": "capped", "draws": draws, "tune": tune}
        except BaseException:  # e.g. Ctrl-C: the worker's own session does not get the SIGINT
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        if proc.returncode != 0:
            tail = (stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            print(f"PyMC worker failed at G = {c.shape[0]:,}:\n{stderr}", file=sys.stderr)
            return {"status": "failed", "error": tail.replace("|", "\\|"), "draws": draws,
                    "tune": tune}
        result = dict(np.load(out))
    result["ess"] = json.loads(str(result["ess"]))
    result.update(status="ok", draws=draws, tune=tune)
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


def agreement(corr: float, dmu: float) -> str:
    """Verdict of the two agreement checks: ``pass`` or ``FAIL`` naming the failed checks."""
    failed = []
    if not corr > CORR_MIN:  # `not >` so that a NaN fails
        failed.append(f"corr ≤ {CORR_MIN}")
    if not dmu < DMU_MAX:
        failed.append(f"\\|Δμ\\| ≥ {DMU_MAX:g} se")
    return "pass" if not failed else "**FAIL**: " + ", ".join(failed)


HEADER = [
    "| G | B | geosynth s (sweeps) | PyMC s (tune+draws) | geosynth min ESS/s (worst: ESS) | "
    "PyMC min ESS/s (worst: ESS) | ratio geosynth/PyMC | corr(mean λ) | μ geosynth / PyMC | "
    "\\|Δμ\\| / MC se | agreement | τ_θ geosynth / PyMC | PyMC divergences |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
]


def run() -> str:
    """Fit each lattice with both samplers; return a Markdown table."""
    from geosynth import PaivaModel

    warnings.filterwarnings("ignore", category=FutureWarning)
    python, peer = find_peer()
    if python is None:
        print(f"PyMC peer NOT available, the PyMC columns will be empty: {peer}. To get it: "
              f"{PEER_HINT}.", flush=True)
    else:
        print(f"PyMC peer: {python} ({_versions(peer)})", flush=True)
    model = PaivaModel()
    model.fit(_counts(10), n_iter=20, burn_in=10, chains=1, seed=0, progress=False)  # compile
    lines = list(HEADER)
    verdicts = {}
    for side in SIDES:
        counts = _counts(side)
        G, B = counts.counts.shape
        gs = _run_geosynth(counts, model)
        g_name, g_ess = _worst(gs["ess"])
        g_rate = g_ess / gs["seconds"]
        head = (f"| {G:,} | {B} | {gs['seconds']:.1f} ({GIBBS['n_iter']:,}) | ")
        g_cols = f"{g_rate:.1f} ({g_name}: {g_ess:.0f})"
        draws, tune = PYMC_DRAWS[side]
        pm_res = {"status": "no peer"} if python is None else _run_pymc(python, side, counts, model)
        if pm_res["status"] != "ok":
            why = {"no peer": "not run: no PyMC peer (see note)",
                   "capped": f"> {PYMC_TIMEOUT} ({tune}+{draws}): capped, not finished",
                   "failed": f"failed ({tune}+{draws}): {pm_res.get('error', '')}"}
            verdicts[G] = "not checked"
            lines.append(head + f"{why[pm_res['status']]} | {g_cols} | – | – | – | "
                         f"{gs['mu_mean']:.3f} / – | – | not checked | "
                         f"{gs['tau_theta_mean']:.2f} / – | – |")
            print(lines[-1], flush=True)
            continue
        p_name, p_ess = _worst(pm_res["ess"])
        p_rate = p_ess / float(pm_res["seconds"])
        corr = np.corrcoef(gs["mean_lambda"].ravel(), pm_res["mean_lambda"].ravel())[0, 1]
        se = np.hypot(gs["mu_mcse"], float(pm_res["mu_mcse"]))
        dmu = abs(gs["mu_mean"] - float(pm_res["mu_mean"])) / se
        verdicts[G] = agreement(corr, dmu)
        lines.append(
            head + f"{float(pm_res['seconds']):.1f} ({pm_res['tune']}+{pm_res['draws']}) | "
            f"{g_cols} | {p_rate:.2f} ({p_name}: {p_ess:.0f}) | {g_rate / p_rate:.1f} | "
            f"{corr:.4f} | {gs['mu_mean']:.3f} / {float(pm_res['mu_mean']):.3f} | {dmu:.2f} | "
            f"{verdicts[G]} | "
            f"{gs['tau_theta_mean']:.2f} / {float(pm_res['tau_theta_mean']):.2f} | "
            f"{int(pm_res['divergences'])} |"
        )
        print(lines[-1], flush=True)
    lines += ["", _summary(verdicts, python, peer), "", _note(python, peer)]
    return "\n".join(lines)


def _short(python: str) -> str:
    path = Path(python)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else python


def _versions(peer: dict) -> str:
    return ", ".join(f"{name} {version}" for name, version in peer.items())


def _summary(verdicts: dict, python: str | None, peer) -> str:
    failed = [G for G, v in verdicts.items() if v.startswith("**FAIL")]
    unchecked = [G for G, v in verdicts.items() if v == "not checked"]
    if python is None:
        return (f"**Agreement checks: NOT RUN — no PyMC peer** ({peer}). To get it: "
                f"{PEER_HINT}.")
    parts = []
    if failed:
        parts.append("**FAILED** at G = " + ", ".join(f"{G:,}" for G in failed))
    if unchecked:
        parts.append("not checked at G = " + ", ".join(f"{G:,}" for G in unchecked)
                     + " (PyMC did not finish)")
    if not parts:
        parts.append(f"pass at every G (corr(mean λ) > {CORR_MIN} and \\|Δμ\\| < {DMU_MAX:g} "
                     "MC se)")
    return "**Agreement checks:** " + "; ".join(parts) + "."


def _note(python: str | None, peer) -> str:
    runs = ", ".join(f"G = {s * s:,}: {t}+{d}" for s, (d, t) in PYMC_DRAWS.items()
                     if s in SIDES)
    peer_text = (f"PyMC peer {_versions(peer)} under {_short(python)}" if python
                 else "PyMC peer not available")
    return (
        "Both: 2 chains on 2 cores, same data, model and priors. geosynth: fit() defaults "
        "(8,000 sweeps, 2,000 burn-in, thin 6: 1,000 draws/chain), wall time of fit(). PyMC: "
        f"default NUTS (jitter+adapt_diag, target_accept 0.8), tune+draws per chain {runs}, "
        "sampling_time including tuning, compilation excluded, BLAS pinned to one thread; "
        f"{peer_text}. min bulk ESS over μ (= μ + mean θ), τ_θ, every centred θ_i and every "
        "λ_ib; the minimum over thousands of λ from 2 chains of those draws is a noisy low "
        "extreme, so the ratios are good to tens of per cent, not to the digit. Agreement: "
        f"corr(mean λ) over the G·B cells > {CORR_MIN} and \\|Δμ\\| / sqrt(mcse² + mcse²) < "
        f"{DMU_MAX:g} (why: module docstring, which also says how the ICAR mean priors were "
        "matched)."
    )


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        _pymc_worker(sys.argv[2], sys.argv[3])
    else:
        print(run())
