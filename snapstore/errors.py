"""Errors the library raises, each tied to the CLI exit code it maps to.

The library never prints; it raises these with a one-line message meant for a
person, and the command line turns them into ``snapstore: <message>`` and the
exit code from CLI.md.
"""

from __future__ import annotations

_CONTROL = {c: f"\\x{c:02x}" for c in (*range(32), 127)}


class SnapstoreError(Exception):
    """Base class: a failure the user can act on, with a one-line message."""

    exit_code = 1
    code = "error"

    def __init__(self, message: str, hint: str | None = None):
        message = message.translate(_CONTROL)  # a hostile path must not break the one line
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class BadInput(SnapstoreError):
    """A wrong path, malformed payload or invalid argument (exit 2)."""

    exit_code = 2
    code = "bad_input"


class UnsafePath(BadInput):
    """A path that escapes the workspace root or passes through a symlink."""

    code = "unsafe_path"


class RunActive(SnapstoreError):
    """Refused because a turn of the session is still open (exit 3)."""

    exit_code = 3
    code = "run_active"


class StoreLocked(SnapstoreError):
    """Another process held the store's write lock past the timeout (exit 3)."""

    exit_code = 3
    code = "locked"


class StoreFull(SnapstoreError):
    """The disk under the store or the workspace has no room left (exit 3)."""

    exit_code = 3
    code = "full"


class NotFound(SnapstoreError):
    """No store, or an unknown session, turn or rewind (exit 4)."""

    exit_code = 4
    code = "not_found"


class StoreCorrupt(SnapstoreError):
    """The store failed verification: bad digest, unknown schema, not a store (exit 5)."""

    exit_code = 5
    code = "corrupt"
