"""The library's structure: no import cycle, and every import goes down the layers.

Each module's layer is its package's (``tests.support.layers.LAYERS``), and docs/design.md's
table of layers is checked against the same list, so the tree, this test and the doc tell one
story. Lazy imports (inside functions) and ``TYPE_CHECKING`` imports count: a cycle hidden in a
function is still a cycle for whoever reads the code.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..support.layers import LAYERS, PACKAGE, cycles, graph, layer_of, modules

DESIGN = PACKAGE.parent / "docs" / "design.md"


def test_no_import_cycle_among_the_librarys_modules() -> None:
    assert cycles(graph()) == []


def test_every_import_goes_down_the_layers() -> None:
    upward = [
        (module, dep)
        for module, deps in graph().items()
        for dep in deps
        if layer_of(dep) > layer_of(module)
    ]
    assert upward == []


def test_every_module_is_in_a_layer() -> None:
    """A new package must be placed in LAYERS (and so in the doc's table) before it is used."""
    for name in modules():
        layer_of(name)  # raises for a module no layer's packages hold


def test_the_design_docs_table_names_the_same_layers() -> None:
    section = DESIGN.read_text().split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    documented = [
        (cells[0], re.findall(r"`([\w./]+)`", cells[1]))
        for cells in ([c.strip() for c in row.strip("|").split("|")] for row in rows[1:])
    ]
    assert documented == [(name, list(packages)) for name, packages in LAYERS]


def test_the_checker_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    """A cycle through a function-level import and a TYPE_CHECKING import is found."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from . import b\n    return b\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n"
    )
    (package / "c.py").write_text("from pkg.a import f\n")
    (package / "d.py").write_text("from .a import f\n")
    edges = graph(package)
    assert edges["pkg.a"] == {"pkg.b"} and edges["pkg.b"] == {"pkg.c"}
    assert cycles(edges) == [["pkg.a", "pkg.b", "pkg.c"]]
