"""Trust records: which of the store's settings files this user wrote on this machine.

A repository can commit ``.snapstore/config`` (a remote and ``auto_push`` that would send the
next ``.env`` the agent edits to someone else's bucket), and a clone must not be able to make
snapstore send data anywhere or run anything. So every time snapstore writes the config (or
``serve.secret``), it records the file's BLAKE3 digest in a trust record outside the
workspace, in the user's state folder (``$XDG_STATE_HOME/snapstore/trusted/``, one file per
store, named by the digest of the store's real path), where no clone can put one. A file
whose digest is not recorded there (cloned, copied, edited by hand, or the store moved) is
not used at all until the user reviews it and runs ``snapstore config trust``.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable, Iterator

from snapstore import BadInput
from snapstore.core.blobs import digest_hex

CONFIG_FILE = "config"
SECRET_FILE = "serve.secret"  # the HTTP hooks' secret (snapstore_cli.doors.daemon)
#: The store's files that make snapstore send or run something: obeyed only when trusted.
SETTINGS_FILES = (CONFIG_FILE, SECRET_FILE)


class Unrecorded(BadInput):
    """The trust record could not be written (the state folder is not writable, or not
    safe): the file written is there, but snapstore will not obey it."""


#: A trust record is a few digests; a larger file is not one of snapstore's.
MAX_RECORD = 64 * 1024


def state_dir() -> str:
    """This user's snapstore state folder: ``$XDG_STATE_HOME/snapstore``
    (``~/.local/state/snapstore``), outside every workspace. A relative ``XDG_STATE_HOME``
    is refused (the XDG spec calls it invalid): it would put the records in whatever folder
    the command runs in, a workspace included."""
    state = os.environ.get("XDG_STATE_HOME")
    if state and not os.path.isabs(state):
        raise BadInput(f"XDG_STATE_HOME takes an absolute path, not {state!r}")
    return os.path.join(
        state or os.path.join(os.path.expanduser("~"), ".local", "state"), "snapstore"
    )


def trust_dir() -> str:
    """Where this user's trust records live: ``<state>/trusted``."""
    return os.path.join(state_dir(), "trusted")


def unsafe(folder: str) -> str | None:
    """Why ``folder`` (one of snapstore's own under the state folder) may not hold trust: it
    is a symlink, not a folder, not this user's, or writable by others; None when it may (or
    does not exist yet)."""
    for path in (os.path.dirname(folder), folder):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"{path}: {exc.strerror}"
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            return f"{path} is not a folder (a symlink is never followed)"
        if st.st_uid != os.geteuid():
            return f"{path} belongs to another user"
        if st.st_mode & 0o022:
            return f"{path} is writable by others (chmod go-w it)"
    return None


def _record_path(store_dir: str) -> str:
    return os.path.join(trust_dir(), digest_hex(os.path.realpath(store_dir).encode())[:32])


def record(store_dir: str) -> dict[str, str]:
    """The store's trust record: each settings file's digest as snapstore last wrote it; none
    from a folder or a file that another user could have written (:func:`unsafe`)."""
    path = _record_path(store_dir)
    if unsafe(os.path.dirname(path)) is not None:
        return {}
    return _read(path)


def _read(path: str) -> dict[str, str]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return {}
        found = json.loads(os.read(fd, MAX_RECORD))
    except (OSError, ValueError):
        return {}
    finally:
        os.close(fd)
    return found if isinstance(found, dict) else {}


def _file_digest(path: str) -> str | None:
    """The digest of a file's bytes; None when there is no file."""
    try:
        with open(path, "rb") as handle:
            return digest_hex(handle.read())
    except (FileNotFoundError, NotADirectoryError):
        return None


def trusted(store_dir: str, name: str) -> bool:
    """Whether the store's file ``name`` is absent, or as snapstore wrote it for this user."""
    digest = _file_digest(os.path.join(store_dir, name))
    if digest is None or digest == record(store_dir).get(name):
        return True
    with settled(store_dir):
        digest = _file_digest(os.path.join(store_dir, name))
        return digest is None or digest == record(store_dir).get(name)


@contextlib.contextmanager
def settled(store_dir: str) -> Iterator[None]:
    """Hold the record still while a reader looks again at a file it did not find recorded:
    snapstore writes a settings file and records it under the record's lock (:func:`trust`),
    so a file read half way through that write (replaced, not yet recorded) is looked at
    again once the write is done, not refused as a stranger's."""
    import fcntl

    from snapstore.core.errors import SnapstoreError
    from snapstore.core.locks import flock_existing

    fd = None
    with contextlib.suppress(SnapstoreError, OSError):  # busy past the wait: as it stands
        fd = flock_existing(f"{_record_path(store_dir)}.lock", fcntl.LOCK_SH, 2.0, "the record")
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def trust(store_dir: str, *names: str, put: Callable[[], None] | None = None) -> None:
    """Record the store's files ``names`` as they are now as written by this user here
    (snapstore's own writes, and `snapstore config trust`); ``put``, when given, writes
    them first, under the same lock.

    The record holds every file's digest, so its read, change and write happen under an
    flock of ``<record>.lock``: a daemon trusting its new ``serve.secret`` while `hook
    install` trusts the config it just wrote would otherwise write back the record it read
    before, and the config, no longer trusted, would be ignored by every hook. A reader
    that finds a file not recorded waits for that lock and looks again (:func:`settled`)."""
    import fcntl

    from snapstore.core.locks import flock

    path = _record_path(store_dir)
    folder = os.path.dirname(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        why = unsafe(folder)
        if why is not None:
            raise Unrecorded(f"cannot record the store's settings as yours: {why}")
        lock = flock(f"{path}.lock", fcntl.LOCK_EX, 10.0, "the trust record", create=0o600)
        try:
            if put is not None:
                put()
            kept = _read(path)
            kept["store"] = os.path.realpath(store_dir)
            for name in names:
                digest = _file_digest(os.path.join(store_dir, name))
                if digest is None:
                    kept.pop(name, None)
                else:
                    kept[name] = digest
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(kept, handle, indent=1)
            os.replace(tmp, path)
        finally:
            os.close(lock)
        prune(folder)
    except OSError as exc:
        raise Unrecorded(
            f"cannot record the store's settings as yours in {trust_dir()}: {exc.strerror} "
            "(set XDG_STATE_HOME to a folder you can write)"
        ) from None


def prune(folder: str) -> None:
    """Remove the records of stores that are gone (each write of a record does this), so that
    the folder holds two files per store that still exists, not per store ever made."""
    for name in os.listdir(folder):
        if len(name) != 32:  # a record is named by 32 hex digits; its lock and temp files
            continue  # go with it
        store = _read(os.path.join(folder, name)).get("store")
        if isinstance(store, str) and os.path.isdir(store):
            continue
        for gone in (name, f"{name}.lock"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(folder, gone))
