"""The remote's format, version 1 (docs/format.md §9): its keys and the bytes of each object.

Every object is immutable and checked before use:

- ``config``: JSON naming the format and its version, written once;
- ``packs/<hh>/<digest>``: blob values (docs/format.md §3) one after another,
  then a footer listing them; named by the BLAKE3 of the whole pack;
- ``indexes/<digest>``: which blob is where (pack, offset, length, delta
  base), one per push; named by the BLAKE3 of its bytes;
- ``turns/<turn id>``, ``states/<writer>/<seq>``, ``gc/<digest>``: records,
  each a *sealed* object: the BLAKE3 of the payload, then the payload (a zstd
  frame of canonical JSON), so damage is found on every read.

This module only encodes and decodes; it does no I/O.
"""

from __future__ import annotations

import json
import re
import struct
from typing import Any, NamedTuple

import zstandard

from ...core.blobs import digest
from ..transport.errors import CorruptObject, RemoteError
from . import schema

FORMAT = "snapstore-remote"
#: The layout version: 2 is 1 with chunked blob values (big files, docs/format.md §3) in
#: packs. A version-1 reader takes their chunks for unreachable, and its gc would delete
#: them, so a push raises a version-1 remote to 2 before its first chunked value goes up.
VERSION = 2
#: The layout versions this code reads.
READS = (1, 2)
#: The ``version`` inside records and indexes: they are unchanged since layout 1.
RECORD = 1
CONFIG = "config"
PACKS, INDEXES, TURNS, STATES, GC = "packs", "indexes", "turns", "states", "gc"
#: A pack is closed once its blobs pass this size (one PUT each; S3 takes 5 GiB in one).
#: A push holds a pack's values and then the pack: 8 MiB keeps that well within the bound
#: a big file's push has (docs/benchmarks.md), at one PUT per 8 MiB.
PACK_TARGET = 8 * 1024 * 1024
_PACK_MAGIC = b"SSPK\x01"
_FOOTER = struct.Struct(">I")
_SEAL = 32  # bytes of BLAKE3 before a sealed payload
_LEVEL = 3
_STATE_KEY = re.compile(r"states/([0-9a-f]{32})/(\d{10})")
#: The most bytes read for one object of each kind (packs: up to their indexed size) and
#: the most a record, index or pack footer may decode to: a remote cannot exhaust memory.
MAX_CONFIG = 64 * 1024
MAX_RECORD = 64 * 1024 * 1024
MAX_INDEX = 256 * 1024 * 1024
MAX_DECODED = 256 * 1024 * 1024


class BlobRef(NamedTuple):
    """Where one blob lives on the remote."""

    pack: str  # the pack's digest
    offset: int
    length: int
    base: str | None  # a delta's base blob (hex), else None


def config_bytes() -> bytes:
    return (
        json.dumps(
            {"format": FORMAT, "version": VERSION, "hash": "blake3", "compression": "zstd"},
            sort_keys=True,
        ).encode()
        + b"\n"
    )


def check_config(raw: bytes, remote: str, name: str | None) -> dict[str, Any]:
    """The parsed ``config``; a version this code does not read is refused, naming both."""
    try:
        config = json.loads(raw)
        version = config["version"]
        if config.get("format") != FORMAT or not isinstance(version, int):
            raise ValueError
    except (ValueError, TypeError, KeyError):
        raise RemoteError(
            "its config is not a snapstore remote's", remote=remote, key=CONFIG, name=name
        ) from None
    if version not in READS:
        newer = "newer than" if version > VERSION else "older than"
        raise RemoteError(
            f"remote format {version} is {newer} this snapstore reads ({VERSION})",
            remote=remote,
            key=CONFIG,
            name=name,
        )
    return config


# -- sealed records ------------------------------------------------------------------


def canonical(data: Any) -> bytes:
    """The one JSON encoding of ``data``: sorted keys, compact separators."""
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def seal(data: Any) -> bytes:
    payload = zstandard.ZstdCompressor(level=_LEVEL).compress(canonical(data))
    return digest(payload) + payload


def unseal(raw: bytes, remote: str, key: str, name: str | None = None) -> Any:
    """The record in a sealed object, after checking its digest."""
    payload = raw[_SEAL:]
    actual = digest(payload)
    if len(raw) < _SEAL or actual != raw[:_SEAL]:
        raise CorruptObject(
            remote=remote, key=key, expected=raw[:_SEAL].hex(), actual=actual.hex(), name=name
        )
    return decode_json(payload, "object", remote, key, name)


def decode_json(data: bytes, what: str, remote: str, key: str, name: str | None = None) -> Any:
    """The JSON in a zstd frame; anything else (or JSON nested too deep) is a remote error."""
    try:
        return json.loads(inflate(data, remote, key, name))
    except (ValueError, RecursionError) as exc:
        raise RemoteError(
            f"{what} does not decode: {exc}", remote=remote, key=key, name=name
        ) from None


def inflate(data: bytes, remote: str, key: str, name: str | None = None) -> bytes:
    """A zstd frame's content, refused past :data:`MAX_DECODED` (a frame may claim or
    hold any size: it is never trusted to allocate)."""
    try:
        with zstandard.ZstdDecompressor().stream_reader(data) as reader:
            out = reader.read(MAX_DECODED + 1)
    except zstandard.ZstdError as exc:
        raise RemoteError(
            f"object does not decode: {exc}", remote=remote, key=key, name=name
        ) from None
    if len(out) > MAX_DECODED:
        raise RemoteError(
            f"object decodes to more than {MAX_DECODED} bytes", remote=remote, key=key, name=name
        )
    return out


def checked(check: Any, record: Any, what: str, remote: str, key: str, name: str | None) -> Any:
    """``check(record)`` (a :mod:`schema` function); a malformed record is a remote error
    naming the object."""
    try:
        return check(record)
    except schema.Malformed as exc:
        raise RemoteError(
            f"{what} is malformed: {exc}", remote=remote, key=key, name=name
        ) from None


# -- keys ----------------------------------------------------------------------------


def pack_key(digest: str) -> str:
    return f"{PACKS}/{digest[:2]}/{digest}"


def index_key(digest: str) -> str:
    return f"{INDEXES}/{digest}"


def turn_key(turn_id: str) -> str:
    return f"{TURNS}/{turn_id}"


def state_key(writer: str, seq: int) -> str:
    return f"{STATES}/{writer}/{seq:010d}"


def parse_state_key(key: str) -> tuple[str, int] | None:
    """(writer, seq) of a state key; None for anything else."""
    match = _STATE_KEY.fullmatch(key)
    return None if match is None else (match.group(1), int(match.group(2)))


def gc_key(digest: str) -> str:
    return f"{GC}/{digest}"


def leaf(key: str) -> str:
    return key.rsplit("/", 1)[-1]


# -- packs ---------------------------------------------------------------------------


def build_pack(values: list[tuple[str, bytes]]) -> tuple[bytes, list[tuple[str, int, int]]]:
    """A pack of ``(blob id, value)`` pairs: its bytes and each blob's (id, offset, length)."""
    entries = []
    parts = []
    offset = 0
    for blob_id, value in values:
        entries.append((blob_id, offset, len(value)))
        parts.append(value)
        offset += len(value)
    footer = zstandard.ZstdCompressor(level=_LEVEL).compress(canonical(entries))
    parts += [footer, _FOOTER.pack(len(footer)), _PACK_MAGIC]
    return b"".join(parts), entries


def pack_entries(data: bytes, remote: str, key: str) -> list[tuple[str, int, int]]:
    """The footer of a whole pack: (blob id, offset, length) of each blob it holds."""
    tail = len(_PACK_MAGIC) + _FOOTER.size
    if len(data) < tail or data[-len(_PACK_MAGIC) :] != _PACK_MAGIC:
        raise RemoteError("pack has no footer", remote=remote, key=key)
    (size,) = _FOOTER.unpack_from(data, len(data) - tail)
    if size > len(data) - tail:
        raise RemoteError("pack footer is longer than the pack", remote=remote, key=key)
    raw = decode_json(data[len(data) - tail - size : -tail], "pack footer", remote, key)
    entries: list[tuple[str, int, int]] = checked(
        schema.pack_footer, raw, "pack footer", remote, key, None
    )
    body = len(data) - tail - size
    if any(offset + length > body for _, offset, length in entries):
        raise RemoteError("pack footer points past the pack's blobs", remote=remote, key=key)
    return entries


# -- indexes -------------------------------------------------------------------------


def build_index(refs: dict[str, BlobRef]) -> bytes:
    packs = sorted({ref.pack for ref in refs.values()})
    number = {pack: n for n, pack in enumerate(packs)}
    blobs = [
        [blob_id, number[r.pack], r.offset, r.length, r.base] for blob_id, r in sorted(refs.items())
    ]
    return zstandard.ZstdCompressor(level=_LEVEL).compress(
        canonical({"version": RECORD, "packs": packs, "blobs": blobs})
    )


def read_index(data: bytes, remote: str, key: str, name: str | None = None) -> dict[str, BlobRef]:
    raw = decode_json(data, "index", remote, key, name)
    blobs = checked(schema.index, raw, "index", remote, key, name)
    return {b: BlobRef(p, o, n, base) for b, p, o, n, base in blobs}
