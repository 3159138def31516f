"""Watch mode: a daemon that knows what changed, so that a scan looks only there.

A :class:`Watcher` keeps a watchdog observer on the workspace and the set of
paths its events name (dirty paths). It records them through the same store
as scan mode, debounced per path (source ``watch``), which turns the cost of a
scan into the cost of what changed.

Coverage loss is never silent. The kernel drops events when the inotify queue
overflows, and a folder can stay unwatched when the watch limit is reached.
The watcher hooks watchdog's logger to hear of an overflow, and compares the
folders the kernel watches (``/proc/self/fdinfo``) with the folders a scan
visits. After an overflow it scans the whole workspace; a folder left
unwatched is scanned in full at every flush. Both are reported. Where inotify
watches folder by folder but ``/proc`` cannot be read, the count is unknown, and
the watcher says so once instead of guessing; watchdog's other backends (FSEvents
on macOS, ReadDirectoryChangesW on Windows) watch a tree as a whole and have no
such limit to check.

Other processes reach a running watcher through the store folder, not a
socket (snapstore.ops.watchlink, which scans and hooks load without this module):
the watcher answers each request file with the dirty paths recorded into the
caller's session.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..core.db import DIR_MODE, FILE_MODE
from ..core.errors import SnapstoreError, WatcherRunning
from ..core.records import WATCH
from ..core.repo import Repo
from .ignore import IGNORE_FILES, IgnoreRules
from .scan import DEFAULT_MAX_FILE_SIZE, Progress, ScanMemo, normalize_scopes, scan
from .scanrecord import ScanResult
from .shell import WindowAction, open_windows
from .watchlink import LOCK_NAME, REQUEST_DIR, watcher_info, write_json

DEFAULT_DEBOUNCE = 0.2
#: How often folders that cannot be watched are scanned even when nothing else changed.
POLL_UNWATCHED = 2.0
_IDLE_WAIT = 0.2


@dataclass
class WatchReport:
    """Something the watcher did or noticed, for the caller to show."""

    kind: Literal["started", "recorded", "fallback", "coverage", "answered", "error", "stopped"]
    message: str
    result: ScanResult | None = None


Report = Callable[[WatchReport], None]


# -- coverage ------------------------------------------------------------------------


#: Where Linux describes this process's descriptors (an inotify one lists its watches).
PROC = "/proc"


def watched_inodes() -> set[int] | None:
    """Inodes of everything this process's inotify instances watch; None if unknowable
    (no ``/proc``, or no inotify instance: another backend, or none started)."""
    try:
        fds = os.listdir(f"{PROC}/self/fd")
    except OSError:
        return None
    inodes: set[int] = set()
    found = False
    for fd in fds:
        try:
            if os.readlink(f"{PROC}/self/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"{PROC}/self/fdinfo/{fd}", encoding="ascii") as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue
        found = True
        for line in lines:
            if line.startswith("inotify wd:"):
                fields = dict(part.split(":", 1) for part in line.split()[1:] if ":" in part)
                inodes.add(int(fields["ino"], 16))
    return inodes if found else None


class _LogHook(logging.Handler):
    """Hears watchdog's warnings: an overflowed queue, a rebuild that failed."""

    def __init__(self, watcher: Watcher):
        super().__init__(logging.WARNING)
        self.watcher = watcher

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "overflow" in message.lower():
            self.watcher.lost("the inotify queue overflowed and events were lost")
        elif record.levelno >= logging.ERROR:
            self.watcher.lost(f"watchdog reported: {message}")


# -- the daemon ----------------------------------------------------------------------


class Watcher:
    """Watches one workspace and records its changes through the store.

    Use :meth:`start`, then call :meth:`step` in a loop (or :meth:`run`), then
    :meth:`stop`. Store work happens only in the thread that calls those;
    watchdog's threads only mark paths dirty.
    """

    def __init__(
        self,
        repo: Repo,
        *,
        debounce: float = DEFAULT_DEBOUNCE,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        report: Report | None = None,
    ):
        self.repo = repo
        self.root = repo.root
        self.debounce = debounce
        self.max_file_size = max_file_size
        self.report = report or (lambda _report: None)
        self.store_rel = repo.ws.store_rel
        self.requests_dir = os.path.join(repo.store_dir, REQUEST_DIR)
        self._cond = threading.Condition()
        self._dirty: dict[str, float] = {}
        self._requests: set[str] = set()
        self._lost: str | None = None
        self._dirs: dict[str, int] = {}
        self._rules: IgnoreRules | None = None  # kept between flushes until one changes
        self._memo = ScanMemo()  # the scan state, decoded again only once it changed
        self.unwatched: set[str] = set()
        #: Whether the kernel's watches could not be counted (said once).
        self.uncounted = False
        self._polled = 0.0
        self._observer: Any = None
        self._lock_fd: int | None = None
        self._log_hook = _LogHook(self)
        self.recorded = 0
        self.fallbacks = 0

    # -- life cycle --

    def start(self, progress: Progress | None = None) -> ScanResult:
        """Lock, start watching, then scan the whole workspace once (the baseline if new).

        The lock says ``sync`` only once the kernel's watches are in place: a request
        written before then would never be seen, and its asker would wait out its
        timeout for an answer that cannot come (it scans for itself instead)."""
        self._lock()
        try:
            os.makedirs(self.requests_dir, DIR_MODE, exist_ok=True)
            for name in os.listdir(self.requests_dir):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.requests_dir, name))  # left by a crash
            watchdog_log = logging.getLogger("watchdog")
            watchdog_log.addHandler(self._log_hook)
            if watchdog_log.getEffectiveLevel() > logging.WARNING:
                watchdog_log.setLevel(logging.WARNING)
            from watchdog.observers import Observer

            self._observer = Observer()
            _watch(self._observer, self)
            self._observer.start()  # the watches are added before this returns
            self._write_info(sync=self.store_rel is not None)
            result = self._full_scan(progress)
        except BaseException:
            self.stop(flush=False)
            raise
        self.report(WatchReport("started", f"watching {self.root}", result))
        return result

    def _lock(self) -> None:
        path = os.path.join(self.repo.store_dir, LOCK_NAME)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = (watcher_info(self.repo.store_dir) or {}).get("pid")
            raise WatcherRunning(
                f"a watcher is already running for this store (pid {pid or '?'})",
                pid=pid,
                what="the watcher lock",
                timeout=0,
            ) from None
        self._lock_fd = fd
        self._write_info(sync=False)

    def _write_info(self, sync: bool) -> None:
        """What others read from the lock (watchlink.watcher_info), written over what was
        there and padded with spaces to its length, so that a reader never finds it empty
        (one that finds it half written reads no ``sync`` and scans for itself)."""
        assert self._lock_fd is not None
        info = json.dumps({"pid": os.getpid(), "sync": sync, "root": self.root}).encode()
        old = os.fstat(self._lock_fd).st_size
        if old > 4096:  # not a watcher's: what a stale lock held is no length to keep
            os.ftruncate(self._lock_fd, old := 0)
        os.pwrite(self._lock_fd, info.ljust(old), 0)

    def run(self, stop: threading.Event) -> None:
        """Record changes as they come until ``stop`` is set."""
        while not stop.is_set():
            self.step()

    def stop(self, flush: bool = True) -> None:
        """Stop watching; with ``flush``, record what is still pending first."""
        logging.getLogger("watchdog").removeHandler(self._log_hook)  # shutdown noise is no loss
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
            if flush and not open_windows(self.repo):  # else the window's end scans
                with contextlib.suppress(SnapstoreError):
                    self.step(wait=0, everything=True)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
            self.report(WatchReport("stopped", f"stopped watching {self.root}"))

    # -- what watchdog's thread calls --

    def lost(self, reason: str) -> None:
        """Events may be missing: the next step scans the whole workspace."""
        with self._cond:
            self._lost = reason
            self._cond.notify()

    def note(self, path: str, request: bool = False) -> None:
        """Mark an absolute path dirty (or, with ``request``, a request file's nonce)."""
        with self._cond:
            if request:
                self._requests.add(path)
            else:
                self._dirty[path] = time.monotonic()
            self._cond.notify()

    # -- the loop --

    def step(self, wait: float = _IDLE_WAIT, everything: bool = False) -> ScanResult | None:
        """Wait up to ``wait`` seconds for work, then record what is due.

        While an agent's shell call is running (a window is open), the watcher
        records nothing on its own: it cannot tell whose a change is. The scan
        that closes the window asks, and what is dirty is recorded then.
        """
        with self._cond:
            if not (self._lost or self._requests or everything):
                self._cond.wait(self._next_wait(wait))
            if (
                not self._requests
                and (self._lost or self._dirty or self.unwatched)
                and open_windows(self.repo)
            ):
                self._cond.wait(min(wait, _IDLE_WAIT))  # not now: no busy loop either
                return None
            lost, self._lost = self._lost, None
            requests, self._requests = self._requests, set()
            now = time.monotonic()
            take_all = everything or bool(requests) or bool(lost)
            due = {p: t for p, t in self._dirty.items() if take_all or now - t >= self.debounce}
        poll = bool(self.unwatched) and now - self._polled >= POLL_UNWATCHED
        session, actions = self._asked(requests)
        result = None
        try:
            if lost:
                self.fallbacks += 1
                self.report(WatchReport("fallback", f"{lost}; scanning the whole workspace"))
                self._await_rebuild()
                result = self._full_scan(session=session, actions=actions)
            elif due or requests or poll:
                result = self._flush(list(due), session, actions)
        except SnapstoreError as exc:
            self.report(WatchReport("error", f"could not record changes: {exc}"))
            if lost:
                self.lost(lost)  # the full scan is still owed
            self._answer(requests, None)
            return None
        with self._cond:
            for path, seen in due.items():
                if self._dirty.get(path) == seen:
                    del self._dirty[path]
        if result is not None and result.count:
            self.recorded += result.count
            self.report(WatchReport("recorded", _summary(result), result))
        self._answer(requests, result)
        return result

    def _next_wait(self, wait: float) -> float:
        if not self._dirty:
            return wait
        oldest = min(self._dirty.values())
        return max(0.0, min(wait, oldest + self.debounce - time.monotonic()))

    def _asked(self, requests: set[str]) -> tuple[str | None, list[WindowAction]]:
        """The session named by a request (the hook that asked), if any, and the window
        actions of every request."""
        session, actions = None, []
        for nonce in sorted(requests):
            try:
                with open(os.path.join(self.requests_dir, f"req-{nonce}"), "rb") as handle:
                    request = json.load(handle)
            except (OSError, ValueError):
                continue
            if not isinstance(request, dict):
                continue
            if session is None and isinstance(request.get("session"), str):
                session = request["session"]
            for raw in request.get("window") or ():
                action = WindowAction.from_json(raw)
                if action is not None:
                    actions.append(action)
        return session, actions

    def _flush(
        self, paths: list[str], session: str | None, actions: Sequence[WindowAction] = ()
    ) -> ScanResult:
        self._polled = time.monotonic() if self.unwatched else self._polled
        rels = [r for r in (self._rel(p) for p in paths) if r]
        if self._rules is None or any(r.rpartition("/")[2] in IGNORE_FILES for r in rels):
            self._rules = IgnoreRules(self.root, self.store_rel)
        scopes = normalize_scopes(rels + sorted(self.unwatched))
        dirs: dict[str, int] = {}
        result = scan(
            self.repo,
            session,
            scopes,
            max_file_size=self.max_file_size,
            source=WATCH,
            dirs=dirs,
            rules=self._rules,
            window=actions,
            memo=self._memo,
        )
        if dirs:
            self._dirs.update(dirs)
            self.check_coverage(dirs)
        return result

    def _full_scan(
        self,
        progress: Progress | None = None,
        session: str | None = None,
        actions: Sequence[WindowAction] = (),
    ) -> ScanResult:
        dirs: dict[str, int] = {}
        result = scan(
            self.repo,
            session,
            None,
            max_file_size=self.max_file_size,
            source=WATCH,
            dirs=dirs,
            progress=progress,
            window=actions,
            memo=self._memo,
        )
        self._dirs = dirs
        self.unwatched.clear()
        self.check_coverage(dirs, root=True)
        return result

    def _await_rebuild(self, timeout: float = 2.0) -> None:
        """After an overflow watchdog re-adds every watch; scan only once it has."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            watched = watched_inodes()
            if watched is None or all(ino in watched for ino in self._dirs.values()):
                return
            time.sleep(0.01)

    def check_coverage(self, dirs: dict[str, int] | None = None, root: bool = False) -> list[str]:
        """Compare the folders the kernel watches with ``dirs`` (default: all known ones).

        Folders found unwatched are reported and scanned in full at every flush.
        """
        watched = watched_inodes()
        if watched is None:
            per_folder = type(self._observer).__name__.startswith("Inotify")
            if per_folder and not self.uncounted:
                self.uncounted = True
                self.report(
                    WatchReport(
                        "coverage",
                        "cannot count the folders inotify watches here (no /proc/self/fdinfo):"
                        " a folder left unwatched at the watch limit "
                        "(fs.inotify.max_user_watches) would go unnoticed until a full scan",
                    )
                )
            return []
        dirs = self._dirs if dirs is None else dirs
        missing = [rel for rel, ino in dirs.items() if ino not in watched]
        if root and os.stat(self.root).st_ino not in watched:
            missing.append("")
        fresh = [rel for rel in missing if rel not in self.unwatched]
        if fresh:
            self.unwatched.update(missing)
            shown = ", ".join(rel or "." for rel in sorted(fresh)[:5])
            self.report(
                WatchReport(
                    "coverage",
                    f"{len(fresh)} folder(s) are not watched ({shown}); the inotify "
                    "watch limit (fs.inotify.max_user_watches) may be reached. They are scanned "
                    "in full at every flush",
                )
            )
        return missing

    def _answer(self, requests: set[str], result: ScanResult | None) -> None:
        for nonce in requests:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.requests_dir, f"req-{nonce}"))
            data = result.to_json() if result is not None else {"error": "not recorded"}
            with contextlib.suppress(OSError):
                write_json(os.path.join(self.requests_dir, f"res-{nonce}"), data)
        if requests:
            self.report(WatchReport("answered", f"answered {len(requests)} request(s)", result))

    def _rel(self, path: str) -> str | None:
        if not path.startswith(self.root + os.sep):
            return None
        return path[len(self.root) + 1 :].replace(os.sep, "/")

    def classify(self, path: str) -> tuple[str, str] | None:
        """("dirty", path), ("request", nonce), or None for paths never scanned.

        A request file counts once it is closed, complete.
        """
        rel = self._rel(path)
        if rel is None:
            return None
        if self.store_rel is not None and (
            rel == self.store_rel or rel.startswith(self.store_rel + "/")
        ):
            folder, _, name = rel.rpartition("/")
            if folder == f"{self.store_rel}/{REQUEST_DIR}" and name.startswith("req-"):
                return "request", name[4:]
            return None
        if "/.git/" in f"/{rel}/" or self.repo.ws.store_of(rel) is not None:
            return None  # a repository's own folder, or another store nested here
        return "dirty", path


def _summary(result: ScanResult) -> str:
    where = f"user turn {result.turn}" if result.user else f"turn {result.turn}"
    return (
        f"{len(result.changed)} changed, {len(result.added)} added, "
        f"{len(result.deleted)} deleted -> {where}"
    )


def _watch(observer: Any, watcher: Watcher) -> None:
    """Schedule the recursive watch, asking the kernel only for events that change files."""
    from watchdog import events as ev

    wanted = [
        ev.FileCreatedEvent,
        ev.DirCreatedEvent,
        ev.FileDeletedEvent,
        ev.DirDeletedEvent,
        ev.FileMovedEvent,
        ev.DirMovedEvent,
        ev.FileModifiedEvent,
        ev.FileClosedEvent,
    ]

    class Handler(ev.FileSystemEventHandler):
        """Turns watchdog events into dirty paths; never touches the store."""

        def __init__(self, watcher: Watcher):
            super().__init__()
            self.watcher = watcher

        def on_any_event(self, event: Any) -> None:
            for raw in (event.src_path, getattr(event, "dest_path", "")):
                kind = self.watcher.classify(os.fsdecode(raw)) if raw else None
                if kind is None:
                    continue
                if kind[0] == "request":
                    if event.event_type == "closed":
                        self.watcher.note(kind[1], request=True)
                else:
                    self.watcher.note(kind[1])

    observer.schedule(Handler(watcher), watcher.root, recursive=True, event_filter=wanted)
