import json
import os
import sqlite3

import pandas as pd
import pyogrio
import pytest

from geosynth import io
from tests.cli.helpers import assert_refused, run
from tests.io.helpers import drop_layer, public_like, set_metadata, sql


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
    # Every key of the file's metadata, in file order, read back through ReleaseInfo.
    metadata = lines[lines.index("Metadata:") + 1:]
    keys = [line.split(":")[0].strip() for line in metadata
            if line.startswith("    ") and not line.startswith("     ")]
    assert keys == list(io.read_release(written_release).metadata)

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


# ---------------------------------------------------------------------- files that are not what
# they claim: one message, exit status 2, no traceback, nothing printed raw from the file
def _release(path, n=(4, 5, 6), **kwargs):
    io.write_release(path, [public_like(k) for k in n], **kwargs)
    return path


def test_inspect_refuses_a_partial_file(tmp_path):
    """A leftover of a killed write: 8 release layers of a planned 20, no metadata."""
    partial = tmp_path / ".release-k3x_9q2a.gpkg"
    for k in range(1, 9):
        pyogrio.write_dataframe(public_like(3), partial, layer=f"synthetic_{k}")
    assert_refused(run("inspect", partial),
                   "is incomplete or not a geosynth release: it has no metadata table")


@pytest.mark.parametrize(
    ("tamper", "fragment"),
    [
        (lambda p: sql(p, "ALTER TABLE metadata RENAME COLUMN key TO name"),
         "has columns ['name', 'value'] instead of key, value"),
        (lambda p: sql(p, ("UPDATE metadata SET value = ? WHERE key = 'notes'",
                           ("[" * 200_000 + "]" * 200_000,))), "nested more than 32 levels"),
        (lambda p: sql(p, "INSERT INTO metadata (key, value) VALUES ('m', '2')"),
         "the metadata key 'm' appears 2 times"),
        (lambda p: drop_layer(p, "synthetic_3"), "['synthetic_3'] are missing"),
        (lambda p: pyogrio.write_dataframe(public_like(2), p, layer="synthetic_01"),
         "layers that the release does not list: ['synthetic_01']"),
        (lambda p: sql(p, "DELETE FROM synthetic_2"), "'synthetic_2' has 0 rows but its metadata "
                                                      "records 5"),
        (lambda p: set_metadata(p, "layers", "synthetic_1"), "'layers' must be a list, got text"),
    ],
)
def test_inspect_refuses_tampered_files(tmp_path, tamper, fragment):
    path = _release(tmp_path / "release.gpkg")
    tamper(path)
    result = run("inspect", path)
    assert_refused(result, fragment)
    assert "Layers:" not in result.output  # refused before anything from the file is printed


def test_inspect_refuses_a_non_spatial_release_layer(tmp_path):
    path = _release(tmp_path / "release.gpkg")
    drop_layer(path, "synthetic_2")
    pyogrio.write_dataframe(pd.DataFrame({"y": [0, 1, 0, 1, 0]}), path, layer="synthetic_2")
    assert_refused(run("inspect", path), "'synthetic_2' is a table, not a point layer")


@pytest.mark.parametrize("content", [b"", b"garbage that is no database", None])
def test_inspect_refuses_empty_garbage_or_truncated_files(tmp_path, content):
    path = tmp_path / "release.gpkg"
    if content is None:  # a copy cut short
        whole = _release(tmp_path / "whole.gpkg", n=(3000,))
        path.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    else:
        path.write_bytes(content)
    result = run("inspect", path)
    assert_refused(result, "release.gpkg is not a GeoPackage (or is damaged)")
    assert "<DRIVER>" not in result.output and "sqlite3_prepare" not in result.output


def test_inspect_replaces_control_characters(tmp_path):
    path = _release(tmp_path / "release.gpkg", notes="note \x9b31m\u202ecode\x1b]0;title\x07",
                    metadata={"data": "stops\x9b2J"})
    result = run("inspect", path)
    assert result.exit_code == 0, result.output
    assert not set("\x1b\x9b\x07\u202e") & set(result.output)
    assert "stops?2J" in result.output
    pyogrio.write_dataframe(public_like(2), path, layer="x\x1b[2Jy")
    result = run("inspect", path)
    assert_refused(result, "'x?[2Jy'")
    assert "\x1b" not in result.output


def test_inspect_reports_an_audit_file_of_another_release(tmp_path):
    first = _release(tmp_path / "a.gpkg", seeds={"synthesize": 1})
    second = _release(tmp_path / "b.gpkg", n=(7,), seeds={"synthesize": 2})
    result = run("inspect", second)
    assert result.exit_code == 0, result.output
    assert "SHA-256 matches this release" in result.output
    io.audit_path(second).write_bytes(io.audit_path(first).read_bytes())
    result = run("inspect", second)
    assert_refused(result, "the audit file b.gpkg.audit.json does not belong to this release")
    assert "synthetic_1" in result.output  # the layers were listed before the error


def test_inspect_notes_empty_releases_and_audit_without_seeds(tmp_path):
    path = _release(tmp_path / "release.gpkg", n=(3, 0), seeds={"synthesize": 1})
    _release(path, n=(3, 0), overwrite=True)  # replaced without seeds
    result = run("inspect", path)
    assert result.exit_code == 0, result.output
    assert "Note: synthetic_2 has no records" in result.output
    assert "it records no seeds" in result.output


def test_inspect_help_says_a_damaged_audit_file_is_an_error():
    # The help named only an audit file of another release; a damaged one exits 2 as well
    # (test above), after the layers and metadata are printed.
    text = " ".join(run("inspect", "--help").output.split())
    assert "or is damaged, is an error (exit status 2), reported after the layers" in text


def test_inspect_refuses_columns_the_model_does_not_release(written_release, tmp_path):
    # A record id and the x coordinates added by hand passed the schema check without a word,
    # then with a warning (and evaluate read them silently): geosynth writes no such column.
    result = run("inspect", written_release)
    assert result.exit_code == 0, result.output
    assert "Release columns: y, x1, x2, z" in result.output
    assert "Warning" not in result.output
    copy = tmp_path / "copy.gpkg"
    copy.write_bytes(written_release.read_bytes())
    for number in (1, 2):
        layer = pyogrio.read_dataframe(copy, layer=f"synthetic_{number}")
        pyogrio.write_dataframe(layer.assign(patient=range(len(layer)), east=layer.geometry.x),
                                copy, layer=f"synthetic_{number}")
    result = run("inspect", copy)
    assert_refused(result, "its layer 'synthetic_1' has columns ['patient', 'east'] that the "
                   "model its metadata records does not release", "the file was edited")


def test_inspect_prints_the_rows_it_checked_not_the_cached_counts(tmp_path):
    # The row counts came from GDAL's cache (gpkg_ogr_contents), which an edit can change
    # without touching a row: "5 rows" was printed for a layer of 127 that the schema accepted.
    path = _release(tmp_path / "release.gpkg", n=(4, 6))
    result = run("inspect", path)
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split()[-2] for line in result.output.splitlines()
            if line.endswith(" rows")}
    metadata_rows = len(io.read_release(path).metadata)
    assert rows == {"synthetic_1": "4", "synthetic_2": "6", "metadata": str(metadata_rows)}
    # An edited cache is now refused: a number no reader of the layers sees.
    sql(path, "UPDATE gpkg_ogr_contents SET feature_count = 999")
    result = run("inspect", path)
    assert_refused(result, "'gpkg_ogr_contents' holds a row that is not a layer's feature count")
    assert "999" not in result.output


def test_inspect_names_release_for_a_pipe(tmp_path):
    # click's exists=True lets a named pipe through; the reader's message named "path".
    fifo = tmp_path / "release.gpkg"
    os.mkfifo(fifo)
    result = run("inspect", fifo)
    assert_refused(result, "RELEASE", "is not a regular file")
    assert "path '" not in result.output


@pytest.mark.parametrize("seeds", [{}, {"fit": None}])
def test_inspect_says_an_audit_file_without_a_seed_records_none(tmp_path, seeds):
    # "seeds": {} was reported as "it holds the seeds".
    path = _release(tmp_path / "release.gpkg", n=(3,), seeds=seeds)
    result = run("inspect", path)
    assert result.exit_code == 0, result.output
    assert "it records no seeds" in result.output
    assert "holds the seeds" not in result.output


def test_inspect_notes_the_columns_of_a_release_without_a_model(tmp_path):
    # With no model recorded (an OnTheMap release, write_release from Python) an added
    # column (a patient id, the original x) passed without a word: nothing to check it against.
    path = _release(tmp_path / "r.gpkg")
    result = run("inspect", path)
    assert result.exit_code == 0, result.output
    assert "Note: the metadata records no model" in result.output
    with_id = tmp_path / "with_id.gpkg"
    io.write_release(with_id, [public_like(k, patient=range(k)) for k in (4, 5)])
    result = run("inspect", with_id)
    assert result.exit_code == 0, result.output
    assert ("inspect cannot tell which of the release columns (y, patient) geosynth released"
            in result.output)
    assert "check what each holds before publishing" in result.output


def test_inspect_refuses_an_identifier_a_bogus_lattice_shape_and_a_mistyped_value(
        written_release, tmp_path):
    # Each was accepted, and the shape printed: [10**12, 4] beside 16 cells of a 4 x 4 grid;
    # text in an INTEGER column (evaluate then dropped the record); a patient_id added by hand
    # was only warned of.
    def copy(name):
        path = tmp_path / name
        path.write_bytes(written_release.read_bytes())
        return path

    shaped = copy("shaped.gpkg")
    lattice = json.loads(sql_value(shaped, "lattice"))
    set_metadata(shaped, "lattice", {**lattice, "shape": [10**12, 4]})
    assert_refused(run("inspect", shaped), "its metadata 'lattice' has the shape "
                                           "1000000000000 x 4", "was edited after it was written")
    typed = copy("typed.gpkg")
    with sqlite3.connect(typed) as connection:
        for function in ("ST_IsEmpty", "ST_MinX", "ST_MaxX", "ST_MinY", "ST_MaxY"):
            connection.create_function(function, 1, lambda geometry: 0)
        connection.execute("UPDATE synthetic_1 SET y = '7a' WHERE fid = 1")
    connection.close()
    assert_refused(run("inspect", typed), "its layer 'synthetic_1' holds 1 value(s) in its "
                                          "column 'y' (declared INTEGER) that are not integers")
    named = copy("named.gpkg")
    for number in (1, 2):
        layer = pyogrio.read_dataframe(named, layer=f"synthetic_{number}")
        pyogrio.write_dataframe(layer.assign(patient_id=range(len(layer))), named,
                                layer=f"synthetic_{number}")
    assert_refused(run("inspect", named), "has a column 'patient_id', which identifies records")


def sql_value(path, key):
    with sqlite3.connect(path) as connection:
        (text,) = connection.execute("SELECT value FROM metadata WHERE key = ?", (key,)).fetchone()
    connection.close()
    return text


def test_inspect_shows_the_limits_the_values_were_drawn_within(tmp_path):
    """A release drawn with --limit must say so: truncation moves the mean near a bound."""
    import numpy as np

    frames = [public_like(k, z=np.linspace(1.0, 2.0, k)) for k in (4, 5)]
    for frame in frames:
        frame.attrs["geosynth"] = {"method": "paiva", "limits": {"z": [0.0, None]}}
    path = io.write_release(tmp_path / "limited.gpkg", frames)
    result = run("inspect", path)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert '    limits: {"z": [0.0, null]}' in lines
    assert ("Limits: the synthetic values of 'z' were drawn from a normal truncated to "
            "[0.0, inf], the analyst's stated range") in result.output
    plain = run("inspect", _release(tmp_path / "plain.gpkg"))
    assert plain.exit_code == 0 and "limits:" not in plain.output.lower()


def test_inspect_shows_the_files_own_format_version(tmp_path):
    # The metadata was derived again for the version this one writes: a version 2 file read
    # "format_version: 3".
    path = tmp_path / "release.gpkg"
    io.write_release(path, [public_like()], metadata={"epsilon": 1.0})
    set_metadata(path, "format_version", 2)
    result = run("inspect", path)
    assert result.exit_code == 0, result.output
    assert "    format_version: 2" in result.output.splitlines()
