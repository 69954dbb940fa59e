"""How far better moves for the precisions could lift the single-site sampler's min ESS/s.

Issue 16 asks for geosynth ≥ 20× PyMC's default NUTS in min ESS/s at G = 1,600 (measured:
11.0× ± 0.5, ``bench/RESULTS.md``). geosynth's minimum there is a precision (τ_ε, then τ_θ
and the τ_φ's) or μ, each with an integrated autocorrelation time of 5–7 sweeps. This benchmark
measures the ceiling of any move confined to one precision's block: it runs one chain of the
default sweep, and the same chain with R extra rounds per sweep of every block,

- *fields*: θ's and every φ_·p's single-site draws, then their scale cycles and remap moves
  (:func:`~geosynth.model.conditionals.update_theta`,
  :func:`~geosynth.model.conditionals.update_phi`,
  :func:`~geosynth.model.moves.field_scale_cycles`);
- *errors*: ε's draws, τ_ε's Gibbs draw, then ε's remap and scale moves
  (:func:`~geosynth.model.conditionals.update_eps`,
  :func:`~geosynth.model.conditionals.update_tau_eps`,
  :func:`~geosynth.model.moves.error_scale_moves`).

Every round leaves the posterior invariant, so with many rounds each (field, τ) pair is drawn
nearly from its conditional given the rest of the state (a collapsed or exact block update
could do no better): the autocorrelation that is left is what no such move removes. The table
gives, per configuration, the milliseconds a sweep and the integrated autocorrelation time
τ_int = N / bulk ESS (arviz's definition, by
:func:`~geosynth.model.diagnostics.convergence_diagnostics`) of every scalar a fit reports
(μ + mean θ, every α_p + mean φ_·p, τ_θ, every τ_φ, τ_ε: the bench's μ, α and τ groups), and
two factors on min ESS/s over these scalars against the default sweep:
*measured* (with the rounds' cost) and *if free* (the default's worst τ_int over the
configuration's: the ceiling, were the rounds to cost nothing).

Run: ``python -m bench ceiling`` or ``python -m bench.bench_ceiling [--cells 1600]
[--sweeps 10000] [--rounds 0+0,1+0,0+1,1+1,8+8]`` (``FIELDS+ERRORS`` extra rounds).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numba import njit

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_pymc import mcse_mean, scenario_counts  # noqa: E402
from geosynth import PaivaModel  # noqa: E402
from geosynth.model.borrow import borrowed  # noqa: E402
from geosynth.model.conditionals import (  # noqa: E402
    update_eps,
    update_phi,
    update_tau_eps,
    update_theta,
)
from geosynth.model.diagnostics import convergence_diagnostics  # noqa: E402
from geosynth.model.fit import build_model_data  # noqa: E402
from geosynth.model.moves import error_scale_moves, field_scale_cycles  # noqa: E402
from geosynth.model.runner import initial_state  # noqa: E402
from geosynth.model.state import (  # noqa: E402
    compute_eta,
    record,
    recorded_scalars,
    scalar_columns,
)
from geosynth.model.sweep import sweep  # noqa: E402
from geosynth.samplers.family import STATUS_OK  # noqa: E402
from geosynth.samplers.rng import make_streams  # noqa: E402

CELLS = 1600
SWEEPS = 10_000
BURN_IN = 2_000
SEED = 1
ROUNDS = ((0, 0), (1, 0), (0, 1), (1, 1), (8, 8))


class Config(NamedTuple):
    """One chain's extra rounds per sweep and what it measured."""

    fields: int
    errors: int
    ms_per_sweep: float
    tau_int: dict  # scalar name -> N / bulk ESS
    means: dict  # scalar name -> posterior mean
    mcse: dict  # scalar name -> Monte Carlo standard error of the mean

    def worst(self) -> tuple[str, float]:
        """The scalar with the longest autocorrelation time, and that time."""
        name = max(self.tau_int, key=self.tau_int.get)
        return name, self.tau_int[name]


@njit(cache=True, nogil=True)
def _extra_rounds(data, s, comp_sum, column, fields, errors):
    """``fields`` rounds of the fields' block, then ``errors`` of the errors'; a status."""
    for _ in range(fields):
        status = update_theta(data, s, comp_sum)
        if status == STATUS_OK:
            status = update_phi(data, s, comp_sum, column)
        if status != STATUS_OK:
            return status
        field_scale_cycles(data, s, comp_sum, column, False)
    for _ in range(errors):
        status = update_eps(data, s)
        if status != STATUS_OK:
            return status
        update_tau_eps(data, s)
        error_scale_moves(data, s, False)
    return STATUS_OK


@njit(cache=True, nogil=True)
def _run(data, s, n_sweeps, adapt, fields, errors, out):
    """Sweeps with the extra rounds; row t of ``out``: the scalars the fit records after t."""
    data, s = borrowed(data), borrowed(s)
    comp_sum = np.zeros(data.component_size.shape[0])
    column = np.empty(s.counts.shape[0])
    G, B = s.counts.shape
    scalars = np.empty((1, out.shape[1]))
    theta, eta = np.empty((1, G), np.float32), np.empty((1, G, B), np.float32)
    beta = np.empty((1, s.beta.shape[0], G), np.float32)
    compute_eta(data, s)
    for t in range(n_sweeps):
        status = sweep(data, s, comp_sum, column, adapt)
        if status == STATUS_OK:
            status = _extra_rounds(data, s, comp_sum, column, fields, errors)
        if status != STATUS_OK:
            return status
        if out.shape[0] > 0:
            record(data, s, scalars, theta, beta, eta, 0)
            out[t] = scalars[0]
    return STATUS_OK


def burnt_in_chain(counts, burn_in: int, seed: int):
    """One chain of the default ``PaivaModel()`` on ``counts`` after ``burn_in`` default sweeps.

    The burn-in sweeps tune the proposal scales, as a fit's do.

    Returns
    -------
    data : ModelData
    s : GibbsState
        The chain's state after burn-in.
    names : list of str
        The recorded scalars' names.
    """
    data, tables, names = build_model_data(counts, PaivaModel())
    s = initial_state(data, tables, make_streams(seed, 1)[0])
    if _run(data, s, burn_in, True, 0, 0, np.zeros((0, 0))) != STATUS_OK:
        raise RuntimeError("the burn-in's sampler failed")
    return data, s, names


def measure(counts, fields: int, errors: int, sweeps: int = SWEEPS, burn_in: int = BURN_IN,
            seed: int = SEED) -> Config:
    """Run one chain with the extra rounds and return its timings and autocorrelation times.

    Parameters
    ----------
    counts : geosynth.data.CellCounts
        The prepared counts.
    fields, errors : int
        Extra rounds per sweep of the fields' and the errors' blocks.
    sweeps, burn_in : int
        Recorded sweeps, after ``burn_in`` default sweeps that tune the proposal scales.
    seed : int
        The chain's seed (the same for every configuration).

    Returns
    -------
    Config
    """
    data, s, names = burnt_in_chain(counts, burn_in, seed)
    out = np.zeros((sweeps, recorded_scalars(data)))
    start = time.perf_counter()
    if _run(data, s, sweeps, False, fields, errors, out) != STATUS_OK:
        raise RuntimeError("a sweep's sampler failed")
    seconds = time.perf_counter() - start
    draws = out[None, :, scalar_columns(data)]
    ess = convergence_diagnostics(draws).ess_bulk
    tau_int = {name: sweeps / float(e) for name, e in zip(names, ess, strict=True)}
    means = {name: float(draws[..., k].mean()) for k, name in enumerate(names)}
    mcse = {name: mcse_mean(draws[..., k]) for k, name in enumerate(names)}
    return Config(fields, errors, 1e3 * seconds / sweeps, tau_int, means, mcse)


def _worst_of(config: Config, group: str) -> float:
    return max(v for k, v in config.tau_int.items() if k.startswith(group + "["))


def format_table(configs: list[Config], cells: int, sweeps: int) -> str:
    """Markdown table of the configurations, factors against the first (the default sweep)."""
    base = configs[0]
    base_name, base_worst = base.worst()
    lines = [
        f"G = {cells:,} (B = 12, the bench's scenario), one chain, {sweeps:,} recorded sweeps "
        "per configuration; τ_int = N / bulk ESS.",
        "",
        "| extra rounds (fields + errors) | ms per sweep | τ_int τ_ε | μ | worst α | τ_θ | "
        "worst τ_φ | worst (which) | min ESS/s × measured | × if free |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    for c in configs:
        name, worst = c.worst()
        measured = (base_worst * base.ms_per_sweep) / (worst * c.ms_per_sweep)
        lines.append(
            f"| {c.fields} + {c.errors} | {c.ms_per_sweep:.2f} | {c.tau_int['tau_eps']:.2f} | "
            f"{c.tau_int['mu']:.2f} | {_worst_of(c, 'alpha'):.2f} | "
            f"{c.tau_int['tau_theta']:.2f} | {_worst_of(c, 'tau_phi'):.2f} | "
            f"`{name}` {worst:.2f} | {measured:.2f} | {base_worst / worst:.2f} |")
    lines += ["", f"Default sweep's worst: `{base_name}` (τ_int {base_worst:.2f})."]
    return "\n".join(lines)


def rounds_list(text: str) -> tuple[tuple[int, int], ...]:
    """Parse ``"0+0,1+1"`` into ``((0, 0), (1, 1))``; the first must be ``0+0``."""
    try:
        pairs = tuple(tuple(int(x) for x in item.split("+")) for item in text.split(","))
    except ValueError:
        pairs = ()
    if not pairs or any(len(p) != 2 or min(p) < 0 for p in pairs) or pairs[0] != (0, 0):
        raise argparse.ArgumentTypeError(
            f"--rounds {text!r}: give FIELDS+ERRORS pairs of counts >= 0, separated by commas, "
            "the first 0+0 (the default sweep the factors compare with), e.g. 0+0,1+1,8+8")
    return pairs


def square_cells(text: str) -> int:
    """``--cells``: a square number of cells ≥ 4 (a √G × √G lattice)."""
    try:
        cells = int(text)
    except ValueError:
        cells = 0
    if cells < 4 or math.isqrt(cells) ** 2 != cells:
        raise argparse.ArgumentTypeError(
            f"--cells {text!r}: give a square number of cells >= 4 (a √G × √G lattice, "
            "e.g. 1600 = 40 × 40)")
    return cells


def sweep_count(text: str) -> int:
    """``--sweeps``: recorded sweeps, an integer ≥ 4 (what a bulk ESS needs)."""
    try:
        sweeps = int(text)
    except ValueError:
        sweeps = 0
    if sweeps < 4:
        raise argparse.ArgumentTypeError(
            f"--sweeps {text!r}: give an integer >= 4 of recorded sweeps, e.g. 10000")
    return sweeps


def run(cells: int = CELLS, sweeps: int = SWEEPS, rounds=ROUNDS, seed: int = SEED) -> str:
    """Measure every configuration of ``rounds`` and return the Markdown table."""
    if math.isqrt(cells) ** 2 != cells:
        raise ValueError(f"cells={cells}: give a square number of cells (a √G × √G lattice)")
    counts = scenario_counts(cells)
    configs = [measure(counts, f, e, sweeps=sweeps, seed=seed) for f, e in rounds]
    return format_table(configs, cells, sweeps)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=square_cells, default=CELLS,
                        help="square number of cells")
    parser.add_argument("--sweeps", type=sweep_count, default=SWEEPS, help="recorded sweeps")
    parser.add_argument("--rounds", type=rounds_list, default=ROUNDS,
                        help="FIELDS+ERRORS extra rounds per configuration, e.g. 0+0,1+1,8+8")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    print(run(args.cells, args.sweeps, args.rounds, args.seed))


if __name__ == "__main__":
    main()
