"""The files of the work tree that git's index shows clean against HEAD, found unread.

git caches, for each file it staged, the stat data of the work-tree file whose bytes
made the staged blob; ``git status`` takes a file whose ``lstat`` still says the same for
unchanged, without reading it. A file is *clean against HEAD* here when all of these hold:

- its index entry is an ordinary one: stage 0, not assume-unchanged, skip-worktree or
  intent-to-add, a regular file (mode 100644 or 100755), at most ``max_size`` bytes;
- the entry is not racily clean: its mtime is older than the index file's (git's own
  rule: such an entry may have been cached in the tick the file changed again);
- HEAD stages the same blob for it (``git diff-index --cached`` names it otherwise);
- no conversion stands between the blob and the file: no ``filter`` (Git LFS, a smudge
  filter), ``ident`` or ``working-tree-encoding`` attribute, no ``eol``, ``crlf`` or
  ``text`` (set or ``auto``) attribute, and no ``core.autocrlf`` for a file whose
  ``text`` is unspecified. With any of them the file's bytes may differ from the blob's:
  such a file is *converted*, and is the blob only if its bytes hash to the blob's id
  (the caller reads it to know; ``* text=auto`` is common, and mostly converts nothing).

A partial clone may lack blobs and fetch them over the network: none of its files is
referenced. The caller compares each entry's stat data with the file's (:func:`matches`)
while git is asked, in the background, about HEAD and the attributes (:class:`Candidates`):
at a million files git takes most of a second to answer, as long as the caller's walk
takes to meet a few hundred thousand files.
"""

from __future__ import annotations

import os
import stat
from typing import NamedTuple

from .index import StatEntry, stat_entries
from .layout import Layout

_REGULAR = (0o100644, 0o100755)
_ATTRS = frozenset((b"filter", b"ident", b"working-tree-encoding", b"eol", b"crlf", b"text"))
_TRUE = ("true", "yes", "on", "1")


class Candidates:
    """The index entries of the files that may be clean against HEAD, by path (bytes), and
    git, asked in the background while the caller walks the tree, which of them are not:
    those HEAD stages another blob for, and those with a conversion attribute."""

    __slots__ = ("_asked", "_autocrlf", "entries")

    def __init__(self, layout: Layout, entries: dict[bytes, StatEntry], autocrlf: str):
        from concurrent.futures import ThreadPoolExecutor  # only a repository's first scan

        self.entries = entries
        self._autocrlf = autocrlf
        pool = ThreadPoolExecutor(1, thread_name_prefix="snapstore-git")
        self._asked = pool.submit(_ask, layout, b"\0".join(entries) + b"\0")
        pool.shutdown(wait=False)  # its one call runs on; :meth:`unclean` waits for it

    def unclean(self) -> Unclean | None:
        """What git says of the candidates; None when it could not tell (no HEAD yet: an
        unborn branch; a repository git cannot read): then no file is clean. Git that
        cannot be run is an ``OSError``."""
        asked = self._asked.result()
        if asked is None:
            return None
        staged, attrs = asked
        attributed: set[bytes] = set()
        text_unset: set[bytes] = set()
        fields = attrs.split(b"\0")
        for at in range(0, len(fields) - 2, 3):
            path, attr, value = fields[at], fields[at + 1], fields[at + 2]
            if attr not in _ATTRS:
                continue
            if value != b"unset":
                attributed.add(path)  # the attribute is set, or has a value
            elif attr == b"text":
                text_unset.add(path)
        autocrlf = self._autocrlf in _TRUE or self._autocrlf == "input"
        return Unclean(set(staged.split(b"\0")) - {b""}, attributed, text_unset, autocrlf)


class Unclean(NamedTuple):
    """Which candidates git says are not clean, or may not be."""

    staged: set[bytes]  # HEAD stages another blob for them
    attributed: set[bytes]  # a conversion attribute is set for them
    text_unset: set[bytes]  # ``-text``: never converted
    autocrlf: bool  # ``core.autocrlf`` converts each file whose ``text`` is unspecified

    def converts(self, path: bytes) -> bool:
        """Whether git may convert the file: its bytes are the blob's only if they hash to it."""
        return path in self.attributed or (self.autocrlf and path not in self.text_unset)


def clean_files(layout: Layout, max_size: int) -> Candidates | None:
    """The files that may be clean against HEAD, found from git's index; None when none
    can be (no index, one this reader does not know, a partial clone)."""
    from .moves import git

    try:
        fd = os.open(os.path.join(layout.git_dir, "index"), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        index_mtime = os.fstat(fd).st_mtime_ns
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read()
    finally:
        os.close(fd)
    found = stat_entries(data, layout.oid_size // 2)
    if not found:
        return None
    candidates = {
        e.path: e
        for e in found
        if e.meaning == 0 and e.mode in _REGULAR and e.size <= max_size and e.mtime_ns < index_mtime
    }
    del found
    if not candidates:
        return None
    config = git(
        layout, "config", "-z", "--get-regexp", r"^(core\.autocrlf|extensions\.partialclone)$"
    )
    settings: dict[bytes, bytes] = {}
    for item in config.stdout.split(b"\0"):
        name, _, value = item.partition(b"\n")
        settings[name] = value if _ else b"true"
    if b"extensions.partialclone" in settings:
        return None
    autocrlf = settings.get(b"core.autocrlf", b"false").decode(errors="replace").lower()
    return Candidates(layout, candidates, autocrlf)


def _ask(layout: Layout, paths: bytes) -> tuple[bytes, bytes] | None:
    """What git says of the candidates (NUL-terminated): the paths that HEAD stages
    otherwise, and the conversion attributes they have; None when git cannot tell."""
    from .moves import git

    staged = git(layout, "diff-index", "--cached", "-z", "--name-only", "--no-renames", "HEAD")
    if staged.returncode != 0:
        return None
    # --all lists only the attributes a path has, not the unspecified: a repository with
    # few attributes gives a few lines for a million paths, not six million fields
    attrs = git(layout, "check-attr", "-z", "--stdin", "--all", data=paths)
    if attrs.returncode != 0:
        return None
    return staged.stdout, attrs.stdout


def matches(entry: StatEntry, st: os.stat_result) -> bool:
    """Whether a file's ``lstat`` is the one git cached for it: then it holds the blob."""
    return (
        stat.S_ISREG(st.st_mode)
        and st.st_size == entry.size
        and st.st_mtime_ns == entry.mtime_ns
        and st.st_ctime_ns == entry.ctime_ns
        and st.st_ino & 0xFFFFFFFF == entry.ino
        and bool(st.st_mode & 0o100) == (entry.mode == 0o100755)
    )
