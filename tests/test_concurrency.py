"""Several processes on one store: nothing lost, and map growth is seen by everyone."""

from __future__ import annotations

import multiprocessing as mp
import os
from pathlib import Path

from snapstore import Store

CTX = mp.get_context("spawn")  # never share an LMDB environment across fork()


def _capture_many(root: str, session: str, count: int, start: mp.Event) -> None:
    with Store.open(root, lock_timeout=60) as store:
        start.wait()
        store.begin_turn(session, f"{session} works")
        for i in range(count):
            rel = f"{session}/file{i}.txt"
            store.pre_write([rel], "Write", session)
            path = Path(root, rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{session} {i}\n")
            store.post_write([rel], session)
        store.end_turn(session)


def test_concurrent_pre_writes_lose_nothing(root: Path) -> None:
    Store.init(root).close()
    start = CTX.Event()
    workers = [CTX.Process(target=_capture_many, args=(str(root), f"s{n}", 40, start))
               for n in range(3)]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    with Store.open(root) as store:
        for n in range(3):
            (point,) = store.rewind_points(f"s{n}")
            assert sorted(f.path for f in point.files) == sorted(
                f"s{n}/file{i}.txt" for i in range(40))
            assert all(f.status == "added" for f in point.files)


def _grow(root: str, ready: mp.Event, go: mp.Event, done: mp.Event) -> None:
    with Store.open(root, map_size=1 << 20) as store:
        ready.set()
        go.wait()
        store.begin_turn("grower", "fill the map")
        for i in range(12):
            rel = f"big{i}.bin"
            store.pre_write([rel], "Write", "grower")
            Path(root, rel).write_bytes(os.urandom(512 * 1024))  # incompressible
            store.post_write([rel], "grower")
        store.end_turn("grower")
        done.set()


def test_growing_the_map_in_one_process_does_not_break_another(root: Path) -> None:
    Store.init(root, map_size=1 << 20).close()
    ready, go, done = CTX.Event(), CTX.Event(), CTX.Event()
    with Store.open(root, map_size=1 << 20) as store:
        Path(root, "mine.txt").write_text("before the other process grew the map\n")
        store.pre_write(["mine.txt"], "Write", "mine")  # map in use here, at 1 MiB
        grower = CTX.Process(target=_grow, args=(str(root), ready, go, done))
        grower.start()
        assert ready.wait(60)
        go.set()
        assert done.wait(120)
        grower.join(60)
        assert grower.exitcode == 0
        assert store.db.env.info()["map_size"] == 1 << 20  # still the old size here
        Path(root, "mine.txt").write_text("after\n")
        store.post_write(["mine.txt"], "mine")  # must adopt the grown map and commit
        store.end_turn("mine")
        assert store.status().blobs >= 13
        assert store.db.env.info()["map_size"] > 1 << 20
    with Store.open(root) as fresh:
        assert len(fresh.rewind_points("grower")[0].files) == 12
        assert fresh.rewind_points("mine")[0].files[0].status == "modified"
