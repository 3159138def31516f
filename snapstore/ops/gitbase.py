"""The baseline by reference: a git repository's clean files, recorded by their blob id.

The first scan of a workspace records every file so that a shell ``rm`` can be undone:
in a repository, most of those bytes are in git's object store already. A file that
git's index shows clean against HEAD (snapstore.git.clean), and whose ``lstat`` is the
one the index cached, is recorded by reference instead, without being read: ``paths``
and the scan index name a *reference key* (core/blobs.py, ``reference_key``), and the
``gitrefs`` database maps it to the git object id and size (docs/format.md §2.4).

A reference never reaches a change. The first time a capture needs a referenced version
as a change's ``before`` (a scan that finds the file changed or gone, a post-write with
no pre-write), :func:`copy_in` brings its bytes in: from the file itself when it still
hashes to the object id, else from git (snapstore.git.objects, verified against the
id), and the capture stores them as a blob under their BLAKE3 digest in the commit that
records the change. From then on the version is the store's own, and a later ``git gc``
cannot take it away. When git no longer has the object, the change cannot be recorded:
the scan reports the file as not captured, and a rewind of the turn says so (never a
wrong byte).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol

from ..core import blobs
from ..core.errors import GitRefused
from ..core.records import Big, Version
from ..core.repo import Repo, Tx
from ..git import layout as git_layout
from ..git.clean import Candidates, Unclean, clean_files, matches
from ..git.objects import blob_id, iter_blobs, read_blobs


class Baseline:
    """The clean files of the workspace's repository, for the first scan to reference."""

    __slots__ = ("candidates", "oid_size")

    def __init__(self, candidates: Candidates, oid_size: int):
        self.candidates = candidates
        self.oid_size = oid_size

    def find(self, rel: bytes, st: os.stat_result) -> bytes | None:
        """The git object id of ``rel`` (raw) when its ``lstat`` is what git's index cached
        for the file; None: it is read and stored. :meth:`unclean` says, after the walk,
        which of those found are not clean after all. A walk asks once for each path, so
        the entry is let go: the reference it notes takes its place in memory."""
        entry = self.candidates.entries.pop(rel, None)
        if entry is None or not matches(entry, st):
            return None
        return entry.oid

    def unclean(self) -> Unclean | None:
        """Which of the files found are not clean, or may be converted; None: git could not
        tell, and none of them is clean."""
        try:
            return self.candidates.unclean()
        except OSError:
            return None  # git cannot be run: every file is read, as outside a repository

    def holds_blob(self, data: bytes, oid: bytes) -> bool:
        """Whether a converted file's bytes, as read, are its blob's."""
        return blob_id(data, self.oid_size) == oid.hex()


def baseline(repo: Repo) -> Baseline | None:
    """The workspace's files that may be clean, when its own ``.git`` is a repository git
    can read; None otherwise (no repository, or one snapstore refuses to read)."""
    try:
        found = git_layout.find(repo.root)
    except GitRefused:
        return None
    if found is None:
        return None
    try:
        candidates = clean_files(found, blobs.BIG)
    except OSError:
        return None  # git cannot be run: every file is read, as outside a repository
    return None if candidates is None else Baseline(candidates, found.oid_size)


class Copied:
    """A referenced version brought into the store, or why it could not be."""

    __slots__ = ("base", "data", "key", "lost", "value")

    def __init__(
        self,
        base: bytes,
        key: bytes | None = None,
        value: bytes | None = None,
        data: bytes = b"",
        lost: str = "",
    ):
        self.base = base  # the reference key it stands in for
        self.key = key  # the blob's BLAKE3 digest; None when lost
        self.value = value  # its encoded value (None: stored already, or lost)
        self.data = data
        self.lost = lost


def copy_in(repo: Repo, wanted: dict[str, tuple[bytes, bytes | Big | None]]) -> dict[str, Copied]:
    """For each path of ``wanted`` (its reference key, and what the file holds now: None
    when it is gone), the referenced version's bytes, ready to store. They come from the
    file when it still hashes to the object id (nothing is asked of git), else from git,
    checked against the id. Read outside the write lock; the caller's commit checks that
    ``paths`` still names ``base``."""
    with repo.read() as v:
        refs = {rel: (base, v.git_ref(base, rel)) for rel, (base, _) in wanted.items()}
    found: dict[str, Copied] = {}
    fetch: dict[str, tuple[bytes, str, int]] = {}
    for rel, (base, ref) in refs.items():
        if ref is None:
            continue  # no reference (any more): the caller finds a blob's digest in ``paths``
        oid, size = ref
        now = wanted[rel][1]
        if isinstance(now, bytes) and len(now) == size and blob_id(now, len(oid)) == oid:
            found[rel] = _encoded(repo, base, now)
        else:
            fetch[rel] = (base, oid, size)
    if not fetch:
        return found
    got = _fetch(repo, [(oid, size) for _, oid, size in fetch.values()])
    for rel, (base, oid, _) in fetch.items():
        data = got.get(oid, "the workspace is no git repository any more")
        if isinstance(data, str):
            found[rel] = Copied(
                base, lost=f"its earlier version, known by reference to git: {data}"
            )
        else:
            found[rel] = _encoded(repo, base, data)
    return found


class Scanned(Protocol):
    """What :func:`copy_items` and :func:`settle` read and set of a scan's item."""

    rel: str
    version: Version | None
    data: bytes | Big
    copied: Copied | None
    key: bytes | None
    value: bytes | None
    fingerprint: bytes


def copy_items(repo: Repo, items: Sequence[Scanned]) -> list[tuple[str, str]]:
    """:func:`copy_in` for a scan's batch: each item whose ``paths`` entry is a reference
    gets its ``copied``; returns the paths whose earlier version git has lost, and why."""
    with repo.read() as v:
        wanted = {}
        for item in items:
            base = v.path_digest(item.rel)
            if base is not None and v.git_ref(base, item.rel) is not None:
                wanted[item.rel] = (base, item.data if item.version is not None else None)
    copied = copy_in(repo, wanted) if wanted else {}
    lost = []
    for item in items:
        item.copied = copied.get(item.rel)
        if item.copied is not None and item.copied.lost:
            lost.append((item.rel, item.copied.lost))
    return lost


def settle(tx: Tx, item: Scanned, base: bytes, before: Version) -> Version | None:
    """In a scan's commit: the earlier version of a path whose ``paths`` entry is the
    reference ``base``, as the store's own blob (stored here); None when the item is
    settled without a change: its bytes are the same (it stays a reference), they were
    not brought in for this reference (the next scan sees it again), or git has lost them
    (reported not captured: its new version becomes the baseline, as at the first scan).

    ``item`` is left as it is: a commit that finds the map full runs again from the start
    (core.db), and must find the same item (it once kept the reference as its new key,
    and the second run recorded a change to that reference, a version no blob holds)."""
    copied = item.copied
    if copied is None or copied.base != base:
        return None
    key = item.key
    if copied.lost:
        if item.version is not None:
            tx.put_blob(item.key or b"", item.value, item.data)
        tx.set_path_digest(item.rel, item.version)
    elif item.version is not None and copied.key == item.key and before.mode == item.version.mode:
        key = base  # only touched: still the blob git holds, still by reference
    else:
        assert copied.key is not None
        tx.put_blob(copied.key, copied.value, copied.data)
        return before._replace(digest=copied.key.hex())
    if item.version is None:
        tx.delete_index(item.rel)
    else:
        tx.put_index(item.rel, item.fingerprint + (key or b""))
    return None


def _fetch(repo: Repo, wanted: list[tuple[str, int]]) -> dict[str, bytes | str]:
    try:
        found = git_layout.find(repo.root)
    except GitRefused as exc:
        return {oid: f"the repository cannot be read ({exc})" for oid, _ in wanted}
    return {} if found is None else read_blobs(found, wanted)


def _encoded(repo: Repo, base: bytes, data: bytes) -> Copied:
    with repo.read() as v:
        key, value = v.encode(data, None)
    return Copied(base, key, value, data)


def check(repo: Repo, refs: dict[bytes, tuple[str, int]]) -> dict[bytes, str]:
    """What is wrong with each reference git cannot give back exactly (fsck): the object
    is missing, is no blob, or does not hash to its id. One batch is held at a time."""
    try:
        found = git_layout.find(repo.root)
    except GitRefused as exc:
        return dict.fromkeys(refs, f"the repository cannot be read ({exc})")
    if found is None:
        return dict.fromkeys(refs, "the workspace is no git repository any more")
    bad: dict[str, str] = {}
    for batch in iter_blobs(found, refs.values()):
        bad.update((oid, why) for oid, why in batch.items() if isinstance(why, str))
    return {key: bad[oid] for key, (oid, _) in refs.items() if oid in bad}
