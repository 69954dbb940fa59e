"""The chain runner: a seed gives the same draws whatever runs the chains."""

import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from geosynth import PaivaModel

DRAWS = ("scalars", "theta", "eta", "latent_totals", "eta_draw_index", "lambda_chain_means")


@pytest.mark.parametrize("noise", [False, True])
def test_same_seed_same_draws_in_one_thread_many_threads_or_executor_tasks(
        make_scenario_counts, noise):
    """Chain c draws from stream c of the seed whatever thread or task runs it (bitwise)."""
    counts = make_scenario_counts(n=150, seed=4, shape=(4, 4), attributes=["y"],
                                  levels={"y": [0, 1]}).counts
    if noise:
        import geosynth

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the seed= of a DP release is for tests only
            counts = geosynth.dp.dp_counts(counts, 2.0, seed=1)
    run = dict(n_iter=60, burn_in=20, thin=2, chains=3, seed=13, progress=False)
    one = PaivaModel().fit(counts, n_jobs=1, **run)
    three = PaivaModel().fit(counts, n_jobs=3, **run)
    with ThreadPoolExecutor(2) as pool:
        tasks = PaivaModel().fit(counts, executor=pool, **run)
    for name in DRAWS:
        want = getattr(one, name)
        if name == "latent_totals" and not noise:
            assert want is None
            continue
        np.testing.assert_array_equal(getattr(three, name), want)
        np.testing.assert_array_equal(getattr(tasks, name), want)
    assert not np.array_equal(one.theta[0], one.theta[1])  # the chains' streams differ


def test_run_settings_are_python_ints_for_an_auto_run_too():
    from geosynth.model.fit import check_run_settings

    auto, _, _, thin, chains = check_run_settings("auto", None, np.int64(2), np.uint8(3), 400,
                                                  1.01, None)
    assert auto and (thin, chains) == (2, 3)
    assert type(thin) is int and type(chains) is int
