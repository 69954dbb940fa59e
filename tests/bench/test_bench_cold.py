"""bench/bench_cold.py: the probe process (run on numba's default, warm cache to stay fast)."""

from __future__ import annotations

import math

from bench import bench_cold


def test_the_other_kinds_fit_their_own_data_after_a_noise_aware_first_kind():
    # BENCH_COLD_KINDS=noise-aware,chromatic: the chromatic fit gets the exact counts (a
    # noise-aware fit refuses parallel=True), not the noisy counts of the first kind.
    result = bench_cold.measure("noise-aware", "", dispatchers=("noise-aware", "chromatic"))
    assert result["total"] > 0
    names = {row["name"] for row in result["dispatchers"]}
    assert any(".parallel." in name for name in names)
    assert any(".noise_aware." in name for name in names)


def test_kernels_loaded_from_the_cache_list_no_compile_time():
    # A dispatcher loaded from numba's cache has no compile metadata (get_metadata is None).
    result = bench_cold.measure("exact", "", dispatchers=("exact",))
    rows = result["dispatchers"]
    assert rows and all(len(r["seconds"]) == len(r["signatures"]) for r in rows)
    assert all(math.isnan(s) or s >= 0 for r in rows for s in r["seconds"])
