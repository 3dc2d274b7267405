"""The import graph of ``gaca`` and ``analysis``: no circle between files, no import against the layers.

Every import counts (module level or inside a function), except those under ``typing.TYPE_CHECKING``.
``LAYERS`` is the one statement of which way imports go (docs/architecture.md explains it): a module
may import its own layer and the layers below it, never one above.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gaca", "analysis")
LAYERS: tuple[tuple[str, ...], ...] = (
    ("gaca", "gaca.registry", "gaca.validation", "gaca.text"),
    ("gaca.envs", "gaca.policy", "gaca.estimators"),
    ("gaca.contract",),
    ("gaca.tracking",),
    ("gaca.backends",),
    ("gaca.compose",),
    ("gaca.backends.cpu", "gaca.backends.verl"),
    ("gaca.train",),
    ("analysis", "analysis.stats"),
    ("analysis.runs",),
    ("analysis.claims",),
    ("analysis.render",),
    ("analysis.report",),
    ("gaca.orchestration",),
    ("gaca.bench", "analysis.benches"),
    ("analysis.studies",),
    ("gaca.cli",),
)
"""Lowest first. A module belongs to the longest prefix listed (``gaca.backends.cpu.loop`` to
``gaca.backends.cpu``, ``gaca.backends.spec`` to ``gaca.backends``)."""


def modules(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for statement in node.body for inner in ast.walk(statement))
    return skipped


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports: ``from a.b import c`` is ``a.b.c`` when that is a module,
    else ``a.b``; a relative import is resolved against the module's package."""

    def resolve(target: str) -> str | None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target or None

    tree = ast.parse(path.read_text(), str(path))
    skipped = _type_checking_nodes(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, base] if base else package)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found.update(t for t in map(resolve, targets) if t is not None and t != name)
    return found


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imports(name, path, known) for name, path in known.items()}


def layer(module: str) -> int:
    best, index = "", -1
    for number, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, index = prefix, number
    if index < 0:
        raise LookupError(f"{module} is in no layer of tests/test_architecture.py's LAYERS")
    return index


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def upward(edges: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{source} (layer {layer(source)}) imports {target} (layer {layer(target)})"
        for source, targets in edges.items()
        for target in targets
        if layer(target) > layer(source)
    )


@pytest.fixture(scope="module")
def edges() -> dict[str, set[str]]:
    return graph()


def test_no_circle_between_files(edges):
    assert circles(edges) == []


def test_no_import_runs_against_the_layers(edges):
    assert upward(edges) == []


def test_every_module_has_a_layer(edges):
    for module in edges:
        layer(module)


def test_the_checks_find_what_they_look_for(tmp_path: Path):
    """A circle and an upward import planted in a copy-sized tree are both reported."""
    (tmp_path / "gaca" / "tracking").mkdir(parents=True)
    (tmp_path / "analysis").mkdir()
    (tmp_path / "gaca" / "__init__.py").write_text("")
    (tmp_path / "gaca" / "tracking" / "__init__.py").write_text("")
    (tmp_path / "gaca" / "tracking" / "a.py").write_text("from gaca.tracking import b\n")
    (tmp_path / "gaca" / "tracking" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gaca import cli\ndef f():\n    from . import a\n"
    )
    (tmp_path / "gaca" / "contract.py").write_text("import gaca.tracking.a\n")
    (tmp_path / "analysis" / "__init__.py").write_text("")
    planted = graph(tmp_path)
    assert circles(planted) == [["gaca.tracking.a", "gaca.tracking.b"]]
    assert upward(planted) == ["gaca.contract (layer 2) imports gaca.tracking.a (layer 3)"]
