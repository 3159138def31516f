"""What the socket tells a person when something went wrong, as sentences.

The library's errors say what went wrong in one line, and a path it could not write carries
the operating system's own words (``[Errno 1] Operation not permitted: '.snapstore-….tmp' ->
'app.py'``): right for a log, wrong for a page. The command line adds its hints in
``operations.failures``; this is the same for the socket: each error frame's ``message``, and
each path left in a result's ``errors``, is worded here, once, and the page shows it as it is.
The facts stay where they were (the error's ``code``, each path's ``reason``).
"""

from __future__ import annotations

import errno
import re

from snapstore import SnapstoreError
from snapstore.core import errors as e

#: What to do next, per error class (the most specific one found in the class's MRO wins).
HINTS: dict[type[SnapstoreError], str] = {
    e.Unfinished: "Finish it first with `snapstore rewind --resume` in the workspace.",
    e.AgentRunning: "Exit the agent first, or choose “files only” to take back the files alone.",
    e.RunActive: "Wait until the agent finishes its turn; the buttons come back then.",
    e.ConversationRefused: "Choose “files only” to take back the files alone.",
    e.StoreLocked: "Another snapstore process is writing to the store; try again in a moment.",
    e.StoreReadOnly: "The page can still show it; make the store writable to rewind.",
    e.StoreFull: "Free some disk space, then try again.",
    e.StoreCorrupt: "Run `snapstore fsck` in the workspace to see what is wrong.",
    e.NotOnBranch: "The list may be out of date: reload the page.",
    e.UnknownTurn: "The list may be out of date: reload the page.",
}

#: What an operating system's refusal to write a file means, by its errno.
WRITE_FAILURES = {
    errno.EPERM: "the system does not let it be replaced (operation not permitted: is the "
    "file immutable, or held by another program?)",
    errno.EACCES: "snapstore may not write there (permission denied): check the permissions "
    "of the file and of its folder",
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the file system is read-only",
    errno.EBUSY: "the file is in use",
    errno.ETXTBSY: "the file is a program that is running",
    errno.ENOENT: "its folder is gone",
    errno.ENOTDIR: "a file stands where its folder should be",
    errno.EISDIR: "a folder stands where the file should be",
    errno.ENAMETOOLONG: "its name is too long for the file system",
    errno.EIO: "the disk reported an input/output error",
}
_OS_ERROR = re.compile(r"\[Errno (?P<errno>\d+)\] (?P<text>[^:]*)")


def sentence(text: str) -> str:
    """``text`` as a sentence: a capital first letter and a full stop."""
    text = text.strip()
    return _stop(text[:1].upper() + text[1:])


def _stop(text: str) -> str:
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def error_message(exc: BaseException) -> str:
    """An error frame's ``message``: what went wrong, and what to do next."""
    if not isinstance(exc, SnapstoreError):
        return (
            f"Something went wrong inside snapstore ({type(exc).__name__}: {exc}). "
            "Run the same from the command line with --debug to see where."
        )
    hint = next((HINTS[cls] for cls in type(exc).__mro__ if cls in HINTS), "")
    return " ".join(part for part in (sentence(reason(exc.message)), hint) if part)


def reason(text: str) -> str:
    """A reason the library gives for a path, in words: an operating system's error
    (``[Errno 13] Permission denied: …``) becomes what it means; anything else stays."""
    found = _OS_ERROR.search(text)
    if found is None:
        return text
    number = int(found["errno"])
    meaning = WRITE_FAILURES.get(number, f"the system refused it ({found['text'].lower()})")
    return text[: found.start()] + meaning


def left(path: str, kind: str, why: str, marked: bool) -> str:
    """The sentence for one path a move did not put back."""
    if kind == "conflict":
        how = "has conflict markers to resolve" if marked else "was left as it is, in conflict"
        return _stop(f"{path} {how}: {reason(why)}")  # a path keeps its own case
    return _stop(f"{path} was not put back: {reason(why)}")
