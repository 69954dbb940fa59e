"""What a new user sees on a first fit: the compile notice, no arviz banner, a clean install."""

import importlib.util
import os
import subprocess
import sys
import textwrap
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest

from geosynth import Grid, PaivaModel
from geosynth.model import runner as runner_module
from geosynth.model.sweep import run_chunk

ROOT = Path(__file__).resolve().parents[2]
RUN = {"n_iter": 200, "burn_in": 100, "seed": 3}


@pytest.fixture(scope="module")
def counts(make_scenario_counts):
    return make_scenario_counts(n=150, seed=4, shape=(5, 5), attributes=["y", "x1"]).counts


def test_compile_notice_before_the_progress_bars(counts, monkeypatch, capsys):
    monkeypatch.setattr(runner_module, "kernels_need_compiling", lambda kernel: True)
    PaivaModel().fit(counts, progress=True, **RUN)
    err = capsys.readouterr().err
    seconds = runner_module.COMPILE_SECONDS["serial"]
    notice = err.index(f"compiling the sampler (first run only, ~{seconds} s; "
                       "`geosynth compile` does it ahead of time)")
    done = err.index("compiled the sampler in ")
    # The bars start after the compilation, so their rate and ETA are the sampler's.
    assert notice < done < err.index("chain 0")


@pytest.mark.parametrize("kind", ["noise-aware", "chromatic"])
def test_compile_notice_quotes_the_sampler_that_runs(counts, monkeypatch, capsys, kind):
    from tests.model.test_sbc_noise_aware import noisy_counts

    monkeypatch.setattr(runner_module, "kernels_need_compiling", lambda kernel: True)
    if kind == "chromatic":
        PaivaModel().fit(counts, progress=True, parallel=True, chains=1, **RUN)
    else:
        grid = Grid.regular((0.0, 0.0, 3.0, 3.0), shape=(3, 3))
        noisy = noisy_counts(grid, np.ones((9, 2), dtype=np.int64), np.random.default_rng(1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the prior-only warnings of so few counts
            PaivaModel().fit(noisy, progress=True, chains=1, **RUN)
    seconds = runner_module.COMPILE_SECONDS[kind]
    assert (f"compiling the sampler (first run only, ~{seconds} s; `geosynth compile` does it "
            "ahead of time)") in capsys.readouterr().err


@pytest.mark.parametrize("progress", [True, False])
def test_no_notice_when_compiled_or_quiet(counts, monkeypatch, capsys, progress):
    PaivaModel().fit(counts, progress=False, chains=1, **RUN)  # compiled in this process now
    assert runner_module.kernels_need_compiling(run_chunk) is False
    if not progress:  # -q: no bars, no notice, even before compilation
        monkeypatch.setattr(runner_module, "kernels_need_compiling", lambda kernel: True)
    PaivaModel().fit(counts, progress=progress, **RUN)
    assert "compil" not in capsys.readouterr().err


def test_kernels_need_compiling_reads_numba_cache(tmp_path):
    """Not compiled and no cache: True; once compiled: False; a new process finds the cache."""
    source = tmp_path / "tiny_kernel.py"
    source.write_text(textwrap.dedent("""
        from numba import njit

        @njit(cache=True)
        def double(x):
            return 2 * x
    """))

    def load(name):
        spec = importlib.util.spec_from_file_location(name, source)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.double

    first = load("tiny_kernel")
    assert runner_module.kernels_need_compiling(first) is True
    assert first(2) == 4
    assert runner_module.kernels_need_compiling(first) is False
    # A fresh dispatcher of the same function (as in the next process) loads the cache.
    again = load("tiny_kernel_again")
    assert not again.signatures
    assert runner_module.kernels_need_compiling(again) is False


def test_summary_emits_no_future_warning(counts):
    for chains in (1, 2):
        fit = PaivaModel().fit(counts, progress=False, chains=chains, **RUN)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FutureWarning)
            fit.summary()
            fit.to_arviz()
        assert not [w for w in caught if issubclass(w.category, FutureWarning)], chains


def test_summary_of_one_draw_is_nan_without_numpy_warnings(counts):
    """One chain of one draw has no sd, ESS or R-hat: NaN, not NumPy's dof warnings."""
    fit = PaivaModel().fit(counts, progress=False, chains=1, n_iter=21, burn_in=20, thin=1,
                           seed=3)
    assert fit.scalars.shape[:2] == (1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = fit.summary()
    assert table["mean"].notna().all()
    assert table["sd"].isna().all() and table["r_hat"].isna().all()


def test_no_arviz_banner_on_a_fresh_user_cache(tmp_path):
    """arviz prints a FutureWarning on import once a day per user cache: not on our runs."""
    script = textwrap.dedent("""
        from geosynth import Grid, PaivaModel, prepare
        from geosynth.datasets import paiva_scenario

        scenario = paiva_scenario(n=60, seed=1)
        grid = Grid.regular(scenario.bounds, shape=(3, 3), crs=scenario.crs)
        counts = prepare(scenario.data, grid, attributes=["y"])
        fit = PaivaModel().fit(counts, n_iter=40, burn_in=20, seed=1, progress=False)
        print(fit.summary().shape[0])
    """)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))  # arviz's daily stamp lives there
    result = subprocess.run([sys.executable, "-W", "error::FutureWarning", "-c", script],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "FutureWarning" not in result.stderr and "ArviZ" not in result.stderr
    assert (tmp_path / "arviz" / "daily_warning").exists()  # arviz did try to warn


def test_license_is_an_spdx_string_for_setuptools_77():
    """A table ``license = {text = ...}`` is deprecated (pip install warns); SPDX needs >= 77."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT AND BSD-2-Clause AND BSD-3-Clause"
    for pattern in project["project"]["license-files"]:
        assert list(ROOT.glob(pattern)), pattern  # every licence file it names exists
    requires = project["build-system"]["requires"]
    assert "setuptools>=77" in requires
