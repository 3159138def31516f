"""The library's structure: no import cycle, and every import goes down the layers.

Lazy imports (inside functions) and ``TYPE_CHECKING`` imports count: a cycle
hidden in a function is still a cycle for whoever reads the code.
"""

from __future__ import annotations

from pathlib import Path

from ..support.layers import cycles, graph

#: Bottom to top (docs/design.md, "Layers"). A module may import its own layer and those below.
LAYERS = [
    # the record layer: records and their encodings, the database, the workspace's file I/O
    {"snapstore.errors", "snapstore.faults", "snapstore.merge", "snapstore.blobs",
     "snapstore.records", "snapstore.db", "snapstore.fsio", "snapstore.repo",
     # the remote transport: object stores (S3, folders), the remote's errors
     "snapstore.remote", "snapstore.remote.base", "snapstore.remote.credentials",
     "snapstore.remote.errors", "snapstore.remote.folder", "snapstore.remote.location",
     "snapstore.remote.s3", "snapstore.remote.verify", "snapstore.remote.layout",
     "snapstore.remote.catalog"},
    # operations on the record layer
    {"snapstore.capture", "snapstore.history", "snapstore.plan", "snapstore.journal",
     "snapstore.rewind", "snapstore.ignore", "snapstore.shell", "snapstore.scan",
     "snapstore.watch", "snapstore.watchlink", "snapstore.gc", "snapstore.fsck", "snapstore.diffs",
     "snapstore.base",
     # remotes: push, pull, and their upkeep (log, fsck, gc)
     "snapstore.remote.push", "snapstore.remote.pull", "snapstore.remote.upkeep"},
    # the facade and the public API
    {"snapstore.store", "snapstore"},
    # agent adapters, on top of the facade
    {"snapstore.adapters", "snapstore.adapters.claude_code", "snapstore.adapters.gemini_cli",
     "snapstore.adapters.codex", "snapstore.adapters.copilot", "snapstore.adapters.qwen_code",
     "snapstore.adapters.cline", "snapstore.adapters.cursor", "snapstore.adapters.windsurf",
     "snapstore.adapters.auggie", "snapstore.adapters.opencode", "snapstore.adapters.install"},
]


def _layer(module: str) -> int:
    for level, members in enumerate(LAYERS):
        if module in members:
            return level
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")


def test_no_import_cycle_among_the_librarys_modules() -> None:
    assert cycles(graph()) == []


def test_every_import_goes_down_the_layers() -> None:
    upward = [(module, dep) for module, deps in graph().items() for dep in deps
              if _layer(dep) > _layer(module)]
    assert upward == []


def test_the_checker_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    """A cycle through a function-level import and a TYPE_CHECKING import is found."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from . import b\n    return b\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from .c import C\n")
    (package / "c.py").write_text("from pkg.a import f\n")
    (package / "d.py").write_text("from .a import f\n")
    edges = graph(package)
    assert edges["pkg.a"] == {"pkg.b"} and edges["pkg.b"] == {"pkg.c"}
    assert cycles(edges) == [["pkg.a", "pkg.b", "pkg.c"]]
