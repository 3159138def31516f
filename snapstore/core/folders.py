"""The workspace's folders as descriptors, reached from the root's and confined to it.

Every read and write of :class:`~snapstore.core.fsio.Workspace` starts here: the path's
parent folder is reached from an open descriptor of the root, one component at a time
with ``O_NOFOLLOW``, so a symlink swapped into a parent after the path was checked fails
the operation instead of leading out of the root.

An operation on many paths (a rewind's plan, then its writes) holds the folders it walks
to open for its duration (:meth:`Folders.holding`), so each is opened once. A held
descriptor follows its folder wherever the folder is renamed, out of the workspace too.
So before anything in a folder changes (a rename into it, an unlink, a folder made or
removed) :meth:`Folders.confirm` makes sure that it still stands at its path from the
root: where the kernel names a descriptor's folder (Linux's ``/proc/self/fd``), by one
``readlink``; elsewhere level by level, each held folder against its held parent. A
folder found moved gets nothing, nor does its old place while the block lasts, and the
path is refused: the rewind reports it. What is left is the few microseconds between
the check and the call that changes the folder, which no file system API closes.
"""

from __future__ import annotations

import _thread
import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager

from . import faults
from .errors import BadInput, UnsafePath

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: Where the kernel names each open descriptor's file (Linux); elsewhere, or without /proc,
#: a folder's place is checked level by level (:meth:`Folders.confirm`).
FD_PATHS = "/proc/self/fd"


class Folders:
    """Descriptors of the folders below ``root`` (a canonical absolute path)."""

    def __init__(self, root: str):
        self.root = root
        #: Folders kept open by :meth:`holding`, by path ("" is the root), for the
        #: thread that holds them; None outside such a block, where every walk (and every
        #: other thread's) opens and closes its own.
        self._held: dict[str, int] | None = None
        self._holder: int | None = None
        #: (st_dev, st_ino) of held folders (but the root), once a change in them asks.
        self._ids: dict[str, tuple[int, int]] = {}
        #: Held folders found moved: closed when the block ends (a write that found its
        #: folder moved still removes its temp file through it); and their paths, where
        #: nothing is made again until the block ends.
        self._stale: list[int] = []
        self._gone: set[str] = set()

    @contextmanager
    def holding(self) -> Iterator[None]:
        """Keep every folder that a walk opens open until the block ends, so that the next
        path in it (or below it) starts there: an operation on many paths (a rewind's plan,
        its writes) opens each folder once instead of once per path and level. Each folder
        is still reached by the ``O_NOFOLLOW`` walk; a folder this workspace removes is
        forgotten at once. Other threads go on walking on their own."""
        if self._held is not None:  # already held by an enclosing block (or another thread)
            yield
            return
        self._held, self._holder = {}, _thread.get_ident()
        try:
            yield
        finally:
            held, self._held, self._holder = self._held, None, None
            for fd in [*held.values(), *self._stale]:
                os.close(fd)
            self._ids.clear()
            self._stale.clear()
            self._gone.clear()

    def _holding(self) -> dict[str, int] | None:
        """The folders held for this thread, if any."""
        return self._held if self._holder == _thread.get_ident() else None

    def _hold(self, folder: str, fd: int) -> int:
        """Keep ``fd`` (the folder ``folder``) open while folders are held; the fd to use."""
        held = self._holding()
        if held is not None:
            held[folder] = fd
        return fd

    def forget(self, folder: str, stale: bool = False) -> None:
        """A folder was removed (or, ``stale``, found moved): let go of what is held of it
        and below it. A stale descriptor is closed only when the block ends."""
        held = self._holding()
        if held:
            for key in [k for k in held if k == folder or k.startswith(folder + "/")]:
                self._ids.pop(key, None)
                fd = held.pop(key)
                if stale:
                    self._stale.append(fd)
                else:
                    os.close(fd)

    def confirm(self, rel: str, parts: list[str], fd: int) -> None:
        """Refuse (:class:`UnsafePath`) to change anything in the folder ``parts`` of
        ``rel``, open as ``fd``, unless it still stands at that path from the root.

        A descriptor follows its folder when the folder is renamed, even out of the
        workspace: without this, a folder moved away during a rewind would take the
        rewind's writes with it. Called just before each rename, unlink, mkdir and
        rmdir; what is left is the few microseconds between this check and that call.
        The root is the one descriptor never checked: it is the workspace, wherever it
        is moved.
        """
        moved = None
        if self._gone and self._holding() is not None:
            moved = next((g for g in self._gone if rel == g or rel.startswith(g + "/")), None)
        if moved is None and parts:
            moved = self._moved(parts, fd)
            if moved is not None and self._holding() is not None:
                # Let go of it, and make nothing at its place either while the block lasts:
                # the folder's paths are its, wherever it went.
                self.forget(moved, stale=True)
                self._gone.add(moved)
        if moved is None:
            return
        raise UnsafePath(
            f"{rel}: the folder {moved} moved while snapstore was writing into it "
            "(it is no longer at its place in the workspace); left alone",
            path=rel,
        )

    def _moved(self, parts: list[str], fd: int) -> str | None:
        """None while the walk from the root, never following a link, still reaches ``fd``
        at ``parts``; else the shallowest folder on the way that stands elsewhere now.

        Where the kernel names a descriptor's folder (Linux: ``/proc/self/fd``), one
        ``readlink`` settles the common case whatever the depth: it is the path, so
        nothing moved. Otherwise, and to find what moved, each level is asked: a held
        folder must still be the entry of its name in its held parent (one ``fstatat``
        a level); a folder not held is walked to afresh.
        """
        full = "/".join(parts)
        try:
            if os.readlink(f"{FD_PATHS}/{fd}") == f"{self.root}/{full}":
                return None
        except OSError:
            pass  # no /proc (or not that): ask each level
        held = self._holding()
        if held is not None and held.get(full) == fd:
            ids, parent, folder = self._ids, held.get(""), ""
            for part in parts:
                folder = f"{folder}/{part}" if folder else part
                child = held.get(folder)
                if child is None or parent is None:
                    break  # not held all the way (it always is): walk afresh
                want = ids.get(folder)
                if want is None:  # what the descriptor is, wherever its folder went
                    st = os.fstat(child)
                    want = ids[folder] = (st.st_dev, st.st_ino)
                try:
                    st = os.stat(part, dir_fd=parent, follow_symlinks=False)
                except OSError:
                    return folder
                if st.st_ino != want[1] or st.st_dev != want[0]:
                    return folder
                parent = child
            else:
                return None
        try:
            found = os.open(self.root, DIR_FLAGS)
        except OSError:
            return full
        try:
            for part in parts:
                nfd = os.open(part, DIR_FLAGS, dir_fd=found)
                os.close(found)
                found = nfd
            a, b = os.fstat(found), os.fstat(fd)
        except OSError:
            return full
        finally:
            os.close(found)
        return None if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino) else full

    def _start(self, parts: list[str]) -> tuple[int, int]:
        """Where a walk to the folder ``parts`` starts: the deepest held folder on the way
        (or the root, opened now), and how many of ``parts`` that is."""
        held = self._holding()
        if held:
            for depth in range(len(parts), -1, -1):
                fd = held.get("/".join(parts[:depth]), -1)
                if fd >= 0:
                    return fd, depth
        return self._hold("", os.open(self.root, DIR_FLAGS)), 0

    @contextmanager
    def parent(
        self, rel: str, create: bool = False, links_absent: bool = False
    ) -> Iterator[tuple[int | None, int]]:
        """Open the parent folder of ``rel`` without following symlinks.

        Yields ``(fd, created)``: ``fd`` is None when a folder is missing, or a
        file stands in its place, and ``create`` is false; ``created`` counts the
        folders made. A symlink in place of a folder is refused (UnsafePath),
        unless ``links_absent``: then there is nothing below it either.
        """
        parts = rel.split("/")
        if any(part in ("", ".", "..") for part in parts):  # the second line: never trusted
            raise UnsafePath(f"{rel}: a path with an empty, '.' or '..' component is never used")
        parts = parts[:-1]
        held = self._holding() is not None  # then what is opened here closes at its end
        fd, depth = self._start(parts)
        created = 0
        try:
            for i in range(depth, len(parts)):
                part = parts[i]
                try:
                    nfd = os.open(part, DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        if not held:
                            os.close(fd)
                        fd = -1
                        break
                    faults.point("fsio.before_mkdir")
                    self.confirm(rel, parts[:i], fd)
                    try:
                        os.mkdir(part, 0o777, dir_fd=fd)
                        created += 1
                    except FileExistsError:
                        pass  # another writer made it meanwhile
                    nfd = os.open(part, DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if not create and _stands_for_a_folder(part, fd, links_absent):
                        # A file (or, when asked, a link) stands where a folder would be:
                        # nothing is below it as far as the workspace's paths go.
                        if not held:
                            os.close(fd)
                        fd = -1
                        break
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        where = "/".join(parts[: i + 1])
                        raise UnsafePath(
                            f"{rel}: {where} is a symlink or not a folder; refusing to follow it"
                        ) from None
                    if exc.errno == errno.ENAMETOOLONG:
                        raise BadInput(f"{rel[:80]}...: a folder name is too long") from None
                    raise
                if not held:
                    os.close(fd)
                fd = self._hold("/".join(parts[: i + 1]), nfd)
            yield (fd if fd >= 0 else None), created
        finally:
            if fd >= 0 and not held:
                os.close(fd)


def _stands_for_a_folder(name: str, dir_fd: int, links: bool) -> bool:
    """Whether ``name`` in ``dir_fd`` is a regular file (or, with ``links``, a symlink)."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or (links and stat.S_ISLNK(mode))
