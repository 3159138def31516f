"""Errors the library raises: a one-line message, and the facts behind it as fields.

The library never prints and never speaks the command line's language: an
error says what went wrong (``turn 3f2a... of session 'default' is still
open``) and carries the turn, session, path or operation it is about. The
command line (``snapstore_cli.operations.failures``) maps each class to its exit code and
adds the hint that fits the command that failed (``end it with `snapstore
end```), as restic's and jj's command layers do.

``code`` is a stable, machine-readable name for the kind of failure; it is
what ``--json`` error documents carry (docs/cli.md). A subclass that only adds
facts keeps its parent's code.
"""

from __future__ import annotations

from typing import Any

_CONTROL = {c: f"\\x{c:02x}" for c in (*range(32), 127)}


class SnapstoreError(Exception):
    """Base class: a failure the user can act on, with a one-line message.

    Keyword arguments become attributes (``turn``, ``session``, ``path``, ...)
    so that callers can act on the facts rather than parse the message. Each class
    declares the facts it carries, so that a checker sees them; a fact that only some
    raises give defaults to None.
    """

    code = "error"
    message: str
    fields: dict[str, Any]
    path: str | None = None

    def __init__(self, message: str, **fields: Any):
        message = message.translate(_CONTROL)  # a hostile path must not break the one line
        super().__init__(message)
        self.message = message
        self.fields = fields
        for name, value in fields.items():
            setattr(self, name, value)

    def __str__(self) -> str:
        return self.message


class BadInput(SnapstoreError):
    """A wrong path, malformed payload or invalid argument."""

    code = "bad_input"
    turn: str | None = None
    session: str | None = None
    ref: str | None = None


class UnsafePath(BadInput):
    """A path that escapes the workspace root or passes through a symlink."""

    code = "unsafe_path"


class TooLarge(BadInput):
    """A file over the capture limit: skipped, and said so wherever captures are shown."""

    code = "too_large"


class FileChanged(BadInput):
    """A big file that changed while it was being stored: nothing of it was recorded, and a
    capture that can read it again does."""


class NotOnBranch(BadInput):
    """A turn that is not on the session's current branch (fields: ``turn``, ``session``,
    ``state``)."""

    turn: str
    session: str
    state: str


class GitRefused(SnapstoreError):
    """The git half of a record or a rewind cannot be done safely (a ``.git`` that is a
    symlink, a packed-refs file over its limit, a ref name git would not write, an index
    over the capture limit, a reftable repository): the files are handled as ever, and
    the result says why git was left alone."""

    code = "git_refused"


class RunActive(SnapstoreError):
    """Refused because a turn of the session is still open (fields: ``turn``, ``session``)."""

    code = "run_active"
    turn: str | None = None
    session: str | None = None


class AgentRunning(RunActive):
    """Refused because the agent is running the session whose conversation would change
    (fields: ``session``, ``agent``): it would undo an outside edit at its next write."""

    agent: str | None = None


class ShellRunning(RunActive):
    """Refused because another session's shell call is running (field: ``others``, the
    sessions whose windows are open): what it changes meanwhile could not be told apart
    from the writes of a rewind made from inside a turn."""

    others: tuple[str, ...] = ()


class ConversationRefused(SnapstoreError):
    """A conversation edit that cannot be made safely (a compaction since the turn, a
    transcript the agent changed since a rewind); nothing was changed."""

    code = "conversation_refused"
    path: str | None = None


class ConversationUnreadable(ConversationRefused):
    """A file the conversation edit must read cannot be read safely or understood (not a
    regular file, over its size cap, outside the agent's folder, a record it cannot make
    sense of): the chat is left as it is, and a rewind still takes the files back."""


class Unfinished(RunActive):
    """Refused because a rewind or undo was interrupted and is not finished
    (field: ``operation``)."""

    operation: str


class HeadMoved(SnapstoreError):
    """Refused because the session's head moved between the moment a turn number was counted
    from it and the write lock (another rewind, a new turn): the number now names another
    turn. Nothing was changed; a turn id names one turn and is never refused so (fields:
    ``session``, ``ref``, ``expected``, ``head``)."""

    code = "head_moved"
    session: str
    ref: str
    expected: str
    head: str | None


class StoreLocked(SnapstoreError):
    """Another process held a lock of the store past the timeout (fields: ``what``, ``timeout``)."""

    code = "locked"
    what: str | None = None
    timeout: float | None = None


class WatcherRunning(StoreLocked):
    """A watcher already runs for this store (field: ``pid``)."""

    pid: int | None


class ServeRunning(StoreLocked):
    """``snapstore serve`` already runs for this store (fields: ``pid``, ``port``)."""

    pid: int | None
    port: int | None


class StoreReadOnly(SnapstoreError):
    """The store cannot be written: its files or its file system are read-only
    (field: ``reason``). Reading it still works."""

    code = "read_only"
    reason: str


class StoreFull(SnapstoreError):
    """The disk under the store or the workspace has no room left."""

    code = "full"


class NotFound(SnapstoreError):
    """An unknown session, turn or rewind, or nothing to act on."""

    code = "not_found"
    session: str | None = None
    remote: str | None = None


class NoStore(NotFound):
    """No store where one was looked for (field: ``store_dir`` or ``start``)."""

    store_dir: str | None = None
    start: str | None = None


class UnknownSession(NotFound):
    """No session of that name in the store (field: ``session``)."""

    session: str


class UnknownOperation(NotFound):
    """No rewind, switch or undo matches a reference (field: ``ref``)."""

    ref: str


class UnknownTurn(NotFound):
    """No turn matches a reference (fields: ``ref``, ``session``; ``count`` for a number
    beyond the session's rewind points)."""

    ref: str
    count: int | None = None


class StoreCorrupt(SnapstoreError):
    """The store failed verification: bad digest, malformed record, not a store."""

    code = "corrupt"
    turn: str | None = None
    operation: str | None = None


class NotAFolder(StoreCorrupt):
    """Where the store should be, something else is: a file, a link, a device (fields:
    ``store_dir``, ``kind``). Nothing is read from it, and nothing replaces it."""


class StoreDamaged(StoreCorrupt):
    """The store's data file is damaged where LMDB would map it: cut short, or a meta page
    unreadable (fields: ``path``, ``size``, ``needed``). Nothing in it is read."""

    path: str
    size: int
    needed: int


class SchemaMismatch(StoreCorrupt):
    """The store was written by a schema this snapstore does not know
    (fields: ``found``, ``known``)."""

    found: str | int  # the version the store names, or its text when that is no number
    known: int
