"""Same model, same data, same priors: geosynth's samplers against PyMC 6 (default NUTS, nutpie).

Data: the Nunes (2018) scenario with 5 records per cell on sqrt(G) x sqrt(G) lattices over the
study square, attributes y, x1, x2 (B = 12 combinations, P = 4 non-baseline levels), the
default :class:`geosynth.PaivaModel` (attribute effects, no β) and :class:`geosynth.Priors`.
Every tool runs 2 chains on the 2 cores, one after another in the same run, on the same counts.

**Tools.** geosynth with every sampler the installed :class:`geosynth.PaivaModel` accepts
(:func:`available_samplers`: the values of its ``sampler`` argument, or the one single-site
Gibbs sampler, called ``gibbs`` here, when it has none; ``--samplers`` picks some), and two
peers, each in a subprocess of its own virtualenv (``.venv-pymc``):

* ``pymc``: PyMC's own NUTS (``pm.sample(nuts_sampler="pymc")``: jitter+adapt_diag init,
  target_accept 0.8, 2 chains in 2 processes), with pytensor's default numba backend. PyMC 6.4
  itself picks nutpie when ``nuts_sampler`` is not given and nutpie is installed (as in our
  ``.venv-pymc``), so the worker always names the sampler.
* ``nutpie``: ``pm.sample(nuts_sampler="nutpie")`` (Rust NUTS with its own mass-matrix
  adaptation, the model compiled through numba by ``nutpie.compile_pymc_model``, 2 chains in 2
  threads).

**Times exclude compilation.** geosynth: wall time of ``fit()`` after a warm-up fit of the same
sampler on a small lattice (numba compiled; the block sampler's sparse set-up is per fit and
counted). PyMC and nutpie: ``sampling_time`` of the trace (tuning included, the pytensor/numba
functions built before), in a worker process with OPENBLAS/OMP/MKL_NUM_THREADS=1 (PyMC's two
chain processes otherwise stall on the BLAS thread pools). The worker's compile + set-up time
is the rest of its wall time and reported beside it.

**Seeds.** The data are always those of :data:`SEED`. ``--seeds`` runs every tool once per
chain seed (default :data:`SEED` alone) and reports the ratio of the mean min ESS/s over the
seeds with its delta-method standard error (:func:`bench._stats.ratio_of_means`): the minimum
over ~10⁵ parameters is a noisy low extreme, and one seed's ratio moves by tens of per cent.
An agreement check fails if it fails at any seed.

**Run lengths.** geosynth: a fixed number of sweeps, the ``fit()`` defaults at every G (8,000
sweeps, 2,000 burn-in), so ESS/s is a rate over a fixed run, as for the peers. Every sweep
after the burn-in is kept (:func:`gibbs_thin`: thin 1, or the smallest divisor of ``fit()``'s
default thin that keeps the stored η draws within :data:`ETA_BUDGET` — thin 2 at G = 6,400),
as the peers keep every draw and ``bench_berlin`` every sweep: ESS measures the chain, and
thinning a chain whose λ's are nearly independent from sweep to sweep throws most of their
ESS away (at G = 1,600 every 6th sweep held a minimum of ~1,200–1,300 over the λ's against
~6,000 for every sweep; the precisions, with autocorrelation times of 5–7 sweeps, lose
less). The notes give the minimum ESS of every ``fit()``-default-thin-th sweep of the same
chains, the figure of the entries in ``bench/RESULTS.md`` before 2026-11-27's fifth session.
PyMC and nutpie: 1,000 tuning steps (PyMC's default) + 3,000 draws per chain
(``--peer-run``), so the peers spend the same fraction of their run warming up as geosynth
(a quarter). Until 2026-11-28's thirteenth session the peers ran 500 + 500 (NUTS's 1:1
default ratio, at half PyMC's default length): that left NUTS unconverged at G ≥ 1,600 (R-hat
1.03–1.07), made the μ agreement check measure the peer's own Monte Carlo error (it failed at
one seed of five at 1,600, and passed at 0.44 se with 1,000 + 4,000 on the same seed), and
spent half the peer's time in tuning against a quarter of geosynth's — at 1,600 NUTS's min
ESS/s was 2.2 times lower than from 1,000 + 4,000 draws, so the ratios of the earlier entries
in ``bench/RESULTS.md`` flatter geosynth by about that factor. Shorter runs do not give a
usable minimum: from 2 × 200 draws the minimum over thousands of λ's is mostly noise.

**ESS.** One function for every tool: bulk ESS and rank R-hat of every parameter from
:func:`geosynth.model.diagnostics.convergence_diagnostics` (arviz's definitions, vectorised;
the peers' θ and η draws are shipped back as float32 arrays, as geosynth stores them), over
μ (= μ + mean θ), every α (= α + mean φ), every τ (τ_θ, every τ_φ, τ_ε), every centred θ_i
and every λ_ib (through η = log λ: ranks, so the same ESS). The table gives min bulk ESS/s,
the worst parameter and its ESS, the minimum of each group, and the largest R-hat (a minimum
over ~10⁵ parameters from 2 chains of a few thousand draws is a low, noisy extreme: ratios are
good to tens of per cent).

**The PyMC model** (:func:`_pymc_model`) is geosynth's model written on its identified
coordinates. geosynth puts on each ICAR field f (θ and every φ_·p) the ICAR density with
precision τ times a N(0, ``level_var``) prior on the field's mean. With one connected component
(a regular lattice) that prior factorises exactly into f = f_c + m·1 with the centred field
f_c ~ ICAR(τ) on the sum-to-zero subspace (normaliser τ^{(G−1)/2}) and m ~ N(0, level_var)
independent of it. The likelihood sees only μ + m_θ and α_p + m_φp, so integrating out the
non-identified split gives the identified intercept μ* = μ + mean θ ~ N(0, mu_var + level_var)
and level effects α*_p = α_p + mean φ_p ~ N(0, alpha_var + level_var): exactly the quantities
geosynth records as ``mu`` and ``alpha[...]``. In PyMC the centred fields are
``pm.ICAR(W=dense adjacency, sigma=1)`` divided by sqrt(τ) (non-centred). pm.ICAR's own
``sigma`` is left at 1 because its logp omits the −(G−1)·log σ normaliser (still so in PyMC
6.4), so a free sigma would put the wrong prior on τ; its soft sum-to-zero term
(``zero_sum_stdev`` = 0.001: sum of the field ~ N(0, (0.001·G)²), i.e. its mean ~ N(0, 0.001²))
stands in for the hard constraint. The remaining mean of θ (≤ 0.001/sqrt(τ_θ)) is added back:
μ is reported as μ* + mean θ and θ centred, as geosynth does; likewise α. ε_ib = z_ib /
sqrt(τ_ε), z ~ N(0, 1) (non-centred: the counts are ~0.4 per (i, b)). Gamma priors
Gamma(shape, rate) on τ_θ, τ_φp, τ_ε as in Priors.

**Agreement checks**, for each peer against each geosynth sampler (and for each further
geosynth sampler against the first), with their verdict (``pass`` / ``FAIL``):

* corr(mean λ) > 0.99 — the correlation of the two posterior means of λ over the G·B cells
  (issue 9's bound). The cells' posterior means differ far more than their Monte Carlo error,
  so the two samplers gave 0.9997–0.9998 at G = 100, 400 and 1,600; a wrong ICAR scale, prior
  or linear predictor in either moves whole regions and drops it. Correlation is blind to a
  common shift or scale, which is what the μ check is for.
* |Δμ| / MC se < 3 — Δμ is the difference of the two posterior means of μ = μ + mean θ and
  se = sqrt(mcse_1² + mcse_2²), each mcse arviz's ``mcse(method="mean")`` of its own chains
  (sd / sqrt(ESS of the mean): the classic ESS, not the rank-normalised bulk ESS). The two
  estimates are independent, so if both samplers target the same posterior Δμ/se is
  approximately N(0, 1) (a t with tens of degrees of freedom, since the mcse is itself
  estimated from a few hundred draws): |Δμ| > 3 se then happens with probability ≈ 0.3–0.5 %
  per comparison. With μ's ESS of a few hundred, se ≈ 0.07 posterior sd, so the check flags a
  disagreement in μ of ~0.2 posterior sd or more.
* max |Δ mean| / MC se < 3.5 over the scalars (μ, each α, each τ), each as the μ check: the
  precisions set both tools' minimum ESS, and a prior's Gamma rate read as a scale, or τ_φ's
  rate 10 times too large, left corr(mean λ) above 0.9996. With about ten scalars, 3.5 keeps
  the chance of a false failure near 0.5 % per comparison, as 3 does for μ alone.

**Large lattices, geosynth alone** (``--auto-sizes``, default G = 25,600 and 102,400; skipped
by ``--quick``): ``fit(n_iter="auto", target_ess=400, max_rhat=1.01, max_seconds=...)`` with
the default sampler of :class:`geosynth.PaivaModel` (``--auto-samplers`` adds others;
:mod:`geosynth.model.stopping`), reporting how it stopped, its sweeps, seconds, min bulk ESS
and max R-hat, with ``max_bytes`` = 8 GiB (the default 4 GiB is refused at 102,400 cells: it
holds 394 draws of η per chain, fewer than ``target_ess``). ``max_seconds``
(``--max-seconds``, default 600: the issue's 10-minute target at G = 25,600) bounds each fit;
the warm-up of an auto fit always completes (256 sweeps at the defaults, which keep every
sweep at first: ~3–4 min for the single-site sampler at 102,400).

**The peer's virtualenv.** pymc pins its own numba/pytensor, while geosynth is benchmarked on
its own numba, and PyMC ≥ 6 needs Python ≥ 3.12, so the peer lives in ``.venv-pymc``, built by
``make bench`` from ``PYMC_PYTHON`` (the first Python ≥ 3.12 the Makefile finds) with
``pip install "pymc>=6.4" "nutpie>=0.16" arviz`` (the newest releases; nothing older may be
benchmarked). The worker imports numpy, pymc and nutpie only — not geosynth. Without
``BENCH_PYMC_PYTHON`` the worker runs under ``sys.executable`` when pymc ≥ 6 imports there,
else under ``.venv-pymc/bin/python`` when it exists; with no peer the table says so in every
peer row and its note says how to get one.

Run: ``make bench`` (all benchmarks); ``python -m bench pymc`` (options in the environment
variable ``BENCH_PYMC_ARGS``, e.g. ``BENCH_PYMC_ARGS="--quick --sizes 400,1600"``); or
``python -m bench.bench_pymc [--quick] [--sizes ...] [--auto-sizes ...] [--samplers ...]
[--auto-samplers ...] [--peers ...] [--max-seconds ...]`` (prints the table only).
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench._stats import ratio_of_means, seed_list

SIZES = (400, 1600, 6400)  # compared with the peers
AUTO_SIZES = (25_600, 102_400)  # geosynth alone, n_iter="auto"
PEERS = ("pymc", "nutpie")
PEER_LABELS = {"pymc": "PyMC NUTS", "nutpie": "nutpie"}
MAX_SECONDS = 600.0
# max_bytes of the n_iter="auto" fits: the default 4 GiB holds 394 draws of η per chain at
# G = 102,400 x B = 12, and an auto fit refuses with fewer than target_ess = 400 per chain.
AUTO_MAX_BYTES = 8 * 2**30
# Per chain, both peers (``--peer-run``): see "Run lengths" in the module docstring.
TUNE, DRAWS = 1000, 3000
# Seconds of one peer run (compilation included) before it is reported as capped.
PEER_TIMEOUT = 2400
CORR_MIN = 0.99  # agreement: corr(mean λ) must exceed this
DMU_MAX = 3.0  # agreement: |Δμ| / MC se must stay below this (justified in the docstring)
SCALARS_MAX = 3.5  # agreement: max over μ, α, τ of |Δ mean| / MC se (justified in the docstring)
GIBBS = {"n_iter": 8000, "burn_in": 2000}  # the fit() defaults' run length
# Bytes the stored η draws (float32) of a fixed-length geosynth run may take: every sweep is
# kept while they fit (see "Run lengths" in the module docstring).
ETA_BUDGET = 2 * 2**30
SEED = 2014
SINGLE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
PEER_ENV = "BENCH_PYMC_PYTHON"
ARGS_ENV = "BENCH_PYMC_ARGS"
PEER_HINT = (
    "run `make bench` (it creates .venv-pymc from a Python >= 3.12 with `pip install "
    "\"pymc>=6.4\" \"nutpie>=0.16\" arviz`), or `make .venv-pymc/.installed-stamp` and rerun, "
    "or set BENCH_PYMC_PYTHON to a Python that has pymc >= 6 and nutpie (not the geosynth "
    "venv: pymc pins its own numba and pytensor)"
)
_PROBE = (
    "import importlib.metadata as m, json, platform, pymc\n"
    "assert int(pymc.__version__.split('.')[0]) >= 6, 'pymc ' + pymc.__version__ + ' < 6'\n"
    "v = {'python': platform.python_version()}\n"
    "for n in ('pymc', 'pytensor', 'nutpie', 'numba', 'numpy', 'arviz'):\n"
    "    try:\n"
    "        v[n] = m.version(n)\n"
    "    except m.PackageNotFoundError:\n"
    "        pass\n"
    "print(json.dumps(v))\n"
)
ROOT = Path(__file__).resolve().parent.parent
PEER_VENV_PYTHON = ROOT / ".venv-pymc" / "bin" / "python"
GROUPS = ("mu", "alpha", "tau", "theta", "lambda")


@dataclass(frozen=True)
class Options:
    """What one run of the benchmark covers (see :func:`parse_options`)."""

    sizes: tuple[int, ...] = SIZES
    auto_sizes: tuple[int, ...] = AUTO_SIZES
    samplers: tuple[str, ...] | None = None  # None: every sampler PaivaModel accepts
    auto_samplers: tuple[str, ...] | None = None  # None: PaivaModel's default sampler
    peers: tuple[str, ...] = PEERS
    max_seconds: float = MAX_SECONDS
    seeds: tuple[int, ...] = (SEED,)  # the chains' seeds of the comparison (data: SEED)
    peer_run: tuple[int, int] = (TUNE, DRAWS)  # the peers' tuning steps and draws per chain


def _size_list(text: str) -> tuple[int, ...]:
    sizes = tuple(int(s.replace("_", "").replace(",", "")) for s in text.split(",") if s)
    for G in sizes:
        side = math.isqrt(G)
        if side * side != G or G < 4:
            raise argparse.ArgumentTypeError(
                f"lattice sizes are squares of a side >= 2 (e.g. 400 = 20 x 20), got {G}")
    return sizes


def peer_run(text: str) -> tuple[int, int]:
    """``TUNE+DRAWS`` (e.g. ``1000+3000``) as ``(tune, draws)``: tune ≥ 1, draws ≥ 2."""
    parts = text.split("+")
    try:
        tune, draws = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected TUNE+DRAWS, two integers joined by '+' (e.g. 1000+3000), got {text!r}"
        ) from None
    if tune < 1 or draws < 2:
        raise argparse.ArgumentTypeError(
            f"TUNE+DRAWS needs tune >= 1 and draws >= 2 per chain, got {text!r}")
    return tune, draws


def positive_seconds(text: str) -> float:
    """``--max-seconds``: a finite number of seconds > 0 (``fit`` refuses others, but only
    after the whole comparison has run)."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise argparse.ArgumentTypeError(
            f"--max-seconds is a finite number of seconds > 0 (e.g. 600), got {text!r}")
    return seconds


def _name_list(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m bench.bench_pymc`` (also read from ``BENCH_PYMC_ARGS``)."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_pymc",
        description="geosynth's samplers against PyMC 6 (default NUTS and nutpie): min bulk "
                    "ESS/s and agreement on the same model, data and priors.")
    parser.add_argument("--sizes", type=_size_list, default=SIZES,
                        help="lattice sizes G compared with the peers (squares; default "
                             "400,1600,6400)")
    parser.add_argument("--auto-sizes", type=_size_list, default=AUTO_SIZES,
                        help="lattice sizes fitted by geosynth alone with n_iter='auto' "
                             "(default 25600,102400; '' for none)")
    parser.add_argument("--quick", action="store_true",
                        help="skip the geosynth-alone rows (same as --auto-sizes '')")
    parser.add_argument("--samplers", type=_name_list, default=None,
                        help="geosynth samplers, e.g. gibbs,block (default: every sampler "
                             "PaivaModel accepts)")
    parser.add_argument("--auto-samplers", type=_name_list, default=None,
                        help="geosynth samplers of the n_iter='auto' rows (default: the one "
                             "PaivaModel uses by default)")
    parser.add_argument("--peers", type=_name_list, default=PEERS,
                        help="peers among pymc,nutpie (default both; '' for none)")
    parser.add_argument("--max-seconds", type=positive_seconds, default=MAX_SECONDS,
                        help="max_seconds of each n_iter='auto' fit (default 600)")
    parser.add_argument("--seeds", type=seed_list, default=(SEED,),
                        help="the chains' seeds of the comparison, one run of every tool per "
                             f"seed, ratios of the mean ESS/s (default {SEED}; the data are "
                             f"always those of seed {SEED})")
    parser.add_argument("--peer-run", type=peer_run, default=(TUNE, DRAWS),
                        help="the peers' tuning steps + draws per chain (default "
                             f"{TUNE}+{DRAWS}: the warm-up fraction of geosynth's fit())")
    return parser


def parse_options(argv: list[str] | None = None) -> Options:
    """Options from ``argv`` (default: the ``BENCH_PYMC_ARGS`` environment variable).

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments; None reads ``shlex.split(os.environ["BENCH_PYMC_ARGS"])``.

    Returns
    -------
    Options
    """
    if argv is None:
        argv = shlex.split(os.environ.get(ARGS_ENV, ""))
    args = build_parser().parse_args(argv)
    unknown = [p for p in args.peers if p not in PEERS]
    if unknown:
        build_parser().error(f"--peers: unknown {unknown}; choose among {', '.join(PEERS)}")
    return Options(sizes=args.sizes, auto_sizes=() if args.quick else args.auto_sizes,
                   samplers=args.samplers, auto_samplers=args.auto_samplers, peers=args.peers,
                   max_seconds=args.max_seconds, seeds=args.seeds, peer_run=args.peer_run)


# ------------------------------------------------------------------------------------------
# geosynth's samplers
# ------------------------------------------------------------------------------------------


def available_samplers(model_class=None) -> tuple[str, ...]:
    """Names of the samplers ``PaivaModel(sampler=...)`` accepts, default first.

    Read from the ``sampler`` parameter of ``model_class`` (default
    :class:`geosynth.PaivaModel`): the quoted values of its annotation (a ``Literal``) and its
    default, each kept when constructing the model with it succeeds. A model without that
    parameter has the single-site Gibbs sampler only, reported as ``("gibbs",)``.

    Parameters
    ----------
    model_class : type, optional
        A class with the signature of :class:`geosynth.PaivaModel`.

    Returns
    -------
    tuple of str
    """
    if model_class is None:
        from geosynth import PaivaModel as model_class
    parameter = inspect.signature(model_class).parameters.get("sampler")
    if parameter is None:
        return ("gibbs",)
    annotation = parameter.annotation
    text = annotation if isinstance(annotation, str) else repr(annotation)
    candidates = [a or b for a, b in re.findall(r"\"([^\"]+)\"|'([^']+)'", text)]
    default = parameter.default
    if isinstance(default, str):
        candidates.insert(0, default)
    if not candidates:
        candidates = ["gibbs", "block"]
    accepted = []
    for name in dict.fromkeys(candidates):
        try:
            model_class(sampler=name)
        except (ValueError, TypeError):
            continue
        accepted.append(name)
    return tuple(accepted)


def make_model(sampler: str, model_class=None):
    """``PaivaModel(sampler=sampler)``, or ``PaivaModel()`` for "gibbs" when it has no sampler.

    Parameters
    ----------
    sampler : str
        One of :func:`available_samplers`.
    model_class : type, optional
        Default :class:`geosynth.PaivaModel`.

    Returns
    -------
    PaivaModel
    """
    if model_class is None:
        from geosynth import PaivaModel as model_class
    if "sampler" in inspect.signature(model_class).parameters:
        return model_class(sampler=sampler)
    if sampler != "gibbs":
        raise ValueError(f"this geosynth has no sampler={sampler!r} (only 'gibbs')")
    return model_class()


def scenario_counts(G: int, records: int | None = None, seed: int = SEED,
                    levels: dict | None = None):
    """The bench's data: the Nunes (2018) scenario on a √G × √G lattice, attributes y, x1, x2.

    ``records`` defaults to 5 per cell; ``seed`` is the scenario's; ``levels`` prepares the
    counts on that public domain (what a DP release needs).
    """
    from geosynth import Grid, prepare
    from geosynth.datasets import paiva_scenario

    side = math.isqrt(G)
    scenario = paiva_scenario(n=5 * side * side if records is None else records, seed=seed)
    grid = Grid.regular(scenario.bounds, shape=(side, side), crs=scenario.crs)
    return prepare(scenario.data, grid, attributes=["y", "x1", "x2"], levels=levels)


# ------------------------------------------------------------------------------------------
# Diagnostics, the same for every tool
# ------------------------------------------------------------------------------------------


def ess_table(draws: dict[str, np.ndarray], names: dict[str, list[str]] | None = None) -> dict:
    """Bulk ESS and R-hat of every parameter of each group, through one function for all tools.

    Parameters
    ----------
    draws : dict of str to numpy.ndarray
        Group name (``mu``, ``alpha``, ``tau``, ``theta``, ``lambda``) to draws shaped
        (chains, draws, ...).
    names : dict of str to list of str, optional
        Names of a group's parameters (flattened order); default ``group[k]``.

    Returns
    -------
    dict
        ``min_ess`` per group, and over all of them: ``worst`` (name), ``worst_ess``,
        ``max_rhat`` and ``worst_rhat`` (name).
    """
    from geosynth.model.diagnostics import convergence_diagnostics

    names = names or {}
    out = {"min_ess": {}, "worst": "", "worst_ess": math.inf, "max_rhat": -math.inf,
           "worst_rhat": ""}
    for group, values in draws.items():
        result = convergence_diagnostics(np.asarray(values), workers=2)
        ess, rhat = result.ess_bulk, result.r_hat
        k = int(np.nanargmin(ess))
        j = int(np.nanargmax(rhat))
        label = names.get(group)
        out["min_ess"][group] = float(ess[k])
        if ess[k] < out["worst_ess"]:
            out["worst_ess"] = float(ess[k])
            out["worst"] = label[k] if label else _param_name(group, k, values.shape[2:])
        if rhat[j] > out["max_rhat"]:
            out["max_rhat"] = float(rhat[j])
            out["worst_rhat"] = label[j] if label else _param_name(group, j, values.shape[2:])
    return out


def _param_name(group: str, k: int, shape: tuple) -> str:
    if not shape:
        return group
    index = ",".join(str(int(i)) for i in np.unravel_index(k, shape))
    return f"{group}[{index}]"


def mcse_mean(draws: np.ndarray) -> float:
    """Monte Carlo standard error of the mean of ``draws`` (chains, draws), by arviz."""
    import arviz as az

    return float(az.mcse(az.convert_to_dataset({"x": np.asarray(draws, np.float64)}),
                         method="mean")["x"].values)


# ------------------------------------------------------------------------------------------
# PyMC worker (subprocess of the peer's venv, single-threaded BLAS; imports no geosynth)
# ------------------------------------------------------------------------------------------


def _pymc_model(counts, W, membership, priors):
    """Build geosynth's default PaivaModel in PyMC on the identified coordinates (see module)."""
    import pymc as pm
    import pytensor.tensor as pt

    G, B = counts.shape
    P = membership.shape[1]
    pr = priors
    with pm.Model() as model:
        pm.Normal("mu_star", 0.0, np.sqrt(pr["mu_var"] + pr["level_var"]))
        alpha = pm.Normal("alpha_star", 0.0, np.sqrt(pr["alpha_var"] + pr["level_var"]),
                          shape=P)
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
        eta = (model["mu_star"] + pt.dot(membership, alpha)[None, :] + theta[:, None]
               + pt.dot(phi, membership.T) + z / pt.sqrt(tau_eps))
        pm.Poisson("c", mu=pt.exp(eta), observed=counts)
        # What the worker keeps of each draw (TRACED): the trace holds every variable of
        # every draw, tuning included, as float64, and z_eps alone was 9.8 GB at 6,400 cells
        # x 8,000 iterations x 2 chains; NUTS's 2 x 8,000 iterations there died gathering them
        # on a 23 GB VM. Computed by the sampling process after each draw, outside the
        # leapfrog steps.
        theta_mean = theta.mean()
        pm.Deterministic("theta_mean", theta_mean)
        pm.Deterministic("theta_centred", (theta - theta_mean).astype("float32"))
        pm.Deterministic("phi_mean", phi.mean(axis=0))
        pm.Deterministic("eta", eta.astype("float32"))
    return model


#: The variables of :func:`_pymc_model` the worker keeps (its float32 η and centred θ).
TRACED = ("mu_star", "alpha_star", "tau_theta", "tau_phi", "tau_eps", "theta_mean",
          "theta_centred", "phi_mean", "eta")


def _pymc_worker(in_path: str, out_path: str) -> None:
    import pymc as pm

    inp = np.load(in_path)
    counts, W, membership = inp["counts"], inp["W"], inp["membership"]
    priors = json.loads(str(inp["priors"]))
    draws, tune, sampler = int(inp["draws"]), int(inp["tune"]), str(inp["sampler"])
    seed = int(inp["seed"])
    start = time.perf_counter()
    model = _pymc_model(counts, W, membership, priors)
    with model:
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=2, random_seed=seed,
                          nuts_sampler=sampler, progressbar=False, var_names=list(TRACED),
                          compute_convergence_checks=False)
    total = time.perf_counter() - start
    post = idata.posterior
    values = {name: post[name].values for name in TRACED}
    tau = np.concatenate([values["tau_theta"][..., None], values["tau_phi"],
                          values["tau_eps"][..., None]], axis=-1)
    eta = values["eta"]
    mean_lambda = np.zeros(counts.shape)
    block = max(1, 2**25 // counts.size)  # exp in float64 a block of draws at a time
    for c in range(eta.shape[0]):
        for d in range(0, eta.shape[1], block):
            mean_lambda += np.exp(eta[c, d:d + block].astype(np.float64)).sum(axis=0)
    stats = idata.sample_stats
    np.savez(
        out_path,
        seconds=float(post.attrs["sampling_time"]), total_seconds=total,
        mu=values["mu_star"] + values["theta_mean"],
        alpha=values["alpha_star"] + values["phi_mean"], tau=tau,
        theta=values["theta_centred"], eta=eta, mean_lambda=mean_lambda / np.prod(eta.shape[:2]),
        divergences=int(stats["diverging"].values.sum()),
        n_steps=float(stats["n_steps"].values.mean()),
    )


# ------------------------------------------------------------------------------------------
# Driver
# ------------------------------------------------------------------------------------------


def _pymc_inputs(counts, model):
    from geosynth.model.fit import build_model_data

    data, tables, names = build_model_data(counts, model)
    G, B, P = tables.counts.shape + (len(tables.level_counts),)
    W = np.asarray(counts.grid.adjacency.todense() != 0, dtype=np.int8)
    W[np.arange(G), np.arange(G)] = 0
    membership = np.zeros((B, P))
    for k in range(data.combo_levels.shape[1]):
        has = data.combo_levels[:, k] >= 0
        membership[np.flatnonzero(has), data.combo_levels[has, k]] = 1.0
    return np.asarray(tables.counts), W, membership, names


def find_peer() -> tuple[str | None, dict | str]:
    """The interpreter to run the PyMC worker under, and its package versions (or why none).

    ``BENCH_PYMC_PYTHON`` when set (and then only it), else ``sys.executable`` when pymc is
    importable there, else ``.venv-pymc/bin/python`` when it exists. Each candidate is probed
    by importing pymc (≥ 6) in it.
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
        problems.append(f"{python} cannot run the peer ({tail})")
    if not explicit and len(candidates) == 1:
        problems.insert(0, f"pymc is not importable in {sys.executable}")
    return None, "; ".join(problems)


def _run_peer(python: str, peer: str, inputs: tuple, model, seed: int = SEED,
              run: tuple[int, int] = (TUNE, DRAWS)) -> dict:
    """Run ``peer`` on ``inputs`` (:func:`_pymc_inputs`, built once per lattice) in a worker.

    ``run`` is ``(tune, draws)`` per chain.
    """
    c, W, membership, names = inputs
    tune, draws = run
    run_text = f"{tune}+{draws}"
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        np.savez(inp, counts=c, W=W, membership=membership, draws=draws, tune=tune,
                 sampler=peer, seed=seed, priors=json.dumps(model.priors.to_dict()))
        env = {**os.environ, **SINGLE_THREAD}
        start = time.perf_counter()
        # Own session, so that a timeout ends the worker's chain processes with it.
        proc = subprocess.Popen([python, "-m", "bench.bench_pymc", "--worker", inp, out],
                                env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=PEER_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"status": "capped", "run": run_text}
        except BaseException:  # e.g. Ctrl-C: the worker's own session does not get the SIGINT
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            tail = (stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            print(f"{peer} worker failed at G = {c.shape[0]:,}:\n{stderr}", file=sys.stderr)
            return {"status": "failed", "error": tail.replace("|", "\\|"), "run": run_text}
        res = dict(np.load(out))
    P = membership.shape[1]
    diag = ess_table({"mu": res["mu"], "alpha": res["alpha"], "tau": res["tau"],
                      "theta": res["theta"], "lambda": res["eta"]},
                     {"alpha": names[1:1 + P], "tau": names[1 + P:]})
    return {"status": "ok", "seconds": float(res["seconds"]), "wall": wall,
            "setup": wall - float(res["seconds"]), "diag": diag, "mu_mean": float(res["mu"].mean()),
            "mu_mcse": mcse_mean(res["mu"]), "mean_lambda": res["mean_lambda"],
            **scalar_summary(res),
            "divergences": int(res["divergences"]), "n_steps": float(res["n_steps"]),
            "run": run_text}


def _fit_draws(fit) -> tuple[dict, dict]:
    names = fit.scalar_names
    alpha = [n for n in names if n.startswith("alpha")]
    tau = [n for n in names if n.startswith("tau")]
    draws = {"mu": fit.scalar("mu"),
             "alpha": np.stack([fit.scalar(n) for n in alpha], axis=-1),
             "tau": np.stack([fit.scalar(n) for n in tau], axis=-1),
             "theta": fit.theta, "lambda": fit.eta}
    return draws, {"alpha": alpha, "tau": tau}


def _warm_up(model) -> None:
    """Compile (or load) the sampler's kernels on a small lattice, outside every timing."""
    from geosynth.errors import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 20 sweeps: it is not the point
        model.fit(scenario_counts(100), n_iter=20, burn_in=10, thin=1, chains=2, seed=0,
                  progress=False)


def gibbs_thin(cells: int, combinations: int, fit_thin: int, chains: int = 2) -> int:
    """Smallest divisor of ``fit_thin`` whose kept η draws (float32) fit in :data:`ETA_BUDGET`.

    Parameters
    ----------
    cells, combinations : int
        G and B of the lattice.
    fit_thin : int
        ``fit()``'s default thin (``geosynth.model.fit.DEFAULT_THIN``), returned when no
        smaller divisor fits.
    chains : int, default 2

    Returns
    -------
    int
    """
    kept = GIBBS["n_iter"] - GIBBS["burn_in"]
    for thin in range(1, fit_thin):
        if fit_thin % thin == 0 and chains * (kept // thin) * cells * combinations * 4 \
                <= ETA_BUDGET:
            return thin
    return fit_thin


def _run_geosynth(counts, model, seed: int = SEED) -> dict:
    from geosynth.model.fit import DEFAULT_THIN as fit_thin

    thin = gibbs_thin(counts.n_cells, counts.n_combos, fit_thin)
    start = time.perf_counter()
    fit = model.fit(counts, chains=2, n_jobs=2, seed=seed, progress=False, thin=thin, **GIBBS)
    seconds = time.perf_counter() - start
    draws, names = _fit_draws(fit)
    mu = draws["mu"]
    step = fit_thin // thin  # every fit_thin-th sweep of the same chains
    thinned = ess_table({g: v[:, step - 1::step] for g, v in draws.items()}, names)
    return {"status": "ok", "seconds": seconds, "diag": ess_table(draws, names),
            "thinned": thinned, "fit_thin": fit_thin,
            "mu_mean": float(mu.mean()), "mu_mcse": mcse_mean(mu),
            "mean_lambda": fit.posterior_mean_lambda(), **scalar_summary(draws),
            "run": f"{GIBBS['n_iter']:,} sweeps (thin {thin})"}


def _run_auto(counts, model, max_seconds: float) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit(counts, n_iter="auto", chains=2, seed=SEED, progress=False,
                        max_seconds=max_seconds, max_bytes=AUTO_MAX_BYTES)
    return {"stopping": fit.stopping}


def scalar_summary(draws: dict) -> dict:
    """Posterior means and MC se (:func:`mcse_mean`) of μ, each α and each τ, in that order.

    Parameters
    ----------
    draws : dict
        ``mu`` (chains, draws), ``alpha`` and ``tau`` (chains, draws, k).

    Returns
    -------
    dict
        ``scalar_means`` and ``scalar_mcse``, arrays of one value per scalar.
    """
    columns = [np.asarray(draws[k], np.float64) for k in ("mu", "alpha", "tau")]
    values = np.concatenate([c.reshape(*c.shape[:2], -1) for c in columns], axis=-1)
    return {"scalar_means": values.mean(axis=(0, 1)),
            "scalar_mcse": np.array([mcse_mean(values[..., k]) for k in range(values.shape[2])])}


def agreement(corr: float, dmu: float, dscalars: float = 0.0) -> str:
    """Verdict of the agreement checks: ``pass`` or ``FAIL`` naming the failed checks.

    Parameters
    ----------
    corr : float
        corr(mean λ) of the two tools over the G·B cells.
    dmu : float
        |Δμ| / sqrt(mcse_1² + mcse_2²).
    dscalars : float, default 0
        The largest |Δ mean| / sqrt(mcse_1² + mcse_2²) over μ, the α's and the τ's.

    Returns
    -------
    str
    """
    failed = []
    if not corr > CORR_MIN:  # `not >` so that a NaN fails
        failed.append(f"corr ≤ {CORR_MIN}")
    if not dmu < DMU_MAX:
        failed.append(f"\\|Δμ\\| ≥ {DMU_MAX:g} se")
    if not dscalars < SCALARS_MAX:
        failed.append(f"a scalar's \\|Δ\\| ≥ {SCALARS_MAX:g} se")
    return "pass" if not failed else "**FAIL**: " + ", ".join(failed)


def compare(a: dict, b: dict) -> tuple[float, float, float, str]:
    """corr(mean λ), |Δμ|/se, the largest scalar's |Δ|/se and the verdict of two tools' results.

    Parameters
    ----------
    a, b : dict
        Results with ``mean_lambda``, ``mu_mean``, ``mu_mcse``, ``scalar_means`` and
        ``scalar_mcse`` (:func:`scalar_summary`).

    Returns
    -------
    tuple of (float, float, float, str)
    """
    corr = float(np.corrcoef(np.ravel(a["mean_lambda"]), np.ravel(b["mean_lambda"]))[0, 1])
    se = math.hypot(a["mu_mcse"], b["mu_mcse"])
    dmu = abs(a["mu_mean"] - b["mu_mean"]) / se
    gaps = np.abs(a["scalar_means"] - b["scalar_means"]) / np.hypot(a["scalar_mcse"],
                                                                    b["scalar_mcse"])
    dscalars = float(np.max(gaps, initial=0.0)) if not np.isnan(gaps).any() else math.nan
    return corr, dmu, dscalars, agreement(corr, dmu, dscalars)


def rate(result: dict) -> float:
    """Min bulk ESS per second of sampling of one tool's result."""
    return result["diag"]["worst_ess"] / result["seconds"]


HEADER = [
    "| G | tool | run (per chain) | sampling s | min ESS/s | worst: ESS | group minima μ / α / "
    "τ / θ / λ | max R-hat (where) | geosynth ÷ this (min ESS/s) | agreement with geosynth: "
    "corr(mean λ), \\|Δμ\\|/se, max scalar \\|Δ\\|/se | notes |",
    "| ---: | --- | --- | ---: | ---: | --- | --- | --- | --- | --- | --- |",
]


def _row(G: int, label: str, res: dict, ratio: str, agree: str, notes: str) -> str:
    if res["status"] != "ok":
        why = {"no peer": "not run: no PyMC peer (see note)",
               "capped": f"> {PEER_TIMEOUT} s (compile + run): capped, not finished",
               "failed": f"failed: {res.get('error', '')}"}[res["status"]]
        return f"| {G:,} | {label} | {res.get('run', '–')} | {why} | – | – | – | – | – | – | – |"
    d = res["diag"]
    minima = " / ".join(f"{d['min_ess'][g]:.0f}" for g in GROUPS)
    return (f"| {G:,} | {label} | {res['run']} | {res['seconds']:.1f} | {rate(res):.2f} | "
            f"`{d['worst']}`: {d['worst_ess']:.0f} | {minima} | {d['max_rhat']:.3f} "
            f"(`{d['worst_rhat']}`) | {ratio} | {agree} | {notes} |")


def comparison_table(options: Options, samplers: tuple[str, ...], python, verdicts: dict,
                     ratios: dict) -> list[str]:
    """Rows of the comparison at each G of ``options.sizes`` (fills ``verdicts``, ``ratios``).

    Every tool runs once per seed of ``options.seeds`` (rows labelled with the seed when there
    are several); ``ratios[(G, sampler, peer)]`` is ``(ratio, se)``: the ratio of the two
    tools' mean min ESS/s over the seeds and its standard error (:func:`ratio_of_means`;
    0 with one seed, whose spread is unknown).
    """
    lines = list(HEADER)
    print("\n".join(HEADER), flush=True)
    for G in options.sizes:
        counts = scenario_counts(G)
        rates: dict[str, list[float]] = {}
        # The peers' inputs (a dense G x G adjacency among them) once per lattice, not per seed.
        inputs = (_pymc_inputs(counts, make_model(samplers[0]))
                  if python is not None and options.peers else None)
        for seed in options.seeds:
            tag = f" (seed {seed})" if len(options.seeds) > 1 else ""
            results = _compare_once(G, counts, inputs, samplers, python, options, seed, tag,
                                    verdicts, lines)
            for tool, res in results.items():
                if res["status"] == "ok":
                    rates.setdefault(tool, []).append(rate(res))
        for sampler in samplers:
            for peer in options.peers:
                if peer in rates and len(rates[peer]) == len(options.seeds):
                    ratios[(G, sampler, peer)] = ratio_of_means(rates[sampler], rates[peer])
    return lines


def _compare_once(G: int, counts, inputs, samplers, python, options: Options, seed: int,
                  tag: str, verdicts: dict, lines: list[str]) -> dict[str, dict]:
    """One run of every sampler and of every peer of ``options`` at one seed: append and print
    its rows.

    ``inputs`` are the peers' (:func:`_pymc_inputs`), None when no peer runs.
    """
    results = {}
    for sampler in samplers:
        model = make_model(sampler)
        results[sampler] = res = _run_geosynth(counts, model, seed)
        thinned = res["thinned"]
        agree = "–"
        notes = (f"{res['seconds'] / GIBBS['n_iter'] * 1e3:.1f} ms per sweep; every "
                 f"{res['fit_thin']}th sweep: min ESS {thinned['worst_ess']:.0f} "
                 f"(`{thinned['worst']}`)")
        if sampler != samplers[0]:
            corr, dmu, dscalars, verdict = compare(results[samplers[0]], res)
            key = (G, sampler, samplers[0])
            verdicts[key] = verdict_over_seeds(verdicts.get(key), verdict)
            agree = f"{samplers[0]}: {corr:.4f}, {dmu:.2f}, {dscalars:.2f} — {verdict}"
            ratio = f"{samplers[0]}: {rate(results[samplers[0]]) / rate(res):.2f}×"
        else:
            ratio = "–"
        lines.append(_row(G, f"geosynth {sampler}{tag}", res, ratio, agree, notes))
        print(lines[-1], flush=True)
    model = make_model(samplers[0])
    for peer in options.peers:
        res = ({"status": "no peer"} if python is None
               else _run_peer(python, peer, inputs, model, seed, options.peer_run))
        results[peer] = res
        ratio = agree = notes = "–"
        if res["status"] == "ok":
            parts, agrees = [], []
            for sampler in samplers:
                parts.append(f"{sampler}: {rate(results[sampler]) / rate(res):.1f}×")
                corr, dmu, dscalars, verdict = compare(results[sampler], res)
                key = (G, sampler, peer)
                verdicts[key] = verdict_over_seeds(verdicts.get(key), verdict)
                agrees.append(f"{sampler}: {corr:.4f}, {dmu:.2f}, {dscalars:.2f} — {verdict}")
            ratio, agree = "; ".join(parts), "; ".join(agrees)
            notes = (f"compile + set-up {res['setup']:.0f} s; {res['divergences']} "
                     f"divergences; {res['n_steps']:.0f} leapfrog steps per draw")
        else:
            for sampler in samplers:
                key = (G, sampler, peer)
                verdicts[key] = verdict_over_seeds(verdicts.get(key), "not checked")
        lines.append(_row(G, PEER_LABELS[peer] + tag, res, ratio, agree, notes))
        print(lines[-1], flush=True)
    return results


def verdict_over_seeds(earlier: str | None, verdict: str) -> str:
    """The agreement verdict over seeds: a failure or a missing check at any seed stands.

    ``earlier`` is the verdict of the seeds before (None at the first), ``verdict`` this
    seed's (:func:`agreement`, or ``"not checked"``). A failure outranks a missing check (a
    peer capped at one seed and disagreeing at another has failed), and the first failure
    stands.
    """
    if earlier is None or earlier == "pass":
        return verdict
    if earlier == "not checked" and verdict.startswith("**FAIL"):
        return verdict
    return earlier


def auto_table(options: Options, samplers: tuple[str, ...]) -> list[str]:
    """Rows of the geosynth-alone ``n_iter="auto"`` fits at each G of ``options.auto_sizes``."""
    lines = [f"| G | sampler | stopped | sweeps per chain (thin) | seconds | min bulk ESS (where) "
             f"| max R-hat (where) | ESS ≥ 400 and R-hat < 1.01 within {options.max_seconds:g} s |",
             "| ---: | --- | --- | ---: | ---: | --- | --- | --- |"]
    print("\n".join(lines), flush=True)
    for G in options.auto_sizes:
        counts = scenario_counts(G)
        for sampler in samplers:
            s = _run_auto(counts, make_model(sampler), options.max_seconds)["stopping"]
            ok = "yes" if s.reason == "converged" else "no"
            lines.append(f"| {G:,} | {sampler} | {s.reason} | {s.sweeps:,} ({s.thin}) | "
                         f"{s.seconds:.0f} | {s.min_ess:.0f} (`{s.worst_ess}`) | "
                         f"{s.max_r_hat:.3f} (`{s.worst_r_hat}`) | {ok} |")
            print(lines[-1], flush=True)
    return lines


def run(options: Options | None = None) -> str:
    """Run the comparison and the geosynth-alone fits; return Markdown tables and notes.

    Parameters
    ----------
    options : Options, optional
        Default: :func:`parse_options` of ``BENCH_PYMC_ARGS``.

    Returns
    -------
    str
    """
    started = time.perf_counter()
    options = options or parse_options()
    warnings.filterwarnings("ignore", category=FutureWarning)
    offered = available_samplers()
    samplers = options.samplers or offered
    auto_samplers = options.auto_samplers or offered[:1]
    missing = [s for s in samplers + auto_samplers if s not in offered]
    if missing:
        raise SystemExit(f"--samplers: {missing} not offered by this geosynth "
                         f"(PaivaModel accepts {', '.join(offered)})")
    python, peer = (None, "no peer requested") if not options.peers else find_peer()
    if options.peers and python is None:
        print(f"PyMC peer NOT available, the peer rows will be empty: {peer}. To get it: "
              f"{PEER_HINT}.", flush=True)
    elif python is not None:
        print(f"PyMC peer: {python} ({_versions(peer)})", flush=True)
    for sampler in dict.fromkeys(samplers + auto_samplers):
        _warm_up(make_model(sampler))
    verdicts, ratios = {}, {}
    lines, seconds = [], {}
    if options.sizes:
        lines += comparison_table(options, samplers, python, verdicts, ratios)
        seconds["comparison"] = time.perf_counter() - started
        lines += ["", _summary(verdicts, ratios, options, samplers, python, peer)]
    if options.auto_sizes:
        mark = time.perf_counter()
        lines += ["", f"geosynth alone, `fit(n_iter=\"auto\", target_ess=400, max_rhat=1.01, "
                      f"max_seconds={options.max_seconds:g})`, 2 chains:", ""]
        lines += auto_table(options, auto_samplers)
        seconds["auto"] = time.perf_counter() - mark
    seconds["total"] = time.perf_counter() - started
    lines += ["", _note(python, peer, samplers, seconds, options.peer_run)]
    return "\n".join(lines)


def _short(python: str) -> str:
    path = Path(python)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else python


def _versions(peer: dict) -> str:
    return ", ".join(f"{name} {version}" for name, version in peer.items())


def _summary(verdicts: dict, ratios: dict, options: Options, samplers, python, peer) -> str:
    failed = sorted({k for k, v in verdicts.items() if v.startswith("**FAIL")})
    unchecked = sorted({(G, p) for (G, _, p), v in verdicts.items() if v == "not checked"})
    if options.peers and python is None:
        head = (f"**Agreement checks with the peers: NOT RUN — no PyMC peer** ({peer}). To get "
                f"it: {PEER_HINT}.")
    else:
        parts = []
        if failed:
            parts.append("**FAILED**: " + ", ".join(f"{a} vs {b} at G = {G:,}"
                                                    for G, a, b in failed))
        if unchecked:
            parts.append("not checked: " + ", ".join(f"{PEER_LABELS[p]} at G = {G:,}"
                                                     for G, p in unchecked)
                         + " (the peer did not finish)")
        if not parts:
            parts.append(f"pass for every pair at every G (corr(mean λ) > {CORR_MIN}, "
                         f"\\|Δμ\\| < {DMU_MAX:g} MC se and every scalar's \\|Δ\\| < "
                         f"{SCALARS_MAX:g} MC se)")
        head = "**Agreement checks:** " + "; ".join(parts) + "."
    best = []
    for G in options.sizes:
        for peer_name in options.peers:
            found = [(ratios[(G, s, peer_name)], s) for s in samplers
                     if (G, s, peer_name) in ratios]
            if found:
                (r, se), s = max(found)
                error = f" ± {se:.1f}" if len(options.seeds) > 1 else ""
                best.append(f"{r:.1f}×{error} ({s}) over {PEER_LABELS[peer_name]} at "
                            f"G = {G:,}")
    if best:
        seeds = (f" (ratio of the mean ESS/s over seeds {', '.join(map(str, options.seeds))}, "
                 "± its standard error)" if len(options.seeds) > 1 else "")
        head += (" **Best geosynth ÷ peer, min ESS/s" + seeds + ":** " + "; ".join(best)
                 + " (targets: ≥ 20× over PyMC NUTS at G = 1,600, ≥ 50× at G = 6,400).")
    return head


def _note(python: str | None, peer, samplers, seconds: dict, run: tuple[int, int]) -> str:
    from geosynth.model.fit import DEFAULT_THIN

    peer_text = (f"peer {_versions(peer)} under {_short(python)}" if python
                 else "no peer requested" if peer == "no peer requested"
                 else "PyMC peer not available")
    took = ", ".join(f"{k} {v / 60:.1f} min" for k, v in seconds.items())
    return (
        f"All tools: 2 chains on 2 cores, same data, model and priors; geosynth samplers "
        f"{', '.join(samplers)} ({GIBBS['n_iter']:,} sweeps, {GIBBS['burn_in']:,} burn-in, every "
        "later sweep kept as the peers keep every draw, unless the η draws would pass "
        f"{ETA_BUDGET / 2**30:g} GiB (then the smallest divisor of {DEFAULT_THIN} that fits: the "
        "run column gives the thin); wall time of fit() after a warm-up fit); "
        f"PyMC NUTS (`nuts_sampler=\"pymc\"`, jitter+adapt_diag, target_accept 0.8) and nutpie "
        f"(`nuts_sampler=\"nutpie\"`), {run[0]} tuning steps + {run[1]} draws per chain, "
        "`sampling_time` (tuning included, compilation excluded), BLAS pinned to one thread; "
        f"{peer_text}. Min bulk ESS over μ (= μ + mean θ), every α, every τ, every centred θ_i "
        "and every λ_ib, for every tool by geosynth.model.diagnostics.convergence_diagnostics "
        "(arviz's definitions); the minimum over ~10⁵ parameters is a noisy low extreme, so "
        "ratios are good to tens of per cent. Agreement: corr(mean λ) over the G·B cells > "
        f"{CORR_MIN} and \\|Δμ\\| / sqrt(mcse² + mcse²) < {DMU_MAX:g} (why: module docstring, "
        f"which also says how the ICAR mean priors were matched). This run took: {took}."
    )


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.bench_pymc [options]``: print the tables (``--worker`` is internal)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 3 and argv[0] == "--worker":
        _pymc_worker(argv[1], argv[2])
    else:
        print(run(parse_options(argv)))


if __name__ == "__main__":
    main()
