"""Greedy closest-pair matching (Nunes 2018, Algorithm 1): :func:`geosynth.metrics.greedy_match`.

Target (from the metrics issue): 10^6 uniform points per side in under a minute. The rows time
n ∈ {10^4, 10^5, 10^6} per side, uniform on the unit square, plus two harder layouts at 10^5
synthetic points (a clustered pattern, and 3 x 10^5 originals against synthetic points confined
to a quarter of the square, where most originals are never matched). The last row times the
literal O(n^3) matrix algorithm at n = 1000 and checks that both give the same matching.

Run: ``python -m bench matching`` (records to RESULTS.md), ``python -m bench.bench_matching`` or
``python bench/bench_matching.py`` (print only).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._timing import best_of
from geosynth.metrics import greedy_match  # noqa: E402

SIZES = (10_000, 100_000, 1_000_000)
TARGET_N = 1_000_000
TARGET_S = 60.0



def _matrix_algorithm(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Literal Algorithm 1 on the distance matrix (ties by row-major argmin)."""
    dx = a[:, None, 0] - b[None, :, 0]
    dy = a[:, None, 1] - b[None, :, 1]
    matrix = np.sqrt(dx * dx + dy * dy)
    ia, ib = [], []
    for _ in range(min(len(a), len(b))):
        i, j = np.unravel_index(np.argmin(matrix), matrix.shape)
        ia.append(i)
        ib.append(j)
        matrix[i, :] = np.inf
        matrix[:, j] = np.inf
    return np.array(ia), np.array(ib)


def run(sizes: tuple[int, ...] = SIZES) -> str:
    """Time greedy matching at several sizes; return a Markdown table."""
    rng = np.random.default_rng(20180101)
    greedy_match(rng.random((100, 2)), rng.random((100, 2)))  # compile / load the numba cache
    rows = []
    for n in sizes:
        a, b = rng.random((n, 2)), rng.random((n, 2))
        seconds, m = best_of(lambda a=a, b=b: greedy_match(a, b), 1 if n >= 10**6 else 3)
        target = f"< {TARGET_S:g} s" if n == TARGET_N else ""
        ok = ("ok" if seconds < TARGET_S else "MISSED") if n == TARGET_N else ""
        detail = f"mean distance {m.distances.mean() * math.sqrt(n):.3f}/√n"
        rows.append((f"uniform, {n:,} per side", detail, seconds, target, ok))

    n = 100_000
    centres = rng.random((100, 2))
    a = centres[rng.integers(0, 100, n)] + rng.normal(0, 0.01, (n, 2))
    b = centres[rng.integers(0, 100, n)] + rng.normal(0, 0.01, (n, 2))
    seconds, _ = best_of(lambda: greedy_match(a, b), 3)
    rows.append((f"clustered (100 clusters), {n:,} per side", "", seconds, "", ""))
    a, b = rng.random((3 * n, 2)), 0.5 * rng.random((n, 2))
    seconds, _ = best_of(lambda: greedy_match(a, b), 3)
    rows.append((f"{3 * n:,} originals vs {n:,} synthetic in one quarter", "", seconds, "", ""))

    small = 1000
    a, b = rng.random((small, 2)), rng.random((small, 2))
    fast_s, m = best_of(lambda: greedy_match(a, b), 3)
    slow_s, (ia, ib) = best_of(lambda: _matrix_algorithm(a, b), 1)
    same = np.array_equal(m.original_index, ia) and np.array_equal(m.synthetic_index, ib)
    rows.append(
        (
            f"matrix Algorithm 1, {small:,} per side",
            f"same matching: {'yes' if same else 'NO'}; greedy_match {fast_s * 1e3:.1f} ms "
            f"({slow_s / fast_s:,.0f}x faster)",
            slow_s,
            "",
            "ok" if same else "MISSED",
        )
    )
    lines = [
        "Uniform points on the unit square; best of 3 (10^6: 1 run), numba compiled beforehand.",
        "",
        "| task | detail | seconds | target | ok |",
        "| --- | --- | ---: | --- | --- |",
    ]
    for task, detail, seconds, target, ok in rows:
        lines.append(f"| {task} | {detail} | {seconds:.2f} | {target} | {ok} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
