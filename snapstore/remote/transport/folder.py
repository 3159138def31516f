"""A remote in a plain folder (``file:///PATH``): a shared disk, an NFS mount, or a test.

Objects are files named by their keys. Every write goes to a temporary file in
the target's own folder first and is fsynced, so a reader never sees a partial
object. A create-only write publishes the temporary file with ``link(2)``, which
fails when the name exists; unlike ``O_EXCL`` it is atomic on NFS too, and an NFS
reply lost and retried is told apart by the temporary file's link count.
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from .backend import (
    TEMP_PREFIX,
    Capabilities,
    ObjectInfo,
    ObjectStore,
    check_folder,
    check_key,
    check_span,
)
from .errors import MissingBucket, ObjectMissing, RemoteDenied, RemoteError

_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV}
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 16 * 1024 * 1024


class FolderObjectStore(ObjectStore):
    """Objects as files under ``root``, which must exist (as a bucket must)."""

    def __init__(self, root: str | os.PathLike[str], *, name: str | None = None):
        self.root = Path(root)
        if not self.root.is_absolute():
            raise ValueError(f"a folder remote needs an absolute path: {root}")
        self.url = self.root.as_uri()
        self.name = name

    # -- reading

    def get(self, key: str, limit: int | None = None) -> bytes:
        with self._open(key) as (fd, size):
            if limit is not None and size > limit:
                raise self.too_large(key, size, limit)
            data = self._read(fd, key, 0, size + 1)  # one more: a file that grew is seen
        if len(data) != size:
            raise RemoteError(
                "object changed while it was read", remote=self.url, key=key, name=self.name
            )
        return data

    def get_range(self, key: str, start: int, end: int) -> bytes:
        check_span(start, end)
        with self._open(key) as (fd, size):
            data = self._read(fd, key, start, min(end, size))
        return self.expect_range(key, data, start, end)

    def head(self, key: str) -> ObjectInfo | None:
        try:
            st = os.stat(self._path(key), follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            self._require_root()
            return None
        except OSError as exc:
            raise self._error(exc, key) from exc
        if not stat.S_ISREG(st.st_mode):
            return None
        return ObjectInfo(key, st.st_size, st.st_mtime, f"{st.st_mtime_ns:x}-{st.st_size:x}")

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        prefix = check_folder(prefix)
        self._require_root()
        top = self.root / prefix if prefix else self.root

        def fail(exc: OSError) -> None:
            if not isinstance(exc, (FileNotFoundError, NotADirectoryError)):
                raise self._error(exc, prefix or None) from exc

        for folder, dirs, files in os.walk(top, onerror=fail):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel = os.path.relpath(folder, self.root).replace(os.sep, "/")
            for fname in files:
                if fname.startswith("."):  # temporary files, and nothing of ours
                    continue
                key = fname if rel == "." else f"{rel}/{fname}"
                try:
                    st = os.stat(os.path.join(folder, fname), follow_symlinks=False)
                except FileNotFoundError:  # deleted while we listed
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue  # a link, a FIFO, a device: never an object
                yield ObjectInfo(key, st.st_size, st.st_mtime, f"{st.st_mtime_ns:x}-{st.st_size:x}")

    # -- writing

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        tmp = self._write_temp(path, data, key)
        try:
            os.replace(tmp, path)
        except OSError as exc:
            _unlink(tmp)
            raise self._error(exc, key) from exc
        _sync_folder(path.parent)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        path = self._path(key)
        tmp = self._write_temp(path, data, key)
        try:
            for _ in range(3):  # the holder may be deleted between link and compare
                try:
                    os.link(tmp, path)
                    linked = True
                except FileExistsError:
                    linked = os.stat(tmp).st_nlink > 1
                except OSError as exc:
                    if exc.errno in _NO_LINKS:
                        raise RemoteError(
                            "the folder's file system has no hard links, which "
                            "create-only writes need",
                            remote=self.url,
                            key=key,
                            name=self.name,
                            detail=exc.strerror,
                        ) from exc
                    raise self._error(exc, key) from exc
                if linked:
                    _sync_folder(path.parent)
                    return True
                same = self.holds(key, data)
                if same is not None:
                    return same
            return False
        finally:
            _unlink(tmp)

    def delete(self, key: str) -> None:
        try:
            os.unlink(self._path(key))
        except FileNotFoundError:
            self._require_root()
        except OSError as exc:
            raise self._error(exc, key) from exc

    def check(self) -> Capabilities:
        self._require_root()
        probe = f"probe-{uuid.uuid4().hex}"
        try:
            first = self.put_if_absent(probe, b"first")
            second = self.put_if_absent(probe, b"second")
        finally:
            self.delete(probe)
        return Capabilities(conditional_writes=first and not second)

    # -- helpers

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    @contextmanager
    def _open(self, key: str) -> Iterator[tuple[int, int]]:
        """Open the object at ``key`` for reading: (descriptor, size).

        The folder may be anyone's, so nothing in it is trusted: no component is
        followed when it is a symlink, the open never blocks (a FIFO), and anything
        that is not a regular file (a device, a socket) is refused before a byte is
        read.
        """
        parts = check_key(key).split("/")
        fd = -1
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the user's
            for part in parts[:-1]:
                if _is_link(part, fd):
                    raise OSError(errno.ELOOP, "a folder of the key is a symlink")
                nfd = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nfd
            nfd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nfd
            st = os.fstat(fd)
        except OSError as exc:
            if fd >= 0:
                os.close(fd)
            if exc.errno in (errno.ELOOP, errno.ENXIO):
                raise self._not_a_file(key) from None
            raise self._error(exc, key) from exc
        try:
            if not stat.S_ISREG(st.st_mode):
                raise self._not_a_file(key)
            yield fd, st.st_size
        finally:
            os.close(fd)

    def _read(self, fd: int, key: str, start: int, end: int) -> bytes:
        """Bytes ``start`` up to ``end`` of an open object (fewer at its end)."""
        parts = []
        try:
            while start < end:
                chunk = os.pread(fd, min(end - start, _CHUNK), start)
                if not chunk:
                    break
                parts.append(chunk)
                start += len(chunk)
        except OSError as exc:
            raise self._error(exc, key) from exc
        return b"".join(parts)

    def _not_a_file(self, key: str) -> RemoteError:
        return RemoteError(
            "object is not a regular file (a symlink, a FIFO or a device); it is never read",
            remote=self.url,
            key=key,
            name=self.name,
        )

    def _require_root(self) -> None:
        if not self.root.is_dir():
            raise MissingBucket("folder does not exist", remote=self.url, name=self.name)

    def _write_temp(self, path: Path, data: bytes, key: str) -> str:
        self._require_root()
        tmp = str(path.parent / f"{TEMP_PREFIX}{uuid.uuid4().hex}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            _unlink(tmp)
            raise self._error(exc, key) from exc
        return tmp

    def _error(self, exc: OSError, key: str | None) -> RemoteError:
        if isinstance(exc, (FileNotFoundError, NotADirectoryError, IsADirectoryError)):
            self._require_root()
            return ObjectMissing("no such object", remote=self.url, key=key, name=self.name)
        if isinstance(exc, PermissionError):
            return RemoteDenied("permission denied", remote=self.url, key=key, name=self.name)
        return RemoteError(
            exc.strerror or type(exc).__name__, remote=self.url, key=key, name=self.name
        )


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _unlink(path: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)


def _sync_folder(folder: Path) -> None:
    """Make a rename or link durable; some file systems refuse to fsync a folder."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
