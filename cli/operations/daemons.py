"""This user's running daemons, across workspaces: so that one whose workspace is gone is seen.

A daemon ends on its own within seconds once its workspace or store is removed or replaced
(``doors.daemon``); one that does not (hung, or of an older release) is still found here:
each daemon keeps a file in ``<state>/daemons/`` (``$XDG_STATE_HOME/snapstore``, the trust
records' folder, under the same rules: this user's, and not writable by others) while it
runs, naming its pid and its workspace, and ``snapstore sessions`` and ``doctor`` list those
whose workspace is gone. Entries of processes that died without removing theirs are pruned
as they are read.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, NamedTuple

from ..settings.trust import state_dir, unsafe

#: Each entry is a small JSON object; a larger file is not one of snapstore's.
MAX_ENTRY = 4096


class Orphan(NamedTuple):
    """A daemon that still runs, though its workspace or store is gone."""

    pid: int
    root: str
    store: str


def _folder() -> str:
    return os.path.join(state_dir(), "daemons")


def register(pid: int, root: str, store_dir: str) -> str | None:
    """Note a starting daemon; the entry's path, to :func:`unregister` at its end (None where
    the state folder cannot hold it: the daemon runs the same, unlisted)."""
    try:
        folder = _folder()
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if unsafe(folder) is not None:
            return None
        path = os.path.join(folder, f"{pid}.json")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(
                {"pid": pid, "root": root, "store": store_dir, **_identity(store_dir)}, handle
            )
    except (OSError, ValueError):
        return None
    return path


def unregister(path: str | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _identity(store_dir: str) -> dict[str, Any]:
    st = os.stat(store_dir)
    return {"dev": st.st_dev, "ino": st.st_ino}


def orphans() -> list[Orphan]:
    """The daemons that run for a workspace or store that is gone (or was replaced)."""
    try:
        folder = _folder()
        if unsafe(folder) is not None:
            return []
        names = os.listdir(folder)
    except (OSError, ValueError):
        return []
    found = []
    for name in names:
        path = os.path.join(folder, name)
        entry = _entry(path)
        if entry is None:
            continue
        pid, root, store = entry["pid"], entry["root"], entry["store"]
        try:
            os.kill(pid, 0)
        except ProcessLookupError:  # died without removing its entry
            unregister(path)
            continue
        except PermissionError:
            pass
        try:
            here = _identity(store) if os.path.isdir(root) else None
        except OSError:
            here = None
        if here != {"dev": entry.get("dev"), "ino": entry.get("ino")}:
            found.append(Orphan(pid, root, store))
    return sorted(found)


def _entry(path: str) -> dict[str, Any] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        entry = json.loads(os.read(fd, MAX_ENTRY))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    ok = isinstance(entry, dict) and isinstance(entry.get("pid"), int) and entry["pid"] > 0
    if not ok or not all(isinstance(entry.get(k), str) for k in ("root", "store")):
        return None
    return entry


def orphan_line(orphan: Orphan) -> str:
    """What to tell a person of a daemon whose workspace is gone."""
    return (
        f"snapstore serve (pid {orphan.pid}) still runs for {orphan.root}, which is gone or "
        f"was replaced; it stops within seconds, or now with `kill {orphan.pid}`"
    )
