import json

from geosynth import io
from tests.cli.helpers import assert_refused, run


def test_inspect_lists_layers_metadata_and_audit_without_seeds(written_release):
    result = run("inspect", written_release)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    layer_lines = {line.split()[0]: line.split()[1:] for line in lines if line.startswith("    ")
                   and not line.startswith("     ")}
    assert layer_lines["synthetic_1"] == ["Point", "120", "rows"]
    assert layer_lines["grid"] == ["Polygon", "16", "rows"]
    assert layer_lines["metadata"][0] == "table"
    assert '    method: "paiva"' in lines
    assert "        shape: [4, 4]" in lines  # nested metadata is indented under its key
    assert "Audit file:" in result.output and "exists" in result.output

    seeds = json.loads(io.audit_path(written_release).read_text())["seeds"]
    derived = [value for name, value in seeds.items() if name != "seed"]  # long numbers
    assert derived and not any(str(value) in result.output for value in derived)


def test_inspect_says_when_there_is_no_audit_file(written_release, tmp_path):
    copy = tmp_path / "copy.gpkg"
    copy.write_bytes(written_release.read_bytes())
    result = run("inspect", copy)
    assert result.exit_code == 0, result.output
    assert "Audit file: none" in result.output


def test_inspect_refuses_a_file_that_is_not_a_release(inputs):
    assert_refused(run("inspect", inputs["gpkg"]), "not a geosynth release")


def test_inspect_missing_file(tmp_path):
    assert_refused(run("inspect", tmp_path / "none.gpkg"), "does not exist")
