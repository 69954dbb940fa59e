"""studies.doca_table1: the reproduction of Table 1 of Leal, Vidal & Machado (2018), quick runs."""

import pytest

from studies import doca_table1


def test_report_reproduces_the_mse_reduction():
    text = doca_table1.doca_report(n=20_000, runs=2, seed=1, command="test")
    assert "| MSE reduction | 99.30% |" in text
    assert "`test`" in text
    assert text.count("\n| 1 |") == 1 and text.count("\n| 2 |") == 1


def test_report_refuses_no_runs():
    with pytest.raises(ValueError, match="runs must be an int >= 1"):
        doca_table1.doca_report(n=1_000, runs=0)


def test_main_writes_and_prints_the_report(tmp_path, capsys):
    out = tmp_path / "sub" / "results_doca.md"
    doca_table1.main(["--n", "5000", "--runs", "1", "--seed", "3", "--output", str(out)])
    text = out.read_text()
    assert text.startswith("# DOCA on a simulated skewed stream")
    assert f"`python -m studies.doca_table1 --n 5000 --runs 1 --seed 3 --output {out}`" in text
    assert capsys.readouterr().out == text + "\n"


@pytest.mark.parametrize(("args", "message"), [(["--n", "0"], "argument --n: must be an integer"),
                                               (["--runs", "0"], "argument --runs: must be an")])
def test_bad_arguments_print_the_usage_not_a_traceback(args, message, capsys):
    with pytest.raises(SystemExit) as exited:
        doca_table1.main(args)
    assert exited.value.code == 2 and message in capsys.readouterr().err
