"""Disk full and map growth failures: a clear error, and nothing left half-written.

The real thing runs on a small tmpfs (mounting needs root, which this machine
and CI have); the same failures are also injected, so they are covered
everywhere.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import lmdb
import pytest

from snapstore import NotFound, Store, StoreFull
from snapstore.core.fsio import TEMP_NAME

from ..support import Clock, agent_turn, read, snapshot, write
from ..support.rawdb import database

MIB = 1024 * 1024


def _temp_files(root: Path) -> list[str]:
    return [name for _, _, files in os.walk(root) for name in files if TEMP_NAME.fullmatch(name)]


def test_a_full_store_disk_is_a_clear_error_and_records_nothing(
    small_fs: Path, root: Path, clock: Clock
) -> None:
    with Store.init(root, store_dir=str(small_fs / "store"), clock=clock) as store:
        agent_turn(store, "fits", {"small.txt": "small\n"})
        before, blobs = store.rewind_points(), store.status().blobs
        write(root, "huge.bin", os.urandom(4 * MIB))
        with pytest.raises(StoreFull, match="full"):
            store.pre_write(["huge.bin"])
        assert store.rewind_points() == before and store.status().blobs == blobs  # no trace
        assert store.fsck().ok
        agent_turn(store, "still works", {"small.txt": "small again\n"})
        store.rewind(1)
        assert read(root, "small.txt") == b"small\n"


def test_a_full_workspace_disk_fails_that_file_only(
    small_fs: Path, tmp_path: Path, clock: Clock
) -> None:
    ws = small_fs / "ws"
    ws.mkdir()
    with Store.init(ws, store_dir=str(tmp_path / "store"), clock=clock) as store:
        write(ws, "big.bin", os.urandom(MIB))
        write(ws, "small.txt", "original\n")
        agent_turn(store, "shrink", {"big.bin": b"tiny", "small.txt": "agent\n"})
        write(ws, "filler", os.urandom(int(2.5 * MIB)))  # leaves less than the big file needs
        result = store.rewind(1)
        assert [e["path"] for e in result.errors] == ["big.bin"]
        assert "no space" in result.errors[0]["reason"]
        assert read(ws, "big.bin") == b"tiny" and read(ws, "small.txt") == b"original\n"
        assert _temp_files(ws) == [] and store.fsck().ok
        os.unlink(ws / "filler")
        store.undo()
        assert read(ws, "small.txt") == b"agent\n"


class _Txn:
    """A write transaction whose commit fails as a full disk would make it fail."""

    def __init__(self, txn: lmdb.Transaction):
        self.txn = txn

    def __enter__(self) -> lmdb.Transaction:
        return self.txn

    def __exit__(self, *exc: object) -> bool:
        self.txn.abort()
        if exc[0] is None:
            raise lmdb.Error("mdb_txn_commit: No space left on device")
        return False


class FailingEnv:
    """The store's LMDB environment, with chosen commits or map growth failing."""

    def __init__(
        self, env: lmdb.Environment, fail_commits: set[int] = frozenset(), fail_grow: bool = False
    ):
        self.env, self.fail_commits, self.fail_grow = env, fail_commits, fail_grow
        self.commits = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def begin(self, write: bool = False, **options: Any) -> Any:
        txn = self.env.begin(write=write, **options)
        if write:
            self.commits += 1
            if self.commits in self.fail_commits:
                return _Txn(txn)
        return txn

    def set_mapsize(self, size: int) -> None:
        if size and self.fail_grow:
            raise lmdb.Error("mdb_env_set_mapsize: Cannot allocate memory")
        self.env.set_mapsize(size)


def test_injected_enospc_at_every_commit_of_a_rewind(root: Path, clock: Clock) -> None:
    """The journal commit failing writes no file; the finish commit failing leaves a rewind
    that the next open finishes."""
    for failing in (1, 2):  # 1: the journal commit, 2: the finish commit
        ws = root / f"case{failing}"
        ws.mkdir()
        with Store.init(ws, clock=clock) as store:
            write(ws, "a.txt", "a\n")
            agent_turn(store, "t", {"a.txt": "agent\n", "new.txt": "new\n"})
            before = snapshot(ws)
            real = database(store).env
            database(store).env = FailingEnv(real, {failing})
            with pytest.raises(StoreFull, match="full"):
                store.rewind(1)
            database(store).env = real
            if failing == 1:
                assert snapshot(ws) == before and not store.unfinished_operations()
            else:  # every file is complete; the record of the rewind is what is missing
                assert read(ws, "a.txt") == b"a\n" and read(ws, "new.txt") is None
                assert store.unfinished_operations()
            assert store.fsck().ok
        with Store.open(ws) as store:
            store.resume()
            if failing == 1:
                store.rewind(1)
            assert read(ws, "a.txt") == b"a\n" and read(ws, "new.txt") is None
            assert store.fsck().ok and not store.unfinished_operations()
            store.undo()
            assert snapshot(ws) == before


def test_injected_enospc_while_writing_a_file(
    store: Store, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(root, "a.txt", "a\n" * 1000)
    write(root, "b.txt", "b\n")
    agent_turn(store, "t", {"a.txt": "agent a\n", "b.txt": "agent b\n"})
    real_write = os.write

    def full(fd: int, data: bytes) -> int:
        if len(data) > 1000:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    result = store.rewind(1)
    monkeypatch.undo()
    assert [e["path"] for e in result.errors] == ["a.txt"]
    assert read(root, "a.txt") == b"agent a\n" and read(root, "b.txt") == b"b\n"
    assert _temp_files(root) == []


def test_a_map_that_cannot_grow_is_store_full_with_nothing_recorded(
    root: Path, clock: Clock
) -> None:
    with Store.init(root, clock=clock, map_size=MIB) as store:
        agent_turn(store, "fits", {"small.txt": "small\n"})
        before = store.status()
        database(store).env = FailingEnv(database(store).env, fail_grow=True)
        write(root, "big.bin", os.urandom(2 * MIB))
        with pytest.raises(StoreFull, match="cannot grow"):
            store.pre_write(["big.bin"])
        with pytest.raises(StoreFull, match="cannot grow"):
            agent_turn(store, "too big to undo", {"small.txt": os.urandom(2 * MIB)})
        database(store).env = database(store).env.env
        assert store.fsck().ok
        assert store.status().turns == before.turns + 1  # the turn began; nothing else
        store.end_turn()
        assert read(root, "small.txt") != b"small\n"
        store.rewind(1)
        assert read(root, "small.txt") == b"small\n"


def test_a_rewind_that_wrote_nothing_moves_nothing(
    small_fs: Path, tmp_path: Path, clock: Clock
) -> None:
    """Every write failing (a full disk) leaves the head and the turns where they were, so
    the same rewind runs again once there is room; one failing of several is left to
    ``finish``."""
    ws = small_fs / "ws"
    ws.mkdir()
    with Store.init(ws, store_dir=str(tmp_path / "store"), clock=clock) as store:
        write(ws, "big.bin", os.urandom(MIB))
        agent_turn(store, "shrink", {"big.bin": b"tiny"})
        head = store.rewind_points()
        write(ws, "filler", os.urandom(int(2.5 * MIB)))
        result = store.rewind(1)
        assert result.nothing_done and [e["path"] for e in result.errors] == ["big.bin"]
        assert store.rewind_points() == head  # the turn is still there to rewind
        assert store.status().left is None and read(ws, "big.bin") == b"tiny"
        with pytest.raises(NotFound):
            store.undo()  # nothing was done, so there is nothing to undo
        os.unlink(ws / "filler")
        again = store.rewind(1)
        assert again.ok and again.restored == ["big.bin"] and store.rewind_points() == []

        store.undo()  # big.bin is tiny again
        write(ws, "big2.bin", os.urandom(MIB))
        write(ws, "small.txt", "original\n")
        agent_turn(store, "two", {"big2.bin": b"tiny", "small.txt": "agent\n"})
        write(ws, "filler", os.urandom(int(2.5 * MIB)))
        partial = store.rewind(1)
        assert not partial.nothing_done and partial.restored == ["small.txt"]
        assert [e["path"] for e in partial.left] == ["big2.bin"]
        assert store.status().left["paths"][0]["path"] == "big2.bin"
        os.unlink(ws / "filler")
        finished = store.finish()
        assert finished.ok and finished.restored == ["big2.bin"] and store.status().left is None
        assert len(read(ws, "big2.bin")) == MIB and read(ws, "small.txt") == b"original\n"
