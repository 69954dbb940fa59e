"""studies/ sits outside the package: not installed with geosynth, public names of geosynth only."""

import ast
import tomllib
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted((ROOT / "studies").glob("*.py"))


def test_studies_are_not_installed_with_geosynth():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    # setuptools' package discovery matches these patterns against dotted package names
    assert any(fnmatchcase("geosynth.sdc", pattern) for pattern in include)
    for name in ("studies", "studies.doca_table1", "tests", "bench"):
        assert not any(fnmatchcase(name, pattern) for pattern in include), name


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.name)
def test_studies_import_only_public_names_of_geosynth(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    private = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("geosynth"):
            names = node.module.split(".") + [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [part for alias in node.names if alias.name.startswith("geosynth")
                     for part in alias.name.split(".")]
        else:
            continue
        if any(name.startswith("_") for name in names):
            private.append(f"{path.name}:{node.lineno}")
    assert private == []
