"""The baseline by reference, in groups: many clean files of a git repository per record.

The first scan of a repository records each file git's index shows clean by reference
(snapstore.ops.gitbase). Three records per file (``paths``, ``index``, ``gitrefs``) cost
about 370 bytes each on disk: 6% of a tree of small files. Here a sorted run of such files
is one ``baseline`` record instead, keyed by its first path, and holding each file's path,
stat fingerprint and git object id, compressed together: under 50 bytes a file.

A grouped file has no per-file record. The record layer reads it as if it had all three
(snapstore.core.view), and the first write to any of them moves the file out of its
group into per-file records (snapstore.core.repo), which from then on are what the store
knows of it. So nothing above the record layer knows the groups exist, but the scan that
writes them, gc and fsck. The encoding is in docs/format.md §2.5.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from itertools import accumulate, islice, pairwise
from operator import lt

from .errors import StoreCorrupt

#: A group's compressed size is kept to this, so that it fills one overflow page of 4 KiB
#: (a value over half a page is stored in whole pages of its own).
TARGET = 4000
#: The files of the first group tried; later groups follow what the last one fitted.
FIRST = 96
_FP = 36  # the stat fingerprint (records.FINGERPRINT)
_HEAD = struct.Struct(">BI")  # oid length, number of files


class Group:
    """One decoded group: its paths in order, and each one's fingerprint and object id."""

    __slots__ = ("fingerprints", "key", "oids", "paths")

    def __init__(
        self, key: bytes, paths: list[bytes], fingerprints: list[bytes], oids: list[bytes]
    ):
        self.key = key  # its record's key: the first path it held when written
        self.paths, self.fingerprints, self.oids = paths, fingerprints, oids

    def find(self, path: bytes) -> int:
        """The position of ``path`` in the group, or -1."""
        at = bisect_left(self.paths, path)
        return at if at < len(self.paths) and self.paths[at] == path else -1

    def without(self, at: int) -> Group:
        return Group(
            self.key,
            self.paths[:at] + self.paths[at + 1 :],
            self.fingerprints[:at] + self.fingerprints[at + 1 :],
            self.oids[:at] + self.oids[at + 1 :],
        )


def encode(paths: list[bytes], fingerprints: list[bytes], oids: list[bytes]) -> bytes:
    """A group's value: its oid length and file count, then one zstd frame of the paths'
    lengths, the paths, the fingerprints and the object ids (raw). zstd finds the
    prefixes that sorted paths share, and the fingerprints' alike bytes."""
    import zstandard

    lengths = struct.pack(f">{len(paths)}H", *map(len, paths))
    payload = b"".join((lengths, *paths, *fingerprints, *oids))
    head = _HEAD.pack(len(oids[0]) if oids else 20, len(paths))
    return head + zstandard.ZstdCompressor(level=3).compress(payload)


def decode(key: bytes, value: bytes) -> Group:
    """A group from its record; a value that does not parse, or whose paths are not in
    strict order from ``key``, is corrupt."""
    import zstandard

    try:
        oid_size, count = _HEAD.unpack_from(value)
        payload = zstandard.ZstdDecompressor().decompress(value[_HEAD.size :])
        lengths = struct.unpack_from(f">{count}H", payload)
    except (struct.error, zstandard.ZstdError) as exc:
        raise StoreCorrupt(f"baseline group {key[:60]!r} does not decode: {exc}") from None
    ends = list(accumulate(lengths, initial=2 * count))
    if (
        oid_size not in (20, 32)
        or count == 0
        or len(payload) != ends[-1] + count * (_FP + oid_size)
    ):
        raise StoreCorrupt(f"baseline group {key[:60]!r} is malformed")
    paths = [payload[a:b] for a, b in pairwise(ends)]
    if paths[0] != key or not all(map(lt, paths, islice(paths, 1, None))):
        raise StoreCorrupt(f"baseline group {key[:60]!r} is out of order")
    at = ends[-1]
    fingerprints = [payload[a : a + _FP] for a in range(at, at + count * _FP, _FP)]
    at += count * _FP
    oids = [payload[a : a + oid_size] for a in range(at, at + count * oid_size, oid_size)]
    return Group(key, paths, fingerprints, oids)


def split(
    paths: list[bytes], fingerprints: list[bytes], oids: list[bytes]
) -> list[tuple[bytes, bytes]]:
    """Sorted files as groups of about :data:`TARGET` bytes each: (key, value)."""
    found = []
    size, at = FIRST, 0
    while at < len(paths):
        end = at + size
        value = encode(paths[at:end], fingerprints[at:end], oids[at:end])
        while len(value) > TARGET and end - at > 1:
            end = at + max(1, (end - at) * TARGET // len(value) - 1)
            value = encode(paths[at:end], fingerprints[at:end], oids[at:end])
        found.append((paths[at], value))
        size = end - at if len(value) > TARGET * 7 // 8 else (end - at) * 9 // 8 + 1
        at = end
    return found


def size_of(fingerprint: bytes) -> int:
    """The file size a fingerprint holds (a referenced file's is its blob's)."""
    return int.from_bytes(fingerprint[:8], "big")
