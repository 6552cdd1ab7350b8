"""No import circle in kernelscope: every import counts (lazy ones inside functions and TYPE_CHECKING ones
too), since a circle that only works because one side imports late breaks when someone moves an import."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_of_kernelscope_imports_itself_through_others():
    graph = grimp.build_graph("kernelscope")
    edges = {m: {d for d in graph.find_modules_directly_imported_by(m) if d.startswith("kernelscope")}
             for m in graph.modules if m.startswith("kernelscope")}
    assert len(edges) > 50
    assert _cycles(edges) == []


def _layer_of(module: str, layers: list[str]) -> int | None:
    for i, layer in enumerate(layers):
        if any(module == p or module.startswith(p + ".") for p in (x.strip() for x in layer.split("|"))):
            return i
    return None


def _imports_by_name(path) -> list[tuple[int, str]]:
    """``importlib.import_module("kernelscope.x")`` calls in one file: imports the import-linter cannot see."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant) \
                and str(node.args[0].value).startswith("kernelscope"):
            found.append((node.lineno, node.args[0].value))
    return found


def test_imports_by_name_point_down_the_layers_too():
    """The layers contract (pyproject.toml) for the imports it cannot see: a module loaded by name from a
    lower layer is an arrow up all the same (the capture package once called the API this way)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    root = Path(__file__).resolve().parents[1]
    contracts = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    up = []
    seen = 0
    for path in sorted((root / "kernelscope").rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        for line, target in _imports_by_name(path):
            seen += 1
            mine, theirs = _layer_of(module, layers), _layer_of(target, layers)
            if theirs is None:  # in no layer, it could be imported from anywhere, the API once was
                up.append(f"{module}:{line} loads {target}, which is in no layer of the contract")
            elif mine is not None and theirs < mine:
                up.append(f"{module}:{line} loads {target}, a layer above it")
    assert seen >= 1  # the root package loads the API by name
    assert up == []
