import contextlib
import copy
import json
import math
import threading
import time

import pandas as pd
import pytest

import geosynth.dp.accountant as accountant_module
from geosynth.dp.accountant import LEDGER_COLUMNS, Accountant
from geosynth.errors import BudgetExceededError, InputError

# ----------------------------------------------------------------------------------------------
# Sequential composition
# ----------------------------------------------------------------------------------------------


def test_sequential_spends_add_up():
    accountant = Accountant(1.0)
    accountant.spend(0.2, label="a")
    accountant.spend(0.3, label="b")
    assert accountant.spent_epsilon == pytest.approx(0.5)
    assert accountant.remaining_epsilon == pytest.approx(0.5)
    assert accountant.remaining == (accountant.remaining_epsilon, accountant.remaining_delta)
    assert (accountant.epsilon, accountant.delta) == (1.0, 0.0)
    assert accountant.ledger["cumulative_epsilon"].tolist() == pytest.approx([0.2, 0.5])


def test_float_rounding_does_not_refuse_an_exact_fit():
    accountant = Accountant(1.0)
    for _ in range(10):
        accountant.spend(0.1)  # sums to 0.9999999999999999
    with pytest.raises(BudgetExceededError):
        accountant.spend(1e-9)  # far above the 1e-12 relative tolerance
    assert accountant.remaining_epsilon >= 0.0


def test_a_refused_spend_records_nothing_and_says_why():
    accountant = Accountant(1.0)
    accountant.spend(0.7, label="first")
    before = accountant.to_dict()
    message = (
        r"epsilon=0.5, delta=0.0 for 'second' .* budget epsilon=1.0.*spent epsilon=0.7.*"
        r"remaining epsilon=0.3.*Nothing was spent"
    )
    with pytest.raises(BudgetExceededError, match=message):
        accountant.spend(0.5, label="second")
    assert accountant.to_dict() == before
    assert accountant.ledger["label"].tolist() == ["first"]
    accountant.spend(0.3, label="exact fit")
    assert accountant.remaining_epsilon == pytest.approx(0.0)


def test_check_raises_like_spend_but_spends_nothing():
    accountant = Accountant(1.0, delta=1e-6)
    assert accountant.check(1.0, 1e-6) is None
    assert accountant.spent_epsilon == 0.0 and accountant.ledger.empty
    with pytest.raises(BudgetExceededError, match="remaining epsilon=1.0"):
        accountant.check(1.5)
    with pytest.raises(BudgetExceededError, match="delta"):
        accountant.check(0.5, 2e-6)
    assert accountant.ledger.empty


def test_spends_below_the_rounding_of_the_total_are_not_lost():
    """Float sums dropped spends under half an ulp of the total: 1.0 + 1e-16 == 1.0, so a
    spent budget accepted any number of them for free. The sum is now exact."""
    accountant = Accountant(1.0)
    accountant.spend(1.0)
    for _ in range(1000):
        accountant.spend(1e-16)  # 1e-13 in all, within the 1e-12 tolerance
    assert accountant.spent_epsilon == pytest.approx(1.0 + 1e-13, rel=1e-15)
    with pytest.raises(BudgetExceededError):
        for _ in range(20_000):  # 2e-12 in all: above the tolerance, so refused on the way
            accountant.spend(1e-16)
    assert accountant.spent_epsilon <= 1.0 + 1e-12


def test_concurrent_spends_cannot_both_fit(monkeypatch):
    """Checking and recording a spend is one step: two threads could both see room for 0.6."""
    fits = accountant_module._fits

    def slow_fits(*args):
        time.sleep(0.05)  # widen the window between the check and the record
        return fits(*args)

    monkeypatch.setattr(accountant_module, "_fits", slow_fits)
    accountant = Accountant(1.0)
    errors = []

    def spend():
        try:
            accountant.spend(0.6)
        except BudgetExceededError as error:
            errors.append(error)

    threads = [threading.Thread(target=spend) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(errors) == 1 and accountant.spent_epsilon == pytest.approx(0.6)
    assert len(accountant.ledger) == 1


def test_another_threads_spend_is_not_a_partition_of_an_open_parallel_block():
    """Blocks belong to the thread that opened them: a spend made by another thread while a
    parallel block was open joined that block and cost nothing beyond its maximum."""
    accountant = Accountant(2.0)
    opened, spent = threading.Event(), threading.Event()

    def other_thread():
        opened.wait()
        accountant.spend(0.5, label="elsewhere")
        spent.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    with accountant.parallel(label="cells"):
        accountant.spend(0.5, label="cell 0")
        opened.set()
        spent.wait()
        accountant.spend(0.5, label="cell 1")  # a partition: free
        assert accountant.spent_epsilon == pytest.approx(1.0)
        with pytest.raises(BudgetExceededError):
            accountant.check(1.6)  # raises the block's max to 1.6, plus 0.5 elsewhere > 2
    thread.join()
    assert accountant.spent_epsilon == pytest.approx(1.0)
    ledger = accountant.ledger.set_index("label")
    assert ledger.loc["elsewhere", "composition"] == "sequential"
    assert pd.isna(ledger.loc["elsewhere", "group"])
    assert accountant.blocks.loc[0, "epsilon"] == 0.5


def regions_finished_in_a_worker(accountant, caller_block=None):
    """Open a generator's parallel block here, spend region 1, and finish it in a thread.

    The worker spends region 2 (its own, sequential spend) and closes the block; with
    ``caller_block``, while that block of the caller's is open. Returns the worker's errors.
    """
    def per_region(values):
        with accountant.parallel(label="regions"):
            for value in values:
                yield accountant.spend(0.9, label=f"region {value}")

    regions = per_region([1, 2])
    next(regions)  # region 1, in the generator's block
    failures = []

    def finish():
        try:
            list(regions)
        except Exception as error:  # noqa: BLE001 - the test reports whatever it was
            failures.append(error)

    with caller_block if caller_block is not None else contextlib.nullcontext():
        worker = threading.Thread(target=finish)
        worker.start()
        worker.join()
    return failures


def test_a_block_closed_by_another_thread_is_still_charged():
    """A generator holding a parallel block, started here and finished in a worker thread.

    The worker's close looked the block up by its own thread, raised a bare KeyError before
    charging it, and the block's 0.9 left the budget: 0.9 more was accepted beyond 2.0.
    """
    accountant = Accountant(2.0)
    assert not regions_finished_in_a_worker(accountant)
    assert accountant.spent_epsilon == pytest.approx(1.8)
    assert accountant.blocks.loc[0, "epsilon"] == pytest.approx(0.9)
    with pytest.raises(BudgetExceededError):
        accountant.spend(0.9, label="again")
    assert not accountant._open  # no stack left behind for the opening thread


def test_a_block_closed_out_of_order_is_charged_and_closed():
    """A generator's parallel block finished in a worker while the caller's block was open.

    The close raised "closed in reverse order" and left the block open and uncharged: every
    later spend became a partition of it, 6.3 spent on a budget of 2.0.
    """
    accountant = Accountant(2.0)
    assert not regions_finished_in_a_worker(accountant, accountant.sequential(label="caller"))
    assert accountant.spent_epsilon == pytest.approx(1.8)  # block 0.9 + the worker's 0.9
    assert not accountant._open
    with pytest.raises(BudgetExceededError):
        accountant.spend(0.9, label="again")


def region_blocks(accountant, spends=(1.0,)):
    """A generator holding a parallel block at the top level, spending at each step."""
    def regions():
        with accountant.parallel(label="regions"):
            for epsilon in spends:
                accountant.spend(epsilon, label="region")
                yield
    return regions()


def test_spends_beside_a_suspended_generators_block_are_not_its_partitions():
    """A generator holding a parallel block, paused at a yield; the caller spends meanwhile.

    The caller's five spends of 1.0 became partitions of the generator's block (charged by
    the maximum: 1.0 in all, on a budget of 2.0); a block the caller opened and closed there
    was charged to it by the maximum too.
    """
    accountant = Accountant(2.0)
    regions = region_blocks(accountant)
    next(regions)
    accountant.spend(0.5, label="caller")  # the top level: 1.5
    with pytest.raises(BudgetExceededError):
        accountant.spend(1.0, label="caller again")  # 2.5 > 2.0
    with accountant.sequential(label="caller's block"):
        accountant.spend(0.25)
        accountant.spend(0.25)
    assert accountant.spent_epsilon == pytest.approx(2.0)
    next(regions, None)  # the generator closes its block
    assert accountant.spent_epsilon == pytest.approx(2.0)
    ledger = accountant.ledger.set_index("label")
    assert pd.isna(ledger.loc["caller", "group"])


def test_an_out_of_order_close_shows_in_the_spent_total_and_in_copies():
    """The top level charged the block, but spent_epsilon (and a copy) did not say so."""
    accountant = Accountant(4.0)
    regions = region_blocks(accountant)
    next(regions)
    with accountant.sequential(label="caller"):
        accountant.spend(1.0)
        accountant.spend(1.0)
        worker = threading.Thread(target=list, args=(regions,))
        worker.start()
        worker.join()
    assert accountant.spent_epsilon == pytest.approx(3.0)
    copied = copy.deepcopy(accountant)
    assert copied.spent_epsilon == pytest.approx(3.0)
    with pytest.raises(BudgetExceededError):
        copied.spend(2.0)


def test_a_suspended_generators_block_and_the_callers_are_not_folded_together():
    """Blocks are folded into the block active when they opened, not the one below them.

    The generator's block (1.0), resumed or closed inside the caller's parallel block, was
    folded into it by the maximum: a total of 1.0 where 2.0 was spent.
    """
    accountant = Accountant(1.5)
    regions = region_blocks(accountant)
    next(regions)  # the generator's block: 1.0 at the top level
    with pytest.raises(BudgetExceededError):
        with accountant.parallel(label="caller"):
            accountant.spend(1.0, label="caller's")  # 2.0 > 1.5
    accountant = Accountant(3.0)
    regions = region_blocks(accountant, spends=(1.0, 1.0))
    next(regions)
    with accountant.parallel(label="caller"):
        accountant.spend(1.0, label="caller's")
        next(regions)  # the generator's second spend: its own block, a partition of it
        next(regions, None)  # and its block closes here
    assert accountant.spent_epsilon == pytest.approx(2.0)
    generators = accountant.blocks.set_index("label").loc["regions", "id"]
    assert list(accountant.ledger["group"].iloc[[0, 2]]) == [generators] * 2  # both its own


def test_a_block_opened_through_a_wrapper_holds_the_spends_of_its_body():
    """A @contextmanager or __enter__ wrapper around parallel(): the body's spends are in it.

    The block's opener was the wrapper's suspended frame, and five spends of 1.0 in the body
    cost 5.0 at the top level.
    """
    @contextlib.contextmanager
    def regions(accountant):
        with accountant.parallel(label="regions"):
            yield

    class Regions:
        def __init__(self, accountant):
            self.block = accountant.parallel(label="regions")

        def __enter__(self):
            return self.block.__enter__()

        def __exit__(self, *exc):
            return self.block.__exit__(*exc)

    for wrapper in (regions, Regions):
        accountant = Accountant(10.0)
        with wrapper(accountant):
            for _ in range(5):
                accountant.spend(1.0)
        assert accountant.spent_epsilon == pytest.approx(1.0), wrapper


# ----------------------------------------------------------------------------------------------
# Parallel composition
# ----------------------------------------------------------------------------------------------


def test_parallel_spends_are_combined_by_their_maximum():
    accountant = Accountant(1.0)
    with accountant.parallel(label="regions") as block:
        assert block is accountant
        block.spend(0.3, label="north")
        block.spend(0.5, label="south")
        block.spend(0.2, label="east")
    assert accountant.spent_epsilon == pytest.approx(0.5)
    ledger = accountant.ledger
    assert ledger["cumulative_epsilon"].tolist() == pytest.approx([0.3, 0.5, 0.5])
    assert ledger["composition"].tolist() == ["parallel"] * 3
    assert ledger["group"].tolist() == [1, 1, 1]
    blocks = accountant.blocks
    assert blocks.loc[0, "label"] == "regions" and blocks.loc[0, "epsilon"] == 0.5


def test_parallel_inside_sequential():
    accountant = Accountant(2.0)
    accountant.spend(0.2, label="total")
    with accountant.parallel(label="cells"):
        for cell in range(5):
            accountant.spend(0.4, label=f"cell {cell}")
    accountant.spend(0.1, label="after")
    assert accountant.spent_epsilon == pytest.approx(0.7)
    ledger = accountant.ledger
    assert ledger["composition"].tolist() == ["sequential"] + ["parallel"] * 5 + ["sequential"]
    assert ledger["group"].isna().tolist() == [True] + [False] * 5 + [True]
    assert ledger["cumulative_epsilon"].iloc[-1] == pytest.approx(0.7)


def test_a_parallel_block_is_checked_at_every_spend():
    accountant = Accountant(1.0)
    accountant.spend(0.6)
    with pytest.raises(BudgetExceededError, match="inside parallel block 'cells'"):
        with accountant.parallel(label="cells"):
            accountant.spend(0.3)
            accountant.spend(0.4)  # raises the block's max to 0.4: total 1.0, fits
            accountant.spend(0.1)  # below the max: free
            accountant.spend(0.5)  # max would be 0.5: total 1.1, refused
    assert accountant.spent_epsilon == pytest.approx(1.0)
    assert len(accountant.ledger) == 4
    # The block is closed by the exception: later spends are sequential again.
    with pytest.raises(BudgetExceededError):
        accountant.spend(0.1)
    assert accountant.ledger["group"].notna().sum() == 3


def test_an_empty_parallel_block_costs_nothing():
    accountant = Accountant(1.0)
    with accountant.parallel():
        pass
    assert accountant.spent_epsilon == 0.0
    assert accountant.blocks["epsilon"].tolist() == [0.0]


def test_sequential_partitions_inside_a_parallel_block():
    accountant = Accountant(1.0)
    with accountant.parallel(label="regions"):
        for region, (count_eps, mean_eps) in {"north": (0.2, 0.5), "south": (0.4, 0.4)}.items():
            with accountant.sequential(label=region):
                accountant.spend(count_eps, label=f"{region} count")
                accountant.spend(mean_eps, label=f"{region} mean")
    assert accountant.spent_epsilon == pytest.approx(0.8)  # max(0.7, 0.8)
    blocks = accountant.blocks.set_index("label")
    assert blocks.loc["north", "epsilon"] == pytest.approx(0.7)
    assert blocks.loc["south", "epsilon"] == pytest.approx(0.8)
    assert blocks.loc["north", "parent"] == blocks.loc["regions", "id"]
    assert blocks.loc["regions", "epsilon"] == pytest.approx(0.8)
    ledger = accountant.ledger
    assert ledger["composition"].tolist() == ["sequential"] * 4
    assert ledger["group"].tolist() == [2, 2, 3, 3]
    assert ledger["cumulative_epsilon"].tolist() == pytest.approx([0.2, 0.7, 0.7, 0.8])


def test_a_sequential_partition_is_checked_at_every_spend():
    accountant = Accountant(1.0)
    with accountant.parallel():
        with accountant.sequential():
            accountant.spend(0.6)
        with accountant.sequential():
            accountant.spend(0.5)
            with pytest.raises(BudgetExceededError):
                accountant.spend(0.6)  # this partition would cost 1.1
            accountant.spend(0.5)  # 1.0 fits
    assert accountant.spent_epsilon == pytest.approx(1.0)


def test_nested_parallel_blocks_take_the_overall_maximum():
    accountant = Accountant(1.0)
    with accountant.parallel(label="regions"):
        accountant.spend(0.3)
        with accountant.parallel(label="cells of the last region"):
            accountant.spend(0.6)
            accountant.spend(0.2)
    assert accountant.spent_epsilon == pytest.approx(0.6)
    blocks = accountant.blocks
    assert blocks["parent"].isna().tolist() == [True, False]


# ----------------------------------------------------------------------------------------------
# Delta
# ----------------------------------------------------------------------------------------------


def test_delta_composes_like_epsilon():
    accountant = Accountant(2.0, delta=1e-5)
    accountant.spend(0.5, 4e-6)
    with accountant.parallel():
        accountant.spend(0.5, 3e-6)
        accountant.spend(0.1, 5e-6)
    assert accountant.spent_delta == pytest.approx(9e-6)
    assert accountant.spent_epsilon == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError, match="delta"):
        accountant.spend(0.1, 2e-6)
    accountant.spend(0.1, 1e-6)
    assert accountant.remaining_delta == pytest.approx(0.0, abs=1e-18)
    assert accountant.ledger["cumulative_delta"].tolist() == pytest.approx([4e-6, 7e-6, 9e-6, 1e-5])


def test_a_pure_budget_refuses_any_delta():
    accountant = Accountant(1.0)
    with pytest.raises(BudgetExceededError, match="delta=1e-09"):
        accountant.spend(0.1, 1e-9)
    assert accountant.ledger.empty


# ----------------------------------------------------------------------------------------------
# Ledger and serialisation
# ----------------------------------------------------------------------------------------------


def test_ledger_columns_and_types():
    accountant = Accountant(1.0, delta=1e-6)
    empty = accountant.ledger
    assert list(empty.columns) == LEDGER_COLUMNS and empty.empty
    accountant.spend(0.1, label="count")
    with accountant.parallel():
        accountant.spend(0.2, 1e-7)
    accountant.spend(0.1)
    ledger = accountant.ledger
    assert list(ledger.columns) == [
        "label",
        "epsilon",
        "delta",
        "composition",
        "group",
        "cumulative_epsilon",
        "cumulative_delta",
    ]
    assert ledger["label"].tolist() == ["count", None, None]
    assert str(ledger["group"].dtype) == "Int64"
    assert ledger["group"].isna().tolist() == [True, False, True]
    assert ledger["epsilon"].dtype == float and ledger["cumulative_delta"].dtype == float
    assert set(ledger["composition"]) == {"sequential", "parallel"}
    ledger.loc[0, "epsilon"] = 99.0  # a copy: the accountant is unaffected
    assert accountant.ledger.loc[0, "epsilon"] == 0.1


def make_history():
    accountant = Accountant(3.0, delta=1e-5)
    accountant.spend(0.5, label="total")
    with accountant.parallel(label="cells"):
        for cell in range(3):
            accountant.spend(0.25 * (cell + 1), 1e-6, label=f"cell {cell}")
        with accountant.sequential(label="cell 3"):
            accountant.spend(0.1)
            accountant.spend(0.2)
    accountant.spend(0.25)
    return accountant


def test_to_dict_is_json_serialisable_and_round_trips():
    accountant = make_history()
    record = accountant.to_dict()
    text = json.dumps(record, allow_nan=False)
    assert record["budget"] == {"epsilon": 3.0, "delta": 1e-5}
    assert record["spent"]["epsilon"] == pytest.approx(1.5)
    assert record["spent"]["delta"] == pytest.approx(1e-6)
    assert len(record["ledger"]) == 7 and set(record["ledger"][0]) == set(LEDGER_COLUMNS)
    restored = Accountant.from_dict(json.loads(text))
    assert restored.to_dict() == record
    pd.testing.assert_frame_equal(restored.ledger, accountant.ledger)
    pd.testing.assert_frame_equal(restored.blocks, accountant.blocks)
    assert restored.remaining == pytest.approx(accountant.remaining)
    # The restored budget keeps working, with fresh block ids.
    with restored.parallel(label="more"):
        restored.spend(1.5)
    assert restored.spent_epsilon == pytest.approx(3.0)
    assert restored.ledger["group"].iloc[-1] == 3  # ids 1 and 2 were taken
    with pytest.raises(BudgetExceededError):
        restored.spend(0.01)


def test_to_dict_inside_an_open_block_charges_what_was_spent():
    accountant = Accountant(1.0)
    with accountant.parallel(label="open"):
        accountant.spend(0.4)
        record = accountant.to_dict()
    assert record["blocks"][0]["epsilon"] == 0.4
    restored = Accountant.from_dict(record)
    assert restored.spent_epsilon == 0.4


def test_an_infinite_budget_is_allowed_explicitly_and_serialised_as_inf():
    accountant = Accountant(math.inf)
    accountant.spend(1e6, label="uncapped")
    assert accountant.remaining_epsilon == math.inf
    record = accountant.to_dict()
    assert record["budget"]["epsilon"] == "inf" and record["remaining"]["epsilon"] == "inf"
    json.dumps(record, allow_nan=False)
    assert Accountant.from_dict(record).epsilon == math.inf


def _edited(budget, path, value):
    """``Accountant(budget).to_dict()`` with the entry at ``path`` set to ``value`` (or deleted)."""
    record = Accountant(budget).to_dict()
    *parents, key = path
    target = record
    for name in parents:
        target = target[name]
    if value is _DELETE:
        del target[key]
    else:
        target[key] = value
    return record


_DELETE = object()


@pytest.mark.parametrize(
    ("record", "match"),
    [
        ({}, r"data must be a dict made by Accountant\.to_dict\(\)"),
        ([], r"data must be a dict made by Accountant\.to_dict\(\)"),
        ({"format": "something else"}, r"data must be a dict made by Accountant\.to_dict\(\)"),
        ({"format": "geosynth.dp.Accountant", "budget": {"epsilon": 1.0}},
         r"accountant record of version None"),
        # Each from a complete record with one entry changed: the cases written out by hand
        # lacked "version", so all four were refused for that, never reaching their own check.
        (_edited(1.0, ("spent", "epsilon"), 2.0),
         r"spent totals epsilon=2\.0, delta=0\.0 exceed its budget epsilon=1\.0"),
        # an uncapped budget spent "inf": a bare OverflowError from Fraction(inf)
        (_edited(math.inf, ("spent", "epsilon"), "inf"),
         r"spent totals must be finite and >= 0, got \(inf"),
        (_edited(1.0, ("budget", "epsilon"), "lots"),
         r"budget epsilon must be a number or 'inf' in an accountant dict, got 'lots'"),
        (_edited(1.0, ("budget", "delta"), _DELETE), r"missing or malformed 'delta'"),
    ],
)
def test_from_dict_refuses_a_malformed_record(record, match):
    with pytest.raises(InputError, match=match):
        Accountant.from_dict(record)


def test_from_dict_says_a_nan_total_is_not_finite_rather_than_over_budget():
    record = Accountant(1.0).to_dict()
    record["spent"]["epsilon"] = math.nan
    with pytest.raises(InputError, match=r"spent totals must be finite and >= 0, got \(nan"):
        Accountant.from_dict(record)


@pytest.mark.parametrize("block_id", ["x", None, 1.5, 0, True])
def test_from_dict_refuses_a_block_id_that_is_not_a_positive_integer(block_id):
    """int(id) raised a bare ValueError ('x') or TypeError (None) and 1.5 became block 1."""
    accountant = Accountant(1.0)
    with accountant.parallel(label="cells"):
        accountant.spend(0.5)
    record = accountant.to_dict()
    record["blocks"][0]["id"] = block_id
    with pytest.raises(InputError, match=r"block ids must be integers >= 1, got \["):
        Accountant.from_dict(record)


# ----------------------------------------------------------------------------------------------
# Validation
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((0.0,), InputError, r"epsilon must be a number > 0 \(or inf\)"),
        ((-1.0,), InputError, "epsilon"),
        ((math.nan,), InputError, "epsilon"),
        (("1",), TypeError, "epsilon must be a real number"),
        ((None,), TypeError, "epsilon"),
        ((1.0, 1.0), InputError, r"delta must lie in \[0, 1\)"),
        ((1.0, -1e-9), InputError, "delta"),
        ((1.0, math.inf), InputError, "delta"),
        ((1.0, "0"), TypeError, "delta"),
    ],
)
def test_invalid_budgets_are_refused(args, error, match):
    with pytest.raises(error, match=match):
        Accountant(*args)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"epsilon": 0.0}, InputError, "epsilon must be a finite number > 0"),
        ({"epsilon": math.inf}, InputError, "epsilon"),
        ({"epsilon": math.nan}, InputError, "epsilon"),
        ({"epsilon": "0.1"}, TypeError, "epsilon"),
        ({"epsilon": 0.1, "delta": -0.1}, InputError, "delta"),
        ({"epsilon": 0.1, "delta": 1.0}, InputError, "delta"),
        ({"epsilon": 0.1, "label": 7}, TypeError, "label"),
    ],
)
def test_invalid_spends_are_refused_and_not_recorded(kwargs, error, match):
    accountant = Accountant(1.0, delta=0.5)
    with pytest.raises(error, match=match):
        accountant.spend(**kwargs)
    assert accountant.ledger.empty and accountant.spent_epsilon == 0.0


def test_repr_shows_budget_and_spend():
    accountant = Accountant(1.0)
    accountant.spend(0.25)
    assert repr(accountant) == (
        "Accountant(epsilon=1.0, delta=0.0, spent_epsilon=0.25, spent_delta=0.0)"
    )


def test_an_accountant_still_pickles_and_copies_with_its_lock():
    """The lock that makes spends atomic cannot be pickled; the accountant (and so anything
    holding one, e.g. a synthesizer sent to an executor) still can, with a lock of its own."""
    import copy
    import pickle

    accountant = Accountant(1.0)
    accountant.spend(0.25, label="a")
    for clone in (pickle.loads(pickle.dumps(accountant)), copy.deepcopy(accountant)):
        assert clone.to_dict() == accountant.to_dict()
        clone.spend(0.75)
        assert clone._lock is not accountant._lock
        assert accountant.spent_epsilon == 0.25


@pytest.mark.parametrize("clone", ["pickle", "deepcopy", "copy"])
def test_a_copy_made_inside_a_block_sums_its_later_spends(clone):
    """A copy made inside a parallel block kept the block open for ever under this thread's
    id: every later spend of the copy was one more partition, charged by the maximum, so a
    hundred spends of 0.5 fitted a budget of 1.0."""
    import copy
    import pickle

    make = {"pickle": lambda a: pickle.loads(pickle.dumps(a)), "deepcopy": copy.deepcopy,
            "copy": copy.copy}[clone]
    accountant = Accountant(1.0)
    with accountant.parallel(label="cells"):
        accountant.spend(0.5, label="cell 0")
        twin = make(accountant)
    assert twin.spent_epsilon == 0.5
    assert twin.blocks["epsilon"].tolist() == [0.5]  # the open block, with its cost so far
    twin.spend(0.5, label="after the block")
    with pytest.raises(BudgetExceededError):
        twin.spend(0.5)
    assert twin.ledger["composition"].tolist() == ["parallel", "sequential"]
    assert accountant.spent_epsilon == 0.5 and len(accountant.ledger) == 1


def test_a_shallow_copy_has_a_ledger_of_its_own():
    """copy.copy shared the total and the ledger: the copy's spends were charged to the
    original (which refused 0.1 with 0.5 said to remain) and listed in its ledger."""
    import copy

    accountant = Accountant(1.0)
    accountant.spend(0.5, label="original")
    twin = copy.copy(accountant)
    twin.spend(0.5, label="copy")
    assert len(accountant.ledger) == 1
    accountant.spend(0.25)
    assert accountant.spent_epsilon == accountant.ledger["cumulative_epsilon"].iloc[-1] == 0.75


def _spent_record():
    accountant = Accountant(1.0)
    accountant.spend(0.5, label="count")
    with accountant.parallel(label="cells"):
        accountant.spend(0.25, label="cell 0")
    return accountant.to_dict()


@pytest.mark.parametrize(
    ("alter", "match"),
    [
        (lambda r: r["spent"].update(epsilon=0.0), "below what its own ledger charged"),
        (lambda r: r.update(version=99), "version 99"),
        (lambda r: r["ledger"][0].update(epsilon="0.5"), r"ledger row 0: epsilon"),
        (lambda r: r["ledger"][1].update(cumulative_epsilon=math.nan),
         r"ledger row 1: cumulative_epsilon must be a finite number"),
        (lambda r: r["ledger"][1].update(group="x"), r"ledger row 1: group"),
        (lambda r: r["ledger"][0].update(composition="magic"), "composition"),
        (lambda r: r["ledger"][0].update(label=5), "label must be a str"),
        (lambda r: r["blocks"][0].update(epsilon="x"), r"block 0: epsilon"),
        (lambda r: r["blocks"][0].update(parent=7), r"block 0: parent"),
        (lambda r: r["blocks"].append(dict(r["blocks"][0])), "block ids must be distinct"),
    ],
)
def test_from_dict_refuses_an_altered_ledger(alter, match):
    """Spent totals edited below the ledger's restored the spent budget; malformed rows raised
    a bare ValueError only when the ledger was read, and a later version was read as this."""
    record = _spent_record()
    Accountant.from_dict(record)  # the unaltered record is fine
    alter(record)
    with pytest.raises(InputError, match=match):
        Accountant.from_dict(record)


def test_a_total_beyond_the_float_range_is_refused_whole():
    """An uncapped ledger charged 2 * 1.7e308 and then failed to show it (OverflowError): the
    total was charged without a ledger row, and spent_epsilon raised from then on."""
    accountant = Accountant(math.inf)
    accountant.spend(1.7e308)
    with pytest.raises(InputError, match="beyond the largest float"):
        accountant.spend(1.7e308)
    assert accountant.spent_epsilon == 1.7e308 and len(accountant.ledger) == 1
    json.dumps(accountant.to_dict(), allow_nan=False)


def test_another_asyncio_tasks_spend_is_not_a_partition_of_an_open_parallel_block():
    """Tasks of one event loop share a thread: a spend of one task while another's parallel
    block was open (at an await inside it) was a partition of that block, charged by the
    maximum, so any number of spends of 1 fitted a budget of 1."""
    import asyncio

    accountant = Accountant(1.5)
    refused = []

    async def regions(opened, spent):
        with accountant.parallel(label="regions"):
            accountant.spend(1.0, label="north")
            opened.set()
            await spent.wait()  # the other task spends while this block is open
            accountant.spend(1.0, label="south")

    async def other(opened, spent):
        await opened.wait()
        try:
            accountant.spend(1.0, label="same data")
        except BudgetExceededError:
            refused.append(True)
        spent.set()

    async def main():
        opened, spent = asyncio.Event(), asyncio.Event()
        await asyncio.gather(regions(opened, spent), other(opened, spent))

    asyncio.run(main())
    assert refused == [True]
    assert accountant.spent_epsilon == 1.0
    assert accountant.ledger["label"].tolist() == ["north", "south"]


def test_a_saved_total_is_never_below_what_was_spent():
    # to_dict rounded the exact total to the nearest float, and from_dict restored that float
    # exactly: spends below half a unit of its last place vanished at every round trip.
    from fractions import Fraction

    accountant = Accountant(1.0)
    accountant.spend(0.5)
    exact = Fraction(0.5)
    for _ in range(200):
        accountant.spend(5e-17)
        exact += Fraction(5e-17)
        accountant = Accountant.from_dict(accountant.to_dict())
        assert Fraction(accountant.spent_epsilon) >= exact
    assert accountant.spent_epsilon > 0.5
    # A total a float holds exactly is saved as it is.
    exact_total = Accountant(2.0)
    exact_total.spend(0.5)
    exact_total.spend(0.25)
    assert exact_total.to_dict()["spent"]["epsilon"] == 0.75
