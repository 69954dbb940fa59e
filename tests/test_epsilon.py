"""Every public entry point that takes ε refuses a bad one the same way (geosynth._validation).

A bool, a string (also ``"1.0"``), None or a list is a TypeError; zero, a negative number, NaN
or infinity is an InputError (a ValueError). Both messages name the parameter.
"""

import math
import warnings

import numpy as np
import pytest

import geosynth
from geosynth.dp.accountant import Accountant
from geosynth.dp.locations import dp_counts, dp_release
from geosynth.dp.mechanisms import (
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    exponential,
    gaussian,
    geometric,
    laplace,
)
from geosynth.dp.onthemap import OnTheMapSynthesizer, onthemap_alpha
from geosynth.dp.synthesizers import (
    BetaBinomialSynthesizer,
    DirichletMultinomialSynthesizer,
    dirichlet_alpha,
)
from geosynth.errors import InputError
from geosynth.sdc import Doca
from geosynth.sdc.doca import naive_laplace

WRONG_TYPES = [True, np.bool_(False), "1.0", "one", None, [1.0]]
WRONG_VALUES = [0, 0.0, -1.0, math.nan, math.inf, -math.inf]


@pytest.fixture(scope="module")
def counts(make_scenario_counts):
    return make_scenario_counts(n=60, seed=0, shape=(3, 3), attributes=["y"],
                                levels={"y": [0, 1]}).counts


# (name, call with a given epsilon, parameter named in the messages)
ENTRY_POINTS = {
    "laplace": (lambda e, c: laplace([1.0], sensitivity=1.0, epsilon=e), "epsilon"),
    "geometric": (lambda e, c: geometric([1], sensitivity=1, epsilon=e), "epsilon"),
    "gaussian": (lambda e, c: gaussian([1.0], sensitivity=1.0, epsilon=e, delta=1e-6), "epsilon"),
    "exponential": (lambda e, c: exponential(["a", "b"], [1.0, 0.0], sensitivity=1.0,
                                             epsilon=e), "epsilon"),
    "analytic_gaussian_sigma": (lambda e, c: analytic_gaussian_sigma(1.0, e, 1e-6), "epsilon"),
    "classic_gaussian_sigma": (lambda e, c: classic_gaussian_sigma(1.0, e, 1e-6), "epsilon"),
    "Accountant.spend": (lambda e, c: Accountant(10.0).spend(e), "epsilon"),
    "Accountant.check": (lambda e, c: Accountant(10.0).check(e), "epsilon"),
    "dirichlet_alpha": (lambda e, c: dirichlet_alpha(e, 10), "epsilon"),
    "DirichletMultinomialSynthesizer": (lambda e, c: DirichletMultinomialSynthesizer(e),
                                        "epsilon"),
    "BetaBinomialSynthesizer": (lambda e, c: BetaBinomialSynthesizer(e), "epsilon"),
    "onthemap_alpha": (lambda e, c: onthemap_alpha([10, 2], e, [1.0, 1.0]), "epsilon"),
    "OnTheMapSynthesizer": (lambda e, c: OnTheMapSynthesizer(e), "epsilon"),
    "OnTheMapSynthesizer(epsilon_totals)": (
        lambda e, c: OnTheMapSynthesizer(1e9, epsilon_totals=e), "epsilon_totals"),
    "dp_counts": (lambda e, c: dp_counts(c, e, levels=c.levels), "epsilon"),
    "dp_release": (lambda e, c: dp_release(c, e, m=1, levels=c.levels), "epsilon"),
    "geosynth.synthesize": (lambda e, c: geosynth.synthesize(c, m=1, epsilon=e, levels=c.levels),
                            "epsilon"),
    "Doca": (lambda e, c: Doca(e, sensitivity=1.0), "epsilon"),
    "naive_laplace": (lambda e, c: naive_laplace([1.0, 2.0], e, 1.0), "epsilon"),
}


def _call(entry, epsilon, counts):
    call, _ = ENTRY_POINTS[entry]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a warning must not stand in for the error
        call(epsilon, counts)


#: Entry points where ``epsilon=None`` means "not given" (the alpha or the share decides).
OPTIONAL = {"DirichletMultinomialSynthesizer", "BetaBinomialSynthesizer",
            "OnTheMapSynthesizer(epsilon_totals)", "geosynth.synthesize"}


@pytest.mark.parametrize(("entry", "epsilon"), [
    pytest.param(entry, epsilon, id=f"{entry}-{epsilon!r}")
    for entry in ENTRY_POINTS for epsilon in WRONG_TYPES
    if not (epsilon is None and entry in OPTIONAL)
])
def test_wrong_type_is_a_type_error(entry, epsilon, counts):
    name = ENTRY_POINTS[entry][1]
    with pytest.raises(TypeError, match=rf"^{name} must be a real number, got "):
        _call(entry, epsilon, counts)


@pytest.mark.parametrize("epsilon", WRONG_VALUES, ids=repr)
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_wrong_value_is_an_input_error(entry, epsilon, counts):
    name = ENTRY_POINTS[entry][1]
    with pytest.raises(InputError, match=rf"^{name} must be a finite number > 0, got "):
        _call(entry, epsilon, counts)


def test_an_accountant_budget_may_be_infinite():
    assert Accountant(math.inf).epsilon == math.inf
    with pytest.raises(InputError, match=r"^epsilon must be a number > 0 \(or inf\), got nan"):
        Accountant(math.nan)
    with pytest.raises(TypeError, match="^epsilon must be a real number, got str '1'"):
        Accountant("1")
