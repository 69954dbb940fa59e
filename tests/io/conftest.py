"""Fixtures of the geosynth.io tests: confidential scenario records and a small fit."""

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest

import geosynth
from geosynth import Grid, PaivaModel, prepare, synthesize, to_public
from tests.io.helpers import (
    CRS,
    FIT_SEED,
    PUBLIC_SEEDS,
    SYNTH_SEED,
    XMAX,
    XMIN,
    YMAX,
    YMIN,
)


@pytest.fixture(scope="session")
def confidential():
    """300 scenario records with string ids that a leak would make visible."""
    data = geosynth.datasets.paiva_scenario(n=300, seed=11).data
    data.index = pd.Index([f"rec-{i:05d}" for i in range(17, 17 + len(data))], name="record_id")
    return data


@pytest.fixture(scope="session")
def fitted(confidential):
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(8, 8), crs=CRS)
    counts = prepare(confidential, grid, attributes=["y", "x1", "x2"], continuous="z")
    fit = PaivaModel().fit(
        counts, n_iter=60, burn_in=20, thin=2, chains=1, seed=FIT_SEED, progress=False
    )
    internal = synthesize(fit, confidential, m=2, seed=SYNTH_SEED)
    public = [to_public(r, seed=s) for r, s in zip(internal, PUBLIC_SEEDS, strict=True)]
    return fit, internal, public


@pytest.fixture
def points():
    xy = np.array([[605_100.5, 7_790_200.25], [606_000.0, 7_791_000.0], [607_500.75, 7_795_001.0]])
    return gpd.GeoDataFrame(
        {"y": [0, 1, 1], "x1": ["a", "b", "a"], "z": [1.5, 2.5, 3.5]},
        geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]),
        crs=CRS,
    )
