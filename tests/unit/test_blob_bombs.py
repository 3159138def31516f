"""A blob's header states its decoded size; a reader never trusts it, nor the zstd frame's
own content size, to decide what it allocates (docs/format.md §3, "Stated sizes").

A stored blob may lie: a damaged or doctored store, or (test_remote_hostile.py) a remote's
pack. Each case here is refused in one line, and a child process that meets a 768 MiB
bomb (about 24 KiB stored) grows by far less than the bomb.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from snapstore import Store, StoreCorrupt
from snapstore.core import blobs

from ..support import agent_turn, read
from ..support.bombs import BOMB, GROWTH_BOUND, MIB, lying_value, measured, zero_frame
from ..support.rawdb import raw_put, raw_values

CONTENT = b"print('the real content')\n"


def decode(value: bytes, key: bytes, base: bytes | None = None) -> bytes:
    return blobs.decode_payload(value, blobs.parse_header(value, key), key, base)


def test_a_header_stating_more_than_a_whole_blob_holds_is_refused_undecoded() -> None:
    with pytest.raises(StoreCorrupt, match="more than a blob stored whole may hold"):
        decode(lying_value(BOMB), blobs.digest(bytes(BOMB)))
    with pytest.raises(StoreCorrupt, match="more than a blob stored whole may hold"):
        decode(lying_value(blobs.MAX_WHOLE + 1, b"x"), b"k" * 32)


@pytest.mark.parametrize("says", [True, False], ids=["frame-says-768MiB", "frame-says-nothing"])
@pytest.mark.parametrize("encoding", [blobs.ZSTD, blobs.DELTA])
def test_a_frame_that_holds_more_than_its_stated_size_is_refused(encoding: int, says: bool) -> None:
    """The header says 26 bytes; the frame holds 768 MiB, and says so (refused undecoded:
    zstd would allocate what the frame says) or says nothing (at most 26 bytes decoded)."""
    key = blobs.digest(CONTENT)
    head = bytes([encoding]) + len(CONTENT).to_bytes(8, "big")
    base = None
    if encoding == blobs.DELTA:
        base = b"a base\n"
        head += blobs.digest(base) + bytes([1])
    value = head + zero_frame(says=says)
    expected = f"holds a frame of {BOMB} bytes where it states" if says else "does not decompress"
    with pytest.raises(StoreCorrupt, match=expected):
        decode(value, key, base)


def test_a_frame_shorter_than_stated_and_a_raw_payload_of_another_length_are_refused() -> None:
    key = blobs.digest(CONTENT)
    for says in (True, False):
        short = bytes([blobs.ZSTD]) + (1000).to_bytes(8, "big") + zero_frame(10, says)
        with pytest.raises(StoreCorrupt, match=r"where it states 1000|less than the 1000 bytes"):
            decode(short, key)
    raw = bytes([blobs.RAW]) + (5).to_bytes(8, "big") + CONTENT
    with pytest.raises(StoreCorrupt, match="decodes to more than the 5 bytes"):
        decode(raw, key)


def test_a_chunk_list_past_the_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    refs = [(blobs.digest(bytes([n])), 1) for n in range(3)]
    value = blobs.encode_chunked(3, refs)
    header = blobs.parse_header(value, b"k" * 32)
    assert blobs.chunk_refs(value, header, b"k" * 32) == refs
    monkeypatch.setattr(blobs, "MAX_CHUNKS", 2)
    with pytest.raises(StoreCorrupt, match="lists more than 2 chunks"):
        blobs.chunk_refs(value, header, b"k" * 32)


def test_a_chunk_stating_another_size_than_its_list_is_refused_undecoded(
    store: Store, root: Path
) -> None:
    data = os.urandom(6 * MIB)
    agent_turn(store, "big", {"big.bin": data})
    key = blobs.digest(data)
    with store.repo.read() as v:
        chunks = v.chunks(key)
    assert chunks is not None and len(chunks) >= 2
    chunk, size = chunks[0]
    raw_put(store, chunk, lying_value(blobs.MAX_WHOLE))  # within the cap, not the list's size
    with store.repo.read() as v, pytest.raises(StoreCorrupt) as caught:
        for _ in v.pieces(key):
            pass
    assert f"states {blobs.MAX_WHOLE} bytes, not {size}" in str(caught.value)
    assert "\n" not in str(caught.value)


READ_IN_CHILD = """
from snapstore import Store, StoreCorrupt
with Store.open(ARGS["root"]) as store:
    with store.repo.read() as v:
        try:
            v.blob(bytes.fromhex(ARGS["key"]))
        except StoreCorrupt as exc:
            OUT["read"] = str(exc)
    OUT["after_read"] = peak()
    result = store.rewind(1)
    OUT["errors"] = [e["reason"] for e in result.errors + result.conflicts]
    OUT["fsck"] = [str(p) for p in store.fsck().corrupt]
"""


@pytest.mark.parametrize(
    ("stated", "says"),
    [(BOMB, True), (len(CONTENT), True), (blobs.MAX_WHOLE, False)],
    ids=["header-says-768MiB", "header-says-26-bytes", "header-at-the-cap-frame-says-nothing"],
)
def test_a_local_blob_with_a_lying_header_is_refused_and_allocates_little(
    store: Store, root: Path, stated: int, says: bool
) -> None:
    """The turn's ``before`` blob is replaced by a 24 KiB value whose frame holds 768 MiB of
    zeros; reading it, rewinding the turn (which needs it) and fsck all refuse it, and the
    process that does all three grows by far less than the bomb."""
    (root / "app.py").write_bytes(CONTENT)
    agent_turn(store, "edit", {"app.py": "print('the agent's edit')\n"})
    key = blobs.digest(CONTENT)
    assert key in raw_values(store)
    raw_put(store, key, lying_value(stated, zero_frame(says=says)))
    store.close()
    out = measured(READ_IN_CHILD, root=str(root), key=key.hex())
    assert out["read"].startswith(f"blob {key.hex()[:12]}"), out
    assert any(w in out["read"] for w in ("more than", "holds a frame", "decompress")), out
    assert out["errors"] and all(key.hex()[:12] in e for e in out["errors"]), out
    assert out["fsck"], out
    assert out["peak"] - out["before"] < GROWTH_BOUND, out
    assert read(root, "app.py") == b"print('the agent's edit')\n"  # left as it was
