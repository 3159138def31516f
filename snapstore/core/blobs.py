"""Blob encoding: the bytes of one file version, keyed by their BLAKE3 digest.

A blob value is a small header followed by a payload (see docs/format.md):

    byte 0      encoding: 0 raw, 1 zstd frame, 2 zstd delta, 3 chunked
    bytes 1-8   raw size, unsigned 64-bit big endian
    delta only: 32-byte digest of the base blob, 1 byte chain depth
    payload

A chunked blob (a big file, cut by content: ``core/chunked.py``) has no bytes of its
own: its payload lists its chunks, each a blob of its own, as (digest, size) pairs.

A delta is a zstd frame compressed against the raw bytes of the base (a
raw-content prefix dictionary, the idea behind ``zstd --patch-from``). The
window, hash and chain logs are sized to the base, because with the defaults
python-zstandard stops finding matches in bases of a few MiB and the "delta"
comes out as large as a full frame.

Every decode re-hashes the result and refuses bytes that do not match their
key, so a flipped bit on disk can never reach the workspace; ``fsck`` uses the
same check.

A header's stated size is never trusted to allocate, nor is a zstd frame's own: a blob
stored whole may state at most :data:`MAX_WHOLE` bytes, a chunked one may list at most
:data:`MAX_CHUNKS` chunks, a frame that states its own size must state the header's, and
a frame is decoded into at most the stated size, refused unless it is exactly that. A
25 KiB object claiming (and holding) 768 MiB of zeros costs a refusal, not 768 MiB.
"""

# No ``from __future__ import annotations`` here: a NamedTuple turns string annotations
# into ForwardRefs, and the first ForwardRef of a process compiles, which sets up the
# AST module: about 3 ms of every hook's start-up (docs/benchmarks.md).

import struct
from typing import TYPE_CHECKING, NamedTuple

from .errors import StoreCorrupt

if TYPE_CHECKING:
    import zstandard
    from blake3 import blake3

# blake3 and zstandard are imported where they are used, not here: reading history, a
# scan that finds nothing new, and a turn's begin hash and compress nothing, and loading
# zstandard alone takes half of a hook's start-up (docs/benchmarks.md).

DIGEST_SIZE = 32
RAW, ZSTD, DELTA, CHUNKED = 0, 1, 2, 3
ENCODINGS = (RAW, ZSTD, DELTA, CHUNKED)

#: Longest delta chain; past it a full frame is stored, so a read decodes at most this many frames.
MAX_CHAIN = 16
#: Files above this size are big: read as :class:`~snapstore.core.records.Big` and stored
#: chunked (``core/chunked.py``), so that no step holds one whole in memory.
BIG = 4 * 1024 * 1024
#: Bases above this size are not used for deltas (the match tables would need too much
#: memory). Only blobs stored before big files were chunked can be bigger.
MAX_DELTA_BASE = BIG
#: The largest chunk a chunked blob may list (the chunker's maximum).
MAX_CHUNK = 4 * 1024 * 1024
#: The most a blob stored whole (raw, zstd frame or delta) may state, checked before it is
#: decoded. Writers since schema 4 store at most :data:`BIG` whole (bigger content is
#: chunked); the rest is room for blobs stored whole before chunking (bases were bounded
#: at 64 MiB then, and scans at 10 MiB). It bounds what a lying header can make a reader
#: allocate, locally or from a remote.
MAX_WHOLE = 64 * 1024 * 1024
#: The most chunks a chunked blob may list (its list is read whole): 36 MiB of list, a
#: file of 1 TiB at the chunker's average.
MAX_CHUNKS = 1 << 20
LEVEL = 3
#: zstd allows 30 for hash and chain logs; 22 bounds their tables at 16 MiB each.
MAX_TABLE_LOG = 22
#: Decoders allow this window: deltas stored before bases were capped reach it.
MAX_WINDOW_LOG = 27

_SIZE = struct.Struct(">Q")
_HEAD = 1 + _SIZE.size
#: One chunk of a chunked blob: its digest and its size.
CHUNK_REF = struct.Struct(">32sI")


def digest(data: bytes) -> bytes:
    """The BLAKE3 digest that names these bytes: a blob's key, a remote object's name.

    Every BLAKE3 in snapstore goes through here or :func:`digest_hex`. The module is
    imported on first use, not at start-up: a hook that hashes nothing never loads it.
    """
    from blake3 import blake3

    return blake3(data).digest()


def digest_hex(data: bytes) -> str:
    """:func:`digest` in hex: how a version, a turn id or a remote key spells it."""
    from blake3 import blake3

    return blake3(data).hexdigest()


#: The BLAKE3 key-derivation context of a git reference's key: keys so made never equal
#: the plain BLAKE3 of any content, so a reference cannot be taken for a blob.
REFERENCE_CONTEXT = "snapstore 2026-12 git blob reference"


def reference_key(oid: str) -> bytes:
    """The key that names a file version known by reference to git blob ``oid`` (hex), in
    ``paths`` and the scan index, as a digest names a stored blob (docs/format.md)."""
    from blake3 import blake3

    return blake3(oid.encode(), derive_key_context=REFERENCE_CONTEXT).digest()


def hasher() -> "blake3":
    """An incremental :func:`digest`, for content read in pieces (big files)."""
    from blake3 import blake3

    return blake3()


class BlobHeader(NamedTuple):
    """The decoded header of a stored blob value."""

    encoding: int
    size: int
    base: bytes | None = None
    depth: int = 0

    @property
    def header_size(self) -> int:
        return _HEAD + (DIGEST_SIZE + 1 if self.encoding == DELTA else 0)


def parse_header(value: bytes, key: bytes) -> BlobHeader:
    """Read a blob header, refusing anything malformed."""
    if len(value) < _HEAD or value[0] not in ENCODINGS:
        raise StoreCorrupt(f"blob {key.hex()[:12]} has a malformed header")
    (size,) = _SIZE.unpack_from(value, 1)
    if value[0] != DELTA:
        return BlobHeader(value[0], size)
    if len(value) < _HEAD + DIGEST_SIZE + 1:
        raise StoreCorrupt(f"blob {key.hex()[:12]} has a truncated delta header")
    base = bytes(value[_HEAD : _HEAD + DIGEST_SIZE])
    return BlobHeader(DELTA, size, base, value[_HEAD + DIGEST_SIZE])


def encode_chunked(size: int, chunks: list[tuple[bytes, int]]) -> bytes:
    """The value of a chunked blob of ``size`` bytes made of ``chunks`` (digest, size)."""
    return bytes([CHUNKED]) + _SIZE.pack(size) + b"".join(CHUNK_REF.pack(*c) for c in chunks)


def chunk_refs(value: bytes, header: BlobHeader, key: bytes) -> list[tuple[bytes, int]]:
    """The (digest, size) list of a chunked blob, refused unless the sizes add up."""
    payload = memoryview(value)[_HEAD:]
    if len(payload) % CHUNK_REF.size:
        raise StoreCorrupt(f"blob {key.hex()[:12]} has a malformed chunk list")
    if len(payload) // CHUNK_REF.size > MAX_CHUNKS:
        raise StoreCorrupt(f"blob {key.hex()[:12]} lists more than {MAX_CHUNKS} chunks")
    refs = [(bytes(d), n) for d, n in CHUNK_REF.iter_unpack(payload)]
    if (
        not refs
        or sum(n for _, n in refs) != header.size
        or any(not 0 < n <= MAX_CHUNK for _, n in refs)
    ):
        raise StoreCorrupt(f"blob {key.hex()[:12]} lists chunks that do not make its size")
    return refs


def with_depth(value: bytes, depth: int) -> bytes:
    """A delta value with its recorded chain depth replaced (gc moves bases up the chain)."""
    at = _HEAD + DIGEST_SIZE
    return bytes(value[:at]) + bytes([depth]) + bytes(value[at + 1 :])


def _delta_params(base_size: int, size: int) -> "zstandard.ZstdCompressionParameters":
    import zstandard

    window_log = max(10, (base_size + size).bit_length())  # ceil(log2(n + 1))
    window_log = min(window_log, MAX_WINDOW_LOG)
    table_log = min(window_log, MAX_TABLE_LOG)
    return zstandard.ZstdCompressionParameters.from_level(
        LEVEL, window_log=window_log, hash_log=table_log, chain_log=table_log
    )


def _raw_dict(base: bytes) -> "zstandard.ZstdCompressionDict":
    import zstandard

    return zstandard.ZstdCompressionDict(base, dict_type=zstandard.DICT_TYPE_RAWCONTENT)


def encode(
    data: bytes, base: bytes | None = None, base_key: bytes | None = None, base_depth: int = 0
) -> bytes:
    """Encode ``data`` as a blob value: a delta against ``base`` when given, else a full frame.

    Whatever is chosen, the result is never larger than the raw bytes plus the header.
    """
    import zstandard

    size = _SIZE.pack(len(data))
    if base is not None and base_key is not None and data:
        dictionary = _raw_dict(base)
        compressor = zstandard.ZstdCompressor(
            dict_data=dictionary, compression_params=_delta_params(len(base), len(data))
        )
        payload = compressor.compress(data)
        if len(payload) < len(data):
            return bytes([DELTA]) + size + base_key + bytes([base_depth + 1]) + payload
    return _frame(data, zstandard.ZstdCompressor(level=LEVEL) if data else None)


def frames(datas: list[bytes]) -> list[bytes]:
    """:func:`encode` of each of ``datas`` as a full frame, with one compressor for all:
    making one costs more than compressing a small file with it (11 of 16 us for 2 KiB).
    A compressor must not be shared by threads: each thread calls this with its share."""
    import zstandard

    compressor = zstandard.ZstdCompressor(level=LEVEL)
    return [_frame(data, compressor) for data in datas]


def _frame(data: bytes, compressor: "zstandard.ZstdCompressor | None") -> bytes:
    """A zstd frame of ``data``, or its raw bytes when the frame is no smaller."""
    size = _SIZE.pack(len(data))
    if compressor is not None and data:
        payload = compressor.compress(data)
        if len(payload) < len(data):
            return bytes([ZSTD]) + size + payload
    return bytes([RAW]) + size + data


def decode_payload(value: bytes, header: BlobHeader, key: bytes, base: bytes | None) -> bytes:
    """Decode one blob value whose base (for a delta) is already decoded, and verify it.

    Refused before any decoding when its stated size is over :data:`MAX_WHOLE`, or when
    its zstd frame says it holds another size (zstd would allocate that); a frame that
    says nothing is decoded into at most the stated size. So at most :data:`MAX_WHOLE`
    is allocated, whatever the value claims or holds.
    """
    import zstandard

    if header.encoding == CHUNKED:  # its bytes are its chunks': read them with View.pieces
        raise StoreCorrupt(f"blob {key.hex()[:12]} is chunked where a single blob was expected")
    if header.size > MAX_WHOLE:
        raise StoreCorrupt(
            f"blob {key.hex()[:12]} states {header.size} bytes, more than a blob stored "
            f"whole may hold ({MAX_WHOLE}); refused undecoded"
        )
    payload = value[header.header_size :]
    try:
        if header.encoding == RAW:
            data = bytes(payload)
        else:
            if header.encoding == ZSTD:
                decompressor = zstandard.ZstdDecompressor()
            else:
                assert base is not None
                decompressor = zstandard.ZstdDecompressor(
                    dict_data=_raw_dict(base), max_window_size=1 << MAX_WINDOW_LOG
                )
            # zstd allocates what a frame says it holds, whatever max_output_size asks:
            # a frame must say the header's size, or nothing (then the bound holds).
            stated = zstandard.frame_content_size(payload)
            if stated not in (-1, header.size):
                raise StoreCorrupt(
                    f"blob {key.hex()[:12]} holds a frame of {stated} bytes "
                    f"where it states {header.size}"
                )
            data = decompressor.decompress(payload, max_output_size=header.size)
    except (zstandard.ZstdError, MemoryError) as exc:  # one that does not fit the size too
        raise StoreCorrupt(
            f"blob {key.hex()[:12]} does not decompress to its size: {exc}"
        ) from None
    if len(data) != header.size:
        more = "more" if len(data) > header.size else "less"
        raise StoreCorrupt(
            f"blob {key.hex()[:12]} decodes to {more} than the {header.size} bytes it states"
        )
    if digest(data) != key:
        raise StoreCorrupt(f"blob {key.hex()[:12]} does not match its digest")
    return data
