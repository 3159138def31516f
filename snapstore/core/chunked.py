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
"""

from __future__ import annotations

from typing import BinaryIO

from . import blobs, faults
from .errors import FileChanged
from .fsio import Workspace
from .records import Big
from .repo import Locked, Tx

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
        _store(w, handle, big, rel)


def store_bytes(w: Locked, data: bytes) -> bytes:
    """Store bytes over :data:`~snapstore.core.blobs.BIG` held in memory (a repository's
    index), in chunks as a big file's; their digest."""
    import io

    big = Big(blobs.digest(data), len(data))
    if not _stored(w, big.key):
        _store(w, io.BytesIO(data), big, "the bytes")
    return big.key


def _store(w: Locked, handle: BinaryIO, big: Big, what: str) -> None:
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
        raise FileChanged(f"{what} changed while it was being captured", path=what)
    batch[big.key] = blobs.encode_chunked(size, refs)
    _commit(w, batch)


def _stored(w: Locked, key: bytes) -> bool:
    with w.repo.read() as v:
        return v.has_blob(key)


def _commit(w: Locked, batch: dict[bytes, bytes]) -> None:
    def put(tx: Tx) -> None:
        for key, value in batch.items():
            tx.put_blob(key, value)

    w.write(put)
