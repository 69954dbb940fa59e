"""Fit API of the Paiva et al. (2014) model: :class:`PaivaModel` and the kernels' arrays.

:meth:`PaivaModel.fit` validates its arguments at the public boundary, flattens the counts into
the arrays of the numba kernels (:func:`build_model_data`), plans the storage of the draws
(:mod:`geosynth.model.storage`), runs the chains (:mod:`geosynth.model.runner`: in chunks, so a
progress bar moves and Ctrl-C returns the draws made so far, flagged by
:attr:`~geosynth.model.results.PaivaFit.interrupted`) and returns a
:class:`~geosynth.model.results.PaivaFit`.

Chains run in threads of this process, or as tasks of any :class:`concurrent.futures.Executor`
(``fit(..., executor=...)``: a Dask cluster's ``client.get_executor()``, or
:func:`geosynth.distributed.fit_dask`); either way chain ``c`` draws from the same random stream,
so the draws are the same.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from geosynth._random import check_seed
from geosynth._validation import (
    check_bool,
    check_chains,
    check_int,
    check_max_bytes,
    check_real,
    is_integer,
)
from geosynth.data import covariate_names
from geosynth.errors import ConvergenceWarning, DataWarning, InputError, SamplerError
from geosynth.model.coarse import coarse_aggregates
from geosynth.model.modes import (
    joint_components,
    modes_per_field,
    smooth_modes,
    with_component_constants,
)
from geosynth.model.noise_aware import ETA_LIMIT
from geosynth.model.priors import Priors
from geosynth.model.results import PaivaFit
from geosynth.model.runner import AutoRunner, ChainRunner, ChainSettings, run_on_executor
from geosynth.model.state import (
    BETA_ICAR,
    BETA_NONE,
    BETA_NORMAL,
    SAMPLER_ARS,
    SAMPLER_SLICE,
    UPDATE_EXACT,
    UPDATE_MH,
    CountTables,
    ModelData,
    sorted_adjacency,
    upper_neighbours,
)
from geosynth.model.stopping import (
    AUTO_THIN,
    DEFAULT_MAX_RHAT,
    DEFAULT_TARGET_ESS,
    MAX_AUTO_THIN,
    assess_convergence,
    check_auto_arguments,
    failing_text,
    field_groups,
)
from geosynth.model.storage import DEFAULT_MAX_BYTES, plan_auto_storage, plan_model_storage
from geosynth.samplers.rng import make_streams

if TYPE_CHECKING:
    from geosynth.data import CellCounts

__all__ = ["DEFAULT_BURN_IN", "DEFAULT_THIN", "PaivaModel", "build_model_data",
           "check_fit_settings", "resolve_thin"]


DEFAULT_BURN_IN = 2000
#: ``thin`` of a fit with a fixed ``n_iter`` when none is given (1,000 draws per chain at the
#: defaults); ``n_iter="auto"`` starts from :data:`geosynth.model.stopping.AUTO_THIN` instead.
DEFAULT_THIN = 6


def resolve_thin(thin: int | None, *, auto: bool) -> int:
    """Return ``thin`` as given, else the default of the run.

    :data:`~geosynth.model.stopping.AUTO_THIN` for an ``n_iter="auto"`` fit (``auto``),
    :data:`DEFAULT_THIN` for a fixed number of sweeps; the CLI resolves ``--thin`` here too.
    """
    if thin is not None:
        return thin
    return AUTO_THIN if auto else DEFAULT_THIN


_BETA_PRIORS = {None: BETA_NONE, "normal": BETA_NORMAL, "icar": BETA_ICAR}


_BETA_SAMPLERS = {"ars": SAMPLER_ARS, "slice": SAMPLER_SLICE}


_SAMPLERS = ("gibbs", "block", "mh")

#: The longest fixed run: a billion sweeps take weeks even on the smallest lattice (over 1 µs a
#: sweep), so a larger ``n_iter`` is a typo, refused before any work.
MAX_SWEEPS = 10**9


class PaivaModel:
    """Bayesian Poisson/ICAR model of cell counts per attribute combination.

    ``log λ_ib = log a_i + μ + Σ_k α_k + θ_i + Σ_k φ_ik + Σ_c β_ci·Z̄_cib + ε_ib`` (Paiva et
    al. 2014; Nunes 2018 eqs. 2.1–2.9 and, with ``beta_prior``, 2.19–2.21, over the K continuous
    covariates c of ``prepare(..., continuous=...)`` as §5 generalises it), fitted by a numba
    Gibbs sampler. A model cannot be changed once made (its fits keep it as ``fit.model``, which
    the release metadata describes); make another for other settings.

    A cell that a ``region`` or ``exclude`` cuts down has its habitable fraction ``a_i``
    (:attr:`geosynth.Grid.habitable_fraction`) as exposure: ``log a_i`` is added to its
    ``log λ_ib``, so a cell of which a tenth is habitable expects a tenth of the records of a
    whole cell of the same intensity, and the fields smooth the intensity per unit of habitable
    area. On a lattice of whole cells ``log a_i = 0`` and the model is exactly the thesis'.
    Without it the ICAR prior pulled a clipped cell's count towards its whole neighbours', and
    releases put about twice their share of points in cells less than half habitable (along
    coasts, lake shores and region edges), an error of the thesis' model off its square study
    area. An areal lattice's cells are whole areas (``a_i = 1``) but for what ``exclude``
    removes: the counts of areas of different sizes are smoothed as counts, as in BYM models
    without expected counts, unless the lattice was built with an ``exposure``
    (:meth:`geosynth.Grid.from_polygons`: the habitable area, or a population), which is then
    ``a_i`` (:attr:`geosynth.Grid.exposure`), as the expected counts of a BYM model are. Any
    lattice takes its cells' population so (:meth:`geosynth.Grid.with_exposure`).

    The thesis' lattice is connected. On one of several components each ICAR field's mean over
    a component gets a N(0, ``priors.level_var``) prior, so a cell without neighbours (a
    component of one, :class:`~geosynth.errors.IsolatedCellWarning`) is fitted from its own
    records, combination by combination, pooled with nothing: connect it (a larger cell, a
    region that joins it, ``islands="nearest"`` for areas) before a release.

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
        ``"gibbs"``: single-site updates of every parameter, each scalar conditional drawn exactly
        (tangent envelopes with an ARS fallback; β by ARS or slice), with exact shift moves and
        scale moves of each field with its precision (:mod:`geosynth.model.sweep`). ``"mh"``: the
        same sweep, but μ, α, θ_i, φ_ip and ε_ib move by one Metropolis–Hastings step with a Newton
        (IWLS) Gaussian proposal (Gamerman 1997; :mod:`geosynth.samplers.newton_mh`), one in ten by
        an exact draw instead: same posterior; it was 1.5 times cheaper a sweep when the exact draws
        were ARS, and is no cheaper now (on the Berlin listings 11.7 ms a sweep against 10.0:
        ``bench/RESULTS.md``); not with ``parallel=True``. ``"block"``: each sweep
        adds, for θ, every φ_·p and (under ``beta_prior="icar"``) β, a joint Metropolis–Hastings
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
        if not isinstance(beta_sampler, str) or beta_sampler not in _BETA_SAMPLERS:
            raise InputError(f"beta_sampler must be 'slice' or 'ars', got {beta_sampler!r}")
        if not isinstance(effects, str) or effects not in ("attribute", "combination"):
            raise InputError(f"effects must be 'attribute' or 'combination', got {effects!r}")
        if not isinstance(sampler, str) or sampler not in _SAMPLERS:
            raise InputError(f"sampler must be 'gibbs', 'block' or 'mh', got {sampler!r}")
        if priors is not None and not isinstance(priors, Priors):
            raise InputError(f"priors must be a geosynth.Priors, got {type(priors).__name__}")
        settings = {"beta_prior": beta_prior, "priors": priors or Priors(),
                    "beta_sampler": beta_sampler, "effects": effects, "sampler": sampler}
        for name, value in settings.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        # A fit keeps its model (fit.model, read by the release metadata): a setting changed
        # afterwards described another model than the one fitted, and an assigned one skipped
        # the checks above (sampler="bogus" ran the Gibbs sampler without a word).
        raise AttributeError(
            f"PaivaModel is immutable (cannot set or delete {name!r}): its fits keep it as "
            "fit.model; make a new model with the settings you want, PaivaModel(beta_prior=..., "
            "priors=..., beta_sampler=..., effects=..., sampler=...)"
        )

    def __delattr__(self, name: str) -> None:
        self.__setattr__(name, None)

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
        thin: int | None = None,
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
        target_ess: float = DEFAULT_TARGET_ESS,
        max_rhat: float = DEFAULT_MAX_RHAT,
        max_seconds: float | None = None,
        stop: threading.Event | None = None,
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

            ``"auto"``: run until converged (see :mod:`geosynth.model.stopping`): the chains run in
            segments, and between segments the minimum bulk ESS over μ, every α, every τ, every θ_i,
            every β_i (if fitted) and every λ_ib (exp of the stored η = log λ of every retained
            draw) is compared with ``target_ess``, and the maximum
            rank-normalised split R-hat with ``max_rhat`` (arviz's definitions, computed for all
            parameters at once by :func:`geosynth.model.diagnostics.convergence_diagnostics`);
            a parameter that some chain holds at one value over the window is a stuck sampler
            and fails whatever its ESS (θ of a one-cell lattice, 0 by construction, excepted).
            Checks come when the sweeps have grown by a factor 1.5 or 4/3 and stop at the first
            group of parameters, or part of 16,384 of them, that fails (λ is screened on 2,048
            pairs first), so their cost stays a fraction of the fit's. The first quarter of the
            sweeps (at least the schedule's warm-up) is discarded as burn-in, and ``thin``
            doubles (thinning the stored draws by 2) whenever the retained draws per chain would
            exceed the larger of ``4·target_ess/chains`` and ``16/(max_rhat − 1)`` (1,600 for
            the defaults: enough for the noise of R-hat over thousands of λ's to stay below
            ``max_rhat``), or what ``max_bytes`` holds. The result's
            :attr:`~geosynth.model.results.PaivaFit.stopping` says how it stopped. Needs ``chains >=
            2`` (R-hat compares chains) and runs in threads of this process (not on an
            ``executor``). Without ``max_seconds`` a fit that never converges runs until Ctrl-C
            (which returns the draws of the current window, as for a fixed ``n_iter``).
        burn_in : int, optional
            Sweeps discarded at the start of each chain (where the scale moves tune); default
            2,000. Not with ``n_iter="auto"``, which discards the first quarter of the sweeps.
        thin : int, optional
            Keep every ``thin``-th sweep after burn-in; default 6 (:data:`DEFAULT_THIN`). With
            ``n_iter="auto"`` the thinning at first, default 1 (every sweep,
            :data:`~geosynth.model.stopping.AUTO_THIN`, at most
            :data:`~geosynth.model.stopping.MAX_AUTO_THIN`): the window then holds as many
            draws as the rule and memory allow, and ``thin`` doubles as it grows.
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
            :func:`~geosynth.model.storage.plan_storage`): the fit refuses before allocating rather
            than exceed it.
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
            Worth it only when cores outnumber chains: on 2 threads a sweep is 1.05–1.1×
            the serial one's speed at 6,400–25,600 cells (``bench/RESULTS.md``,
            2026-12-04). Chains then run one after another unless
            ``n_jobs`` says otherwise. Not available for noise-aware fits. A run option rather
            than a model option: it changes how, not what, is sampled.
        eta_draws : int, "all" or "auto", default "auto"
            How many retained draws per chain keep the linear predictor η = log λ (float32, G × B
            values a draw: 4.9 MB at G = 102,400 cells and B = 12 combinations, so 1,000 draws of 2
            chains would take 9.8 GB). The scalars, θ and β are stored for every retained draw
            whatever this says, and :meth:`~geosynth.model.results.PaivaFit.posterior_mean_lambda`
            is the exact mean over every retained draw (a running sum of exp η kept during the fit).
            Stored η draws are what :meth:`~geosynth.model.results.PaivaFit.lambda_draw` and
            :func:`geosynth.synthesize` use: one per release.

            * ``"all"``: every retained draw; refused with
              :class:`~geosynth.errors.MemoryLimitError` if that exceeds ``max_bytes``.
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
            With ``n_iter="auto"``: every parameter's R-hat must be below it; at least
            :data:`~geosynth.model.stopping.MIN_MAX_RHAT` (1.001: a smaller limit would keep
            the fit running by the noise of R-hat itself), at most
            :data:`~geosynth.model.stopping.MAX_MAX_RHAT` (2: a larger one accepts chains
            that have not met).
        max_seconds : float, optional
            With ``n_iter="auto"``: stop at the next chunk of sweeps after this many seconds of
            wall-clock time since the call (compilation included; the warm-up always
            completes), less the expected time of the final check of every parameter, and
            return the draws of the current window with a warning that names what has not
            converged (none if that final check of every parameter passes: the fit then
            converged, ``fit.stopping.reason == "converged"``). Without it the same seed gives
            the same sweeps and draws.
        stop : threading.Event, optional
            Set it from another thread to stop the fit as Ctrl-C does: every chain stops at its
            next chunk of sweeps (a fraction of a second), and the draws kept so far come back
            with ``interrupted=True``, or ``KeyboardInterrupt`` is raised if some chain kept
            none. For programs that run fits in worker threads (:func:`geosynth.tune`), where
            Ctrl-C reaches only the main thread. Not with ``executor``.

        Returns
        -------
        PaivaFit
            With ``n_iter="auto"``, :attr:`~geosynth.model.results.PaivaFit.stopping` records how
            the fit stopped; :attr:`~geosynth.model.results.PaivaFit.thin` and
            :attr:`~geosynth.model.results.PaivaFit.burn_in` are those of the returned draws. After
            Ctrl-C (``KeyboardInterrupt``) once every chain has kept a draw: the draws made so far
            (as many per chain as the shortest chain kept), with
            :attr:`~geosynth.model.results.PaivaFit.interrupted` True and a warning. Such a fit is
            for inspection only: callers that publish from it (the command line) must check the flag
            and stop.

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
        _check_counts_type(counts)
        progress = check_bool(progress, "progress")
        max_bytes, parallel = check_fit_settings(n_jobs=n_jobs, eta_draws=eta_draws,
                                                 max_bytes=max_bytes, parallel=parallel)
        _check_executor(executor, n_jobs)
        auto, n_iter, burn_in, thin, chains = check_run_settings(
            n_iter, burn_in, thin, chains, target_ess, max_rhat, max_seconds, stop=stop,
            executor=executor)
        check_seed(seed)  # before the counts are read and a block sampler's setup is built
        noise = _check_noise(counts, noise)
        if noise is not None:
            _check_noisy_sizes(counts.counts)
        if parallel and noise is not None:
            raise InputError("parallel=True is not available for noise-aware fits (noise=...); "
                             "use parallel=False")
        block = self._block_sampler(noise is not None, parallel)
        data, tables, names = build_model_data(counts, self)
        if block:
            from geosynth.model.block import block_settings

            block = block_settings(data)
        else:
            block = None
        labels = _beta_labels(counts, data)
        streams = make_streams(seed, chains)
        released = None if noise is None else (
            noise, np.ascontiguousarray(counts.counts, dtype=np.float64))  # the kernels' layout
        if parallel and n_jobs is None:
            n_jobs = 1  # each chain already uses every numba thread
        with _naming_changed_priors(self.priors):  # a failed update blamed only the counts
            if auto:
                plan, schedule = plan_auto_storage(data, names, thin=int(thin), chains=int(chains),
                                                    noise=noise is not None,
                                                    target_ess=float(target_ess),
                                                    max_rhat=float(max_rhat),
                                                    max_bytes=int(max_bytes))
                runner = AutoRunner(data, tables, names, thin, plan, progress, released,
                                     parallel=parallel, block=block, schedule=schedule,
                                     rule=(float(target_ess), float(max_rhat), max_seconds),
                                     started=started, eta_draws=eta_draws, beta_labels=labels,
                                     stop=stop)
                draws = _shape_beta(runner.run_all(streams, n_jobs), counts)
                return PaivaFit(model=self, counts=counts, scalar_names=names, noise_scale=noise,
                                **draws)
            plan = plan_model_storage(data, names, n_iter=n_iter, burn_in=burn_in, thin=thin,
                                      chains=chains, noise=noise is not None, eta_draws=eta_draws,
                                      max_bytes=max_bytes, stacklevel=3)
            if executor is not None:
                settings = ChainSettings(names=names, n_iter=int(n_iter), burn_in=int(burn_in),
                                          thin=int(thin), plan=plan, noise=released,
                                          parallel=parallel, block=block)
                draws = run_on_executor(executor, data, tables, settings, streams)
            else:
                runner = ChainRunner(data, tables, names, n_iter, burn_in, thin, plan, progress,
                                      released, parallel=parallel, block=block, stop=stop)
                draws = runner.run_all(streams, n_jobs)
            fit = PaivaFit(model=self, counts=counts, scalar_names=names, thin=thin,
                           burn_in=burn_in, noise_scale=noise, **_shape_beta(draws, counts))
            _warn_if_not_converged(fit, labels, n_iter)
            return fit


@contextlib.contextmanager
def _naming_changed_priors(priors: Priors) -> Iterator[None]:
    """Add the priors that differ from the defaults to a SamplerError raised in the block.

    ``Priors(phi_rate=1e6, eps_rate=1e6)`` passes its range checks, then the μ update failed
    with "check the counts and the current state for NaN or inf", naming no prior.
    """
    try:
        yield
    except SamplerError as err:
        changed = {name: value for name, value in priors.to_dict().items()
                   if value != getattr(Priors, name)}
        if not changed:
            raise
        shown = ", ".join(f"{name}={value:g}" for name, value in changed.items())
        raise SamplerError(f"{err}; the priors differ from the defaults ({shown}): "
                           "hyperparameters this far from them can drive the state to "
                           "overflow, so try the defaults") from err


def _check_beta_prior(beta_prior) -> str | tuple[str, ...] | None:
    """Return ``beta_prior`` (a sequence as a tuple) after checking each prior's name."""
    if beta_prior is None or isinstance(beta_prior, str):
        priors = [beta_prior]
    elif (isinstance(beta_prior, (list, tuple)) or isinstance(beta_prior, np.ndarray)
          and beta_prior.ndim == 1) and len(beta_prior):  # an array was "truth value ambiguous"
        priors = list(beta_prior)
        beta_prior = tuple(str(p) if isinstance(p, str) else p for p in beta_prior)
    else:
        priors = [beta_prior]
    # None inside a list is no prior of a covariate: [None] fitted a Normal prior silently.
    wrong = [p for p in priors if not (isinstance(p, str) and p in ("normal", "icar"))
             and not (p is None and not isinstance(beta_prior, tuple))]
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


#: A fit of a fixed ``n_iter`` warns of parameters whose bulk ESS (over all chains) is below
#: this, or whose R-hat is at least :data:`FIXED_MAX_RHAT`: a clear failure. PyMC's rule (100 a
#: chain, 1.01) warned of perfectly mixed draws: the largest R-hat of 400 fields' values over
#: 2 x 200 independent draws passed 1.01 in 5 runs of 5 (``n_iter="auto"`` keeps up to 1,600
#: draws a chain for that noise).
FIXED_MIN_ESS = 100
FIXED_MAX_RHAT = 1.05


def _warn_if_not_converged(fit: PaivaFit, beta_labels: list[str], n_iter: int) -> None:
    """Warn when a fit of a fixed ``n_iter`` has not converged over μ, α, the τ's, θ and β.

    ``n_iter=40`` gave R-hat 1.33 and a bulk ESS of 6 for a precision without a word: only
    ``n_iter="auto"`` checked. The rule (:data:`FIXED_MIN_ESS`, :data:`FIXED_MAX_RHAT`) is a
    clear failure's, over the fields and scalars, not λ (η's draws may be a subset). One chain
    has no R-hat: not checked; nor is an interrupted fit (it warns already).
    """
    if fit.n_chains < 2 or fit.interrupted or fit.n_draws < 4:
        return
    groups = field_groups(fit.scalars, fit.scalar_names, fit.theta, fit.beta, beta_labels)
    check = assess_convergence(groups, FIXED_MIN_ESS, FIXED_MAX_RHAT, complete=True)
    if not check.converged:
        warnings.warn(
            f"n_iter={n_iter}: {check.n_not_converged:,} parameter(s) have a bulk ESS below "
            f"{FIXED_MIN_ESS} or an R-hat of {FIXED_MAX_RHAT} or more: "
            f"{failing_text(check.not_converged, check.n_not_converged)}; run more sweeps, "
            "or n_iter='auto' (it runs until they converge), before publishing from the fit",
            ConvergenceWarning, stacklevel=3)


def _shape_beta(draws: dict, counts: CellCounts) -> dict:
    """Shape β draws (chains, draws, K, G) as ``continuous``: (chains, draws, G) for a str."""
    if draws["beta"] is not None and isinstance(counts.continuous, str):
        draws["beta"] = draws["beta"][:, :, 0]
    return draws


def check_fit_settings(*, n_jobs: Any = None, eta_draws: Any = "auto",
                       max_bytes: Any = DEFAULT_MAX_BYTES, parallel: Any = False
                       ) -> tuple[int, bool]:
    """Check the settings of :meth:`PaivaModel.fit` that are not its run's length.

    The check the fit makes, also made by callers that pass these settings on to many fits
    (:func:`geosynth.tune`'s ``fit_options``), before any of them: a bad ``parallel`` was
    refused by each candidate's fit, naming a different candidate from run to run.

    Parameters
    ----------
    n_jobs, eta_draws, max_bytes, parallel
        As for :meth:`PaivaModel.fit`.

    Returns
    -------
    (int, bool)
        ``max_bytes`` and ``parallel`` as Python values.

    Raises
    ------
    geosynth.errors.InputError
        A value out of range or of the wrong type, naming the parameter.
    """
    if n_jobs is not None and (not is_integer(n_jobs) or n_jobs < 1):
        raise InputError(f"n_jobs must be an integer >= 1 (threads running chains) or None "
                         f"(one per chain, at most the CPUs), got {n_jobs!r}")
    return _check_storage_arguments(eta_draws, max_bytes), check_bool(parallel, "parallel")


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


def _check_noise(counts, noise) -> float | None:
    """Validate the noise scale of a noise-aware fit (None for an exact fit)."""
    from geosynth.data import CellCounts

    own = getattr(counts, "noise_scale", None)
    own = None if own is None else float(own)  # a float32 scale compiled the kernels again
    if noise is None:
        return own
    if isinstance(counts, CellCounts):
        raise InputError(
            "noise= is for released noisy counts; counts from geosynth.prepare are exact. "
            "Add noise with geosynth.dp.dp_counts(counts, epsilon) to counts prepared on the "
            "public domain (geosynth.prepare(..., levels=...)) and fit its result"
        )
    if isinstance(noise, bool) or not isinstance(noise, (int, float, np.integer, np.floating)) \
            or not 0 < check_real(noise, "noise") < np.inf:
        raise InputError(f"noise must be a finite scale b > 0 of the discrete Laplace noise, "
                         f"got {noise!r}")
    if own is not None and not math.isclose(noise, own, rel_tol=1e-9):  # np.isclose: atol 1e-8
        raise InputError(f"noise={noise} contradicts the scale {own} recorded in counts; "
                         "omit noise= to use the recorded one")
    return float(noise)


def _check_noisy_sizes(counts: np.ndarray) -> None:
    """Refuse noisy counts beyond the intensities a noise-aware fit can reach.

    Its proposals stop at ``λ = e^ETA_LIMIT`` (about 7e10), and each latent count is drawn by
    enumerating about √λ values: 10**12 in every cell ran for minutes without a word.
    """
    limit = math.exp(ETA_LIMIT)
    if np.size(counts) and np.abs(np.asarray(counts, dtype=np.float64)).max() > limit:
        raise InputError(
            f"counts has noisy counts beyond {limit:.2g} in absolute value, more than a "
            "noise-aware fit's intensities reach (and more records than any cell holds): "
            "check the table (a sentinel value or an overflow?)"
        )


def check_run_settings(n_iter: Any, burn_in: Any, thin: Any, chains: Any, target_ess: Any,
                       max_rhat: Any, max_seconds: Any, *, stop: Any = None,
                       executor: Any = None) -> tuple[bool, Any, Any, int, Any]:
    """Check the run settings of :meth:`PaivaModel.fit`, as it does, without fitting.

    The one check of a run's length and stopping rule, also made by
    :func:`geosynth.dp.dp_release` before it spends ε (a typo in ``thin`` found by the fit
    after the spend wasted the budget).

    Parameters
    ----------
    n_iter, burn_in, thin, chains, target_ess, max_rhat, max_seconds, stop, executor
        As for :meth:`PaivaModel.fit`.

    Returns
    -------
    auto : bool
        Whether ``n_iter`` is ``"auto"``.
    n_iter, burn_in, thin, chains
        Resolved: defaults filled in, lengths (and an auto run's thin and chains) as Python
        ints.

    Raises
    ------
    geosynth.errors.InputError
        As :meth:`PaivaModel.fit` for these arguments.
    """
    auto = isinstance(n_iter, str) and n_iter == "auto"
    check_auto_arguments(target_ess, max_rhat, max_seconds, auto=auto)
    given_thin, thin = thin, resolve_thin(thin, auto=auto)
    if auto:
        _check_auto_run(burn_in, thin, chains, executor)
        thin, chains = int(thin), int(chains)  # np.uint8 chains wrapped in arithmetic
    else:
        defaults = {"burn_in": burn_in is None, "thin": given_thin is None}
        burn_in = DEFAULT_BURN_IN if burn_in is None else burn_in
        n_iter, burn_in, thin, chains = _check_run_arguments(n_iter, burn_in, thin, chains,
                                                             defaults)
    _check_stop(stop, executor)
    return auto, n_iter, burn_in, thin, chains


def _check_run_arguments(n_iter, burn_in, thin, chains,
                         defaults: dict[str, bool]) -> tuple[int, int, int, int]:
    """Check a fixed run's lengths; return them as Python ints (NumPy unsigned ones included).

    ``defaults`` says whether ``burn_in`` and ``thin`` are the defaults (not given).
    """
    if isinstance(n_iter, bool | np.bool_ | float | np.floating):  # 60.0, True: type errors
        check_int(n_iter, "n_iter")
    if not is_integer(n_iter) or not 1 <= n_iter <= MAX_SWEEPS:
        raise InputError(f"n_iter must be an integer from 1 to {MAX_SWEEPS:,} (sweeps per "
                         f"chain) or 'auto' (run until converged), got {n_iter!r}")
    _check_length(burn_in, "burn_in", 0)
    _check_length(thin, "thin", 1)
    check_chains(chains)
    n_iter, burn_in, thin, chains = int(n_iter), int(burn_in), int(thin), int(chains)
    if n_iter - burn_in < thin:
        # thin = 10**30 cannot be met by raising n_iter (at most MAX_SWEEPS): name the thin that
        # keeps a draw as well.
        smaller = f" (or pass thin = {n_iter - burn_in} or less)" if n_iter > burn_in else ""
        # The defaults were shown as if given: fit(counts, n_iter=100) said "burn_in (2000)".
        fix = (f"pass burn_in= (e.g. burn_in={n_iter // 4})" if defaults["burn_in"]
               else "lower burn_in")
        raise InputError(
            f"n_iter ({n_iter}) - burn_in ({burn_in}{', the default' * defaults['burn_in']}) "
            f"leaves no draw at thin = {thin}{' (the default)' * defaults['thin']}; raise n_iter "
            f"or {fix}{smaller}"
        )
    return n_iter, burn_in, thin, chains


def _check_stop(stop: Any, executor: Any) -> None:
    if stop is None:
        return
    if not callable(getattr(stop, "is_set", None)) or not callable(getattr(stop, "set", None)):
        raise InputError(f"stop must be a threading.Event, got {type(stop).__name__}")
    if executor is not None:
        raise InputError("stop stops chains that run in threads of this process, not the tasks "
                         "of an executor; drop one of them")


def _check_length(value: Any, name: str, minimum: int) -> None:
    """Refuse a run length (burn_in, thin) that is no integer >= ``minimum``.

    A float (``20.0``) is a type error with its fix, as ``seed=`` gives; a bool, a str or a
    smaller number an InputError naming the value.
    """
    if isinstance(value, float | np.floating):
        check_int(value, name)
    if not is_integer(value) or value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _check_auto_run(burn_in, thin, chains, executor) -> None:
    """Refuse what ``n_iter="auto"`` cannot do, naming the alternative."""
    _check_length(thin, "thin", 1)
    if thin > MAX_AUTO_THIN:
        raise InputError(
            f"thin={int(thin)} with n_iter='auto' is above {MAX_AUTO_THIN}: it is only the "
            f"thinning at first (it doubles as the window grows), and the warm-up of 64 to 512 "
            "times thin sweeps runs whatever max_seconds says; leave thin out"
        )
    check_chains(chains)
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
            "n_iter='auto' discards the first quarter of the sweeps as burn-in, so it takes no "
            f"burn_in (got burn_in={burn_in!r}); drop burn_in, or give a fixed n_iter"
        )


def _check_storage_arguments(eta_draws, max_bytes) -> int:
    """Check ``eta_draws`` and ``max_bytes``; return ``max_bytes`` as a Python int."""
    if not (eta_draws in ("all", "auto") if isinstance(eta_draws, str) else
            isinstance(eta_draws, (int, np.integer)) and not isinstance(eta_draws, bool)
            and eta_draws >= 1):
        raise InputError(
            f"eta_draws must be 'all', 'auto' or an integer >= 1 (draws of η stored per chain), "
            f"got {eta_draws!r}"
        )
    return check_max_bytes(max_bytes)


def _check_count_array(counts) -> None:
    """Refuse counts the kernels cannot take.

    Another shape than (G cells, B combinations) was read out of bounds and corrupted memory;
    non-finite or fractional values, and negative ones unless the counts are noisy (a noise
    scale recorded), are no counts.
    """
    values = np.asarray(counts.counts)
    shape = (counts.grid.n_cells, len(counts.combos))
    if values.shape != shape:
        raise InputError(f"counts.counts has shape {values.shape} but its grid has {shape[0]} "
                         f"cells and it lists {shape[1]} combinations: build the counts with "
                         "geosynth.prepare and do not replace their arrays")
    if values.dtype.kind not in "iuf" or not np.isfinite(values).all() \
            or (values != np.round(values)).any():
        raise InputError("counts.counts must hold whole finite numbers (records per cell and "
                         "combination); build the counts with geosynth.prepare")
    if getattr(counts, "noise_scale", None) is None and (values < 0).any():
        raise InputError("counts.counts has negative values but records no noise scale (exact "
                         "counts); build the counts with geosynth.prepare, or noisy ones with "
                         "geosynth.dp.dp_counts")


#: What the fit reads of any counts, and of exact counts (:class:`~geosynth.data.CellCounts`).
_COUNTS_PARTS = ("counts", "combos", "attributes", "levels", "grid")
_EXACT_COUNTS_PARTS = ("record_cell", "record_combo", "continuous", "zbar")

_REBUILD = ("build the counts with geosynth.prepare (or geosynth.dp.dp_counts) and do not "
            "replace their parts")


def _check_counts_type(counts: Any) -> None:
    """Refuse counts that are neither a CellCounts nor noisy counts, naming what they are.

    :meth:`PaivaModel.fit` checks it first: ``fit("counts", n_iter=1000)`` blamed its burn-in
    ("n_iter (1000) - burn_in (2000) leaves no draw") before saying what ``counts`` was.
    Noisy counts (geosynth.dp.NoisyCounts) are recognised by their noise scale, so the model
    does not import the DP layer built on top of it.
    """
    from geosynth.data import CellCounts

    if not isinstance(counts, CellCounts) and getattr(counts, "noise_scale", None) is None:
        raise InputError(
            f"counts must be the CellCounts returned by geosynth.prepare (or the NoisyCounts of "
            f"geosynth.dp.dp_counts), got {type(counts).__name__}"
        )


def _check_counts_parts(counts) -> None:
    """Refuse counts that lack a part the fit reads, or whose combinations disagree with levels.

    A CellCounts pickled by an older geosynth, or edited by hand, raised AttributeError,
    IndexError or KeyError while the kernels' arrays were built, or fitted another model
    without a word (a negative level code was read as the baseline level).
    """
    from geosynth.data import CellCounts

    wanted = _COUNTS_PARTS + (_EXACT_COUNTS_PARTS if isinstance(counts, CellCounts) else ())
    missing = [name for name in wanted if not hasattr(counts, name)]
    if missing:
        raise InputError(
            f"counts has no {', '.join(missing)}: it was pickled by another version of "
            "geosynth or built by hand; prepare the counts again with geosynth.prepare"
        )
    from geosynth.lattice import Grid

    if not isinstance(counts.grid, Grid):
        raise InputError(f"counts.grid must be a geosynth.Grid, got {type(counts.grid).__name__}; "
                         f"{_REBUILD}")
    attributes, levels, combos = counts.attributes, counts.levels, counts.combos
    if not (isinstance(attributes, (tuple, list)) and all(isinstance(a, str) for a in attributes)
            and isinstance(levels, dict) and isinstance(combos, pd.DataFrame)):
        raise InputError("counts.attributes must be a tuple of column names, counts.levels a "
                         f"dict of their levels and counts.combos a DataFrame; {_REBUILD}")
    for attribute in attributes:
        _check_level_codes(combos, attribute, levels.get(attribute))
    if len(attributes) and combos.duplicated([f"{a}_code" for a in attributes]).any():
        raise InputError(f"counts.combos lists a combination of levels twice; {_REBUILD}")
    for attribute in attributes:
        _check_level_names(combos, attribute, levels[attribute])


def _check_level_codes(combos: pd.DataFrame, attribute: str, levels: Any) -> None:
    """Refuse level codes of ``attribute`` that are not whole numbers in ``[0, len(levels))``."""
    column = f"{attribute}_code"
    if not isinstance(levels, (list, tuple)) or not levels or attribute not in combos \
            or column not in combos:
        raise InputError(f"counts lists attribute {attribute!r} without its levels (levels) or "
                         f"without its columns {attribute!r} and {column!r} (combos); {_REBUILD}")
    codes = combos[column]
    if not pd.api.types.is_integer_dtype(codes) or codes.isna().any() \
            or not codes.between(0, len(levels) - 1).all():
        raise InputError(f"counts.combos[{column!r}] must hold integer codes from 0 to "
                         f"{len(levels) - 1} (one per level of {attribute!r}); {_REBUILD}")


def _check_level_names(combos: pd.DataFrame, attribute: str, levels: list) -> None:
    """Refuse levels of ``attribute`` that do not name its coded levels in ``combos``.

    The parameters are named by ``levels``, the combinations (the columns of a release) by
    ``combos``: a list of levels sorted or replaced in place after prepare misnamed every α
    and φ.
    """
    named = [f"{levels[code]}" for code in combos[f"{attribute}_code"]]
    if named != [f"{level}" for level in combos[attribute]]:
        raise InputError(f"counts.levels[{attribute!r}] does not name the levels coded in "
                         f"counts.combos[{attribute + '_code'!r}] (changed after prepare?); "
                         f"{_REBUILD}")


def _check_records(counts) -> None:
    """Refuse exact counts that are not the counts of their records.

    :func:`geosynth.synthesize` reads the records' cells and combinations and the fit the
    counts: counts edited by hand fitted a model of other data than the records released. The
    message names no count: they are confidential.
    """
    from geosynth.data import CellCounts

    if not isinstance(counts, CellCounts):
        return  # noisy counts have no records
    G, B = counts.counts.shape
    cells, combos = np.asarray(counts.record_cell), np.asarray(counts.record_combo)
    valid = (cells.ndim == 1 and cells.shape == combos.shape and cells.dtype.kind in "iu"
             and combos.dtype.kind in "iu")
    if valid and cells.size:
        valid = 0 <= cells.min() and cells.max() < G and 0 <= combos.min() and combos.max() < B
    if not valid or not np.array_equal(
            np.bincount(cells.astype(np.int64) * B + combos.astype(np.int64),
                        minlength=G * B).reshape(G, B), counts.counts):
        raise InputError("counts.counts are not the counts of the records' cells and "
                         f"combinations (record_cell, record_combo); {_REBUILD}")


def _check_zbar(counts, n_covariates: int) -> None:
    """Refuse standardised covariate means of another shape than the counts', or not finite.

    A standardised mean over at most G cells lies within ``sqrt(G)`` of 0 (Samuelson's
    inequality), so a larger one was not made by :func:`geosynth.prepare`; the sampler failed
    on it (or on a NaN) only after compiling, naming the state.
    """
    zbar = np.asarray(counts.zbar)
    G, B = counts.counts.shape
    shape = (G, B) if isinstance(counts.continuous, str) else (n_covariates, G, B)
    if zbar.shape != shape:
        raise InputError(f"counts.zbar has shape {zbar.shape} but the counts need {shape} "
                         f"(covariates, cells, combinations); {_REBUILD}")
    if zbar.dtype.kind not in "iuf" or not np.isfinite(zbar).all() \
            or (zbar.size and np.abs(zbar).max() > np.sqrt(G)):
        raise InputError("counts.zbar must hold standardised cell means of the covariates "
                         f"(finite, within sqrt(cells) of 0); {_REBUILD}")


def build_model_data(counts: CellCounts,
                     model: PaivaModel) -> tuple[ModelData, CountTables, list[str]]:
    """Flatten a :class:`~geosynth.data.CellCounts` into the arrays the kernels take.

    The kernels record τ_β in every case (the recorded scalar columns, one per covariate), but
    without an ICAR prior on a covariate's β nothing updates its τ_β: a constant by
    construction, which would show as a parameter with an ESS of 2 and an undefined R-hat, so
    it is not reported (:func:`~geosynth.model.state.scalar_columns`).

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
        their sums, which each chain's state copies (:func:`~geosynth.model.runner.initial_state`).
    names : list of str
        The reported scalar parameters: μ, α, τ_θ, τ_φ, τ_ε and, for each covariate under an
        ICAR prior, τ_β (``tau_beta`` for a str ``continuous``, else ``tau_beta[<column>]``).

    Raises
    ------
    InputError
        ``beta_prior`` is set but ``counts`` has no continuous covariate, or it lists another
        number of priors than ``counts`` has covariates; or ``counts`` was not made by
        :func:`geosynth.prepare` as it stands (a part missing, as in a pickle of an older
        version, or edited: level codes out of range, counts that are not the records',
        covariate means of another shape or not finite); or two parameters would be named
        alike (an ``=`` in an attribute's name and in another's level).
    """
    _check_counts_type(counts)
    _check_counts_parts(counts)
    if counts.n_records == 0:
        warnings.warn(
            "counts has no records: the posterior only says that every intensity is small",
            DataWarning, stacklevel=3,
        )
    covariates = covariate_names(getattr(counts, "continuous", None))
    if model.beta_prior is not None and (not covariates or counts.zbar is None):
        raise InputError(
            f"beta_prior={model.beta_prior!r} needs a continuous variable: prepare the counts "
            "with continuous='column'"
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
    _check_count_array(counts)
    _check_records(counts)
    if covariates:
        _check_zbar(counts, len(covariates))
    # Noisy counts may be negative; they start the latent counts at max(c̃, 0).
    # C order for the kernels: astype keeps a Fortran-ordered table's layout, which numba refused.
    c = np.ascontiguousarray(np.maximum(counts.counts, 0), dtype=np.float64)
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
    indptr, indices = sorted_adjacency(grid.indptr, grid.indices)
    modes, mode_eigenvalues = smooth_modes(indptr, indices, modes_per_field(P))
    # The moves along the modes also move each component's constant (modes module docstring).
    component_size = np.bincount(grid.component, minlength=grid.n_components).astype(float)
    kept = joint_components(component_size, P, modes.shape[1])
    modes = with_component_constants(modes, np.asarray(grid.component, dtype=np.int64),
                                     grid.n_components, kept)
    coarse_ptr, coarse_cells = coarse_aggregates(indptr, indices)
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
        indptr=indptr,
        indices=indices,
        upper=upper_neighbours(indptr, indices),
        component=np.ascontiguousarray(grid.component, dtype=np.int64),
        component_size=component_size,
        zbar=np.array(zbar, dtype=np.float64, order="C"),
        priors=model.priors.to_array(),
        beta_priors=beta_priors,
        beta_sampler=_BETA_SAMPLERS[model.beta_sampler],
        scalar_update=UPDATE_MH if model.sampler == "mh" else UPDATE_EXACT,
        modes=modes,
        mode_eigenvalues=mode_eigenvalues,
        mode_constant_size=component_size[kept],
        coarse_ptr=coarse_ptr,
        coarse_cells=coarse_cells,
        log_exposure=np.log(np.asarray(grid.exposure, dtype=np.float64)),
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
    _check_unique_names(names)
    return data, tables, names


def _check_unique_names(names: list[str]) -> None:
    """Refuse parameters named alike: the summary kept one of them, ``fit.scalar`` another.

    ``alpha[a=b=c]`` names level ``"b=c"`` of attribute ``a`` and level ``"c"`` of attribute
    ``"a=b"`` alike; every other name is unique once the attributes' levels and the
    covariates are (:func:`geosynth.prepare` checks those).
    """
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InputError(
            f"the model would name several parameters {repeated}: 'attribute=level' reads "
            "the same for two attributes (an '=' in a column name and a level), or a covariate "
            "is listed twice; rename those columns or levels without '=' and prepare the counts "
            "again"
        )


def _read_only(array: np.ndarray) -> np.ndarray:
    """Return a C-contiguous copy of ``array`` that cannot be written."""
    out = np.array(array, order="C")
    out.setflags(write=False)
    return out


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
