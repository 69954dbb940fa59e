"""Fits that stop when converged: the schedule, the convergence check and the stopping record.

:meth:`PaivaModel.fit` with ``n_iter="auto"`` runs every chain through the same sequence of
*segments* of sweeps and checks convergence between them:

* **Warm-up and burn-in.** The first ``2u`` sweeps are warm-up (the scale moves tune, as in a
  fixed fit's burn-in). Then segments end at the sweeps ``b_0 = 2u, 3u, 4u, 6u, 8u, 12u, …``
  (``2^k·u`` and ``3·2^k·u``: each boundary is 1.5 or 4/3 times the previous one), and after
  the segment that ends at ``b_j`` (``j >= 2``) the draws of the last
  :data:`WINDOW_SEGMENTS` = 4 segments, ``[b_j/4, b_j)``, are checked (``[2u, b_j)`` at the
  first three checks, after ``4u``, ``6u`` and ``8u`` sweeps). So at any check, and when the
  fit stops, the *first quarter of the sweeps is discarded* as burn-in (at least the warm-up),
  and the draws before the next check's window are dropped at once.
* **Why a quarter, not half.** Discarding the first half (Gelman & Rubin 1992; Gelman et al.,
  *BDA3* §11.4) is a conservative rule for chains that start far from the posterior, as these
  do on purpose (over-dispersed, so that R-hat can see non-convergence). But the check itself
  guards the window's start: R-hat is split, so a trend left by the start inside the window
  (the first half of each chain's window against its second) fails ``max_rhat``. And half
  costs much: the ESS, which fails at most checks, grows with the window's length. A quarter
  is also what a fixed fit of the command line discards by default (``--burn-in`` N/4).
  Measured on the bench's scenario (``bench/RESULTS.md``, 2026-11-29, twentieth session; nine
  fits at 400–6,400 cells, each against a 2 × 6,000-sweep fixed fit):
  the stopped windows' posterior means of μ, α, the τ's and θ agree with the long fits as well
  with a quarter discarded as with half (mean squared z-scores 0.60–1.32 against 0.66–1.46;
  1.33–1.58 at 6,400 cells for fixed fits kept from their first sweep), while the fits stop
  after 0–67 % fewer sweeps and take 36 % less time in all.
* **Unit.** ``u = thin·2^a`` with the smallest ``2^(a+1) >= target_ess/chains`` (at least 64,
  at most 512): the first window holds at least as many draws per chain as the target asks for
  (``target_ess=400`` over 2 chains at the default ``thin=1``: ``u = 128``, warm-up 256
  sweeps, first check after 512 sweeps).
* **Thinning.** Draws are kept every ``thin`` sweeps, from every sweep by default
  (:data:`AUTO_THIN`). Before each segment, while the next
  window would hold more draws per chain than :attr:`AutoSchedule.max_draws`, the stored draws
  are thinned by 2 (every other one dropped) and ``thin`` doubles. ``max_draws`` is the
  smaller of what ``max_bytes`` allows (every stored draw keeps η) and the largest of 64,
  ``4·target_ess/chains`` and ``16/(max_rhat − 1)`` (1,600 draws per chain for the
  defaults). A window that held ``4·target_ess/chains`` draws per chain without reaching the
  target has an autocorrelation time above 4 draws, so dropping every other draw costs little
  ESS while it halves the memory and the cost of the next check. The R-hat term keeps enough
  draws for the noise of R-hat itself to stay below the limit: with ``n`` independent draws
  in each of 4 split chains, ``R-hat − 1`` of a converged parameter is about ``(F − 1)/(2n)``
  with ``F`` the ratio of between- to within-chain variance, roughly χ²₃/3, and the largest of
  the bulk and folded R-hats of 10⁴–10⁶ parameters has ``F`` near 8–11. Measured: 2 chains
  of 800 independent draws give a largest R-hat of 1.011 over 19,200 parameters, so R-hat <
  1.01 over every λ of a lattice needs about twice that. Memory stays bounded, and since
  ``u/thin`` is a power of 2 every boundary stays a multiple of ``thin``.
* **The check** (:func:`assess_convergence`), vectorised by
  :func:`geosynth.model.diagnostics.convergence_diagnostics` (arviz's bulk ESS and rank R-hat),
  goes through the groups μ, α and the precisions → θ → β (if fitted) → λ, each in parts of
  :data:`CHECK_PART` parameters, and stops at the first part that fails: early checks, which
  the precisions usually fail, cost little, and so does one that fails on a few λ's. λ is
  checked as ``exp(η)`` of the stored η = log λ, a part at a time (bulk ESS depends on ranks
  only, but rank R-hat also takes the folded R-hat of ``|x − median|``, which exp does not
  keep: η's R-hat was up to 0.02 below λ's): first on at most 2,048 evenly spaced (cell,
  combination) pairs, then, once those pass, on all ``G·B``. The fit stops when every
  parameter has bulk ESS >= ``target_ess`` and R-hat < ``max_rhat``, and no chain holds one
  value over the whole window (see :func:`assess_convergence`).

With the same seed a fit without ``max_seconds`` makes the same sweeps and draws (the checks
depend on the draws only, never on timing or the number of threads). ``max_seconds`` stops
the chains at their next chunk after that wall-clock time (measured from the call of ``fit``,
compilation included; the warm-up always completes) less the time the final complete check is
expected to take (:func:`complete_check_seconds_per_row`, from the pace of the diagnostics at
the latest check, :func:`diagnostics_pace`; nothing is reserved before the first), and the fit
returns the draws of the current window with a :class:`~geosynth.errors.GeosynthWarning`
naming what has not converged. The final check is complete (every parameter): if the window
it returns meets the rule after all — the time ran out after a failed check, but the sweeps
made since carried it over the line — the fit has converged by its own rule and says so
(reason ``"converged"``, no warning) rather than warn with nothing to name.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import numpy as np

from geosynth._validation import check_positive, check_real
from geosynth.errors import InputError
from geosynth.model.diagnostics import convergence_diagnostics

__all__ = [
    "AUTO_THIN",
    "AutoSchedule",
    "ConvergenceCheck",
    "DEFAULT_MAX_RHAT",
    "DEFAULT_TARGET_ESS",
    "MAX_MAX_RHAT",
    "MIN_MAX_RHAT",
    "MIN_WINDOW_DRAWS",
    "PACE_MIN_VALUES",
    "ParameterGroup",
    "StoppingInfo",
    "WINDOW_SEGMENTS",
    "assess_convergence",
    "check_auto_arguments",
    "complete_check_seconds_per_row",
    "diagnostics_pace",
]

#: The initial ``thin`` of an auto fit when none is given: every sweep. The window's draws
#: are capped by :attr:`AutoSchedule.max_draws` whatever the thinning, so starting from every
#: sweep costs no memory; it keeps the draws that the ESS and, above all, the noise of R-hat
#: need, where the precisions and the θ_i mix in a few sweeps and the λ_ib in about one.
#: Measured on the bench's scenario at G = 25,600 × B = 12 (2 chains on 2 cores,
#: ``bench/RESULTS.md``, 2026-11-27): from ``thin=6`` the fit had not converged after
#: 2 × 7,710 sweeps and 631 s (windows of ~640 draws per chain: min ESS 108, R-hat 1.030);
#: from ``thin=1`` it converged after 2 × 6,144 sweeps in 516 s (1,536 draws per chain at
#: thin 2: min ESS 460, R-hat 1.0095).
AUTO_THIN = 1
#: The largest starting ``thin`` of an auto fit. Its warm-up, which ``max_seconds`` does not
#: interrupt, is 64 to 512 times ``thin`` sweeps: ``thin=2000`` ran 171 s past
#: ``max_seconds=1``, ``thin=10**7`` without end.
MAX_AUTO_THIN = 64
#: Draws per chain in the first window: at least this many ...
FIRST_WINDOW_MIN = 64
#: ... and at most this many (a higher target is then met in later windows).
FIRST_WINDOW_MAX = 512
#: Draws per chain a window may hold when memory allows: at least this many, and
#: ``WINDOW_PER_TARGET`` times ``target_ess / chains``, and ``WINDOW_RHAT / (max_rhat − 1)``.
WINDOW_MIN = 64
WINDOW_PER_TARGET = 4
WINDOW_RHAT = 16.0
#: Segments a window holds: the checks read ``[b_j/4, b_j)`` from the check at ``8u`` on.
WINDOW_SEGMENTS = 4
#: The fewest draws per chain a window may be held to (by ``max_bytes``): with fewer, the
#: thinning a window of four segments needs may not divide the window's first sweep (it
#: failed below nine in a search over thins and targets; the schedule test checks 16 and 17).
MIN_WINDOW_DRAWS = 16
#: Parameters a partial check evaluates at a time. It stops at the first part with a failing
#: parameter, so a check that fails on a few of the G·B λ's (after their screen passed) costs a
#: part of a complete one.
CHECK_PART = 16_384
#: (cell, combination) pairs of the λ screening check.
LAMBDA_SCREEN = 2048
#: Not-converged parameters a warning or :class:`StoppingInfo` lists by name.
LISTED = 10
#: The largest ``target_ess``: a million effective draws puts a posterior mean's Monte Carlo
#: error at a thousandth of its SD, far past any analysis; beyond it the windows' plans grew to
#: sizes that NumPy refused with a raw error (``target_ess=1e18``) or that the memory limit's
#: message printed with 300 digits.
MAX_TARGET_ESS = 1_000_000
#: The smallest ``max_rhat``. R-hat − 1 of converged chains is about ``(F − 1)/(2n)`` at ``n``
#: draws per chain (see the module docstring), so a limit ``1 + δ`` takes ``16/δ`` draws per
#: chain of every parameter: 16,000 at 1.001, ten times the default's. ``max_rhat=1 + 1e-10``
#: asked for 1.6·10¹¹, more than ``max_bytes`` held, and ran until Ctrl-C.
MIN_MAX_RHAT = 1.001
#: The largest ``max_rhat``. R-hat² is about 1 + B/W (between- over within-chain variance), so
#: at 2 the chains' means spread three times as widely as each chain does: chains that have
#: not met. A larger limit switched the check off (``max_rhat=1e300`` was taken), and an auto
#: fit then stopped at the ESS alone. 1.1 (Gelman and Rubin's threshold) is the most lenient in
#: common use.
MAX_MAX_RHAT = 2.0
#: Groups reported centred over their parameters at every draw (θ_i − θ̄,
#: :func:`geosynth.model.state.record`): a group of one such parameter, θ of a one-cell
#: lattice, is 0 at every draw by construction, the one reported parameter fixed by design.
CENTRED_GROUPS = frozenset({"theta"})


#: The stopping rule's defaults (:meth:`PaivaModel.fit`, :func:`geosynth.dp.dp_release`): a
#: bulk ESS of 400 for every parameter (Vehtari et al. 2021) and R-hat below 1.01.
DEFAULT_TARGET_ESS = 400.0
DEFAULT_MAX_RHAT = 1.01


def check_auto_arguments(target_ess, max_rhat, max_seconds, *, auto: bool) -> None:
    """Validate the stopping rule of :meth:`PaivaModel.fit` (``auto``: ``n_iter="auto"``).

    Parameters
    ----------
    target_ess, max_rhat, max_seconds
        As for :meth:`PaivaModel.fit`.
    auto : bool
        Whether ``n_iter="auto"``; ``max_seconds``, and ``target_ess`` or ``max_rhat`` other
        than their defaults, are refused otherwise.

    Raises
    ------
    TypeError
        A value that is not a real number (a string, a bool, None for the first two).
    InputError
        A value out of range, or ``max_seconds`` (``target_ess`` or ``max_rhat`` other than
        their defaults) with a fixed ``n_iter``.
    """
    # An int beyond the float range is taken, and shown, as the ±inf it converts to: Python
    # refuses to print an int of more than 4,300 digits (a ValueError in place of the message).
    target = check_real(target_ess, "target_ess")
    rhat = check_real(max_rhat, "max_rhat")
    if not auto:  # first: a value out of range was refused, then ignored once in range
        _refuse_stopping_rule(target, rhat, max_seconds)
        return
    if not math.isfinite(target):
        target_ess = target
    if not math.isfinite(target) or target < 1 or target > MAX_TARGET_ESS:
        raise InputError(
            f"target_ess must be a number >= 1 and <= {MAX_TARGET_ESS:,} (the bulk effective "
            f"sample size every parameter must reach, over all chains), got {target_ess!r}; "
            "400 is the usual choice"
        )
    if not math.isfinite(rhat):
        max_rhat = rhat
    if not math.isfinite(rhat) or rhat <= 1:
        raise InputError(
            f"max_rhat must be a number > 1 (R-hat tends to 1 from above as chains converge, "
            f"so a limit <= 1 is never met; 1.01 is the usual choice), got {max_rhat!r}"
        )
    if rhat > MAX_MAX_RHAT:
        raise InputError(
            f"max_rhat must be at most {MAX_MAX_RHAT:g}, got {max_rhat!r}: chains with an R-hat "
            "of 2 spread three times as widely between them as within each, so a larger limit "
            "accepts chains that have not met; 1.01 is the usual choice, 1.1 the most lenient "
            "in common use"
        )
    if rhat < MIN_MAX_RHAT:
        raise InputError(
            f"max_rhat must be at least {MIN_MAX_RHAT}, got {max_rhat!r}: R-hat of converged "
            "chains exceeds 1 by its own noise, so staying below 1 + δ takes about 16/δ draws "
            "per chain of every parameter, and a smaller limit would keep the fit running "
            "until Ctrl-C; 1.01 is the usual choice"
        )
    if max_seconds is not None:
        check_positive(max_seconds, "max_seconds",
                       hint="leave it out (None) to run until converged")


def _refuse_stopping_rule(target: float, rhat: float, max_seconds: Any) -> None:
    """Refuse a stopping rule (other than the defaults) given with a fixed ``n_iter``."""
    if max_seconds is not None:
        raise InputError(
            "max_seconds applies to n_iter='auto' (stop when converged or at max_seconds); "
            "with a fixed n_iter the fit runs all its sweeps: drop max_seconds or pass "
            "n_iter='auto'"
        )
    if target != DEFAULT_TARGET_ESS or rhat != DEFAULT_MAX_RHAT:
        # Ignored before, without a word: fit(n_iter=50, target_ess=5000) ran its 50 sweeps.
        raise InputError(
            "target_ess and max_rhat are the stopping rule of n_iter='auto'; with a fixed "
            "n_iter the fit runs all its sweeps whatever they say: drop them, or pass "
            "n_iter='auto'"
        )


class AutoSchedule:
    """Segment boundaries and thinning of an ``n_iter="auto"`` fit (see the module docstring).

    Parameters
    ----------
    thin : int
        The initial thinning (``fit(thin=)``).
    chains : int
        Number of chains.
    target_ess : float
        The ESS every parameter must reach over all chains.
    max_rhat : float
        The R-hat every parameter must stay below.
    capacity : int
        Draws per chain that the storage plan allows (every one with its η).

    Attributes
    ----------
    unit : int
        ``u`` in sweeps; the warm-up is ``2u`` sweeps.
    wanted_draws : int
        Draws per chain a window may grow to when memory allows (see the module docstring).
    max_draws : int
        Most draws per chain a window holds (the thinning rule keeps it there): the smaller
        of ``wanted_draws`` and ``capacity``.
    """

    def __init__(self, thin: int, chains: int, target_ess: float, max_rhat: float,
                 capacity: int) -> None:
        per_chain = math.ceil(target_ess / chains)
        first = 1 << max(0, per_chain - 1).bit_length()  # next power of 2 >= per_chain
        first = min(max(first, FIRST_WINDOW_MIN), FIRST_WINDOW_MAX)
        self.initial_thin = int(thin)
        self.unit = int(thin) * first // 2
        self.wanted_draws = int(max(WINDOW_MIN, WINDOW_PER_TARGET * per_chain,
                                    math.ceil(WINDOW_RHAT / (max_rhat - 1.0))))
        self.max_draws = int(min(capacity, self.wanted_draws))

    def boundary(self, j: int) -> int:
        """Sweep at which segment ``j`` starts (``j = 0``: the end of the warm-up, ``2u``)."""
        k, odd = divmod(j, 2)
        return (3 << k) * self.unit if odd else (2 << k) * self.unit

    def window_start(self, j: int) -> int:
        """First sweep of the window checked after segment ``j`` (also before it runs)."""
        return self.boundary(max(j - WINDOW_SEGMENTS + 1, 0))

    def doublings(self, j: int, thin: int) -> int:
        """How often ``thin`` doubles before segment ``j``, so the window fits ``max_draws``.

        The window checked after segment ``j`` is ``[window_start(j), boundary(j + 1))``: its
        last :data:`WINDOW_SEGMENTS` segments (fewer before segment 3); segment 0's draws are
        first checked with segment 1's.
        """
        j = max(j, 1)
        span = self.boundary(j + 1) - self.window_start(j)
        count = 0
        while span // (thin << count) > self.max_draws:
            count += 1
        return count


class ParameterGroup(NamedTuple):
    """Draws of a group of parameters for :func:`assess_convergence`.

    Attributes
    ----------
    name : str
        Group name ("scalars", "theta", "beta", "lambda").
    draws : numpy.ndarray, shape (chains, draws, P) (or more trailing axes, flattened)
        The window's draws.
    label : callable
        Flat parameter index -> its name (``"theta[3]"``).
    screen : bool
        A screening subset of a later group: skipped by a complete check.
    log : bool
        ``draws`` are logarithms (η = log λ): each part is exponentiated before the check.
        Bulk ESS depends on ranks only, but rank R-hat is also the folded R-hat of
        ``|x − median|``, which exp does not preserve (η's and λ's differ by up to 0.02).
    """

    name: str
    draws: np.ndarray
    label: Callable[[int], str]
    screen: bool = False
    log: bool = False


def field_groups(scalars: np.ndarray, names: Sequence[str], theta: np.ndarray,
                 beta: np.ndarray | None, beta_labels: Sequence[str]) -> list[ParameterGroup]:
    """Group the scalars, θ and β in the order of the check.

    Parameters
    ----------
    scalars : numpy.ndarray, shape (chains, draws, S)
        Named by ``names``.
    theta : numpy.ndarray, shape (chains, draws, G)
    beta : numpy.ndarray, shape (chains, draws, G) or (chains, draws, K, G), or None
        β of each covariate, named by ``beta_labels`` (one per covariate).

    Returns
    -------
    list of ParameterGroup
    """
    n_cells = theta.shape[2]
    groups = [ParameterGroup("scalars", scalars, list(names).__getitem__),
              ParameterGroup("theta", theta, lambda i: f"theta[{i}]")]
    if beta is not None and beta.size:
        labels = list(beta_labels) or ["beta"] * (beta[0, 0].size // n_cells)

        def beta_name(k: int) -> str:
            return f"{labels[k // n_cells]}[{k % n_cells}]"

        groups.append(ParameterGroup("beta", beta.reshape(*beta.shape[:2], -1), beta_name))
    return groups


def failing_text(not_converged: Sequence[tuple[str, float, float]], n_not_converged: int
                 ) -> str:
    """List the parameters that missed a rule, for a warning (empty when none did).

    Parameters
    ----------
    not_converged : sequence of (name, bulk ESS, R-hat)
        The worst, as :class:`ConvergenceCheck` lists them.
    n_not_converged : int
        How many missed it in all.

    Returns
    -------
    str
    """
    if not n_not_converged:
        return ""
    listed = ", ".join(f"{name} (ESS {ess:.0f}, R-hat {r_hat:.3f})"
                       for name, ess, r_hat in not_converged)
    more = n_not_converged - len(not_converged)
    return listed + (f" and {more:,} more" if more > 0 else "")


class ConvergenceCheck(NamedTuple):
    """Outcome of one :func:`assess_convergence`.

    Attributes
    ----------
    converged : bool
        Every parameter of every group reached the target (a complete pass).
    min_ess, max_r_hat : float
        Over the parameters checked (NaN if some parameter has none: too few draws or a
        non-finite draw; R-hat inf where a chain is stuck at one value).
    worst_ess, worst_r_hat : str
        The parameters where they occur.
    not_converged : tuple of (str, float, float)
        Up to :data:`LISTED` failing parameters, worst first: name, bulk ESS, R-hat.
    n_not_converged : int
        The failing parameters among those checked.
    checked : tuple of str
        The groups evaluated, in whole or in part (a partial check stops at the first part of
        a group that fails).
    seconds : float
        Wall-clock time of the check.
    values : int
        Draws evaluated: chains × draws × parameters, summed over the groups checked.
    """

    converged: bool
    min_ess: float
    max_r_hat: float
    worst_ess: str
    worst_r_hat: str
    not_converged: tuple
    n_not_converged: int
    checked: tuple
    seconds: float
    values: int = 0


def assess_convergence(groups: Sequence[ParameterGroup], target_ess: float, max_rhat: float,
                       *, complete: bool = False, workers: int = 1) -> ConvergenceCheck:
    """Bulk ESS and rank R-hat of the groups in order, stopping at the first that fails.

    A group is evaluated :data:`CHECK_PART` parameters at a time, and a partial check stops at the
    first part that fails. A parameter passes when its bulk ESS is >= ``target_ess`` and its R-hat
    is < ``max_rhat``. A parameter with a non-finite draw fails (its ESS and R-hat are reported as
    NaN, as Stan's ``posterior`` package, the reference implementation of Vehtari et al. 2021, gives
    them): λ = exp η overflowing to inf is a sampler that diverged, and inf at every draw, a
    constant, passed before. A parameter that holds one value over every draw of the window in some
    chain fails too, with R-hat reported as inf (the value
    :func:`~geosynth.model.diagnostics.convergence_diagnostics` gives chains that are each constant
    at different values): every reported parameter has a continuous posterior (Gibbs draws from
    continuous conditionals; each update of the MH sampler is an exact draw with probability
    ``MH_EXACT_SHARE``, 0.1), so a chain that repeats one value is stuck, not converged. A constant
    passed before on its ESS (arviz gives the number of draws) and an undefined R-hat (0/0), and one
    stuck chain among moving ones could pass on the bulk and folded R-hats alone when it sits near
    the others' median. The one exception is a parameter fixed by design, 0 at every draw: θ of a
    one-cell lattice (a group of :data:`CENTRED_GROUPS` with one parameter).

    Parameters
    ----------
    groups : sequence of ParameterGroup
        In the order to check them.
    target_ess, max_rhat : float
        The stopping rule.
    complete : bool, default False
        Evaluate every group (skipping screening subsets) even after one fails: for the
        report of a fit stopped by ``max_seconds``.
    workers : int, default 1
        Threads of :func:`~geosynth.model.diagnostics.convergence_diagnostics`.

    Returns
    -------
    ConvergenceCheck
    """
    start = time.perf_counter()
    min_ess, max_r_hat = math.inf, -math.inf
    worst_ess = worst_r_hat = ""
    failing: list[tuple[float, str, float, float]] = []
    n_failing = 0
    checked = []
    values = 0
    passed = True
    for group in groups:
        if complete and group.screen:
            continue
        checked.append(group.name)
        chains, n_draws = group.draws.shape[:2]
        flat = group.draws.reshape(chains, n_draws, -1)
        # A complete check too: exp of every η at once, and the diagnostics over it, peaked
        # at 8 times the float64 λ's (517 MB for 64 MB of them); same result part by part.
        step = CHECK_PART
        for offset in range(0, flat.shape[2], step):
            part = flat[:, :, offset:offset + step]
            if group.log:
                with np.errstate(over="ignore"):  # an overflow to inf fails just below
                    part = np.exp(part, dtype=np.float64)
            ess, r_hat = convergence_diagnostics(part, workers=workers)
            values += part.size
            finite = np.isfinite(part).all(axis=(0, 1))
            ess, r_hat = np.where(finite, ess, np.nan), np.where(finite, r_hat, np.nan)
            r_hat = _stuck_chains_fail(part, r_hat, finite, group.name in CENTRED_GROUPS)
            bad = ~((ess >= target_ess) & (r_hat < max_rhat))  # a NaN fails
            low = int(np.argmin(np.nan_to_num(ess, nan=-np.inf)))  # a NaN is the worst
            high = int(np.argmax(np.nan_to_num(r_hat, nan=np.inf)))
            if not math.isnan(min_ess) and not ess[low] >= min_ess:
                min_ess, worst_ess = float(ess[low]), group.label(offset + low)
            if not math.isnan(max_r_hat) and not r_hat[high] <= max_r_hat:
                max_r_hat, worst_r_hat = float(r_hat[high]), group.label(offset + high)
            if not bad.any():
                continue
            passed = False
            n_failing += int(bad.sum())
            with np.errstate(divide="ignore", invalid="ignore"):
                severity = np.maximum(target_ess / ess, (r_hat - 1.0) / (max_rhat - 1.0))
            severity = np.nan_to_num(severity, nan=np.inf)
            index = np.flatnonzero(bad)
            for i in index[np.argsort(-severity[index], kind="stable")][:LISTED]:
                failing.append((float(severity[i]), group.label(offset + int(i)),
                                float(ess[i]), float(r_hat[i])))
            if not complete:
                break
        if not passed and not complete:
            break
    failing.sort(key=lambda item: -item[0])
    listed = tuple((name, ess, r_hat) for _, name, ess, r_hat in failing[:LISTED])
    return ConvergenceCheck(
        converged=passed and bool(checked),
        min_ess=math.nan if min_ess == math.inf else min_ess,
        max_r_hat=math.nan if max_r_hat == -math.inf else max_r_hat,
        worst_ess=worst_ess, worst_r_hat=worst_r_hat, not_converged=listed,
        n_not_converged=n_failing, checked=tuple(checked),
        seconds=time.perf_counter() - start, values=values,
    )


def _stuck_chains_fail(part: np.ndarray, r_hat: np.ndarray, finite: np.ndarray,
                      centred: bool) -> np.ndarray:
    """Return ``r_hat`` with inf where some chain of ``part`` holds one finite value.

    Parameters
    ----------
    part : numpy.ndarray, shape (chains, draws, P)
        The draws checked.
    r_hat : numpy.ndarray, shape (P,)
        Their rank R-hat (NaN where a draw is not finite, which already fails).
    finite : numpy.ndarray of bool, shape (P,)
        Every draw of the parameter is finite.
    centred : bool
        The group is centred (:data:`CENTRED_GROUPS`): a group of one parameter is then 0 at
        every draw by construction, and passes with R-hat 1 (its ESS is the number of draws).

    Returns
    -------
    numpy.ndarray, shape (P,)
    """
    if part.shape[1] < 4:  # too few draws for arviz (R-hat NaN, which fails): not "stuck"
        return r_hat
    if centred and part.shape[2] == 1 and finite[0] and not part.any():
        return np.ones_like(r_hat)  # θ of a one-cell lattice: 0 by construction
    stuck = finite & (part.max(axis=1) == part.min(axis=1)).any(axis=0)
    return np.where(stuck, np.inf, r_hat)


#: :func:`diagnostics_pace` takes a check's own pace when it evaluated at least this many
#: (chain, draw, parameter) values; in smaller ones the overheads dominate.
PACE_MIN_VALUES = 10**6


def diagnostics_pace(check: ConvergenceCheck, groups: Sequence[ParameterGroup], *,
                     min_values: int = PACE_MIN_VALUES, workers: int = 1) -> float:
    """Seconds per evaluated value of the convergence diagnostics at the current window.

    The pace of ``check`` itself when it evaluated at least ``min_values`` values (smaller
    checks are dominated by overheads: an early check usually stops at the scalars); otherwise
    the diagnostics are timed on the largest screening group (the λ screen, 2,048 parameters),
    or on the largest group when there is none.

    Parameters
    ----------
    check : ConvergenceCheck
        A check just made on ``groups``.
    groups : sequence of ParameterGroup
        The window's groups.
    min_values : int, default PACE_MIN_VALUES
        The fewest values a check must have evaluated for its own pace to count.
    workers : int, default 1
        Threads of :func:`~geosynth.model.diagnostics.convergence_diagnostics`.

    Returns
    -------
    float
    """
    if check.values >= min_values:
        return check.seconds / check.values
    screens = [group for group in groups if group.screen] or list(groups)
    draws = max(screens, key=lambda group: group.draws.size).draws
    start = time.perf_counter()
    convergence_diagnostics(draws, workers=workers)
    return (time.perf_counter() - start) / max(draws.size, 1)


def complete_check_seconds_per_row(pace: float, groups: Sequence[ParameterGroup]) -> float:
    """Seconds a complete check of ``groups`` would take per stored draw of each chain.

    A fit stopped by ``max_seconds`` makes a complete check (every parameter, for the warning
    that names what has not converged), which at 6,400 cells × 12 took 12 s beyond a 60-second
    limit and at 25,600 ~80 s beyond 600 s (``bench/RESULTS.md``, 2026-11-28). The chains
    therefore stop that much before the limit: this extrapolates ``pace`` (seconds per
    evaluated value, :func:`diagnostics_pace`) to the complete check's chains × parameters,
    one stored draw at a time. The bulk ESS and rank R-hat cost close to linearly in the
    values (ranking is O(n log n) per parameter in the draws, with n in the thousands).

    Parameters
    ----------
    pace : float
        Seconds per evaluated value.
    groups : sequence of ParameterGroup
        The groups of the fit, screening subsets included (skipped as a complete check
        skips them).

    Returns
    -------
    float
    """
    chains = groups[0].draws.shape[0]
    params = sum(int(np.prod(group.draws.shape[2:])) for group in groups if not group.screen)
    return pace * chains * params


@dataclass(frozen=True)
class StoppingInfo:
    """How an ``n_iter="auto"`` fit stopped (:attr:`PaivaFit.stopping`).

    Attributes
    ----------
    reason : {"converged", "max_seconds", "interrupted"}
        Every parameter reached the target; or the wall-clock limit came first; or Ctrl-C.
    sweeps : int
        Sweeps per chain, burn-in included (the fewest of any chain, when stopped early).
    burn_in : int
        Sweeps discarded at the start of each chain: a quarter of ``sweeps`` at a check (the
        warm-up, ``2u``, at the first three; see the module docstring).
    thin : int
        Thinning of the returned draws (the initial ``thin`` doubled as often as memory and
        the window's size required).
    draws : int
        Retained draws per chain.
    min_ess, max_r_hat : float
        Smallest bulk ESS and largest rank R-hat over the parameters of the last check, a
        check of the draws returned (after a Ctrl-C, a partial check of them; NaN when none
        could be made, with too few draws or a non-finite draw).
    worst_ess, worst_r_hat : str
        Where they occur: ``"mu"``, ``"alpha[...]"``, ``"tau_phi[...]"``, ``"theta[i]"``,
        ``"beta[i]"``, ``"lambda[i,b]"`` (cell i, combination b).
    target_ess, max_rhat : float
        The stopping rule.
    max_seconds : float or None
        The wall-clock limit.
    not_converged : tuple of (str, float, float)
        Up to 10 parameters that missed the rule, worst first: name, bulk ESS, R-hat (empty
        when converged).
    n_not_converged : int
        How many parameters missed it.
    checks : int
        Convergence checks made.
    check_seconds : float
        Wall-clock time those checks took (the overhead of stopping when converged).
    seconds : float
        Wall-clock time of the whole fit.
    """

    reason: Literal["converged", "max_seconds", "interrupted"]
    sweeps: int
    burn_in: int
    thin: int
    draws: int
    min_ess: float
    max_r_hat: float
    worst_ess: str
    worst_r_hat: str
    target_ess: float
    max_rhat: float
    max_seconds: float | None = None
    not_converged: tuple = field(default=())
    n_not_converged: int = 0
    checks: int = 0
    check_seconds: float = 0.0
    seconds: float = 0.0

    def describe(self) -> str:
        """One line: how the fit stopped, after how many sweeps, with its worst ESS and R-hat.

        Returns
        -------
        str
        """
        how = {"converged": "converged",
               "max_seconds": f"stopped at max_seconds={self.max_seconds} before converging",
               "interrupted": "interrupted (Ctrl-C)"}[self.reason]
        return (f"{how} after {self.sweeps:,} sweeps per chain ({self.burn_in:,} burn-in, "
                f"{self.draws:,} draws at thin {self.thin}): minimum bulk ESS "
                f"{self.min_ess:.0f} ({self.worst_ess}; target {self.target_ess:g}), maximum "
                f"R-hat {self.max_r_hat:.3f} ({self.worst_r_hat}; limit {self.max_rhat})")

    def not_converged_text(self) -> str:
        """List the parameters that missed the rule, for a warning (empty when none did).

        Returns
        -------
        str
        """
        return failing_text(self.not_converged, self.n_not_converged)
