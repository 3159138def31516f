"""Blobs read from git's object store, each checked against its object id.

A file of the baseline that git's index says is clean is recorded by reference
(snapstore.ops.gitbase): its bytes stay in the repository. When a capture needs them
(the first change of that file), they are read here with ``git cat-file --batch``, one
git process for a whole batch, and hashed as git names them (``blob <size>\\0`` then the
bytes, by SHA-1 or SHA-256). Bytes that do not hash to the id asked for, an object that
is missing or is no blob, never come back: the caller gets why, by object id.

git's own reader is used, not a library's: it knows every way a repository keeps its
objects (loose, packs, alternates, a commit graph) and both hash functions, and most
batches are a handful of objects, where starting git (about 2 ms) costs less than
importing dulwich (55 ms) or pygit2 (100 ms); docs/design.md has the figures.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator

from .layout import Layout

#: One ``git cat-file`` is given at most this many bytes of objects to send back, so
#: that memory holds one batch, whatever the number of files resolved.
BATCH_BYTES = 32 * 1024 * 1024


def blob_id(data: bytes, oid_size: int = 40) -> str:
    """The object id git gives ``data`` as a blob (hex), SHA-1 or SHA-256 by its length."""
    header = b"blob %d\0" % len(data)
    if oid_size == 64:
        return hashlib.sha256(header + data).hexdigest()
    return hashlib.sha1(header + data, usedforsecurity=False).hexdigest()


def read_blobs(layout: Layout, wanted: Iterable[tuple[str, int]]) -> dict[str, bytes | str]:
    """The verified bytes of each blob of ``wanted`` (object id, the size expected), or
    why it cannot be had (a string)."""
    found: dict[str, bytes | str] = {}
    for batch in iter_blobs(layout, wanted):
        found.update(batch)
    return found


def iter_blobs(
    layout: Layout, wanted: Iterable[tuple[str, int]]
) -> Iterator[dict[str, bytes | str]]:
    """:func:`read_blobs` one batch at a time, each bounded by its expected sizes, so
    that a caller that keeps nothing (fsck) holds one batch."""
    batch: list[tuple[str, int]] = []
    total = 0
    for oid, size in dict(wanted).items():
        if batch and total + size > BATCH_BYTES:
            yield _batch(layout, batch)
            batch, total = [], 0
        batch.append((oid, size))
        total += size
    if batch:
        yield _batch(layout, batch)


def _batch(layout: Layout, batch: list[tuple[str, int]]) -> dict[str, bytes | str]:
    from .moves import git  # starting git is for what needs the objects

    found: dict[str, bytes | str] = {}
    valid = [(oid, size) for oid, size in batch if _is_oid(oid, layout.oid_size)]
    for oid, _ in batch:
        if not _is_oid(oid, layout.oid_size):
            found[oid] = f"{oid!r} is not a git object id"
    if not valid:
        return found
    try:
        done = git(layout, "cat-file", "--batch", data="".join(f"{o}\n" for o, _ in valid).encode())
    except OSError as exc:
        return {**found, **{oid: f"git could not be run: {exc}" for oid, _ in valid}}
    out, at = done.stdout, 0
    for oid, expected in valid:
        end = out.find(b"\n", at)
        if end < 0:
            found[oid] = "git cat-file stopped early: " + done.stderr.decode(errors="replace")
            continue
        header = out[at:end].split()
        at = end + 1
        if len(header) == 2 and header[1] == b"missing":
            found[oid] = f"git object {oid} is missing from the repository"
            continue
        if len(header) != 3 or header[0] != oid.encode() or not header[2].isdigit():
            found[oid] = f"git cat-file gave an answer that is not {oid}'s"
            break  # the stream is out of step: nothing after this can be trusted
        size = int(header[2])
        data = out[at : at + size]
        at += size + 1
        if header[1] != b"blob":
            found[oid] = f"git object {oid} is a {header[1].decode(errors='replace')}, not a blob"
        elif size != expected or len(data) != size or blob_id(data, layout.oid_size) != oid:
            found[oid] = f"git object {oid} does not hold the bytes its id names"
        else:
            found[oid] = data
    for oid, _ in valid:
        found.setdefault(oid, f"git cat-file gave nothing for {oid}")
    return found


def _is_oid(oid: str, oid_size: int) -> bool:
    return len(oid) == oid_size and all(c in "0123456789abcdef" for c in oid)
