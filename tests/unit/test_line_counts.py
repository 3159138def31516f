"""Line counts are made once and kept: log and show never diff the same pair twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from snapstore import Store
from snapstore.ops import history
from snapstore.ops.gc import GcPolicy

from ..support import Clock, agent_turn, write
from ..support.locking import lock_held_elsewhere


def _kept(store: Store) -> set[bytes]:
    with store.repo.read() as v:
        return set(v.counted())


def test_log_counts_once_then_reads_what_it_kept(
    store: Store, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = "".join(f"line {n}\n" for n in range(3000))
    write(root, "big.py", old)
    new = "".join(f"LINE {n}\n" if n % 3 == 0 else f"line {n}\n" for n in range(3000))
    agent_turn(store, "rewrite", {"big.py": new, "small.txt": "added\n"})
    assert _kept(store) == set()
    first = store.rewind_points()
    assert (first[0].added, first[0].removed) == (1000 + 1, 1000)
    assert len(_kept(store)) == 1  # the modified file's pair (an added file costs no diff)

    def no_diff(*_: object) -> tuple[int, int]:
        raise AssertionError("a kept count was computed again")

    monkeypatch.setattr(history, "line_stats", no_diff)
    again = store.rewind_points()
    assert [(f.path, f.added, f.removed) for f in again[0].files] == [
        (f.path, f.added, f.removed) for f in first[0].files
    ]
    assert [(f.added, f.removed) for f in store.show(1).files] == [(1000, 1000), (1, 0)]


def test_a_busy_store_is_read_all_the_same(store: Store, root: Path) -> None:
    write(root, "f.txt", "a\nb\n")
    agent_turn(store, "t", {"f.txt": "a\nB\n"})
    with lock_held_elsewhere(store.store_dir):  # the count is not kept, nor waited for
        assert store.rewind_points()[0].added == 1
    assert _kept(store) == set()
    store.rewind_points()
    assert len(_kept(store)) == 1


def test_gc_forgets_counts_whose_versions_it_dropped(root: Path, clock: Clock) -> None:
    with Store.init(root, clock=clock) as store:
        write(root, "f.txt", "v0\nx\n")
        for n in range(1, 4):
            agent_turn(store, f"t{n}", {"f.txt": f"v{n}\nx\n"})
            clock.tick(3600)
        store.rewind_points()
        assert len(_kept(store)) == 3
        store.gc(GcPolicy(keep_days=None, keep_turns=1))
        assert len(_kept(store)) == 1  # only the kept turn's pair is still in the store
        assert store.rewind_points()[0].added == 1
