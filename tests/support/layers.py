"""The import graph of the ``snapstore`` package, lazy and ``TYPE_CHECKING`` imports included.

Print it (each module, then what it imports) with::

    ./dev sh python -m tests.support.layers

tests/unit/test_layers.py fails on any cycle and on any import against the
layering of docs/design.md: the record layer at the bottom, the operations
above it, the ``Store`` facade on top.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "snapstore"

#: The layers, bottom to top, each with the packages (or modules) it holds; docs/design.md's
#: table lists the same. A module may import its own layer and those below.
LAYERS: list[tuple[str, list[str]]] = [
    ("record", ["snapstore.core", "snapstore.text", "snapstore.git"]),
    ("remote transport", ["snapstore.remote", "snapstore.remote.transport"]),
    ("remote format", ["snapstore.remote.format"]),
    ("operations", ["snapstore.ops", "snapstore.conversation", "snapstore.remote.sync"]),
    ("facade", ["snapstore", "snapstore.store"]),
    ("adapters", ["snapstore.adapters"]),
]


def layer_of(module: str) -> int:
    """The layer of ``module``: the one whose package holds it most closely. The top
    package (``snapstore``) holds only its own ``__init__``."""
    best, level = "", -1
    for index, (_, members) in enumerate(LAYERS):
        for member in members:
            below = member != PACKAGE.name and module.startswith(member + ".")
            if (module == member or below) and len(member) > len(best):
                best, level = member, index
    if level < 0:
        raise AssertionError(f"{module} is in no layer: add its package to LAYERS in {__file__}")
    return level


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            submodules = {f"{target}.{alias.name}" for alias in node.names} & known.keys()
            if submodules:
                found |= submodules  # ``from . import faults`` imports the submodule
            elif target in known:
                found.add(target)
    found.discard(name)
    return found


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    known = modules(package)
    return {name: imports(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles, each as the modules on it (Tarjan's strongly connected parts)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.append(member)
                if member == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(edges) + 100))
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


if __name__ == "__main__":
    for module, deps in sorted(graph().items()):
        print(f"{module} -> {', '.join(sorted(deps)) or '(nothing)'}")
