"""Two indexes compared by what they stage, not by their bytes.

Git rewrites its index whenever it refreshes the stat data it caches for each file
(``git status`` does, an editor's git integration does): the bytes change, what is
staged does not. A rewind that put HEAD back but found the index "moved" only for
that would leave a tree that matches no commit, so the index is compared by its
entries (path, mode, object id, stage and the flags that change what ``git status``
says), ignoring the stat data and the cache extensions. Versions 2, 3 and 4 (paths
compressed against the previous one) are read; anything else (a split index, an
unknown version) is compared byte for byte.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

_HEADER = struct.Struct(">4sII")
_FLAGS = struct.Struct(">H")
_EXTENDED, _ASSUME_VALID, _NAME_LENGTH = 0x4000, 0x8000, 0xFFF
#: Extended flags that change what git stages or checks out: intent-to-add, skip-worktree.
_MEANINGFUL = 0x6000

Entry = tuple[bytes, int, bytes, int]  # path, mode, object id, flags that matter


def entries(data: bytes, oid_bytes: int = 20) -> list[Entry] | None:
    """What the index stages, entry by entry; None when it cannot be read so (a version
    or an extension this reader does not know, a malformed file)."""
    found = stat_entries(data, oid_bytes)
    if found is None:
        return None
    return [(e.path, e.mode, e.oid, e.meaning) for e in found]


class StatEntry(NamedTuple):
    """One index entry with the stat data git cached for its work-tree file: what
    ``git status`` compares with ``lstat`` to know, without reading it, that the file
    still holds the staged blob."""

    path: bytes
    mode: int
    oid: bytes
    meaning: int  # stage, assume-valid, intent-to-add, skip-worktree (the flags that matter)
    ctime_ns: int
    mtime_ns: int
    ino: int  # the low 32 bits, as git keeps them
    size: int  # the low 32 bits, as git keeps them


def stat_entries(data: bytes, oid_bytes: int = 20) -> list[StatEntry] | None:
    """Every entry of the index with its stat data; None as for :func:`entries`."""
    try:
        return _entries(data, oid_bytes)
    except (struct.error, IndexError, ValueError):
        return None


def _entries(data: bytes, oid_bytes: int) -> list[StatEntry] | None:
    signature, version, count = _HEADER.unpack_from(data)
    if signature != b"DIRC" or version not in (2, 3, 4):
        return None
    fixed = struct.Struct(f">10I{oid_bytes}sH")  # the stat data, the object id, the flags
    unpack, fixed_size = fixed.unpack_from, fixed.size
    found: list[StatEntry] = []
    append, make = found.append, StatEntry._make  # a million entries: no call in Python each
    at = _HEADER.size
    path = b""
    for _ in range(count):
        start = at
        ctime_s, ctime_n, mtime_s, mtime_n, _dev, ino, mode, _uid, _gid, size, oid, flags = unpack(
            data, at
        )
        at += fixed_size
        extended = 0
        if flags & _EXTENDED:
            if version < 3:
                return None
            (extended,) = _FLAGS.unpack_from(data, at)
            at += 2
        if version == 4:
            strip, at = _varint(data, at)
            end = data.index(b"\0", at)
            if strip > len(path):
                return None
            path = path[: len(path) - strip] + data[at:end]
            at = end + 1
        else:
            end = data.index(b"\0", at)
            length = flags & _NAME_LENGTH  # the path's length, unless it is that long or more
            if length != end - at and length < _NAME_LENGTH:
                return None
            path = data[at:end]
            at = start + ((end - start) // 8 + 1) * 8  # NUL-padded to a multiple of 8
        stage = (flags >> 12) & 3
        meaning = (stage << 16) | (flags & _ASSUME_VALID) | (extended & _MEANINGFUL)
        append(
            make(
                (
                    path,
                    mode,
                    oid,
                    meaning,
                    ctime_s * 1_000_000_000 + ctime_n,
                    mtime_s * 1_000_000_000 + mtime_n,
                    ino,
                    size,
                )
            )
        )
    if data[at : at + 4] == b"link":  # a split index: its entries live in another file
        return None
    return found


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """Git's offset varint (each continuation adds one before shifting)."""
    byte = data[at]
    at += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[at]
        at += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, at


def same_index(a: bytes | None, b: bytes | None, oid_bytes: int = 20) -> bool:
    """Whether two indexes stage the same (absence equals absence)."""
    if a is None or b is None or a == b:
        return a == b
    first, second = entries(a, oid_bytes), entries(b, oid_bytes)
    return first is not None and first == second
