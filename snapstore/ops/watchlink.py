"""How other processes reach a running watcher (snapstore.ops.watch): through the store
folder, never a socket, and without loading watchdog, threads or logging.

The watcher holds ``<store>/watch.lock`` (flock) and writes its pid into it. A
process that wants "everything up to now" recorded writes a request file into
``<store>/watch/`` and waits for the answer beside it. That folder lies under
the watched tree and inotify keeps one queue in order, so when the watcher sees
the request it has already seen every event before it. Without a watcher (the
lock free), :func:`ask_watcher` answers None and the caller scans in full.
Scans and hooks load this module; only ``snapstore watch`` loads the daemon.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable
from typing import Any

from ..core.locks import holder_info
from ..core.repo import Repo
from .scanrecord import ScanResult
from .shell import WindowAction

LOCK_NAME = "watch.lock"
REQUEST_DIR = "watch"


def watcher_info(store_dir: str) -> dict[str, Any] | None:
    """What a running watcher wrote into its lock (pid, sync), or None when none runs."""
    return holder_info(os.path.join(store_dir, LOCK_NAME))


def ask_watcher(
    repo: Repo,
    session: str | None,
    timeout: float | None = None,
    window: Iterable[WindowAction] = (),
) -> ScanResult | None:
    """Have a running watcher record everything up to now, then open or close the shell
    windows of ``window`` (snapstore.ops.shell); None when no watcher can."""
    info = watcher_info(repo.store_dir)
    if not info or not info.get("sync"):
        return None
    nonce = os.urandom(8).hex()
    folder = os.path.join(repo.store_dir, REQUEST_DIR)
    request = os.path.join(folder, f"req-{nonce}")
    answer = os.path.join(folder, f"res-{nonce}")
    try:
        write_json(request, {"session": session, "window": [a.to_json() for a in window]})
    except OSError:
        return None
    deadline = time.monotonic() + (repo.lock_timeout if timeout is None else timeout)
    delay, checked = 0.0005, time.monotonic()
    while time.monotonic() < deadline:
        try:
            with open(answer, "rb") as handle:
                data = json.load(handle)
        except (FileNotFoundError, ValueError):  # not there yet, or still being written
            time.sleep(delay)
            delay = min(delay * 2, 0.002)
            if time.monotonic() - checked > 0.5:
                checked = time.monotonic()
                if watcher_info(repo.store_dir) is None:
                    break  # it stopped without answering
            continue
        with contextlib.suppress(OSError):
            os.unlink(answer)
        return ScanResult(**data) if "error" not in data else None
    with contextlib.suppress(OSError):
        os.unlink(request)
    return None


def write_json(path: str, data: dict[str, Any]) -> None:
    """Create ``path`` holding ``data``. No rename: inside the watched tree a rename
    holds watchdog's event queue for half a second while it pairs the two halves.
    A reader that finds the file half written gets invalid JSON and tries again."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
