"""Speed of Charest's posterior (geosynth.dp.charest_posterior) against NumPy/SciPy peers.

Two models of Marcolin (2018): the binary model of Charest's scenario (n = ñ = 100, one table
x̃ = 35, ε = 2 so α = 100/(e² − 1), uniform prior) and the SUSEP model of ch. 4 (k = 8 age ×
sex cells, n = ñ = 107, α = 39.37, γ = 0.5, one synthetic table drawn once with a fixed seed).
Each run is one chain of 30,000 iterations with a burn-in of 10,000 (20,000 kept draws; the
thesis' ch. 3-4 settings), best of 3 after a warm-up that compiles or loads the numba kernels.
"draws/s" counts kept draws over the wall time of the whole call (burn-in included);
"ESS/s" divides arviz's bulk effective sample size of ``p_1`` instead.

The peers are straightforward NumPy/SciPy implementations of the *same* samplers written in
this file: vectorised where NumPy allows it (the enumerated conditional of x in the Gibbs step,
the exact sampler's table and searches over all draws at once), a Python loop over iterations
where the algorithm is sequential (Metropolis steps). They are timed on shorter runs and scaled
linearly to 30,000 iterations. The thesis itself used R (Table 3.4: 2.22 s per chain of 2,000
iterations for its Gibbs sampler, 1.98 s for MH-L, 0.75 s for JAGS, Intel i5 4th gen; hours for
the 1000-release studies), which we do not run.

The replication rows time the thesis-size studies: 1000 releases × 30,000 iterations of the
SUSEP model (ch. 4), and 1000 releases × 2,000 iterations of the binary model (ch. 3), measured
on a subset of releases and extrapolated; plus the exact moments (no sampling) of 1000 releases,
measured in full.

Run: ``python -m bench dp``.
"""

from __future__ import annotations

import math
import time

import arviz
import numpy as np
from scipy.special import gammaln, logsumexp

from bench._timing import best_of
from geosynth.dp.inference import charest_moments, charest_posterior

N_ITER, BURN_IN = 30_000, 10_000
BINARY = dict(synthetic_counts=[35], n=100, n_synth=100, alpha=100 / math.expm1(2.0), prior=1.0)
SUSEP_COUNTS = np.array([21, 6, 24, 2, 19, 10, 21, 4])
SUSEP_ALPHA = 39.37


def _susep_table(seed: int = 2018) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.multinomial(107, rng.dirichlet(SUSEP_ALPHA + SUSEP_COUNTS))[None, :]


# ---------------------------------------------------------------------------- NumPy peers
def _collapsed_table(tables, n, alpha, prior):
    v = np.arange(n + 1)[None, :]
    a = alpha[:, None]
    table = gammaln(prior[:, None] + v) - gammaln(v + 1.0) - len(tables) * gammaln(a + v)
    for t in tables:
        table = table + gammaln(a + v + t[:, None])
    return table


def peer_exact(tables, n, alpha, prior, n_draws, rng):
    """Exact sampler: scipy log-space convolutions, then vectorised backward sampling."""
    table = _collapsed_table(tables, n, alpha, prior)
    k = table.shape[0]
    s = np.arange(n + 1)[:, None]
    v = np.arange(n + 1)[None, :]
    valid = v <= s
    forward = np.full((k + 1, n + 1), -np.inf)
    forward[0, 0] = 0.0
    for j in range(k):
        terms = np.where(valid, table[j][v] + forward[j][np.where(valid, s - v, 0)], -np.inf)
        forward[j + 1] = logsumexp(terms, axis=1)
    x = np.empty((n_draws, k), dtype=np.int64)
    left = np.full(n_draws, n)
    for j in range(k - 1, 0, -1):
        log_w = np.where(valid, table[j][v] + forward[j][np.where(valid, s - v, 0)], -np.inf)
        cdf = np.cumsum(np.exp(log_w - forward[j + 1][:, None]), axis=1)  # (s, v)
        u = rng.random(n_draws) * cdf[left, left]
        x[:, j] = np.minimum((cdf[left] < u[:, None]).sum(axis=1), left)
        left = left - x[:, j]
    x[:, 0] = left
    return x, _dirichlets(rng, prior + x)


def _dirichlets(rng, shapes):
    g = rng.standard_gamma(shapes)
    return g / g.sum(axis=1, keepdims=True)


def peer_binary_gibbs(tables, n, alpha, prior, n_iter, rng):
    """Collapsed Gibbs of the binary model: p | x Beta, x | p enumerated with NumPy."""
    v = np.arange(n + 1)
    release = gammaln(alpha[0] + v[:, None] + tables[:, 0]).sum(1) - len(tables) * gammaln(
        alpha[0] + v
    )
    release += gammaln(alpha[1] + (n - v)[:, None] + tables[:, 1]).sum(1) - len(tables) * gammaln(
        alpha[1] + n - v
    )
    base = gammaln(n + 1.0) - gammaln(v + 1.0) - gammaln(n - v + 1.0) + release
    x, out = n // 2, np.empty(n_iter)
    for t in range(n_iter):
        p = rng.beta(prior[0] + x, prior[1] + n - x)
        log_w = base + v * math.log(p) + (n - v) * math.log1p(-p)
        w = np.exp(log_w - log_w.max())
        x = int(np.searchsorted(np.cumsum(w), rng.random() * w.sum()))
        out[t] = p
    return out


def peer_pair_mh(tables, n, alpha, prior, n_iter, rng):
    """Collapsed pair-move Metropolis on the compositions of n, a Python loop."""
    table = _collapsed_table(tables, n, alpha, prior)
    k = table.shape[0]
    x = np.full(k, n // k)
    x[0] += n - x.sum()
    shift = max(1, n // (4 * k))
    out = np.empty((n_iter, k))
    for t in range(n_iter):
        for _ in range(k):
            i = rng.integers(k)
            j = rng.integers(k - 1)
            j += j >= i
            s = rng.integers(1, shift + 1)
            if x[i] >= s:
                log_ratio = (
                    table[i, x[i] - s] - table[i, x[i]] + table[j, x[j] + s] - table[j, x[j]]
                )
                if math.log(rng.random()) < log_ratio:
                    x[i] -= s
                    x[j] += s
        out[t] = rng.dirichlet(prior + x)
    return out


def peer_binary_mhl(tables, n, n_synth, alpha, prior, n_iter, rng, half_width=11):
    """Marcolin's Algorithm 4 (p, p̃ explicit; window Metropolis step for x), a Python loop."""
    successes = tables[:, 0]
    n_tables = len(successes)

    def log_target(v, log_p, log_q, sum_pt, sum_qt):
        return (
            -math.lgamma(v + 1)
            - math.lgamma(n - v + 1)
            + v * (log_p + sum_pt)
            + (n - v) * (log_q + sum_qt)
            - n_tables * (math.lgamma(alpha[0] + v) + math.lgamma(alpha[1] + n - v))
        )

    x, out = n // 2, np.empty(n_iter)
    for t in range(n_iter):
        p = rng.beta(prior[0] + x, prior[1] + n - x)
        p_tilde = rng.beta(alpha[0] + successes + x, alpha[1] + n_synth - successes + n - x)
        sum_pt, sum_qt = np.log(p_tilde).sum(), np.log1p(-p_tilde).sum()
        candidate = x + rng.integers(-half_width, half_width + 1)
        if 0 <= candidate <= n and candidate != x:
            log_ratio = log_target(candidate, math.log(p), math.log1p(-p), sum_pt, sum_qt)
            log_ratio -= log_target(x, math.log(p), math.log1p(-p), sum_pt, sum_qt)
            if math.log(rng.random()) < log_ratio:
                x = candidate
        out[t] = p
    return out


def peer_adaptive(tables, n, alpha, prior, n_iter, burn_in, rng, adapt_every=500):
    """Marcolin's Algorithm 6 (independence proposal Multinomial(n, β)), a Python loop."""
    k = tables.shape[1]
    x = np.full(k, n // k)
    x[0] += n - x.sum()
    beta = np.full(k, 1.0 / k)
    recent = []
    out = np.empty((n_iter, k))
    for t in range(n_iter):
        p = rng.dirichlet(prior + x)
        log_pt = sum(np.log(rng.dirichlet(alpha + x + table)) for table in tables)
        if t < burn_in:
            recent.append(p)
            if len(recent) == adapt_every:
                beta = np.mean(recent, axis=0)
                recent = []
        candidate = rng.multinomial(n, beta)
        weight = np.log(p) + log_pt - np.log(beta)
        log_ratio = (candidate - x) @ weight - len(tables) * (
            gammaln(alpha + candidate) - gammaln(alpha + x)
        ).sum()
        if math.log(rng.random()) < log_ratio:
            x = candidate
        out[t] = p
    return out


# ---------------------------------------------------------------------------- timing helpers
def _ess(draws: np.ndarray) -> float:
    return float(arviz.ess(np.ascontiguousarray(draws[None, :])))


def _ours(args: dict, method: str, seed: int = 1):
    def call():
        return charest_posterior(**args, method=method, n_iter=N_ITER, burn_in=BURN_IN, seed=seed)

    seconds, post = best_of(call)
    return seconds, post


def _peer_seconds(fn, iterations: int, repeats: int = 2) -> float:
    """Seconds of ``fn(iterations)`` scaled to N_ITER iterations."""
    seconds = best_of(lambda: fn(iterations), repeats=repeats)[0]
    return seconds * N_ITER / iterations


def run() -> str:
    """Time the samplers and the thesis-size replications; return a Markdown table."""
    kept = N_ITER - BURN_IN
    susep = dict(synthetic_counts=_susep_table(), n=107, n_synth=107, alpha=SUSEP_ALPHA, prior=0.5)
    for args in (BINARY, susep):  # compile / load every kernel
        for method in ("exact", "mh", "gibbs", "mhl", "adaptive"):
            if method in ("gibbs", "mhl") and args is susep:
                continue
            charest_posterior(**args, method=method, n_iter=50, burn_in=10, seed=0)
    rng = np.random.default_rng(0)
    bin_tables = np.array([[35, 65]])
    bin_alpha = np.full(2, BINARY["alpha"])
    bin_prior = np.ones(2)
    sus_tables = susep["synthetic_counts"]
    sus_alpha = np.full(8, SUSEP_ALPHA)
    sus_prior = np.full(8, 0.5)
    peers = {
        ("binary", "exact"): lambda m: peer_exact(bin_tables, 100, bin_alpha, bin_prior, m, rng),
        ("binary", "gibbs"): lambda m: peer_binary_gibbs(
            bin_tables, 100, bin_alpha, bin_prior, m, rng
        ),
        ("binary", "mhl"): lambda m: peer_binary_mhl(
            bin_tables, 100, 100, bin_alpha, bin_prior, m, rng
        ),
        ("binary", "mh"): lambda m: peer_pair_mh(bin_tables, 100, bin_alpha, bin_prior, m, rng),
        ("SUSEP", "exact"): lambda m: peer_exact(sus_tables, 107, sus_alpha, sus_prior, m, rng),
        ("SUSEP", "mh"): lambda m: peer_pair_mh(sus_tables, 107, sus_alpha, sus_prior, m, rng),
        ("SUSEP", "adaptive"): lambda m: peer_adaptive(
            sus_tables, 107, sus_alpha, sus_prior, m, m // 3, rng
        ),
    }
    peer_iterations = {"exact": kept, "gibbs": 3000, "mhl": 3000, "mh": 1500, "adaptive": 1500}
    rows = []
    for model, args, methods in (
        ("binary", BINARY, ("exact", "gibbs", "mhl", "mh")),
        ("SUSEP", susep, ("exact", "mh", "adaptive")),
    ):
        for method in methods:
            seconds, post = _ours(args, method)
            ess = _ess(post.draws[:, 0])
            peer = peers.get((model, method))
            if peer is None:
                peer_text, ratio_text = "—", "—"
            else:
                m = peer_iterations[method]
                if method == "exact":  # the peer draws ``kept`` independent values directly
                    peer_seconds = best_of(lambda peer=peer, m=m: peer(m), repeats=2)[0]
                else:
                    peer_seconds = _peer_seconds(peer, m)
                peer_text = f"{kept / peer_seconds:,.0f}"
                ratio_text = f"{peer_seconds / seconds:,.0f}×"
            rate = "" if post.acceptance_rate is None else f"{post.acceptance_rate:.2f}"
            rows.append(
                (
                    f"{model}, {method}",
                    f"{kept / seconds:,.0f}",
                    f"{ess / seconds:,.0f}",
                    rate,
                    peer_text,
                    ratio_text,
                )
            )

    # thesis-size replications
    releases = 1000
    rep_rng = np.random.default_rng(7)
    susep_tables = [
        rep_rng.multinomial(107, rep_rng.dirichlet(SUSEP_ALPHA + SUSEP_COUNTS))[None, :]
        for _ in range(releases)
    ]
    start = time.perf_counter()
    for table in susep_tables:
        charest_moments(table, 107, 107, SUSEP_ALPHA, 0.5)
    moments_seconds = time.perf_counter() - start
    subset = 20
    replication = []
    for method in ("exact", "mh"):
        start = time.perf_counter()
        for r, table in enumerate(susep_tables[:subset]):
            charest_posterior(
                table,
                107,
                107,
                SUSEP_ALPHA,
                0.5,
                method=method,
                n_iter=N_ITER,
                burn_in=BURN_IN,
                seed=r,
            )
        per_release = (time.perf_counter() - start) / subset
        replication.append((f"SUSEP 1000 × 30,000 it., {method}", per_release * releases))
    peer_mh = _peer_seconds(
        lambda m: peer_pair_mh(sus_tables, 107, sus_alpha, sus_prior, m, rng), 1500, repeats=1
    )
    replication.append(("SUSEP 1000 × 30,000 it., NumPy peer of mh", peer_mh * releases))
    replication.append(("SUSEP 1000 releases, exact moments (no sampling)", moments_seconds))
    bin_tables_rep = rep_rng.binomial(
        100, rep_rng.beta(BINARY["alpha"] + 30, BINARY["alpha"] + 70, size=releases)
    )
    for method in ("gibbs", "mhl"):
        start = time.perf_counter()
        for r, s in enumerate(bin_tables_rep[:200]):
            charest_posterior(
                [s], 100, 100, BINARY["alpha"], method=method, n_iter=2000, burn_in=1000, seed=r
            )
        per_release = (time.perf_counter() - start) / 200
        replication.append((f"binary 1000 × 2,000 it., {method}", per_release * releases))
    peer_gibbs = best_of(
        lambda: peer_binary_gibbs(bin_tables, 100, bin_alpha, bin_prior, 2000, rng), repeats=2
    )[0]
    replication.append(("binary 1000 × 2,000 it., NumPy peer of gibbs", peer_gibbs * releases))

    lines = [
        f"One chain of {N_ITER:,} iterations (burn-in {BURN_IN:,}, {kept:,} draws kept); "
        "peers are NumPy/SciPy versions of the same samplers (the thesis used R: 2.22 s per "
        "2,000-iteration Gibbs chain, hours per 1000-release study).",
        "",
        "| model, method | draws/s | ESS/s (p_1) | acceptance | NumPy peer draws/s | "
        "ratio (draws/s: ours ÷ peer) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append("| " + " | ".join(row) + " |")
    lines += [
        "",
        "| thesis-size replication | seconds (extrapolated from a subset where noted) |",
        "| --- | ---: |",
    ]
    for name, seconds in replication:
        note = "" if "moments" in name else " (extrapolated)"
        lines.append(f"| {name} | {seconds:,.1f}{note} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
