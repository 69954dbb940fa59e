"""The Python examples in README.md must run as written."""

import re
import shlex
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


def _command_lines():
    """The ``geosynth`` command lines of README's "Command line" block, comments removed."""
    section = README.read_text().split("## Command line", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S).group(1)
    joined = block.replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in joined.splitlines() if line.strip()]


def test_readme_command_lines_use_options_the_commands_have():
    from geosynth.cli import cli

    lines = _command_lines()
    assert len(lines) >= 8
    for words in lines:
        assert words[0] == "geosynth", words
        command = cli.commands[words[1]]
        known = {opt for param in command.params for opt in param.opts}
        unknown = [word for word in words[2:] if word.startswith("--") and word not in known]
        assert not unknown, f"geosynth {words[1]} has no {unknown}"
