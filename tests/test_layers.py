"""The package's import graph: data and imports flow one way (core -> layers -> files -> top).

Every ``import`` and ``from ... import`` in every module of ``geosynth`` counts, at module level
and inside functions (imports written inside functions are how cycles hide).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "geosynth"

CORE = ("lattice", "data", "samplers", "model", "synth", "metrics", "evaluation")
OUTSIDE_CORE = ("distributed", "io", "plots", "maps", "cli", "dp", "sdc", "tuning", "rasters")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The module (of ``MODULES``) that ``name`` (a dotted path) is or lies in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) of every geosynth import of ``module``."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names
                      if alias.name.split(".")[0] == "geosynth"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != "geosynth":
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in MODULES:
                    found.append((submodule, None, node.lineno))
                else:
                    found.append((source, alias.name, node.lineno))
    return found


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for target, _, _ in _imports(module):
            owner = _owner(target)
            if owner and owner != module and not module.startswith(owner + "."):
                edges[module].add(owner)
    return edges


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first search of ``edges`` meets (each as its path, closed)."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [])
    return cycles


def test_the_cycle_search_finds_a_cycle():
    # A guard for the test itself: a three-module loop next to an acyclic branch.
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    cycles = _cycles(_edges())
    assert cycles == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("core", CORE)
def test_core_never_imports_outer_layers(core):
    bad = []
    for module in MODULES:
        if _top(module) != core:
            continue
        for target, name, line in _imports(module):
            if _top(_owner(target) or "") in OUTSIDE_CORE:
                bad.append(f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} imports "
                           f"{target}{'.' + name if name else ''}")
    assert bad == []


#: Libraries of file formats, maps, the command line and Dask: the outer layers' (io, maps, cli,
#: distributed, rasters), never the core's.
OUTER_LIBRARIES = ("rasterio", "pyogrio", "fiona", "sqlite3", "folium", "click", "dask",
                   "distributed")


def _libraries(module: str) -> list[tuple[str, int]]:
    """(top-level name, line) of every import of a library outside geosynth in ``module``."""
    found = []
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name.split(".")[0], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.module.split(".")[0], node.lineno))
    return found


@pytest.mark.parametrize("core", CORE)
def test_core_never_imports_file_formats_maps_the_cli_or_dask(core):
    # synth.placement opened weights rasters with rasterio; geosynth.rasters reads them now,
    # and the core places points by the table of arrays it returns.
    bad = [f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} imports {library}"
           for module in MODULES if _top(module) == core
           for library, line in _libraries(module) if library in OUTER_LIBRARIES]
    assert bad == []


def test_the_library_check_sees_a_rasterio_import():
    # A guard for the test itself: the reader of rasters imports rasterio (inside functions).
    assert "rasterio" in {library for library, _ in _libraries("geosynth.rasters")}


def test_no_private_name_crosses_a_module():
    bad = []
    for module in MODULES:
        for target, name, line in _imports(module):
            if name is None or not name.startswith("_") or name.startswith("__"):
                continue
            if _owner(target) != module:
                bad.append(f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} imports "
                           f"{name} from {target}")
    assert bad == []


def test_the_graph_sees_imports_inside_functions():
    # A guard for the test itself: every import written inside a function is an edge.
    inside = []
    for module, path in MODULES.items():
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inside += [(module, node.lineno) for node in ast.walk(function)
                           if isinstance(node, ast.ImportFrom)
                           and (node.module or "").startswith("geosynth")]
    assert len(inside) > 10
    for module, line in inside:
        assert line in {found_line for _, _, found_line in _imports(module)}, (module, line)
