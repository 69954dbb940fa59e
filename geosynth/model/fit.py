"""Fit API of the Paiva et al. (2014) model: :class:`PaivaModel` and :class:`PaivaFit`.

The Python layer validates, allocates, runs the numba kernels of :mod:`.kernels` in chunks (so a
progress bar moves and Ctrl-C returns the draws made so far, flagged by
:attr:`PaivaFit.interrupted`) and wraps the draws for arviz.

Chains run in threads of this process, or as tasks of any :class:`concurrent.futures.Executor`
(``fit(..., executor=...)``: a Dask cluster's ``client.get_executor()``, or
:func:`geosynth.distributed.fit_dask`); either way chain ``c`` draws from the same random stream,
so the draws are the same.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np
import pandas as pd

from geosynth._compat import import_arviz
from geosynth.data import covariate_names
from geosynth.errors import DataWarning, GeosynthWarning, InputError, MemoryLimitError, SamplerError
from geosynth.model.modes import smooth_modes
from geosynth.model.noise_aware import run_chunk_noise_aware, update_latent_counts
from geosynth.model.priors import Priors
from geosynth.model.state import (
    BETA_ICAR,
    BETA_NONE,
    BETA_NORMAL,
    BLOCK_NAMES,
    SAMPLER_ARS,
    SAMPLER_SLICE,
    UPDATE_EXACT,
    UPDATE_MH,
    CountTables,
    GibbsState,
    ModelData,
    compute_eta,
    model_shape,
)
from geosynth.model.stopping import (
    LAMBDA_SCREEN,
    AutoSchedule,
    ConvergenceCheck,
    ParameterGroup,
    StoppingInfo,
    assess_convergence,
    check_auto_arguments,
)
from geosynth.model.sweep import run_chunk
from geosynth.samplers.ars import new_workspace
from geosynth.samplers.family import STATUS_MESSAGES
from geosynth.samplers.rng import make_streams

if TYPE_CHECKING:
    import arviz
    from matplotlib.figure import Figure

    from geosynth.data import CellCounts

__all__ = ["PaivaModel", "PaivaFit", "StoragePlan", "build_model_data", "initial_state",
           "kernels_need_compiling", "plan_model_storage", "plan_storage"]

# Sweeps per kernel call: about CHUNK_WORK cell-combination updates, so the progress bar moves a
# few times a second whatever the lattice. It depends on the data's shape only, so the same seed
# gives the same draws with or without progress bars (η is recomputed at each chunk start).
CHUNK_WORK = 250_000
MAX_CHUNK_SWEEPS = 500
DEFAULT_MAX_BYTES = 4 * 2**30
DEFAULT_BURN_IN = 2000
# n_iter="auto": max_seconds stops a chain only once it holds this many draws (arviz's minimum
# for ESS and R-hat), so that even a fit stopped at once reports its diagnostics.
MIN_DRAWS_AT_DEADLINE = 4

_BETA_PRIORS = {None: BETA_NONE, "normal": BETA_NORMAL, "icar": BETA_ICAR}
_BETA_SAMPLERS = {"ars": SAMPLER_ARS, "slice": SAMPLER_SLICE}

# Seconds a cold compilation of each sampler's kernels took on the 2-core benchmark machine
# (a fresh NUMBA_CACHE_DIR, the first fit in a new process): what the "compiling" notice quotes.
# Measured by bench/bench_cold.py and `geosynth compile` (bench/RESULTS.md, 2026-11-25):
# exact 80-89 s, noise-aware 88 s, chromatic 96 s, block 82 s.
COMPILE_SECONDS = {"serial": 90, "noise-aware": 90, "chromatic": 100, "block": 80}
_SAMPLERS = ("gibbs", "block", "mh")


class PaivaModel:
    """Bayesian Poisson/ICAR model of cell counts per attribute combination.

    ``log λ_ib = μ + Σ_k α_k + θ_i + Σ_k φ_ik + Σ_c β_ci·Z̄_cib + ε_ib`` (Paiva et al. 2014;
    Nunes 2018 eqs. 2.1–2.9 and, with ``beta_prior``, 2.19–2.21, over the K continuous
    covariates c of ``prepare(..., continuous=...)`` as §5 generalises it), fitted by a numba
    Gibbs sampler.

    Parameters
    ----------
    beta_prior : {None, "normal", "icar"} or sequence of them, default None
        Prior of the per-cell effect β_ci of each standardised continuous covariate Z̄_cib.
        ``None`` leaves β out of the model. One str applies to every covariate; a list gives one
        prior per covariate, in the order of ``continuous`` (``["normal", "icar"]``). Each
        ICAR field has its own precision τ_β,c (reported as ``tau_beta``, or
        ``tau_beta[<column>]`` when ``continuous`` was a list). Under ``"icar"`` the mean of β
        within each connected component gets a N(0, ``priors.beta_var``) prior instead of the
        thesis' constraint Σβ_i = 0: no other parameter can absorb a common slope, so forcing
        the sum to zero would force some cells' slopes to the wrong sign when Z̄ drives
        intensity everywhere.
    priors : Priors, optional
        Hyperparameters; defaults are vague and proper.
    beta_sampler : {"slice", "ars"}, default "slice"
        Sampler of the β conditional (log-concave, so ARS is valid too).
    effects : {"attribute", "combination"}, default "attribute"
        ``"attribute"`` is the model of the thesis: one α_kj and one ICAR field φ_·kj per
        non-baseline level of each attribute, so the log intensity of a combination is *additive*
        in its attributes. ``"combination"`` treats the attribute combination itself as the one
        attribute: an α_b and an ICAR field φ_·b for every combination but the first. Use it
        when each combination has its own spatial pattern: on the Nunes (2018) scenario, whose 12
        patterns (Table 3) are not additive, it raises the Spearman correlation between posterior
        mean and true intensity from about 0.61 to about 0.83 at n = 500 (see
        ``tests/model/test_recovery.py``).
    sampler : {"gibbs", "mh", "block"}, default "gibbs"
        ``"gibbs"``: single-site updates of every parameter, each scalar conditional drawn
        exactly (ARS), with exact shift moves and scale moves of each field with its precision
        (:mod:`geosynth.model.sweep`). ``"mh"``: the same sweep, but μ, α, θ_i, φ_ip and
        ε_ib move by one Metropolis–Hastings step with a Newton (IWLS) Gaussian proposal
        (Gamerman 1997; :mod:`geosynth.samplers.newton_mh`), one in ten by an exact draw
        instead: same posterior, a sweep about 1.6–1.9 times cheaper and almost as effective
        (see ``bench/RESULTS.md``); not with ``parallel=True``. ``"block"``: each sweep adds,
        for θ, every φ_·p and (under ``beta_prior="icar"``) β, a joint Metropolis–Hastings
        update of the whole field with its precision from a GMRF approximation of its full
        conditional (Knorr-Held & Rue 2002; :mod:`geosynth.model.block`); on the Nunes (2018)
        scenario it is slower per effective draw. Not with ``noise`` or ``parallel=True``.

    Examples
    --------
    >>> import geosynth
    >>> scenario = geosynth.datasets.paiva_scenario(n=200, seed=1)
    >>> grid = geosynth.Grid.regular(scenario.bounds, shape=(5, 5), crs=scenario.crs)
    >>> counts = geosynth.prepare(scenario.data, grid, attributes=["y", "x1"])
    >>> fit = geosynth.PaivaModel().fit(counts, n_iter=200, burn_in=100, seed=1, progress=False)
    >>> fit.posterior_mean_lambda().shape
    (25, 4)
    """

    def __init__(
        self,
        beta_prior: Literal["normal", "icar"] | Sequence[str] | None = None,
        priors: Priors | None = None,
        beta_sampler: Literal["slice", "ars"] = "slice",
        effects: Literal["attribute", "combination"] = "attribute",
        sampler: Literal["gibbs", "block", "mh"] = "gibbs",
    ) -> None:
        beta_prior = _check_beta_prior(beta_prior)
        if beta_sampler not in _BETA_SAMPLERS:
            raise InputError(f"beta_sampler must be 'slice' or 'ars', got {beta_sampler!r}")
        if effects not in ("attribute", "combination"):
            raise InputError(f"effects must be 'attribute' or 'combination', got {effects!r}")
        if sampler not in _SAMPLERS:
            raise InputError(f"sampler must be 'gibbs', 'block' or 'mh', got {sampler!r}")
        if priors is not None and not isinstance(priors, Priors):
            raise InputError(f"priors must be a geosynth.Priors, got {type(priors).__name__}")
        self.beta_prior = beta_prior
        self.priors = priors or Priors()
        self.beta_sampler = beta_sampler
        self.effects = effects
        self.sampler = sampler

    def __repr__(self) -> str:
        return (f"PaivaModel(beta_prior={self.beta_prior!r}, beta_sampler={self.beta_sampler!r}, "
                f"effects={self.effects!r}, sampler={self.sampler!r})")

    def _block_sampler(self, noise: bool, parallel: bool) -> bool:
        """Whether this fit runs the block sampler (:mod:`geosynth.model.block`)."""
        if self.sampler == "mh" and parallel:
            raise InputError("parallel=True runs the chromatic sampler with exact draws; with "
                             "sampler='mh' use parallel=False")
        if self.sampler != "block":
            return False
        if noise:
            raise InputError("sampler='block' is not available for noise-aware fits (noise=...) "
                             "yet; use sampler='gibbs'")
        if parallel:
            raise InputError("parallel=True runs the chromatic single-site sampler; with "
                             "sampler='block' use parallel=False")
        return True

    def fit(
        self,
        counts: CellCounts,
        n_iter: int | Literal["auto"] = 8000,
        burn_in: int | None = None,
        thin: int = 6,
        chains: int = 2,
        seed=None,
        progress: bool = True,
        max_bytes: int = DEFAULT_MAX_BYTES,
        n_jobs: int | None = None,
        noise: float | None = None,
        parallel: bool = False,
        eta_draws: int | Literal["all", "auto"] = "auto",
        *,
        executor: Executor | None = None,
        target_ess: float = 400,
        max_rhat: float = 1.01,
        max_seconds: float | None = None,
    ) -> PaivaFit:
        """Run ``chains`` Gibbs chains and return their thinned draws.

        Parameters
        ----------
        counts : CellCounts
            Output of :func:`geosynth.prepare`; needs ``continuous`` when ``beta_prior`` is set
            (and as many covariates as ``beta_prior`` lists priors).
        n_iter : int or "auto", default 8000
            Sweeps per chain, burn-in included. The defaults keep 1,000 draws per chain and give
            R-hat < 1.05 on the thesis scenario with either ``effects``, the weakest link being
            the precision of a sparsely observed combination's field.

            ``"auto"``: run until converged (see :mod:`geosynth.model.stopping`): the chains
            run in segments, and between segments the minimum bulk ESS over μ, every α, every
            τ, every θ_i, every β_i (if fitted) and every λ_ib (through the stored η = log λ
            of every retained draw; ranks, so the same as λ's) is compared with
            ``target_ess``, and the maximum rank-normalised split R-hat with ``max_rhat``
            (arviz's definitions, computed for all parameters at once by
            :func:`geosynth.model.diagnostics.convergence_diagnostics`). Checks come when the
            sweeps have grown by a factor 1.5 or 4/3 and stop at the first group of parameters
            that fails (λ is screened on 2,048 pairs first), so their cost stays a small part
            of the fit's. The first half of the sweeps is discarded as burn-in, and ``thin``
            doubles (thinning the stored draws by 2) whenever the retained draws per chain
            would exceed the larger of ``4·target_ess/chains`` and ``16/(max_rhat − 1)``
            (1,600 for the defaults: enough for the noise of R-hat over thousands of λ's to
            stay below ``max_rhat``), or what ``max_bytes`` holds. The result's
            :attr:`PaivaFit.stopping` says how it stopped. Needs ``chains >= 2`` (R-hat
            compares chains) and runs in threads of this process (not on an ``executor``).
            Without ``max_seconds`` a fit that never converges runs until Ctrl-C (which
            returns the draws of the current window, as for a fixed ``n_iter``).
        burn_in : int, optional
            Sweeps discarded at the start of each chain (where the scale moves tune); default
            2,000. Not with ``n_iter="auto"``, which discards the first half of the sweeps.
        thin : int, default 6
            Keep every ``thin``-th sweep after burn-in (with ``n_iter="auto"``: at first).
        chains : int, default 2
            Independent chains, each with its own random stream derived from ``seed``.
        seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
            The same seed gives the same draws.
        progress : bool, default True
            Show a tqdm progress bar per chain (on stderr). When the sampler's numba kernels
            are not compiled yet (the first fit after installing geosynth without running
            ``geosynth compile``, or after changing its kernels; later processes load them
            from numba's cache), first say ``compiling the sampler (first run only, ~N s;
            `geosynth compile` does it ahead of time)`` on stderr, compile them, and say
            how long it took, so the bars start afterwards with a true ETA. Chains run by an
            ``executor`` show no bars.
        max_bytes : int, default 4 GiB
            Bound on the stored draws of all chains plus the per-chain buffers of η (see
            :func:`plan_storage`): the fit refuses before allocating rather than exceed it.
        n_jobs : int, optional
            Chains run at once in threads (numba releases the GIL); default: one per core.
            Not with an ``executor``, which decides itself.
        noise : float, optional
            Noise-aware fit: the scale ``b`` of the discrete Laplace (two-sided geometric) noise
            that was added to every count, P(c̃ − c = k) ∝ exp(−|k|/b). The true counts are then
            latent and each sweep draws them from Poisson(c; λ) × DiscreteLaplace(c̃ − c) over
            c ≥ 0 (exact enumeration, see :func:`geosynth.model.noise_aware.draw_latent_count`), in
            the spirit of Charest's (2011) noise-aware inference. Defaults to
            ``counts.noise_scale`` when ``counts`` is the :class:`~geosynth.dp.NoisyCounts` of
            :func:`geosynth.dp.dp_counts`; refused for the exact counts of
            :func:`geosynth.prepare`.
        parallel : bool, default False
            Chromatic Gibbs: within each chain, update the cells of one colour of a proper
            colouring of the lattice at once on all numba threads (``numba.set_num_threads``),
            see :mod:`geosynth.model.parallel`. Same posterior as the serial sampler, different
            draws; for a given ``seed`` the draws do not depend on the number of threads.
            Worth it from a few thousand cells. Chains then run one after another unless
            ``n_jobs`` says otherwise. Not available for noise-aware fits. A run option rather
            than a model option: it changes how, not what, is sampled.
        eta_draws : int, "all" or "auto", default "auto"
            How many retained draws per chain keep the linear predictor η = log λ (float32,
            G × B values a draw: 4.9 MB at G = 102,400 cells and B = 12 combinations, so
            1,000 draws of 2 chains would take 9.8 GB). The scalars, θ and β are stored for
            every retained draw whatever this says, and :meth:`PaivaFit.posterior_mean_lambda`
            is the exact mean over every retained draw (a running sum of exp η kept during
            the fit). Stored η draws are what :meth:`PaivaFit.lambda_draw` and
            :func:`geosynth.synthesize` use: one per release.

            * ``"all"``: every retained draw; refused with :class:`MemoryLimitError` if that
              exceeds ``max_bytes``.
            * an int ``k >= 1``: ``k`` evenly spaced retained draws per chain (retained draw
              ``floor((j + 1/2)·n/k)`` for ``j = 0 .. k-1`` of the ``n`` retained draws; all of
              them when ``k >= n``).
            * ``"auto"``: every retained draw if that fits in ``max_bytes``, otherwise the
              largest ``k`` that fits, with a :class:`~geosynth.errors.GeosynthWarning` saying
              how many were kept.

            With ``eta_draws="all"`` (or whenever every draw fits) the draws are those of a
            fit without this option; with ``k`` draws, they are exactly the corresponding draws
            of that fit.
        executor : concurrent.futures.Executor, optional
            Run each chain as a task of this executor instead of in threads of this process:
            e.g. ``client.get_executor()`` of a Dask client (or
            :func:`geosynth.distributed.fit_dask`, which also sends the data to each worker
            once and compiles the kernels worker by worker). Chain ``c`` draws from the same
            random stream as in threads, so the draws are equal. The storage is planned (and
            warned about) here for all chains; each task gets the model's arrays (not
            ``counts``) and returns its chain's draws. After Ctrl-C nothing is returned. Not
            with ``n_iter="auto"``, whose chains meet at every convergence check.
        target_ess : float, default 400
            With ``n_iter="auto"``: the bulk effective sample size (over all chains) that
            every parameter must reach.
        max_rhat : float, default 1.01
            With ``n_iter="auto"``: every parameter's R-hat must be below it.
        max_seconds : float, optional
            With ``n_iter="auto"``: stop at the next chunk of sweeps after this many seconds of
            wall-clock time since the call (compilation included; the warm-up always
            completes), returning the draws of the current window with a warning that names
            what has not converged. Without it the same seed gives the same sweeps and draws.

        Returns
        -------
        PaivaFit
            With ``n_iter="auto"``, :attr:`PaivaFit.stopping` records how the fit stopped;
            :attr:`PaivaFit.thin` and :attr:`PaivaFit.burn_in` are those of the returned draws.
            After Ctrl-C (``KeyboardInterrupt``) once every chain has kept a draw: the draws
            made so far (as many per chain as the shortest chain kept), with
            :attr:`PaivaFit.interrupted` True and a warning. Such a fit is for inspection
            only: callers that publish from it (the command line) must check the flag and stop.

        Raises
        ------
        InputError
            For invalid arguments (also: ``executor`` has no ``submit``, or comes with
            ``n_jobs``).
        MemoryLimitError
            If the stored draws would exceed ``max_bytes`` (with ``eta_draws="auto"``: even
            with a single stored draw of η per chain; with ``n_iter="auto"``: when fewer than
            ``2·target_ess/chains`` draws per chain fit). Nothing large has been allocated then.
        SamplerError
            If a full conditional cannot be sampled (names the parameter block).
        KeyboardInterrupt
            Ctrl-C before some chain kept a draw (during compilation or burn-in): there is
            no fit to return.

        Warns
        -----
        GeosynthWarning
            With ``eta_draws="auto"``, when η is kept for fewer than all retained draws; after
            Ctrl-C, saying how many draws per chain were kept; with ``n_iter="auto"``, when
            ``max_seconds`` stopped the fit before it converged (naming the parameters that
            missed ``target_ess`` or ``max_rhat``, with their ESS and R-hat).
        """
        started = time.monotonic()
        auto = isinstance(n_iter, str) and n_iter == "auto"
        check_auto_arguments(target_ess, max_rhat, max_seconds, auto=auto)
        if auto:
            _check_auto_run(burn_in, thin, chains, executor)
        else:
            burn_in = DEFAULT_BURN_IN if burn_in is None else burn_in
            _check_run_arguments(n_iter, burn_in, thin, chains)
        _check_storage_arguments(eta_draws, max_bytes)
        _check_executor(executor, n_jobs)
        noise = _check_noise(counts, noise)
        if not isinstance(parallel, (bool, np.bool_)):
            raise InputError(f"parallel must be True or False, got {parallel!r}")
        if parallel and noise is not None:
            raise InputError("parallel=True is not available for noise-aware fits (noise=...); "
                             "use parallel=False")
        block = self._block_sampler(noise is not None, bool(parallel))
        data, tables, names = build_model_data(counts, self)
        if block:
            from geosynth.model.block import block_settings

            block = block_settings(data)
        else:
            block = None
        labels = _beta_labels(counts, data)
        streams = make_streams(seed, chains)
        released = None if noise is None else (noise, np.asarray(counts.counts, dtype=np.float64))
        if parallel and n_jobs is None:
            n_jobs = 1  # each chain already uses every numba thread
        if auto:
            plan, schedule = _plan_auto_storage(data, names, thin=int(thin), chains=int(chains),
                                                noise=noise is not None,
                                                target_ess=float(target_ess),
                                                max_rhat=float(max_rhat),
                                                max_bytes=int(max_bytes))
            runner = _AutoRunner(data, tables, names, thin, plan, progress, released,
                                 parallel=bool(parallel), block=block, schedule=schedule,
                                 rule=(float(target_ess), float(max_rhat), max_seconds),
                                 started=started, eta_draws=eta_draws, beta_labels=labels)
            draws = _shape_beta(runner.run_all(streams, n_jobs), counts)
            return PaivaFit(model=self, counts=counts, scalar_names=names, noise_scale=noise,
                            **draws)
        plan = plan_model_storage(data, names, n_iter=n_iter, burn_in=burn_in, thin=thin,
                                  chains=chains, noise=noise is not None, eta_draws=eta_draws,
                                  max_bytes=max_bytes, stacklevel=3)
        if executor is not None:
            settings = _ChainSettings(names=names, n_iter=int(n_iter), burn_in=int(burn_in),
                                      thin=int(thin), plan=plan, noise=released,
                                      parallel=bool(parallel), block=block)
            draws = _run_on_executor(executor, data, tables, settings, streams)
        else:
            runner = _ChainRunner(data, tables, names, n_iter, burn_in, thin, plan, progress,
                                  released, parallel=bool(parallel), block=block)
            draws = runner.run_all(streams, n_jobs)
        return PaivaFit(model=self, counts=counts, scalar_names=names, thin=thin,
                        burn_in=burn_in, noise_scale=noise, **_shape_beta(draws, counts))


def _check_beta_prior(beta_prior) -> str | tuple[str, ...] | None:
    """Return ``beta_prior`` (a sequence as a tuple) after checking each prior's name."""
    if beta_prior is None or isinstance(beta_prior, str):
        priors = [beta_prior]
    elif isinstance(beta_prior, (list, tuple)) and beta_prior:
        priors = list(beta_prior)
        beta_prior = tuple(beta_prior)
    else:
        priors = [beta_prior]
    wrong = [p for p in priors if p not in ("normal", "icar")
             and not (p is None and len(priors) == 1)]
    if wrong:
        raise InputError(
            f"beta_prior must be None, 'normal', 'icar' or a list of 'normal'/'icar' (one per "
            f"continuous covariate), got {beta_prior!r}"
        )
    return beta_prior


def _beta_labels(counts: CellCounts, data: ModelData) -> list[str]:
    """How the fitted β fields are named: ``beta`` for a str ``continuous``, else ``beta[<z>]``."""
    if not len(data.beta_priors):
        return []
    if isinstance(counts.continuous, str):
        return ["beta"]
    return [f"beta[{name}]" for name in counts.covariates]


def _shape_beta(draws: dict, counts: CellCounts) -> dict:
    """Shape β draws (chains, draws, K, G) as ``continuous``: (chains, draws, G) for a str."""
    if draws["beta"] is not None and isinstance(counts.continuous, str):
        draws["beta"] = draws["beta"][:, :, 0]
    return draws


class _ChainSettings(NamedTuple):
    """What a chain task needs besides the model's arrays and its stream (small, picklable)."""

    names: list[str]
    n_iter: int
    burn_in: int
    thin: int
    plan: StoragePlan
    noise: tuple[float, np.ndarray] | None
    parallel: bool
    block: tuple | None = None


def _run_on_executor(executor: Executor, data: ModelData, tables: CountTables,
                     settings: _ChainSettings, streams: np.ndarray) -> dict:
    """Run chain ``c`` from ``streams[c]`` as a task of ``executor``; concatenate the draws.

    Every task gets the same ``data``, ``tables`` and ``settings`` objects (an executor may
    send each to a worker once) and returns its chain's draws, as
    :meth:`_ChainRunner.run_all` does for one chain; they are concatenated in chain order.
    """
    futures = [executor.submit(_run_chain_task, data, tables, settings, streams[c], c)
               for c in range(streams.shape[0])]
    try:
        parts = [future.result() for future in futures]
    except BaseException:
        for future in futures:  # a failed chain (or Ctrl-C) stops the chains not started
            future.cancel()
        raise
    draws = {}
    for name in ("scalars", "theta", "beta", "eta", "latent_totals", "lambda_chain_means"):
        pieces = [part[name] for part in parts]
        draws[name] = None if pieces[0] is None else np.concatenate(pieces, axis=0)
    draws["eta_draw_index"] = parts[0]["eta_draw_index"]
    draws["interrupted"] = False
    return draws


def _run_chain_task(data: ModelData, tables: CountTables, settings: _ChainSettings,
                    stream: np.ndarray, chain: int) -> dict:
    """Task of ``fit(executor=...)``: chain ``chain`` from its stream, with no progress bar."""
    runner = _ChainRunner(data, tables, settings.names, settings.n_iter, settings.burn_in,
                          settings.thin, settings.plan, False, settings.noise,
                          parallel=settings.parallel, block=settings.block,
                          first_chain=chain)
    return runner.run_all(stream[None, :], 1)


def _check_executor(executor: object, n_jobs: int | None) -> None:
    if executor is None:
        return
    if not callable(getattr(executor, "submit", None)):
        raise InputError(
            "executor must be a concurrent.futures.Executor (e.g. client.get_executor() of a "
            f"Dask client), got {type(executor).__name__}"
        )
    if n_jobs is not None:
        raise InputError(
            "n_jobs sets the threads of chains run in this process; with executor= the "
            "executor decides how many chains run at once: leave n_jobs out"
        )


def kernels_need_compiling(kernel) -> bool:
    """Whether the first call of the numba ``kernel`` will compile it rather than load it.

    True when ``kernel`` has no compiled signature in this process and numba's cache holds no
    index for it (``kernel.stats.cache_path``): a fresh clone or install. A cache index left
    by an older version of the kernel also counts as compiled here; the fit then reports the
    compilation only once it is done.

    Parameters
    ----------
    kernel : numba.core.registry.CPUDispatcher
        An ``@njit(cache=True)`` function.

    Returns
    -------
    bool
        False also for a plain Python function (``NUMBA_DISABLE_JIT=1``).
    """
    if getattr(kernel, "signatures", True):
        return False
    cache_path = getattr(kernel.stats, "cache_path", None)
    if not cache_path:
        return True
    function = kernel.py_func
    stem = Path(function.__code__.co_filename).stem
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    return not any(Path(cache_path).glob(f"{stem}.{function.__qualname__}-*.{tag}*.nbi"))


def _check_noise(counts, noise) -> float | None:
    """Validate the noise scale of a noise-aware fit (None for an exact fit)."""
    from geosynth.data import CellCounts

    own = getattr(counts, "noise_scale", None)
    if noise is None:
        return own
    if isinstance(counts, CellCounts):
        raise InputError(
            "noise= is for released noisy counts; counts from geosynth.prepare are exact. "
            "Add noise with geosynth.dp.dp_counts(counts, epsilon) and fit its result"
        )
    if isinstance(noise, bool) or not isinstance(noise, (int, float, np.integer, np.floating)) \
            or not np.isfinite(noise) or noise <= 0:
        raise InputError(f"noise must be a finite scale b > 0 of the discrete Laplace noise, "
                         f"got {noise!r}")
    if own is not None and not np.isclose(noise, own):
        raise InputError(f"noise={noise} contradicts the scale {own} recorded in counts; "
                         "omit noise= to use the recorded one")
    return float(noise)


def _check_run_arguments(n_iter, burn_in, thin, chains) -> None:
    if not isinstance(n_iter, (int, np.integer)) or isinstance(n_iter, bool) or n_iter < 1:
        raise InputError(f"n_iter must be an integer >= 1 (sweeps per chain) or 'auto' (run "
                         f"until converged), got {n_iter!r}")
    for name, value, minimum in (("burn_in", burn_in, 0), ("thin", thin, 1),
                                 ("chains", chains, 1)):
        if not isinstance(value, (int, np.integer)) or value < minimum:
            raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if n_iter - burn_in < thin:
        raise InputError(
            f"n_iter ({n_iter}) - burn_in ({burn_in}) leaves no draw at thin = {thin}; "
            "raise n_iter or lower burn_in"
        )


def _check_auto_run(burn_in, thin, chains, executor) -> None:
    """Refuse what ``n_iter="auto"`` cannot do, naming the alternative."""
    for name, value in (("thin", thin), ("chains", chains)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise InputError(f"{name} must be an integer >= 1, got {value!r}")
    if executor is not None:
        raise InputError(
            "n_iter='auto' runs its chains in threads of this process (they meet at every "
            "convergence check), not on an executor; drop executor= or give a fixed n_iter"
        )
    if chains < 2:
        raise InputError(
            f"n_iter='auto' needs chains >= 2: it stops when R-hat, which compares chains, is "
            f"below max_rhat; got chains={chains}. Pass chains=2 or more, or a fixed n_iter"
        )
    if burn_in is not None:
        raise InputError(
            "n_iter='auto' discards the first half of the sweeps as burn-in, so it takes no "
            f"burn_in (got burn_in={burn_in!r}); drop burn_in, or give a fixed n_iter"
        )


def _check_storage_arguments(eta_draws, max_bytes) -> None:
    if not (eta_draws in ("all", "auto") if isinstance(eta_draws, str) else
            isinstance(eta_draws, (int, np.integer)) and not isinstance(eta_draws, bool)
            and eta_draws >= 1):
        raise InputError(
            f"eta_draws must be 'all', 'auto' or an integer >= 1 (draws of η stored per chain), "
            f"got {eta_draws!r}"
        )
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) \
            or max_bytes <= 0:
        raise InputError(f"max_bytes must be a positive int (bytes), got {max_bytes!r}")


def _chunk_sweeps(n_cells: int, n_combos: int, thin: int) -> tuple[int, int]:
    """Sweeps per burn-in chunk and per sampling chunk (whole thinning periods)."""
    chunk = max(1, min(MAX_CHUNK_SWEEPS, CHUNK_WORK // (n_cells * n_combos)))
    return chunk, thin * max(1, chunk // thin)


def evenly_spaced_draws(n_keep: int, k: int) -> np.ndarray:
    """Retained draws ``floor((j + 1/2)·n_keep/k)``, ``j = 0 .. k-1`` (all of them if k >= n_keep).

    The middle draw of each of ``k`` equal blocks: distinct, increasing, and ``arange(n_keep)``
    for ``k = n_keep``.

    Parameters
    ----------
    n_keep : int
        Retained draws per chain.
    k : int
        How many to pick.

    Returns
    -------
    numpy.ndarray of int64, shape (min(k, n_keep),)
        The indices of the picked draws.
    """
    k = min(int(k), int(n_keep))
    return ((2 * np.arange(k, dtype=np.int64) + 1) * n_keep) // (2 * k)


class StoragePlan(NamedTuple):
    """What a fit stores, from :func:`plan_storage`.

    Attributes
    ----------
    n_keep : int
        Retained draws per chain (scalars, θ, β and latent totals are stored for each).
    eta_index : numpy.ndarray of int64, shape (k,)
        The retained draws (0-based, per chain) whose η is stored; increasing.
    draws_per_chunk : int
        Retained draws per sampling chunk: rows of the per-chain η scratch buffer.
    n_bytes : int
        Estimated bytes of the stored draws of all chains plus the per-chain η buffers.
    """

    n_keep: int
    eta_index: np.ndarray
    draws_per_chunk: int
    n_bytes: int


def plan_storage(
    *,
    n_iter: int,
    burn_in: int,
    thin: int,
    chains: int,
    n_cells: int,
    n_combos: int,
    n_scalars: int,
    beta: int | bool,
    noise: bool,
    eta_draws: int | Literal["all", "auto"],
    max_bytes: int,
    stacklevel: int = 2,
) -> StoragePlan:
    """Decide how many draws of η a fit stores, or refuse before anything large is allocated.

    Counted, over all chains: float64 scalars (``8·S`` bytes a retained draw), float32 θ and β
    (``4·G`` each, β once per fitted covariate), float64 latent totals of a noise-aware fit
    (``8·B``),
    float32 η of the stored draws (``4·G·B`` each); and per chain the float64 running sum of
    exp η and its scratch term (``16·G·B``) and the float32 η of one sampling chunk
    (``4·G·B`` per draw of the chunk, plus ``4·G`` for a discarded β when β is not fitted).
    Not counted: the sampler state and the data (a few (G, B) float64 arrays per chain).

    Parameters
    ----------
    n_iter, burn_in, thin, chains, eta_draws, max_bytes
        As for :meth:`PaivaModel.fit` (validated there).
    n_cells, n_combos, n_scalars : int
        G, B and the number of scalar parameters S.
    beta : int or bool
        Number K of fitted β fields, one per continuous covariate (True: one, False: none).
    noise : bool
        Whether the fit is noise-aware.
    stacklevel : int, default 2
        Of the warning, as for :func:`warnings.warn`.

    Returns
    -------
    StoragePlan

    Raises
    ------
    MemoryLimitError
        ``eta_draws`` asks for more than ``max_bytes`` allows, or (``"auto"``) not even one
        draw of η per chain fits next to the draws of the scalars, θ and β.

    Warns
    -----
    GeosynthWarning
        ``eta_draws="auto"`` keeps η for fewer than all retained draws.
    """
    n_keep = (n_iter - burn_in) // thin
    G, B, S = int(n_cells), int(n_combos), int(n_scalars)
    per_draw = 8 * S + 4 * G * (1 + int(beta)) + (8 * B if noise else 0)
    per_eta = 4 * G * B
    rows = _chunk_sweeps(G, B, thin)[1] // thin
    buffers = 16 * G * B + rows * (per_eta + (0 if beta else 4 * G))
    fixed = chains * (n_keep * per_draw + buffers)
    need = fixed + chains * n_keep * per_eta
    fits = max(0, (max_bytes - fixed) // (chains * per_eta))
    what = (f"{chains} chain(s) x {n_keep} retained draws of η ({G:,} cells x {B} combinations, "
            f"{_format_bytes(per_eta)} a draw)")
    limit = f"max_bytes = {_format_bytes(max_bytes)}"
    parameters = "scalars, θ and β" if beta else "scalars and θ"
    if fits < 1:
        raise MemoryLimitError(
            f"the draws of the {parameters} of {chains} chain(s) x {n_keep} retained draws "
            f"({G:,} cells) and the η buffers take {_format_bytes(fixed)}, leaving no room "
            f"under {limit} for even one stored draw of η ({_format_bytes(chains * per_eta)} "
            "for all chains); raise thin, lower n_iter or chains, use a coarser grid, or raise "
            "max_bytes"
        )
    if eta_draws == "all":
        k = n_keep
        if need > max_bytes:
            raise MemoryLimitError(
                f"storing {what} needs {_format_bytes(need)}, above {limit}; pass "
                f"eta_draws='auto' or eta_draws={min(fits, n_keep)} (store η for fewer draws; "
                "the posterior mean of λ still uses them all), raise thin, use a coarser grid, "
                "or raise max_bytes"
            )
    elif eta_draws == "auto":
        k = min(n_keep, int(fits))
        if k < n_keep:
            warnings.warn(
                f"eta_draws='auto': storing {what} would need {_format_bytes(need)}, above "
                f"{limit}, so η is kept for {k} evenly spaced draws per chain ({chains * k} in "
                f"all, so at most {chains * k} synthetic releases). The posterior mean of λ "
                f"still averages all {n_keep} draws per chain, and the {parameters} keep "
                "every draw. To choose, pass eta_draws=<int> (or 'all') and raise max_bytes",
                GeosynthWarning, stacklevel=stacklevel,
            )
    else:
        k = min(n_keep, int(eta_draws))
        if k > fits:
            raise MemoryLimitError(
                f"storing η for eta_draws={k} of {what} needs "
                f"{_format_bytes(fixed + chains * k * per_eta)}, above {limit}; pass "
                f"eta_draws={int(fits)} or less (or 'auto'), raise thin, or raise max_bytes"
            )
    return StoragePlan(n_keep=n_keep, eta_index=evenly_spaced_draws(n_keep, k),
                       draws_per_chunk=rows, n_bytes=int(fixed + chains * k * per_eta))


def plan_model_storage(data: ModelData, names: list[str], *, noise: bool, stacklevel: int = 2,
                       **run) -> StoragePlan:
    """:func:`plan_storage` for the arrays of :func:`build_model_data` (G, B, S and β from them).

    S is ``len(names)``, the scalars the fit returns (the kernels' τ_β column, recorded also
    when it is not reported, is dropped at the end of the fit: 8 bytes a draw, not counted).

    Parameters
    ----------
    data : ModelData
        The kernels' arrays of :func:`build_model_data`.
    names : list of str
        The reported scalar parameters.
    noise : bool
        Whether the fit is noise-aware (it stores latent totals).
    stacklevel : int, default 2
        Stack level of the warning issued when only some η draws fit.
    **run
        ``n_iter``, ``burn_in``, ``thin``, ``chains``, ``eta_draws`` and ``max_bytes``, as
        :func:`plan_storage` takes them.

    Returns
    -------
    StoragePlan
    """
    G, B, _ = model_shape(data)
    return plan_storage(n_cells=G, n_combos=B, n_scalars=len(names),
                        beta=len(data.beta_priors), noise=noise,
                        stacklevel=stacklevel + 1, **run)


def _format_bytes(n: int) -> str:
    """``n`` bytes in the largest binary unit that keeps it >= 1 (``"4.0 GiB"``)."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{int(n)} bytes"


def build_model_data(counts: CellCounts,
                     model: PaivaModel) -> tuple[ModelData, CountTables, list[str]]:
    """Flatten a :class:`~geosynth.data.CellCounts` into the arrays the kernels take.

    The kernels record τ_β in every case (the recorded scalar columns, one per covariate), but
    without an ICAR prior on a covariate's β nothing updates its τ_β: a constant by
    construction, which would show as a parameter with an ESS of 2 and an undefined R-hat, so
    it is not reported (:func:`_scalar_columns`).

    Parameters
    ----------
    counts : geosynth.data.CellCounts
        Prepared counts (or the noisy counts of :func:`geosynth.dp.dp_counts`).
    model : PaivaModel
        The model: its priors, effects and β prior choose the arrays.

    Returns
    -------
    data : ModelData
        The kernels' arrays that no chain changes, each marked read-only.
    tables : CountTables
        The counts (for noisy counts, their positive part: where the latent counts start) and
        their sums, which each chain's state copies (:func:`initial_state`).
    names : list of str
        The reported scalar parameters: μ, α, τ_θ, τ_φ, τ_ε and, for each covariate under an
        ICAR prior, τ_β (``tau_beta`` for a str ``continuous``, else ``tau_beta[<column>]``).

    Raises
    ------
    InputError
        ``beta_prior`` is set but ``counts`` has no continuous covariate, or it lists another
        number of priors than ``counts`` has covariates.
    """
    from geosynth.data import CellCounts

    # Noisy counts (geosynth.dp.NoisyCounts) are recognised by their noise scale, so the model
    # does not import the DP layer built on top of it.
    if not isinstance(counts, CellCounts) and getattr(counts, "noise_scale", None) is None:
        raise InputError(
            f"counts must be the CellCounts returned by geosynth.prepare (or the NoisyCounts of "
            f"geosynth.dp.dp_counts), got {type(counts).__name__}"
        )
    if counts.n_records == 0:
        warnings.warn(
            "counts has no records: the posterior only says that every intensity is small",
            DataWarning, stacklevel=3,
        )
    covariates = covariate_names(getattr(counts, "continuous", None))
    if model.beta_prior is not None and (not covariates or counts.zbar is None):
        raise InputError(
            f"beta_prior={model.beta_prior!r} needs a continuous variable: call "
            "geosynth.prepare(..., continuous='column')"
        )
    if model.beta_prior is None:
        covariates = ()  # the covariates stay out of the model (β is not fitted)
    priors = ([model.beta_prior] * len(covariates) if isinstance(model.beta_prior, str)
              else list(model.beta_prior or ()))
    if len(priors) != len(covariates):
        raise InputError(
            f"beta_prior lists {len(priors)} priors {list(priors)} but the counts have "
            f"{len(covariates)} continuous covariates {list(covariates)}; give one prior per "
            "covariate, or one str for all of them"
        )
    beta_priors = np.array([_BETA_PRIORS[p] for p in priors], dtype=np.int64)
    grid = counts.grid
    # Noisy counts may be negative; they start the latent counts at max(c̃, 0).
    c = np.maximum(counts.counts, 0).astype(np.float64)
    G, B = c.shape
    if model.effects == "combination":
        combo_levels, level_names = _combination_parameters(counts)
    else:
        combo_levels, level_names = _level_parameters(counts)
    P = len(level_names)
    membership = np.zeros((B, P), dtype=bool)
    for k in range(combo_levels.shape[1]):
        has = combo_levels[:, k] >= 0
        membership[np.flatnonzero(has), combo_levels[has, k]] = True
    level_combos_ptr = np.concatenate([[0], np.cumsum(membership.sum(axis=0))]).astype(np.int64)
    level_combos = np.concatenate(
        [np.flatnonzero(membership[:, p]) for p in range(P)] or [np.empty(0, np.int64)]
    ).astype(np.int64)
    # One (G, B) slice per covariate; one slice of zeros without β (the kernels' layout).
    zbar = np.stack([counts.covariate(name)[0] for name in covariates] or [np.zeros((G, B))])
    modes, mode_eigenvalues = smooth_modes(np.asarray(grid.indptr, dtype=np.int64),
                                           np.asarray(grid.indices, dtype=np.int64))
    tables = CountTables(
        counts=c,
        cell_counts=c.sum(axis=1),
        level_counts=(c @ membership).sum(axis=0).astype(np.float64),
        cell_level_counts=(c @ membership).astype(np.float64),
        cell_czbar=np.stack([(c * z).sum(axis=1) for z in zbar]),
    )
    data = ModelData(
        combo_levels=combo_levels,
        level_combos_ptr=level_combos_ptr,
        level_combos=level_combos,
        all_combos=np.arange(B, dtype=np.int64),
        indptr=np.ascontiguousarray(grid.indptr, dtype=np.int64),
        indices=np.ascontiguousarray(grid.indices, dtype=np.int64),
        component=np.ascontiguousarray(grid.component, dtype=np.int64),
        component_size=np.bincount(grid.component, minlength=grid.n_components).astype(float),
        zbar=np.array(zbar, dtype=np.float64, order="C"),
        priors=model.priors.to_array(),
        beta_priors=beta_priors,
        beta_sampler=_BETA_SAMPLERS[model.beta_sampler],
        scalar_update=UPDATE_MH if model.sampler == "mh" else UPDATE_EXACT,
        modes=modes,
        mode_eigenvalues=mode_eigenvalues,
    )
    # Read-only arrays are their own numba type: every kernel is compiled for these, and one
    # that assigned to the fit's shared arrays would not compile.
    data = ModelData(*(_read_only(v) if isinstance(v, np.ndarray) else v for v in data))
    single = isinstance(counts.continuous, str)
    names = (["mu"] + [f"alpha[{n}]" for n in level_names] + ["tau_theta"]
             + [f"tau_phi[{n}]" for n in level_names] + ["tau_eps"]
             + ["tau_beta" if single else f"tau_beta[{name}]"
                for name, prior in zip(covariates, beta_priors, strict=True)
                if prior == BETA_ICAR])
    return data, tables, names


def _read_only(array: np.ndarray) -> np.ndarray:
    """Return a C-contiguous copy of ``array`` that cannot be written."""
    out = np.array(array, order="C")
    out.setflags(write=False)
    return out


def _scalar_columns(data: ModelData) -> np.ndarray:
    """Columns of the kernels' scalar record that the fit reports (see build_model_data)."""
    P = model_shape(data)[2]
    icar = np.flatnonzero(data.beta_priors == BETA_ICAR)
    return np.concatenate([np.arange(2 * P + 3), 2 * P + 3 + icar]).astype(np.int64)


def _recorded_scalars(data: ModelData) -> int:
    """Columns of the kernels' scalar record: μ, α (P), τ_θ, τ_φ (P), τ_ε, τ_β (max(K, 1))."""
    return 2 * model_shape(data)[2] + 3 + data.zbar.shape[0]


def _level_parameters(counts: CellCounts) -> tuple[np.ndarray, list[str]]:
    """Map each combination's non-baseline levels to parameter indices p."""
    codes = counts.combo_codes
    combo_levels = np.full(codes.shape, -1, dtype=np.int64)
    names: list[str] = []
    offset = 0
    for k, attribute in enumerate(counts.attributes):
        levels = counts.levels[attribute]
        nonbase = codes[:, k] > 0
        combo_levels[nonbase, k] = offset + codes[nonbase, k] - 1
        names += [f"{attribute}={level}" for level in levels[1:]]
        offset += len(levels) - 1
    return combo_levels, names


def _combination_parameters(counts: CellCounts) -> tuple[np.ndarray, list[str]]:
    """One parameter per combination but the first (the baseline)."""
    B = counts.n_combos
    combo_levels = (np.arange(B, dtype=np.int64) - 1).reshape(B, 1)
    names = ["combination=" + label for label in counts.combination_labels()[1:]]
    return combo_levels, names


def initial_state(data: ModelData, tables: CountTables, stream: np.ndarray) -> GibbsState:
    """Return a chain's over-dispersed starting state (so R-hat can detect non-convergence).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (:func:`build_model_data`).
    tables : CountTables
        The fit's counts and their sums; the state holds a copy of each.
    stream : numpy.ndarray of uint64, shape (4,)
        The chain's xoshiro256** stream (:func:`geosynth.samplers.rng.make_streams`); the
        state's generator starts from a copy, and it seeds the starting values.

    Returns
    -------
    GibbsState
    """
    G, B, n_levels = model_shape(data)
    K, fields = len(data.beta_priors), data.zbar.shape[0]
    rng = np.random.default_rng(stream[:2].astype(np.int64) & 0x7FFFFFFFFFFFFFFF)
    mean_count = max(tables.counts.sum(), 1.0) / (G * B)
    return GibbsState(
        *(np.array(table) for table in tables),
        mu=np.array([np.log(mean_count) + rng.normal(0, 0.5)]),
        alpha=rng.normal(0, 0.5, n_levels),
        theta=rng.normal(0, 0.2, G),
        phi=rng.normal(0, 0.2, (G, n_levels)),
        beta=np.zeros((fields, G)) if K == 0 else rng.normal(0, 0.2, (K, G)),
        eps=np.zeros((G, B)),
        tau_theta=np.array([rng.gamma(2.0, 1.0)]),
        tau_phi=rng.gamma(2.0, 1.0, n_levels),
        tau_eps=np.array([rng.gamma(2.0, 5.0)]),
        tau_beta=rng.gamma(2.0, 1.0, fields),
        eta=np.zeros((G, B)),
        expeta=np.ones((G, B)),
        rng=stream.copy(),
        work=new_workspace(),
        wbuf=np.zeros(max(B, 1)),
        zbuf=np.zeros(max(B, 1)),
        ones=np.ones(1),
        w1=np.zeros(1),
        scale_log_sd=np.full(2 * n_levels + 3 + fields, np.log(0.1)),
        marginal_log_sd=np.full(n_levels + 3, np.log(0.3)),
        mode_work=np.zeros((4, G)),
    )


class _ChainRunner:
    """Runs chains in threads, in fixed-size chunks, with progress bars and clean Ctrl-C.

    Each sampling chunk writes its draws of η into a per-chain float32 scratch buffer (the
    kernels write draw ``r`` of a call into row ``row + r`` of every output; the scalars, θ, β
    and latent totals get views that start at the chain's current row, η the scratch with
    ``row = 0``). After the chunk, exp η of each draw is added to a float64 running sum, and the
    draws the :class:`StoragePlan` keeps are copied out. Views of C-contiguous rows are
    C-contiguous, so the kernels see the same numba types as with whole arrays.

    Ctrl-C: the chains stop at their next chunk; the draws every chain kept are returned with
    ``interrupted=True``, or the ``KeyboardInterrupt`` is raised again if some chain kept none.
    """

    def __init__(self, data, tables, names, n_iter, burn_in, thin, plan, progress, noise=None,
                 parallel=False, first_chain=0, block=None):
        self.data, self.tables, self.names = data, tables, names
        self.block = block  # block sampler: the extra arguments of run_chunk_block
        self.first_chain = first_chain  # number of chain 0 in messages (a task runs one chain)
        self.colours = None
        if parallel:  # chromatic Gibbs: colour classes of the lattice, shared by the chains
            from geosynth.model.parallel import colour_classes, greedy_colouring

            self.colours = colour_classes(greedy_colouring(data.indptr, data.indices))
        # Noise-aware fits: the released counts c̃ and 1/b (0 switches the latent step off).
        self.noisy = noise[1] if noise else tables.counts
        self.inv_scale = 1.0 / noise[0] if noise else 0.0
        # Python ints: a NumPy int32 would be another numba type (a second compilation).
        self.n_iter, self.burn_in, self.thin = int(n_iter), int(burn_in), int(thin)
        self.plan = plan
        self.progress = progress
        self.stop = threading.Event()

    def run_all(self, streams: np.ndarray, n_jobs: int | None) -> dict[str, np.ndarray]:
        chains = streams.shape[0]
        G, B, _ = model_shape(self.data)
        n_keep, eta_index = self.plan.n_keep, self.plan.eta_index
        has_beta = len(self.data.beta_priors) > 0
        fields = self.data.zbar.shape[0]
        out = {
            "scalars": np.zeros((chains, n_keep, _recorded_scalars(self.data))),
            "theta": np.zeros((chains, n_keep, G), dtype=np.float32),
            "beta": np.zeros((chains, n_keep if has_beta else 0, fields, G), dtype=np.float32),
            "eta": np.zeros((chains, eta_index.size, G, B), dtype=np.float32),
            "latent_totals": np.zeros((chains, n_keep if self.inv_scale else 0, B)),
            "lambda_sum": np.zeros((chains, G, B)),
        }
        kept = np.zeros(chains, dtype=np.int64)
        if self.progress:
            self.compile_kernels(streams[0], out)  # before the bars, so their ETA is right
        workers = max(1, min(chains, n_jobs or os.cpu_count() or 1))
        interrupt = None
        if workers == 1 and self.colours is not None:
            # Chromatic chains one after another in the calling thread: numba's OpenMP layer
            # keeps one thread team per calling thread, and a second team's idle workers spin
            # on the cores the running team needs (a fit from a fresh worker thread after
            # parallel work in this one ran ~25× slower on 2 cores).
            try:
                for c in range(chains):
                    self.run_chain(c, streams[c], out, kept)
            except KeyboardInterrupt as error:
                interrupt = error
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(self.run_chain, c, streams[c], out, kept)
                           for c in range(chains)]
                try:
                    for future in futures:
                        future.result()
                except KeyboardInterrupt as error:
                    interrupt = error
                    self.stop.set()
                    wait(futures)  # each chain stops at its next chunk; a 2nd Ctrl-C propagates
                    for future in futures:
                        failure = future.exception()
                        if failure is not None and not isinstance(failure, KeyboardInterrupt):
                            raise failure from error
                except BaseException:
                    self.stop.set()  # a failed chain stops the others at their next chunk
                    raise
        n = int(kept.min())
        if interrupt is not None:
            if n == 0:
                raise interrupt  # nothing to return: not an empty fit that fails later
            self._warn_interrupted(kept)
        n_eta = int(np.searchsorted(eta_index, n))  # stored draws among the first n
        means = out.pop("lambda_sum")
        means /= np.maximum(kept, 1)[:, None, None]
        if not has_beta:
            out["beta"] = None
        if not self.inv_scale:
            out["latent_totals"] = None
        # The kernels also record τ_β when nothing updates it; report the named scalars only.
        scalars = out.pop("scalars")
        draws = {k: (None if v is None else v[:, :n]) for k, v in out.items()}
        draws["scalars"] = np.ascontiguousarray(scalars[:, :n][..., _scalar_columns(self.data)])
        draws["eta"] = out["eta"][:, :n_eta]
        draws["eta_draw_index"] = eta_index[:n_eta].copy()
        draws["lambda_chain_means"] = means if n > 0 else None
        draws["interrupted"] = interrupt is not None
        return draws

    @staticmethod
    def _warn_interrupted(kept: np.ndarray) -> None:
        warnings.warn(
            f"interrupted: keeping the {kept.min()} draws per chain made so far (the "
            "posterior mean of λ averages all the draws each chain made); fit.interrupted "
            "is True: inspect these draws, do not publish from them",
            GeosynthWarning, stacklevel=4,
        )

    def kernel(self):
        """Return the numba kernel that runs this fit's chunks and its kind (for the notice)."""
        if self.inv_scale:
            return run_chunk_noise_aware, "noise-aware"
        if self.colours is not None:
            from geosynth.model.parallel import run_chunk_parallel

            return run_chunk_parallel, "chromatic"
        if self.block is not None:
            from geosynth.model.block import run_chunk_block

            return run_chunk_block, "block"
        return run_chunk, "serial"

    def compile_kernels(self, stream: np.ndarray, out: dict) -> None:
        """Compile (or load from numba's cache) the kernels of this fit, saying so on stderr.

        Nothing happens when they are compiled in this process already. Otherwise a
        zero-sweep chunk on a scratch state (the chains' states and streams are untouched)
        compiles every kernel the chains call, with the argument types they will have. The
        notice comes first when :func:`kernels_need_compiling` (no cache: a fresh clone), and
        the time it took after any compilation; loading from numba's cache is silent.
        """
        kernel, kind = self.kernel()
        pending = kernels_need_compiling(kernel)
        if not pending and getattr(kernel, "signatures", True):
            return  # compiled in this process, or not a numba dispatcher (NUMBA_DISABLE_JIT)
        if pending:
            print(f"compiling the sampler (first run only, ~{COMPILE_SECONDS[kind]} s; "
                  "`geosynth compile` does it ahead of time)",
                  file=sys.stderr, flush=True)
        start = time.perf_counter()
        data = self.data
        state = initial_state(data, self.tables, stream.copy())
        cell_streams = None
        if self.colours is not None:
            from geosynth.model.parallel import cell_streams_for

            cell_streams = cell_streams_for(stream.copy(), model_shape(data)[0])
        if self.inv_scale:
            compute_eta(data, state)
            update_latent_counts(data, state, self.noisy, self.inv_scale)
        self._run(data, state, 0, out, 0, 0, False, self._buffers(out), cell_streams)
        if pending or sum(kernel.stats.cache_misses.values()):
            print(f"compiled the sampler in {time.perf_counter() - start:.0f} s",
                  file=sys.stderr, flush=True)

    def _buffers(self, out: dict) -> _ChunkBuffers:
        """Per-chain scratch of one sampling chunk (see :class:`_ChunkBuffers`)."""
        G, B, _ = model_shape(self.data)
        rows = self.plan.draws_per_chunk
        return _ChunkBuffers(
            eta=np.zeros((rows, G, B), dtype=np.float32),
            beta=None if out["beta"].shape[1] else np.zeros((rows, 1, G), dtype=np.float32),
            term=np.empty((G, B)),
        )

    def start_chain(self, stream: np.ndarray) -> tuple[ModelData, GibbsState, np.ndarray | None]:
        """Return the fit's data, a chain's initial state and its cell streams."""
        data = self.data
        state = initial_state(data, self.tables, stream)
        cell_streams = None
        if self.colours is not None:
            from geosynth.model.parallel import cell_streams_for

            cell_streams = cell_streams_for(stream, model_shape(data)[0])
        if self.inv_scale:
            compute_eta(data, state)
            update_latent_counts(data, state, self.noisy, self.inv_scale)
        return data, state, cell_streams

    def run_chain(self, chain: int, stream: np.ndarray, out: dict, kept: np.ndarray) -> None:
        data, state, cell_streams = self.start_chain(stream)
        bar = _progress_bar(self.n_iter, chain, self.progress)
        # Sampling chunks hold whole thinning periods, so draws land on sweeps burn_in + thin·j.
        G, B, _ = model_shape(self.data)
        chunk, sampling_chunk = _chunk_sweeps(G, B, self.thin)
        scratch = self._buffers(out)
        try:
            for n, keep in _chunks(self.burn_in, chunk, False) + _chunks(
                self.n_iter - self.burn_in, sampling_chunk, True
            ):
                if self.stop.is_set():
                    break
                row = int(kept[chain])
                written = self._run(data, state, n, out, chain, row, keep, scratch, cell_streams)
                if written:
                    self._collect(out, chain, row, written, scratch)
                kept[chain] += written
                bar.update(n)
        finally:
            bar.close()

    def _run(self, data, state, n, out, chain, row, keep, scratch, cell_streams=None) -> int:
        beta = out["beta"][chain][row:] if scratch.beta is None else scratch.beta
        eta = out["eta"][chain][row:] if scratch.eta is None else scratch.eta
        args = (data, state, n, self.thin, out["scalars"][chain][row:],
                out["theta"][chain][row:], beta, eta, 0, keep)
        if self.inv_scale:
            status, written = run_chunk_noise_aware(
                *args, self.noisy, self.inv_scale, out["latent_totals"][chain][row:])
        elif cell_streams is not None:
            from geosynth.model.parallel import run_chunk_parallel

            status, written = run_chunk_parallel(*args, *self.colours, cell_streams)
        elif self.block is not None:
            from geosynth.model.block import run_chunk_block

            status, written = run_chunk_block(*args, *self.block)
        else:
            status, written = run_chunk(*args)
        if status:
            block, code = divmod(status, 16)
            raise SamplerError(
                f"chain {self.first_chain + chain}: the {BLOCK_NAMES[block]} update failed: "
                f"{STATUS_MESSAGES[code]}"
            )
        return written

    def _collect(self, out, chain, row, written, scratch) -> None:
        """Add exp η of retained draws ``row .. row + written - 1`` and store the planned ones."""
        total, term = out["lambda_sum"][chain], scratch.term
        for r in range(written):
            np.exp(scratch.eta[r], dtype=np.float64, out=term)
            total += term
        index = self.plan.eta_index
        for j in range(np.searchsorted(index, row), np.searchsorted(index, row + written)):
            out["eta"][chain, j] = scratch.eta[index[j] - row]


class _ChunkBuffers(NamedTuple):
    """Per-chain scratch: η of one chunk's draws, discarded β (if not fitted), one exp η term.

    ``eta`` is None for an ``n_iter="auto"`` fit, whose kernels write η straight into the
    stored draws (it keeps η for every retained draw).
    """

    eta: np.ndarray | None
    beta: np.ndarray | None
    term: np.ndarray


def _plan_auto_storage(data: ModelData, names: list[str], *, thin: int, chains: int,
                       noise: bool, target_ess: float, max_rhat: float,
                       max_bytes: int) -> tuple[StoragePlan, AutoSchedule]:
    """Rows of the stored window of an ``n_iter="auto"`` fit, and its schedule.

    Every retained draw keeps its η (the λ check and the releases use them), so a draw costs
    ``8·S + 4·G`` (θ) ``+ 4·G`` (β, if fitted) ``+ 8·B`` (latent totals, if noise-aware)
    ``+ 4·G·B`` (η) bytes, and a chain's buffers ``24·G·B`` (two float64 sums of exp η, one per
    segment of the window, and a scratch term) plus a chunk's discarded β. The draws per chain
    that fit in ``max_bytes`` bound the window (:class:`~geosynth.model.stopping.AutoSchedule`).

    Raises
    ------
    MemoryLimitError
        Fewer than ``max(8, 2·target_ess/chains)`` draws per chain fit: the thinning rule
        keeps at least half the window, and the target would be out of reach.

    Warns
    -----
    GeosynthWarning
        Fewer draws per chain fit than the schedule's ``wanted_draws``: R-hat may then stay
        above ``max_rhat`` by its own noise.
    """
    G, B, _ = model_shape(data)
    beta = len(data.beta_priors)
    per_draw = (8 * _recorded_scalars(data) + 4 * G * (1 + beta)
                + (8 * B if noise else 0) + 4 * G * B)
    rows = _chunk_sweeps(G, B, thin)[1] // thin
    buffers = 24 * G * B + (0 if beta else 4 * G * rows)
    capacity = max(0, (max_bytes - chains * buffers) // (chains * per_draw))
    need = max(8, 2 * math.ceil(target_ess / chains))
    if capacity < need:
        raise MemoryLimitError(
            f"n_iter='auto' with target_ess={target_ess:g} over {chains} chains keeps up to "
            f"{need} draws per chain, each with its η ({G:,} cells x {B} combinations, "
            f"{_format_bytes(per_draw)} a draw), but max_bytes = {_format_bytes(max_bytes)} "
            f"holds {capacity}; raise max_bytes, lower target_ess, or use a coarser grid"
        )
    schedule = AutoSchedule(thin, chains, target_ess, max_rhat, capacity)
    window = schedule.max_draws
    if window < schedule.wanted_draws:
        warnings.warn(
            f"n_iter='auto': max_bytes = {_format_bytes(max_bytes)} holds {window} draws per "
            f"chain with their η ({G:,} cells x {B} combinations), fewer than the "
            f"{schedule.wanted_draws} that keep the noise of R-hat itself well below "
            f"max_rhat={max_rhat:g} over every parameter: the fit may run long or stop at "
            "max_seconds unconverged; raise max_bytes, raise max_rhat, or use a coarser grid",
            GeosynthWarning, stacklevel=4,
        )
    plan = StoragePlan(n_keep=window, eta_index=np.arange(window, dtype=np.int64),
                       draws_per_chunk=rows, n_bytes=int(chains * (window * per_draw + buffers)))
    return plan, schedule


class _AutoChain:
    """One chain of an ``n_iter="auto"`` fit between segments: its state and its window.

    ``sums[s]`` and ``counts[s]`` hold the running sum of exp η and the number of draws of the
    window's segment in slot ``s`` (segment j uses slot ``j % 2``); ``segment_rows`` the stored
    draws of the window's older and newer segment.
    """

    def __init__(self, data, state, cell_streams, scratch, shape, bar):
        self.data, self.state, self.cell_streams, self.scratch = data, state, cell_streams, scratch
        self.sums = np.zeros((2, *shape))
        self.counts = np.zeros(2, dtype=np.int64)
        self.rows = 0
        self.segment_rows = [0, 0]
        self.sweeps = 0
        self.bar = bar


class _AutoRunner(_ChainRunner):
    """Runs ``n_iter="auto"`` chains segment by segment until converged (:mod:`.stopping`).

    All chains run a segment (in threads, as :class:`_ChainRunner` runs whole chains), then
    the calling thread checks the window's draws, drops the draws before the next window,
    thins them when the schedule says so, and starts the next segment. Draws are stored
    straight into ``out`` (η of every retained draw), and the kernels record every ``thin``
    sweeps from segment starts that are multiples of ``thin``, so the retained draws are the
    sweeps ``s`` with ``(s + 1) % thin == 0`` in the window.
    """

    def __init__(self, data, tables, names, thin, plan, progress, noise, *, parallel, schedule,
                 rule, started, eta_draws, block=None, beta_labels=()):
        super().__init__(data, tables, names, 0, 0, thin, plan, progress, noise, parallel=parallel,
                         block=block)
        self.beta_labels = list(beta_labels)  # name of each covariate's β field
        self.schedule = schedule
        self.target_ess, self.max_rhat, self.max_seconds = rule
        self.started = started
        self.deadline = None if rule[2] is None else started + float(rule[2])
        self.timed_out = threading.Event()
        self.eta_draws = eta_draws
        G, B, _ = model_shape(data)
        self.screen = evenly_spaced_draws(G * B, LAMBDA_SCREEN)
        self.checks = 0
        self.check_seconds = 0.0
        self.last_check: ConvergenceCheck | None = None
        self.segment = 0
        self.consistent = True  # False while rows of the window move (see run_all)

    def _buffers(self, out: dict) -> _ChunkBuffers:
        G, B, _ = model_shape(self.data)
        rows = self.plan.draws_per_chunk
        return _ChunkBuffers(
            eta=None,
            beta=None if out["beta"].shape[1] else np.zeros((rows, 1, G), dtype=np.float32),
            term=np.empty((G, B)),
        )

    def run_all(self, streams: np.ndarray, n_jobs: int | None) -> dict:
        n_chains = streams.shape[0]
        G, B, _ = model_shape(self.data)
        rows = self.plan.n_keep
        has_beta = len(self.data.beta_priors) > 0
        fields = self.data.zbar.shape[0]
        out = {
            "scalars": np.zeros((n_chains, rows, _recorded_scalars(self.data))),
            "theta": np.zeros((n_chains, rows, G), dtype=np.float32),
            "beta": np.zeros((n_chains, rows if has_beta else 0, fields, G), dtype=np.float32),
            "eta": np.zeros((n_chains, rows, G, B), dtype=np.float32),
            "latent_totals": np.zeros((n_chains, rows if self.inv_scale else 0, B)),
        }
        self.out = out
        if self.progress:
            self.compile_kernels(streams[0], out)  # before the bars, so their ETA is right
        first_check = self.schedule.boundary(2)
        self.chains = []
        for c in range(n_chains):
            data, state, cell_streams = self.start_chain(streams[c])
            self.chains.append(_AutoChain(data, state, cell_streams, self._buffers(out), (G, B),
                                          _progress_bar(first_check, c, self.progress)))
        workers = max(1, min(n_chains, n_jobs or os.cpu_count() or 1))
        pool = None
        if not (workers == 1 and self.colours is not None):  # see _ChainRunner.run_all
            pool = ThreadPoolExecutor(max_workers=workers)
        interrupt = None
        try:
            reason = self._run_segments(pool)
        except KeyboardInterrupt as error:
            if not self.consistent:
                raise  # Ctrl-C while the window's rows were being moved: no fit to return
            interrupt, reason = error, "interrupted"
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
            for chain in self.chains:
                chain.bar.close()
        return self._result(reason, interrupt)

    def _each_chain(self, pool, *args) -> None:
        """Run :meth:`_segment` ``(c, *args)`` for every chain, in the pool or in turn."""
        if pool is None:
            for c in range(len(self.chains)):
                self._segment(c, *args)
            return
        futures = [pool.submit(self._segment, c, *args) for c in range(len(self.chains))]
        try:
            for future in futures:
                future.result()
        except KeyboardInterrupt:
            self.stop.set()
            wait(futures)  # each chain stops at its next chunk; a 2nd Ctrl-C propagates
            for future in futures:
                failure = future.exception()
                if failure is not None and not isinstance(failure, KeyboardInterrupt):
                    raise failure from None
            raise
        except BaseException:
            self.stop.set()  # a failed chain stops the others at their next chunk
            raise

    def _run_segments(self, pool) -> str:
        """Warm up, then run segments and check until converged or out of time."""
        schedule = self.schedule
        self._each_chain(pool, schedule.boundary(0), False, 0)
        self.segment = 0
        while True:
            j = self.segment
            self.consistent = False
            for _ in range(schedule.doublings(j, self.thin)):
                self._halve()
            self.consistent = True
            start, end = schedule.boundary(j), schedule.boundary(j + 1)
            if start % self.thin or end % self.thin:  # the schedule's invariant
                raise RuntimeError(f"segment [{start}, {end}) is not a multiple of thin "
                                   f"{self.thin}")
            self._each_chain(pool, end - start, True, j % 2)
            if self.timed_out.is_set():
                return "max_seconds"
            if j >= 1:
                if self._check(complete=False).converged:
                    return "converged"
                self.consistent = False
                self._drop_older(j - 1)
                self.consistent = True
            self.segment += 1

    def _segment(self, c: int, length: int, keep: bool, slot: int) -> None:
        """Run ``length`` sweeps of chain ``c``; store their draws in the window's ``slot``."""
        chain = self.chains[c]
        G, B, _ = model_shape(self.data)
        burn, sampling = _chunk_sweeps(G, B, self.thin)
        if keep:
            chain.sums[slot] = 0.0
            chain.counts[slot] = 0
            chain.segment_rows = [chain.rows, 0]
        term = chain.scratch.term
        for n, _ in _chunks(length, sampling if keep else burn, keep):
            if self.stop.is_set():
                return
            if keep and self.deadline is not None and chain.rows >= MIN_DRAWS_AT_DEADLINE \
                    and time.monotonic() >= self.deadline:
                self.timed_out.set()
                return
            row = chain.rows
            written = self._run(chain.data, chain.state, n, self.out, c, row, keep,
                                chain.scratch, chain.cell_streams)
            for r in range(row, row + written):
                np.exp(self.out["eta"][c, r], dtype=np.float64, out=term)
                chain.sums[slot] += term
            chain.counts[slot] += written
            chain.rows += written
            chain.segment_rows[1] += written
            chain.sweeps += n
            chain.bar.update(n)

    def _move_rows(self, c: int, sources) -> None:
        """Store rows ``sources[r]`` of chain ``c`` in rows ``r`` (each source >= its row)."""
        for r, source in enumerate(sources):
            if r != source:
                for array in self.out.values():
                    if array.shape[1]:
                        array[c, r] = array[c, source]

    def _halve(self) -> None:
        """Keep every other stored draw (those on multiples of twice ``thin``); double thin."""
        for c, chain in enumerate(self.chains):
            kept = chain.rows // 2
            self._move_rows(c, range(1, 2 * kept, 2))
            chain.rows = kept
            chain.segment_rows = [kept, 0]
        self.thin *= 2

    def _drop_older(self, j: int) -> None:
        """Drop the draws (and the exp η sum) of segment ``j``, the window's older segment."""
        for c, chain in enumerate(self.chains):
            older, newer = chain.segment_rows
            self._move_rows(c, range(older, older + newer))
            chain.rows = newer
            chain.segment_rows = [newer, 0]
            chain.sums[j % 2] = 0.0
            chain.counts[j % 2] = 0

    def _groups(self, n: int) -> list[ParameterGroup]:
        """Group the window's first ``n`` draws of every chain in the order of the check."""
        out = self.out
        G, B, _ = model_shape(self.data)
        names = self.names
        eta = out["eta"].reshape(out["eta"].shape[0], out["eta"].shape[1], G * B)[:, :n]
        screen = self.screen

        def cell_combination(k: int) -> str:
            return "lambda[{},{}]".format(*divmod(int(k), B))

        scalars = out["scalars"][:, :n][..., _scalar_columns(self.data)]
        groups = [
            ParameterGroup("scalars", scalars, names.__getitem__),
            ParameterGroup("theta", out["theta"][:, :n], lambda i: f"theta[{i}]"),
        ]
        if out["beta"].shape[1]:
            beta = out["beta"][:, :n]
            labels = self.beta_labels or ["beta"] * beta.shape[2]

            def beta_name(k: int) -> str:
                return f"{labels[k // G]}[{k % G}]"

            groups.append(ParameterGroup("beta", beta.reshape(*beta.shape[:2], -1), beta_name))
        if screen.size < G * B:
            groups.append(ParameterGroup("lambda (screen)", eta[:, :, screen],
                                         lambda k: cell_combination(screen[k]), screen=True))
        groups.append(ParameterGroup("lambda", eta, cell_combination))
        return groups

    def _check(self, complete: bool) -> ConvergenceCheck:
        n = min(chain.rows for chain in self.chains)
        check = assess_convergence(self._groups(n), self.target_ess, self.max_rhat,
                                   complete=complete, workers=os.cpu_count() or 1)
        self.checks += 1
        self.check_seconds += check.seconds
        self.last_check = check
        postfix = (f"ESS {check.min_ess:.0f}/{self.target_ess:g}, "
                   f"R-hat {check.max_r_hat:.3f}/{self.max_rhat:g}")
        following = self.schedule.boundary(self.segment + 2)  # the end of the next window
        for chain in self.chains:
            chain.bar.total = following
            chain.bar.set_postfix_str(postfix, refresh=True)
        return check

    def _result(self, reason: str, interrupt: KeyboardInterrupt | None) -> dict:
        chains = self.chains
        n = min(chain.rows for chain in chains)
        if interrupt is not None and n == 0:
            raise interrupt  # nothing to return: not an empty fit that fails later
        check = self.last_check
        if reason == "max_seconds":
            check = self._check(complete=True)
        elif interrupt is not None:
            self._warn_interrupted(np.array([chain.rows for chain in chains]))
        sweeps = min(chain.sweeps for chain in chains)
        # Every chain's window starts at the same sweep: sweeps made minus the stored draws'.
        burn_in = chains[0].sweeps - self.thin * chains[0].rows
        stopping = StoppingInfo(
            reason=reason, sweeps=sweeps, burn_in=burn_in, thin=self.thin, draws=n,
            min_ess=math.nan if check is None else check.min_ess,
            max_r_hat=math.nan if check is None else check.max_r_hat,
            worst_ess="" if check is None else check.worst_ess,
            worst_r_hat="" if check is None else check.worst_r_hat,
            target_ess=self.target_ess, max_rhat=self.max_rhat, max_seconds=self.max_seconds,
            not_converged=() if check is None else check.not_converged,
            n_not_converged=0 if check is None else check.n_not_converged,
            checks=self.checks, check_seconds=self.check_seconds,
            seconds=time.monotonic() - self.started,
        )
        if reason == "max_seconds":
            warnings.warn(
                f"n_iter='auto' {stopping.describe()}. Not converged: "
                f"{stopping.not_converged_text()}. The draws of the last window are returned "
                "(in Python, fit.stopping records how the fit stopped); raise max_seconds, "
                "lower target_ess or raise max_rhat before publishing from them",
                GeosynthWarning, stacklevel=4,
            )
        out = self.out
        counts = np.array([chain.counts.sum() for chain in chains])
        means = np.stack([chain.sums.sum(axis=0) for chain in chains])
        means /= np.maximum(counts, 1)[:, None, None]
        eta_index = np.arange(n, dtype=np.int64)
        if isinstance(self.eta_draws, (int, np.integer)) and self.eta_draws < n:
            eta_index = evenly_spaced_draws(n, int(self.eta_draws))
        draws = {
            "scalars": np.ascontiguousarray(out["scalars"][:, :n][..., _scalar_columns(self.data)]),
            "theta": out["theta"][:, :n],
            "beta": out["beta"][:, :n] if out["beta"].shape[1] else None,
            "eta": out["eta"][:, :n] if eta_index.size == n else out["eta"][:, eta_index],
            "latent_totals": out["latent_totals"][:, :n] if self.inv_scale else None,
            "eta_draw_index": eta_index,
            "lambda_chain_means": means if n > 0 else None,
            "interrupted": interrupt is not None,
            "thin": self.thin,
            "burn_in": burn_in,
            "stopping": stopping,
        }
        return draws


def _chunks(total: int, size: int, keep: bool) -> list[tuple[int, bool]]:
    return [(min(size, total - start), keep) for start in range(0, total, size)]


def _progress_bar(total: int, chain: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"chain {chain}", position=chain, leave=False,
                disable=not enabled, unit="sweep")


@dataclass
class PaivaFit:
    """Posterior draws of a fitted :class:`PaivaModel`.

    ``draws`` below is :attr:`n_draws`, the retained draws per chain; η may be stored for only
    :attr:`n_eta_draws` of them (``eta_draws`` of :meth:`PaivaModel.fit`).

    Attributes
    ----------
    scalars : numpy.ndarray, shape (chains, draws, S)
        μ, α, τ_θ, τ_φ, τ_ε and (for each covariate under ``beta_prior="icar"`` only, the one
        prior that samples it) τ_β per draw (names in ``scalar_names``). μ and α are reported
        with the means of θ and φ absorbed (the sum-to-zero parametrisation of the thesis).
    theta : numpy.ndarray of float32, shape (chains, draws, G)
        θ centred to mean zero.
    beta : numpy.ndarray of float32, shape (chains, draws, G) or (chains, draws, K, G), or None
        The per-cell effects of the continuous covariate(s): (chains, draws, G) when
        ``continuous`` was one column name (a str), (chains, draws, K, G) when it was a list of
        K columns (``beta[:, :, k]`` is covariate ``counts.covariates[k]``); None without β.
    eta : numpy.ndarray of float32, shape (chains, n_eta_draws, G, B)
        Linear predictor log λ of the stored draws: ``eta[c, j]`` is retained draw
        ``eta_draw_index[j]`` of chain ``c``.
    noise_scale : float or None
        Scale of the discrete Laplace noise of a noise-aware fit (None: exact counts).
    latent_totals : numpy.ndarray, shape (chains, draws, B), or None
        Noise-aware fits: per draw, the total of the latent true counts of each combination.
    eta_draw_index : numpy.ndarray of int64, shape (n_eta_draws,)
        The retained draws (per chain, 0-based, increasing) whose η is stored; defaults to all
        of them, ``arange(eta.shape[1])``.
    lambda_chain_means : numpy.ndarray of float64, shape (chains, G, B), or None
        Per chain, the mean of λ = exp η over *every* retained draw of that chain, summed during
        the fit (so exact whatever ``eta_draws`` kept; after an interrupted fit, over all the
        draws that chain made). None: :meth:`posterior_mean_lambda` averages the stored ``eta``.
    interrupted : bool
        True when Ctrl-C (``KeyboardInterrupt``) stopped the sampler early: the draws are those
        every chain had kept by then, fewer than planned and perhaps not converged. Fine to
        inspect; a caller that publishes from a fit (the command line) must stop instead.
    stopping : geosynth.model.stopping.StoppingInfo or None
        How an ``n_iter="auto"`` fit stopped: ``reason`` ("converged", "max_seconds" or
        "interrupted"), sweeps per chain, burn-in, final thin, minimum bulk ESS and maximum
        R-hat with the parameters where they occur, the parameters that missed the rule, and
        the time the convergence checks took. None for a fixed ``n_iter``.
    """

    model: PaivaModel
    counts: CellCounts
    scalar_names: list[str]
    scalars: np.ndarray
    theta: np.ndarray
    beta: np.ndarray | None
    eta: np.ndarray
    thin: int = 1
    burn_in: int = 0
    noise_scale: float | None = None
    latent_totals: np.ndarray | None = None
    eta_draw_index: np.ndarray | None = field(default=None, repr=False)
    lambda_chain_means: np.ndarray | None = field(default=None, repr=False)
    interrupted: bool = False
    stopping: StoppingInfo | None = field(default=None, repr=False)
    _mean_lambda: np.ndarray | None = field(default=None, init=False, repr=False,
                                            compare=False)

    def __post_init__(self) -> None:
        if self.eta_draw_index is None and self.eta is not None:
            self.eta_draw_index = np.arange(self.eta.shape[1], dtype=np.int64)

    @property
    def n_chains(self) -> int:
        """Number of chains."""
        return self.eta.shape[0]

    @property
    def n_draws(self) -> int:
        """Retained draws per chain (of the scalars, θ and β)."""
        return self.scalars.shape[1]

    @property
    def n_eta_draws(self) -> int:
        """Draws per chain whose η (so λ) is stored: what :meth:`lambda_draw` can return."""
        return self.eta.shape[1]

    @property
    def grid(self):
        """The lattice of the fitted counts."""
        return self.counts.grid

    def __repr__(self) -> str:
        G, B = self.eta.shape[2:]
        stored = "" if self.n_eta_draws == self.n_draws else f", eta_draws={self.n_eta_draws}"
        stopped = ", interrupted=True" if self.interrupted else ""
        if self.stopping is not None and not self.interrupted:
            stopped = f", sweeps={self.stopping.sweeps} ({self.stopping.reason})"
        return (f"PaivaFit({self.model!r}, chains={self.n_chains}, draws={self.n_draws}"
                f"{stored}, cells={G}, combinations={B}{stopped})")

    def posterior_mean_lambda(self) -> np.ndarray:
        """Posterior mean intensity E[λ_ib | data], shape (G, B), float64.

        The mean over every retained draw of every chain, also when η was stored for fewer
        draws (``lambda_chain_means``, summed during the fit).
        """
        if self._mean_lambda is None:
            if self.lambda_chain_means is not None:
                self._mean_lambda = np.asarray(self.lambda_chain_means, np.float64).mean(axis=0)
            else:
                total = np.zeros(self.eta.shape[2:])
                for chain in self.eta:
                    for draw in chain:
                        total += np.exp(draw, dtype=np.float64)
                self._mean_lambda = total / (self.n_chains * self.n_eta_draws)
        return self._mean_lambda

    def lambda_draw(self, index: int) -> np.ndarray:
        """Intensity λ (G, B) of stored draw ``index`` of η (chains concatenated, 0-based).

        ``index`` runs over the ``n_chains * n_eta_draws`` stored draws; :meth:`draw_position`
        says which chain and retained draw it is.
        """
        chain, draw = self._stored(index)
        return np.exp(self.eta[chain, draw].astype(np.float64))

    def draw_position(self, index: int) -> tuple[int, int]:
        """Chain and retained draw (row of ``scalars``, ``theta``, ...) of stored η draw ``index``.

        Parameters
        ----------
        index : int
            As for :meth:`lambda_draw`.

        Returns
        -------
        tuple of int
            ``(chain, retained_draw)``.
        """
        chain, draw = self._stored(index)
        return chain, int(self.eta_draw_index[draw])

    def _stored(self, index: int) -> tuple[int, int]:
        total = self.n_chains * self.n_eta_draws
        if not -total <= index < total:
            raise InputError(f"index must be in [0, {total}), got {index}")
        return divmod(index % total, self.n_eta_draws)

    def scalar(self, name: str) -> np.ndarray:
        """Draws (chains, draws) of the scalar parameter ``name``."""
        if name not in self.scalar_names:
            raise InputError(f"unknown parameter {name!r}; available: {self.scalar_names}")
        return self.scalars[:, :, self.scalar_names.index(name)]

    def to_arviz(self) -> arviz.InferenceData:
        """Draws as :class:`arviz.InferenceData` (scalars, θ and, if fitted, β).

        β is one variable ``beta`` (a str ``continuous``), or one ``beta[<column>]`` per
        covariate (a list), each with dimension ``cell``.
        """
        az = import_arviz()
        posterior = {name: self.scalars[:, :, k] for k, name in enumerate(self.scalar_names)}
        posterior["theta"] = self.theta
        dims = {"theta": ["cell"]}
        if self.beta is not None and self.beta.ndim == 3:
            posterior["beta"] = self.beta
            dims["beta"] = ["cell"]
        elif self.beta is not None:
            for k, name in enumerate(self.counts.covariates):
                posterior[f"beta[{name}]"] = self.beta[:, :, k]
                dims[f"beta[{name}]"] = ["cell"]
        return az.from_dict(posterior=posterior, dims=dims,
                            coords={"cell": np.arange(self.theta.shape[2])})

    def summary(self) -> pd.DataFrame:
        """Arviz summary (mean, sd, HDI, ``r_hat``, ``ess_bulk``, ``ess_tail``) of the scalars."""
        az = import_arviz()
        idata = self.to_arviz()
        names = [n for n in self.scalar_names if n in idata.posterior]
        return az.summary(idata, var_names=names, filter_vars=None)

    def trace_plot(self) -> Figure:
        """Trace and density of μ, α and the precisions (Nunes 2018, Figure 2)."""
        import matplotlib.pyplot as plt

        az = import_arviz()

        idata = self.to_arviz()
        names = [n for n in self.scalar_names if n in idata.posterior]
        axes = az.plot_trace(idata, var_names=names, compact=False)
        return np.asarray(axes).flat[0].figure if axes is not None else plt.gcf()
