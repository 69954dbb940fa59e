"""Options shared by the subcommands: absurd values are refused by click, naming the option."""

import pytest

from tests.cli.helpers import FAST, assert_refused, run

#: A number of 5,000 digits: int() refuses more than 4,300 (a ValueError, not a click error).
HUGE = "9" * 5000


@pytest.mark.parametrize(
    ("args", "fragments"),
    [(["--grid", f"{HUGE}x4"], ["--grid", "more than the limit of 4,000,000 cells"]),
     (["--grid", f"4x{'0' * 5000}4"], None),
     (["--grid", "4x4", "--iterations", HUGE],
      ["--iterations", "above the limit of 1,000,000,000"])],
)
def test_numbers_of_thousands_of_digits_are_refused_not_a_traceback(inputs, tmp_path, args,
                                                                    fragments):
    fast = [a for a in FAST if a not in ("--iterations", "40")] if "--iterations" in args else FAST
    result = run("release", inputs["gpkg"], "--attributes", "y,x1", *fast, *args,
                 "--out", tmp_path / "o.gpkg")
    if fragments is None:  # leading zeros are still the number 4
        assert result.exit_code == 0, result.output
    else:
        assert_refused(result, *fragments)
        assert list(tmp_path.iterdir()) == []


def test_tune_grids_of_thousands_of_digits_are_refused(inputs, tmp_path):
    result = run("tune", inputs["gpkg"], "--attributes", "y,x1", "--grids", f"4x4,{HUGE}x4",
                 *FAST, "--report", tmp_path / "r.md")
    assert_refused(result, "--grids", "more than the limit of 4,000,000 cells")
