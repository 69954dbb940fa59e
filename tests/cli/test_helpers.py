"""Helpers of the subcommands: outputs that cannot be written are refused naming the option."""

import os

import pytest

from geosynth.cli.helpers import check_outputs
from geosynth.errors import InputError
from tests.cli.helpers import assert_refused, run


def test_output_name_too_long_is_refused_naming_the_option(tmp_path):
    # is_dir() raised "[Errno 36] File name too long", an OSError naming no option.
    long_name = tmp_path / ("a" * 300 + ".md")
    with pytest.raises(InputError, match=r"^--report .*longer than the file system allows; "
                       r"choose a shorter name"):
        check_outputs({"--report": long_name}, overwrite=False)


def test_output_folder_name_too_long_is_refused_by_the_command(written_release, tmp_path):
    report = tmp_path / ("f" * 300) / "report.md"
    result = run("evaluate", written_release, written_release, "--report", report)
    assert_refused(result, "--report", "choose a shorter name")
    assert list(tmp_path.iterdir()) == []


def test_output_through_a_loop_of_symbolic_links_is_refused(tmp_path):
    # resolve() raised RuntimeError("Symlink loop from ..."): a traceback.
    os.symlink("loop", tmp_path / "loop")
    with pytest.raises(InputError, match=r"^--map .*points back to itself"):
        check_outputs({"--map": tmp_path / "loop" / "review.html"}, overwrite=False)
