"""CountTable.combination_labels: the one label builder of exact and noisy count tables."""

import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest

from geosynth.data import prepare
from geosynth.dp.locations import dp_counts
from geosynth.lattice import Grid

CRS = "EPSG:31983"


@pytest.fixture(scope="module")
def grid():
    return Grid.regular((0, 0, 10, 10), shape=(2, 2), crs=CRS)


def frame(**columns):
    n = len(next(iter(columns.values())))
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 10, (n, 2))
    return gpd.GeoDataFrame(columns, geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=CRS)


def test_labels_follow_combos_and_attribute_order(grid):
    counts = prepare(frame(sex=["m", "f", "f", "m"], age=[3, 1, 3, 3]), grid, ["sex", "age"])
    assert counts.combination_labels() == ["sex=f,age=1", "sex=f,age=3", "sex=m,age=3"]
    assert counts.combination_labels(sep=", ") == ["sex=f, age=1", "sex=f, age=3",
                                                   "sex=m, age=3"]
    assert len(counts.combination_labels()) == counts.n_combos


def test_each_level_is_written_as_its_own_column_holds_it(grid):
    # A row of combos mixes int and float columns; the labels must not turn 1 into "1.0".
    counts = prepare(frame(k=[1, 2, 2, 1, 2], w=[0.5, 0.5, 1.5, 0.5, 0.5]), grid, ["k", "w"])
    assert counts.combination_labels() == ["k=1,w=0.5", "k=2,w=0.5", "k=2,w=1.5"]


def test_categorical_levels_keep_their_order(grid):
    sex = pd.Categorical(["m", "f", "m"], categories=["m", "f"])
    counts = prepare(frame(sex=sex), grid, ["sex"])
    assert counts.combination_labels() == ["sex=m", "sex=f"]


def test_noisy_counts_have_the_labels_of_the_public_domain(grid):
    counts = prepare(frame(y=[0, 0, 1]), grid, ["y"], levels={"y": [0, 1, 2]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise, mostly noise: tests only
        noisy = dp_counts(counts, 1.0, seed=0)
    assert noisy.combination_labels() == ["y=0", "y=1", "y=2"]
