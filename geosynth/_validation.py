"""One check per kind of scalar parameter that several modules validate.

ε (``epsilon``), δ and other probabilities, positive numbers, integer counts, the number of
releases ``m`` and optional string labels are checked here, so that a parameter is refused the
same way wherever it is given. The checks follow diffprivlib's convention:

* a value of the wrong *type* raises :class:`TypeError`: a ``bool`` (Python counts ``True`` as
  the int 1, so ``epsilon=True`` would silently mean ε = 1), a string (also ``"1.0"``: pass the
  number itself), ``None`` where a number is required, an array;
* a value of the right type outside its range raises :class:`geosynth.errors.InputError` (a
  :class:`ValueError`): NaN, infinity, zero or negative numbers, probabilities outside their
  interval, integers below their minimum.

Messages name the parameter as the caller knows it and say how to fix the value. Seeds are
checked by :func:`geosynth._random.check_seed`, next to the code that turns them into streams.
"""

from __future__ import annotations

import decimal
import inspect
import math
import numbers
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd

from geosynth._messages import CONTROL_CHARACTERS
from geosynth.errors import InputError, InputTypeError

__all__ = [
    "check_no_nul",
    "check_keywords",
    "check_ru_table",
    "check_real",
    "check_real_array",
    "as_rectangular_array",
    "check_positive",
    "check_epsilon",
    "check_probability",
    "check_int",
    "inexact_integers",
    "check_m",
    "check_max_bytes",
    "check_optional_str",
    "check_public_lattice",
    "check_bool",
    "check_choice",
    "check_range",
    "range_end_text",
    "range_text",
    "is_integer",
    "is_real",
    "is_sequence",
    "int_hint",
    "as_float",
    "describe_value",
    "MAX_CONTINUOUS",
    "refuse_masked",
    "check_unique_columns",
]

_SHOW_CHARS = 60  # longest repr of a refused value shown in a message

#: NumPy registers these as numbers (``np.timedelta64`` as an integer), but a flag or a duration
#: given for a number is a mistake: ``True`` would silently mean 1, a timedelta its tick count.
_NOT_NUMBERS = (bool, np.bool_, np.timedelta64)

#: The largest |value| of a confidential number (a continuous column, a stream's record): sums of
#: squares of 10⁸ such values stay finite.
MAX_CONTINUOUS = 1e100


def check_real(value: Any, name: str) -> float:
    """Return ``value`` as a float after checking that it is a real number (any value).

    Parameters
    ----------
    value : object
        The value given for the parameter.
    name : str
        Name of the parameter, used in the message.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        ``value`` is not a real number: a bool, a string, None, an array, a NumPy timedelta, ...
    """
    if not is_real(value):
        raise InputTypeError(f"{name} must be a real number, got {describe_value(value)}"
                        f"{_string_hint(value, name)}")
    return as_float(value)


def as_float(value: Any) -> float:
    """Return ``float(value)``, ±inf for a number beyond the float range.

    Parameters
    ----------
    value : numbers.Real
        A real number (``10**400`` or a huge ``Fraction`` raise OverflowError in ``float``).

    Returns
    -------
    float
    """
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def as_rectangular_array(values: Any, name: str) -> np.ndarray:
    """Return ``np.asarray(values)``, refusing a ragged nested sequence naming ``name``.

    Parameters
    ----------
    values : object
        The value given.
    name : str
        Name of the parameter, used in the message.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    geosynth.errors.InputError
        Rows of different lengths (NumPy's "inhomogeneous shape" ValueError).
    """
    try:
        return np.asarray(values)
    except ValueError:  # inhomogeneous shape
        raise InputError(f"{name} is a ragged sequence (rows of different lengths); pass a "
                         "rectangular array or a flat list of numbers") from None


def check_unique_columns(frame: Any, name: str, columns: Any = None,
                         as_text: bool = False) -> None:
    """Refuse a frame in which several columns share a name (among ``columns``, if given).

    ``frame[column]`` is then a DataFrame, not a column: the callers crashed on it, counted
    the copies twice or kept one silently. The one check of repeated column names.

    Parameters
    ----------
    frame : pandas.DataFrame
        The frame given.
    name : str
        How the caller's argument is called (``gdf``, ``release``), for the message.
    columns : iterable of column names, optional
        Only these names matter (the ones the caller reads); default every column.
    as_text : bool, default False
        Compare the names as text, for a caller that names columns by text (a web map's
        properties): ``0`` and ``"0"`` are then one name.

    Raises
    ------
    geosynth.errors.InputError
        Naming the repeated names and the fix.
    """
    labels = [str(c) for c in frame.columns] if as_text else list(frame.columns)
    wanted = labels if columns is None else [str(c) if as_text else c for c in columns]
    repeated = sorted({c for c in wanted if labels.count(c) > 1}, key=str)
    if repeated:
        raise InputError(
            f"{name} has several columns named {repeated}; a column must be named once: rename "
            f"or drop the copies ({name}.loc[:, ~{name}.columns.duplicated()] keeps the first)"
        )


def refuse_masked(values: Any, name: str) -> None:
    """Refuse a masked array with masked entries: ``np.asarray`` would use the hidden values.

    Parameters
    ----------
    values : object
        The value given.
    name : str
        Name of the parameter, used in the message (which quotes no value).

    Raises
    ------
    geosynth.errors.InputError
        ``values`` has masked entries (also a pandas Series or Index of a nullable dtype with
        ``pd.NA``, whose ``.array`` holds the mask).
    """
    if not (np.ma.is_masked(values) or np.ma.is_masked(getattr(values, "array", None))):
        return
    if isinstance(values, np.ma.MaskedArray):
        raise InputError(f"{name} is a masked array with masked entries; drop them or fill "
                         f"them ({name}.filled(value)) first")
    # A pandas nullable array (Float64, Int64) holds its missing values (pd.NA) by a mask too.
    raise InputError(f"{name} has missing values (pd.NA); drop them ({name}.dropna()) or fill "
                     f"them ({name}.fillna(value)) first")


def check_real_array(values: Any, name: str, what: str = "an array of real numbers") -> np.ndarray:
    """Return ``values`` as a float64 array after checking that it holds real numbers.

    The one conversion of an array parameter to floats (the samplers' ``w`` and ``z``, the GP's
    points and response, the DP mechanisms' values and scores). Its messages name the parameter
    and the type, never a value: the values may be confidential. Finiteness is left to the
    caller, whose message says what to do with a NaN.

    Parameters
    ----------
    values : object
        The value given (a scalar, a sequence, a NumPy array, a pandas object).
    name : str
        Name of the parameter, used in the messages.
    what : str, default "an array of real numbers"
        What the parameter must be, in the type error's message.

    Returns
    -------
    numpy.ndarray of float64
        Same shape (0-d for a scalar).

    Raises
    ------
    TypeError
        None, text, booleans, dates, complex numbers or other objects (NumPy would turn
        ``True`` into 1, ``"1"`` into 1.0 and drop an imaginary part with a warning), also as
        entries of a list or an object array (``[True, 2.5]``, a column of strings); a
        missing entry (None) becomes NaN, for the caller to refuse.
    geosynth.errors.InputError
        A ragged sequence, an int beyond the float range (``10**400``), or a masked array with
        masked entries.
    """
    if values is None or isinstance(values, str | bytes):
        raise InputTypeError(f"{name} must be {what}, got {type(values).__name__}")
    refuse_masked(values, name)
    array = as_rectangular_array(values, name)
    # NumPy converts the entries of a list (and astype those of an object array) by value:
    # [True, 2.5] became [1.0, 2.5], ["1.5"] 1.5, a datetime64 beside a float its day count.
    from_objects = array.dtype.kind == "O"
    if from_objects or (array.dtype.kind in "iuf" and isinstance(values, list | tuple)):
        wrong = _not_number_entries(array if from_objects else values)
        if wrong:
            raise InputTypeError(f"{name} must be {what}, got {type(values).__name__} holding "
                            f"{', '.join(wrong)} entries")
    if from_objects:
        try:
            array = array.astype(np.float64)
        except OverflowError:
            raise InputError(f"{name} must be finite, got an int beyond the float range; check "
                             "it for an overflow") from None
        except (TypeError, ValueError):
            raise InputTypeError(f"{name} must be {what}, got {type(values).__name__} holding "
                            "objects that are not numbers") from None
    if array.dtype.kind not in "iuf":
        raise InputTypeError(f"{name} must be {what}, got {type(values).__name__} of dtype "
                        f"{array.dtype}")
    return array.astype(np.float64, copy=False)


def _not_number_entries(values: list | tuple | np.ndarray) -> list[str]:
    """Name the types of the entries of a list, tuple or object array that are not numbers.

    E.g. ``["bool", "str"]``; nested lists are searched, and an array inside a list counts by
    its dtype. Numbers are real numbers but bools, Decimals (a database's NUMERIC column) and
    None (a missing entry, which becomes NaN).
    """
    wrong: set[str] = set()
    pending = [values]
    while pending:
        items = pending.pop()
        items = list(items.flat) if isinstance(items, np.ndarray) else items
        for kind in set(map(type, items)):
            if issubclass(kind, _NOT_NUMBERS) or issubclass(kind, str | bytes):
                wrong.add(kind.__name__)
            elif issubclass(kind, numbers.Real | decimal.Decimal | type(None)):
                continue
            elif issubclass(kind, list | tuple):  # the rows of a nested list, as one batch
                pending.append(list(chain.from_iterable(i for i in items if type(i) is kind)))
            elif hasattr(kind, "__array__") and not issubclass(kind, np.generic):
                for item in items:  # an array or a Series in a list: NumPy keeps its dtype
                    if type(item) is kind:
                        array = np.asarray(item)
                        if array.dtype.kind == "O":
                            pending.append(array)
                        elif array.dtype.kind not in "iuf":
                            wrong.add(f"{kind.__name__} of dtype {array.dtype}")
            else:
                wrong.add(kind.__name__)
    return sorted(wrong)


def check_positive(
    value: Any, name: str, *, hint: str | None = None, allow_infinity: bool = False
) -> float:
    """Return ``value`` as a float after checking that it is a finite real number > 0.

    Parameters
    ----------
    value : object
        The value given for the parameter.
    name : str
        Name of the parameter, used in the messages.
    hint : str, optional
        How to fix a refused value, appended to the value error's message.
    allow_infinity : bool, default False
        Accept ``inf`` too (e.g. an uncapped privacy budget).

    Returns
    -------
    float

    Raises
    ------
    TypeError
        ``value`` is not a real number (:func:`check_real`).
    geosynth.errors.InputError
        ``value`` is NaN, <= 0, or infinite (unless ``allow_infinity``).
    """
    number = check_real(value, name)
    if math.isnan(number) or number <= 0 or (math.isinf(number) and not allow_infinity):
        wanted = "a number > 0 (or inf)" if allow_infinity else "a finite number > 0"
        raise InputError(f"{name} must be {wanted}, got {_number(value)}{_suffix(hint)}")
    return number


def check_epsilon(
    epsilon: Any, name: str = "epsilon", *, hint: str | None = None, allow_infinity: bool = False
) -> float:
    """Return the privacy-loss parameter ε as a float: a finite real number > 0.

    Parameters
    ----------
    epsilon : object
        The value given for ε.
    name : str, default "epsilon"
        Name of the parameter, used in the messages (e.g. ``"epsilon_totals"``).
    hint : str, optional
        How to fix a refused value; by default "pass the privacy-loss budget, e.g.
        ``<name>=1.0`` (smaller is more private)".
    allow_infinity : bool, default False
        Accept ``inf`` (an accountant's uncapped budget); never for a mechanism's ε.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        ``epsilon`` is not a real number: a bool, a string such as ``"1.0"``, None, ...
    geosynth.errors.InputError
        ``epsilon`` is NaN, <= 0 or infinite (unless ``allow_infinity``).
    """
    if hint is None:
        hint = f"pass the privacy-loss budget, e.g. {name}=1.0 (smaller is more private)"
    return check_positive(epsilon, name, hint=hint, allow_infinity=allow_infinity)


def check_probability(
    value: Any, name: str, *, zero: bool = False, one: bool = False, hint: str | None = None
) -> float:
    """Return ``value`` as a float after checking that it lies in the unit interval.

    Parameters
    ----------
    value : object
        The value given for the parameter (δ, a credibility level, a proportion, ...).
    name : str
        Name of the parameter, used in the messages.
    zero : bool, default False
        Accept 0 (the interval is closed at 0).
    one : bool, default False
        Accept 1 (the interval is closed at 1).
    hint : str, optional
        How to fix a refused value, appended to the value error's message.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        ``value`` is not a real number (:func:`check_real`).
    geosynth.errors.InputError
        ``value`` is NaN or outside the interval (e.g. ``(0, 1)``, ``[0, 1)``, ``[0, 1]``).
    """
    number = check_real(value, name)
    above_zero = number >= 0.0 if zero else number > 0.0
    below_one = number <= 1.0 if one else number < 1.0
    if not (above_zero and below_one):  # NaN fails both
        interval = f"{'[' if zero else '('}0, 1{']' if one else ')'}"
        raise InputError(f"{name} must lie in {interval}, got {_number(value)}{_suffix(hint)}")
    return number


def is_integer(value: Any) -> bool:
    """Tell whether ``value`` is a Python or NumPy integer and not a bool (True would mean 1).

    A ``numpy.timedelta64`` (a NumPy integer subclass) is not one either.

    Parameters
    ----------
    value : object
        The value given.

    Returns
    -------
    bool
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, _NOT_NUMBERS)


def int_hint(value: Any, name: str, minimum: int, fallback: int) -> str:
    """Suggest an int for a real number given where one belongs (``""`` for anything else).

    Parameters
    ----------
    value : object
        The value refused.
    name : str
        The parameter's name.
    minimum : int
        Smallest int allowed: a whole ``value`` at least this large is suggested as it is.
    fallback : int
        Suggested otherwise (NaN, inf, a number beyond 2**53 or rounding below ``minimum``).

    Returns
    -------
    str
        E.g. ``"; pass an int, e.g. n=3"`` for ``3.0``, ``n=300`` for ``300.5`` (the fallback,
        1, was suggested for any fraction).
    """
    if not is_real(value):
        return ""
    number = as_float(value)  # a Fraction beyond the float range is ±inf
    rounded = round(number) if math.isfinite(number) and abs(number) <= 2**53 else None
    usable = rounded is not None and rounded >= minimum
    return f"; pass an int, e.g. {name}={rounded if usable else fallback}"


def inexact_integers(x: Any) -> np.ndarray:
    """Mask of the integers of ``x`` that float64 does not hold exactly (beyond 2**53).

    Judged on the values as given, element by element: ``[2**53 + 1, 0.5]`` is converted to
    floats by NumPy, and its integer was rounded before any check saw it.

    Parameters
    ----------
    x : object
        A number, a list or tuple, or an array (an integer array is checked by one round trip
        through float64).

    Returns
    -------
    numpy.ndarray of bool
        Of ``x``'s shape.
    """
    if is_integer(x):
        return np.array(int(float(x)) != int(x))
    given = np.asarray(x, dtype=object) if isinstance(x, list | tuple) else np.asarray(x)
    if given.dtype.kind not in "iuO":
        return np.zeros(given.shape, dtype=bool)
    if given.dtype.kind in "iu":  # a round trip through float64; one rounded up to 2**63
        with np.errstate(invalid="ignore"):  # (2**64 unsigned) overflows back: inexact too
            return given.astype(np.float64).astype(given.dtype) != given
    inexact = np.zeros(given.shape, dtype=bool)
    for index, value in np.ndenumerate(given):  # Python objects: one at a time anyway
        if is_integer(value) and abs(int(value)) > 2**53:
            inexact[index] = int(float(value)) != int(value)
    return inexact


def is_real(value: Any) -> bool:
    """Tell whether ``value`` is a real number (int, float, Fraction, NumPy number), not a bool.

    Parameters
    ----------
    value : object
        The value given.

    Returns
    -------
    bool
        False for bools and ``numpy.timedelta64`` too (NumPy counts both as numbers).
    """
    return isinstance(value, numbers.Real) and not isinstance(value, _NOT_NUMBERS)


def is_sequence(value: Any) -> bool:
    """Tell whether ``value`` is a list-like of items: a sequence, a pandas Index or a 1-d array.

    The test of a parameter taking several items (column names, releases, thresholds). A str
    is not one; nor is a 0-d array (``np.array(1.0)``, whose iteration raised "iteration over
    a 0-d array") or a 2-d one.

    Parameters
    ----------
    value : object
        The value given.

    Returns
    -------
    bool
    """
    if isinstance(value, str | bytes):
        return False
    if isinstance(value, np.ndarray):
        return value.ndim == 1
    return isinstance(value, Sequence) or (isinstance(value, pd.Index) and value.nlevels == 1)


def check_int(
    value: Any, name: str, minimum: int = 1, *, what: str | None = None, hint: str | None = None
) -> int:
    """Return ``value`` as an int after checking that it is an integer >= ``minimum``.

    Parameters
    ----------
    value : object
        The value given for the parameter (Python or NumPy integer).
    name : str
        Name of the parameter, used in the messages.
    minimum : int, default 1
        Smallest accepted value.
    what : str, optional
        What the parameter counts, shown after its name (``"m (number of releases)"``).
    hint : str, optional
        How to fix a refused value, appended to the value error's message.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        ``value`` is not an integer: a bool, a float (also ``3.0``), a string, None, ...
    geosynth.errors.InputError
        ``value < minimum``.
    """
    label = f"{name} ({what})" if what else name
    if not is_integer(value):
        fix = int_hint(value, name, minimum, max(minimum, 1))
        raise InputTypeError(f"{label} must be an int, got {describe_value(value)}"
                        f"{fix or _string_hint(value, name, integer=True)}")
    if value < minimum:
        raise InputError(f"{label} must be an int >= {minimum}, got {int(value)}{_suffix(hint)}")
    return int(value)


#: The most chains of one sampler run (a fit, a posterior): each has its own random stream and
#: draws, and more than this (a thousand times the cores of a large server) is a typo; 1e11
#: hung while making streams.
MAX_CHAINS = 1024
#: The most releases ``m`` of one call: each is a full copy of the data (m = 10⁹ of the Naive
#: method ran for weeks); multiple-imputation inference needs tens.
MAX_RELEASES = 10_000


def check_chains(chains: Any) -> None:
    """Refuse a number of chains that is not an int from 1 to :data:`MAX_CHAINS`.

    Raises
    ------
    geosynth.errors.InputTypeError
        ``chains`` is a float (``2.0``).
    geosynth.errors.InputError
        ``chains`` is not an integer (bools are not) from 1 to :data:`MAX_CHAINS`.
    """
    if isinstance(chains, float | np.floating):
        check_int(chains, "chains")  # 2.0: a type error with its fix
    if not is_integer(chains) or not 1 <= chains <= MAX_CHAINS:
        raise InputError(f"chains must be an integer from 1 to {MAX_CHAINS:,}, got "
                         f"{_shown(chains)}")


def check_m(m: Any, what: str = "number of releases", limit: int = MAX_RELEASES) -> int:
    """Return the number ``m`` of releases (or synthetic tables) as an int from 1 to ``limit``.

    Parameters
    ----------
    m : object
        The value given for ``m``.
    what : str, default "number of releases"
        What ``m`` counts, for the messages (``"synthetic tables"``).
    limit : int, default MAX_RELEASES
        The largest ``m`` accepted.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        ``m`` is not an integer (:func:`check_int`).
    geosynth.errors.InputError
        ``m < 1`` or ``m > limit`` (``m = 10**400`` raised OverflowError in NumPy, ``10**300``
        a "maximum dimension" ValueError).
    """
    m = check_int(m, "m", 1, what=what)
    if m > limit:
        raise InputError(f"m ({what}) must be at most {limit:,}, got {m:,}: each is a full "
                         "draw of the data, and combining rules need tens; pass a smaller m")
    return m


def check_max_bytes(value: Any) -> int:
    """Return a memory limit ``max_bytes`` as a Python int after checking it is positive.

    The one check of every ``max_bytes`` (prepare, fit, the DP releases). It returns a Python
    int: a NumPy unsigned limit wrapped around when a storage plan subtracted from it
    (``np.uint64(1000) - 107_520``), and every draw then "fitted".

    Parameters
    ----------
    value : object
        The value given (Python or NumPy integer).

    Returns
    -------
    int

    Raises
    ------
    geosynth.errors.InputError
        ``value`` is not an integer (a bool, a float such as ``1.5e9``, a string) or is <= 0.
    """
    if not is_integer(value) or value <= 0:
        raise InputError(f"max_bytes must be a positive int (bytes), got {_shown(value)}")
    return int(value)


def check_optional_str(value: Any, name: str) -> str | None:
    """Return ``value`` after checking that it is a str or None (e.g. a ledger label).

    Parameters
    ----------
    value : object
        The value given for the parameter.
    name : str
        Name of the parameter, used in the message.

    Returns
    -------
    str or None

    Raises
    ------
    TypeError
        ``value`` is neither a str nor None.
    """
    if value is not None and not isinstance(value, str):
        raise InputTypeError(f"{name} must be a str or None, got {describe_value(value)}")
    return value


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` as a bool after checking that it is one (a NumPy bool too).

    A string such as ``"no"`` is truthy, so accepting it would silently mean True.

    Parameters
    ----------
    value : object
        The value given for the flag.
    name : str
        Name of the parameter, used in the message.

    Returns
    -------
    bool

    Raises
    ------
    geosynth.errors.InputTypeError
        ``value`` is not a bool (an InputError and a TypeError). A refused array or Series is
        described by its type and shape only: it may be a confidential column.
    """
    if not isinstance(value, bool | np.bool_):
        raise InputTypeError(f"{name} must be True or False, got {describe_value(value)}")
    return bool(value)


def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """Return ``value`` as a plain str after checking that it is one of ``choices``.

    The one check of a parameter that takes one of a few words (``contiguity="queen"``). An
    array or Series given for it raised NumPy's "truth value of an array is ambiguous" from
    ``value not in (...)``; a ``numpy.str_`` is accepted as the word it spells.

    Parameters
    ----------
    value : object
        The value given for the parameter.
    name : str
        Name of the parameter, used in the messages.
    choices : sequence of str
        The words it may be.

    Returns
    -------
    str
        ``value`` as a ``str`` (not a subclass).

    Raises
    ------
    geosynth.errors.InputTypeError
        ``value`` is not a str (described by type and size only if it is an array or Series).
    geosynth.errors.InputError
        ``value`` is a str but not one of ``choices``.
    """
    words = ", ".join(repr(c) for c in choices)
    if not isinstance(value, str):
        raise InputTypeError(f"{name} must be one of {words}, got {describe_value(value)}")
    if value not in choices:
        raise InputError(f"{name} must be one of {words}, got {describe_value(value)}")
    return str.__str__(value)


def check_range(pair: Any, name: str) -> tuple[float, float]:
    """Return a range ``(low, high)`` as floats after checking it, ±inf for an open end.

    The one check of a continuous column's range: the ``limits`` of
    :func:`geosynth.synthesize`, ``--limit`` on the command line, and the limits recorded in
    a release (its attrs or its file).

    Parameters
    ----------
    pair : object
        The range given: two ends, each a finite real number or None for an open end.
    name : str
        What the message calls it (``"limits['age']"``).

    Returns
    -------
    (float, float)
        ``low < high``, ``-inf``/``inf`` for an open end; ``(None, None)`` is ``(-inf, inf)``.

    Raises
    ------
    geosynth.errors.InputTypeError
        ``pair`` is not two items, or an end is not a real number or None (a bool, a str).
    geosynth.errors.InputError
        An end is not finite (use None for an open end), or ``low >= high``.
    """
    if not (is_sequence(pair) and len(pair) == 2):
        raise InputTypeError(
            f"{name} must be a pair (low, high), with None for an open end, e.g. (0, 120) or "
            f"(0, None); got {describe_value(pair)}"
        )
    ends = []
    for position, (end, open_end) in enumerate(zip(pair, (-math.inf, math.inf), strict=True)):
        if end is None:
            ends.append(open_end)
            continue
        if not is_real(end):
            raise InputTypeError(f"{name}[{position}] must be a real number or None (an open "
                                 f"end), got {describe_value(end)}")
        number = as_float(end)
        if not math.isfinite(number):
            raise InputError(f"{name}[{position}] must be a finite number, got {number!r}; use "
                             "None for an open end, e.g. (0, None)")
        ends.append(number)
    low, high = ends
    if not low < high:
        raise InputError(f"{name} = {range_text((low, high))} is empty: its low end must be "
                         "below its high end; give (low, high), e.g. (0, 120)")
    return low, high


def range_text(limits: tuple[float, float]) -> str:
    """Write a range as the caller does: ``(0, 120)``, ``(0, None)`` (see :func:`check_range`).

    Parameters
    ----------
    limits : (float, float)
        ``(low, high)``, ±inf for an open end.

    Returns
    -------
    str
    """
    return f"({range_end_text(limits[0])}, {range_end_text(limits[1])})"


def range_end_text(end: float) -> str:
    """Write one end of a range: ``None`` for an open one, a whole number as an int.

    Parameters
    ----------
    end : float
        The end, ±inf when open.

    Returns
    -------
    str
    """
    if math.isinf(end):
        return "None"
    return repr(int(end)) if end.is_integer() and abs(end) < 2**53 else repr(end)


def check_public_lattice(grid: Any, where: str) -> None:
    """Refuse, for an ε-DP release, a lattice whose bounds were derived from the points.

    A lattice that :meth:`geosynth.Grid.from_points` built (``grid.snap_unit`` set) has bounds
    that follow the outermost records, and every synthetic point falls inside them: removing
    one outlying record can move a bound, so some releases are possible with the record and
    impossible without it, and no finite ε holds (Dwork & Roth 2014, Def. 2.4).

    Parameters
    ----------
    grid : geosynth.Grid
        The lattice of the counts to be released.
    where : str
        The function or candidate making the release, named in the message.

    Raises
    ------
    geosynth.errors.InputError
        ``grid.snap_unit`` is set.
    """
    if getattr(grid, "snap_unit", None) is not None:
        raise InputError(
            f"{where} is ε-DP but its lattice took its bounds from the points "
            "(Grid.from_points): a release inside them discloses the extremes of "
            "the confidential points and no finite ε holds; build the lattice over a "
            "public study region (Grid.regular(region.total_bounds, ..., region=region)) or "
            "from public areas (Grid.from_polygons)"
        )


# --------------------------------------------------------------------------------------------
# Pieces of the messages
# --------------------------------------------------------------------------------------------


def check_no_nul(path: str, name: str) -> None:
    """Refuse a file path holding a NUL character, naming the parameter.

    The operating system's calls raised a bare ValueError ("embedded null byte") on such a
    path, and GDAL read the name only up to it (a weights raster ``w.tif``, a NUL, then more,
    opened ``w.tif``).

    Raises
    ------
    geosynth.errors.InputError
        ``path`` contains the NUL character.
    """
    if "\x00" in path:
        shown = CONTROL_CHARACTERS.sub("?", repr(path))
        raise InputError(f"{name} {shown} contains a NUL character; give the file's name "
                         "without it")


def describe_value(value: Any) -> str:
    """Describe a refused value: ``"<type> <repr>"`` of one value, only type and size of others.

    The repr is cut to a readable length and loses its control characters. An array, a Series
    or a list given where one value belongs may be a confidential column (and its repr spans
    several lines): its values are not quoted.

    Parameters
    ----------
    value : object
        The value refused.

    Returns
    -------
    str
        E.g. ``"bool True"``, ``"str '2GB'"``, ``"Series of shape (2,)"``.
    """
    shown = _shown(value)
    return f"{type(value).__name__} {shown}" if _is_single_value(value) else shown


def _shown(value: Any) -> str:
    """Show a single value by its cut repr (``True``, ``'2GB'``), others by type and size."""
    kind = type(value).__name__
    if not _is_single_value(value):
        shape = getattr(value, "shape", None)
        if isinstance(shape, tuple):
            return f"{kind} of shape {shape}"
        try:
            return f"{kind} of length {len(value)}"
        except Exception:  # no len(), or a len() that fails
            return kind
    if isinstance(value, int) and abs(value) >= 10**_SHOW_CHARS:  # NumPy ints are 64-bit
        # Python refuses to print an int of more than 4,300 digits (a ValueError); its first
        # digits would be cut anyway.
        digits = math.floor(value.bit_length() * math.log10(2)) + 1
        return f"{'-' if value < 0 else ''}<{digits:,} digits or so>"
    shown = CONTROL_CHARACTERS.sub("?", repr(value))
    return shown if len(shown) <= _SHOW_CHARS else shown[: _SHOW_CHARS - 3] + "..."


def _is_single_value(value: Any) -> bool:
    """None, a number, a string, a NumPy scalar or a pandas missing value (``pd.NA``, ``NaT``)."""
    if value is None or isinstance(value, numbers.Number | str | bytes | np.generic):
        return True
    return type(value).__name__ in ("NAType", "NaTType")


def _number(value: Any) -> str:
    """Write a refused number as Python does (``-1``, ``0.0``, ``nan``), without NumPy's wrapper."""
    # An int of more than 4,300 digits cannot be printed (a ValueError): shown as a float.
    exact = isinstance(value, numbers.Integral) and abs(value) < 10**_SHOW_CHARS
    shown = repr(int(value)) if exact else repr(as_float(value))
    return shown if len(shown) <= _SHOW_CHARS else shown[: _SHOW_CHARS - 3] + "..."


def _string_hint(value: Any, name: str, integer: bool = False) -> str:
    """For a string that holds a number, the call that passes the number itself."""
    if not isinstance(value, str):
        return ""
    try:
        number = float(value.strip())
    except ValueError:
        return ""
    if not math.isfinite(number) or (integer and not number.is_integer()):
        return ""
    if not integer:
        return f"; pass the number itself, {name}={number:g}"
    try:  # the digits given: int(float("44444444444444444444")) ends in ...2624
        whole = int(value.strip())
    except ValueError:  # "4.0", "1e3"
        whole = int(number)
    return f"; pass the number itself, {name}={whole}"


def _suffix(hint: str | None) -> str:
    return f"; {hint}" if hint else ""


def check_keywords(options: Mapping[str, Any], function: Any, name: str, given: str,
                   set_by_caller: frozenset[str] = frozenset()) -> None:
    """Refuse keyword arguments that ``function`` does not take, before any work.

    The one check of keyword arguments passed on to a fit (``fit_options`` of
    :func:`geosynth.tune`, ``**fit_options`` of :func:`geosynth.distributed.fit_dask`): the
    fit's own TypeError came after every candidate's lattice, or after the Dask tasks were set
    up.

    Parameters
    ----------
    options : mapping of str to object
        The keyword arguments given.
    function : callable
        The function they are passed to (its signature is read); one that takes ``**kwargs``
        accepts every key.
    name : str
        How the message names ``function`` (``"PaivaModel.fit"``).
    given : str
        How the message names ``options`` (``"fit_options"``).
    set_by_caller : frozenset of str, optional
        Parameters of ``function`` the caller sets itself: refused too, and not offered.

    Raises
    ------
    geosynth.errors.InputError
        A key that is not a keyword parameter of ``function``, or that the caller sets;
        the message lists the keys accepted.
    """
    parameters = inspect.signature(function).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return
    named = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    accepted = named - set(set_by_caller)
    unknown = sorted(set(options) - accepted, key=str)
    if unknown:
        raise InputError(f"{given} has {unknown}, which {name} does not take; use keys among "
                         f"{sorted(accepted)}")


def check_ru_table(table: Any, risk: Any, utility: Any) -> pd.DataFrame:
    """Return the risk and utility columns of an R-U table as floats, or refuse the table.

    The one check of a table of candidates (:func:`geosynth.tuning.frontier`,
    :func:`geosynth.tuning.recommend` and the map of :func:`geosynth.plots.ru_map`): one row
    per candidate, labelled once, with numbers in both columns. NaN marks a measure a
    candidate has not (an ε-DP candidate's linked risks).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per candidate, indexed by label (:attr:`geosynth.tuning.Tuning.table`).
    risk, utility : str
        Columns of ``table`` (any names: the map draws any two columns).

    Returns
    -------
    pandas.DataFrame
        The columns ``risk`` and ``utility`` as float64, same index (NaN kept).

    Raises
    ------
    geosynth.errors.InputError
        ``table`` is not a DataFrame, lacks a column or has it twice, repeats a label (its
        rows were matched by label: a repeated one raised pandas' "truth value of a Series is
        ambiguous"), or has ±inf in a column.
    geosynth.errors.InputTypeError
        A column holds text (``"0.1"``: a table read from a file as strings was compared as
        numbers silently), booleans or other objects; convert it with ``pd.to_numeric``.
    """
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"table must be a pandas DataFrame of candidates (Tuning.table), got "
                         f"{type(table).__name__}")
    for role, column in (("risk", risk), ("utility", utility)):
        if not isinstance(column, str) or column not in table.columns:
            raise InputError(f"{role}={column!r} is not a column of table; its columns are "
                             f"{[str(c) for c in table.columns]}")
    check_unique_columns(table, "table", [risk, utility])
    repeated = table.index[table.index.duplicated()].unique()
    if len(repeated):
        raise InputError(f"table has several rows labelled {list(repeated)[:5]}; each row is "
                         "one candidate, labelled once: rename the copies or drop them "
                         "(table[~table.index.duplicated()] keeps the first)")
    return pd.DataFrame({column: _ru_column(table[column], role, column)
                         for role, column in (("risk", risk), ("utility", utility))},
                        index=table.index)[[risk, utility]]


def _ru_column(values: pd.Series, role: str, column: str) -> np.ndarray:
    """Return one measure of an R-U table as floats: numbers or NaN, never ±inf or text."""
    name = f"{role} column {column!r} of table"
    kinds = pd.api.types
    if (kinds.is_numeric_dtype(values) and not kinds.is_bool_dtype(values)
            and not kinds.is_complex_dtype(values)):  # nullable Float64/Int64: pd.NA is NaN
        array = values.to_numpy(dtype=np.float64, na_value=np.nan)
    else:  # an object column: numbers and missing values (check_real_array names the rest)
        known = values.astype(object).where(values.notna(), None)  # pd.NA: None, read as NaN
        try:
            array = check_real_array(known, name, "numbers (NaN where a candidate has none)")
        except InputError as err:  # the fix, for text read from a file
            raise type(err)(f"{err}; give numbers (pd.to_numeric(table[{column!r}]) converts "
                            "text)") from None
    infinite = values.index[np.isinf(array)]
    if len(infinite):
        raise InputError(f"{name} is infinite for {list(infinite)[:5]}; a measure is a finite "
                         "number, or NaN where the candidate has none")
    return array
