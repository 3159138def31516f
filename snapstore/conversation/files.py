"""The agents' files, opened as untrusted input: the one way the conversation code reads,
appends to and writes an agent's files (transcripts, registries of running sessions, locks,
``.project_root``, ``workspace.yaml``).

The path comes from a hook payload and the file is the agent's, so neither is trusted:

- every open is ``O_NONBLOCK | O_NOFOLLOW``, and only a regular file is read (``fstat`` first):
  a FIFO, a device or a socket is refused, never waited on, and neither is a symlink;
- a file must lie in one of the agent's folders, its real path resolved: a transcript whose
  folder is linked out of the agent's is refused, never read or appended to through the link;
- what is read is capped: a transcript at :data:`TRANSCRIPT_CAP`, each of its lines at
  :data:`LINE_CAP`, any other file at :data:`SMALL_CAP`; a transcript streams line by line,
  so memory stays bounded by a line, whatever the file's size;
- an append or a cut opens the file again the same way, and writes only to the inode the plan
  read, at the size the plan saw.

Anything refused raises :class:`~snapstore.core.errors.ConversationUnreadable`: the chat is
left as it is, in one line saying why (docs/design.md, "Conversation").
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from types import TracebackType

from ..core import faults
from ..core.errors import ConversationUnreadable

#: The largest transcript read (1 GiB): a bigger one leaves the chat as it is.
TRANSCRIPT_CAP = 1 << 30
#: The longest line of a transcript (64 MiB): the agents write no longer record.
LINE_CAP = 64 << 20
#: The largest other file read: a lock, a registry entry, ``.project_root``, ``workspace.yaml``.
SMALL_CAP = 1 << 20
#: How much of a transcript is read at a time.
CHUNK = 1 << 20
_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_APPEND = os.O_RDWR | os.O_APPEND | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def refuse(path: str, why: str) -> ConversationUnreadable:
    """The error for an agent's file that is not read: ``why`` says what it is."""
    return ConversationUnreadable(f"{path} {why}, so the chat is left as it is", path=path)


def identity(st: os.stat_result) -> str:
    """A file's identity (device and inode): what an edit checks it still writes to."""
    return f"{st.st_dev}:{st.st_ino}"


def within(path: str, folders: Sequence[str]) -> bool:
    """Whether ``path``'s folder, its real path resolved, lies in one of ``folders`` (also
    resolved); the file itself is opened without following a link."""
    real = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    for folder in folders:
        top = os.path.realpath(folder)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


class Opened:
    """A regular file opened for reading, with its size and identity as of the open."""

    def __init__(self, path: str, fd: int, st: os.stat_result):
        self.path = path
        self.fd = fd
        self.size = st.st_size
        self.mtime = st.st_mtime
        self.ident = identity(st)

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, kind: type | None, value: BaseException | None, tb: TracebackType | None):
        os.close(self.fd)

    def read(self, length: int, at: int) -> bytes:
        return os.pread(self.fd, length, at)

    def ends_with_newline(self) -> bool:
        return not self.size or self.read(1, self.size - 1) == b"\n"

    def lines(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
        """Each line between the offsets ``start`` and ``end`` (default: the size at the open)
        with its offset, without its newline; the last may have none. A line over
        :data:`LINE_CAP` is refused: memory holds one line and one chunk at a time."""
        stop = self.size if end is None else min(end, self.size)
        pos = at = start
        pending: list[bytes] = []
        held = 0
        while pos < stop:
            chunk = self.read(min(CHUNK, stop - pos), pos)
            if not chunk:
                break  # cut shorter since the open
            pos += len(chunk)
            cut = chunk.find(b"\n")
            if cut < 0:
                pending.append(chunk)
                held += len(chunk)
                if held > LINE_CAP:
                    raise self._long(at)
                continue
            if held + cut > LINE_CAP:
                raise self._long(at)
            first = b"".join([*pending, chunk[:cut]]) if pending else chunk[:cut]
            yield at, first
            at += len(first) + 1
            parts = chunk[cut + 1 :].split(b"\n")
            tail = parts.pop()
            for part in parts:
                yield at, part
                at += len(part) + 1
            pending, held = ([tail], len(tail)) if tail else ([], 0)
        if pending:
            yield at, b"".join(pending)

    def _long(self, at: int) -> ConversationUnreadable:
        return refuse(self.path, f"has a line over {LINE_CAP >> 20} MiB at byte {at}")


def open_regular(path: str, folders: Sequence[str], cap: int) -> Opened:
    """Open an agent's file for reading: in one of ``folders``, a regular file (never a
    link, a FIFO or a device), at most ``cap`` bytes."""
    if not within(path, folders):
        raise refuse(path, "is not in the agent's folder (" + ", ".join(folders) + ")")
    fd = _open(path, _READ)
    try:
        st = _regular(path, fd)
        if st.st_size > cap:
            raise refuse(path, f"is over {_size(cap)} ({_size(st.st_size)})")
        return Opened(path, fd, st)
    except BaseException:
        os.close(fd)
        raise


def reopen(path: str, ident: str) -> Opened:
    """Open again, for reading, a file a plan read (``ident``: the same inode, when given)."""
    fd = _open(path, _READ)
    try:
        st = _regular(path, fd)
        if ident and identity(st) != ident:
            raise refuse(path, "was replaced by another file since the rewind was planned")
        return Opened(path, fd, st)
    except BaseException:
        os.close(fd)
        raise


def read_small(path: str, folders: Sequence[str]) -> bytes:
    """The whole of a small file of the agent's (at most :data:`SMALL_CAP`)."""
    with open_regular(path, folders, SMALL_CAP) as f:
        return f.read(f.size, 0)


def listdir(folder: str) -> list[str]:
    """The names in a folder of the agent's ([] when it is not there or not a folder)."""
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _open(path: str, flags: int) -> int:
    try:
        return os.open(path, flags)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # EMLINK: BSDs
            raise refuse(path, "is a symbolic link") from None
        if exc.errno == errno.ENXIO:
            raise refuse(path, "is not a regular file") from None
        raise refuse(path, f"cannot be opened ({exc.strerror})") from None


def _regular(path: str, fd: int) -> os.stat_result:
    st = os.fstat(fd)
    for test, kind in _KINDS:
        if test(st.st_mode):
            raise refuse(path, f"is {kind}, not a regular file")
    if not stat.S_ISREG(st.st_mode):
        raise refuse(path, "is not a regular file")
    return st


def _size(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB" if n >= 1 << 20 else f"{n} bytes"


class Appending:
    """A transcript opened again to append to or cut, checked to be the file the plan read."""

    def __init__(self, path: str, ident: str):
        self.path = path
        self.fd = _open(path, _APPEND)
        try:
            st = _regular(path, self.fd)
            if ident and identity(st) != ident:
                raise refuse(path, "was replaced by another file since the rewind was planned")
        except BaseException:
            os.close(self.fd)
            raise
        self.size = st.st_size

    def __enter__(self) -> Appending:
        return self

    def __exit__(self, kind: type | None, value: BaseException | None, tb: TracebackType | None):
        os.close(self.fd)

    def ends_with(self, data: bytes, at: int) -> bool:
        """Whether the file is exactly ``data`` at ``at`` and nothing after."""
        return self.size == at + len(data) and os.pread(self.fd, len(data), at) == data

    def append(self, data: bytes) -> None:
        """One write of ``data``, then one flush."""
        os.write(self.fd, data)
        os.fsync(self.fd)

    def cut(self, at: int) -> None:
        """Cut the file back to ``at`` bytes, then flush."""
        os.ftruncate(self.fd, at)
        os.fsync(self.fd)


def temp_of(path: str) -> str:
    """The one temp name a file written whole goes through (next to it): a write a crash cut
    short leaves it, and the next write of that file, or the cut of a fork, removes it."""
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.snapstore-fork")


def write_whole(path: str, chunks: Iterable[bytes]) -> None:
    """Write a new file whole: its temp file, flushed, renamed into place. A temp left by an
    earlier, interrupted write is replaced."""
    temp = temp_of(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            for chunk in chunks:
                os.write(fd, chunk)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        os.unlink(temp)
        raise
    faults.point("conversation.fork_temp")
    os.rename(temp, path)


def remove(path: str) -> None:
    """Remove a file snapstore wrote, and the temp it went through, where they are."""
    for name in (temp_of(path), path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


def flush_folder(folder: str) -> None:
    fd = os.open(folder, _DIR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
