"""Which workspace paths scan mode leaves out: ignore files, ``.git`` and the store.

The rules are git's: ``.gitignore`` files at any depth, whose patterns are
relative to their own folder, a deeper file overriding a shallower one and,
within a file, the last matching pattern winning; ``.git/info/exclude`` under
all of them. A ``.snapstoreignore`` has the same syntax and sits just above
the ``.gitignore`` of its folder, so it can re-include what git ignores. A
folder that is ignored is never entered, so nothing below it can come back,
as in git. Entries named ``.git`` (a repository's own folder, or a worktree's
pointer file), the store's folder and any other store's (``.snapstore`` at any
depth) are always left out; a nested repository is otherwise an ordinary
folder.

pathspec compiles the patterns. Matching is on the scan's hot path, so a file
without negations (the common case) is matched with one combined regex.
"""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING

from ..core.fsio import TEMP_NAME
from ..core.places import STORE_DIRNAME

if TYPE_CHECKING:
    import pathspec

IGNORE_FILES = (".gitignore", ".snapstoreignore")
GIT = ".git"
NEW_STORE = STORE_DIRNAME + ".new-"  # a store being created (docs/format.md §1)
_DIR_GROUP = re.compile(r"\(\?P<ps_d>")

#: Rules in force for one folder: (length of the folder's prefix, rules), deepest first.
Stack = tuple[tuple[int, "Rules"], ...]


class Rules:
    """The patterns of one folder's ignore files, matched against paths relative to it."""

    def __init__(self, lines: list[str]):
        self._any: re.Pattern[str] | None = None
        # blank lines and comments only (or no file): no patterns, and no pathspec to load
        self.empty = all(not line.strip() or line.startswith("#") for line in lines)
        if self.empty:
            return
        import pathspec

        self.spec: pathspec.GitIgnoreSpec = pathspec.GitIgnoreSpec.from_lines(lines)
        active = [p for p in self.spec.patterns if p.include is not None]
        self.empty = not active
        if active and all(p.include for p in active):
            # No negation: "ignored" is "any pattern matches", one regex for all of them.
            self._any = re.compile(
                "|".join(
                    "(?:" + _DIR_GROUP.sub("(?:", p.regex.pattern) + ")"
                    for p in active
                    if p.regex is not None  # always so: a pattern that includes has one
                )
            )

    def check(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included by a negation; None: no pattern matches."""
        path = rel + "/" if is_dir else rel
        if self._any is not None:
            return True if self._any.match(path) else None
        return self.spec.check_file(path).include


def _read_lines(path: str) -> list[str]:
    """An ignore file's lines; a missing file, a folder or a symlink counts as empty."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return []
        return handle.read().decode("utf-8", "surrogateescape").splitlines()


def _stamp(path: str) -> str | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


class IgnoreRules:
    """The ignore rules of one workspace, read lazily per folder and cached for one scan."""

    def __init__(self, root: str, store_rel: str | None):
        self.root = root
        self.store_rel = store_rel
        self.exclude_path = os.path.join(root, GIT, "info", "exclude")
        self.exclude_stamp = _stamp(self.exclude_path)
        exclude = Rules(_read_lines(self.exclude_path))
        self.base: Stack = () if exclude.empty else ((0, exclude),)
        self._folders: dict[str, Rules | None] = {}

    def current(self) -> bool:
        """Whether ``.git/info/exclude`` is as it was read (folders' files are the caller's)."""
        return _stamp(self.exclude_path) == self.exclude_stamp

    def folder(self, rel_dir: str) -> Rules | None:
        """The rules of the ignore files in ``rel_dir`` itself ("" is the root)."""
        if rel_dir not in self._folders:
            where = os.path.join(self.root, *rel_dir.split("/")) if rel_dir else self.root
            lines: list[str] = []
            for name in IGNORE_FILES:
                lines += _read_lines(os.path.join(where, name))
            rules = Rules(lines) if lines else None
            self._folders[rel_dir] = None if rules is None or rules.empty else rules
        return self._folders[rel_dir]

    def push(self, parent: Stack, rel_dir: str) -> Stack:
        """The stack for ``rel_dir`` given its parent's stack."""
        rules = self.folder(rel_dir)
        if rules is None:
            return parent
        return ((len(rel_dir) + 1 if rel_dir else 0, rules), *parent)

    def stack(self, rel_dir: str) -> Stack:
        """The rules in force inside ``rel_dir``, from the root down."""
        current = self.push(self.base, "")
        if rel_dir:
            parts = rel_dir.split("/")
            for depth in range(1, len(parts) + 1):
                current = self.push(current, "/".join(parts[:depth]))
        return current

    def always_skipped(self, rel: str) -> bool:
        """Never scanned, whatever the rules say: ``.git`` entries, the store, a store
        being created beside it, another store nested at any depth (a ``.snapstore``
        folder: another project's history), and the temp files of a rewind that is
        writing."""
        leaf = rel.rsplit("/", 1)[-1]
        if leaf in (GIT, STORE_DIRNAME) or leaf.startswith(NEW_STORE) or TEMP_NAME.fullmatch(leaf):
            return True
        return self.store_rel is not None and (
            rel == self.store_rel or rel.startswith(self.store_rel + ".new-")
        )

    def path_ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` is left out, its parent folders included (for scans of some paths)."""
        parts = rel.split("/")
        current = self.push(self.base, "")
        for depth in range(1, len(parts) + 1):
            here = "/".join(parts[:depth])
            last = depth == len(parts)
            if self.always_skipped(here) or ignored(here, is_dir or not last, current):
                return True
            if not last:
                current = self.push(current, here)
        return False


def ignored(rel: str, is_dir: bool, stack: Stack) -> bool:
    """Whether the rules in ``stack`` leave ``rel`` out; the deepest matching file decides."""
    for prefix, rules in stack:
        decision = rules.check(rel[prefix:], is_dir)
        if decision is not None:
            return decision
    return False
