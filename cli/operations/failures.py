"""What a library error means on the command line: its exit code and a hint.

The library's errors say what went wrong and carry the facts (the turn, the
session, the path); the words that tell a person what to type next live here,
next to the exit codes of docs/cli.md. The most specific class wins: an
``Unfinished`` is a ``RunActive`` with its own hint. Click-free, so the hook
fast path uses it too.
"""

from __future__ import annotations

import json
import sys

from snapstore.core import errors as e

from ..output.plain import printable
from ..settings.values import readable_sizes

#: The remote's errors (snapstore.remote.transport.errors) exit 6. That package is imported only by
#: the commands that talk to a remote, so an error of its can exist only once it is loaded:
#: looked up by name, it stays off the fast paths.
REMOTE_ERRORS, REMOTE_EXIT = "snapstore.remote.transport.errors", 6

#: Exit codes (docs/cli.md); the first class in an error's MRO found here decides.
EXIT_CODES: dict[type[BaseException], int] = {
    e.BadInput: 2,
    e.RunActive: 3,
    e.HeadMoved: 3,
    e.ConversationRefused: 3,
    e.StoreLocked: 3,
    e.StoreReadOnly: 3,
    e.StoreFull: 3,
    e.NotFound: 4,
    e.StoreCorrupt: 5,
}

#: Hints per class; ``{command}`` is the command that failed.
_HINTS: dict[type[BaseException], str] = {
    e.Unfinished: "run `snapstore rewind --resume`",
    e.ConversationRefused: "use --mode code to rewind the files only",
    e.WatcherRunning: "stop it with `snapstore watch --stop`",
    e.ServeRunning: "stop it with `snapstore serve --stop`",
    e.StoreLocked: "another snapstore process is writing; try again",
    e.NoStore: "run `snapstore init`",
    e.NotOnBranch: "see `snapstore log`",
    e.UnknownOperation: "see `snapstore ops`",
    e.SchemaMismatch: "use the snapstore release that made this store",
    e.NotAFolder: "move it aside, then run `snapstore init`",
    e.StoreDamaged: "keep it aside and start a new one: docs/reliability.md, 'A damaged store'",
    e.StoreReadOnly: "log, show, diff, status and fsck still read it; make it writable to "
    "record or rewind",
}


def exit_code(exc: BaseException) -> int:
    """The exit code for an error: by its class, else 1."""
    remote = sys.modules.get(REMOTE_ERRORS)
    if remote is not None and isinstance(exc, remote.RemoteError):
        return REMOTE_EXIT
    for cls in type(exc).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return 1


def hint(exc: BaseException, command: str | None = None) -> str | None:
    """What to do next, worded for the command that failed (None when nothing helps)."""
    remote = sys.modules.get(REMOTE_ERRORS)
    if remote is not None and isinstance(exc, remote.ClientMissing):
        return "install it with `pip install 'snapstore[remote]'`"
    if isinstance(exc, e.UnknownTurn):
        return "see `snapstore log`" if exc.count is not None else "see `snapstore log --all`"
    if isinstance(exc, e.RunActive) and not isinstance(exc, (e.Unfinished, e.AgentRunning)):
        if command in ("rewind", "switch"):
            return "end it with `snapstore end`, or pass --force"
        return (
            "end it with `snapstore end` first"
            if command == "undo"
            else "end it with `snapstore end`"
        )
    if isinstance(exc, e.ConversationRefused) and command == "undo":
        return "`snapstore undo --mode code` puts the files back and leaves the chat as it is"
    if isinstance(exc, e.ConversationRefused) and command != "rewind":
        return None
    for cls in type(exc).__mro__:
        if cls in _HINTS:
            return _HINTS[cls]
    return None


def message(exc: BaseException, command: str | None = None) -> str:
    """The one line printed after ``snapstore: ``: what went wrong, then the hint."""
    if isinstance(exc, e.HeadMoved):  # the user's words: they chose a number, not a head
        return (
            f"the head moved since you chose turn {exc.ref}; nothing changed "
            "(run it again: `snapstore log` shows the turns now)"
        )
    tip = hint(exc, command)
    return f"{readable_sizes(str(exc))}{f' ({tip})' if tip else ''}"


def report(text: str, exit_code: int, code: str = "error", as_json: bool = False) -> None:
    """Print a failure: with ``--json``, one JSON document on stdout saying so; always one
    line on stderr (docs/cli.md)."""
    if as_json:
        sys.stdout.write(
            json.dumps({"error": {"code": code, "message": text, "exit_code": exit_code}}) + "\n"
        )
        sys.stdout.flush()
    sys.stderr.write(f"snapstore: {printable(text, quote=False)}\n")
