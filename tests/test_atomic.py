import pytest

from geosynth._atomic import atomic_path


def test_atomic_write_replaces_only_on_success(tmp_path):
    target = tmp_path / "sub" / "file.txt"
    with atomic_path(target) as tmp:
        assert tmp.suffix == ".txt"
        assert tmp.parent == target.parent
        tmp.write_text("new")
    assert target.read_text() == "new"

    with pytest.raises(RuntimeError, match="fail"), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("fail")
    assert target.read_text() == "new"
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.txt"]


def test_atomic_refuses_to_overwrite(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("old")
    with pytest.raises(FileExistsError, match="overwrite"), atomic_path(target, overwrite=False):
        pass
    assert target.read_text() == "old"
