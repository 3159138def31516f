"""gc: retention policies, what is never dropped, delta rebasing, compaction, auto gc."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.core import blobs, faults
from snapstore.ops.gc import DAY, GcPolicy

from ..support import Clock, agent_turn, snapshot, write
from ..support.histories import build_history
from ..support.rawdb import raw_values
from ..support.retried import commits_run_twice


def _kept_turns_rewind_exactly(store: Store, expected: dict[str, dict]) -> None:
    """Rewind to each kept turn, compare the tree, and undo to come back."""
    root = Path(store.root)
    final = snapshot(root, dirs=True)
    for turn_id, tree in expected.items():
        result = store.rewind(turn_id)
        assert result.ok, result
        assert snapshot(root, dirs=True) == tree, f"rewinding {turn_id} is not exact"
        store.undo()
        assert snapshot(root, dirs=True) == final


def _recorded_history(store: Store, turns: int) -> tuple[list[str], dict[str, dict]]:
    """Agent turns over a few files, with the tree before each one."""
    root = Path(store.root)
    write(root, "big.txt", "".join(f"line {i}\n" for i in range(3000)))
    ids, before = [], {}
    for n in range(turns):
        tree = snapshot(root, dirs=True)
        data = (root / "big.txt").read_text().replace(f"line {n * 13}\n", f"turn {n}\n")
        turn = agent_turn(
            store,
            f"turn {n}",
            {
                "big.txt": data,
                f"dir{n % 3}/f{n}.txt": f"file {n}\n" * 200,
                "bin.dat": os.urandom(3000),
                **({f"dir{(n - 1) % 3}/f{n - 1}.txt": None} if n % 4 == 3 else {}),
            },
        )
        before[turn] = tree
        ids.append(turn)
        store.clock.tick(DAY)
    return ids, before


def test_keep_turns_keeps_exact_rewinds_and_shrinks_the_file(store: Store) -> None:
    ids, before = _recorded_history(store, 12)
    size = store.repo.data_bytes()
    result = store.gc(GcPolicy(keep_days=None, keep_turns=4))
    assert sorted(result.removed_turns) == sorted(ids[:8])
    assert result.removed_blobs > 0 and result.compacted
    assert result.store_bytes < size and result.freed_bytes == size - result.store_bytes
    assert [p.turn.id for p in store.rewind_points()] == ids[:7:-1]
    assert store.fsck().ok
    _kept_turns_rewind_exactly(store, {t: before[t] for t in ids[8:]})


@pytest.mark.parametrize("twice", [False, True], ids=["once", "commits-run-twice"])
def test_dropped_delta_bases_are_rebased(
    store: Store, twice: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also with every commit run twice, as one that must grow the map is (core.db): the
    sweep's commit once read from a snapshot still open, which a map that grows closes."""
    ids, before = _recorded_history(store, 10)
    if twice:
        commits_run_twice(monkeypatch)
    result = store.gc(GcPolicy(keep_days=None, keep_turns=2))
    assert result.rebased_blobs > 0
    headers = [blobs.parse_header(v, k) for k, v in raw_values(store).items()]
    assert any(h.encoding == blobs.DELTA for h in headers)  # kept deltas stay deltas
    assert store.fsck().ok
    _kept_turns_rewind_exactly(store, {t: before[t] for t in ids[8:]})


def test_keep_days_drops_older_turns(store: Store, clock: Clock) -> None:
    ids, before = _recorded_history(store, 8)  # one a day
    result = store.gc(GcPolicy(keep_days=3.5))
    assert sorted(result.removed_turns) == sorted(ids[:5])
    assert store.fsck().ok
    _kept_turns_rewind_exactly(store, {t: before[t] for t in ids[5:]})


def test_max_size_prunes_oldest_first_until_it_fits(store: Store, root: Path) -> None:
    ids, before = [], {}
    for n in range(12):  # each turn alone holds a 16 KiB version
        before_tree = snapshot(root, dirs=True)
        ids.append(
            agent_turn(store, f"turn {n}", {"blob.bin": os.urandom(16384), "small.txt": f"{n}\n"})
        )
        before[ids[-1]] = before_tree
    quota = store.repo.live_bytes() * 2 // 3
    result = store.gc(GcPolicy(keep_days=None, max_size=quota))
    assert result.store_bytes <= quota and not result.notes
    kept = [p.turn.id for p in store.rewind_points()]
    assert kept == ids[: -len(kept) - 1 : -1] and 4 <= len(kept) < 12  # the newest are kept
    assert store.fsck().ok
    _kept_turns_rewind_exactly(store, {t: before[t] for t in kept})


def test_an_unreachable_quota_is_reported(store: Store) -> None:
    _recorded_history(store, 3)
    result = store.gc(GcPolicy(keep_days=None, max_size=4096))
    assert result.notes and "cannot be met" in result.notes[0]
    assert store.fsck().ok


def test_the_open_turn_and_the_last_rewind_are_never_dropped(store: Store, root: Path) -> None:
    ids, _ = _recorded_history(store, 6)
    before_rewind = snapshot(root, dirs=True)
    store.rewind(ids[1])  # takes back turns 1..5; the head is turn 0
    running = store.begin_turn("default", "still running")
    store.pre_write(["open.txt"])
    write(root, "open.txt", "open\n")
    result = store.gc(GcPolicy(keep_days=0, keep_turns=0))
    assert result.removed_turns == [ids[0]]  # all else is the open turn or the rewind's undo
    assert store.fsck().ok
    store.end_turn()
    undone = store.undo()
    assert snapshot(root, dirs=True) == {**before_rewind, "open.txt": ("file", b"open\n", 0o644)}
    # A turn came after the rewind, so its undo is a turn of its own on top of it.
    assert [p.turn.id for p in store.rewind_points()] == [undone.new_head, running.id]
    assert store.status().head == undone.new_head
    assert store.fsck().ok


def test_dry_run_changes_nothing(store: Store) -> None:
    _recorded_history(store, 6)
    size = store.repo.data_bytes()
    result = store.gc(GcPolicy(keep_days=None, keep_turns=2), dry_run=True)
    assert result.dry_run and len(result.removed_turns) == 4 and result.removed_blobs > 0
    assert len(store.rewind_points()) == 6 and store.repo.data_bytes() == size


def test_compaction_waits_for_other_openers_and_skips(store: Store) -> None:
    _recorded_history(store, 6)
    lock = os.open(os.path.join(store.store_dir, "open.lock"), os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_SH)  # another process has the store open
        result = store.gc(GcPolicy(keep_days=None, keep_turns=1))
    finally:
        os.close(lock)
    assert not result.compacted and "compaction skipped" in result.notes[0]
    assert result.removed_turns and store.fsck().ok
    assert store.gc(GcPolicy(keep_days=None)).compacted


def test_a_capture_prepared_before_gc_never_points_at_a_swept_blob(
    store: Store, root: Path
) -> None:
    """Blobs are encoded outside the write lock; gc may sweep their delta base meanwhile."""
    base = "".join(f"line {i}\n" for i in range(2000)).encode()
    data = base.replace(b"line 7\n", b"changed\n")
    write(root, "f.txt", base)
    agent_turn(store, "t", {"f.txt": data})
    with store.repo.read() as v:
        base_key = blobs.digest(base)
        key, value = v.encode(data + b"more\n", base_key)
    assert value is not None and value[0] == blobs.DELTA
    store.repo.write(lambda tx: tx.delete_blob(base_key))  # as a gc would
    store.repo.write(lambda tx: tx.put_blob(key, value, data + b"more\n"))
    with store.repo.read() as v:
        assert v.blob(key) == data + b"more\n"


@pytest.mark.parametrize("turns", [1, 5])
def test_gc_keeps_every_turn_when_the_policy_keeps_them(store: Store, turns: int) -> None:
    build_history(store, turns=turns)
    result = store.gc(GcPolicy(keep_days=30))
    assert result.removed_turns == [] and store.fsck().ok


class _Stop(Exception):
    pass


def test_gc_keeps_what_an_interrupted_rewind_needs_to_finish(store: Store, root: Path) -> None:
    ids, before = _recorded_history(store, 5)

    def stop(point: str) -> None:
        if point == "journal.journaled":
            raise _Stop(point)

    faults.install(stop)
    try:
        with pytest.raises(_Stop):
            store.rewind(ids[2])  # journaled, then interrupted before any file is written
    finally:
        faults.install(None)
    assert store.unfinished_operations()
    store.gc(GcPolicy(keep_days=0, keep_turns=0))
    assert store.fsck().ok
    store.resume()
    assert snapshot(root, dirs=True) == before[ids[2]]
    assert store.status().head == ids[1]
    store.undo()
    assert store.fsck().ok
