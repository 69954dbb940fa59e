"""DOCA's ``accountant=``: one spend of ε per stream, before any record is clustered or noised.

Each record of a stream is in exactly one published cluster, so the disjoint clusters' releases
compose in parallel to ε (Leal, Vidal & Machado 2018, §3.2; module docs, "Budget accounting").
"""

import copy
import math
import pickle
import warnings

import numpy as np
import pytest

from geosynth.dp.accountant import Accountant
from geosynth.errors import BudgetExceededError, InputError, PrivacyLeakWarning
from geosynth.sdc import Doca
from geosynth.sdc.doca import naive_laplace


def _uniform(n, d, seed):
    x = np.random.default_rng(seed).uniform(0.0, 1.0, (n, d))
    return x[:, 0] if d == 1 else x


@pytest.mark.parametrize("d", [1, 2])
def test_a_stream_costs_epsilon_once_whatever_its_number_of_clusters(d):
    accountant = Accountant(10.0)
    doca = Doca(0.7, bounds=(0.0, 1.0), delay=20, max_clusters=5, accountant=accountant)
    released = doca.fit_transform(_uniform(2_000, d, 1))
    assert released.shape == ((2_000,) if d == 1 else (2_000, d))
    assert doca.n_noise_draws > 100  # many published clusters, one spend
    assert accountant.spent_epsilon == 0.7 and accountant.spent_delta == 0.0
    ledger = accountant.ledger
    assert ledger["label"].tolist() == ["DOCA"]
    assert ledger["epsilon"].tolist() == [0.7] and ledger["delta"].tolist() == [0.0]
    doca.fit_transform(_uniform(50, d, 2))  # a new stream, maybe of the same people: sequential
    assert accountant.spent_epsilon == pytest.approx(1.4, rel=1e-15)
    assert accountant.ledger["label"].tolist() == ["DOCA", "DOCA"]


def test_a_stream_fed_in_chunks_and_flushed_midway_is_charged_once():
    accountant = Accountant(1.0)
    doca = Doca(0.25, bounds=(0.0, 1.0), delay=9, max_clusters=3, accountant=accountant,
                label="DOCA of sensor 7")
    x = _uniform(300, 1, 3)
    got = [i for i, _ in doca.process(x[:150], chunk_size=7)]
    got += [i for i, _ in doca.flush()]
    got += [i for i, _ in doca.process(x[150:], chunk_size=1, flush=True)]  # continues the stream
    assert sorted(got) == list(range(300))
    assert accountant.spent_epsilon == 0.25
    assert accountant.ledger["label"].tolist() == ["DOCA of sensor 7"]


def test_an_exhausted_accountant_refuses_before_any_output():
    accountant = Accountant(1.0)
    accountant.spend(0.6, label="earlier release")
    x = _uniform(100, 1, 4)
    doca = Doca(0.5, bounds=(0.0, 1.0), delay=5, accountant=accountant)
    with pytest.raises(BudgetExceededError, match="for 'DOCA'"):
        doca.fit_transform(x)
    out = []
    with pytest.raises(BudgetExceededError, match="for 'DOCA'"):
        for pair in doca.process(x, chunk_size=1):
            out.append(pair)
    assert out == []
    assert doca.n_records == doca.n_pending == doca.n_noise_draws == 0
    assert doca.flush() == []
    assert accountant.spent_epsilon == 0.6
    assert accountant.ledger["label"].tolist() == ["earlier release"]


class _RefusesOnce:
    """A spender that refuses its first spend and records the others."""

    def __init__(self):
        self.spends = []
        self.refused = False

    def spend(self, epsilon, delta=0.0, label=None):
        if not self.refused:
            self.refused = True
            raise BudgetExceededError("no budget yet")
        self.spends.append((epsilon, delta, label))


def test_a_refused_stream_stays_unpaid_and_is_charged_when_it_goes_ahead():
    spender = _RefusesOnce()
    doca = Doca(0.5, bounds=(0.0, 1.0), delay=5, accountant=spender)
    x = _uniform(40, 1, 5)
    with pytest.raises(BudgetExceededError):
        list(doca.process(x, chunk_size=8))
    assert doca.n_records == 0
    assert len(dict(doca.process(x, chunk_size=8, flush=True))) == 40
    assert spender.spends == [(0.5, 0.0, "DOCA")]


def test_refused_input_charges_nothing():
    accountant = Accountant(1.0)
    with pytest.raises(InputError, match="NaN or infinite values at record index 1"):
        Doca(1.0, bounds=(0.0, 1.0), accountant=accountant).fit_transform([0.1, math.nan])
    doca = Doca(1.0, 1.0, delay=3, accountant=accountant)
    with pytest.raises(InputError, match="record index 2 widens"):
        list(doca.process([0.1, 0.2, 5.0], chunk_size=3))
    assert accountant.spent_epsilon == 0.0 and accountant.ledger.empty


def test_the_accountant_does_not_change_the_release():
    x = _uniform(500, 2, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        plain = Doca(1.0, bounds=(0.0, 1.0), delay=10, seed=7).fit_transform(x)
        charged = Doca(1.0, bounds=(0.0, 1.0), delay=10, seed=7,
                       accountant=Accountant(math.inf)).fit_transform(x)
    np.testing.assert_array_equal(plain, charged)


def test_a_copy_shares_the_accountant_and_pays_for_releasing_the_stream_again():
    # The copy holds the same pending records: flushing both releases them twice, with
    # independent noise, which composes sequentially (2ε), not ε.
    accountant = Accountant(5.0)
    doca = Doca(1.0, bounds=(0.0, 1.0), delay=50, accountant=accountant)
    list(doca.process(_uniform(30, 1, 8)))
    assert doca.n_pending == 30 and accountant.spent_epsilon == 1.0
    for twin in (copy.copy(doca), copy.deepcopy(doca)):
        assert twin.accountant is accountant
        assert len(twin.flush()) == 30
    assert len(doca.flush()) == 30
    assert accountant.spent_epsilon == 3.0
    pickled = pickle.loads(pickle.dumps(doca))  # another process: a ledger of its own
    assert pickled.accountant is not accountant
    pickled.fit_transform([0.5, 0.25])
    assert (pickled.accountant.spent_epsilon, accountant.spent_epsilon) == (4.0, 3.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"accountant": 1.0}, "accountant must be a geosynth.dp.accountant.Accountant"),
        ({"accountant": "budget"}, "accountant must be a geosynth.dp.accountant.Accountant"),
        ({"label": 3}, "label must be a str or None"),
    ],
)
def test_a_bad_accountant_or_label_is_refused_by_type(kwargs, match):
    with pytest.raises(TypeError, match=match):
        Doca(1.0, bounds=(0.0, 1.0), **kwargs)


def test_naive_laplace_charges_epsilon_once_before_its_noise():
    accountant = Accountant(1.0)
    data = _uniform(500, 2, 3)
    released = naive_laplace(data, 0.6, bounds=(0.0, 1.0), accountant=accountant,
                             label="baseline")
    assert released.shape == data.shape and not np.array_equal(released, data)
    assert accountant.ledger["label"].tolist() == ["baseline"]
    assert accountant.spent_epsilon == 0.6
    with pytest.raises(BudgetExceededError):
        naive_laplace(data, 0.6, bounds=(0.0, 1.0), accountant=accountant)
    assert accountant.spent_epsilon == 0.6  # refused: nothing spent, nothing released
    # Without bounds the range is checked (and refused: at no cost), and a release costs 2ε
    # (two neighbouring inputs of range at most 1 can differ in one record by 2).
    with pytest.raises(InputError, match="widens the range"), pytest.warns(PrivacyLeakWarning):
        naive_laplace(data * 3.0, 0.1, 1.0, accountant=accountant)
    assert accountant.ledger["label"].tolist() == ["baseline"]
    with pytest.warns(PrivacyLeakWarning, match="naive_laplace without bounds"):
        naive_laplace(data, 0.1, 1.0, accountant=accountant)
    assert accountant.ledger["label"].tolist() == ["baseline", "naive Laplace"]
    assert accountant.spent_epsilon == pytest.approx(0.8)
    # bounds clamp the records into the domain instead of refusing them
    far = naive_laplace(np.array([0.5, 1e6]), 1e3, bounds=(0.0, 1.0))
    assert abs(far[1] - 1.0) < 0.1


def test_without_bounds_a_stream_of_one_record_is_not_published():
    # The sensitivity bounds the records' range; one record has none, so any value passed and
    # came out within noise of scale Δf/ε (123,456 as 123,455.97 at Δf = 1).
    accountant = Accountant(10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # no bounds: charged 2ε, warned
        doca = Doca(1.0, sensitivity=1.0, delay=5, accountant=accountant)
        with pytest.raises(InputError, match="single record and no bounds.*bounds=\\(lo, hi\\)"):
            doca.fit_transform([123456.0])
        assert accountant.spent_epsilon == 0.0  # refused before the stream was charged
        assert list(doca.process([987654.0])) == []
        with pytest.raises(InputError, match="^this stream \\(flush\\) holds a single record"):
            doca.flush()
        assert doca.n_pending == 1  # nothing published
        with pytest.raises(InputError, match="^data holds a single record and no bounds"):
            naive_laplace([123456.0], 1.0, sensitivity=1.0)
        # Two records bound each other; with bounds, one record is clamped into the domain.
        assert Doca(1.0, sensitivity=1.0, delay=5).fit_transform([0.2, 0.9]).shape == (2,)
    assert Doca(1.0, bounds=(0.0, 1.0), delay=5).fit_transform([123456.0]).shape == (1,)
