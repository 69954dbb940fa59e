"""The MCMC run options of a command (--iterations, --burn-in, --thin, --chains, stopping).

Shared by ``geosynth release`` and ``geosynth tune``: the checks of their combinations, the
keyword arguments of :meth:`geosynth.PaivaModel.fit` they make, and their description in words.
"""

from __future__ import annotations

from typing import Any

import click

__all__ = ["check_beta_prior", "check_run_options", "describe_run", "fixed_burn_in", "fixed_thin",
           "run_settings"]


def check_beta_prior(continuous, beta_prior) -> None:
    """Refuse ``--beta-prior`` without ``--continuous``, or not one per column, before reading.

    ``geosynth release`` refused both only after reading the data and printing "Fitting", in
    the API's words ("prepare the counts with --continuous 'column'", "or one str for all").
    """
    if beta_prior is not None and continuous is None:
        raise click.UsageError("--beta-prior needs --continuous: it is the prior of the "
                               "continuous columns' effect on the intensity")
    if beta_prior is not None and len(beta_prior) not in (1, len(continuous)):
        raise click.BadParameter(
            f"{len(beta_prior)} priors for {len(continuous)} --continuous columns; give one "
            "prior for all of them, or one per column", param_hint="--beta-prior")


def check_run_options(iterations, burn_in, thin, chains, m) -> None:
    """Refuse run options that cannot work together (a click usage error naming them)."""
    if iterations == "auto":
        _check_auto_options(burn_in, thin, chains)
    else:
        _check_fixed_options(iterations, fixed_burn_in(iterations, burn_in),
                             fixed_thin(thin), chains, m)


def fixed_burn_in(iterations: int, burn_in: int | None) -> int:
    """Burn-in of ``--iterations N``: ``--burn-in``, else a quarter of N (2,000 of 8,000)."""
    return iterations // 4 if burn_in is None else burn_in


def fixed_thin(thin: int | None) -> int:
    """Thinning of ``--iterations N``: ``--thin``, else the fit's default.

    :func:`~geosynth.model.fit.resolve_thin` decides, as in the fit.
    """
    from geosynth.model.fit import resolve_thin  # here: the CLI loads no numba before Ctrl-C works

    return resolve_thin(thin, auto=False)


def _check_auto_options(burn_in, thin, chains) -> None:
    from geosynth.model.stopping import MAX_AUTO_THIN  # here, as in fixed_thin

    if thin is not None and thin > MAX_AUTO_THIN:  # the fit refused it after the data were read
        raise click.UsageError(
            f"--thin {thin} with --iterations auto is above {MAX_AUTO_THIN}: it is only the "
            "thinning at first (it doubles as the run grows), and the warm-up runs 64 to 512 "
            "times --thin sweeps whatever --max-seconds says; leave --thin out"
        )
    if burn_in is not None:
        raise click.UsageError(
            "--iterations auto discards the first quarter of the sweeps as burn-in: drop "
            "--burn-in, or give a number of sweeps with --iterations N"
        )
    if chains < 2:
        raise click.UsageError(
            f"--iterations auto stops when R-hat, which compares chains, is below --max-rhat: "
            f"it needs --chains 2 or more (got --chains {chains}), or --iterations N"
        )


def _check_fixed_options(iterations, burn_in, thin, chains, m) -> None:
    per_chain = (iterations - burn_in) // thin if iterations > burn_in else 0
    if per_chain == 0:
        raise click.UsageError(
            f"--iterations {iterations} with --burn-in {burn_in} and --thin {thin} keeps no "
            "draw: raise --iterations, or lower --burn-in or --thin"
        )
    if per_chain * chains < m:
        raise click.UsageError(
            f"--m {m} releases need {m} distinct posterior draws, but --chains {chains} x "
            f"(--iterations {iterations} - --burn-in {burn_in}) / --thin {thin} keeps only "
            f"{per_chain * chains}: raise --iterations or lower --thin or --m"
        )


def run_settings(ctx, iterations, burn_in, thin, chains, target_ess, max_rhat,
                  max_seconds) -> dict[str, Any]:
    """Keyword arguments of the fit; the stopping options only with --iterations auto."""
    if iterations == "auto":
        return dict(n_iter="auto", thin=thin, chains=chains, target_ess=target_ess,
                    max_rhat=max_rhat, max_seconds=max_seconds)
    given = [f"--{name.replace('_', '-')}" for name in ("target_ess", "max_rhat", "max_seconds")
             if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT]
    if given:
        verb, pronoun = ("applies", "it") if len(given) == 1 else ("apply", "them")
        raise click.UsageError(f"{', '.join(given)} {verb} to --iterations auto only; drop "
                               f"{pronoun}, or use --iterations auto")
    return dict(n_iter=iterations, burn_in=fixed_burn_in(iterations, burn_in),
                thin=fixed_thin(thin), chains=chains)


def describe_run(run: dict[str, Any]) -> str:
    """``2 chain(s) x 8000 sweeps`` or ``2 chain(s) until converged (...)``."""
    if run["n_iter"] != "auto":
        return f"{run['chains']} chain(s) x {run['n_iter']} sweeps"
    limit = "" if run["max_seconds"] is None else f", at most {run['max_seconds']:g} s"
    return (f"{run['chains']} chain(s) until converged (bulk ESS >= {run['target_ess']:g}, "
            f"R-hat < {run['max_rhat']:g}{limit})")
