"""Timing helper shared by the benchmarks."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any


def best_of(fn: Callable[[], Any], repeats: int = 3) -> tuple[float, Any]:
    """Run ``fn`` ``repeats`` times; return (fastest wall time in seconds, last result).

    The best of several runs is the usual estimate on a shared machine, where other load only
    ever adds time.
    """
    best, result = math.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result
