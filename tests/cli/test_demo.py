import json
import re

import pandas as pd
import pytest
from PIL import Image

from geosynth import io
from geosynth.cli.demo import FIGURES, side_by_side
from tests.cli.helpers import assert_refused, run

TINY = ["--n", 150, "--grid", "4x4", "--iterations", 40]


def test_demo_writes_release_report_figures_and_map(tmp_path):
    out, maps = tmp_path / "demo", tmp_path / "maps"
    result = run("demo", "--out", out, "--maps", maps, *TINY)
    assert result.exit_code == 0, result.output
    for expected in ("Scenario: 150 records", "seed 2014", "Lattice: 4x4 cells", "R-hat max:",
                     "Distance risk, mean over combinations", "Paiva", "Naive",
                     str(out / "release.gpkg"), str(maps / "review.html")):
        assert expected in result.output

    written = io.read_release(out / "release.gpkg")
    assert written.m == 5 and written.metadata["model"]["chains"] == 2
    assert written.metadata["model"]["beta_prior"] == "normal"
    seeds = json.loads(io.audit_path(out / "release.gpkg").read_text())["seeds"]
    assert seeds["seed"] == 2014

    report = (out / "report.md").read_text()
    # The command that repeats the run: "geosynth demo --seed 2014" alone gave other data.
    assert "`geosynth demo --seed 2014 --n 150 --grid 4x4 --iterations 40`" in report
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", report)
    assert sorted(links) == sorted(f"figures/{name}.png" for name in FIGURES)
    for link in links:
        with Image.open(out / link) as image:
            assert image.size[0] > 300
    for section in ("### distance risk", "### identification risk", "### coverage"):
        assert section in report
    distance = report.split("### distance risk")[1].split("###")[0]
    assert "Paiva" in distance and "Naive" in distance  # side by side
    html = (maps / "review.html").read_text()
    assert "Release 5" in html and "Original (internal)" in html

    # Existing outputs: refused before any work, nothing changed.
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    again = run("demo", "--out", out, "--maps", maps, *TINY)
    assert_refused(again, "--overwrite")
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before

    # --overwrite with the same seed reproduces the releases.
    again = run("demo", "--out", out, "--maps", maps, *TINY, "--overwrite")
    assert again.exit_code == 0, again.output
    rewritten = io.read_release(out / "release.gpkg")
    for a, b in zip(written.releases, rewritten.releases, strict=True):
        pd.testing.assert_frame_equal(pd.DataFrame(a), pd.DataFrame(b))


def test_demo_report_shows_no_distance_of_one_record_and_says_it_is_internal(tmp_path):
    # The report and the summary printed the distances of combinations of one record (one
    # person's distance to the public synthetic points), as geosynth evaluate does not, and
    # the report did not say it was internal.
    result = run("demo", "--out", tmp_path, "--n", 100, "--grid", "4x4", "--iterations", 40)
    assert result.exit_code == 0, result.output
    report = (tmp_path / "report.md").read_text()
    assert "Internal document: it describes the confidential data" in report
    distance = report.split("### distance risk")[1].split("###")[0]
    assert ("Not shown (NaN): min_distance, mean_distance, worst_min_distance and "
            "worst_mean_distance of") in distance
    # n_original, n_synthetic and the two distances of each method end every row
    rows = [line.split() for line in distance.splitlines() if line.strip()[:1].isdigit()]
    lone = [row for row in rows if float(row[-6].replace(",", "")) < 3]
    assert lone and all(row[-4:] == ["NaN"] * 4 for row in lone)
    assert all("NaN" not in row for row in rows if row not in lone)


def test_demo_map_defaults_to_out_maps(tmp_path):
    result = run("demo", "--out", tmp_path, "--seed", 3, *TINY)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "maps" / "review.html").exists()


def test_demo_bad_grid_spec_exits_2(tmp_path):
    result = run("demo", "--out", tmp_path, "--grid", "10by10")
    assert_refused(result, "ROWSxCOLS")
    assert list(tmp_path.iterdir()) == []


def test_demo_refuses_an_empty_folder_name_and_too_few_iterations(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("demo", "--out", "")  # Path("") was the current folder
    assert_refused(result, "--out", "give a folder name, not an empty text")
    # 14 sweeps keep 2 x 2 draws: too few for the 5 releases (it failed after the fit)
    result = run("demo", "--out", "o", "--iterations", "14")
    assert_refused(result, "--iterations", "15")
    assert list(tmp_path.iterdir()) == []


def test_demo_help_documents_reproducibility_and_hides_iterations():
    result = run("demo", "--help")
    assert result.exit_code == 0
    assert "2014" in result.output and "reproducible" in result.output
    assert "--iterations" not in result.output
    # Not the same files: the release records its creation time, the map random element ids.
    text = " ".join(result.output.split())
    assert "gives the same files" not in text and "same --n and --grid" in text


@pytest.mark.parametrize("inside", ["release.gpkg", "figures/trace.png"])
def test_demo_refuses_a_maps_folder_inside_an_output_file(tmp_path, inside):
    # --maps OUT/release.gpkg failed after the whole fit: "path ... is a directory".
    out = tmp_path / "out"
    result = run("demo", "--out", out, "--maps", out / inside, *TINY)
    assert_refused(result, "--maps", "would lie inside", "choose another --maps folder")
    assert "Fitting" not in result.output and list(tmp_path.iterdir()) == []


def test_side_by_side_shares_equal_columns_and_stacks_wide_tables():
    a = pd.DataFrame({"n": [1, 2], "d": [0.5, 0.7]}, index=["p", "q"])
    b = pd.DataFrame({"n": [1, 2], "d": [0.1, 0.2]}, index=["p", "q"])
    table = side_by_side({"Paiva": a, "Naive": b})
    assert list(table.columns) == [("", "n"), ("Paiva", "d"), ("Naive", "d")]
    wide = {name: pd.DataFrame({f"c{k}": [k + j] for k in range(5)})
            for j, name in enumerate(("A", "B"))}
    stacked = side_by_side(wide)
    assert stacked.index.names[0] == "method" and len(stacked) == 2


@pytest.mark.parametrize("n", [2, 20, 99])
def test_demo_refuses_too_few_records_before_the_fit(tmp_path, n):
    # --n 2 was refused as "a wrong CRS of the original points (--crs)", --n 20 after the
    # whole fit with "lower min_points": advice the demo cannot follow.
    result = run("demo", "--out", tmp_path / "out", "--n", n, "--grid", "4x4")
    assert_refused(result, "--n", "100")
    assert "Fitting" not in result.output and list(tmp_path.iterdir()) == []


def test_demo_refuses_more_records_than_it_can_evaluate_before_the_fit(tmp_path):
    # --n 10000000 was inside the range and ended in a raw MemoryError of the simulation under
    # a 4 GB limit; any --n far above 10,000 ran for hours (the evaluation is quadratic).
    result = run("demo", "--out", tmp_path / "out", "--n", 10_001, "--grid", "4x4",
                 "--iterations", 40)
    assert_refused(result, "--n", "10001 is not in the range 100<=x<=10000")
    assert "Fitting" not in result.output and list(tmp_path.iterdir()) == []
    help_text = run("demo", "--help").output
    assert "to 10,000 (the evaluation's time grows with the square of --n" in " ".join(
        help_text.split())


def test_demo_refuses_a_grid_above_the_cell_limit_in_cli_terms(tmp_path):
    # The lattice's message ended "(or raise geosynth.lattice.MAX_CELLS)": Python advice.
    result = run("demo", "--out", tmp_path / "out", "--grid", "3000x3000")
    assert_refused(result, "--grid", "3000x3000 would have more than the limit of 4,000,000")
    assert "MAX_CELLS" not in result.output and list(tmp_path.iterdir()) == []


def test_demo_advice_names_its_own_options_and_a_nan_r_hat_says_why(tmp_path):
    # --grid 1x1 warned "use a larger --cell-size or a region", --n 100 "coarsen the lattice
    # or the attributes" (the demo has none of these), and 3 draws per chain
    # printed "R-hat max: nan".
    # A 1x1 lattice: each combination's one cell mean would be published (none to judge it
    # against), so the synthetic z is refused, with the demo's options.
    refused = run("demo", "--out", tmp_path / "one", "--n", 100, "--grid", "1x1",
                  "--iterations", 15)
    assert refused.exit_code == 2 and refused.output.rstrip().endswith(
        "use a --grid of more cells, or raise --n"), refused.output
    out = tmp_path / "out"
    result = run("demo", "--out", out, "--n", 100, "--grid", "2x2", "--iterations", 15)
    assert result.exit_code == 0, result.output
    # a warning may follow the residue of a closed progress bar ("\r ... \x1b[A") on its line
    warnings = [line[line.index("Warning:"):] for line in refused.output.splitlines()
                + result.output.splitlines() if "Warning:" in line]
    assert any("a --grid of more than one cell" in line for line in warnings), warnings
    assert any("have fewer than 3 cells holding 3 or more of their records" in line
               and "raise --n" in line for line in warnings), warnings
    for advice in ("--cell-size", "a region", "coarsen the lattice", "the attributes that make",
                   "drop the column"):
        assert advice not in result.output + refused.output, advice
    assert "R-hat max: nan" not in result.output
    assert ("R-hat max: not computable: 3 draws per chain, and R-hat needs 4 or more; raise "
            "--iterations") in result.output
    assert "R-hat max: not computable: 3 draws per chain" in (out / "report.md").read_text()


def test_describe_rhat():
    from types import SimpleNamespace

    from geosynth.cli.helpers import describe_rhat

    fit = SimpleNamespace(n_chains=2, n_draws=100)
    assert describe_rhat(1.0234, fit) == "1.023"
    assert describe_rhat(float("nan"), SimpleNamespace(n_chains=2, n_draws=3)).startswith(
        "not computable: 3 draws per chain")
    assert describe_rhat(float("nan"), SimpleNamespace(n_chains=1, n_draws=50)).startswith(
        "not computable: 1 chain, and R-hat compares 2 or more")
    assert "draws vary" in describe_rhat(float("nan"), fit)
