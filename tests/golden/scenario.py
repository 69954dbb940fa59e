"""The fixed-seed runs whose outputs the golden test pins bit for bit (recorded before a refactor).

``python -m tests.golden.scenario`` records ``outputs.npz`` beside this file from the current code;
``tests/test_golden.py`` recomputes the runs and compares every array exactly. Record only when a
change of the draws is intended (say why in the commit), never to make a refactor pass.

Both run the scenario in a child process on a pinned numerical platform (:data:`PLATFORM_ENV`),
so that the recording is meant to hold on every x86-64 machine with AVX2 and FMA, not only on
the one that recorded it. What differs between such machines is not geosynth's code but the
kernels its libraries pick for the CPU at run time: OpenBLAS (through NumPy and SciPy: LAPACK's
eigh for the lattice's smooth modes, the evaluation's least squares) sums in another order with
each CPU's kernels, and a last-bit change of one mode moves every later draw of a chain. The
recording of the earlier sessions (default kernels) was not reproduced on a Zen 1 machine
(2026-11-27: every draw of both fits differed, by ≤ 2·10⁻⁴ in the plain one), and on one
machine OpenBLAS's SSE3 kernels instead of its Haswell ones change the fits and the releases
alike. NumPy's own SIMD loops (exp, log, sorting) are capped at AVX2 as well, and OpenBLAS held
to one thread. numba's kernels need no pin: without fast-math flags LLVM keeps IEEE
arithmetic, in the same order, whatever the CPU.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import geosynth
from geosynth.errors import PrivacyLeakWarning

OUTPUTS = Path(__file__).with_name("outputs.npz")
REPOSITORY = Path(__file__).resolve().parents[2]
#: The numerical platform of the recording: OpenBLAS's AVX2 (Haswell) kernels on one thread and
#: NumPy's dispatch capped at AVX2 (x86-64-v3), available on every x86-64 CPU with AVX2 and FMA.
PLATFORM_ENV = {
    "OPENBLAS_CORETYPE": "Haswell",
    "OPENBLAS_NUM_THREADS": "1",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
}
ATTRIBUTES = ["y", "x1", "x2"]
RUN = dict(n_iter=240, burn_in=80, thin=2, chains=2, progress=False)


def _frame_arrays(prefix: str, frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """Exact arrays of a (Geo)DataFrame: coordinates, every column, the index."""
    arrays = {f"{prefix}/index": np.asarray(frame.index.astype(str).tolist(), dtype=str)}
    for column in frame.columns:
        values = frame[column]
        if column == getattr(frame, "_geometry_column_name", None):
            arrays[f"{prefix}/x"] = values.x.to_numpy()
            arrays[f"{prefix}/y"] = values.y.to_numpy()
        elif values.dtype.kind in "biuf":
            arrays[f"{prefix}/{column}"] = values.to_numpy()
        else:
            arrays[f"{prefix}/{column}"] = np.asarray(values.astype(str).tolist(), dtype=str)
    return arrays


def _fit_arrays(prefix: str, fit) -> dict[str, np.ndarray]:
    arrays = {
        f"{prefix}/scalars": fit.scalars,
        f"{prefix}/scalar_names": np.asarray(fit.scalar_names),
        f"{prefix}/theta": fit.theta,
        # η is large (chains x draws x cells x combinations): its SHA-256 and its first draw.
        f"{prefix}/eta_sha256": np.asarray(hashlib.sha256(fit.eta.tobytes()).hexdigest()),
        f"{prefix}/eta_first": fit.eta[:, 0],
        f"{prefix}/mean_lambda": fit.posterior_mean_lambda(),
    }
    if fit.beta is not None:
        arrays[f"{prefix}/beta"] = fit.beta
    return arrays


def compute() -> dict[str, np.ndarray]:
    """Run the pinned scenario and return every output as named arrays."""
    scenario = geosynth.datasets.paiva_scenario(n=300, seed=3)
    grid = geosynth.Grid.regular(scenario.bounds, shape=(6, 6), crs=scenario.crs)
    counts = geosynth.prepare(scenario.data, grid, attributes=ATTRIBUTES, continuous="z")
    arrays: dict[str, np.ndarray] = {"counts": counts.counts, "zbar": counts.zbar}
    for name, model in (("plain", geosynth.PaivaModel()),
                        ("beta", geosynth.PaivaModel(beta_prior="normal"))):
        fit = model.fit(counts, seed=11, **RUN)
        arrays.update(_fit_arrays(f"fit_{name}", fit))
        releases = geosynth.synthesize(fit, scenario.data, m=2, seed=5)
        for k, release in enumerate(releases):
            arrays.update(_frame_arrays(f"release_{name}_{k}", release))
            arrays.update(_frame_arrays(f"public_{name}_{k}", geosynth.to_public(release, seed=k)))
        evaluation = geosynth.evaluate(scenario.data, releases, grid, ATTRIBUTES, outcome="y",
                                       seed=3)
        for table_name, table in evaluation.tables.items():
            arrays.update(_frame_arrays(f"evaluate_{name}_{table_name}",
                                        table.reset_index()))
    dp_counts = geosynth.prepare(scenario.data, grid, attributes=["y", "x1"],
                                 levels={"y": [0, 1], "x1": [1, 2]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # a DP test seed, on purpose
        dp_releases = geosynth.synthesize(dp_counts, m=2, epsilon=2.0, seed=7,
                                          n_iter=160, burn_in=60, progress=False)
    for k, release in enumerate(dp_releases):
        arrays.update(_frame_arrays(f"dp_release_{k}", release))
    return arrays


def load_outputs(path: Path) -> dict[str, np.ndarray]:
    """The named arrays of an outputs file (the recording, or a child's)."""
    with np.load(path, allow_pickle=False) as stored:
        return {name: stored[name] for name in stored.files}


def platform_unsupported() -> str | None:
    """Why this machine cannot run the pinned platform (None if it can).

    OpenBLAS's Haswell kernels need an x86-64 CPU with AVX2 and FMA; elsewhere they would stop
    the child with an illegal instruction, and other kernels give other bits.
    """
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"the golden outputs are recorded on x86-64, not {platform.machine()}"
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return "no /proc/cpuinfo to check the CPU for AVX2 and FMA"
    missing = [flag for flag in ("avx2", "fma") if flag not in flags]
    if missing:
        return f"the CPU lacks {', '.join(missing)}, which OpenBLAS's Haswell kernels need"
    return None


def openblas_kernels() -> list[str]:
    """The kernel family of every OpenBLAS loaded in this process (NumPy's and SciPy's)."""
    from threadpoolctl import threadpool_info

    return [info.get("architecture", "?") for info in threadpool_info()
            if info.get("internal_api") == "openblas"]


def compute_pinned(path: Path) -> None:
    """Run :func:`compute` in a child process on the pinned platform; save the arrays at path."""
    subprocess.run([sys.executable, "-m", "tests.golden.scenario", "--child", str(path)],
                   env={**os.environ, **PLATFORM_ENV}, cwd=REPOSITORY, check=True)


def _child(path: Path) -> None:
    unpinned = {k: v for k, v in PLATFORM_ENV.items() if os.environ.get(k) != v}
    if unpinned:
        sys.exit(f"--child runs on the pinned platform only: set {unpinned}")
    outputs = compute()
    kernels = openblas_kernels()  # after compute(): SciPy's OpenBLAS is loaded by then
    pinned = PLATFORM_ENV["OPENBLAS_CORETYPE"]
    if set(kernels) != {pinned}:
        sys.exit(f"OpenBLAS runs kernels {kernels}, not {pinned}: the pin did not hold")
    np.savez_compressed(path, **outputs)


def _record() -> None:
    reason = platform_unsupported()
    if reason:
        sys.exit(f"cannot record: {reason}")
    with tempfile.TemporaryDirectory(dir=OUTPUTS.parent) as scratch:  # same file system
        child_out = Path(scratch) / OUTPUTS.name
        compute_pinned(child_out)
        os.replace(child_out, OUTPUTS)
    print(f"recorded {len(load_outputs(OUTPUTS))} arrays in {OUTPUTS}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=Path, metavar="PATH",
                        help="compute here (on the pinned platform) and save to PATH")
    args = parser.parse_args()
    if args.child:
        _child(args.child)
    else:
        _record()
