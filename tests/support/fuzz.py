"""Hostile-input machinery: a sentinel tree nothing may touch, and hostile path strategies.

A sentinel tree outside the workspace is watched with inotify for the whole of
a test: any open, read, write or change of anything in it fails the test.
Canary symlinks inside the workspace point into it.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from .inotify import Watcher

FUZZ = settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
#: Fuzz cases tried, by kind; printed at the end of the session.
COUNTS: dict[str, int] = {}


def count(name: str) -> None:
    COUNTS[name] = COUNTS.get(name, 0) + 1


class Sentinel:
    """A tree outside the workspace that nothing may touch, and canaries that lead to it."""

    def __init__(self, base: Path, root: Path):
        self.path = base / "outside"
        (self.path / "sub").mkdir(parents=True)
        (self.path / "secret.txt").write_text("secret\n")
        (self.path / "sub" / "deep.txt").write_text("deep\n")
        (root / "canary").symlink_to(self.path)
        (root / "canary_file").symlink_to(self.path / "secret.txt")
        (root / "sub").mkdir()
        (root / "sub" / "ok.txt").write_text("inside\n")
        self.before = self.state()
        self.watcher = Watcher(str(self.path))

    def state(self) -> dict[str, tuple[bytes, int]]:
        found = {}
        for folder, _, files in os.walk(self.path):
            for name in files:
                path = os.path.join(folder, name)
                with open(path, "rb") as handle:
                    found[path] = (handle.read(), os.stat(path).st_mtime_ns)
        return found

    def check(self) -> None:
        events = self.watcher.events()  # read before looking at the tree ourselves
        assert events == [], f"something outside the root was touched: {events[:5]}"
        assert self.state() == self.before


def hostile_paths(tmp_path: Path, root: Path) -> st.SearchStrategy[str]:
    """Relative and absolute paths made of hostile pieces, and plain random text."""
    outside, root_text = str(tmp_path / "outside"), str(root)
    segment = st.sampled_from(
        [
            "..",
            ".",
            "",
            "a",
            "sub",
            "ok.txt",
            "canary",
            "canary_file",
            ".snapstore",
            "db",
            "x" * 300,
            "é",
            "\x00",
            os.fsdecode(b"\xff\xfe"),
            "\udcff",
            "new",
            " ",
            "-",
            "~",
        ]
    ) | st.text(max_size=12)
    joined = st.lists(segment, min_size=1, max_size=6).map("/".join)
    prefix = st.sampled_from(
        ["", "/", "//", outside + "/", root_text + "/", root_text + "/../", "/etc/", "./"]
    )
    return st.tuples(prefix, joined).map("".join) | st.text(max_size=40) | st.just("a/" * 300 + "f")
