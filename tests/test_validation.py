"""The shared checks of geosynth._validation: InputTypeError for types, InputError for values."""

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import shapely

import geosynth
from geosynth._messages import format_bytes
from geosynth._points import point_coordinates
from geosynth._random import as_generator, check_seed, root_seed_sequence
from geosynth._validation import (
    check_bool,
    check_chains,
    check_choice,
    check_epsilon,
    check_int,
    check_m,
    check_max_bytes,
    check_optional_str,
    check_positive,
    check_probability,
    check_real,
    check_real_array,
    describe_value,
    is_sequence,
)
from geosynth.errors import GeosynthError, InputError, InputTypeError

NOT_NUMBERS = [True, False, np.bool_(True), "1.0", "abc", None, [1.0], np.array([1.0]), 1 + 2j]


@pytest.mark.parametrize("value", NOT_NUMBERS)
def test_check_real_refuses_types(value):
    with pytest.raises(TypeError, match="^x must be a real number, got "):
        check_real(value, "x")


@pytest.mark.parametrize("check", [
    lambda v: check_real(v, "x"), lambda v: check_int(v, "n"), lambda v: check_seed(v),
    lambda v: check_real_array(v, "a"), lambda v: check_optional_str(v, "s")])
def test_a_wrong_type_is_a_geosynth_error(check):
    # A plain TypeError escaped `except GeosynthError` (fit(target_ess="400"), seed="1").
    with pytest.raises(InputTypeError) as err:
        check(object())
    assert isinstance(err.value, GeosynthError) and isinstance(err.value, TypeError)


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
    (2.0, "; pass an int, e.g. n=2"), (2.5, "; pass an int, e.g. n=2"),
    (300.7, "; pass an int, e.g. n=301"),  # not the fallback, 1: the nearest int
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


# Entries NumPy converts by value: a list takes the common float dtype, an object array is cast
# with float() (True is 1.0, "1.5" is 1.5, a datetime64 beside a float its day count).
@pytest.mark.parametrize("value", [
    [True, 2.5],
    [[1.0, 2.0], [np.bool_(True), 3.0]],
    [np.array([True, False]), np.array([1.0, 2.0])],
    [np.datetime64("2020-01-01"), 1.0],
    np.array([True, 1.5], dtype=object),
    np.array(["1.5", "2"], dtype=object),
    np.array([b"1"], dtype=object),
    pd.Series([True, False], dtype=object),
    pd.Series(["1.5", "2"], dtype=object),
])
def test_check_real_array_refuses_entries_that_are_not_numbers(value):
    with pytest.raises(TypeError, match=r"^w must be an array of real numbers, got \w+ holding "
                                        r"[\w, ]+ entries$"):
        check_real_array(value, "w")


def test_check_real_array_keeps_the_numbers_it_accepted():
    from decimal import Decimal

    assert check_real_array([1, 2.5, np.int32(3)], "w").tolist() == [1.0, 2.5, 3.0]
    assert check_real_array([[1, 2], (3.0, np.float32(4))], "w").tolist() == [[1, 2], [3, 4]]
    assert check_real_array([np.array([1, 2]), pd.Series([3.0, 4.0])], "w").shape == (2, 2)
    objects = np.array([Decimal("1.5"), Fraction(1, 4), 2, None], dtype=object)
    np.testing.assert_array_equal(check_real_array(objects, "w"), [1.5, 0.25, 2.0, np.nan])
    assert check_real_array(pd.Series([1, 2], dtype="Int64"), "w").tolist() == [1.0, 2.0]


def test_a_nullable_series_with_missing_values_is_refused_like_its_array():
    # np.asarray turned the Series' pd.NA into NaN; the array was refused naming pd.NA.
    for values in (pd.Series([1.0, None], dtype="Float64"), pd.Index([1, None], dtype="Int64")):
        with pytest.raises(InputError, match=r"^w has missing values \(pd.NA\); drop them"):
            check_real_array(values, "w")


@pytest.mark.parametrize("check", [
    lambda v: check_real(v, "x"), lambda v: check_int(v, "x"), lambda v: check_epsilon(v, "x"),
])
def test_a_numpy_timedelta_is_not_a_number(check):
    # NumPy makes timedelta64 an integer: epsilon=np.timedelta64(1) meant ε = 1, and check_int
    # failed inside int() with a message naming no parameter.
    with pytest.raises(TypeError, match=r"^x must be a(n int| real number), got timedelta64"):
        check(np.timedelta64(5, "D"))


@pytest.mark.parametrize("value", [pd.Series([51.50731, 51.50894]),
                                   np.array([[51.50731, -0.12765]]), [51.50731, -0.12765],
                                   pd.DataFrame({"x": [51.50731]})])
def test_messages_do_not_quote_a_column_given_for_one_value(value):
    # A confidential column passed where a number belongs: the message names its type and
    # size, never its values (nor the newlines of a Series' repr).
    for check in (check_real, check_int, check_bool, check_optional_str):
        with pytest.raises(TypeError) as info:
            check(value, "x")
        message = str(info.value)
        assert "51.5" not in message and "0.127" not in message and "\n" not in message
        assert f"got {type(value).__name__} of " in message
    for check in (check_max_bytes, check_chains):
        with pytest.raises(InputError) as info:
            check(value)
        assert "51.5" not in str(info.value) and "\n" not in str(info.value)
        assert f"got {type(value).__name__} of " in str(info.value)
    with pytest.raises(InputError, match=r"chains must be an integer from 1 to 1,024, got True$"):
        check_chains(True)  # a single value is still quoted


def test_messages_hold_no_control_characters():
    class Label:
        def __repr__(self):
            return "label\x1b[2J\nsecond line"

    class Text(str):
        def __repr__(self):
            return "text\x1b[2J"

    with pytest.raises(TypeError) as info:
        check_real(Text("1"), "x")
    assert "\x1b" not in str(info.value)
    from geosynth._messages import describe_rows

    described = describe_rows(pd.Index([Label(), "x" * 500], dtype=object), np.array([1, 1], bool))
    assert "\x1b" not in described and "\n" not in described and len(described) < 150


def test_numbers_beyond_the_float_range_get_the_usual_errors():
    huge = Fraction(10**400)  # float() raised OverflowError
    with pytest.raises(InputError, match=r"^epsilon must be a finite number > 0, got inf"):
        check_epsilon(huge)
    with pytest.raises(TypeError, match=r"^n must be an int, got Fraction .*; pass an int"):
        check_int(huge, "n")
    with pytest.raises(TypeError, match=r"^n must be an int, got float 1e\+300; pass an int, "
                                        r"e\.g\. n=1$"):  # not the 301 digits of int(1e300)
        check_int(1e300, "n")


def test_integer_string_hint_keeps_every_digit():
    # int(float("44444444444444444444")) is 44444444444444442624.
    with pytest.raises(TypeError, match=r"pass the number itself, n=44444444444444444444$"):
        check_int("44444444444444444444", "n")
    with pytest.raises(TypeError, match=r"pass the number itself, n=3$"):
        check_int(" 3.0 ", "n")



@pytest.mark.parametrize(("seed", "shown"), [
    (np.timedelta64(5, "D"), r"got timedelta64 np\.timedelta64\(5,'D'\)$"),  # crashed in int()
    (Fraction(10**400), r"got Fraction .*; pass an int, e\.g\. seed=42$"),  # OverflowError
    (list(range(1000)), r"got list of length 1000$"),  # quoted a thousand numbers
    (np.arange(3), r"got ndarray of shape \(3,\)$"),
    (np.random.RandomState(1), r"got RandomState$"),
])
def test_seeds_of_other_types_are_refused_naming_only_their_type(seed, shown):
    for user in (check_seed, as_generator, root_seed_sequence):
        with pytest.raises(TypeError, match=r"^seed must be None, an int >= 0, .*" + shown):
            user(seed)


def test_valid_seeds_give_the_same_streams_as_before():
    for seed in (0, 7, np.int64(7), np.uint64(2**64 - 1), 2**200):
        assert as_generator(seed).random() == np.random.default_rng(seed).random()
    # A SeedSequence gives numpy's own stream, and the root is a copy: spawning from it twice
    # gives the same children (comparing the children's entropy, which spawning never
    # changes, could not tell; nor could as_generator compared with itself).
    sequence = np.random.SeedSequence(11)
    assert as_generator(sequence).random() == np.random.default_rng(
        np.random.SeedSequence(11)).random()
    first = [s.generate_state(4).tolist() for s in root_seed_sequence(sequence).spawn(2)]
    assert [s.generate_state(4).tolist() for s in root_seed_sequence(sequence).spawn(2)] == first
    assert first == [s.generate_state(4).tolist() for s in np.random.SeedSequence(11).spawn(2)]


def test_a_geometry_column_of_other_values_is_refused_naming_the_frame():
    # shapely raised "One of the arguments is of incorrect type", naming nothing.
    with pytest.raises(InputError, match=r"^points's geometry column holds values that are not "
                                         r"geometries; pass a GeoDataFrame"):
        point_coordinates(pd.DataFrame({"geometry": ["POINT (1 2)", "b"]}), "points")
    frame = pd.DataFrame({"geometry": [shapely.Point(1, 2)]})  # still accepted
    assert point_coordinates(frame, "points").tolist() == [[1.0, 2.0]]


@pytest.mark.parametrize("value", [-(10**5000), 0, -(10**70)],
                         ids=["5000 digits", "0", "70 digits"])
def test_check_positive_names_an_int_too_long_to_print(value):
    # Python refuses to print an int of more than 4,300 digits: the message raised ValueError.
    with pytest.raises(InputError, match="x must be"):
        check_positive(value, "x")


@pytest.mark.parametrize("value", [10**5000, -(10**5000), np.int64(2**62)],
                         ids=["5000 digits", "-5000 digits", "int64"])
def test_check_bool_names_an_int_too_long_to_print(value):
    # describe_value printed the refused value's repr: an int of more than 4,300 digits made
    # the message itself raise ValueError (Python's limit on int-to-text conversion).
    with pytest.raises(TypeError, match=r"^flag must be True or False, got int"):
        check_bool(value, "flag")
    text = describe_value(value)
    assert len(text) < 80 and ("digits or so" in text) == (abs(int(value)) > 10**60)


@pytest.mark.parametrize("value", [np.array([]), pd.Series(["queen"]), None, 1, ["queen"]])
def test_check_choice_refuses_what_is_not_a_word_by_type(value):
    # `value not in ("queen", "rook")` raised NumPy's "truth value ... is ambiguous" on arrays.
    with pytest.raises(InputTypeError, match=r"contiguity must be one of 'queen', 'rook', got"):
        check_choice(value, "contiguity", ("queen", "rook"))


def test_check_choice_returns_a_plain_str():
    word = check_choice(np.str_("rook"), "contiguity", ("queen", "rook"))
    assert word == "rook" and type(word) is str
    with pytest.raises(InputError, match=r"got str 'hex'"):
        check_choice("hex", "contiguity", ("queen", "rook"))


@pytest.mark.parametrize(("value", "expected"), [
    (["a"], True), (("a", "b"), True), (np.array(["a"]), True), (pd.Index(["a"]), True),
    (range(3), True), ("ab", False), (b"ab", False), (np.array(1.0), False),
    (np.array([["a"]]), False), (pd.MultiIndex.from_tuples([("a", 1)]), False),
    (pd.Series(["a"]), False), (None, False), ({"a"}, False),
])
def test_is_sequence_takes_lists_and_1d_arrays_only(value, expected):
    # A 0-d array passed isinstance(..., np.ndarray) checks and raised "iteration over a 0-d
    # array" where its items were listed.
    assert is_sequence(value) is expected


@pytest.mark.parametrize(("n", "exact", "expected"), [
    (512, False, "512 bytes"), (512, True, "512 bytes"), (1536, False, "1.5 KiB"),
    (64 * 2**20, True, "64.0 MiB (67,108,864 bytes)"), (2 * 2**30, False, "2.0 GiB"),
    (2 * 2**30, True, "2.0 GiB (2,147,483,648 bytes)"), (3 * 2**40, False, "3.0 TiB"),
    (10**400, False, "about 1e400 bytes"),
])
def test_format_bytes_rounds_to_a_binary_unit_and_can_add_the_exact_count(n, exact, expected):
    # The zip limits' messages had a formatter of their own ("64 MiB (67,108,864 bytes)").
    assert format_bytes(n, exact=exact) == expected
