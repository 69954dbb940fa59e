"""studies.common.write_text: the regenerated file appears whole or not at all."""

import os

import pytest

from studies.common import write_text


def test_write_text_creates_parents_and_replaces(tmp_path):
    target = tmp_path / "docs" / "results.md"
    assert write_text(target, "first\n") == target
    write_text(target, "second\n")
    assert target.read_text() == "second\n"
    assert list(target.parent.iterdir()) == [target]
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


def test_write_text_failure_keeps_the_old_file(tmp_path):
    target = tmp_path / "results.md"
    target.write_text("old\n")
    with pytest.raises(TypeError):
        write_text(target, b"not text")
    assert target.read_text() == "old\n"
    assert list(tmp_path.iterdir()) == [target]
