"""Borrowed views (geosynth.model.borrow): same memory and type, no runtime owner.

The views must read and write the arrays they were made from, keep the tuple's type (so no
kernel compiles twice), keep members that are not arrays, and carry a null ``meminfo`` — the
property that lets numba's runtime skip their reference counts. That the engine's draws are
unchanged bit for bit by borrowing is the golden test's (``tests/test_golden.py``).
"""

from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from geosynth.model.borrow import borrowed


class Pair(NamedTuple):
    values: np.ndarray
    grid: np.ndarray
    size: int


@intrinsic
def _meminfo_address(typingctx, array):
    """Address of ``array``'s meminfo (0 for an array numba's runtime does not own)."""
    if not isinstance(array, types.Array):
        return None

    def codegen(context, builder, signature, args):
        view = context.make_array(array)(context, builder, value=args[0])
        return builder.ptrtoint(view.meminfo, context.get_value_type(types.intp))

    return types.intp(array), codegen


@njit
def _write_through(pair):
    view = borrowed(pair)
    for i in range(view.values.shape[0]):
        view.values[i] = 2.0 * view.values[i] + view.size
    view.grid[1, 2] = -1.0
    return view.grid.sum(), view.grid.shape[0], view.grid.shape[1]


@njit
def _owners(pair):
    view = borrowed(pair)
    return (_meminfo_address(pair.values), _meminfo_address(view.values),
            _meminfo_address(view.grid))


def _pair():
    return Pair(np.arange(5.0), np.ones((3, 4)), 7)


def test_views_share_the_arrays_memory_shape_and_other_members():
    pair = _pair()
    total, rows, cols = _write_through(pair)
    np.testing.assert_array_equal(pair.values, 2.0 * np.arange(5.0) + 7)
    assert pair.grid[1, 2] == -1.0
    assert (rows, cols) == (3, 4)
    assert total == 12.0 - 2.0


def test_views_have_no_runtime_owner():
    owner, values, grid = _owners(_pair())
    assert owner != 0  # arrays from Python are owned by numba's runtime ...
    assert values == 0 and grid == 0  # ... their borrowed views are not


def test_the_tuple_type_is_kept():
    @njit
    def total(pair):
        return pair.values.sum() + pair.grid.sum() + pair.size

    @njit
    def total_of_view(pair):
        return total(borrowed(pair))

    pair = _pair()
    assert total_of_view(pair) == total(pair) == 10.0 + 12.0 + 7
    assert len(total.signatures) == 1  # the view's type is the tuple's: one compilation
