"""The vectorised bulk ESS and rank R-hat equal arviz's, parameter by parameter."""

import warnings

import numpy as np
import pytest

from geosynth._compat import import_arviz
from geosynth.errors import InputError
from geosynth.model import diagnostics
from geosynth.model.diagnostics import convergence_diagnostics


def ar1_draws(chains, n, params, dtype=np.float64, seed=1):
    """AR(1) chains with autocorrelations from -0.9 to 0.99, ties, a constant and a stuck chain."""
    rng = np.random.default_rng(seed)
    phi = np.linspace(-0.9, 0.99, params)
    x = np.zeros((chains, n, params))
    noise = rng.normal(size=(chains, n, params))
    x[:, 0] = noise[:, 0]
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    if params >= 3:
        x[..., 0] = np.round(x[..., 0])  # many ties
        x[..., 1] = 3.0  # constant
        x[0, :, 2] += 2.0  # one chain elsewhere: R-hat far above 1
    return x.astype(dtype)


def arviz_diagnostics(draws):
    az = import_arviz()
    dataset = az.convert_to_dataset({"x": draws})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # arviz's 0/0 for the constant
        ess = az.ess(dataset, method="bulk")["x"].values
        rhat = az.rhat(dataset, method="rank")["x"].values
    return ess, rhat


@pytest.mark.parametrize(
    ("chains", "n", "dtype"),
    [(2, 4, np.float64), (2, 5, np.float64), (2, 9, np.float64), (2, 10, np.float64),
     (2, 13, np.float64), (3, 101, np.float64), (4, 64, np.float64), (2, 1000, np.float64),
     (2, 1000, np.float32), (2, 333, np.float32)],
)
def test_equals_arviz(chains, n, dtype):
    draws = ar1_draws(chains, n, 24, dtype)
    ours = convergence_diagnostics(draws)
    ess, rhat = arviz_diagnostics(draws)
    np.testing.assert_allclose(ours.ess_bulk, ess, rtol=1e-10, equal_nan=True)
    np.testing.assert_allclose(ours.r_hat, rhat, rtol=1e-10, equal_nan=True)
    assert np.isnan(ours.r_hat[1]) and ours.ess_bulk[1] == 2 * chains * (n // 2)
    assert ours.r_hat[2] > 1.1 or n < 50


@pytest.mark.parametrize("direct_lags", [2, 10**6])
def test_lags_summed_directly_or_by_fft_equal_arviz(monkeypatch, direct_lags):
    """The default sums most columns' lags directly and takes the FFT's for φ near 1 (above):
    here every column goes one way or the other."""
    monkeypatch.setattr(diagnostics, "DIRECT_LAGS", direct_lags)
    draws = ar1_draws(2, 1000, 24)
    ours = convergence_diagnostics(draws)
    ess, rhat = arviz_diagnostics(draws)
    np.testing.assert_allclose(ours.ess_bulk, ess, rtol=1e-10, equal_nan=True)
    np.testing.assert_allclose(ours.r_hat, rhat, rtol=1e-10, equal_nan=True)


def test_one_chain_has_ess_but_no_rhat():
    draws = ar1_draws(1, 200, 5)
    ours = convergence_diagnostics(draws)
    ess, _ = arviz_diagnostics(draws)
    np.testing.assert_allclose(ours.ess_bulk, ess, rtol=1e-10, equal_nan=True)
    assert np.isnan(ours.r_hat).all()


def test_too_few_draws_and_nan_draws_give_nan():
    assert np.isnan(convergence_diagnostics(np.zeros((2, 3, 4)))).all()
    draws = ar1_draws(2, 50, 4)
    draws[1, 7, 3] = np.nan
    ours = convergence_diagnostics(draws)
    assert np.isnan(ours.ess_bulk[3]) and np.isnan(ours.r_hat[3])
    assert np.isfinite(ours.ess_bulk[:3]).all()


def test_shapes_batches_and_threads_give_the_same_numbers(monkeypatch):
    from geosynth.model import diagnostics

    draws = ar1_draws(2, 120, 30).reshape(2, 120, 5, 6)
    whole = convergence_diagnostics(draws)
    assert whole.ess_bulk.shape == (30,)
    monkeypatch.setattr(diagnostics, "BATCH_VALUES", 2 * 120 * 7)  # batches of 7 parameters
    for workers in (1, 3):
        batched = convergence_diagnostics(draws, workers=workers)
        np.testing.assert_array_equal(batched.ess_bulk, whole.ess_bulk)
        np.testing.assert_array_equal(batched.r_hat, whole.r_hat)
    scalar = convergence_diagnostics(draws[:, :, 2, 3])
    assert scalar.ess_bulk.shape == (1,) and scalar.ess_bulk[0] == whole.ess_bulk[15]


def test_bad_shape_refused():
    with pytest.raises(InputError, match=r"shape \(chains, draws, ...\)"):
        convergence_diagnostics(np.zeros(10))
    # No chain: a ZeroDivisionError / reshape ValueError deep inside before.
    with pytest.raises(InputError, match=r"at least one chain, got \(0, 10, 3\)"):
        convergence_diagnostics(np.zeros((0, 10, 3)))


def test_no_draw_gives_nan_as_too_few_do():
    """Chains without a draw raised NumPy's reshape error (-1 of an empty array)."""
    result = convergence_diagnostics(np.zeros((2, 0, 3)))
    assert result.ess_bulk.shape == result.r_hat.shape == (3,)
    assert np.isnan(result.ess_bulk).all() and np.isnan(result.r_hat).all()


def test_masked_draws_refused():
    """The values under the mask entered the ESS and R-hat without a word."""
    draws = ar1_draws(2, 50, 3)
    masked = np.ma.masked_array(draws, mask=draws > 1.0)
    with pytest.raises(InputError, match="draws is a masked array with masked entries"):
        convergence_diagnostics(masked)
    unmasked = convergence_diagnostics(np.ma.masked_array(draws))
    np.testing.assert_array_equal(unmasked.r_hat, convergence_diagnostics(draws).r_hat)


@pytest.mark.parametrize("workers", [2.0, "2", None, True])
def test_workers_must_be_an_int(workers):
    """2.0, "2" and None raised NumPy's or range()'s TypeError; True ran as 1 thread."""
    with pytest.raises(TypeError, match=r"workers must be an int \(threads\), got"):
        convergence_diagnostics(ar1_draws(2, 20, 2), workers=workers)


@pytest.mark.parametrize("workers", [0, -5])
def test_workers_below_one_refused(workers):
    """0 and -5 ran as one thread without a word."""
    with pytest.raises(InputError, match=r"workers must be an int >= 1 \(threads\), got"):
        convergence_diagnostics(ar1_draws(2, 20, 2), workers=workers)


def test_numpy_workers_give_the_numbers_of_the_int():
    """np.uint8(2) overflowed (OverflowError) in the arithmetic that sizes the batches."""
    draws = ar1_draws(2, 50, 3)
    expected = convergence_diagnostics(draws, workers=2)
    result = convergence_diagnostics(draws, workers=np.uint8(2))
    np.testing.assert_array_equal(result.r_hat, expected.r_hat)
    np.testing.assert_array_equal(result.ess_bulk, expected.ess_bulk)


@pytest.mark.parametrize("draws", [np.ones((2, 10, 2)) + 1j, np.full((2, 10), "a"),
                                   np.full((2, 10), None, dtype=object)])
def test_draws_that_are_not_real_numbers_refused(draws):
    """Complex draws lost their imaginary part silently; strings and objects failed in NumPy."""
    with pytest.raises(InputError, match=r"draws must hold real numbers .* got dtype"):
        convergence_diagnostics(draws)


def test_radix_sort_of_float32_rows_sorts_and_permutes():
    rng = np.random.default_rng(3)
    values = rng.normal(scale=1e3, size=(6, 777)).astype(np.float32)
    values[0, :6] = [0.0, -0.0, 0.0, 1.5, 1.5, -2.0]
    values[1] = np.round(values[1] / 500)  # many ties
    values[2] = 7.0  # a constant row: every byte pass is skipped
    values[3, ::7], values[3, 1::7] = np.inf, -np.inf
    values[4, :50] = np.float32(1e-42) * np.arange(-25, 25)  # subnormals of both signs
    order = np.empty(values.shape, dtype=np.int64)
    sorted_values = np.empty_like(values)
    diagnostics._radix_sort_rows(values, order, sorted_values)
    np.testing.assert_array_equal(sorted_values, np.sort(values, axis=1))
    np.testing.assert_array_equal(np.take_along_axis(values, order, axis=1), sorted_values)
    np.testing.assert_array_equal(np.sort(order, axis=1), np.broadcast_to(np.arange(777),
                                                                          order.shape))


def test_float32_diagnostics_equal_those_of_numpys_argsort(monkeypatch):
    """The radix sort only orders equal values differently, which their average rank ignores."""
    draws = ar1_draws(2, 500, 24, np.float32)
    radix = convergence_diagnostics(draws)

    def numpy_argsort(values, order, sorted_values):
        order[:] = np.argsort(values, axis=1)
        sorted_values[:] = np.take_along_axis(values, order, axis=1)

    monkeypatch.setattr(diagnostics, "_radix_sort_rows", numpy_argsort)
    argsort = convergence_diagnostics(draws)
    np.testing.assert_array_equal(radix.ess_bulk, argsort.ess_bulk)
    np.testing.assert_array_equal(radix.r_hat, argsort.r_hat)


def pathological_draws(chains, n, seed=2):
    """Columns arviz handles by special cases: infinities, heavy tails, stuck chains, ties."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(chains, n, 10))
    x[0, 1, 0], x[-1, 2, 0] = np.inf, -np.inf  # a few infinite draws
    x[:, ::3, 1] = np.inf  # a third of the draws at +inf
    x[:, : n // 2, 2], x[:, n // 2:, 2] = np.inf, -np.inf  # the median between -inf and inf
    x[..., 3] = rng.standard_cauchy(size=(chains, n))  # heavy tails
    x[..., 4] = np.arange(chains)[:, None]  # each chain constant, all at different values
    x[..., 5] = 0.0
    x[0, n // 2, 5] = 1.0  # constant but for one draw
    x[..., 6] = np.where(rng.random((chains, n)) < 0.5, 0.0, -0.0)  # signed zeros: one value
    x[..., 7] = 1.0 + 1e-15 * rng.normal(size=(chains, n))  # spread far below the resolution
    x[..., 8] = 1e300 * rng.normal(size=(chains, n))  # ±inf in float32
    x[rng.random((chains, n)) < 0.6, 9] = np.inf  # the median: inf
    return x


@pytest.mark.parametrize(("chains", "n"), [(1, 4), (1, 9), (1, 200), (2, 4), (2, 7), (2, 200),
                                           (3, 51)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pathological_columns_equal_arviz(chains, n, dtype):
    """Where over half the draws are infinite (the last column; in float32 the 1e300 one too)
    the median is inf or NaN, so arviz's folded R-hat is NaN and the bulk one wins (the folded
    R-hat of NaN values was returned before)."""
    with np.errstate(over="ignore"):  # 1e300 is ±inf in float32: as intended
        draws = pathological_draws(chains, n).astype(dtype)
    ours = convergence_diagnostics(draws)
    ess, rhat = arviz_diagnostics(draws)
    np.testing.assert_allclose(ours.ess_bulk, ess, rtol=1e-10, equal_nan=True)
    # Columns 2 and 4: every split chain constant, the chains apart. R-hat divides by a
    # within-chain variance of 0, which arviz's rounding turns into 1e7 or NaN (its numba
    # variance can come out at -2e-16): here 1e15 or more, or inf. No rule may pass them.
    stuck = np.isin(np.arange(10), [2, 4])
    np.testing.assert_allclose(ours.r_hat[~stuck], rhat[~stuck], rtol=1e-10, equal_nan=True)
    if chains > 1:
        assert (ours.r_hat[stuck] > 1e15).all()


def test_ess_of_ar1_chains_is_their_known_ess():
    """AR(1) chains x_t = φ x_{t-1} + e_t started at stationarity have an ESS of
    N (1 − φ)/(1 + φ) (the integrated autocorrelation time of Geyer 1992); averaged over 200
    independent columns the bulk ESS is within 4 % of it (its standard error: 0.2-1.2 %)."""
    rng = np.random.default_rng(11)
    chains, n, params = 4, 2000, 200
    for phi in (0.0, 0.5, 0.9, 0.95):
        noise = rng.normal(size=(chains, n, params))
        x = np.empty_like(noise)
        x[:, 0] = noise[:, 0] / np.sqrt(1 - phi**2)
        for t in range(1, n):
            x[:, t] = phi * x[:, t - 1] + noise[:, t]
        ess = convergence_diagnostics(x).ess_bulk
        exact = chains * n * (1 - phi) / (1 + phi)
        assert ess.mean() == pytest.approx(exact, rel=0.04)


def test_chains_of_different_lengths_refused():
    """A list of chains of different lengths raised NumPy's "inhomogeneous shape" ValueError."""
    chains = [np.arange(10.0), np.arange(9.0)]
    with pytest.raises(InputError, match="draws holds chains of different lengths .* as many "
                                         "as the shortest has"):
        convergence_diagnostics(chains)
    equal = convergence_diagnostics([chain[:9] for chain in chains])
    assert equal.ess_bulk.shape == (1,)


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.bool_])
def test_integer_and_bool_draws_equal_arviz(dtype):
    """Draws with many ties (counts, indicators) are ranked as arviz ranks their floats."""
    rng = np.random.default_rng(5)
    counts = rng.poisson(2.0, size=(3, 41, 6))
    draws = counts > 1 if dtype == np.bool_ else counts.astype(dtype)
    ours = convergence_diagnostics(draws)
    ess, rhat = arviz_diagnostics(draws.astype(np.float64))
    np.testing.assert_allclose(ours.ess_bulk, ess, rtol=1e-10, equal_nan=True)
    np.testing.assert_allclose(ours.r_hat, rhat, rtol=1e-10, equal_nan=True)


@pytest.mark.parametrize("n", [4, 5, 3, 40])
def test_one_stuck_chain_among_moving_ones_equals_arviz(n):
    """A chain constant at one value while the others move: arviz's R-hat (finite: the moving
    chains give a within-chain variance; the stopping rule marks the stuck chain itself)."""
    rng = np.random.default_rng(6)
    draws = rng.normal(size=(3, n, 4))
    draws[1, :, 0] = 0.0  # at the others' centre
    draws[1, :, 1] = 5.0  # far from them
    draws[:, :, 2] = np.where(np.arange(3)[:, None] == 2, 1.0, draws[:, :, 2])
    ours = convergence_diagnostics(draws)
    ess, rhat = arviz_diagnostics(draws)
    np.testing.assert_allclose(ours.ess_bulk, ess, rtol=1e-10, equal_nan=True)
    np.testing.assert_allclose(ours.r_hat, rhat, rtol=1e-10, equal_nan=True)
    if n >= 4:
        assert ours.r_hat[1] > 1.5
    else:
        assert np.isnan(ours.r_hat).all() and np.isnan(ours.ess_bulk).all()
