"""Scaling of the Gibbs engine in G cells x B combinations: seconds per sweep, peak RSS, floor.

Sizes: G in {100, 400, 1,600, 6,400, 25,600, 102,400} (square lattices) x B in {12, 48}.
B = 12: the Nunes (2018) scenario, 5 records per cell, attributes y, x1, x2 (P = 4
non-baseline levels). B = 48: the same plus an attribute ``x4`` with 4 equiprobable levels
drawn independently at random (seed 48), P = 7.

Each size runs in its own subprocess (one chain, ``n_jobs=1``, one core): it builds the data,
warms the numba cache on a tiny fit, resets the peak-RSS counter (``echo 5 >
/proc/self/clear_refs``), times one ``fit`` of ``n_iter`` sweeps (half burn-in, one draw kept)
and reads VmHWM. "peak RSS fit" is the high-water mark during the fit (the reset sets it to
the current RSS, so it includes the ~345 MiB the interpreter, numba, geopandas and the data
already hold); "peak RSS all" is the peak of the whole process, data generation included.

Floor. Counting, in :func:`geosynth.model.sweep.sweep`, the passes over the (i, b) elements
of η/exp(η)/ε per sweep, with K̄ = mean number of non-baseline levels per combination
(Σ_b #{k: level_k(b) ≠ baseline} / B; 5/3 for B = 12, 29/12 for B = 48):

- once each (8): μ update, θ updates, ε updates, per-cell shift (θ_i, ε_i·), shift (μ, ε),
  τ_ε Gamma draw (Σ ε²), scale move of (θ, τ_θ), scale move of (ε, τ_ε);
- K̄ times each (5): α_p updates, φ_·p updates, per-cell shifts (φ_ip, ε_ib), shift (α_p, ε),
  scale moves of (φ_·p, τ_φp);
- not counted (touch G or P values only): the shift moves (μ, θ) and (α_p, φ_·p), the τ_θ and
  τ_φ Gamma draws, and the recorded draw (thinned away here).

P = 8 + 5·K̄ (16.3 for B = 12, 20.1 for B = 48). The floor is the time of one numba pass
computing exp over P·G·B doubles (``round(P)`` passes over a G·B array); "floor fraction" =
floor / seconds per sweep. Most of these passes do less than an exp per element (μ, α and the
shifts add), and the ARS draws of ε, θ and φ do much more, so the floor is a yardstick, not a
bound.

Synthesis rows: points per second of :func:`geosynth.synthesize` (m = 1 release) on the
B = 12 data from a short fit, at the largest lattices.

Memory at the default fit (issue 9 target: G = 102,400 cells, B = 12 combinations under 8 GB).
The defaults (8,000 sweeps, 2,000 burn-in, thin 6, 2 chains, ``max_bytes`` 4 GiB) keep 1,000
draws per chain; η of every draw would take 9.2 GiB, so ``eta_draws="auto"`` stores η for
fewer, evenly spaced draws (:func:`geosynth.model.storage.plan_storage`; the table prints the
plan). 6,000 sweeps at ~0.5 s each are too long for a benchmark, so the child process runs the
fit's own chain runner with that storage plan for ``MEMORY_SWEEPS`` sweeps per chain (2 chains
in 2 threads: a real allocation and real sweeps, writing 2 draws a chain), each chain first
writing every row of the storage arrays the runner allocated for it, as 1,000 draws would
(zero-filled pages are not resident until written), so the storage is resident while the
chains sweep. "peak RSS all" is the process high-water mark (VmHWM), data generation included;
"peak RSS fit" is measured from a reset after the data are built (so it includes them too).

Run: ``python -m bench scaling`` (about 4 minutes); ``python -m bench.bench_scaling --memory``
runs only the memory row (about a minute).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from numba import njit

SIDES = tuple(int(s) for s in os.environ.get("BENCH_SCALING_SIDES",
                                             "10,20,40,80,160,320").split(","))
COMBOS = (12, 48)
SYNTH_SIDES = (80, 320)
MEMORY_SIDE = 320  # G = 102,400
MEMORY_SWEEPS = 12  # per chain: 2 draws at thin 6
MEMORY_TARGET = 8e9  # bytes (issue 9: "stays under 8 GB")
WORK_PER_FIT = 2e7  # target (i, b) element-sweeps per timed fit
ROOT = Path(__file__).resolve().parent.parent


def _data(side: int, B: int):
    from geosynth import Grid, prepare
    from geosynth.datasets import paiva_scenario

    scenario = paiva_scenario(n=5 * side * side, seed=2014)
    gdf = scenario.data
    attributes = ["y", "x1", "x2"]
    if B == 48:
        gdf = gdf.copy()
        gdf["x4"] = np.random.default_rng(48).integers(1, 5, len(gdf))
        attributes.append("x4")
    grid = Grid.regular(scenario.bounds, shape=(side, side), crs=scenario.crs)
    return gdf, prepare(gdf, grid, attributes=attributes)


@njit(cache=True)
def _exp_passes(x, passes):
    total = 0.0
    for _ in range(passes):
        for j in range(x.shape[0]):
            total += math.exp(x[j])
    return total


def _vm_hwm_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return -1


def _reset_hwm() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _child(side: int, B: int) -> dict:
    from geosynth import PaivaModel
    from geosynth.model.fit import build_model_data
    from geosynth.model.state import model_shape

    warnings.filterwarnings("ignore")
    model = PaivaModel()
    _, tiny = _data(4, B)
    model.fit(tiny, n_iter=20, burn_in=10, chains=1, n_jobs=1, seed=0, progress=False)
    gdf, counts = _data(side, B)
    data, _, _ = build_model_data(counts, model)
    G, B_real, _ = model_shape(data)
    k_bar = float((data.combo_levels >= 0).sum()) / B_real
    p_blocks = 8.0 + 5.0 * k_bar
    n_iter = int(min(2000, max(10, WORK_PER_FIT / (G * B_real))))
    burn = n_iter // 2
    peak_all = _vm_hwm_kib()
    reset = _reset_hwm()
    start = time.perf_counter()
    model.fit(counts, n_iter=n_iter, burn_in=burn, thin=n_iter - burn, chains=1, n_jobs=1,
              seed=1, progress=False)
    seconds = time.perf_counter() - start
    peak_fit = _vm_hwm_kib() if reset else -1
    peak_all = max(peak_all, _vm_hwm_kib())
    x = np.random.default_rng(0).normal(-1.0, 1.0, G * B_real)
    passes = max(1, round(p_blocks))
    _exp_passes(x[:10], 1)
    floor = min(_timed(lambda: _exp_passes(x, passes)) for _ in range(3))
    return {"G": G, "B": B_real, "n_iter": n_iter, "sweep": seconds / n_iter, "P": p_blocks,
            "floor": floor, "peak_fit_mib": peak_fit / 1024, "peak_all_mib": peak_all / 1024}


def _synth_child(side: int) -> dict:
    import geosynth
    from geosynth import PaivaModel

    warnings.filterwarnings("ignore")
    gdf, counts = _data(side, 12)
    fit = PaivaModel().fit(counts, n_iter=40, burn_in=20, thin=20, chains=1, n_jobs=1, seed=1,
                           progress=False)
    small_gdf, small = _data(4, 12)
    small_fit = PaivaModel().fit(small, n_iter=20, burn_in=10, thin=10, chains=1, seed=0,
                                 progress=False)
    geosynth.synthesize(small_fit, small_gdf, m=1, seed=0)  # warm-up
    seconds = min(_timed(lambda: geosynth.synthesize(fit, gdf, m=1, seed=2)) for _ in range(2))
    return {"G": side * side, "n": len(gdf), "seconds": seconds}


def _memory_child(side: int) -> dict:
    """Default-plan storage of a 2-chain fit at ``side``², a few real sweeps, peak RSS."""
    from geosynth import PaivaModel
    from geosynth.model.fit import build_model_data
    from geosynth.model.runner import ChainRunner
    from geosynth.model.state import model_shape
    from geosynth.model.storage import DEFAULT_MAX_BYTES, plan_model_storage
    from geosynth.samplers.rng import make_streams

    class FilledRunner(ChainRunner):
        """Writes every row of its chain's storage first, as a chain of 1,000 draws would."""

        written = 0

        def run_chain(self, chain, stream, out, kept):
            for name in ("scalars", "theta", "beta", "eta", "latent_totals"):
                out[name][chain].fill(1)
                FilledRunner.written += out[name][chain].nbytes
            super().run_chain(chain, stream, out, kept)

    warnings.filterwarnings("ignore")
    model = PaivaModel()
    _, tiny = _data(4, 12)
    model.fit(tiny, n_iter=20, burn_in=10, chains=1, n_jobs=1, seed=0, progress=False)
    _, counts = _data(side, 12)
    data, tables, names = build_model_data(counts, model)
    G, B, _ = model_shape(data)
    chains, n_iter, burn_in, thin = 2, 8000, 2000, 6  # the fit defaults
    plan = plan_model_storage(data, names, n_iter=n_iter, burn_in=burn_in, thin=thin,
                              chains=chains, noise=False, eta_draws="auto",
                              max_bytes=DEFAULT_MAX_BYTES)
    peak_all = _vm_hwm_kib()
    reset = _reset_hwm()
    start = time.perf_counter()
    runner = FilledRunner(data, tables, names, MEMORY_SWEEPS, 0, thin, plan, progress=False)
    draws = runner.run_all(make_streams(1, chains), n_jobs=chains)
    seconds = time.perf_counter() - start
    assert draws["scalars"].shape[:2] == (chains, MEMORY_SWEEPS // thin)
    peak_fit = _vm_hwm_kib() if reset else -1
    peak_all = max(peak_all, _vm_hwm_kib())
    return {"G": G, "B": B, "chains": chains, "n_keep": plan.n_keep,
            "eta_draws": int(plan.eta_index.size), "plan_gib": plan.n_bytes / 2**30,
            "written_gib": FilledRunner.written / 2**30,
            "every_gib": 4 * chains * plan.n_keep * G * B / 2**30, "sweeps": MEMORY_SWEEPS,
            "seconds": seconds, "peak_fit_gib": peak_fit / 2**20,
            "peak_all_gib": peak_all / 2**20}


def memory_table() -> list[str]:
    """The memory row at G = 102,400, B = 12 (a subprocess), as Markdown lines."""
    lines = [
        "| G | B | chains x draws kept | η of every draw (GiB) | η draws stored per chain "
        "(eta_draws='auto', max_bytes 4 GiB) | planned storage (GiB) | storage written (GiB) "
        "| peak RSS fit (GB) | peak RSS all (GB) | under 8 GB |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: |",
    ]
    r = _spawn(["--memory", str(MEMORY_SIDE)], timeout=900)
    if r is None:
        return lines + [f"| {MEMORY_SIDE ** 2:,} | 12 | | failed or timed out | | | | | | |"]
    peak = r["peak_all_gib"] * 2**30
    lines.append(
        f"| {r['G']:,} | {r['B']} | {r['chains']} x {r['n_keep']:,} | {r['every_gib']:.1f} | "
        f"{r['eta_draws']:,} | {r['plan_gib']:.2f} | {r['written_gib']:.2f} | "
        f"{r['peak_fit_gib'] * 2**30 / 1e9:.2f} | {peak / 1e9:.2f} | "
        f"{'yes' if peak < MEMORY_TARGET else 'NO'} |"
    )
    return lines


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _spawn(args: list[str], timeout: float = 600) -> dict | None:
    try:
        proc = subprocess.run([sys.executable, "-m", "bench.bench_scaling", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout, check=True)
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as error:
        print(f"bench_scaling {args}: {type(error).__name__}", file=sys.stderr, flush=True)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run() -> str:
    """Run every size in a subprocess; return Markdown tables."""
    lines = [
        "| G | B | P | sweeps timed | ms per sweep | ns per sweep per (G·B) | floor ms "
        "(exp over P·G·B) | floor fraction | peak RSS fit (MiB) | peak RSS all (MiB) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for B in COMBOS:
        for side in SIDES:
            r = _spawn(["--child", str(side), str(B)])
            if r is None:
                lines.append(f"| {side * side:,} | {B} | – | failed or timed out | | | | | | |")
                continue
            lines.append(
                f"| {r['G']:,} | {r['B']} | {r['P']:.1f} | {r['n_iter']:,} | "
                f"{r['sweep'] * 1e3:,.2f} | {r['sweep'] / (r['G'] * r['B']) * 1e9:.1f} | "
                f"{r['floor'] * 1e3:,.2f} | {r['floor'] / r['sweep']:.3f} | "
                f"{r['peak_fit_mib']:,.0f} | {r['peak_all_mib']:,.0f} |"
            )
            print(lines[-1], flush=True)
    lines += ["", "| G | records n | synthesize seconds (m = 1) | points/s |",
              "| ---: | ---: | ---: | ---: |"]
    for side in SYNTH_SIDES:
        r = _spawn(["--synth", str(side)])
        if r is None:
            lines.append(f"| {side * side:,} | | failed or timed out | |")
            continue
        lines.append(f"| {r['G']:,} | {r['n']:,} | {r['seconds']:.2f} | "
                     f"{r['n'] / r['seconds']:,.0f} |")
        print(lines[-1], flush=True)
    lines += ["", *memory_table()]
    print(lines[-1], flush=True)
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(_child(int(sys.argv[2]), int(sys.argv[3]))))
    elif len(sys.argv) == 3 and sys.argv[1] == "--synth":
        print(json.dumps(_synth_child(int(sys.argv[2]))))
    elif len(sys.argv) == 3 and sys.argv[1] == "--memory":
        print(json.dumps(_memory_child(int(sys.argv[2]))))
    elif len(sys.argv) == 2 and sys.argv[1] == "--memory":
        print("\n".join(memory_table()))
    else:
        print(run())
