"""Big files in chunks cut by their content, so that memory stays bounded.

A file over :data:`~snapstore.core.blobs.BIG` is never held whole. Reading it
hashes it in pieces (:class:`~snapstore.core.records.Big`); storing it cuts it
with FastCDC into chunks of about 1 MiB (256 KiB to 4 MiB), each stored as an
ordinary blob under its own digest, and then a chunked blob under the whole
file's digest lists them (docs/format.md §3). Because the cut points follow the
content, an edit in the middle of a big file changes one or two chunks, and only
those are stored again; restic and borg cut their files the same way.

Chunks are committed in batches of :data:`BATCH` bytes (8 MiB), so neither this process
nor LMDB's dirty pages hold more than a batch; the chunked blob comes last, with the
last batch. A crash in between leaves chunks no record points at, which gc removes.
The caller holds the write lock from the first batch to its own commit that records
the file, so gc cannot take the chunks away before a record names them.

A big merge (``text/bigmerge.py``) reads its stored sides through :class:`Stored`, a
chunk at a time, and writes its result to a :class:`Spool`, which the rewind's journal
stores like a file (:func:`store_spool`) before anything is written to the workspace.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator
from typing import BinaryIO

from . import blobs, faults
from .errors import FileChanged, StoreCorrupt
from .fsio import Workspace
from .records import Big
from .repo import Locked, Tx
from .view import View

#: FastCDC's target, least and greatest chunk sizes (restic's are 1, 0.5 and 8 MiB).
AVERAGE, SMALLEST, LARGEST = 1024 * 1024, 256 * 1024, blobs.MAX_CHUNK
#: Encoded chunks held before they are committed (with LMDB's dirty pages of the commit,
#: twice this is the most a store of a big file holds).
BATCH = 8 * 1024 * 1024


def store_big(w: Locked, ws: Workspace, rel: str, big: Big, seen: bytes) -> None:
    """Store the big file ``rel``, which a read found to be ``big`` with the stat
    fingerprint ``seen``, unless the store has it.

    Refused with :class:`FileChanged` if the file no longer holds what was read
    (its stat fingerprint or its digest moved): what is stored is always what
    the read named.
    """
    if _stored(w, big.key):
        return
    with ws.reading(rel, seen) as handle:
        stored = _store_chunks(w, handle, big)
    if not stored:
        raise FileChanged(f"{rel} changed while it was being captured", path=rel)


def store_spool(w: Locked, spool: Spool) -> None:
    """Store a big merge's result from its spool, unless the store has it; refused with
    :class:`StoreCorrupt` if the spool no longer holds what was written to it."""
    big = spool.big()
    if _stored(w, big.key):
        return
    spool.file.seek(0)
    if not _store_chunks(w, spool.file, big):
        raise StoreCorrupt("a merged big file changed in its temp file before it was stored")


def store_bytes(w: Locked, data: bytes) -> bytes:
    """Store bytes over :data:`~snapstore.core.blobs.BIG` held in memory (a repository's
    index), in chunks as a big file's; their digest."""
    import io

    big = Big(blobs.digest(data), len(data))
    if not _stored(w, big.key) and not _store_chunks(w, io.BytesIO(data), big):
        raise AssertionError("bytes in memory hashed otherwise as they were stored")
    return big.key


def _store_chunks(w: Locked, handle: BinaryIO, big: Big) -> bool:
    """Cut what ``handle`` reads into chunks, store those the store lacks (in batches), and
    last the chunked blob: only if the whole hashes to ``big`` (whether it did)."""
    from pyfastcdc import FastCDC  # only big files pay for loading it

    cutter = FastCDC(AVERAGE, min_size=SMALLEST, max_size=LARGEST)
    whole, refs = blobs.hasher(), []
    batch: dict[bytes, bytes] = {}
    held = 0
    for chunk in cutter.cut_stream(handle):
        data = bytes(chunk.data)  # the view is only good until the next chunk
        whole.update(data)
        key = blobs.digest(data)
        refs.append((key, len(data)))
        if key in batch or _stored(w, key):
            continue
        batch[key] = blobs.encode(data)
        held += len(batch[key])
        if held >= BATCH:
            _commit(w, batch)
            batch, held = {}, 0
            faults.point("chunked.batch")
    size = sum(n for _, n in refs)
    if whole.digest() != big.key or size != big.size:
        return False
    batch[big.key] = blobs.encode_chunked(size, refs)
    _commit(w, batch)
    return True


class Stored:
    """A chunked blob read at any offset, for a big merge: a chunk is decoded (and checked
    against its digest) when a read needs it, and the last one is kept."""

    def __init__(self, v: View, key: bytes):
        refs = v.chunks(key)
        if refs is None:
            raise StoreCorrupt(f"blob {key.hex()[:12]} is not chunked")
        self.v, self.key, self.refs = v, key, refs
        self.offsets = list(itertools.accumulate((n for _, n in refs), initial=0))
        self._held: tuple[int, bytes] = (-1, b"")

    @property
    def size(self) -> int:
        return self.offsets[-1]

    def read(self, offset: int, length: int) -> bytes:
        parts, end = [], min(offset + length, self.size)
        while offset < end:
            n = bisect.bisect_right(self.offsets, offset) - 1
            at = offset - self.offsets[n]
            part = self._chunk(n)[at : at + end - offset]
            parts.append(part)
            offset += len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _chunk(self, n: int) -> bytes:
        if self._held[0] != n:
            key, size = self.refs[n]
            data = self.v.blob(key, chunked=False)
            if len(data) != size:
                raise StoreCorrupt(
                    f"chunk {key.hex()[:12]} of blob {self.key.hex()[:12]} is damaged"
                )
            self._held = (n, data)
        return self._held[1]

    def chunks(self) -> list[tuple[bytes, int]]:
        return self.refs

    def pieces(self) -> Iterator[bytes]:
        return self.v.pieces(self.key)

    def verify(self) -> None:
        """Read every chunk: the whole must hash to the blob's digest."""
        for _ in self.pieces():
            pass


class Spool:
    """Where a big merge writes its result: an unnamed temp file in ``folder`` (the store's),
    which goes with its last handle whatever happens, hashed as it is written."""

    def __init__(self, folder: str):
        import tempfile  # only a big merge needs one

        self.file = tempfile.TemporaryFile(dir=folder)  # noqa: SIM115 (closed by close())
        self.hasher, self.size = blobs.hasher(), 0

    def write(self, data: bytes) -> None:
        self.file.write(data)
        self.hasher.update(data)
        self.size += len(data)

    def big(self) -> Big:
        """What was written, named: its digest and size."""
        self.file.flush()
        return Big(self.hasher.digest(), self.size)

    def content(self) -> bytes | Big:
        """What was written: its bytes when it is no big file (the spool is then closed),
        else :meth:`big`."""
        big = self.big()
        if big.size > blobs.BIG:
            return big
        self.file.seek(0)
        data = self.file.read()
        self.close()
        if blobs.digest(data) != big.key:
            raise StoreCorrupt("a merged file changed in its temp file")
        return data

    def close(self) -> None:
        self.file.close()


def _stored(w: Locked, key: bytes) -> bool:
    with w.repo.read() as v:
        return v.has_blob(key)


def _commit(w: Locked, batch: dict[bytes, bytes]) -> None:
    def put(tx: Tx) -> None:
        for key, value in batch.items():
            tx.put_blob(key, value)

    w.write(put)
