"""How many draws of η a fit stores (``eta_draws``, ``max_bytes``) and the exact mean of λ."""

import dataclasses
import mmap
import tracemalloc
import warnings

import numpy as np
import pytest

from geosynth import PaivaModel
from geosynth.errors import ConvergenceWarning, GeosynthWarning, InputError, MemoryLimitError
from geosynth.model import runner
from geosynth.model.storage import DEFAULT_MAX_BYTES, evenly_spaced_draws, plan_storage

RUN = {"n_iter": 300, "burn_in": 100, "thin": 2, "seed": 7, "progress": False}  # 100 draws
N_KEEP = 100


@pytest.fixture(scope="module")
def counts(make_scenario_counts):
    return make_scenario_counts(n=300, seed=1, shape=(5, 5), attributes=["y", "x1", "x2"],
                                continuous="z").counts


@pytest.fixture(scope="module")
def all_fit(counts):
    return PaivaModel(beta_prior="normal").fit(counts, eta_draws="all", **RUN)


def budget(counts, k, chains=2, beta=True, extra=0):
    """max_bytes that holds exactly k draws of η per chain (the estimate of plan_storage)."""
    # S: μ, 4 α, τ_θ, 4 τ_φ, τ_ε (no τ_β: neither beta_prior=None nor "normal" samples it).
    G, B, S = counts.n_cells, counts.n_combos, 11
    rows = 500 // 2  # a sampling chunk at G·B = 300 holds 500 sweeps: 250 draws at thin 2
    fixed = chains * (N_KEEP * (8 * S + 4 * G * (2 if beta else 1)) + 16 * G * B
                      + rows * (4 * G * B + (0 if beta else 4 * G)))
    return fixed + chains * k * 4 * G * B + extra


def test_evenly_spaced_draws():
    np.testing.assert_array_equal(evenly_spaced_draws(100, 7), [7, 21, 35, 50, 64, 78, 92])
    np.testing.assert_array_equal(evenly_spaced_draws(5, 5), np.arange(5))
    np.testing.assert_array_equal(evenly_spaced_draws(5, 50), np.arange(5))
    np.testing.assert_array_equal(evenly_spaced_draws(10, 1), [5])


def test_k_draws_are_the_same_draws_of_the_all_fit(counts, all_fit):
    fit = PaivaModel(beta_prior="normal").fit(counts, eta_draws=7, **RUN)
    expected = ((2 * np.arange(7) + 1) * N_KEEP) // 14
    np.testing.assert_array_equal(fit.eta_draw_index, expected)
    assert fit.eta.shape == (2, 7, counts.n_cells, counts.n_combos)
    assert (fit.n_draws, fit.n_eta_draws) == (N_KEEP, 7)
    np.testing.assert_array_equal(fit.eta, all_fit.eta[:, expected])  # bitwise
    for name in ("scalars", "theta", "beta"):
        np.testing.assert_array_equal(getattr(fit, name), getattr(all_fit, name))
    # Stored draw 7 + 3 is chain 1, retained draw expected[3].
    assert fit.draw_position(10) == (1, int(expected[3]))
    np.testing.assert_array_equal(fit.lambda_draw(10),
                                  np.exp(all_fit.eta[1, expected[3]].astype(np.float64)))
    with pytest.raises(InputError, match=r"index must be an integer in \[-14, 14\)"):
        fit.lambda_draw(14)
    assert "eta_draws=7" in repr(fit)


def test_repr_of_a_fit_without_its_draws(counts, all_fit):
    # synthesize_dask ships a template of the fit without its draws; its repr (in a worker's
    # traceback, say) used to raise on eta.shape.
    template = dataclasses.replace(all_fit, scalars=None, theta=None, beta=None, eta=None)
    assert repr(template) == (f"PaivaFit({all_fit.model!r}, draws=None, cells={counts.n_cells}, "
                              f"combinations={counts.n_combos})")


def test_posterior_mean_is_over_all_retained_draws(counts, all_fit):
    fit = PaivaModel(beta_prior="normal").fit(counts, eta_draws=3, **RUN)
    every = np.exp(all_fit.eta.astype(np.float64)).mean(axis=(0, 1))
    np.testing.assert_allclose(fit.posterior_mean_lambda(), every, rtol=1e-12)
    np.testing.assert_allclose(all_fit.posterior_mean_lambda(), every, rtol=1e-12)
    assert fit.lambda_chain_means.shape == (2, counts.n_cells, counts.n_combos)
    np.testing.assert_allclose(fit.lambda_chain_means[1],
                               np.exp(all_fit.eta[1].astype(np.float64)).mean(axis=0), rtol=1e-12)
    # The test has power: the mean of the 3 stored draws is another number.
    stored = np.exp(fit.eta.astype(np.float64)).mean(axis=(0, 1))
    assert np.max(np.abs(stored / every - 1)) > 1e-3


def test_k_above_the_retained_draws_keeps_them_all(counts, all_fit):
    fit = PaivaModel(beta_prior="normal").fit(counts, eta_draws=10**6, **RUN)
    np.testing.assert_array_equal(fit.eta, all_fit.eta)
    np.testing.assert_array_equal(fit.eta_draw_index, np.arange(N_KEEP))


def test_auto_keeps_every_draw_when_they_fit(counts, all_fit):
    with warnings.catch_warnings():
        warnings.simplefilter("error", GeosynthWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)  # 300 sweeps: not the point
        fit = PaivaModel(beta_prior="normal").fit(counts, max_bytes=budget(counts, N_KEEP),
                                                  **RUN)
    np.testing.assert_array_equal(fit.eta, all_fit.eta)
    assert fit.n_eta_draws == N_KEEP


def test_auto_warns_and_keeps_the_largest_k_that_fits(counts, all_fit):
    max_bytes = budget(counts, 13, extra=counts.n_cells * counts.n_combos * 4)  # 13.5 draws
    with pytest.warns(GeosynthWarning, match=r"η is kept for 13 evenly spaced draws per chain"
                      r".*eta_draws=<int>.*max_bytes") as record:
        fit = PaivaModel(beta_prior="normal").fit(counts, max_bytes=max_bytes, **RUN)
    assert record[0].filename == __file__  # points at the caller of fit
    assert fit.n_eta_draws == 13
    np.testing.assert_array_equal(fit.eta_draw_index, evenly_spaced_draws(N_KEEP, 13))
    np.testing.assert_array_equal(fit.eta, all_fit.eta[:, fit.eta_draw_index])
    np.testing.assert_allclose(fit.posterior_mean_lambda(), all_fit.posterior_mean_lambda(),
                               rtol=1e-12)
    # One byte less than 13 draws: 12.
    with pytest.warns(GeosynthWarning, match="kept for 12 evenly"):
        fit = PaivaModel(beta_prior="normal").fit(counts, max_bytes=budget(counts, 13) - 1,
                                                  **RUN)
    assert fit.n_eta_draws == 12


def test_refusals_name_eta_draws_and_max_bytes(counts):
    model = PaivaModel(beta_prior="normal")
    max_bytes = budget(counts, 13)
    with pytest.raises(MemoryLimitError, match=r"eta_draws='auto' or eta_draws=13 .*max_bytes"):
        model.fit(counts, eta_draws="all", max_bytes=max_bytes, **RUN)
    with pytest.raises(MemoryLimitError, match=r"eta_draws=50 .*pass eta_draws=13 or less"):
        model.fit(counts, eta_draws=50, max_bytes=max_bytes, **RUN)
    fit = model.fit(counts, eta_draws=13, max_bytes=max_bytes, **RUN)  # exactly at the limit
    assert fit.n_eta_draws == 13
    # Not even one draw of η next to the scalars, θ and β.
    with pytest.raises(MemoryLimitError, match=r"θ and β .*no room .* even one stored draw"):
        model.fit(counts, max_bytes=budget(counts, 1) - 1, **RUN)
    # Without β the budget is smaller, and the message does not mention β.
    with pytest.raises(MemoryLimitError, match=r"scalars and θ of .*no room"):
        PaivaModel().fit(counts, max_bytes=budget(counts, 1, beta=False) - 1, **RUN)
    with pytest.warns(GeosynthWarning, match="kept for 1 evenly spaced draws"):
        fit = PaivaModel().fit(counts, max_bytes=budget(counts, 1, beta=False), **RUN)
    assert fit.n_eta_draws == 1 and fit.beta is None


@pytest.mark.parametrize("eta_draws", [0, -3, 2.5, True, "some", None, "ALL"])
def test_eta_draws_validated(counts, eta_draws):
    with pytest.raises(InputError, match="eta_draws must be 'all', 'auto' or an integer >= 1"):
        PaivaModel().fit(counts, eta_draws=eta_draws, **RUN)


@pytest.mark.parametrize("max_bytes", [0, -1, 1.5e9, True, None])
def test_max_bytes_validated(counts, max_bytes):
    with pytest.raises(InputError, match="max_bytes must be a positive int"):
        PaivaModel().fit(counts, max_bytes=max_bytes, **RUN)


@pytest.mark.parametrize("max_bytes", [10**400, 2**1100], ids=["1e400", "2**1100"])
def test_a_max_bytes_beyond_the_float_range_is_a_limit_like_any_other(counts, max_bytes):
    """max_bytes = 10**400 raised OverflowError (float division) in place of the fit."""
    fit = PaivaModel().fit(counts, max_bytes=max_bytes, **RUN)
    assert fit.n_eta_draws == N_KEEP


@pytest.mark.parametrize("kind", [np.uint64, np.uint32, np.int64])
def test_numpy_max_bytes_is_enforced_as_the_int(counts, kind):
    """A NumPy unsigned max_bytes wrapped around below the fixed bytes and bypassed the limit."""
    max_bytes = kind(budget(counts, 0, beta=False) // 2)  # half the bytes of θ alone
    with pytest.raises(MemoryLimitError, match=r"no room"):
        PaivaModel().fit(counts, max_bytes=max_bytes, **RUN)
    with pytest.raises(MemoryLimitError, match=r"max_bytes = .* holds"):
        PaivaModel().fit(counts, n_iter="auto", chains=2, seed=7, progress=False,
                         max_bytes=kind(1000))


def test_refusal_allocates_nothing(counts):
    """10^8 retained draws of θ need ~20 GB: refused with nothing large allocated."""
    tracemalloc.start()
    try:
        with pytest.raises(MemoryLimitError, match="no room"):
            PaivaModel().fit(counts, n_iter=10**8, burn_in=0, thin=1, progress=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20


def test_default_plan_at_102400_cells_stays_under_8_gb():
    """The 2-chain default fit of G = 102,400 cells, B = 12 (no β): ≤ 4 GiB of stored draws."""
    G, B, S = 320 * 320, 12, 12
    options = dict(n_iter=8000, burn_in=2000, thin=6, chains=2, n_cells=G, n_combos=B,
                   n_scalars=S, beta=False, noise=False, max_bytes=DEFAULT_MAX_BYTES)
    with pytest.raises(MemoryLimitError, match="eta_draws='auto' or eta_draws=348 "):
        plan_storage(eta_draws="all", **options)
    with pytest.warns(GeosynthWarning, match="kept for 348 evenly spaced draws"):
        plan = plan_storage(eta_draws="auto", **options)
    assert plan.n_keep == 1000 and plan.eta_index.size == 348 and plan.draws_per_chunk == 1
    theta = 2 * 1000 * G * 4
    eta = 2 * 348 * G * B * 4
    assert theta + eta < plan.n_bytes <= DEFAULT_MAX_BYTES
    # Storing every draw would need 10.7 GB; what is stored now leaves the sampler's few
    # (G, B) arrays and the data well under 8 GB (bench/bench_scaling.py measures peak RSS).
    assert 2 * 1000 * G * B * 4 + theta > 10.6e9


def _memory_owner(array):
    """The object whose memory ``array`` views (through every base)."""
    while isinstance(array, np.ndarray) and array.base is not None:
        array = array.base
    return array.obj if isinstance(array, memoryview) else array


@pytest.mark.skipif(not hasattr(mmap, "MAP_POPULATE"), reason="mmap.MAP_POPULATE is Linux's")
def test_a_fixed_length_fit_records_into_memory_mapped_up_front(counts, monkeypatch):
    # Memory the OS maps a page at a time as the draws are written cost about 10 µs a page on
    # the bench's VM (5 % of a sweep at 1,600 cells, thin 1): a fixed-length fit, which fills
    # its draw arrays, has them mapped in one call; the draws are those of unmapped arrays.
    monkeypatch.setattr(runner, "POPULATE_MIN_BYTES", 0)
    mapped = PaivaModel(beta_prior="normal").fit(counts, **RUN)
    monkeypatch.setattr(runner, "POPULATE_MIN_BYTES", 2**62)
    plain = PaivaModel(beta_prior="normal").fit(counts, **RUN)
    for name in ("eta", "theta", "beta"):
        assert isinstance(_memory_owner(getattr(mapped, name)), mmap.mmap)
        assert not isinstance(_memory_owner(getattr(plain, name)), mmap.mmap)
        np.testing.assert_array_equal(getattr(mapped, name), getattr(plain, name))
    for name in mapped.scalar_names:
        np.testing.assert_array_equal(mapped.scalar(name), plain.scalar(name))
