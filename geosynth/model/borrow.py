"""Borrowed views of the engine's arrays, which numba does not reference-count.

numba counts the references of every array it passes between compiled functions, atomically,
through two out-of-line calls (``NRT_incref`` and ``NRT_decref``) that its refcount pruning
removes only where a pair sits in straight-line code. The engine's per-cell and per-entry
helpers receive the state's arrays inside loops, so at G = 1,600 × B = 12 a sweep made about
195,000 of those calls — a tenth of its time on the Zen 5 machine of ``bench/RESULTS.md``
(2026-11-28, twelfth session), the atomic ``lock`` instructions most of it.

:func:`borrowed` returns a copy of a tuple of arrays (a :class:`~geosynth.model.state.ModelData`
or :class:`~geosynth.model.state.GibbsState`) whose arrays share the data but carry no
``meminfo``: numba's runtime then skips their counts (a null check, no atomic), as it does for
any array it does not own (``numba.carray`` views of foreign memory). The types are unchanged,
so every kernel compiles once, and so are the draws, bit for bit.

A borrowed view does not keep its data alive. It is safe for the arguments of a kernel called
from Python (the caller holds them for the call) and must not escape that kernel: the run loops
borrow ``data`` and ``s`` on entry and return only scalars.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["borrowed"]


def _borrowed_array(context, builder, array_type, value):
    """LLVM value of the array ``value`` with its ``meminfo`` and ``parent`` set to null."""
    source = context.make_array(array_type)(context, builder, value=value)
    view = context.make_array(array_type)(context, builder)
    context.populate_array(
        view, data=source.data, shape=source.shape, strides=source.strides,
        itemsize=source.itemsize, meminfo=cgutils.get_null_value(view.meminfo.type),
        parent=cgutils.get_null_value(view.parent.type),
    )
    return view._getvalue()


@intrinsic
def borrowed(typingctx, arrays):
    """Return ``arrays`` with each array member replaced by a borrowed view of it.

    Parameters
    ----------
    arrays : tuple or NamedTuple
        Typically ``ModelData`` or ``GibbsState``; members that are not arrays are kept (and
        their references counted as usual).

    Returns
    -------
    Same type as ``arrays``
        Views of the same memory that numba's runtime does not reference-count; valid only
        while the caller holds ``arrays`` (see the module docstring).
    """
    if not isinstance(arrays, types.BaseTuple):
        return None

    def codegen(context, builder, signature, args):
        (value,) = args
        out = value
        for k, member_type in enumerate(arrays.types):
            member = builder.extract_value(value, k)
            if isinstance(member_type, types.Array):
                out = builder.insert_value(
                    out, _borrowed_array(context, builder, member_type, member), k)
            else:  # the returned tuple holds its own reference to anything else
                context.nrt.incref(builder, member_type, member)
        return out

    return arrays(arrays), codegen
