"""The Python examples in README.md must run as written."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(BLOCKS[index], f"README.md[python block {index}]", "exec"), namespace)
    assert "geosynth" in namespace


def test_quick_start_is_exactly_the_two_commands():
    text = README.read_text()
    quick = text.split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", quick, flags=re.S).group(1)
    assert block.split("\n")[:2] == ["make demo", "make test"]
    assert block.strip().splitlines() == ["make demo", "make test"]
