from tests.cli.helpers import assert_refused, run


def test_evaluate_prints_tables_and_writes_report(inputs, written_release, tmp_path):
    report = tmp_path / "evaluation.md"
    result = run("evaluate", inputs["gpkg"], written_release, "--attributes", "y,x1",
                 "--outcome", "y", "--seed", 1, "--report", report)
    assert result.exit_code == 0, result.output
    assert "120 original records; 2 releases" in result.output
    for table in ("distance risk", "pattern", "coverage"):
        assert table in result.output
    assert "identification risk" not in result.output  # public releases are not linkable
    text = report.read_text()
    assert "### distance risk" in text and "y, x1; outcome `y`" in text


def test_evaluate_takes_attributes_from_the_release_metadata(inputs, written_release):
    result = run("evaluate", inputs["gpkg"], written_release)
    assert result.exit_code == 0, result.output
    assert "x2" in result.output.split("distance risk")[1].splitlines()[2]


def test_evaluate_reprojects_an_original_in_another_crs(inputs, written_release):
    result = run("evaluate", inputs["wgs84"], written_release, "--attributes", "y")
    assert result.exit_code == 0, result.output
    assert "Reprojecting wgs84.gpkg from EPSG:4326" in result.output


def test_evaluate_csv_original(inputs, written_release):
    result = run("evaluate", inputs["csv"], written_release, "--x", "east", "--y", "north",
                 "--crs", "EPSG:31983", "--attributes", "x1")
    assert result.exit_code == 0, result.output


def test_evaluate_missing_column(inputs, written_release):
    result = run("evaluate", inputs["gpkg"], written_release, "--attributes", "y,age")
    assert_refused(result, "--attributes", "'age'")


def test_evaluate_missing_outcome(inputs, written_release):
    result = run("evaluate", inputs["gpkg"], written_release, "--outcome", "sick")
    assert_refused(result, "--outcome", "'sick'")


def test_evaluate_file_that_is_not_a_release(inputs):
    result = run("evaluate", inputs["gpkg"], inputs["gpkg"])
    assert_refused(result, "not a geosynth release")


def test_evaluate_missing_file(inputs, tmp_path):
    result = run("evaluate", inputs["gpkg"], tmp_path / "none.gpkg")
    assert_refused(result, "none.gpkg", "does not exist")


def test_evaluate_refuses_existing_report(inputs, written_release, tmp_path):
    report = tmp_path / "evaluation.md"
    report.write_text("keep me")
    result = run("evaluate", inputs["gpkg"], written_release, "--report", report)
    assert_refused(result, "--report", "--overwrite")
    assert report.read_text() == "keep me"
    result = run("evaluate", inputs["gpkg"], written_release, "--report", report, "--overwrite")
    assert result.exit_code == 0, result.output
    assert "distance risk" in report.read_text()
