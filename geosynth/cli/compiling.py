"""``geosynth compile``: compile the samplers once, ahead of the first fit.

The samplers are numba kernels compiled on their first call and kept in numba's cache (beside
the package's modules, or under ``NUMBA_CACHE_DIR``). Compiling them takes 1–2 minutes per
kind of fit on the 2-core benchmark machine, most of it numba's typing of the large kernels
rather than LLVM's optimisation (``NUMBA_OPT=1`` saved under 10 %, ``bench/RESULTS.md``), so
the way to a fast first fit is to compile ahead of time, once per install: ``make`` runs this
command when it builds ``.venv``. Each kind compiles in its own process (a four-sweep fit of a
6 × 6 lattice; "serial" also compiles the convergence checks of ``n_iter="auto"`` fits),
``--jobs`` of them at a time; a later fit of that kind loads the kernels from
the cache in about a second. Ctrl-C stops the workers at once (exit status 130); what they
compiled stays in the cache.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
import warnings

import click

from geosynth.cli.helpers import INTERRUPTED, WATCHED_SIGNALS

__all__ = ["compile_samplers", "compile_kind", "wanted_kinds", "KINDS"]

#: Kinds of fit whose kernels differ (those the "compiling the sampler" notice names); the
#: "mh" sampler and the β extension run the serial kernels. Spelled out rather than read from
#: ``geosynth.model.runner.COMPILE_SECONDS``: importing the model here would load numba and
#: numpy with the CLI, before it can catch Ctrl-C (a test holds the two lists equal).
KINDS = ("serial", "noise-aware", "chromatic", "block")


def compile_kind(kind: str) -> tuple[str, float]:
    """Fit a small lattice with the kernels of ``kind``, compiling them into numba's cache.

    What ``geosynth compile`` runs per kind (in a worker process); a kernel already in the
    cache is loaded, not compiled.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.

    Returns
    -------
    kind : str
        ``kind``, as given.
    seconds : float
        Seconds taken.
    """
    from geosynth import Grid, PaivaModel, prepare
    from geosynth.datasets import paiva_scenario

    start = time.perf_counter()
    scenario = paiva_scenario(n=200, seed=1, continuous=False)
    grid = Grid.regular(scenario.bounds, shape=(6, 6), crs=scenario.crs)
    counts = prepare(scenario.data, grid, attributes=["y", "x1"])
    model = PaivaModel(sampler="block" if kind == "block" else "gibbs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # too few sweeps and counts to diagnose anything
        if kind == "noise-aware":
            from geosynth.dp import dp_counts

            on_domain = prepare(scenario.data, grid, attributes=["y", "x1"],
                                levels=counts.levels)
            counts = dp_counts(on_domain, 1.0)
        model.fit(counts, n_iter=4, burn_in=0, thin=1, chains=1, seed=0, progress=False,
                  parallel=kind == "chromatic")
    if kind == "serial":  # and the checks of n_iter="auto" fits, for float32 and float64 draws
        import numpy as np

        from geosynth.model.diagnostics import convergence_diagnostics

        for dtype in (np.float32, np.float64):
            convergence_diagnostics(np.arange(24, dtype=dtype).reshape(2, 4, 3))
    return kind, time.perf_counter() - start


def wanted_kinds(kinds: str) -> list[str]:
    """Return the distinct kinds named in ``--kinds``, in order; refuse unknown or no kinds."""
    wanted = list(dict.fromkeys(k.strip() for k in kinds.split(",") if k.strip()))
    unknown = sorted(set(wanted) - set(KINDS))
    if unknown or not wanted:
        raise click.BadParameter(
            f"unknown kind {', '.join(map(repr, unknown))}; choose from {', '.join(KINDS)}"
            if unknown else f"name at least one of {', '.join(KINDS)}", param_hint="--kinds")
    return wanted


def _terminate_by_default() -> None:
    """Let SIGTERM and SIGHUP end a worker at once, as ``Pool.terminate`` expects.

    A forked worker inherits the command's :class:`~geosynth.cli.helpers.InterruptWatch`
    handlers, by which they raised KeyboardInterrupt inside the compilation instead, and
    ``terminate`` waited for it to end.
    """
    for signum in WATCHED_SIGNALS:
        if signum != signal.SIGINT:
            signal.signal(signum, signal.SIG_DFL)


@click.command("compile", short_help="Compile the samplers ahead of the first fit.")
@click.option("--kinds", default=",".join(KINDS), show_default=True,
              help="Comma-separated kinds of fit to compile: "
              f"{', '.join(KINDS)} (serial also serves --sampler mh and --continuous).")
@click.option("--jobs", type=click.IntRange(min=1), default=2, show_default=True,
              help="Kinds compiled at once, one process each.")
def compile_samplers(kinds: str, jobs: int) -> None:
    """Compile the numba kernels of the samplers into numba's cache, once per install.

    A first fit otherwise compiles its sampler before its first sweep (1–2 minutes per kind,
    said by a "compiling the sampler" notice); afterwards every fit loads the kernels from the
    cache. Run again after upgrading geosynth or numba (a fit whose cached kernels are stale
    recompiles them by itself).
    """
    wanted = wanted_kinds(kinds)
    start = time.perf_counter()
    click.echo(f"compiling the samplers ({', '.join(wanted)}), {min(jobs, len(wanted))} at a "
               "time ...", err=True)
    # Forked: this process has not loaded numba (the kernels load in the workers), and a
    # Pool can be terminated on Ctrl-C, which a ProcessPoolExecutor cannot.
    pool = multiprocessing.get_context("fork").Pool(min(jobs, len(wanted)),
                                                     initializer=_terminate_by_default)
    try:
        for kind, seconds in pool.imap(compile_kind, wanted):
            click.echo(f"  {kind}: {seconds:.0f} s", err=True)
    except KeyboardInterrupt:
        # Not the group's "nothing was written": numba's cache keeps what was compiled. The
        # workers are stopped now; waiting for them took as long as the compilation.
        pool.terminate()
        pool.join()
        click.echo("Interrupted: the kernels compiled before Ctrl-C stay in numba's cache; run "
                   "geosynth compile again to finish", err=True)
        click.get_current_context().exit(INTERRUPTED)
    pool.close()
    pool.join()
    click.echo(f"compiled in {time.perf_counter() - start:.0f} s", err=True)
