"""Big files through a remote: a chunked blob travels with its chunks, on S3 (SeaweedFS) and
a folder alike.

A push uploads the chunks no change names; a pull fetches them in a second round and
stores the chunked blob last, once its whole hashes to its id; a remote gc keeps the
chunks of what is still live; and a remote that lies in a chunk list is refused, naming
the pack, with nothing it lied about stored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.core import blobs
from snapstore.core.blobs import digest_hex
from snapstore.remote import ObjectStore, RemoteError
from snapstore.remote.format import layout

from ..support import Clock, edited_in_the_middle, random_bytes

MIB = 1024 * 1024


def _turn(store: Store, root: Path, rel: str, data: bytes, prompt: str) -> str:
    turn = store.begin_turn("default", prompt)
    store.pre_write([rel])
    (root / rel).parent.mkdir(exist_ok=True)
    (root / rel).write_bytes(data)
    store.post_write([rel])
    store.end_turn()
    return turn.id


def _mk(path: Path) -> Path:
    path.mkdir()
    return path


def _chunks(store: Store, data: bytes) -> list[tuple[bytes, int]]:
    with store.repo.read() as v:
        refs = v.chunks(blobs.digest(data))
    assert refs is not None
    return refs


def test_a_big_file_edited_between_turns_round_trips_into_a_fresh_store(
    tmp_path: Path, remote: ObjectStore
) -> None:
    one = random_bytes(12 * MIB, seed=1)
    two = edited_in_the_middle(one, seed=2)
    a_root = _mk(tmp_path / "a")
    with Store.init(a_root) as a:
        first = _turn(a, a_root, "data/big.bin", one, "write it")
        pushed = a.push(remote)
        assert pushed.blobs == len(_chunks(a, one)) + 1  # the chunks, then what lists them
        second = _turn(a, a_root, "data/big.bin", two, "edit its middle")
        again = a.push(remote)
        new_chunks = {c for c, _ in _chunks(a, two)} - {c for c, _ in _chunks(a, one)}
        assert 1 <= len(new_chunks) <= 3 and again.blobs == len(new_chunks) + 1
        assert again.bytes < 4 * MIB  # the edit's chunks only, never the whole file
    b_root = _mk(tmp_path / "b")
    with Store.init(b_root) as b:
        assert b.pull(remote).turns == 2
        for turn, data in [(first, one), (second, two), (first, one), (second, two)]:
            result = b.switch(turn)
            assert result.ok, result
            assert (b_root / "data/big.bin").read_bytes() == data
        rewound = b.rewind(second)  # the edit taken back: the first version again
        assert rewound.ok, rewound
        assert (b_root / "data/big.bin").read_bytes() == one
        assert b.fsck().ok
        assert b.pull(remote).blobs == 0  # nothing missing: nothing fetched
        assert b.remote_fsck(remote).ok


def test_a_second_pull_fetches_only_the_chunks_it_lacks(
    tmp_path: Path, remote: ObjectStore
) -> None:
    one = random_bytes(6 * MIB, seed=3)
    two = edited_in_the_middle(one, seed=4)
    a_root, b_root = _mk(tmp_path / "a"), _mk(tmp_path / "b")
    with Store.init(a_root) as a, Store.init(b_root) as b:
        _turn(a, a_root, "big.bin", one, "write it")
        a.push(remote)
        assert b.pull(remote).blobs == len(_chunks(a, one)) + 1
        second = _turn(a, a_root, "big.bin", two, "edit it")
        a.push(remote)
        new_chunks = {c for c, _ in _chunks(a, two)} - {c for c, _ in _chunks(a, one)}
        assert b.pull(remote).blobs == len(new_chunks) + 1
        assert b.switch(second).ok and (b_root / "big.bin").read_bytes() == two


def test_remote_gc_keeps_the_chunks_of_what_stays_live(
    tmp_path: Path, remote: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(layout, "PACK_TARGET", 1)  # one pack per blob: gc can drop any
    one = random_bytes(6 * MIB, seed=5)
    two = edited_in_the_middle(one, seed=6)
    clock = Clock(time.time())
    a_root = _mk(tmp_path / "a")
    with Store.init(a_root, clock=clock) as a:
        _turn(a, a_root, "old.bin", one, "old")
        clock.tick(40 * 86400)
        new = _turn(a, a_root, "new.bin", two, "a copy, edited: most chunks shared")
        a.push(remote)
        packs = len(list(remote.list(layout.PACKS)))
        first = a.remote_gc(remote, keep_days=30, grace=0)  # drops the old turn, condemns
        second = a.remote_gc(remote, keep_days=30, grace=0)  # deletes what was condemned
        gone = {c for c, _ in _chunks(a, one)} - {c for c, _ in _chunks(a, two)}
        assert (first.removed_turns, first.condemned_packs) == (1, len(gone) + 1)
        assert second.removed_packs == len(gone) + 1  # the old value and its own chunks
        assert len(list(remote.list(layout.PACKS))) == packs - len(gone) - 1
        report = a.remote_fsck(remote)
        assert report.ok, report
        assert report.blobs == len(_chunks(a, two)) + 1
    b_root = _mk(tmp_path / "b")
    with Store.init(b_root) as b:
        assert b.pull(remote).turns == 1
        assert b.switch(new).ok and (b_root / "new.bin").read_bytes() == two
        assert b.fsck().ok


def _config_version(remote: ObjectStore) -> int:
    return int(json.loads(remote.get(layout.CONFIG))["version"])


def test_a_version_1_remote_is_raised_to_2_by_the_first_push_of_a_big_file(
    tmp_path: Path, remote: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    v1 = layout.config_bytes().replace(b'"version": 2', b'"version": 1')
    remote.put(layout.CONFIG, v1)  # made by a snapstore of layout 1
    a_root = _mk(tmp_path / "a")
    with Store.init(a_root) as a:
        _turn(a, a_root, "small.txt", b"small\n", "small")
        a.push(remote)
        assert _config_version(remote) == 1  # nothing it would misread: left as it was
        big = random_bytes(5 * MIB, seed=8)
        _turn(a, a_root, "big.bin", big, "big")
        a.push(remote)
        assert _config_version(remote) == 2
    b_root = _mk(tmp_path / "b")
    with Store.init(b_root) as b:
        monkeypatch.setattr(layout, "VERSION", 1)  # a snapstore of layout 1
        monkeypatch.setattr(layout, "READS", (1,))
        for action in (b.pull, lambda r: b.remote_gc(r, keep_days=None)):
            with pytest.raises(RemoteError, match=r"remote format 2 is newer .* reads \(1\)"):
                action(remote)
        monkeypatch.undo()
        assert b.pull(remote).turns == 2
        assert b.remote_fsck(remote).ok


# -- a remote that lies in a chunk list ------------------------------------------------


def _pushed_big(tmp_path: Path, remote: ObjectStore) -> tuple[bytes, list[tuple[bytes, int]]]:
    """A big file pushed from a store of its own: its content and its chunks."""
    data = random_bytes(5 * MIB, seed=7)
    a_root = _mk(tmp_path / "a")
    with Store.init(a_root) as a:
        _turn(a, a_root, "big.bin", data, "write it")
        a.push(remote)
        return data, _chunks(a, data)


def _relist(remote: ObjectStore, values: dict[bytes, bytes]) -> str:
    """Replace the remote's one pack and one index with ones where the blobs of ``values``
    (key -> value) hold those values, as anyone who can write there can; the pack's key."""
    ((pack_info,), (index_info,)) = (list(remote.list(k)) for k in (layout.PACKS, layout.INDEXES))
    old = remote.get(pack_info.key)
    held = {
        blob_id: old[offset : offset + length]
        for blob_id, offset, length in layout.pack_entries(old, remote.url, pack_info.key)
    }
    held.update((key.hex(), value) for key, value in values.items())
    data, entries = layout.build_pack(sorted(held.items()))
    pack = digest_hex(data)
    index = {b: layout.BlobRef(pack, offset, length, None) for b, offset, length in entries}
    raw = layout.build_index(index)
    for info in (pack_info, index_info):
        remote.delete(info.key)
    remote.put(layout.pack_key(pack), data)
    remote.put(layout.index_key(digest_hex(raw)), raw)
    return layout.pack_key(pack)


def _missing_chunk(refs: list[tuple[bytes, int]]) -> list[tuple[bytes, int]]:
    return [(blobs.digest(b"in no pack"), refs[0][1]), *refs[1:]]


def _swapped(refs: list[tuple[bytes, int]]) -> list[tuple[bytes, int]]:
    return [refs[1], refs[0], *refs[2:]]


@pytest.mark.parametrize(
    ("lie", "said"),
    [(_missing_chunk, "in none of the remote's indexes"), (_swapped, "do not make it")],
    ids=["missing-chunk", "wrong-whole"],
)
def test_a_chunk_list_that_lies_is_refused_and_nothing_it_names_is_stored(
    tmp_path: Path,
    root: Path,
    remote: ObjectStore,
    lie: Callable[[list[tuple[bytes, int]]], list[tuple[bytes, int]]],
    said: str,
) -> None:
    data, refs = _pushed_big(tmp_path, remote)
    key = blobs.digest(data)
    pack = _relist(remote, {key: blobs.encode_chunked(len(data), lie(refs))})
    _refused(root, remote, key, pack, said)


def test_a_chunk_that_is_chunked_itself_is_refused(
    tmp_path: Path, root: Path, remote: ObjectStore
) -> None:
    data, refs = _pushed_big(tmp_path, remote)
    key = blobs.digest(data)
    # a chunked blob of the first chunk's bytes, listed in the first chunk's place
    inner = blobs.digest(b"inner")
    pack = _relist(
        remote,
        {
            inner: blobs.encode_chunked(refs[0][1], refs[:1]),
            key: blobs.encode_chunked(len(data), [(inner, refs[0][1]), *refs[1:]]),
        },
    )
    _refused(root, remote, key, pack, "chunked itself")


def _refused(root: Path, remote: ObjectStore, key: bytes, pack: str, said: str) -> None:
    """Pull fails naming the pack that holds the lie; no turn and no chunked value is
    stored (chunks that checked out may be, for gc to sweep), and the store is sound."""
    with Store.init(root) as b:
        with pytest.raises(RemoteError) as caught:
            b.pull(remote)
        assert caught.value.key == pack and said in str(caught.value), caught.value
        with b.repo.read() as v:
            assert list(v.turns()) == [] and not v.has_blob(key)
            assert all(value[0] != blobs.CHUNKED for _, value in v.blob_values())
        assert b.fsck().ok
        report = b.remote_fsck(remote)
        assert not report.ok and any(
            key.hex() in item["key"] for item in report.corrupt + report.dangling
        )
