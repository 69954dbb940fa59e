"""Pieces of the error messages shared by the validating modules."""

from __future__ import annotations

import inspect
import os
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # not at run time: the command line imports this module before NumPy loads
    import numpy as np
    import pandas as pd

__all__ = ["caller_stacklevel", "describe_rows", "list_positions", "CONTROL_CHARACTERS",
           "exact_number", "format_bytes", "NOISY_COUNTS"]

#: What maps and figures call the counts of a differentially private fit: its noise (negative
#: counts too) was labelled "records (original)", "Records per cell" and "observed counts", and
#: read as the confidential truth.
NOISY_COUNTS = "noisy counts (DP, not the records)"

SHOW_ROWS = 5
SHOW_LABEL_CHARS = 60  # longest row label shown

#: C0 controls (newline, tab, ESC), DEL and C1 controls: no file name or label holds them on
#: purpose, and a terminal may act on any of them.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


#: Where the package's own files live: frames here are not the caller a warning points at.
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def caller_stacklevel() -> int:
    """Return the ``stacklevel`` of the first frame outside geosynth, seen from the warner.

    For :func:`warnings.warn` in the function that calls this: a fixed level pointed into the
    package when a public function was reached through another (``geosynth.synthesize`` calls
    :func:`geosynth.synth.paiva.synthesize`; a lattice's constructors call each other), or past
    the user's line when it was not. Frames of other libraries on the way in (a thread pool's
    worker) end the walk as the user's would. pandas points its warnings the same way
    (``pandas.util._exceptions.find_stack_level``).
    """
    frame = inspect.currentframe()
    frame = frame.f_back if frame is not None else None  # the function that warns: level 1
    level = 1
    while (frame is not None and frame.f_back is not None
           and frame.f_code.co_filename.startswith(_PACKAGE)):
        frame, level = frame.f_back, level + 1
    return level


def describe_rows(index: pd.Index, bad: np.ndarray, limit: int = SHOW_ROWS) -> str:
    """Describe the first ``limit`` labels of ``index`` where ``bad`` is True.

    Parameters
    ----------
    index : pandas.Index
        Row labels of the checked table.
    bad : numpy.ndarray of bool, shape (len(index),)
        True at the offending rows.
    limit : int, default 5
        Number of labels shown.

    Returns
    -------
    str
        Text such as ``"rows [3, 17, 'a'] and 12 more"`` for error messages: one line, each
        label cut to a readable length and without control characters.
    """
    import numpy as np

    labels = index[np.asarray(bad, dtype=bool)]
    shown = ", ".join(_label(label) for label in labels[:limit].tolist())
    more = len(labels) - limit
    return f"rows [{shown}]" + (f" and {more} more" if more > 0 else "")


def list_positions(positions: list[int], limit: int = SHOW_ROWS) -> str:
    """Return the first ``limit`` positions, e.g. ``"0, 2, 5 and 3 more"`` (of releases).

    Parameters
    ----------
    positions : list of int
        Positions, in the order shown.
    limit : int, default 5
        Number of positions shown.

    Returns
    -------
    str
    """
    shown = ", ".join(map(str, positions[:limit]))
    more = len(positions) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def _label(label: object) -> str:
    """``repr(label)`` without control characters, cut to :data:`SHOW_LABEL_CHARS`.

    An object's own repr may hold an escape sequence or a newline.
    """
    shown = CONTROL_CHARACTERS.sub("?", repr(label))
    return shown if len(shown) <= SHOW_LABEL_CHARS else shown[: SHOW_LABEL_CHARS - 3] + "..."


def exact_number(value: float) -> str:
    """Write ``value`` with every digit it has (the shortest text that reads back to it).

    ``f"{value:g}"`` keeps six digits: a lattice tuned at 1999.9996 m was printed, and then
    released, as 2000 m, another lattice (25 cells, not 36). Whole numbers lose their ``.0``.

    An int is written as it is (as a float it would lose digits beyond 2**53).

    Parameters
    ----------
    value : float or int

    Returns
    -------
    str
        E.g. ``"1999.9996"``, ``"2000"``, ``"1e-05"``.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def format_bytes(n: float, exact: bool = False) -> str:
    """``n`` bytes in the largest binary unit up to PiB that keeps it >= 1 (``"4.0 GiB"``).

    The one formatter of the memory and size limits' messages (the fit's ``max_bytes``, the DP
    releases' and the zip archives' limits had one each). An int too large for a float, such
    as ``max_bytes=10**400``, is shown by its power of ten (the float division raised
    OverflowError in place of the message).

    Parameters
    ----------
    n : int or float
        A number of bytes, >= 0.
    exact : bool, default False
        Follow a rounded size with the exact count, ``"64.0 MiB (67,108,864 bytes)"`` (for
        limits a user compares with a file's size).

    Returns
    -------
    str
        ``"512 bytes"``, ``"1.5 KiB"`` ... ``"12.0 PiB"``, ``"3.4e+09 PiB"``, or
        ``"about 1e400 bytes"``.
    """
    if n < 1024:
        return f"{int(n):,} bytes"
    if exact:
        return f"{format_bytes(n)} ({int(n):,} bytes)"
    for unit, power in (("KiB", 10), ("MiB", 20), ("GiB", 30), ("TiB", 40)):
        if n < 2 ** (power + 10):
            return f"{n / 2**power:,.1f} {unit}"
    try:
        value = n / 2**50
    except OverflowError:  # an int beyond the largest float
        import math

        return f"about 1e{int(math.log10(n))} bytes"
    return f"{value:,.1f} PiB" if value < 1e6 else f"{value:.3g} PiB"
