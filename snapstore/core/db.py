"""The LMDB environment behind a store: named databases, locks, map growth.

LMDB gives us crash-safe transactions and readers that never block. What it
does not give us is a writer lock with a timeout, so writers first take an
``flock`` on ``write.lock`` (waiting up to ``lock_timeout``; snapstore.core.locks)
and only then begin the LMDB write transaction. The held lock is a value, a
:class:`Writer`, and the only way to commit: a commit cannot happen unlocked.
Every opener also holds a shared ``flock`` on ``open.lock``; compaction takes it
exclusively, because it replaces the data file and nobody may have the old one
mapped.

When a write finds the map full it doubles the map and retries the whole
transaction. Another process that later sees ``MapResizedError`` adopts the new
size with ``set_mapsize(0)``.

LMDB maps the data file and trusts it: a page past the end of a truncated file
kills the process with SIGBUS. So before the file is mapped, and before every
transaction after that, its size is checked against what its meta pages claim
(:func:`check_data_file`), and a short file is refused as :class:`StoreDamaged`.

A store that cannot be written (read-only files or file system) is opened
read-only: LMDB without its lock file, which would need write access. Instead
the store holds a shared ``flock`` on ``write.lock`` (taking an ``flock`` needs
no write access) for as long as it is open, so no snapstore writer commits
while it reads. Its writes raise :class:`StoreReadOnly`.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import struct
from _thread import get_ident  # threading.get_ident, without loading threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, BinaryIO, TypeVar

import lmdb

from . import faults
from .errors import (
    BadInput,
    NoStore,
    NotAFolder,
    SchemaMismatch,
    SnapstoreError,
    StoreCorrupt,
    StoreDamaged,
    StoreFull,
    StoreReadOnly,
)
from .locks import DENIED, OPEN_LOCK, WRITE_LOCK, flock, flock_existing, upgrade

#: The store is private, whatever the umask: it holds the bytes of every file captured (a
#: 0600 ``.env`` too). Its folders are made 0700 and its files 0600 (a umask only takes
#: bits away), and a store opened for writing has any wider mode taken back.
DIR_MODE, FILE_MODE = 0o700, 0o600
SCHEMA_VERSION = 7
#: Older schemas this snapstore upgrades in place when it opens a store (docs/format.md).
UPGRADABLE = (1, 2, 3, 4, 5, 6)
DATABASES = (
    "meta",
    "blobs",
    "sessions",
    "turns",
    "changes",
    "heads",
    "paths",
    "index",
    "events",
    "counts",
    "git",
    "gitrefs",
    "baseline",
)
#: Databases a schema added, by the version that added them: a store of an older schema
#: lacks them, and opening it for the upgrade creates them empty.
ADDED = {"counts": 2, "git": 5, "gitrefs": 6, "baseline": 7}
INITIAL_MAP_SIZE = 64 * 1024 * 1024
DB_DIR = "db"
#: In the store's folder: ``*``, so that git never adds the store, whatever the layout.
GITIGNORE = ".gitignore"
COMPACT_DIR = "db.compact"
#: Below this much free space, a commit that fails with EIO is taken for a full disk.
LOW_SPACE = 64 * 1024 * 1024
#: An LMDB data file begins with two meta pages (``MDB_meta`` in LMDB's mdb.c; little-endian
#: and 64-bit in the builds py-lmdb ships): a 16-byte page header (page number, pad, flags),
#: then the magic, the format version, the map's address and size, the free and main
#: databases (48 bytes each; the first one's ``md_pad`` is the page size), the last page used
#: and the id of the transaction that wrote it. The second meta page starts one page in.
_META = struct.Struct("<8x2xH4xII16xI92xQQ")
_P_META, _MAGIC, _DATA_VERSION = 0x08, 0xBEEFC0DE, 1
#: Where the magic sits; a file too short to show it cannot be told from a foreign one.
_MAGIC_END = 20
T = TypeVar("T")


def _denied(exc: BaseException) -> str | None:
    """Why the store cannot be written, when ``exc`` is the file system refusing a write."""
    if isinstance(exc, OSError):
        return DENIED.get(exc.errno or 0)
    if isinstance(exc, lmdb.ReadonlyError):  # LMDB's name for EACCES
        return DENIED[errno.EACCES]
    if isinstance(exc, lmdb.Error) and os.strerror(errno.EROFS) in str(exc):
        return DENIED[errno.EROFS]
    return None


def data_file(store_dir: str) -> str:
    """The LMDB data file of a store: the one file whose size is the store's size."""
    return os.path.join(store_dir, DB_DIR, "data.mdb")


def store_size(store_dir: str) -> int:
    """The size of a store's data file, without opening it (0 when there is none)."""
    try:
        return os.path.getsize(data_file(store_dir))
    except OSError:
        return 0


def _meta(raw: bytes) -> tuple[int, int, int] | None:
    """The page size, last page used and transaction id of a meta page read from the file
    (None: too short, or not a valid meta page)."""
    if len(raw) < _META.size:
        return None
    flags, magic, version, page_size, last_page, txnid = _META.unpack(raw)
    if not flags & _P_META or magic != _MAGIC or version != _DATA_VERSION:
        return None
    return page_size, last_page, txnid


def check_data_file(fd: int, store_dir: str) -> None:
    """Refuse a data file that LMDB must not map (``fd`` is open on it).

    LMDB picks the valid meta page with the higher transaction id; every page up
    to that meta page's last page must be in the file, or reading it is SIGBUS.
    A file with no LMDB magic is :class:`StoreCorrupt` (not a store); one that
    starts as LMDB but is shorter than its meta pages claim, or whose meta pages
    are unreadable, is :class:`StoreDamaged`. Costs one ``fstat`` and two
    ``pread`` calls: it runs before every transaction.
    """
    head = os.pread(fd, _META.size, 0)
    first = _meta(head)
    if first is not None:
        page_size = first[0]
        if 512 <= page_size <= 65536 and not page_size & (page_size - 1):
            second = _meta(os.pread(fd, _META.size, page_size))
            # The size after the meta pages: a writer extends the file with its pages
            # before it writes the meta page naming them, so a commit that lands
            # between the two reads can only make the file larger than they need.
            size = os.fstat(fd).st_size
            if second is not None:
                needed = (max(first, second, key=lambda meta: meta[2])[1] + 1) * page_size
                if size >= needed:
                    return
                raise _damaged(
                    store_dir,
                    size,
                    f"is truncated: {size} bytes, but its last commit needs {needed}",
                    needed,
                )
            if size < page_size + _META.size:
                needed = (first[1] + 1) * page_size
                raise _damaged(
                    store_dir,
                    size,
                    f"is truncated: {size} bytes, but its last commit needs {needed}",
                    needed,
                )
            raise _damaged(store_dir, size, "has an unreadable second meta page")
        raise _damaged(
            store_dir, os.fstat(fd).st_size, f"records an impossible page size {page_size}"
        )
    size = os.fstat(fd).st_size
    if len(head) < _MAGIC_END:
        raise _damaged(store_dir, size, f"is {size} bytes, cut short or not a snapstore store")
    if head[16:_MAGIC_END] != _MAGIC.to_bytes(4, "little"):
        raise StoreCorrupt(f"{store_dir} is not a snapstore store (the database file is not LMDB)")
    raise _damaged(
        store_dir,
        size,
        f"is {size} bytes, cut short in its first meta page"
        if size < _META.size
        else "has an unreadable first meta page",
    )


def _damaged(store_dir: str, size: int, what: str, needed: int | None = None) -> StoreDamaged:
    return StoreDamaged(
        f"the store at {store_dir} is damaged: its data file {what}",
        path=os.path.join(store_dir, DB_DIR, "data.mdb"),
        size=size,
        needed=needed,
    )


def _is_enospc(exc: BaseException) -> bool:
    return "No space left" in str(exc) or getattr(exc, "errno", None) == errno.ENOSPC


class Writer:
    """The write lock of one :class:`Database`, held: what :meth:`Database.write_lock`
    yields, and the only way to commit.

    While it is held no other snapstore writer commits, so the commits made
    through it may rest on what was read between them (a rewind's journal and
    finish, gc's prune and sweep). It stops working when the block that took
    the lock ends.
    """

    __slots__ = ("_db", "_held")

    def __init__(self, db: Database):
        self._db, self._held = db, True

    def write(self, fn: Callable[[lmdb.Transaction], T]) -> T:
        """Run ``fn`` in one durable write transaction, growing the map if it fills.

        ``fn`` may run more than once, so it must only touch the transaction.
        """
        return self._live()._commit(fn)

    def compact(self, timeout: float) -> bool:
        """Rewrite the data file without its free pages (:meth:`Database._compact`)."""
        return self._live()._compact(timeout)

    def _live(self) -> Database:
        if not self._held:
            raise RuntimeError("the store's write lock was released; take it again to write")
        return self._db


class Database:
    """One LMDB environment with snapstore's named databases."""

    def __init__(
        self,
        store_dir: str,
        *,
        create: bool = False,
        lock_timeout: float = 10.0,
        map_size: int = INITIAL_MAP_SIZE,
        meta: dict[bytes, bytes] | None = None,
        durable: bool = True,
    ):
        self.store_dir = store_dir
        self.lock_timeout = lock_timeout
        #: Whether a commit is synced to disk before it returns; see :class:`~snapstore.Store`.
        self.durable = durable
        #: Why the store cannot be written (None: it can); see :meth:`_open_read_only`.
        self.read_only: str | None = None
        self._pid = os.getpid()
        self._writers: set[int] = set()  # the threads holding the write lock: one, or none
        self._open_fd: int | None = None
        self._guard_fd: int | None = None
        self._data_fd: int | None = None
        if create and not os.path.lexists(store_dir):
            try:
                _build(store_dir, meta or {}, map_size, durable)
            except OSError as exc:
                reason = _denied(exc)
                if reason is None:
                    raise
                raise StoreReadOnly(
                    f"cannot create the store at {store_dir} ({reason})", reason=reason
                ) from None
        _check_store_dir(store_dir, create)
        # An existing database is opened strictly, even by init: keys are never added to a
        # database that is not ours.
        fresh = create and not os.path.exists(data_file(store_dir))
        try:
            try:
                self._open_fd = flock(
                    os.path.join(store_dir, OPEN_LOCK),
                    fcntl.LOCK_SH,
                    lock_timeout,
                    "compaction lock",
                    create=FILE_MODE,
                )
                self.env = self._open_env(create=fresh, map_size=map_size)
            except StoreReadOnly as exc:
                if fresh:
                    raise
                self._open_read_only(exc.reason, map_size)
            self.dbs = (
                {name: self.env.open_db(name.encode(), create=True) for name in DATABASES}
                if fresh
                else self._open_existing()
            )
            self.env.reader_check()
            if create and not fresh:
                self._check_schema()
            if create:
                self._init_meta(meta or {})
            self._check_schema()
            if self.read_only is None:
                make_private(store_dir)
        except BaseException:
            self.close()
            raise

    def _open_env(self, create: bool, map_size: int, readonly: bool = False) -> lmdb.Environment:
        path = os.path.join(self.store_dir, DB_DIR)
        if create:
            os.makedirs(path, DIR_MODE, exist_ok=True)
        elif not os.path.isfile(data_file(self.store_dir)):
            raise StoreCorrupt(f"{self.store_dir} is not a snapstore store (no database)")
        else:
            # LMDB would initialise an empty file, and maps a short one: refuse before either.
            self._open_data_fd()
            self._check_data()
        try:
            env = lmdb.open(
                path,
                subdir=True,
                create=create,
                map_size=map_size,
                max_dbs=len(DATABASES) + 2,
                readahead=False,
                meminit=False,
                readonly=readonly,
                lock=not readonly,
                sync=self.durable,
                metasync=self.durable,
                mode=DIR_MODE,  # its folder; the files get it without the x bits: 0600
            )
        except lmdb.InvalidError:
            raise StoreCorrupt(
                f"{self.store_dir} is not a snapstore store (the database file is not LMDB)"
            ) from None
        except lmdb.Error as exc:
            reason = _denied(exc)
            if reason is not None:
                raise StoreReadOnly(
                    f"the store at {self.store_dir} is read-only ({reason})", reason=reason
                ) from None
            if _is_enospc(exc):
                raise StoreFull(f"no space left to open the store: {exc}") from None
            if "already open in this process" in str(exc):  # LMDB's rule, not a damaged store
                raise BadInput(
                    f"the store at {self.store_dir} is already open in this process: use the "
                    "Store you have, or close it first (one open Store per store and process)"
                ) from None
            raise StoreCorrupt(f"cannot open the store at {self.store_dir}: {exc}") from None
        if create:
            self._open_data_fd()
        return env

    def _open_read_only(self, reason: str, map_size: int) -> None:
        """Open a store that cannot be written, safely, for reading only.

        LMDB's lock file needs write access, so the environment is opened
        without it. Its readers then are not registered, and a writer (another
        user's, with write access) could reuse the pages they read: instead the
        store holds a shared ``flock`` on ``write.lock``, which every snapstore
        writer takes exclusively, for as long as it is open. On a read-only file
        system no one can write, and the lock file may be left out.
        """
        self.read_only = reason
        lock_dir = self.store_dir
        if self._open_fd is None:
            self._open_fd = flock_existing(
                os.path.join(lock_dir, OPEN_LOCK),
                fcntl.LOCK_SH,
                self.lock_timeout,
                "compaction lock",
            )
        self._guard_fd = flock_existing(
            os.path.join(lock_dir, WRITE_LOCK), fcntl.LOCK_SH, self.lock_timeout, "the write lock"
        )
        if self._guard_fd is None and not _read_only_fs(lock_dir):
            raise StoreReadOnly(
                f"the store at {self.store_dir} is read-only ({reason}) and has "
                "no write.lock to keep writers out while it is read",
                reason=reason,
            )
        self.env = self._open_env(create=False, map_size=map_size, readonly=True)

    def _open_data_fd(self) -> None:
        if self._data_fd is None:
            self._data_fd = os.open(data_file(self.store_dir), os.O_RDONLY | os.O_CLOEXEC)

    def _check_data(self) -> None:
        """Refuse a data file shorter than its last commit, before LMDB maps a missing page."""
        assert self._data_fd is not None
        check_data_file(self._data_fd, self.store_dir)

    def _refuse_writes(self) -> None:
        if self.read_only is not None:
            raise StoreReadOnly(
                f"the store at {self.store_dir} is read-only ({self.read_only})",
                reason=self.read_only,
            )

    def _open_existing(self) -> dict[str, Any]:
        with self.read() as txn:
            present = {bytes(key).decode(errors="replace") for key, _ in txn.cursor()}
        schema = 0
        if "meta" in present:
            meta = self.env.open_db(b"meta", create=False)
            with self.read() as txn:
                raw = txn.get(b"schema", db=meta)
            schema = int(raw) if raw is not None and bytes(raw).isdigit() else 0
        missing = [
            name
            for name in DATABASES
            if name not in present and not (name in ADDED and schema < ADDED[name])
        ]
        if missing:
            raise StoreCorrupt(
                f"{self.store_dir} is not a snapstore store (missing {', '.join(missing)})"
            )
        added = [name for name in DATABASES if name not in present]
        if added and self.read_only is not None:
            raise StoreReadOnly(
                f"the store at {self.store_dir} has schema {schema} and needs an upgrade, "
                f"but it is read-only ({self.read_only})",
                reason=self.read_only,
            )
        # An older store gets the databases later schemas added, empty (Repo then upgrades it).
        return {name: self.env.open_db(name.encode(), create=name in added) for name in DATABASES}

    def _init_meta(self, meta: dict[bytes, bytes]) -> None:
        def put(txn: lmdb.Transaction) -> None:
            for key, value in _initial_meta(meta).items():
                txn.put(key, value, db=self.dbs["meta"], overwrite=False)

        self.write(put)

    def schema(self) -> int | None:
        """The schema version the store records (None: not a snapstore store)."""
        with self.read() as txn:
            raw = txn.get(b"schema", db=self.dbs["meta"])
        if raw is None:
            return None
        try:
            return int(raw)
        except ValueError:
            raise SchemaMismatch(
                f"the store records a malformed schema version {bytes(raw)!r}",
                found=bytes(raw).decode(errors="replace"),
                known=SCHEMA_VERSION,
            ) from None

    def _check_schema(self) -> None:
        found = self.schema()
        if found is None:
            raise StoreCorrupt(f"{self.store_dir} is not a snapstore store (no schema version)")
        if found != SCHEMA_VERSION and found not in UPGRADABLE:
            raise SchemaMismatch(
                f"the store uses schema version {found}; this snapstore knows "
                f"only version {SCHEMA_VERSION}",
                found=found,
                known=SCHEMA_VERSION,
            )

    def _check_fork(self) -> None:
        if os.getpid() != self._pid:
            raise RuntimeError("a snapstore Store must not be used across fork(); open a new one")

    @contextmanager
    def read(self) -> Iterator[lmdb.Transaction]:
        """A read-only transaction; adopts a map grown by another process."""
        self._check_fork()
        self._check_data()
        try:
            txn = self.env.begin()
        except lmdb.MapResizedError:
            self.env.set_mapsize(0)
            txn = self.env.begin()
        try:
            yield txn
        except (lmdb.CorruptedError, lmdb.PageNotFoundError) as exc:
            raise StoreCorrupt(f"the store at {self.store_dir} is damaged: {exc}") from None
        finally:
            txn.abort()

    @contextmanager
    def write_lock(self, timeout: float | None = None) -> Iterator[Writer]:
        """Take the write lock, waiting up to ``timeout`` (default: the store's lock
        timeout), and hold it for the block, whose commits go through the :class:`Writer`
        it yields.

        A thread that holds the lock already must commit through its Writer: taking the
        lock again would only wait for itself, so it is refused at once.
        """
        self._check_fork()
        self._refuse_writes()
        thread = get_ident()
        if thread in self._writers:
            raise RuntimeError(
                "this thread holds the store's write lock already; commit through its handle"
            )
        fd = flock(
            os.path.join(self.store_dir, WRITE_LOCK),
            fcntl.LOCK_EX,
            self.lock_timeout if timeout is None else timeout,
            "the write lock",
            create=FILE_MODE,
        )
        writer = Writer(self)
        self._writers.add(thread)
        try:
            yield writer
        finally:
            writer._held = False
            self._writers.discard(thread)
            os.close(fd)

    def holds_lock(self) -> bool:
        """Whether this thread holds the write lock (in a :meth:`write_lock` block)."""
        return get_ident() in self._writers

    def write(self, fn: Callable[[lmdb.Transaction], T]) -> T:
        """Run ``fn`` in one durable write transaction under the write lock, taken for it
        (see :meth:`Writer.write`)."""
        with self.write_lock() as writer:
            return writer.write(fn)

    def _commit(self, fn: Callable[[lmdb.Transaction], T]) -> T:
        """One write transaction, retried when the map grows; only a :class:`Writer` calls
        this, so the write lock is held."""
        self._check_fork()
        while True:
            self._check_data()
            try:
                with self.env.begin(write=True) as txn:
                    return fn(txn)
            except lmdb.MapFullError:
                self._grow()
            except lmdb.MapResizedError:
                self.env.set_mapsize(0)
            except (lmdb.CorruptedError, lmdb.PageNotFoundError) as exc:
                raise StoreCorrupt(f"the store at {self.store_dir} is damaged: {exc}") from None
            except lmdb.Error as exc:
                raise self._write_failed(exc) from None

    def _write_failed(self, exc: lmdb.Error) -> SnapstoreError:
        """What a failed commit means. LMDB reports a short write (a disk that filled up
        during the commit) as EIO, so EIO on a disk with little room left is a full disk."""
        fs = os.statvfs(self.store_dir)
        free = fs.f_bavail * fs.f_frsize
        eio = getattr(exc, "errno", None) == errno.EIO or "Input/output" in str(exc)
        if _is_enospc(exc) or (eio and free < LOW_SPACE):
            return StoreFull(f"the store's disk is full ({free // 1024} KiB free): {exc}")
        return SnapstoreError(f"the store could not be written: {exc}")

    def _grow(self) -> None:
        size = self.env.info()["map_size"] * 2
        try:
            self.env.set_mapsize(size)
        except lmdb.Error as exc:
            raise StoreFull(f"cannot grow the store's map to {size} bytes: {exc}") from None

    def data_bytes(self) -> int:
        """The size of the data file on disk (it only shrinks by :meth:`compact`)."""
        return os.path.getsize(data_file(self.store_dir))

    def live_bytes(self) -> int:
        """The bytes a compacted copy would take: the pages every database uses."""
        with self.read() as txn:
            stats = [txn.stat(db) for db in self.dbs.values()]
        stats.append(self.env.stat())
        pages = 2 + sum(s["branch_pages"] + s["leaf_pages"] + s["overflow_pages"] for s in stats)
        return pages * stats[-1]["psize"]

    def _compact(self, timeout: float) -> bool:
        """Rewrite the data file without its free pages (``env.copy(compact=True)``).

        The copy replaces ``data.mdb`` by an atomic rename, which is safe only
        while no other process has the environment mapped: this takes
        ``open.lock`` exclusively, waiting up to ``timeout``, and returns False,
        changing nothing, if another opener stays. Only a :class:`Writer` calls
        this, so no other compaction can run meanwhile.
        """
        import shutil  # not at the top: the hook path never needs it (nor bz2, lzma)

        assert self._open_fd is not None
        if not upgrade(self._open_fd, timeout):
            return False
        try:
            db_dir = os.path.join(self.store_dir, DB_DIR)
            tmp = os.path.join(self.store_dir, COMPACT_DIR)
            shutil.rmtree(tmp, ignore_errors=True)
            os.mkdir(tmp, DIR_MODE)
            self.env.copy(tmp, compact=True)
            os.chmod(os.path.join(tmp, "data.mdb"), FILE_MODE)  # LMDB makes its copy 0666
            _fsync(os.path.join(tmp, "data.mdb"))
            faults.point("db.compact_copied")
            map_size = self.env.info()["map_size"]
            self.env.close()
            self._close_data_fd()
            os.replace(os.path.join(tmp, "data.mdb"), os.path.join(db_dir, "data.mdb"))
            _fsync(db_dir)
            faults.point("db.compact_swapped")
            shutil.rmtree(tmp, ignore_errors=True)
            self.env = self._open_env(create=False, map_size=map_size)
            self.dbs = self._open_existing()
        finally:
            fcntl.flock(self._open_fd, fcntl.LOCK_SH)
        return True

    def close(self) -> None:
        env = getattr(self, "env", None)
        if env is not None:
            if os.getpid() == self._pid:
                env.close()
            del self.env  # closed: a later close finds none
        self._close_data_fd()
        for name in ("_guard_fd", "_open_fd"):
            fd = getattr(self, name, None)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)

    def _close_data_fd(self) -> None:
        fd = getattr(self, "_data_fd", None)
        if fd is not None:
            os.close(fd)
            self._data_fd = None


def _read_only_fs(path: str) -> bool:
    return bool(os.statvfs(path).f_flag & os.ST_RDONLY)


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _initial_meta(meta: dict[bytes, bytes]) -> dict[bytes, bytes]:
    return {
        b"schema": str(SCHEMA_VERSION).encode(),
        b"store_id": os.urandom(16).hex().encode(),
        **meta,
    }


def _build(store_dir: str, meta: dict[bytes, bytes], map_size: int, durable: bool) -> None:
    """Make a new store beside ``store_dir`` and rename it into place.

    A crash while creating therefore never leaves a half-made store where one
    is looked for. When two processes create at once, the first rename wins and
    the other's copy is discarded.
    """
    import shutil  # see compact()

    parent, name = os.path.split(os.path.abspath(store_dir))
    _remove_stale_builds(parent, name)
    tmp = os.path.join(parent, f"{name}.new-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    os.mkdir(tmp, DIR_MODE)
    os.mkdir(os.path.join(tmp, DB_DIR), DIR_MODE)
    keep_out_of_git(tmp)
    env = lmdb.open(
        os.path.join(tmp, DB_DIR),
        subdir=True,
        map_size=map_size,
        max_dbs=len(DATABASES) + 2,
        readahead=False,
        meminit=False,
        sync=durable,
        metasync=durable,
        mode=DIR_MODE,  # its folder; the files get it without the x bits: 0600
    )
    try:
        with env.begin(write=True) as txn:
            for db_name in DATABASES:
                env.open_db(db_name.encode(), txn=txn, create=True)
            meta_db = env.open_db(b"meta", txn=txn)
            for key, value in _initial_meta(meta).items():
                txn.put(key, value, db=meta_db)
    finally:
        env.close()
    if durable:
        _fsync(os.path.join(tmp, DB_DIR))
    try:
        os.rename(tmp, store_dir)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # another process created the store first
    else:
        if durable:
            _fsync(parent)


def keep_out_of_git(store_dir: str) -> bool:
    """Put a ``.gitignore`` holding ``*`` in the store's folder (as virtualenv and pytest's
    cache do), so that no git layout ever adds the store: a plain repository, a linked
    worktree, ``GIT_DIR``, a submodule. Whether it was written (False: it was there)."""
    path = os.path.join(store_dir, GITIGNORE)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as handle:
        handle.write("# snapstore's store: never committed\n*\n")
    return True


def _remove_stale_builds(parent: str, name: str) -> None:
    """Remove stores that a crashed creation left half-built beside the real one."""
    import shutil  # see compact()

    prefix = name + ".new-"
    for entry in os.listdir(parent):
        pid = entry[len(prefix) :]
        if entry.startswith(prefix) and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _check_store_dir(store_dir: str, create: bool) -> None:
    try:
        mode = os.stat(store_dir).st_mode
    except FileNotFoundError:
        if not create:
            raise NoStore(f"no snapstore store at {store_dir}", store_dir=store_dir) from None
        mode = None
    if mode is not None and not stat.S_ISDIR(mode):
        kind = "file" if stat.S_ISREG(mode) else "special file (not a folder)"
        raise NotAFolder(
            f"{store_dir} is a {kind}, not a snapstore store, which is a folder",
            store_dir=store_dir,
            kind=kind,
        )
    if create:
        os.makedirs(store_dir, DIR_MODE, exist_ok=True)


def make_private(store_dir: str) -> None:
    """Take back group and other access from a store made before stores were private (or
    that came with a clone): its folder, then everything in it, once. A store that is
    private already costs one ``stat``. Another user's store is left as it is."""
    if not os.stat(store_dir).st_mode & 0o077:
        return
    try:
        os.chmod(store_dir, DIR_MODE)
    except PermissionError:
        return
    for folder, dirs, files in os.walk(store_dir):
        for name in dirs + files:
            path = os.path.join(folder, name)
            try:
                mode = os.lstat(path).st_mode
                if (stat.S_ISDIR(mode) or stat.S_ISREG(mode)) and mode & 0o077:
                    os.chmod(path, stat.S_IMODE(mode) & ~0o077)
            except OSError:
                continue  # gone meanwhile, or another user's file: the folder guards it


def makedirs_private(path: str) -> None:
    """A folder in the store and the folders above it, each made 0700 (``os.makedirs``
    gives its mode to the last one only)."""
    if os.path.isdir(path):
        return
    makedirs_private(os.path.dirname(path))
    with suppress(FileExistsError):
        os.mkdir(path, DIR_MODE)


def append_private(path: str) -> BinaryIO:
    """A log in the store, opened to append; created 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    return os.fdopen(fd, "ab")
