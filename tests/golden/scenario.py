"""The fixed-seed runs whose outputs the golden test pins bit for bit (recorded before a refactor).

``python -m tests.golden.scenario`` records ``outputs.npz`` beside this file from the current code;
``tests/test_golden.py`` recomputes the runs and compares every array exactly. Record only when a
change of the draws is intended (say why in the commit), never to make a refactor pass.
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import geosynth
from geosynth.errors import PrivacyLeakWarning

OUTPUTS = Path(__file__).with_name("outputs.npz")
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
    dp_counts = geosynth.prepare(scenario.data, grid, attributes=["y", "x1"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # a DP test seed, on purpose
        dp_releases = geosynth.synthesize(dp_counts, m=2, epsilon=2.0,
                                          levels={"y": [0, 1], "x1": [1, 2]}, seed=7,
                                          n_iter=160, burn_in=60, progress=False)
    for k, release in enumerate(dp_releases):
        arrays.update(_frame_arrays(f"dp_release_{k}", release))
    return arrays


if __name__ == "__main__":
    outputs = compute()
    np.savez_compressed(OUTPUTS, **outputs)
    print(f"recorded {len(outputs)} arrays in {OUTPUTS}")
