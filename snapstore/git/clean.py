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
referenced. The caller still compares each entry's stat data with the file's
(:func:`matches`).
"""

from __future__ import annotations

import os
import stat

from .index import StatEntry, stat_entries
from .layout import Layout

_REGULAR = (0o100644, 0o100755)
_ATTRS = frozenset((b"filter", b"ident", b"working-tree-encoding", b"eol", b"crlf", b"text"))
_TRUE = ("true", "yes", "on", "1")


def clean_files(layout: Layout, max_size: int) -> tuple[dict[bytes, StatEntry], set[bytes]]:
    """The index entries of the files clean against HEAD, by path (bytes), and the paths
    among them whose bytes may differ from the blob's (a conversion attribute): those
    are the blob only if they hash to it, which the caller checks by reading them."""
    from .moves import git

    try:
        fd = os.open(os.path.join(layout.git_dir, "index"), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return {}, set()
    try:
        index_mtime = os.fstat(fd).st_mtime_ns
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read()
    finally:
        os.close(fd)
    found = stat_entries(data, layout.oid_size // 2)
    if not found:
        return {}, set()
    candidates = {
        e.path: e
        for e in found
        if e.meaning == 0 and e.mode in _REGULAR and e.size <= max_size and e.mtime_ns < index_mtime
    }
    config = git(
        layout, "config", "-z", "--get-regexp", r"^(core\.autocrlf|extensions\.partialclone)$"
    )
    settings: dict[bytes, bytes] = {}
    for item in config.stdout.split(b"\0"):
        name, _, value = item.partition(b"\n")
        settings[name] = value if _ else b"true"
    if b"extensions.partialclone" in settings:
        return {}, set()
    autocrlf = settings.get(b"core.autocrlf", b"false").decode(errors="replace").lower()
    staged = git(layout, "diff-index", "--cached", "-z", "--name-only", "--no-renames", "HEAD")
    if staged.returncode != 0:
        return {}, set()  # no HEAD yet (an unborn branch), or git cannot read the repository
    for path in staged.stdout.split(b"\0"):
        candidates.pop(path, None)
    if not candidates:
        return {}, set()
    # --all lists only the attributes a path has, not the unspecified: a repository with
    # few attributes gives a few lines for a million paths, not six million fields
    attrs = git(layout, "check-attr", "-z", "--stdin", "--all", data=b"\0".join(candidates) + b"\0")
    if attrs.returncode != 0:
        return {}, set()
    converted: set[bytes] = set()
    text_unset: set[bytes] = set()
    fields = attrs.stdout.split(b"\0")
    for at in range(0, len(fields) - 2, 3):
        path, attr, value = fields[at], fields[at + 1], fields[at + 2]
        if attr not in _ATTRS:
            continue
        if value != b"unset":
            converted.add(path)  # the attribute is set, or has a value
        elif attr == b"text":
            text_unset.add(path)
    if autocrlf in _TRUE or autocrlf == "input":  # converts each file whose text is unspecified
        converted.update(path for path in candidates if path not in text_unset)
    return candidates, converted  # check-attr named only candidates


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
