"""bench/__main__.py: benchmark names and options are checked first; finished tables are kept."""

from __future__ import annotations

import sys
import types

import pytest

from bench import __main__ as bench_main
from bench import bench_pymc


def _fake(monkeypatch, tmp_path, **runs):
    """A bench folder at ``tmp_path`` holding ``bench_<name>.py`` for each of ``runs``."""
    monkeypatch.setattr(bench_main, "HERE", tmp_path)
    ran = []
    for name, run in runs.items():
        (tmp_path / f"bench_{name}.py").write_text("")
        module = types.ModuleType(f"bench.bench_{name}")

        def wrapped(run=run, name=name):
            ran.append(name)
            return run()

        module.run = wrapped
        monkeypatch.setitem(sys.modules, f"bench.bench_{name}", module)
    return ran


def _boom():
    raise RuntimeError("peer failed\nlong traceback text")


def test_an_unknown_name_is_refused_before_any_benchmark_runs(monkeypatch, tmp_path, capsys):
    ran = _fake(monkeypatch, tmp_path, aaa=lambda: "| a |")
    with pytest.raises(SystemExit):
        bench_main.main(["aaa", "lattices", "--no-record"])
    err = capsys.readouterr().err
    assert "unknown benchmark 'lattices'" in err and "choose among aaa" in err
    assert ran == []


def test_file_names_are_accepted_for_benchmark_names(monkeypatch, tmp_path):
    ran = _fake(monkeypatch, tmp_path, aaa=lambda: "| a |")
    bench_main.main(["bench_aaa.py", "aaa", "--no-record"])
    assert ran == ["aaa"]


def test_a_benchmarks_own_option_is_refused_with_where_it_goes(monkeypatch, tmp_path, capsys):
    ran = _fake(monkeypatch, tmp_path, aaa=lambda: "| a |")
    with pytest.raises(SystemExit):
        bench_main.main(["aaa", "--quick", "--no-record"])
    err = capsys.readouterr().err
    assert "--quick" in err and "BENCH_PYMC_ARGS" in err
    assert ran == []


def test_bad_pymc_options_in_the_environment_stop_the_run_before_it_starts(
        monkeypatch, tmp_path):
    ran = _fake(monkeypatch, tmp_path, aaa=lambda: "| a |")
    (tmp_path / "bench_pymc.py").write_text("")
    monkeypatch.setitem(sys.modules, "bench.bench_pymc", bench_pymc)
    monkeypatch.setenv(bench_pymc.ARGS_ENV, "--sizes 500")  # not a square
    with pytest.raises(SystemExit):
        bench_main.main(["--no-record"])  # aaa, then pymc
    assert ran == []


def test_the_tables_that_finished_are_recorded_when_a_later_one_fails(monkeypatch, tmp_path):
    _fake(monkeypatch, tmp_path, aaa=lambda: "| first table |", zzz=_boom)
    with pytest.raises(RuntimeError, match="peer failed"):
        bench_main.main(["aaa", "zzz"])
    text = (tmp_path / "RESULTS.md").read_text()
    assert "`python -m bench aaa zzz`" in text and "### aaa\n\n| first table |" in text
    assert "(stopped at `zzz`: RuntimeError: peer failed)" in text
    assert "long traceback" not in text and "### zzz" not in text


def test_a_finished_run_is_recorded_once(monkeypatch, tmp_path):
    _fake(monkeypatch, tmp_path, aaa=lambda: "| a |", bbb=lambda: "| b |")
    bench_main.main([])
    text = (tmp_path / "RESULTS.md").read_text()
    assert text.count("## ") == 3 and "### aaa" in text and "### bbb" in text
    assert "stopped" not in text
