"""Every Linux-only call has a fallback, and each fallback does the right thing.

Each test takes one call away, as a platform without it would (docs/design.md,
"Platforms"): libc without ``syncfs`` (a rewind's flush then syncs each file and folder,
the folders its writes made included), no ``/proc`` (a rewind then checks each held
folder level by level; the watcher says it cannot count its watches, and still records),
and libc without ``prctl`` (the daemon's watcher then watches its parent itself and
stops once the daemon is killed).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.core import folders, fsio
from snapstore.core.fsio import FSYNC_EACH
from snapstore.ops import watch

from ..support import agent_write, hermetic_env, snapshot, wait_until, write


class Synced:
    """Every ``os.fsync``, by the (st_dev, st_ino) of what it synced."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.ids: set[tuple[int, int]] = set()
        real = os.fsync

        def fsync(fd: int) -> None:
            st = os.fstat(fd)
            self.ids.add((st.st_dev, st.st_ino))
            real(fd)

        monkeypatch.setattr(os, "fsync", fsync)

    def has(self, path: Path) -> bool:
        st = os.lstat(path)
        return (st.st_dev, st.st_ino) in self.ids


@pytest.fixture
def no_syncfs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A libc without ``syncfs``, as on macOS."""
    monkeypatch.setattr(ctypes, "CDLL", lambda *a, **k: types.SimpleNamespace())
    fsio._syncfs.cache_clear()
    assert fsio._syncfs() is None
    yield
    monkeypatch.undo()
    fsio._syncfs.cache_clear()


@pytest.fixture
def no_proc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ``/proc``, as on macOS (or a Linux container without it)."""
    missing = tmp_path / "no-proc"
    monkeypatch.setattr(folders, "FD_PATHS", str(missing / "self/fd"))
    monkeypatch.setattr(watch, "PROC", str(missing))


def rewound_turn(store: Store, root: Path) -> dict[str, tuple[str, bytes, int]]:
    """A turn that edits files in several folders, deletes a folder tree, and makes one;
    its rewind has more than FSYNC_EACH paths to write, folders to make again and
    folders to remove. The tree from before the turn."""
    for n in range(FSYNC_EACH + 3):
        write(root, f"src/m{n % 3}/f{n}.txt", f"one {n}\n")
    write(root, "gone/deep/x.txt", "deleted with its folders\n")
    write(root, "top.txt", "top\n")
    before = snapshot(root, dirs=True)
    store.begin_turn("default", "everything")
    for n in range(FSYNC_EACH + 3):
        agent_write(store, f"src/m{n % 3}/f{n}.txt", f"two {n}\n")
    agent_write(store, "gone/deep/x.txt", None)
    os.rmdir(root / "gone/deep")
    os.rmdir(root / "gone")
    agent_write(store, "new/sub/y.txt", "made by the turn\n")
    store.end_turn("default")
    return before


def test_without_syncfs_a_rewind_syncs_each_file_each_folder_and_the_folders_it_made(
    store: Store, root: Path, monkeypatch: pytest.MonkeyPatch, no_syncfs: None
) -> None:
    before = rewound_turn(store, root)
    synced = Synced(monkeypatch)
    result = store.rewind(1)
    assert result.ok, result
    assert snapshot(root, dirs=True) == before
    written = [root / rel for rel in result.restored]
    assert len(written) > FSYNC_EACH  # past where a flush would use syncfs
    missing = [p for p in written if not synced.has(p)]
    assert not missing, missing  # every file's data
    folders_of = {p.parent for p in written} | {root}  # each folder holding a write, a delete
    assert [f for f in folders_of if not synced.has(f)] == []
    # gone/ and gone/deep/ were made again: their entries in the root and in gone/ too
    assert synced.has(root) and synced.has(root / "gone") and synced.has(root / "gone/deep")


def test_without_syncfs_a_folder_made_alone_is_synced_in_its_parents(
    root: Path, monkeypatch: pytest.MonkeyPatch, no_syncfs: None
) -> None:
    ws = fsio.Workspace(root)
    (root / "a").mkdir()
    synced = Synced(monkeypatch)
    assert ws.make_folder("a/b/c")
    assert synced.has(root / "a") and synced.has(root / "a/b")  # where b and c were made
    assert not synced.has(root)  # nothing changed there


def test_with_syncfs_a_big_flush_is_one_call(
    store: Store, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side: where libc has it, the same rewind syncs its file system once."""
    calls: list[int] = []
    real = fsio._syncfs()
    assert real is not None, "this Linux's libc has syncfs"
    monkeypatch.setattr(fsio, "_syncfs", lambda: lambda fd: calls.append(fd) or real(fd))
    before = rewound_turn(store, root)
    assert store.rewind(1).ok
    assert snapshot(root, dirs=True) == before and len(calls) == 1


def test_without_proc_a_rewind_and_its_undo_still_write_exactly(
    store: Store, root: Path, no_proc: None
) -> None:
    """Each held folder is checked level by level instead of by one readlink."""
    before = rewound_turn(store, root)
    after = snapshot(root, dirs=True)
    assert store.rewind(1).ok
    assert snapshot(root, dirs=True) == before
    assert store.undo().ok
    assert snapshot(root, dirs=True) == after


def test_without_proc_the_watcher_says_it_cannot_count_its_watches_and_still_records(
    store: Store, root: Path, no_proc: None
) -> None:
    assert watch.watched_inodes() is None
    reports: list[watch.WatchReport] = []
    watcher = store.watcher(debounce=0.05, report=reports.append)
    watcher.start()
    try:
        assert watcher.check_coverage() == [] and watcher.check_coverage() == []
        said = [r.message for r in reports if r.kind == "coverage"]
        assert len(said) == 1 and "cannot count the folders inotify watches" in said[0]
        write(root, "typed.txt", "by the user\n")
        wait_until(lambda: (watcher.step(wait=0.05), watcher.recorded)[1] >= 1)
    finally:
        watcher.stop()
    with store.repo.read() as v:
        recorded = [c.path for t in v.turns() for c in v.changes(t.id)]
    assert recorded == ["typed.txt"]


def test_with_proc_the_watcher_counts_the_folders_it_watches(store: Store, root: Path) -> None:
    """The other side: the kernel's own count, which the watcher compares with a scan's."""
    (root / "sub").mkdir()
    watcher = store.watcher(debounce=0.05)
    watcher.start()
    try:
        watched = watch.watched_inodes()
        assert watched is not None
        assert {os.stat(root).st_ino, os.stat(root / "sub").st_ino} <= watched
    finally:
        watcher.stop()


STAND_IN = """
import ctypes, sys, time, types
from snapstore_cli.doors import daemon
ctypes.CDLL = lambda *a, **k: types.SimpleNamespace()  # a libc without prctl
assert daemon._die_with_parent() is None
child = daemon._spawn_watcher(sys.argv[1])
print(child.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie that init has not reaped yet does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_without_prctl_the_daemons_watcher_ends_when_the_daemon_is_killed(
    store: Store, root: Path
) -> None:
    """A stand-in daemon (the real spawn, in a process whose libc lacks prctl) starts the
    watcher and is killed with SIGKILL: the watcher notices its parent is gone, stops and
    lets go of its lock."""
    from snapstore.ops.watchlink import watcher_info

    store.close()
    daemon = subprocess.Popen(
        [sys.executable, "-c", STAND_IN, str(root)],
        stdout=subprocess.PIPE,
        env=hermetic_env(),
        cwd=root,
    )
    assert daemon.stdout is not None
    child = int(daemon.stdout.readline())
    try:
        wait_until(lambda: (watcher_info(str(root / ".snapstore")) or {}).get("pid") == child, 60)
        with open(f"/proc/{child}/cmdline", "rb") as handle:
            assert b"snapstore-orphan-guard" in handle.read()  # the guard runs the watcher
        os.kill(daemon.pid, signal.SIGKILL)
        daemon.wait()
        wait_until(lambda: not _alive(child), timeout=30)
        assert watcher_info(str(root / ".snapstore")) is None  # its lock was let go
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
