"""A privacy-budget accountant: sequential and parallel composition with a ledger.

Composition rules for pure ε-DP and (ε, δ)-DP ([DR14]_ Thm. 3.16; [McS09]_):

- **Sequential**: mechanisms run on the *same* data compose by summing, a release made of
  (ε_i, δ_i)-DP parts is (Σ ε_i, Σ δ_i)-DP. This is the default: every :meth:`Accountant.spend`
  outside a block adds to the total.
- **Parallel**: mechanisms run on *disjoint* partitions of the data (each individual in at most
  one partition, partitions chosen without looking at the data) compose by the maximum,
  (max ε_i, max δ_i)-DP. Spends inside an :meth:`Accountant.parallel` block are combined that
  way and the block is charged once to the enclosing budget. This holds for *add/remove-one*
  neighbours (unbounded DP, [McS09]_), the relation geosynth states its ε for. Under
  *replace-one* neighbours a replaced record can leave one partition and enter another, so two
  partitions change and the block costs up to the sum of its two largest spends (each stated
  for one record added or removed), not their maximum; statements of parallel composition that
  omit the neighbour relation ("ε-DP on disjoint subsets compose to max ε" read with bounded
  DP) are wrong there. Charge such partitions
  sequentially, or noise the whole partitioned statistic as one vector with its replace-one
  sensitivity (as :func:`geosynth.dp.locations.dp_counts` does with ``neighbours="replace"``).
- **Post-processing** is free: any function of a DP release (rounding, clipping negative counts
  to zero, fitting a model to noisy counts, plotting) is as private as the release and costs
  nothing, so there is nothing to spend for it.

Blocks nest: inside a parallel block each spend is its own partition; a
:meth:`Accountant.sequential` sub-block inside a parallel block is one partition whose spends
add up (e.g. a count and a mean per region); a parallel block inside a parallel block is one
partition that is itself split further.

The accountant follows diffprivlib's check → spend → compute order: mechanisms in
:mod:`geosynth.dp.mechanisms` call :meth:`Accountant.spend` before drawing noise, and a spend
that would exceed the budget raises :class:`~geosynth.errors.BudgetExceededError` and records
nothing, so no noise is drawn for it.

Totals are kept as exact rationals of the float spends: with float sums, a spend below half an
ulp of the total vanished (``1.0 + 1e-16 == 1.0``), so a spent budget paid for any number of
them. One accountant may be shared by threads (e.g. mechanisms run by a
``concurrent.futures`` executor) and by asyncio tasks: the check and the record of a spend are
one locked step, and blocks belong to the thread, or the asyncio task, that opened them, so
another's spend is never taken for a partition of a parallel block it did not open (their
releases are on the same data and
add up). Processes do not share it: a copy pickled to another process (e.g. by a
``ProcessPoolExecutor``) keeps a ledger of its own, and its spends are not charged here; charge
this accountant for the work sent to other processes.

References
----------
.. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy",
   Foundations and Trends in Theoretical Computer Science 9(3-4), 2014.
.. [McS09] F. McSherry, "Privacy Integrated Queries", SIGMOD 2009 (parallel composition).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
import math
import numbers
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import pandas as pd

from geosynth._validation import (
    check_epsilon,
    check_optional_str,
    check_probability,
    is_integer,
)
from geosynth.errors import BudgetExceededError, InputError, InputTypeError

__all__ = ["Accountant", "check_accountant", "deepcopy_sharing_budget", "ledger_of"]

#: Relative slack allowed when comparing a total with the budget, so that e.g. ten spends of
#: 0.1 fit a budget of 1.0 despite floating-point rounding.
RELATIVE_TOLERANCE = 1e-12

Composition = Literal["sequential", "parallel"]

LEDGER_COLUMNS = [
    "label",
    "epsilon",
    "delta",
    "composition",
    "group",
    "cumulative_epsilon",
    "cumulative_delta",
]
BLOCK_COLUMNS = ["id", "label", "composition", "parent", "epsilon", "delta"]

_FORMAT = "geosynth.dp.Accountant"
_FORMAT_VERSION = 1
#: The files whose frames open a block on someone's behalf (:func:`_opening_frame`).
_OWN_FILES = frozenset({__file__, contextlib.__file__})
_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR


#: The largest float: a total above it cannot be shown (an uncapped budget allows it).
_FLOAT_MAX = Fraction(sys.float_info.max)

Cost = tuple[Fraction, Fraction]
_ZERO: Cost = (Fraction(0), Fraction(0))


@dataclass
class _Block:
    """An open composition block: the exact combined cost of its finished children."""

    id: int | None  # None for the accountant's top level
    label: str | None
    composition: Composition
    parent: int | None
    epsilon: Fraction = Fraction(0)
    delta: Fraction = Fraction(0)
    opener: Any = field(default=None, repr=False, compare=False)  # frame of its ``with``


def _opening_frame() -> Any:
    """Return the frame whose code a block belongs to: the one whose ``with`` opened it.

    Skips :meth:`Accountant._block` and contextlib's machinery, and the wrappers of the user's
    own: a ``__enter__`` method, and a ``@contextmanager`` generator entered by contextlib
    (its body runs in the frame of the ``with`` that uses it, while the generator is
    suspended at its ``yield``: five spends of 1.0 there went to the top level, 5.0).
    """
    frame = sys._getframe(1)
    while frame is not None and (
        frame.f_code.co_filename in _OWN_FILES
        or frame.f_code.co_name in ("__enter__", "__aenter__")
        or (frame.f_code.co_flags & _GENERATOR_FLAGS and frame.f_back is not None
            and frame.f_back.f_code.co_filename in _OWN_FILES)
    ):
        frame = frame.f_back
    return frame


def _flow() -> tuple[int, asyncio.Task | None]:
    """Return who owns the blocks opened now: this thread, and the asyncio task running in it.

    Tasks of one event loop share a thread: keyed by thread alone, a task's spends made while
    another task's parallel block was open (at an ``await`` inside it) were partitions of that
    block, charged by the maximum (nine spends of 1 cost 1). The task itself is the key, not its
    ``id``, which a later task could reuse.
    """
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop running in this thread
        task = None
    return threading.get_ident(), task


def _combine(composition: Composition, first: Cost, second: Cost) -> Cost:
    if composition == "parallel":
        return max(first[0], second[0]), max(first[1], second[1])
    return first[0] + second[0], first[1] + second[1]


def _exact(epsilon: float, delta: float) -> Cost:
    """Return the exact rationals of two floats (float sums round, and drop tiny spends)."""
    return Fraction(epsilon), Fraction(delta)


def _fits(total: Fraction, budget: float) -> bool:
    """Whether the exact ``total`` is within the budget and its relative tolerance."""
    if math.isinf(budget):
        return True
    return total <= Fraction(budget) * (1 + Fraction(RELATIVE_TOLERANCE))


def ledger_of(accountant: Any) -> dict | None:
    """Return ``accountant.to_dict()``, or None for no accountant or one without ``to_dict``.

    The mechanisms take any object with ``spend`` (:func:`check_accountant`); calling
    ``to_dict`` unconditionally raised after the spend and the draw, losing both.

    Parameters
    ----------
    accountant : object or None
        The accountant given to a release.

    Returns
    -------
    dict or None
        The ledger written into the release's record.
    """
    to_dict = getattr(accountant, "to_dict", None)
    return to_dict() if callable(to_dict) else None


def deepcopy_sharing_budget(holder: Any, memo: dict[int, Any]) -> Any:
    """Return a deep copy of ``holder`` that shares its ``accountant``: one budget for both.

    The ``__deepcopy__`` of a mechanism that charges an accountant: a copy with a deep-copied
    accountant charged its spends to a ledger of its own, so the copy's release of the same
    records (a second ε) never reached the original budget. The state is the holder's
    ``__getstate__``, restored by its ``__setstate__`` when it has one.

    Parameters
    ----------
    holder : object
        The mechanism, with an ``accountant`` attribute (None: nothing shared).
    memo : dict
        :func:`copy.deepcopy`'s memo.

    Returns
    -------
    object
        The copy, of ``type(holder)``.
    """
    accountant = getattr(holder, "accountant", None)
    if accountant is not None:
        memo[id(accountant)] = accountant
    twin = type(holder).__new__(type(holder))
    memo[id(holder)] = twin
    state = copy.deepcopy(holder.__getstate__(), memo)
    if hasattr(twin, "__setstate__"):
        twin.__setstate__(state)
    else:
        twin.__dict__.update(state)
    return twin


def check_accountant(accountant: Any) -> None:
    """Refuse an ``accountant`` argument that is neither None nor able to pay for a spend.

    Mechanisms and synthesizers take any object with the ``spend(epsilon, delta, label=...)``
    method of :class:`Accountant` (duck typing), so that callers can wrap or replace it.

    Parameters
    ----------
    accountant : object
        The value given for the ``accountant`` parameter.

    Raises
    ------
    TypeError
        ``accountant`` is not None and has no callable ``spend``.
    """
    if accountant is not None and not callable(getattr(accountant, "spend", None)):
        raise InputTypeError(
            "accountant must be a geosynth.dp.accountant.Accountant (or have a "
            f"spend(epsilon, delta, label=...) method), got {type(accountant).__name__}"
        )


def _check_spend_epsilon(epsilon: Any) -> float:
    return check_epsilon(epsilon, hint="pass the privacy loss of the mechanism, e.g. epsilon=0.5")


def _check_delta(delta: Any, what: str) -> float:
    return check_probability(delta, "delta", zero=True,
                             hint=f"use delta=0 for pure epsilon-DP {what}")


def _frame(rows: list[dict[str, Any]], dtypes: dict[str, Any]) -> pd.DataFrame:
    """Build a DataFrame column by column, keeping ``None`` labels and nullable integer ids."""
    return pd.DataFrame(
        {
            column: pd.Series([row[column] for row in rows], dtype=dtype)
            for column, dtype in dtypes.items()
        }
    )


def _float_up(total: Fraction) -> float:
    """Return the smallest float not below ``total`` (a saved total is never below the spent)."""
    value = float(total)
    return math.nextafter(value, math.inf) if Fraction(value) < total else value


def _left(budget: float, spent: Fraction) -> float:
    """``budget - spent`` exactly, rounded to a float, never negative (``inf`` stays ``inf``)."""
    return budget if math.isinf(budget) else float(max(Fraction(budget) - spent, Fraction(0)))


def _to_json_number(value: float) -> float | str:
    return value if math.isfinite(value) else "inf"


def _from_json_number(value: Any, name: str) -> float:
    if isinstance(value, str) and value == "inf":
        return math.inf
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a number or 'inf' in an accountant dict, got {value!r}")
    try:
        return float(value)
    except OverflowError:  # an int beyond the float range
        return math.inf if value > 0 else -math.inf


def _check_number(value: Any, name: str) -> None:
    """Refuse a ledger or block number that is not finite and >= 0 (NaN included)."""
    if not 0 <= _from_json_number(value, name) < math.inf:
        raise InputError(f"{name} must be a finite number >= 0 in an accountant dict, got "
                         f"{value!r}")


def _check_entries(rows: list[dict], blocks: list[dict], spent: tuple[float, float]) -> None:
    """Refuse ledger rows and blocks :meth:`Accountant.ledger` and ``blocks`` cannot show.

    A string ε raised a bare ValueError only when the ledger was read, and a record whose
    spent totals were below its own ledger's (e.g. edited to 0) restored the spent budget.
    """
    ids = [b["id"] for b in blocks]
    bad = [i for i in ids if not (is_integer(i) and i >= 1)]
    if bad:  # int() raised a bare ValueError or TypeError
        raise InputError(f"the record's block ids must be integers >= 1, got {bad[:5]!r}")
    if len(set(ids)) != len(ids):
        raise InputError(f"the record's block ids must be distinct, got {ids!r}")
    for k, row in enumerate(rows):
        _check_entry(row, f"ledger row {k}", "group", ids)
    for k, block in enumerate(blocks):
        _check_entry(block, f"block {k}", "parent", ids)
    charged = [max((float(row[f"cumulative_{c}"]) for row in rows), default=0.0)
               for c in ("epsilon", "delta")]
    if spent[0] < charged[0] or spent[1] < charged[1]:
        raise InputError(
            f"the record's spent totals epsilon={spent[0]!r}, delta={spent[1]!r} are below "
            f"what its own ledger charged (epsilon={charged[0]!r}, delta={charged[1]!r}); "
            "the record was altered: restore the accountant from the original record"
        )


def _check_entry(entry: dict, where: str, link: str, ids: list) -> None:
    """Check one ledger row or block: numbers, composition, label and its block link."""
    for column in ("epsilon", "delta", "cumulative_epsilon", "cumulative_delta"):
        if column in entry:
            _check_number(entry[column], f"{where}: {column}")
    if entry["composition"] not in ("sequential", "parallel"):
        raise InputError(f"{where}: composition must be 'sequential' or 'parallel', got "
                         f"{entry['composition']!r}")
    if not (entry[link] is None or (is_integer(entry[link]) and entry[link] in ids)):
        raise InputError(f"{where}: {link} must be None or a block id of the record {ids!r}, "
                         f"got {entry[link]!r}")
    if not (entry["label"] is None or isinstance(entry["label"], str)):
        raise InputError(f"{where}: label must be a str or None, got {entry['label']!r}")


class Accountant:
    r"""Track the privacy budget of a release under sequential and parallel composition.

    Parameters
    ----------
    epsilon : float
        Total ε budget, > 0. ``float("inf")`` is accepted only when passed explicitly and
        means *no cap*: every spend is allowed and recorded in the ledger (useful to measure
        what a pipeline costs), but the release then has no privacy guarantee from this
        accountant.
    delta : float, default 0.0
        Total δ budget in [0, 1). With the default 0, only pure ε-DP mechanisms can be charged.

    Attributes
    ----------
    epsilon, delta : float
        The budget.
    spent_epsilon, spent_delta : float
        Charged so far (parallel blocks count by their maximum).
    remaining_epsilon, remaining_delta : float
        Budget left, never negative.

    Raises
    ------
    TypeError
        If a budget is not a real number.
    geosynth.errors.InputError
        If ``epsilon`` is NaN or ≤ 0, or ``delta`` is outside [0, 1).

    See Also
    --------
    geosynth.dp.mechanisms.laplace : a mechanism that takes ``accountant=``.

    Notes
    -----
    A spend is accepted when the new total, summed exactly (as rationals), satisfies
    ``total <= budget * (1 + 1e-12)`` for both ε and δ (a relative tolerance for the decimal
    values floats cannot hold, e.g. ten spends of 0.1 against 1.0); otherwise
    :class:`~geosynth.errors.BudgetExceededError` is raised and nothing is
    recorded. Inside a :meth:`parallel` block the budget is checked at *every* spend: a spend is
    refused if raising the block's maximum to it would exceed the budget, before any noise is
    drawn, so a block can never be left half-charged.

    Composition is the basic (not advanced) theorem, which is tight for pure ε-DP.

    Examples
    --------
    >>> from geosynth.dp.accountant import Accountant
    >>> accountant = Accountant(1.0)
    >>> accountant.spend(0.3, label="total count")
    >>> with accountant.parallel(label="counts per region"):
    ...     for region in ["north", "south", "east"]:
    ...         accountant.spend(0.5, label=region)  # disjoint regions: charged once
    >>> accountant.spent_epsilon
    0.8
    >>> accountant.ledger["cumulative_epsilon"].tolist()
    [0.3, 0.8, 0.8, 0.8]
    """

    def __init__(self, epsilon: float, delta: float = 0.0) -> None:
        self._epsilon = check_epsilon(
            epsilon, allow_infinity=True, hint="pass the total privacy budget of the release, "
            "e.g. Accountant(1.0) (float('inf') for an uncapped ledger)",
        )
        self._delta = _check_delta(delta, "budgets")
        self._root = _Block(None, None, "sequential", None)
        self._open: dict[Any, list[_Block]] = {}  # each _flow()'s open blocks, outermost first
        self._lock = threading.RLock()
        self._rows: list[dict[str, Any]] = []
        self._blocks: dict[int, dict[str, Any]] = {}
        self._next_id = 1
        self._spent: Cost = _ZERO

    # ----------------------------------------------------------------------------------------
    # Budget
    # ----------------------------------------------------------------------------------------

    @property
    def epsilon(self) -> float:
        """Total ε budget."""
        return self._epsilon

    @property
    def delta(self) -> float:
        """Total δ budget."""
        return self._delta

    @property
    def spent_epsilon(self) -> float:
        """ε charged so far (the exact sum, rounded to the nearest float)."""
        return float(self._spent[0])

    @property
    def spent_delta(self) -> float:
        """δ charged so far (the exact sum, rounded to the nearest float)."""
        return float(self._spent[1])

    @property
    def remaining_epsilon(self) -> float:
        """ε left (``inf`` for an uncapped accountant), never negative."""
        return _left(self._epsilon, self._spent[0])

    @property
    def remaining_delta(self) -> float:
        """δ left, never negative."""
        return _left(self._delta, self._spent[1])

    @property
    def remaining(self) -> tuple[float, float]:
        """``(remaining_epsilon, remaining_delta)``."""
        return self.remaining_epsilon, self.remaining_delta

    def __getstate__(self) -> dict[str, Any]:
        """Return the state to pickle or copy: a snapshot of its own, with no block open.

        As :meth:`from_dict`, the copy holds what was charged so far and its open blocks are
        closed: a copy made inside a block kept that block open for ever under this thread's
        id, so every later spend of the copy was one more partition of a parallel block
        (charged by the maximum: any number of spends of 0.5 fitted a budget of 1). The ledger
        and blocks are the copy's own (a shallow copy shared them and the total, and its
        spends were charged to the original but not shown in its ``spent_epsilon``). The lock
        is left out (it cannot be pickled).
        """
        with self._lock:
            state = dict(self.__dict__)
            state.update(
                _root=_Block(None, None, "sequential", None, *self._spent),
                _open={},
                _rows=[dict(row) for row in self._rows],
                _blocks=self._block_records(),
            )
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled or copied accountant, with a lock of its own."""
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return (
            f"Accountant(epsilon={self._epsilon!r}, delta={self._delta!r}, "
            f"spent_epsilon={self.spent_epsilon!r}, spent_delta={self.spent_delta!r})"
        )

    # ----------------------------------------------------------------------------------------
    # Spending
    # ----------------------------------------------------------------------------------------

    def _stack(self) -> list[_Block]:
        """Return the caller's (:func:`_flow`) open blocks (a new, unstored list if none)."""
        return self._open.get(_flow(), [])

    def _active(self, stack: list[_Block]) -> int:
        """Position in ``stack`` of the block the caller is inside of (-1: none).

        A block holds the spends made while the code that opened it runs: the innermost frame
        of the call stack that opened an open block names it. A generator that holds ``with
        accountant.parallel():`` and is suspended at a ``yield`` has the block open in this
        thread, and the caller's own spends meanwhile became partitions of it, charged by the
        maximum: five spends of 1.0 cost 1.0. They go to the block the caller is inside of, or
        the top level; and the generator's, resumed inside a block of the caller's, go to its
        own block, not the caller's.
        """
        if not stack:
            return -1
        opened = {id(block.opener): position for position, block in enumerate(stack)}
        frame = sys._getframe(1)
        while frame is not None:
            position = opened.get(id(frame))
            if position is not None and stack[position].opener is frame:
                return position
            frame = frame.f_back
        return -1

    def _total(self, leaf: Cost | None = None) -> Cost:
        """Return the exact top-level total, with ``leaf`` added to the caller's active block.

        The top level is sequential: its own cost plus what the open blocks of every thread and
        asyncio task (:func:`_flow`) cost so far (they release on the same data, so their costs
        add; a spend in one is never a partition of another's parallel block). Each flow's
        blocks are folded into their parents (the block active when they opened), not into
        the block below them in the stack: a caller's block opened above a suspended
        generator's parallel block was folded into it by the maximum.
        """
        me = _flow()
        total = (self._root.epsilon, self._root.delta)
        for ident, stack in [*self._open.items(), *([] if me in self._open else [(me, [])])]:
            at = self._active(stack) if ident == me and leaf is not None else -2
            if at == -1:  # the caller is inside none of its open blocks: the top level
                total = _combine("sequential", total, leaf)
            cost = {block.id: (block.epsilon, block.delta) for block in stack}
            if at >= 0:
                active = stack[at]
                cost[active.id] = _combine(active.composition, cost[active.id], leaf)
            by_id = {block.id: block for block in stack}
            for block in reversed(stack):  # a child opens after its parent: innermost first
                parent = by_id.get(block.parent)
                if parent is not None:
                    cost[parent.id] = _combine(parent.composition, cost[parent.id],
                                               cost[block.id])
                else:
                    total = _combine("sequential", total, cost[block.id])
        return total

    def _where(self) -> str:
        stack = self._stack()
        at = self._active(stack)
        if at < 0:
            return ""
        block = stack[at]
        name = f" {block.label!r}" if block.label is not None else ""
        return f" inside {block.composition} block{name} (id {block.id})"

    def _refuse_if_over(self, epsilon: float, delta: float, label: str | None) -> Cost:
        total = self._total(_exact(epsilon, delta))
        if total[0] > _FLOAT_MAX:  # float(total) overflowed after the spend was half-recorded
            raise InputError(
                f"spending epsilon={epsilon!r} would raise the total beyond the largest float "
                f"({sys.float_info.max:.4g}), which the ledger cannot record; nothing was spent"
            )
        if _fits(total[0], self._epsilon) and _fits(total[1], self._delta):
            return total
        what = f" for {label!r}" if label is not None else ""
        raise BudgetExceededError(
            f"spending epsilon={epsilon!r}, delta={delta!r}{what}{self._where()} would raise "
            f"the total to epsilon={float(total[0])!r}, delta={float(total[1])!r}, above the "
            "budget "
            f"epsilon={self._epsilon!r}, delta={self._delta!r} (spent epsilon="
            f"{self.spent_epsilon!r}, delta={self.spent_delta!r}; remaining epsilon="
            f"{self.remaining_epsilon!r}, delta={self.remaining_delta!r}). Nothing was spent "
            "and no noise was drawn; lower epsilon/delta or raise the budget."
        )

    def check(self, epsilon: float, delta: float = 0.0) -> None:
        """Raise if spending ``(epsilon, delta)`` now would exceed the budget; spend nothing.

        Parameters
        ----------
        epsilon : float
            ε of the planned mechanism, finite and > 0.
        delta : float, default 0.0
            δ of the planned mechanism, in [0, 1).

        Raises
        ------
        geosynth.errors.BudgetExceededError
            If the spend would not fit (same message as :meth:`spend`).
        geosynth.errors.InputError
            If ``epsilon`` or ``delta`` is out of range.
        """
        epsilon, delta = _check_spend_epsilon(epsilon), _check_delta(delta, "spends")
        with self._lock:
            self._refuse_if_over(epsilon, delta, None)

    def spend(self, epsilon: float, delta: float = 0.0, label: str | None = None) -> None:
        """Check that ``(epsilon, delta)`` fits the budget, then record it.

        Outside a block the spend adds to the total (sequential composition). Inside a
        :meth:`parallel` block it is one partition: the block is charged its maximum.

        Parameters
        ----------
        epsilon : float
            ε of the mechanism about to run, finite and > 0.
        delta : float, default 0.0
            δ of the mechanism, in [0, 1).
        label : str, optional
            What is being released, for the ledger.

        Raises
        ------
        geosynth.errors.BudgetExceededError
            If the spend would exceed the budget; nothing is recorded.
        geosynth.errors.InputError
            If ``epsilon`` or ``delta`` is out of range.
        TypeError
            If an argument has the wrong type.
        """
        epsilon = _check_spend_epsilon(epsilon)
        delta = _check_delta(delta, "spends")
        label = check_optional_str(label, "label")
        with self._lock:  # check and record as one step: two threads cannot both fit
            total = self._refuse_if_over(epsilon, delta, label)
            stack = self._stack()
            at = self._active(stack)
            block = stack[at] if at >= 0 else self._root
            block.epsilon, block.delta = _combine(
                block.composition, (block.epsilon, block.delta), _exact(epsilon, delta)
            )
            self._spent = total
            self._rows.append(
                {
                    "label": label,
                    "epsilon": epsilon,
                    "delta": delta,
                    "composition": block.composition,
                    "group": block.id,
                    "cumulative_epsilon": float(total[0]),
                    "cumulative_delta": float(total[1]),
                }
            )

    # ----------------------------------------------------------------------------------------
    # Blocks
    # ----------------------------------------------------------------------------------------

    @contextmanager
    def _block(self, composition: Composition, label: str | None) -> Iterator[Accountant]:
        label = check_optional_str(label, "label")
        with self._lock:
            opened_by = _flow()
            stack = self._open.setdefault(opened_by, [])
            at = self._active(stack)
            parent = stack[at].id if at >= 0 else None
            block = _Block(self._next_id, label, composition, parent, opener=_opening_frame())
            self._next_id += 1
            self._blocks[block.id] = {"id": block.id, "label": label, "composition": composition,
                                      "parent": parent, "epsilon": 0.0, "delta": 0.0}
            stack.append(block)
        try:
            yield self
        finally:
            with self._lock:
                self._close(stack, block, opened_by)

    def _close(self, stack: list[_Block], block: _Block, opened_by: Any) -> None:
        """Charge a closing block to its parent (the total does not change).

        The block is found by the thread or task that opened it (``opened_by``), not the one
        closing it: a generator holding ``with accountant.parallel():``, started in one thread
        and finished in another, closed its block with a bare ``KeyError`` before charging it,
        and the block's ε left the budget, to be spent again.
        """
        # Out of order too: a generator holding a parallel block, finished in a worker while
        # its caller had a sequential block open, raised "closed in reverse order" and left
        # the block open, uncharged, every later spend a partition of it (6.3 spent on 2.0).
        # A block is charged to its parent (the block active when it opened) if still open,
        # else to the top level, which is sequential. (Charged to the block below it in the
        # stack, a caller's block closed above a suspended generator's parallel block went
        # into it by the maximum.)
        position = next(k for k, open_block in enumerate(stack) if open_block is block)
        del stack[position]
        outer = next((b for b in stack if b.id == block.parent), self._root)
        outer.epsilon, outer.delta = _combine(
            outer.composition, (outer.epsilon, outer.delta), (block.epsilon, block.delta)
        )
        self._blocks[block.id].update(epsilon=float(block.epsilon), delta=float(block.delta))
        block.opener = None
        if not stack and self._open.get(opened_by) is stack:
            del self._open[opened_by]
        # The fold by parents leaves the total unchanged; the spent total (what spent_epsilon,
        # copies and to_dict report) is refreshed all the same.
        self._spent = self._total()

    def _block_records(self) -> dict[int, dict[str, Any]]:
        """Return copies of the block records, open ones with their cost so far (lock held)."""
        blocks = {key: dict(record) for key, record in self._blocks.items()}
        for stack in self._open.values():
            for block in stack:
                blocks[block.id].update(epsilon=float(block.epsilon), delta=float(block.delta))
        return blocks

    def parallel(self, label: str | None = None) -> AbstractContextManager[Accountant]:
        """Open a block of spends on *disjoint* partitions, combined by their maximum.

        Each :meth:`spend` made while the block is open is one partition (or use a nested
        :meth:`sequential` block for a partition with several releases). The block costs the
        enclosing budget ``(max ε_i, max δ_i)`` (parallel composition), charged as the maximum
        grows; each spend is checked against the budget when it is made.

        The caller is responsible for the partitions being disjoint and chosen without looking
        at the confidential data (e.g. grid cells, or levels of a public attribute); otherwise
        sequential composition applies. A block holds the spends made while the code that
        opened it runs: spends of another thread or task, or of the caller of a generator
        suspended inside the block, are charged where that code is (the top level if in no
        block).

        Parameters
        ----------
        label : str, optional
            Name of the block, for :attr:`blocks`.

        Returns
        -------
        contextlib.AbstractContextManager
            A context manager yielding this accountant.

        Examples
        --------
        >>> from geosynth.dp.accountant import Accountant
        >>> accountant = Accountant(1.0)
        >>> with accountant.parallel(label="cells") as block:
        ...     block.spend(1.0, label="cell 0")
        ...     block.spend(1.0, label="cell 1")
        >>> accountant.spent_epsilon
        1.0
        """
        return self._block("parallel", label)

    def sequential(self, label: str | None = None) -> AbstractContextManager[Accountant]:
        """Open a block of spends that add up (sequential composition).

        At the top level this only groups ledger rows; inside a :meth:`parallel` block it makes
        one partition out of several releases on the same part of the data.

        Parameters
        ----------
        label : str, optional
            Name of the block, for :attr:`blocks`.

        Returns
        -------
        contextlib.AbstractContextManager
            A context manager yielding this accountant.

        Examples
        --------
        >>> from geosynth.dp.accountant import Accountant
        >>> accountant = Accountant(1.0)
        >>> with accountant.parallel(label="regions"):
        ...     for region in ["north", "south"]:
        ...         with accountant.sequential(label=region):
        ...             accountant.spend(0.25, label=f"{region} count")
        ...             accountant.spend(0.5, label=f"{region} mean")
        >>> accountant.spent_epsilon
        0.75
        """
        return self._block("sequential", label)

    # ----------------------------------------------------------------------------------------
    # Records
    # ----------------------------------------------------------------------------------------

    @property
    def ledger(self) -> pd.DataFrame:
        """One row per spend, in order.

        Columns: ``label``; ``epsilon`` and ``delta`` requested by the spend; ``composition``
        (``"sequential"`` or ``"parallel"``, how the spend combines with its siblings);
        ``group`` (id of the innermost block, see :attr:`blocks`, or NA at the top level);
        ``cumulative_epsilon`` and ``cumulative_delta``, the total charged to the budget after
        the spend (unchanged by a parallel spend that does not raise its block's maximum).
        """
        with self._lock:
            rows = list(self._rows)
        return _frame(
            rows,
            {
                "label": object,
                "epsilon": float,
                "delta": float,
                "composition": None,
                "group": "Int64",
                "cumulative_epsilon": float,
                "cumulative_delta": float,
            },
        )

    @property
    def blocks(self) -> pd.DataFrame:
        """One row per block: ``id``, ``label``, ``composition``, ``parent`` id, and its cost.

        ``epsilon`` and ``delta`` are what the block contributes to its parent (the max of its
        spends for a parallel block, the sum for a sequential one); for a block still open they
        are filled in when it closes.
        """
        with self._lock:
            records = [dict(record) for record in self._blocks.values()]
        return _frame(
            records,
            {
                "id": "Int64",
                "label": object,
                "composition": None,
                "parent": "Int64",
                "epsilon": float,
                "delta": float,
            },
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the budget, the spent totals and the ledger as a JSON-serialisable dict.

        Meant for release metadata (it contains no data and no seed). An infinite budget is
        written as the string ``"inf"``. Open blocks are written with the cost charged so far;
        :meth:`from_dict` restores them as closed.

        Returns
        -------
        dict
            Keys ``format``, ``version``, ``budget``, ``spent``, ``remaining`` (each a dict with
            ``epsilon`` and ``delta``), ``ledger`` (list of row dicts with the
            :attr:`ledger` columns, ``group`` ``None`` at the top level) and ``blocks``.
        """
        with self._lock:
            blocks = self._block_records()
            return {
                "format": _FORMAT,
                "version": _FORMAT_VERSION,
                "budget": {"epsilon": _to_json_number(self._epsilon), "delta": self._delta},
                # Rounded up, not to the nearest: restored exactly, a total rounded down lost
                # spends below half a unit of its last place (1,000 spends of 5e-17 vanished
                # over 1,000 round trips).
                "spent": {"epsilon": _float_up(self._spent[0]),
                          "delta": _float_up(self._spent[1])},
                "remaining": {
                    "epsilon": _to_json_number(self.remaining_epsilon),
                    "delta": self.remaining_delta,
                },
                "ledger": [dict(row) for row in self._rows],
                "blocks": list(blocks.values()),
            }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Accountant:
        """Rebuild an accountant from :meth:`to_dict` output, e.g. to continue a release.

        Parameters
        ----------
        data : Mapping
            A dict produced by :meth:`to_dict` (possibly through ``json``).

        Returns
        -------
        Accountant
            With the same budget, spent totals, ledger and blocks; no block is open.

        Raises
        ------
        geosynth.errors.InputError
            If ``data`` is not such a dict (of this version), a ledger row or block is
            malformed, or its spent totals exceed its budget or fall below its own ledger's.
        """
        if not isinstance(data, Mapping) or data.get("format") != _FORMAT:
            raise InputError(
                f"data must be a dict made by Accountant.to_dict() (format {_FORMAT!r})"
            )
        if data.get("version") != _FORMAT_VERSION:  # a later format was read as this one
            raise InputError(f"data is an accountant record of version {data.get('version')!r}; "
                             f"this geosynth reads version {_FORMAT_VERSION}: upgrade geosynth")
        try:
            budget, spent = data["budget"], data["spent"]
            accountant = cls(
                _from_json_number(budget["epsilon"], "budget epsilon"),
                _from_json_number(budget["delta"], "budget delta"),
            )
            totals = (
                _from_json_number(spent["epsilon"], "spent epsilon"),
                _from_json_number(spent["delta"], "spent delta"),
            )
            rows = [{column: row[column] for column in LEDGER_COLUMNS} for row in data["ledger"]]
            blocks = [{column: b[column] for column in BLOCK_COLUMNS} for b in data["blocks"]]
        except (KeyError, TypeError) as error:
            raise InputError(
                f"data is not a complete Accountant.to_dict() record: missing or malformed {error}"
            ) from error
        # Finite first: a NaN total failed the budget test and was reported as exceeding it.
        if not all(0 <= value < math.inf for value in totals):  # NaN fails too
            raise InputError(f"the record's spent totals must be finite and >= 0, got {totals!r}")
        if not (_fits(totals[0], accountant.epsilon) and _fits(totals[1], accountant.delta)):
            raise InputError(
                f"the record's spent totals epsilon={totals[0]!r}, delta={totals[1]!r} exceed "
                f"its budget epsilon={accountant.epsilon!r}, delta={accountant.delta!r}"
            )
        _check_entries(rows, blocks, totals)
        root = accountant._root
        root.epsilon, root.delta = _exact(*totals)
        accountant._spent = _exact(*totals)
        accountant._rows = rows
        accountant._blocks = {int(b["id"]): b for b in blocks}
        accountant._next_id = max(accountant._blocks, default=0) + 1
        return accountant
