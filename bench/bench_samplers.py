"""Draws per second of the numba ARS and slice kernels vs scipy's UNU.RAN TDR.

The setting is the one inside a Gibbs sweep: every draw comes from a *new* density of the family
``a·x − Σ_j w_j·exp(x) − q·(x − m)²/2`` (here a θ_i-like conditional with J = 12 terms), so each
draw pays for its own set-up. The peer is ``scipy.stats.sampling.TransformedDensityRejection``
constructed for each density (it needs pdf and dpdf), then asked for one value.

Run: ``python -m bench samplers``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.stats import sampling

from bench._timing import best_of
from geosynth.samplers import make_streams
from geosynth.samplers.ars import ars_draw, new_workspace
from geosynth.samplers.slice import slice_step

J = 12
TARGET_RATIO = 50.0


def _densities(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.poisson(3.0, n).astype(float)
    w = rng.uniform(0.05, 0.6, (n, J))
    m = rng.normal(0.0, 0.3, n)
    q = rng.uniform(1.0, 8.0, n)
    return a, w, m, q


@njit(cache=True)
def _ars_loop(a, w, z, m, q, state, work):
    total = 0.0
    x = 0.0
    for i in range(a.shape[0]):
        x, status = ars_draw(x, a[i], w[i], z, m[i], q[i], state, work)
        total += x
    return total


@njit(cache=True)
def _slice_loop(a, w, z, m, q, state):
    total = 0.0
    x = 0.0
    for i in range(a.shape[0]):
        x, status = slice_step(m[i], a[i], w[i], z, m[i], q[i], state)
        total += x
    return total


class _TDRDensity:
    def __init__(self, a, w, m, q):
        self.a, self.w_sum, self.m, self.q = a, float(w.sum()), m, q

    def pdf(self, x):
        return math.exp(self.a * x - self.w_sum * math.exp(x) - 0.5 * self.q * (x - self.m) ** 2)

    def dpdf(self, x):
        slope = self.a - self.w_sum * math.exp(x) - self.q * (x - self.m)
        return slope * self.pdf(x)



def run(n_numba: int = 200_000, n_scipy: int = 2_000) -> str:
    """Time the three samplers; return a Markdown table."""
    a, w, m, q = _densities(n_numba)
    z = np.ones(J)
    state = make_streams(1, 1)[0]
    work = new_workspace()
    _ars_loop(a[:10], w[:10], z, m[:10], q[:10], state, work)  # compile
    _slice_loop(a[:10], w[:10], z, m[:10], q[:10], state)
    ars_rate = n_numba / best_of(lambda: _ars_loop(a, w, z, m, q, state, work))[0]
    slice_rate = n_numba / best_of(lambda: _slice_loop(a, w, z, m, q, state))[0]

    rng = np.random.default_rng(2)

    def scipy_loop():
        for i in range(n_scipy):
            dist = _TDRDensity(a[i], w[i], m[i], q[i])
            sampling.TransformedDensityRejection(dist, mode=None, center=m[i],
                                                 random_state=rng).rvs(1)

    scipy_rate = n_scipy / best_of(scipy_loop, repeats=1)[0]
    rows = [
        ("geosynth ARS (numba)", ars_rate),
        ("geosynth slice step (numba)", slice_rate),
        ("scipy TransformedDensityRejection, set up per draw", scipy_rate),
    ]
    lines = [
        f"Densities: θ-like conditionals with J = {J} exponential terms, a new density per draw.",
        "",
        "| sampler | draws/s | ratio vs scipy TDR | target |",
        "| --- | ---: | ---: | --- |",
    ]
    for name, rate in rows:
        ratio = rate / scipy_rate
        target = f"≥ {TARGET_RATIO:.0f}× ({'ok' if ratio >= TARGET_RATIO else 'MISSED'})"
        if name.startswith("scipy"):
            target = "peer"
        lines.append(f"| {name} | {rate:,.0f} | {ratio:,.1f}× | {target} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
