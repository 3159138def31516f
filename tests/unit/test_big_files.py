"""Big files: stored in content-defined chunks, streamed in and out, checked on every read."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from snapstore import BadInput, Store
from snapstore.core import blobs
from snapstore.core.chunked import store_big
from snapstore.core.errors import TooLarge
from snapstore.core.records import Big, fingerprint

from ..support import edited_in_the_middle, random_bytes

MIB = 1024 * 1024


def _agent_turn(store: Store, root: Path, rel: str, data: bytes, prompt: str) -> None:
    store.begin_turn("default", prompt)
    store.pre_write([rel])
    (root / rel).write_bytes(data)
    store.post_write([rel])
    store.end_turn()


def _blob_keys(store: Store) -> set[bytes]:
    with store.repo.read() as v:
        return {key for key, _ in v.blob_values()}


def test_a_big_file_is_stored_as_chunks_named_by_its_whole_digest(store: Store, root: Path) -> None:
    data = random_bytes(12 * MIB, seed=1)
    _agent_turn(store, root, "big.bin", data, "p")
    key = blobs.digest(data)
    with store.repo.read() as v:
        value = v.blob_value(key)
        assert value is not None and value[0] == blobs.CHUNKED
        refs = v.chunks(key)
        assert refs is not None and sum(n for _, n in refs) == len(data)
        assert all(n <= blobs.MAX_CHUNK for _, n in refs) and len(refs) >= 3
        assert all(v.chunks(chunk) is None for chunk, _ in refs)  # chunks are plain blobs
        assert b"".join(v.pieces(key)) == data


def test_an_edit_in_the_middle_of_a_big_file_stores_only_the_chunks_it_touched(
    store: Store, root: Path
) -> None:
    data = random_bytes(24 * MIB, seed=2)
    _agent_turn(store, root, "big.bin", data, "first")
    before = _blob_keys(store)
    _agent_turn(store, root, "big.bin", edited_in_the_middle(data, 3), "edit")
    added = _blob_keys(store) - before
    # the new version's chunked blob, and the one or two chunks around each edit
    assert 2 <= len(added) <= 5
    with store.repo.read() as v:
        sizes = [len(v.blob_value(k) or b"") for k in added]
    assert sum(sizes) < 4 * blobs.MAX_CHUNK  # not the 24 MiB a whole copy takes


def test_rewind_and_undo_restore_a_big_file_byte_for_byte(store: Store, root: Path) -> None:
    original = random_bytes(10 * MIB, seed=4)
    (root / "big.bin").write_bytes(original)
    _agent_turn(store, root, "big.bin", edited_in_the_middle(original, 5), "edit")
    edited = (root / "big.bin").read_bytes()
    result = store.rewind(1)
    assert result.ok and result.restored == ["big.bin"]
    assert (root / "big.bin").read_bytes() == original
    assert store.undo().ok
    assert (root / "big.bin").read_bytes() == edited
    assert store.fsck().ok


def test_a_big_file_the_agent_created_is_deleted_by_the_rewind_and_back_by_undo(
    store: Store, root: Path
) -> None:
    data = random_bytes(6 * MIB, seed=6)
    _agent_turn(store, root, "new.bin", data, "create")
    assert store.rewind(1).ok
    assert not (root / "new.bin").exists()
    assert store.undo().ok
    assert (root / "new.bin").read_bytes() == data


def test_a_binary_big_file_the_user_changed_since_is_a_conflict_and_left_alone(
    store: Store, root: Path
) -> None:
    """Big text files merge (test_merge_big.py); binary ones, as small ones, never do: not
    even with markers."""
    original = random_bytes(6 * MIB, seed=7)
    (root / "big.bin").write_bytes(original)
    _agent_turn(store, root, "big.bin", edited_in_the_middle(original, 8), "edit")
    mine = edited_in_the_middle((root / "big.bin").read_bytes(), 9)
    (root / "big.bin").write_bytes(mine)
    for policy in ("skip", "markers"):
        result = store.rewind(1, on_conflict=policy, dry_run=policy == "skip")
        assert [c["path"] for c in result.conflicts] == ["big.bin"]
        assert "binary" in result.conflicts[0]["reason"] and not result.marked
        assert (root / "big.bin").read_bytes() == mine


def test_a_damaged_chunk_is_never_written_and_fsck_names_it(store: Store, root: Path) -> None:
    original = random_bytes(8 * MIB, seed=10)
    (root / "big.bin").write_bytes(original)
    _agent_turn(store, root, "big.bin", edited_in_the_middle(original, 11), "edit")
    edited = (root / "big.bin").read_bytes()
    with store.repo.read() as v:
        refs = v.chunks(blobs.digest(original))
        assert refs is not None
        chunk = refs[len(refs) // 2][0]
        value = bytearray(v.blob_value(chunk) or b"")
    value[-10] ^= 0xFF  # a flipped bit in the chunk's payload
    store.repo.write(lambda tx: tx.replace_blob_value(chunk, bytes(value)))
    result = store.rewind(1)
    assert not result.ok
    assert (root / "big.bin").read_bytes() == edited  # the temp file never replaced it
    assert not [p for p in os.listdir(root) if p.startswith(".snapstore-")]
    report = store.fsck()
    bad = {c["key"] for c in report.corrupt}
    assert chunk.hex() in bad and blobs.digest(original).hex() in bad


def test_a_file_over_the_capture_limit_is_refused_and_says_so(root: Path) -> None:
    (root / "huge.bin").write_bytes(random_bytes(6 * MIB, seed=12))
    (root / "small.txt").write_text("x\n")
    with Store.init(root, max_file_size=5 * MIB) as store:
        store.begin_turn("default", "p")
        captured = store.pre_write(["huge.bin", "small.txt"])
        assert captured.paths == ["small.txt"]
        assert [p for p, _ in captured.skipped] == ["huge.bin"]
        assert "capture limit" in captured.skipped[0][1]


def test_a_big_file_that_changed_since_it_was_read_is_not_stored(store: Store, root: Path) -> None:
    path = root / "big.bin"
    path.write_bytes(random_bytes(6 * MIB, seed=13))
    entry = store.repo.ws.read("big.bin")
    assert entry is not None and isinstance(entry.data, Big) and entry.stat is not None
    path.write_bytes(random_bytes(6 * MIB, seed=14))
    with store.repo.lock() as w, pytest.raises(BadInput, match="changed while"):
        store_big(w, store.repo.ws, "big.bin", entry.data, fingerprint(entry.stat))
    assert entry.data.key not in _blob_keys(store)


def test_gc_keeps_a_live_big_files_chunks_and_sweeps_a_dropped_ones(
    store: Store, root: Path
) -> None:
    from snapstore.ops.gc import GcPolicy

    first = random_bytes(6 * MIB, seed=15)
    (root / "big.bin").write_bytes(first)
    _agent_turn(store, root, "big.bin", random_bytes(6 * MIB, seed=16), "one")
    _agent_turn(store, root, "big.bin", random_bytes(6 * MIB, seed=17), "two")
    _agent_turn(store, root, "big.bin", random_bytes(6 * MIB, seed=18), "three")
    with store.repo.read() as v:
        dropped = {blobs.digest(first), *(c for c, _ in v.chunks(blobs.digest(first)) or [])}
    store.gc(GcPolicy(keep_turns=1))
    assert not dropped & _blob_keys(store)  # the dropped version went with its chunks ...
    assert store.fsck().ok  # ... while the kept turn's chunks all stand
    assert store.rewind(1).ok
    assert (root / "big.bin").read_bytes() == random_bytes(6 * MIB, seed=17)


def test_a_scan_records_a_big_files_change_in_chunks(store: Store, root: Path) -> None:
    original = random_bytes(9 * MIB, seed=19)
    (root / "big.bin").write_bytes(original)
    store.scan()  # the baseline
    edited = edited_in_the_middle(original, 20)
    (root / "big.bin").write_bytes(edited)
    result = store.scan()
    assert result.changed == ["big.bin"] and result.turn is not None
    with store.repo.read() as v:
        (change,) = v.changes(result.turn)
        assert change.before is not None and change.after is not None
        assert b"".join(v.pieces(change.before.key)) == original
        assert b"".join(v.pieces(change.after.key)) == edited
        assert v.chunks(change.after.key) is not None


_KILLED_CAPTURE = textwrap.dedent(
    """
    import os, signal, sys
    from snapstore import Store
    from snapstore.core import faults

    def kill(name):
        if name == "chunked.batch":
            os.kill(os.getpid(), signal.SIGKILL)

    faults.install(kill)
    with Store.open(sys.argv[1]) as store:
        store.begin_turn("default", "p")
        store.pre_write(["big.bin"])
    """
)


def test_a_capture_killed_between_chunk_batches_leaves_only_chunks_gc_removes(
    store: Store, root: Path
) -> None:
    data = random_bytes(40 * MIB, seed=21)  # more than one batch of chunks
    (root / "big.bin").write_bytes(data)
    keys_before = _blob_keys(store)
    child = subprocess.run([sys.executable, "-c", _KILLED_CAPTURE, str(root)], check=False)
    assert child.returncode == -9
    orphans = _blob_keys(store) - keys_before
    assert orphans and blobs.digest(data) not in orphans  # chunks, and no blob naming them
    assert store.fsck().ok
    store.gc()
    assert _blob_keys(store) == keys_before
    store.begin_turn("default", "again", close_open=True)  # run again, it stores it whole
    store.pre_write(["big.bin"])
    with store.repo.read() as v:
        assert b"".join(v.pieces(blobs.digest(data))) == data


def test_a_file_over_the_limit_is_named_by_its_turn_and_its_rewind(root: Path) -> None:
    (root / "huge.bin").write_bytes(random_bytes(6 * MIB, seed=22))
    with Store.init(root, max_file_size=5 * MIB) as store:
        store.begin_turn("default", "p")
        captured = store.pre_write(["huge.bin"])
        assert captured.paths == [] and isinstance(captured.refused[0], TooLarge)
        (root / "huge.bin").write_bytes(b"the agent's")
        store.end_turn()
        result = store.rewind(1)
        assert [w["path"] for w in result.warnings] == ["huge.bin"]
        assert "capture limit" in result.warnings[0]["reason"]
        assert (root / "huge.bin").read_bytes() == b"the agent's"  # never captured: left


def test_a_post_write_reads_a_big_file_again_when_it_changed_before_it_was_stored(
    store: Store, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from snapstore.ops import capture

    original = random_bytes(6 * MIB, seed=23)
    (root / "big.bin").write_bytes(original)
    store.begin_turn("default", "p")
    store.pre_write(["big.bin"])
    (root / "big.bin").write_bytes(edited_in_the_middle(original, 24))
    final = edited_in_the_middle(original, 25)
    real, raced = capture.prepare, []

    def racing(*args, **kwargs):  # another write lands between the read and the store
        found = real(*args, **kwargs)
        if not raced:
            raced.append(True)
            (root / "big.bin").write_bytes(final)
        return found

    monkeypatch.setattr(capture, "prepare", racing)
    assert store.post_write(["big.bin"]).paths == ["big.bin"]
    store.end_turn()
    with store.repo.read() as v:
        (change,) = v.changes(store.rewind_points()[0].turn.id)
        assert change.after is not None and change.after.key == blobs.digest(final)
    assert store.rewind(1).ok
    assert (root / "big.bin").read_bytes() == original
