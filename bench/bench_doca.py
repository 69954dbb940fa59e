"""Records per second of DOCA (geosynth.sdc.Doca) on one core, 2-million-record streams.

The stream is :func:`geosynth.sdc.doca.simulate_skewed_stream` (the paper's BackBlaze shape);
the bivariate stream pairs two independent such columns. Parameters are the paper's (Leal, Vidal
& Machado 2018, §4): ε = 1, Δf = 1.5·(max − min) per attribute, δ = 1000, β = 50, m = 100.
``fit_transform`` times the numba kernel plus the scatter into input order (best of 3, after a
warm-up that compiles or loads the kernels); ``process`` also pays for yielding one Python
``(index, value)`` pair per record. numba runs the kernel single-threaded.

Run: ``python -m bench doca``.
"""

from __future__ import annotations

import warnings

import numpy as np

from bench._timing import best_of
from geosynth.errors import PrivacyLeakWarning
from geosynth.sdc import Doca
from geosynth.sdc.doca import simulate_skewed_stream

TARGET = 1_000_000  # records/s on one core (issue)



def _doca(sensitivity):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return Doca(1.0, sensitivity, delay=1000, max_clusters=50, tau_window=100, seed=1)


def run(n: int = 2_000_000) -> str:
    """Time DOCA on univariate and bivariate streams; return a Markdown table."""
    x = simulate_skewed_stream(n, seed=1)
    xy = np.column_stack([x, simulate_skewed_stream(n, seed=2)])
    sens_x = 1.5 * (x.max() - x.min())
    sens_xy = 1.5 * (xy.max(axis=0) - xy.min(axis=0))
    _doca(sens_x).fit_transform(x[:5000])  # compile / load the cache
    _doca(sens_xy).fit_transform(xy[:5000])

    def consume(doca, data):
        for _ in doca.process(data, chunk_size=65_536, flush=True):
            pass

    rows = []
    for label, data, sens in (("univariate", x, sens_x), ("bivariate (x, y)", xy, sens_xy)):
        doca = _doca(sens)
        seconds = best_of(lambda: doca.fit_transform(data))[0]  # noqa: B023
        rows.append((f"fit_transform, {label}", n / seconds, doca.n_noise_draws, True))
    seconds = best_of(lambda: consume(_doca(sens_x), x), repeats=1)[0]
    rows.append(("process() generator, univariate, incl. Python yield", n / seconds, None, False))
    lines = [
        f"Stream: {n:,} records (simulated BackBlaze shape), δ = 1000, β = 50, m = 100, ε = 1.",
        "",
        "| task | records/s | clusters published | target |",
        "| --- | ---: | ---: | --- |",
    ]
    for name, rate, clusters, targeted in rows:
        target = f"≥ {TARGET:,} ({'ok' if rate >= TARGET else 'MISSED'})" if targeted else "—"
        shown = f"{clusters:,}" if clusters is not None else "—"
        lines.append(f"| {name} | {rate:,.0f} | {shown} | {target} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
