"""glibc's math functions bound for the kernels (geosynth.samplers.libm): bound, and the same bits.

After ``import geosynth.samplers`` LLVM's ``exp``, ``log``, ``expm1`` and ``log1p`` must be
glibc's own functions, and a kernel's results must equal, bit for bit, those of CPython's
``math`` module — which calls glibc's public symbols — over arguments spanning underflow,
overflow, subnormal results, tiny arguments and special values.
"""

import math
import sys

import llvmlite.binding as llvm
import numpy as np
import pytest
from numba import njit

import geosynth.samplers  # noqa: F401 -- binds on import
from geosynth.samplers.libm import GLIBC_SYMBOLS, bind_glibc_math

glibc = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")


@njit
def _apply(x, out):
    for i in range(x.shape[0]):
        out[0, i] = math.exp(x[i])
        out[1, i] = math.log(abs(x[i]))
        out[2, i] = math.expm1(x[i])
        out[3, i] = math.log1p(abs(x[i]))


def _arguments():
    rng = np.random.default_rng(7)
    special = [0.0, -0.0, 1e-310, -1e-310, 1e-17, -1e-17, 709.78, 709.79, -708.4, -745.1,
               -746.0, 800.0, -800.0, np.inf, -np.inf, np.nan]
    return np.concatenate([rng.normal(0.0, 5.0, 20_000), rng.uniform(-750, 750, 20_000),
                           np.ldexp(1.0, np.arange(-60, 10)), special])


@glibc
def test_llvm_resolves_each_function_to_glibc():
    found = bind_glibc_math()
    assert set(found) == set(GLIBC_SYMBOLS)
    for name, address in found.items():
        assert llvm.address_of_symbol(name) == address, name


def test_kernels_compute_the_same_bits_as_python_math():
    x = _arguments()
    out = np.empty((4, x.shape[0]))
    with np.errstate(all="ignore"):
        _apply(x, out)
    for row, function in enumerate((math.exp, lambda v: math.log(abs(v)), math.expm1,
                                    lambda v: math.log1p(abs(v)))):
        expected = np.array([_python(function, v) for v in x])
        np.testing.assert_array_equal(out[row], expected, err_msg=str(row), strict=True)


def _python(function, value):
    """CPython's result, with its overflow and domain errors read as IEEE's inf, -inf and NaN."""
    try:
        return function(value)
    except OverflowError:
        return math.inf
    except ValueError:  # log(0), log1p(-1): -inf; log of NaN is NaN without an error
        return -math.inf
