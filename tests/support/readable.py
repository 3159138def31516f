"""The snapstore command for another user: a world-readable copy of the package and of what it
needs at run time, started by the base interpreter.

Tests that run the command as ``nobody`` cannot use the test's venv: in a clone made in a 0700
folder (a fresh ``mktemp -d``, as root) the venv and the editable install's sources are hidden
from every other user, and ``nobody`` finds no ``snapstore_cli``. The copy goes into a 0755
folder of its own; the caller removes it.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import sys
from importlib import metadata
from pathlib import Path

#: The import packages of this project, copied from their sources (the install is editable).
PACKAGES = ("snapstore", "snapstore_cli")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _runtime_distributions(root: str = "snapstore") -> list[metadata.Distribution]:
    """The installed distributions ``root`` needs, transitively, extras left out."""
    found: dict[str, metadata.Distribution] = {}
    todo = [root]
    while todo:
        name = todo.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:  # a requirement for another platform or Python
            continue
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in found:
            continue
        found[key] = dist
        for requirement in dist.requires or []:
            if "extra ==" not in requirement:
                todo.append(_NAME.match(requirement).group())  # type: ignore[union-attr]
    return [dist for key, dist in found.items() if key != root]


def make(dest: Path) -> tuple[list[str], dict[str, str]]:
    """Fill ``dest`` (made world-readable) and return the command that runs ``snapstore`` from
    it, and the environment it needs."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in PACKAGES:
        source = Path(importlib.import_module(name).__file__ or "").parent
        shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    for dist in _runtime_distributions():
        for file in dist.files or []:
            if file.parts[0] == "..":  # scripts and data outside site-packages
                continue
            target = dest / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(dist.locate_file(file), target)  # type: ignore[arg-type]
    for folder, _, files in os.walk(dest):
        os.chmod(folder, 0o755)
        for name in files:
            path = os.path.join(folder, name)
            os.chmod(path, os.stat(path).st_mode & 0o755 | 0o444)
    python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    env = {"PYTHONPATH": str(dest), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"}
    return [python, "-m", "snapstore_cli"], env
