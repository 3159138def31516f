"""Safe file I/O confined to the workspace root.

Every path from a hook, the CLI or the API goes through :meth:`Workspace.relpath`
first: it is normalised to a relative POSIX path under the root, symlinks in its
parent folders are resolved (and refused when they lead out of the root), and
a store's folder is refused: this workspace's own, and any other nested in it.
The leaf is never followed: a symlink is itself a versioned object, its target
string.

Reads and writes then walk the canonical path from an open descriptor of the
root, one component at a time with ``O_NOFOLLOW`` (``core/folders.py``): a symlink
swapped into a parent between the check and the use (TOCTOU) makes the operation fail
instead of escaping the root, and a folder moved away while an operation holds it open
gets nothing (:meth:`~snapstore.core.folders.Folders.confirm`). Writes are atomic: a
temp file in the same folder, fsync, rename over the destination (which replaces a
symlink rather than following it), then fsync of the folder.

Whatever a caller passes, the descriptor walk refuses a path with an empty, ``.``
or ``..`` component, and a written file gets only the permission bits (0o777) of
its recorded mode: a second line behind the checks where paths and modes come in
(:func:`check_relpath` for a remote's).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

from . import blobs, faults
from .errors import (
    BadInput,
    FileChanged,
    GitRefused,
    SnapstoreError,
    StoreFull,
    TooLarge,
    UnsafePath,
)
from .folders import DIR_FLAGS, Folders
from .places import STORE_DIRNAME
from .records import FILE, LINK, Big, Entry, fingerprint

#: Up to this many paths, a flush syncs each file and folder; above, the whole file
#: system at once (``syncfs``), which is far cheaper for many small files.
FSYNC_EACH = 4
#: Captures and scans skip (and report) larger files unless told otherwise: a workspace's
#: generated artefacts should not fill the store. Big files are streamed in chunks, so the
#: cap is about disk, not memory.
DEFAULT_MAX_FILE_SIZE = 1024 * 1024 * 1024
#: Big files are read and written in pieces of this size.
PIECE = 1024 * 1024
#: LMDB keys are at most 511 bytes; the store keys paths by their relative form.
MAX_PATH_BYTES = 511
#: Temp files of an atomic write; one left by a crash is removed when the rewind resumes.
TEMP_NAME = re.compile(r"\.snapstore-[0-9a-f]{12}\.tmp")
#: Folders a path from elsewhere (a remote) never names: a store's, and git's own.
FOREIGN_FOLDERS = (STORE_DIRNAME, ".git")


def check_relpath(rel: object) -> str:
    """``rel`` if it is already a canonical workspace path, else :class:`UnsafePath`.

    For paths that come from outside this machine (a remote's records): they are
    never normalised, only accepted or refused, so what is checked is exactly what
    is written. Refused: a non-string, empty, absolute, a NUL byte, an empty, ``.``
    or ``..`` component, anything in a store or in ``.git``, over the length the
    store can key. :meth:`Workspace.relpath` makes local paths canonical first.
    """
    if not isinstance(rel, str):
        raise UnsafePath(f"path {rel!r} is not a string")
    if "\0" in rel:
        raise UnsafePath(f"path {rel!r} contains a NUL byte")
    if not rel or rel.startswith("/"):
        raise UnsafePath(f"path {rel!r} is not relative to the workspace")
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UnsafePath(f"path {rel!r} has an empty, '.' or '..' component")
    if any(p in FOREIGN_FOLDERS or p.startswith(STORE_DIRNAME + ".new-") for p in parts):
        raise UnsafePath(f"path {rel!r} lies in a store or in .git, which are never written")
    if len(os.fsencode(rel)) > MAX_PATH_BYTES:
        raise UnsafePath(f"path {rel[:60]!r}... is longer than {MAX_PATH_BYTES} bytes")
    return rel


class Workspace:
    """The workspace root, with every read and write confined to it."""

    def __init__(
        self, root: str | os.PathLike[str], store_dir: str | None = None, durable: bool = True
    ):
        self.root = os.path.realpath(root)
        #: False: nothing is ever synced (see :class:`~snapstore.Store`'s ``durable``).
        self.durable = durable
        if not os.path.isdir(self.root):
            raise BadInput(f"workspace root {root} is not a folder")
        #: The folders, reached from the root's descriptor (and held for an operation).
        self.folders = Folders(self.root)
        #: Folders whose entries changed when writes without ``durable`` made folders in
        #: them: the next :meth:`flush` syncs them.
        self._made: set[str] = set()
        #: The store's folder relative to the root, when it lies inside the workspace.
        self.store_rel: str | None = None
        if store_dir is not None:
            store = os.path.realpath(store_dir)
            if _is_within(store, self.root):
                self.store_rel = os.path.relpath(store, self.root).replace(os.sep, "/")

    # -- paths -----------------------------------------------------------------

    def relpath(self, path: str | os.PathLike[str]) -> str:
        """Normalise ``path`` (absolute, or relative to the root) to a canonical relative path."""
        text = os.fspath(path)
        if "\0" in text:
            raise UnsafePath("path contains a NUL byte")
        if not text:
            raise UnsafePath("empty path")
        full = os.path.normpath(os.path.join(self.root, text))
        if not _is_within(full, self.root):
            # An absolute path may reach the root through an outside symlink.
            real = os.path.join(_realpath(os.path.dirname(full), text), os.path.basename(full))
            if not _is_within(real, self.root):
                raise UnsafePath(f"{text} is outside the workspace {self.root}")
            full = real
        parent = _realpath(os.path.dirname(full), text)
        if not (parent == self.root or _is_within(parent, self.root)):
            raise UnsafePath(
                f"{text} passes through a symlink that leaves the workspace (it leads to {parent})"
            )
        rel = os.path.relpath(os.path.join(parent, os.path.basename(full)), self.root)
        rel = rel.replace(os.sep, "/")
        if rel in (".", "") or rel.startswith("../"):
            raise UnsafePath(f"{text} is not a file inside the workspace")
        if len(os.fsencode(rel)) > MAX_PATH_BYTES:
            raise BadInput(
                f"{rel[:60]}...: path is longer than {MAX_PATH_BYTES} bytes, "
                "the longest the store can key"
            )
        store = self.store_of(rel)
        if store is not None:
            whose = "the snapstore store" if store == self.store_rel else f"the store {store}"
            raise UnsafePath(f"{text} is inside {whose}, which is never snapshotted")
        return rel

    def store_of(self, rel: str) -> str | None:
        """The store folder ``rel`` is or lies in, if any: this workspace's own store, or
        another one nested in the workspace (a ``.snapstore`` folder at any depth, or one
        being created beside it). Another store's files are another project's history."""
        own = self.store_rel
        if own is not None and (rel == own or rel.startswith((own + "/", own + ".new-"))):
            return own
        parts = rel.split("/")
        for depth, part in enumerate(parts, start=1):
            if part == STORE_DIRNAME or part.startswith(STORE_DIRNAME + ".new-"):
                return "/".join(parts[:depth])
        return None

    def abspath(self, rel: str) -> str:
        return os.path.join(self.root, *rel.split("/"))

    # -- descriptors -------------------------------------------------------------

    def holding_folders(self) -> contextlib.AbstractContextManager[None]:
        """Hold the folders walked to open until the block ends (:meth:`Folders.holding`):
        an operation on many paths opens each folder once."""
        return self.folders.holding()

    # -- reading -----------------------------------------------------------------

    def lstat(self, rel: str) -> os.stat_result | None:
        """The path's own stat (symlinks not followed), or None when absent."""
        with self.folders.parent(rel) as (fd, _):
            if fd is None:
                return None
            try:
                return os.stat(_leaf(rel), dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return None

    def holds(self, rel: str, seen: bytes | None) -> bool:
        """Whether ``rel`` still holds what a read saw: ``seen`` is the stat fingerprint of
        what was read (:func:`~snapstore.core.records.fingerprint`), or None for nothing (no
        path, or a folder: folders are not versioned). Capture, scan and rewind ask this
        under the write lock, so that what they commit is what the path holds."""
        try:
            now = self.lstat(rel)
        except SnapstoreError:
            return False
        if seen is None:
            return now is None or stat.S_ISDIR(now.st_mode)
        return now is not None and fingerprint(now) == seen

    def read(self, rel: str) -> Entry | None:
        """The current content of ``rel``, or None when it does not exist."""
        with self.folders.parent(rel) as (fd, _):
            return None if fd is None else _read_at(fd, _leaf(rel), rel)

    @contextmanager
    def reading(self, rel: str, seen: bytes) -> Iterator[BinaryIO]:
        """``rel`` open for reading in pieces (a big file's chunks), refused with
        :class:`FileChanged` unless it is still the regular file whose stat fingerprint a
        read saw (``seen``)."""
        with self.folders.parent(rel) as (fd, _):
            st = None if fd is None else self.lstat(rel)
            if fd is None or st is None or fingerprint(st) != seen:
                raise FileChanged(f"{rel} changed while it was being captured", path=rel)
            handle, now = _open_regular(fd, _leaf(rel), rel, st)
            with handle:
                if fingerprint(now) != seen:
                    raise FileChanged(f"{rel} changed while it was being captured", path=rel)
                yield handle

    def read_state(
        self, rel: str, links_absent: bool = False, limit: int | None = None
    ) -> tuple[Entry | None, bool]:
        """What ``rel`` holds as a versioned object, and whether a folder stands there.

        Folders are not versioned: one standing at the path counts as absent (an
        agent that turns a folder into a file captures the file's absence first).
        With ``links_absent``, a symlink standing in place of a parent folder means
        the path is absent rather than refused (a rewind restoring the folder
        removes the link first; nothing is ever read through it).
        """
        with self.folders.parent(rel, links_absent=links_absent) as (fd, _):
            if fd is None:
                return None, False
            try:
                st = os.stat(_leaf(rel), dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return None, False
            except OSError as exc:
                raise BadInput(f"cannot read {rel}: {exc.strerror}", path=rel) from None
            if stat.S_ISDIR(st.st_mode):
                return None, True
            return _read_at(fd, _leaf(rel), rel, limit), False

    def read_many(self, rels: Iterable[str]) -> Iterator[tuple[str, Entry | SnapstoreError | None]]:
        """Read many paths, opening each run of paths in one folder once (a scan's reads).

        A path that cannot be read comes back with its error instead of raising.
        """
        for _, group in itertools.groupby(rels, key=_folder):
            paths = list(group)
            with contextlib.ExitStack() as stack:
                try:
                    fd, _ = stack.enter_context(self.folders.parent(paths[0]))
                except SnapstoreError as exc:
                    yield from ((rel, exc) for rel in paths)
                    continue
                for rel in paths:
                    try:
                        entry = None if fd is None else _read_at(fd, _leaf(rel), rel)
                    except SnapstoreError as exc:
                        yield rel, exc
                    else:
                        yield rel, entry

    def missing_parents(self, rel: str) -> int:
        """How many of the parent folders of ``rel`` are not folders yet (a symlink to a
        folder, or a file, standing there counts as missing: a write replaces it)."""
        parts = rel.split("/")[:-1]
        for depth in range(len(parts), 0, -1):
            try:
                st = os.lstat(os.path.join(self.root, *parts[:depth]))
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                return len(parts) - depth
        return len(parts)

    # -- writing -----------------------------------------------------------------

    def write(
        self,
        rel: str,
        entry: Entry | None,
        durable: bool = True,
        pieces: Iterable[bytes] | None = None,
    ) -> None:
        """Atomically make ``rel`` hold ``entry`` (temp file, then rename); None deletes it.

        A big file's bytes come as ``pieces`` (the store's verified chunks): an error
        raised by them, before the last, leaves the path as it was.

        With ``durable`` the file and its folder are synced before this returns.
        Without, nothing is synced, and the caller must :meth:`flush` the paths it
        wrote before it counts them as written: one flush for many files.
        """
        durable = durable and self.durable
        name = _leaf(rel)
        if self.store_of(rel) is not None:  # a path recorded before stores were refused
            raise UnsafePath(f"{rel} is inside a snapstore store; it is never written")
        try:
            if entry is None:
                self._delete(rel, name, durable)
                return
            with self.folders.parent(rel, create=True) as (fd, created):
                assert fd is not None
                tmp = f".snapstore-{os.urandom(6).hex()}.tmp"  # matches TEMP_NAME
                try:
                    if isinstance(entry.data, Big):
                        if pieces is None:
                            raise ValueError(f"{rel}: a big file is written from its pieces")
                        _write_file(fd, tmp, pieces, entry.mode, durable)
                    elif entry.kind == LINK:
                        os.symlink(os.fsdecode(entry.data), tmp, dir_fd=fd)
                    else:
                        _write_file(fd, tmp, (entry.data,), entry.mode, durable)
                    faults.point("fsio.before_rename")
                    self.folders.confirm(rel, rel.split("/")[:-1], fd)
                    os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
                except BaseException:
                    _unlink_quietly(tmp, fd)
                    raise
                if durable:
                    os.fsync(fd)
            if created:  # the entries of the folders made: in their parents
                made = _parents_of_made(rel, created)
                if durable:
                    self._sync_folders(made)
                else:
                    self._made.update(made)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise StoreFull(f"no space left on the device to write {rel}") from None
            if exc.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.ENAMETOOLONG, errno.EACCES):
                raise BadInput(f"cannot write {rel}: {exc.strerror}") from None
            raise

    def _delete(self, rel: str, name: str, durable: bool) -> None:
        with self.folders.parent(rel) as (fd, _):
            if fd is None:
                return
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return
            if stat.S_ISDIR(st.st_mode):
                raise BadInput(f"cannot delete {rel}: it is now a folder")
            faults.point("fsio.before_unlink")
            self.folders.confirm(rel, rel.split("/")[:-1], fd)
            os.unlink(name, dir_fd=fd)
            if durable:
                os.fsync(fd)

    def flush(self, rels: Iterable[str]) -> None:
        """Make what was written to ``rels`` without ``durable`` durable, at once.

        Many paths cost one ``syncfs`` per file system that holds them (Linux);
        a few, or where ``syncfs`` is missing, an ``fsync`` of each file, of each
        folder that holds them (or held what was removed), and of each folder in
        which those writes made a folder. A folder that is gone, or that a file or
        link has replaced since, is skipped.
        """
        made, self._made = self._made, set()
        if not self.durable:
            return
        rels = sorted(set(rels), key=_folder)
        folders: dict[int, int] = {}  # st_dev -> an open folder on that file system
        per_file = len(rels) <= FSYNC_EACH or _syncfs() is None
        try:
            for _, group in itertools.groupby(rels, key=_folder):
                paths = list(group)
                with self.folders.parent(paths[0], links_absent=True) as (fd, _):
                    if fd is None:
                        continue
                    if per_file:
                        for rel in paths:
                            _fsync_at(fd, _leaf(rel))
                        os.fsync(fd)
                    else:
                        folders.setdefault(os.fstat(fd).st_dev, os.dup(fd))
            if per_file:
                self._sync_folders(made - {_folder(rel) for rel in rels})
            syncfs = _syncfs()
            for fd in folders.values():
                if syncfs is not None and syncfs(fd) != 0:
                    import ctypes

                    err = ctypes.get_errno()
                    raise OSError(err, os.strerror(err))
        finally:
            for fd in folders.values():
                os.close(fd)

    def _sync_folders(self, folders: Iterable[str]) -> None:
        """``fsync`` each of these folders ("" is the root) that is still a folder."""
        for folder in sorted(folders):
            inside = f"{folder}/-" if folder else "-"  # a name in it: the walk opens it
            with self.folders.parent(inside, links_absent=True) as (fd, _):
                if fd is not None:
                    os.fsync(fd)

    def remove_temp_files(self, rel: str) -> list[str]:
        """Remove temp files that an interrupted write left beside ``rel``."""
        removed = []
        with self.folders.parent(rel) as (fd, _):
            if fd is None:
                return []
            names = [name for name in os.listdir(fd) if TEMP_NAME.fullmatch(name)]
            if names:
                faults.point("fsio.before_unlink")
                self.folders.confirm(rel, rel.split("/")[:-1], fd)
            for name in names:
                _unlink_quietly(name, fd)
                removed.append(name)
            if removed:
                os.fsync(fd)
        return removed

    def occupied(self, rel: str) -> bool:
        """Whether a file or a link (not a folder) is at ``rel``; nothing is followed."""
        with self.folders.parent(rel, links_absent=True) as (fd, _):
            if fd is None:
                return False
            try:
                st = os.stat(_leaf(rel), dir_fd=fd, follow_symlinks=False)
            except OSError:
                return False
            return not stat.S_ISDIR(st.st_mode)

    def files_below(self, rel: str) -> list[str]:
        """Every path (file or link, never followed) below the folder ``rel``."""
        found: list[str] = []
        with self.folders.parent(rel, links_absent=True) as (fd, _):
            if fd is not None:
                _walk_below(fd, _leaf(rel), rel, found)
        return found

    def remove_empty_tree(self, rel: str) -> None:
        """Remove the folder ``rel`` if it holds nothing but empty folders; never a file.

        A rewind calls this where a file must come back in place of a folder that the
        rewind's own deletions emptied. A folder that still holds a file stays, and
        the write that needs its place fails with a clear error.
        """
        with self.folders.parent(rel) as (fd, _):
            if fd is None:
                return
            faults.point("fsio.before_rmdir")
            self.folders.confirm(rel, rel.split("/")[:-1], fd)
            self.folders.forget(rel)
            _remove_empty_tree(fd, _leaf(rel))

    def make_folder(self, rel: str) -> bool:
        """Create the folder ``rel`` (and its parents), never through a symlink; whether it
        was created (False: it was there)."""
        rel = self._folder_rel(rel)
        with self.folders.parent(f"{rel}/-", create=True) as (_, created):
            pass
        if created and self.durable:
            self._sync_folders(_parents_of_made(f"{rel}/-", created))
        return created > 0

    def remove_folder(self, rel: str) -> bool:
        """Remove the folder ``rel`` if it is empty; whether it was removed."""
        rel = self._folder_rel(rel)
        return self.remove_empty_parents(f"{rel}/-", 1) == [rel]

    def _folder_rel(self, rel: str) -> str:
        """``rel`` as a folder snapstore may make or remove: inside the workspace, and
        neither a store nor git's own (``.git``)."""
        checked = self.relpath(rel)
        if ".git" in checked.split("/"):
            raise UnsafePath(f"{rel} is inside .git, which snapstore never writes")
        return checked

    def remove_empty_parents(self, rel: str, depth: int, durable: bool = True) -> list[str]:
        """Remove up to ``depth`` parent folders of ``rel`` that are now empty, deepest first.

        Without ``durable``, nothing is synced: the caller flushes the folders removed
        (:meth:`flush` of the list returned), as it does its writes."""
        parts = rel.split("/")[:-1]
        removed = []
        for level in range(len(parts), max(len(parts) - depth, 0), -1):
            folder = "/".join(parts[:level])
            with self.folders.parent(folder) as (fd, _):
                if fd is None:
                    continue
                faults.point("fsio.before_rmdir")
                self.folders.confirm(folder, parts[: level - 1], fd)
                self.folders.forget(folder)
                try:
                    os.rmdir(parts[level - 1], dir_fd=fd)
                except FileNotFoundError:
                    continue  # already gone: an interrupted rewind removed it
                except OSError:
                    break
                if durable and self.durable:
                    os.fsync(fd)
            removed.append(folder)
        return removed


def _walk_below(parent_fd: int, name: str, rel: str, found: list[str]) -> None:
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except OSError:
        return  # not a folder (or gone): nothing below it
    try:
        for entry in sorted(os.listdir(fd)):
            try:
                st = os.stat(entry, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                _walk_below(fd, entry, f"{rel}/{entry}", found)
            else:
                found.append(f"{rel}/{entry}")
    finally:
        os.close(fd)


def _remove_empty_tree(parent_fd: int, name: str) -> None:
    """Remove folder ``name`` of ``parent_fd`` and its empty subfolders, depth first, never
    following a link; stops quietly at the first entry that is not an empty folder."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except OSError:
        return
    try:
        for entry in os.listdir(fd):
            try:
                st = os.stat(entry, dir_fd=fd, follow_symlinks=False)
            except OSError:
                return
            if not stat.S_ISDIR(st.st_mode):
                return
            _remove_empty_tree(fd, entry)
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(name, dir_fd=parent_fd)
        os.fsync(parent_fd)


def _read_at(fd: int, name: str, rel: str, limit: int | None = None) -> Entry | None:
    """Read ``name`` in the folder ``fd`` without following a symlink.

    A big file (over :data:`~snapstore.core.blobs.BIG`) is not held: it is hashed in
    pieces and comes back as :class:`~snapstore.core.records.Big`. A file over
    ``limit`` is refused (:class:`TooLarge`) unread.
    """
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BadInput(f"cannot read {rel}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        return Entry(LINK, os.fsencode(os.readlink(name, dir_fd=fd)), 0o777, st)
    if limit is not None and stat.S_ISREG(st.st_mode) and st.st_size > limit:
        raise TooLarge(f"{rel} is larger than the capture limit ({limit} bytes)", path=rel)
    handle, st = _open_regular(fd, name, rel, st)
    with handle:
        if st.st_size <= blobs.BIG:
            return Entry(FILE, handle.read(), stat.S_IMODE(st.st_mode), st)
        hasher, size = blobs.hasher(), 0
        for piece in iter(lambda: handle.read(PIECE), b""):
            hasher.update(piece)
            size += len(piece)
    return Entry(FILE, Big(hasher.digest(), size), stat.S_IMODE(st.st_mode), st)


def _open_regular(
    fd: int, name: str, rel: str, st: os.stat_result
) -> tuple[BinaryIO, os.stat_result]:
    """``name`` opened for reading, and its stat, refused unless it is a regular file (never
    a link). A plain function, not a context manager: every hook's read goes through it."""
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{rel} is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{rel} is not a regular file")
    try:
        ffd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    except OSError as exc:
        raise BadInput(f"cannot read {rel}: {exc.strerror}") from None
    handle = os.fdopen(ffd, "rb")
    st = os.fstat(ffd)
    if not stat.S_ISREG(st.st_mode):
        handle.close()
        raise UnsafePath(f"{rel} changed type while being read")
    return handle, st


def _realpath(path: str, text: str) -> str:
    """``os.path.realpath``, where a link that changes while it is resolved is refused."""
    try:
        return os.path.realpath(path)
    except OSError as exc:
        raise UnsafePath(
            f"{text}: a folder on the way changed while it was checked ({exc.strerror})"
        ) from None


def _parents_of_made(rel: str, created: int) -> set[str]:
    """The folders whose entries changed when the walk to ``rel`` made the last
    ``created`` folders on its way: the parent of each ("" is the root)."""
    parts = rel.split("/")[:-1]
    return {"/".join(parts[:depth]) for depth in range(len(parts) - created, len(parts))}


def _leaf(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]


def _folder(rel: str) -> str:
    return rel.rpartition("/")[0]


def _is_within(path: str, root: str) -> bool:
    return path.startswith(root.rstrip(os.sep) + os.sep)


def _write_file(dir_fd: int, name: str, pieces: Iterable[bytes], mode: int, durable: bool) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
    try:
        for piece in pieces:
            view = memoryview(piece)
            while view:
                view = view[os.write(fd, view) :]
        os.fchmod(fd, mode & 0o777)  # never setuid, setgid or sticky
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_at(dir_fd: int, name: str) -> None:
    """Sync a regular file in ``dir_fd`` (a link or a gone path has no data to sync)."""
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    """libc's ``syncfs`` (Linux), or None where there is none."""
    import ctypes  # only rewinds need it: not on the hook path

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syncfs
    except (OSError, AttributeError):
        return None


def _unlink_quietly(name: str, dir_fd: int) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=dir_fd)


def exclude_from_git(root: str, rel: str, git_dir: str | None = None) -> bool:
    """Add ``/REL`` to the repository's ``info/exclude`` (the store, a personal settings
    file: kept out of commits), where git reads it for this work tree: ``.git/info`` of a
    plain repository, the common folder's of a linked worktree, a submodule's own, or
    ``git_dir``'s (``GIT_DIR``); False when ``root`` is no repository git would use, or
    the line is there."""
    from ..git.layout import exclude, find  # only init and hook install write it

    try:
        layout = find(root, git_dir)
    except GitRefused:
        return False
    return layout is not None and exclude(layout, "/" + rel.replace(os.sep, "/"))
