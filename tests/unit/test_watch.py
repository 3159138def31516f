"""Watch mode: a burst of changes, a lost queue, an unwatched folder, and the daemon's life."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from snapstore import Store
from snapstore.ops.shell import CLOSE, WindowAction
from snapstore.ops.watch import WatchReport
from snapstore.ops.watchlink import ask_watcher

from ..support import changes_of, snapshot, wait_until, write


class Running:
    """A watcher whose loop runs in a thread, as the daemon runs it."""

    def __init__(self, store: Store):
        self.reports: list[WatchReport] = []
        self.watcher = store.watcher(debounce=0.05, report=self.reports.append)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.watcher.run, args=(self.stop,))

    def kinds(self) -> list[str]:
        return [r.kind for r in self.reports]


@pytest.fixture
def running(store: Store) -> Iterator[Running]:
    run = Running(store)
    run.watcher.start()
    run.thread.start()
    yield run
    run.stop.set()
    run.thread.join()
    run.watcher.stop()


def test_a_burst_of_1000_changes_is_recorded_and_rewound(store: Store, root: Path) -> None:
    for i in range(700):
        write(root, f"d{i % 10}/f{i}.txt", f"file {i}\n")
    run = Running(store)
    run.watcher.start()
    run.thread.start()
    try:
        before = snapshot(root, dirs=True)
        turn = store.begin_turn("s", "a burst", scan=True)
        store.shell_begin("s")
        for i in range(400):  # create
            write(root, f"new/n{i % 7}/c{i}.txt", f"created {i}\n")
        for i in range(300):  # modify
            write(root, f"d{i % 10}/f{i}.txt", f"modified {i}\n")
        for i in range(300, 500):  # delete
            (root / f"d{i % 10}/f{i}.txt").unlink()
        for i in range(500, 600):  # rename
            os.rename(root / f"d{i % 10}/f{i}.txt", root / f"d{i % 10}/moved{i}.txt")
        store.shell_end("s")
        store.end_turn("s", scan=True)
        recorded = changes_of(store, turn.id)
        assert len(recorded) == 400 + 300 + 200 + 200
        assert set(recorded.values()) == {"watch"}
        assert run.watcher.fallbacks == 0
        result = store.rewind(1, "s")
        assert result.ok, result
        assert snapshot(root, dirs=True) == before
    finally:
        run.stop.set()
        run.thread.join()
        run.watcher.stop()


def test_changes_between_turns_are_recorded_as_the_users(
    running: Running, store: Store, root: Path
) -> None:
    write(root, "mine.txt", "typed by the user\n")
    wait_until(lambda: running.watcher.recorded >= 1)  # debounced, with nobody asking
    with store.repo.read() as v:
        turns = list(v.turns())
    assert [t.kind for t in turns] == ["user"]
    assert changes_of(store, turns[0].id) == {"mine.txt": "watch"}


def test_a_change_to_the_roots_ignore_file_is_recorded_and_hides_what_it_names(
    running: Running, store: Store, root: Path
) -> None:
    """The root's ``.gitignore`` widens the watcher's scope to the whole workspace: its
    flush is a full scan (a scope of the root once failed on the store's empty key)."""
    write(root, "scratch.tmp", "scratch\n")
    wait_until(lambda: running.watcher.recorded >= 1)
    write(root, ".gitignore", "*.tmp\n")
    wait_until(lambda: running.watcher.recorded >= 2)
    assert "error" not in running.kinds()
    with store.repo.read() as v:
        assert v.index_entry(b".gitignore") is not None
        assert v.index_entry(b"scratch.tmp") is None  # ignored now: forgotten, not deleted


def test_a_queue_overflow_falls_back_to_a_full_scan(
    running: Running, store: Store, root: Path, monkeypatch
) -> None:
    from watchdog.observers.inotify_c import InotifyConstants, InotifyEvent, InotifyFD

    watcher = running.watcher
    note = watcher.note
    monkeypatch.setattr(
        watcher,
        "note",
        lambda path, request=False: (  # the kernel drops events
            note(path, request) if request else None
        ),
    )
    turn = store.begin_turn("s", "lossy")
    store.shell_begin("s")
    for i in range(200):
        write(root, f"lost/f{i}.txt", f"{i}\n")
    monkeypatch.setattr(watcher, "note", note)
    InotifyFD.get_instance().handle_event(  # what the kernel sends when its queue overflows
        InotifyEvent(-1, InotifyConstants.IN_Q_OVERFLOW, 0, b"")
    )
    closing = [WindowAction(CLOSE, "s")]
    assert ask_watcher(store.repo, "s", window=closing) is not None  # all up to now, recorded
    assert watcher.fallbacks == 1 and "fallback" in running.kinds()
    store.end_turn("s")
    assert changes_of(store, turn.id) == {f"lost/f{i}.txt": "watch" for i in range(200)}


def _inotify_watch_of(inode: int) -> tuple[int, int]:
    """(inotify fd, watch descriptor) of the watch on ``inode`` in this process."""
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            lines = Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            if line.startswith("inotify wd:"):
                fields = dict(p.split(":", 1) for p in line.split()[1:] if ":" in p)
                if int(fields["ino"], 16) == inode:
                    return int(fd), int(fields["wd"], 16)
    raise AssertionError(f"no inotify watch on inode {inode}")


def test_an_unwatched_folder_is_reported_and_scanned_in_full(store: Store, root: Path) -> None:
    from watchdog.observers.inotify_c import inotify_rm_watch

    write(root, "sub/deeper/a.txt", "a\n")
    write(root, "top.txt", "top\n")
    run = Running(store)
    run.watcher.start()
    try:
        assert run.watcher.check_coverage() == []
        fd, wd = _inotify_watch_of(os.stat(root / "sub/deeper").st_ino)
        inotify_rm_watch(fd, wd)  # as if the watch limit had been reached for this folder
        assert run.watcher.check_coverage() == ["sub/deeper"]
        assert "coverage" in run.kinds()
        run.thread.start()
        turn = store.begin_turn("s", "edit the unwatched folder", scan=True)
        store.shell_begin("s")
        write(root, "sub/deeper/a.txt", "changed where no event comes from\n")
        store.shell_end("s")
        store.end_turn("s", scan=True)
        assert changes_of(store, turn.id) == {"sub/deeper/a.txt": "watch"}
    finally:
        run.stop.set()
        if run.thread.is_alive():
            run.thread.join()
        run.watcher.stop()


def test_a_second_watcher_is_refused(running: Running, store: Store) -> None:
    from snapstore import StoreLocked

    with pytest.raises(StoreLocked, match="already running"):
        store.watcher().start()


def test_the_watcher_says_sync_only_once_its_watches_are_in_place(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request written before the kernel watches the request folder would never be seen:
    its asker would wait out its whole timeout. Until the watches are in place the lock
    names the watcher's pid but no ``sync``, so an asker scans for itself at once."""
    from watchdog.observers import Observer

    from snapstore.ops.watchlink import watcher_info

    seen: list[dict | None] = []
    start = Observer.start

    def observed(self: Observer) -> None:
        seen.append(watcher_info(store.store_dir))
        start(self)

    monkeypatch.setattr(Observer, "start", observed)
    run = Running(store)
    run.watcher.start()
    try:
        assert seen == [{"pid": os.getpid(), "sync": False, "root": store.root}]
        assert watcher_info(store.store_dir) == {
            "pid": os.getpid(),
            "sync": True,
            "root": store.root,
        }
    finally:
        run.watcher.stop()
    assert watcher_info(store.store_dir) is None


def test_a_folder_the_user_made_while_watched_stays_when_the_agents_file_in_it_is_rewound(
    store: Store, root: Path, running: Running
) -> None:
    """The watcher's scans are scoped: the folder it met joins the scan state, so the
    agent's shell call that made the folder's first file did not bring the folder, and
    the rewind of that file keeps it (it removed the user's folder before)."""
    (root / "kept").mkdir()
    assert not store.scan(session="s").full  # the watcher's answer: a scoped scan met it
    store.begin_turn("s", "add a file", scan=True)
    store.shell_begin("s", "call-1")
    write(root, "kept/new.txt", "new\n")
    store.shell_end("s", "call-1")
    store.end_turn("s", scan=True)
    assert store.rewind(1, "s").ok
    assert (root / "kept").is_dir() and not (root / "kept" / "new.txt").exists()
