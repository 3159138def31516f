"""The record layer: a store's LMDB tables as typed records, beside its workspace.

Every operation module (capture, history, scan, the rewind planner and its
journal, gc, fsck) reads and writes the store through this module and its read
side (snapstore.core.view), and nothing else; none of them sees a table name or
a raw LMDB transaction. Reads and writes take the transaction as their receiver::

    with repo.read() as v:
        turn = v.turn(turn_id)
    repo.write(lambda tx: tx.put_change(change))

A :class:`~snapstore.core.view.View` reads one consistent snapshot; a :class:`Tx`
is a view that also writes, inside one durable commit. ``Repo.write`` takes the
store's write lock for its one commit. An operation whose commits must not
interleave with another writer's holds the lock as a value, and passes it to
what needs it::

    with repo.lock() as w:
        plan = ...  # read, knowing no other writer commits meanwhile
        w.write(lambda tx: tx.put_turn(turn))

A commit's function may run more than once (when the map grows), so it must
only touch the transaction. The keys and encodings are specified in
docs/format.md.

This module imports only what lies below it: the database, blobs, records, the
reads and the workspace's safe file I/O.
"""

from __future__ import annotations

import json
import os
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from . import baseline, blobs
from .db import INITIAL_MAP_SIZE, SCHEMA_VERSION, Database, Writer, keep_out_of_git
from .errors import BadInput, StoreCorrupt, StoreLocked
from .fsio import Workspace
from .places import STORE_DIRNAME
from .records import Big, Change, GitMove, Session, Turn, Version, dumps, unscanned_fingerprint
from .view import GIT_MOVE, GIT_VALUE, RECORDS, REF_SIZE, View, change_key, session_key

T = TypeVar("T")
_EVENT = struct.Struct(">Q")


def _move_key(turn_id: str, seq: int) -> bytes:
    return GIT_MOVE + change_key(turn_id, seq)


class Tx(View):
    """A view that also writes, inside one durable commit."""

    __slots__ = ("_changed",)

    def __init__(self, txn: Any, dbs: dict[str, Any], clock: Callable[[], float]):
        super().__init__(txn, dbs, clock)
        self._changed: set[bytes] = set()  # groups a file left: written back by finish()

    def _put(self, db: str, key: bytes, value: bytes) -> None:
        self._txn.put(key, value, db=self._dbs[db])

    def _delete(self, db: str, key: bytes) -> None:
        self._txn.delete(key, db=self._dbs[db])

    # -- turns and sessions ------------------------------------------------------

    def put_turn(self, turn: Turn) -> None:
        self._put("turns", turn.id.encode(), dumps(turn))

    def delete_turn(self, turn_id: str) -> None:
        """Remove a turn with its changes and its moves of the repository."""
        for change in self.changes(turn_id):
            self.delete_change(change)
        for move in self.git_moves(turn_id):
            self.delete_git_move(move)
        self._delete("turns", turn_id.encode())

    def new_turn(self, session: str, **fields: Any) -> Turn:
        """A fresh turn, its id allocated from the store's counter (stable for a store)."""
        seq = int(self._get("meta", b"turn_seq") or b"0") + 1
        self._put("meta", b"turn_seq", str(seq).encode())
        store_id = self._get("meta", b"store_id") or b""
        salt = 0
        while True:
            turn_id = blobs.digest_hex(b"%s:%d:%d" % (store_id, seq, salt))[:12]
            if self._get("turns", turn_id.encode()) is None and not turn_id.isdigit():
                break
            salt += 1
        return Turn(id=turn_id, session=session, seq=seq, created=self.clock(), **fields)

    def allocate_seq(self) -> int:
        """The next store-wide turn sequence number (a pulled turn keeps its id, not its seq)."""
        seq = int(self._get("meta", b"turn_seq") or b"0") + 1
        self._put("meta", b"turn_seq", str(seq).encode())
        return seq

    def put_session(self, session: Session) -> None:
        self._put("sessions", session_key(session.name), dumps(session))

    def delete_session(self, name: str) -> None:
        self._delete("sessions", session_key(name))
        self.set_head(name, None)

    def set_head(self, session: str, turn_id: str | None) -> None:
        key = session_key(session)
        if turn_id is None:
            self._delete("heads", key)
        else:
            self._put("heads", key, turn_id.encode())

    def put_change(self, change: Change) -> None:
        """Store a change. Its versions are blobs of the store, never git references: a
        capture copies a referenced version in first (snapstore.ops.gitbase)."""
        for version in (change.before, change.after):
            if version is not None and self._get("gitrefs", version.key) is not None:
                raise StoreCorrupt(f"a change of {change.path} names a git reference, not a blob")
        self._put("changes", change_key(change.turn, change.seq), dumps(change))

    def delete_change(self, change: Change) -> None:
        self._delete("changes", change_key(change.turn, change.seq))

    def put_git_move(self, move: GitMove) -> None:
        self._put("git", _move_key(move.turn, move.seq), dumps(move))

    def delete_git_move(self, move: GitMove) -> None:
        self._delete("git", _move_key(move.turn, move.seq))

    def next_git_seq(self, turn_id: str) -> int:
        """The sequence number the turn's next move of the repository gets."""
        moves = self.git_moves(turn_id)
        return moves[-1].seq + 1 if moves else 0

    def set_git_value(self, name: str, value: str | None) -> None:
        key = GIT_VALUE + name.encode()
        if value is None:
            self._delete("git", key)
        else:
            self._put("git", key, value.encode())

    def set_git_state(self, state: dict[str, Any] | None) -> None:
        if state is not None:
            self._put_meta_json(b"git", state)
        elif self._get("meta", b"git") is not None:
            self._delete("meta", b"git")

    def delete_record(self, kind: str, key: bytes) -> None:
        """Drop a raw entry that :meth:`View.records` found malformed (fsck repair)."""
        assert kind in RECORDS
        self._delete(kind, key)

    def event(self, kind: str, **data: Any) -> None:
        """Append to the audit log."""
        cursor = self._txn.cursor(db=self._dbs["events"])
        seq = _EVENT.unpack(cursor.key())[0] + 1 if cursor.last() else 1
        record = {"seq": seq, "time": self.clock(), "type": kind, **data}
        self._put("events", _EVENT.pack(seq), json.dumps(record, separators=(",", ":")).encode())

    def forget_events(self, turn_ids: set[str]) -> None:
        """Drop the audit entries of turns that gc removed."""
        for key, raw in list(self._items("events")):
            if json.loads(raw).get("turn") in turn_ids:
                self._delete("events", key)

    def set_unfinished(self, op_id: str, unfinished: bool) -> None:
        ops = [op for op in self.unfinished() if op != op_id]
        if unfinished:
            ops.append(op_id)
        self._put_meta_json(b"unfinished", ops)

    def drop_unfinished(self, keep: Callable[[str], bool]) -> list[str]:
        """Forget unfinished operations ``keep`` rejects; returns them (fsck repair)."""
        ops = self.unfinished()
        dropped = [op for op in ops if not keep(op)]
        if dropped:
            self._put_meta_json(b"unfinished", [op for op in ops if keep(op)])
        return dropped

    def _put_meta_json(self, key: bytes, value: Any) -> None:
        self._put("meta", key, json.dumps(value, separators=(",", ":")).encode())

    # -- blobs -------------------------------------------------------------------

    def put_blob(self, key: bytes, value: bytes | None, data: bytes | Big | None = None) -> None:
        """Store an encoded blob unless present.

        ``value`` may have been encoded before the write lock was taken. If gc
        has since removed the blob or its delta base, ``data`` is stored as a
        full frame instead, so a change never points at a missing blob; if gc
        moved the base up its chain, the recorded depth follows it. A big file
        (``data`` is :class:`Big`) was stored in chunks under this same lock
        (``core/chunked.py``), so it is only checked to be there.
        """
        if isinstance(data, Big):
            if not self.has_blob(key):
                raise StoreCorrupt(f"big file {key.hex()[:12]} was not stored before its commit")
            return
        if value is not None and value[0] == blobs.DELTA and data is not None:
            header = blobs.parse_header(value, key)
            assert header.base is not None
            stored = self._get("blobs", header.base)
            depth = None if stored is None else blobs.parse_header(stored, header.base).depth + 1
            if depth is None:
                value = None
            elif depth != header.depth:
                value = blobs.with_depth(value, depth)
        if value is None:
            if data is None or self.has_blob(key):
                return
            value = blobs.encode(data)
        self._txn.put(key, value, db=self._dbs["blobs"], overwrite=False)

    def replace_blob_value(self, key: bytes, value: bytes) -> None:
        """Overwrite a stored value with another encoding of the same bytes (gc rebases)."""
        self._put("blobs", key, value)

    def delete_blob(self, key: bytes) -> None:
        self._delete("blobs", key)

    def put_git_ref(self, key: bytes, oid: str, size: int) -> None:
        """Record that ``key`` stands for git blob ``oid`` of ``size`` bytes."""
        self._put("gitrefs", key, REF_SIZE.pack(size) + oid.encode())

    def delete_git_ref(self, key: bytes) -> None:
        self._delete("gitrefs", key)

    # -- paths, the scan index, settings -----------------------------------------

    def set_path_digest(self, rel: str, version: Version | None) -> None:
        """Record the latest version of ``rel``; a scan re-reads a path recorded otherwise."""
        key = self._own(rel)
        if version is None:
            self._delete("paths", key)
            return
        self._put("paths", key, version.key)
        if self._get("index", key) is not None:  # scan mode: re-read it
            self._put("index", key, unscanned_fingerprint(version) + version.key)

    def forget_path(self, rel: str) -> None:
        self._delete("paths", self._own(rel))

    def put_index(self, rel: str, value: bytes) -> None:
        self._put("index", self._own(rel), value)

    def delete_index(self, rel: str) -> None:
        self._delete("index", self._own(rel))

    # -- the baseline's groups (core.baseline) -------------------------------------

    def put_groups(self, paths: list[bytes], fingerprints: list[bytes], oids: list[bytes]) -> None:
        """Record sorted files of the baseline by reference, in groups; none of them may
        have a record of its own. Groups already there that their range meets (an earlier
        first scan's, or one running at once) are merged in: the new entries win."""
        if not paths:
            return
        merged = dict(zip(paths, zip(fingerprints, oids, strict=True), strict=True))
        group = self._group_of(paths[0])
        while group is not None and group.key <= paths[-1]:
            if group.paths and group.paths[-1] >= paths[0]:
                for at, path in enumerate(group.paths):
                    merged.setdefault(path, (group.fingerprints[at], group.oids[at]))
                self.drop_group(group.key)
            group = self._group_after(group.key)
        order = sorted(merged) if len(merged) > len(paths) else paths
        for key, value in baseline.split(
            order, [merged[p][0] for p in order], [merged[p][1] for p in order]
        ):
            self._put("baseline", key, value)

    def drop_group(self, key: bytes) -> None:
        """Drop a baseline group: merged into new ones, or found corrupt by fsck (then its
        files are new to the store)."""
        self._delete("baseline", key)
        self._groups.pop(key, None)
        self._changed.discard(key)

    def _own(self, rel: str) -> bytes:
        """``rel``'s key, with the file moved out of its group, if it is in one, into
        records of its own (``paths``, ``index``, ``gitrefs``): the ones a write changes."""
        key = os.fsencode(rel)
        if self.has_own(key):
            return key  # a grouped file has no record of its own
        found = self._grouped(key)
        if found is None:
            return key
        group, at = found
        fp, oid = group.fingerprints[at], group.oids[at]
        ref = blobs.reference_key(oid.hex())
        self._groups[group.key] = group.without(at)
        self._changed.add(group.key)
        self._put("paths", key, ref)
        self._put("index", key, fp + ref)
        if self._get("gitrefs", ref) is None:  # another file of the same blob may have it
            self.put_git_ref(ref, oid.hex(), baseline.size_of(fp))
        return key

    def _forget_groups(self) -> None:
        for key in [key for key in self._groups if key not in self._changed]:
            del self._groups[key]

    def finish(self) -> None:
        """Write back the groups files left (:meth:`Locked.write` calls it last)."""
        for key in sorted(self._changed):
            group = self._groups[key]
            self._delete("baseline", key)
            if group.paths:
                value = baseline.encode(group.paths, group.fingerprints, group.oids)
                self._put("baseline", group.paths[0], value)
        self._changed.clear()

    def put_line_counts(self, key: bytes, added: int, removed: int, binary: bool) -> None:
        self._put("counts", key, json.dumps([added, removed, binary]).encode())

    def forget_line_counts(self, key: bytes) -> None:
        self._delete("counts", key)

    def set_scan_state(self, state: dict[str, Any]) -> None:
        self._put_meta_json(b"scan", state)

    def set_shell_windows(self, windows: dict[str, list[tuple[str, float]]]) -> None:
        if windows:
            self._put_meta_json(b"shell", windows)
        elif self._get("meta", b"shell") is not None:
            self._delete("meta", b"shell")


class Locked:
    """The store's write lock, held: what :meth:`Repo.lock` yields.

    A function whose commits must not interleave with another writer's (a
    rewind from its plan to its finish, gc, a repair) takes one as a parameter,
    so that holding the lock is its precondition, and the type says so. It
    stops working when the ``with`` block that took the lock ends.
    """

    __slots__ = ("_writer", "repo")

    def __init__(self, repo: Repo, writer: Writer):
        self.repo, self._writer = repo, writer

    def write(self, fn: Callable[[Tx], T]) -> T:
        """Run ``fn`` in one durable commit under the held lock.

        ``fn`` may run more than once (when the map grows), so it must only
        touch the transaction.
        """

        def commit(txn: Any) -> T:
            tx = self.repo._tx(txn)
            result = fn(tx)
            tx.finish()
            return result

        return self._writer.write(commit)

    def compact(self, timeout: float) -> bool:
        """Rewrite the data file without its free pages, if no one else has it open within
        ``timeout`` seconds (whether it did)."""
        return self._writer.compact(timeout)


class Repo:
    """A store's database and the workspace it protects.

    Open one with the workspace ``root`` (the store is ``root/.snapstore``
    unless ``store_dir`` says otherwise), or with only ``store_dir``, in which
    case the root is what the store recorded. A Repo must not be used across
    ``fork()``.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None,
        *,
        store_dir: str | None = None,
        create: bool = False,
        clock: Callable[[], float] | None = None,
        lock_timeout: float = 10.0,
        map_size: int = INITIAL_MAP_SIZE,
        durable: bool = True,
    ):
        if root is None and store_dir is None:
            raise ValueError("a store needs its workspace root or its store folder")
        root = None if root is None else os.path.realpath(root)
        if create and root is not None and not os.path.isdir(root):
            raise BadInput(f"workspace root {root} is not a folder")  # create nothing there
        self.store_dir = os.path.abspath(store_dir or os.path.join(str(root), STORE_DIRNAME))
        self.clock = clock or time.time
        self._db = Database(
            self.store_dir,
            create=create,
            lock_timeout=lock_timeout,
            map_size=map_size,
            meta=None if root is None else {b"root": os.fsencode(root)},
            durable=durable,
        )
        try:
            if self._db.schema() != SCHEMA_VERSION:
                self._upgrade()
            if root is None:
                with self._db.read() as txn:
                    recorded = txn.get(b"root", db=self._db.dbs["meta"])
                if recorded is None:
                    raise StoreCorrupt(f"the store at {self.store_dir} records no workspace root")
                root = os.fsdecode(bytes(recorded))
            self.ws = Workspace(root, self.store_dir, durable=durable)
        except BaseException:
            self._db.close()
            raise

    @property
    def root(self) -> str:
        return self.ws.root

    @property
    def lock_timeout(self) -> float:
        return self._db.lock_timeout

    @property
    def read_only(self) -> str | None:
        """Why the store cannot be written (None when it can). A read-only store is still
        read; every write raises :class:`~snapstore.core.errors.StoreReadOnly`."""
        return self._db.read_only

    @contextmanager
    def read(self) -> Iterator[View]:
        """A consistent read-only view; readers never wait for writers."""
        with self._db.read() as txn:
            yield View(txn, self._db.dbs, self.clock)

    @contextmanager
    def lock(self, timeout: float | None = None) -> Iterator[Locked]:
        """Take the write lock, waiting up to ``timeout`` (default: the store's lock
        timeout; then :class:`~snapstore.core.errors.StoreLocked`), and hold it for the
        block. What needs it across several commits takes the :class:`Locked` handle."""
        with self._db.write_lock(timeout) as writer:
            yield Locked(self, writer)

    def write(self, fn: Callable[[Tx], T]) -> T:
        """Run ``fn`` in one durable commit under the write lock, taken for it alone.

        ``fn`` may run more than once (when the map grows), so it must only
        touch the transaction.
        """
        with self.lock() as w:
            return w.write(fn)

    def write_if_free(self, fn: Callable[[Tx], T]) -> T | None:
        """Like :meth:`write`, but only if the write lock is free now (None otherwise):
        for what a reader keeps in passing, which is never worth a wait."""
        if self._db.holds_lock():
            return None
        try:
            with self.lock(timeout=0) as w:
                return w.write(fn)
        except StoreLocked:
            return None

    def _tx(self, txn: Any) -> Tx:
        return Tx(txn, self._db.dbs, self.clock)

    def unfinished(self) -> list[str]:
        """Rewinds or undos that were interrupted before they finished."""
        with self.read() as v:
            return v.unfinished()

    # -- the data file -----------------------------------------------------------

    def data_bytes(self) -> int:
        """The size of the data file on disk (it only shrinks by :meth:`compact`)."""
        return self._db.data_bytes()

    def live_bytes(self) -> int:
        """The bytes a compacted copy would take."""
        return self._db.live_bytes()

    def page_size(self) -> int:
        return int(self._db.env.stat()["psize"])

    def close(self) -> None:
        self._db.close()

    def _upgrade(self) -> None:
        """Bring a store of schema 1 to 6 to the current schema in one commit
        (docs/format.md, Versions): schema 3 only added optional fields, schema 4 a blob
        encoding, schema 5 optional fields (a conversation edit's, an inside rewind's)
        and the ``git`` database, schema 6 the ``gitrefs`` database, schema 7 the
        ``baseline`` database (each created empty when the store was opened), so a store
        of schema 2 or later needs nothing but its version. A store of schema 4 or older
        also gets its ``.gitignore``."""

        def commit(tx: Tx) -> None:
            meta = tx._dbs["meta"]
            if tx._txn.get(b"schema", db=meta) == str(SCHEMA_VERSION).encode():
                return  # another process upgraded it meanwhile
            for key, raw in list(tx._items("turns")):
                data = json.loads(raw)
                if "pending" in data:
                    data["open_changes"] = data.pop("pending")
                tx._put("turns", key, json.dumps(data, separators=(",", ":")).encode())
            pending = tx._txn.pop(b"pending", db=meta)
            if pending is not None:
                tx._put("meta", b"unfinished", pending)
            tx._put("meta", b"schema", str(SCHEMA_VERSION).encode())
            tx.event("upgrade", schema=SCHEMA_VERSION)

        self.write(commit)
        keep_out_of_git(self.store_dir)
