"""Bind the compiled kernels' ``exp``, ``log``, ``expm1`` and ``log1p`` straight to glibc's.

numba links every kernel's calls of these functions to the addresses its own C helper library
took of them when its wheel was built (``numba._helperlib.c_helpers``, installed in LLVM's
symbol table when numba's CPU target starts). On Linux that library was built against an old
glibc, so a call goes through a stub of the helper library to glibc's compatibility wrapper
(the SVID error handling kept for binaries of glibc < 2.29), which calls the function proper.
The engine makes tens of thousands of these calls a sweep — the ε draws, the scale moves'
``expm1`` — and the two hops cost a third of each call: an ``exp`` plus a ``log`` took 3.7 ns
bound here against 5.4 ns through numba's binding (Zen 5, ``bench/RESULTS.md``, 2026-11-28,
twelfth session).

:func:`bind_glibc_math` points LLVM's symbol table at glibc's implementations themselves:
``__exp_finite`` and ``__log_finite`` (GLIBC_2.15 ABI symbols: the ``exp`` and ``log`` that
the wrappers call, without their ``errno`` bookkeeping, which compiled kernels never read) and
``expm1`` and ``log1p`` (no wrapper). They are the very functions numba's binding ends in, so
the results are the same bits (the golden test, ``tests/test_golden.py``, pins them). Kernels
linked afterwards — every one, since :mod:`geosynth.samplers` binds on import, before any
kernel of the package is compiled or loaded from numba's cache — use them. Where glibc or one
of the symbols is missing (macOS, Windows, musl), numba's binding stays.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["GLIBC_SYMBOLS", "bind_glibc_math"]

#: LLVM's name of each function, and the glibc symbol and version bound to it.
GLIBC_SYMBOLS = {
    "exp": ("__exp_finite", "GLIBC_2.15"),
    "log": ("__log_finite", "GLIBC_2.15"),
    "expm1": ("expm1", "GLIBC_2.2.5"),
    "log1p": ("log1p", "GLIBC_2.2.5"),
}


def _glibc_addresses() -> dict[str, int]:
    """Address of each symbol of :data:`GLIBC_SYMBOLS` in glibc's libm (empty if not glibc)."""
    if not sys.platform.startswith("linux"):
        return {}
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        dlvsym = ctypes.CDLL(None).dlvsym
    except (OSError, AttributeError):  # no libm by that name, or no dlvsym (not glibc)
        return {}
    dlvsym.restype = ctypes.c_void_p
    dlvsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    found = {}
    for name, (symbol, version) in GLIBC_SYMBOLS.items():
        address = dlvsym(libm._handle, symbol.encode(), version.encode())
        if address:
            found[name] = address
    return found


def bind_glibc_math() -> dict[str, int]:
    """Bind LLVM's ``exp``, ``log``, ``expm1`` and ``log1p`` to glibc's functions.

    Starts numba's CPU target first (which installs numba's own binding), so that this one
    stays. Kernels linked before the call keep numba's binding (same results, slower calls).

    Returns
    -------
    dict of str to int
        The functions bound and their addresses; empty where glibc was not found.
    """
    import llvmlite.binding as llvm
    from numba.core.registry import cpu_target

    cpu_target.target_context  # noqa: B018 -- starts the target: numba's binding goes in here
    found = _glibc_addresses()
    for name, address in found.items():
        llvm.add_symbol(name, address)
    return found
