"""CountTable.combination_labels: the one label builder of exact and noisy count tables."""

import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest

from geosynth.data import prepare
from geosynth.dp.locations import dp_counts
from geosynth.errors import InputError
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


@pytest.mark.parametrize("declared", [False, True])
def test_levels_whose_commas_label_two_combinations_alike_are_refused(grid, declared):
    # ("1,b=2", "3") and ("1", "2,b=3") were both labelled "a=1,b=2,b=3": one GeoPackage
    # column lambda_<label> overwrote the other in a release.
    data = frame(a=["1,b=2", "1"] * 4, b=["3", "2,b=3"] * 4)
    levels = {"a": ["1", "1,b=2"], "b": ["3", "2,b=3"]} if declared else None
    with pytest.raises(InputError, match=r"levels of attribute\(s\) \['a', 'b'\] contain ','.*"
                                         r"same label") as caught:
        prepare(data, grid, ["a", "b"], levels=levels)
    assert "1,b=2" not in str(caught.value)  # no level is quoted


@pytest.mark.parametrize("declared", [False, True])
def test_levels_written_alike_are_refused(grid, declared):
    data = frame(k=pd.Categorical([1, "1"] * 4))
    with pytest.raises(InputError, match=r"attribute 'k' has levels that are written alike"):
        prepare(data, grid, ["k"], levels={"k": [1, "1"]} if declared else None)


def test_commas_that_keep_the_labels_apart_are_accepted(grid):
    counts = prepare(frame(race=["Asian, Pacific", "White"] * 4, y=[0, 0, 1, 1] * 2), grid,
                     ["race", "y"])
    assert counts.combination_labels() == ["race=Asian, Pacific,y=0", "race=Asian, Pacific,y=1",
                                           "race=White,y=0", "race=White,y=1"]
