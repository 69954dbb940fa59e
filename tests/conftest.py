"""Fixtures shared by every test directory: the simulation scenario counted on a lattice."""

import functools
import signal
from typing import NamedTuple

import pytest

from geosynth import Grid, prepare
from geosynth.data import CellCounts
from geosynth.datasets import PaivaScenario, paiva_scenario


class ScenarioCounts(NamedTuple):
    """The Nunes (2018) §3.1 scenario, a regular lattice on its square, and the counts on it."""

    scenario: PaivaScenario
    grid: Grid
    counts: CellCounts


@pytest.fixture(scope="session")
def make_scenario_counts():
    """Factory of the recipe scenario → grid → counts, memoised for the whole session.

    ``make_scenario_counts(n=300, seed=3, shape=(8, 8), attributes=("y", "x1"),
    continuous=None, **prepare_kwargs)`` returns a :class:`ScenarioCounts` built as

    - ``scenario = geosynth.datasets.paiva_scenario(n=n, seed=seed)``,
    - ``grid = Grid.regular(scenario.bounds, shape=shape, crs=scenario.crs)``,
    - ``counts = prepare(scenario.data, grid, attributes=list(attributes),
      continuous=continuous, **prepare_kwargs)`` (``levels={...}``, the public domain of a
      DP release, is accepted too).

    Each step is cached on the arguments it depends on (``n, seed``; then ``shape``; then the
    arguments of ``prepare``), so calls that agree on them, in any test file, get the same
    objects: counts by ``y`` and by ``y, x1`` of one scenario share its ``scenario`` and, on the
    same shape, its ``grid``. The returned objects are therefore shared and must be treated as
    read-only: a test that modifies ``scenario.data``, ``grid`` or ``counts`` works on a copy
    (``scenario.data.copy()``).
    """

    @functools.cache
    def scenario_of(n, seed):
        return paiva_scenario(n=n, seed=seed)

    @functools.cache
    def grid_of(n, seed, shape):
        scenario = scenario_of(n, seed)
        return Grid.regular(scenario.bounds, shape=shape, crs=scenario.crs)

    @functools.cache
    def counts_of(n, seed, shape, attributes, continuous, prepare_items):
        options = dict(prepare_items)
        if "levels" in options:  # frozen for the cache key
            options["levels"] = {a: list(values) for a, values in options["levels"]}
        return prepare(scenario_of(n, seed).data, grid_of(n, seed, shape),
                       attributes=list(attributes), continuous=continuous, **options)

    def make(n=300, seed=3, shape=(8, 8), attributes=("y", "x1"), continuous=None,
             **prepare_kwargs):
        shape = tuple(shape)
        attributes = (attributes,) if isinstance(attributes, str) else tuple(attributes)
        if "levels" in prepare_kwargs:
            prepare_kwargs["levels"] = tuple((a, tuple(values))
                                             for a, values in prepare_kwargs["levels"].items())
        counts = counts_of(n, seed, shape, attributes, continuous,
                           tuple(sorted(prepare_kwargs.items())))
        return ScenarioCounts(scenario_of(n, seed), grid_of(n, seed, shape), counts)

    return make


@pytest.fixture
def sigint_raises():
    """SIGINT raises KeyboardInterrupt during the test, as in an interactive session.

    A shell starts background jobs with SIGINT ignored, and Python then keeps it ignored, so a
    suite run as ``make test &`` would never see the simulated Ctrl-C of the interrupt tests.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
