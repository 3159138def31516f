"""Several processes on one store: nothing lost, and map growth is seen by everyone."""

from __future__ import annotations

import multiprocessing as mp
import os
from pathlib import Path

from snapstore import Store
from snapstore.core import blobs

from ..support import agent_turn, read, write
from ..support.rawdb import database

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
    workers = [
        CTX.Process(target=_capture_many, args=(str(root), f"s{n}", 40, start)) for n in range(3)
    ]
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
                f"s{n}/file{i}.txt" for i in range(40)
            )
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
        assert database(store).env.info()["map_size"] == 1 << 20  # still the old size here
        Path(root, "mine.txt").write_text("after\n")
        store.post_write(["mine.txt"], "mine")  # must adopt the grown map and commit
        store.end_turn("mine")
        assert store.status().blobs >= 13
        assert database(store).env.info()["map_size"] > 1 << 20
    with Store.open(root) as fresh:
        assert len(fresh.rewind_points("grower")[0].files) == 12
        assert fresh.rewind_points("mine")[0].files[0].status == "modified"


CALLS = 200


SHARED = 3


def _put_atomically(path: Path, data: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(data)
    os.replace(tmp, path)


def _tool_calls(root: str, locks: str, session: str, start: mp.Event) -> None:
    """One agent's tool calls: pre-write, write, post-write; a new turn every 50 calls.

    A shared file is written by one tool call at a time (its tool layer holds a lock
    around the write); the store sees all eight processes at once.
    """
    import fcntl

    with Store.open(root, lock_timeout=120) as store:
        start.wait()
        for i in range(CALLS):
            if i % 50 == 0:
                if i:
                    store.end_turn(session)
                store.begin_turn(session, f"{session} part {i // 50}")
            shared = i % 4 == 3
            rel = f"shared{i % SHARED}.txt" if shared else f"{session}/f{i % 20}.txt"
            with open(os.path.join(locks, rel.replace("/", "_")), "a") as lock:
                if shared:
                    fcntl.flock(lock, fcntl.LOCK_EX)
                store.pre_write([rel], "Write", session)
                _put_atomically(Path(root, rel), f"{session} call {i}\n")
                store.post_write([rel], session)
        store.end_turn(session)


def test_eight_agents_calling_tools_in_parallel_lose_nothing(root: Path, tmp_path: Path) -> None:
    Store.init(root).close()
    locks = tmp_path / "locks"
    locks.mkdir()
    for n in range(SHARED):
        (root / f"shared{n}.txt").write_text("initial\n")
    sessions = [f"agent{n}" for n in range(8)]
    start = CTX.Event()
    workers = [
        CTX.Process(target=_tool_calls, args=(str(root), str(locks), s, start)) for s in sessions
    ]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(600)
        assert worker.exitcode == 0  # no deadlock, no error
    with Store.open(root) as store:
        assert store.fsck().ok
        by_path: dict[str, list] = {}
        with store.repo.read() as v:
            for session in sessions:
                turns = [t for t in v.turns() if t.session == session]
                assert len(turns) == CALLS // 50 and all(t.state == "closed" for t in turns)
                changes = [c for t in turns for c in v.changes(t.id)]
                assert len(changes) == CALLS  # one change per call, in this session's turns
                for change in changes:
                    written = v.blob(change.after.key)
                    assert written.startswith(f"{session} call ".encode())  # attributed right
                    by_path.setdefault(change.path, []).append(change)
        for n in range(SHARED):  # every shared write is one link in a single unbroken chain
            chain = by_path[f"shared{n}.txt"]
            befores = sorted(c.before.digest for c in chain)
            afters = [c.after.digest for c in chain]
            final = blobs.digest((root / f"shared{n}.txt").read_bytes()).hex()
            initial = blobs.digest(b"initial\n").hex()
            assert afters.count(final) == 1
            assert befores == sorted([initial, *[a for a in afters if a != final]])


def test_rewinding_one_session_keeps_the_other_sessions_later_work(
    store: Store, root: Path
) -> None:
    base = "".join(f"line {n}\n" for n in range(40))
    write(root, "shared.py", base)
    agent_turn(
        store,
        "A edits",
        {"shared.py": base.replace("line 3\n", "A\n"), "a.txt": "A\n"},
        session="A",
    )
    agent_turn(
        store,
        "B edits later",
        {"shared.py": base.replace("line 3\n", "A\n").replace("line 30\n", "B\n"), "b.txt": "B\n"},
        session="B",
    )
    result = store.rewind(1, "A")
    assert result.merged == ["shared.py"] and result.deleted == ["a.txt"]
    assert read(root, "shared.py") == base.replace("line 30\n", "B\n").encode()
    assert read(root, "b.txt") == b"B\n"
    store.undo(session="A")
    assert (
        read(root, "shared.py")
        == base.replace("line 3\n", "A\n").replace("line 30\n", "B\n").encode()
    )


def test_a_rewind_that_would_undo_the_other_sessions_edit_is_a_conflict(
    store: Store, root: Path
) -> None:
    base = "".join(f"line {n}\n" for n in range(40))
    write(root, "shared.py", base)
    agent_turn(store, "A", {"shared.py": base.replace("line 3\n", "A\n")}, session="A")
    b_version = base.replace("line 3\n", "B rewrote A's line\n")
    agent_turn(store, "B", {"shared.py": b_version}, session="B")
    result = store.rewind(1, "A")
    assert [c["path"] for c in result.conflicts] == ["shared.py"]
    assert read(root, "shared.py") == b_version.encode()  # B's edit is never reverted
