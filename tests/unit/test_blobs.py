"""Blob encoding: compression, deltas, verification and dedup."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapstore import StoreCorrupt
from snapstore.core import blobs


def _text(n_bytes: int, seed: int) -> bytes:
    """Source-like text: lines of words from a large vocabulary."""
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(2, 10)))
        for _ in range(4000)
    ]
    lines, size = [], 0
    while size < n_bytes:
        indent = "    " * rng.randint(0, 3)
        line = indent + " ".join(rng.choice(vocab) for _ in range(rng.randint(2, 10))) + "\n"
        lines.append(line.encode())
        size += len(line)
    return b"".join(lines)


def _decode(value: bytes, key: bytes, base: bytes | None = None) -> bytes:
    return blobs.decode_payload(value, blobs.parse_header(value, key), key, base)


@given(st.binary(max_size=5000))
@settings(max_examples=200)
def test_full_frame_round_trip(data: bytes) -> None:
    key = blobs.digest(data)
    value = blobs.encode(data)
    assert _decode(value, key) == data
    assert len(value) <= len(data) + 9  # never bigger than raw plus the header


@given(st.binary(min_size=1, max_size=3000), st.binary(max_size=3000))
@settings(max_examples=200)
def test_delta_round_trip(base: bytes, data: bytes) -> None:
    base_key, key = blobs.digest(base), blobs.digest(data)
    value = blobs.encode(data, base, base_key, 3)
    header = blobs.parse_header(value, key)
    assert _decode(value, key, base if header.encoding == blobs.DELTA else None) == data
    if header.encoding == blobs.DELTA:
        assert header.base == base_key and header.depth == 4


def test_incompressible_data_is_stored_raw() -> None:
    data = os.urandom(64 * 1024)
    value = blobs.encode(data)
    assert value[0] == blobs.RAW
    assert len(value) == len(data) + 9


def test_one_line_edit_to_4_mib_file_is_a_tiny_delta() -> None:
    base = _text(4 * 1024 * 1024, seed=1)
    lines = base.splitlines(keepends=True)
    lines[len(lines) // 2] = b"    result = compute(a, b)  # the agent's one-line edit\n"
    data = b"".join(lines)
    value = blobs.encode(data, base, blobs.digest(base), 0)
    assert value[0] == blobs.DELTA
    assert len(value) < 2048
    assert _decode(value, blobs.digest(data), base) == data


def test_flipped_byte_is_refused() -> None:
    data = _text(20_000, seed=2)
    key = blobs.digest(data)
    value = bytearray(blobs.encode(data))
    value[len(value) // 2] ^= 0x40
    with pytest.raises(StoreCorrupt):
        _decode(bytes(value), key)


def test_raw_blob_with_wrong_bytes_is_refused() -> None:
    data = os.urandom(1000)
    value = bytearray(blobs.encode(data))
    value[-1] ^= 1
    with pytest.raises(StoreCorrupt, match="does not match its digest"):
        _decode(bytes(value), blobs.digest(data))


def test_malformed_header_is_refused() -> None:
    with pytest.raises(StoreCorrupt, match="malformed"):
        blobs.parse_header(b"\x07abc", b"\0" * 32)
