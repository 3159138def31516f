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

import json
import os

from snapstore import BadInput
from snapstore.core.blobs import digest_hex

CONFIG_FILE = "config"
SECRET_FILE = "serve.secret"  # the HTTP hooks' secret (snapstore_cli.doors.daemon)
#: The store's files that make snapstore send or run something: obeyed only when trusted.
SETTINGS_FILES = (CONFIG_FILE, SECRET_FILE)


def trust_dir() -> str:
    """Where this user's trust records live: ``$XDG_STATE_HOME/snapstore/trusted``
    (``~/.local/state/snapstore/trusted``), outside every workspace. A relative
    ``XDG_STATE_HOME`` is refused (the XDG spec calls it invalid): it would put the records
    in whatever folder the command runs in, a workspace included."""
    state = os.environ.get("XDG_STATE_HOME")
    if state and not os.path.isabs(state):
        raise BadInput(f"XDG_STATE_HOME takes an absolute path, not {state!r}")
    return os.path.join(
        state or os.path.join(os.path.expanduser("~"), ".local", "state"), "snapstore", "trusted"
    )


def _record_path(store_dir: str) -> str:
    return os.path.join(trust_dir(), digest_hex(os.path.realpath(store_dir).encode())[:32])


def record(store_dir: str) -> dict[str, str]:
    """The store's trust record: each settings file's digest as snapstore last wrote it."""
    try:
        with open(_record_path(store_dir), "rb") as handle:
            record = json.loads(handle.read())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


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
    return digest is None or digest == record(store_dir).get(name)


def trust(store_dir: str, *names: str) -> None:
    """Record the store's files ``names`` as they are now as written by this user here
    (snapstore's own writes, and `snapstore config trust`).

    The record holds every file's digest, so its read, change and write happen under an
    flock of ``<record>.lock``: a daemon trusting its new ``serve.secret`` while `hook
    install` trusts the config it just wrote would otherwise write back the record it read
    before, and the config, no longer trusted, would be ignored by every hook."""
    import fcntl

    from snapstore.core.locks import flock

    path = _record_path(store_dir)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        lock = flock(f"{path}.lock", fcntl.LOCK_EX, 10.0, "the trust record", create=0o600)
        try:
            kept = record(store_dir)
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
    except OSError as exc:
        raise BadInput(
            f"cannot record the store's settings as yours in {trust_dir()}: {exc.strerror} "
            "(set XDG_STATE_HOME to a folder you can write)"
        ) from None
