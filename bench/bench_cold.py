"""Cold start: seconds from ``import geosynth`` to the first sweep of a fit, fresh and warm cache.

Each measurement runs in a new Python process (:data:`PROBE`) with ``NUMBA_CACHE_DIR`` set to a
directory of its own: *cold* is an empty directory (what a fresh clone or install pays: every
numba kernel compiled), *warm* is the directory a cold run of the same kind has just filled (a
second run: kernels loaded from numba's cache). The process times, from its first statement:

* ``import geosynth`` (lazy: submodules load on first use);
* the data, with the imports it triggers (geosynth's modules, geopandas, ...): a 10 x 10
  lattice of the Nunes (2018) scenario (500 records, B = 12 combinations) through
  :func:`geosynth.prepare`, and for the noise-aware fit :func:`geosynth.dp.dp_counts` (ε = 1,
  importing :mod:`geosynth.dp` and OpenDP);
* the fit of 1 sweep (``n_iter=1, burn_in=0``, 2 chains, ``progress=True`` so the
  "compiling the sampler" notice is printed as a user sees it): compilation plus one sweep.

A third row per kind is the first fit after ``geosynth compile --kinds KIND`` filled an empty
cache directory, as ``make`` does once when it builds ``.venv`` (ahead-of-time compilation: the
install pays the compile, every fit loads the kernels); its label gives the seconds the
command took.

Kinds: ``exact`` (the default sampler of ``PaivaModel()``), ``noise-aware`` (the same fit of
ε-DP counts: latent counts redrawn each sweep) and ``chromatic`` (``parallel=True``). The total
is "seconds to the first sweep". The target of issue 16 is ≤ 15 s for an exact fit.

A second table lists the numba dispatchers of geosynth compiled by cold fits of those kinds
(in one process, empty cache): signatures per dispatcher (a function compiled for several
argument types is compiled several times), whether it is cached (``cache=True``), and the
compile seconds numba records per signature (``get_metadata()["timers"]``: the whole
compilation of that entry, callees included, so nested entries overlap and do not add up).

Run: ``python -m bench cold`` (``BENCH_COLD_KINDS=exact,noise-aware`` picks kinds;
``python -m bench.bench_cold --dispatchers`` prints the second table only).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = tuple(k for k in os.environ.get("BENCH_COLD_KINDS", "exact,noise-aware,chromatic")
              .split(",") if k)
TARGET_SECONDS = 15.0

PROBE = r"""
import time
t0 = time.perf_counter()
import json, sys, warnings
import geosynth
t_import = time.perf_counter() - t0
from geosynth.datasets import paiva_scenario
kind = sys.argv[1]
scenario = paiva_scenario(n=500, seed=1)
grid = geosynth.Grid.regular(scenario.bounds, shape=(10, 10), crs=scenario.crs)
counts = exact = geosynth.prepare(scenario.data, grid, attributes=["y", "x1", "x2"])
on_domain = geosynth.prepare(scenario.data, grid, attributes=["y", "x1", "x2"],
                             levels=counts.levels)  # what a DP release needs
if kind == "noise-aware":
    from geosynth.dp import dp_counts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counts = dp_counts(on_domain, 1.0, seed=1)
t_data = time.perf_counter() - t0
fit = geosynth.PaivaModel().fit(counts, n_iter=1, burn_in=0, thin=1, chains=2, seed=1,
                                progress=True, parallel=(kind == "chromatic"))
t_fit = time.perf_counter() - t0
out = {"import": t_import, "data": t_data - t_import, "fit": t_fit - t_data, "total": t_fit}
if len(sys.argv) > 2:  # fit the other kinds named, then list the compiled dispatchers
    for other in sys.argv[2].split(","):
        if other != kind:
            from geosynth.dp import dp_counts
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                data = dp_counts(on_domain, 1.0, seed=1) if other == "noise-aware" else exact
            geosynth.PaivaModel().fit(data, n_iter=1, burn_in=0, thin=1, chains=2, seed=1,
                                      progress=False, parallel=(other == "chromatic"))
    rows = []
    for name, module in sorted(sys.modules.items()):
        if not name.startswith("geosynth"):
            continue
        for attr, value in vars(module).items():
            sigs = getattr(value, "signatures", None)
            if not sigs or getattr(value, "__module__", None) != name:
                continue
            seconds = []
            for sig in sigs:
                timers = (value.get_metadata(sig) or {}).get("timers", {})  # None: loaded
                seconds.append(timers.get("compiler_lock", float("nan")))
            rows.append({"name": f"{name}.{attr}", "signatures": [str(s) for s in sigs],
                         "cached": bool(getattr(value.stats, "cache_path", None)),
                         "seconds": seconds})
    out["dispatchers"] = rows
print("JSON" + json.dumps(out))
"""


def measure(kind: str, cache_dir: str, dispatchers: tuple[str, ...] = ()) -> dict:
    """Run :data:`PROBE` for ``kind`` in a new process with ``NUMBA_CACHE_DIR=cache_dir``.

    Parameters
    ----------
    kind : {"exact", "noise-aware", "chromatic"}
        Which fit.
    cache_dir : str
        numba's cache directory for that process (empty: a cold start).
    dispatchers : tuple of str, optional
        Then also fit these kinds and list geosynth's compiled numba dispatchers.

    Returns
    -------
    dict
        Seconds of ``import``, ``data``, ``fit`` and ``total``; ``compiling`` (whether the
        fit said so on stderr); ``dispatchers`` when asked for.
    """
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-c", PROBE, kind] + ([",".join(dispatchers)] if dispatchers else [])
    proc = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"cold-start probe ({kind}) failed:\n{proc.stderr}")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("JSON"))
    result = json.loads(line[4:])
    result["compiling"] = "compiling the sampler" in proc.stderr
    return result


def compile_ahead(kind: str, cache_dir: str) -> float:
    """Run ``geosynth compile --kinds KIND`` into ``cache_dir`` (what ``make`` does at install)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", "from geosynth.cli import main; main()",
                           "compile", "--kinds",
                           "serial" if kind == "exact" else kind], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"geosynth compile ({kind}) failed:\n{proc.stderr}")
    return time.perf_counter() - start


def timing_table(kinds=KINDS) -> tuple[str, dict]:
    """Cold, warm and compiled-at-install rows for each kind, and each row's total."""
    rows = ["| fit | cache | import geosynth (s, lazy) | data, with the imports it needs (s) | "
            "fit of 1 sweep (s) | "
            "total: to the first sweep (s) | \"compiling\" shown |",
            "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    totals = {}

    def add(kind, state, r):
        totals[(kind, state)] = r["total"]
        rows.append(f"| {kind} | {state} | {r['import']:.1f} | {r['data']:.1f} | "
                    f"{r['fit']:.1f} | {r['total']:.1f} | "
                    f"{'yes' if r['compiling'] else 'no'} |")
        print(rows[-1], flush=True)

    for kind in kinds:
        with tempfile.TemporaryDirectory(prefix="numba-cold-") as cache:
            for state in ("cold", "warm"):
                add(kind, state, measure(kind, cache))
        with tempfile.TemporaryDirectory(prefix="numba-installed-") as cache:
            seconds = compile_ahead(kind, cache)
            add(kind, f"after `geosynth compile` ({seconds:.0f} s at install)",
                measure(kind, cache))
            totals[(kind, "install")] = seconds
    return "\n".join(rows), totals


def dispatcher_table(kinds=KINDS) -> str:
    """geosynth's numba dispatchers after a cold fit of each kind in one process."""
    with tempfile.TemporaryDirectory(prefix="numba-cold-") as cache:
        rows = measure(kinds[0], cache, dispatchers=kinds)["dispatchers"]
    seconds = {r["name"]: r["seconds"] for r in rows}
    lines = ["| dispatcher | signatures | cached | compile s per signature (cold) |",
             "| --- | ---: | --- | --- |"]
    for r in sorted(rows, key=lambda r: (-len(r["signatures"]), r["name"])):
        secs = ", ".join(f"{s:.1f}" for s in seconds.get(r["name"], []))
        lines.append(f"| `{r['name']}` | {len(r['signatures'])} | "
                     f"{'yes' if r['cached'] else '**no**'} | {secs} |")
    multi = [r for r in rows if len(r["signatures"]) > 1]
    detail = ["", "Dispatchers with more than one signature:", ""]
    for r in multi:
        detail.append(f"- `{r['name']}`: " + "; ".join(f"`{s}`" for s in r["signatures"]))
    return "\n".join(lines + (detail if multi else []))


def run() -> str:
    """Both tables as Markdown."""
    started = time.perf_counter()
    table, totals = timing_table()
    exact = totals.get(("exact", "cold"))
    installed = next((v for (k, state), v in totals.items()
                      if k == "exact" and state.startswith("after")), None)
    verdict = ("" if exact is None else
               f"\n\nExact fit, cold: {exact:.1f} s to the first sweep; after `geosynth "
               f"compile` at install ({totals[('exact', 'install')]:.0f} s, once): "
               f"{installed:.1f} s (target ≤ {TARGET_SECONDS:g} s: "
               f"{'ok' if installed <= TARGET_SECONDS else 'not met'}).")
    dispatchers = dispatcher_table()
    return (f"Each row a new process; cold = empty NUMBA_CACHE_DIR, warm = the one the cold run "
            f"filled, after `geosynth compile` = an empty one that `geosynth compile --kinds "
            f"KIND` (run by make when it builds .venv) filled. 10 x 10 lattice, B = 12, "
            f"2 chains, 1 sweep.\n\n{table}{verdict}\n\n"
            f"numba dispatchers of geosynth after cold fits of kinds {', '.join(KINDS)} in one "
            f"process (module-level only):\n\n{dispatchers}\n\nThis run took "
            f"{(time.perf_counter() - started) / 60:.1f} min.")


if __name__ == "__main__":
    print(dispatcher_table() if sys.argv[1:] == ["--dispatchers"] else run())
