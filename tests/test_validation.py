"""The shared checks of geosynth._validation: TypeError for types, InputError for values."""

import math

import numpy as np
import pandas as pd
import pytest

import geosynth
from geosynth._validation import (
    check_bool,
    check_epsilon,
    check_int,
    check_m,
    check_max_bytes,
    check_optional_str,
    check_positive,
    check_probability,
    check_real,
    check_real_array,
)
from geosynth.errors import InputError

NOT_NUMBERS = [True, False, np.bool_(True), "1.0", "abc", None, [1.0], np.array([1.0]), 1 + 2j]


@pytest.mark.parametrize("value", NOT_NUMBERS)
def test_check_real_refuses_types(value):
    with pytest.raises(TypeError, match="^x must be a real number, got "):
        check_real(value, "x")


@pytest.mark.parametrize("value", [0, -3, 2.5, np.float32(1.5), np.int64(7), math.inf, math.nan])
def test_check_real_accepts_any_real(value):
    out = check_real(value, "x")
    assert type(out) is float
    assert out == float(value) or (math.isnan(out) and math.isnan(value))


def test_numeric_string_hint():
    with pytest.raises(TypeError, match=r"got str '1\.0'; pass the number itself, epsilon=1$"):
        check_epsilon("1.0")
    with pytest.raises(TypeError, match=r"pass the number itself, m=3$"):
        check_m("3")


@pytest.mark.parametrize(
    "value", [0, 0.0, -1, -0.5, math.nan, math.inf, -math.inf, 10**400, -(10**400)]
)
def test_check_epsilon_refuses_values(value):
    with pytest.raises(InputError, match=r"^eps_x must be a finite number > 0, got .*; pass the "
                                         r"privacy-loss budget, e.g\. eps_x=1\.0"):
        check_epsilon(value, "eps_x")


@pytest.mark.parametrize("value", NOT_NUMBERS)
def test_check_epsilon_refuses_types(value):
    with pytest.raises(TypeError, match="^epsilon must be a real number"):
        check_epsilon(value)


@pytest.mark.parametrize("value", [1, 0.5, np.float64(2.0), np.int32(3), 1e-300])
def test_check_epsilon_accepts(value):
    assert check_epsilon(value) == float(value)


def test_check_epsilon_infinity_only_when_allowed():
    assert check_epsilon(math.inf, allow_infinity=True) == math.inf
    with pytest.raises(InputError, match=r"epsilon must be a number > 0 \(or inf\), got nan"):
        check_epsilon(math.nan, allow_infinity=True)
    with pytest.raises(InputError, match="got -inf"):
        check_epsilon(-math.inf, allow_infinity=True)


def test_messages_show_plain_numbers():
    with pytest.raises(InputError, match=r"got -2; fix it$"):
        check_positive(np.int64(-2), "s", hint="fix it")
    with pytest.raises(InputError, match=r"got nan$"):
        check_positive(np.float64("nan"), "s")


@pytest.mark.parametrize(("zero", "one", "inside", "outside", "interval"), [
    (False, False, [1e-12, 0.5, 0.999], [0, 1, -0.1, 1.5, math.nan], "(0, 1)"),
    (True, False, [0, 0.0, 0.5], [1, 1.0, -1e-12, math.nan], "[0, 1)"),
    (True, True, [0, 1, 0.5], [-0.1, 1.1, math.nan, math.inf], "[0, 1]"),
])
def test_check_probability(zero, one, inside, outside, interval):
    for value in inside:
        assert check_probability(value, "p", zero=zero, one=one) == float(value)
    for value in outside:
        with pytest.raises(InputError, match=rf"^p must lie in \{interval[0]}0, 1\{interval[-1]}"):
            check_probability(value, "p", zero=zero, one=one)
    with pytest.raises(TypeError, match="p must be a real number, got bool"):
        check_probability(True, "p", zero=zero, one=one)


@pytest.mark.parametrize(("value", "fix"), [
    (True, ""), (np.bool_(False), ""), (None, ""), ("4.5", ""),
    (2.0, "; pass an int, e.g. n=2"), (2.5, "; pass an int, e.g. n=1"),
    ("4", "; pass the number itself, n=4"), (math.nan, "; pass an int, e.g. n=1"),
])
def test_check_int_refuses_types(value, fix):
    with pytest.raises(TypeError) as info:
        check_int(value, "n")
    assert str(info.value).startswith("n must be an int, got ")
    assert str(info.value).endswith(fix)


def test_check_int_values():
    assert check_int(np.int64(3), "n") == 3
    assert type(check_int(np.int64(3), "n")) is int
    assert check_int(0, "burn_in", 0) == 0
    with pytest.raises(InputError, match=r"^burn_in must be an int >= 0, got -1$"):
        check_int(-1, "burn_in", 0)
    with pytest.raises(InputError, match=r"^k \(records per cluster\) must be an int >= 2, got 1; "
                                         r"raise it$"):
        check_int(1, "k", 2, what="records per cluster", hint="raise it")


def test_check_m():
    assert check_m(np.int64(2)) == 2
    with pytest.raises(InputError, match=r"^m \(number of releases\) must be an int >= 1, got 0"):
        check_m(0)
    with pytest.raises(TypeError, match=r"^m \(number of releases\) must be an int, got float"):
        check_m(1.0)
    assert check_m(10_000) == 10_000
    with pytest.raises(InputError, match=r"^m \(number of releases\) must be at most 10,000, "
                                         r"got 1,000,000,000"):
        check_m(10**9)  # the Naive method would have run for weeks


def test_check_optional_str():
    assert check_optional_str(None, "label") is None
    assert check_optional_str("a", "label") == "a"
    with pytest.raises(TypeError, match="label must be a str or None, got int 3"):
        check_optional_str(3, "label")


def test_long_values_are_cut():
    with pytest.raises(TypeError) as info:
        check_real(list(range(1000)), "x")
    assert len(str(info.value)) < 120


@pytest.mark.parametrize("value", ["no", 0, 1, None])
def test_check_bool_refuses_what_only_looks_like_a_flag(value):
    # "no" is truthy: accepted, it meant True.
    with pytest.raises(TypeError, match=r"flag must be True or False, got"):
        check_bool(value, "flag")
    assert check_bool(np.bool_(False), "flag") is False


def test_flags_and_lengths_that_are_no_such_thing_are_refused(make_scenario_counts):
    scenario, grid, counts = make_scenario_counts(n=60, seed=2, shape=(3, 3), attributes=["y"])
    with pytest.raises(TypeError, match="progress must be True or False, got str 'no'"):
        geosynth.PaivaModel().fit(counts, n_iter=10, progress="no")
    with pytest.raises(TypeError, match="linked must be True or False, got str 'no'"):
        geosynth.evaluate(scenario.data, [scenario.data], grid, ["y"], linked="no")
    with pytest.raises(geosynth.errors.GridError, match="cell_size must be a positive number"):
        geosynth.Grid.regular((0, 0, 1000, 1000), cell_size=True)  # 1 m cells, a million
    with pytest.raises(geosynth.errors.GridError, match="pad must be a finite number"):
        geosynth.Grid.from_points(scenario.data, shape=(3, 3), pad=True)


@pytest.mark.parametrize("value", [np.uint64(1000), np.uint32(7), np.int64(5), 2**40])
def test_check_max_bytes_returns_a_python_int(value):
    limit = check_max_bytes(value)
    assert type(limit) is int and limit == int(value)
    assert limit - 10**6 < 0 or value > 10**6  # no unsigned wrap-around downstream


@pytest.mark.parametrize("value", [0, -1, np.uint64(0), 1.5e9, 3.0, True, np.bool_(True), "2GB",
                                   None])
def test_check_max_bytes_refuses(value):
    with pytest.raises(InputError, match="max_bytes must be a positive int"):
        check_max_bytes(value)


def test_check_real_array_converts_numbers_and_object_arrays_of_numbers():
    out = check_real_array([1, 2.5, np.int32(3)], "w")
    assert out.dtype == np.float64 and out.tolist() == [1.0, 2.5, 3.0]
    assert check_real_array(np.array([1, 2], dtype=object), "w").dtype == np.float64
    assert check_real_array(4, "w").shape == ()


@pytest.mark.parametrize("value", [None, "12", b"1", [True, False], ["1"], [1 + 2j],
                                   np.array(["2020-01-01"], dtype="datetime64[D]"),
                                   np.array([object()], dtype=object)])
def test_check_real_array_refuses_what_numpy_would_convert_or_quote(value):
    with pytest.raises(TypeError, match=r"^secret must be an array of real numbers, got ") as info:
        check_real_array(value, "secret")
    assert "1 +" not in str(info.value) and "2020" not in str(info.value)


def test_check_real_array_refuses_ragged_and_overflowing_input():
    with pytest.raises(InputError, match="w is a ragged sequence"):
        check_real_array([[1.0, 2.0], [3.0]], "w")
    with pytest.raises(InputError, match="w must be finite, got an int beyond the float range"):
        check_real_array([10**400], "w")
    # np.asarray drops the mask and would use the hidden values
    with pytest.raises(InputError, match=r"w is a masked array with masked entries"):
        check_real_array(np.ma.masked_array([1.0, -5.0], mask=[False, True]), "w")
    assert check_real_array(np.ma.masked_array([1.0, 2.0]), "w").tolist() == [1.0, 2.0]
    # A pandas nullable array is "masked" too: the message advised .filled, which it lacks.
    with pytest.raises(InputError, match=r"w has missing values \(pd.NA\); drop them "
                                         r"\(w.dropna\(\)\) or fill them \(w.fillna"):
        check_real_array(pd.array([1.0, None], dtype="Float64"), "w")
