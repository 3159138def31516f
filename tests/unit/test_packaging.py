"""What `pip install .` installs: every package of the source tree, and the page's files.

An editable install finds modules in the tree whatever pyproject.toml lists, so the tests would
pass while a user's installed copy lacks a package; this compares the list with the tree.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"snapstore": "snapstore", "snapstore_cli": "cli"}


def _listed(key: str) -> str:
    text = (ROOT / "pyproject.toml").read_text()
    found = re.search(rf"^{key} = (\[.*?\]|\{{.*?\}})$", text, re.M | re.S)
    assert found, f"pyproject.toml has no {key}"
    return found.group(1)


def test_every_package_in_the_tree_is_installed() -> None:
    tree = set()
    for name, folder in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            tree.add(".".join((name, *parts)))
    assert set(re.findall(r'"([\w.]+)"', _listed("packages"))) == tree


def test_the_pages_files_are_installed() -> None:
    page = {
        p.name
        for p in (ROOT / "cli" / "doors" / "ui").iterdir()
        if p.suffix in {".html", ".js", ".css"}
    }
    listed = re.search(r"^snapstore_cli = (\[.*?\])$", (ROOT / "pyproject.toml").read_text(), re.M)
    assert listed and set(re.findall(r'"doors/ui/([^"]+)"', listed.group(1))) == page
