"""Where a sweep's time goes, in passes of ``exp`` over the G·B entries.

Issue 16 asks for a sweep of at most 20 passes of ``exp`` over G·B at G = 6,400, B = 12, the
floor measured in the same run. ``bench_gibbs`` gives the figure for a whole ``fit`` call from
its first sweep (set-up, burn-in adaptation and recording included). This benchmark takes the
default sweep (:func:`geosynth.model.sweep.sweep`) apart: one chain of the bench's scenario
(:func:`bench.bench_pymc.scenario_counts`, ``PaivaModel()``) runs :data:`BURN_IN` burn-in
sweeps, then each part of the sweep, and the whole sweep, is called :data:`CALLS` times from
the chain's state (every part leaves the posterior invariant, so the state stays a draw), in
:data:`REPEATS` alternating rounds; the table gives each part's best round in milliseconds per
call and in passes of the floor (:func:`bench.bench_gibbs.exp_pass_seconds`, the best of
twenty numba loops of ``math.exp`` over G·B values, measured in the same process).

The parts, in the sweep's order:

- *the single-site conditionals*, which any sampler of this kind draws: μ and every α_p,
  θ, every φ_·p, every ε_ib, and τ_ε (the Gibbs draws of τ_θ and every τ_φ open each round
  of the fields' scale cycles, and are timed with them: one ICAR quadratic a field);
- *the moves that mix*: the shifts of the intercepts with their fields, the joint move along
  the smooth modes, the coarse shifts, the shifts against the errors, the fields' scale cycles
  and remap moves, ε's remap and scale rounds.

The first group is what a sweep with no mixing move would cost, short of τ_θ's and the τ_φ's
draws; where it is above the issue's 20 passes, no sweep that draws every ε_ib, θ_i and φ_ip
exactly can meet that target.

Run: ``python -m bench sweep_cost`` or ``python -m bench.bench_sweep_cost [--cells 1600,6400]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_ceiling import burnt_in_chain, square_cells  # noqa: E402
from bench.bench_gibbs import exp_pass_seconds  # noqa: E402
from bench.bench_pymc import scenario_counts  # noqa: E402
from geosynth.model.borrow import borrowed  # noqa: E402
from geosynth.model.coarse import coarse_shifts  # noqa: E402
from geosynth.model.conditionals import (  # noqa: E402
    update_eps,
    update_phi,
    update_precisions,
    update_theta,
)
from geosynth.model.moves import (  # noqa: E402
    error_scale_moves,
    field_scale_cycles,
    mode_moves,
    shift_errors,
    shift_level_intercepts,
    shift_move,
)
from geosynth.model.state import LEVEL_VAR, MU_VAR  # noqa: E402
from geosynth.model.sweep import sweep, update_intercepts  # noqa: E402

CELLS = (1600, 6400)
BURN_IN = 1500
CALLS = 800_000  # calls × cells per round: 500 calls at 1,600 cells, 125 at 6,400
REPEATS = 2
SEED = 1

#: (name, group) of each part, in the sweep's order; the index is the part's code in
#: :func:`_call_part` (code len(PARTS) is the whole sweep).
PARTS = (
    ("μ and α draws", "conditional"),
    ("θ draws", "conditional"),
    ("φ draws", "conditional"),
    ("ε draws", "conditional"),
    ("τ_ε's Gibbs draw", "conditional"),
    ("shifts of μ with θ, α_p with φ_·p", "move"),
    ("joint move along the smooth modes", "move"),
    ("coarse shifts", "move"),
    ("shifts against the errors", "move"),
    ("fields' scale cycles and remap moves", "move"),
    ("ε's remap and scale rounds", "move"),
)
WHOLE_SWEEP = len(PARTS)


@njit(cache=True, nogil=True)
def _call_part(data, s, part, calls):
    """Call part ``part`` of the sweep ``calls`` times (``WHOLE_SWEEP``: the sweep); a status."""
    data, s = borrowed(data), borrowed(s)
    comp_sum = np.zeros(data.component_size.shape[0])
    column = np.empty(s.counts.shape[0])
    status = 0
    for _ in range(calls):
        if part == 0:
            status = update_intercepts(data, s)
        elif part == 1:
            status = update_theta(data, s, comp_sum)
        elif part == 2:
            status = update_phi(data, s, comp_sum, column)
        elif part == 3:
            status = update_eps(data, s)
        elif part == 4:
            update_precisions(data, s)
        elif part == 5:
            s.mu[0] += shift_move(s.theta, data, data.priors[MU_VAR], data.priors[LEVEL_VAR],
                                  s.mu[0], comp_sum, s.rng)
            shift_level_intercepts(data, s, comp_sum, column)
        elif part == 6:
            mode_moves(data, s, False)
        elif part == 7:
            status = coarse_shifts(data, s)
        elif part == 8:
            shift_errors(data, s, comp_sum, column)
        elif part == 9:
            field_scale_cycles(data, s, comp_sum, column, False)
        elif part == 10:
            error_scale_moves(data, s, False)
        else:
            status = sweep(data, s, comp_sum, column, False)
        if status != 0:
            return status
    return 0


def measure(cells: int, burn_in: int = BURN_IN, seed: int = SEED) -> dict:
    """Best milliseconds per call of each part and of the sweep at ``cells``, and the floor.

    Returns
    -------
    dict
        ``"ms"``: one float per part of :data:`PARTS`, then the whole sweep; ``"floor_ms"``:
        one ``exp`` pass over G·B; ``"cells"``, ``"combinations"``.
    """
    counts = scenario_counts(cells)
    data, s, _ = burnt_in_chain(counts, burn_in, seed)
    calls = max(1, CALLS // cells)
    best = [float("inf")] * (WHOLE_SWEEP + 1)
    for part in range(WHOLE_SWEEP + 1):  # compile every branch before timing
        _call_part(data, s, part, 1)
    for _ in range(REPEATS):
        for part in range(WHOLE_SWEEP + 1):
            start = time.perf_counter()
            if _call_part(data, s, part, calls):
                raise RuntimeError(f"{(PARTS + (('sweep', ''),))[part][0]}: the sampler failed")
            best[part] = min(best[part], (time.perf_counter() - start) / calls * 1e3)
    G, B = counts.counts.shape
    floor = min(exp_pass_seconds(G * B) for _ in range(3)) * 1e3
    return {"ms": best, "floor_ms": floor, "cells": G, "combinations": B}


def format_table(results: list[dict]) -> str:
    """Markdown table: each part's ms per call and passes, one pair of columns per lattice."""
    head = "| part | group |" + "".join(
        f" G = {r['cells']:,}: ms | passes |" for r in results)
    lines = [head, "| --- | --- |" + " ---: | ---: |" * len(results)]

    def row(name: str, group: str, values: list[float]) -> str:
        text = "".join(f" {v:.3f} | {v / r['floor_ms']:.1f} |"
                       for v, r in zip(values, results, strict=True))
        return f"| {name} | {group} |{text}"

    for k, (name, group) in enumerate(PARTS):
        lines.append(row(name, group, [r["ms"][k] for r in results]))
    for label, group in (("**the single-site conditionals**", "conditional"),
                         ("**the moves that mix**", "move")):
        lines.append(row(label, "sum", [sum(r["ms"][k] for k, (_, g) in enumerate(PARTS)
                                            if g == group) for r in results]))
    lines.append(row("**the whole sweep**", "measured", [r["ms"][WHOLE_SWEEP] for r in results]))
    floors = ", ".join(f"{r['floor_ms'] * 1e3:.1f} µs at G = {r['cells']:,} × B = "
                       f"{r['combinations']}" for r in results)
    lines += ["", f"One `exp` pass over G·B (the floor, this process): {floors}. One chain "
              f"after {BURN_IN:,} burn-in sweeps; each part called {CALLS:,} / G times per "
              f"round, best of {REPEATS} rounds. Issue 16's target: ≤ 20 passes a sweep at "
              "G = 6,400."]
    return "\n".join(lines)


def cells_list(text: str) -> tuple[int, ...]:
    """``--cells``: square numbers of cells separated by commas, e.g. ``1600,6400``."""
    return tuple(square_cells(item) for item in text.split(","))


def run(cells: tuple[int, ...] = CELLS) -> str:
    """Measure every lattice of ``cells`` and return the Markdown table."""
    return format_table([measure(c) for c in cells])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=cells_list, default=CELLS,
                        help="square numbers of cells, separated by commas")
    args = parser.parse_args(argv)
    print(run(args.cells))


if __name__ == "__main__":
    main()
