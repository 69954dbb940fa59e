from click.testing import CliRunner
from PIL import Image

from geosynth.cli import cli


def test_demo_prints_summary_and_writes_png(tmp_path):
    result = CliRunner().invoke(cli, ["demo", "--out", str(tmp_path), "--seed", "3", "--n", "300"])
    assert result.exit_code == 0, result.output
    assert "300 records" in result.output
    assert "n_records" in result.output
    png = tmp_path / "counts.png"
    with Image.open(png) as image:
        assert image.size[0] > 400 and image.size[1] > 300


def test_demo_bad_grid_spec_exits_2(tmp_path):
    result = CliRunner().invoke(cli, ["demo", "--out", str(tmp_path), "--grid", "10by10"])
    assert result.exit_code == 2
    assert "ROWSxCOLS" in result.output
    assert "Traceback" not in result.output
