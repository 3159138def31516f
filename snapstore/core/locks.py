"""Lock files: the ``flock`` locks that order the processes sharing a store.

A store folder holds two (docs/format.md, locking):

- ``write.lock``: a writer holds it exclusively while its commits must not
  interleave with another process's: one commit, or a whole locked scope
  (:meth:`snapstore.core.repo.Repo.lock`). A store opened read-only holds it
  shared for as long as it is open.
- ``open.lock``: every opener holds it shared; compaction takes it exclusively.

A daemon (the watcher, ``snapstore serve``) holds a lock file of its own and
writes into it what a client needs to reach it (:func:`holder_info`).

``flock`` rather than LMDB's writer mutex alone: it can be waited for with a
timeout, and the kernel releases it when its holder dies, even by SIGKILL.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from typing import Any

from .errors import StoreLocked, StoreReadOnly

WRITE_LOCK = "write.lock"
OPEN_LOCK = "open.lock"
#: What an open or a write that the file system refused says about why.
DENIED = {
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "read-only file system",
}


def flock(path: str, mode: int, timeout: float, what: str, *, create: int | None = None) -> int:
    """Open ``path`` and take an flock on it, polling until ``timeout`` seconds pass.

    ``create`` is the file mode a missing lock file is made with, and a refused
    open is then :class:`StoreReadOnly`; without it an existing file is opened
    without write access (flock needs none). A lock still held by another after
    ``timeout`` is :class:`StoreLocked`, naming ``what``.
    """
    try:
        fd = (
            os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            if create is None
            else os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, create)
        )
    except OSError as exc:
        reason = DENIED.get(exc.errno or 0)
        if reason is None or create is None:
            raise
        raise StoreReadOnly(
            f"the store at {os.path.dirname(path)} is read-only ({reason})", reason=reason
        ) from None
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise StoreLocked(
                    f"the store is busy: {what} still held after {timeout:g}s",
                    what=what,
                    timeout=timeout,
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


def flock_existing(path: str, mode: int, timeout: float, what: str) -> int | None:
    """An flock on an existing lock file opened without write access (None: there is none)."""
    try:
        return flock(path, mode, timeout, what)
    except FileNotFoundError:
        return None


def upgrade(fd: int, timeout: float) -> bool:
    """Turn a shared flock into an exclusive one within ``timeout`` seconds.

    On Linux a failed conversion drops the shared lock; the caller takes it
    again in any case.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                fcntl.flock(fd, fcntl.LOCK_SH)
                return False
            time.sleep(0.01)


def holder_info(path: str) -> dict[str, Any] | None:
    """What the process holding the lock file ``path`` wrote into it (a daemon's pid and
    port), or None when no process holds it; {} when what it wrote cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                info = json.loads(os.pread(fd, 65536, 0) or b"{}")
            except ValueError:
                info = {}
            return info if isinstance(info, dict) else {}
        return None  # the lock was free: no process holds it
    finally:
        os.close(fd)
