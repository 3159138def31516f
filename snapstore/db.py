"""The LMDB environment behind a store: named databases, locks, map growth.

LMDB gives us crash-safe transactions and readers that never block. What it
does not give us is a writer lock with a timeout, so writers first take an
``flock`` on ``write.lock`` (waiting up to ``lock_timeout``) and only then
begin the LMDB write transaction. Every opener also holds a shared ``flock`` on
``open.lock``; compaction takes it exclusively, because it replaces the data
file and nobody may have the old one mapped.

When a write finds the map full it doubles the map and retries the whole
transaction. Another process that later sees ``MapResizedError`` adopts the new
size with ``set_mapsize(0)``.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import lmdb

from .errors import NotFound, StoreCorrupt, StoreFull, StoreLocked

SCHEMA_VERSION = 1
DATABASES = ("meta", "blobs", "sessions", "turns", "changes", "heads", "paths", "index", "events")
INITIAL_MAP_SIZE = 64 * 1024 * 1024
DB_DIR = "db"
T = TypeVar("T")


def _flock(path: str, mode: int, timeout: float, what: str) -> int:
    """Open ``path`` and take an flock on it, polling until ``timeout`` seconds pass."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise StoreLocked(
                    f"the store is busy: {what} still held after {timeout:g}s",
                    hint="another snapstore process is writing; try again",
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


def _is_enospc(exc: BaseException) -> bool:
    return "No space left" in str(exc) or getattr(exc, "errno", None) == errno.ENOSPC


class Database:
    """One LMDB environment with snapstore's named databases."""

    def __init__(self, store_dir: str, *, create: bool = False, lock_timeout: float = 10.0,
                 map_size: int = INITIAL_MAP_SIZE):
        self.store_dir = store_dir
        self.lock_timeout = lock_timeout
        self._pid = os.getpid()
        _check_store_dir(store_dir, create)
        self._open_fd = _flock(os.path.join(store_dir, "open.lock"), fcntl.LOCK_SH,
                               lock_timeout, "compaction lock")
        try:
            self.env = self._open_env(create, map_size)
            self.dbs = {name: self.env.open_db(name.encode(), create=create)
                        for name in DATABASES} if create else self._open_existing()
            self.env.reader_check()
            if create:
                self._init_meta()
            self._check_schema()
        except BaseException:
            self.close()
            raise

    def _open_env(self, create: bool, map_size: int) -> lmdb.Environment:
        path = os.path.join(self.store_dir, DB_DIR)
        if create:
            os.makedirs(path, exist_ok=True)
        elif not os.path.isfile(os.path.join(path, "data.mdb")):
            raise StoreCorrupt(f"{self.store_dir} is not a snapstore store (no database)")
        try:
            return lmdb.open(path, subdir=True, create=create, map_size=map_size,
                             max_dbs=len(DATABASES) + 2, readahead=False, meminit=False)
        except lmdb.InvalidError:
            raise StoreCorrupt(f"{self.store_dir} is not a snapstore store "
                               "(the database file is not LMDB)") from None
        except lmdb.Error as exc:
            if _is_enospc(exc):
                raise StoreFull(f"no space left to open the store: {exc}") from None
            raise StoreCorrupt(f"cannot open the store at {self.store_dir}: {exc}") from None

    def _open_existing(self) -> dict[str, Any]:
        with self.env.begin() as txn:
            present = {key.decode() for key, _ in txn.cursor()}
        missing = [name for name in DATABASES if name not in present]
        if missing:
            raise StoreCorrupt(f"{self.store_dir} is not a snapstore store "
                               f"(missing {', '.join(missing)})")
        return {name: self.env.open_db(name.encode(), create=False) for name in DATABASES}

    def _init_meta(self) -> None:
        def put_schema(txn: lmdb.Transaction) -> None:
            meta = self.dbs["meta"]
            if txn.get(b"schema", db=meta) is None:
                txn.put(b"schema", str(SCHEMA_VERSION).encode(), db=meta)
                txn.put(b"store_id", os.urandom(16).hex().encode(), db=meta)
        self.write(put_schema)

    def _check_schema(self) -> None:
        with self.read() as txn:
            raw = txn.get(b"schema", db=self.dbs["meta"])
        if raw is None:
            raise StoreCorrupt(f"{self.store_dir} is not a snapstore store (no schema version)")
        if raw != str(SCHEMA_VERSION).encode():
            raise StoreCorrupt(
                f"the store uses schema version {raw.decode(errors='replace')!r}; "
                f"this snapstore knows only version {SCHEMA_VERSION}",
                hint="use the snapstore release that made this store",
            )

    def _check_fork(self) -> None:
        if os.getpid() != self._pid:
            raise RuntimeError("a snapstore Store must not be used across fork(); open a new one")

    @contextmanager
    def read(self) -> Iterator[lmdb.Transaction]:
        """A read-only transaction; adopts a map grown by another process."""
        self._check_fork()
        try:
            txn = self.env.begin()
        except lmdb.MapResizedError:
            self.env.set_mapsize(0)
            txn = self.env.begin()
        try:
            yield txn
        finally:
            txn.abort()

    @contextmanager
    def write_lock(self) -> Iterator[None]:
        """Hold the writer lock (for operations that span several transactions)."""
        fd = _flock(os.path.join(self.store_dir, "write.lock"), fcntl.LOCK_EX,
                    self.lock_timeout, "the write lock")
        try:
            yield
        finally:
            os.close(fd)

    def write(self, fn: Callable[[lmdb.Transaction], T], *, locked: bool = False) -> T:
        """Run ``fn`` in one durable write transaction, growing the map if it fills.

        ``fn`` may run more than once, so it must only touch the transaction.
        Pass ``locked=True`` when the caller already holds :meth:`write_lock`.
        """
        self._check_fork()
        if not locked:
            with self.write_lock():
                return self._write(fn)
        return self._write(fn)

    def _write(self, fn: Callable[[lmdb.Transaction], T]) -> T:
        while True:
            try:
                with self.env.begin(write=True) as txn:
                    return fn(txn)
            except lmdb.MapFullError:
                self._grow()
            except lmdb.MapResizedError:
                self.env.set_mapsize(0)
            except lmdb.Error as exc:
                if _is_enospc(exc):
                    raise StoreFull(f"the store's disk is full: {exc}") from None
                raise

    def _grow(self) -> None:
        size = self.env.info()["map_size"] * 2
        try:
            self.env.set_mapsize(size)
        except lmdb.Error as exc:
            raise StoreFull(f"cannot grow the store's map to {size} bytes: {exc}") from None

    def get_json(self, txn: lmdb.Transaction, db: str, key: bytes) -> Any:
        raw = txn.get(key, db=self.dbs[db])
        return None if raw is None else json.loads(raw)

    def put_json(self, txn: lmdb.Transaction, db: str, key: bytes, value: Any) -> None:
        txn.put(key, json.dumps(value, separators=(",", ":")).encode(), db=self.dbs[db])

    def close(self) -> None:
        env = getattr(self, "env", None)
        if env is not None and os.getpid() == self._pid:
            env.close()
        self.env = None
        fd = getattr(self, "_open_fd", None)
        if fd is not None:
            os.close(fd)
            self._open_fd = None


def _check_store_dir(store_dir: str, create: bool) -> None:
    if create:
        if os.path.exists(store_dir) and not os.path.isdir(store_dir):
            raise StoreCorrupt(f"{store_dir} exists and is not a snapstore store (not a folder)")
        os.makedirs(store_dir, exist_ok=True)
        return
    if not os.path.exists(store_dir):
        raise NotFound(f"no snapstore store at {store_dir}", hint="run `snapstore init`")
    if not os.path.isdir(store_dir):
        raise StoreCorrupt(f"{store_dir} is not a snapstore store (not a folder)")
